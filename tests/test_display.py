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
    grid = np.round(np.linspace(0, 1, 11), 2)  # typed grid values: no rounding warning
    boot = bootstrap_metrics(y, s, g, thresholds=grid, n_boot=30)
    disp = SweepDisplay.from_predictions(
        y, s, groups=g, threshold=0.6, intervals=boot.table, name="sim-v1"
    )
    assert isinstance(disp, SweepDisplay)
    assert disp.ax_.figure is disp.figure_
    labels = [line.get_label() for line in disp.ax_.get_lines()]
    assert {"precision", "recall", "f1", "chosen 0.6", "default 0.70"} <= set(labels)
    assert [line.get_label() for line in disp.ax2_.get_lines()] == ["kept_per_verdict"]
    assert len(disp.ax_.collections) == 3  # one CI band per metric
    assert set(disp.bands_) == {"precision", "recall", "f1"}
    # each band spans its metric's interval, in the metric's colour
    band = disp.bands_["f1"].get_paths()[0].vertices
    assert band[:, 1].min() == pytest.approx(np.nanmin(boot.table["f1_low"]))
    assert disp.ax_.get_title() == "sim-v1"
    np.testing.assert_allclose(disp.threshold_line_.get_xdata(), [0.6, 0.6])
    np.testing.assert_allclose(disp.default_line_.get_xdata(), [0.7, 0.7])
    # chosen and default are distinct lines, both in the legend, bands once
    legend = [t.get_text() for t in disp.ax_.get_legend().get_texts()]
    assert "chosen 0.6" in legend and "default 0.70" in legend
    assert legend.count("bootstrap interval") == 1
    assert disp.threshold_line_.get_linestyle() != disp.default_line_.get_linestyle()


def test_sweep_display_chosen_differs_from_default_and_default_can_be_hidden():
    y, s, g = data(5)
    disp = SweepDisplay.from_predictions(y, s, groups=g, threshold=0.43)
    labels = [line.get_label() for line in disp.ax_.get_lines()]
    assert "chosen 0.43" in labels and "default 0.70" in labels
    assert "chosen 0.7" not in labels
    hidden = SweepDisplay.from_predictions(y, s, threshold=0.43, default_threshold=None)
    assert not hasattr(hidden, "default_line_")
    assert "default 0.70" not in [line.get_label() for line in hidden.ax_.get_lines()]
    assert hidden.figure_.get_layout_engine() is not None  # constrained: nothing cut off


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


def test_precision_recall_display_chance_level_and_operating_point():
    y, s, _ = data(2)
    disp = PrecisionRecallDisplay.from_predictions(y, s, threshold=0.5, name="x")
    np.testing.assert_allclose(disp.chance_line_.get_ydata(), [y.mean(), y.mean()])
    assert disp.chance_line_.get_label().startswith("chance level")
    at = sweep(y, s, thresholds=[0.5])
    np.testing.assert_allclose(disp.operating_point_.get_xdata(), at["recall"])
    np.testing.assert_allclose(disp.operating_point_.get_ydata(), at["precision"])
    assert "threshold 0.5" in disp.operating_point_.get_label()
    legend = [t.get_text() for t in disp.ax_.get_legend().get_texts()]
    assert any(t.startswith("operating point") for t in legend)
    # from a sweep frame: chance = precision when everything is kept
    by_sweep = PrecisionRecallDisplay.from_sweep(sweep(y, s), threshold=0.5)
    assert by_sweep.chance_line_.get_ydata()[0] == pytest.approx(y.mean())
    np.testing.assert_allclose(by_sweep.operating_point_.get_ydata(), at["precision"])


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
    axes = disp.axes_
    assert set(axes) == {"rates", "counts", "rate_deltas", "count_deltas"}
    # rates and the count never share an axis
    ticks = {k: [t.get_text() for t in a.get_yticklabels()] for k, a in axes.items()}
    assert ticks["rates"] == ticks["rate_deltas"] == ["precision", "recall", "f1"]
    assert ticks["counts"] == ticks["count_deltas"] == ["kept per verdict"]
    # each run's values are drawn (one bar per run and metric), labelled by run
    r = res.table.iloc[0]
    assert [t.get_text() for t in axes["rates"].get_legend().get_texts()] == ["v1", "v2"]
    assert axes["rates"].get_xlim() == (-0.02, 1.02)  # rates on [0, 1]
    assert "A = v1, B = v2" in disp.title_.get_text()
    widths = sorted(round(p.get_width(), 9) for p in axes["rates"].patches)
    assert widths == sorted(round(float(r[f"{m}_{s}"]), 9) for m in ("precision", "recall",
                                                                      "f1") for s in "ab")
    assert disp.values_["v2"]["kept_per_verdict"] == pytest.approx(r["kept_per_verdict_b"])
    # deltas with their intervals on their own axes
    np.testing.assert_allclose(disp.errorbars_["counts"].lines[0].get_xdata(),
                               [r["delta_kept_per_verdict"]])
    assert "B - A" in axes["rate_deltas"].get_xlabel()
    assert "McNemar" in disp.title_.get_text()
    assert disp.figure_.get_layout_engine() is not None  # constrained: nothing cut off
    with pytest.raises(BadInputError):
        ComparisonDisplay(res).plot(ax=plt.subplots()[1])
    _, grid = plt.subplots(2, 2)
    assert ComparisonDisplay(res).plot(ax=grid).axes_["counts"] is grid[0, 1]


def test_saved_plots_keep_every_label_inside(tmp_path):
    from truss_lab.faces._display import save_comparison_plot, save_sweep_plot

    y, s, g = data(6)
    res = compare_extractors(
        pd.DataFrame({"verdict_hash": g, "salience": s, "label": y}),
        pd.DataFrame({"verdict_hash": g, "salience": s[::-1], "label": y}),
        threshold=0.5, n_boot=20, names=("a-long-run-name", "b-long-run-name"))
    for path in (save_comparison_plot(res, tmp_path / "c.png"),
                 save_sweep_plot(sweep(y, s, groups=g), tmp_path / "s.png", threshold=0.4)):
        import matplotlib.image as mpimg

        img = mpimg.imread(path)
        assert img.shape[0] > 100 and img.shape[1] > 100
