"""Benchmark: the verdict bootstrap against its honest floor, measured in the same run.

Figure: ``bootstrap_metrics`` time, R = 1000 replicates over 100k candidates in
V = 20k verdicts at a 101-threshold grid (``--quick``: 200 replicates, 10k in 2k).
Floor: the work no verdict bootstrap can skip: for each replicate, drawing the
V resample counts (``rng.integers(0, V, V)`` + ``np.bincount``), then the two
weighted count products it needs (replicate weights x per-verdict histograms of
candidates and of positives over the threshold bins, float32 matmuls). Everything
else (histograms, cumulative sums, metrics, intervals) is overhead on top.
Goal: bootstrap / floor <= 2. Timings are the best of 5 runs, the two interleaved.

    .venv/bin/python -m benchmarks.bench_bootstrap [--quick]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np

from benchmarks._result import best_times, load_average, result
from truss_lab.evaluate._bootstrap import bootstrap_metrics

GOAL = 2.0



def floor(n_boot: int, n_v: int, h_all: np.ndarray, h_pos: np.ndarray) -> np.ndarray:
    """R x V resample counts (integers + bincount per replicate) and the two products."""
    rng = np.random.default_rng(0)
    w = np.empty((n_boot, n_v), dtype=np.float32)
    for b in range(n_boot):
        w[b] = np.bincount(rng.integers(0, n_v, size=n_v), minlength=n_v)
    return np.stack([w @ h_all, w @ h_pos])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="200 replicates, 10k candidates")
    ap.add_argument("--repeat", type=int, default=None)
    args = ap.parse_args()
    n_b, n_v, n_boot = (10_000, 2_000, 200) if args.quick else (100_000, 20_000, 1000)
    repeat = args.repeat or (2 if args.quick else 5)
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    groups = rng.integers(0, n_v, n_b)
    s = rng.random(n_b)
    y = (rng.random(n_b) < s).astype(np.int8)
    grid = np.linspace(0, 1, 101)
    # The per-verdict histograms the floor multiplies (built outside its timing:
    # one bincount over the candidates, negligible next to R x V draws).
    bins = np.searchsorted(grid, s, side="right")
    h_all = np.zeros((n_v, len(grid) + 1), np.float32)
    np.add.at(h_all, (groups, bins), 1)
    h_pos = np.zeros_like(h_all)
    np.add.at(h_pos, (groups[y == 1], bins[y == 1]), 1)

    t_boot, t_floor = best_times([
        lambda: bootstrap_metrics(y, s, groups, thresholds=grid, n_boot=n_boot),
        lambda: floor(n_boot, n_v, h_all, h_pos)], repeat)
    print(f"{n_boot}-replicate verdict bootstrap, {n_b:,} candidates in {n_v:,} verdicts, "
          f"{len(grid)} thresholds; load average {load_average():.2f}")
    print(f"  bootstrap_metrics           {t_boot:8.3f} s ({1000 * t_boot / n_boot:.2f} ms/rep)")
    print(f"  floor (draws + 2 products)  {t_floor:8.3f} s")
    result(f"bootstrap {n_boot} reps ({n_b:,} cand., {n_v:,} verdicts) / floor", t_boot, "s",
           baseline=t_floor, ratio=t_boot / t_floor, goal=f"<= {GOAL:g}",
           baseline_name="integers+bincount per replicate + 2 weighted count products")


if __name__ == "__main__":
    main()
