"""Simulated contract verdicts: contracts, retries, checks that fail, payloads.

One random stream (``stream(seed, 1)``) draws every verdict, so the journal
does not depend on which extractors are simulated.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from ._words import CHECKS, DOM_NCHK, DOM_START, DOMAINS, MAX_CHK, Seed, pick, stream

__all__ = ["BASE_TS", "VERDICT_NAMES", "Verdicts", "make_verdicts"]

BASE_TS = datetime(2026, 11, 1, tzinfo=UTC)


@dataclass
class Verdicts:
    """The simulated verdicts: per-verdict arrays, payloads and timestamps."""

    domain: np.ndarray  # (V,)
    verdict: np.ndarray  # (V,) 0 pass, 1 partial, 2 fail
    chk: np.ndarray  # (V, MAX) global check ids, -1 padded, display order
    failed: np.ndarray  # (V, MAX) bool
    n_chk: np.ndarray
    n_failed: np.ndarray
    payloads: list[dict[str, Any]]
    ts: list[str]
    obj: list[str]  # the goal's object ("billing", "the ORM" …), which lessons quote
    n_contracts: int = 0  # contracts these verdicts belong to (the next block's first)
    seconds: int = 0  # seconds after BASE_TS of the last verdict (the next block's start)


VERDICT_NAMES = ("pass", "partial", "fail")


def make_verdicts(seed: Seed, runs: int, *, first_contract: int = 0,
                  start_seconds: int = 0) -> Verdicts:
    """``runs`` verdicts from ``seed`` (in journal order). A block of a long simulation
    (``simulate._blocks``) numbers its contracts from ``first_contract`` and times its
    verdicts from ``start_seconds`` after ``BASE_TS``; its first verdict is never a retry."""
    rng = stream(seed, 1)
    u = rng.random(runs)
    verdict = np.searchsorted(np.array([0.55, 0.75]), u, side="right")  # 55/20/25 %
    # A non-pass run is retried as the next run half of the time.
    retry = np.zeros(runs, dtype=bool)
    retry[1:] = (rng.random(runs - 1) < 0.5) & (verdict[:-1] != 0)
    contract = np.cumsum(~retry) - 1
    n_con = int(contract[-1]) + 1
    starts = np.flatnonzero(~retry)
    attempt = np.arange(runs) - starts[contract] + 1

    # Per contract: domain, goal template, object, checks (a random subset of the domain's).
    c_dom = pick(rng, len(DOMAINS), n_con)
    c_goal = pick(rng, 2, n_con)
    c_obj = rng.random(n_con)
    c_num = 1 + pick(rng, 9, n_con)
    c_nchk = np.minimum(2 + pick(rng, 4, n_con), DOM_NCHK[c_dom])
    keys = rng.random((n_con, MAX_CHK))
    keys[np.arange(MAX_CHK)[None, :] >= DOM_NCHK[c_dom][:, None]] = np.inf
    rank = np.argsort(np.argsort(keys, axis=1, kind="stable"), axis=1, kind="stable")
    c_sel = rank < c_nchk[:, None]  # (C, MAX) which of the domain's checks are in the contract

    dom = c_dom[contract]
    sel = c_sel[contract]
    n_chk = c_nchk[contract]
    # Which selected checks fail: a random order among the selected ones, the first k fail.
    fkeys = rng.random((runs, MAX_CHK))
    fkeys[~sel] = np.inf
    frank = np.argsort(np.argsort(fkeys, axis=1, kind="stable"), axis=1, kind="stable")
    uf = rng.random(runs)
    k_fail = np.where(
        verdict == 2, 1 + np.floor(uf * n_chk),
        np.where(verdict == 1, 1 + np.floor(uf * (n_chk - 1)), 0),
    ).astype(np.int64)
    k_fail = np.minimum(k_fail, n_chk)
    failed_dom = sel & (frank < k_fail[:, None])
    # Compact to display order (domain order), padded with -1.
    order = np.argsort(~sel, axis=1, kind="stable")
    slot = np.take_along_axis(np.where(sel, np.arange(MAX_CHK)[None, :], -1), order, axis=1)
    failed = np.take_along_axis(failed_dom, order, axis=1) & (slot >= 0)
    chk = np.where(slot >= 0, DOM_START[dom][:, None] + slot, -1)
    ev_n = 2 + pick(rng, 60, runs * MAX_CHK).reshape(runs, MAX_CHK)

    gaps = 1 + np.floor(-np.log(1.0 - rng.random(runs)) * 900.0).astype(np.int64)
    secs = start_seconds + np.cumsum(gaps)

    payloads, ts, objs_used = _payloads(dom, contract, attempt, verdict, c_obj, c_goal,
                                        c_num, n_chk, chk, failed, ev_n, secs, first_contract)
    return Verdicts(dom, verdict, chk, failed, n_chk, failed.sum(axis=1), payloads, ts,
                    objs_used, n_contracts=n_con, seconds=int(secs[-1]))


def _payloads(
    dom: np.ndarray, contract: np.ndarray, attempt: np.ndarray, verdict: np.ndarray,
    c_obj: np.ndarray, c_goal: np.ndarray, c_num: np.ndarray, n_chk: np.ndarray,
    chk: np.ndarray, failed: np.ndarray, ev_n: np.ndarray, secs: np.ndarray,
    first_contract: int = 0,
) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """Each verdict's Formats §1 payload, timestamp and goal object, from the draws of
    :func:`make_verdicts` (this draws nothing). Many parameters because the arrays are
    the simulator's draws, made once by its one caller and handed over as they are."""
    runs = verdict.shape[0]
    payloads: list[dict[str, Any]] = []
    ts: list[str] = []
    objs_used: list[str] = []
    for i in range(runs):
        d = int(dom[i])
        ci = int(contract[i])
        name, goals, objs, _ = DOMAINS[d]
        obj = objs[int(c_obj[ci] * len(objs))]
        objs_used.append(obj)
        goal = goals[int(c_goal[ci])].format(obj=obj, n=int(c_num[ci]))
        checks = []
        first_fail = None
        tags = [name]
        for j in range(int(n_chk[i])):
            g = int(chk[i, j])
            c = CHECKS[g]
            if failed[i, j]:
                checks.append({"name": c.name, "passed": False,
                               "evidence": c.fail_evidence.format(n=int(ev_n[i, j]))})
                if first_fail is None:
                    first_fail = c.failure
                if c.tag not in tags:
                    tags.append(c.tag)
            else:
                checks.append({"name": c.name, "passed": True, "evidence": c.pass_evidence})
        v = int(verdict[i])
        nf = int(failed[i].sum())
        if v == 0:
            summary = f"Done: all {len(checks)} checks passed"
        elif v == 1:
            summary = (f"Goal mostly met but {first_fail}; {nf} of {len(checks)} "
                       "checks failed")
        else:
            summary = f"Goal not met: {first_fail}; {nf} of {len(checks)} checks failed"
        if attempt[i] > 1:
            tags.append("retry")
        cn = first_contract + ci + 1
        payloads.append({
            "contract_id": f"c-{cn:05d}",
            "run_id": f"r-{cn:05d}-{int(attempt[i])}",
            "goal": goal,
            "verdict": VERDICT_NAMES[v],
            "summary": summary,
            "checks": checks,
            "tags": tags[:4],
        })
        ts.append((BASE_TS + timedelta(seconds=int(secs[i]))).strftime("%Y-%m-%dT%H:%M:%SZ"))
    return payloads, ts, objs_used
