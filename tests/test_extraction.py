"""ADR 0011 invariants 1-4 through ContractCloseLearning, with a provider that counts calls."""

from __future__ import annotations

import json
import threading

import pytest

from truss_lab import ChainError, MemoryConfig, MemoryQuery, Store, query_memory
from truss_lab.core import LedgerRef
from truss_lab.extract._extractor import Extractor
from truss_lab.extract._gate import ContractCloseLearning, apply_gate
from truss_lab.extract._providers import Completion, CompletionRequest
from truss_lab.journal._ledger import append_entry
from truss_lab.store._governed import memory_write_events


class CountingProvider:
    """Answers with fixed lessons and counts its calls (a real provider, no network)."""

    provider_id = "counting"

    def __init__(self, lessons: list[dict]) -> None:
        self.lessons = lessons
        self.calls = 0
        self._lock = threading.Lock()

    def complete(self, request: CompletionRequest) -> Completion:
        with self._lock:
            self.calls += 1
        return Completion(text=json.dumps({"lessons": self.lessons}), model="counting",
                          request_hash=request.request_hash)


LESSONS = [
    {"text": "Pin the scheduler timezone to UTC", "salience": 0.70,
     "evidence": ["check:tz_regression"]},
    {"text": "Just below the line", "salience": 0.6999, "evidence": []},
    {"text": "", "salience": 0.9},  # dropped: empty text
    {"text": "High salience lesson", "salience": 0.95, "evidence": ["check:job_registered"]},
]


@pytest.fixture
def recorded(store: Store, key, verdict) -> LedgerRef:
    return append_entry(store, "contract_verdict", verdict, key)


def _ccl(policy: str, provider: CountingProvider, t: float = 0.70) -> ContractCloseLearning:
    cfg = MemoryConfig(lesson_extraction=policy, extraction_min_salience=t)
    return ContractCloseLearning(Extractor("counting-v1", provider, model="m"), cfg)


def test_off_is_default_and_touches_nothing(store, recorded) -> None:
    provider = CountingProvider(LESSONS)
    ccl = ContractCloseLearning(Extractor("counting-v1", provider))
    before = store.counts()
    res = ccl.on_verdict_recorded(store, recorded)
    assert ccl.config.lesson_extraction == "off"
    assert provider.calls == 0 and res.provider_calls == 0
    assert store.counts() == before  # no memory, no events, no run row


def test_off_does_not_even_check_the_verdict(store) -> None:
    provider = CountingProvider(LESSONS)
    missing = LedgerRef(seq=99, hash="0" * 64)
    res = ContractCloseLearning(Extractor("c", provider)).on_verdict_recorded(store, missing)
    assert res.lessons_written == 0 and provider.calls == 0


def test_on_writes_every_valid_lesson(store, recorded) -> None:
    provider = CountingProvider(LESSONS)
    res = _ccl("on", provider).on_verdict_recorded(store, recorded)
    assert provider.calls == 1
    assert res.candidates == 4 and res.lessons_written == 3
    cands = store.table("candidates")
    assert cands["valid"].sum() == 3
    assert cands.loc[~cands["valid"], "drop_reason"].notna().all()


@pytest.mark.parametrize(("threshold", "expected"), [
    (0.70, {"Pin the scheduler timezone to UTC", "High salience lesson"}),
    (0.6999, {"Pin the scheduler timezone to UTC", "Just below the line",
              "High salience lesson"}),
    (0.96, set()),
    (0.0, {"Pin the scheduler timezone to UTC", "Just below the line", "High salience lesson"}),
])
def test_model_scored_threshold_edges(store, recorded, threshold, expected) -> None:
    _ccl("model-scored", CountingProvider(LESSONS), threshold).on_verdict_recorded(store, recorded)
    lessons = query_memory(store, MemoryQuery.unverified_lessons())
    assert set(lessons["text"]) == expected
    # Every candidate is kept, passed or not.
    assert len(store.table("candidates")) == 4


def test_lessons_are_governed(store, recorded) -> None:
    res = _ccl("on", CountingProvider(LESSONS)).on_verdict_recorded(store, recorded)
    lessons = query_memory(store, MemoryQuery.unverified_lessons())
    assert len(lessons) == res.lessons_written == 3
    assert set(lessons["kind"]) == {"lesson"} and set(lessons["trust"]) == {"unverified"}
    assert (lessons["produced_by_seq"] == recorded.seq).all()
    assert (lessons["produced_by_hash"] == recorded.hash).all()
    for sources in lessons["sources"]:
        assert {"seq": recorded.seq, "hash": recorded.hash} in list(sources)
    assert set(lessons["extractor_id"]) == {"counting-v1"}
    assert set(lessons["prompt_version"]) == {"lesson-v1"}
    events = memory_write_events(store)
    assert sorted(e.entry_id for e in events) == sorted(lessons["entry_id"])
    assert all(e.produced_by == recorded for e in events)
    # The default query (verified only) sees none of them: invariant 5.
    assert query_memory(store).empty


def test_repeat_is_a_noop(store, recorded) -> None:
    ccl = _ccl("on", CountingProvider(LESSONS))
    ccl.on_verdict_recorded(store, recorded)
    before = store.counts()
    res = ccl.on_verdict_recorded(store, recorded)
    assert res.lessons_written == 0
    assert store.counts() == before


def test_verdict_must_be_in_the_journal(store, recorded) -> None:
    provider = CountingProvider(LESSONS)
    before = store.counts()
    with pytest.raises(ChainError, match="not in the journal"):
        _ccl("on", provider).on_verdict_recorded(store, LedgerRef(seq=2, hash="a" * 64))
    with pytest.raises(ChainError, match="expected"):
        _ccl("on", provider).on_verdict_recorded(store, LedgerRef(seq=1, hash="b" * 64))
    assert provider.calls == 0 and store.counts() == before


def test_verdict_must_verify(store, recorded) -> None:
    store.sql("UPDATE journal SET payload = json_object('verdict', 'pass') WHERE seq = 1")
    provider = CountingProvider(LESSONS)
    before = store.counts()
    with pytest.raises(ChainError, match="does not verify"):
        _ccl("on", provider).on_verdict_recorded(store, recorded)
    assert provider.calls == 0 and store.counts() == before


def test_verdict_kind_is_checked(store, key) -> None:
    ref = append_entry(store, "note", {"x": 1}, key)
    with pytest.raises(Exception, match="contract_verdict"):
        _ccl("on", CountingProvider(LESSONS)).on_verdict_recorded(store, ref)


def test_one_transaction_per_verdict(store, recorded, monkeypatch) -> None:
    # A failure while writing the events must leave no candidate or lesson behind.
    import truss_lab.store._governed as memory

    def boom(*a, **k):
        raise RuntimeError("disk full")

    monkeypatch.setattr(memory, "memory_event_rows", boom)
    before = store.counts()
    with pytest.raises(RuntimeError):
        _ccl("on", CountingProvider(LESSONS)).on_verdict_recorded(store, recorded)
    assert store.counts() == before


def test_apply_gate_vectorized() -> None:
    import numpy as np

    s = np.array([0.7, 0.6999, np.nan, 1.0, 0.0])
    v = np.array([True, True, True, False, True])
    assert apply_gate(s, v, MemoryConfig()).tolist() == [False] * 5
    assert apply_gate(s, v, MemoryConfig(lesson_extraction="on")).tolist() == v.tolist()
    assert apply_gate(s, v, MemoryConfig(lesson_extraction="model-scored")).tolist() == [
        True, False, False, False, False]
