"""Nothing fails silently: a dead endpoint stops a run (the circuit breaker), the run
resumes once the endpoint is back, and a run full of errors exits non-zero."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest

import truss_lab as tl
from tests.builders.cli import invoke
from tests.builders.http_server import Reply, ScriptedServer
from tests.builders.stores import copy_db
from truss_lab.core._errors import ProviderError, ProviderUnavailableError
from truss_lab.extract._providers import CircuitBreaker, CircuitOpenError


@pytest.fixture(scope="module")
def sample_db(sample_full: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_db(sample_full, tmp_path_factory.mktemp("breaker") / "sample.duckdb")


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def extract(db: Path, *args: str):
    return invoke("extract", "--db", str(db), "--quiet", *args)


def test_dead_endpoint_stops_within_the_limit_and_resume_finishes(sample_db: Path) -> None:
    dead = f"http://127.0.0.1:{closed_port()}/v1"
    t0 = time.perf_counter()
    r = extract(sample_db, "--extractor", "openai:tiny", "--base-url", dead, "--policy", "on",
                "--verdicts", "seq <= 20", "--chunk-size", "5", "--run-id", "dead",
                "--max-retries", "1", "--max-consecutive-failures", "3")
    seconds = time.perf_counter() - t0
    assert r.exit_code != 0, r.output
    assert "3 verdicts in a row" in r.output and "--resume dead" in r.output
    assert len(r.output.strip().splitlines()) == 1 and r.output.startswith("error: ")
    # 3 verdicts x 2 attempts, backoff at most 0.5 s each: the run stops in seconds.
    assert seconds < 10, seconds
    print(f"dead endpoint: exit {r.exit_code} after {seconds:.2f}s")
    with tl.Store(sample_db, read_only=True) as s:
        status, n_verdicts, err = s.sql("SELECT status, n_verdicts, error FROM extraction_runs "
                                        "WHERE run_id = 'dead'").fetchall()[0]
        assert status == "failed" and n_verdicts == 0 and "--resume dead" in err
        assert s.sql("SELECT count(*) FROM run_chunks WHERE run_id = 'dead'").fetchall() == [(0,)]
    with ScriptedServer() as srv:  # the endpoint is back (at a new address)
        r = extract(sample_db, "--resume", "dead", "--base-url", srv.base_url, "--json")
        assert r.exit_code == 0, r.output
        assert srv.count == 20
    out = json.loads(r.stdout)
    assert out["status"] == "finished" and out["n_verdicts"] == 20 and out["n_errors"] == 0


def test_breaker_counts_only_consecutive_transport_failures() -> None:
    class Flaky:
        provider_id, live = "flaky", True

        def __init__(self, script: list[str]) -> None:
            self.script = list(script)

        def complete(self, request):
            kind = self.script.pop(0)
            if kind == "down":
                raise ProviderUnavailableError("connection refused")
            if kind == "bad":
                raise ProviderError("HTTP 400")
            return "ok"

    b = CircuitBreaker(Flaky(["down", "down", "ok", "down", "bad", "down", "down", "x"]), 3)
    outcomes = []
    for _ in range(7):
        try:
            outcomes.append(b.complete(None))
        except CircuitOpenError:
            outcomes.append("open")
        except ProviderError as exc:
            outcomes.append(type(exc).__name__)
    # A success resets the count; a 4xx neither counts nor resets; the third in a row opens.
    assert outcomes == ["ProviderUnavailableError", "ProviderUnavailableError", "ok",
                        "ProviderUnavailableError", "ProviderError",
                        "ProviderUnavailableError", "open"]
    with pytest.raises(CircuitOpenError):  # once open, no call reaches the provider
        b.complete(None)
    assert b.inner.script == ["x"]


def test_breaker_stops_a_run_mid_way_and_keeps_what_was_written(
        sample_full: Path, tmp_path: Path) -> None:
    store = tl.Store(copy_db(sample_full, tmp_path / "s.duckdb"))
    with ScriptedServer() as srv:
        srv.add(*[Reply() for _ in range(10)], *[Reply(status=503) for _ in range(40)])
        ex = tl.Extractor.openai(srv.base_url, "tiny", max_retries=0)
        with pytest.raises(CircuitOpenError, match="run mid stopped"):
            tl.run_extraction(store, ex, tl.MemoryConfig(lesson_extraction="on"),
                              verdicts="seq <= 30", chunk_size=5, run_id="mid",
                              progress=False, max_consecutive_failures=4)
    row = tl.summarize_runs(store, ["mid"]).iloc[0]
    assert row["status"] == "failed" and row["n_verdicts"] == 10  # two chunks kept
    with ScriptedServer() as srv:
        ex = tl.Extractor.openai(srv.base_url, "tiny", max_retries=0)
        run = tl.run_extraction(store, ex, tl.MemoryConfig(lesson_extraction="on"),
                                verdicts="seq <= 30", chunk_size=5, run_id="mid",
                                resume=True, progress=False, max_consecutive_failures=4)
    assert run.status == "finished" and run.n_verdicts == 30 and run.n_errors == 0
    store.close()


def test_error_share_above_the_limit_exits_1_and_errors_lists_them(sample_db: Path) -> None:
    with ScriptedServer() as srv:  # a 400 is the verdict's own error: no breaker
        srv.add(*[Reply(status=400, body={"error": "bad request"}) for _ in range(10)])
        r = extract(sample_db, "--extractor", "openai:tiny", "--base-url", srv.base_url,
                    "--policy", "on", "--verdicts", "seq <= 10", "--run-id", "bad")
    assert r.exit_code == 1, r.output
    assert "10 of 10 verdicts (100.0%) have errors" in r.output
    assert "truss-lab errors bad" in r.output
    r = invoke("errors", "bad", "--db", str(sample_db))
    assert r.exit_code == 0 and "10 errors (10 provider/provider_error)" in r.output
    assert "HTTP 400" in r.output
    r = invoke("errors", "bad", "--db", str(sample_db), "--json")
    rows = json.loads(r.stdout)
    assert len(rows) == 10 and [x["verdict_seq"] for x in rows] == list(range(1, 11))
    # The limit is an option: 1.0 accepts any share.
    with ScriptedServer() as srv:
        srv.add(*[Reply(status=400) for _ in range(10)])
        r = extract(sample_db, "--extractor", "openai:tiny", "--base-url", srv.base_url,
                    "--policy", "on", "--verdicts", "seq <= 10", "--max-error-share", "1")
    assert r.exit_code == 0, r.output
    r = extract(sample_db, "--extractor", "heuristic", "--policy", "on",
                "--max-error-share", "1.5")
    assert r.exit_code == 2 and "max_error_share" in r.output
