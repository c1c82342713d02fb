"""Governed policy records (ADR 0011's L3 seam) in the store.

A write appends a signed ``policy_record`` journal entry holding the policy
and its evidence, then stores a :class:`PolicyRecord` whose provenance points
at that entry, so ``verify_chain`` covers it (invariant 8). Versions of one
policy form a simple chain: the new record supersedes the current head;
superseding anything but the head would fork and is refused. Nothing here
applies a policy to runtime behaviour (invariant 6).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ..core._clock import utcnow
from ..core._errors import PolicyError
from ..core._ids import derive_id
from ..core._models import LedgerRef, Policy, PolicyRecord, PolicyTarget, Provenance, Trust
from ..journal._crypto import SigningKey
from ..journal._ledger import append_lab_entry
from ..journal._spec import POLICY_ENTRY_KIND
from ..store._governed import (
    policy_frame,
    policy_pointers,
    policy_records,
    write_policy_record,
)
from ..store._store import Store

__all__ = [
    "POLICY_ENTRY_KIND",
    "check_policy_chains",
    "current_policies",
    "current_policy",
    "policy_history",
    "write_policy",
]


def current_policy(store: Store, policy_id: str) -> PolicyRecord | None:
    """The head (unsuperseded record) of ``policy_id``.

    Parameters
    ----------
    store : Store
        The database.
    policy_id : str
        The policy.

    Returns
    -------
    PolicyRecord or None
        The head, or None when the policy has no record.

    Raises
    ------
    PolicyError
        The policy's supersession chain is forked (more than one head).
    """
    heads = policy_records(store, policy_id=policy_id, heads_only=True)
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
    """Record a new version of ``policy``, signed into the lab journal (its
    provenance is a ref into it), in one transaction.

    The version is the head's + 1 (or 1).

    Parameters
    ----------
    store : Store
        The database.
    policy : Policy
        The policy and its settings.
    key : SigningKey
        Signs the lab journal entry.
    evidence : mapping, optional
        What the decision rests on, signed with it.
    trust : Trust, default Trust.unverified
        The record's trust.
    supersedes : str, optional
        The current head's record id; a stale head is refused (it would fork the
        chain).
    sources : sequence of LedgerRef
        Journal entries the record draws on.
    run_id : str, optional
        The run (or decision) that wrote it.
    extractor_id : str, optional
        The extractor it concerns.

    Returns
    -------
    PolicyRecord
        The record written.

    Raises
    ------
    PolicyError
        ``supersedes`` is not the current head, or the target is invalid.
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
            # The lab's own chain: the verdict journal stays upstream's copy.
            ref = append_lab_entry(store, POLICY_ENTRY_KIND, payload, key)
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
        write_policy_record(store, record)
    return record


def policy_history(store: Store, policy_id: str) -> pd.DataFrame:
    """Every version of ``policy_id``, oldest first.

    Parameters
    ----------
    store : Store
        The database.
    policy_id : str
        The policy, e.g. ``"extraction_min_salience"`` (what :func:`propose_threshold`
        writes).

    Returns
    -------
    pandas.DataFrame
        One row per version: its record id, value, trust, provenance and the record
        that superseded it (empty when the policy was never proposed).

    See Also
    --------
    propose_threshold : writes a new version.
    truss_lab.govern.current_policy : the current version alone.

    Examples
    --------
    >>> key = tl.SigningKey.generate("researcher-1")
    >>> record = tl.propose_threshold(store, "good", key, objective="f1", n_boot=0)
    >>> history = tl.policy_history(store, "extraction_min_salience")
    >>> len(history), history["trust"].iloc[-1]
    (1, 'unverified')
    """
    return policy_frame(store, policy_id=policy_id)


def current_policies(store: Store) -> pd.DataFrame:
    """The head record of every policy.

    Parameters
    ----------
    store : Store
        The database.

    Returns
    -------
    pandas.DataFrame
        One row per policy: its unsuperseded record.
    """
    return policy_frame(store, heads_only=True)


def check_policy_chains(store: Store) -> pd.DataFrame:
    """Records that break invariant 8: invalid target, dangling or inconsistent
    pointers, forks (two records superseding one), more than one head, cycles.

    One row per problem: record_id, policy_id, problem.
    """
    df = policy_pointers(store)
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
