"""Benchmark: peak memory of simulate, load, replay extraction and sweep at two sizes.

Each step runs as a person runs it, ``python -m truss_lab.faces.cli ...`` in a fresh
process, and its peak resident set (``ru_maxrss`` of that child, i.e. its VmHWM) is
read when it ends:

1. ``simulate --out DATA --n-verdicts N`` (the simulator's three default extractors;
   the pipeline then uses ``sim-good-v1``);
2. ``ingest journal``, ``ingest completions``, ``ingest labels`` into a fresh database
   (the load; each its own process);
3. ``extract --extractor replay:sim-good-v1 --policy model-scored`` (replay extraction);
4. ``sweep RUN`` (the run's threshold sweep and choice, with intervals).

Figures: for each size, the largest peak over the steps ("the pipeline's peak"), and
the ratio of the large size's peak to the small size's (goal <= 1.3: memory bounded
independently of the number of verdicts). Each step's own peak is in the notes and on
stdout. Sizes: 100k and 1M verdicts (``--quick``: 2k and 20k). The 1M run takes about
an hour on two cores and a few GB of disk in the temporary folder (``--tmp``), so
``scripts/bench_all.py`` runs it only when named (``--only bench_memory``).

    nice -n 10 .venv/bin/python -m benchmarks.bench_memory [--quick] [--sizes 100000 1000000]
        [--tmp DIR] [--keep]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._result import load_average, result

ROOT = Path(__file__).resolve().parents[1]
GOAL = 1.3
RUN = "mem-good"


def child_peak(cmd: list[str]) -> tuple[float, float]:
    """(peak RSS MiB, wall seconds) of ``cmd`` run in a fresh process from the repository
    root (``ru_maxrss`` of the child as ``wait4`` reports it); a failure ends the run."""
    t0 = time.perf_counter()
    child = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert child.stderr is not None
    err = child.stderr.read()  # drained while it runs: a full pipe would block it
    _, status, usage = os.wait4(child.pid, 0)
    child.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)[:300]} failed: {err.decode()[-800:]}")
    return usage.ru_maxrss / 1024, time.perf_counter() - t0


def _cli(args: list[str]) -> tuple[float, float]:
    """(peak RSS MiB, wall seconds) of ``truss-lab ARGS`` in a fresh process."""
    return child_peak([sys.executable, "-m", "truss_lab.faces.cli", *args])


def pipeline(tmp: Path, n: int) -> dict[str, tuple[float, float]]:
    """Each step's (peak MiB, seconds) for ``n`` verdicts (see the module docstring)."""
    data, db = tmp / f"data{n}", str(tmp / f"lab{n}.duckdb")
    steps = {
        "simulate": ["simulate", "--out", str(data), "--n-verdicts", str(n),
                     "--random-state", "5"],
        "ingest journal": ["ingest", "journal", str(data / "journal.jsonl"), "--keyring",
                           str(data / "keys.json"), "--db", db],
        "ingest completions": ["ingest", "completions", str(data / "completions.jsonl"),
                               "--db", db],
        "ingest labels": ["ingest", "labels", str(data / "labels.csv"), "--db", db],
        "extract": ["extract", "--db", db, "--extractor", "replay:sim-good-v1", "--policy",
                    "model-scored", "--run-id", RUN, "--quiet"],
        "sweep": ["sweep", RUN, "--db", db, "--n-boot", "200"],
    }
    out = {}
    for name, args in steps.items():
        out[name] = _cli(args)
        print(f"  {n:>9,} {name:20s} peak {out[name][0]:8.1f} MiB  {out[name][1]:7.1f} s  "
              f"load {load_average():.2f}", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2k and 20k verdicts")
    ap.add_argument("--sizes", type=int, nargs=2, default=None, metavar=("SMALL", "LARGE"))
    ap.add_argument("--tmp", type=Path, default=None, help="folder for the data (default: "
                    "a temporary folder)")
    ap.add_argument("--keep", action="store_true", help="keep the data and databases (their "
                    "folder is printed) so that one step can be run again on them")
    args = ap.parse_args()
    small, large = args.sizes or ((2_000, 20_000) if args.quick else (100_000, 1_000_000))
    if args.keep:
        d = tempfile.mkdtemp(dir=args.tmp)
        print(f"  data kept in {d}", flush=True)
        peaks = {n: pipeline(Path(d), n) for n in (small, large)}
    else:
        with tempfile.TemporaryDirectory(dir=args.tmp) as d:
            peaks = {n: pipeline(Path(d), n) for n in (small, large)}
    top = {n: max(p.values()) for n, p in peaks.items()}
    for n in (small, large):
        steps = ", ".join(f"{k} {v[0]:.0f}" for k, v in peaks[n].items())
        worst = max(peaks[n], key=lambda k: peaks[n][k][0])
        result(f"peak RSS, simulate+load+replay extraction+sweep of {n:,} verdicts", top[n][0],
               "MiB", note=f"largest step: {worst}; each step (MiB): {steps}")
    result(f"peak RSS {large:,} / {small:,} verdicts", top[large][0], "MiB",
           baseline=top[small][0], ratio=top[large][0] / top[small][0], goal=f"<= {GOAL:g}",
           baseline_name=f"the same pipeline's peak at {small:,} verdicts",
           note="largest step peak of each size, each step a fresh process")


if __name__ == "__main__":
    main()
