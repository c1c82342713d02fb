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
(``n / N`` for a simple random sample of n of N verdicts; FORMATS.md §5's
``inclusion_probability`` otherwise). Whatever the automated truth, the
expectation over the sample is the human total over every verdict; when it
agrees with the people it equals the automated total, with no sampling noise.
``lam`` = 1 is classic PPI, 0 the people's sample alone (Horvitz-Thompson),
and values between are PPI++'s power tuning.

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
cumulated, so the corrected sweep costs little more than the plain one
(benchmarks/bench_ppi.py).

**Intervals** (:func:`ppi_bootstrap`) resample verdicts in both sets: each
replicate draws the sampled verdicts with replacement among themselves and the
others among themselves (stratified), so every replicate has n people-matched
verdicts of N, as the design had. Each verdict's effective weighted histogram
over the threshold grid is built once; replicates are one matrix product.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..core._errors import BadInputError
from ..ingest._match_labels import INCLUSION
from ._bootstrap import BootstrapResult, ReplicateCounts, as_rng, check_boot, percentile_interval
from ._objective import DEFAULT_OBJECTIVE, Objective, make_objective
from ._sweep import (
    UndefinedMetricWarning,
    as_labels,
    as_scores,
    check_lengths,
    distinct_counts,
    metrics_from_counts,
    snap_thresholds,
    threshold_counts,
)
from ._truth import ReferenceTruth, RunTruth, judge_lessons

__all__ = [
    "CORRECTIONS",
    "CORRECT_HELP",
    "PEOPLE_MATCH_THRESHOLD",
    "Correction",
    "PPIData",
    "PeopleMatcher",
    "check_correct",
    "clip_metrics",
    "correction_label",
    "correction_of",
    "labels_ppi",
    "ppi_bootstrap",
    "ppi_data",
    "ppi_sweep",
    "reference_ppi",
]

Correction = Literal["ppi", "none", "auto"]
#: What ``correct=`` / ``--correct`` accepts.
CORRECTIONS: tuple[str, ...] = ("ppi", "none", "auto")
CORRECT_HELP = ("Correct the automated truth (matcher or judge) with the people's answers: "
                "ppi (prediction-powered: automated count over all annotated verdicts plus "
                "the people-minus-automated correction on the verdicts people answered for), "
                "none, or auto (ppi when people answered for some of the run's verdicts). "
                "README: Prediction-powered estimates.")

#: Metrics :func:`ppi_bootstrap` gives intervals for, as the plain bootstrap does.
_METRICS = ("precision", "recall", "f1", "kept_per_verdict", "write_rate")
#: Replicate-by-verdict weight matrices hold at most this many cells per chunk.
_MAX_CELLS = 1 << 21


def check_correct(correct: Any) -> str:
    """``correct`` if it is ppi, none or auto (None means auto); else :class:`BadInputError`."""
    if correct is None:
        return "auto"
    if isinstance(correct, str) and correct in CORRECTIONS:
        return correct
    raise BadInputError(f"correct must be one of {', '.join(CORRECTIONS)}, got {correct!r}",
                        field="correct")


@dataclass(frozen=True, eq=False)
class PPIData:
    """The automated rows of every verdict and the human rows of the sampled ones.

    Rows as the sweep takes them (``y`` 0/1 truth, 0 where not judged; ``s``
    score, NaN never kept; ``judged`` has a truth value) with their verdicts
    (``groups_*``). :attr:`verdicts` is the population (every annotated
    verdict), :attr:`sampled` the verdicts people answered for and
    :attr:`inv_pi` 1 / the inclusion probability of each of them. Build it with
    :func:`ppi_data`.
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
        rows = pd.Series(self.groups_auto, dtype=object).isin(self._sample_index).to_numpy()
        at = self._sample_index.get_indexer(self.groups_auto[rows])
        return rows, self.inv_pi[at]

    @cached_property
    def inv_pi_human(self) -> np.ndarray:
        """1 / inclusion probability of each human row's verdict."""
        return self.inv_pi[self._sample_index.get_indexer(self.groups_human)]

    @cached_property
    def codes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(auto, human, inv_pi)``: each row's verdict index into :attr:`verdicts`, and
        per verdict 1 / its inclusion probability (0: not sampled). For the bootstrap."""
        index = pd.Index(self.verdicts, dtype=object)
        inv = np.zeros(len(index))
        inv[index.get_indexer(self.sampled)] = self.inv_pi
        auto = index.get_indexer(self.groups_auto).astype(np.int64)
        if (auto < 0).any():
            bad = int(np.flatnonzero(auto < 0)[0])
            raise BadInputError(f"verdict {self.groups_auto[bad]!r} at position {bad} is not "
                                "among the verdicts evaluated", field="groups_auto")
        return auto, index.get_indexer(self.groups_human).astype(np.int64), inv


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
    """
    ya, sa = as_labels(y_auto, "y_auto"), as_scores(s_auto, "s_auto")
    yh, sh = as_labels(y_human, "y_human"), as_scores(s_human, "s_human")
    ga, gh = _groups(groups_auto, "groups_auto"), _groups(groups_human, "groups_human")
    check_lengths(y_auto=ya, s_auto=sa, groups_auto=ga)
    check_lengths(y_human=yh, s_human=sh, groups_human=gh)
    ja = _judged(judged_auto, len(ya), "judged_auto")
    jh = _judged(judged_human, len(yh), "judged_human")
    if verdicts is None:
        pop = pd.unique(ga)
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
                   verdicts=np.asarray(pop, dtype=object), sampled=samp, inv_pi=inv_pi)


def _check_lam(lam: float) -> float:
    if isinstance(lam, bool) or not isinstance(lam, int | float) or not 0.0 <= lam <= 1.0:
        raise BadInputError(f"lam must be a number in [0, 1], got {lam!r}", field="lam")
    return float(lam)


def _weighted_at(s: np.ndarray, w: np.ndarray, thr_desc: np.ndarray) -> tuple[np.ndarray, float]:
    """``(at, total)``: ``at[k]`` the sum of ``w`` over rows with ``s >= thr_desc[k]``
    (thresholds descending), ``total`` over every row (NaN scores too)."""
    n_t = len(thr_desc)
    # Bin j: the number of thresholds above s; a row in bin j is kept from index j on.
    b = n_t - np.searchsorted(thr_desc[::-1], s, side="right")
    b[np.isnan(s)] = n_t
    h = np.bincount(b, weights=w, minlength=n_t + 1)
    return np.cumsum(h)[:n_t], float(h.sum())


def clip_metrics(m: dict[str, np.ndarray], n_pos: Any) -> dict[str, np.ndarray]:
    """Precision, recall and F1 of corrected counts clipped to [0, 1] (NaN stays);
    recall is NaN where the corrected number of positives ``n_pos`` is not above 0."""
    with np.errstate(invalid="ignore"):
        m["recall"] = np.where(np.asarray(n_pos) > 0, m["recall"], np.nan)
    for k in ("precision", "recall", "f1"):
        m[k] = np.clip(m[k], 0.0, 1.0)
    return m


def ppi_sweep(
    data: PPIData,
    *,
    thresholds: Any = None,
    lam: float = 1.0,
    snap: bool = True,
) -> pd.DataFrame:
    """The sweep of :func:`~truss_lab.evaluate._sweep.sweep` with prediction-powered counts.

    Same columns, for threshold row ``i``: ``threshold``; ``kept`` (exact: what
    the gate writes); ``tp``, ``fp`` = judged - tp and ``fn`` = positives - tp,
    corrected (floats); ``precision``, ``recall``, ``f1`` from them (clipped to
    [0, 1]); ``kept_per_verdict`` = kept / every verdict; ``write_rate`` = kept
    / automated rows. Thresholds: by default every distinct automated score,
    descending (one sort); given ones in their order. ``df.attrs["ppi"]`` holds
    ``n_verdicts``, ``n_sampled`` and ``lam``.
    """
    lam = _check_lam(lam)
    ya, sa, ja = data.y_auto, data.s_auto, data.judged_auto
    if thresholds is None:
        thr, kept, tp_a = distinct_counts(ya, sa)
        jk_a = kept if ja.all() else threshold_counts(ja, sa, thr)[1]
        order = None
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
    # The correction rows: automated rows of sampled verdicts and the human rows.
    in_s, inv_a = data.auto_in_sample
    s_c = np.concatenate([sa[in_s], data.s_human])
    w_c = np.concatenate([-lam * inv_a, data.inv_pi_human])
    y_c = np.concatenate([ya[in_s], data.y_human]).astype(bool)
    j_c = np.concatenate([ja[in_s], data.judged_human]).astype(bool)
    tp_c, pos_c = _weighted_at(s_c[y_c], w_c[y_c], thr_desc)
    jk_c, _ = _weighted_at(s_c[j_c], w_c[j_c], thr_desc)
    if order is not None:  # back to the given order
        inverse = np.empty_like(order)
        inverse[order] = np.arange(len(order))
        tp_c, jk_c = tp_c[inverse], jk_c[inverse]
    tp = lam * tp_a + tp_c
    judged = lam * jk_a + jk_c
    n_pos = lam * float(np.count_nonzero(ya)) + pos_c
    n = len(ya)
    if n_pos <= 0:
        warnings.warn("the corrected number of positives is not above 0: recall is undefined "
                      "(NaN)", UndefinedMetricWarning, stacklevel=2)
    m = clip_metrics(metrics_from_counts(kept, tp, n, n_pos, data.n_verdicts, judged), n_pos)
    df = pd.DataFrame({
        "threshold": thr, "kept": kept, "tp": tp, "fp": judged - tp, "fn": n_pos - tp,
        "precision": m["precision"], "recall": m["recall"], "f1": m["f1"],
        "kept_per_verdict": m["kept_per_verdict"], "write_rate": m["write_rate"],
    }, copy=False)
    df.attrs["ppi"] = {"n_verdicts": data.n_verdicts, "n_sampled": data.n_sampled,
                       "lam": lam}
    return df


def _histograms(data: PPIData, thr_desc: np.ndarray, lam: float,
                proposed: np.ndarray | None = None) -> np.ndarray:
    """Per-verdict effective histograms, shape ``(N, 3, T + 1)``: kind 0 the weighted
    true rows, 1 the weighted judged rows, 2 the automated rows (weight 1, for kept);
    bin j as in :func:`~truss_lab.evaluate._bootstrap.bin_counts`."""
    n_t, n_v = len(thr_desc), data.n_verdicts
    code_a, code_h, inv = data.codes
    wa, wh = lam * (1.0 - inv[code_a]), inv[code_h]
    size = n_t + 1

    def bins(s: np.ndarray) -> np.ndarray:
        b = n_t - np.searchsorted(thr_desc[::-1], s, side="right")
        b[np.isnan(s)] = n_t
        return b

    ba, bh = bins(data.s_auto), bins(data.s_human)
    fa, fh = code_a * (3 * size) + ba, code_h * (3 * size) + bh
    ya, yh = data.y_auto.astype(bool), data.y_human.astype(bool)
    ja, jh = data.judged_auto.astype(bool), data.judged_human.astype(bool)
    flat = np.concatenate([fa[ya], fh[yh], fa[ja] + size, fh[jh] + size, fa + 2 * size])
    ones = np.ones(len(fa)) if proposed is None else proposed.astype(np.float64)
    w = np.concatenate([wa[ya], wh[yh], wa[ja], wh[jh], ones])
    return np.bincount(flat, weights=w, minlength=n_v * 3 * size).reshape(n_v, 3, size)


def _counts(h: np.ndarray, w: np.ndarray) -> ReplicateCounts:
    """Replicate counts from verdict weights ``w`` (replicates x verdicts), thresholds
    descending: :class:`~truss_lab.evaluate._bootstrap.ReplicateCounts` with float counts."""
    g, k, size = h.shape
    cs = np.cumsum((w @ h.reshape(g, k * size)).reshape(len(w), k, size), axis=2)
    return ReplicateCounts(kept=cs[:, 2, :-1], tp=cs[:, 0, :-1], judged=cs[:, 1, :-1],
                           n=cs[:, 2, -1:], n_pos=cs[:, 0, -1:],
                           n_verdicts=w.sum(axis=1, keepdims=True))


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


def ppi_bootstrap(
    data: PPIData,
    *,
    thresholds: Any,
    n_boot: int = 1000,
    confidence: float = 0.95,
    random_state: Any = 0,
    objective: str | Objective = DEFAULT_OBJECTIVE,
    lam: float = 1.0,
    snap: bool = True,
    proposed: Any = None,
) -> BootstrapResult:
    """Intervals of the prediction-powered metrics on a grid of ``thresholds``.

    A :class:`~truss_lab.evaluate._bootstrap.BootstrapResult` like the plain
    bootstrap's: its ``table`` has, per threshold in the order given, each
    metric of precision, recall, F1, kept per verdict and write rate (the
    :func:`ppi_sweep` value) with ``_low``/``_high`` percentile bounds over
    ``n_boot`` replicates that resample verdicts in both sets (module
    docstring); ``threshold`` is the ``objective``'s choice on the corrected
    counts and its interval the choice re-made per replicate. Seeded by
    ``random_state``. ``proposed`` (bool per automated row, default all) marks the
    rows write rate divides by (with references: the lessons, not the misses).
    """
    lam = _check_lam(lam)
    check_boot(n_boot, confidence)
    obj = make_objective(objective)
    thr = as_scores(thresholds, "thresholds")
    if thr.size == 0 or np.isnan(thr).any():
        raise BadInputError("expected a non-empty grid of thresholds without NaN",
                            field="thresholds")
    if snap:
        thr = snap_thresholds(thr, data.s_auto)
    order = np.argsort(-thr, kind="stable")
    thr_desc = thr[order]
    prop = None if proposed is None else as_labels(proposed, "proposed")
    h = _histograms(data, thr_desc, lam, prop)
    full = _counts(h, np.ones((1, data.n_verdicts)))
    point = {k: v[0] for k, v in clip_metrics(full.metrics(), full.n_pos).items()}
    best0 = full.best_index(obj)[0]
    rng = as_rng(random_state)
    reps: dict[str, list[np.ndarray]] = {m: [] for m in _METRICS}
    rep_thr: list[np.ndarray] = []
    for w in _stratified(n_boot, data, rng):
        rc = _counts(h, w)
        m = clip_metrics(rc.metrics(), rc.n_pos)
        for name in _METRICS:
            reps[name].append(m[name])
        idx = rc.best_index(obj)
        rep_thr.append(np.where(idx >= 0, thr_desc[np.maximum(idx, 0)], np.nan))
    replicate_thresholds = np.concatenate(rep_thr)
    t_lo, t_hi = percentile_interval(replicate_thresholds[:, None], confidence)
    inverse = np.empty_like(order)
    inverse[order] = np.arange(len(order))
    cols: dict[str, np.ndarray] = {"threshold": thr}
    for name in _METRICS:
        lo, hi = percentile_interval(np.concatenate(reps[name]), confidence)
        cols[name] = point[name][inverse]
        cols[f"{name}_low"] = lo[inverse]
        cols[f"{name}_high"] = hi[inverse]
    return BootstrapResult(
        table=pd.DataFrame(cols), objective=obj.describe(),
        threshold=float(thr_desc[best0]) if best0 >= 0 else float("nan"),
        threshold_low=float(t_lo[0]), threshold_high=float(t_hi[0]),
        replicate_thresholds=replicate_thresholds, n_boot=int(n_boot),
        confidence=float(confidence),
        random_state=random_state if not isinstance(random_state, np.random.Generator) else None,
        n_verdicts=data.n_verdicts,
    )


# ------------------------------------------------------------------- the two truths of a run


class PeopleMatcher:
    """A matcher whose pairs are the people's: lesson i expresses reference j with
    similarity 1 when the people's answer for lesson i (:func:`~truss_lab.evaluate.
    _matches.people_matches`) is j, else 0. With match threshold
    :data:`PEOPLE_MATCH_THRESHOLD` the one-to-one greedy assignment of
    :func:`~truss_lab.score._matching.match_lessons` then gives the people's truth
    exactly as it gives a matcher's: a lesson whose reference an earlier lesson
    (higher score) claimed is a duplicate, a reference nobody names a miss."""

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
        """Similarity of each (lesson ``li[k]``, reference ``ri[k]``) pair: 1 or 0."""
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


def reference_ppi(truth: ReferenceTruth, references: pd.DataFrame,
                  people: pd.DataFrame) -> PPIData | None:
    """The two truths of one run judged by references: the matcher's rows of every
    annotated verdict (``truth.rows``) and the people's rows of the verdicts they
    matched, built by :func:`~truss_lab.evaluate._truth.judge_lessons` with a
    :class:`PeopleMatcher`: the same lessons, the same greedy one-to-one rule.

    ``references``: §4 rows (every annotator's); ``people``: one answer per lesson of
    the run's extractor (:func:`~truss_lab.evaluate._matches.people_matches`). A
    lesson the people tied on has no human truth (not judged). None when people
    matched no verdict the run is judged on."""
    pop = np.asarray(truth.verdicts, dtype=object)
    said = people["verdict_hash"].astype(str)
    sampled = np.asarray(pd.unique(said[said.isin(pd.Index(pop, dtype=object))]), dtype=object)
    if len(sampled) == 0:
        return None
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


def labels_ppi(auto: RunTruth, gold: RunTruth) -> PPIData | None:
    """The two truths of one run judged by a judge: the judge's labels on every verdict
    the run processed (``auto``) and the gold labels (``gold``, of the same run, scored
    alike) on the verdicts where people labelled a lesson of the run (taken as a simple
    random sample of the verdicts with a candidate: FORMATS.md §3 labels carry no
    design). None when people labelled nothing of the run."""
    if auto.count_scale != gold.count_scale:
        raise BadInputError('ties="half" counts a judge and the gold labels alike or not '
                            "at all", field="ties")
    a, h = auto.candidates, gold.candidates
    labelled = h["judged"].to_numpy(dtype=bool)
    sampled = np.asarray(pd.unique(h.loc[labelled, "verdict_hash"].astype(str)), dtype=object)
    if len(sampled) == 0:
        return None
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
