"""Governed memory in the store: lesson entries, their MemoryWrite events, queries.

Invariant 4: every lesson is kind=lesson, trust=unverified, produced_by the
verdict's LedgerRef with the same ref among its sources, and exactly one
MemoryWrite event per entry written. Invariant 5: ``MemoryQuery()`` returns
verified entries only.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import pyarrow as pa

from ..core._ids import derive_id
from ..core._models import (
    EntryKind,
    LedgerRef,
    MemoryEntry,
    MemoryQuery,
    MemoryWrite,
    Provenance,
    Trust,
)
from ._store import Store

__all__ = ["get_memory_entry", "query_memory", "write_memory"]

_REF = pa.struct([("seq", pa.int64()), ("hash", pa.string())])

MEMORY_SCHEMA = pa.schema(
    [
        ("entry_id", pa.string()),
        ("kind", pa.string()),
        ("trust", pa.string()),
        ("text", pa.string()),
        ("salience", pa.float64()),
        ("evidence", pa.list_(pa.string())),
        ("lesson_index", pa.int32()),
        ("produced_by_seq", pa.int64()),
        ("produced_by_hash", pa.string()),
        ("sources", pa.list_(_REF)),
        ("extractor_id", pa.string()),
        ("run_id", pa.string()),
        ("prompt_version", pa.string()),
        ("created_at", pa.timestamp("us", tz="UTC")),
        ("superseded_by", pa.string()),
    ]
)

EVENT_SCHEMA = pa.schema(
    [
        ("event_id", pa.string()),
        ("type", pa.string()),
        ("subject_id", pa.string()),
        ("kind", pa.string()),
        ("trust", pa.string()),
        ("produced_by_seq", pa.int64()),
        ("produced_by_hash", pa.string()),
        ("run_id", pa.string()),
        ("ts", pa.timestamp("us", tz="UTC")),
    ]
)


def memory_event_rows(mem: pa.Table) -> pa.Table:
    """One MemoryWrite event row per memory row (ids derived from the entry id)."""
    ids = mem.column("entry_id").to_pylist()
    return pa.table(
        {
            "event_id": [derive_id("ev", "memory_write", i) for i in ids],
            "type": ["memory_write"] * len(ids),
            "subject_id": ids,
            "kind": mem.column("kind"),
            "trust": mem.column("trust"),
            "produced_by_seq": mem.column("produced_by_seq"),
            "produced_by_hash": mem.column("produced_by_hash"),
            "run_id": mem.column("run_id"),
            "ts": mem.column("created_at"),
        },
        schema=EVENT_SCHEMA,
    )


def write_memory_table(store: Store, mem: pa.Table) -> int:
    """Append memory rows and their events in the current transaction.

    Returns the number of new entries; an entry already present (same id)
    writes neither a row nor an event, so a repeat is a no-op.
    """
    mem = mem.cast(MEMORY_SCHEMA)
    with store.transaction():
        n = store.append("memory_entries", mem, key=["entry_id"])
        store.append("events", memory_event_rows(mem), key=["event_id"])
    return n


def entries_to_table(entries: Sequence[MemoryEntry]) -> pa.Table:
    """Arrow rows of the memory_entries table for ``entries``."""
    return pa.table(
        {
            "entry_id": [e.entry_id for e in entries],
            "kind": [e.kind.value for e in entries],
            "trust": [e.trust.value for e in entries],
            "text": [e.text for e in entries],
            "salience": [e.salience for e in entries],
            "evidence": [list(e.evidence) for e in entries],
            "lesson_index": [e.lesson_index for e in entries],
            "produced_by_seq": [e.provenance.produced_by.seq for e in entries],
            "produced_by_hash": [e.provenance.produced_by.hash for e in entries],
            "sources": [[s.model_dump() for s in e.provenance.sources] for e in entries],
            "extractor_id": [e.provenance.extractor_id for e in entries],
            "run_id": [e.provenance.run_id for e in entries],
            "prompt_version": [e.provenance.prompt_version for e in entries],
            "created_at": [e.provenance.created_at for e in entries],
            "superseded_by": [e.superseded_by for e in entries],
        },
        schema=MEMORY_SCHEMA,
    )


def write_memory(store: Store, entries: Sequence[MemoryEntry]) -> int:
    """Write entries and one MemoryWrite event each, in one transaction."""
    return write_memory_table(store, entries_to_table(entries))


def query_memory(store: Store, query: MemoryQuery | None = None) -> pd.DataFrame:
    """Memory entries matching ``query`` as a DataFrame, newest first.

    The default query returns verified entries only (ADR 0011): lessons are
    unverified and appear only when asked for, e.g. ``MemoryQuery.unverified_lessons()``.
    """
    q = query or MemoryQuery()
    where = ["list_contains(?, trust)"]
    params: list[object] = [[t.value for t in q.trust]]
    if q.kinds is not None:
        where.append("list_contains(?, kind)")
        params.append([k.value for k in q.kinds])
    if q.run_id is not None:
        where.append("run_id = ?")
        params.append(q.run_id)
    if q.extractor_id is not None:
        where.append("extractor_id = ?")
        params.append(q.extractor_id)
    if q.produced_by_seq is not None:
        where.append("produced_by_seq = ?")
        params.append(q.produced_by_seq)
    if not q.include_superseded:
        where.append("superseded_by IS NULL")
    sql = (
        "SELECT * FROM memory_entries WHERE "
        + " AND ".join(where)
        + " ORDER BY created_at DESC, entry_id"
    )
    if q.limit is not None:
        sql += " LIMIT ?"
        params.append(q.limit)
    return store.con.execute(sql, params).df()


def get_memory_entry(store: Store, entry_id: str) -> MemoryEntry | None:
    """One entry as a governed model, or ``None``."""
    df = store.con.execute("SELECT * FROM memory_entries WHERE entry_id = ?", [entry_id]).df()
    if df.empty:
        return None
    r = df.iloc[0]
    return MemoryEntry(
        entry_id=r["entry_id"],
        kind=EntryKind(r["kind"]),
        trust=Trust(r["trust"]),
        text=r["text"],
        salience=None if pd.isna(r["salience"]) else float(r["salience"]),
        evidence=tuple(r["evidence"]) if r["evidence"] is not None else (),
        lesson_index=None if pd.isna(r["lesson_index"]) else int(r["lesson_index"]),
        superseded_by=None if pd.isna(r["superseded_by"]) else r["superseded_by"],
        provenance=Provenance(
            produced_by=LedgerRef(seq=int(r["produced_by_seq"]), hash=r["produced_by_hash"]),
            sources=tuple(LedgerRef(**s) for s in r["sources"]),
            extractor_id=None if pd.isna(r["extractor_id"]) else r["extractor_id"],
            run_id=None if pd.isna(r["run_id"]) else r["run_id"],
            prompt_version=None if pd.isna(r["prompt_version"]) else r["prompt_version"],
            created_at=r["created_at"].to_pydatetime(),
        ),
    )


def memory_write_events(store: Store, run_id: str | None = None) -> list[MemoryWrite]:
    """MemoryWrite events as models (optionally for one run)."""
    sql = "SELECT * FROM events WHERE type = 'memory_write'"
    params: list[object] = []
    if run_id is not None:
        sql += " AND run_id = ?"
        params.append(run_id)
    df = store.con.execute(sql + " ORDER BY ts, subject_id", params).df()
    return [
        MemoryWrite(
            entry_id=r.subject_id,
            kind=EntryKind(r.kind),
            trust=Trust(r.trust),
            produced_by=LedgerRef(seq=int(r.produced_by_seq), hash=r.produced_by_hash),
            run_id=None if pd.isna(r.run_id) else r.run_id,
            ts=r.ts.to_pydatetime(),
        )
        for r in df.itertuples()
    ]
