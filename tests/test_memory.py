"""Invariant 5: the default MemoryQuery returns verified entries only."""

from __future__ import annotations

from truss_lab import (
    EntryKind,
    LedgerRef,
    MemoryEntry,
    MemoryQuery,
    Provenance,
    Trust,
    query_memory,
)
from truss_lab.store._governed import get_memory_entry, memory_write_events, write_memory

REF = LedgerRef(seq=1, hash="a" * 64)


def _entry(i: int, trust: Trust, kind: EntryKind = EntryKind.lesson) -> MemoryEntry:
    return MemoryEntry(entry_id=f"e{i}", kind=kind, trust=trust, text=f"entry {i}",
                       provenance=Provenance(produced_by=REF, sources=(REF,), run_id="r1"))


def test_default_query_is_verified_only(store) -> None:
    write_memory(store, [_entry(1, Trust.unverified), _entry(2, Trust.verified, EntryKind.fact),
                         _entry(3, Trust.unverified)])
    assert MemoryQuery().trust == (Trust.verified,)
    assert list(query_memory(store)["entry_id"]) == ["e2"]
    got = set(query_memory(store, MemoryQuery.unverified_lessons())["entry_id"])
    assert got == {"e1", "e3"}
    both = MemoryQuery(trust=(Trust.verified, Trust.unverified))
    assert len(query_memory(store, both)) == 3


def test_filters_and_roundtrip(store) -> None:
    write_memory(store, [_entry(1, Trust.unverified), _entry(2, Trust.unverified)])
    q = MemoryQuery.unverified_lessons(run_id="r1", produced_by_seq=1, limit=1)
    assert len(query_memory(store, q)) == 1
    assert query_memory(store, MemoryQuery.unverified_lessons(run_id="other")).empty
    e = get_memory_entry(store, "e1")
    assert e is not None and e.provenance.produced_by == REF and e.trust is Trust.unverified
    assert get_memory_entry(store, "nope") is None


def test_one_event_per_entry_and_idempotent(store) -> None:
    entries = [_entry(i, Trust.unverified) for i in range(5)]
    assert write_memory(store, entries) == 5
    assert write_memory(store, entries) == 0
    events = memory_write_events(store)
    assert sorted(e.entry_id for e in events) == [f"e{i}" for i in range(5)]
