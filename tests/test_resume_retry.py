"""Issue 39 item 8: ``--resume`` asks again for the verdicts whose every call failed.

A live run against a local server whose every answer times out (or is a 500) finishes
with an error per verdict; it was not retried by ``--resume`` (its chunks were done).
Now the resume asks again for each such verdict, once, says how many, replaces their
errors with what the retry gave (candidates, recordings), and moves the counts of their
chunks and of the run by the difference: nothing duplicated, the audit passes, and a
second resume asks for nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.builders.cli import invoke
from tests.builders.http_server import Reply, ScriptedServer
from tests.builders.stores import copy_db
from truss_lab.govern._audit import audit
from truss_lab.store._runs import run_content_hashes
from truss_lab.store._store import Store

N = 4  # verdicts of the run


@pytest.fixture
def lab(sample_full: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-retry-39-" + "ab" * 8)
    return copy_db(sample_full, tmp_path / "lab.duckdb")


def _counts(db: Path, run_id: str) -> dict[str, int]:
    with Store(db, read_only=True) as s:
        q = lambda sql: int(s.sql(sql, [run_id]).fetchall()[0][0])  # noqa: E731
        return {
            "candidates": q("SELECT count(*) FROM candidates WHERE run_id = ?"),
            "errors": q("SELECT count(DISTINCT verdict_hash) FROM verdict_errors "
                        "WHERE run_id = ?"),
            "recordings": q("SELECT count(*) FROM completions WHERE run_id = ?"),
            "run_verdicts": q("SELECT count(*) FROM run_verdicts WHERE run_id = ?"),
            "run_n_errors": q("SELECT n_errors FROM extraction_runs WHERE run_id = ?"),
            "run_n_candidates": q("SELECT n_candidates FROM extraction_runs WHERE run_id = ?"),
            "run_n_verdicts": q("SELECT n_verdicts FROM extraction_runs WHERE run_id = ?"),
            "chunk_n_errors": q("SELECT sum(n_errors) FROM run_chunks WHERE run_id = ?"),
            "chunk_n_candidates": q("SELECT sum(n_candidates) FROM run_chunks "
                                    "WHERE run_id = ?"),
        }


@pytest.mark.parametrize("failure", ["timeout", "500"])
def test_resume_retries_every_call_that_failed_once_and_duplicates_nothing(
        lab: Path, failure: str) -> None:
    bad = Reply(delay=3.0) if failure == "timeout" else Reply(500, {"error": "down"})
    with ScriptedServer() as srv:
        srv.add(*[bad] * N)
        r = invoke("extract", "--db", lab, "--extractor", "openai:m", "--base-url",
                   srv.base_url, "--policy", "on", "--verdicts", f"seq <= {N}",
                   "--max-retries", "0", "--deadline", "1", "--chunk-size", "2",
                   "--max-consecutive-failures", "10", "--json")
        run_id = json.loads(r.stdout)["run_id"]
        before = _counts(lab, run_id)
        assert before["errors"] == N and before["candidates"] == 0  # every call failed
        assert srv.count == N
        r = invoke("extract", "--db", lab, "--resume", run_id)
        assert r.exit_code == 0, r.output
        assert f"asked again for {N} verdict(s)" in r.stderr and "retried=4" in r.stdout
        assert srv.count == 2 * N  # one call per failed verdict, nothing more
        after = _counts(lab, run_id)
        # The retry answered: errors gone, one candidate and one recording per verdict,
        # and the run's and its chunks' counts say what the rows say.
        assert after["errors"] == 0 and after["candidates"] == N and after["recordings"] == N
        assert after["run_verdicts"] == after["run_n_verdicts"] == N
        assert after["run_n_errors"] == after["chunk_n_errors"] == 0
        assert after["run_n_candidates"] == after["chunk_n_candidates"] == N
        hashes = _hashes(lab, run_id)
        r = invoke("extract", "--db", lab, "--resume", run_id)
        assert r.exit_code == 0 and "asked again for 0 verdict(s)" in r.stderr, r.output
        assert srv.count == 2 * N  # nothing asked twice
    assert _counts(lab, run_id) == after and _hashes(lab, run_id) == hashes
    with Store(lab, read_only=True) as s:
        report = audit(s)
    assert report.ok, [c.detail for c in report.failed()]


def test_a_retry_that_fails_again_keeps_one_error_per_verdict(lab: Path) -> None:
    with ScriptedServer() as srv:
        srv.add(*[Reply(500, {"error": "down"})] * (2 * N))
        r = invoke("extract", "--db", lab, "--extractor", "openai:m", "--base-url",
                   srv.base_url, "--policy", "on", "--verdicts", f"seq <= {N}",
                   "--max-retries", "0", "--max-consecutive-failures", "10", "--json")
        run_id = json.loads(r.stdout)["run_id"]
        r = invoke("extract", "--db", lab, "--resume", run_id)
        assert f"asked again for {N} verdict(s)" in r.stderr, r.output
        assert srv.count == 2 * N
    c = _counts(lab, run_id)
    assert c["errors"] == c["run_n_errors"] == c["chunk_n_errors"] == N
    with Store(lab, read_only=True) as s:
        assert int(s.sql("SELECT count(*) FROM verdict_errors WHERE run_id = ?",
                         [run_id]).fetchall()[0][0]) == N  # replaced, not added


def _hashes(db: Path, run_id: str) -> dict[str, str]:
    with Store(db, read_only=True) as s:
        return run_content_hashes(s, run_id)
