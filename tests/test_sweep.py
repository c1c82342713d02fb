"""sweep / average_precision against scikit-learn and a brute-force reference."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.metrics import average_precision_score, precision_recall_curve

from tests.builders.profiles import examples
from truss_lab.core._errors import BadInputError
from truss_lab.evaluate._sweep import (
    UndefinedMetricWarning,
    average_precision,
    distinct_counts,
    sweep,
)


def brute_force(y, s, thresholds):
    """Slow reference: apply ``salience >= t`` for each threshold in a loop."""
    y = np.asarray(y)
    s = np.asarray(s, dtype=float)
    kept = np.array([np.count_nonzero(s >= t) for t in thresholds], dtype=np.int64)
    tp = np.array([np.count_nonzero((s >= t) & (y == 1)) for t in thresholds], dtype=np.int64)
    return kept, tp


def data(seed, n, *, decimals=None, p=0.4):
    rng = np.random.default_rng(seed)
    s = rng.random(n)
    if decimals is not None:
        s = np.round(s, decimals)
    y = (rng.random(n) < np.clip(s + 0.2 * (p - 0.5), 0, 1)).astype(int)
    return y, s


@pytest.mark.parametrize("decimals", [None, 1, 2])
@pytest.mark.parametrize("seed,n", [(0, 10), (1, 500), (2, 5000)])
def test_matches_sklearn_precision_recall_curve(seed, n, decimals):
    y, s = data(seed, n, decimals=decimals)
    if y.min() == y.max():
        pytest.skip("degenerate draw")
    df = sweep(y, s)
    precision, recall, thresholds = precision_recall_curve(y, s)
    # sklearn: thresholds increasing, plus a final (precision 1, recall 0) point
    # with no threshold; ours: thresholds decreasing, no extra point.
    np.testing.assert_array_equal(df["threshold"].to_numpy()[::-1], thresholds)
    np.testing.assert_allclose(df["precision"].to_numpy()[::-1], precision[:-1], rtol=1e-15)
    np.testing.assert_allclose(df["recall"].to_numpy()[::-1], recall[:-1], rtol=1e-15)
    # the given-threshold path agrees with the distinct path
    given_df = sweep(y, s, thresholds=thresholds)
    np.testing.assert_allclose(given_df["precision"], precision[:-1], rtol=1e-15)
    np.testing.assert_allclose(given_df["recall"], recall[:-1], rtol=1e-15)


@pytest.mark.parametrize("decimals", [None, 1])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_average_precision_matches_sklearn(seed, decimals):
    y, s = data(seed, 2000, decimals=decimals)
    assert average_precision(y, s) == pytest.approx(average_precision_score(y, s), rel=1e-12)


def test_counts_and_columns():
    y = [1, 0, 1, 1, 0]
    s = [0.9, 0.8, 0.8, 0.1, 0.05]
    groups = ["v1", "v1", "v2", "v2", "v3"]
    df = sweep(y, s, groups=groups)
    assert list(df.columns) == [
        "threshold", "kept", "tp", "fp", "fn", "precision", "recall", "f1",
        "kept_per_verdict", "write_rate",
    ]
    assert df["threshold"].tolist() == [0.9, 0.8, 0.1, 0.05]
    assert df["kept"].tolist() == [1, 3, 4, 5]
    assert df["tp"].tolist() == [1, 2, 3, 3]
    assert df["fp"].tolist() == [0, 1, 1, 2]
    assert df["fn"].tolist() == [2, 1, 0, 0]
    np.testing.assert_allclose(df["kept_per_verdict"], np.array([1, 3, 4, 5]) / 3)
    np.testing.assert_allclose(df["write_rate"], np.array([1, 3, 4, 5]) / 5)
    np.testing.assert_allclose(df["f1"], 2 * df["tp"] / (2 * df["tp"] + df["fp"] + df["fn"]))
    assert "kept_per_verdict" not in sweep(y, s).columns


def test_equality_passes_the_gate():
    df = sweep([1, 0], [0.7, 0.69999], thresholds=[0.7])
    assert df["kept"].tolist() == [1]


def test_given_thresholds_keep_their_order_and_nothing_kept_is_nan():
    y, s = data(5, 300)
    grid = np.array([0.5, 2.0, 0.0, 0.25, 0.5, -1.0])
    df = sweep(y, s, thresholds=grid)
    kept, tp = brute_force(y, s, grid)
    np.testing.assert_array_equal(df["threshold"], grid)
    np.testing.assert_array_equal(df["kept"], kept)
    np.testing.assert_array_equal(df["tp"], tp)
    assert np.isnan(df["precision"].iloc[1])  # threshold above every salience
    assert df["recall"].iloc[1] == 0.0


def test_nan_salience_is_never_kept_but_counts():
    y = np.array([1, 1, 0, 0, 1])
    s = np.array([0.9, np.nan, 0.4, np.nan, 0.2])
    df = sweep(y, s)
    assert df["threshold"].tolist() == [0.9, 0.4, 0.2]
    assert df["kept"].tolist() == [1, 2, 3]
    assert df["fn"].iloc[-1] == 1  # the NaN-scored positive is never recalled
    assert df["recall"].iloc[-1] == pytest.approx(2 / 3)
    assert df["write_rate"].iloc[-1] == pytest.approx(3 / 5)
    grid = [-np.inf, 0.0, 0.5]
    given_df = sweep(y, s, thresholds=grid)
    np.testing.assert_array_equal(given_df["kept"], brute_force(y, s, grid)[0])


def test_negative_zero_and_infinite_saliences():
    y = np.array([1, 0, 1, 0, 1, 0, 1])
    s = np.array([-0.0, 0.0, -0.5, 0.5, np.inf, -np.inf, -2.0])
    df = sweep(y, s)
    expected = np.array([np.inf, 0.5, 0.0, -0.5, -2.0, -np.inf])
    np.testing.assert_array_equal(df["threshold"], expected)
    np.testing.assert_array_equal(
        np.c_[df["kept"], df["tp"]], np.c_[brute_force(y, s, expected)]
    )


finite_or_nan = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.sampled_from([0.0, -0.0, 0.5, -0.5, 1.0, np.nan]),
)


@settings(max_examples=examples(200), deadline=None)
@given(
    s=arrays(np.float64, st.integers(0, 60), elements=finite_or_nan),
    seed=st.integers(0, 2**16),
)
def test_hypothesis_any_floats_match_brute_force(s, seed):
    y = np.random.default_rng(seed).integers(0, 2, len(s))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        df = sweep(y, s)
    distinct = np.unique(s[~np.isnan(s)])[::-1]
    np.testing.assert_array_equal(df["threshold"], distinct)
    kept, tp = brute_force(y, s, distinct)
    np.testing.assert_array_equal(df["kept"], kept)
    np.testing.assert_array_equal(df["tp"], tp)


@pytest.mark.parametrize("n_jobs", [1, 2, 3])
def test_parallel_sort_gives_the_same_counts(n_jobs):
    rng = np.random.default_rng(7)
    n = 300_000
    s = np.round(rng.normal(size=n), 3)  # ties and negatives, above the parallel cut-off
    y = rng.integers(0, 2, n).astype(np.uint8)
    thr, kept, tp = distinct_counts(y, s, n_jobs=n_jobs)
    values, counts = np.unique(s, return_counts=True)
    pos = np.bincount(np.searchsorted(values, s), weights=y, minlength=len(values))
    np.testing.assert_array_equal(thr, values[::-1])
    np.testing.assert_array_equal(kept, np.cumsum(counts[::-1]))
    np.testing.assert_array_equal(tp, np.cumsum(pos[::-1]))


def test_empty_input_warns_and_gives_empty_frame():
    with pytest.warns(UndefinedMetricWarning, match="no candidates"):
        df = sweep([], [])
    assert len(df) == 0 and "precision" in df.columns
    with pytest.warns(UndefinedMetricWarning):
        given_df = sweep([], [], thresholds=[0.5])
    assert given_df["kept"].tolist() == [0]
    assert np.isnan(given_df[["precision", "recall", "f1", "write_rate"]].to_numpy()).all()


def test_no_positives_warns_and_recall_is_nan():
    with pytest.warns(UndefinedMetricWarning, match="no positive"):
        df = sweep([0, 0, 0], [0.1, 0.5, 0.9])
    assert df["recall"].isna().all()
    assert (df["precision"] == 0).all()
    with pytest.warns(UndefinedMetricWarning, match="no positive"):
        assert np.isnan(average_precision([0, 0], [0.1, 0.2]))


def test_no_negatives_warns_precision_is_one():
    with pytest.warns(UndefinedMetricWarning, match="no negative"):
        df = sweep([1, 1], [0.1, 0.9])
    assert (df["precision"] == 1).all()
    _, recall, _ = precision_recall_curve([1, 1], [0.1, 0.9])
    np.testing.assert_allclose(df["recall"].to_numpy()[::-1], recall[:-1])


def test_all_nan_saliences_warn():
    with pytest.warns(UndefinedMetricWarning, match="all NaN"):
        df = sweep([0, 1], [np.nan, np.nan])
    assert len(df) == 0


def test_pandas_inputs_and_bool_labels():
    y = pd.Series([True, False, True])
    s = pd.Series([0.3, 0.2, 0.1], dtype="Float64")
    df = sweep(y, s, groups=pd.Series(["a", "a", "b"]))
    assert df["tp"].tolist() == [1, 1, 2]


@pytest.mark.parametrize(
    "y,s,kwargs,field",
    [
        ([0, 2], [0.1, 0.2], {}, "y_true"),
        ([0, 1], [0.1], {}, None),
        ([0, 1], [0.1, 0.2], {"thresholds": [0.5, np.nan]}, "thresholds"),
        ([0, 1], [0.1, 0.2], {"groups": ["a"]}, None),
        ([[0, 1]], [[0.1, 0.2]], {}, "y_true"),
        (pd.Series([0, None], dtype="Int64"), [0.1, 0.2], {}, "y_true"),
        (["a", "b"], [0.1, 0.2], {}, "y_true"),
    ],
)
def test_bad_input_raises_with_field(y, s, kwargs, field):
    with pytest.raises(BadInputError) as err:
        sweep(y, s, **kwargs)
    assert err.value.field == field


def test_n_jobs_does_not_change_the_frame():
    rng = np.random.default_rng(11)
    s = rng.random(300_000)
    y = rng.integers(0, 2, 300_000)
    pd.testing.assert_frame_equal(sweep(y, s, n_jobs=1), sweep(y, s, n_jobs=2))
