"""Benchmark: the prediction-powered sweep against the plain sweep, measured in one run.

Figure: ``ppi_data`` + ``ppi_sweep`` time over 1M automated rows (candidates) in
200k verdicts, 2,000 of them (1 %) people-matched (their ~10k human rows), every
distinct salience a threshold (``--quick``: 50k rows in 10k verdicts, 200 sampled).
Baseline: ``sweep(y, s, groups=verdicts)``, the uncorrected sweep of the same rows as
``reference_sweep`` calls it (one sort plus cumulative sums, the verdicts counted for
kept per verdict); the ppi figure includes building its input (``ppi_data``: the
verdicts counted, the sampled verdicts' rows found).
Goal: ppi / plain <= 3 (issue 26). Timings are the best of 5 runs, interleaved.

    .venv/bin/python -m benchmarks.bench_ppi [--quick]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import pandas as pd

from benchmarks._result import best_times, load_average, result
from truss_lab.evaluate._ppi import ppi_data, ppi_sweep
from truss_lab.evaluate._sweep import sweep

GOAL = 3.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="50k rows, 10k verdicts")
    ap.add_argument("--repeat", type=int, default=None)
    args = ap.parse_args()
    n, n_v, n_s = (50_000, 10_000, 200) if args.quick else (1_000_000, 200_000, 2_000)
    repeat = args.repeat or (3 if args.quick else 5)
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    # Verdicts as the store gives them (hash strings), rows grouped by verdict.
    names = np.array([f"{i:016x}" for i in range(n_v)], dtype=object)
    groups = names[np.sort(rng.integers(0, n_v, n))]
    s = rng.random(n)
    y = (rng.random(n) < s).astype(np.uint8)
    picked = rng.choice(pd.unique(groups), size=n_s, replace=False)
    rows = np.isin(groups, picked)
    # The people disagree with the automated truth on one row in ten.
    yh = y[rows] ^ (rng.random(int(rows.sum())) < 0.1).astype(np.uint8)
    sh, gh = s[rows], groups[rows]

    def ppi() -> object:
        return ppi_sweep(ppi_data(y, s, groups, yh, sh, gh, sampled=picked))

    t_ppi, t_plain = best_times([ppi, lambda: sweep(y, s, groups=groups)], repeat)
    print(f"ppi sweep of {n:,} rows in {n_v:,} verdicts, {n_s:,} people-matched "
          f"({len(yh):,} human rows); load average {load_average():.2f}")
    print(f"  ppi_data + ppi_sweep       {t_ppi:8.3f} s")
    print(f"  sweep (plain, groups)      {t_plain:8.3f} s")
    print(f"  ratio                      {t_ppi / t_plain:8.2f}  (goal <= {GOAL:g})")
    result(f"ppi sweep ({n:,} rows, {n_s:,} people-matched verdicts) / plain sweep", t_ppi,
           "s", baseline=t_plain, ratio=t_ppi / t_plain, goal=f"<= {GOAL:g}",
           baseline_name="sweep(y, s, groups) of the same rows")


if __name__ == "__main__":
    main()
