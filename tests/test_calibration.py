"""Calibration metrics against scikit-learn's calibration_curve and brier_score_loss."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss

from truss_lab.core._errors import BadInputError
from truss_lab.evaluate._calibration import (
    DEFAULT_MIN_BIN_COUNT,
    brier_score,
    expected_calibration_error,
    max_calibration_error,
    reliability_table,
    wilson_interval,
)
from truss_lab.evaluate._sweep import UndefinedMetricWarning


def make_data(seed, n=2000, decimals=None):
    rng = np.random.default_rng(seed)
    p = rng.beta(2, 3, n)
    if decimals is not None:
        p = np.round(p, decimals)  # values on bin edges and duplicate quantiles
    y = (rng.random(n) < p**1.3).astype(int)
    return y, p


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("n_bins", [1, 5, 10, 23])
@pytest.mark.parametrize("seed,decimals", [(0, None), (1, 1), (2, 2)])
def test_matches_sklearn_calibration_curve(seed, decimals, n_bins, strategy):
    y, p = make_data(seed, decimals=decimals)
    table = reliability_table(y, p, n_bins=n_bins, strategy=strategy)
    prob_true, prob_pred = calibration_curve(y, p, n_bins=n_bins, strategy=strategy)
    full = table[table["count"] > 0]
    np.testing.assert_allclose(full["observed_frequency"], prob_true, rtol=1e-12)
    np.testing.assert_allclose(full["mean_predicted"], prob_pred, rtol=1e-12)
    assert len(table) == n_bins
    assert table["count"].sum() == len(y)
    assert table.loc[table["count"] == 0, "mean_predicted"].isna().all()


def test_edges_and_columns():
    table = reliability_table([0, 1, 1, 0], [0.0, 0.5, 0.55, 1.0], n_bins=2)
    assert table.columns.tolist() == [
        "bin", "lower", "upper", "count", "n_positive", "mean_predicted", "observed_frequency",
        "frequency_low", "frequency_high", "enough",
    ]
    assert table.attrs == {"min_bin_count": DEFAULT_MIN_BIN_COUNT, "confidence": 0.95}
    # 0.5 sits on the inner edge and falls in the lower bin, as in scikit-learn
    assert table["count"].tolist() == [2, 2]
    assert table["n_positive"].tolist() == [1, 1]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_brier_matches_sklearn(seed):
    y, p = make_data(seed)
    assert brier_score(y, p) == pytest.approx(brier_score_loss(y, p), rel=1e-12)


def test_ece_and_mce_by_hand():
    y, p = make_data(3, decimals=2)
    table = reliability_table(y, p, n_bins=10)
    full = table[table["count"] > 0]
    gaps = (full["observed_frequency"] - full["mean_predicted"]).abs()
    assert expected_calibration_error(y, p) == pytest.approx(
        float((gaps * full["count"]).sum() / len(y))
    )
    enough = full["count"] >= DEFAULT_MIN_BIN_COUNT
    assert max_calibration_error(y, p) == pytest.approx(gaps[enough].max())
    assert max_calibration_error(y, p, min_bin_count=1) == pytest.approx(gaps.max())
    perfect = np.array([0.0, 0.0, 1.0, 1.0])
    assert expected_calibration_error([0, 0, 1, 1], perfect) == 0.0
    assert max_calibration_error([0, 0, 1, 1], perfect, min_bin_count=2) == 0.0


def test_empty_input_warns_and_gives_nan():
    with pytest.warns(UndefinedMetricWarning):
        assert np.isnan(brier_score([], []))
    with pytest.warns(UndefinedMetricWarning):
        assert np.isnan(expected_calibration_error([], []))
    with pytest.warns(UndefinedMetricWarning):
        assert np.isnan(max_calibration_error([], [], strategy="quantile"))


@pytest.mark.parametrize(
    "prob,kwargs,field",
    [
        ([0.1, 1.2], {}, "prob"),
        ([0.1, np.nan], {}, "prob"),
        ([-0.1, 0.5], {}, "prob"),
        ([0.1, 0.2], {"n_bins": 0}, "n_bins"),
        ([0.1, 0.2], {"strategy": "kmeans"}, "strategy"),
        ([0.1, 0.2], {"min_bin_count": 0}, "min_bin_count"),
        ([0.1, 0.2], {"confidence": 1.0}, "confidence"),
    ],
)
def test_bad_input(prob, kwargs, field):
    with pytest.raises(BadInputError) as err:
        reliability_table([0, 1], prob, **kwargs)
    assert err.value.field == field


@pytest.mark.parametrize("confidence", [0.8, 0.95, 0.99])
def test_wilson_matches_statsmodels(confidence):
    from statsmodels.stats.proportion import proportion_confint

    rng = np.random.default_rng(int(confidence * 100))
    n = np.concatenate([[1, 1, 2, 5, 5, 30], rng.integers(1, 500, 40)])
    k = np.concatenate([[0, 1, 1, 0, 5, 12], [rng.integers(0, m + 1) for m in n[6:]]])
    low, high = wilson_interval(k, n, confidence=confidence)
    ref_low, ref_high = proportion_confint(k, n, alpha=1 - confidence, method="wilson")
    np.testing.assert_allclose(low, ref_low, rtol=0, atol=1e-12)
    np.testing.assert_allclose(high, ref_high, rtol=0, atol=1e-12)
    assert np.isnan(wilson_interval([0], [0])[0]).all()


def test_table_intervals_and_small_bins():
    y, p = make_data(4, n=300, decimals=2)
    table = reliability_table(y, p, n_bins=10, min_bin_count=25, confidence=0.9)
    full = table[table["count"] > 0]
    low, high = wilson_interval(full["n_positive"], full["count"], confidence=0.9)
    np.testing.assert_allclose(full["frequency_low"], low)
    np.testing.assert_allclose(full["frequency_high"], high)
    assert (full["frequency_low"] <= full["observed_frequency"]).all()
    assert (full["observed_frequency"] <= full["frequency_high"]).all()
    assert (table["enough"] == (table["count"] >= 25)).all()
    assert table.attrs == {"min_bin_count": 25, "confidence": 0.9}


def test_one_candidate_bin_no_longer_sets_mce():
    # 200 well-calibrated candidates around 0.3 and 0.7, and one unlucky lesson
    # at 0.95 labelled junk: its bin's gap (0.95) would be the MCE.
    rng = np.random.default_rng(5)
    p = np.concatenate([np.full(100, 0.3), np.full(100, 0.7), [0.95]])
    y = np.concatenate([rng.random(100) < 0.3, rng.random(100) < 0.7, [False]]).astype(int)
    assert max_calibration_error(y, p, min_bin_count=1) == pytest.approx(0.95)
    table = reliability_table(y, p)
    gaps = (table["observed_frequency"] - table["mean_predicted"]).abs()[table["count"] >= 10]
    assert max_calibration_error(y, p) == pytest.approx(gaps.max())
    assert max_calibration_error(y, p) < 0.2
    with pytest.warns(UndefinedMetricWarning, match="min_bin_count"):
        assert np.isnan(max_calibration_error(y, p, min_bin_count=500))


def test_display_draws_small_bins_hollow():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from truss_lab.faces._display import CalibrationDisplay

    y, p = make_data(6, n=120, decimals=2)
    disp = CalibrationDisplay.from_predictions(y, p, n_bins=10, min_bin_count=15)
    small = disp.table[(disp.table["count"] > 0) & ~disp.table["enough"]]
    assert len(small) > 0 and disp.small_ is not None
    assert len(disp.small_.get_xdata()) == len(small)
    assert disp.small_.get_markerfacecolor() == "white"
    assert disp.errorbar_ is not None
    assert "not in MCE" in disp.small_.get_label()
    import matplotlib.pyplot as plt

    plt.close(disp.figure_)
