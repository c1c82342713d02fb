"""Intervals of a threshold choice's held-out metrics: threshold fixed, or choice re-made.

A choice is one or more *sides*: verdicts the threshold is chosen on and
verdicts it is judged on (one train/test split, or the folds of a
cross-validation). Both intervals come from the same replicates, which
resample verdicts with replacement within each *stratum* (one split: the
training and the held-out verdicts each among themselves, so both sides keep
their size; cross-validation: all verdicts, each copy keeping its fold):

- **fixed**: every side's held-out verdicts at the threshold that side chose
  on the data, held fixed: the interval of the held-out metrics given the choice;
- **procedure**: every replicate re-makes each side's choice on its resampled
  training verdicts and scores its resampled held-out verdicts with it: the
  interval of the whole choose-then-evaluate procedure, which also covers the
  choice of threshold.

Counts are pooled over sides (out-of-fold metrics) and read as
:func:`~truss_lab.evaluate._sweep.sweep` reads them (``judged``, every processed
verdict). The choices are made on a grid of thresholds (at most a few hundred
data values plus each side's choice, see :func:`boot_grid`), all replicates at
once as in :mod:`~truss_lab.evaluate._bootstrap`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from truss_lab.evaluate._bootstrap import (
    _MAX_W_CELLS,
    BOOT_METRICS,
    WeightedCounter,
    bin_counts,
    percentile_interval,
)
from truss_lab.evaluate._objective import KEEP_NOTHING, Objective
from truss_lab.evaluate._sweep import metrics_from_counts

__all__ = ["Side", "boot_grid", "choice_intervals", "draw_weights"]

# Beyond this many distinct saliences the replicates' choices run on their quantiles.
MAX_BOOT_GRID = 256


@dataclass(frozen=True)
class Side:
    """One choice: verdicts it is made on (``train``) and judged on (``test``), as
    boolean masks over the verdicts, and the threshold chosen on the data."""

    train: np.ndarray
    test: np.ndarray
    threshold: float


def boot_grid(s: np.ndarray, chosen: Sequence[float], obj: Objective | None = None,
              ) -> np.ndarray:
    """Thresholds the replicates choose among: the distinct saliences of ``s`` (their
    ``inverted_cdf`` quantiles -- data values -- beyond :data:`MAX_BOOT_GRID`) plus
    the thresholds ``chosen`` on the data, plus :data:`KEEP_NOTHING` when ``obj``
    considers it (ascending)."""
    vals = np.unique(s[~np.isnan(s)])
    if len(vals) > MAX_BOOT_GRID:
        vals = np.unique(np.quantile(vals, np.linspace(0, 1, MAX_BOOT_GRID),
                                     method="inverted_cdf"))
    extra = [c for c in chosen if not np.isnan(c)]
    if obj is not None and obj.considers_nothing:
        extra.append(KEEP_NOTHING)
    return np.union1d(vals, extra) if extra else vals


def draw_weights(
    rng: np.random.Generator, n_boot: int, strata: Sequence[np.ndarray], n_verdicts: int
) -> Iterator[np.ndarray]:
    """Verdict weights (replicates x verdicts, float32 counts) in chunks: each
    replicate draws, within every stratum (array of verdict positions), as many
    verdicts as it holds, with replacement, in replicate order."""
    rows = max(1, min(n_boot, _MAX_W_CELLS // max(n_verdicts, 1)))
    for lo in range(0, n_boot, rows):
        c = min(rows, n_boot - lo)
        w = np.zeros((c, n_verdicts), dtype=np.float32)
        for members in strata:
            m = len(members)
            if m == 0:
                continue
            idx = rng.integers(0, m, size=(c, m))
            idx += (np.arange(c, dtype=np.int64) * m)[:, None]
            w[:, members] = np.bincount(idx.ravel(), minlength=c * m).reshape(c, m)
        yield w


def _fixed_counts(y: np.ndarray, s: np.ndarray, jm: np.ndarray, codes: np.ndarray,
                  n_verdicts: int, sides: Sequence[Side]) -> np.ndarray:
    """Per verdict: held-out ``kept, tp, judged, n, n_pos, times held out`` at each
    side's own threshold, summed over sides (shape ``(verdicts, 6)``)."""
    out = np.zeros((n_verdicts, 6))
    yb, jb = y.astype(bool), jm.astype(bool)
    with np.errstate(invalid="ignore"):
        for side in sides:
            on = side.test[codes]
            kept = on & (s >= side.threshold)  # NaN salience or threshold: never kept
            for i, mask in enumerate((kept, kept & yb, kept & jb, on, on & yb)):
                out[:, i] += np.bincount(codes, weights=mask, minlength=n_verdicts)
            out[:, 5] += side.test
    return out


def _metrics(c: np.ndarray) -> dict[str, np.ndarray]:
    return metrics_from_counts(c[:, 0], c[:, 1], c[:, 3], c[:, 4], c[:, 5], c[:, 2])


def _table(threshold: float, point: dict[str, float], reps: dict[str, list[np.ndarray]],
           confidence: float) -> pd.DataFrame:
    row: dict[str, float] = {"threshold": threshold}
    for m in BOOT_METRICS:
        lo, hi = percentile_interval(np.concatenate(reps[m])[:, None], confidence)
        row[m] = float(point.get(m, np.nan))
        row[f"{m}_low"], row[f"{m}_high"] = float(lo[0]), float(hi[0])
    return pd.DataFrame([row])


def choice_intervals(
    y: np.ndarray, s: np.ndarray, jm: np.ndarray, codes: np.ndarray, n_verdicts: int, *,
    sides: Sequence[Side], strata: Sequence[np.ndarray], obj: Objective, threshold: float,
    point: dict[str, float], n_boot: int, confidence: float, rng: np.random.Generator,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(fixed, procedure)``: one-row tables (``threshold``, each metric of
    :data:`~truss_lab.evaluate._bootstrap.BOOT_METRICS` with ``_low``/``_high``).

    ``y`` (positives, already 0 where unjudged), ``s`` (NaN: never kept), ``jm``
    (judged) and ``codes`` (verdict position of each candidate) describe the
    candidates; ``point`` holds the held-out values shown beside the bounds.
    """
    grid_desc = boot_grid(s, [side.threshold for side in sides], obj)[::-1].copy()
    counter = WeightedCounter(bin_counts(y, s, codes, n_verdicts, grid_desc, judged=jm))
    fixed = _fixed_counts(y, s, jm, codes, n_verdicts, sides)
    reps_f: dict[str, list[np.ndarray]] = {m: [] for m in BOOT_METRICS}
    reps_p: dict[str, list[np.ndarray]] = {m: [] for m in BOOT_METRICS}
    for w in draw_weights(rng, n_boot, strata, n_verdicts):
        mf = _metrics(w.astype(np.float64) @ fixed)
        acc = np.zeros((len(w), 6))
        ok = np.ones(len(w), dtype=bool)
        for side in sides:
            idx = counter.judged(w * side.train).best_index(obj)
            ok &= idx >= 0
            te = counter.judged(w * side.test)
            at = np.maximum(idx, 0)[:, None]
            for i, a in enumerate((te.kept, te.tp, te.judged)):
                acc[:, i] += np.take_along_axis(a, at, axis=1)[:, 0]
            acc[:, 3] += te.n[:, 0]
            acc[:, 4] += te.n_pos[:, 0]
            acc[:, 5] += te.n_verdicts[:, 0]
        mp = _metrics(acc)
        for m in BOOT_METRICS:
            reps_f[m].append(mf[m])
            reps_p[m].append(np.where(ok, mp[m], np.nan))  # a side chose nothing: undefined
    return (_table(threshold, point, reps_f, confidence),
            _table(threshold, point, reps_p, confidence))
