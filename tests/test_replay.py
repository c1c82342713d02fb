"""ReplayProvider: recorded completions answer exactly the requests they were recorded for."""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from truss_lab.core._errors import BadInputError, ProviderError
from truss_lab.extract._extractor import ReplayProvider
from truss_lab.extract._providers import ChatMessage, CompletionRequest, Provider
from truss_lab.ingest._completions import read_completions, write_completions


def vh(i: int) -> str:
    return hashlib.sha256(f"verdict-{i}".encode()).hexdigest()


def request(i: int, prompt: str = "extract", **over: Any) -> CompletionRequest:
    fields: dict[str, Any] = {
        "messages": (ChatMessage(role="user", content=f"{prompt} {i}"),),
        "model": "m-small",
        "verdict_hash": vh(i),
        "extractor": "sim-v1",
        "prompt_version": "lesson-v1",
    }
    fields.update(over)
    return CompletionRequest(**fields)


def record(i: int, *, checked: bool = True, **over: Any) -> dict[str, Any]:
    r = {
        "verdict_hash": vh(i),
        "extractor": "sim-v1",
        "model": "m-small",
        "prompt_version": "lesson-v1",
        "request_hash": request(i).request_hash if checked else None,
        "text": json.dumps({"lessons": [{"text": f"lesson {i}", "salience": 0.5}]}),
        "latency_ms": 100.0 + i,
        "prompt_tokens": 10 + i,
        "completion_tokens": None,
    }
    r.update(over)
    return r


@pytest.fixture
def frame() -> pd.DataFrame:
    return pd.DataFrame([record(i) for i in range(5)] + [record(5, checked=False)])


def test_answers_from_frame(frame: pd.DataFrame) -> None:
    replay = ReplayProvider(frame)
    assert isinstance(replay, Provider) and replay.provider_id == "replay"
    assert len(replay) == 6
    got = replay.complete(request(2))
    assert got.text == record(2)["text"]
    assert (got.model, got.latency_ms, got.prompt_tokens, got.completion_tokens) == (
        "m-small", 102.0, 12, None,
    )
    assert got.replayed and got.request_hash == request(2).request_hash
    assert replay.unchecked_requests == 0 and replay.calls == 1


def test_missing_recording_names_verdict_and_extractor(frame: pd.DataFrame) -> None:
    replay = ReplayProvider(frame)
    with pytest.raises(ProviderError) as info:
        replay.complete(request(42))
    assert vh(42) in str(info.value) and "'sim-v1'" in str(info.value)
    with pytest.raises(ProviderError, match="'other'"):
        replay.complete(request(1, extractor="other"))


@pytest.mark.parametrize(
    "changed",
    [
        {"prompt": "a reworded prompt"},
        {"model": "m-large"},
        {"parameters": {"temperature": 1.0}},
    ],
)
def test_changed_request_is_refused(frame: pd.DataFrame, changed: dict[str, Any]) -> None:
    replay = ReplayProvider(frame)
    req = request(1, **changed)
    with pytest.raises(ProviderError) as info:
        replay.complete(req)
    msg = str(info.value)
    assert f"expected request_hash {request(1).request_hash}" in msg
    assert f"got {req.request_hash}" in msg
    assert replay.calls == 0


def test_null_request_hash_is_answered_and_counted(frame: pd.DataFrame) -> None:
    replay = ReplayProvider(frame)
    got = replay.complete(request(5, prompt="anything at all"))
    assert got.request_hash is None and got.replayed
    assert replay.unchecked_requests == 1
    replay.complete(request(5))
    assert replay.unchecked_requests == 2
    # Without a hash the recording's own prompt version stands (issue 27 item 2):
    # nothing can tell which request it answered, so it answers, counted.
    assert replay.complete(request(5, prompt_version="lesson-v2")).text == got.text
    assert replay.unchecked_requests == 3


def test_from_file_and_store_like_frame(tmp_path: Path, frame: pd.DataFrame) -> None:
    path = tmp_path / "rec.jsonl"
    write_completions(frame, path)
    from_file = ReplayProvider(path)
    from_read = ReplayProvider(read_completions(path)[0])
    # Store tables carry extra columns; they are ignored.
    from_store = ReplayProvider(frame.assign(run_id="r-1", recorded_at=pd.Timestamp("2026-12-01")))
    for replay in (from_file, from_read, from_store):
        for i in range(6):
            assert replay.complete(request(i)).text == record(i)["text"]
        assert replay.unchecked_requests == 1


def test_bad_recordings_refused(tmp_path: Path, frame: pd.DataFrame) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(record(0)) + "\n{not json\n")
    with pytest.raises(BadInputError, match="1 bad line") as info:
        ReplayProvider(path)
    assert "line 2" in str(info.value)
    with pytest.raises(BadInputError, match="request_hash"):
        ReplayProvider(frame.drop(columns=["request_hash"]))
    conflicting = pd.concat([frame, pd.DataFrame([record(0, text="different")])])
    with pytest.raises(BadInputError, match="two different recordings"):
        ReplayProvider(conflicting)
    identical = pd.concat([frame, frame.iloc[:2]])
    assert len(ReplayProvider(identical)) == 6


def test_thread_safe_counts(frame: pd.DataFrame) -> None:
    replay = ReplayProvider(frame)
    reqs = [request(i) for i in range(6)]
    texts = {r.verdict_hash: record(i)["text"] for i, r in enumerate(reqs)}
    wrong: list[str] = []
    barrier = threading.Barrier(8)

    def work() -> None:
        barrier.wait()
        for _ in range(100):
            for r in reqs:
                if replay.complete(r).text != texts[r.verdict_hash]:
                    wrong.append(r.verdict_hash)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []
    assert replay.calls == 8 * 100 * 6
    assert replay.unchecked_requests == 8 * 100
