"""Verdict bootstrap: vectorized implementation vs a slow loop over replicates."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.builders.profiles import examples
from truss_lab.core._errors import BadInputError
from truss_lab.evaluate import _bootstrap
from truss_lab.evaluate._bootstrap import (
    BootstrapResult,
    band_domain,
    bootstrap_metrics,
    percentile_interval,
    simultaneous_band,
)
from truss_lab.evaluate._sweep import UndefinedMetricWarning, sweep

METRICS = ("precision", "recall", "f1", "kept_per_verdict", "write_rate")


def reference_bootstrap(y, s, groups, thresholds, *, n_boot, confidence, seed, min_precision=None):
    """Slow reference: one Python iteration per replicate, rebuilding the resampled data."""
    y = np.asarray(y)
    s = np.asarray(s, dtype=float)
    codes, verdicts = pd.factorize(np.asarray(groups))  # first-appearance order
    n_groups = len(verdicts)
    members = [np.flatnonzero(codes == g) for g in range(n_groups)]
    thresholds = np.asarray(thresholds, dtype=float)
    desc = np.argsort(-thresholds, kind="stable")
    rng = np.random.default_rng(seed)
    values = {m: np.empty((n_boot, len(thresholds))) for m in METRICS}
    chosen = np.empty(n_boot)
    for b in range(n_boot):
        idx = rng.integers(0, n_groups, size=n_groups)
        rows = np.concatenate([members[g] for g in idx])
        yy, ss = y[rows], s[rows]
        n_pos = int(yy.sum())
        best, best_score = -1, -np.inf
        for j, t in enumerate(thresholds):
            kept = int(np.count_nonzero(ss >= t))
            tp = int(np.count_nonzero((ss >= t) & (yy == 1)))
            fp, fn = kept - tp, n_pos - tp
            values["precision"][b, j] = tp / kept if kept else np.nan
            values["recall"][b, j] = tp / n_pos if n_pos else np.nan
            values["f1"][b, j] = 2 * tp / (2 * tp + fp + fn) if 2 * tp + fp + fn else np.nan
            values["kept_per_verdict"][b, j] = kept / n_groups
            values["write_rate"][b, j] = kept / len(rows)
        for j in desc:  # highest threshold first: ties go to it
            if min_precision is None:
                score = values["f1"][b, j]
            else:
                p = values["precision"][b, j]
                ok = not np.isnan(p) and p >= min_precision
                score = values["recall"][b, j] if ok else np.nan
            if not np.isnan(score) and score > best_score:
                best, best_score = j, score
        chosen[b] = thresholds[best] if best >= 0 else np.nan
    alpha = 1 - confidence
    q = [alpha / 2, 1 - alpha / 2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        intervals = {
            m: np.array([np.nanquantile(values[m][:, j], q) for j in range(len(thresholds))])
            for m in METRICS
        }
        t_int = np.nanquantile(chosen, q)
    return intervals, chosen, t_int


def make_data(seed, n_verdicts, *, decimals=2, per_verdict=(1, 6)):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(per_verdict[0], per_verdict[1] + 1, n_verdicts)
    groups = np.repeat([f"v{i:04d}" for i in range(n_verdicts)], sizes)
    perm = rng.permutation(len(groups))  # candidates need not be grouped together
    groups = groups[perm]
    n = len(groups)
    s = np.round(rng.random(n), decimals)
    y = (rng.random(n) < s).astype(int)
    return y, s, groups


@pytest.mark.parametrize(
    "seed,n_verdicts,grid,min_precision",
    [
        (0, 30, np.round(np.linspace(0, 1, 11), 2), None),
        (1, 12, np.array([0.9, 0.1, 0.5, 0.5, 0.3]), None),
        (2, 25, np.round(np.linspace(0, 1, 21), 2), 0.7),
        (3, 7, np.array([0.95, 0.6, 0.2]), 0.9),
    ],
)
def test_vectorized_equals_reference_loop(seed, n_verdicts, grid, min_precision):
    y, s, g = make_data(seed, n_verdicts)
    kwargs = {}
    if min_precision:
        kwargs = {"objective": "precision_floor", "min_precision": min_precision}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        fast = bootstrap_metrics(
            y, s, g, thresholds=grid, n_boot=200, confidence=0.9, random_state=seed, **kwargs
        )
    intervals, chosen, t_int = reference_bootstrap(
        y, s, g, grid, n_boot=200, confidence=0.9, seed=seed, min_precision=min_precision
    )
    for m in METRICS:
        np.testing.assert_array_equal(fast.table[f"{m}_low"], intervals[m][:, 0], err_msg=m)
        np.testing.assert_array_equal(fast.table[f"{m}_high"], intervals[m][:, 1], err_msg=m)
    np.testing.assert_array_equal(fast.replicate_thresholds, chosen)
    assert (fast.threshold_low, fast.threshold_high) == tuple(t_int)


def test_point_estimates_equal_sweep():
    y, s, g = make_data(4, 50)
    grid = np.round(np.linspace(0, 1, 11), 2)  # typed grid values: no rounding warning
    res = bootstrap_metrics(y, s, g, thresholds=grid, n_boot=20)
    sw = sweep(y, s, groups=g, thresholds=grid)
    for m in METRICS:
        np.testing.assert_allclose(res.table[m], sw[m], rtol=1e-15, equal_nan=True)
    assert res.threshold == sw["threshold"][sw["f1"] == sw["f1"].max()].max()
    low, high = res.table["f1_low"], res.table["f1_high"]
    assert (low <= high).all()


def test_chunking_and_float64_path_do_not_change_results(monkeypatch):
    y, s, g = make_data(5, 40)
    grid = np.round(np.linspace(0, 1, 6), 2)  # typed grid values: no rounding warning
    base = bootstrap_metrics(y, s, g, thresholds=grid, n_boot=97, random_state=3)
    monkeypatch.setattr(_bootstrap, "MAX_W_CELLS", 40 * 7)  # 7 replicates per chunk
    monkeypatch.setattr(_bootstrap, "_W_MAX_F32", 0)  # force the float64 matmul
    other = bootstrap_metrics(y, s, g, thresholds=grid, n_boot=97, random_state=3)
    pd.testing.assert_frame_equal(base.table, other.table)
    np.testing.assert_array_equal(base.replicate_thresholds, other.replicate_thresholds)


def test_seeded_and_seed_sensitive():
    y, s, g = make_data(6, 40)
    grid = np.round(np.linspace(0, 1, 11), 2)  # typed grid values: no rounding warning
    a = bootstrap_metrics(y, s, g, thresholds=grid, n_boot=50, random_state=1)
    b = bootstrap_metrics(y, s, g, thresholds=grid, n_boot=50, random_state=1)
    c = bootstrap_metrics(y, s, g, thresholds=grid, n_boot=50, random_state=2)
    pd.testing.assert_frame_equal(a.table, b.table)
    assert not a.table.equals(c.table)
    gen = bootstrap_metrics(
        y, s, g, thresholds=grid, n_boot=50, random_state=np.random.default_rng(1)
    )
    pd.testing.assert_frame_equal(a.table, gen.table)


def test_nan_salience_is_never_kept():
    y = np.array([1, 0, 1, 0])
    s = np.array([np.nan, 0.5, 0.9, np.nan])
    res = bootstrap_metrics(y, s, ["a", "a", "b", "b"], thresholds=[0.0, 0.7], n_boot=10)
    assert res.table["kept_per_verdict"].tolist() == [1.0, 0.5]


def test_no_verdicts_warns_and_gives_nan():
    with pytest.warns(UndefinedMetricWarning):
        res = bootstrap_metrics([], [], [], thresholds=[0.5], n_boot=5)
    assert res.table[["f1_low", "f1_high"]].isna().all().all()
    assert np.isnan(res.threshold)


def test_repr_and_html_are_escaped():
    y, s, g = make_data(7, 10)
    res = bootstrap_metrics(y, s, g, thresholds=[0.5], n_boot=10)
    assert isinstance(res, BootstrapResult)
    assert "BootstrapResult(" in repr(res)
    res_html = res._repr_html_()
    assert "<table" in res_html and "max F1" in res_html


@pytest.mark.parametrize(
    "kwargs,field",
    [
        ({"n_boot": 0}, "n_boot"),
        ({"confidence": 1.0}, "confidence"),
        ({"thresholds": []}, "thresholds"),
        ({"thresholds": [np.nan]}, "thresholds"),
        ({"random_state": "seed"}, "random_state"),
        ({"objective": "best"}, "objective"),
        ({"objective": "precision_floor"}, "min_precision"),
    ],
)
def test_bad_options_raise(kwargs, field):
    y, s, g = make_data(8, 5)
    args = {"thresholds": [0.5], **kwargs}
    with pytest.raises(BadInputError) as err:
        bootstrap_metrics(y, s, g, **args)
    assert err.value.field == field


def test_missing_verdict_is_an_error():
    with pytest.raises(BadInputError, match="missing verdict"):
        bootstrap_metrics([0, 1], [0.1, 0.2], ["a", None], thresholds=[0.5])


@settings(max_examples=examples(30), deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n_verdicts=st.integers(1, 12),
    grid=st.lists(st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.5, 0.9, 1.0]), min_size=1, max_size=5),
)
def test_hypothesis_vectorized_equals_reference(seed, n_verdicts, grid):
    y, s, g = make_data(seed, n_verdicts, decimals=1)
    s[::7] = np.nan  # unscored candidates are never kept
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        fast = bootstrap_metrics(y, s, g, thresholds=grid, n_boot=20, random_state=seed)
    intervals, chosen, _ = reference_bootstrap(
        y, s, g, np.array(grid), n_boot=20, confidence=0.95, seed=seed
    )
    for m in METRICS:
        np.testing.assert_array_equal(fast.table[f"{m}_low"], intervals[m][:, 0], err_msg=m)
        np.testing.assert_array_equal(fast.table[f"{m}_high"], intervals[m][:, 1], err_msg=m)
    np.testing.assert_array_equal(fast.replicate_thresholds, chosen)


def _extended_quantile(x: np.ndarray, q: float) -> float:
    """numpy's "linear" quantile of the non-NaN values, in the extended reals: between a
    value and +/-inf lies that infinity; between -inf and +inf, nothing (NaN)."""
    x = np.sort(x[~np.isnan(x)])
    if not len(x):
        return np.nan
    h = q * (len(x) - 1)
    j = int(np.floor(h))
    a, b, t = x[j], x[min(j + 1, len(x) - 1)], h - j
    if a == b or t == 0:
        return float(a)
    if b == np.inf:
        return np.inf if a > -np.inf else np.nan
    if a == -np.inf:
        return -np.inf
    return float(np.quantile(x, q))  # both finite: numpy's own interpolation


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.lists(st.sampled_from([0.1, 0.25, 0.5, 0.9, np.inf, -np.inf, np.nan]),
                         min_size=3, max_size=3), min_size=1, max_size=12),
       st.sampled_from([0.5, 0.8, 0.9, 0.95]))
def test_percentile_interval_orders_infinities(rows, confidence):
    # A cost objective keeps nothing (threshold +inf) in some replicates: the interval's
    # top is then +inf, where numpy's interpolation gave NaN (inf - inf).
    values = np.array(rows, dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lo, hi = _bootstrap.percentile_interval(values, confidence)
    alpha = 1 - confidence
    for col in range(values.shape[1]):
        for got, q in ((lo[col], alpha / 2), (hi[col], 1 - alpha / 2)):
            want = _extended_quantile(values[:, col], q)
            assert (np.isnan(got) and np.isnan(want)) or got == want, (values[:, col], q)


def test_threshold_interval_of_keeping_nothing_is_infinite():
    values = np.array([[0.5], [0.6], [0.7], [np.inf]])
    assert _bootstrap.percentile_interval(values, 0.95)[1][0] == np.inf
    assert _bootstrap.percentile_interval(np.full((5, 1), np.inf), 0.9) == (
        np.array([np.inf]), np.array([np.inf]))


def test_the_simultaneous_band_holds_the_curve_where_pointwise_intervals_hold_a_point():
    """Issue 36 item 5: the max-|t| band is never narrower than the pointwise interval,
    wider where the replicates spread, and the pointwise interval where they do not."""
    rng = np.random.default_rng(0)
    values = rng.normal(0.6, 0.05, size=(2000, 20))
    values[:, 0] = 0.9  # no spread at the first threshold
    point = values.mean(axis=0)
    lo, hi = percentile_interval(values, 0.95)
    b_lo, b_hi = simultaneous_band(values, point, lo, hi, 0.95)
    assert (b_lo <= lo).all() and (b_hi >= hi).all()
    assert (b_lo[0], b_hi[0]) == (lo[0], hi[0])
    # 95 % of the replicates lie inside the band at every threshold at once.
    inside = ((values >= b_lo) & (values <= b_hi)).all(axis=1).mean()
    assert 0.94 <= inside <= 0.96
    # Over a domain: NaN outside it, and the level is that of the domain's thresholds.
    domain = np.arange(20) < 5
    d_lo, d_hi = simultaneous_band(values, point, lo, hi, 0.95, domain)
    assert np.isnan(d_lo[~domain]).all() and np.isnan(d_hi[~domain]).all()
    assert (d_hi - d_lo)[1:5].max() < (b_hi - b_lo)[1:5].min()  # fewer thresholds: narrower
    # The band of a run: every threshold of the grid, as many as the table's.
    y, s, g = (rng.random(600) < 0.5).astype(np.uint8), rng.random(600), np.arange(600) // 3
    res = bootstrap_metrics(y, s, g, thresholds=[0.2, 0.5, 0.8, 0.999], n_boot=200)
    assert res.band is not None and len(res.band) == 4
    for m in ("precision", "recall", "f1"):
        assert (res.band[f"{m}_band_low"][:3] <= res.table[f"{m}_low"][:3]).all()
        assert (res.band[f"{m}_band_high"][:3] >= res.table[f"{m}_high"][:3]).all()
    # 0.999 keeps one lesson or none: fewer than BAND_MIN_SUPPORT true ones, no band.
    assert res.band.iloc[3][["precision_band_low", "recall_band_high"]].isna().all()


def test_the_band_domain_asks_each_side_of_a_ratio_for_enough_lessons():
    tp, fp, fn = np.array([3, 10, 40, 40]), np.array([0, 0, 2, 30]), np.array([80, 70, 9, 10])
    d = band_domain(tp, fp, fn, min_support=10)
    assert d["precision"].tolist() == [False, True, True, True]
    assert d["recall"].tolist() == [False, True, False, True]  # 9 misses: too few
    assert d["f1"].tolist() == [False, True, True, True]


@pytest.mark.parametrize("seed", range(6))
def test_sparse_histogram_counts_what_the_dense_one_counts(seed: int) -> None:
    """The bootstrap's and the choice's counter holds a histogram's non-zero cells only
    (bin_cells): every replicate's counts, of every verdict and of a fold's verdicts
    (``rows``), are the dense histogram's integers, verdicts without a candidate, NaN
    scores and empty bins included."""
    rng = np.random.default_rng(seed)
    g, n = 40 + 30 * seed, 15 + 50 * seed
    codes = rng.integers(0, g, n)
    s = rng.random(n)
    s[rng.random(n) < 0.1] = np.nan
    judged = (rng.random(n) < 0.8).astype(np.uint8)
    y = (rng.random(n) < 0.5).astype(np.uint8) & judged
    thr = np.sort(rng.random(1 + 7 * seed))[::-1]
    dense = _bootstrap.WeightedCounter(_bootstrap.bin_counts(y, s, codes, g, thr, judged=judged))
    sparse = _bootstrap.WeightedCounter(_bootstrap.bin_cells(y, s, codes, g, thr, judged=judged))
    assert sparse.exact and len(sparse._sparse[0]) < g * 3 * (len(thr) + 1)
    for w in _bootstrap.weight_chunks(30, g, rng):
        fold = rng.random(g) < 0.3
        for rows in (None, fold):
            a, b = dense.judged(w, rows), sparse.judged(w, rows)
            for name in ("kept", "tp", "judged", "n", "n_pos", "n_verdicts"):
                np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


def test_weighted_histogram_without_judged_counts_every_row_judged() -> None:
    """A prediction-powered histogram has three kinds whether or not ``judged`` is given
    (without it, every row is judged): each weight lands in its own verdict's cells, as
    an explicit all-judged mask puts it and as a per-verdict loop adds it up."""
    rng = np.random.default_rng(3)
    g, n = 7, 60
    codes, s = rng.integers(0, g, n), rng.random(n)
    y = (rng.random(n) < 0.5).astype(np.uint8)
    w, written = rng.random(n), rng.random(n) < 0.6
    thr = np.array([0.8, 0.5, 0.2])
    bare = _bootstrap.bin_counts(y, s, codes, g, thr, weights=(w, written))
    every = _bootstrap.bin_counts(y, s, codes, g, thr, judged=np.ones(n, np.uint8),
                                  weights=(w, written))
    np.testing.assert_array_equal(bare, every)
    bins = len(thr) - np.searchsorted(thr[::-1], s, side="right")
    for v in range(g):
        for b in range(len(thr) + 1):
            at = (codes == v) & (bins == b)
            np.testing.assert_allclose(bare[v, :, b], [np.count_nonzero(at & written),
                                                     w[at & (y == 1)].sum(), w[at].sum()])
