"""Comparing two extractors on the same verdicts: paired bootstrap and exact McNemar.

The paired analysis uses only verdicts present in both runs; verdicts seen in
one run only are listed in the result (counts and hashes), never dropped
silently. Each extractor's recall is relative to its *own* useful candidates
(the two runs propose different lessons), so compare precision, F1 and the
per-verdict outcome before reading much into a recall difference.

Per-verdict outcome at a threshold (the McNemar unit): a verdict is a
**success** when its kept set is right: no junk lesson is kept and either at
least one useful lesson is kept, or nothing is kept and nothing useful was
there to keep (*correct silence*), i.e. for that verdict
``fp == 0 and (tp >= 1 or (kept == 0 and positives == 0))``. Without the
silence clause a verdict that teaches nothing could never be a success, and
the extractor that rightly stays quiet on it would be scored as failing.

What "nothing useful" means follows the truth: with gold labels it is "none
of *this extractor's* candidates is labelled useful" (a useful lesson it
never proposed is unknown, as in its recall); with reference lessons an
unmatched reference is a useful lesson missed, so silence there is a failure.
Parser-dropped useful lessons count as useful (never written: a miss), and an
unlabelled kept lesson makes no verdict a success by itself.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from truss_lab.core._errors import BadInputError
from truss_lab.evaluate._bootstrap import (
    WeightedCounter,
    as_rng,
    bin_counts,
    check_boot,
    percentile_interval,
    small_sample_line,
    weight_chunks,
)
from truss_lab.evaluate._choose import draw_weights
from truss_lab.evaluate._ppi import PPIData, clip_metrics
from truss_lab.evaluate._sweep import as_labels, as_scores, metrics_from_counts, snap_thresholds

__all__ = ["ComparisonResult", "compare_extractors", "compare_extractors_ppi", "mcnemar_exact"]

#: Metrics whose difference (b - a) gets a paired-bootstrap interval.
DELTA_METRICS = ("precision", "recall", "f1", "kept_per_verdict")

OUTCOME = ("success = the verdict's kept set is right: no junk lesson kept, and at least one "
           "useful lesson kept or (correct silence) nothing kept and nothing useful to keep")


def mcnemar_exact(n_a_only: int, n_b_only: int) -> float:
    """Two-sided exact McNemar p-value from the two discordant counts.

    ``n_a_only``: verdicts where only A succeeds; ``n_b_only``: only B. Under the
    null each discordant verdict is a fair coin, so the p-value is
    ``min(1, 2 * P(X <= min(n_a_only, n_b_only)))`` for ``X ~ Binomial(n, 1/2)``,
    computed exactly with integers.

    Parameters
    ----------
    n_a_only : int
        Verdicts where only A succeeds.
    n_b_only : int
        Verdicts where only B succeeds.

    Returns
    -------
    float
        The p-value; 1.0 without discordant verdicts.

    Raises
    ------
    BadInputError
        A count that is not a whole number >= 0.
    """
    for name, v in (("n_a_only", n_a_only), ("n_b_only", n_b_only)):
        if int(v) != v or v < 0:
            raise BadInputError(f"{name} must be a count >= 0, got {v!r}", field=name)
    b, c = int(n_a_only), int(n_b_only)
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1))
    return min(1.0, 2 * tail / 2**n)


def _check_run(df: Any, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    if not isinstance(df, pd.DataFrame):
        raise BadInputError(f"run {name!r} must be a DataFrame, got {type(df).__name__}")
    missing = [c for c in ("verdict_hash", "salience", "label") if c not in df.columns]
    if missing:
        raise BadInputError(
            f"run {name!r} lacks column(s) {', '.join(missing)}; "
            "expected verdict_hash, salience, label",
            field=missing[0],
        )
    hashes = df["verdict_hash"]
    if hashes.isna().any():
        i = int(np.flatnonzero(hashes.isna().to_numpy())[0])
        raise BadInputError(f"run {name!r} row {i}: missing verdict_hash", field="verdict_hash")
    judged = (as_labels(df["judged"], f"{name}.judged") if "judged" in df.columns
              else np.ones(len(df), dtype=np.uint8))
    return (
        hashes.astype(str).to_numpy(dtype=object),
        as_scores(df["salience"], f"{name}.salience"),
        as_labels(df["label"], f"{name}.label") & judged,
        judged,
    )


def _thresholds(value: Any, name: str, data: Any = None) -> np.ndarray:
    t = as_scores(np.atleast_1d(value), name)
    if t.size == 0 or np.isnan(t).any():
        raise BadInputError(f"{name} must be one or more numbers without NaN", field=name)
    return snap_thresholds(t, data, name)


@dataclass(frozen=True, eq=False)
class ComparisonResult:
    """Paired comparison of extractors A and B on their common verdicts.

    ``table`` has one row per threshold pair ``i``: ``threshold_a``,
    ``threshold_b``; for m in precision, recall, f1, kept_per_verdict: ``m_a``,
    ``m_b``, ``delta_m`` (= m_b - m_a) and ``delta_m_low``/``delta_m_high`` (the
    paired-bootstrap percentile interval); ``success_a``/``success_b``
    (verdicts with the success outcome), ``a_only``/``b_only`` (discordant
    verdicts), ``mcnemar_p`` (exact two-sided) and, last, each run's own interval
    from the same replicates, ``m_a_low``/``m_a_high`` and ``m_b_low``/``m_b_high``.
    ``only_in_a``/``only_in_b`` hold the hashes of verdicts present in one run only.
    ``correction`` names the correction of the automated truth (``none``, or ``ppi (...)``:
    :func:`compare_extractors_ppi`) and ``people_verdicts`` how many verdicts people
    answered for in each run. ``n_labelled`` is the common verdicts with a truth value on
    some lesson of either run (None when not counted), what an uncorrected comparison's
    intervals rest on (:attr:`small_sample`).

    Parameters
    ----------
    table : pandas.DataFrame
        One row per threshold pair (above).
    names : tuple of (str, str)
        The runs A and B.
    n_common : int
        Verdicts both runs processed.
    only_in_a, only_in_b : list of str
        Verdicts present in one run only.
    n_boot : int
        Paired-bootstrap replicates.
    confidence : float
        The intervals' level.
    random_state : int or numpy.random.Generator
        The seed.
    outcome : str
        What a verdict's success is.
    correction : str
        The correction of the automated truth.
    people_verdicts : tuple of (int, int)
        Verdicts people answered for in each run.
    n_labelled : int or None
        Common verdicts with a truth value on some lesson of either run.
    """

    table: pd.DataFrame
    names: tuple[str, str]
    n_common: int
    only_in_a: list[str] = field(repr=False)
    only_in_b: list[str] = field(repr=False)
    n_boot: int = 1000
    confidence: float = 0.95
    random_state: Any = 0
    outcome: str = OUTCOME
    correction: str = "none"
    people_verdicts: tuple[int, int] = (0, 0)
    n_labelled: int | None = None

    @property
    def small_sample(self) -> str | None:
        """The one warning line when the intervals rest on fewer than
        :data:`~truss_lab.evaluate._bootstrap.SMALL_SAMPLE_VERDICTS` labelled common
        verdicts or, corrected, people-answered verdicts of a run
        (:func:`~truss_lab.evaluate._bootstrap.small_sample_line`); else None."""
        people = min(self.people_verdicts) if self.correction != "none" else None
        return small_sample_line({"labelled": self.n_labelled, "people-answered": people})

    def __repr__(self) -> str:
        a, b = self.names
        lines = [
            f"ComparisonResult({a!r} vs {b!r}: {self.n_common} common verdicts, "
            f"{len(self.only_in_a)} only in {a!r}, {len(self.only_in_b)} only in {b!r}; "
            f"n_boot={self.n_boot}, confidence={self.confidence}"
            + (f"; correction {self.correction})" if self.correction != "none" else ")")
        ]
        if self.small_sample:
            lines.append(f"  {self.small_sample}")
        for _, r in self.table.iterrows():
            lines.append(
                f"  t_a={r['threshold_a']:.4g} t_b={r['threshold_b']:.4g}: "
                f"dF1 (b-a)={r['delta_f1']:+.3f} [{r['delta_f1_low']:+.3f}, "
                f"{r['delta_f1_high']:+.3f}], dprecision (b-a)={r['delta_precision']:+.3f}, "
                f"McNemar p={r['mcnemar_p']:.3g}"
            )
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        a, b = self.names
        head = html.escape(
            f"{a} vs {b}: {self.n_common} common verdicts; {len(self.only_in_a)} only in {a}, "
            f"{len(self.only_in_b)} only in {b}. Outcome: {self.outcome}."
        )
        extra = ""
        for who, hashes in ((a, self.only_in_a), (b, self.only_in_b)):
            if hashes:
                shown = ", ".join(hashes[:10]) + (" …" if len(hashes) > 10 else "")
                extra += f"<p>{html.escape(f'only in {who}: {shown}')}</p>"
        if self.small_sample:
            extra += f"<p>{html.escape(self.small_sample)}</p>"
        table = self.table.to_html(index=False, float_format=lambda v: f"{v:.4g}")
        return f"<div><p><b>ComparisonResult</b>: {head}</p>{extra}{table}</div>"


def compare_extractors(
    a: pd.DataFrame,
    b: pd.DataFrame,
    *,
    threshold: Any,
    threshold_b: Any = None,
    n_boot: int = 1000,
    confidence: float = 0.95,
    random_state: Any = 0,
    names: tuple[str, str] = ("a", "b"),
    verdicts_a: Any = None,
    verdicts_b: Any = None,
) -> ComparisonResult:
    """Paired verdict bootstrap of B - A, and exact McNemar on the per-verdict outcome.

    ``a`` and ``b`` have columns ``verdict_hash``, ``salience``, ``label`` (0/1)
    and optionally ``judged`` (0/1: the candidate has a truth value; an unjudged
    one is still kept, so it counts in ``kept_per_verdict``, never in tp/fp).
    ``verdicts_a`` / ``verdicts_b`` (optional) are every verdict hash each run
    processed: a verdict for which an extractor proposed nothing is then a
    common verdict where it kept nothing, not a verdict missing from its run.
    ``threshold`` (one value or an array) applies to A, ``threshold_b`` to B
    (default: the same). Both runs are resampled with the *same* verdict
    weights, drawn as in :mod:`truss_lab.evaluate._bootstrap` over the common verdicts in
    sorted hash order.

    Parameters
    ----------
    a, b : pandas.DataFrame
        The two runs' candidates (columns above).
    threshold : float or array-like
        A's threshold(s), one comparison row each.
    threshold_b : float or array-like, optional
        B's (default: the same).
    n_boot : int, default 1000
        Paired-bootstrap replicates.
    confidence : float, default 0.95
        The intervals' level.
    random_state : int or numpy.random.Generator, default 0
        Seed of the bootstrap.
    names : tuple of (str, str), default ("a", "b")
        The runs' names.
    verdicts_a, verdicts_b : array-like, optional
        Every verdict each run processed (above).

    Returns
    -------
    ComparisonResult
        One row per threshold pair.

    Raises
    ------
    BadInputError
        A run that is not a frame or lacks a column, a bad ``n_boot`` or confidence.
    """
    check_boot(n_boot, confidence)
    ha, sa, ya, ja = _check_run(a, names[0])
    hb, sb, yb, jb = _check_run(b, names[1])
    t_a, t_b = _threshold_pair(threshold, threshold_b, sa, sb)
    va = set(pd.unique(ha)) | set(() if verdicts_a is None else map(str, verdicts_a))
    vb = set(pd.unique(hb)) | set(() if verdicts_b is None else map(str, verdicts_b))
    index = pd.Index(np.array(sorted(va & vb), dtype=object))
    only_a, only_b, g = sorted(va - vb), sorted(vb - va), len(index)

    hs = [_binned(index, g, *run) for run in ((ha, sa, ya, ja, t_a), (hb, sb, yb, jb, t_b))]
    # Stack (all, positive) counts of A and B: one matmul per chunk for both.
    counter = WeightedCounter(np.concatenate([hs[0][0], hs[1][0]], axis=1))

    def counts(w: np.ndarray) -> dict[str, dict[str, np.ndarray]]:
        cs = counter.cumulative(w)
        out = {}
        for side, off in (("a", 0), ("b", 3)):  # (all, positive, judged) per side
            t_order = hs[off // 3][1]
            back = np.empty_like(t_order)
            back[t_order] = np.arange(len(t_order))  # sorted position of each input threshold
            kept = cs[:, off, :-1][:, back]
            tp = cs[:, off + 1, :-1][:, back]
            judged = cs[:, off + 2, :-1][:, back]
            m = metrics_from_counts(kept, tp, cs[:, off, -1:], cs[:, off + 1, -1:], g, judged)
            out[side] = m
        return out

    point = counts(np.ones((1, g), dtype=np.float32))
    deltas: dict[str, list[np.ndarray]] = {m: [] for m in DELTA_METRICS}
    sides: dict[str, list[np.ndarray]] = {f"{m}_{x}": [] for m in DELTA_METRICS for x in "ab"}
    if g:
        for w in weight_chunks(n_boot, g, as_rng(random_state)):
            rep = counts(w)
            for m in DELTA_METRICS:
                deltas[m].append(rep["b"][m] - rep["a"][m])
                sides[f"{m}_a"].append(rep["a"][m])
                sides[f"{m}_b"].append(rep["b"][m])

    success = [_verdict_success(h, t_order) for h, t_order in hs]
    # Common verdicts with a truth value on some lesson of either run.
    labelled = np.unique(np.concatenate([index.get_indexer(ha[ja.astype(bool)]),
                                         index.get_indexer(hb[jb.astype(bool)])]))
    return ComparisonResult(
        table=_table(t_a, t_b, point, deltas, _outcomes(*success), confidence, sides),
        names=(str(names[0]), str(names[1])),
        n_common=g, n_labelled=int(np.count_nonzero(labelled >= 0)),
        only_in_a=[str(h) for h in only_a],
        only_in_b=[str(h) for h in only_b],
        n_boot=int(n_boot),
        confidence=float(confidence),
        random_state=random_state if not isinstance(random_state, np.random.Generator) else None,
    )


def _threshold_pair(threshold: Any, threshold_b: Any, sa: np.ndarray, sb: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """A's and B's thresholds, as many of each (B's default: A's)."""
    t_a = _thresholds(threshold, "threshold", sa)
    t_b = (_thresholds(threshold, "threshold", sb) if threshold_b is None
           else _thresholds(threshold_b, "threshold_b", sb))
    if len(t_b) != len(t_a):
        raise BadInputError(
            f"threshold_b has {len(t_b)} values, threshold {len(t_a)}; expected as many",
            field="threshold_b",
        )
    return t_a, t_b


def _binned(index: pd.Index, g: int, hashes: np.ndarray, s: np.ndarray, y: np.ndarray,
            j: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(bins, threshold order)`` of one run's candidates on the common verdicts
    ``index`` (:func:`~truss_lab.evaluate._bootstrap.bin_counts` on its own grid)."""
    codes = index.get_indexer(hashes)
    keep = codes >= 0
    # B's thresholds need not be monotone with A's, so each run is binned
    # on its own sorted grid and mapped back to the shared row order.
    t_order = np.argsort(-t, kind="stable")
    h = bin_counts(y[keep], s[keep], codes[keep].astype(np.int64), g, t[t_order],
                   judged=j[keep])
    return h, t_order


def _verdict_success(h: np.ndarray, t_order: np.ndarray) -> np.ndarray:
    """(verdicts, thresholds) bool: each verdict's kept set is right at each threshold
    (cumulating the verdict's own bins): every kept judged lesson useful, and at least
    one kept unless the verdict has no useful lesson and nothing was kept."""
    back = np.empty_like(t_order)
    back[t_order] = np.arange(len(t_order))
    cs = np.cumsum(h, axis=2)[:, :, :-1][:, :, back]  # (g, 3, T), input order
    kept, tp, judged = cs[:, 0, :], cs[:, 1, :], cs[:, 2, :]
    # Every useful lesson of the verdict, also those never kept (NaN score).
    positives = h[:, 1, :].sum(axis=1, keepdims=True)
    silent = (kept == 0) & (positives == 0)
    return (judged == tp) & ((tp >= 1) | silent)


def _outcomes(success_a: np.ndarray, success_b: np.ndarray) -> dict[str, np.ndarray]:
    """Per threshold pair: verdicts each run gets right and the discordant ones (from
    per-verdict ``(verdicts, thresholds)`` outcomes)."""
    return {"success_a": np.count_nonzero(success_a, axis=0),
            "success_b": np.count_nonzero(success_b, axis=0),
            "a_only": np.count_nonzero(success_a & ~success_b, axis=0),
            "b_only": np.count_nonzero(~success_a & success_b, axis=0)}


def _table(t_a: np.ndarray, t_b: np.ndarray, point: dict[str, dict[str, np.ndarray]],
           deltas: dict[str, list[np.ndarray]], outcomes: dict[str, np.ndarray],
           confidence: float, sides: dict[str, list[np.ndarray]]) -> pd.DataFrame:
    """The :attr:`ComparisonResult.table`: one row per threshold pair."""
    cols: dict[str, Any] = {"threshold_a": t_a, "threshold_b": t_b}
    for m in DELTA_METRICS:
        cols[f"{m}_a"] = point["a"][m][0]
        cols[f"{m}_b"] = point["b"][m][0]
        cols[f"delta_{m}"] = point["b"][m][0] - point["a"][m][0]
        if deltas[m]:
            lo, hi = percentile_interval(np.concatenate(deltas[m]), confidence)
        else:
            lo = hi = np.full(len(t_a), np.nan)
        cols[f"delta_{m}_low"] = lo
        cols[f"delta_{m}_high"] = hi
    for key, reps in sides.items():  # each run's own interval, from the same replicates
        if reps:
            lo, hi = percentile_interval(np.concatenate(reps), confidence)
        else:
            lo = hi = np.full(len(t_a), np.nan)
        cols[f"{key}_low"], cols[f"{key}_high"] = lo, hi
    cols.update(outcomes)
    cols["mcnemar_p"] = [mcnemar_exact(int(x), int(y))
                         for x, y in zip(outcomes["a_only"], outcomes["b_only"], strict=True)]
    return pd.DataFrame(cols)


def compare_extractors_ppi(
    a: PPIData,
    b: PPIData,
    *,
    threshold: Any,
    threshold_b: Any = None,
    n_boot: int = 1000,
    confidence: float = 0.95,
    random_state: Any = 0,
    names: tuple[str, str] = ("a", "b"),
) -> ComparisonResult:
    """:func:`compare_extractors` on prediction-powered counts: each run's automated truth
    corrected by the people's answers on its lessons (``a``, ``b``:
    :func:`~truss_lab.evaluate._ppi.ppi_data`, lam = 1), on the verdicts of both
    populations.

    Precision, recall, F1 and kept per verdict of each run and their differences are
    those of :func:`~truss_lab.evaluate._ppi.ppi_sweep` over the common verdicts
    (clipped to [0, 1]); the paired bootstrap gives both runs the same verdict weights
    and resamples, among themselves, the verdicts people answered for in both runs, in
    A's only, in B's only and in neither. ``success_a`` / ``success_b`` are
    prediction-powered counts of the verdicts each run gets right (fractional);
    ``a_only``, ``b_only`` and ``mcnemar_p`` are the exact McNemar test on the verdicts
    people answered for in both runs, by the people's truth (a random sample of
    verdicts, so the test holds for them; the automated truth does not enter it).
    Where people answered for every common verdict (pi = 1) and agree with the
    automated truth, every number is :func:`compare_extractors`'s.

    Parameters
    ----------
    a, b : PPIData
        The two runs' data (above).
    threshold : float or array-like
        A's threshold(s), one comparison row each.
    threshold_b : float or array-like, optional
        B's (default: the same).
    n_boot : int, default 1000
        Paired-bootstrap replicates.
    confidence : float, default 0.95
        The intervals' level.
    random_state : int or numpy.random.Generator, default 0
        Seed of the bootstrap.
    names : tuple of (str, str), default ("a", "b")
        The runs' names.

    Returns
    -------
    ComparisonResult
        One row per threshold pair; its ``correction`` says ``ppi``.
    """
    check_boot(n_boot, confidence)
    va, vb = set(map(str, a.verdicts)), set(map(str, b.verdicts))
    index = pd.Index(np.array(sorted(va & vb), dtype=object))
    only_a, only_b, g = sorted(va - vb), sorted(vb - va), len(index)
    t_a, t_b = _threshold_pair(threshold, threshold_b, a.s_auto, b.s_auto)
    runs = [_ppi_binned(index, g, d, t) for d, t in ((a, t_a), (b, t_b))]
    counter = WeightedCounter(np.concatenate([runs[0]["h"], runs[1]["h"]], axis=1))

    def counts(w: np.ndarray) -> dict[str, dict[str, np.ndarray]]:
        cs = counter.cumulative(w)
        out = {}
        for side, off in (("a", 0), ("b", 3)):
            back = runs[off // 3]["back"]
            kept, tp, judged = (cs[:, off + i, :-1][:, back] for i in range(3))
            n_pos = cs[:, off + 1, -1:]
            m = metrics_from_counts(kept, tp, cs[:, off, -1:], n_pos, g, judged)
            out[side] = clip_metrics(m, n_pos)
        return out

    point = counts(np.ones((1, g)))
    deltas: dict[str, list[np.ndarray]] = {m: [] for m in DELTA_METRICS}
    sides: dict[str, list[np.ndarray]] = {f"{m}_{x}": [] for m in DELTA_METRICS for x in "ab"}
    people_a, people_b = runs[0]["inv"] > 0, runs[1]["inv"] > 0
    strata = [np.flatnonzero(people_a & people_b), np.flatnonzero(people_a & ~people_b),
              np.flatnonzero(~people_a & people_b), np.flatnonzero(~people_a & ~people_b)]
    if g:
        for w in draw_weights(as_rng(random_state), n_boot, strata, g):
            rep = counts(w)
            for m in DELTA_METRICS:
                deltas[m].append(rep["b"][m] - rep["a"][m])
                sides[f"{m}_a"].append(rep["a"][m])
                sides[f"{m}_b"].append(rep["b"][m])
    both = people_a & people_b
    outcomes = _outcomes(runs[0]["people"][both], runs[1]["people"][both])
    for key, run in (("success_a", runs[0]), ("success_b", runs[1])):
        inv = run["inv"][:, None]
        outcomes[key] = (run["auto"].sum(axis=0) + ((run["people"].astype(np.float64)
                         - run["auto"]) * inv)[inv[:, 0] > 0].sum(axis=0))
    return ComparisonResult(
        table=_table(t_a, t_b, point, deltas, outcomes, confidence, sides),
        names=(str(names[0]), str(names[1])), n_common=g,
        only_in_a=[str(h) for h in only_a], only_in_b=[str(h) for h in only_b],
        n_boot=int(n_boot), confidence=float(confidence),
        random_state=random_state if not isinstance(random_state, np.random.Generator) else None,
    )


def _ppi_binned(index: pd.Index, g: int, data: PPIData, t: np.ndarray) -> dict[str, Any]:
    """One run's prediction-powered bins on the common verdicts ``index``: ``h`` the
    weighted histogram (written rows, weighted positives, weighted judged), ``back`` each
    input threshold's sorted position, ``inv`` per verdict 1 / its inclusion probability
    (0: not answered), ``auto`` / ``people`` the per-verdict outcomes by either truth."""
    t_order = np.argsort(-t, kind="stable")
    back = np.empty_like(t_order)
    back[t_order] = np.arange(len(t_order))
    inv = np.zeros(g)
    at = index.get_indexer(np.asarray(data.sampled, dtype=object))
    inv[at[at >= 0]] = data.inv_pi[at >= 0]
    ca = index.get_indexer(np.asarray(data.groups_auto, dtype=object)).astype(np.int64)
    ch = index.get_indexer(np.asarray(data.groups_human, dtype=object)).astype(np.int64)
    ka, kh = ca >= 0, ch >= 0
    y = np.concatenate([data.y_auto[ka], data.y_human[kh]])
    s = np.concatenate([data.s_auto[ka], data.s_human[kh]])
    j = np.concatenate([data.judged_auto[ka], data.judged_human[kh]])
    codes = np.concatenate([ca[ka], ch[kh]])
    w = np.concatenate([1.0 - inv[ca[ka]], inv[ch[kh]]])
    written = np.arange(len(y)) < int(np.count_nonzero(ka))
    grid = t[t_order]
    h = bin_counts(y, s, codes, g, grid, judged=j, weights=(w, written))
    auto = _verdict_success(bin_counts(data.y_auto[ka], data.s_auto[ka], ca[ka], g, grid,
                                       judged=data.judged_auto[ka]), t_order)
    people = _verdict_success(bin_counts(data.y_human[kh], data.s_human[kh], ch[kh], g, grid,
                                         judged=data.judged_human[kh]), t_order)
    return {"h": h, "back": back, "inv": inv, "auto": auto, "people": people}
