"""Which executor extracts the sample fastest: inline against worker processes.

Figures: wall seconds of ``run_extraction`` with the heuristic over the sample's 1,200
verdicts (a dry run, a fresh copy of the database each time) on ``processes:2`` and on
``auto`` (the default). Baseline: the same on ``inline``. Goals: auto's ratio <= 1.2
(auto picks inline here); processes:2's ratio is informational (issue 29: it was 6x, the
README quickstart used it). Also printed (info): the start of two spawned workers until
both answered a one-verdict task, and the heuristic's extraction cost per verdict, whose
quotient bounds where processes can pay: they save at most half the extraction
(``2 x start / cost`` verdicts to break even, before inline's extracting while the
journal verifies). The runs are interleaved and the best of each kept.

    .venv/bin/python -m benchmarks.bench_executor            # best of 3
    .venv/bin/python -m benchmarks.bench_executor --quick    # best of 1
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import tempfile
import uuid
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from benchmarks._result import best_time, best_times, result
from tests.builders.stores import copy_db, sample_template
from truss_lab.core._config import MemoryConfig
from truss_lab.extract._batch import (
    _portable,
    _process_init,
    _process_task,
    extract_chunk,
    run_extraction,
)
from truss_lab.extract._extractor import Extractor
from truss_lab.store._store import Store

GOAL_AUTO = 1.2


def _run(template: Path, tmp: Path, executor: str) -> None:
    db = copy_db(template, tmp / f"{uuid.uuid4().hex}.duckdb")
    with Store(db) as s:
        run_extraction(s, Extractor.heuristic(), MemoryConfig(lesson_extraction="on"),
                       executor=executor, write_memory=False, progress=False)
    db.unlink()


def _worker_start(chunk: list[tuple[int, str, str]]) -> None:
    token = uuid.uuid4().hex
    pool = ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_process_init,
                               initargs=(token, _portable(Extractor.heuristic()), os.getpid()))
    try:
        for f in [pool.submit(_process_task, token, chunk[:1]) for _ in range(2)]:
            f.result()
    finally:
        pool.shutdown()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="best of 1 instead of 3")
    args = ap.parse_args()
    repeat = 1 if args.quick else 3
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        template = sample_template(tmp / "template.duckdb")
        with Store(template, read_only=True) as s:
            chunk = s.sql("SELECT seq, hash, CAST(payload AS VARCHAR) FROM journal WHERE "
                          "kind = 'contract_verdict' ORDER BY seq").fetchall()
        inline, procs, auto = best_times(
            [lambda ex=ex: _run(template, tmp, ex) for ex in ("inline", "processes:2", "auto")],
            repeat)
        start = best_time(lambda: _worker_start(chunk), repeat)
        ex = Extractor.heuristic()
        cost = best_time(lambda: extract_chunk(ex, chunk), repeat) / len(chunk)
    note = f"sample, {len(chunk)} verdicts, heuristic, dry run, best of {repeat}"
    result("extract_auto", auto, "s", baseline=inline, ratio=auto / inline,
           goal=f"<= {GOAL_AUTO:g}", baseline_name="inline", note=note)
    result("extract_processes_2", procs, "s", baseline=inline, ratio=procs / inline,
           baseline_name="inline", note=note)
    result("worker_start_2_spawned", start, "s", note="until both answered one verdict")
    result("heuristic_cost_per_verdict", cost * 1e3, "ms",
           note=f"processes:2 can pay from {2 * start / cost:,.0f} verdicts")


if __name__ == "__main__":
    main()
