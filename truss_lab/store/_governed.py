"""Governed records in the store: the one definition of their rows, their one writer and
their readers.

Memory entries and policy records (and their events) are written only through the
functions here, and both build and check rows with the definitions at the top. Each
table has one Arrow schema (:mod:`truss_lab.store._tables`), built from a column map
onto the pydantic models of :mod:`truss_lab.core._models`, and the maps are checked
against the models here at import: a model field without a column (or a column
without a field) is an error, not a silent drift. Every write validates its rows in
bulk, vectorised (no model per row on the hot path), against the same definitions:
enum values, required fields, ``produced_by`` among ``sources``, lessons unverified,
one event per record written. The audit (:mod:`truss_lab.govern._audit`) reads the
same constants.

Memory: lesson entries, their MemoryWrite events, queries. The one writer of
memory_entries rows (and their events): a batch's lessons (:func:`lesson_rows`,
columnar) and single models (:func:`write_memory`) both end in
:func:`write_memory_table`. Invariant 4: every lesson is kind=lesson,
trust=unverified, produced_by the verdict's LedgerRef with the same ref among its
sources, and exactly one MemoryWrite event per entry written. Invariant 5:
``MemoryQuery()`` returns verified entries only.

Policy records: the one writer and model reader of policy_records rows and their
PolicyWrite events (signing and supersession rules live in
:mod:`truss_lab.govern._policies`, above).
"""

from __future__ import annotations

import enum
import json
import types
import typing
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel

from ..core._errors import BadInputError
from ..core._ids import derive_id, derive_ids
from ..core._models import (
    HEX64,
    EntryKind,
    LedgerRef,
    MemoryEntry,
    MemoryQuery,
    MemoryWrite,
    Policy,
    PolicyRecord,
    PolicyTarget,
    PolicyWrite,
    Provenance,
    Trust,
)
from ._store import Store
from ._tables import (
    EVENT_SCHEMA,
    MEMORY_COLUMNS,
    MEMORY_SCHEMA,
    POLICY_COLUMNS,
    POLICY_SCHEMA,
    REF_TYPE,
    TS,
)

__all__ = [
    "LESSON_KIND",
    "LESSON_TRUST",
    "MEMORY_WRITE",
    "POLICY_WRITE",
    "check_event_rows",
    "check_memory_rows",
    "check_policy_rows",
    "entries_to_table",
    "field_at",
    "get_memory_entry",
    "lesson_rows",
    "memory_event_rows",
    "memory_write_events",
    "models_to_table",
    "opt",
    "policy_frame",
    "policy_pointers",
    "policy_records",
    "provenance_from_row",
    "query_memory",
    "unresolved_policy_provenance",
    "write_memory",
    "write_memory_table",
    "write_policy_record",
]

LESSON_KIND = EntryKind.lesson.value
"""The kind of every SI-1 lesson."""
LESSON_TRUST = Trust.unverified.value
"""The trust of every SI-1 lesson (nothing promotes one)."""
MEMORY_WRITE: str = MemoryWrite.model_fields["type"].default
"""The events.type of a memory entry's event."""
POLICY_WRITE: str = PolicyWrite.model_fields["type"].default
"""The events.type of a policy record's event."""

# A policy record is not prompted: its provenance has no prompt version to store.
_POLICY_UNSTORED = ("provenance.prompt_version",)


def _leaves(model: type[BaseModel], prefix: str = "") -> dict[str, Any]:
    """Dotted path -> annotation of every field, descending into nested models."""
    out: dict[str, Any] = {}
    for name, f in model.model_fields.items():
        ann = f.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            out |= _leaves(ann, f"{prefix}{name}.")
        else:
            out[f"{prefix}{name}"] = ann
    return out


def _optional(ann: Any) -> bool:
    return typing.get_origin(ann) in (typing.Union, types.UnionType) and \
        type(None) in typing.get_args(ann)


def _required_columns(model: type[BaseModel], columns: Mapping[str, tuple[str, Any]],
                      unstored: Sequence[str] = ()) -> tuple[str, ...]:
    """Check that ``columns`` maps every field of ``model`` once (bar ``unstored``);
    return the columns whose field admits no None (so no NULL)."""
    leaves = _leaves(model)
    paths = [p for p, _ in columns.values()]
    missing = set(leaves) - set(paths) - set(unstored)
    unknown = set(paths) - set(leaves)
    if missing or unknown:  # pragma: no cover - a schema edit that forgot the model
        raise TypeError(f"{model.__name__} columns drift: fields without a column "
                        f"{sorted(missing)}, columns without a field {sorted(unknown)}")
    return tuple(c for c, (p, _) in columns.items() if not _optional(leaves[p]))


_MEMORY_REQUIRED = _required_columns(MemoryEntry, MEMORY_COLUMNS)
_POLICY_REQUIRED = _required_columns(PolicyRecord, POLICY_COLUMNS, _POLICY_UNSTORED)
_EVENT_REQUIRED = ("event_id", "type", "subject_id", "produced_by_seq", "produced_by_hash", "ts")

# -- bulk validation ------------------------------------------------------------------


def _refuse(table: str, tbl: pa.Table, bad: np.ndarray, column: str, problem: str) -> None:
    """Raise for the first row flagged in ``bad`` (a bool mask), naming it."""
    if not bad.any():
        return
    i = int(np.flatnonzero(bad)[0])
    rid = tbl.column(0)[i].as_py()
    raise BadInputError(
        f"{table} row {i} ({tbl.schema.names[0]}={rid!r}): {problem}; "
        f"{int(bad.sum())} row(s) refused, nothing was written",
        field=column,
    )


def _mask(arr: pa.ChunkedArray | pa.Array) -> np.ndarray:
    return np.asarray(pc.fill_null(arr, False).to_numpy(zero_copy_only=False), dtype=bool)


def _check_common(table: str, tbl: pa.Table, required: Sequence[str],
                  enums: Mapping[str, Sequence[str]]) -> None:
    for c in required:
        _refuse(table, tbl, _mask(pc.is_null(tbl.column(c))), c, f"{c} is required, got NULL")
    for c, allowed in enums.items():
        col = tbl.column(c)
        bad = _mask(pc.invert(pc.is_in(col, value_set=pa.array(list(allowed), pa.string()))))
        bad &= ~_mask(pc.is_null(col))
        if bad.any():
            got = col[int(np.flatnonzero(bad)[0])].as_py()
            _refuse(table, tbl, bad, c, f"{c} {got!r} is not one of {', '.join(allowed)}")
    seq = tbl.column("produced_by_seq")
    _refuse(table, tbl, _mask(pc.less(seq, 1)), "produced_by_seq",
            "produced_by_seq must be >= 1 (journal seqs are 1-based)")
    _refuse(table, tbl, _mask(pc.invert(pc.match_substring_regex(
        tbl.column("produced_by_hash"), HEX64))), "produced_by_hash",
        "produced_by_hash must be 64 lowercase hex characters")


def _only_produced_by(tbl: pa.Table, src: pa.ListArray) -> bool:
    """Every row's sources are exactly ``[its produced_by ref]`` (what a batch's lessons
    have). Both callers of :func:`_check_sources` run :func:`_check_common` first, which
    refuses a produced_by that is NULL, < 1 or not 64-hex; so then the sources check can
    refuse nothing, and its per-source regex is skipped."""
    n = tbl.num_rows
    if not n or src.null_count or len(src) != n:
        return False
    if not np.array_equal(pc.list_value_length(src).to_numpy(zero_copy_only=False), np.ones(n)):
        return False
    seq, hsh = pc.list_flatten(src).flatten()  # a NULL ref gives NULL fields
    same = pc.and_kleene(pc.equal(seq, tbl.column("produced_by_seq").combine_chunks()),
                         pc.equal(hsh, tbl.column("produced_by_hash").combine_chunks()))
    return pc.all(same, skip_nulls=False).as_py() is True


def _check_sources(table: str, tbl: pa.Table) -> None:
    """Every row lists its produced_by ref among its sources; every source is a ref."""
    src = pa.concat_arrays(tbl.column("sources").chunks) if tbl.num_rows else \
        pa.array([], pa.list_(REF_TYPE))
    if _only_produced_by(tbl, src):
        return
    flat = pc.list_flatten(src)
    parent = pc.list_parent_indices(src).to_numpy()
    s_seq, s_hash = flat.field("seq"), flat.field("hash")
    bad_ref = _mask(pc.or_(pc.less(s_seq, 1), pc.invert(pc.match_substring_regex(s_hash, HEX64))))
    bad_ref |= _mask(pc.or_(pc.is_null(s_seq), pc.is_null(s_hash)))
    bad = np.zeros(tbl.num_rows, dtype=bool)
    bad[parent[bad_ref]] = True
    _refuse(table, tbl, bad, "sources", "a source is not a journal ref (seq >= 1, 64-hex hash)")
    idx = pa.array(parent, pa.int64())
    match = _mask(pc.and_(pc.equal(s_seq, pc.take(tbl.column("produced_by_seq"), idx)),
                          pc.equal(s_hash, pc.take(tbl.column("produced_by_hash"), idx))))
    found = np.zeros(tbl.num_rows, dtype=bool)
    found[parent[match]] = True
    _refuse(table, tbl, ~found, "sources", "its produced_by ref is not among its sources")


def check_memory_rows(mem: pa.Table) -> None:
    """Refuse memory rows that break the governed invariants (BadInputError, first row)."""
    if not mem.num_rows:
        return
    _check_common("memory_entries", mem, _MEMORY_REQUIRED,
                  {"kind": [k.value for k in EntryKind], "trust": [t.value for t in Trust]})
    _refuse("memory_entries", mem, _mask(pc.equal(pc.utf8_length(mem.column("text")), 0)),
            "text", "text must not be empty")
    lesson = _mask(pc.equal(mem.column("kind"), LESSON_KIND))
    promoted = lesson & ~_mask(pc.equal(mem.column("trust"), LESSON_TRUST))
    _refuse("memory_entries", mem, promoted, "trust",
            f"a {LESSON_KIND} must be {LESSON_TRUST} (ADR 0011: nothing promotes a lesson)")
    _check_sources("memory_entries", mem)


def check_policy_rows(rows: pa.Table) -> None:
    """Refuse policy rows that break the governed invariants (BadInputError, first row)."""
    if not rows.num_rows:
        return
    _check_common("policy_records", rows, _POLICY_REQUIRED,
                  {"target": [t.value for t in PolicyTarget], "trust": [t.value for t in Trust]})
    _refuse("policy_records", rows, _mask(pc.less(rows.column("version"), 1)), "version",
            "version must be >= 1")
    _check_sources("policy_records", rows)


def check_event_rows(events: pa.Table, subjects: pa.ChunkedArray | pa.Array) -> None:
    """Refuse event rows unless there is exactly one per subject written, in order."""
    if not events.num_rows and not len(subjects):
        return
    _check_common("events", events, _EVENT_REQUIRED, {"type": [MEMORY_WRITE, POLICY_WRITE]})
    if events.num_rows != len(subjects) or not events.column("subject_id").equals(
            pa.chunked_array([subjects]) if isinstance(subjects, pa.Array) else subjects):
        raise BadInputError("events: expected exactly one event per record written",
                            field="subject_id")


# -- rows <-> models -------------------------------------------------------------------


def field_at(obj: Any, path: str) -> Any:
    """The value at a dotted column-map path of a model."""
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _cell(v: Any) -> Any:
    # Model values as Arrow takes them: refs as structs, settings as JSON text.
    if isinstance(v, LedgerRef):
        return v.model_dump()
    if isinstance(v, tuple):
        return [_cell(x) for x in v]
    if isinstance(v, dict):
        return json.dumps(v, sort_keys=True)
    return v.value if isinstance(v, enum.Enum) else v


def models_to_table(models: Sequence[BaseModel], columns: Mapping[str, tuple[str, Any]],
                    schema: pa.Schema) -> pa.Table:
    """Arrow rows of a table for ``models``, through its column map."""
    return pa.table({c: [_cell(field_at(m, p)) for m in models] for c, (p, _) in columns.items()},
                    schema=schema)


def opt(v: Any) -> Any:
    """A stored value, or None for SQL NULL (which pandas reads as NaN or NaT)."""
    return None if v is None or (isinstance(v, float) and pd.isna(v)) or v is pd.NaT else v


def provenance_from_row(r: Mapping[str, Any]) -> Provenance:
    """The Provenance of a stored memory or policy row."""
    created = r["created_at"]
    return Provenance(
        produced_by=LedgerRef(seq=int(r["produced_by_seq"]), hash=r["produced_by_hash"]),
        sources=tuple(LedgerRef(**s) for s in r["sources"]),
        extractor_id=opt(r["extractor_id"]),
        run_id=opt(r["run_id"]),
        prompt_version=opt(r.get("prompt_version")),
        created_at=created.to_pydatetime() if hasattr(created, "to_pydatetime") else created,
    )


# -- memory entries ------------------------------------------------------------------


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

    Parameters
    ----------
    store : Store
        The database.
    query : MemoryQuery, optional
        Which entries (trust, kinds, run, extractor, producing verdict, superseded or
        not, a limit); default ``MemoryQuery()``, verified entries only.

    Returns
    -------
    pandas.DataFrame
        One row per entry: ``entry_id``, ``kind``, ``trust``, ``text``, ``salience``,
        ``evidence``, the provenance columns (``produced_by_seq``,
        ``produced_by_hash``, ``sources``, ``created_at``, ``superseded_by``),
        ``run_id`` and ``extractor_id``.

    See Also
    --------
    MemoryQuery : what to read.
    run_extraction : writes the lessons.

    Examples
    --------
    >>> tl.query_memory(store).empty  # lessons are unverified: not shown by default
    True
    >>> lessons = tl.query_memory(store, tl.MemoryQuery.unverified_lessons())
    >>> len(lessons), set(lessons["trust"])
    (414, {'unverified'})
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


# -- policy records ------------------------------------------------------------------


def _policy_event_rows(recs: Sequence[PolicyRecord]) -> pa.Table:
    return pa.table(
        {
            "event_id": [derive_id("ev", POLICY_WRITE, r.record_id) for r in recs],
            "type": [POLICY_WRITE] * len(recs),
            "subject_id": [r.record_id for r in recs],
            "kind": [r.policy.target.value for r in recs],
            "trust": [r.trust.value for r in recs],
            "produced_by_seq": [r.provenance.produced_by.seq for r in recs],
            "produced_by_hash": [r.provenance.produced_by.hash for r in recs],
            "run_id": [r.provenance.run_id for r in recs],
            "ts": [r.created_at for r in recs],
        },
        schema=EVENT_SCHEMA,
    )


def write_policy_record(store: Store, record: PolicyRecord) -> None:
    """Append a validated policy record and its PolicyWrite event; when it supersedes
    a record, point that one at it. One transaction (joins the caller's)."""
    rows = models_to_table([record], POLICY_COLUMNS, POLICY_SCHEMA)
    check_policy_rows(rows)
    events = _policy_event_rows([record])
    check_event_rows(events, rows.column("record_id"))
    with store.transaction():
        store.append("policy_records", rows, key=["record_id"])
        if record.supersedes is not None:
            store.con.execute(
                "UPDATE policy_records SET superseded_by = ? WHERE record_id = ?",
                [record.record_id, record.supersedes],
            )
        store.append("events", events, key=["event_id"])


def _policy_from_row(r: Mapping[str, Any]) -> PolicyRecord:
    return PolicyRecord(
        record_id=r["record_id"],
        policy=Policy(policy_id=r["policy_id"], target=r["target"], version=int(r["version"]),
                      settings=json.loads(r["settings"])),
        trust=Trust(r["trust"]),
        provenance=provenance_from_row(r),
        supersedes=opt(r["supersedes"]),
        superseded_by=opt(r["superseded_by"]),
    )


def _policy_where(policy_id: str | None, heads_only: bool) -> tuple[str, list[Any]]:
    where, params = ["true"], []
    if policy_id is not None:
        where.append("policy_id = ?")
        params.append(policy_id)
    if heads_only:
        where.append("superseded_by IS NULL")
    return " AND ".join(where), params


def policy_records(store: Store, *, policy_id: str | None = None,
                   heads_only: bool = False) -> list[PolicyRecord]:
    """Policy records as models (of one policy, current heads only), by version."""
    where, params = _policy_where(policy_id, heads_only)
    cols = ", ".join("settings::VARCHAR AS settings" if c == "settings" else c
                     for c in POLICY_COLUMNS)
    cur = store.con.execute(
        f"SELECT {cols} FROM policy_records WHERE {where} ORDER BY version", params)
    names = [d[0] for d in cur.description]
    return [_policy_from_row(dict(zip(names, row, strict=True))) for row in cur.fetchall()]


def policy_frame(store: Store, *, policy_id: str | None = None,
                 heads_only: bool = False) -> pd.DataFrame:
    """Policy records as a DataFrame: one policy's versions (oldest first) or every
    current head (by policy id)."""
    where, params = _policy_where(policy_id, heads_only)
    order = "version" if policy_id is not None else "policy_id"
    return store.con.execute(
        f"SELECT * FROM policy_records WHERE {where} ORDER BY {order}", params).df()


def unresolved_policy_provenance(store: Store, legacy_kind: str
                                 ) -> list[tuple[str, str, int, str, str | None]]:
    """The policy records whose provenance does not resolve, first by the seq they name:
    ``(record_id, policy_id, produced_by_seq, produced_by_hash, stored_hash)`` for each
    record whose ``produced_by`` is not a stored lab-journal entry with that hash (nor,
    in a database older than the two chains, a verdict-journal entry of
    ``legacy_kind``); ``stored_hash`` is the lab entry's hash at that seq, None when
    there is none."""
    return store.con.execute("""
        SELECT p.record_id, p.policy_id, p.produced_by_seq, p.produced_by_hash,
               (SELECT l.hash FROM lab_journal l WHERE l.seq = p.produced_by_seq)
        FROM policy_records p
        WHERE NOT EXISTS (SELECT 1 FROM lab_journal l
                          WHERE l.seq = p.produced_by_seq AND l.hash = p.produced_by_hash)
          AND NOT EXISTS (SELECT 1 FROM journal j WHERE j.kind = ?
                          AND j.seq = p.produced_by_seq AND j.hash = p.produced_by_hash)
        ORDER BY p.produced_by_seq, p.record_id
    """, [legacy_kind]).fetchall()


def policy_pointers(store: Store) -> pd.DataFrame:
    """Every policy record's ``record_id, policy_id, target, supersedes, superseded_by``:
    what the supersession-chain check reads
    (:func:`truss_lab.govern._policies.check_policy_chains`)."""
    return store.con.execute(
        "SELECT record_id, policy_id, target, supersedes, superseded_by FROM policy_records"
    ).df()
