"""Choosing ``extraction_min_salience``: on training verdicts, judged on held-out ones.

A threshold tuned and scored on the same verdicts flatters itself. So
:func:`choose_threshold` splits *verdicts* (never candidates: lessons of one
verdict are correlated) into train and test, picks the threshold on train
with an :class:`~truss_lab.evaluate._objective.Objective`, and reports the metrics of
that one threshold on both sides.
"""

from __future__ import annotations

import html
import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from truss_lab.core._errors import BadInputError
from truss_lab.evaluate._bootstrap import (
    BootstrapResult,
    as_rng,
    bootstrap_metrics,
    check_boot,
    verdict_codes,
)
from truss_lab.evaluate._objective import DEFAULT_OBJECTIVE, Objective, make_objective
from truss_lab.evaluate._sweep import (
    UndefinedMetricWarning,
    as_labels,
    as_scores,
    check_lengths,
    distinct_counts,
    sweep,
)

__all__ = ["ThresholdChoice", "choose_threshold", "split_by_verdict", "verdict_kfold"]

# The bootstrap of the choice runs on a grid; beyond this many distinct training
# saliences the grid is their quantiles (plus the chosen threshold itself).
_MAX_BOOT_GRID = 256

_METRICS = ("threshold", "kept", "tp", "fp", "fn", "precision", "recall", "f1",
            "kept_per_verdict", "write_rate")


def _n_test(test_size: float | int, n_groups: int) -> int:
    if isinstance(test_size, (bool, np.bool_)):
        raise BadInputError("test_size must be a float in (0, 1) or an int", field="test_size")
    if isinstance(test_size, (int, np.integer)):
        n_test = int(test_size)
    elif isinstance(test_size, float) and 0.0 < test_size < 1.0:
        n_test = math.ceil(test_size * n_groups)  # scikit-learn's rounding
    else:
        raise BadInputError(
            f"test_size must be a float in (0, 1) or an int, got {test_size!r}", field="test_size"
        )
    if not 1 <= n_test <= n_groups - 1:
        raise BadInputError(
            f"test_size={test_size!r} leaves {n_test} of {n_groups} verdicts for testing; "
            "expected at least one verdict on each side",
            field="test_size",
        )
    return n_test


def split_by_verdict(
    groups: Any, *, test_size: float | int = 0.3, random_state: Any = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Split candidates into train and test so that no verdict is on both sides.

    ``test_size`` is the share (float) or number (int) of *verdicts* held out;
    verdicts are shuffled with ``np.random.default_rng(random_state)``.
    Returns ``(train_idx, test_idx)``: sorted positions into ``groups``.
    """
    codes, verdicts = verdict_codes(groups)
    n_test = _n_test(test_size, len(verdicts))
    perm = as_rng(random_state).permutation(len(verdicts))
    is_test = np.zeros(len(verdicts), dtype=bool)
    is_test[perm[:n_test]] = True
    mask = is_test[codes]
    return np.flatnonzero(~mask), np.flatnonzero(mask)


def verdict_kfold(
    groups: Any, *, n_splits: int = 5, random_state: Any = 0
) -> list[tuple[np.ndarray, np.ndarray]]:
    """K folds of verdicts: list of ``(train_idx, test_idx)``, each verdict tested once.

    Verdicts are shuffled with ``random_state`` and dealt round-robin into
    ``n_splits`` folds (sizes differ by at most one verdict).
    """
    codes, verdicts = verdict_codes(groups)
    if not isinstance(n_splits, (int, np.integer)) or not 2 <= n_splits <= len(verdicts):
        raise BadInputError(
            f"n_splits must be an int in [2, {len(verdicts)}] (the number of verdicts), "
            f"got {n_splits!r}",
            field="n_splits",
        )
    perm = as_rng(random_state).permutation(len(verdicts))
    fold = np.empty(len(verdicts), dtype=np.int64)
    fold[perm] = np.arange(len(verdicts)) % n_splits
    cand_fold = fold[codes]
    return [
        (np.flatnonzero(cand_fold != k), np.flatnonzero(cand_fold == k)) for k in range(n_splits)
    ]


@dataclass(frozen=True, eq=False)
class ThresholdChoice:
    """A threshold chosen on training verdicts, with its metrics on train and test.

    ``train``/``test`` map the :func:`~truss_lab.evaluate._sweep.sweep` columns
    (threshold, kept, tp, fp, fn, precision, recall, f1, kept_per_verdict,
    write_rate) to their value at the chosen threshold on each side.
    ``split`` describes the split (verdict and candidate counts, test_size,
    random_state). ``test_intervals`` (with ``n_boot``) is the verdict
    bootstrap of the test metrics at the chosen threshold; ``threshold_interval``
    the bootstrap interval of the choice re-made on resampled training verdicts.
    """

    threshold: float
    objective: str
    train: dict[str, float]
    test: dict[str, float]
    split: dict[str, Any]
    test_intervals: pd.DataFrame | None = field(default=None, repr=False)
    threshold_interval: tuple[float, float] | None = None
    bootstrap: BootstrapResult | None = field(default=None, repr=False)

    def to_frame(self) -> pd.DataFrame:
        """One row per metric: columns ``train``, ``test`` (and test interval bounds)."""
        df = pd.DataFrame({"train": pd.Series(self.train), "test": pd.Series(self.test)})
        if self.test_intervals is not None:
            row = self.test_intervals.iloc[0]
            df["test_low"] = [row.get(f"{m}_low", np.nan) for m in df.index]
            df["test_high"] = [row.get(f"{m}_high", np.nan) for m in df.index]
        df.index.name = "metric"
        return df

    def __repr__(self) -> str:
        def fmt(d: dict[str, float]) -> str:
            keys = ("precision", "recall", "f1", "kept_per_verdict")
            return ", ".join(f"{k}={d[k]:.3f}" for k in keys if k in d)

        ci = ""
        if self.threshold_interval is not None:
            lo, hi = self.threshold_interval
            ci = f" [{lo:.4g}, {hi:.4g}]"
        sp = self.split
        return (
            f"ThresholdChoice(threshold={self.threshold:.4g}{ci}, objective={self.objective!r},\n"
            f"  train ({sp['n_train_verdicts']} verdicts): {fmt(self.train)},\n"
            f"  test ({sp['n_test_verdicts']} verdicts): {fmt(self.test)})"
        )

    def _repr_html_(self) -> str:
        head = html.escape(
            f"threshold = {self.threshold:.4g} ({self.objective}); split: "
            + ", ".join(f"{k}={v}" for k, v in self.split.items())
        )
        if self.threshold_interval is not None:
            lo, hi = self.threshold_interval
            head += html.escape(f"; bootstrap interval of the choice: [{lo:.4g}, {hi:.4g}]")
        table = self.to_frame().to_html(float_format=lambda v: f"{v:.4g}")
        return f"<div><p><b>ThresholdChoice</b>: {head}</p>{table}</div>"


def _row_at(df: pd.DataFrame) -> dict[str, float]:
    row = df.iloc[0]
    return {k: float(row[k]) for k in _METRICS if k in df.columns}


def _boot_grid(s_train: np.ndarray, chosen: float) -> np.ndarray:
    vals = np.unique(s_train[~np.isnan(s_train)])
    if len(vals) > _MAX_BOOT_GRID:
        # inverted_cdf picks data values, so the grid holds saliences the gate sees
        vals = np.unique(np.quantile(vals, np.linspace(0, 1, _MAX_BOOT_GRID),
                                     method="inverted_cdf"))
    if np.isfinite(chosen):
        vals = np.union1d(vals, [chosen])
    return vals


def choose_threshold(
    y_true: Any,
    salience: Any,
    groups: Any,
    *,
    objective: str | Objective = DEFAULT_OBJECTIVE,
    test_size: float | int = 0.3,
    random_state: Any = 0,
    n_boot: int = 0,
    confidence: float = 0.95,
    **objective_options: float | None,
) -> ThresholdChoice:
    """Choose a salience threshold on training verdicts and score it on held-out ones.

    ``objective`` is ``"f1"``, ``"fbeta"`` (with ``beta``), ``"precision_floor"``
    (with ``min_precision``), ``"budget"`` (with ``max_per_verdict``), ``"cost"``
    (with ``cost_fp``, ``cost_fn``; an option left at None takes the
    :class:`Objective` default) or an :class:`Objective`. Candidate
    thresholds are the distinct training saliences; ties go to the highest.
    The split is :func:`split_by_verdict` with ``test_size`` and ``random_state``.
    With ``n_boot > 0`` the result also carries verdict-bootstrap intervals
    (same ``random_state``) of the test metrics and of the choice itself.
    If no threshold satisfies the objective, warns and returns NaN metrics.
    """
    obj = make_objective(objective, **objective_options)
    if n_boot:
        check_boot(n_boot, confidence)
    y = as_labels(y_true)
    s = as_scores(salience)
    check_lengths(y_true=y, salience=s, groups=groups)
    g = groups.to_numpy() if isinstance(groups, (pd.Series, pd.Index)) else np.asarray(groups)
    train_idx, test_idx = split_by_verdict(g, test_size=test_size, random_state=random_state)
    y_tr, s_tr, g_tr = y[train_idx], s[train_idx], g[train_idx]
    y_te, s_te, g_te = y[test_idx], s[test_idx], g[test_idx]

    thr, kept, tp = distinct_counts(y_tr, s_tr)
    n_groups_tr = len(pd.unique(g_tr))
    best = int(obj.best_index(kept, tp, int(np.count_nonzero(y_tr)), n_groups_tr))
    if best < 0:
        warnings.warn(
            f"no training threshold satisfies the objective ({obj.describe()}); "
            "the choice is NaN",
            UndefinedMetricWarning,
            stacklevel=2,
        )
        chosen = float("nan")
    else:
        chosen = float(thr[best])
    at = [chosen] if np.isfinite(chosen) else [np.inf]
    with warnings.catch_warnings():
        # Degenerate sides still warn once, from here, with the side named.
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        train = _row_at(sweep(y_tr, s_tr, groups=g_tr, thresholds=at, snap=False))
        test = _row_at(sweep(y_te, s_te, groups=g_te, thresholds=at, snap=False))
    if not np.isfinite(chosen):
        train = {k: (np.nan if k != "threshold" else chosen) for k in train}
        test = {k: (np.nan if k != "threshold" else chosen) for k in test}
    for side, yy in (("train", y_tr), ("test", y_te)):
        if not yy.any():
            warnings.warn(
                f"the {side} verdicts have no positive labels: recall is undefined (NaN)",
                UndefinedMetricWarning,
                stacklevel=2,
            )

    split = {
        "by": "verdict",
        "test_size": test_size,
        "random_state": random_state,
        "n_train_verdicts": n_groups_tr,
        "n_test_verdicts": len(pd.unique(g_te)),
        "n_train_candidates": len(train_idx),
        "n_test_candidates": len(test_idx),
    }
    test_intervals = None
    threshold_interval = None
    boot = None
    if n_boot and np.isfinite(chosen):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            test_boot = bootstrap_metrics(
                y_te, s_te, g_te, thresholds=[chosen], n_boot=n_boot,
                confidence=confidence, random_state=random_state, objective=obj, snap=False,
            )
            boot = bootstrap_metrics(
                y_tr, s_tr, g_tr, thresholds=_boot_grid(s_tr, chosen), n_boot=n_boot,
                confidence=confidence, random_state=random_state, objective=obj,
            )
        test_intervals = test_boot.table
        threshold_interval = (boot.threshold_low, boot.threshold_high)
    return ThresholdChoice(
        threshold=chosen,
        objective=obj.describe(),
        train=train,
        test=test,
        split=split,
        test_intervals=test_intervals,
        threshold_interval=threshold_interval,
        bootstrap=boot,
    )
