"""False discoveries of the per-slice test (issue 40): ``slice_run``'s test and q-values
on a simulator written for it, with and without a slice effect.

The simulator (this script's own, separate from the bundled sample's): a run over
``--verdicts`` verdicts (800) cut into ``--slices`` equal slices (20, a partition, as a
payload field cuts them). A verdict gets 1 + Poisson(2) lessons; a verdict's lessons
share its usefulness rate ``p_v ~ Beta(2, 2)`` (lessons of one verdict are correlated,
as the verdict bootstrap assumes), each lesson is useful with probability ``p_v`` and
its salience is ``sigmoid(1.5 (2 y - 1) + N(0, 1))``: informative. With ``--effect``
(the planted scenario) the lessons of slice 0 get their salience reversed,
``sigmoid(-1.5 (2 y - 1) + N(0, 1))``: that extractor ranks them upside down there. Every
lesson is labelled (the labels truth, no correction).

Each replicate draws a fresh run (seed ``SEED + r``), counts each verdict at threshold
0.5 exactly as :func:`~truss_lab.evaluate._slices.slice_run` does (a
:class:`~truss_lab.evaluate._truth.RunTruth` through ``_verdict_counts``), tests every
slice against the rest on F1 by verdict permutation
(:func:`~truss_lab.evaluate._slices.permutation_pvalues`, ``--permutations``) and takes
Benjamini-Hochberg q-values (:func:`~truss_lab.evaluate._slices.bh_qvalues`); a slice with
q < 0.05 is a discovery. Reported, each share with its Monte Carlo standard error
sqrt(s (1 - s) / R):

- null (no effect): the share of replicates with any discovery (BH controls it at 0.05
  when every hypothesis is null: it must be <= 0.05 + its Monte Carlo error at 0.05,
  sqrt(0.05 x 0.95 / R));
- planted (effect in slice 0 of 20): the share of replicates where slice 0 is found
  (power, must be >= 0.8) and the mean false discovery proportion (false discoveries /
  discoveries, 0 without any; must be <= 0.05).

Run (about 1 s a replicate on one core; the figures in docs/how-to/slices.md)::

    .venv/bin/python -m scripts.slice_false_discoveries [--replicates 200]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

import numpy as np
import pandas as pd

from truss_lab.evaluate._slices import _verdict_counts, bh_qvalues, permutation_pvalues
from truss_lab.evaluate._truth import RunTruth

SEED = 400_000
THRESHOLD = 0.5
Q_LEVEL = 0.05


def simulate_run(rng: np.random.Generator, n_verdicts: int, n_slices: int,
                 effect: bool) -> tuple[RunTruth, list[np.ndarray]]:
    """One simulated run judged by labels, and each slice's verdicts (bool masks)."""
    n_les = 1 + rng.poisson(2.0, n_verdicts)
    p_v = rng.beta(2.0, 2.0, n_verdicts)
    v = np.repeat(np.arange(n_verdicts), n_les)
    y = (rng.random(len(v)) < p_v[v]).astype(np.uint8)
    slice_of = np.arange(n_verdicts) * n_slices // n_verdicts
    sign = np.where(effect & (slice_of[v] == 0), -1.0, 1.0)
    s = 1.0 / (1.0 + np.exp(-(sign * 1.5 * (2.0 * y - 1.0) + rng.standard_normal(len(v)))))
    hashes = np.array([f"v{i:05d}" for i in range(n_verdicts)], dtype=object)
    cands = pd.DataFrame({"verdict_hash": hashes[v], "s": np.round(s, 2), "y": y,
                          "judged": np.ones(len(v), dtype=bool)})
    run = RunTruth(run_id="sim", candidates=cands, n_verdicts=n_verdicts,
                   verdicts=list(hashes), counts={"verdicts": n_verdicts})
    return run, [slice_of == k for k in range(n_slices)]


def replicate(r: int, args: argparse.Namespace, effect: bool) -> np.ndarray:
    """The discoveries (bool per slice) of replicate ``r``."""
    rng = np.random.default_rng([SEED, r, int(effect)])
    run, masks = simulate_run(rng, args.verdicts, args.slices, effect)
    _, counts = _verdict_counts(run, None, THRESHOLD)
    _, p = permutation_pvalues(counts, masks, "f1", n_perm=args.permutations,
                               random_state=[SEED, r, int(effect), 1])
    return bh_qvalues(p) < Q_LEVEL


def share(x: np.ndarray) -> dict[str, float]:
    """The share of true values and its Monte Carlo standard error."""
    s = float(np.mean(x))
    return {"share": round(s, 4), "mc_se": round(math.sqrt(s * (1 - s) / len(x)), 4)}


def main(argv: list[str] | None = None) -> int:
    """Run both scenarios and print their figures as JSON; exit 1 if one misses its bound."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--replicates", type=int, default=200)
    ap.add_argument("--verdicts", type=int, default=800)
    ap.add_argument("--slices", type=int, default=20)
    ap.add_argument("--permutations", type=int, default=1000)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    null = np.array([replicate(r, args, False) for r in range(args.replicates)])
    planted = np.array([replicate(r, args, True) for r in range(args.replicates)])
    any_null = share(null.any(axis=1))
    found = share(planted[:, 0])
    false = planted[:, 1:].sum(axis=1)
    total = planted.sum(axis=1)
    fdp = np.where(total > 0, false / np.maximum(total, 1), 0.0)
    out = {
        "replicates": args.replicates, "verdicts": args.verdicts, "slices": args.slices,
        "permutations": args.permutations, "threshold": THRESHOLD, "q_level": Q_LEVEL,
        "null_any_discovery": any_null,
        "null_bound": round(Q_LEVEL + math.sqrt(Q_LEVEL * (1 - Q_LEVEL)
                                                    / args.replicates), 4),
        "planted_found": found,
        "planted_mean_fdp": {"mean": round(float(fdp.mean()), 4),
                             "mc_se": round(float(fdp.std(ddof=1) / math.sqrt(len(fdp))), 4)},
        "seconds": round(time.perf_counter() - t0, 1),
    }
    ok = (any_null["share"] <= out["null_bound"] and found["share"] >= 0.8
          and out["planted_mean_fdp"]["mean"] <= Q_LEVEL)
    out["all_bounds_met"] = ok
    print(json.dumps(out, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
