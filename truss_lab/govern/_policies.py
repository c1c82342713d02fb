"""Governed policy records (ADR 0011's L3 seam) in the store.

A write appends a signed ``policy_record`` journal entry holding the policy
and its evidence, then stores a :class:`PolicyRecord` whose provenance points
at that entry, so ``verify_chain`` covers it (invariant 8). Versions of one
policy form a simple chain: the new record supersedes the current head;
superseding anything but the head would fork and is refused. Nothing here
applies a policy to runtime behaviour (invariant 6).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import pyarrow as pa

from ..core._errors import PolicyError
from ..core._ids import derive_id
from ..core._models import LedgerRef, Policy, PolicyRecord, PolicyTarget, Provenance, Trust, utcnow
from ..journal._crypto import SigningKey
from ..journal._ledger import append_entry
from ..store._memory import EVENT_SCHEMA
from ..store._store import Store

__all__ = [
    "POLICY_ENTRY_KIND",
    "check_policy_chains",
    "current_policies",
    "current_policy",
    "policy_history",
    "write_policy",
]

POLICY_ENTRY_KIND = "policy_record"


def _record_from_row(r: Mapping[str, Any]) -> PolicyRecord:
    def opt(v: Any) -> Any:
        return None if v is None or (isinstance(v, float) and pd.isna(v)) else v

    return PolicyRecord(
        record_id=r["record_id"],
        policy=Policy(
            policy_id=r["policy_id"],
            target=r["target"],
            version=int(r["version"]),
            settings=json.loads(r["settings"]),
        ),
        trust=Trust(r["trust"]),
        provenance=Provenance(
            produced_by=LedgerRef(seq=int(r["produced_by_seq"]), hash=r["produced_by_hash"]),
            sources=tuple(LedgerRef(**s) for s in r["sources"]),
            extractor_id=opt(r["extractor_id"]),
            run_id=opt(r["run_id"]),
            created_at=r["created_at"],
        ),
        supersedes=opt(r["supersedes"]),
        superseded_by=opt(r["superseded_by"]),
    )


def _fetch(store: Store, where: str, params: Sequence[Any]) -> list[PolicyRecord]:
    cur = store.con.execute(
        "SELECT record_id, policy_id, target, version, settings::VARCHAR AS settings, trust, "
        "produced_by_seq, produced_by_hash, sources, extractor_id, run_id, created_at, "
        f"supersedes, superseded_by FROM policy_records WHERE {where} ORDER BY version",
        list(params),
    )
    names = [d[0] for d in cur.description]
    return [_record_from_row(dict(zip(names, row, strict=True))) for row in cur.fetchall()]


def current_policy(store: Store, policy_id: str) -> PolicyRecord | None:
    """The head (unsuperseded record) of ``policy_id``, or ``None``."""
    heads = _fetch(store, "policy_id = ? AND superseded_by IS NULL", [policy_id])
    if len(heads) > 1:
        raise PolicyError(
            f"policy {policy_id!r} has {len(heads)} current records "
            f"({', '.join(h.record_id for h in heads)}): its supersession chain is forked"
        )
    return heads[0] if heads else None


def write_policy(
    store: Store,
    policy: Policy,
    key: SigningKey,
    *,
    evidence: Mapping[str, Any] | None = None,
    trust: Trust = Trust.unverified,
    supersedes: str | None = None,
    sources: Sequence[LedgerRef] = (),
    run_id: str | None = None,
    extractor_id: str | None = None,
) -> PolicyRecord:
    """Record a new version of ``policy``, signed into the journal, in one transaction.

    The version is the head's + 1 (or 1). ``supersedes``, when given, must name
    the current head: writing against a stale head would fork the chain.
    """
    target = PolicyTarget.parse(policy.target)
    with store.transaction():
        head = current_policy(store, policy.policy_id)
        if supersedes is not None and (head is None or head.record_id != supersedes):
            current = head.record_id if head else "none"
            raise PolicyError(
                f"cannot supersede {supersedes!r}: the current record of policy "
                f"{policy.policy_id!r} is {current}; superseding another would fork the chain"
            )
        version = head.version + 1 if head else 1
        pol = policy.model_copy(update={"version": version, "target": target})
        payload = {
            "policy_id": pol.policy_id,
            "target": pol.target.value,
            "version": version,
            "settings": pol.settings,
            "trust": trust.value,
            "supersedes": head.record_id if head else None,
            "evidence": dict(evidence or {}),
        }
        try:
            ref = append_entry(store, POLICY_ENTRY_KIND, payload, key)
        except ValueError as exc:
            raise PolicyError(f"policy payload cannot be signed: {exc}") from None
        record = PolicyRecord(
            record_id=derive_id("policy", pol.policy_id, version, ref.hash),
            policy=pol,
            trust=trust,
            provenance=Provenance(
                produced_by=ref,
                sources=(ref, *sources),
                run_id=run_id,
                extractor_id=extractor_id,
                created_at=utcnow(),
            ),
            supersedes=head.record_id if head else None,
        )
        ref_t = pa.struct([("seq", pa.int64()), ("hash", pa.string())])
        store.append(
            "policy_records",
            pa.table(
                {
                    "record_id": [record.record_id],
                    "policy_id": [pol.policy_id],
                    "target": [pol.target.value],
                    "version": pa.array([version], pa.int32()),
                    "settings": [json.dumps(pol.settings, sort_keys=True)],
                    "trust": [trust.value],
                    "produced_by_seq": pa.array([ref.seq], pa.int64()),
                    "produced_by_hash": [ref.hash],
                    "sources": pa.array(
                        [[s.model_dump() for s in record.provenance.sources]], pa.list_(ref_t)
                    ),
                    "extractor_id": pa.array([extractor_id], pa.string()),
                    "run_id": pa.array([run_id], pa.string()),
                    "created_at": pa.array([record.created_at], pa.timestamp("us", tz="UTC")),
                    "supersedes": pa.array([record.supersedes], pa.string()),
                    "superseded_by": pa.array([None], pa.string()),
                }
            ),
            key=["record_id"],
        )
        if head is not None:
            store.con.execute(
                "UPDATE policy_records SET superseded_by = ? WHERE record_id = ?",
                [record.record_id, head.record_id],
            )
        store.append(
            "events",
            pa.table(
                {
                    "event_id": [derive_id("ev", "policy_write", record.record_id)],
                    "type": ["policy_write"],
                    "subject_id": [record.record_id],
                    "kind": [pol.target.value],
                    "trust": [trust.value],
                    "produced_by_seq": [ref.seq],
                    "produced_by_hash": [ref.hash],
                    "run_id": [run_id],
                    "ts": [record.created_at],
                },
                schema=EVENT_SCHEMA,
            ),
            key=["event_id"],
        )
    return record


def policy_history(store: Store, policy_id: str) -> pd.DataFrame:
    """Every version of ``policy_id``, oldest first."""
    return store.con.execute(
        "SELECT * FROM policy_records WHERE policy_id = ? ORDER BY version", [policy_id]
    ).df()


def current_policies(store: Store) -> pd.DataFrame:
    """The head record of every policy."""
    return store.con.execute(
        "SELECT * FROM policy_records WHERE superseded_by IS NULL ORDER BY policy_id"
    ).df()


def check_policy_chains(store: Store) -> pd.DataFrame:
    """Records that break invariant 8: invalid target, dangling or inconsistent
    pointers, forks (two records superseding one), more than one head, cycles.

    One row per problem: record_id, policy_id, problem.
    """
    df = store.con.execute(
        "SELECT record_id, policy_id, target, supersedes, superseded_by FROM policy_records"
    ).df()
    problems: list[tuple[str, str, str]] = []
    valid = {t.value for t in PolicyTarget}
    by_id = {r.record_id: r for r in df.itertuples()}
    for r in df.itertuples():
        if r.target not in valid:
            problems.append((r.record_id, r.policy_id, f"invalid target {r.target!r}"))
        for ptr, back in (("supersedes", "superseded_by"), ("superseded_by", "supersedes")):
            other_id = getattr(r, ptr)
            if other_id is None or (isinstance(other_id, float) and pd.isna(other_id)):
                continue
            other = by_id.get(other_id)
            if other is None:
                problems.append((r.record_id, r.policy_id, f"{ptr} points at missing {other_id}"))
            elif getattr(other, back) != r.record_id:
                problems.append((r.record_id, r.policy_id, f"{ptr} {other_id} does not point back"))
            elif other.policy_id != r.policy_id:
                problems.append((r.record_id, r.policy_id, f"{ptr} crosses to another policy"))
    forks = df.dropna(subset=["supersedes"]).groupby("supersedes")["record_id"].count()
    for rid in forks[forks > 1].index:
        pid = by_id[rid].policy_id if rid in by_id else "?"
        problems.append((rid, pid, "superseded twice (fork)"))
    heads = df[df["superseded_by"].isna()].groupby("policy_id")["record_id"].count()
    for pid, n in heads.items():
        if n != 1:
            problems.append(("", pid, f"{n} current heads"))
    for pid in set(df["policy_id"]) - set(heads.index):
        problems.append(("", pid, "no current head (cycle)"))
    # Walk supersedes pointers; revisiting a record means a cycle.
    for start in df["record_id"]:
        seen, cur = set(), start
        while cur is not None and cur in by_id and cur not in seen:
            seen.add(cur)
            nxt = by_id[cur].supersedes
            cur = None if nxt is None or (isinstance(nxt, float) and pd.isna(nxt)) else nxt
        if cur is not None and cur in seen:
            problems.append((start, by_id[start].policy_id, "supersession cycle"))
    out = pd.DataFrame(problems, columns=["record_id", "policy_id", "problem"])
    return out.drop_duplicates().reset_index(drop=True)
