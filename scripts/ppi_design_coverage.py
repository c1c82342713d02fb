"""Coverage of the corrected intervals by sampling design (issue 36, "what must be shown").

A simulator written for this script, separate from the sample's (``truss_lab.simulate``):
verdicts are clusters (each has 1 + Poisson(1.5) candidates and its own quality, a
normal effect on the log-odds that a lesson of it is useful), saliences are Beta(4, 2),
5 % of candidates are dropped by the parser (never kept, still counted in recall's
denominator when useful), and the automated truth (a judge or a matcher, the code
cannot tell) is asymmetric: it finds half of the useful lessons and calls 10 % of
the others useful. The people are right (their truth is the simulator's).

**Estimand.** Every interval of the toolkit is for the super-population: the process
that produced the verdicts at hand, of which they are a sample (docs/explanation/ppi.md,
"What an interval is for"). The truth is therefore the process's precision and
recall at 0.70, computed once on ``--population`` verdicts drawn from it (seed
``SEED - 1``); the coverage of the replicate's own people's figure (the finite
population) is reported beside it.

Per replicate (seed ``SEED + r``, ``--verdicts`` verdicts):

- (a) whole-verdict people labels: a simple random sample of 30, 60 and 100 verdicts,
  every candidate of each labelled; the default interval
  (:func:`~truss_lab.evaluate._ppi.ppi_bootstrap`: power tuning re-chosen per
  replicate, Wilson on the effective size) and the classic one (``lam=1``, what the
  threshold choice signs into ``propose``'s evidence), both covering?
- (b) labels from ``truss-lab queue``: its whole-verdict mode (``--whole-verdicts
  --n-verdicts 60``, :func:`whole_queue`: 60 verdicts drawn at random, every
  candidate of each), corrected by default, covering? And its band-limited labels
  (lessons in [0.6, 0.8], at most 2 per verdict, verdicts dealt in a random order, all
  of them): what ``labels_ppi`` does with them (refuses: the share refused), and how
  the old behaviour (the band's verdicts taken as a whole sample) covered;
- (c) the replicates of (a) where the classic estimate of precision reaches 1 (clipped):
  the coverage of the classic interval there;
- the simultaneous band (:attr:`~truss_lab.evaluate._bootstrap.BootstrapResult.band`)
  of (a): does it hold the process's whole precision, recall and F1 curve over its
  domain (the thresholds of :data:`GRID`, 0.05 to 0.95, where at least
  :data:`~truss_lab.evaluate._bootstrap.BAND_MIN_SUPPORT` people's lessons carry the
  metric: :func:`~truss_lab.evaluate._bootstrap.band_domain`), how many thresholds
  that is, and how often the pointwise intervals all hold it there.

Coverage is the share of replicates covered with its Monte Carlo standard error
sqrt(c (1 - c) / R). Run (about 0.4 s a replicate on one core with 400 bootstrap
replicates; the site's table, docs/explanation/ppi.md, is what this prints):

    nice -n 10 .venv/bin/python -m scripts.ppi_design_coverage --replicates 300
"""

from __future__ import annotations

import argparse
import json
import math
import time
import warnings
from typing import Any

import numpy as np
import pandas as pd

from truss_lab.core._errors import BadInputError
from truss_lab.evaluate._ppi import labels_ppi, ppi_bootstrap, ppi_data
from truss_lab.evaluate._sweep import UndefinedMetricWarning
from truss_lab.evaluate._truth import RunTruth

SEED = 360_000
THRESHOLD = 0.70
#: The curve the simultaneous band must hold whole (THRESHOLD among them).
GRID = np.round(np.arange(0.05, 0.951, 0.05), 2)
SIZES = (30, 60, 100)
BAND = (0.6, 0.8)
#: Verdicts the queue's whole-verdict mode draws in row (b).
WHOLE = 60
#: The automated truth: P(says useful | useful), P(says useful | not useful).
FINDS, INVENTS = 0.5, 0.10
#: Lesson usefulness: log-odds ALPHA + BETA (s - 0.7) + the verdict's effect (sd SIGMA).
ALPHA, BETA, SIGMA = 2.2, 4.0, 1.0


def simulate(rng: np.random.Generator, n_verdicts: int) -> dict[str, np.ndarray]:
    """One dataset: per candidate its verdict ``g``, score ``s`` (NaN: dropped), the
    truth ``y`` and the automated truth ``a``."""
    k = 1 + rng.poisson(1.5, n_verdicts)
    g = np.repeat(np.arange(n_verdicts), k)
    u = rng.normal(0.0, SIGMA, n_verdicts)
    s = rng.beta(4.0, 2.0, len(g))
    logit = ALPHA + BETA * (s - 0.7) + u[g]
    y = rng.random(len(g)) < 1.0 / (1.0 + np.exp(-logit))
    s = np.where(rng.random(len(g)) < 0.05, np.nan, s)
    a = np.where(y, rng.random(len(g)) < FINDS, rng.random(len(g)) < INVENTS)
    return {"g": g, "s": s, "y": y.astype(np.uint8), "a": a.astype(np.uint8)}


def truth_of(d: dict[str, np.ndarray], t: Any = THRESHOLD) -> tuple[Any, Any]:
    """Precision and recall at ``t`` (a number or an array of thresholds)."""
    kept = d["s"][None, :] >= np.atleast_1d(t)[:, None]
    tp = (kept & d["y"].astype(bool)).sum(axis=1)
    p, r = tp / kept.sum(axis=1), tp / float(d["y"].sum())
    return (float(p[0]), float(r[0])) if np.ndim(t) == 0 else (p, r)


def super_population(n: int) -> tuple[float, float]:
    """The process's precision and recall at the threshold, from ``n`` verdicts."""
    return truth_of(simulate(np.random.default_rng(SEED - 1), n))


def super_curve(n: int) -> dict[str, np.ndarray]:
    """The process's precision, recall and F1 over :data:`GRID`, from ``n`` verdicts."""
    p, r = truth_of(simulate(np.random.default_rng(SEED - 1), n), GRID)
    return {"precision": p, "recall": r, "f1": 2 * p * r / (p + r)}


def _run_truth(d: dict[str, np.ndarray], y: np.ndarray, answered: np.ndarray) -> RunTruth:
    g = d["g"].astype(str).astype(object)
    c = pd.DataFrame({"candidate_id": np.arange(len(g)), "verdict_hash": g,
                      "extractor_id": "sim", "lesson_index": 0, "valid": ~np.isnan(d["s"]),
                      "s": d["s"], "y": y, "judged": answered, "answered": answered})
    verdicts = [str(v) for v in range(int(d["g"].max()) + 1)]
    return RunTruth(run_id="sim", candidates=c, n_verdicts=len(verdicts), verdicts=verdicts,
                    counts={})


def whole_queue(d: dict[str, np.ndarray], rng: np.random.Generator,
                n: int = WHOLE) -> np.ndarray:
    """The rows ``truss-lab queue --whole-verdicts --n-verdicts n`` would list (bool),
    as :func:`~truss_lab.evaluate._queue.whole_verdict_queue` draws them: ``n`` of the
    verdicts with a candidate by simple random sampling without replacement, every
    candidate of each (the parser's dropped ones too)."""
    with_candidate = np.unique(d["g"])
    return np.isin(d["g"], rng.choice(with_candidate, size=n, replace=False))


def band_queue(d: dict[str, np.ndarray], rng: np.random.Generator, n: int = 1 << 30,
               per_verdict: int = 2) -> np.ndarray:
    """The rows ``truss-lab queue`` would list (bool): lessons in the band, verdicts in a
    random order dealt round-robin, nearest the band's centre first, at most
    ``per_verdict`` each, the first ``n``."""
    s = d["s"]
    pool = np.flatnonzero((s >= BAND[0]) & (s <= BAND[1]))
    position = rng.permutation(int(d["g"].max()) + 1)[d["g"][pool]]
    by = np.lexsort((np.abs(s[pool] - sum(BAND) / 2), position))
    pool, position = pool[by], position[by]
    first = np.r_[True, position[1:] != position[:-1]]
    rank = np.arange(len(pool)) - np.maximum.accumulate(
        np.where(first, np.arange(len(pool)), 0))
    keep = rank < per_verdict
    dealt = pool[keep][np.lexsort((position[keep], rank[keep]))][:n]
    out = np.zeros(len(s), dtype=bool)
    out[dealt] = True
    return out


def _covers(b: pd.Series, m: str, v: float) -> bool:
    return bool(b[f"{m}_low"] <= v <= b[f"{m}_high"])


def replicate(r: int, n_verdicts: int, n_boot: int, truth: tuple[float, float],
              curve: dict[str, np.ndarray] | None = None) -> list[dict[str, Any]]:
    rng = np.random.default_rng(SEED + r)
    d = simulate(rng, n_verdicts)
    finite = truth_of(d)
    auto = _run_truth(d, d["a"], np.ones(len(d["g"]), dtype=bool))
    rows: list[dict[str, Any]] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        for n in SIZES:
            picked = rng.choice(n_verdicts, size=n, replace=False)
            on = np.isin(d["g"], picked)
            data = labels_ppi(auto, _run_truth(d, np.where(on, d["y"], 0), on))
            assert data is not None
            row: dict[str, Any] = {"replicate": r, "design": "whole verdicts", "n": n}
            at = int(np.flatnonzero(np.isclose(GRID, THRESHOLD))[0])
            for name, lam in (("ppi", None), ("classic", 1.0)):
                res = ppi_bootstrap(data, thresholds=GRID, n_boot=n_boot, random_state=r,
                                    lam=lam, snap=False)
                b = res.table.iloc[at]
                if curve is not None and res.band is not None:
                    for m, true_curve in curve.items():
                        lo = res.band[f"{m}_band_low"].to_numpy()
                        hi = res.band[f"{m}_band_high"].to_numpy()
                        on = ~np.isnan(lo)  # the band's domain
                        row[f"{name}_{m}_band_covered"] = bool(
                            ((lo <= true_curve) & (true_curve <= hi))[on].all())
                        row[f"{name}_{m}_band_domain"] = int(on.sum())
                        row[f"{name}_{m}_pointwise_all"] = bool(
                            ((res.table[f"{m}_low"].to_numpy() <= true_curve)
                             & (true_curve <= res.table[f"{m}_high"].to_numpy()))[on].all())
                for m, true, own in zip(("precision", "recall"), truth, finite, strict=True):
                    row[f"{name}_{m}"] = float(b[m])
                    row[f"{name}_{m}_covered"] = _covers(b, m, true)
                    row[f"{name}_{m}_covers_finite"] = _covers(b, m, own)
                    row[f"{name}_{m}_width"] = float(b[f"{m}_high"] - b[f"{m}_low"])
            rows.append(row)
        on = whole_queue(d, rng)
        data = labels_ppi(auto, _run_truth(d, np.where(on, d["y"], 0), on))
        assert data is not None
        b = ppi_bootstrap(data, thresholds=[THRESHOLD], n_boot=n_boot, random_state=r,
                          snap=False).table.iloc[0]
        row = {"replicate": r, "design": "queue whole verdicts", "n": WHOLE}
        for m, true in zip(("precision", "recall"), truth, strict=True):
            row[f"ppi_{m}"] = float(b[m])
            row[f"ppi_{m}_covered"] = _covers(b, m, true)
            row[f"ppi_{m}_width"] = float(b[f"{m}_high"] - b[f"{m}_low"])
        rows.append(row)
        band = band_queue(d, rng)
        gold = _run_truth(d, np.where(band, d["y"], 0), band)
        row = {"replicate": r, "design": "queue band", "n": int(band.sum())}
        try:
            labels_ppi(auto, gold)
            row["refused"] = False
        except BadInputError:
            row["refused"] = True
        # The old behaviour: the band's verdicts taken as whole, their other lessons
        # counted by the automated truth.
        touched = np.unique(d["g"][band])
        on = np.isin(d["g"], touched)
        old = ppi_data(d["a"], d["s"], d["g"], np.where(band, d["y"], d["a"])[on], d["s"][on],
                       d["g"][on], verdicts=np.arange(n_verdicts), sampled=touched)
        b = ppi_bootstrap(old, thresholds=[THRESHOLD], n_boot=n_boot,
                          random_state=r).table.iloc[0]
        for m, true in zip(("precision", "recall"), truth, strict=True):
            row[f"old_{m}"] = float(b[m])
            row[f"old_{m}_covered"] = _covers(b, m, true)
        rows.append(row)
    return rows


def _cov(d: pd.DataFrame, col: str) -> str:
    if len(d) == 0:
        return "-"
    c = float(d[col].mean())
    return f"{c:.3f} ± {math.sqrt(c * (1 - c) / len(d)):.3f}"


def readme_table(df: pd.DataFrame) -> str:
    """The site's table (markdown) of the replicate rows ``df``."""
    bands: list[str] = []
    lines = ["| design | people's labels | replicates | ppi coverage P / R "
             "| classic (lam = 1) coverage P / R | width P / R (ppi) "
             "| coverage of the verdicts at hand P / R (ppi) |",
             "|---|---|---|---|---|---|---|"]
    whole = df[df["design"] == "whole verdicts"]
    for n, d in whole.groupby("n", sort=True):
        if "ppi_precision_band_covered" in d:
            band = " / ".join(_cov(d, f"ppi_{m}_band_covered")
                              for m in ("precision", "recall", "f1"))
            domain = " / ".join(f"{d[f'ppi_{m}_band_domain'].mean():.1f}"
                                for m in ("precision", "recall", "f1"))
            points = " / ".join(f"{d[f'ppi_{m}_pointwise_all'].mean():.3f}"
                                for m in ("precision", "recall", "f1"))
            bands.append(f"| {n} verdicts | {len(d)} | {band} | {domain} | {points} |")
        lines.append(
            f"| (a) whole verdicts, SRS | {n} verdicts | {len(d)} "
            f"| {_cov(d, 'ppi_precision_covered')} / {_cov(d, 'ppi_recall_covered')} "
            f"| {_cov(d, 'classic_precision_covered')} / {_cov(d, 'classic_recall_covered')} "
            f"| {d['ppi_precision_width'].mean():.3f} / {d['ppi_recall_width'].mean():.3f} "
            f"| {_cov(d, 'ppi_precision_covers_finite')} / "
            f"{_cov(d, 'ppi_recall_covers_finite')} |")
    clipped = whole[whole["classic_precision"] >= 1.0]
    lines.append(
        f"| (c) classic precision reaches 1 | 30-100 verdicts | {len(clipped)} "
        f"| {_cov(clipped, 'ppi_precision_covered')} / {_cov(clipped, 'ppi_recall_covered')} "
        f"| {_cov(clipped, 'classic_precision_covered')} / "
        f"{_cov(clipped, 'classic_recall_covered')} | - | - |")
    queued = df[df["design"] == "queue whole verdicts"]
    if len(queued):
        lines.append(
            f"| (b) queue, whole verdicts (`--whole-verdicts`) | {WHOLE} verdicts "
            f"| {len(queued)} | {_cov(queued, 'ppi_precision_covered')} / "
            f"{_cov(queued, 'ppi_recall_covered')} | - "
            f"| {queued['ppi_precision_width'].mean():.3f} / "
            f"{queued['ppi_recall_width'].mean():.3f} | - |")
    band = df[df["design"] == "queue band"]
    if len(band):
        lines.append(
            f"| (b) queue band [0.6, 0.8], 2 per verdict | ~{band['n'].mean():.0f} lessons "
            f"| {len(band)} | refused in {band['refused'].mean():.0%} (taken as whole "
            f"verdicts, as before: {_cov(band, 'old_precision_covered')} / "
            f"{_cov(band, 'old_recall_covered')}) | - | - | - |")
    if bands:
        lines += ["", f"| whole verdicts | replicates | simultaneous band holds the whole "
                  f"true curve over its domain ({len(GRID)} thresholds, {GRID[0]:.2f} to "
                  f"{GRID[-1]:.2f}) P / R / F1 | thresholds in the domain P / R / F1 "
                  "| pointwise intervals hold it all there P / R / F1 |",
                  "|---|---|---|---|---|", *bands]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=300)
    ap.add_argument("--verdicts", type=int, default=600)
    ap.add_argument("--n-boot", type=int, default=400)
    ap.add_argument("--population", type=int, default=2_000_000)
    ap.add_argument("--json", default=None, help="write every replicate's row here")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    truth = super_population(args.population)
    curve = super_curve(args.population)
    rows: list[dict[str, Any]] = []
    for r in range(args.replicates):
        rows += replicate(r, args.verdicts, args.n_boot, truth, curve)
    df = pd.DataFrame(rows)
    if args.json:
        df.to_json(args.json, orient="records", indent=1)
    print(f"{args.replicates} replicates (seeds {SEED}..{SEED + args.replicates - 1}) of "
          f"{args.verdicts} verdicts; the process's precision / recall at {THRESHOLD:.2f}: "
          f"{truth[0]:.4f} / {truth[1]:.4f} ({args.population} verdicts); 95 % intervals "
          f"from {args.n_boot} bootstrap replicates; {time.perf_counter() - t0:.0f} s")
    print()
    print(readme_table(df))
    whole = df[df["design"] == "whole verdicts"]
    cov = whole.groupby("n")[["ppi_precision_covered", "ppi_recall_covered"]].mean()
    print(json.dumps({"min_ppi_coverage": float(cov.min().min()),
                      "max_ppi_coverage": float(cov.max().max())}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
