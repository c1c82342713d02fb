"""OpenAICompatibleProvider against a real HTTP server on 127.0.0.1 (tests.builders.http_server)."""

from __future__ import annotations

import hashlib
import json
import socket
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import pytest

from tests.builders.http_server import Reply, ScriptedServer, default_completion
from truss_lab.core._errors import ConfigError, ProviderError
from truss_lab.extract._extractor import ReplayProvider
from truss_lab.extract._providers import (
    ChatMessage,
    CompletionRecorder,
    CompletionRequest,
    OpenAICompatibleProvider,
    Provider,
    parse_retry_after,
)
from truss_lab.ingest._completions import COMPLETION_FIELDS, CompletionRecordModel, read_completions

KEY_ENV = "TRUSS_LAB_TEST_API_KEY"
SECRET = "sk-test-do-not-leak-4242"


def request(i: int = 0, prompt: str | None = None, **over: Any) -> CompletionRequest:
    fields: dict[str, Any] = {
        "messages": (
            ChatMessage(role="system", content="Extract lessons as JSON."),
            ChatMessage(role="user", content=prompt or f"verdict number {i}"),
        ),
        "model": "m-small",
        "parameters": {"temperature": 0, "max_tokens": 64},
        "verdict_hash": hashlib.sha256(str(i).encode()).hexdigest(),
        "extractor": "m-small/lesson-v1",
        "prompt_version": "lesson-v1",
    }
    fields.update(over)
    return CompletionRequest(**fields)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as srv:
        yield srv


@pytest.fixture(autouse=True)
def _no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)


class Sleeps(list):
    """Records the backoff the provider asked for, then really sleeps."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)
        time.sleep(seconds)


_OPEN: list[OpenAICompatibleProvider] = []


@pytest.fixture(autouse=True)
def _close_providers() -> Iterator[None]:
    yield
    while _OPEN:
        _OPEN.pop().close()


def make(server: ScriptedServer, **kw: Any) -> tuple[OpenAICompatibleProvider, Sleeps]:
    opts: dict[str, Any] = {
        "api_key_env": KEY_ENV,
        "timeout": 5.0,
        "backoff_base": 0.01,
        "backoff_max": 0.05,
    }
    opts.update(kw)
    provider = OpenAICompatibleProvider(server.base_url, "m-small", **opts)
    sleeps = Sleeps()
    provider._sleep = sleeps
    _OPEN.append(provider)
    return provider, sleeps


def test_success_and_what_was_sent(server: ScriptedServer) -> None:
    recorder = CompletionRecorder()
    provider, sleeps = make(server, recorder=recorder, extra_headers={"X-Trace": "t-1"})
    assert isinstance(provider, Provider)
    req = request(1)
    got = provider.complete(req)
    expected = default_completion(json.loads(json.dumps(server.requests[0].body)))
    assert got.text == expected["choices"][0]["message"]["content"]
    assert (got.model, got.prompt_tokens, got.completion_tokens) == ("m-small", 3, 7)
    assert got.request_hash == req.request_hash and not got.replayed
    assert got.latency_ms is not None and got.latency_ms >= 0
    seen = server.requests[0]
    assert seen.path == "/v1/chat/completions"
    assert seen.body["model"] == "m-small" and seen.body["temperature"] == 0
    assert seen.body["messages"][1] == {"role": "user", "content": "verdict number 1"}
    assert "authorization" not in seen.headers  # no key in the environment: none sent
    assert seen.headers["x-trace"] == "t-1"
    assert sleeps == []
    (record,) = recorder.records
    # The provider does not know the extractor configuration: Extractor.openai's
    # recorder adds ``config`` (tests/test_replay_file_config.py).
    assert list(record) == [f for f in COMPLETION_FIELDS if f != "config"]
    CompletionRecordModel.model_validate(record)
    assert record["text"] == got.text and record["request_hash"] == req.request_hash
    provider.close()


def test_retry_after_429_is_honoured(server: ScriptedServer) -> None:
    server.add(Reply(429, {"error": "slow down"}, {"Retry-After": "1"}))
    provider, sleeps = make(server, backoff_max=5.0)
    got = provider.complete(request())
    assert got.text
    assert server.count == 2
    assert sleeps == [1.0]
    # The server saw the retry no sooner than it asked (a lower bound only).
    assert server.requests[1].at - server.requests[0].at >= 1.0


def test_retry_after_is_capped_by_backoff_max(server: ScriptedServer) -> None:
    future = format_datetime(datetime.now(UTC) + timedelta(hours=1), usegmt=True)
    server.add(
        Reply(429, "busy", {"Retry-After": "3600"}),
        Reply(503, "busy", {"Retry-After": future}),
    )
    # Without a deadline (with one, a Retry-After past it ends the call at once:
    # tests/test_call_limits.py).
    provider, sleeps = make(server, backoff_max=0.05, deadline=None)
    provider.complete(request())
    assert server.count == 3
    assert sleeps == [0.05, 0.05]


def test_parse_retry_after() -> None:
    now = datetime(2026, 12, 2, 10, 0, 0, tzinfo=UTC).timestamp()
    assert parse_retry_after("7", now=now) == 7.0
    assert parse_retry_after(" 2.5 ", now=now) == 2.5
    assert parse_retry_after("Wed, 02 Dec 2026 10:00:30 GMT", now=now) == 30.0
    assert parse_retry_after("Wed, 02 Dec 2026 09:00:00 GMT", now=now) == 0.0
    assert parse_retry_after("-3", now=now) == 0.0
    for junk in (None, "", "soon", "nan", "inf"):
        assert parse_retry_after(junk, now=now) is None


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_5xx_then_success(server: ScriptedServer, status: int) -> None:
    server.add(Reply(status, "upstream hiccup"))
    provider, sleeps = make(server)
    assert provider.complete(request()).text
    assert server.count == 2 and len(sleeps) == 1
    assert 0.0 <= sleeps[0] <= 0.01  # full jitter within backoff_base * 2^0


def test_retries_exhausted(server: ScriptedServer) -> None:
    server.add(*[Reply(500, "still down")] * 4)
    provider, sleeps = make(server, max_retries=3)
    with pytest.raises(ProviderError, match="gave up after 4 attempt") as info:
        provider.complete(request(3))
    assert "HTTP 500" in str(info.value) and "still down" in str(info.value)
    assert hashlib.sha256(b"3").hexdigest() in str(info.value)
    assert server.count == 4 and len(sleeps) == 3
    assert all(0 <= s <= 0.05 for s in sleeps)


def test_timeout_is_retried_then_fails(server: ScriptedServer) -> None:
    server.add(Reply(delay=1.0), Reply(delay=1.0))
    provider, sleeps = make(server, timeout=0.2, max_retries=1)
    with pytest.raises(ProviderError, match="timed out"):
        provider.complete(request())
    assert server.count == 2 and len(sleeps) == 1


def test_timeout_then_success(server: ScriptedServer) -> None:
    server.add(Reply(delay=1.0))
    provider, _ = make(server, timeout=0.2, max_retries=2)
    assert provider.complete(request()).text
    assert server.count == 2


def test_connection_refused_is_retried() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    provider = OpenAICompatibleProvider(
        f"http://127.0.0.1:{port}/v1", "m-small", max_retries=2, backoff_base=0.001
    )
    with pytest.raises(ProviderError, match=r"3 attempt.*connection failed"):
        provider.complete(request())


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ("<html>gateway</html>", "expected a JSON chat-completions body"),
        ("", "an empty body"),
        ({"object": "error"}, "wrong response shape"),
        ({"choices": []}, "wrong response shape"),
        ({"choices": [{"message": {"content": None}}]}, "content is NoneType"),
        ([1, 2, 3], "wrong response shape"),
        ('{"choices": [{"message": {"content": "a\\ud800"}}]}', "lone surrogate"),
    ],
)
def test_garbage_body(server: ScriptedServer, body: Any, match: str) -> None:
    server.add(Reply(200, body))
    recorder = CompletionRecorder()
    provider, _ = make(server, recorder=recorder)
    with pytest.raises(ProviderError, match=match):
        provider.complete(request())
    assert server.count == 1  # a garbage answer is not retried
    assert len(recorder) == 0


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_client_error_not_retried(server: ScriptedServer, status: int) -> None:
    server.add(Reply(status, {"error": {"message": "model 'm-small' not found " + "x" * 500}}))
    provider, sleeps = make(server)
    with pytest.raises(ProviderError, match=f"HTTP {status}") as info:
        provider.complete(request())
    assert "not found" in str(info.value) and len(str(info.value)) < 600
    assert server.count == 1 and sleeps == []


def test_usage_missing_or_odd(server: ScriptedServer) -> None:
    server.add(Reply(200, {"choices": [{"message": {"content": "hi"}}],
                           "usage": {"prompt_tokens": "3", "completion_tokens": -1}}))
    provider, _ = make(server)
    got = provider.complete(request())
    assert (got.text, got.model, got.prompt_tokens, got.completion_tokens) == (
        "hi", "m-small", None, None,
    )


def test_model_mismatch_refused(server: ScriptedServer) -> None:
    provider, _ = make(server)
    with pytest.raises(ProviderError, match="asks for model 'other'"):
        provider.complete(request(model="other"))
    assert server.count == 0


def test_bounded_concurrency(server: ScriptedServer) -> None:
    server.latency = 0.05
    provider, _ = make(server, max_concurrency=3)
    reqs = [request(i) for i in range(24)]
    results = provider.complete_many(reqs, concurrency=12)
    assert server.count == 24
    assert 2 <= server.max_in_flight <= 3
    # Answers come back in request order.
    by_prompt = {s.body["messages"][1]["content"]: s.body for s in server.requests}
    for req, got in zip(reqs, results, strict=True):
        body = by_prompt[req.messages[1].content]
        assert got.text == default_completion(body)["choices"][0]["message"]["content"]


def test_complete_many_keeps_errors_in_place(server: ScriptedServer) -> None:
    provider, _ = make(server, max_concurrency=1)
    server.add(Reply(200), Reply(400, "no"), Reply(200))
    results = provider.complete_many([request(0), request(1), request(2)])
    assert [type(r).__name__ for r in results] == ["Completion", "ProviderError", "Completion"]
    assert provider.complete_many([]) == []


def test_key_sent_but_never_recorded(server: ScriptedServer, monkeypatch: pytest.MonkeyPatch,
                                     tmp_path: Path) -> None:
    recorder = CompletionRecorder()
    provider, _ = make(server, recorder=recorder)
    monkeypatch.setenv(KEY_ENV, SECRET)  # read at call time, not at construction
    provider.complete_many([request(i) for i in range(3)])
    assert {s.headers["authorization"] for s in server.requests} == {f"Bearer {SECRET}"}
    assert SECRET not in json.dumps(recorder.records)
    recorder.write(tmp_path / "rec.jsonl")
    assert SECRET not in (tmp_path / "rec.jsonl").read_text()
    server.add(Reply(401, "unauthorized"))
    with pytest.raises(ProviderError) as info:
        provider.complete(request(9))
    assert SECRET not in str(info.value)


def test_record_then_replay(server: ScriptedServer, tmp_path: Path) -> None:
    recorder = CompletionRecorder()
    provider, _ = make(server, recorder=recorder, max_concurrency=4)
    reqs = [request(i) for i in range(20)]
    live = provider.complete_many(reqs, concurrency=8)
    assert all(not isinstance(c, ProviderError) for c in live)
    path = tmp_path / "recorded.jsonl"
    assert recorder.write(path) == 20
    df, errors = read_completions(path)
    assert errors == [] and len(df) == 20
    for replay in (ReplayProvider(path), ReplayProvider(recorder.to_frame())):
        for req, got in zip(reqs, live, strict=True):
            again = replay.complete(req)
            assert again.text == got.text and again.replayed
            assert again.request_hash == req.request_hash
            assert (again.prompt_tokens, again.completion_tokens) == (
                got.prompt_tokens, got.completion_tokens,
            )
        assert replay.unchecked_requests == 0
        # A changed prompt is never answered by the old recording.
        with pytest.raises(ProviderError, match="expected request_hash"):
            replay.complete(request(0, prompt="a reworded prompt"))
        with pytest.raises(ProviderError, match="expected request_hash"):
            replay.complete(request(0, parameters={"temperature": 0.7, "max_tokens": 64}))


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"max_concurrency": 0}, "max_concurrency"),
        ({"max_retries": -1}, "max_retries"),
        ({"timeout": 0}, "timeout"),
        ({"backoff_max": float("nan")}, "backoff_max"),
        ({"base_url": "ftp://127.0.0.1/v1"}, "base_url"),
        ({"base_url": "127.0.0.1:8000"}, "base_url"),
    ],
)
def test_constructor_validation(kw: dict[str, Any], field: str) -> None:
    base_url = kw.pop("base_url", "http://127.0.0.1:1/v1")
    with pytest.raises(ConfigError) as info:
        OpenAICompatibleProvider(base_url, "m", **kw)
    assert info.value.field == field


def test_base_url_trailing_slash() -> None:
    with OpenAICompatibleProvider("http://127.0.0.1:1/v1/", "m") as p:
        assert p.url == "http://127.0.0.1:1/v1/chat/completions"


def test_a_dropped_provider_closes_its_sockets(server: ScriptedServer) -> None:
    # A provider nobody closed (a notebook cell, an error path) holds a keep-alive
    # connection; collecting it must close that socket, not leave it to the garbage
    # collector's ResourceWarning (an intermittent failure of whichever test ran then).
    import gc
    import warnings

    provider = OpenAICompatibleProvider(server.base_url, "m-small", api_key_env=KEY_ENV,
                                        timeout=5.0)
    provider.complete(request(1))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        del provider
        gc.collect()
    assert not [w for w in seen if issubclass(w.category, ResourceWarning)]


def test_close_is_idempotent(server: ScriptedServer) -> None:
    provider, _ = make(server)
    provider.complete(request(1))
    provider.close()
    provider.close()
    with pytest.raises(RuntimeError):  # httpx: a closed client sends nothing
        provider._client.post(server.base_url)
