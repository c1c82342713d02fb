"""Calibration of salience read as a probability: reliability bins, ECE, MCE, Brier.

A calibrated salience of 0.7 should mean "seven in ten such lessons are
useful"; only then does ``extraction_min_salience = 0.7`` say what it seems
to. These functions measure that; the calibrating scorers (isotonic, Platt)
live in ``truss_lab.score._calibrators``.

Binning follows scikit-learn's ``calibration_curve``: with
``strategy="uniform"`` the edges are ``np.linspace(0, 1, n_bins + 1)``, with
``"quantile"`` they are quantiles of ``prob``; a value equal to an inner edge
falls in the bin *below* it (``np.searchsorted(inner_edges, prob)``).

A bin of three candidates says little: each bin carries a Wilson score
interval of its observed frequency, and bins under ``min_bin_count``
candidates are flagged (drawn hollow by ``CalibrationDisplay``) and left out
of MCE, which would otherwise be set by whichever near-empty bin is luckiest.
ECE keeps every bin: it weights each by its count already.
"""

from __future__ import annotations

import warnings
from statistics import NormalDist
from typing import Any, Literal

import numpy as np
import pandas as pd

from truss_lab.core._errors import BadInputError
from truss_lab.evaluate._sweep import UndefinedMetricWarning, as_labels, as_scores, check_lengths

__all__ = [
    "DEFAULT_MIN_BIN_COUNT",
    "brier_score",
    "expected_calibration_error",
    "max_calibration_error",
    "reliability_table",
    "wilson_interval",
]

DEFAULT_MIN_BIN_COUNT = 10
"""Bins with fewer candidates are flagged in reliability tables and left out of MCE."""


def wilson_interval(
    n_positive: Any, count: Any, *, confidence: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval of ``n_positive / count``, elementwise (NaN where count is 0).

    ``(c + z^2/2n -+ z sqrt(c(1-c)/n + z^2/4n^2)) / (1 + z^2/n)`` with ``c = k/n``
    and ``z`` the normal quantile of ``(1 + confidence) / 2``; the same as
    statsmodels' ``proportion_confint(k, n, method="wilson")``. Unlike the
    normal approximation it stays inside [0, 1] and is not zero-width at 0/n or n/n.
    """
    if not 0.0 < confidence < 1.0:
        raise BadInputError(f"confidence must be in (0, 1), got {confidence!r}",
                            field="confidence")
    k = np.asarray(n_positive, dtype=np.float64)
    n = np.asarray(count, dtype=np.float64)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = k / n
        denom = 1.0 + z * z / n
        centre = (c + z * z / (2 * n)) / denom
        half = z / denom * np.sqrt(c * (1 - c) / n + z * z / (4 * n * n))
    empty = n <= 0
    # Clipped so rounding never puts a bound outside [0, 1] (at 0/n or n/n).
    low = np.clip(centre - half, 0.0, 1.0)
    high = np.clip(centre + half, 0.0, 1.0)
    return np.where(empty, np.nan, low), np.where(empty, np.nan, high)


def _check_min_count(min_bin_count: Any) -> int:
    if not isinstance(min_bin_count, (int, np.integer)) or min_bin_count < 1:
        raise BadInputError(f"min_bin_count must be an int >= 1, got {min_bin_count!r}",
                            field="min_bin_count")
    return int(min_bin_count)


def _check_prob(y_true: Any, prob: Any) -> tuple[np.ndarray, np.ndarray]:
    y = as_labels(y_true)
    p = as_scores(prob, "prob")
    check_lengths(y_true=y, prob=p)
    bad = np.isnan(p) | (p < 0) | (p > 1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise BadInputError(
            f"expected probabilities in [0, 1] (no NaN), got {p[i]!r} at position {i}",
            field="prob",
        )
    return y, p


def reliability_table(
    y_true: Any,
    prob: Any,
    *,
    n_bins: int = 10,
    strategy: Literal["uniform", "quantile"] = "uniform",
    min_bin_count: int = DEFAULT_MIN_BIN_COUNT,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Reliability bins of predicted probabilities.

    Returns one row per bin ``i`` (``n_bins`` rows, empty bins included):

    - ``bin``: i; ``lower``/``upper``: its edges;
    - ``count``: candidates in the bin; ``n_positive``: those labelled 1;
    - ``mean_predicted``: mean of ``prob`` in the bin (NaN when empty);
    - ``observed_frequency``: ``n_positive / count`` (NaN when empty);
    - ``frequency_low``/``frequency_high``: its Wilson score interval at
      ``confidence`` (:func:`wilson_interval`; NaN when empty);
    - ``enough``: ``count >= min_bin_count`` (a bin that counts in MCE).

    ``attrs`` holds ``min_bin_count`` and ``confidence``. Rows with
    ``count > 0`` match scikit-learn's ``calibration_curve`` (``prob_pred``,
    ``prob_true``). Empty input warns and gives all-empty bins.
    """
    min_count = _check_min_count(min_bin_count)
    y, p = _check_prob(y_true, prob)
    if not isinstance(n_bins, (int, np.integer)) or n_bins < 1:
        raise BadInputError(f"n_bins must be an int >= 1, got {n_bins!r}", field="n_bins")
    if strategy == "uniform":
        edges = np.linspace(0.0, 1.0, n_bins + 1)
    elif strategy == "quantile":
        if len(p) == 0:
            edges = np.linspace(0.0, 1.0, n_bins + 1)
        else:
            # Duplicate edges are kept (as scikit-learn does): the bin between
            # two equal edges is simply empty.
            edges = np.percentile(p, np.linspace(0, 1, n_bins + 1) * 100)
    else:
        raise BadInputError(
            f"strategy must be 'uniform' or 'quantile', got {strategy!r}", field="strategy"
        )
    if len(p) == 0:
        warnings.warn("no candidates: every bin is empty", UndefinedMetricWarning, stacklevel=2)
    nb = n_bins
    ids = np.searchsorted(edges[1:-1], p)
    count = np.bincount(ids, minlength=nb)
    total = np.bincount(ids, weights=p, minlength=nb)
    pos = np.bincount(ids, weights=y, minlength=nb)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_pred = np.where(count > 0, total / count, np.nan)
        freq = np.where(count > 0, pos / count, np.nan)
    lower, upper = edges[:-1], edges[1:]
    low, high = wilson_interval(pos, count, confidence=confidence)
    table = pd.DataFrame(
        {
            "bin": np.arange(nb),
            "lower": lower,
            "upper": upper,
            "count": count.astype(np.int64),
            "n_positive": pos.astype(np.int64),
            "mean_predicted": mean_pred,
            "observed_frequency": freq,
            "frequency_low": low,
            "frequency_high": high,
            "enough": count >= min_count,
        }
    )
    table.attrs.update(min_bin_count=min_count, confidence=float(confidence))
    return table


def expected_calibration_error(
    y_true: Any,
    prob: Any,
    *,
    n_bins: int = 10,
    strategy: Literal["uniform", "quantile"] = "uniform",
) -> float:
    """ECE: ``sum_i count_i / n * |observed_frequency_i - mean_predicted_i|`` over bins.

    Bins as in :func:`reliability_table`. NaN (with a warning) for empty input.
    """
    table = reliability_table(y_true, prob, n_bins=n_bins, strategy=strategy)
    n = table["count"].sum()
    if n == 0:
        return float("nan")
    full = table[table["count"] > 0]
    gap = (full["observed_frequency"] - full["mean_predicted"]).abs()
    return float((full["count"] / n * gap).sum())


def max_calibration_error(
    y_true: Any,
    prob: Any,
    *,
    n_bins: int = 10,
    strategy: Literal["uniform", "quantile"] = "uniform",
    min_bin_count: int = DEFAULT_MIN_BIN_COUNT,
) -> float:
    """MCE: the largest ``|observed_frequency - mean_predicted|`` over bins with at least
    ``min_bin_count`` candidates (``min_bin_count=1``: every non-empty bin).

    A bin of one candidate has a gap of at least 0.5 whatever the calibration,
    so small bins are left out; NaN with a warning when no bin is large enough.
    """
    table = reliability_table(y_true, prob, n_bins=n_bins, strategy=strategy,
                              min_bin_count=min_bin_count)
    full = table[table["enough"] & (table["count"] > 0)]
    if full.empty:
        if table["count"].sum() > 0:
            warnings.warn(
                f"no bin holds {min_bin_count} or more candidates: MCE is NaN "
                "(lower min_bin_count or use fewer bins)",
                UndefinedMetricWarning, stacklevel=2,
            )
        return float("nan")
    return float((full["observed_frequency"] - full["mean_predicted"]).abs().max())


def brier_score(y_true: Any, prob: Any) -> float:
    """Mean squared difference between ``prob`` and the 0/1 label (lower is better)."""
    y, p = _check_prob(y_true, prob)
    if len(p) == 0:
        warnings.warn("no candidates: the Brier score is NaN", UndefinedMetricWarning, stacklevel=2)
        return float("nan")
    return float(np.mean((p - y) ** 2))
