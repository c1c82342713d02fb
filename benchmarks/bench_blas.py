"""Benchmark: ``truss-lab sweep`` of a 10k-verdict run, the shell's BLAS pool against one thread.

The evaluation's hot paths (the bootstraps of the sweep's intervals and of the choice)
run their matrix products on the BLAS pool truss_lab chooses (core/_threads.py: one
thread unless ``TRUSS_LAB_BLAS_THREADS`` says otherwise), so the command must take the
same time whatever the environment's BLAS pool is. Each command runs as a person runs
it, ``python -m truss_lab.faces.cli sweep RUN --db DB`` in a fresh process, under three
environments, interleaved, best of ``--repeat``:

- default: none of the thread variables set (numpy's OpenBLAS starts one thread per core);
- one: ``OPENBLAS_NUM_THREADS=1``;
- inherit (info): the default environment with ``TRUSS_LAB_BLAS_THREADS=inherit``, i.e.
  the library leaving the pool alone, as it did before it chose one.

Figures: default / one and one / default (goal <= 1.15 each way), and inherit / one
(info: what choosing the pool is worth on this machine now). The CPU seconds of each
child (user + system, the best run's) are in the notes. The run: ``simulate`` of 10k
verdicts (``--quick``: 2k), labels loaded, ``sim-good-v1`` replayed (model-scored).

    .venv/bin/python -m benchmarks.bench_blas [--quick] [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._result import THREAD_ENV, load_average, result
from tests.builders.stores import simulated_db
from truss_lab.core._config import MemoryConfig
from truss_lab.extract._batch import run_extraction
from truss_lab.extract._extractor import Extractor
from truss_lab.store._store import Store

ROOT = Path(__file__).resolve().parents[1]
GOAL = 1.15
RUN = "good"


def environments() -> dict[str, dict[str, str]]:
    """The three environments (see the module docstring), from this one."""
    bare = {k: v for k, v in os.environ.items() if k not in THREAD_ENV}
    bare["PYTHONPATH"] = str(ROOT)
    return {"default": bare, "one": {**bare, "OPENBLAS_NUM_THREADS": "1"},
            "inherit": {**bare, "TRUSS_LAB_BLAS_THREADS": "inherit"}}


def timed(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of ``truss-lab ARGS`` in a fresh process."""
    t0 = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "truss_lab.faces.cli", *args], cwd=ROOT,
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - t0
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        err = child.stderr.read().decode() if child.stderr else ""
        raise SystemExit(f"truss-lab {' '.join(args)} failed: {err[-500:]}")
    if child.stderr:
        child.stderr.close()
    return wall, usage.ru_utime + usage.ru_stime


def build(tmp: Path, n: int) -> Path:
    db = tmp / "lab.duckdb"
    simulated_db(tmp / "data", db, runs=n, seed=3, extractors=["sim-good-v1"], labels=True)
    with Store(db) as s:
        run_extraction(s, Extractor.replay(s, "sim-good-v1"),
                       MemoryConfig(lesson_extraction="model-scored"), progress=False,
                       run_id=RUN)
    return db


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2k verdicts, best of 2")
    ap.add_argument("--repeat", type=int, default=None)
    args = ap.parse_args()
    n = 2_000 if args.quick else 10_000
    repeat = args.repeat or (2 if args.quick else 3)
    with tempfile.TemporaryDirectory() as d:
        db = build(Path(d), n)
        cmd = ["sweep", RUN, "--db", str(db)]
        envs = environments()
        timed(cmd, envs["one"])  # warm the file cache and the imports once
        best = {k: (float("inf"), 0.0) for k in envs}
        for _ in range(repeat):
            for name, env in envs.items():
                best[name] = min(best[name], timed(cmd, env))
    print(f"truss-lab sweep of a {n:,}-verdict run, best of {repeat}; load average "
          f"{load_average():.2f}")
    for name, (wall, cpu) in best.items():
        print(f"  {name:8s} {wall:7.2f} s wall, {cpu:6.2f} s CPU")
    (d_wall, d_cpu), (o_wall, o_cpu), (i_wall, i_cpu) = (best[k] for k in envs)
    threads = {"default": "blas=cores(unset) lib=1", "one": "OPENBLAS_NUM_THREADS=1 lib=1",
               "inherit": "blas=cores(unset) lib=inherit"}
    cpu = f"CPU {d_cpu:.2f} s default, {o_cpu:.2f} s one, {i_cpu:.2f} s inherit"
    result(f"sweep {n // 1000}k verdicts: default BLAS env / OPENBLAS_NUM_THREADS=1", d_wall,
           "s", baseline=o_wall, ratio=d_wall / o_wall, goal=f"<= {GOAL:g}",
           baseline_name="the same command with OPENBLAS_NUM_THREADS=1",
           threads=f"{threads['default']} vs {threads['one']}", note=cpu)
    result(f"sweep {n // 1000}k verdicts: OPENBLAS_NUM_THREADS=1 / default BLAS env", o_wall,
           "s", baseline=d_wall, ratio=o_wall / d_wall, goal=f"<= {GOAL:g}",
           baseline_name="the same command with no thread variable set",
           threads=f"{threads['one']} vs {threads['default']}", note=cpu)
    result(f"sweep {n // 1000}k verdicts: pool left to the environment / one thread (info)",
           i_wall, "s", baseline=o_wall, ratio=i_wall / o_wall,
           baseline_name="the same command with OPENBLAS_NUM_THREADS=1",
           threads=f"{threads['inherit']} vs {threads['one']}",
           note="TRUSS_LAB_BLAS_THREADS=inherit: the library's behaviour before it chose a pool")


if __name__ == "__main__":
    main()
