"""Bootstrap by verdict: uncertainty of sweep metrics and of the chosen threshold.

Lessons of one verdict are correlated (one extractor call wrote them all), so
the unit of resampling is the verdict, never the candidate. Replicate ``b``
draws ``n_verdicts`` verdicts with replacement: ``idx = rng.integers(0,
n_verdicts, size=n_verdicts)``, drawn in replicate order from
``np.random.default_rng(random_state)``; verdict ``g`` then has weight
``w[b, g]`` = how often it was drawn. Everything else is linear algebra:

1. per verdict ``g`` and threshold bin, count candidates and positives
   (``H``, shape ``(n_verdicts, T + 1)``) with one ``bincount``;
2. replicate counts per bin are ``W @ H`` (``W``: replicates x verdicts),
   computed in chunks of replicates so memory stays bounded;
3. a reverse cumulative sum over bins gives ``kept``/``tp`` at every
   threshold, for every replicate, with no Python loop over replicates.

Intervals are percentile intervals (``np.nanquantile``, linear interpolation)
of the replicate values; replicates where a metric is undefined (NaN) are
left out of that metric's interval.
"""

from __future__ import annotations

import html
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np
import pandas as pd

from truss_lab.core._errors import WARNING_PREFIX, BadInputError
from truss_lab.core._threads import blas_limited
from truss_lab.evaluate._defaults import DEFAULT_OBJECTIVE
from truss_lab.evaluate._objective import Objective, make_objective
from truss_lab.evaluate._sweep import (
    UndefinedMetricWarning,
    as_labels,
    as_scores,
    check_lengths,
    group_codes,
    metrics_from_counts,
    snap_thresholds,
)

__all__ = [
    "BAND_METRICS",
    "BAND_MIN_SUPPORT",
    "BOOT_METRICS",
    "SMALL_SAMPLE_VERDICTS",
    "STREAMS",
    "BootstrapResult",
    "band_domain",
    "band_level",
    "band_table",
    "bootstrap_metrics",
    "choice_interval",
    "seed_streams",
    "simultaneous_band",
    "small_sample_line",
]

#: Metrics that get an interval, in the order of :attr:`BootstrapResult.table`.
BOOT_METRICS = ("precision", "recall", "f1", "kept_per_verdict", "write_rate")
#: Metrics that get a simultaneous band over the grid (:attr:`BootstrapResult.band`).
BAND_METRICS = ("precision", "recall", "f1")

SMALL_SAMPLE_VERDICTS = 30
"""The fewest verdicts an interval, a threshold choice or a correction rests on without a
warning: held-out verdicts (a choice), labelled verdicts (a verdict with a truth value on
some lesson: a gold label, a judge's label, annotated references) and people-answered
verdicts (those a prediction-powered correction has the people's answers for). A
percentile bootstrap over fewer verdicts covers far less often than its nominal level,
and over a handful every replicate can draw the same few verdicts and agree: an interval
of zero width that says nothing (two held-out verdicts printed ``1.000 [1.000,
1.000]``); a correction estimated from so few people-answered verdicts is as unsure.
Thirty is the usual rule of thumb for resampling and normal approximations alike; below
it every face says so in one line (:func:`small_sample_line`)."""


def small_sample_line(rests_on: Mapping[str, int | None]) -> str | None:
    """The one warning line of a result whose intervals rest on ``rests_on`` (each kind of
    verdict, ``"held-out"``, ``"labelled"``, ``"people-answered"``, or ``""``, with how
    many: None where it does not apply) when any count is under
    :data:`SMALL_SAMPLE_VERDICTS`, naming every such count; None when none is.

    The one rule and the one message of every face (the CLI's stderr, the results' reprs,
    the report, the displays): ``warning: the intervals rest on 4 labelled and 2 held-out
    verdicts, fewer than 30: ...``.
    """
    few = [(k, int(n)) for k, n in rests_on.items()
           if n is not None and int(n) < SMALL_SAMPLE_VERDICTS]
    if not few:
        return None
    said = " and ".join(f"{n} {k}".rstrip() for k, n in few)
    plural = "" if len(few) == 1 and few[0][1] == 1 else "s"
    return (f"{WARNING_PREFIX}the intervals rest on {said} verdict{plural}, fewer than "
            f"{SMALL_SAMPLE_VERDICTS}: no interval from so few can be trusted (one of zero "
            "width says nothing); label more verdicts")


#: W chunks hold at most this many cells: small enough that the allocator
#: reuses the buffers between chunks instead of faulting in fresh pages.
MAX_W_CELLS = 1 << 21
# Float32 sums of integer counts are exact below 2**24; a verdict drawn more
# than this many times in one replicate (probability ~1e-89) switches to float64.
_W_MAX_F32 = 64


def as_rng(random_state: Any) -> np.random.Generator:
    """A numpy Generator from an int seed, a Generator (used as is) or None (fresh entropy)."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None or isinstance(random_state, (int, np.integer)):
        return np.random.default_rng(random_state)
    raise BadInputError(
        f"random_state must be an int, None or numpy Generator, got {type(random_state).__name__}",
        field="random_state",
    )


#: The independent random streams one seed gives, in spawn order (never reorder:
#: a stream's draws depend on its position). ``split``: the train/test split of
#: verdicts; ``folds``: cross-validation folds; ``bootstrap``: the resampling of
#: held-out verdicts (intervals); ``choice``: the resampling of training
#: verdicts that re-makes the choice (its interval).
STREAMS: tuple[str, ...] = ("split", "folds", "bootstrap", "choice")


def seed_streams(random_state: Any) -> dict[str, np.random.Generator]:
    """One Generator per name of :data:`STREAMS`, independent of each other, from one seed.

    An int (or None: fresh entropy) seeds ``np.random.SeedSequence`` whose
    ``spawn`` children drive the streams, so changing the number of bootstrap
    replicates never moves the split or the folds. A Generator is split with
    ``Generator.spawn`` (its own state advances).
    """
    if isinstance(random_state, np.random.Generator):
        children = random_state.spawn(len(STREAMS))
        return dict(zip(STREAMS, children, strict=True))
    as_rng(random_state)  # validates the type
    seqs = np.random.SeedSequence(random_state).spawn(len(STREAMS))
    return {name: np.random.default_rng(seq) for name, seq in zip(STREAMS, seqs, strict=True)}


def stream(random_state: Any, name: str) -> np.random.Generator:
    """The ``name`` stream of :func:`seed_streams` for an int seed; a Generator as is."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    return seed_streams(random_state)[name]


def check_boot(n_boot: int, confidence: float) -> None:
    """Validate ``n_boot`` (>= 1) and ``confidence`` (in (0, 1))."""
    if not isinstance(n_boot, (int, np.integer)) or n_boot < 1:
        raise BadInputError(f"n_boot must be an int >= 1, got {n_boot!r}", field="n_boot")
    if not (0.0 < confidence < 1.0):
        raise BadInputError(f"confidence must be in (0, 1), got {confidence!r}", field="confidence")


def verdict_codes(groups: Any, verdicts: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """``(codes, verdicts)``: verdicts in order of first appearance, codes index into them.

    With ``verdicts`` (every verdict processed, also those without a candidate)
    the codes index into that list instead, so a verdict that yielded nothing
    still counts (and is split, folded and resampled like the others).
    """
    arr = groups.to_numpy() if isinstance(groups, (pd.Series, pd.Index)) else np.asarray(groups)
    if arr.ndim != 1:
        raise BadInputError(f"expected a 1-D array, got shape {arr.shape}", field="groups")
    if pd.isna(arr).any():
        bad = int(np.flatnonzero(pd.isna(arr))[0])
        raise BadInputError(f"missing verdict at position {bad}", field="groups")
    if verdicts is None:
        codes, uniques = group_codes(arr)  # no missing value here (refused above)
        return codes, np.asarray(uniques)
    index = pd.Index(pd.unique(np.asarray(list(verdicts), dtype=object)))
    codes = index.get_indexer(arr.astype(object))
    if (codes < 0).any():
        bad = int(np.flatnonzero(codes < 0)[0])
        raise BadInputError(f"verdict {arr[bad]!r} at position {bad} is not among verdicts",
                            field="verdicts")
    return codes.astype(np.int64), np.asarray(index, dtype=object)


def weight_chunks(
    n_boot: int, n_groups: int, rng: np.random.Generator
) -> Iterator[np.ndarray]:
    """Yield verdict weight matrices (rows = consecutive replicates, float32 counts).

    Row ``b`` is ``np.bincount(rng.integers(0, n_groups, size=n_groups))``; the
    draws are made in replicate order, so the stream equals a Python loop that
    draws one replicate at a time.
    """
    rows = max(1, min(n_boot, MAX_W_CELLS // max(n_groups, 1)))
    for lo in range(0, n_boot, rows):
        c = min(rows, n_boot - lo)
        idx = rng.integers(0, n_groups, size=(c, n_groups))
        idx += (np.arange(c, dtype=np.int64) * n_groups)[:, None]
        w = np.bincount(idx.ravel(), minlength=c * n_groups).astype(np.float32)
        yield w.reshape(c, n_groups)


def bin_counts(
    y: np.ndarray, s: np.ndarray, codes: np.ndarray, n_groups: int, thresholds_desc: np.ndarray,
    judged: np.ndarray | None = None, weights: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """Per-verdict histogram over threshold bins: shape ``(n_groups, 2, T + 1)``, or
    ``(n_groups, 3, T + 1)`` with ``judged``.

    Bin ``j`` holds candidates with exactly ``j`` thresholds above their
    salience: they are kept at descending thresholds ``j, j+1, ..., T-1`` (bin
    ``T``: kept at none; NaN salience lands there). ``[g, 0, j]`` counts the
    candidates of verdict g in bin j, ``[g, 1, j]`` the positive ones and
    ``[g, 2, j]`` the judged ones (those with a truth value).

    ``weights`` = ``(w, written)`` (prediction-powered counts): kind 0 counts the
    ``written`` rows only, kinds 1 and 2 sum each row's ``w``; the histogram is float,
    of three kinds (without ``judged``, every row judged).
    """
    n_t = len(thresholds_desc)
    if weights is not None:
        # Three kinds whatever ``judged`` (without it every row is judged): the cells'
        # stride is the histogram's.
        flat = _bin_of(s, codes, thresholds_desc, 3)
        w, written = weights
        yb, jb = y.astype(bool), (np.ones(len(y), dtype=bool) if judged is None
                                  else judged.astype(bool))
        idx = np.concatenate([flat[written], flat[yb] + (n_t + 1), flat[jb] + 2 * (n_t + 1)])
        wts = np.concatenate([np.ones(int(np.count_nonzero(written))), w[yb], w[jb]])
        return np.bincount(idx, weights=wts, minlength=n_groups * 3 * (n_t + 1)).reshape(
            n_groups, 3, n_t + 1)
    k = 2 if judged is None else 3
    return np.bincount(_cells(y, s, codes, thresholds_desc, judged),
                       minlength=n_groups * k * (n_t + 1)).reshape(n_groups, k, n_t + 1)


def bin_cells(
    y: np.ndarray, s: np.ndarray, codes: np.ndarray, n_groups: int, thresholds_desc: np.ndarray,
    judged: np.ndarray | None = None,
) -> SparseHistogram:
    """:func:`bin_counts` (whole counts) as its non-zero cells: memory that grows with the
    candidates, not with the verdicts times the bins."""
    cells, counts = np.unique(_cells(y, s, codes, thresholds_desc, judged), return_counts=True)
    return SparseHistogram(shape=(n_groups, 2 if judged is None else 3,
                                  len(thresholds_desc) + 1), cells=cells, counts=counts)


def _bin_of(s: np.ndarray, codes: np.ndarray, thresholds_desc: np.ndarray,
            k: int) -> np.ndarray:
    """Each candidate's flat cell of kind 0 in a ``(n_groups, k, T + 1)`` histogram."""
    n_t = len(thresholds_desc)
    c = n_t - np.searchsorted(thresholds_desc[::-1], s, side="right")
    c[np.isnan(s)] = n_t
    return codes * (k * (n_t + 1)) + c


def _cells(y: np.ndarray, s: np.ndarray, codes: np.ndarray, thresholds_desc: np.ndarray,
           judged: np.ndarray | None) -> np.ndarray:
    """The flat cells of a whole-count histogram, one per count (:func:`bin_counts`)."""
    n_t = len(thresholds_desc)
    flat = _bin_of(s, codes, thresholds_desc, 2 if judged is None else 3)
    parts = [flat, flat[y.view(np.bool_)] + (n_t + 1)]
    if judged is not None:
        parts.append(flat[judged.view(np.bool_)] + 2 * (n_t + 1))
    return np.concatenate(parts)


@dataclass(frozen=True)
class SparseHistogram:
    """A histogram of whole counts as :func:`bin_counts` gives it, its non-zero cells
    alone (:func:`bin_cells`): ``cells`` (sorted flat indices into ``shape``) and their ``counts``.

    Most cells of a run's histogram are empty (a verdict has a few lessons, the grid a
    hundred bins, every verdict a row), so the dense array grew with the verdicts times
    the bins (2.4 KB a verdict at 101 thresholds) while this grows with the candidates.
    """

    shape: tuple[int, int, int]
    cells: np.ndarray
    counts: np.ndarray


class WeightedCounter:
    """Turns verdict weights into replicate counts at every threshold (one matmul).

    ``h`` has shape ``(n_verdicts, k, T + 1)`` (``k`` count kinds, e.g. all and
    positive, or those of two extractors side by side, as built by
    :func:`bin_counts`).
    """

    def __init__(self, h: np.ndarray | SparseHistogram,
                 proposed: np.ndarray | None = None) -> None:
        g, self.k, self.n_bins = h.shape
        # Candidates per verdict that write rate divides by, when not every row is one
        # (a reference truth's miss rows): replicate totals are then ``w @ proposed``.
        self._proposed = None if proposed is None else proposed.astype(np.float64)
        self._sparse: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        if isinstance(h, SparseHistogram):
            # The non-zero cells by (kind, bin), then verdict: each kind's cumulative
            # count at bin j is a prefix sum of its cells up to j's last (_prefix_counts).
            width = self.k * self.n_bins
            col, verdict = h.cells % width, h.cells // width
            order = np.lexsort((verdict, col))
            self._sparse = (verdict[order], h.counts[order].astype(np.float64), col[order])
            self._whole, self._f32, self._f64 = True, None, np.empty((0, width))
            return
        flat = h.reshape(g, self.k * self.n_bins)
        total = float(flat.sum())
        self._f64 = flat.astype(np.float64)
        # Whole counts sum exactly (rounded back to int); weighted ones stay float64.
        self._whole = h.dtype.kind in "iub"
        self._f32 = (flat.astype(np.float32) if self._whole and total * _W_MAX_F32 < 2**24
                     else None)

    @property
    def exact(self) -> bool:
        """Whether replicate counts are exact integers (a histogram of whole counts), so
        counts of disjoint verdict sets add and subtract exactly."""
        return self._whole

    @blas_limited()
    def cumulative(self, w: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Shape ``(replicates, k, T + 1)``: ``[b, i, j]`` = replicate b's count of kind i
        in bins ``0..j``, i.e. kept at descending threshold ``j`` (``j = T``: the total).
        Exact integers (floats for a weighted histogram). ``rows`` (bool mask over the
        verdicts, whole counts only): the counts of those verdicts alone, which
        ``w * rows`` gives too, from the product of their columns only."""
        if self._sparse is not None:
            return self._prefix_counts(w, rows)
        f32, f64 = self._f32, self._f64
        if rows is not None:
            w = w[:, rows]
            f32, f64 = (None if f32 is None else f32[rows]), f64[rows]
        if f32 is not None and float(w.max(initial=0)) <= _W_MAX_F32:
            agg = w.astype(np.float32, copy=False) @ f32
        else:
            agg = w.astype(np.float64, copy=False) @ f64
        if self._whole:
            agg = np.rint(agg).astype(np.int64)
        return np.cumsum(agg.reshape(len(w), self.k, self.n_bins), axis=2)

    def _prefix_counts(self, w: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
        """:meth:`cumulative` of a sparse histogram: the same integers, each replicate's
        weight of every non-zero cell summed in (kind, bin) order (float64 sums of whole
        counts are exact), a block of replicates at a time so the product stays within
        :data:`MAX_W_CELLS` cells whatever the number of verdicts."""
        assert self._sparse is not None
        verdict, count, col = self._sparse
        if rows is not None:
            keep = rows[verdict]
            verdict, count, col = verdict[keep], count[keep], col[keep]
        width = self.k * self.n_bins
        # Prefix-sum positions: the end of each (kind, bin) column, less the start of
        # its kind (index 0 is the empty sum).
        end = np.searchsorted(col, np.arange(width), side="right")
        start = np.repeat(np.searchsorted(col, np.arange(self.k) * self.n_bins), self.n_bins)
        out = np.empty((len(w), width), dtype=np.int64)
        step = max(1, MAX_W_CELLS // max(len(col), 1))
        for lo in range(0, len(w), step):
            part = w[lo:lo + step]
            acc = np.zeros((len(part), len(col) + 1))
            np.multiply(part[:, verdict], count, out=acc[:, 1:])
            np.cumsum(acc, axis=1, out=acc)
            out[lo:lo + step] = np.rint(acc[:, end] - acc[:, start])
        return out.reshape(len(w), self.k, self.n_bins)

    def __call__(
        self, w: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Replicate ``(kept, tp, n, n_pos)`` for weights ``w`` (replicates x verdicts).

        ``kept``/``tp`` have shape ``(replicates, T)`` for thresholds descending;
        ``n``/``n_pos`` have shape ``(replicates, 1)``.
        """
        cs = self.cumulative(w)
        return cs[:, 0, :-1], cs[:, 1, :-1], cs[:, 0, -1:], cs[:, 1, -1:]

    @blas_limited()
    def judged(self, w: np.ndarray, rows: np.ndarray | None = None) -> ReplicateCounts:
        """Every count of a three-kind histogram (:func:`bin_counts` with ``judged``);
        ``rows`` (bool mask over the verdicts): of those verdicts alone, as ``w * rows``
        gives them. Whole counts take the product of the masked columns only (a fold of
        five costs a fifth, with the same integers); weighted counts keep the product over
        every verdict, so their floats stay what they are."""
        if rows is not None and not self._whole:
            w, rows = w * rows, None
        cs = self.cumulative(w, rows)
        if rows is not None:
            w = w[:, rows]
        judged = cs[:, 2, :-1] if self.k > 2 else cs[:, 0, :-1]
        proposed = self._proposed if self._proposed is None or rows is None \
            else self._proposed[rows]
        n = (cs[:, 0, -1:] if proposed is None
             else np.rint(w.astype(np.float64) @ proposed)[:, None])
        return ReplicateCounts(kept=cs[:, 0, :-1], tp=cs[:, 1, :-1], judged=judged,
                               n=n, n_pos=cs[:, 1, -1:],
                               n_verdicts=w.sum(axis=1, keepdims=True))


@dataclass(frozen=True)
class ReplicateCounts:
    """Counts per replicate (rows) and descending threshold (columns) of one bootstrap chunk.

    ``kept`` (what the gate writes), ``tp`` and ``judged`` (kept with a truth
    value) are ``(replicates, T)``; ``n`` (candidates), ``n_pos`` (positives)
    and ``n_verdicts`` (verdicts drawn, empty ones too) are ``(replicates, 1)``.
    """

    kept: np.ndarray
    tp: np.ndarray
    judged: np.ndarray
    n: np.ndarray
    n_pos: np.ndarray
    n_verdicts: np.ndarray

    def minus(self, other: ReplicateCounts) -> ReplicateCounts:
        """These counts less ``other``'s: the counts of the verdicts ``other`` leaves out
        when ``other`` counts a subset of these (exact for whole counts only)."""
        return ReplicateCounts(kept=self.kept - other.kept, tp=self.tp - other.tp,
                               judged=self.judged - other.judged, n=self.n - other.n,
                               n_pos=self.n_pos - other.n_pos,
                               n_verdicts=self.n_verdicts - other.n_verdicts)

    def metrics(self) -> dict[str, np.ndarray]:
        """:func:`~truss_lab.evaluate._sweep.metrics_from_counts` of these counts."""
        return metrics_from_counts(self.kept, self.tp, self.n, self.n_pos, self.n_verdicts,
                                   self.judged)

    def best_index(self, obj: Objective) -> np.ndarray:
        """The objective's choice per replicate (``-1``: none feasible)."""
        return obj.best_index(self.kept, self.tp, self.n_pos, self.n_verdicts, self.judged)


BAND_MIN_SUPPORT = 10
"""The fewest lessons of the sample (the people's, when corrected) a ratio needs at a
threshold for the simultaneous band to hold it there (:func:`band_domain`). Where fewer
carry it, the bootstrap cannot see its spread: 30 verdicts hold one or two lessons kept
at 0.95, and the positives a low threshold misses are the parser's few dropped ones; on
``scripts/ppi_design_coverage.py`` the replicates' standard deviation there was a half
to a third of the estimate's error, and a band over 0.05-0.95 held the whole curve in
0.50 of 30-verdict samples. Ten is where its coverage of the whole true curve over the
domain reached the nominal level at 30, 60 and 100 verdicts (docs/explanation/ppi.md)."""


def band_domain(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray,
                min_support: int = BAND_MIN_SUPPORT) -> dict[str, np.ndarray]:
    """Where the simultaneous band holds each metric of :data:`BAND_METRICS` (bool per
    threshold): the sample's own counts there, true kept ``tp``, false kept ``fp``, true
    not kept ``fn`` (the people's, when corrected), give it at least ``min_support``
    lessons on each side its uncertainty rests on. Precision: ``tp`` (a precision of
    few kept lessons is a handful of labels; its false ones may be none: Wilson's
    interval takes that); recall: ``tp`` and ``fn`` (below 0.3 the misses are a few
    dropped lessons, and the correction leans on the automated truth's count of them);
    F1: ``tp`` and ``fp + fn``."""
    tp, fp, fn = (np.asarray(x, dtype=np.float64) for x in (tp, fp, fn))
    return {"precision": tp >= min_support,
            "recall": (tp >= min_support) & (fn >= min_support),
            "f1": (tp >= min_support) & (fp + fn >= min_support)}


def band_level(values: np.ndarray, point: np.ndarray, confidence: float,
               domain: np.ndarray) -> float:
    """The pointwise level at which each threshold's interval, taken over ``domain``,
    holds the whole curve at ``confidence``: the max-|t| statistic of the verdict
    bootstrap (as for ROC confidence bands: Campbell 1994; Macskassy, Provost and
    Rosset 2005; Montiel Olea and Plagborg-Moller 2019's sup-t band), each replicate's
    largest standardised distance from the curve over the domain, ``max_t |v_bt - p_t|
    / sd_t``; its ``confidence`` quantile ``c`` is turned into the normal level ``2
    Phi(c) - 1``. ``confidence`` itself where no threshold of the domain spreads."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns
        sd = np.nanstd(values, axis=0, ddof=1)
    ok = np.asarray(domain, dtype=bool) & np.isfinite(sd) & (sd > 1e-12) & np.isfinite(point)
    if not ok.any():
        return float(confidence)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a replicate all NaN
        worst = np.nanmax(np.abs(values[:, ok] - point[ok]) / sd[ok], axis=1)
    worst = worst[np.isfinite(worst)]
    if not len(worst):
        return float(confidence)
    c = float(np.quantile(worst, confidence))
    return float(min(max(2 * NormalDist().cdf(c) - 1, confidence), 1 - 1e-12))


def simultaneous_band(values: np.ndarray, point: np.ndarray, low: np.ndarray,
                      high: np.ndarray, confidence: float, domain: np.ndarray | None = None,
                      interval: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """A band that holds a whole curve at ``confidence``, not one threshold's value.

    ``values``: the replicates (replicates x thresholds) of one metric, ``point`` its
    curve, ``low``/``high`` its pointwise interval, ``domain`` (bool per threshold,
    default all; :func:`band_domain`) where the band holds. Each threshold's own
    interval taken at the simultaneous level of :func:`band_level`: ``interval(level)``
    gives ``(low, high)`` at a level (default the percentile interval of ``values``;
    the corrected metrics pass their Wilson interval), never narrower than the
    pointwise interval. NaN outside the domain and where the point is."""
    point = np.asarray(point, dtype=np.float64)
    dom = (np.ones(len(point), dtype=bool) if domain is None
           else np.asarray(domain, dtype=bool)) & np.isfinite(point)
    level = band_level(values, point, confidence, dom)
    if interval is None:
        lo, hi = percentile_interval(values, level)
    else:
        lo, hi = interval(level)
    lo, hi = np.fmin(lo, low), np.fmax(hi, high)
    return np.where(dom, lo, np.nan), np.where(dom, hi, np.nan)


def band_table(thr: np.ndarray, inverse: np.ndarray,
               bands: dict[str, tuple[np.ndarray, np.ndarray]]) -> pd.DataFrame:
    """:attr:`BootstrapResult.band` from each metric's band on the descending grid."""
    cols: dict[str, np.ndarray] = {"threshold": thr}
    for name, (lo, hi) in bands.items():
        cols[f"{name}_band_low"] = lo[inverse]
        cols[f"{name}_band_high"] = hi[inverse]
    return pd.DataFrame(cols)


def percentile_interval(values: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval along axis 0, ignoring NaN (all-NaN columns give NaN).

    Infinite values are ordered as usual: a bound that falls between two infinities of
    one sign, or between a finite value and +/-inf, is that infinity (a threshold of
    :data:`~truss_lab.evaluate._objective.KEEP_NOTHING` in some replicates puts +inf at
    the top), where numpy's interpolation gives NaN (inf - inf)."""
    alpha = 1.0 - confidence
    q = [alpha / 2, 1 - alpha / 2]
    out = np.empty((2, *values.shape[1:]))
    has_nan = np.isnan(values).any(axis=0)
    # np.quantile is vectorized; np.nanquantile loops in Python per column, so
    # it only gets the columns that need it. Both give numpy's "linear" method.
    if (~has_nan).any():
        out[:, ~has_nan] = _quantiles(np.quantile, values[:, ~has_nan], q)
    if has_nan.any():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slice
            out[:, has_nan] = _quantiles(np.nanquantile, values[:, has_nan], q)
    return out[0], out[1]


def _quantiles(quantile: Any, values: np.ndarray, q: list[float]) -> np.ndarray:
    if not np.isinf(values).any():
        return quantile(values, q, axis=0)
    # Linear interpolation between the neighbours lo <= hi, in the extended reals.
    lo = quantile(values, q, axis=0, method="lower")
    hi = quantile(values, q, axis=0, method="higher")
    with np.errstate(invalid="ignore"):
        lin = quantile(values, q, axis=0)
    between = lo != hi
    out = np.where(between, lin, lo)
    out = np.where(between & (hi == np.inf) & (lo > -np.inf), np.inf, out)
    # -inf and +inf as neighbours stay NaN: no value lies between them
    return np.where(between & (lo == -np.inf) & (hi < np.inf), -np.inf, out)


@dataclass(frozen=True, eq=False)
class BootstrapResult:
    """Verdict-bootstrap intervals at a grid of thresholds.

    ``table`` has one row per threshold, in the order given: ``threshold``;
    for each metric m of ``precision, recall, f1, kept_per_verdict,
    write_rate``: ``m`` (value on the full data), ``m_low`` and ``m_high``
    (the ``confidence`` percentile interval over replicates).
    ``threshold`` is the objective's choice on the full data (among the given
    thresholds), ``threshold_low``/``threshold_high`` the interval of the
    choice re-made on every replicate, ``replicate_thresholds[b]`` the choice of
    replicate b (NaN where none was feasible).

    Parameters
    ----------
    table : pandas.DataFrame
        One row per threshold (above).
    objective : str
        The objective, described.
    threshold, threshold_low, threshold_high : float
        The choice on the full data and its interval.
    replicate_thresholds : numpy.ndarray
        Each replicate's choice.
    n_boot : int
        Replicates.
    confidence : float
        The intervals' level.
    random_state : int or numpy.random.Generator
        The seed.
    n_verdicts : int
        Verdicts resampled.
    band : pandas.DataFrame, optional
        The simultaneous band (below).
    """

    table: pd.DataFrame
    objective: str
    threshold: float
    threshold_low: float
    threshold_high: float
    replicate_thresholds: np.ndarray = field(repr=False)
    n_boot: int = 1000
    confidence: float = 0.95
    random_state: Any = 0
    n_verdicts: int = 0
    band: pd.DataFrame | None = field(default=None, repr=False)
    """The simultaneous band over the grid (:func:`simultaneous_band`): ``threshold``
    and, for each metric of :data:`BAND_METRICS`, ``m_band_low``/``m_band_high``, in
    :attr:`table`'s order; it holds the whole curve over its domain at ``confidence``,
    where each interval of :attr:`table` holds one threshold's value. NaN outside the
    domain (:func:`band_domain`: thresholds where fewer than :data:`BAND_MIN_SUPPORT`
    lessons of the sample carry the metric)."""

    def with_band(self) -> pd.DataFrame:
        """:attr:`table` with the columns of :attr:`band` (the same thresholds, in the
        same order): what a plot of the curve draws."""
        if self.band is None:
            return self.table
        return pd.concat([self.table, self.band.drop(columns="threshold")], axis=1)

    def __repr__(self) -> str:
        return (
            f"BootstrapResult(objective={self.objective!r}, threshold={self.threshold:.4g} "
            f"[{self.threshold_low:.4g}, {self.threshold_high:.4g}], n_boot={self.n_boot}, "
            f"confidence={self.confidence}, n_verdicts={self.n_verdicts}, "
            f"thresholds={len(self.table)})"
        )

    def _repr_html_(self) -> str:
        return (
            f"<p>{html.escape(repr(self))}</p>"
            + self.table.to_html(index=False, float_format=lambda v: f"{v:.4g}")
        )


def bootstrap_metrics(
    y_true: Any,
    salience: Any,
    groups: Any,
    *,
    thresholds: Any,
    n_boot: int = 1000,
    confidence: float = 0.95,
    random_state: Any = 0,
    objective: str | Objective = DEFAULT_OBJECTIVE,
    snap: bool = True,
    judged: Any = None,
    verdicts: Any = None,
    proposed: Any = None,
    **objective_options: float | None,
) -> BootstrapResult:
    """Percentile intervals of precision, recall, F1 and kept-per-verdict, resampling verdicts.

    Lessons of one verdict come from one model call, so the replicates draw whole
    verdicts (with replacement), not candidates. Counts as
    :func:`~truss_lab.evaluate._sweep.sweep` does. The chosen threshold and its
    interval are taken over the grid with ``objective``.

    Parameters
    ----------
    y_true : array of 0/1, shape (n,)
        Gold label of each candidate lesson (1 = useful).
    salience : array of float, shape (n,)
        Score of each candidate (NaN: never kept).
    groups : array, shape (n,)
        Verdict of each candidate: the unit of resampling.
    thresholds : array of float
        The grid (e.g. ``np.round(np.linspace(0, 1, 101), 2)``); points off their
        typed decimal are rounded with a warning.
    n_boot : int, default 1000
        Replicates.
    confidence : float, default 0.95
        Level of the percentile intervals.
    random_state : int or numpy.random.Generator, default 0
        Seed of the replicates.
    objective : str or Objective, default "f1"
        How the threshold is chosen on the full data and on every replicate.
    snap : bool, default True
        Round the grid as typed (False for thresholds chosen on other data).
    judged : array of bool, shape (n,), optional
        Which candidates have a truth value: the others are kept but neither tp nor fp.
    verdicts : array, optional
        Every verdict processed: those without candidates are resampled too and count
        in kept per verdict (default the distinct ``groups``).
    proposed : array of bool, shape (n,), optional
        The rows the write rate divides by (default all; a reference truth's miss rows
        are not proposed lessons).
    **objective_options
        The objective's options (``min_precision=`` etc., see
        :func:`~truss_lab.evaluate._objective.make_objective`).

    Returns
    -------
    BootstrapResult
        ``table`` (each metric, ``_low`` and ``_high`` per threshold), the chosen
        threshold with its interval, the replicates' choices and the simultaneous band.

    Raises
    ------
    BadInputError
        Bad arrays (as ``sweep``), ``n_boot`` < 1, a confidence outside (0, 1), an
        unknown objective.

    See Also
    --------
    bootstrap_run : The same for a run in the store, judged by a truth.
    sweep : The point estimates alone.

    Examples
    --------
    >>> cands = tl.scored_candidates(store, "good")
    >>> boot = tl.bootstrap_metrics(cands["y"], cands["s"], cands["verdict_hash"],
    ...                             thresholds=[0.5, 0.7], n_boot=200)
    >>> boot.table[["threshold", "precision", "precision_low", "precision_high"]].round(3)
       threshold  precision  precision_low  precision_high
    0        0.5      0.690          0.645           0.726
    1        0.7      0.702          0.649           0.753

    Many parameters because the arrays of the rows (y_true, salience, groups, judged,
    verdicts, proposed), the grid and the resampling (n_boot, confidence, random_state) and
    the objective with its options are each the same option of sweep and choose_threshold:
    grouping them would make three small classes that only this function takes.
    """
    obj = make_objective(objective, **objective_options)
    check_boot(n_boot, confidence)
    y, s, thr = _checked_rows(y_true, salience, groups, thresholds)
    if snap:  # False for thresholds chosen on other data (see sweep)
        thr = snap_thresholds(thr, s)  # here: its warning names bootstrap_metrics' caller
    y, counter, order, thr_desc, n_groups = _resampled(y, s, groups, thr, judged, verdicts,
                                                       proposed)
    if n_groups == 0:
        warnings.warn("no verdicts: every interval is NaN", UndefinedMetricWarning, stacklevel=2)
    rng = as_rng(random_state)
    # Full-data point estimates: every verdict weight 1.
    full = counter.judged(np.ones((1, n_groups), dtype=np.float32))
    point = {k: v[0] for k, v in full.metrics().items()}
    best0 = full.best_index(obj)[0]
    chosen = float(thr_desc[best0]) if best0 >= 0 else float("nan")
    pos0 = full.n_pos
    if int(pos0[0, 0]) == 0 and len(y):
        warnings.warn(
            "y_true has no positive labels: recall is undefined (NaN)",
            UndefinedMetricWarning,
            stacklevel=2,
        )

    reps, replicate_thresholds = _replicates(counter, obj, thr_desc, n_boot, n_groups, rng)
    t_lo, t_hi = percentile_interval(replicate_thresholds[:, None], confidence)
    table = _interval_table(thr, order, point, reps, confidence)
    domain = band_domain(full.tp[0], full.judged[0] - full.tp[0], full.n_pos[0] - full.tp[0])
    return BootstrapResult(
        table=table, band=_band_of(table, thr, order, point, reps, confidence, domain),
        objective=obj.describe(),
        threshold=chosen, threshold_low=float(t_lo[0]), threshold_high=float(t_hi[0]),
        replicate_thresholds=replicate_thresholds,
        n_boot=int(n_boot),
        confidence=float(confidence),
        random_state=random_state if not isinstance(random_state, np.random.Generator) else None,
        n_verdicts=n_groups,
    )


def choice_interval(
    y_true: Any,
    salience: Any,
    groups: Any,
    *,
    thresholds: Any,
    n_boot: int,
    confidence: float,
    random_state: Any,
    objective: Objective,
    judged: Any = None,
    verdicts: Any = None,
) -> tuple[float, float]:
    """``(threshold_low, threshold_high)`` of :func:`bootstrap_metrics` with these
    arguments: the percentile interval of the objective's choice re-made on every
    replicate, from the same draws (the same numbers), without the metrics' table and
    band it has no use for (a slice's own threshold: :mod:`~truss_lab.evaluate._slices`).
    """
    check_boot(n_boot, confidence)
    y, s, thr = _checked_rows(y_true, salience, groups, thresholds)
    thr = snap_thresholds(thr, s)  # as bootstrap_metrics snaps it, so the grid is its
    _, counter, _, thr_desc, n_groups = _resampled(y, s, groups, thr, judged, verdicts, None)
    _, rep_thr = _replicates(counter, objective, thr_desc, n_boot, n_groups,
                             as_rng(random_state), metrics=False)
    lo, hi = percentile_interval(rep_thr[:, None], confidence)
    return float(lo[0]), float(hi[0])


def _checked_rows(y_true: Any, salience: Any, groups: Any, thresholds: Any
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(y, s, thresholds)`` of a bootstrap's rows, checked (lengths, the grid)."""
    y = as_labels(y_true)
    s = as_scores(salience)
    check_lengths(y_true=y, salience=s, groups=groups)
    return y, s, _grid(thresholds)


def _resampled(y: np.ndarray, s: np.ndarray, groups: Any, thr: np.ndarray, judged: Any,
               verdicts: Any, proposed: Any
               ) -> tuple[np.ndarray, WeightedCounter, np.ndarray, np.ndarray, int]:
    """``(y, counter, order, descending grid, verdicts)`` of a plain bootstrap: ``y``
    without its unjudged positives, the per-verdict histogram over the grid ``thr``
    (``order`` sorts it descending, ties in input order)."""
    jm = None
    if judged is not None:
        jm = as_labels(judged, "judged")
        check_lengths(y_true=y, judged=jm)
        y = y & jm  # an unjudged candidate is never a positive
    codes, verdicts = verdict_codes(groups, verdicts)
    n_groups = len(verdicts)
    order = np.argsort(-thr, kind="stable")  # descending, ties keep input order
    thr_desc = thr[order]
    h = bin_cells(y, s, codes, n_groups, thr_desc,
                  judged=jm if jm is not None else np.ones(len(y), dtype=np.uint8))
    counter = WeightedCounter(h, _per_verdict(proposed, codes, n_groups))
    return y, counter, order, thr_desc, n_groups


def _band_of(table: pd.DataFrame, thr: np.ndarray, order: np.ndarray,
             point: dict[str, np.ndarray], reps: dict[str, list[np.ndarray]],
             confidence: float, domain: dict[str, np.ndarray]) -> pd.DataFrame:
    """:attr:`BootstrapResult.band` of the plain bootstrap (``point``, ``reps`` and
    ``domain`` in descending order, ``table`` in the grid's)."""
    inverse = np.empty_like(order)
    inverse[order] = np.arange(len(order))
    bands = {}
    for name in BAND_METRICS:
        lo, hi = (table[f"{name}_{k}"].to_numpy()[order] for k in ("low", "high"))
        bands[name] = simultaneous_band(np.concatenate(reps[name]), point[name], lo, hi,
                                        confidence, domain[name])
    return band_table(thr, inverse, bands)


def _per_verdict(proposed: Any, codes: np.ndarray, n_groups: int) -> np.ndarray | None:
    """How many rows of each verdict ``proposed`` marks (None: every row counts)."""
    if proposed is None:
        return None
    pm = as_labels(proposed, "proposed")
    check_lengths(groups=codes, proposed=pm)
    return np.bincount(codes, weights=pm, minlength=n_groups)


def _grid(thresholds: Any) -> np.ndarray:
    """The threshold grid as floats: non-empty, without NaN."""
    thr = as_scores(thresholds, "thresholds")
    if thr.size == 0 or np.isnan(thr).any():
        raise BadInputError(
            "expected a non-empty grid of thresholds without NaN", field="thresholds"
        )
    return thr


def _replicates(counter: WeightedCounter, obj: Objective, thr_desc: np.ndarray, n_boot: int,
                n_groups: int, rng: np.random.Generator, *, metrics: bool = True
                ) -> tuple[dict[str, list[np.ndarray]], np.ndarray]:
    """Every replicate's metrics on the descending grid ``thr_desc`` (chunks of
    (replicates, thresholds) per metric; none with ``metrics`` False) and the threshold
    each replicate chooses (NaN: none; all NaN without verdicts)."""
    reps: dict[str, list[np.ndarray]] = {m: [] for m in BOOT_METRICS}
    rep_thr: list[np.ndarray] = []
    if n_groups:
        for w in weight_chunks(n_boot, n_groups, rng):
            rc = counter.judged(w)
            if metrics:
                m = rc.metrics()
                for name in BOOT_METRICS:
                    reps[name].append(m[name])
            idx = rc.best_index(obj)
            rep_thr.append(np.where(idx >= 0, thr_desc[np.maximum(idx, 0)], np.nan))
    else:
        for name in BOOT_METRICS:
            reps[name].append(np.full((n_boot, len(thr_desc)), np.nan))
        rep_thr.append(np.full(n_boot, np.nan))
    return reps, np.concatenate(rep_thr)


def _interval_table(thr: np.ndarray, order: np.ndarray, point: dict[str, np.ndarray],
                    reps: dict[str, list[np.ndarray]], confidence: float) -> pd.DataFrame:
    """:attr:`BootstrapResult.table`: the grid in input order with each metric's point
    value and percentile interval (``point`` and ``reps`` are in descending order)."""
    inverse = np.empty_like(order)
    inverse[order] = np.arange(len(order))
    cols: dict[str, np.ndarray] = {"threshold": thr}
    for name in BOOT_METRICS:
        values = np.concatenate(reps[name])
        lo, hi = percentile_interval(values, confidence)
        cols[name] = point[name][inverse]
        cols[f"{name}_low"] = lo[inverse]
        cols[f"{name}_high"] = hi[inverse]
    return pd.DataFrame(cols)
