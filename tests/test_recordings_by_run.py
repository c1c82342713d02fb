"""Issue 27 item 3: every live call is recorded by the run that paid for it, and every
run replays as itself (`truss-lab rerun`), against a real local server that answers
differently on each call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import truss_lab as tl
from tests.builders.cli import invoke, invoke_json
from tests.builders.http_server import CountingResponder, Reply, ScriptedServer
from tests.builders.stores import copy_db
from truss_lab.core._models import LedgerRef
from truss_lab.store._runs import run_content_hashes
from truss_lab.store._usage import run_usage

VERDICTS = "seq <= 12"
N = 12


class Changing(CountingResponder):
    """A model that answers each call differently (the n-th call's lesson names n, its
    salience and token counts change with n), like a sampling model."""

    def answer(self, body: Any, n: int) -> str:
        return json.dumps({"lessons": [
            {"text": f"answer number {n}", "salience": round(0.5 + (n % 5) / 10, 2)}]})


@pytest.fixture(scope="module")
def lab(sample_full: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Two live runs with the same settings against one changing server, then a rerun
    of each from the CLI: the database and the server's request counts."""
    db = copy_db(sample_full, tmp_path_factory.mktemp("recs") / "lab.duckdb")
    with ScriptedServer(responder=Changing()) as srv:
        counts = {}
        for run in ("first", "second"):
            invoke_json("extract", "--db", db, "--extractor", "openai:tiny", "--base-url",
                        srv.base_url, "--policy", "on", "--dry-run", "--verdicts", VERDICTS,
                        "--run-id", run, "--quiet")
            counts[run] = srv.count
        for run in ("first", "second"):
            invoke_json("rerun", run, "--db", db, "--run-id", f"{run}-again", "--quiet")
        counts["reruns"] = srv.count
    return {"db": db, "counts": counts}


def test_each_live_run_is_recorded_and_billed_as_its_own(lab: dict[str, Any]) -> None:
    db, counts = lab["db"], lab["counts"]
    assert counts["first"] == N and counts["second"] == 2 * N  # the server saw every call
    with tl.Store(db, read_only=True) as s:
        owned = dict(s.sql("SELECT run_id, count(*) FROM completions WHERE extractor_id = "
                           "'tiny@lesson-v1' GROUP BY 1").fetchall())
        tokens = dict((r, (p, c)) for r, p, c in s.sql(
            "SELECT run_id, sum(prompt_tokens), sum(completion_tokens) FROM completions "
            "WHERE extractor_id = 'tiny@lesson-v1' GROUP BY 1").fetchall())
    assert owned == {"first": N, "second": N}
    # The calls were numbered 1..12, then 13..24: each run's tokens are its own.
    assert tokens["first"][1] == sum(range(1, N + 1))
    assert tokens["second"][1] == sum(range(N + 1, 2 * N + 1))
    for run in ("first", "second"):
        u = invoke_json("usage", run, "--db", db)
        assert (u["calls"], u["live_calls"]) == (N, N)
        assert (u["prompt_tokens"], u["completion_tokens"]) == tokens[run]
        assert u["latency_ms_p50"] is not None
        assert (u["recorded_calls"], u["recorded_from"]) == (0, "")


def test_rerun_of_each_run_gives_its_own_candidates_with_no_request(
        lab: dict[str, Any]) -> None:
    db, counts = lab["db"], lab["counts"]
    assert counts["reruns"] == counts["second"]  # zero requests reached the server
    with tl.Store(db, read_only=True) as s:
        h = {r: run_content_hashes(s, r) for r in
             ("first", "second", "first-again", "second-again")}
        texts = {r: sorted(t for (t,) in s.sql(
            "SELECT text FROM candidates WHERE run_id = ?", [r]).fetchall())
            for r in ("first", "second-again")}
    assert h["first"]["n_candidates"] == N and h["first"]["candidates"] != h["second"]["candidates"]
    assert h["first-again"] == h["first"] and h["second-again"] == h["second"]
    assert texts["first"] == sorted(f"answer number {n}" for n in range(1, N + 1))
    assert texts["second-again"] == sorted(f"answer number {n}" for n in range(N + 1, 2 * N + 1))


def test_usage_of_a_rerun_reports_the_recorded_calls(lab: dict[str, Any],
                                                     tmp_path: Path) -> None:
    db = lab["db"]
    prices = tmp_path / "prices.toml"
    prices.write_text('[models."tiny"]\ninput_per_million = 1.0\noutput_per_million = 2.0\n')
    live = invoke_json("usage", "second", "--db", db, "--prices", prices)
    again = invoke_json("usage", "second-again", "--db", db, "--prices", prices)
    assert (again["calls"], again["live_calls"], again["prompt_tokens"]) == (N, 0, 0)
    assert again["latency_ms_p50"] is None and again["recorded_from"] == "run second"
    assert again["recorded_calls"] == N
    assert (again["recorded_prompt_tokens"], again["recorded_completion_tokens"]) == (
        live["prompt_tokens"], live["completion_tokens"])
    for p in ("50", "95", "99"):
        assert again[f"recorded_latency_ms_p{p}"] == pytest.approx(live[f"latency_ms_p{p}"])
    assert again["recorded_cost"] == pytest.approx(live["cost"])
    assert again["cost"] is None or again["cost"] == 0
    text = invoke("usage", "second-again", "--db", db).output
    assert f"({0} live)" in text and f"recorded: {N} calls replayed from run second" in text


def test_replay_by_extractor_id_answers_as_the_first_run_and_says_so(
        lab: dict[str, Any]) -> None:
    db = lab["db"]
    out = invoke_json("extract", "--db", db, "--extractor", "replay:tiny@lesson-v1",
                      "--policy", "on", "--dry-run", "--verdicts", VERDICTS, "--run-id",
                      "by-id", "--quiet")
    assert out["n_errors"] == 0
    with tl.Store(db, read_only=True) as s:
        assert run_content_hashes(s, "by-id") == run_content_hashes(s, "first")
    u = invoke_json("usage", "by-id", "--db", db)
    assert u["recorded_from"] == "extractor tiny@lesson-v1" and u["recorded_calls"] == N
    # A rerun of a rerun replays the same recordings (the source run's).
    invoke_json("rerun", "second-again", "--db", db, "--run-id", "third-hand", "--quiet")
    with tl.Store(db, read_only=True) as s:
        assert run_content_hashes(s, "third-hand") == run_content_hashes(s, "second")
        cfg = json.loads(s.sql("SELECT config FROM extraction_runs WHERE run_id = "
                               "'third-hand'").fetchall()[0][0])
    assert cfg["rerun_of"] == "second"


def test_rerun_from_python_and_its_errors(lab: dict[str, Any], tmp_path: Path) -> None:
    db = copy_db(lab["db"], tmp_path / "lab.duckdb")
    with tl.Store(db) as s:
        run = tl.rerun(s, "first", progress=False)
        assert run.provider_calls == N and run.run_id != "first"
        assert run_content_hashes(s, run.run_id) == run_content_hashes(s, "first")
        with pytest.raises(tl.StoreError, match="not a rerun of"):
            tl.rerun(s, "second", new_run_id=run.run_id, progress=False)
        # An existing rerun of the run is resumed: nothing is added.
        again = tl.rerun(s, "first", new_run_id=run.run_id, progress=False)
        assert again.verdicts_this_call == 0 and again.n_candidates == N
    r = invoke("rerun", "nope", "--db", db)
    assert r.exit_code == 2 and "no extraction run 'nope'" in r.output


def test_migration_gives_old_live_recordings_their_run(sample_full: Path,
                                                       tmp_path: Path) -> None:
    """A database from before 008 recorded live calls without their run: 010 gives them
    to the one live run of their extractor."""
    db = copy_db(sample_full, tmp_path / "lab.duckdb")
    with ScriptedServer(responder=Changing()) as srv, tl.Store(db) as s:
        tl.run_extraction(s, tl.Extractor.openai(srv.base_url, "tiny"),
                          tl.MemoryConfig(lesson_extraction="on"), verdicts="seq <= 3",
                          write_memory=False, progress=False, run_id="old")
        s.sql("UPDATE completions SET run_id = NULL WHERE run_id = 'old'")
        s.sql("DELETE FROM schema_version WHERE version = 11")
    with tl.Store(db) as s:
        assert s.sql("SELECT DISTINCT run_id FROM completions WHERE extractor_id = "
                     "'tiny@lesson-v1'").fetchall() == [("old",)]


def test_the_live_one_verdict_learner_records_its_call(sample_full: Path,
                                                       tmp_path: Path) -> None:
    """ContractCloseLearning (one verdict as Truss does it live) paid for its call too:
    recorded under its run, billed by usage, and replayable."""
    db = copy_db(sample_full, tmp_path / "lab.duckdb")
    with ScriptedServer(responder=Changing()) as srv, tl.Store(db) as s:
        ccl = tl.ContractCloseLearning(tl.Extractor.openai(srv.base_url, "tiny"),
                                       tl.MemoryConfig(lesson_extraction="on"))
        seq, vhash = s.sql("SELECT seq, hash FROM journal WHERE kind = 'contract_verdict' "
                           "ORDER BY seq LIMIT 1").fetchall()[0]
        res = ccl.on_verdict_recorded(s, LedgerRef(seq=seq, hash=vhash))
        assert res.provider_calls == 1 and res.candidates == 1
        rows = s.sql("SELECT run_id, text FROM completions WHERE extractor_id = "
                     "'tiny@lesson-v1'").fetchall()
        assert rows == [(ccl.run_id, json.dumps({"lessons": [
            {"text": "answer number 1", "salience": 0.6}]}))]
        u = run_usage(s, ccl.run_id)
        assert (u.live_calls, u.prompt_tokens, u.completion_tokens) == (1, 101, 1)
        replay = tl.Extractor.replay(s, "tiny@lesson-v1", run_id=ccl.run_id)
        assert replay.provider.complete(
            replay.request(vhash, json.loads(s.sql("SELECT payload FROM journal WHERE "
                                                   "hash = ?", [vhash]).fetchall()[0][0]))
        ).text == rows[0][1]
    assert srv.count == 1


def test_rerun_of_a_run_whose_live_call_failed_writes_the_same_error(
        sample_full: Path, tmp_path: Path) -> None:
    """A verdict whose live call failed has no recording; the rerun replays the failure
    as it was (the same error row, text included), so the content hashes are equal."""
    db = copy_db(sample_full, tmp_path / "lab.duckdb")
    with ScriptedServer(responder=Changing()) as srv, tl.Store(db) as s:
        srv.add(Reply(status=500, body={"error": "the model is resting"}))
        live = tl.run_extraction(s, tl.Extractor.openai(srv.base_url, "tiny", max_retries=0),
                                 tl.MemoryConfig(lesson_extraction="on"), verdicts="seq <= 4",
                                 write_memory=False, progress=False, run_id="failed-once")
        asked = srv.count
        errors = s.sql("SELECT stage, reason, message FROM verdict_errors WHERE run_id = "
                       "'failed-once'").fetchall()
        assert live.n_errors == 1 and errors[0][:2] == ("provider", "provider_error")
        assert "500" in errors[0][2]
        again = tl.rerun(s, "failed-once", progress=False)
        twice = tl.rerun(s, again.run_id, progress=False)  # a rerun of the rerun too
        for run in (again.run_id, twice.run_id):
            assert s.sql("SELECT stage, reason, message FROM verdict_errors WHERE run_id = ?",
                         [run]).fetchall() == errors
            assert run_content_hashes(s, run) == run_content_hashes(s, "failed-once")
        assert run_usage(s, again.run_id).recorded_calls == 3
    assert srv.count == asked  # the failure is replayed, not asked again
