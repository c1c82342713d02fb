"""Labels from the toolkit's own queue, correcting a judge on the bundled sample (issue 36,
item 1, "what must be shown").

The sample's simulated judge (``truss-lab judge RUN --judge simulated:...``, annotator
``judge:sim-judge-v1@judge-v1``) labels every valid lesson of the good extractor's run;
the gold labels of ``datasets/sample/labels.csv`` are what people would answer. Three
databases, each the sample's journal, completions, that run and the judge's labels:

1. every gold label: ``sweep RUN --truth judge:sim-judge-v1@judge-v1 --correct ppi``, the
   full-label figure (people labelled every verdict: the correction is the people's);
2. the gold labels of the lessons ``truss-lab queue RUN`` lists (its default: the band
   [0.6, 0.8] with too few labels to choose, at most 2 lessons a verdict): the same
   sweep refuses in one line naming the partial labels;
3. the gold labels of the lessons ``truss-lab queue RUN --whole-verdicts --n-verdicts
   N`` lists (N verdicts drawn at random, every candidate of each): the same sweep
   corrects, and its interval at 0.70 holds the full-label figure.

Each queue's ``useful`` column is filled in from the gold labels of the lessons it lists
(every annotator's rows of those lessons, so the majority is the same as with every
label). Prints each command and what it printed at 0.70 (docs/explanation/ppi.md shows
it). Run::

    nice -n 10 .venv/bin/python -m scripts.queue_correction
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from truss_lab.faces._notebook import SAMPLE as SAMPLE_DIR
from truss_lab.faces._notebook import run_sample_extractions, sample_run_id
from truss_lab.ingest._ingest import ingest_completions
from truss_lab.journal._ledger import import_journal
from truss_lab.store._store import Store

RUN = sample_run_id("sim-good-v1")
JUDGE = "judge:sim-judge-v1@judge-v1"
THRESHOLD = 0.70
KEY = ["verdict_hash", "extractor", "lesson_index"]


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    """``truss-lab ARGV`` in a child process of this interpreter (stdout and stderr)."""
    return subprocess.run([sys.executable, "-c", "from truss_lab.faces.cli import main; main()",
                           *argv], capture_output=True, text=True, check=False)


def base_db(path: Path) -> Path:
    """The sample's journal and completions, the good extractor's run and the judge's
    labels of it; no gold label."""
    with Store(path) as store:
        import_journal(store, SAMPLE_DIR / "journal.jsonl", keyring=SAMPLE_DIR / "keys.json")
        ingest_completions(store, SAMPLE_DIR / "completions.jsonl")
        run_sample_extractions(store, extractors=("sim-good-v1",), write_memory=False)
    r = cli("judge", RUN, "--db", str(path), "--judge",
            f"simulated:{SAMPLE_DIR / 'lesson_truth.csv'}")
    if r.returncode:
        raise SystemExit(f"judge failed: {r.stdout}{r.stderr}")
    return path


def with_labels(base: Path, labels: pd.DataFrame, path: Path) -> Path:
    """A copy of ``base`` with the gold label rows ``labels`` ingested."""
    shutil.copyfile(base, path)
    file = path.with_suffix(".labels.csv")
    labels.to_csv(file, index=False, quoting=csv.QUOTE_MINIMAL)
    r = cli("ingest", "labels", str(file), "--db", str(path))
    if r.returncode:
        raise SystemExit(f"ingest labels failed: {r.stdout}{r.stderr}")
    return path


def queued_gold(queue_csv: Path, gold: pd.DataFrame) -> pd.DataFrame:
    """The gold label rows (every annotator's) of the lessons a queue file lists."""
    q = pd.read_csv(queue_csv, usecols=KEY, dtype={"lesson_index": "int64"})
    return gold.merge(q.drop_duplicates(), on=KEY, how="inner")


def sweep(db: Path) -> tuple[int, dict[str, Any] | str]:
    """``sweep RUN --truth JUDGE --correct ppi --json``: (exit code, the row at 0.70 and
    the correction, or what it printed)."""
    r = cli("sweep", RUN, "--db", str(db), "--truth", JUDGE, "--correct", "ppi", "--json")
    if r.returncode:
        return r.returncode, (r.stdout + r.stderr).strip()
    out = json.loads(r.stdout)
    row = next(x for x in out["sweep"] if abs(x["threshold"] - THRESHOLD) < 1e-9)
    return 0, {**row, "people_verdicts": out["people_verdicts"]}


def _fig(row: dict[str, Any], m: str) -> str:
    return f"{row[m]:.3f} [{row[f'{m}_low']:.3f}, {row[f'{m}_high']:.3f}]"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-verdicts", type=int, default=100,
                    help="verdicts the whole-verdict queue draws")
    ap.add_argument("--seed", type=int, default=0, help="the queues' --random-state")
    args = ap.parse_args(argv)
    gold = pd.read_csv(SAMPLE_DIR / "labels.csv", dtype={"lesson_index": "int64"})
    with tempfile.TemporaryDirectory(prefix="truss_lab_queue_") as tmp:
        d = Path(tmp)
        base = base_db(d / "base.duckdb")
        code, full = sweep(with_labels(base, gold, d / "full.duckdb"))
        assert code == 0 and isinstance(full, dict), full
        print(f"every gold label ({gold['verdict_hash'].nunique()} verdicts): "
              f"sweep {RUN} --truth {JUDGE} --correct ppi")
        print(f"  at {THRESHOLD:.2f}: precision {_fig(full, 'precision')}, recall "
              f"{_fig(full, 'recall')} (people answered for {full['people_verdicts']} "
              "verdicts)")
        results = {}
        for mode, extra in (("band", ()), ("whole verdicts",
                                           ("--whole-verdicts", "--n-verdicts",
                                            str(args.n_verdicts)))):
            out = d / f"queue-{mode.replace(' ', '-')}.csv"
            r = cli("queue", RUN, "--db", str(base), "--out", str(out), "--random-state",
                    str(args.seed), *extra)
            if r.returncode:
                raise SystemExit(f"queue failed: {r.stdout}{r.stderr}")
            labels = queued_gold(out, gold)
            code, got = sweep(with_labels(base, labels, d / f"{out.stem}.duckdb"))
            said = r.stdout.splitlines()[0].replace(f"{d}/", "")
            print(f"queue {RUN} {' '.join(extra)}".rstrip() + f": {said}")
            print(f"  gold labels of its lessons: {labels[KEY].drop_duplicates().shape[0]} "
                  f"lessons on {labels['verdict_hash'].nunique()} verdicts")
            if code:
                print(f"  sweep exits {code}: {str(got).replace(f'{d}/', '')}")
                results[mode] = "refused"
                continue
            assert isinstance(got, dict)
            within = all(got[f"{m}_low"] <= full[m] <= got[f"{m}_high"]
                         for m in ("precision", "recall"))
            print(f"  at {THRESHOLD:.2f}: precision {_fig(got, 'precision')}, recall "
                  f"{_fig(got, 'recall')} (people answered for {got['people_verdicts']} "
                  f"verdicts): the full-label figures {'within' if within else 'OUTSIDE'} "
                  "its intervals")
            results[mode] = "within" if within else "outside"
    print(json.dumps(results))
    return 0 if results == {"band": "refused", "whole verdicts": "within"} else 1


if __name__ == "__main__":
    raise SystemExit(main())
