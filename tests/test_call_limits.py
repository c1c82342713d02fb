"""The limits of one live call (issue 28, item 9): a whole-call deadline that a slow drip
cannot outlive, a cap on the answer's size, and the circuit breaker counting both, on the
extract path and on ``match`` / ``judge``; against a real local server, a few seconds each."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.builders.cli import invoke
from tests.builders.http_server import Reply, ScriptedServer
from tests.builders.stores import copy_db
from truss_lab.core._errors import ConfigError, ProviderUnavailableError
from truss_lab.extract._limits import DEFAULT_DEADLINE, DEFAULT_MAX_RESPONSE_BYTES
from truss_lab.extract._providers import (
    ChatMessage,
    CircuitBreaker,
    CircuitOpenError,
    CompletionRequest,
    OpenAICompatibleProvider,
)
from truss_lab.faces._notebook import sample_run_id
from truss_lab.store import Store

RUN = sample_run_id("sim-good-v1")
ANSWER = {"model": "m", "choices": [{"message": {"role": "assistant", "content": "ok"}}]}


def _request(i: int = 0) -> CompletionRequest:
    return CompletionRequest(messages=(ChatMessage(role="user", content=f"hi {i}"),),
                             model="m", verdict_hash=f"v{i}", extractor="e",
                             prompt_version="p")


def _provider(srv: ScriptedServer, **kw: object) -> OpenAICompatibleProvider:
    opts = {"max_retries": 0, "timeout": 5.0, **kw}
    return OpenAICompatibleProvider(srv.base_url, "m", **opts)  # type: ignore[arg-type]


@pytest.mark.parametrize("drip_body", [False, True], ids=["headers", "body"])
def test_a_slow_drip_ends_at_the_call_deadline(drip_body: bool) -> None:
    # One byte every 0.2 s: each read succeeds well within the 5 s read timeout, so
    # only a deadline on the whole call can end it (httpx alone never would).
    with ScriptedServer() as srv:
        srv.add(*[Reply(200, ANSWER, drip=0.2, drip_body=drip_body) for _ in range(3)])
        with _provider(srv, deadline=0.8, max_retries=2, backoff_base=0.0) as p:
            t0 = time.monotonic()
            with pytest.raises(ProviderUnavailableError, match=r"deadline of 0\.8s"):
                p.complete(_request())
            took = time.monotonic() - t0
    assert 0.7 < took < 1.6, took  # ended at the deadline, retries included


def test_the_breaker_counts_calls_past_their_deadline() -> None:
    with ScriptedServer() as srv:
        srv.add(*[Reply(200, ANSWER, drip=0.2) for _ in range(2)])
        with _provider(srv, deadline=0.4) as p:
            breaker = CircuitBreaker(p, 2)
            with pytest.raises(ProviderUnavailableError):
                breaker.complete(_request(0))
            with pytest.raises(CircuitOpenError, match="2 verdicts in a row"):
                breaker.complete(_request(1))
            with pytest.raises(CircuitOpenError):
                breaker.complete(_request(2))
        assert srv.count == 2  # once open, no more calls


def test_a_retry_after_past_the_deadline_ends_the_call_at_once() -> None:
    with ScriptedServer() as srv:
        srv.add(*[Reply(429, "slow down", headers={"Retry-After": "999999"})
                  for _ in range(3)])
        with _provider(srv, deadline=2.0, max_retries=5, backoff_max=1.0) as p:
            slept: list[float] = []
            p._sleep = slept.append
            t0 = time.monotonic()
            with pytest.raises(ProviderUnavailableError,
                               match=r"wait 999999s \(Retry-After\), past the call's deadline "
                                     "of 2s after 1 "):
                p.complete(_request())
            assert time.monotonic() - t0 < 1.0 and slept == [] and srv.count == 1


@pytest.mark.parametrize("length", [True, False], ids=["content-length", "close-delimited"])
def test_an_answer_over_the_size_cap_is_a_counted_failure(length: bool) -> None:
    big = json.dumps({**ANSWER, "pad": "x" * 300_000})
    with ScriptedServer() as srv:
        srv.add(*[Reply(200, big, length=length) for _ in range(2)])
        with _provider(srv, max_response_bytes=100_000, max_retries=3) as p:
            breaker = CircuitBreaker(p, 2)
            with pytest.raises(ProviderUnavailableError, match="larger than 100000 bytes"):
                breaker.complete(_request(0))
            with pytest.raises(CircuitOpenError, match="larger than 100000 bytes"):
                breaker.complete(_request(1))
        assert srv.count == 2  # not retried: the same server answers the same way
        # Under the cap (and without a Content-Length) an answer is read as before.
        srv.add(Reply(200, ANSWER, length=False))
        with _provider(srv, max_response_bytes=100_000) as p:
            assert p.complete(_request(3)).text == "ok"


def test_the_limits_have_documented_defaults_and_are_checked() -> None:
    with ScriptedServer() as srv:
        with _provider(srv) as p:
            assert p.deadline == DEFAULT_DEADLINE == 300.0
            assert p.max_response_bytes == DEFAULT_MAX_RESPONSE_BYTES == 8 * 1024 * 1024
        with _provider(srv, deadline=None) as p:
            assert p.deadline is None
            assert p.complete(_request()).text.startswith("{")
        for bad in ({"deadline": 0}, {"deadline": float("nan")},
                    {"max_response_bytes": 0}, {"max_response_bytes": True}):
            with pytest.raises(ConfigError):
                _provider(srv, **bad)
    page = Path(__file__).resolve().parents[1] / "docs" / "how-to" / "live-or-batch.md"
    assert "--deadline" in page.read_text() and "max_response_bytes" in page.read_text()


def test_extract_stops_on_a_drip_server_through_the_breaker(sample_good_run: Path,
                                                            tmp_path: Path) -> None:
    db = copy_db(sample_good_run, tmp_path / "s.duckdb")
    with ScriptedServer() as srv:
        srv.add(*[Reply(200, ANSWER, drip=0.2) for _ in range(3)])
        t0 = time.monotonic()
        r = invoke("extract", "--db", db, "--quiet", "--extractor", "openai:m", "--policy", "on",
                   "--base-url", srv.base_url, "--deadline", "0.5", "--max-retries", "0",
                   "--max-consecutive-failures", "2", "--run-id", "drip")
        assert time.monotonic() - t0 < 5
    assert r.exit_code == 2, r.output
    assert "2 verdicts in a row" in r.output and "deadline of 0.5s" in r.output
    with Store(db, read_only=True) as s:
        cfg = json.loads(s.sql("SELECT config FROM extraction_runs WHERE run_id = 'drip'"
                               ).fetchall()[0][0])
    assert cfg["deadline"] == 0.5  # --resume keeps it


@pytest.mark.parametrize("command", ["match", "judge"])
def test_match_and_judge_have_the_breaker(sample_good_run: Path, tmp_path: Path,
                                          command: str) -> None:
    # A server that asks to be retried in 11 days: before, `match` was still running
    # at 120 s; now, with the default settings, each call ends at once (its Retry-After
    # is past the deadline) and the breaker stops the command after 5, writing nothing.
    db = copy_db(sample_good_run, tmp_path / "s.duckdb")
    with Store(db, read_only=True) as s:
        before = s.counts()
    with ScriptedServer() as srv:
        srv.add(*[Reply(429, "busy", headers={"Retry-After": "999999"}) for _ in range(5)])
        t0 = time.monotonic()
        r = invoke(command, RUN, "--db", db, "--judge", "openai:m", "--base-url",
                   srv.base_url)
        assert time.monotonic() - t0 < 5
        assert srv.count == 5
    assert r.exit_code == 2, r.output
    assert r.output.startswith("error: ") and len(r.output.strip().splitlines()) == 1
    assert "5 verdicts in a row" in r.output and "Traceback" not in r.output
    r = invoke(command, RUN, "--db", db, "--judge", "openai:m", "--base-url",
               "http://127.0.0.1:9/v1", "--deadline", "0")
    assert r.exit_code == 2 and "--deadline" in r.output
    with Store(db, read_only=True) as s:
        assert s.counts() == before
