"""Governed policy records in the store: the one writer and model reader of
policy_records rows and their PolicyWrite events (signing and supersession
rules live in :mod:`truss_lab.govern._policies`, above)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import pyarrow as pa

from ..core._ids import derive_id
from ..core._models import Policy, PolicyRecord, Trust
from ._governed import (
    POLICY_WRITE,
    check_event_rows,
    check_policy_rows,
    models_to_table,
    opt,
    provenance_from_row,
)
from ._store import Store
from ._tables import EVENT_SCHEMA, POLICY_COLUMNS, POLICY_SCHEMA

__all__ = ["policy_frame", "policy_pointers", "policy_records", "write_policy_record"]

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


def policy_pointers(store: Store) -> pd.DataFrame:
    """Every policy record's ``record_id, policy_id, target, supersedes, superseded_by``:
    what the supersession-chain check reads
    (:func:`truss_lab.govern._policies.check_policy_chains`)."""
    return store.con.execute(
        "SELECT record_id, policy_id, target, supersedes, superseded_by FROM policy_records"
    ).df()
