"""Evaluation of runs over the store: label coverage, sweep, threshold choice,
calibration and comparison.

The maths lives in pure modules (:mod:`truss_lab.evaluate._sweep`, ``_choose``,
``_calibration``, ``_bootstrap``, ``_compare``); this module only takes a run's
labelled candidates from :mod:`truss_lab.evaluate._truth` and hands arrays to
them. Text and plots of the results are the faces' job
(:mod:`truss_lab.faces._text`, :mod:`truss_lab.faces._display`).
"""

from __future__ import annotations

import html
import warnings
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..core._errors import BadInputError
from ..score._calibrators import IsotonicCalibrator, PlattCalibrator
from ..store._runs import run_info
from ..store._store import Store
from ._agreement import annotator_agreement, fleiss_agreement, label_coverage
from ._bootstrap import BootstrapResult, bootstrap_metrics
from ._calibration import (
    DEFAULT_MIN_BIN_COUNT,
    brier_score,
    expected_calibration_error,
    max_calibration_error,
    reliability_table,
)
from ._choose import ThresholdChoice, choose_threshold, split_by_verdict
from ._compare import ComparisonResult, compare_extractors
from ._objective import DEFAULT_OBJECTIVE, Objective, parse_objective
from ._references import check_truth, reference_sweep, reference_truth, truth_rows
from ._run_truth import DEFAULT_TIES, RunTruth, labels_truth, whole_lessons
from ._sweep import UndefinedMetricWarning, sweep
from ._transfer import DEFAULT_TRANSFER, transfer_report
from ._truth import run_labels, scored_candidates

__all__ = [
    "CalibrationReport",
    "LabelReport",
    "bootstrap_run",
    "calibration_run",
    "choose_run_threshold",
    "compare_runs",
    "label_report",
    "sweep_run",
]


# --------------------------------------------------------------------------- labels


@dataclass(frozen=True, eq=False)
class LabelReport:
    """Gold-label coverage of a run's candidates and annotator agreement.

    ``coverage`` is :func:`~truss_lab.evaluate._agreement.label_coverage` (one row per
    extractor: n_candidates, n_labelled, n_ties, n_unlabelled, n_orphan_labels,
    coverage); ``agreement`` is :func:`~truss_lab.evaluate._agreement.annotator_agreement`
    (one row per annotator pair: n_common, raw_agreement, kappa); ``transfer`` is
    :func:`~truss_lab.evaluate._transfer.transfer_report` (per extractor: direct
    and transferred labels, and how often they agree where both exist); ``fleiss``
    is :func:`~truss_lab.evaluate._agreement.fleiss_agreement` (kappa over
    every annotator at once, on the candidates labelled by the most common
    number of annotators), None when no candidate has two annotations.
    """

    run_id: str | None
    coverage: pd.DataFrame
    agreement: pd.DataFrame
    n_label_rows: int
    transfer: pd.DataFrame = field(default_factory=pd.DataFrame)
    fleiss: dict[str, Any] | None = None

    @property
    def n_ties(self) -> int:
        """Candidates annotated but tied (no majority label)."""
        return int(self.coverage["n_ties"].sum()) if len(self.coverage) else 0

    def __repr__(self) -> str:
        lines = [f"LabelReport(run={self.run_id!r}, {self.n_label_rows} label rows, "
                 f"{self.n_ties} ties)"]
        for r in self.coverage.itertuples():
            lines.append(f"  {r.extractor}: {r.n_labelled}/{r.n_candidates} labelled "
                         f"({r.coverage:.1%}), {r.n_ties} ties, {r.n_unlabelled} unlabelled, "
                         f"{r.n_orphan_labels} orphan labels")
        for r in self.agreement.itertuples():
            lines.append(f"  kappa({r.annotator_a}, {r.annotator_b}) = {r.kappa:.3f} "
                         f"on {r.n_common} candidates (raw agreement {r.raw_agreement:.3f})")
        for r in self.transfer.itertuples():
            if r.n_transferred or r.n_both:
                both = (f"; {r.n_both} with both, agreeing {r.agreement:.1%}" if r.n_both
                        else "")
                lines.append(f"  {r.extractor}: {r.n_direct} direct labels, {r.n_transferred} "
                             f"transferred{both}")
        if self.fleiss is not None:
            lines.append(self._fleiss_line())
        return "\n".join(lines)

    def _fleiss_line(self) -> str:
        f = self.fleiss or {}
        return (f"  Fleiss' kappa = {f['kappa']:.3f} on {f['n_items']} of {f['n_candidates']} "
                f"labelled candidates ({f['raters']} annotations each)")

    def _repr_html_(self) -> str:
        head = html.escape(f"run {self.run_id}: {self.n_label_rows} label rows, "
                           f"{self.n_ties} ties"
                           + (f"; {self._fleiss_line().strip()}" if self.fleiss else ""))
        return (f"<div><p><b>LabelReport</b>: {head}</p>"
                f"{self.coverage.to_html(index=False, float_format=_fmt)}"
                f"{self.agreement.to_html(index=False, float_format=_fmt)}"
                f"{self.transfer.to_html(index=False, float_format=_fmt)}</div>")


def _fmt(v: float) -> str:
    return f"{v:.4g}"


def label_report(
    store: Store, run_id: str | None = None, labels: Any = None, *, valid_only: bool = True,
    transfer: str | float | None = DEFAULT_TRANSFER,
) -> LabelReport:
    """Coverage of the run's candidates by gold labels (ties counted), Cohen's kappa
    per annotator pair, Fleiss' kappa over all annotators (when a candidate has
    two annotations or more), and direct vs transferred labels (``transfer``, as in
    :func:`~truss_lab.evaluate._truth.labelled_candidates`). Without ``run_id``:
    every candidate of every run, all labels."""
    lab = run_labels(store, labels)
    where, params = ("run_id = ?", [run_id]) if run_id is not None else ("TRUE", [])
    if run_id is not None:
        run_info(store, run_id)
    cands = store.sql(
        "SELECT DISTINCT verdict_hash, extractor_id AS extractor, lesson_index FROM candidates "
        f"WHERE {where}" + (" AND valid" if valid_only else ""), params,
    ).df()
    if run_id is not None and len(lab):
        extractors = set(cands["extractor"]) or {
            str(run_info(store, run_id)["extractor_id"])}
        lab = lab[lab["extractor"].astype(str).isin(extractors)]
    if len(lab):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            coverage = label_coverage(cands, lab)
            agreement = annotator_agreement(lab)
            fleiss = fleiss_agreement(lab)
    else:
        fleiss = None
        coverage = pd.DataFrame(
            {"extractor": sorted(set(cands["extractor"]))}
        )
        coverage["n_candidates"] = [int((cands["extractor"] == e).sum())
                                    for e in coverage["extractor"]]
        for c in ("n_labelled", "n_ties", "n_orphan_labels"):
            coverage[c] = 0
        coverage["n_unlabelled"] = coverage["n_candidates"]
        coverage["coverage"] = 0.0
        agreement = pd.DataFrame(columns=["annotator_a", "annotator_b", "n_common",
                                          "raw_agreement", "kappa"])
    moved = transfer_report(store, run_id, run_labels(store, labels), transfer=transfer,
                            valid_only=valid_only)
    return LabelReport(run_id=run_id, coverage=coverage, agreement=agreement,
                       n_label_rows=len(lab), transfer=moved, fleiss=fleiss)


# --------------------------------------------------------------------------- sweep / choice


def sweep_run(
    store: Store,
    run_id: str,
    *,
    labels: Any = None,
    score: str = "salience",
    thresholds: Any = None,
    ties: str = DEFAULT_TIES,
    truth: str = "labels",
    references: Any = None, matcher: Any = None,
) -> pd.DataFrame:
    """:func:`~truss_lab.evaluate._sweep.sweep` of one run with the counts of
    :mod:`~truss_lab.evaluate._run_truth`: ``kept`` is what the gate would write
    (labelled or not), ``kept_per_verdict`` divides by every processed verdict,
    recall counts useful lessons the parser dropped as misses. ``score`` names
    the candidates column (``salience``, ``score``). ``df.attrs["counts"]`` holds
    the candidates unlabelled, tied and dropped and the ``ties`` policy.
    ``truth="references"`` judges the run by reference lessons instead
    (:func:`~truss_lab.evaluate._references.reference_sweep`, same columns)."""
    if check_truth(truth) == "references":
        ref = reference_truth(store, run_id, references=references, score=score,
                              matcher=matcher)
        df = reference_sweep(ref, thresholds=thresholds)
        df.attrs["counts"] = dict(ref.counts)
        return df
    rt = labels_truth(store, run_id, labels=labels, score=score, ties=ties)
    _require_truth(rt)
    df = rt.in_lessons(sweep(**rt.sweep_inputs(), thresholds=thresholds))
    df.attrs["counts"] = dict(rt.counts)
    return df


def bootstrap_run(
    store: Store,
    run_id: str,
    *,
    thresholds: Any = None,
    labels: Any = None,
    score: str = "salience",
    n_boot: int = 1000,
    confidence: float = 0.95,
    random_state: Any = 0,
    objective: str | Objective = DEFAULT_OBJECTIVE,
) -> BootstrapResult:
    """:func:`~truss_lab.evaluate._bootstrap.bootstrap_metrics` of one run's labelled
    candidates (:func:`~truss_lab.evaluate._truth.scored_candidates`), resampling
    verdicts, on ``thresholds`` (default: 0, 0.01, ..., 1). Its ``table`` is the
    ``intervals`` of :class:`~truss_lab.faces._display.SweepDisplay`. Only labelled
    valid candidates enter, so its kept per verdict and recall are over those (the
    sweep of :func:`sweep_run` also counts unlabelled, dropped and empty verdicts)."""
    d = scored_candidates(store, run_id, labels=labels, score=score)
    grid = np.round(np.linspace(0.0, 1.0, 101), 2) if thresholds is None else thresholds
    return bootstrap_metrics(
        d["y"].to_numpy(), d["s"].to_numpy(), d["verdict_hash"].to_numpy(dtype=object),
        thresholds=grid, n_boot=n_boot, confidence=confidence, random_state=random_state,
        objective=parse_objective(objective),
    )


def _require_truth(truth: RunTruth) -> None:
    if not truth.candidates["judged"].any():
        raise BadInputError(
            f"run {truth.run_id!r} has no labelled candidate to evaluate "
            "(load gold labels with `truss-lab ingest labels`, or pass labels=)",
            field="labels",
        )


#: Folds of the cross-validated choice when ``cv="auto"`` (the CLI's and notebook 02's
#: default), used once every fold can hold :data:`MIN_FOLD_VERDICTS` judged verdicts.
AUTO_FOLDS = 5
MIN_FOLD_VERDICTS = 10


def auto_cv(truth: RunTruth) -> int | None:
    """:data:`AUTO_FOLDS` when the run has at least ``AUTO_FOLDS * MIN_FOLD_VERDICTS``
    verdicts with a judged candidate, else None (one split)."""
    c = truth.candidates
    n = c.loc[c["judged"].to_numpy(dtype=bool), "verdict_hash"].nunique()
    return AUTO_FOLDS if n >= AUTO_FOLDS * MIN_FOLD_VERDICTS else None


def choose_run_threshold(
    store: Store,
    run_id: str,
    *,
    objective: str | Objective = DEFAULT_OBJECTIVE,
    labels: Any = None,
    score: str = "salience",
    test_size: float | int = 0.3,
    cv: int | Literal["auto"] | None = None,
    cv_repeats: int = 1,
    random_state: Any = 0,
    n_boot: int = 1000,
    confidence: float = 0.95,
    ties: str = DEFAULT_TIES,
    truth: str = "labels",
    references: Any = None, matcher: Any = None,
) -> ThresholdChoice:
    """:func:`~truss_lab.evaluate._choose.choose_threshold` on one run, counted as
    :func:`sweep_run` counts (:mod:`~truss_lab.evaluate._run_truth`: kept is what
    the gate would write, every processed verdict is split and counts in kept
    per verdict). One split (``test_size``) by default; ``cv=k`` cross-validates
    over k folds of verdicts (``cv_repeats`` times), ``cv="auto"`` does so with
    :data:`AUTO_FOLDS` folds when :func:`auto_cv` says the data allow it.
    ``objective`` is an :class:`Objective` or a spec for :func:`parse_objective`
    (``"precision:0.8"``). ``split["counts"]`` holds the truth counts.
    ``truth="references"`` judges by reference lessons (misses count in recall;
    the annotated verdicts the run processed are split)."""
    obj = parse_objective(objective)
    whole_lessons(ties, "the threshold choice")
    if check_truth(truth) == "references":
        d, verdicts = truth_rows(store, run_id, truth=truth, references=references,
                                 score=score, matcher=matcher)
        if cv == "auto":
            n = len(verdicts or [])
            cv = AUTO_FOLDS if n >= AUTO_FOLDS * MIN_FOLD_VERDICTS else None
        return choose_threshold(
            d["y"].to_numpy(), d["s"].to_numpy(), d["verdict_hash"].to_numpy(), objective=obj,
            test_size=test_size, cv=cv, cv_repeats=cv_repeats, random_state=random_state,
            n_boot=n_boot, confidence=confidence,
        )
    truth_ = labels_truth(store, run_id, labels=labels, score=score, ties=ties)
    _require_truth(truth_)
    if cv == "auto":
        cv = auto_cv(truth_)
    inputs = truth_.sweep_inputs()
    choice = choose_threshold(
        inputs["y_true"], inputs["salience"], inputs["groups"], objective=obj,
        judged=inputs["judged"], verdicts=truth_.verdicts, test_size=test_size, cv=cv,
        cv_repeats=cv_repeats, random_state=random_state, n_boot=n_boot, confidence=confidence,
    )
    choice.split["counts"] = dict(truth_.counts)
    return choice


# --------------------------------------------------------------------------- calibration


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
    two disjoint verdict sets.
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

    def __repr__(self) -> str:
        lines = [f"CalibrationReport(run={self.run_id!r}, score={self.score!r}, "
                 f"method={self.method!r}, fit on {len(self.fit_verdicts)} verdicts, "
                 f"evaluated on {len(self.eval_verdicts)} held-out verdicts; "
                 f"MCE over bins of >= {self.min_bin_count} candidates)"]
        for name, r in self.summary.iterrows():
            lines.append(f"  {name}: ECE={r['ece']:.4f} MCE={r['mce']:.4f} "
                         f"Brier={r['brier']:.4f} ({int(r['candidates'])} candidates)")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        head = html.escape(repr(self).splitlines()[0])
        return (f"<div><p><b>CalibrationReport</b>: {head}</p>"
                f"{self.summary.to_html(float_format=_fmt)}</div>")


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
    the result and each table's ``attrs``).
    """
    if method not in ("isotonic", "platt", None):
        raise BadInputError(f"method must be 'isotonic', 'platt' or None, got {method!r}",
                            field="method")
    whole_lessons(ties, "a calibrator fits 0/1 labels; it")
    truth = labels_truth(store, run_id, labels=labels, score=score, ties=ties)
    d = truth.candidates
    # Calibration needs a truth and a score: judged, scored candidates only. The
    # split is over every processed verdict, as the threshold choice splits them.
    d = d[d["judged"].to_numpy(dtype=bool) & ~np.isnan(d["s"].to_numpy())].reset_index(
        drop=True)
    g = d["verdict_hash"].to_numpy(dtype=object)
    y, s = d["y"].to_numpy(), d["s"].to_numpy()
    train_idx, test_idx = split_by_verdict(g, test_size=test_size, random_state=random_state,
                                           verdicts=truth.verdicts)
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
        n_bins=n_bins, strategy=strategy, min_bin_count=min_bin_count,
    )


# --------------------------------------------------------------------------- comparison


def compare_runs(
    store: Store,
    run_a: str,
    run_b: str,
    *,
    threshold: Any = 0.7,
    threshold_b: Any = None,
    labels: Any = None,
    score: str = "salience",
    n_boot: int = 1000,
    confidence: float = 0.95,
    random_state: Any = 0,
    ties: str = DEFAULT_TIES,
    truth: str = "labels",
    references: Any = None, matcher: Any = None,
) -> ComparisonResult:
    """:func:`~truss_lab.evaluate._compare.compare_extractors` of two runs, counted as in
    :mod:`~truss_lab.evaluate._run_truth` (kept = what the gate would write). The
    paired analysis uses the verdicts both runs processed (``run_verdicts``);
    verdicts present in one run only are listed in the result (``only_in_a`` /
    ``only_in_b``), never dropped silently. ``truth="references"`` judges both
    runs by reference lessons, on the annotated verdicts both processed: no
    labels needed."""
    whole_lessons(ties, "the paired comparison")
    frames, processed = [], []
    for rid in (run_a, run_b):
        if check_truth(truth) == "references":
            d, verdicts = truth_rows(store, rid, truth=truth, references=references,
                                     score=score, matcher=matcher)
            frames.append(pd.DataFrame({"verdict_hash": d["verdict_hash"].astype(str),
                                        "salience": d["s"], "label": d["y"]}))
            processed.append(verdicts)
            continue
        rt = labels_truth(store, rid, labels=labels, score=score, ties=ties)
        _require_truth(rt)
        d = rt.candidates
        frames.append(pd.DataFrame({"verdict_hash": d["verdict_hash"], "salience": d["s"],
                                    "label": d["y"], "judged": d["judged"]}))
        # Every verdict the run processed, so one where the extractor proposed
        # nothing counts as "kept nothing" rather than "absent from the run".
        processed.append(rt.verdicts)
    return compare_extractors(
        frames[0], frames[1], threshold=threshold, threshold_b=threshold_b, n_boot=n_boot,
        confidence=confidence, random_state=random_state, names=(run_a, run_b),
        verdicts_a=processed[0], verdicts_b=processed[1],
    )
