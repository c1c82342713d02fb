"""Calibration of a run's scores before and after a calibrator fitted on training
verdicts: :func:`calibration_run`."""

from __future__ import annotations

import html
import warnings
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..core._errors import BadInputError
from ..score._calibrators import IsotonicCalibrator, PlattCalibrator
from ..store._store import Store
from ._calibration import (
    DEFAULT_MIN_BIN_COUNT,
    brier_score,
    expected_calibration_error,
    max_calibration_error,
    reliability_table,
)
from ._choose import split_by_verdict
from ._label_report import fmt_number
from ._sweep import UndefinedMetricWarning
from ._truth import DEFAULT_TIES, ReferenceTruth, Truth, whole_lessons

__all__ = ["CalibrationReport", "calibration_run"]

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
    two disjoint verdict sets; ``truth`` what the lessons were judged by.
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

    def __repr__(self) -> str:
        lines = [f"CalibrationReport(run={self.run_id!r}, score={self.score!r}, "
                 f"method={self.method!r}, truth={self.truth!r}, "
                 f"fit on {len(self.fit_verdicts)} verdicts, "
                 f"evaluated on {len(self.eval_verdicts)} held-out verdicts; "
                 f"MCE over bins of >= {self.min_bin_count} candidates)"]
        for name, r in self.summary.iterrows():
            lines.append(f"  {name}: ECE={r['ece']:.4f} MCE={r['mce']:.4f} "
                         f"Brier={r['brier']:.4f} ({int(r['candidates'])} candidates)")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        head = html.escape(repr(self).splitlines()[0])
        return (f"<div><p><b>CalibrationReport</b>: {head}</p>"
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
    method: Literal["isotonic", "platt"] | None = "isotonic",
    n_bins: int = 10,
    strategy: Literal["uniform", "quantile"] = "uniform",
    test_size: float | int = 0.3,
    random_state: Any = 0,
    labels: Any = None,
    score: str = "salience",
    allow_in_sample: bool = False,
    ties: str = DEFAULT_TIES,
    min_bin_count: int = DEFAULT_MIN_BIN_COUNT,
    truth: str | Truth = "labels",
    references: Any = None,
) -> CalibrationReport:
    """Reliability, ECE, MCE and Brier of a run's score before and after calibration.

    Verdicts are split with :func:`~truss_lab.evaluate._choose.split_by_verdict`; the
    ``method`` calibrator (isotonic or Platt) is fitted on the training
    verdicts and scores the held-out verdicts only. ``method=None`` reports the
    raw score on the held-out verdicts. ``allow_in_sample=True`` adds an
    ``after_in_sample`` row (the calibrator scoring its own fitting verdicts,
    optimistic by construction) — never computed without that opt-in.
    Candidates without a score (NaN) or without a truth (unlabelled; tied under
    ``ties="exclude"``) are left out; the split is over every verdict the run
    processed, as :func:`choose_run_threshold` splits them with the same seed.
    MCE leaves out bins of fewer than ``min_bin_count`` candidates (reported in
    the result and each table's ``attrs``). ``truth`` (labels, references,
    judge:NAME) says what "useful" is: with references a lesson is useful when it
    matched a reference, and the annotated verdicts the run processed are split.
    """
    if method not in ("isotonic", "platt", None):
        raise BadInputError(f"method must be 'isotonic', 'platt' or None, got {method!r}",
                            field="method")
    whole_lessons(ties, "a calibrator fits 0/1 labels; it")
    t = Truth.resolve(store, truth, [run_id], labels=labels, references=references)
    if t.kind == "references":
        ref = t.judged(run_id, score=score)
        assert isinstance(ref, ReferenceTruth)
        # Lessons only (a miss has no score); "useful" = matched a reference.
        d = ref.lessons.assign(judged=True)
        verdicts = ref.verdicts
    else:
        rt = t.counted(run_id, score=score, ties=ties)
        d, verdicts = rt.candidates, rt.verdicts
    # Calibration needs a truth and a score: judged, scored candidates only. The
    # split is over every processed verdict, as the threshold choice splits them.
    d = d[d["judged"].to_numpy(dtype=bool) & ~np.isnan(d["s"].to_numpy())].reset_index(
        drop=True)
    g = d["verdict_hash"].to_numpy(dtype=object)
    y, s = d["y"].to_numpy(), d["s"].to_numpy()
    train_idx, test_idx = split_by_verdict(g, test_size=test_size, random_state=random_state,
                                           verdicts=verdicts)
    fit_v = frozenset(str(v) for v in pd.unique(g[train_idx]))
    eval_v = frozenset(str(v) for v in pd.unique(g[test_idx]))
    rows: dict[str, dict[str, float]] = {}
    tables: dict[str, pd.DataFrame] = {}
    s_te = s[test_idx]
    if np.all((s_te >= 0) & (s_te <= 1)):
        rows["before"], tables["before"] = _calib_row(y[test_idx], s_te, g[test_idx], n_bins,
                                                      strategy, min_bin_count)
    else:  # a raw score outside [0, 1] is not a probability: only its calibration is judged
        rows["before"] = dict.fromkeys(["verdicts", "candidates", "ece", "mce", "brier"], np.nan)
    cal: Any = None
    if method is not None:
        cal = (IsotonicCalibrator() if method == "isotonic" else PlattCalibrator())
        cal.fit(s[train_idx], y[train_idx], verdict_hash=g[train_idx])
        # The calibrator checks the verdicts itself: scoring a fitting verdict raises.
        p = cal.predict(s_te, verdict_hash=g[test_idx])
        rows["after"], tables["after"] = _calib_row(y[test_idx], p, g[test_idx], n_bins,
                                                    strategy, min_bin_count)
        if allow_in_sample:
            p_in = cal.predict(s[train_idx], verdict_hash=g[train_idx], allow_in_sample=True)
            rows["after_in_sample"], tables["after_in_sample"] = _calib_row(
                y[train_idx], p_in, g[train_idx], n_bins, strategy, min_bin_count)
    summary = pd.DataFrame.from_dict(rows, orient="index")
    summary = summary.astype({"verdicts": "Int64", "candidates": "Int64"})
    summary.index.name = "scores"
    split = {"by": "verdict", "test_size": test_size, "random_state": random_state,
             "n_train_verdicts": len(fit_v), "n_test_verdicts": len(eval_v),
             "n_train_candidates": len(train_idx), "n_test_candidates": len(test_idx)}
    return CalibrationReport(
        run_id=run_id, score=score, method=method, summary=summary, tables=tables,
        split=split, fit_verdicts=fit_v, eval_verdicts=eval_v, calibrator=cal,
        n_bins=n_bins, strategy=strategy, min_bin_count=min_bin_count, truth=t.name,
    )
