"""Does the label-budget planner predict the widths a larger labelled set gives? (issue 40)

Each dataset is a fresh simulated matching problem (``simulate_matching``, 2400 verdicts,
seed ``SEED + r``; of them about 800 annotated with reference lessons), one extractor per
dataset in turn (the three defaults), at threshold 0.70. Two cases:

- **labels**: the people's truth on every annotated verdict, no correction (the
  simulator's true assignment, matched one-to-one). From a random quarter of the
  annotated verdicts (:func:`~truss_lab.evaluate._budget.labels_variance`) the planner
  predicts the interval width on all of them; the actual width is the verdict bootstrap's
  (:func:`~truss_lab.evaluate._bootstrap.bootstrap_metrics`) on all of them.
- **ppi**: the references truth by a strict lexical matcher (match threshold 0.45: it
  misses most paraphrases) on every annotated verdict, corrected by the people's answers
  (prediction-powered) on a simple random sample of ``N_PEOPLE`` = 200 of the matchable
  ones (a lesson of the run to answer for: the match queue's frame). From a
  random quarter of those 200 (50 people-answered verdicts, the same population:
  :func:`~truss_lab.evaluate._budget.ppi_variance`) the planner predicts the width with
  200; the actual width is :func:`~truss_lab.evaluate._ppi.ppi_bootstrap`'s (its
  defaults: power tuning per replicate, Wilson intervals) with 200.

Both bootstraps: 95 %, ``--n-boot`` replicates, seeded. For each case and metric
(precision, recall, F1) it prints the median, 10th and 90th percentile of
predicted / actual over the datasets; issue 40 asks the median within [0.85, 1.15] over
at least 50 datasets. Run (about 2 s a dataset on one core):

    .venv/bin/python -m scripts.label_budget_check [--datasets 50] [--n-boot 1000]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np
import pandas as pd

from scripts.ppi_coverage import truth_of
from truss_lab.core._threshold import DEFAULT_MIN_SALIENCE
from truss_lab.evaluate._bootstrap import bootstrap_metrics
from truss_lab.evaluate._budget import BUDGET_METRICS, labels_variance, ppi_variance
from truss_lab.evaluate._ppi import PeopleMatcher, ppi_bootstrap, reference_ppi
from truss_lab.evaluate._sweep import UndefinedMetricWarning
from truss_lab.simulate import simulate_matching

SEED = 400_000
N_VERDICTS = 2400
#: People-answered verdicts of the ppi case (of about 400 annotated ones).
N_PEOPLE = 200
#: The strict lexical matcher's match threshold (the automated truth the people correct).
STRICT = 0.45
EXTRACTORS = ("sim-good-v1", "sim-overconfident-v1", "sim-paraphrase-v1")


def _width(row: pd.Series, m: str) -> float:
    return float(row[f"{m}_high"] - row[f"{m}_low"])


def dataset(r: int, n_boot: int, t: float = DEFAULT_MIN_SALIENCE) -> list[dict[str, object]]:
    """Predicted and actual widths of dataset ``r``: one row per case and metric."""
    sm = simulate_matching(N_VERDICTS, seed=SEED + r, match_share=1.0, match_disagreement=0.0)
    rng = np.random.default_rng(SEED + r)
    ext = EXTRACTORS[r % len(EXTRACTORS)]
    truth_all = sm.match_truth.assign(reference_id=sm.match_truth["reference_id"].astype(str))
    people_all = truth_all[truth_all["extractor"] == ext]
    les = sm.lessons[(sm.lessons["extractor"] == ext) & sm.lessons["valid"]]
    les = les.rename(columns={"salience": "s"}).reset_index(drop=True)
    out: list[dict[str, object]] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        # labels: a quarter of the annotated verdicts predicts the width on all of them
        true = truth_of(les, sm.references, PeopleMatcher(people_all))
        y, s, g = true.arrays()
        pop = np.asarray(true.verdicts, dtype=object)
        quarter = rng.choice(pop, size=len(pop) // 4, replace=False)
        q = pd.Series(g, dtype=object).isin(quarter).to_numpy()
        pred = labels_variance(y[q], s[q], g[q], threshold=t, verdicts=quarter)
        now = bootstrap_metrics(y[q], s[q], g[q], thresholds=[t], n_boot=n_boot,
                                random_state=r, verdicts=quarter).table.iloc[0]
        full = bootstrap_metrics(y, s, g, thresholds=[t], n_boot=n_boot, random_state=r,
                                 verdicts=pop).table.iloc[0]
        for m in BUDGET_METRICS:
            out.append({"dataset": r, "extractor": ext, "case": "labels", "metric": m,
                        "from": len(quarter), "to": len(pop),
                        "predicted": float(pred[m].calibrated(_width(now, m)).width(len(pop))),
                        "model": float(pred[m].width(len(pop))), "actual": _width(full, m)})
        # ppi: a quarter of the people's sample predicts the width with all of it
        auto = truth_of(les, sm.references, "lexical", STRICT)
        # people are asked about the matchable verdicts (a lesson of the run to answer
        # for), as the match queue draws them
        frame = np.asarray(pd.unique(people_all["verdict_hash"]), dtype=object)
        sample = rng.choice(frame, size=N_PEOPLE, replace=False)
        quarter = sample[: N_PEOPLE // 4]  # the sample is in random order: a random quarter
        fits = []
        for picked in (quarter, sample):
            people = people_all[people_all["verdict_hash"].isin(picked)].assign(
                inclusion_probability=len(picked) / len(frame))
            fits.append(reference_ppi(auto, sm.references, people))
        pred = ppi_variance(fits[0], threshold=t)
        now = ppi_bootstrap(fits[0], thresholds=[t], n_boot=n_boot,
                            random_state=r).table.iloc[0]
        full = ppi_bootstrap(fits[1], thresholds=[t], n_boot=n_boot,
                             random_state=r).table.iloc[0]
        for m in BUDGET_METRICS:
            out.append({"dataset": r, "extractor": ext, "case": "ppi", "metric": m,
                        "from": fits[0].n_sampled, "to": fits[1].n_sampled,
                        "predicted": float(pred[m].calibrated(_width(now, m))
                                           .width(fits[1].n_sampled)),
                        "model": float(pred[m].width(fits[1].n_sampled)),
                        "actual": _width(full, m)})
    return out


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per case and metric: datasets, median (10th, 90th percentile) of predicted/actual."""
    df = df.assign(ratio=df["predicted"] / df["actual"],
                   model_ratio=df["model"] / df["actual"])
    rows = []
    for (case, metric), d in df.groupby(["case", "metric"], sort=False):
        r = d["ratio"].dropna()
        rows.append({"case": case, "metric": metric, "datasets": len(r),
                     "labelled from -> to": f"{int(d['from'].median())} -> "
                                            f"{int(d['to'].median())}",
                     "median ratio": round(float(r.median()), 3),
                     "p10": round(float(r.quantile(0.1)), 3),
                     "p90": round(float(r.quantile(0.9)), 3),
                     "in [0.85, 1.15]": bool(0.85 <= r.median() <= 1.15),
                     "uncalibrated median": round(float(d["model_ratio"].median()), 3)})
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--datasets", type=int, default=50)
    p.add_argument("--n-boot", type=int, default=1000)
    a = p.parse_args(argv)
    t0 = time.perf_counter()
    rows = [row for r in range(a.datasets) for row in dataset(r, a.n_boot)]
    s = summary(pd.DataFrame(rows))
    print(f"label budget check: {a.datasets} seeded datasets (seed {SEED} + r), "
          f"{a.n_boot} bootstrap replicates, threshold {DEFAULT_MIN_SALIENCE:.2f}; "
          "ratio = predicted / actual interval width")
    print(s.to_string(index=False))
    print(f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr)  # stdout: the figures alone
    return 0 if s["in [0.85, 1.15]"].all() else 1


if __name__ == "__main__":
    raise SystemExit(main())
