"""Benchmark: threshold sweep against its baselines (time and peak memory).

Prints, from one run:

1. 1M candidates: ``sweep`` time / scikit-learn ``precision_recall_curve`` time
   (goal <= 0.33) and / bare ``np.argsort`` time (goal <= 2.5);
2. (the verdict bootstrap is benchmarks/bench_bootstrap.py, against its floor)
3. peak traced memory of a 10M-candidate sweep / size of its input arrays
   (goal <= 3).

Timings are the best of several runs, the sweep and its baselines interleaved (the
machine is shared). Run:
``.venv/bin/python -m benchmarks.bench_sweep`` (``--quick`` for small sizes).
"""

from __future__ import annotations

import argparse
import gc
import os
import tracemalloc
import warnings
from collections.abc import Callable

import numpy as np
from sklearn.metrics import precision_recall_curve

from benchmarks._result import best_times, result
from truss_lab.evaluate._sweep import sweep


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
    scale = 20 if args.quick else 1
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
    s2 = np.round(s, 2)
    t_sweep, t_sk, t_argsort, t_sweep2, t_sk2 = best_times([
        lambda: sweep(y, s), lambda: precision_recall_curve(y, s), lambda: np.argsort(s),
        lambda: sweep(y, s2), lambda: precision_recall_curve(y, s2)], repeat)
    print(f"1. sweep of {n:,} candidates (distinct float saliences; labels int8)")
    line("sweep (s)", t_sweep)
    line("sklearn precision_recall_curve (s)", t_sk)
    line("np.argsort (s)", t_argsort)
    line("sweep / precision_recall_curve", t_sweep / t_sk, 0.33)
    line("sweep / np.argsort", t_sweep / t_argsort, 2.5)
    line("saliences rounded to 0.01: sweep / precision_recall_curve", t_sweep2 / t_sk2)
    result(f"sweep {n:,} / sklearn precision_recall_curve", t_sweep, "s", baseline=t_sk,
           ratio=t_sweep / t_sk, goal="<= 0.33", baseline_name="precision_recall_curve")
    result(f"sweep {n:,} / np.argsort", t_sweep, "s", baseline=t_argsort,
           ratio=t_sweep / t_argsort, goal="<= 2.5", baseline_name="np.argsort")
    result(f"  sweep {n:,}, saliences at 0.01 / sklearn (info)", t_sweep2, "s",
           baseline=t_sk2, ratio=t_sweep2 / t_sk2, baseline_name="precision_recall_curve")

    # 3. --------------------------------------------------- 10M peak memory
    grid = np.linspace(0, 1, 101)
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
    mib = 2**20
    result(f"sweep {n_m:,} peak memory / input (0.001 res.)", peak_rounded / mib, "MiB",
           baseline=input_bytes / mib, ratio=peak_rounded / input_bytes, goal="<= 3",
           baseline_name="float64 salience + int8 labels")
    result(f"sweep {n_m:,} peak memory / input (101 grid)", peak_grid / mib, "MiB",
           baseline=input_bytes / mib, ratio=peak_grid / input_bytes, goal="<= 3",
           baseline_name="float64 salience + int8 labels")


if __name__ == "__main__":
    main()
