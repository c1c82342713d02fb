"""Governed records in the store: the one definition of their rows.

Memory entries (:mod:`._memory`), policy records (:mod:`._policy_records`)
and their events are written only through the functions of those two
modules, and both build and check rows with what is defined here. Each table has one Arrow
schema (:mod:`truss_lab.store._tables`), built from a column map onto the pydantic models of
:mod:`truss_lab.core._models`, and the maps are checked against the models here at
import: a model field without a column (or a column without a field) is an error, not a
silent drift. Every write validates its
rows in bulk, vectorised (no model per row on the hot path), against the same
definitions: enum values, required fields, ``produced_by`` among ``sources``,
lessons unverified, one event per record written. The audit
(:mod:`truss_lab.govern._audit`) reads the same constants.
"""

from __future__ import annotations

import enum
import json
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel

from ..core._errors import BadInputError
from ..core._models import (
    HEX64,
    EntryKind,
    LedgerRef,
    MemoryEntry,
    MemoryWrite,
    PolicyRecord,
    PolicyTarget,
    PolicyWrite,
    Provenance,
    Trust,
)
from ._tables import MEMORY_COLUMNS, POLICY_COLUMNS, REF_TYPE

__all__ = [
    "LESSON_KIND",
    "LESSON_TRUST",
    "MEMORY_WRITE",
    "POLICY_WRITE",
    "check_event_rows",
    "check_memory_rows",
    "check_policy_rows",
    "field_at",
    "models_to_table",
    "opt",
    "provenance_from_row",
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
