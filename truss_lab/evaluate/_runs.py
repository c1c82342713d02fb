"""Evaluation of runs over the store: sweep, bands, threshold choice and comparison.

The maths lives in pure modules (:mod:`truss_lab.evaluate._sweep`, ``_choose``,
``_bootstrap``, ``_compare``); this module only takes a run judged by its truth
(:meth:`~truss_lab.evaluate._truth.Truth.judged`) and hands arrays to them.
``truth=`` is a spec (labels, references, judge:NAME, auto) resolved here by
:meth:`~truss_lab.evaluate._truth.Truth.resolve`, or a :class:`Truth` already
resolved, which every call of one command shares: its rows are read and each run
matched once. Every function here has the same outputs whatever the truth.
Label coverage is :mod:`~truss_lab.evaluate._label_report`, calibration
:mod:`~truss_lab.evaluate._calibration` (both re-exported here, where they
used to live). Text and plots of the results are the faces' job
(:mod:`truss_lab.faces._display`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..core._errors import BadInputError
from ..core._threshold import DEFAULT_MIN_SALIENCE
from ..store._runs import run_info
from ..store._store import Store
from ._bootstrap import BOOT_METRICS, BootstrapResult, bootstrap_metrics
from ._calibration import CalibrationReport, calibration_run
from ._choose import ThresholdChoice, choose_threshold, choose_threshold_ppi
from ._compare import ComparisonResult, compare_extractors, compare_extractors_ppi
from ._correction import run_correction, runs_correction, runs_correction_label, runs_mode
from ._defaults import DEFAULT_CV, DEFAULT_OBJECTIVE
from ._label_report import LabelReport, label_report
from ._objective import Objective, parse_objective
from ._ppi import (
    PPIData,
    correction_label,
    correction_of,
    ppi_bootstrap,
    ppi_sweep,
)
from ._sweep import sweep
from ._truth import (
    ReferenceTruth,
    RunTruth,
    Truth,
    reference_sweep,
    truth_of,
    whole_lessons,
)

__all__ = [
    "BAND_THRESHOLDS",
    "DEFAULT_TEST_SIZE",
    "CalibrationReport",
    "LabelReport",
    "RunEvaluation",
    "bootstrap_judged",
    "bootstrap_run",
    "calibration_run",
    "choose_judged",
    "choose_run_threshold",
    "compare_runs",
    "evaluate_run",
    "label_report",
    "rank_runs",
    "run_correction",
    "sweep_judged",
    "sweep_run",
]


# --------------------------------------------------------------------------- sweep / choice


def sweep_run(
    store: Store,
    run_id: str,
    *,
    truth: str | Truth = "labels",
    score: str = "salience",
    thresholds: Any = None,
    **deprecated: Any,
) -> pd.DataFrame:
    """The sweep of one run judged by ``truth``: counts and metrics at every threshold.

    Parameters
    ----------
    store : Store
        The database the run is in.
    run_id : str
        The run.
    truth : Truth or str
        How the run is judged (:class:`~truss_lab.evaluate._truth.Truth`: its source,
        matcher, correction and the people's rows), or a spec for
        :meth:`~truss_lab.evaluate._truth.Truth.parse` (``labels``, ``references``,
        ``judge:NAME``, ``auto``). Resolved here unless already resolved.
    score : str
        The candidates column to threshold (``salience``, ``score``).
    thresholds : array-like, optional
        Where to evaluate (default: every distinct score).
    **deprecated
        The loose keywords ``labels``, ``references``, ``matcher``, ``correct``,
        ``match_labels``, ``ties``: still taken for one release, with a
        DeprecationWarning; they are parts of ``truth`` now.

    Returns
    -------
    DataFrame
        :func:`~truss_lab.evaluate._sweep.sweep`'s columns. With labels (or a judge)
        ``kept`` is what the gate would write (labelled or not), ``kept_per_verdict``
        divides by every processed verdict and a useful lesson the parser dropped is a
        miss; with references the rows of
        :func:`~truss_lab.evaluate._truth.reference_sweep`. With a correction
        (``truth.correct``) tp, fp, fn and the metrics are prediction-powered.
        ``attrs``: ``counts`` (unlabelled, tied, dropped, the ties policy), ``truth``
        (its resolved name), ``correction`` (which, and how many verdicts people
        answered for).

    Raises
    ------
    BadInputError
        An unknown run or truth, a run with nothing judged, ``correct="ppi"`` without
        the people's answers.

    See Also
    --------
    evaluate_run : the sweep, choice and bands of one run at once.

    Examples
    --------
    >>> df = tl.sweep_run(store, "good", truth=tl.Truth.references(correct="ppi"),
    ...                   thresholds=[0.5, 0.7])
    >>> df.attrs["truth"], df.attrs["correction"]["correction"], len(df)
    ('references', 'ppi', 2)
    """
    t = Truth.resolve(store, truth_of(truth, deprecated, where="sweep_run"), [run_id])
    jr = t.judged(run_id, score=score)
    ppi = run_correction(store, t, jr, run_id, score=score)
    df = sweep_judged(jr, thresholds, correction=ppi)
    df.attrs["truth"] = t.name
    return df


def sweep_judged(judged: RunTruth | ReferenceTruth, thresholds: Any = None,
                 correction: PPIData | None = None) -> pd.DataFrame:
    """The sweep of a run already judged (:meth:`~truss_lab.evaluate._truth.Truth.judged`),
    without the store: what :func:`sweep_run` returns, and what the
    :class:`~truss_lab.faces._widgets.ThresholdExplorer` recomputes on
    every move of its slider. With a ``correction`` (:func:`~truss_lab.evaluate._ppi.
    run_correction`) tp, fp, fn and the metrics are prediction-powered
    (:func:`~truss_lab.evaluate._ppi.ppi_sweep`, same columns)."""
    if correction is not None:
        df = ppi_sweep(correction, thresholds=thresholds)
        if isinstance(judged, ReferenceTruth):
            with np.errstate(divide="ignore", invalid="ignore"):
                df["write_rate"] = df["kept"].to_numpy() / judged.n_lessons
        else:
            df = judged.in_lessons(df)
    elif isinstance(judged, ReferenceTruth):
        df = reference_sweep(judged, thresholds=thresholds)
    else:
        df = judged.in_lessons(sweep(**judged.sweep_inputs(), thresholds=thresholds))
    df.attrs["counts"] = dict(judged.counts)
    df.attrs["correction"] = correction_of(correction)
    df.attrs["labelled_verdicts"] = labelled_verdicts(judged)
    return df


def bootstrap_run(
    store: Store,
    run_id: str,
    *,
    truth: str | Truth = "labels",
    thresholds: Any = None,
    score: str = "salience",
    n_boot: int = 1000,
    confidence: float = 0.95,
    random_state: Any = 0,
    objective: str | Objective = DEFAULT_OBJECTIVE,
    **deprecated: Any,
) -> BootstrapResult:
    """Verdict-bootstrap intervals of one run's metrics, judged as :func:`sweep_run` judges it.

    Parameters
    ----------
    store : Store
        The database the run is in.
    run_id : str
        The run.
    truth : Truth or str
        How the run is judged (:class:`~truss_lab.evaluate._truth.Truth`), as
        :func:`sweep_run` takes it.
    thresholds : array-like, optional
        Where to give intervals (default :data:`BAND_THRESHOLDS`: 0, 0.01, ..., 1).
    score : str
        The candidates column to threshold.
    n_boot, confidence, random_state
        Replicates, interval level and seed of the verdict resampling.
    objective : Objective or str
        What the procedure intervals re-choose.
    **deprecated
        The loose truth keywords (:func:`sweep_run`), with a DeprecationWarning.

    Returns
    -------
    BootstrapResult
        Point estimates equal to :func:`sweep_run`'s at every threshold, for every
        truth (verdicts resampled, those without a candidate too; with references the
        misses included). Its ``table`` is the ``intervals`` of
        :class:`~truss_lab.faces._display.SweepDisplay`. With a correction the intervals
        are :func:`~truss_lab.evaluate._ppi.ppi_bootstrap`'s (verdicts resampled in
        both sets).

    See Also
    --------
    sweep_run, evaluate_run
    """
    t = Truth.resolve(store, truth_of(truth, deprecated, where="bootstrap_run"), [run_id])
    jr = t.judged(run_id, score=score)
    fix = run_correction(store, t, jr, run_id, score=score)
    return bootstrap_judged(jr, fix, thresholds=thresholds, n_boot=n_boot,
                            confidence=confidence, random_state=random_state,
                            objective=objective)


def bootstrap_judged(jr: RunTruth | ReferenceTruth, fix: PPIData | None, *,
                     thresholds: Any = None, n_boot: int = 1000, confidence: float = 0.95,
                     random_state: Any = 0, objective: str | Objective = DEFAULT_OBJECTIVE,
                     ) -> BootstrapResult:
    """:func:`bootstrap_run` of a run already judged (``jr``) with its correction ``fix``
    (None: uncorrected): no store read; what a slice of a run is bootstrapped with."""
    grid = BAND_THRESHOLDS if thresholds is None else thresholds
    opts: dict[str, Any] = {"thresholds": grid, "n_boot": n_boot, "confidence": confidence,
                            "random_state": random_state,
                            "objective": parse_objective(objective)}
    if fix is not None:
        res = ppi_bootstrap(fix, **opts, proposed=(jr.rows["kind"] == "lesson").to_numpy()
                            if isinstance(jr, ReferenceTruth) else None)
        if isinstance(jr, RunTruth) and jr.count_scale != 1:  # ties="half": in half-lessons
            cols = ["kept_per_verdict", "kept_per_verdict_low", "kept_per_verdict_high"]
            res.table[cols] = res.table[cols] / jr.count_scale
        return res
    if isinstance(jr, ReferenceTruth):
        y, s, g = jr.arrays()
        return bootstrap_metrics(y, s, g, verdicts=jr.verdicts,
                                 proposed=(jr.rows["kind"] == "lesson").to_numpy(), **opts)
    inputs = jr.sweep_inputs()
    res = bootstrap_metrics(inputs["y_true"], inputs["salience"], inputs["groups"],
                            judged=inputs["judged"], verdicts=jr.verdicts, **opts)
    if jr.count_scale != 1:  # ties="half": counts in half-lessons, ratios unchanged
        cols = ["kept_per_verdict", "kept_per_verdict_low", "kept_per_verdict_high"]
        res.table[cols] = res.table[cols] / jr.count_scale
    return res


#: The thresholds of the sweep's bands (:func:`bootstrap_run`'s default grid).
BAND_THRESHOLDS = np.round(np.linspace(0.0, 1.0, 101), 2)

#: The share of verdicts held out by one split, when the choice is not cross-validated
#: (:data:`DEFAULT_CV`, every face's default, is in :mod:`._defaults`: the command
#: line reads it without numpy).
DEFAULT_TEST_SIZE = 0.3


#: Folds of the cross-validated choice when ``cv="auto"`` (the CLI's and notebook 02's
#: default), used once every fold can hold :data:`MIN_FOLD_VERDICTS` judged verdicts.
AUTO_FOLDS = 5
MIN_FOLD_VERDICTS = 10


def labelled_verdicts(truth: RunTruth | ReferenceTruth) -> int:
    """The verdicts of a judged run with a truth value on some candidate (a gold label, a
    judge's label; with references: the annotated verdicts): what its intervals rest on
    (:data:`~truss_lab.evaluate._bootstrap.SMALL_SAMPLE_VERDICTS`)."""
    if isinstance(truth, ReferenceTruth):
        return len(truth.verdicts)
    c = truth.candidates
    return int(c.loc[c["judged"].to_numpy(dtype=bool), "verdict_hash"].nunique())


def auto_cv(truth: RunTruth | ReferenceTruth) -> int | None:
    """:data:`AUTO_FOLDS` when the run has at least ``AUTO_FOLDS * MIN_FOLD_VERDICTS``
    verdicts with a judged candidate (:func:`labelled_verdicts`; with references: annotated
    verdicts), else None (one split)."""
    return AUTO_FOLDS if labelled_verdicts(truth) >= AUTO_FOLDS * MIN_FOLD_VERDICTS else None


def choose_run_threshold(
    store: Store,
    run_id: str,
    *,
    truth: str | Truth = "labels",
    objective: str | Objective = DEFAULT_OBJECTIVE,
    score: str = "salience",
    test_size: float | int = DEFAULT_TEST_SIZE,
    cv: int | Literal["auto"] | None = DEFAULT_CV,
    cv_repeats: int = 1,
    random_state: Any = 0,
    n_boot: int = 1000,
    confidence: float = 0.95,
    **deprecated: Any,
) -> ThresholdChoice:
    """:func:`~truss_lab.evaluate._choose.choose_threshold` on one run judged by ``truth``.

    Parameters
    ----------
    store : Store
        The database the run is in.
    run_id : str
        The run.
    truth : Truth or str
        How the run is judged (:class:`~truss_lab.evaluate._truth.Truth`), as
        :func:`sweep_run` takes it. With references the annotated verdicts the run
        processed are split and misses count in recall. With a correction the choice,
        its interval and the held-out metrics are made on the prediction-powered counts
        (:func:`~truss_lab.evaluate._choose.choose_threshold_ppi`: the same split or
        folds, each side corrected by the people's answers on its own verdicts).
    objective : Objective or str
        What is chosen (:func:`parse_objective` spec, e.g. ``"precision:0.8"``).
    score : str
        The candidates column to threshold.
    test_size : float or int
        Held out by one split (``cv=None``, or ``auto`` with too few verdicts).
    cv : "auto", int or None
        ``auto`` (:data:`DEFAULT_CV`, every face's default): :data:`AUTO_FOLDS` folds
        of verdicts when :func:`auto_cv` says the data allow it, else one split; ``k``:
        k folds; None: one split.
    cv_repeats : int
        Repeats of the k folds.
    random_state, n_boot, confidence
        Seed, replicates and level of the split and the bootstraps.
    **deprecated
        The loose truth keywords (:func:`sweep_run`), with a DeprecationWarning.

    Returns
    -------
    ThresholdChoice
        Counted as :func:`sweep_run` counts (kept is what the gate would write, every
        processed verdict is split). ``split["counts"]`` holds the truth counts,
        ``split["truth"]`` its name and ``split["correction"]`` the correction
        (:func:`~truss_lab.evaluate._ppi.correction_label`).

    See Also
    --------
    evaluate_run : the same choice beside the sweep and bands.

    Examples
    --------
    >>> choice = tl.choose_run_threshold(store, "good", truth=tl.Truth.labels(), n_boot=0)
    >>> 0 <= choice.threshold <= 1, choice.split["truth"]
    (True, 'labels')
    """
    t = Truth.resolve(store, truth_of(truth, deprecated, where="choose_run_threshold"),
                      [run_id])
    whole_lessons(t.ties, "the threshold choice")
    jr = t.judged(run_id, score=score)
    fix = run_correction(store, t, jr, run_id, score=score)
    return choose_judged(t, jr, fix, objective=objective, test_size=test_size, cv=cv,
                         cv_repeats=cv_repeats, random_state=random_state, n_boot=n_boot,
                         confidence=confidence)


def choose_judged(t: Truth, jr: RunTruth | ReferenceTruth, correction: PPIData | None, *,
                  objective: str | Objective = DEFAULT_OBJECTIVE,
                  test_size: float | int = DEFAULT_TEST_SIZE,
                  cv: int | Literal["auto"] | None = DEFAULT_CV, cv_repeats: int = 1,
                  random_state: Any = 0, n_boot: int = 1000, confidence: float = 0.95,
                  intervals: Literal["all", "threshold"] = "all") -> ThresholdChoice:
    """:func:`choose_run_threshold` of a run already judged by ``t`` (``jr``) with its
    ``correction`` (:func:`run_correction`, None: uncorrected): no store read. ``intervals``
    as :func:`~truss_lab.evaluate._choose.choose_threshold` takes it."""
    obj = parse_objective(objective)
    if cv == "auto":
        cv = auto_cv(jr)
    opts = {"objective": obj, "test_size": test_size, "cv": cv, "cv_repeats": cv_repeats,
            "random_state": random_state, "n_boot": n_boot, "confidence": confidence,
            "intervals": intervals}
    if isinstance(jr, ReferenceTruth):
        d = jr.rows
        if correction is not None:
            # The verdicts in the uncorrected choice's order: the same split and folds.
            choice = choose_threshold_ppi(correction, verdicts=pd.unique(
                d["verdict_hash"].to_numpy(dtype=object)), **opts)
        else:
            choice = choose_threshold(d["y"].to_numpy(), d["s"].to_numpy(),
                                      d["verdict_hash"].to_numpy(), **opts)
    else:
        inputs = jr.sweep_inputs()
        if correction is not None:
            choice = choose_threshold_ppi(correction, verdicts=[str(v) for v in jr.verdicts],
                                          **opts)
        else:
            choice = choose_threshold(inputs["y_true"], inputs["salience"], inputs["groups"],
                                      judged=inputs["judged"], verdicts=jr.verdicts, **opts)
    choice.split["counts"] = dict(jr.counts)
    choice.split["truth"] = t.name
    choice.split["correction"] = correction_label(correction_of(correction))
    choice.split["people_verdicts"] = correction_of(correction)["people_verdicts"]
    choice.split["labelled_verdicts"] = labelled_verdicts(jr)
    return choice


# --------------------------------------------------------------------------- one evaluation


@dataclass(frozen=True, eq=False)
class RunEvaluation:
    """One run evaluated once for one request: what every face shows of it.

    :func:`evaluate_run` makes it; the CLI's ``sweep``, the demo, the report and
    the Displays show it, so one run with one set of options gives the same
    numbers everywhere. ``truth`` is the resolved :class:`Truth` and ``judged`` the
    run as it judged it; ``sweep`` is :func:`sweep_run` at every distinct
    threshold; ``choice`` is :func:`choose_run_threshold` with the options given
    (``options``); ``bands`` is :func:`bootstrap_run` on :data:`BAND_THRESHOLDS`
    (None with ``n_boot=0``). ``correction`` names the correction of the
    automated truth the numbers carry (``"none"``: the truth's counts as they are;
    ``"ppi (people answered for n of N verdicts)"``: prediction-powered, ``ppi``
    holding the two truths), the choice as well (:func:`choose_run_threshold`).

    Parameters
    ----------
    run_id : str
        The run.
    truth : Truth
        The resolved truth.
    judged : RunTruth or ReferenceTruth
        The run as the truth judged it.
    sweep : pandas.DataFrame
        The sweep at every distinct threshold.
    choice : ThresholdChoice
        The threshold chosen with ``options``.
    bands : BootstrapResult, optional
        The bootstrap bands (None with ``n_boot=0``).
    score : str
        The thresholded column.
    correction : str
        The correction the numbers carry.
    options : dict
        The options of the choice and bands.
    ppi : PPIData, optional
        The two truths of a prediction-powered correction.
    objective : Objective, optional
        The objective of the choice.
    """

    run_id: str
    truth: Truth = field(repr=False)
    judged: RunTruth | ReferenceTruth = field(repr=False)
    sweep: pd.DataFrame = field(repr=False)
    choice: ThresholdChoice
    bands: BootstrapResult | None = field(default=None, repr=False)
    score: str = "salience"
    correction: str = "none"
    options: dict[str, Any] = field(default_factory=dict)
    ppi: PPIData | None = field(default=None, repr=False)
    objective: Objective | None = field(default=None, repr=False)

    def at(self, thresholds: Any) -> pd.DataFrame:
        """:func:`sweep_run` rows at ``thresholds`` (from the judged run: no store read).

        Parameters
        ----------
        thresholds : array-like
            The thresholds.

        Returns
        -------
        pandas.DataFrame
            One sweep row per threshold, in the order given.
        """
        df = sweep_judged(self.judged, thresholds, correction=self.ppi)
        df.attrs["truth"] = self.truth.name
        return df

    def intervals(self, thresholds: Any = None) -> pd.DataFrame:
        """The sweep with every metric's interval beside it (``*_low`` / ``*_high`` of
        :data:`~truss_lab.evaluate._bootstrap.BOOT_METRICS`, and the simultaneous band's
        ``*_band_low`` / ``*_band_high`` over those thresholds): at ``thresholds`` (None:
        every distinct threshold, :attr:`sweep`), from :func:`bootstrap_run` with the
        evaluation's truth, correction, score, objective, ``n_boot`` and seed (the bands'
        and the choice's). With ``n_boot=0`` the rows alone. What ``truss-lab sweep``
        prints and writes (JSON at the summary thresholds, ``--csv`` at every one).

        Parameters
        ----------
        thresholds : array-like, optional
            The thresholds (None: every distinct one).

        Returns
        -------
        pandas.DataFrame
            The sweep rows with their intervals.
        """
        df = self.sweep.copy() if thresholds is None else self.at(thresholds)
        n_boot = self.options.get("n_boot", 0)
        if not n_boot:
            return df
        grid = df["threshold"].to_numpy() if thresholds is None else thresholds
        res = bootstrap_run(
            self.truth.store, self.run_id, thresholds=grid, score=self.score,
            truth=self.truth.corrected("ppi" if self.ppi is not None else "none"),
            n_boot=n_boot, confidence=self.options.get("confidence", 0.95),
            random_state=self.options["random_state"],
            objective=self.objective if self.objective is not None else DEFAULT_OBJECTIVE)
        for c in BOOT_METRICS:
            df[f"{c}_low"] = res.table[f"{c}_low"].to_numpy()
            df[f"{c}_high"] = res.table[f"{c}_high"].to_numpy()
        if res.band is not None:  # the simultaneous band over these thresholds
            for c in res.band.columns.drop("threshold"):
                df[c] = res.band[c].to_numpy()
        return df

    @property
    def counts(self) -> dict[str, Any]:
        """The truth counts of the run (:attr:`RunTruth.counts` or the references')."""
        return dict(self.judged.counts)

    @property
    def small_sample(self) -> str | None:
        """The one small-sample warning line of the evaluation, or None: its choice's
        (:attr:`ThresholdChoice.small_sample`), which counts the labelled and
        people-answered verdicts the sweep's intervals rest on too."""
        return self.choice.small_sample


def evaluate_run(
    store: Store,
    run_id: str,
    *,
    truth: str | Truth = "labels",
    objective: str | Objective = DEFAULT_OBJECTIVE,
    score: str = "salience",
    test_size: float | int = DEFAULT_TEST_SIZE,
    cv: int | Literal["auto"] | None = DEFAULT_CV,
    cv_repeats: int = 1,
    random_state: Any = 0,
    n_boot: int = 1000,
    confidence: float = 0.95,
    bands: bool = True,
    **deprecated: Any,
) -> RunEvaluation:
    """The one evaluation of a run every face shows: sweep, threshold choice and bands.

    The truth is resolved and the run judged once, then :func:`sweep_run`,
    :func:`choose_run_threshold` (the same options and defaults: :data:`DEFAULT_CV`,
    :data:`DEFAULT_TEST_SIZE`) and :func:`bootstrap_run`'s bands of that judged run, all
    corrected alike (``truth.correct``); with a correction and ``n_boot``, the
    intervals of every metric (:meth:`RunEvaluation.intervals`).

    Parameters
    ----------
    store : Store
        The database the run is in.
    run_id : str
        The run.
    truth : Truth or str
        How the run is judged (:class:`~truss_lab.evaluate._truth.Truth`), as
        :func:`sweep_run` takes it.
    objective, score, test_size, cv, cv_repeats, random_state, n_boot, confidence
        As :func:`choose_run_threshold` takes them; ``n_boot`` replicates and the same
        seed for the bands.
    bands : bool
        Compute :func:`bootstrap_run`'s bands (none with ``n_boot=0`` either).
    **deprecated
        The loose truth keywords (:func:`sweep_run`), with a DeprecationWarning.

    Returns
    -------
    RunEvaluation
        The resolved truth, the judged run, the sweep at every distinct threshold, the
        choice, the bands (None without them) and the correction.

    See Also
    --------
    sweep_run, choose_run_threshold, bootstrap_run

    Notes
    -----
    Many parameters because it is the one call of the choice (objective, score, test_size,
    cv, cv_repeats) and its bootstrap (random_state, n_boot, confidence, bands) beside the
    truth; the five truth keywords moved into Truth, and the deprecated loose ones are one
    catch-all for one release.

    Examples
    --------
    >>> ev = tl.evaluate.evaluate_run(store, "good", truth=tl.Truth.labels(), n_boot=0)
    >>> ev.truth.name, ev.correction
    ('labels', 'none')
    """
    t = Truth.resolve(store, truth_of(truth, deprecated, where="evaluate_run"), [run_id])
    whole_lessons(t.ties, "the threshold choice")
    jr = t.judged(run_id, score=score)
    fix = run_correction(store, t, jr, run_id, score=score)
    full = sweep_judged(jr, correction=fix)
    full.attrs["truth"] = t.name
    options: dict[str, Any] = {
        "objective": parse_objective(objective), "score": score, "test_size": test_size,
        "cv": cv, "cv_repeats": cv_repeats, "random_state": random_state, "n_boot": n_boot,
        "confidence": confidence, "ties": t.ties}
    choice = choose_judged(t, jr, fix, **{k: v for k, v in options.items()
                                          if k not in ("score", "ties")})
    boot = (bootstrap_run(store, run_id, truth=t.corrected("ppi" if fix is not None
                                                            else "none"),
                          score=score, n_boot=n_boot, confidence=confidence,
                          random_state=random_state, objective=options["objective"])
            if n_boot and bands else None)
    obj = options["objective"]
    options["objective"] = obj.describe()
    return RunEvaluation(run_id=run_id, truth=t, judged=jr, sweep=full, choice=choice,
                         bands=boot, score=score, options=options,
                         correction=correction_label(full.attrs["correction"]), ppi=fix,
                         objective=obj)


# --------------------------------------------------------------------------- comparison


def compare_runs(
    store: Store,
    run_a: str,
    run_b: str,
    *,
    truth: str | Truth = "labels",
    threshold: Any = DEFAULT_MIN_SALIENCE,
    threshold_b: Any = None,
    score: str = "salience",
    n_boot: int = 1000,
    confidence: float = 0.95,
    random_state: Any = 0,
    **deprecated: Any,
) -> ComparisonResult:
    """:func:`~truss_lab.evaluate._compare.compare_extractors` of two runs judged by one truth.

    Parameters
    ----------
    store : Store
        The database the runs are in.
    run_a, run_b : str
        The runs (A and B of the result).
    truth : Truth or str
        How both runs are judged (:class:`~truss_lab.evaluate._truth.Truth`), as
        :func:`sweep_run` takes it. With references both runs are judged on the
        annotated verdicts both processed (no labels needed). Its correction applies to
        both runs at once: with ppi each run is corrected by the people's answers on its
        lessons (:func:`~truss_lab.evaluate._compare.compare_extractors_ppi`); ``auto``
        corrects when people answered for some verdict of each run, else neither (one
        corrected run beside an uncorrected one would compare two truths).
    threshold, threshold_b : float
        The gate threshold of A (and of B, default the same).
    score : str
        The candidates column to threshold.
    n_boot, confidence, random_state
        The paired verdict bootstrap.
    **deprecated
        The loose truth keywords (:func:`sweep_run`), with a DeprecationWarning.

    Returns
    -------
    ComparisonResult
        Counted as in :class:`~truss_lab.evaluate._truth.RunTruth` (kept = what the gate
        would write), on the verdicts both runs processed (``run_verdicts``); verdicts
        of one run only are listed (``only_in_a`` / ``only_in_b``), never dropped
        silently.

    See Also
    --------
    rank_runs : several runs against a baseline.

    Examples
    --------
    >>> res = tl.compare_runs(store, "good", "good", n_boot=50,
    ...                       truth=tl.Truth.references(correct="none"))
    >>> res.names, res.n_common > 0
    (('good', 'good'), True)
    """
    t = Truth.resolve(store, truth_of(truth, deprecated, where="compare_runs"),
                      [run_a, run_b])
    whole_lessons(t.ties, "the paired comparison")
    fixes = runs_correction(store, t, [run_a, run_b], score=score)
    opts = {"threshold": threshold, "threshold_b": threshold_b, "n_boot": n_boot,
            "confidence": confidence, "random_state": random_state, "names": (run_a, run_b)}
    fa, fb = fixes[run_a], fixes.get(run_b)
    if fa is not None and fb is not None:
        return replace(compare_extractors_ppi(fa, fb, **opts),
                       correction=runs_correction_label(fixes),
                       people_verdicts=(fa.n_sampled, fb.n_sampled))
    frames, processed = [], []
    for rid in (run_a, run_b):
        jr = t.judged(rid, score=score)
        if isinstance(jr, ReferenceTruth):
            d = jr.rows
            frames.append(pd.DataFrame({"verdict_hash": d["verdict_hash"].astype(str),
                                        "salience": d["s"], "label": d["y"]}))
            processed.append(jr.verdicts)
            continue
        d = jr.candidates
        frames.append(pd.DataFrame({"verdict_hash": d["verdict_hash"], "salience": d["s"],
                                    "label": d["y"], "judged": d["judged"]}))
        # Every verdict the run processed, so one where the extractor proposed
        # nothing counts as "kept nothing" rather than "absent from the run".
        processed.append(jr.verdicts)
    return compare_extractors(frames[0], frames[1], **opts, verdicts_a=processed[0],
                              verdicts_b=processed[1])


# --------------------------------------------------------------------------- several runs


def rank_runs(
    store: Store,
    run_ids: Any,
    *,
    truth: str | Truth = "references",
    threshold: float = DEFAULT_MIN_SALIENCE,
    baseline: str | None = None,
    score: str = "salience",
    n_boot: int = 1000,
    random_state: Any = 0,
    **deprecated: Any,
) -> pd.DataFrame:
    """Several runs judged by one ``truth`` at one gate ``threshold``, best F1 first.

    One row per run: ``run_id``, ``extractor_id``, ``truth`` (its resolved name),
    ``verdicts`` (the verdicts it is judged on: processed ones, or with
    references the annotated ones), the :func:`sweep_run` counts and rates at
    ``threshold`` (``kept, tp, fp, fn, precision, recall, f1,
    kept_per_verdict``) and, against ``baseline`` (a run id; its own row has
    NaN), the paired comparison of :func:`compare_runs` (A = baseline, B = the
    run): ``delta_f1`` with ``delta_f1_low``/``delta_f1_high``, ``success`` and
    ``baseline_success`` (verdicts whose kept set is right), ``mcnemar_p`` and
    ``n_common``. With references every run is scored, labelled or not.
    ``truth`` (a :class:`~truss_lab.evaluate._truth.Truth` or a spec; the loose
    keywords in ``deprecated`` with a DeprecationWarning): every run corrected by the
    people's answers or none (:func:`~truss_lab.evaluate._correction.runs_correction`:
    ``auto`` corrects when people answered for each run), the rows and the paired
    columns alike; ``attrs["correction"]`` names it.

    Parameters
    ----------
    store : Store
        The database.
    run_ids : str or sequence of str
        The runs.
    truth : Truth or str, default "references"
        What every run is judged by.
    threshold : float, default 0.7
        The gate every run is judged at.
    baseline : str, optional
        The run every other is compared with (added when not among ``run_ids``).
    score : str, default "salience"
        The thresholded column.
    n_boot : int, default 1000
        Paired-bootstrap replicates.
    random_state : int or numpy.random.Generator, default 0
        Seed of the bootstrap.
    **deprecated
        The loose truth keywords, still taken with a DeprecationWarning.

    Returns
    -------
    pandas.DataFrame
        One row per run (above), best F1 first.

    Raises
    ------
    BadInputError
        No run, an unknown run or truth.
    """
    ids = [run_ids] if isinstance(run_ids, str) else list(run_ids)
    if baseline is not None and baseline not in ids:
        ids = [baseline, *ids]
    if not ids:
        raise BadInputError("rank_runs needs at least one run id", field="run_ids")
    t = Truth.resolve(store, truth_of(truth, deprecated, where="rank_runs"), ids)
    fixes = runs_correction(store, t, ids, score=score)
    same = t.corrected(runs_mode(fixes))
    rows = []
    for rid in ids:
        # One correction for every row and the paired columns alike.
        sw = sweep_judged(t.judged(rid, score=score), [threshold], correction=fixes[rid])
        row: dict[str, Any] = {"run_id": rid,
                               "extractor_id": str(run_info(store, rid)["extractor_id"]),
                               "truth": t.name,
                               "verdicts": int(sw.attrs["counts"].get(
                                   "verdicts_annotated", sw.attrs["counts"].get("verdicts")))}
        row.update({k: sw[k].iloc[0] for k in ("kept", "tp", "fp", "fn", "precision",
                                               "recall", "f1", "kept_per_verdict")})
        cmp = {"delta_f1": np.nan, "delta_f1_low": np.nan, "delta_f1_high": np.nan,
               "success": np.nan, "baseline_success": np.nan, "mcnemar_p": np.nan,
               "n_common": np.nan}
        if baseline is not None and rid != baseline:
            res = compare_runs(store, baseline, rid, truth=same, score=score,
                               threshold=threshold, n_boot=n_boot, random_state=random_state)
            r = res.table.iloc[0]
            cmp = {"delta_f1": r["delta_f1"], "delta_f1_low": r["delta_f1_low"],
                   "delta_f1_high": r["delta_f1_high"], "success": r["success_b"],
                   "baseline_success": r["success_a"], "mcnemar_p": r["mcnemar_p"],
                   "n_common": res.n_common}
        rows.append({**row, **cmp})
    out = pd.DataFrame(rows).sort_values("f1", ascending=False, kind="stable")
    out.attrs["threshold"] = float(threshold)
    out.attrs["baseline"] = baseline
    out.attrs["correction"] = runs_correction_label(fixes)
    return out.reset_index(drop=True)
