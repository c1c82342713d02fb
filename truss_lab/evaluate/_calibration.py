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

:func:`calibration_run` measures a run in the store before and after a calibrator
fitted on training verdicts, judged by its truth (:class:`CalibrationReport`).
"""

from __future__ import annotations

import html
import warnings
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any, Literal

import numpy as np
import pandas as pd

from truss_lab.core._errors import BadInputError
from truss_lab.core._threads import blas_limited
from truss_lab.evaluate._bootstrap import percentile_interval, small_sample_line, stream
from truss_lab.evaluate._choose import draw_weights, split_by_verdict
from truss_lab.evaluate._correction import run_correction
from truss_lab.evaluate._label_report import fmt_number
from truss_lab.evaluate._ppi import PPIData, correction_label, correction_of
from truss_lab.evaluate._sweep import UndefinedMetricWarning, as_labels, as_scores, check_lengths
from truss_lab.evaluate._truth import ReferenceTruth, Truth, truth_of, whole_lessons
from truss_lab.score._calibrators import IsotonicCalibrator, PlattCalibrator
from truss_lab.store._store import Store

__all__ = [
    "DEFAULT_MIN_BIN_COUNT",
    "CalibrationReport",
    "brier_score",
    "calibration_run",
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

    Parameters
    ----------
    y_true : array of 0/1
        Each candidate's label.
    prob : array of float
        Each candidate's predicted probability (salience), in [0, 1].
    n_bins : int, default 10
        Bins.
    strategy : {"uniform", "quantile"}, default "uniform"
        Equal-width or equal-count bins.
    min_bin_count : int
        The fewest candidates of a bin that counts in MCE (``enough``).
    confidence : float, default 0.95
        Level of the Wilson intervals.

    Returns
    -------
    pandas.DataFrame
        One row per bin (above).

    Raises
    ------
    BadInputError
        Labels other than 0/1, probabilities outside [0, 1], a bad ``n_bins``,
        ``strategy`` or ``min_bin_count``.
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

    Bins as in :func:`reliability_table`.

    Parameters
    ----------
    y_true : array of 0/1
        Each candidate's label.
    prob : array of float
        Each candidate's predicted probability (salience), in [0, 1].
    n_bins : int, default 10
        Bins.
    strategy : {"uniform", "quantile"}, default "uniform"
        Equal-width or equal-count bins.

    Returns
    -------
    float
        The ECE; NaN (with a warning) for empty input.
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
    so small bins are left out.

    Parameters
    ----------
    y_true : array of 0/1
        Each candidate's label.
    prob : array of float
        Each candidate's predicted probability (salience), in [0, 1].
    n_bins : int, default 10
        Bins.
    strategy : {"uniform", "quantile"}, default "uniform"
        Equal-width or equal-count bins.
    min_bin_count : int
        The fewest candidates of a bin that counts.

    Returns
    -------
    float
        The MCE; NaN with a warning when no bin is large enough.
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
    """Mean squared difference between ``prob`` and the 0/1 label (lower is better).

    Parameters
    ----------
    y_true : array of 0/1
        Each candidate's label.
    prob : array of float
        Each candidate's predicted probability (salience), in [0, 1].

    Returns
    -------
    float
        The Brier score.
    """
    y, p = _check_prob(y_true, prob)
    if len(p) == 0:
        warnings.warn("no candidates: the Brier score is NaN", UndefinedMetricWarning, stacklevel=2)
        return float("nan")
    return float(np.mean((p - y) ** 2))


# --------------------------------------------------------------------------- a run in the store


@dataclass(frozen=True, eq=False)
class CalibrationReport:
    """Calibration of a run's scores before and after a fitted calibrator.

    The calibrator is fitted on the *training* verdicts of a verdict split and
    applied to the held-out verdicts only; ``summary`` has one row per
    evaluated score (``before``: the raw score on the held-out verdicts;
    ``after``: the calibrated one; ``after_in_sample``: only with the explicit
    ``allow_in_sample=True``) and columns ``verdicts, candidates, ece, mce,
    brier``; MCE is over bins of at least ``min_bin_count`` candidates.
    ``tables`` maps the same names to reliability tables (per-bin counts,
    Wilson intervals, ``enough``). ``fit_verdicts``/``eval_verdicts`` are the
    two disjoint verdict sets; ``truth`` what the lessons were judged by and
    ``correction`` how it was corrected (``none``, or ``ppi (...)``: see
    :func:`calibration_run`).

    Parameters
    ----------
    run_id : str
        The run.
    score : str
        The calibrated column.
    method : str or None
        The calibrator (``isotonic``, ``platt``; None: none fitted).
    summary : pandas.DataFrame
        One row per evaluated score (above).
    tables : dict of str to pandas.DataFrame
        The reliability tables by the same names.
    split : dict
        The verdict split.
    fit_verdicts, eval_verdicts : frozenset of str
        The two disjoint verdict sets.
    calibrator : object, optional
        The fitted calibrator.
    n_bins : int
        Bins.
    strategy : str
        ``uniform`` or ``quantile`` bins.
    min_bin_count : int
        The fewest candidates of a bin that counts in MCE.
    truth : str
        What the lessons were judged by.
    correction : str
        How the truth was corrected.
    """

    run_id: str
    score: str
    method: str | None
    summary: pd.DataFrame
    tables: dict[str, pd.DataFrame]
    split: dict[str, Any]
    fit_verdicts: frozenset[str]
    eval_verdicts: frozenset[str]
    calibrator: Any = field(default=None, repr=False)
    n_bins: int = 10
    strategy: str = "uniform"
    min_bin_count: int = DEFAULT_MIN_BIN_COUNT
    truth: str = "labels"
    correction: str = "none"

    def worsened(self) -> str | None:
        """The note when the calibrator makes a score worse on the held-out verdicts
        (ECE, MCE or Brier higher ``after`` than ``before``; each of them is lower
        when better), None when none is worse or there is no ``after``.

        Returns
        -------
        str or None
            E.g. ``"isotonic calibration makes ECE worse on the held-out verdicts
            (ECE 0.073 -> 0.075)"`` (the sample's good run).
        """
        if not {"before", "after"} <= set(self.summary.index):
            return None
        # As floats: a summary row mixes Int64 counts with the rates, so pandas gives it
        # as nullable Float64, whose missing MCE (no bin big enough) is pd.NA, not NaN.
        cols = ["ece", "mce", "brier"]
        before, after = (self.summary.loc[k, cols].astype(float) for k in ("before", "after"))
        worse = [f"{name} {before[col]:.3f} -> {after[col]:.3f}"
                 for col, name in (("ece", "ECE"), ("mce", "MCE"), ("brier", "Brier"))
                 if np.isfinite(before[col]) and np.isfinite(after[col])
                 and round(float(after[col]), 3) > round(float(before[col]), 3)]
        if not worse:
            return None
        better = "" if len(worse) < 3 else f": keep the raw {self.score}"
        return (f"{self.method} calibration makes {', '.join(w.split()[0] for w in worse)} "
                f"worse on the held-out verdicts ({'; '.join(worse)}){better}")

    @property
    def small_sample(self) -> str | None:
        """The one warning line when the held-out verdicts (those with a truth value) or,
        corrected, the people-answered verdicts number fewer than
        :data:`~truss_lab.evaluate._bootstrap.SMALL_SAMPLE_VERDICTS`
        (:func:`~truss_lab.evaluate._bootstrap.small_sample_line`); else None."""
        people = (self.split.get("people_verdicts") if self.correction != "none" else None)
        return small_sample_line({"people-answered": people,
                                  "held-out": len(self.eval_verdicts)})

    def __repr__(self) -> str:
        fixed = f", correction {self.correction!r}" if self.correction != "none" else ""
        lines = [f"CalibrationReport(run={self.run_id!r}, score={self.score!r}, "
                 f"method={self.method!r}, truth={self.truth!r}{fixed}, "
                 f"fit on {len(self.fit_verdicts)} verdicts, "
                 f"evaluated on {len(self.eval_verdicts)} held-out verdicts; "
                 f"MCE over bins of >= {self.min_bin_count} candidates)"]
        for name, r in self.summary.iterrows():
            lines.append(f"  {name}: ECE={r['ece']:.4f} MCE={r['mce']:.4f} "
                         f"Brier={r['brier']:.4f} ({int(r['candidates'])} candidates)")
        if self.worsened():
            lines.append(f"  note: {self.worsened()}")
        if self.small_sample:
            lines.append(f"  {self.small_sample}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        head = html.escape(repr(self).splitlines()[0])
        if self.small_sample:
            head += f"<br>{html.escape(self.small_sample)}"
        note = (f"<p class=\"note\"><b>note</b>: {html.escape(self.worsened() or '')}</p>"
                if self.worsened() else "")
        return (f"<div><p><b>CalibrationReport</b>: {head}</p>{note}"
                f"{self.summary.to_html(float_format=fmt_number)}</div>")


def _calib_row(y: np.ndarray, p: np.ndarray, verdicts: np.ndarray, n_bins: int,
               strategy: Any, min_bin_count: int) -> tuple[dict[str, float], pd.DataFrame]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        table = reliability_table(y, p, n_bins=n_bins, strategy=strategy,
                                  min_bin_count=min_bin_count)
        row = {
            "verdicts": float(len(pd.unique(verdicts))),
            "candidates": float(len(y)),
            "ece": expected_calibration_error(y, p, n_bins=n_bins, strategy=strategy),
            "mce": max_calibration_error(y, p, n_bins=n_bins, strategy=strategy,
                                         min_bin_count=min_bin_count),
            "brier": brier_score(y, p),
        }
    return row, table


def calibration_run(
    store: Store,
    run_id: str,
    *,
    truth: str | Truth = "labels",
    method: Literal["isotonic", "platt"] | None = "isotonic",
    n_bins: int = 10,
    strategy: Literal["uniform", "quantile"] = "uniform",
    min_bin_count: int = DEFAULT_MIN_BIN_COUNT,
    test_size: float | int = 0.3,
    random_state: Any = 0,
    n_boot: int = 1000,
    score: str = "salience",
    allow_in_sample: bool = False,
    **deprecated: Any,
) -> CalibrationReport:
    """Reliability, ECE, MCE and Brier of a run's score before and after calibration.

    Verdicts are split with :func:`~truss_lab.evaluate._choose.split_by_verdict`; the
    ``method`` calibrator is fitted on the training verdicts and scores the held-out
    verdicts only. Candidates without a score (NaN) or without a truth (unlabelled;
    tied under ``ties="exclude"``) are left out; the split is over every verdict the
    run processed, as :func:`choose_run_threshold` splits them with the same seed.

    Parameters
    ----------
    store : Store
        The database the run is in.
    run_id : str
        The run.
    truth : Truth or str
        What "useful" is (:class:`~truss_lab.evaluate._truth.Truth` or a spec): with
        references, matched a reference by its matcher (the annotated verdicts are
        split). Its correction counts the bins prediction-powered (:class:`_HeldOut`,
        ``n_boot`` replicates).
    method : {"isotonic", "platt"} or None
        The calibrator; None reports the raw score on the held-out verdicts.
    n_bins, strategy : int, {"uniform", "quantile"}
        The reliability bins.
    min_bin_count : int
        MCE leaves out bins of fewer candidates (reported in the result and each
        table's ``attrs``).
    test_size, random_state : float, int
        The verdict split.
    n_boot : int
        Bootstrap replicates of each bin's interval when corrected.
    score : str
        The candidates column scored.
    allow_in_sample : bool
        Add an ``after_in_sample`` row (the calibrator scoring its own fitting
        verdicts, optimistic by construction); never computed without this opt-in.
    **deprecated
        The loose truth keywords (``labels``, ``references``, ``matcher``,
        ``correct``, ``match_labels``, ``ties``), with a DeprecationWarning.

    Returns
    -------
    CalibrationReport
        The ``summary`` (ECE, MCE, Brier per scores row), the reliability ``tables``,
        the ``split``, the fitted ``calibrator``, the truth's name and the correction.

    See Also
    --------
    truss_lab.evaluate.reliability_table, truss_lab.evaluate.expected_calibration_error

    Notes
    -----
    Many parameters because the calibrator (method), its bins (n_bins, strategy,
    min_bin_count), the split (test_size, random_state) and the bootstrap (n_boot) are each
    one option of the report, as scikit-learn's calibration_curve and CalibratedClassifierCV
    take them; the deprecated loose truth keywords are one catch-all for one release.

    Examples
    --------
    >>> rep = tl.calibration_run(store, "good", truth=tl.Truth.labels())
    >>> list(rep.summary.index), rep.truth
    (['before', 'after'], 'labels')
    """
    t = Truth.resolve(store, truth_of(truth, deprecated, where="calibration_run"), [run_id])
    _check_method(method)
    whole_lessons(t.ties, "a calibrator fits 0/1 labels; it")
    fix = run_correction(store, t, t.judged(run_id, score=score), run_id, score=score)
    y, s, g, train_idx, test_idx = _split(t, run_id, score, test_size, random_state)
    fit_v = frozenset(str(v) for v in pd.unique(g[train_idx]))
    eval_v = frozenset(str(v) for v in pd.unique(g[test_idx]))
    rows: dict[str, dict[str, float]] = {}
    tables: dict[str, pd.DataFrame] = {}
    bins = {"n_bins": n_bins, "strategy": strategy, "min_bin_count": min_bin_count}
    held = [fix and _HeldOut(fix, v, n_boot=n_boot, random_state=random_state)
            for v in (eval_v, fit_v)]
    if np.all((s[test_idx] >= 0) & (s[test_idx] <= 1)):
        rows["before"], tables["before"] = _scored(held[0], y, s, g, test_idx,
                                                   lambda x, _v: x, **bins)
    else:  # a raw score outside [0, 1] is not a probability: only its calibration is judged
        rows["before"] = dict.fromkeys(["verdicts", "candidates", "ece", "mce", "brier"], np.nan)
    cal: Any = None
    if method is not None:
        cal = (IsotonicCalibrator() if method == "isotonic" else PlattCalibrator())
        cal.fit(s[train_idx], y[train_idx], verdict_hash=g[train_idx])
        # The calibrator checks the verdicts itself: scoring a fitting verdict raises.
        rows["after"], tables["after"] = _scored(
            held[0], y, s, g, test_idx, lambda x, v: cal.predict(x, verdict_hash=v), **bins)
        if allow_in_sample:
            rows["after_in_sample"], tables["after_in_sample"] = _scored(
                held[1], y, s, g, train_idx,
                lambda x, v: cal.predict(x, verdict_hash=v, allow_in_sample=True), **bins)
    summary = pd.DataFrame.from_dict(rows, orient="index").astype(
        {"verdicts": "Int64", "candidates": "Int64"}).rename_axis("scores")
    split = {"by": "verdict", "test_size": test_size, "random_state": random_state,
             "n_train_verdicts": len(fit_v), "n_test_verdicts": len(eval_v),
             "n_train_candidates": len(train_idx), "n_test_candidates": len(test_idx),
             "people_verdicts": correction_of(fix)["people_verdicts"]}
    return CalibrationReport(
        run_id=run_id, score=score, method=method, summary=summary, tables=tables,
        split=split, fit_verdicts=fit_v, eval_verdicts=eval_v, calibrator=cal,
        n_bins=n_bins, strategy=strategy, min_bin_count=min_bin_count, truth=t.name,
        correction=correction_label(correction_of(fix)),
    )


def _check_method(method: Any) -> None:
    if method not in ("isotonic", "platt", None):
        raise BadInputError(f"method must be 'isotonic', 'platt' or None, got {method!r}",
                            field="method")


def _split(t: Truth, run_id: str, score: str, test_size: Any,
           random_state: Any) -> tuple[np.ndarray, ...]:
    """``(y, s, verdicts, train positions, held-out positions)`` of the candidates with a
    truth and a score, split by verdict as the threshold choice splits them."""
    d, verdicts = _judged_scores(t, run_id, score)
    g = d["verdict_hash"].to_numpy(dtype=object)
    train_idx, test_idx = split_by_verdict(g, test_size=test_size, random_state=random_state,
                                           verdicts=verdicts)
    return d["y"].to_numpy(), d["s"].to_numpy(), g, train_idx, test_idx


def _judged_scores(t: Truth, run_id: str, score: str) -> tuple[pd.DataFrame, list]:
    """``(rows, verdicts)``: the lessons of ``run_id`` with a truth and a score
    (``verdict_hash, y, s``) and every verdict the split is over (the processed
    ones, as the threshold choice splits them; with references the annotated ones)."""
    if t.kind == "references":
        ref = t.judged(run_id, score=score)
        assert isinstance(ref, ReferenceTruth)
        # Lessons only (a miss has no score); "useful" = matched a reference.
        d = ref.lessons.assign(judged=True)
        verdicts = ref.verdicts
    else:
        rt = t.counted(run_id, score=score)
        d, verdicts = rt.candidates, rt.verdicts
    # Calibration needs a truth and a score: judged, scored candidates only.
    d = d[d["judged"].to_numpy(dtype=bool) & ~np.isnan(d["s"].to_numpy())].reset_index(
        drop=True)
    return d, verdicts


def _scored(held: _HeldOut | None, y: np.ndarray, s: np.ndarray, g: np.ndarray,
            idx: np.ndarray, p_of: Any, **bins: Any) -> tuple[dict[str, float], pd.DataFrame]:
    """The summary row and reliability table of the probabilities ``p_of(scores,
    verdicts)`` on the candidates ``idx``, or, corrected, on ``held``'s rows."""
    if held is not None:
        return held.row(p_of, **bins)
    return _calib_row(y[idx], p_of(s[idx], g[idx]), g[idx], bins["n_bins"], bins["strategy"],
                      bins["min_bin_count"])


class _HeldOut:
    """The held-out verdicts' rows of both truths, weighted as the prediction-powered
    sweep weighs them (:func:`calibration_run` with a correction): candidates with a
    score, the automated rows (``written``: the candidates themselves) and the people's
    rows of the verdicts they answered for.

    Each bin's count of useful lessons and of lessons with a truth are
    prediction-powered (the sweep's formula over the held-out verdicts, each answered
    verdict keeping its inclusion probability in the whole sample), ``observed_frequency``
    their ratio (clipped to [0, 1]) with ``frequency_low``/``frequency_high`` from
    ``n_boot`` bootstrap replicates that resample the held-out verdicts people answered
    for and the others each among themselves (not Wilson's); ECE and MCE read those
    frequencies, Brier is the corrected mean squared error. ``count`` and
    ``mean_predicted`` are the candidates' own (exact). The calibrator is still fitted
    on the automated truth of the training verdicts (isotonic and Platt fit 0/1 labels,
    and people answered for few of them): the correction judges it, it does not fit it.
    """

    def __init__(self, data: PPIData, held_out: frozenset[str], *, n_boot: int,
                 random_state: Any, confidence: float = 0.95) -> None:
        keep = pd.Index(sorted(held_out), dtype=object)
        code_a = keep.get_indexer(np.asarray(data.groups_auto, dtype=object))
        code_h = keep.get_indexer(np.asarray(data.groups_human, dtype=object))
        inv = np.zeros(len(keep))
        at = keep.get_indexer(np.asarray(data.sampled, dtype=object))
        inv[at[at >= 0]] = data.inv_pi[at >= 0]
        # Rows with a score and a truth (as the uncorrected calibration takes them); a
        # people's row without their truth weighs nothing.
        on_a = (code_a >= 0) & ~np.isnan(data.s_auto) & data.judged_auto.astype(bool)
        on_h = (code_h >= 0) & ~np.isnan(data.s_human)
        self.codes = np.concatenate([code_a[on_a], code_h[on_h]])
        self.s = np.concatenate([data.s_auto[on_a], data.s_human[on_h]])
        self.y = np.concatenate([data.y_auto[on_a], data.y_human[on_h]]).astype(np.float64)
        self.w = np.concatenate([1.0 - inv[code_a[on_a]],
                                 inv[code_h[on_h]] * data.judged_human[on_h]])
        self.written = np.arange(len(self.s)) < int(np.count_nonzero(on_a))
        self.verdicts = keep.to_numpy(dtype=object)[self.codes]
        self.n_verdicts, self.people = len(keep), inv > 0
        self.n_boot, self.confidence = n_boot, confidence
        self.rng_seed = random_state

    @blas_limited()
    def row(self, p_of: Any, n_bins: int, strategy: Any, min_bin_count: int
            ) -> tuple[dict[str, float], pd.DataFrame]:
        """The summary row and the reliability table of the probabilities ``p_of(s,
        verdicts)`` gives, on corrected counts."""
        p = np.asarray(p_of(self.s, self.verdicts), dtype=np.float64)
        k = self.written
        if strategy == "uniform":
            edges = np.linspace(0.0, 1.0, n_bins + 1)
        else:
            edges = (np.percentile(p[k], np.linspace(0, 1, n_bins + 1) * 100) if k.any()
                     else np.linspace(0.0, 1.0, n_bins + 1))
        ids = np.searchsorted(edges[1:-1], p)
        count = np.bincount(ids[k], minlength=n_bins)
        total = np.bincount(ids[k], weights=p[k], minlength=n_bins)
        # Per verdict and bin: the weighted lessons with a truth and the useful ones.
        flat = self.codes * n_bins + ids
        size = self.n_verdicts * n_bins
        h = np.stack([np.bincount(flat, weights=self.w, minlength=size),
                      np.bincount(flat, weights=self.w * self.y, minlength=size)]
                     ).reshape(2, self.n_verdicts, n_bins).transpose(1, 0, 2)
        judged, pos = h[:, 0, :].sum(axis=0), h[:, 1, :].sum(axis=0)
        with np.errstate(divide="ignore", invalid="ignore"):
            mean_pred = np.where(count > 0, total / count, np.nan)
            freq = np.where((count > 0) & (judged > 0), np.clip(pos / judged, 0, 1), np.nan)
        strata = [np.flatnonzero(self.people), np.flatnonzero(~self.people)]
        reps = []
        for wts in draw_weights(stream(self.rng_seed, "bootstrap"), self.n_boot, strata,
                                self.n_verdicts):
            j = wts.astype(np.float64) @ h[:, 0, :]
            q = wts.astype(np.float64) @ h[:, 1, :]
            with np.errstate(divide="ignore", invalid="ignore"):
                reps.append(np.where(j > 0, np.clip(q / j, 0, 1), np.nan))
        low, high = percentile_interval(np.concatenate(reps), self.confidence)
        empty = count == 0
        table = pd.DataFrame({
            "bin": np.arange(n_bins), "lower": edges[:-1], "upper": edges[1:],
            "count": count.astype(np.int64), "n_positive": pos, "mean_predicted": mean_pred,
            "observed_frequency": freq, "frequency_low": np.where(empty, np.nan, low),
            "frequency_high": np.where(empty, np.nan, high),
            "enough": count >= min_bin_count})
        table.attrs.update(min_bin_count=min_bin_count, confidence=float(self.confidence))
        n = count.sum()
        full = table[table["count"] > 0]
        gap = (full["observed_frequency"] - full["mean_predicted"]).abs()
        big = table["enough"] & (table["count"] > 0)
        ww = self.w
        with np.errstate(divide="ignore", invalid="ignore"):
            brier = float(np.sum(ww * (p - self.y) ** 2) / np.sum(ww)) if len(p) else np.nan
        summary = {
            "verdicts": float(len(pd.unique(self.verdicts[k]))), "candidates": float(n),
            "ece": float((full["count"] / n * gap).sum()) if n else float("nan"),
            "mce": float(gap[big[table["count"] > 0]].max()) if big.any() else float("nan"),
            "brier": max(brier, 0.0),
        }
        return summary, table
