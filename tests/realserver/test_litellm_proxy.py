"""Issue #16 item 5: the OpenAI-compatible provider against a real third-party server.

A LiteLLM proxy (conftest.py) on 127.0.0.1 with mock responses, driven through
``truss-lab extract --extractor openai:MODEL`` and the provider itself: an
extraction and its replay, a 429 with ``Retry-After``, a refused key, a malformed
body, and the circuit breaker when the server stops mid-run. Run by
``make test-realserver`` (and CI after ``make test``), never by ``make test``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

import truss_lab as tl
from tests.realserver.conftest import COOLDOWN_SECONDS, LESSON, LiteLLMProxy
from truss_lab.core._errors import ProviderError, ProviderUnavailableError
from truss_lab.extract._extractor import Extractor, ExtractorConfig
from truss_lab.extract._providers import (
    CircuitOpenError,
    CompletionRecorder,
    OpenAICompatibleProvider,
    parse_retry_after,
)
from truss_lab.faces.cli import cli
from truss_lab.store._runs import run_content_hashes, run_errors, run_info

pytestmark = pytest.mark.realserver

VERDICTS = "seq <= 20"


def invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args))


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "lab.duckdb"
    tl.load_sample(path).close()
    return path


@pytest.fixture
def key(proxy: LiteLLMProxy, monkeypatch: pytest.MonkeyPatch) -> str:
    """The proxy's master key in the environment variable the provider reads."""
    monkeypatch.setenv("OPENAI_API_KEY", proxy.master_key)
    return proxy.master_key


def _statuses(provider: OpenAICompatibleProvider) -> list[tuple[int, str | None]]:
    """Watch the provider's own HTTP client: (status, Retry-After) of every response."""
    seen: list[tuple[int, str | None]] = []
    provider._client.event_hooks["response"].append(
        lambda r: seen.append((r.status_code, r.headers.get("retry-after"))))
    return seen


def test_extraction_through_the_proxy_then_replay_with_zero_live_calls(
        proxy: LiteLLMProxy, key: str, db: Path) -> None:
    r = invoke("extract", "--db", str(db), "--extractor", "openai:lesson-mock", "--base-url",
               proxy.base_url, "--policy", "on", "--verdicts", VERDICTS, "--run-id", "live",
               "--quiet", "--json")
    assert r.exit_code == 0, r.output
    live = json.loads(r.stdout)
    assert (live["n_verdicts"], live["n_candidates"], live["n_errors"]) == (20, 20, 0)
    with tl.Store(db, read_only=True) as s:
        texts = s.sql("SELECT DISTINCT text FROM candidates WHERE run_id = 'live'").fetchall()
        tokens = s.sql("SELECT count(*), min(prompt_tokens), min(completion_tokens), "
                       "min(request_hash) IS NOT NULL FROM completions "
                       "WHERE run_id = 'live'").fetchall()[0]
    assert texts == [(LESSON["text"],)]  # the proxy's mock, parsed
    # LiteLLM counts tokens itself; they are recorded per call.
    assert tokens[0] == 20 and tokens[1] > 0 and tokens[2] > 0 and tokens[3]
    # The run replays from the CLI: same candidates, and no call reaches the proxy.
    r = invoke("extract", "--db", str(db), "--extractor", f"replay:{live['extractor_id']}",
               "--policy", "on", "--verdicts", VERDICTS, "--run-id", "replayed", "--quiet",
               "--json")
    assert r.exit_code == 0, r.output
    r = invoke("usage", "replayed", "--db", str(db), "--json")
    u = json.loads(r.stdout)
    assert (u["calls"], u["live_calls"]) == (20, 0)
    with tl.Store(db, read_only=True) as s:
        assert run_content_hashes(s, "replayed") == run_content_hashes(s, "live")


def test_recorded_to_a_file_replays_from_the_file(proxy: LiteLLMProxy, key: str, db: Path,
                                                  tmp_path: Path) -> None:
    rec = CompletionRecorder()
    config = ExtractorConfig(model="lesson-mock", response_format="json_object", seed=3)
    ex = Extractor.openai(proxy.base_url, "lesson-mock", config=config, recorder=rec)
    with ex.provider, tl.Store(db) as s:
        tl.run_extraction(s, ex, tl.MemoryConfig(lesson_extraction="on"), verdicts=VERDICTS,
                          progress=False, run_id="to-file")
    path = tmp_path / "live.jsonl"
    assert rec.write(path) == 20
    r = invoke("extract", "--db", str(db), "--extractor", f"replay:{path}", "--policy", "on",
               "--verdicts", VERDICTS, "--run-id", "from-file", "--quiet", "--json")
    assert r.exit_code == 0, r.output
    with tl.Store(db, read_only=True) as s:
        assert run_content_hashes(s, "from-file") == run_content_hashes(s, "to-file")
    assert json.loads(invoke("usage", "from-file", "--db", str(db), "--json").stdout
                      )["live_calls"] == 0


def test_a_429_with_retry_after_is_honoured(proxy: LiteLLMProxy, key: str,
                                            verdict: dict) -> None:
    ex = Extractor.openai(proxy.base_url, "cooling-mock", max_retries=5, backoff_base=0.0,
                          backoff_max=30.0)
    provider = ex.provider
    seen = _statuses(provider)
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        time.sleep(seconds)  # for real: the deployments' cooldown must run out

    provider._sleep = sleep
    with provider, pytest.raises(ProviderUnavailableError, match="gave up after 6 attempt"):
        provider.complete(ex.request("ab" * 32, verdict))
    assert [s for s, _ in seen] == [429] * 6
    # The proxy's own Retry-After, once both deployments are cooling down.
    headers = [h for _, h in seen]
    assert any(h is not None for h in headers[:-1]), headers
    for h, s in zip(headers[:-1], slept, strict=True):
        # backoff_base 0: a 429 without Retry-After waits 0 s; one with it, what it says.
        want = parse_retry_after(h) or 0.0
        assert s == want and want <= COOLDOWN_SECONDS


def test_a_refused_key_is_a_clear_error_and_no_key_is_kept(
        proxy: LiteLLMProxy, db: Path, monkeypatch: pytest.MonkeyPatch,
        verdict: dict) -> None:
    wrong = "sk-wrong-" + proxy.master_key[-12:] + "x"
    monkeypatch.setenv("OPENAI_API_KEY", wrong)
    # Without a database LiteLLM knows only its master key, and refuses any other
    # with 400 "No connected db." (it answers 401 only with a database of keys).
    ex = Extractor.openai(proxy.base_url, "lesson-mock", backoff_base=0.0)
    seen = _statuses(ex.provider)
    with ex.provider:
        with pytest.raises(ProviderError) as info:
            ex.provider.complete(ex.request("ab" * 32, verdict))
    assert [s for s, _ in seen] == [400]  # a refusal is not retried
    msg = str(info.value)
    assert "HTTP 400" in msg and proxy.base_url in msg and "No connected db" in msg
    assert wrong not in msg
    r = invoke("extract", "--db", str(db), "--extractor", "openai:lesson-mock", "--base-url",
               proxy.base_url, "--policy", "on", "--verdicts", "seq <= 5", "--run-id", "nokey",
               "--quiet", "--json")
    assert r.exit_code == 1 and "5 of 5 verdicts" in r.output
    assert wrong not in r.output
    with tl.Store(db, read_only=True) as s:
        errs = run_errors(s, "nokey")
        assert s.sql("SELECT count(*) FROM completions WHERE run_id = 'nokey'"
                     ).fetchall() == [(0,)]
    assert errs["reason"].tolist() == ["provider_error"] * 5
    assert all("HTTP 400" in m and wrong not in m for m in errs["message"])
    assert wrong.encode() not in db.read_bytes()


def test_a_malformed_body_is_a_parse_failure(proxy: LiteLLMProxy, key: str,
                                             db: Path) -> None:
    r = invoke("extract", "--db", str(db), "--extractor", "openai:malformed-mock",
               "--base-url", proxy.base_url, "--policy", "on", "--verdicts", "seq <= 5",
               "--run-id", "garbled", "--max-error-share", "1", "--quiet", "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert (out["n_candidates"], out["n_errors"]) == (0, 5)
    with tl.Store(db, read_only=True) as s:
        errs = run_errors(s, "garbled")
        recorded = s.sql("SELECT count(*) FROM completions WHERE run_id = 'garbled'"
                         ).fetchall()
    assert set(errs["stage"]) == {"parse"} and len(errs) == 5
    assert recorded == [(5,)]  # the garbled answers are kept, so the failure replays
    r = invoke("usage", "garbled", "--db", str(db), "--json")
    (kind, n), = json.loads(r.stdout)["errors"].items()
    assert kind.startswith("parse/") and n == 5


def test_429s_after_every_retry_open_the_breaker(proxy: LiteLLMProxy, key: str,
                                                 db: Path) -> None:
    r = invoke("extract", "--db", str(db), "--extractor", "openai:cooling-mock",
               "--base-url", proxy.base_url, "--policy", "on", "--verdicts", VERDICTS,
               "--run-id", "throttled", "--max-retries", "1",
               "--max-consecutive-failures", "2", "--quiet", "--json")
    assert r.exit_code != 0
    assert "failed 2 verdicts in a row" in r.output and "HTTP 429" in r.output
    with tl.Store(db, read_only=True) as s:
        assert run_info(s, "throttled")["status"] == "failed"


def test_the_breaker_stops_a_run_when_the_proxy_stops_and_resume_finishes(
        proxy: LiteLLMProxy, key: str, db: Path) -> None:
    """The proxy is stopped after the third answer; the breaker stops the run (failed,
    resumable); the proxy comes back on the same port and ``--resume`` finishes."""
    answered: list[dict[str, Any]] = []

    def record(rec: dict[str, Any]) -> None:
        answered.append(rec)
        if len(answered) == 3:
            proxy.stop()

    ex = Extractor.openai(proxy.base_url, "lesson-mock", max_retries=1, backoff_base=0.0,
                          recorder=record)
    try:
        with tl.Store(db) as s, pytest.raises(CircuitOpenError, match="in a row") as info:
            tl.run_extraction(s, ex, tl.MemoryConfig(lesson_extraction="on"),
                              verdicts=VERDICTS, progress=False, run_id="cut", chunk_size=5,
                              max_consecutive_failures=2, run_config={
                                  "extractor_spec": "openai:lesson-mock",
                                  "base_url": proxy.base_url})
        assert "ConnectError" in str(info.value) and "--resume cut" in str(info.value)
        assert len(answered) == 3 and proxy.proc is None
        with pytest.raises(httpx.ConnectError):
            httpx.get(proxy.base_url + "/models", timeout=5.0)
    finally:
        ex.provider.close()
    with tl.Store(db, read_only=True) as s:
        assert run_info(s, "cut")["status"] == "failed"
    proxy.start()
    r = invoke("extract", "--db", str(db), "--resume", "cut", "--quiet", "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["status"] == "finished"
    assert (out["n_verdicts"], out["n_candidates"], out["n_errors"]) == (20, 20, 0)
