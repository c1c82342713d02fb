"""Tune the matchers' match thresholds against the people's match labels of the bundled
sample (the figures of docs/how-to/score-without-labels.md, "Match thresholds").

    .venv/bin/python scripts/tune_match_thresholds.py
    .venv/bin/python scripts/tune_match_thresholds.py --sample DIR   # another simulated folder

Method. The sample is loaded into a temporary store with its replay runs of the three
simulated extractors (``run_sample_extractions``). Each matcher (lexical, semantic) is
run at every match threshold of a grid (0.04 to 0.60 by 0.02, and the threshold in
force) and compared with the people's match labels (``match_labels.csv``) by
``match_agreement``: on the lessons people matched (ties left out), the matcher's
(lesson, reference) pairs against the people's, both assigned one-to-one in descending
salience. The counts are pooled over the three extractors, and the threshold chosen is
the one with the best pooled pair F1 = 2 * same pairs / (matcher's pairs + people's
pairs), the lowest on a tie. Pair F1 weighs a missed pair and an invented one alike,
as a reference sweep's recall and precision do.

What it rests on: the people are SIMULATED (a wrong answer now and then, the sample's
``match_disagreement``), the lessons are the simulator's wording, and the same labels
later check the matcher (``truss-lab match-agreement``), so the pooled F1 at the chosen
threshold is an in-sample figure; ``--sample`` measures another seed's folder.
"""

from __future__ import annotations

import argparse
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from truss_lab.evaluate._matches import match_agreement
from truss_lab.evaluate._sweep import UndefinedMetricWarning
from truss_lab.faces._notebook import SAMPLE, load_sample, run_sample_extractions, sample_run_id
from truss_lab.score._matching import (
    LEXICAL_MATCH_THRESHOLD,
    SEMANTIC_MATCH_THRESHOLD,
    matcher_named,
)

EXTRACTORS = ("sim-good-v1", "sim-overconfident-v1", "sim-paraphrase-v1")
GRID = np.round(np.arange(0.04, 0.6001, 0.02), 2)
IN_FORCE = {"lexical": LEXICAL_MATCH_THRESHOLD, "semantic": SEMANTIC_MATCH_THRESHOLD}


class _Cached:
    """A matcher whose similarities are computed once per (lessons, references, pairs):
    the grid re-matches the same pairs at every threshold."""

    def __init__(self, matcher: Any) -> None:
        self.matcher, self.name = matcher, matcher.name
        self._memo: dict[tuple[Any, ...], np.ndarray] = {}

    def pairs(self, lessons: pd.DataFrame, references: pd.DataFrame,
              li: np.ndarray, ri: np.ndarray) -> np.ndarray:
        key = (tuple(lessons["text"].astype(str)), tuple(references["text"].astype(str)),
               np.asarray(li).tobytes(), np.asarray(ri).tobytes())
        if key not in self._memo:
            self._memo[key] = self.matcher.pairs(lessons, references, li, ri)
        return self._memo[key]


def grid(store: Any, name: str) -> pd.DataFrame:
    """Pooled pair precision, recall and F1 of matcher ``name`` at every grid threshold,
    with each extractor's pair F1."""
    m = _Cached(matcher_named(name))
    rows = []
    for t in sorted({*GRID.tolist(), IN_FORCE[name]}):
        row: dict[str, Any] = {"matcher": name, "threshold": t}
        tot = np.zeros(3)
        for ex in EXTRACTORS:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UndefinedMetricWarning)
                c = match_agreement(store, sample_run_id(ex), matcher=m, match_threshold=t,
                                    n_boot=1).counts
            n = np.array([c["pairs_same"], c["pairs_matcher"], c["pairs_people"]], float)
            tot += n
            row[f"F1 {ex}"] = 2 * n[0] / (n[1] + n[2])
        row.update({"pairs same": int(tot[0]), "pairs matcher": int(tot[1]),
                    "pairs people": int(tot[2]), "precision": tot[0] / tot[1],
                    "recall": tot[0] / tot[2], "F1": 2 * tot[0] / (tot[1] + tot[2])})
        rows.append(row)
    return pd.DataFrame(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sample", type=Path, default=SAMPLE,
                    help="a simulated folder instead of the bundled sample")
    args = ap.parse_args()
    pd.set_option("display.width", 200)
    with tempfile.TemporaryDirectory() as tmp:
        store = load_sample(Path(tmp) / "s.duckdb", sample=args.sample)
        run_sample_extractions(store, extractors=EXTRACTORS, write_memory=False)
        for name in ("lexical", "semantic"):
            g = grid(store, name)
            best = g.loc[g["F1"].idxmax()]
            now = g.loc[g["threshold"] == IN_FORCE[name]].iloc[0]
            print(f"== {name} matcher against the people's match labels, pooled over "
                  f"{', '.join(EXTRACTORS)}")
            print(g.round(3).to_string(index=False))
            print(f"{name}: best pooled pair F1 {best['F1']:.3f} at {best['threshold']:.2f}; "
                  f"in force {IN_FORCE[name]:.2f}: F1 {now['F1']:.3f} (precision "
                  f"{now['precision']:.3f}, recall {now['recall']:.3f})")
        store.close()


if __name__ == "__main__":
    main()
