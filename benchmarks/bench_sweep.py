"""Benchmark: threshold sweep and verdict bootstrap against their baselines.

Prints, from one run:

1. 1M candidates: ``sweep`` time / scikit-learn ``precision_recall_curve`` time
   (goal <= 0.33) and / bare ``np.argsort`` time (goal <= 2.5);
2. a 1000-replicate verdict bootstrap on 100k candidates in 20k verdicts at a
   101-threshold grid, time / one sweep of the same data (goal <= 5);
3. peak traced memory of a 10M-candidate sweep / size of its input arrays
   (goal <= 3).

Timings are the best of several runs (the machine is shared). Run:
``.venv/bin/python -m benchmarks.bench_sweep`` (``--quick`` for small sizes).
"""

from __future__ import annotations

import argparse
import gc
import os
import time
import tracemalloc
import warnings
from collections.abc import Callable

import numpy as np
from sklearn.metrics import precision_recall_curve

from truss_lab.evaluate._bootstrap import bootstrap_metrics
from truss_lab.evaluate._sweep import sweep


def best_time(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def peak_bytes(fn: Callable[[], object]) -> int:
    gc.collect()
    tracemalloc.start()
    tracemalloc.reset_peak()
    out = fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del out
    return peak


def line(name: str, value: float, goal: float | None = None, unit: str = "") -> None:
    verdict = ""
    if goal is not None:
        verdict = f"   goal <= {goal:g}: {'MET' if value <= goal else 'NOT MET'}"
    print(f"  {name:<58s} {value:10.3f}{unit}{verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, fewer repeats")
    args = parser.parse_args()
    scale = 10 if args.quick else 1
    repeat = 3 if args.quick else 7
    rng = np.random.default_rng(0)
    warnings.simplefilter("ignore")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"machine: {os.cpu_count()} cores, 1-min load average {load:.2f} "
          "(sweep sorts in threads; OpenBLAS threads the bootstrap: both suffer under load;")
    print(f"  OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}, "
          "set it to 1 on a busy machine)")

    # 1. ------------------------------------------------------------ 1M sweep
    n = 1_000_000 // scale
    s = rng.random(n)
    y = (rng.random(n) < s).astype(np.int8)
    t_sweep = best_time(lambda: sweep(y, s), repeat)
    t_sk = best_time(lambda: precision_recall_curve(y, s), repeat)
    t_argsort = best_time(lambda: np.argsort(s), repeat)
    s2 = np.round(s, 2)
    t_sweep2 = best_time(lambda: sweep(y, s2), repeat)
    t_sk2 = best_time(lambda: precision_recall_curve(y, s2), repeat)
    print(f"1. sweep of {n:,} candidates (distinct float saliences; labels int8)")
    line("sweep (s)", t_sweep)
    line("sklearn precision_recall_curve (s)", t_sk)
    line("np.argsort (s)", t_argsort)
    line("sweep / precision_recall_curve", t_sweep / t_sk, 0.33)
    line("sweep / np.argsort", t_sweep / t_argsort, 2.5)
    line("saliences rounded to 0.01: sweep / precision_recall_curve", t_sweep2 / t_sk2)

    # 2. ------------------------------------------------------ 1000x bootstrap
    n_b, n_v = 100_000 // scale, 20_000 // scale
    groups = rng.integers(0, n_v, n_b)
    sb = rng.random(n_b)
    yb = (rng.random(n_b) < sb).astype(np.int8)
    grid = np.linspace(0, 1, 101)
    n_boot = 1000
    t_boot = best_time(
        lambda: bootstrap_metrics(yb, sb, groups, thresholds=grid, n_boot=n_boot),
        max(2, repeat // 2),
    )
    t_one = best_time(lambda: sweep(yb, sb, groups=groups), repeat)
    t_one_grid = best_time(lambda: sweep(yb, sb, groups=groups, thresholds=grid), repeat)
    print(f"2. {n_boot}-replicate verdict bootstrap, {n_b:,} candidates in {n_v:,} verdicts, "
          f"{len(grid)} thresholds")
    line("bootstrap_metrics (s)", t_boot)
    line("one sweep, distinct thresholds, with groups (s)", t_one)
    line("one sweep, the 101-threshold grid, with groups (s)", t_one_grid)
    line("bootstrap / one sweep (distinct thresholds)", t_boot / t_one, 5)
    line("per replicate (ms)", 1000 * t_boot / n_boot)
    line("bootstrap / the part-1 sweep (other reading of the goal)", t_boot / t_sweep)

    # 3. --------------------------------------------------- 10M peak memory
    n_m = 10_000_000 // scale
    sm = np.round(rng.random(n_m), 3)
    ym = (rng.random(n_m) < sm).astype(np.int8)
    input_bytes = sm.nbytes + ym.nbytes
    peak_rounded = peak_bytes(lambda: sweep(ym, sm))
    peak_grid = peak_bytes(lambda: sweep(ym, sm, thresholds=grid))
    sm_distinct = rng.random(n_m)
    peak_distinct = peak_bytes(lambda: sweep(ym, sm_distinct))
    print(f"3. peak traced memory of a {n_m:,}-candidate sweep "
          f"(inputs: float64 salience + int8 labels = {input_bytes / 2**20:.0f} MiB)")
    line(
        "saliences at 0.001 resolution, distinct thresholds: peak / input",
        peak_rounded / input_bytes,
        3,
    )
    line("101-threshold grid: peak / input", peak_grid / input_bytes, 3)
    line("all-distinct saliences (10 output columns x n rows): peak / input",
         peak_distinct / input_bytes)


if __name__ == "__main__":
    main()
