"""Coverage and width of the prediction-powered intervals over simulated replicates (issue 26).

Each replicate is a fresh simulated dataset (``simulate_matching``, seed ``SEED + r``;
people answer without error, so the people's truth is the simulator's). For each
extractor its valid lessons are matched to the references by the lexical matcher
(the automated truth, on every annotated verdict); the truth is the simulator's
assignment on every annotated verdict, matched by the same one-to-one rule. Then,
for n = 50, 100 and 200 people-matched verdicts (a simple random sample of the
annotated verdicts, drawn per replicate and n), at threshold 0.70:

- ppi: :func:`~truss_lab.evaluate._ppi.ppi_bootstrap` as it is by default (95 %,
  ``--n-boot`` replicates; power tuning re-chosen per replicate, Wilson intervals on
  the effective sample size), covered when the interval holds the replicate's true
  precision / recall;
- people alone: the same bootstrap with ``lam=0`` (the people's sample alone,
  Horvitz-Thompson), its width beside the ppi one's;
- classic: ``lam=1, interval="percentile"`` (plain PPI with percentile intervals,
  the default before power tuning), for comparison;
- uncorrected: the lexical estimate's plain verdict bootstrap, for comparison.

Coverage is the share of replicates covered, with its Monte Carlo standard error
sqrt(c (1 - c) / R). ``--match-disagreement D`` makes the people err: each answer wrong
with probability D (the simulator's people, answering on every annotated verdict; the
sample draws n of those verdicts), so the corrected estimates are unbiased for the
people's truth, not the simulator's; coverage of both is reported. Run (about 5 s a
replicate on one core):

    .venv/bin/python -m scripts.ppi_coverage [--replicates 200] [--n-boot 400] \\
        [--match-disagreement D]
"""

from __future__ import annotations

import argparse
import json
import math
import time
import warnings

import numpy as np
import pandas as pd

from truss_lab.core._threshold import DEFAULT_MIN_SALIENCE
from truss_lab.evaluate._bootstrap import bootstrap_metrics
from truss_lab.evaluate._ppi import PeopleMatcher, ppi_bootstrap, reference_ppi
from truss_lab.evaluate._sweep import UndefinedMetricWarning, sweep
from truss_lab.evaluate._truth import ReferenceTruth, judge_lessons
from truss_lab.simulate import simulate_matching

SEED = 260_000
SIZES = (50, 100, 200)
N_VERDICTS = 1200
#: The automated truths corrected: the lexical matcher at 0.22 (its threshold when these
#: figures were drawn, before it was tuned against people; the study needs a matcher that
#: misses pairs, not the best one), and a strict one (0.45) that misses most paraphrases,
#: as matchers do on real wording.
MATCHERS = (("lexical", 0.22), ("lexical@0.45", 0.45))


def truth_of(lessons: pd.DataFrame, refs: pd.DataFrame, matcher: object,
             threshold: float | None = None) -> ReferenceTruth:
    """The references truth of one extractor's lessons, matched by ``matcher``."""
    rows, n_refs = judge_lessons(lessons, refs, matcher=matcher,  # type: ignore[arg-type]
                                 match_threshold=threshold if threshold is not None else
                                 getattr(matcher, "match_threshold", None))
    verdicts = list(pd.unique(rows["verdict_hash"]))
    les = rows[rows["kind"] == "lesson"]
    return ReferenceTruth(run_id="sim", rows=rows, n_references=n_refs,
                          n_verdicts=len(verdicts), n_lessons=len(les), match_threshold=0.0,
                          counts={}, verdicts=verdicts)


def at(truth: ReferenceTruth, t: float) -> tuple[float, float]:
    y, s, _ = truth.arrays()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        r = sweep(y, s, thresholds=[t]).iloc[0]
    return float(r["precision"]), float(r["recall"])


def replicate(r: int, n_boot: int, t: float,
              matchers: tuple[tuple[str, float | None], ...] = MATCHERS,
              disagreement: float = 0.0) -> list[dict[str, object]]:
    sm = simulate_matching(N_VERDICTS, seed=SEED + r, match_share=1.0,
                           match_disagreement=disagreement)
    rng = np.random.default_rng(SEED + r)
    truth_all = sm.match_truth.assign(reference_id=sm.match_truth["reference_id"].astype(str))
    said_all = sm.match_labels.drop(columns=["inclusion_probability"]).assign(
        reference_id=sm.match_labels["reference_id"].astype(str))
    out = []
    for ext in sorted(sm.lessons["extractor"].unique()):
        les = sm.lessons[(sm.lessons["extractor"] == ext) & sm.lessons["valid"]]
        les = les.rename(columns={"salience": "s"}).reset_index(drop=True)
        true = truth_of(les, sm.references, PeopleMatcher(truth_all[truth_all["extractor"] == ext]))
        tp, tr = at(true, t)
        people_all = said_all[said_all["extractor"] == ext]
        theirs = at(truth_of(les, sm.references, PeopleMatcher(people_all)), t)
        pop = np.asarray(true.verdicts, dtype=object)
        samples = {n: rng.choice(pop, size=min(n, len(pop)), replace=False) for n in SIZES}
        for matcher, threshold in matchers:
            auto = truth_of(les, sm.references, "lexical", threshold)
            y, s, g = auto.arrays()
            plain = bootstrap_metrics(y, s, g, thresholds=[t], n_boot=n_boot,
                                      random_state=r).table.iloc[0]
            out += _sizes(r, ext, matcher, auto, sm.references, people_all, samples, plain,
                          (tp, tr), theirs, n_boot, t)
    return out


def _sizes(r: int, ext: str, matcher: str, auto: ReferenceTruth, refs: pd.DataFrame,
           people_all: pd.DataFrame, samples: dict[int, np.ndarray], plain: pd.Series,
           true: tuple[float, float], theirs: tuple[float, float], n_boot: int, t: float
           ) -> list[dict[str, object]]:
    """One row per sample size: ppi and people-only intervals, the plain one's verdict."""
    tp, tr = true
    out = []
    for n, picked in samples.items():
        people = people_all[people_all["verdict_hash"].isin(picked)].assign(
            inclusion_probability=len(picked) / len(auto.verdicts))
        data = reference_ppi(auto, refs, people)
        if data is None:
            continue
        row: dict[str, object] = {"replicate": r, "extractor": ext, "matcher": matcher,
                                  "n": n, "true_precision": tp, "true_recall": tr,
                                  "said_precision": theirs[0], "said_recall": theirs[1]}
        for name, opts in (("ppi", {}), ("people", {"lam": 0.0}),
                           ("classic", {"lam": 1.0, "interval": "percentile"})):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UndefinedMetricWarning)
                b = ppi_bootstrap(data, thresholds=[t], n_boot=n_boot, random_state=r,
                                  **opts).table.iloc[0]
            for m, true_v in (("precision", tp), ("recall", tr)):
                row[f"{name}_{m}"] = float(b[m])
                row[f"{name}_{m}_width"] = float(b[f"{m}_high"] - b[f"{m}_low"])
                row[f"{name}_{m}_covered"] = bool(b[f"{m}_low"] <= true_v <= b[f"{m}_high"])
                row[f"{name}_{m}_covers_people"] = bool(
                    b[f"{m}_low"] <= row[f"said_{m}"] <= b[f"{m}_high"])
        for m, true_v in (("precision", tp), ("recall", tr)):
            row[f"plain_{m}"] = float(plain[m])
            row[f"plain_{m}_covered"] = bool(plain[f"{m}_low"] <= true_v
                                             <= plain[f"{m}_high"])
        out.append(row)
    return out


def summary(df: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (ext, matcher, n), d in df.groupby(["extractor", "matcher", "n"], sort=True):
        k = len(d)
        row: dict[str, object] = {"extractor": ext, "matcher": matcher, "n people-matched": n,
                                  "replicates": k}
        for m in ("precision", "recall"):
            c = float(d[f"ppi_{m}_covered"].mean())
            row[f"ppi {m} coverage"] = f"{c:.3f} ± {math.sqrt(c * (1 - c) / k):.3f}"
            row[f"ppi {m} width"] = round(float(d[f"ppi_{m}_width"].mean()), 3)
            row[f"people-only {m} width"] = round(float(d[f"people_{m}_width"].mean()), 3)
            row[f"people-only {m} coverage"] = round(float(d[f"people_{m}_covered"].mean()), 3)
            row[f"classic {m} width"] = round(float(d[f"classic_{m}_width"].mean()), 3)
            row[f"classic {m} coverage"] = round(float(d[f"classic_{m}_covered"].mean()), 3)
            row[f"uncorrected {m} bias"] = round(float((d[f"plain_{m}"]
                                                        - d[f"true_{m}"]).mean()), 3)
            row[f"uncorrected {m} coverage"] = round(float(d[f"plain_{m}_covered"].mean()), 3)
        rows.append(row)
    return pd.DataFrame(rows)


def _coverage(d: pd.DataFrame, col: str) -> str:
    """The share of ``d``'s replicates whose ``col`` is true, ± its Monte Carlo s.e."""
    c = float(d[col].mean())
    return f"{c:.3f} ± {math.sqrt(c * (1 - c) / len(d)):.3f}"


def readme_table(df: pd.DataFrame) -> str:
    """The site's coverage table (markdown) of the replicate rows ``df``."""
    def w(d: pd.DataFrame, m: str) -> str:
        return " / ".join(f"{d[f'{k}_{m}_width'].mean():.3f}"
                          for k in ("ppi", "people", "classic"))

    lines = ["| extractor | lexical matcher's bias P / R | n | ppi coverage P | ppi coverage R "
             "| width P: ppi / people alone / classic | width R: ppi / people alone / classic "
             "| people alone coverage P / R | classic coverage P / R |",
             "|---|---|---|---|---|---|---|---|---|"]
    for (ext, _, n), d in df.groupby(["extractor", "matcher", "n"], sort=True):
        bias = " / ".join(f"{(d[f'plain_{m}'] - d[f'true_{m}']).mean():.3f}"
                          for m in ("precision", "recall"))
        alone = " / ".join(f"{d[f'people_{m}_covered'].mean():.3f}"
                           for m in ("precision", "recall"))
        classic = " / ".join(f"{d[f'classic_{m}_covered'].mean():.3f}"
                             for m in ("precision", "recall"))
        lines.append(f"| {ext} | {bias} | {n} | {_coverage(d, 'ppi_precision_covered')} "
                     f"| {_coverage(d, 'ppi_recall_covered')} | {w(d, 'precision')} "
                     f"| {w(d, 'recall')} | {alone} | {classic} |")
    return "\n".join(lines)


def people_table(df: pd.DataFrame) -> str:
    """Where people err: the ppi coverage of the simulator's truth beside that of the
    people's own (what ppi is unbiased for), and how far the two truths lie apart."""
    lines = ["| extractor | people's truth minus the simulator's P / R | n "
             "| ppi coverage of the truth P / R | of the people's truth P / R |",
             "|---|---|---|---|---|"]
    for (ext, _, n), d in df.groupby(["extractor", "matcher", "n"], sort=True):
        gap = " / ".join(f"{(d[f'said_{m}'] - d[f'true_{m}']).mean():+.3f}"
                         for m in ("precision", "recall"))
        truth, theirs = (" / ".join(_coverage(d, f"ppi_{m}_{what}")
                                    for m in ("precision", "recall"))
                         for what in ("covered", "covers_people"))
        lines.append(f"| {ext} | {gap} | {n} | {truth} | {theirs} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=200)
    ap.add_argument("--n-boot", type=int, default=400)
    ap.add_argument("--json", default=None, help="write every replicate's row here")
    ap.add_argument("--lexical-only", action="store_true",
                    help="only the lexical matcher at its own threshold (half the time)")
    ap.add_argument("--match-disagreement", type=float, default=0.0,
                    help="P(a person's answer is wrong, when a wrong one exists); default 0")
    args = ap.parse_args(argv)
    t = float(DEFAULT_MIN_SALIENCE)
    t0 = time.perf_counter()
    rows: list[dict[str, object]] = []
    for r in range(args.replicates):
        rows += replicate(r, args.n_boot, t, MATCHERS[:1] if args.lexical_only else MATCHERS,
                          args.match_disagreement)
    df = pd.DataFrame(rows)
    if args.json:
        df.to_json(args.json, orient="records", indent=1)
    s = summary(df)
    print(f"{args.replicates} replicates (seeds {SEED}..{SEED + args.replicates - 1}), "
          f"{N_VERDICTS} verdicts each, threshold {t:.2f}, 95 % intervals from "
          f"{args.n_boot} bootstrap replicates; people wrong with probability "
          f"{args.match_disagreement}; {time.perf_counter() - t0:.0f} s")
    with pd.option_context("display.width", 250, "display.max_columns", 40):
        print(s.to_markdown(index=False) if _has_tabulate() else s.to_string(index=False))
    print()
    print(readme_table(df))
    if args.match_disagreement > 0:
        print()
        print(people_table(df))
    cov = df.groupby(["extractor", "matcher", "n"])[["ppi_precision_covered",
                                                      "ppi_recall_covered"]].mean()
    print(json.dumps({"min_ppi_coverage": float(cov.min().min())}))
    return 0


def _has_tabulate() -> bool:
    try:
        import tabulate  # noqa: F401  (optional: pandas' to_markdown needs it)
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    raise SystemExit(main())
