"""Benchmark: ``truss-lab report`` against ``truss-lab sweep`` of the same run, on the sample.

The report is built from one evaluation pass per run (``evaluate_run``: the sweep,
the choice and the bands of one judged run) plus its other sections (runs and
config, precision-recall, calibration, junk rates, the audit, the verdict list);
the baseline is the command a person runs to choose a threshold for that run,
``truss-lab sweep RUN``. Both with their defaults, on a store holding the bundled
sample with the README quickstart's runs (``sim-good-v1`` and
``sim-overconfident-v1``, model-scored at 0.70).

Each command runs as a person runs it, ``python -m truss_lab.faces.cli ...`` in a
fresh process (start-up included, best of ``--repeats``): the figure is the report's
time over the sweep's (goal <= 3, issue 29). Informational figures beside it: the CPU
seconds (user + system) of those fresh processes, which a loaded machine moves far less
than their wall time; the same commands in this process (click's runner: the commands'
own work, no start-up); and the report of both runs against the two sweeps. Last, the
report's figures (of both runs) each saved by ``save_png`` (drawn once, cut to the drawn
box) against matplotlib's tight save of the same figure (drawn twice), CPU time in this
process (goal <= 0.8).

    .venv/bin/python -m benchmarks.bench_report [--quick] [--repeats N]
"""

from __future__ import annotations

import argparse
import io
import pickle
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._result import result
from tests.builders.cli import invoke
from truss_lab.faces._notebook import load_sample, run_sample_extractions, sample_run_id

ROOT = Path(__file__).resolve().parents[1]
RUNS = ("sim-good-v1", "sim-overconfident-v1")


def _child(args: list[str]) -> float:
    """Seconds of ``truss-lab ARGS`` in a fresh Python process (exit 0 required)."""
    return _child_times(args)[0]


def _child_times(args: list[str]) -> tuple[float, float]:
    """``(wall, CPU)`` seconds of ``truss-lab ARGS`` in a fresh Python process (CPU: its
    user + system time, from the children's resource usage; exit 0 required)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "truss_lab.faces.cli", *args], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    dt = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"truss-lab {' '.join(args)} failed:\n{done.stderr or done.stdout}")
    return dt, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def _here(args: list[str]) -> float:
    """Seconds of ``truss-lab ARGS`` in this process (click's runner)."""
    t0 = time.perf_counter()
    r = invoke(*args)
    dt = time.perf_counter() - t0
    if r.exit_code != 0:
        raise SystemExit(f"truss-lab {' '.join(args)} failed:\n{r.output}")
    return dt


def _figures(db: Path, runs: list[str], out: str) -> list[bytes]:
    """The report's figures of ``runs``, pickled as they reach ``save_png``."""
    import truss_lab.faces._report as report
    from truss_lab.store._store import Store

    figs: list[bytes] = []
    save = report.save_png

    def keep(fig, target, *, dpi):  # type: ignore[no-untyped-def]
        figs.append(pickle.dumps(fig))
        save(fig, target, dpi=dpi)

    report.save_png = keep
    try:
        with Store(db, read_only=True) as store:
            report.write_report(store, runs, out, n_boot=50, max_verdicts=5)
    finally:
        report.save_png = save
    return figs


def _figure_cpu(figs: list[bytes], repeats: int) -> tuple[float, float]:
    """CPU seconds of saving every figure by ``save_png`` and by the tight save (best of
    ``repeats``, each figure unpickled afresh for each)."""
    from truss_lab.faces._display import save_png

    def tight(fig):  # type: ignore[no-untyped-def]
        fig.savefig(io.BytesIO(), format="png", dpi=90, bbox_inches="tight")

    def once(fig):  # type: ignore[no-untyped-def]
        save_png(fig, io.BytesIO(), dpi=90)

    best = {}
    for name, fn in (("tight", tight), ("once", once)):
        fn(pickle.loads(figs[0]))  # warm the font cache
        times = []
        for _ in range(repeats):
            total = 0.0
            for blob in figs:
                fig = pickle.loads(blob)
                t0 = time.process_time()
                fn(fig)
                total += time.process_time() - t0
            times.append(total)
        best[name] = min(times)
    return best["once"], best["tight"]


def _best(fn, args: list[str], repeats: int) -> float:  # type: ignore[no-untyped-def]
    return min(fn(args) for _ in range(repeats))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one repeat of each command")
    ap.add_argument("--repeats", type=int, default=2, help="best of this many (default 2)")
    args = ap.parse_args()
    repeats = 1 if args.quick else max(1, args.repeats)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "lab.duckdb"
        store = load_sample(db)
        run_sample_extractions(store, extractors=RUNS)
        store.close()
        good, over = (sample_run_id(r) for r in RUNS)
        out = str(Path(tmp) / "report.html")
        sweep_good = ["sweep", good, "--db", str(db)]
        sweep_over = ["sweep", over, "--db", str(db)]
        report_good = ["report", good, "--db", str(db), "--out", out]
        report_both = ["report", good, over, "--db", str(db), "--out", out]
        for fn in (_child, _here):  # warm the file cache and the imports once
            fn(sweep_good)
        sweeps = [_child_times(sweep_good) for _ in range(repeats)]
        reports = [_child_times(report_good) for _ in range(repeats)]
        s, r = min(x[0] for x in sweeps), min(x[0] for x in reports)
        result("report_vs_sweep", r, "s", baseline=s, ratio=r / s, goal="<= 3",
               baseline_name="truss-lab sweep of the same run (fresh process each)",
               note=f"report {good} on the sample, best of {repeats}")
        s_cpu, r_cpu = min(x[1] for x in sweeps), min(x[1] for x in reports)
        result("report_vs_sweep_cpu", r_cpu, "s CPU", baseline=s_cpu, ratio=r_cpu / s_cpu,
               baseline_name="CPU of truss-lab sweep of the same run (fresh process each)",
               note=f"user + system time of the same processes, best of {repeats}")
        s_here = _best(_here, sweep_good, repeats)
        r_here = _best(_here, report_good, repeats)
        result("report_vs_sweep_in_process", r_here, "s", baseline=s_here,
               ratio=r_here / s_here, baseline_name="sweep of the same run, in process",
               note="the commands' own work, no start-up")
        s_both = _best(_child, sweep_good, repeats) + _best(_child, sweep_over, repeats)
        r_both = _best(_child, report_both, repeats)
        result("report_two_runs_vs_sweeps", r_both, "s", baseline=s_both,
               ratio=r_both / s_both, baseline_name="sweep of each run (fresh processes)",
               note="report good over: two evaluations, the comparison, the verdict list")
        figs = _figures(db, [good, over], out)
        once, tight = _figure_cpu(figs, repeats)
        result("report_figures_drawn_once", once, "s CPU", baseline=tight, ratio=once / tight,
               goal="<= 0.8", baseline_name="the same figures by savefig bbox_inches=tight",
               note=f"{len(figs)} figures of report good over, best of {repeats}")


if __name__ == "__main__":
    main()
