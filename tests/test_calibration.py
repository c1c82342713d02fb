"""Calibration metrics against scikit-learn's calibration_curve and brier_score_loss."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss

from truss_lab.core._errors import BadInputError
from truss_lab.evaluate._calibration import (
    brier_score,
    expected_calibration_error,
    max_calibration_error,
    reliability_table,
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
    ]
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
    assert max_calibration_error(y, p) == pytest.approx(gaps.max())
    perfect = np.array([0.0, 0.0, 1.0, 1.0])
    assert expected_calibration_error([0, 0, 1, 1], perfect) == 0.0
    assert max_calibration_error([0, 0, 1, 1], perfect) == 0.0


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
    ],
)
def test_bad_input(prob, kwargs, field):
    with pytest.raises(BadInputError) as err:
        reliability_table([0, 1], prob, **kwargs)
    assert err.value.field == field
