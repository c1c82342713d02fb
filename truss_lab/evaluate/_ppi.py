"""Prediction-powered estimates: an automated truth corrected by the people's sample.

A matcher (or a judge) gives a truth for every annotated verdict, but it is
wrong on some of them; people gave the truth for a random sample of verdicts.
Prediction-powered inference (Angelopoulos et al., Science 2023; PPI++,
Angelopoulos, Duchi and Zrnic 2023) estimates a total as the automated total
over every verdict plus the people-minus-automated correction measured on the
sample:

    C_ppi(t) = lam * sum_{v in all} A_v(t) + sum_{v in sample} (H_v(t) - lam * A_v(t)) / pi_v

where ``A_v(t)`` / ``H_v(t)`` is verdict v's count at threshold t by the
automated / human truth and ``pi_v`` the probability that v was sampled
(``n / N`` for a simple random sample of n of N verdicts; Formats §5's
``inclusion_probability`` otherwise). Whatever the automated truth, the
expectation over the sample is the human total over every verdict; when it
agrees with the people it equals the automated total, with no sampling noise.
``lam`` = 1 is classic PPI, 0 the people's sample alone (Horvitz-Thompson),
and values between are PPI++'s power tuning: by default chosen from the data per
ratio and per count of it (:func:`power_lams`).

The counts corrected are those the truth decides (``kept`` is what the gate
writes, the same by any truth, so it stays exact):

- ``tp(t)``: kept lessons that are true (matched, useful);
- ``judged(t)``: kept lessons with a truth value (precision's denominator);
- ``positives``: recall's denominator (references; useful lessons).

Precision, recall and F1 are the ratios of the corrected counts (so
consistent, not exactly unbiased), clipped to [0, 1] (a correction can push a
count past its bound on a small sample).

**One sort.** The estimate is a sum over rows with a weight each: an automated
row of an unsampled verdict weighs ``lam``, one of a sampled verdict ``lam *
(1 - 1/pi_v)``, a human row ``1/pi_v``. The automated rows are swept once
(:func:`~truss_lab.evaluate._sweep.distinct_counts`: the plain sweep); the rows
of the sampled verdicts, a small share, are binned among its thresholds and
cumulated. Their sums and the power tuning change only where a threshold passes
one of their scores, so they are held per group of thresholds (a few thousand of
a million), and each threshold's estimate is combined from its group's a chunk of
thresholds at a time, in cache: the corrected sweep costs about twice the plain
one (benchmarks/bench_ppi.py).

**Intervals** (:func:`ppi_bootstrap`) resample verdicts in both sets: each
replicate draws the sampled verdicts with replacement among themselves and the
others among themselves (stratified), so every replicate has n people-matched
verdicts of N, as the design had; the tuning is re-chosen in each. Each verdict's
automated and people's histograms over the threshold grid are built once;
replicates are matrix products. Precision, recall and F1 get a Wilson interval on
the replicates' variance, a ratio at 0 or 1 whose unclipped replicates spread (and
every ratio of a fixed ``lam`` above 0) the wider of it and the t interval on those
(:func:`ratio_interval`), the rest percentile ones. The estimand of every interval is
the super-population: the process the verdicts at hand are a sample of (docs/explanation/ppi.md,
"What an interval is for"); no finite-population correction.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from statistics import NormalDist
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..core._errors import BadInputError, TrussLabWarning
from ..core._threads import blas_limited
from ..ingest._fields import INCLUSION
from ._bootstrap import (
    BAND_METRICS,
    BootstrapResult,
    ReplicateCounts,
    as_rng,
    band_domain,
    band_table,
    check_boot,
    percentile_interval,
    simultaneous_band,
)
from ._defaults import DEFAULT_OBJECTIVE, Correction
from ._objective import Objective, make_objective
from ._sweep import (
    UndefinedMetricWarning,
    as_labels,
    as_scores,
    check_lengths,
    distinct_counts,
    group_codes,
    metrics_from_counts,
    snap_thresholds,
    threshold_counts,
)
from ._truth import (
    ReferenceTruth,
    RunTruth,
    check_correct,
    judge_lessons,
)

__all__ = [
    "PEOPLE_MATCH_THRESHOLD",
    "RATIOS",
    "Correction",
    "PPIData",
    "PartialLabelsWarning",
    "PeopleMatcher",
    "check_correct",
    "clip_metrics",
    "correction_label",
    "correction_of",
    "labels_ppi",
    "partial_labels",
    "partial_matches",
    "power_lams",
    "ppi_bootstrap",
    "ppi_data",
    "ppi_on_verdicts",
    "ppi_sweep",
    "ratio_interval",
    "reference_ppi",
    "t_quantile",
    "wilson_interval",
]

#: Metrics :func:`ppi_bootstrap` gives intervals for, as the plain bootstrap does.
_METRICS = ("precision", "recall", "f1", "kept_per_verdict", "write_rate")
#: Replicate-by-verdict weight matrices hold at most this many cells per chunk.
_MAX_CELLS = 1 << 21


@dataclass(frozen=True, eq=False)
class PPIData:
    """The automated rows of every verdict and the human rows of the sampled ones.

    Rows as the sweep takes them (``y`` 0/1 truth, 0 where not judged; ``s``
    score, NaN never kept; ``judged`` has a truth value) with their verdicts
    (``groups_*``). :attr:`verdicts` is the population (every annotated
    verdict), :attr:`sampled` the verdicts people answered for and
    :attr:`inv_pi` 1 / the inclusion probability of each of them. Build it with
    :func:`ppi_data`.

    Parameters
    ----------
    y_auto, s_auto, judged_auto, groups_auto : numpy.ndarray
        Every row by the automated truth.
    y_human, s_human, judged_human, groups_human : numpy.ndarray
        The sampled verdicts' rows by the people's truth.
    verdicts : numpy.ndarray
        The population.
    sampled : numpy.ndarray
        The verdicts people answered for.
    inv_pi : numpy.ndarray
        1 / each sampled verdict's inclusion probability.
    auto_codes : numpy.ndarray or None
        Each automated row's index into ``verdicts`` (None: found when needed).
    verdict_places : numpy.ndarray or None
        Each of ``verdicts``' place among ``sampled``, -1 if not sampled (None: found
        when needed).
    """

    y_auto: np.ndarray = field(repr=False)
    s_auto: np.ndarray = field(repr=False)
    judged_auto: np.ndarray = field(repr=False)
    groups_auto: np.ndarray = field(repr=False)
    y_human: np.ndarray = field(repr=False)
    s_human: np.ndarray = field(repr=False)
    judged_human: np.ndarray = field(repr=False)
    groups_human: np.ndarray = field(repr=False)
    verdicts: np.ndarray = field(repr=False)
    sampled: np.ndarray = field(repr=False)
    inv_pi: np.ndarray = field(repr=False)
    # Set by ppi_data when it found the population from the rows (one hash of their
    # verdicts gives both), so the sample's rows and the bootstrap's codes are gathers.
    auto_codes: np.ndarray | None = field(default=None, repr=False)
    # Set by ppi_data beside auto_codes: its check that the sample is in the population
    # looked each verdict up among the sampled ones, which is what the sweep reads.
    verdict_places: np.ndarray | None = field(default=None, repr=False)

    @property
    def n_verdicts(self) -> int:
        """Every verdict of the population (all annotated ones)."""
        return len(self.verdicts)

    @property
    def n_sampled(self) -> int:
        """The verdicts people answered for."""
        return len(self.sampled)

    @cached_property
    def _sample_index(self) -> pd.Index:
        return pd.Index(self.sampled, dtype=object)

    @cached_property
    def auto_in_sample(self) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, inv_pi)``: the automated rows of sampled verdicts (bool) and, for
        each of those, its verdict's 1 / inclusion probability. Hashes the rows' verdicts
        once against the (small) sample, never the population: the sweep's cost."""
        if self.auto_codes is not None:
            # Each verdict's place in the sample (-1: not sampled), read per row by its
            # code: the rows' verdicts are not hashed again.
            places = (self.verdict_places if self.verdict_places is not None
                      else _positions(self._sample_index, self.verdicts))
            at = places.take(self.auto_codes)
            rows = at >= 0
            return rows, self.inv_pi[at[rows]]
        rows = pd.Series(self.groups_auto, dtype=object).isin(self._sample_index).to_numpy()
        at = _positions(self._sample_index, self.groups_auto[rows])
        return rows, self.inv_pi[at]

    @cached_property
    def _series(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """The ``(score, 1/pi_v)`` rows of the people-matched verdicts that a count at a
        threshold sums: the automated truth's tp and judged ones, then the people's."""
        in_s, inv_a = self.auto_in_sample
        ys, ss = self.y_auto[in_s].astype(bool), self.s_auto[in_s]
        js = self.judged_auto[in_s].astype(bool)
        yh, jh = self.y_human.astype(bool), self.judged_human.astype(bool)
        inv_h, sh = self.inv_pi_human, self.s_human
        return [(ss[ys], inv_a[ys]), (ss[js], inv_a[js]), (sh[yh], inv_h[yh]),
                (sh[jh], inv_h[jh])]

    @cached_property
    def inv_pi_human(self) -> np.ndarray:
        """1 / inclusion probability of each human row's verdict."""
        return self.inv_pi[_positions(self._sample_index, self.groups_human)]

    @cached_property
    def codes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(auto, human, inv_pi)``: each row's verdict index into :attr:`verdicts`, and
        per verdict 1 / its inclusion probability (0: not sampled). For the bootstrap."""
        index = pd.Index(self.verdicts, dtype=object)
        inv = np.zeros(len(index))
        inv[_positions(index, self.sampled)] = self.inv_pi
        auto = (self.auto_codes if self.auto_codes is not None
                else _positions(index, self.groups_auto).astype(np.int64))
        if (auto < 0).any():
            bad = int(np.flatnonzero(auto < 0)[0])
            raise BadInputError(f"verdict {self.groups_auto[bad]!r} at position {bad} is not "
                                "among the verdicts evaluated", field="groups_auto")
        return auto, _positions(index, self.groups_human).astype(np.int64), inv


def _positions(within: Any, values: np.ndarray) -> np.ndarray:
    """Each of ``values``' place among the distinct ``within`` (-1: absent), both as object
    Indexes: a bare array of strings pandas converts to its Arrow string type first (a
    copy of every value, which cost more than the look-up)."""
    index = within if isinstance(within, pd.Index) else pd.Index(within, dtype=object,
                                                                 copy=False)
    return index.get_indexer(pd.Index(values, dtype=object, copy=False))


def _groups(groups: Any, name: str) -> np.ndarray:
    arr = groups.to_numpy() if isinstance(groups, pd.Series | pd.Index) else np.asarray(groups)
    if arr.ndim != 1:
        raise BadInputError(f"expected a 1-D array, got shape {arr.shape}", field=name)
    return arr.astype(object, copy=False)


def _outside(values: np.ndarray, within: np.ndarray, name: str, what: str) -> None:
    """Raise naming the first of ``values`` that is not among ``within``."""
    ok = pd.Series(values, dtype=object).isin(pd.Index(within, dtype=object)).to_numpy()
    if not ok.all():
        bad = int(np.flatnonzero(~ok)[0])
        raise BadInputError(f"verdict {values[bad]!r} at position {bad} is not among {what}",
                            field=name)


def _judged(judged: Any, n: int, name: str) -> np.ndarray:
    if judged is None:
        return np.ones(n, dtype=np.uint8)
    out = as_labels(judged, name)
    if len(out) != n:
        raise BadInputError(f"expected {n} values, got {len(out)}", field=name)
    return out


def ppi_data(
    y_auto: Any, s_auto: Any, groups_auto: Any,
    y_human: Any, s_human: Any, groups_human: Any,
    *,
    judged_auto: Any = None,
    judged_human: Any = None,
    verdicts: Any = None,
    sampled: Any = None,
    inclusion_probability: Any = None,
) -> PPIData:
    """Check and index the two truths of one run for :func:`ppi_sweep` / :func:`ppi_bootstrap`.

    ``*_auto``: every row by the automated truth (all annotated verdicts);
    ``*_human``: the rows of the sampled verdicts by the people's truth (the
    same lessons; misses and duplicates by the people's matches). ``verdicts``:
    the population (default: the distinct automated groups);
    ``sampled``: the verdicts people answered for (default: the distinct human
    groups; a sampled verdict may have no row, e.g. nothing to match);
    ``inclusion_probability``: per sampled verdict, in ``sampled``'s order, its
    probability of having been sampled (default: n / N for each: a simple
    random sample).

    Parameters
    ----------
    y_auto, s_auto, groups_auto : array-like
        Every row's truth, score and verdict by the automated truth.
    y_human, s_human, groups_human : array-like
        The sampled verdicts' rows by the people's truth.
    judged_auto, judged_human : array of bool, optional
        Which rows have a truth value (default all).
    verdicts : array-like, optional
        The population (above).
    sampled : array-like, optional
        The verdicts people answered for (above).
    inclusion_probability : array-like, optional
        Per sampled verdict, its probability of having been sampled (above).

    Returns
    -------
    PPIData
        The checked, indexed data.

    Raises
    ------
    BadInputError
        Bad arrays, no sampled verdict, a sampled verdict outside the population.
    """
    ya, sa = as_labels(y_auto, "y_auto"), as_scores(s_auto, "s_auto")
    yh, sh = as_labels(y_human, "y_human"), as_scores(s_human, "s_human")
    ga, gh = _groups(groups_auto, "groups_auto"), _groups(groups_human, "groups_human")
    check_lengths(y_auto=ya, s_auto=sa, groups_auto=ga)
    check_lengths(y_human=yh, s_human=sh, groups_human=gh)
    ja = _judged(judged_auto, len(ya), "judged_auto")
    jh = _judged(judged_human, len(yh), "judged_human")
    codes = None
    if verdicts is None:
        # The population and each row's place in it from one hash of the rows' verdicts
        # (as pd.unique: in order of appearance, a missing value one verdict of its own).
        codes, pop = group_codes(ga)
    else:
        # Rows outside ``verdicts`` are refused by :attr:`PPIData.codes` (the bootstrap,
        # which indexes every row anyway), not here: hashing every row against the
        # population would double the sweep's cost.
        pop = pd.unique(_groups(np.asarray(list(verdicts), dtype=object), "verdicts"))
    samp = pd.unique(gh) if sampled is None else pd.unique(
        _groups(np.asarray(list(sampled), dtype=object), "sampled"))
    samp = np.asarray(samp, dtype=object)
    if len(samp) == 0:
        raise BadInputError("people answered for no verdict of the run: nothing to correct "
                            "with (use correct='none')", field="sampled")
    # Both are distinct: every sampled verdict is in the population when as many of the
    # population are sampled (one pass over the population against the small sample).
    places = None if codes is None else _positions(samp, pop)
    if places is None or np.count_nonzero(places >= 0) != len(samp):
        _outside(samp, pop, "sampled", "the verdicts evaluated")
    _outside(gh, samp, "groups_human", "the sampled verdicts")
    n, n_all = len(samp), len(pop)
    if inclusion_probability is None:
        inv_pi = np.full(n, n_all / n)
    else:
        p = as_scores(inclusion_probability, "inclusion_probability")
        if len(p) != n:
            raise BadInputError(f"expected one inclusion probability per sampled verdict "
                                f"({n}), got {len(p)}", field="inclusion_probability")
        bad = ~((p > 0) & (p <= 1))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise BadInputError(f"inclusion probability of verdict {samp[i]!r} is {p[i]!r}; "
                                "expected a number in (0, 1]", field="inclusion_probability")
        inv_pi = 1.0 / p
    return PPIData(y_auto=ya & ja, s_auto=sa, judged_auto=ja, groups_auto=ga,
                   y_human=yh & jh, s_human=sh, judged_human=jh, groups_human=gh,
                   verdicts=np.asarray(pop, dtype=object), sampled=samp, inv_pi=inv_pi,
                   auto_codes=codes, verdict_places=places)


def ppi_on_verdicts(data: PPIData, verdicts: Any) -> PPIData | None:
    """``data`` restricted to ``verdicts`` (a subset of its population: a training side,
    a slice), each sampled verdict keeping its inclusion probability (domain estimation);
    None when people answered for none of them."""
    keep = pd.Index(np.asarray(list(verdicts), dtype=object), dtype=object)
    sampled = pd.Index(data.sampled, dtype=object).isin(keep)
    if not sampled.any():
        return None
    a = pd.Index(data.groups_auto, dtype=object).isin(keep)
    h = pd.Index(data.groups_human, dtype=object).isin(keep)
    return ppi_data(data.y_auto[a], data.s_auto[a], data.groups_auto[a], data.y_human[h],
                    data.s_human[h], data.groups_human[h], judged_auto=data.judged_auto[a],
                    judged_human=data.judged_human[h], verdicts=np.asarray(keep, dtype=object),
                    sampled=data.sampled[sampled],
                    inclusion_probability=1.0 / data.inv_pi[sampled])


def _check_lam(lam: float | None) -> float | None:
    if lam is None:
        return None
    if isinstance(lam, bool) or not isinstance(lam, int | float) or not 0.0 <= lam <= 1.0:
        raise BadInputError(f"lam must be None (tuned) or a number in [0, 1], got {lam!r}",
                            field="lam")
    return float(lam)


def clip_metrics(m: dict[str, np.ndarray], n_pos: Any) -> dict[str, np.ndarray]:
    """Precision, recall and F1 of corrected counts clipped to [0, 1] (NaN stays);
    recall is NaN where the corrected number of positives ``n_pos`` is not above 0."""
    with np.errstate(invalid="ignore"):
        m["recall"] = np.where(np.asarray(n_pos) > 0, m["recall"], np.nan)
    for k in ("precision", "recall", "f1"):
        m[k] = np.clip(m[k], 0.0, 1.0)
    return m


# ------------------------------------------------------------------- power tuning (PPI++)

#: The ratios power tuning is chosen for: (numerator, denominator) coefficients of the
#: counts (tp, judged, positives); F1 = 2 tp / (judged + positives).
RATIOS: dict[str, tuple[tuple[float, float, float], tuple[float, float, float]]] = {
    "precision": ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0)),
    "recall": ((1.0, 0.0, 0.0), (0.0, 0.0, 1.0)),
    "f1": ((2.0, 0.0, 0.0), (0.0, 1.0, 1.0)),
}
#: Per people-matched verdict, six counts times 1/pi_v: the people's tp, judged and
#: positives (kinds 0-2), the automated truth's (3-5).
_KINDS = 6
#: Relative ridge of the tuning's normal equations: a direction the sample cannot
#: tell (a count constant over the people-matched verdicts) keeps lam = 1.
_RIDGE = 1e-9
#: A ratio this close to 0 or 1 (p (1 - p) below it) has no variance to tell its
#: effective size: :func:`wilson_interval` takes the people's own count.
_DEGENERATE = 1e-6

#: The co-moments power tuning reads: automated kinds with automated ones and with the
#: people's (never the people's among themselves).
_PAIRS: tuple[tuple[int, int], ...] = tuple(
    [(k, m) for k in range(3, _KINDS) for m in range(k, _KINDS)]
    + [(k, m) for k in range(3, _KINDS) for m in range(3)])
_PAIR_ROW = {pair: i for i, pair in enumerate(_PAIRS)}
#: ``cov(k, l)``: the co-moment of kinds k and l over the people-matched verdicts
#: (centred, unnormalised), an array over thresholds (and replicates).
CoMoment = Callable[[int, int], np.ndarray]
#: Three counts (tp, judged, positives): two per threshold, positives one number.
Counts3 = tuple[np.ndarray, np.ndarray, float]


def _solve(a: list[list[Any]], b: list[Any]) -> list[np.ndarray]:
    """``x`` with ``a x = b`` for a symmetric ``a`` of 1 to 3 unknowns, elementwise over
    arrays (adjugate over determinant: numpy's solve would loop per threshold); 0
    where singular."""
    k = len(b)
    if k == 1:
        det, num = a[0][0], [b[0]]
    elif k == 2:
        det = a[0][0] * a[1][1] - a[0][1] * a[0][1]
        num = [b[0] * a[1][1] - a[0][1] * b[1], a[0][0] * b[1] - a[0][1] * b[0]]
    else:
        c00 = a[1][1] * a[2][2] - a[1][2] * a[1][2]
        c01 = a[0][2] * a[1][2] - a[0][1] * a[2][2]
        c02 = a[0][1] * a[1][2] - a[0][2] * a[1][1]
        c11 = a[0][0] * a[2][2] - a[0][2] * a[0][2]
        c12 = a[0][2] * a[0][1] - a[0][0] * a[1][2]
        c22 = a[0][0] * a[1][1] - a[0][1] * a[0][1]
        det = a[0][0] * c00 + a[0][1] * c01 + a[0][2] * c02
        num = [c00 * b[0] + c01 * b[1] + c02 * b[2], c01 * b[0] + c11 * b[1] + c12 * b[2],
               c02 * b[0] + c12 * b[1] + c22 * b[2]]
    det = np.asarray(det)
    ok = det != 0
    safe = np.where(ok, det, 1.0)
    return [np.where(ok, x / safe, 0.0) for x in num]


def power_lams(cov: CoMoment, tp: Any, judged: Any, n_pos: Any) -> dict[str, np.ndarray]:
    """PPI++ power tuning of each ratio of :data:`RATIOS`, chosen from the data.

    Returns per ratio its weights ``lam`` of (tp, judged, positives), shape
    ``(..., 3)`` over thresholds (and replicates), each in [0, 1]. The ratio
    ``theta = num / den`` is linearised at its classic-PPI value (``tp``,
    ``judged``, ``n_pos``: the lam = 1 counts): its estimate's error is
    ``sum_v (Z_v - sum_k lam_k X_kv) / pi_v`` over the people-matched verdicts, with
    ``Z = sum_k c_k H_k`` the people's linearised count, ``X_k = c_k A_k`` the
    automated one of count k and ``c_k = num_k - theta den_k``. The lam minimising
    its variance is the regression of Z on the X_k (normal equations over the
    co-moments ``cov``); each is then clipped to [0, 1] (0: the people alone, 1:
    classic PPI). A direction the sample cannot tell keeps lam = 1 (the ridge
    pulls towards it). With one count per ratio this is Angelopoulos, Duchi and
    Zrnic's lam* = Cov(Z, X) / Var(X); here each count of the ratio gets its own
    weight (a regression estimator with one covariate per count). A count both
    truths agree on (recall's denominator when both count the same references)
    need not keep lam = 1: it also predicts the people's numerator, and the joint
    regression gives it that share.
    """
    counts = (np.asarray(tp, dtype=np.float64), np.asarray(judged, dtype=np.float64),
              np.asarray(n_pos, dtype=np.float64))
    shape = np.broadcast_shapes(*(c.shape for c in counts))
    memo: dict[tuple[int, int], np.ndarray] = {}

    def co(k: int, m: int) -> np.ndarray:  # each co-moment read once for every ratio
        key = (min(k, m), max(k, m)) if k >= 3 and m >= 3 else (k, m)
        if key not in memo:
            memo[key] = cov(*key)
        return memo[key]

    out: dict[str, np.ndarray] = {}
    for name, (num, den) in RATIOS.items():
        n1 = sum(c * x for c, x in zip(num, counts, strict=True) if c)
        d1 = sum(c * x for c, x in zip(den, counts, strict=True) if c)
        with np.errstate(divide="ignore", invalid="ignore"):
            theta = np.where(d1 > 0, np.true_divide(n1, d1), 0.0)
        kinds = [k for k in range(3) if num[k] or den[k]]
        coef: dict[int, Any] = {k: num[k] - theta * den[k] if den[k] else num[k]
                                for k in kinds}
        za = [sum(coef[j] * co(3 + i, j) for j in kinds) for i in kinds]
        sxx = [[coef[i] * coef[j] * co(3 + i, 3 + j) for j in kinds] for i in kinds]
        # Solved for lam - 1, so that the ridge pulls an untold direction to lam = 1.
        rhs = [coef[i] * za[a] - sum(sxx[a]) for a, i in enumerate(kinds)]
        ridge = _RIDGE * sum(sxx[a][a] for a in range(len(kinds))) / len(kinds)
        for a in range(len(kinds)):
            sxx[a][a] = sxx[a][a] + ridge
        delta = _solve(sxx, rhs)
        lam = np.ones((*shape, 3))
        for a, k in enumerate(kinds):
            lam[..., k] = np.clip(1.0 + delta[a], 0.0, 1.0)
        out[name] = lam
    return out


def _sample_events(data: PPIData) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(score, kind, verdict, value)`` of every count increment in the people-matched
    verdicts: tp and judged rows at their score, positives at +inf (counted at any
    threshold); ``verdict`` indexes :attr:`PPIData.sampled`, ``value`` is 1/pi_v."""
    in_s, inv_a = data.auto_in_sample
    sources = (
        (0, data.y_human, data.s_human, data.judged_human, data.groups_human,
         data.inv_pi_human),
        (3, data.y_auto[in_s], data.s_auto[in_s], data.judged_auto[in_s],
         data.groups_auto[in_s], inv_a),
    )
    parts: list[tuple[np.ndarray, ...]] = []
    for off, y, s, j, g, inv in sources:
        v = _positions(data._sample_index, g)
        y, j, ok = y.astype(bool), j.astype(bool), ~np.isnan(s)
        for kind, rows, score in ((off, y & ok, s), (off + 1, j & ok, s),
                                  (off + 2, y, np.full(len(s), np.inf))):
            parts.append((score[rows], np.full(int(rows.sum()), kind), v[rows], inv[rows]))
    return tuple(np.concatenate(c) for c in zip(*parts, strict=True))  # type: ignore[return-value]


@dataclass(frozen=True, eq=False)
class _TuningStates:
    """The co-moments of the six kinds over the people-matched verdicts at every
    threshold, from one sort of their rows: they change only at the scores of those
    rows (``levels``, descending), so a threshold's state is how many levels are at
    or above it (0: none), and each state's co-moments are one column of
    ``centred`` (pair ``_PAIRS[i]`` in row i).

    Power tuning is chosen per state: a ratio is linearised at its classic-PPI value
    at the state's own threshold (:meth:`canonical`: the lowest level at or above
    the threshold), so every threshold between two people-matched rows' scores gets
    the same weights whichever thresholds a sweep asks for; a sweep over a million
    thresholds tunes a few thousand states."""

    levels: np.ndarray
    centred: np.ndarray

    @classmethod
    def of(cls, data: PPIData) -> _TuningStates:
        """Rows in descending score each add 1/pi_v to one kind of their verdict, which
        moves the sum of products of kinds k and l by that value times the verdict's
        running count of the other (exclusive cumulative sums within the verdict);
        cumulated, read at the last row of each level, minus the products of the sums
        over n: the co-moments."""
        score, kind, verdict, value = _sample_events(data)
        order = np.argsort(-score, kind="stable")
        score, kind, verdict, value = score[order], kind[order], verdict[order], value[order]
        e = len(score)
        d = np.zeros((e, _KINDS))
        d[np.arange(e), kind] = value
        by_v = np.argsort(verdict, kind="stable")
        excl = np.cumsum(d[by_v], axis=0) - d[by_v]
        new_v = np.r_[True, verdict[by_v][1:] != verdict[by_v][:-1]] if e else np.ones(0, bool)
        excl -= excl[np.flatnonzero(new_v)][np.cumsum(new_v) - 1]
        before = np.empty_like(excl)
        before[by_v] = excl
        # Only the pairs power tuning reads: automated with automated or with people's.
        # A row moves the pairs of its own kind only: the other's running count times its
        # value, and for a kind with itself twice its running count plus its value.
        a, b = np.array(_PAIRS).T
        rows = [np.flatnonzero(kind == k) for k in range(_KINDS)]
        inc = np.zeros((e, len(_PAIRS)))
        for i, (k, m) in enumerate(_PAIRS):
            r = rows[k]
            if k == m:
                inc[r, i] = value[r] * ((before[r, k] + before[r, k]) + value[r])
                continue
            inc[r, i] = value[r] * before[r, m]
            inc[rows[m], i] = value[rows[m]] * before[rows[m], k]
        last = np.flatnonzero(np.r_[score[1:] != score[:-1], True]) if e else np.zeros(0, int)
        prod = np.hstack([np.zeros((len(_PAIRS), 1)), np.cumsum(inc, axis=0)[last].T])
        sums = np.hstack([np.zeros((_KINDS, 1)), np.cumsum(d, axis=0)[last].T])
        centred = prod - sums[a] * sums[b] / float(data.n_sampled)
        return cls(levels=score[last], centred=centred)

    def state(self, thr_desc: np.ndarray) -> np.ndarray:
        """Each (descending) threshold's state: the number of levels at or above it;
        each level marks the first threshold at or below it, the marks cumulated (a
        lookup per level, not per threshold)."""
        first = np.searchsorted(-np.asarray(thr_desc, dtype=np.float64), -self.levels,
                                side="left")
        marks = np.bincount(first, minlength=len(thr_desc) + 1)[:len(thr_desc)]
        return np.cumsum(marks)

    def canonical(self, state: np.ndarray) -> np.ndarray:
        """Each state's own threshold: its lowest level (+inf for state 0)."""
        return np.where(state > 0, self.levels[np.maximum(state - 1, 0)], np.inf)

    def cov(self, state: np.ndarray) -> CoMoment:
        """The co-moments at ``state`` (one value per element), of the pairs in
        :data:`_PAIRS` (either order)."""
        def cov(k: int, m: int) -> np.ndarray:
            row = _PAIR_ROW.get((k, m), _PAIR_ROW.get((m, k)))
            return self.centred[row].take(state)
        return cov


@dataclass(frozen=True, eq=False)
class _Parts:
    """The counts :func:`ppi_sweep` combines (:func:`_sweep_parts`).

    Per threshold, in the order asked: ``thr``, ``kept`` (exact), the automated
    truth's ``tp`` and ``judged`` over every row, and its ``group``. The sums over the
    people-matched verdicts change only where a threshold passes the score of one of
    their rows, so they are held per group of thresholds (a few thousand in a sweep
    over a million): ``less``, the automated rows' 1/pi_v there (tp, judged), and
    ``human``, the people's (tp, judged, positives); ``auto_pos`` is the automated
    part of the positives (every automated one less 1/pi_v of the sampled ones).
    ``thr_desc``: the thresholds descending (``ascending``: the other way, a copy);
    ``starts``: each group's first place among them; ``raw``: ``(tp, judged)`` at
    ``thr_desc`` when those are every distinct score (None: given thresholds)."""

    thr: np.ndarray
    kept: np.ndarray
    tp: np.ndarray
    judged: np.ndarray
    group: np.ndarray
    thr_desc: np.ndarray
    ascending: np.ndarray
    starts: np.ndarray
    less: tuple[np.ndarray, np.ndarray]
    auto_pos: float
    human: Counts3
    raw: tuple[np.ndarray, np.ndarray] | None


def _sweep_parts(data: PPIData, thresholds: Any, snap: bool) -> _Parts:
    """:class:`_Parts` of :func:`ppi_sweep`: one sort of the automated rows (or their
    counts at the given thresholds), and the people-matched verdicts' rows binned
    among the thresholds."""
    ya, sa, ja = data.y_auto, data.s_auto, data.judged_auto
    order = None
    if thresholds is None:
        thr, kept, tp_a = distinct_counts(ya, sa)
        jk_a = kept if ja.all() else threshold_counts(ja, sa, thr)[1]
        thr_desc = thr
    else:
        thr = as_scores(thresholds, "thresholds")
        if np.isnan(thr).any():
            raise BadInputError("thresholds must not contain NaN", field="thresholds")
        if snap:
            thr = snap_thresholds(thr, sa)
        kept, tp_a = threshold_counts(ya, sa, thr)
        jk_a = kept if ja.all() else threshold_counts(ja, sa, thr)[1]
        order = np.argsort(-thr, kind="stable")
        thr_desc = thr[order]
    ascending = np.ascontiguousarray(thr_desc[::-1])
    starts, (tp_s, jk_s, tp_h, jk_h), (pos_s, _, pos_h, _) = _grouped_at(
        data._series, ascending)
    group = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, len(thr_desc))))
    if order is not None:  # to the given order
        group[order] = group.copy()
    return _Parts(thr=thr, kept=kept, tp=tp_a, judged=jk_a, group=group, thr_desc=thr_desc,
                  ascending=ascending, starts=starts, less=(tp_s, jk_s),
                  auto_pos=float(np.count_nonzero(ya)) - pos_s, human=(tp_h, jk_h, pos_h),
                  raw=(tp_a, jk_a) if order is None else None)


def _parts_at(data: PPIData, thr_desc: np.ndarray, tp_a: np.ndarray,
              jk_a: np.ndarray) -> tuple[Counts3, Counts3]:
    """The automated part (every automated row: ``tp_a``, ``jk_a``, less 1/pi_v of the
    sampled ones) and the people's part (1/pi_v) of tp, judged and positives at the
    descending thresholds ``thr_desc``."""
    (tp_s, jk_s, tp_h, jk_h), (pos_s, _, pos_h, _) = _weighted_at_many(
        data._series, thr_desc)
    auto = (tp_a - tp_s, jk_a - jk_s, float(np.count_nonzero(data.y_auto)) - pos_s)
    return auto, (tp_h, jk_h, pos_h)


def _bins(series: list[tuple[np.ndarray, np.ndarray]], ascending: np.ndarray
          ) -> list[np.ndarray]:
    """Each row's bin among the thresholds (``ascending``, read descending): how many are
    above its score (it is counted from that threshold on); NaN scores in the last bin
    (never counted)."""
    n_t = len(ascending)
    scores = np.concatenate([s for s, _ in series])
    # Each distinct score looked up once, in ascending order: a search then starts where
    # the last one ended, in cache, instead of at random among a million thresholds.
    distinct, inverse = np.unique(scores, return_inverse=True)
    b = (n_t - np.searchsorted(ascending, distinct, side="right"))[inverse]
    b[np.isnan(scores)] = n_t
    return np.split(b, np.cumsum([len(s) for s, _ in series[:-1]]))


def _weighted_at_many(series: list[tuple[np.ndarray, np.ndarray]], thr_desc: np.ndarray
                      ) -> tuple[list[np.ndarray], list[float]]:
    """``(at, totals)``: per ``(s, w)`` series ``at[k]`` the sum of ``w`` over rows with
    ``s >= thr_desc[k]`` (thresholds descending) and the total over every row (NaN
    scores too), in one histogram and one cumulative sum (each a pass over every
    threshold)."""
    n_t = len(thr_desc)
    bins = _bins(series, np.ascontiguousarray(thr_desc[::-1]))
    flat = [b + i * (n_t + 1) for i, b in enumerate(bins)]
    h = np.bincount(np.concatenate(flat), weights=np.concatenate([w for _, w in series]),
                    minlength=len(series) * (n_t + 1)).reshape(len(series), n_t + 1)
    cs = np.cumsum(h, axis=1)
    return [cs[i, :n_t] for i in range(len(series))], [float(cs[i, n_t])
                                                       for i in range(len(series))]


def _grouped_at(series: list[tuple[np.ndarray, np.ndarray]], ascending: np.ndarray
                ) -> tuple[np.ndarray, list[np.ndarray], list[float]]:
    """:func:`_weighted_at_many` per group of thresholds: ``(starts, at, totals)``, group
    i the thresholds from ``starts[i]`` to the next start and ``at[j][i]`` series j's sum
    at each of them. A sum changes only at a threshold that passes a row's score (its
    bin), so the groups start at those; the bins summed in the same order as the
    per-threshold cumulative sum (whose empty bins add 0), so the same numbers, for
    passes over the rows instead of every threshold."""
    n_t = len(ascending)
    bins = _bins(series, ascending)
    edges = np.unique(np.concatenate([np.array([0, n_t]), *bins]))  # the last: NaN, totals
    flat = [np.searchsorted(edges, b) + i * len(edges) for i, b in enumerate(bins)]
    h = np.bincount(np.concatenate(flat), weights=np.concatenate([w for _, w in series]),
                    minlength=len(series) * len(edges)).reshape(len(series), len(edges))
    cs = np.cumsum(h, axis=1)
    return edges[:-1], [cs[i, :-1] for i in range(len(series))], [
        float(cs[i, -1]) for i in range(len(series))]


def _classic_at(data: PPIData, canon: np.ndarray, ascending: np.ndarray,
                raw: tuple[np.ndarray, np.ndarray] | None) -> tuple[Any, ...]:
    """Classic-PPI (lam = 1) tp, judged and positives at the descending thresholds
    ``canon``. The automated counts over every row are read off the sweep's own
    (``raw``, at the thresholds, ``ascending`` read descending) when it has every
    distinct score (a count at any threshold is the count at the lowest distinct score
    at or above it), else counted."""
    if raw is not None:
        at = len(ascending) - np.searchsorted(ascending, canon, side="left") - 1
        some = at >= 0
        tp_c, jk_c = (np.where(some, c.take(np.maximum(at, 0)), 0) for c in raw)
    else:
        ya, sa, ja = data.y_auto, data.s_auto, data.judged_auto
        kept_c, tp_c = threshold_counts(ya, sa, canon)
        jk_c = kept_c if ja.all() else threshold_counts(ja, sa, canon)[1]
    a, h = _parts_at(data, canon, tp_c, jk_c)
    return a[0] + h[0], a[1] + h[1], a[2] + h[2]


def _tuned(data: PPIData, parts: _Parts) -> dict[str, np.ndarray]:
    """:func:`power_lams` per group of thresholds of ``parts`` (one tuning state each:
    :class:`_TuningStates` changes where the people-matched rows' scores are passed,
    as the groups' sums do)."""
    tuning = _TuningStates.of(data)
    used = tuning.state(parts.thr_desc[parts.starts])
    return power_lams(tuning.cov(used), *_classic_at(data, tuning.canonical(used),
                                                     parts.ascending, parts.raw))


class _Lams(Mapping[str, np.ndarray]):
    """``attrs["ppi"]["lams"]`` of a tuned :func:`ppi_sweep`: per ratio its weights
    (thresholds x 3), held per group of thresholds and expanded when first read (a
    sweep of a million thresholds would otherwise write 72 MB nobody may read)."""

    def __init__(self, per_group: dict[str, np.ndarray], group: np.ndarray) -> None:
        self._per_group, self._group = per_group, group
        self._read: dict[str, np.ndarray] = {}

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._read:
            self._read[name] = self._per_group[name].take(self._group, axis=0)
        return self._read[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._per_group)

    def __len__(self) -> int:
        return len(self._per_group)


#: Thresholds :func:`ppi_sweep` combines at once: the two dozen temporaries of a chunk
#: stay in the CPU's cache instead of each being a pass over memory.
_SWEEP_CHUNK = 1 << 14
#: The columns :func:`ppi_sweep` computes, in their order after threshold and kept.
_SWEEP_COLUMNS = ("tp", "fp", "fn", "precision", "recall", "f1", "kept_per_verdict",
                  "write_rate")


def ppi_sweep(
    data: PPIData,
    *,
    thresholds: Any = None,
    lam: float | None = None,
    snap: bool = True,
) -> pd.DataFrame:
    """The sweep of :func:`~truss_lab.evaluate._sweep.sweep` with prediction-powered counts.

    Same columns, for threshold row ``i``: ``threshold``; ``kept`` (exact: what
    the gate writes); ``tp``, ``fp`` = judged - tp and ``fn`` = positives - tp,
    corrected (floats); ``precision``, ``recall``, ``f1`` (clipped to [0, 1]);
    ``kept_per_verdict`` = kept / every verdict; ``write_rate`` = kept /
    automated rows. Thresholds: by default every distinct automated score,
    descending (one sort); given ones in their order.

    ``lam``: None (default) tunes the power at every threshold for each ratio
    (:func:`power_lams`: precision, recall and F1 each get their own weights of
    its counts, so each is its own PPI++ estimate; ``tp``, ``fp`` and ``fn`` are
    F1's counts, so ``f1 = 2 tp / (2 tp + fp + fn)``); a number in [0, 1] weighs
    every automated count by it (1 classic PPI, 0 the people's sample alone). For a
    fixed lam every count is unbiased; the tuned lam is chosen from the same
    sample, so the estimate is consistent and, to first order, as good as the best
    fixed lam (PPI++), not exactly unbiased. ``df.attrs["ppi"]`` holds
    ``n_verdicts``, ``n_sampled``, ``lam`` (the number, or ``"tuned"``) and, tuned,
    ``lams``: per ratio an array (thresholds x 3) of the weights of tp, judged and
    positives.

    Parameters
    ----------
    data : PPIData
        The two truths of the run.
    thresholds : array-like, optional
        Where to evaluate (above).
    lam : float, optional
        The power weight (above; None: tuned).
    snap : bool, default True
        Round given thresholds as typed.

    Returns
    -------
    pandas.DataFrame
        The corrected sweep (above).
    """
    lam = _check_lam(lam)
    p = _sweep_parts(data, thresholds, snap)
    tuned = _tuned(data, p) if lam is None else None
    fixed = {name: np.full((1, 3), lam) for name in RATIOS}
    # Weights gathered count by count (a gather of 8-byte items is numpy's fast one).
    by_count = {} if tuned is None else {k: np.ascontiguousarray(v.T)
                                         for k, v in tuned.items()}
    n_t = len(p.thr)
    cols = {name: np.empty(n_t) for name in _SWEEP_COLUMNS}
    no_pos = False
    for lo in range(0, n_t, _SWEEP_CHUNK):  # each threshold from its group's sums
        at = slice(lo, lo + _SWEEP_CHUNK)
        g = p.group[at]
        auto = (p.tp[at] - p.less[0].take(g), p.judged[at] - p.less[1].take(g), p.auto_pos)
        human = (p.human[0].take(g), p.human[1].take(g), p.human[2])
        lams = fixed if tuned is None else {k: v.take(g, axis=1).T
                                            for k, v in by_count.items()}
        est = _ratios(auto, human, lams)
        tp, judged, n_pos = est["f1"]
        no_pos = no_pos or bool(np.any(n_pos <= 0))
        m = _ratio_metrics(metrics_from_counts(p.kept[at], tp, len(data.y_auto), n_pos,
                                               data.n_verdicts, judged), est)
        m.update(tp=tp, fp=judged - tp, fn=n_pos - tp)
        for name in _SWEEP_COLUMNS:
            cols[name][at] = m[name]
    if no_pos:
        warnings.warn("the corrected number of positives is not above 0: recall is undefined "
                      "(NaN)", UndefinedMetricWarning, stacklevel=2)
    df = pd.DataFrame({"threshold": p.thr, "kept": p.kept, **cols}, copy=False)
    df.attrs["ppi"] = {"n_verdicts": data.n_verdicts, "n_sampled": data.n_sampled,
                       "lam": "tuned" if lam is None else lam}
    if tuned is not None:
        df.attrs["ppi"]["lams"] = _Lams(tuned, p.group)
    return df


def _ratios(auto: tuple[Any, ...], human: tuple[Any, ...],
            lams: dict[str, np.ndarray]) -> dict[str, tuple[np.ndarray, ...]]:
    """Per ratio of :data:`RATIOS` its counts (tp, judged, positives) at its weights
    (a count the ratio does not read is left at the people's part)."""
    out = {}
    for name, lam in lams.items():
        num, den = RATIOS[name]
        out[name] = tuple(lam[..., k] * auto[k] + human[k] if num[k] or den[k] or name == "f1"
                          else human[k] for k in range(3))
    # The kept lessons that are true cannot outnumber the kept lessons judged: a
    # correction that counts more (precision past 1, clipped) has overcounted them, and
    # recall and F1 read the same overcount. Their true-positive counts are held to the
    # judged count (precision's for recall, which has none of its own; F1's own), so a
    # sample that pushes precision to 1 does not push recall above the truth with it
    # (scripts/ppi_design_coverage.py, row (c): recall covered 0.888 there before, 0.935
    # after). A judged count corrected below 0 bounds nothing.
    if "recall" in out and "precision" in out:
        rtp, rj, rpos = out["recall"]
        out["recall"] = (_at_most_judged(rtp, out["precision"][1]), rj, rpos)
    if "f1" in out:
        ftp, fj, fpos = out["f1"]
        out["f1"] = (_at_most_judged(ftp, fj), fj, fpos)
    return out


def _at_most_judged(tp: np.ndarray, judged: np.ndarray) -> np.ndarray:
    """``tp`` held to the judged count where that is not below 0 (:func:`_ratios`)."""
    return np.where(judged >= 0, np.minimum(tp, judged), tp)


def _ratio_metrics(m: dict[str, np.ndarray],
                   est: dict[str, tuple[np.ndarray, ...]]) -> dict[str, np.ndarray]:
    """``m`` (metrics of F1's counts) with precision and recall from their own counts,
    clipped (:func:`clip_metrics`)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        m["precision"] = np.true_divide(est["precision"][0], est["precision"][1])
        m["recall"] = np.where(est["recall"][2] > 0,
                               np.true_divide(est["recall"][0], est["recall"][2]), np.nan)
    return clip_metrics(m, est["f1"][2])


# ------------------------------------------------------------------- intervals


def t_quantile(p: float, df: float) -> float:
    """Student's t quantile: exact for 1 and 2 degrees of freedom, else the
    Cornish-Fisher expansion in 1/df (Abramowitz and Stegun 26.7.5; at the 0.975
    quantile within 0.004 of the exact value at 3 degrees of freedom, 1e-5 from 10)."""
    if df <= 1:
        return math.tan(math.pi * (p - 0.5))
    if df <= 2:
        return (2 * p - 1) / math.sqrt(2 * p * (1 - p))
    z = NormalDist().inv_cdf(p)
    g = ((z ** 3 + z) / 4,
         (5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96,
         (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / 384,
         (79 * z ** 9 + 776 * z ** 7 + 1482 * z ** 5 - 1920 * z ** 3 - 945 * z) / 92160)
    return z + sum(gi / df ** (i + 1) for i, gi in enumerate(g))


def wilson_interval(p: Any, var: Any, units: Any, n: int,
                    confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """The Wilson score interval of a ratio in [0, 1] estimated from a cluster sample.

    ``p`` the estimate, ``var`` its (bootstrap) variance, ``n`` the clusters
    (people-matched verdicts) it rests on, ``units`` the people's own count behind
    the ratio (its fallback size). The binomial interval's size is the effective
    one, ``p (1 - p) / var`` (the sample size over the design effect: Korn and
    Graubard 1998; Franco, Little, Louis and Slud 2019 recommend the Wilson form),
    ``var`` first scaled by n / (n - 1) (a bootstrap of n clusters from n
    underestimates a mean's variance by that factor), and the quantile is Student's
    t with n - 1 degrees of freedom (Korn and Graubard's small-sample correction).
    Where the variance tells nothing (0, or p at 0 or 1: every replicate agreed)
    the size is ``units``: a sample of 15 lessons all true gives [0.79, 1], not the
    percentile interval's [1, 1]. Unlike a percentile interval it is never empty
    of the truth merely because the sample had no error. NaN where p is."""
    p = np.asarray(p, dtype=np.float64)
    v = np.asarray(var, dtype=np.float64) * (n / (n - 1) if n > 1 else 1.0)
    pq = p * (1 - p)
    with np.errstate(divide="ignore", invalid="ignore"):
        size = pq / v
    # p within a rounding of 0 or 1 (the tuning's ridge leaves lam a hair above 0):
    # every replicate agreed, whatever the variance's last digits say.
    told = np.isfinite(size) & (size > 0) & (pq > _DEGENERATE)
    size = np.where(told, size, np.asarray(units, dtype=np.float64))
    q = t_quantile(0.5 + confidence / 2, max(n - 1, 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        k = q * q / size
        centre = (p + k / 2) / (1 + k)
        half = q / (1 + k) * np.sqrt(p * (1 - p) / size + k / (4 * size))
    known = size > 0
    lo = np.where(known, np.clip(centre - half, 0.0, 1.0), 0.0)
    hi = np.where(known, np.clip(centre + half, 0.0, 1.0), 1.0)
    nan = np.isnan(p)
    return np.where(nan, np.nan, lo), np.where(nan, np.nan, hi)


#: Replicates whose ratios spread less than this (variance) all agreed: a rounding
#: of the tuning's ridge, not a spread.
_AGREED = 1e-12


def ratio_interval(p: Any, p_raw: Any, var: Any, var_raw: Any, units: Any, n: int,
                   confidence: float, *, fixed: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The interval of a corrected ratio: :func:`wilson_interval`, with the degenerate
    case decided by the replicates' spread, not by the clipped estimate.

    ``p`` the estimate clipped to [0, 1], ``p_raw`` the same unclipped (a correction
    can push a ratio past 1 on a small sample); ``var`` the variance of the clipped
    replicates (Wilson's), ``var_raw`` of the unclipped ones (their spread). Where the
    replicates agree (``var_raw`` about 0) the size is the people's own count, as in
    :func:`wilson_interval`. Where they spread but the estimate sits at 0 or 1, the
    Wilson size ``p (1 - p) / var`` is 0 and tells nothing while the spread does: the
    interval is the wider of the people's-count one and the t interval ``p_raw ± t
    sqrt(var_raw n / (n - 1))`` (clipped). Before, such a case took the people's count
    alone: classic PPI clipped to 1 on 6 % of simulated replicates and its [0.94, 1]
    covered the truth in none of them.

    ``fixed``: the automated truth enters with a fixed weight (``lam`` given and above
    0, classic PPI the threshold choice signs): the estimate's error is then the mean
    of the people-minus-automated differences, not a proportion's, and Wilson's pull
    towards 1/2 undercovers an estimate below the truth (0.88 to 0.93 on
    scripts/ppi_design_coverage.py); the interval is the wider of the two everywhere.
    """
    p = np.asarray(p, dtype=np.float64)
    raw = np.asarray(p_raw, dtype=np.float64)
    v = np.asarray(var_raw, dtype=np.float64)
    lo, hi = wilson_interval(p, var, units, n, confidence)
    at_bound = np.ones(p.shape, dtype=bool) if fixed else p * (1 - p) <= _DEGENERATE
    spread = np.isfinite(v) & (v > _AGREED) & at_bound & ~np.isnan(p)
    if spread.any():
        q = t_quantile(0.5 + confidence / 2, max(n - 1, 1))
        sd = np.sqrt(np.where(spread, v, 0.0) * (n / (n - 1) if n > 1 else 1.0))
        centre = np.where(np.isfinite(raw), raw, p)
        lo = np.where(spread, np.minimum(lo, np.clip(centre - q * sd, 0.0, 1.0)), lo)
        hi = np.where(spread, np.maximum(hi, np.clip(centre + q * sd, 0.0, 1.0)), hi)
    return lo, hi


def _raw_ratios(est: dict[str, tuple[np.ndarray, ...]]) -> dict[str, np.ndarray]:
    """Precision, recall and F1 of the corrected counts, unclipped (NaN where a
    denominator is not above 0)."""
    tp, judged, _ = est["precision"]
    rtp, _, rpos = est["recall"]
    ftp, fj, fpos = est["f1"]
    with np.errstate(divide="ignore", invalid="ignore"):
        return {"precision": np.where(judged > 0, tp / judged, np.nan),
                "recall": np.where(rpos > 0, rtp / rpos, np.nan),
                "f1": np.where(fj + fpos > 0, 2 * ftp / (fj + fpos), np.nan)}


def _histograms(data: PPIData, thr_desc: np.ndarray,
                proposed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per-verdict effective histograms over the threshold bins (bin j as in
    :func:`~truss_lab.evaluate._bootstrap.bin_counts`): ``auto`` ``(N, 3, T + 1)``, kind
    0 the true and 1 the judged automated rows weighted 1 - 1/pi_v (1 outside the
    sample), 2 the rows write rate counts (weight 1, for kept); ``human`` ``(N, 2,
    T + 1)``, the people's true and judged rows weighted 1/pi_v."""
    n_t, n_v = len(thr_desc), data.n_verdicts
    code_a, code_h, inv = data.codes
    size = n_t + 1

    def bins(s: np.ndarray) -> np.ndarray:
        b = n_t - np.searchsorted(thr_desc[::-1], s, side="right")
        b[np.isnan(s)] = n_t
        return b

    fa = code_a * (3 * size) + bins(data.s_auto)
    fh = code_h * (2 * size) + bins(data.s_human)
    ya, ja = data.y_auto.astype(bool), data.judged_auto.astype(bool)
    yh, jh = data.y_human.astype(bool), data.judged_human.astype(bool)
    wa, wh = 1.0 - inv[code_a], inv[code_h]
    ones = np.ones(len(fa)) if proposed is None else proposed.astype(np.float64)
    auto = np.bincount(np.concatenate([fa[ya], fa[ja] + size, fa + 2 * size]),
                       weights=np.concatenate([wa[ya], wa[ja], ones]),
                       minlength=n_v * 3 * size).reshape(n_v, 3, size)
    human = np.bincount(np.concatenate([fh[yh], fh[jh] + size]),
                        weights=np.concatenate([wh[yh], wh[jh]]),
                        minlength=n_v * 2 * size).reshape(n_v, 2, size)
    return auto, human


def _sample_kinds(data: PPIData, thr_desc: np.ndarray, sampled: np.ndarray) -> np.ndarray:
    """Shape ``(n, T * 6)``: per people-matched verdict (in ``sampled``'s order, codes
    into :attr:`PPIData.verdicts`) its six kinds at each threshold, times 1/pi_v."""
    n_t = len(thr_desc)
    code_a, code_h, inv = data.codes
    pos = np.full(len(inv), -1, dtype=np.int64)
    pos[sampled] = np.arange(len(sampled))
    out = np.zeros((len(sampled), n_t, _KINDS))
    for off, code, y, s, j in ((0, code_h, data.y_human, data.s_human, data.judged_human),
                               (3, code_a, data.y_auto, data.s_auto, data.judged_auto)):
        at = pos[code]
        mine = at >= 0
        b = n_t - np.searchsorted(thr_desc[::-1], s[mine], side="right")
        b[np.isnan(s[mine])] = n_t
        for k, rows in ((off, y[mine].astype(bool)), (off + 1, j[mine].astype(bool))):
            h = np.bincount(at[mine][rows] * (n_t + 1) + b[rows],
                            minlength=len(sampled) * (n_t + 1)).reshape(len(sampled), n_t + 1)
            cs = np.cumsum(h, axis=1)
            out[:, :, k] = cs[:, :n_t]
            if k == off:
                out[:, :, off + 2] = cs[:, n_t:]
    out *= inv[sampled][:, None, None]
    return out.reshape(len(sampled), n_t * _KINDS)


@blas_limited()
def _grid_moments(u: np.ndarray, w: np.ndarray, n_t: int) -> CoMoment:
    """Co-moments per replicate (weights ``w``, replicates x people-matched verdicts)
    of the kinds ``u`` (:func:`_sample_kinds`): shape (replicates, T) per pair."""
    n = u.shape[0]
    k6 = u.reshape(n, n_t, _KINDS)
    iu = np.triu_indices(_KINDS)
    prod = (w @ (k6[:, :, iu[0]] * k6[:, :, iu[1]]).reshape(n, -1)).reshape(len(w), n_t, -1)
    sums = (w @ u).reshape(len(w), n_t, _KINDS)
    total = w.sum(axis=1)[:, None]
    index = {(int(a), int(b)): i for i, (a, b) in enumerate(zip(*iu, strict=True))}

    def cov(k: int, m: int) -> np.ndarray:
        i = index[(k, m) if k <= m else (m, k)]
        return prod[:, :, i] - sums[:, :, k] * sums[:, :, m] / total

    return cov


def _stratified(n_boot: int, data: PPIData,
                rng: np.random.Generator) -> Iterator[np.ndarray]:
    """Yield verdict weight chunks: the sampled verdicts drawn among themselves, the
    others among themselves, each as many as there are (with replacement)."""
    sampled = data.codes[2] > 0
    strata = [np.flatnonzero(sampled), np.flatnonzero(~sampled)]
    n_v = data.n_verdicts
    rows = max(1, min(n_boot, _MAX_CELLS // max(n_v, 1)))
    for lo in range(0, n_boot, rows):
        c = min(rows, n_boot - lo)
        w = np.zeros((c, n_v), dtype=np.float64)
        for members in strata:
            if len(members) == 0:
                continue
            idx = rng.integers(0, len(members), size=(c, len(members)))
            idx += (np.arange(c, dtype=np.int64) * len(members))[:, None]
            cnt = np.bincount(idx.ravel(), minlength=c * len(members))
            w[:, members] = cnt.reshape(c, len(members))
        yield w


@blas_limited()
def ppi_bootstrap(
    data: PPIData,
    *,
    thresholds: Any,
    n_boot: int = 1000,
    confidence: float = 0.95,
    random_state: Any = 0,
    objective: str | Objective = DEFAULT_OBJECTIVE,
    lam: float | None = None,
    snap: bool = True,
    proposed: Any = None,
    interval: Literal["wilson", "percentile"] = "wilson",
) -> BootstrapResult:
    """Intervals of the prediction-powered metrics on a grid of ``thresholds``.

    long because: one pass over replicate chunks computes every count, the power
    tuning per replicate, the metrics and the objective's choice, then the intervals.

    A :class:`~truss_lab.evaluate._bootstrap.BootstrapResult` like the plain
    bootstrap's: its ``table`` has, per threshold in the order given, each
    metric of precision, recall, F1, kept per verdict and write rate (the
    :func:`ppi_sweep` value at the same ``lam``) with ``_low``/``_high`` bounds
    from ``n_boot`` replicates that resample verdicts in both sets (module
    docstring); ``threshold`` is the ``objective``'s choice on the corrected
    counts (F1's, when tuned) and its interval the percentile interval of the
    choice re-made per replicate. Seeded by ``random_state``. ``proposed`` (bool per
    automated row, default all) marks the rows write rate divides by (with
    references: the lessons, not the misses).

    ``lam`` None (default): power tuning (:func:`power_lams`) re-chosen in every
    replicate, so the intervals carry the tuning's own noise (on 50 people-matched
    verdicts it is not negligible); a number fixes it (1 classic PPI, 0 the
    people's sample alone). ``interval``: ``"wilson"`` (default) bounds precision,
    recall and F1 by :func:`wilson_interval` on the replicates' variance (docs/explanation/ppi.md,
    the coverage study); ``"percentile"`` by the
    replicates' percentiles (too narrow on 50 to 100 people-matched verdicts).
    Kept per verdict, write rate and the threshold keep percentile intervals.

    Parameters
    ----------
    data : PPIData
        The two truths of the run.
    thresholds : array-like
        The grid.
    n_boot : int, default 1000
        Replicates.
    confidence : float, default 0.95
        The intervals' level.
    random_state : int or numpy.random.Generator, default 0
        Seed of the replicates.
    objective : str or Objective, default "f1"
        The choice made on the corrected counts.
    lam : float, optional
        The power weight (above; None: tuned per replicate).
    snap : bool, default True
        Round the grid as typed.
    proposed : array of bool, optional
        The automated rows write rate divides by (above).
    interval : {"wilson", "percentile"}, default "wilson"
        How precision, recall and F1 are bounded (above).

    Returns
    -------
    BootstrapResult
        The intervals (above).

    Raises
    ------
    BadInputError
        A bad ``lam``, ``n_boot``, confidence, interval or objective.
    """
    lam = _check_lam(lam)
    check_boot(n_boot, confidence)
    if interval not in ("wilson", "percentile"):
        raise BadInputError(f"interval must be wilson or percentile, got {interval!r}",
                            field="interval")
    obj = make_objective(objective)
    thr = as_scores(thresholds, "thresholds")
    if thr.size == 0 or np.isnan(thr).any():
        raise BadInputError("expected a non-empty grid of thresholds without NaN",
                            field="thresholds")
    if snap:
        thr = snap_thresholds(thr, data.s_auto)
    order = np.argsort(-thr, kind="stable")
    thr_desc = thr[order]
    n_t = len(thr_desc)
    prop = None if proposed is None else as_labels(proposed, "proposed")
    if lam is None:  # the counts at each threshold's tuning state's own threshold too
        tuning = _TuningStates.of(data)
        canon = tuning.canonical(tuning.state(thr_desc))
        thr_all = np.unique(np.concatenate([thr_desc, canon]))[::-1]
    else:
        canon = thr_all = thr_desc
    col, col_c = (np.searchsorted(-thr_all, -t) for t in (thr_desc, canon))
    n_all = len(thr_all)
    h_auto, h_human = _histograms(data, thr_all, prop)
    g = data.n_verdicts
    flat_a, flat_h = h_auto.reshape(g, -1), h_human.reshape(g, -1)
    sampled = np.flatnonzero(data.codes[2] > 0)
    u = _sample_kinds(data, thr_desc, sampled) if lam is None else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        point_sweep = ppi_sweep(data, thresholds=thr_desc, lam=lam, snap=False)

    def counts(w: np.ndarray) -> tuple[tuple[np.ndarray, ...], ...]:
        """Automated and people's parts at the grid, classic counts at the states' own
        thresholds, kept at the grid and the rows write rate divides by."""
        ca = np.cumsum((w @ flat_a).reshape(len(w), 3, n_all + 1), axis=2)
        ch = np.cumsum((w @ flat_h).reshape(len(w), 2, n_all + 1), axis=2)
        auto = (ca[:, 0, col], ca[:, 1, col], ca[:, 0, -1:])
        human = (ch[:, 0, col], ch[:, 1, col], ch[:, 0, -1:])
        classic = (ca[:, 0, col_c] + ch[:, 0, col_c], ca[:, 1, col_c] + ch[:, 1, col_c],
                   ca[:, 0, -1:] + ch[:, 0, -1:])
        return auto, human, classic, (ca[:, 2, col], ca[:, 2, -1:])

    def metrics(w: np.ndarray) -> tuple[dict[str, np.ndarray], ReplicateCounts]:
        auto, human, classic, (kept, n) = counts(w)
        if lam is None:
            assert u is not None
            lams = power_lams(_grid_moments(u, w[:, sampled], n_t), *classic)
        else:
            lams = {name: np.full((1, 1, 3), lam) for name in RATIOS}
        est = _ratios(auto, human, lams)
        tp, judged, n_pos = est["f1"]
        rc = ReplicateCounts(kept=kept, tp=tp, judged=judged, n=n, n_pos=n_pos,
                             n_verdicts=w.sum(axis=1, keepdims=True))
        out = _ratio_metrics(rc.metrics(), est)
        out.update({f"{k}_raw": v for k, v in _raw_ratios(est).items()})
        return out, rc

    full_m, _ = metrics(np.ones((1, g)))
    point = {name: full_m[name][0] for name in _METRICS}
    raw_point = {name: full_m[f"{name}_raw"][0] for name in RATIOS}
    for name in ("precision", "recall", "f1"):  # the sweep's, exactly
        point[name] = point_sweep[name].to_numpy()
    pc = point_sweep
    full = ReplicateCounts(kept=pc["kept"].to_numpy()[None], tp=pc["tp"].to_numpy()[None],
                           judged=(pc["tp"] + pc["fp"]).to_numpy()[None],
                           n=counts(np.ones((1, g)))[3][1],
                           n_pos=(pc["tp"] + pc["fn"]).to_numpy()[None],
                           n_verdicts=np.full((1, 1), float(g)))
    best0 = full.best_index(obj)[0]
    rng = as_rng(random_state)
    kept_reps = (*_METRICS, *(f"{name}_raw" for name in RATIOS))
    reps: dict[str, list[np.ndarray]] = {m: [] for m in kept_reps}
    rep_thr: list[np.ndarray] = []
    for w in _stratified(n_boot, data, rng):
        m, rc = metrics(w)
        for name in kept_reps:
            reps[name].append(m[name])
        idx = rc.best_index(obj)
        rep_thr.append(np.where(idx >= 0, thr_desc[np.maximum(idx, 0)], np.nan))
    replicate_thresholds = np.concatenate(rep_thr)
    t_lo, t_hi = percentile_interval(replicate_thresholds[:, None], confidence)
    inverse = np.empty_like(order)
    inverse[order] = np.arange(len(order))
    people = _people_counts(data, thr_desc)
    units = _people_units(*people)
    domain = band_domain(*people)
    cols: dict[str, np.ndarray] = {"threshold": thr}
    bands: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name in _METRICS:
        values = np.concatenate(reps[name])
        interval_at: Callable[[float], tuple[np.ndarray, np.ndarray]] | None = None
        if interval == "wilson" and name in RATIOS:
            # The spread of the unclipped ratios: clipping at 0 or 1 hides it.
            raw = np.concatenate(reps[f"{name}_raw"])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns
                var = np.nanvar(values, axis=0, ddof=1)
                var_raw = np.nanvar(raw, axis=0, ddof=1)

            def interval_at(level: float, name: str = name, var: np.ndarray = var,
                            var_raw: np.ndarray = var_raw) -> tuple[np.ndarray, np.ndarray]:
                return ratio_interval(point[name], raw_point[name], var, var_raw,
                                      units[name], len(sampled), level, fixed=bool(lam))

            lo, hi = interval_at(confidence)
        else:
            lo, hi = percentile_interval(values, confidence)
            if name in RATIOS:  # the band's at its level: of the clipped replicates
                def interval_at(level: float, values: np.ndarray = values
                                ) -> tuple[np.ndarray, np.ndarray]:
                    return percentile_interval(values, level)
        if name in BAND_METRICS:
            # The band's level from the spread of the unclipped replicates around the
            # unclipped curve (clipping hides it at 0 and 1); each threshold's own
            # interval at that level.
            bands[name] = simultaneous_band(np.concatenate(reps[f"{name}_raw"]),
                                            raw_point[name], lo, hi, confidence,
                                            domain[name], interval_at)
        cols[name] = point[name][inverse]
        cols[f"{name}_low"] = lo[inverse]
        cols[f"{name}_high"] = hi[inverse]
    return BootstrapResult(
        table=pd.DataFrame(cols), band=band_table(thr, inverse, bands),
        objective=obj.describe(),
        threshold=float(thr_desc[best0]) if best0 >= 0 else float("nan"),
        threshold_low=float(t_lo[0]), threshold_high=float(t_hi[0]),
        replicate_thresholds=replicate_thresholds, n_boot=int(n_boot),
        confidence=float(confidence),
        random_state=random_state if not isinstance(random_state, np.random.Generator) else None,
        n_verdicts=data.n_verdicts,
    )


def _people_counts(data: PPIData, thr_desc: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The people's own lessons at each threshold (descending), unweighted: ``(tp, fp,
    fn)``, kept true, kept judged not true, and true not kept (dropped ones too)."""
    yh, jh = data.y_human.astype(bool), data.judged_human.astype(bool)
    (tp, judged), _ = _weighted_at_many(
        [(data.s_human[yh], np.ones(int(yh.sum()))),
         (data.s_human[jh], np.ones(int(jh.sum())))], thr_desc)
    pos = float(np.count_nonzero(yh))
    return tp, judged - tp, pos - tp


def _people_units(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray) -> dict[str, np.ndarray]:
    """Per ratio the people's own count behind it at each threshold (:func:`_people_counts`):
    the judged kept lessons (precision), the positives (recall), their mean (F1)."""
    judged, pos = tp + fp, tp + fn
    return {"precision": judged, "recall": pos, "f1": (judged + pos) / 2}


# ------------------------------------------------------------------- the two truths of a run


class PeopleMatcher:
    """A matcher whose pairs are the people's: lesson i expresses reference j with
    similarity 1 when the people's answer for lesson i (:func:`~truss_lab.evaluate.
    _matches.people_matches`) is j, else 0. With match threshold
    :data:`PEOPLE_MATCH_THRESHOLD` the one-to-one greedy assignment of
    :func:`~truss_lab.score._matching.match_lessons` then gives the people's truth
    exactly as it gives a matcher's: a lesson whose reference an earlier lesson
    (higher score) claimed is a duplicate, a reference nobody names a miss.

    Parameters
    ----------
    people : pandas.DataFrame
        The people's answers (:func:`~truss_lab.evaluate._matches.people_matches`).
    """

    name = "people"
    match_threshold = 0.5

    def __init__(self, people: pd.DataFrame) -> None:
        answers = people[people["reference_id"].notna()]
        self._answer = pd.Series(
            answers["reference_id"].astype(str).to_numpy(dtype=object),
            index=pd.MultiIndex.from_arrays([answers["verdict_hash"].astype(str),
                                             answers["lesson_index"].astype(np.int64)]))

    def pairs(self, lessons: pd.DataFrame, references: pd.DataFrame,
              li: np.ndarray, ri: np.ndarray) -> np.ndarray:
        """Similarity of each (lesson ``li[k]``, reference ``ri[k]``) pair: 1 or 0.

        Parameters
        ----------
        lessons : pandas.DataFrame
            One verdict's lessons.
        references : pandas.DataFrame
            Its references.
        li, ri : numpy.ndarray
            The pairs' lesson and reference positions.

        Returns
        -------
        numpy.ndarray
            One similarity per pair.
        """
        key = pd.MultiIndex.from_arrays([
            lessons["verdict_hash"].astype(str).to_numpy(dtype=object)[li],
            lessons["lesson_index"].to_numpy(dtype=np.int64)[li]])
        said = self._answer.reindex(key).to_numpy(dtype=object)
        ref = references["reference_id"].astype(str).to_numpy(dtype=object)[ri]
        return (said == ref).astype(np.float64)

    def __call__(self, lessons: pd.DataFrame, references: pd.DataFrame) -> np.ndarray:
        li, ri = np.meshgrid(np.arange(len(lessons)), np.arange(len(references)),
                             indexing="ij")
        return self.pairs(lessons, references, li.ravel(), ri.ravel()).reshape(
            len(lessons), len(references))


#: The match threshold of :class:`PeopleMatcher` (its similarities are 0 or 1).
PEOPLE_MATCH_THRESHOLD = PeopleMatcher.match_threshold


def _inclusion(people: pd.DataFrame, sampled: np.ndarray, n_matchable: int) -> np.ndarray:
    """Per sampled verdict its inclusion probability: the file's, else that of a simple
    random sample of the ``n_matchable`` verdicts that have a lesson to answer for (a
    verdict with none has no row, so the sample is of those)."""
    if INCLUSION not in people.columns or people[INCLUSION].isna().all():
        return np.full(len(sampled), len(sampled) / max(n_matchable, len(sampled)))
    p = pd.to_numeric(people[INCLUSION], errors="coerce").groupby(
        people["verdict_hash"].astype(str)).max().reindex(pd.Index(sampled, dtype=object))
    if p.isna().any():
        raise BadInputError(f"verdict {p.index[p.isna()][0]!r} has no inclusion probability "
                            "while others have one: give it for every verdict or none",
                            field=INCLUSION)
    return p.to_numpy(dtype=np.float64)


def partial_matches(truth: ReferenceTruth, people: pd.DataFrame) -> str | None:
    """Why the people's match labels break the design :func:`reference_ppi` rests on
    (a verdict they matched in part: a valid lesson of the run there without an answer,
    a reference id, none or a tie), or None. The match queue lists every lesson of a
    verdict and the ingest refuses a ``?`` beside answers, so only a file or frame made
    otherwise can; the message names it as :func:`partial_labels` does."""
    said = people["verdict_hash"].astype(str)
    key = pd.MultiIndex.from_arrays([said, people["lesson_index"].astype(np.int64)])
    les = truth.lessons
    lv = les["verdict_hash"].astype(str)
    mine = lv.isin(pd.Index(pd.unique(said), dtype=object)).to_numpy()
    lkey = pd.MultiIndex.from_arrays([lv, les["lesson_index"].astype(np.int64)])
    missing = mine & ~lkey.isin(key)
    if not missing.any():
        return None
    first = int(np.flatnonzero(missing)[0])
    return (f"match labels of run {truth.run_id!r} cover {int(lv[missing].nunique())} of the "
            f"{int(lv[mine].nunique())} verdicts they touch in part: "
            f"{int(np.count_nonzero(missing))} lesson(s) of the run there have no people's "
            f"answer (first: verdict {_short(str(lv.iloc[first]))} lesson "
            f"{int(les['lesson_index'].iloc[first])}); a prediction-powered correction "
            "needs every lesson of a matched verdict answered (`truss-lab queue RUN --kind "
            "match` lists them all)")


def reference_ppi(truth: ReferenceTruth, references: pd.DataFrame,
                  people: pd.DataFrame) -> PPIData | None:
    """The two truths of one run judged by references: the matcher's rows of every
    annotated verdict (``truth.rows``) and the people's rows of the verdicts they
    matched, built by :func:`~truss_lab.evaluate._truth.judge_lessons` with a
    :class:`PeopleMatcher`: the same lessons, the same greedy one-to-one rule.

    ``references``: §4 rows (every annotator's); ``people``: one answer per lesson of
    the run's extractor (:func:`~truss_lab.evaluate._matches.people_matches`). A
    lesson the people tied on has no human truth (not judged). None when people
    matched no verdict the run is judged on; :class:`BadInputError` when they matched
    one in part (:func:`partial_matches`)."""
    pop = np.asarray(truth.verdicts, dtype=object)
    said = people["verdict_hash"].astype(str)
    sampled = np.asarray(pd.unique(said[said.isin(pd.Index(pop, dtype=object))]), dtype=object)
    if len(sampled) == 0:
        return None
    why = partial_matches(truth, people)
    if why is not None:
        raise BadInputError(why, field="match_labels")
    les = truth.lessons
    les = les[les["verdict_hash"].isin(pd.Index(sampled, dtype=object)).to_numpy()]
    refs = references[references["verdict_hash"].astype(str).isin(
        pd.Index(sampled, dtype=object)).to_numpy()]
    seq = dict(zip(pop, range(len(pop)), strict=True))
    rows, _ = judge_lessons(les.reset_index(drop=True), refs, verdict_seq=seq,
                            matcher=PeopleMatcher(people),
                            match_threshold=PEOPLE_MATCH_THRESHOLD)
    # Quiet rows of verdicts with no references and no lessons carry no count.
    answered = pd.MultiIndex.from_arrays([
        people.loc[people["reference_id"].notna(), "verdict_hash"].astype(str),
        people.loc[people["reference_id"].notna(), "lesson_index"].astype(np.int64)])
    is_lesson = (rows["kind"] == "lesson").to_numpy()
    key = pd.MultiIndex.from_arrays([rows["verdict_hash"].astype(str),
                                     rows["lesson_index"].fillna(-1).astype(np.int64)])
    judged = ~is_lesson | key.isin(answered)
    y, s, g = truth.arrays()
    return ppi_data(y, s, g, rows["y"].to_numpy(dtype=np.uint8),
                    rows["s"].to_numpy(dtype=np.float64),
                    rows["verdict_hash"].to_numpy(dtype=object), judged_human=judged,
                    verdicts=pop, sampled=sampled,
                    inclusion_probability=_inclusion(people, sampled,
                                                     truth.lessons["verdict_hash"].nunique()))


class PartialLabelsWarning(TrussLabWarning):
    """``correct="auto"`` left a run uncorrected because the people's labels break the
    correction's design (:func:`partial_labels`): the message says why, in one line."""


def _short(v: str) -> str:
    return v if len(v) <= 12 else f"{v[:12]}…"


def partial_labels(auto: RunTruth, gold: RunTruth) -> str | None:
    """Why the gold labels of a run break the design :func:`labels_ppi` rests on, or
    None when they keep it.

    The sampling unit is the verdict: a verdict people labelled must have every
    lesson the judge judges on it answered (labelled, or tied), so that its people's
    count is whole. A queue's band (``truss-lab queue``: lessons in a salience band, at
    most ``per_verdict`` of each verdict) labels verdicts in part: counting the rest of
    such a verdict by the judge alone, as if it were people's, biased the corrected
    precision by -0.04 on simulated data, and nothing makes the band's verdicts a
    random sample of the run's. The one-line message names how many verdicts and
    lessons, and the first of them."""
    a, h = auto.candidates, gold.candidates
    answered = (h["answered"] if "answered" in h.columns else h["judged"]).to_numpy(dtype=bool)
    mine = pd.Index(h.loc[answered, "candidate_id"])
    hv = h["verdict_hash"].astype(str)
    sampled = pd.Index(pd.unique(hv[answered]), dtype=object)
    av = a["verdict_hash"].astype(str)
    missing = (a["judged"].to_numpy(dtype=bool) & av.isin(sampled).to_numpy()
               & ~pd.Index(a["candidate_id"]).isin(mine))
    if not missing.any():
        return None
    first = int(np.flatnonzero(missing)[0])
    n_v = int(av[missing].nunique())
    n_l = int(np.count_nonzero(missing)) // max(auto.count_scale, 1)
    return (f"gold labels of run {auto.run_id!r} cover {n_v} of the {len(sampled)} verdicts "
            f"they touch in part: {n_l} lesson(s) the judge labels there have no gold label "
            f"(first: verdict {_short(str(av.iloc[first]))} lesson "
            f"{int(a['lesson_index'].iloc[first])}), as a labelling queue's band leaves them; "
            "a prediction-powered correction needs every lesson of a labelled verdict "
            "labelled (label whole verdicts, drawn at random)")


def labels_ppi(auto: RunTruth, gold: RunTruth) -> PPIData | None:
    """The two truths of one run judged by a judge: the judge's labels on every verdict
    the run processed (``auto``) and the gold labels (``gold``, of the same run, scored
    alike) on the verdicts where people labelled a lesson of the run. The sampling unit
    is the verdict: those verdicts are taken as a simple random sample of the verdicts
    with a candidate (Formats §3 labels carry no design), each labelled whole.
    None when people labelled nothing of the run.

    Raises
    ------
    BadInputError
        When people labelled a verdict in part (:func:`partial_labels`: a lesson the
        judge judges there has no gold label); the message says which.
    """
    if auto.count_scale != gold.count_scale:
        raise BadInputError('ties="half" counts a judge and the gold labels alike or not '
                            "at all", field="ties")
    a, h = auto.candidates, gold.candidates
    labelled = (h["answered"] if "answered" in h.columns else h["judged"]).to_numpy(dtype=bool)
    sampled = np.asarray(pd.unique(h.loc[labelled, "verdict_hash"].astype(str)), dtype=object)
    if len(sampled) == 0:
        return None
    why = partial_labels(auto, gold)
    if why is not None:
        raise BadInputError(why, field="labels")
    mine = h["verdict_hash"].astype(str).isin(pd.Index(sampled, dtype=object)).to_numpy()
    h = h[mine]
    return ppi_data(a["y"].to_numpy(), a["s"].to_numpy(),
                    a["verdict_hash"].astype(str).to_numpy(dtype=object),
                    h["y"].to_numpy(), h["s"].to_numpy(),
                    h["verdict_hash"].astype(str).to_numpy(dtype=object),
                    judged_auto=a["judged"].to_numpy(), judged_human=h["judged"].to_numpy(),
                    verdicts=[str(v) for v in auto.verdicts], sampled=sampled,
                    inclusion_probability=np.full(len(sampled), len(sampled) / max(
                        a["verdict_hash"].nunique(), len(sampled))))


def correction_of(data: PPIData | None) -> dict[str, Any]:
    """What every output says of its correction: ``correction`` (``ppi`` or ``none``),
    ``people_verdicts`` (the verdicts people answered for, 0 without) and ``verdicts``
    (those the estimate is over; None without a correction)."""
    if data is None:
        return {"correction": "none", "people_verdicts": 0, "verdicts": None}
    return {"correction": "ppi", "people_verdicts": data.n_sampled,
            "verdicts": data.n_verdicts}


def correction_label(c: dict[str, Any] | None) -> str:
    """How outputs name a correction (:func:`correction_of`): ``none``, or ``ppi
    (people answered for 59 of 402 verdicts)``."""
    if not c or c.get("correction") != "ppi":
        return "none"
    return f"ppi (people answered for {c['people_verdicts']} of {c['verdicts']} verdicts)"
