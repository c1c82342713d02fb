"""Self-consistency salience against the model's own salience, on held-out verdicts.

Simulates the bundled sample's verdicts with K samples per verdict
(``python -m truss_lab.simulate --samples K``; the sample's own files are
unchanged by it), replays each extractor's K samples through
:func:`truss_lab.run_extraction` (the gate keeps one lesson per cluster, with
its ``self_consistency`` beside the model's ``salience``), joins each kept
lesson to its latent usefulness (``truth_samples.csv``) and reports, on 30% of
the verdicts held out: average precision and expected calibration error of each
score raw, and after an isotonic calibration fitted on the other 70%.

    .venv/bin/python scripts/measure_self_consistency.py [--samples 5] [--runs 1200] [--table]

Deterministic: the simulator is seeded, and the candidates are read in a fixed order
(the split and the isotonic fit follow row order). ``--table`` prints the site's
table (tests/test_self_consistency_script.py checks the documentation holds what it prints).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import truss_lab as tl
from truss_lab.evaluate import average_precision, expected_calibration_error, split_by_verdict
from truss_lab.extract import Extractor
from truss_lab.score import IsotonicCalibrator
from truss_lab.simulate import simulate
from truss_lab.simulate._simulate import read_sample_completions

SCORES = ("salience", "self_consistency")


def measure(samples: int, runs: int, seed: int, extractors: list[str]) -> list[dict]:
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        sim = simulate(Path(tmp) / "sim", runs=runs, seed=seed, extractors=extractors,
                       samples=samples)
        recs = read_sample_completions(sim.completions_samples)  # type: ignore[arg-type]
        truth = pd.read_csv(sim.truth_samples)  # type: ignore[arg-type]
        store = tl.Store(Path(tmp) / "lab.duckdb")
        tl.import_journal(store, sim.journal, keyring=sim.keys)
        for name in extractors:
            ext = Extractor.replay(recs[recs["extractor"] == name], name, samples=samples)
            run = tl.run_extraction(store, ext, tl.MemoryConfig(lesson_extraction="on"),
                                    write_memory=False, progress=False, run_id=f"k-{name}")
            c = store.sql("SELECT verdict_hash, extractor_id AS extractor, sample_index, "
                          "lesson_index, salience, self_consistency FROM candidates "
                          "WHERE run_id = ? AND self_consistency IS NOT NULL",
                          [run.run_id]).df()
            d = c.merge(truth, on=["verdict_hash", "extractor", "sample_index",
                                   "lesson_index"], how="inner", validate="one_to_one")
            out.append(figures(d, name, samples))
        store.close()
    return out


KEY = ["verdict_hash", "sample_index", "lesson_index"]


def figures(d: pd.DataFrame, name: str, samples: int) -> dict:
    """One extractor's row: the held-out split and each score's AP and ECE, raw and
    isotonic, from its representatives ``d`` (KEY, the two scores, ``useful_true``).
    Rows are put in KEY order first: the split and the isotonic fit follow row order,
    so the figures depend on the rows alone, not on the order a query returned them."""
    d = d[d["salience"].notna()].sort_values(KEY, kind="stable").reset_index(drop=True)
    y = d["useful_true"].to_numpy(np.uint8)
    vh = d["verdict_hash"].to_numpy()
    train, test = split_by_verdict(vh, test_size=0.3, random_state=0)
    row: dict = {"extractor": name, "samples": samples,
                 "representatives": len(d), "test_lessons": len(test),
                 "test_positive_share": round(float(y[test].mean()), 4)}
    for score in SCORES:
        s = d[score].to_numpy(np.float64)
        iso = IsotonicCalibrator().fit(s[train], y[train], verdict_hash=vh[train])
        cal = iso.predict(s[test], verdict_hash=vh[test])
        row[f"{score}_ap"] = round(average_precision(y[test], s[test]), 4)
        row[f"{score}_ece"] = round(expected_calibration_error(y[test], s[test]), 4)
        row[f"{score}_isotonic_ap"] = round(average_precision(y[test], cal), 4)
        row[f"{score}_isotonic_ece"] = round(expected_calibration_error(y[test], cal), 4)
    return row


_LABELS = {"salience": "model salience", "self_consistency": "self-consistency"}


def table(rows: list[dict]) -> str:
    """The site's markdown table of :func:`measure`'s rows (3 decimals)."""
    lines = ["| extractor | lessons (test) | score | AP | ECE | AP isotonic | ECE isotonic |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        for score in SCORES:
            figures = " | ".join(f"{r[f'{score}{k}']:.3f}" for k in (
                "_ap", "_ece", "_isotonic_ap", "_isotonic_ece"))
            lines.append(f"| {r['extractor']} | {r['test_lessons']} | {_LABELS[score]} | "
                         f"{figures} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=5, help="samples per verdict (K)")
    ap.add_argument("--runs", type=int, default=1200, help="verdicts (the sample has 1200)")
    ap.add_argument("--seed", type=int, default=7, help="simulator seed (the sample's is 7)")
    ap.add_argument("--extractor", action="append", dest="extractors",
                    help="extractor profile (default: sim-good-v1 and sim-overconfident-v1)")
    ap.add_argument("--table", action="store_true", help="print the site's table")
    args = ap.parse_args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = measure(args.samples, args.runs, args.seed,
                       args.extractors or ["sim-good-v1", "sim-overconfident-v1"])
    if args.table:
        print(table(rows))
        return
    for r in rows:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
