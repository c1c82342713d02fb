"""Run every benchmark in benchmarks/ and print ONE table of their figures and goals.

    .venv/bin/python scripts/bench_all.py            # full sizes (make bench; minutes)
    .venv/bin/python scripts/bench_all.py --quick    # small sizes (make bench-quick; < 1 min)

Each ``benchmarks/bench_*.py`` runs as its own subprocess (resume_torture.py
belongs to scripts/reliability.py; bench_memory.py, which simulates and loads a
million verdicts for about an hour, runs only when named with ``--only``) and
reports each figure on one line of the format of :mod:`benchmarks._result`::

    RESULT name=NAME value=V unit=U baseline=B ratio=R goal=">= 0.8" load=L ...

Only those lines are read. A benchmark that crashed, timed out, printed no
RESULT line or a malformed one gets an error row, so no figure is silently lost.

Every benchmark runs with its thread pools fixed: ``OPENBLAS_NUM_THREADS``,
``OMP_NUM_THREADS``, ``MKL_NUM_THREADS`` and ``TRUSS_LAB_BLAS_THREADS`` set to
``--blas-threads`` (1 by default, the pool truss_lab's hot paths choose), so a
floor's matrix products and the library's run on the same pool whatever shell
started the run; each RESULT line records the pools it saw (``threads=``) and the
load average, and so does the JSON. The table is printed and the same rows, with
the machine (cores, load average at start and end, the fixed thread variables)
and each benchmark's run time, are written as JSON beside it
(``bench_results.json`` at the repository root, or ``--json PATH``). Goals not
met do not fail the run: the exit status is 1 only when a benchmark failed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script (make bench): benchmarks/ sits beside it
    sys.path.insert(0, str(ROOT))

from benchmarks._result import THREAD_ENV  # noqa: E402

ORDER = ["bench_cli_start.py", "bench_verify.py", "bench_sweep.py", "bench_bootstrap.py",
         "bench_blas.py", "bench_provider.py", "bench_extract.py", "bench_executor.py",
         "bench_duckdb_sweep.py", "bench_junk.py", "bench_ppi.py", "bench_report.py"]
#: Run only when named with --only: bench_memory's full run takes about an hour,
#: bench_journal_memory's (350k entries imported and verified each way) about half an hour.
ON_REQUEST = {"bench_memory.py", "bench_journal_memory.py"}
_NUMERIC = ("value", "baseline", "ratio", "load")


def thread_env(blas_threads: int) -> dict[str, str]:
    """The thread variables every benchmark runs with (see the module docstring)."""
    return dict.fromkeys(THREAD_ENV, str(blas_threads))


@dataclass
class Fig:
    """One row: a figure, its baseline, the ratio and the goal on that ratio."""

    bench: str
    name: str
    value: float | None = None
    unit: str = ""
    baseline: float | None = None
    ratio: float | None = None
    goal: str = ""
    met: str = ""
    baseline_name: str = ""
    load: float | None = None
    threads: str = ""
    note: str = ""
    error: str = ""


def judge(ratio: float | None, goal: str) -> str:
    """'yes' / 'NO' when the goal is '>= x' or '<= x' and the ratio a number; '' otherwise."""
    if ratio is None or not goal or goal[:3] not in (">= ", "<= "):
        return ""
    try:
        g = float(goal[3:])
    except ValueError:
        return ""
    return "yes" if (ratio >= g if goal.startswith(">=") else ratio <= g) else "NO"


def _float(s: str) -> float | None:
    return float(s) if s not in ("", "nan") else None


def parse_results(bench: str, stdout: str) -> list[Fig]:
    """The RESULT lines of one benchmark's output; a malformed one becomes an error row."""
    figs = []
    for lineno, line in enumerate(stdout.splitlines(), 1):
        if not line.startswith("RESULT "):
            continue
        try:
            kv = dict(tok.split("=", 1) for tok in shlex.split(line[7:]))
            if "name" not in kv or "value" not in kv:
                raise ValueError("needs name= and value=")
            nums = {k: _float(kv.get(k, "")) for k in _NUMERIC}
        except ValueError as exc:
            figs.append(Fig(bench, f"malformed RESULT line {lineno}", error=f"{exc}: {line[:80]}"))
            continue
        f = Fig(bench, kv["name"], nums["value"], kv.get("unit", ""), nums["baseline"],
                nums["ratio"], kv.get("goal", ""), baseline_name=kv.get("baseline_name", ""),
                load=nums["load"], threads=kv.get("threads", ""), note=kv.get("note", ""))
        f.met = judge(f.ratio, f.goal)
        figs.append(f)
    return figs


def child_env(blas_threads: int) -> dict[str, str]:
    """A benchmark's environment: this one with its thread pools fixed, run from the root."""
    return {**os.environ, **thread_env(blas_threads), "PYTHONPATH": str(ROOT)}


def run_one(name: str, quick: bool, timeout: float, blas_threads: int = 1
            ) -> tuple[int | None, str, str, float]:
    """(return code or None on timeout, stdout, stderr, seconds)."""
    t = time.perf_counter()
    try:
        # As a module, so that it imports tests.builders and benchmarks.* from the root.
        r = subprocess.run([sys.executable, "-m", f"benchmarks.{Path(name).stem}",
                            *(["--quick"] if quick else [])],
                           cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                           env=child_env(blas_threads))
        return r.returncode, r.stdout, r.stderr, time.perf_counter() - t
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return None, out, "timed out", time.perf_counter() - t


def figures_of(name: str, rc: int | None, stdout: str, stderr: str) -> list[Fig]:
    """Every figure one benchmark reported, plus an error row when it failed."""
    short = name.removeprefix("bench_").removesuffix(".py")
    figs = parse_results(short, stdout)
    if rc != 0:
        tail = (stderr.strip().splitlines() or ["?"])[-1][:100]
        figs.append(Fig(short, "CRASHED" if rc is not None else "TIMED OUT",
                        error=f"rc={rc}: {tail}"))
    elif not figs:
        figs.append(Fig(short, "no RESULT line", error="the benchmark printed no figure"))
    return figs


def _cell(x: float | None) -> str:
    if x is None:
        return ""
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"


def table(rows: list[Fig]) -> str:
    head = ("benchmark", "figure", "value", "unit", "baseline", "ratio", "goal", "met?")
    cells = [(f.bench, f.name, _cell(f.value), f.unit, _cell(f.baseline), _cell(f.ratio),
              f.goal or "-", f.met or ("ERROR " + f.error if f.error else "-")) for f in rows]
    w = [max([len(head[i]), *(len(c[i]) for c in cells)]) for i in range(len(head))]
    right = {2, 4, 5}
    fmt = " | ".join(f"{{:{'>' if i in right else '<'}{w[i]}}}" for i in range(len(head)))
    lines = [fmt.format(*head).rstrip(), "-+-".join("-" * x for x in w)]
    lines += [fmt.format(*c).rstrip() for c in cells]
    return "\n".join(lines)


def _goal(f: Fig) -> str:
    """``≤ 3, met`` / ``≥ 0.8, not met`` / ``info``: the goal and whether it was met."""
    if not f.goal:
        return "info"
    said = f.goal.replace("<=", "≤").replace(">=", "≥")
    return f"{said}, {'met' if f.met == 'yes' else 'not met'}" if f.met else said


def markdown(rows: list[Fig]) -> str:
    """The rows as the Markdown table of docs/explanation/performance.md: each figure with
    its named baseline, the ratio, the goal (met or not) and the load it was taken at."""
    lines = ["| figure | value | baseline (named) | ratio | goal | load |",
             "|---|---|---|---|---|---|"]
    for f in rows:
        if f.error:
            lines.append(f"| `{f.bench}` {f.name} | | | | ERROR {f.error} | |")
            continue
        base = f"{_cell(f.baseline)} {f.unit} ({f.baseline_name})" if f.baseline is not None \
            else (f.baseline_name or "")
        load = "" if f.load is None else f"{f.load:.2f}"
        lines.append(f"| `{f.bench}` {f.name} | {_cell(f.value)} {f.unit} | {base} | "
                     f"{_cell(f.ratio)} | {_goal(f)} | {load} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="pass --quick to every benchmark")
    ap.add_argument("--timeout", type=float, default=None,
                    help="seconds per benchmark (default 120 quick, 3600 full)")
    ap.add_argument("--only", nargs="*", default=None, help="benchmark file names to run")
    ap.add_argument("--blas-threads", type=int, default=1,
                    help="BLAS (and OpenMP) threads of every benchmark (default 1)")
    ap.add_argument("--json", type=Path, default=ROOT / "bench_results.json",
                    help="where to write the machine-readable results")
    args = ap.parse_args(argv)
    timeout = args.timeout or (120.0 if args.quick else 3600.0)
    found = sorted(p.name for p in (ROOT / "benchmarks").glob("bench_*.py"))
    names = [n for n in ORDER if n in found] + [n for n in found if n not in ORDER]
    if args.only:
        names = [n for n in names if n in args.only or Path(n).stem in args.only]
    else:
        names = [n for n in names if n not in ON_REQUEST]
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    threads = thread_env(args.blas_threads)
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    rows: list[Fig] = []
    ran: dict[str, dict[str, object]] = {}
    for name in names:
        rc, stdout, stderr, secs = run_one(name, args.quick, timeout, args.blas_threads)
        ran[name] = {"seconds": round(secs, 2), "returncode": rc}
        rows += figures_of(name, rc, stdout, stderr)
    load1 = os.getloadavg()
    total = time.perf_counter() - t0
    busy = max(load0[0], load1[0]) > (cores or 1)
    print(f"benchmarks ({'--quick' if args.quick else 'full'}) on {cores} cores; 1-min load "
          f"average {load0[0]:.2f} at start, {load1[0]:.2f} at end"
          + (f" (> {cores}: cores were shared, figures are noisy)" if busy else "")
          + f"; thread pools fixed: {' '.join(f'{k}={v}' for k, v in threads.items())}")
    print(table(rows))
    print("\nThe same rows as the table of docs/explanation/performance.md:\n")
    print(markdown(rows))
    took = ", ".join(f"{k} {v['seconds']:.0f}s" for k, v in ran.items())
    print(f"\nran: {took}; total "
          f"{total:.0f}s. Ratios are as each benchmark defines them (see its docstring); "
          f"goals not met do not fail the run. JSON: {args.json}")
    doc = {"mode": "quick" if args.quick else "full", "cores": cores,
           "loadavg_start": list(load0), "loadavg_end": list(load1), "thread_env": threads,
           "python": platform.python_version(), "machine": platform.machine(),
           "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "total_seconds": round(total, 2), "benchmarks": ran,
           "results": [asdict(f) for f in rows]}
    args.json.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return 1 if any(f.error for f in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
