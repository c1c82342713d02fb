"""Invariant 5: the default MemoryQuery returns verified entries only; every memory
write goes through the one governed, bulk-validated path."""

from __future__ import annotations

import pyarrow as pa
import pytest

from truss_lab.core import EntryKind, LedgerRef, MemoryEntry, MemoryQuery, Provenance, Trust
from truss_lab.core._errors import BadInputError
from truss_lab.store import query_memory
from truss_lab.store._governed import (
    entries_to_table,
    get_memory_entry,
    memory_write_events,
    write_memory,
    write_memory_table,
)
from truss_lab.store._tables import MEMORY_SCHEMA

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


# -- the one governed write path: bulk validation -------------------------------------


def _table(**changes: object) -> pa.Table:
    t = entries_to_table([_entry(i, Trust.unverified) for i in range(3)])
    for col, value in changes.items():
        vals = t.column(col).to_pylist()
        vals[1] = value
        t = t.set_column(t.schema.get_field_index(col), col,
                         pa.array(vals, MEMORY_SCHEMA.field(col).type))
    return t


@pytest.mark.parametrize(("changes", "field", "message"), [
    ({"kind": "opinion"}, "kind", "kind 'opinion' is not one of fact, lesson"),
    ({"trust": "verified"}, "trust", "a lesson must be unverified"),
    ({"text": ""}, "text", "text must not be empty"),
    ({"text": None}, "text", "text is required, got NULL"),
    ({"produced_by_seq": 0}, "produced_by_seq", "must be >= 1"),
    ({"produced_by_hash": "A" * 64}, "produced_by_hash", "64 lowercase hex"),
    ({"sources": []}, "sources", "produced_by ref is not among its sources"),
    ({"sources": [{"seq": 2, "hash": "b" * 64}]}, "sources", "not among its sources"),
    ({"sources": [{"seq": 1, "hash": "a" * 64}, {"seq": 1, "hash": "x"}]}, "sources",
     "a source is not a journal ref"),
    # One source per row, as a batch writes them, but not the produced_by ref:
    ({"sources": [{"seq": None, "hash": "a" * 64}]}, "sources", "a source is not a journal ref"),
    ({"sources": [{"seq": 1, "hash": "a" * 63 + "b"}]}, "sources", "not among its sources"),
    ({"sources": [None]}, "sources", "a source is not a journal ref"),
    ({"produced_by_seq": 2}, "sources", "not among its sources"),
    ({"created_at": None}, "created_at", "created_at is required"),
])
def test_write_refuses_ungoverned_rows(store, changes, field, message) -> None:
    # The rows a batch builds by hand go through the same checks as the models.
    with pytest.raises(BadInputError, match=message) as err:
        write_memory_table(store, _table(**changes))
    assert err.value.field == field and "row 1 (entry_id='e1')" in str(err.value)
    assert store.counts()["memory_entries"] == store.counts()["events"] == 0


def test_model_path_and_table_path_write_the_same_rows(store) -> None:
    entries = [_entry(i, Trust.unverified) for i in range(3)]
    assert write_memory_table(store, entries_to_table(entries)) == 3
    assert [get_memory_entry(store, e.entry_id) for e in entries] == entries
