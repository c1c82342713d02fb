"""Displays: plot returns self, keeps ax_/figure_, draws the expected artists."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from truss_lab.core._errors import BadInputError
from truss_lab.evaluate._bootstrap import bootstrap_metrics
from truss_lab.evaluate._compare import compare_extractors
from truss_lab.evaluate._sweep import sweep
from truss_lab.faces._display import (
    CalibrationDisplay,
    ComparisonDisplay,
    PrecisionRecallDisplay,
    SweepDisplay,
)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def data(seed=0, n=400):
    rng = np.random.default_rng(seed)
    s = np.round(rng.random(n), 2)
    y = (rng.random(n) < s).astype(int)
    g = rng.integers(0, 80, n).astype(str)
    return y, s, g


def test_sweep_display_lines_threshold_and_bands():
    y, s, g = data()
    grid = np.linspace(0, 1, 11)
    boot = bootstrap_metrics(y, s, g, thresholds=grid, n_boot=30)
    disp = SweepDisplay.from_predictions(
        y, s, groups=g, threshold=0.6, intervals=boot.table, name="sim-v1"
    )
    assert isinstance(disp, SweepDisplay)
    assert disp.ax_.figure is disp.figure_
    labels = [line.get_label() for line in disp.ax_.get_lines()]
    assert {"precision", "recall", "f1", "chosen 0.6"} <= set(labels)
    assert [line.get_label() for line in disp.ax2_.get_lines()] == ["kept_per_verdict"]
    assert len(disp.ax_.collections) == 3  # one CI band per metric
    assert disp.ax_.get_title() == "sim-v1"
    np.testing.assert_allclose(disp.threshold_line_.get_xdata(), [0.6, 0.6])


def test_sweep_display_without_groups_uses_write_rate_and_given_axes():
    y, s, _ = data(1)
    fig, ax = plt.subplots()
    disp = SweepDisplay.from_sweep(sweep(y, s), ax=ax)
    assert disp.ax_ is ax and disp.figure_ is fig
    assert disp.ax2_.get_lines()[0].get_label() == "write_rate"
    assert disp.plot() is disp  # replotting on a new figure works
    with pytest.raises(BadInputError):
        SweepDisplay(pd.DataFrame({"threshold": [0.5]}))


def test_precision_recall_display():
    y, s, _ = data(2)
    disp = PrecisionRecallDisplay.from_predictions(y, s, name="x")
    df = sweep(y, s)
    np.testing.assert_allclose(disp.line_.get_xdata(), df["recall"])
    np.testing.assert_allclose(disp.line_.get_ydata(), df["precision"])
    assert "AP = " in disp.line_.get_label()
    assert disp.ax_.get_xlabel() == "recall"
    assert PrecisionRecallDisplay.from_sweep(df).plot() is not None


def test_calibration_display():
    y, s, _ = data(3)
    disp = CalibrationDisplay.from_predictions(y, s, n_bins=5)
    assert len(disp.bars_) == 5
    assert sum(bar.get_height() for bar in disp.bars_) == len(y)
    assert len(disp.line_.get_xdata()) == (disp.table["count"] > 0).sum()
    assert disp.ax_.figure is disp.figure_


def test_comparison_display():
    rng = np.random.default_rng(4)
    frame = pd.DataFrame(
        {
            "verdict_hash": rng.integers(0, 30, 200).astype(str),
            "salience": rng.random(200),
            "label": rng.integers(0, 2, 200),
        }
    )
    other = frame.assign(salience=np.clip(frame["salience"] + rng.normal(0, 0.1, 200), 0, 1))
    res = compare_extractors(frame, other, threshold=0.5, n_boot=30, names=("v1", "v2"))
    disp = ComparisonDisplay.from_result(res)
    assert disp.ax_.figure is disp.figure_
    assert [t.get_text() for t in disp.ax_.get_yticklabels()] == [
        "precision", "recall", "f1", "kept per verdict",
    ]
    assert "v2 - v1" in disp.ax_.get_xlabel() and "McNemar" in disp.ax_.get_title()
