"""``make demo``: the main job on the bundled sample, end to end.

Ingest the synthetic sample into an embedded DuckDB file, verify the signed
journal, extract lessons with the three recorded extractors and the heuristic
baseline (policy model-scored at 0.70, every candidate kept), print a
per-run summary, evaluate the two labelled extractors against the gold labels,
and compare every extractor, the unlabelled ones too, by the reference lessons.
Every step is a library call a researcher can make in a notebook; re-running
is idempotent.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ..core._config import MemoryConfig
from ..core._errors import TrussLabError
from ..extract._batch import run_extraction
from ..extract._extractor import Extractor
from ..ingest._ingest import ingest_completions, ingest_labels, ingest_references
from ..journal._ledger import import_journal, verify_chain
from ..store._runs import summarize_runs
from ..store._store import open_store
from ._demo_eval import demo_evaluation, demo_references
from ._notebook import SAMPLE
from ._text import runs_text


def _step(title: str) -> float:
    print(f"\n== {title}")
    return time.perf_counter()


def run(db: str, sample: Path = SAMPLE, out: Path = Path("demo_out")) -> int:
    """Run the demo; return a process exit code."""
    t0 = time.perf_counter()
    with open_store(db) as store:
        t = _step(f"ingest {sample} into {db}")
        rep = import_journal(store, sample / "journal.jsonl", keyring=sample / "keys.json")
        print(f"journal:     {rep.entries_added} added, {rep.entries_present} already present")
        c = ingest_completions(store, sample / "completions.jsonl")
        print(f"completions: {c.rows_added} added, {c.rows_present} already present, "
              f"{len(c.errors)} bad lines")
        lab = ingest_labels(store, sample / "labels.csv")
        print(f"labels:      {lab.rows_added} added, {lab.rows_present} already present, "
              f"{len(lab.errors)} bad lines")
        ref = ingest_references(store, sample / "references.jsonl")
        print(f"references:  {ref.rows_added} added, {ref.rows_present} already present, "
              f"{len(ref.errors)} bad lines   ({time.perf_counter() - t:.2f}s)")

        t = _step("verify the signed journal")
        v = verify_chain(store)
        print(f"{'ok' if v.ok else 'TAMPERED'}: {v.entries_checked} entries, head seq "
              f"{v.head_seq}   ({time.perf_counter() - t:.2f}s)")
        if not v.ok:
            print(f"first bad seq {v.first_bad_seq}: {v.reason}: {v.message}")
            return 1

        t = _step("extract (model-scored, extraction_min_salience 0.70)")
        config = MemoryConfig(lesson_extraction="model-scored", extraction_min_salience=0.70)
        extractors = [
            Extractor.replay(store, "sim-good-v1"),
            Extractor.replay(store, "sim-overconfident-v1"),
            Extractor.replay(store, "sim-paraphrase-v1"),  # no gold labels
            Extractor.heuristic(),  # no gold labels
        ]
        run_ids = []
        for ex in extractors:
            run_id = f"demo-{ex.extractor_id}"
            done = store.sql("SELECT status FROM extraction_runs WHERE run_id = ?",
                             [run_id]).fetchall()
            # Fixed run ids make the demo idempotent: a finished run appends nothing.
            run_extraction(store, ex, config, run_id=run_id, resume=bool(done),
                           progress=False)
            run_ids.append(run_id)
        summary = summarize_runs(store, run_ids)
        print(runs_text(summary, ["run_id", "n_verdicts", "n_candidates", "n_lessons",
                                  "n_errors", "seconds"]))

        t = _step("evaluate against the gold labels (choose on training verdicts, "
                  "report on held-out ones)")
        out.mkdir(parents=True, exist_ok=True)
        # The gold labels cover the first two recorded extractors only.
        print(demo_evaluation(store, run_ids[:2], out))
        print(f"({time.perf_counter() - t:.1f}s)")

        t = _step("compare every extractor with the heuristic baseline by reference "
                  "lessons (no labels needed)")
        print(demo_references(store, run_ids, run_ids[-1], out))
        print(f"({time.perf_counter() - t:.1f}s)")

        _step("tables")
        for name, n in store.counts().items():
            print(f"  {name:<18} {n:>8}")
    print(f"\ndone in {time.perf_counter() - t0:.1f}s; database: {db}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m truss_lab.faces.demo", description=__doc__)
    ap.add_argument("--db", default="truss_lab.duckdb")
    ap.add_argument("--sample", default=str(SAMPLE), type=Path)
    ap.add_argument("--out", default="demo_out", type=Path, help="folder for plots")
    args = ap.parse_args(argv)
    try:
        return run(args.db, args.sample, args.out)
    except TrussLabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
