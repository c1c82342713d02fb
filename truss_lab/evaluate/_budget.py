"""The label-budget planner: how many labelled verdicts an interval or a comparison needs.

**The model.** Precision, recall and F1 at a threshold are ratios of sums over verdicts,
``R = sum_v num_v / sum_v den_v`` (:data:`~truss_lab.evaluate._ppi.RATIOS`: tp over
judged, tp over positives, 2 tp over judged + positives). Lessons of one verdict are
correlated, so the unit is the verdict: linearised at ``R`` (the delta method), the
estimate's error is the mean over labelled verdicts of the influence
``phi_v = (num_v - R den_v) / mu`` (``mu`` the mean denominator), and its variance on
``n`` labelled verdicts is ``V(n) = Var(phi) / n``. An interval's width is then
``2 z sqrt(V(n))`` (``z`` the normal quantile of the level): it narrows as
``1 / sqrt(n)``.

With a correction (an automated truth, a judge or a matcher, corrected by the people's
answers on ``n`` of the ``N`` verdicts: :mod:`~truss_lab.evaluate._ppi`), the error
has two parts, the people's and the automated truth's, as the stratified bootstrap of
:func:`~truss_lab.evaluate._ppi.ppi_bootstrap` resamples them:

    V(n) = Var(h - lam (1 - f) a) / n + lam^2 (1 - f) Var(a) / N,    f = n / N

with ``h`` the people's influence on the verdicts they answered for, ``a`` the automated
truth's and ``lam`` the power weight minimising ``V`` in [0, 1] (PPI++). The first term
is the variance of the rectifier (people minus automated): the better the automated truth
agrees with the people, the smaller it is, and the fewer people's labels an interval
needs. ``lam = 0`` is the people's labels alone (``Var(h) / n``), what the correction is
compared with (:attr:`LabelBudget.table`'s ``labels_alone`` and ``saved``). Beyond
``n = N`` every further verdict is taken as labelled by people too (``V = Var(h) / n``).
Inclusion probabilities are taken as a simple random sample's.

The variances are estimated from the labels the run has now, and the model is calibrated to
the interval the run has now (:meth:`VerdictVariance.calibrated`): ``width(n) = width_now
sqrt(V(n) / V(n_now))``, ``width_now`` the verdict bootstrap's
(:func:`~truss_lab.evaluate._runs.bootstrap_run`, with a correction
:func:`~truss_lab.evaluate._ppi.ppi_bootstrap`'s). So the model says only how the width
changes with the count; what the bootstrap adds beyond the delta method (the power
tuning's own noise, Wilson's small-sample quantile) carries over. ``scripts/
label_budget_check.py`` predicts from a quarter of a labelled set the width on all of it and
compares it with the bootstrap's there, over 50 simulated datasets (docs/how-to/label-budget.md).

**A difference between two runs** (``compare``): labelled verdicts per run so that a
two-sided test at ``alpha`` detects the observed difference ``d`` with probability
``power`` (normal approximation): the smallest ``n`` with ``(z_{1 - alpha/2} + z_power)
sqrt(V_d(n)) <= |d|``. When both runs are judged by labels alone and share labelled
verdicts, ``V_d(n) = Var(phi_A - phi_B) / n`` over the shared verdicts (paired);
otherwise ``V_A(n) + V_B(n)`` (independent samples). Each run's variance is calibrated
to its own bootstrap; the paired one by the geometric mean of the two calibrations.
"""

from __future__ import annotations

import html
import math
import textwrap
import warnings
from dataclasses import dataclass, field, replace
from statistics import NormalDist
from typing import Any

import numpy as np
import pandas as pd

from ..core._errors import BadInputError
from ..core._threads import blas_limited
from ..core._threshold import DEFAULT_MIN_SALIENCE, check_threshold
from ..store._store import Store
from ._bootstrap import bin_counts, small_sample_line, verdict_codes
from ._correction import run_correction
from ._ppi import RATIOS, PPIData, correction_of, ppi_sweep
from ._sweep import UndefinedMetricWarning, as_labels, as_scores
from ._truth import ReferenceTruth, RunTruth, Truth, truth_of

__all__ = [
    "BUDGET_METRICS",
    "LabelBudget",
    "VerdictVariance",
    "label_budget",
    "labels_variance",
    "needed_for_difference",
    "ppi_variance",
]

#: The metrics a budget plans for, in the order of its tables.
BUDGET_METRICS = ("precision", "recall", "f1")
#: The largest budget the planner searches (labelled verdicts): beyond it, "unreachable".
MAX_BUDGET = 10**9


@dataclass(frozen=True, eq=False)
class VerdictVariance:
    """The per-verdict variance of one metric's estimate, and the variance it gives on any
    number of labelled verdicts (the module's model).

    With a correction the automated truth enters through one covariate per count of the
    ratio (``X_k = c_k A_k``: tp, judged, positives, as
    :func:`~truss_lab.evaluate._ppi.power_lams` tunes them), each with its own power
    weight.

    Parameters
    ----------
    value : float
        The metric's estimate now.
    var_h : float
        Variance of the people's (or the labels') influence per labelled verdict,
        normalised by the mean denominator.
    cov : numpy.ndarray, optional
        Covariance of that influence with each automated covariate, on the verdicts
        people answered for.
    var_a : numpy.ndarray, optional
        The covariates' covariance matrix there.
    var_a_all : numpy.ndarray, optional
        Their covariance matrix over every verdict of the population.
    n_all : int or None
        The population of a correction (None: labels alone).
    n_labelled : int
        The labelled verdicts (people-answered with a correction) the estimate rests on.
    n_frame : int or None
        The verdicts people could have been asked about (their sample's frame: the
        sampled verdicts times their mean 1 / inclusion probability; None: the
        population).
    alone_scale : float
        ``(mu / mu_people)^2``: turns ``var_h / n`` (normalised by the population's mean
        denominator ``mu``) into the variance of the people's own ratio (normalised by
        their mean denominator on their verdicts).
    scale : float
        The calibration to the bootstrap (:meth:`calibrated`): the variance's factor (the
        labels-alone variance's too, so that the two compare like with like).
    """

    value: float
    var_h: float
    cov: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    var_a: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)), repr=False)
    var_a_all: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)), repr=False)
    n_all: int | None = None
    n_labelled: int = 0
    n_frame: int | None = None
    alone_scale: float = 1.0
    scale: float = 1.0

    @blas_limited()
    def variance(self, n: Any, *, alone: bool = False) -> np.ndarray:
        """The estimate's variance on ``n`` labelled verdicts (array-like), with the power
        weights that minimise it (each clipped to [0, 1]; never more than the labels'
        alone); ``alone``: the people's labels without the automated truth. Both times
        :attr:`scale`."""
        n = np.asarray(n, dtype=np.float64)
        plain = self.var_h * self.alone_scale / n
        if (alone or self.n_all is None or len(self.cov) == 0
                or not np.isfinite(self.var_a).all() or not np.isfinite(self.cov).all()):
            return plain * self.scale
        out = np.empty(n.shape)
        frame, pop = float(self.n_frame or self.n_all), float(self.n_all)
        share = (frame / pop) ** 2  # the people's sample weighs M/n of N
        for i, nn in np.ndenumerate(n):
            nn = float(nn)
            c = max(0.0, 1.0 - nn / frame)  # 0: people answer for every verdict they could
            rest = max(0.0, pop - nn) / pop**2
            # (M/N)^2 Var(h - lam c a) / n + (N - n) / N^2 lam' Var(a) lam, minimised
            m = share * c**2 * self.var_a / nn + rest * self.var_a_all
            m = m + np.eye(len(m)) * 1e-12 * max(float(np.trace(m)), 1e-300)
            lam = np.linalg.lstsq(m, share * c * self.cov / nn, rcond=None)[0]
            lam = np.clip(lam, 0.0, 1.0)
            rect = self.var_h - 2 * c * lam @ self.cov + c**2 * lam @ self.var_a @ lam
            out[i] = share * max(rect, 0.0) / nn + rest * (lam @ self.var_a_all @ lam)
        # lam = 0 is the people's ratio alone (its inclusion weights cancel): the
        # tuned weights never do worse
        return np.minimum(out, plain) * self.scale

    def calibrated(self, width_now: float, confidence: float = 0.95) -> VerdictVariance:
        """The model scaled so that its width on the labelled verdicts now is
        ``width_now`` (the bootstrap's interval now): the model then says only how the
        width changes with the count. Unchanged when ``width_now`` is 0 or undefined (no
        spread to scale to: the model's own width stands); when the model's width is 0
        and the bootstrap's is not, the bootstrap's width narrowing as ``1 / sqrt(n)``."""
        model_now = float(self.width(self.n_labelled, confidence))
        if not (math.isfinite(width_now) and width_now > 0 and math.isfinite(model_now)):
            return self
        if model_now == 0:
            # Every labelled verdict agrees (a precision of 1 in each): the influences
            # tell nothing, the bootstrap's interval (Wilson's, sized by the people's
            # own count) does; it narrows as 1 / sqrt(n).
            var = (width_now / (2 * _z(confidence))) ** 2 * self.n_labelled
            return replace(self, var_h=var, alone_scale=1.0, scale=1.0, n_all=None)
        return replace(self, scale=self.scale * (width_now / model_now) ** 2)

    def width(self, n: Any, confidence: float = 0.95, *, alone: bool = False) -> np.ndarray:
        """The interval's predicted width on ``n`` labelled verdicts: ``2 z sqrt(V(n))``."""
        return 2 * _z(confidence) * np.sqrt(self.variance(n, alone=alone))

    def needed(self, width: float, confidence: float = 0.95, *, alone: bool = False
               ) -> float:
        """The fewest labelled verdicts whose predicted width is at most ``width``
        (NaN: the metric is undefined; inf: beyond :data:`MAX_BUDGET`)."""
        if not math.isfinite(self.value) or not math.isfinite(self.var_h):
            return math.nan
        bound = self.var_h * self.alone_scale * self.scale
        return _smallest(lambda n: self.width(n, confidence, alone=alone) <= width,
                         bound * (2 * _z(confidence) / width) ** 2)


def _z(confidence: float) -> float:
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def _smallest(ok: Any, bound: float) -> float:
    """The smallest n >= 1 with ``ok(n)`` (true from some n on, and at ``ceil(bound)``:
    the labels-alone answer bounds every other), by bisection."""
    if bool(ok(1)):
        return 1.0
    hi = max(2.0, math.ceil(bound) if math.isfinite(bound) else math.inf)
    if hi > MAX_BUDGET or not bool(ok(hi)):
        if not bool(ok(MAX_BUDGET)):
            return math.inf
        hi = float(MAX_BUDGET)
    lo = 1.0  # ok(lo) is false, ok(hi) true
    while hi - lo > 1:
        mid = math.floor((lo + hi) / 2)
        lo, hi = (lo, mid) if bool(ok(mid)) else (mid, hi)
    return hi


# --------------------------------------------------------------------------- per verdict


def _verdict_counts(y: np.ndarray, s: np.ndarray, codes: np.ndarray, n_groups: int,
                    threshold: float, judged: np.ndarray) -> np.ndarray:
    """Per verdict ``(tp, judged, positives, judged anywhere)`` at ``threshold``: shape
    ``(n_groups, 4)``, counted as the sweep counts (kept: score >= threshold)."""
    h = bin_counts(y & judged, s, codes, n_groups, np.array([threshold]), judged=judged)
    return np.stack([h[:, 1, 0], h[:, 2, 0], h[:, 1, :].sum(axis=1), h[:, 2, :].sum(axis=1)],
                    axis=1).astype(np.float64)


@blas_limited()
def _parts(counts: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """``(num, den)`` per verdict of the ratio ``name`` from ``(tp, judged, positives)``."""
    num, den = RATIOS[name]
    return counts[:, :3] @ np.asarray(num), counts[:, :3] @ np.asarray(den)


def _var(x: np.ndarray) -> float:
    return float(np.var(x, ddof=1)) if len(x) > 1 else math.nan


def labels_variance(y_true: Any, salience: Any, groups: Any, *, threshold: float,
                    judged: Any = None, verdicts: Any = None) -> dict[str, VerdictVariance]:
    """Per metric of :data:`BUDGET_METRICS`, the per-verdict variance of its estimate from
    labels alone (the module's model, no correction).

    Parameters
    ----------
    y_true, salience, groups : array-like
        Each candidate's truth (1 useful/matched), score and verdict, as
        :func:`~truss_lab.evaluate._bootstrap.bootstrap_metrics` takes them.
    threshold : float
        Where the metrics are taken (kept: score >= threshold).
    judged : array of bool, optional
        Which candidates have a truth value (default all).
    verdicts : array-like, optional
        Every verdict (default the distinct ``groups``).

    Returns
    -------
    dict of str to VerdictVariance
        One per metric; its ``n_labelled`` the verdicts with a truth value on some
        candidate (those the variance is taken over).

    Raises
    ------
    BadInputError
        Bad arrays, no labelled verdict.
    """
    y = as_labels(y_true)
    s = as_scores(salience)
    jm = np.ones(len(y), dtype=np.uint8) if judged is None else as_labels(judged, "judged")
    codes, pop = verdict_codes(groups, verdicts)
    counts = _verdict_counts(y, s, codes, len(pop), float(threshold), jm)
    counts = counts[counts[:, 3] > 0]
    if len(counts) == 0:
        raise BadInputError("no labelled verdict: a label budget starts from some labels "
                            "(`truss-lab ingest labels`)", field="labels")
    out = {}
    for name in BUDGET_METRICS:
        num, den = _parts(counts, name)
        mu = den.mean()
        value = num.sum() / den.sum() if den.sum() > 0 else math.nan
        phi = (num - value * den) / mu if mu > 0 else np.full(len(num), math.nan)
        out[name] = VerdictVariance(value=float(value), var_h=_var(phi),
                                    n_labelled=len(counts))
    return out


@blas_limited()
def ppi_variance(data: PPIData, *, threshold: float) -> dict[str, VerdictVariance]:
    """Per metric of :data:`BUDGET_METRICS`, the per-verdict variances of its
    prediction-powered estimate (the module's model): the people's influence, the automated
    truth's and their covariance on the verdicts people answered for, the automated truth's
    over every verdict.

    Parameters
    ----------
    data : PPIData
        The two truths of the run (:func:`~truss_lab.evaluate._ppi.ppi_data`).
    threshold : float
        Where the metrics are taken.

    Returns
    -------
    dict of str to VerdictVariance
        One per metric, its value the corrected estimate
        (:func:`~truss_lab.evaluate._ppi.ppi_sweep`), ``n_labelled`` the verdicts people
        answered for, ``n_all`` the population.
    """
    auto, human, inv = data.codes
    g = data.n_verdicts
    ca = _verdict_counts(data.y_auto, data.s_auto, auto, g, threshold, data.judged_auto)
    ch = _verdict_counts(data.y_human, data.s_human, human, g, threshold, data.judged_human)
    sampled = inv > 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        row = ppi_sweep(data, thresholds=[threshold], snap=False).iloc[0]
    totals = np.array([row["tp"], row["tp"] + row["fp"], row["tp"] + row["fn"]])
    out = {}
    for name in BUDGET_METRICS:
        value = float(row[name])
        mu = float(totals @ np.asarray(RATIOS[name][1])) / g
        if not (math.isfinite(value) and mu > 0):
            out[name] = VerdictVariance(value=math.nan, var_h=math.nan, n_all=g,
                                        n_labelled=int(sampled.sum()))
            continue
        num, den = (np.asarray(x) for x in RATIOS[name])
        coef = num - value * den
        kinds = np.flatnonzero((num != 0) | (den != 0))
        z = (ch[:, :3] @ coef)[sampled] / mu
        x_all = ca[:, kinds] * coef[kinds] / mu
        x = x_all[sampled]
        n_s = len(z)
        if n_s > 1:
            both = np.cov(np.column_stack([z, x]), rowvar=False, ddof=1)
            cov, var_a = both[0, 1:], both[1:, 1:]
        else:
            cov, var_a = np.full(len(kinds), math.nan), np.full((len(kinds),) * 2, math.nan)
        var_all = np.atleast_2d(np.cov(x_all, rowvar=False, ddof=1))
        mu_people = float((ch[:, :3] @ den)[sampled].mean()) if n_s else math.nan
        out[name] = VerdictVariance(
            value=value, var_h=_var(z), cov=cov, var_a=var_a, var_a_all=var_all, n_all=g,
            n_labelled=n_s, n_frame=round(float(inv[sampled].sum())),
            alone_scale=(mu / mu_people) ** 2 if mu_people > 0 else math.nan)
    return out


def _paired_phi(counts_a: pd.DataFrame, counts_b: pd.DataFrame, name: str,
                va: VerdictVariance, vb: VerdictVariance) -> np.ndarray:
    """``phi_A - phi_B`` on the labelled verdicts the two runs share."""
    both = counts_a.index.intersection(counts_b.index)
    out = []
    for counts, v in ((counts_a, va), (counts_b, vb)):
        num, den = _parts(counts.to_numpy(), name)
        mu = den.mean()
        phi = pd.Series((num - v.value * den) / mu, index=counts.index)
        out.append(phi.loc[both].to_numpy())
    return out[0] - out[1]


def needed_for_difference(difference: float, variance: Any, *, power: float = 0.8,
                          alpha: float = 0.05) -> float:
    """The fewest labelled verdicts (per run) with which a two-sided test at ``alpha``
    detects ``difference`` with probability ``power`` (normal approximation): the smallest
    ``n`` with ``(z_{1 - alpha/2} + z_power) sqrt(variance(n)) <= |difference|``.

    Parameters
    ----------
    difference : float
        The difference to detect.
    variance : callable
        ``n -> `` the difference's variance on ``n`` labelled verdicts.
    power : float, default 0.8
        The probability of detecting it, in (0, 1).
    alpha : float, default 0.05
        The test's level.

    Returns
    -------
    float
        The number (inf: no difference, or beyond :data:`MAX_BUDGET`; NaN: undefined).
    """
    if not math.isfinite(difference):
        return math.nan
    if difference == 0:
        return math.inf
    k = NormalDist().inv_cdf(1 - alpha / 2) + NormalDist().inv_cdf(power)
    one = float(variance(1.0))
    if not math.isfinite(one):
        return math.nan
    return _smallest(lambda n: k * np.sqrt(variance(n)) <= abs(difference),
                     one * (k / difference) ** 2)


# --------------------------------------------------------------------------- over the store


@dataclass(frozen=True, eq=False)
class LabelBudget:
    """How many labelled verdicts a run's intervals (and a comparison) need.

    ``table``: one row per metric of :data:`BUDGET_METRICS`: ``metric``, ``value`` (the
    estimate now), ``labelled`` (labelled verdicts now; people-answered with a correction),
    ``width_now`` (the verdict bootstrap's interval width now:
    :func:`~truss_lab.evaluate._runs.bootstrap_run`), ``model_width_now`` (the model's at
    the same count), ``needed`` (labelled verdicts in all for width ``width``),
    ``additional`` (``needed`` minus ``labelled``, at least 0); with a correction also
    ``labels_alone`` (what the people's labels alone would need) and ``saved``
    (``labels_alone - needed``). ``at``: the predicted width of each metric at each
    budget of ``at`` (labelled verdicts in all), columns ``metric``, ``labelled``,
    ``width`` (and ``width_labels_alone`` with a correction). ``comparison``: with
    ``compare``, one row per metric: ``value_a``, ``value_b``, ``difference``,
    ``paired``, ``labelled`` (shared labelled verdicts when paired, else the fewer of
    the two runs'), ``needed`` and ``additional`` (labelled verdicts per run).

    Parameters
    ----------
    run_id : str
        The run.
    truth : str
        Its truth, resolved.
    correction : dict
        Which correction, and how many verdicts people answered for (``correction``,
        ``people_verdicts``, ``verdicts``).
    threshold : float
        Where the metrics are taken.
    width : float
        The target width.
    confidence : float
        The intervals' level.
    table : pandas.DataFrame
        Above.
    at : pandas.DataFrame
        Above.
    model : str
        The model, in one sentence.
    compare : str or None
        The other run.
    power : float
        The comparison's power.
    comparison : pandas.DataFrame or None
        Above.
    """

    run_id: str
    truth: str
    correction: dict[str, Any]
    threshold: float
    width: float
    confidence: float
    table: pd.DataFrame = field(repr=False)
    at: pd.DataFrame = field(repr=False)
    model: str = field(repr=False, default="")
    compare: str | None = None
    power: float = 0.8
    comparison: pd.DataFrame | None = field(default=None, repr=False)

    @property
    def n_labelled(self) -> int:
        """The labelled (people-answered, with a correction) verdicts the budget starts
        from."""
        return int(self.table["labelled"].iloc[0])

    @property
    def small_sample(self) -> str | None:
        """The one warning line when the variances rest on fewer than
        :data:`~truss_lab.evaluate._bootstrap.SMALL_SAMPLE_VERDICTS` verdicts (the
        planner's answer is then as unsure as the intervals); else None."""
        kind = "people-answered" if self.correction.get("correction") == "ppi" else "labelled"
        return small_sample_line({kind: self.n_labelled})

    def to_dict(self) -> dict[str, Any]:
        """Everything, as JSON-ready values (``--json``)."""
        from ..core._canonical import json_safe

        return json_safe({
            "run": self.run_id, "truth": self.truth, "correction": self.correction,
            "threshold": self.threshold, "width": self.width,
            "confidence": self.confidence, "model": self.model,
            "table": self.table.to_dict(orient="records"),
            "at": self.at.to_dict(orient="records"),
            "compare": self.compare, "power": self.power,
            "comparison": (None if self.comparison is None
                           else self.comparison.to_dict(orient="records"))})

    def _lines(self) -> list[str]:
        pct = f"{self.confidence:.0%}"
        lines = [f"LabelBudget(run={self.run_id!r}, truth={self.truth!r}, "
                 f"correction={self.correction.get('correction')!r}, "
                 f"threshold={self.threshold:.4g}, width={self.width:.4g}, "
                 f"confidence={self.confidence})",
                 *textwrap.wrap(f"model: {self.model}", 88, subsequent_indent="  ")]
        t = self.table.copy()
        t["needed"] = t["needed"].map(_count)
        t["additional"] = t["additional"].map(_count)
        for c in ("labels_alone", "saved"):
            if c in t.columns:
                t[c] = t[c].map(_count)
        lines.append(f"{pct} interval widths; labelled verdicts in all for width "
                     f"{self.width:.4g} (needed):")
        lines.append(t.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        w = self.at.pivot(index="metric", columns="labelled", values="width")
        w = w.loc[[m for m in BUDGET_METRICS if m in w.index]]  # in the tables' order
        lines.append("predicted width at these labelled verdicts in all:")
        lines.append(w.to_string(float_format=lambda v: f"{v:.3f}"))
        if self.comparison is not None:
            c = self.comparison.copy()
            c["needed"] = c["needed"].map(_count)
            c["additional"] = c["additional"].map(_count)
            lines.append(f"versus {self.compare!r}: labelled verdicts per run to detect the "
                         f"difference with power {self.power:g} (alpha 0.05, two-sided):")
            lines.append(c.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        if self.small_sample:
            lines.append(self.small_sample)
        return lines

    def __repr__(self) -> str:
        return "\n".join(self._lines())

    def _repr_html_(self) -> str:
        return "<pre>" + html.escape(repr(self)) + "</pre>"


def _count(v: float) -> str:
    if not math.isfinite(v):
        return "n/a" if math.isnan(v) else "unreachable"
    return str(int(v))


def _run_variance(t: Truth, store: Store, run_id: str, threshold: float, score: str
                  ) -> tuple[dict[str, VerdictVariance], PPIData | None, pd.DataFrame | None]:
    """The run's variances, its correction, and (labels alone) its per-verdict counts
    indexed by verdict (for a paired comparison)."""
    jr = t.judged(run_id, score=score)
    fix = run_correction(store, t, jr, run_id, score=score)
    if fix is not None:
        return ppi_variance(fix, threshold=threshold), fix, None
    if isinstance(jr, ReferenceTruth):
        y, s, g = jr.arrays()
        judged = np.ones(len(y), dtype=np.uint8)
    else:
        assert isinstance(jr, RunTruth)
        inp = jr.sweep_inputs()
        y, s, g, judged = inp["y_true"], inp["salience"], inp["groups"], inp["judged"]
    var = labels_variance(y, s, g, threshold=threshold, judged=judged, verdicts=jr.verdicts)
    codes, pop = verdict_codes(g, jr.verdicts)
    counts = _verdict_counts(as_labels(y), as_scores(s), codes, len(pop), threshold,
                             as_labels(judged, "judged"))
    keep = counts[:, 3] > 0
    return var, None, pd.DataFrame(counts[keep], index=pd.Index(pop[keep], dtype=object))


def _check_at(at: Any) -> list[int]:
    if at is None:
        return []
    vals = [at] if isinstance(at, (int, np.integer)) else list(at)
    out = []
    for v in vals:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise BadInputError(f"at must hold whole numbers of labelled verdicts >= 1, got "
                                f"{v!r}", field="at")
        out.append(int(v))
    return out


def label_budget(
    store: Store,
    run_id: str,
    *,
    truth: str | Truth = "labels",
    threshold: float = DEFAULT_MIN_SALIENCE,
    width: float = 0.1,
    at: Any = None,
    compare: str | None = None,
    power: float = 0.8,
    confidence: float = 0.95,
    score: str = "salience",
    n_boot: int = 1000,
    random_state: Any = 0,
) -> LabelBudget:
    """How many more labelled verdicts a run needs for its intervals to reach ``width``,
    and (``compare``) for a difference from another run to be detected.

    The model (stated in :attr:`LabelBudget.model` and the module docstring): each
    metric's variance on ``n`` labelled verdicts, from the per-verdict influence of the
    labels the run has now (delta method, clustered by verdict); with a correction the
    variance of the rectifier (people minus automated) on the people's verdicts plus the
    automated truth's over every verdict, so the budget says how many people's labels the
    correction saves.

    Parameters
    ----------
    store : Store
        The database the run is in.
    run_id : str
        The run.
    truth : Truth or str
        How the run is judged, as :func:`~truss_lab.evaluate._runs.sweep_run` takes it
        (with ``correct`` ppi or auto and the people's answers: a corrected budget).
    threshold : float
        Where precision, recall and F1 are taken.
    width : float
        The target width of their intervals (> 0).
    at : int or list of int, optional
        Budgets (labelled verdicts in all) to predict the width at (default: now, twice
        and four times now).
    compare : str, optional
        Another run: the labelled verdicts needed to detect the observed difference.
    power : float
        The power of that test, in (0, 1).
    confidence : float
        The intervals' level.
    score : str
        The candidates column to threshold.
    n_boot, random_state
        Replicates and seed of the bootstrap width now (the model's check).

    Returns
    -------
    LabelBudget
        Its tables (``table``, ``at``, ``comparison``).

    Raises
    ------
    BadInputError
        An unknown run or truth, a width <= 0, a power or confidence outside (0, 1), a
        budget < 1, a run without labels.

    See Also
    --------
    bootstrap_run : The intervals now.

    Examples
    --------
    >>> b = tl.label_budget(store, "good", width=0.05, at=[200, 800])
    >>> list(b.table["metric"]), b.width, sorted(set(b.at["labelled"]))
    (['precision', 'recall', 'f1'], 0.05, [200, 800])
    """
    from ._runs import bootstrap_run

    if not (isinstance(width, (int, float)) and math.isfinite(width) and width > 0):
        raise BadInputError(f"width must be a number > 0, got {width!r}", field="width")
    for name, v in (("power", power), ("confidence", confidence)):
        if not (isinstance(v, (int, float)) and 0 < v < 1):
            raise BadInputError(f"{name} must be in (0, 1), got {v!r}", field=name)
    check_threshold(threshold, "threshold", name="threshold")
    budgets = _check_at(at)
    t = Truth.resolve(store, truth_of(truth, where="label_budget"),
                      [run_id] + ([compare] if compare else []))
    var, fix, counts = _run_variance(t, store, run_id, threshold, score)
    n_now = next(iter(var.values())).n_labelled
    if not budgets:
        budgets = [n_now, 2 * n_now, 4 * n_now]
    boot_opts = {"thresholds": [threshold], "score": score, "n_boot": n_boot,
                 "confidence": confidence, "random_state": random_state}
    boot = bootstrap_run(store, run_id, truth=t, **boot_opts).table.iloc[0]
    rows, at_rows = [], []
    for name in BUDGET_METRICS:
        now = float(boot[f"{name}_high"] - boot[f"{name}_low"])
        model_now = float(var[name].width(n_now, confidence))
        var[name] = v = var[name].calibrated(now, confidence)
        needed = v.needed(width, confidence)
        row = {"metric": name, "value": v.value, "labelled": n_now, "width_now": now,
               "model_width_now": model_now, "needed": needed,
               "additional": max(0.0, needed - n_now) if math.isfinite(needed) else needed}
        if fix is not None:
            alone = v.needed(width, confidence, alone=True)
            row.update(labels_alone=alone, saved=alone - needed)
        rows.append(row)
        for n in budgets:
            r = {"metric": name, "labelled": n, "width": float(v.width(n, confidence))}
            if fix is not None:
                r["width_labels_alone"] = float(v.width(n, confidence, alone=True))
            at_rows.append(r)
    comparison = None
    if compare:
        var_b, _, counts_b = _run_variance(t, store, compare, threshold, score)
        boot_b = bootstrap_run(store, compare, truth=t, **boot_opts).table.iloc[0]
        var_b = {m: v.calibrated(float(boot_b[f"{m}_high"] - boot_b[f"{m}_low"]), confidence)
                 for m, v in var_b.items()}
        comparison = _comparison((var, counts), (var_b, counts_b), power)
    model = ("width(n) = width now x sqrt(V(n) / V(now)), V(n) the variance of each ratio "
             "on n labelled verdicts from its per-verdict influence (delta method, clustered "
             "by verdict) of the labels now"
             + (f": V(n) = (M/N)^2 Var(people - lam (1 - n/M) automated)/n + (N - n)/N^2 "
                f"Var(lam automated), N = {fix.n_verdicts} verdicts, M = the {v.n_frame} "
                "people could be asked about, lam the power weights (PPI++, per count); "
                "labels alone: Var(people)/n, calibrated alike"
                if fix is not None else ": V(n) = Var(influence)/n"))
    return LabelBudget(run_id=run_id, truth=t.name, correction=correction_of(fix),
                       threshold=float(threshold), width=float(width),
                       confidence=float(confidence), table=pd.DataFrame(rows),
                       at=pd.DataFrame(at_rows), model=model, compare=compare,
                       power=float(power), comparison=comparison)


def _comparison(mine: tuple[dict[str, VerdictVariance], pd.DataFrame | None],
                other: tuple[dict[str, VerdictVariance], pd.DataFrame | None],
                power: float) -> pd.DataFrame:
    """:attr:`LabelBudget.comparison` of a run against another: each as its (calibrated)
    variances and, judged by labels alone, its per-verdict counts (paired when both have
    them and share labelled verdicts)."""
    (var_a, counts_a), (var_b, counts_b) = mine, other
    paired = (counts_a is not None and counts_b is not None
              and len(counts_a.index.intersection(counts_b.index)) > 1)
    rows = []
    for name in BUDGET_METRICS:
        va, vb = var_a[name], var_b[name]
        d = va.value - vb.value
        if paired:
            assert counts_a is not None and counts_b is not None
            phi = _paired_phi(counts_a, counts_b, name, va, vb)
            var_d = _var(phi) * math.sqrt(va.scale * vb.scale)  # the runs' calibrations
            n_now = len(phi)

            def variance(n: Any, var_d: float = var_d) -> np.ndarray:
                return var_d / np.asarray(n, dtype=np.float64)
        else:
            n_now = min(va.n_labelled, vb.n_labelled)

            def variance(n: Any, va: VerdictVariance = va,
                         vb: VerdictVariance = vb) -> np.ndarray:
                return va.variance(n) + vb.variance(n)
        needed = needed_for_difference(d, variance, power=power)
        rows.append({"metric": name, "value_a": va.value, "value_b": vb.value,
                     "difference": d, "paired": paired, "labelled": n_now, "needed": needed,
                     "additional": max(0.0, needed - n_now) if math.isfinite(needed)
                     else needed})
    return pd.DataFrame(rows)
