"""Governed memory in the store: lesson entries, their MemoryWrite events, queries.

The one writer of memory_entries rows (and their events): a batch's lessons
(:func:`lesson_rows`, columnar) and single models (:func:`write_memory`) both
end in :func:`write_memory_table`, which validates them in bulk with the
definitions of :mod:`._governed`.

Invariant 4: every lesson is kind=lesson, trust=unverified, produced_by the
verdict's LedgerRef with the same ref among its sources, and exactly one
MemoryWrite event per entry written. Invariant 5: ``MemoryQuery()`` returns
verified entries only.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..core._ids import derive_ids
from ..core._models import EntryKind, LedgerRef, MemoryEntry, MemoryQuery, MemoryWrite, Trust
from ._governed import (
    LESSON_KIND,
    LESSON_TRUST,
    MEMORY_WRITE,
    check_memory_rows,
    models_to_table,
    opt,
    provenance_from_row,
)
from ._store import Store
from ._tables import EVENT_SCHEMA, MEMORY_COLUMNS, MEMORY_SCHEMA, REF_TYPE, TS

__all__ = [
    "MEMORY_SCHEMA",
    "entries_to_table",
    "get_memory_entry",
    "lesson_rows",
    "memory_event_rows",
    "memory_write_events",
    "query_memory",
    "write_memory",
    "write_memory_table",
]



def _ref_lists(seqs: Any, hashes: Any) -> pa.ListArray:
    """One single-ref source list per row: ``[{seq, hash}]``."""
    refs = pa.StructArray.from_arrays([pa.array(seqs, pa.int64()), pa.array(hashes, pa.string())],
                                      fields=list(REF_TYPE))
    return pa.ListArray.from_arrays(pa.array(np.arange(len(refs) + 1, dtype=np.int32)), refs)


def lesson_rows(
    *,
    entry_ids: Sequence[str] | pa.Array,
    texts: Sequence[str] | pa.Array,
    salience: np.ndarray,
    evidence: Sequence[Sequence[str]] | pa.Array,
    lesson_index: Sequence[int] | pa.Array,
    verdict_seq: Sequence[int] | pa.Array,
    verdict_hash: Sequence[str] | pa.Array,
    extractor_id: Sequence[str] | pa.Array,
    prompt_version: Sequence[str | None] | pa.Array,
    run_id: str,
    created_at: datetime,
) -> pa.Table:
    """memory_entries rows for SI-1 lessons: where a lesson gets its governance.

    Each is kind lesson, trust unverified, produced by its verdict's ref, which
    is also its one source (ADR 0011 invariant 4). Columnar: one call per batch;
    each column a sequence or an Arrow array of its values.
    """
    n = len(entry_ids)
    return pa.table(
        {
            "entry_id": pa.array(entry_ids, pa.string()),
            "kind": pa.array([LESSON_KIND] * n, pa.string()),
            "trust": pa.array([LESSON_TRUST] * n, pa.string()),
            "text": pa.array(texts, pa.string()),
            "salience": pa.array(salience, pa.float64()),
            "evidence": pa.array(evidence, pa.list_(pa.string())),
            "lesson_index": pa.array(lesson_index, pa.int32()),
            "produced_by_seq": pa.array(verdict_seq, pa.int64()),
            "produced_by_hash": pa.array(verdict_hash, pa.string()),
            "sources": _ref_lists(verdict_seq, verdict_hash),
            "extractor_id": pa.array(extractor_id, pa.string()),
            "run_id": pa.array([run_id] * n, pa.string()),
            "prompt_version": pa.array(prompt_version, pa.string()),
            "created_at": pa.array([created_at] * n, TS),
            "superseded_by": pa.nulls(n, pa.string()),
        },
        schema=MEMORY_SCHEMA,
    )


def memory_event_rows(mem: pa.Table) -> pa.Table:
    """One MemoryWrite event row per memory row (ids derived from the entry id)."""
    ids = mem.column("entry_id").to_pylist()
    return pa.table(
        {
            "event_id": derive_ids("ev", ids, MEMORY_WRITE),
            "type": [MEMORY_WRITE] * len(ids),
            "subject_id": mem.column("entry_id"),
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
    """Validate memory rows, then append them and their events in the current transaction.

    Returns the number of new entries; an entry already present (same id)
    writes neither a row nor an event, so a repeat is a no-op.
    """
    mem = mem.cast(MEMORY_SCHEMA)
    check_memory_rows(mem)
    # No check_event_rows here: these events are built from the rows just checked, one
    # per row in order, subject_id = entry_id; produced_by and ts are the rows' own
    # produced_by and created_at, which check_memory_rows refused if NULL, < 1 or not
    # hex; event_id is derived and type the constant MEMORY_WRITE. Nothing it checks
    # can fail.
    events = memory_event_rows(mem)
    with store.transaction():
        n = store.append("memory_entries", mem, key=["entry_id"])
        store.append("events", events, key=["event_id"])
    return n


def entries_to_table(entries: Sequence[MemoryEntry]) -> pa.Table:
    """Arrow rows of the memory_entries table for ``entries``."""
    return models_to_table(entries, MEMORY_COLUMNS, MEMORY_SCHEMA)


def write_memory(store: Store, entries: Sequence[MemoryEntry]) -> int:
    """Write validated entries and one MemoryWrite event each, in one transaction
    (the same path as a batch's lessons, from models)."""
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
        superseded_by=opt(r["superseded_by"]),
        provenance=provenance_from_row(r),
    )


def memory_write_events(store: Store, run_id: str | None = None) -> list[MemoryWrite]:
    """MemoryWrite events as models (optionally for one run)."""
    sql = "SELECT * FROM events WHERE type = ?"
    params: list[object] = [MEMORY_WRITE]
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


