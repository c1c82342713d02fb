"""Plots of sweeps, precision-recall, calibration and comparisons (scikit-learn style).

Each Display holds the numbers, ``plot(ax=None)`` draws them, keeps ``ax_``
and ``figure_`` and returns ``self``; ``from_predictions`` / ``from_*``
constructors compute and plot in one call. matplotlib is imported only when
plotting (``pip install 'truss_lab[notebook]'``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from truss_lab.core._errors import BadInputError

if TYPE_CHECKING:
    from truss_lab.evaluate._compare import ComparisonResult
    from truss_lab.evaluate._runs import CalibrationReport

__all__ = [
    "CalibrationDisplay",
    "ComparisonDisplay",
    "PrecisionRecallDisplay",
    "SweepDisplay",
    "save_calibration_plot",
    "save_comparison_plot",
    "save_sweep_plot",
]

_HINT = "pip install 'truss_lab[notebook]'"


def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(f"plotting needs matplotlib: {_HINT}") from exc
    return plt


def _figure(figsize: tuple[float, float], *, dpi: float | None = None) -> Any:
    """A bare matplotlib Figure, for PNGs and widget images.

    A bare Figure renders through Agg without pyplot, so no display (and no
    global backend switch or figure list) is ever needed, and nothing is shown
    twice inline in a notebook.
    """
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(f"plotting needs matplotlib: {_HINT}") from exc
    return Figure(figsize=figsize, dpi=dpi, layout="constrained")


def _axes(ax: Any) -> Any:
    if ax is None:
        _, ax = _pyplot().subplots()
    return ax


class SweepDisplay:
    """Precision, recall and F1 against the threshold, kept-per-verdict on a second axis.

    ``sweep`` is a :func:`~truss_lab.evaluate._sweep.sweep` frame; ``threshold`` (optional)
    is marked with a vertical line; ``intervals`` (optional) is a frame with
    ``threshold`` and ``<metric>_low``/``<metric>_high`` columns (e.g.
    ``BootstrapResult.table``), drawn as bands.
    """

    def __init__(
        self,
        sweep: pd.DataFrame,
        *,
        threshold: float | None = None,
        intervals: pd.DataFrame | None = None,
        name: str | None = None,
    ) -> None:
        missing = {"threshold", "precision", "recall", "f1"} - set(sweep.columns)
        if missing:
            raise BadInputError(
                f"a sweep frame needs columns {sorted(missing)}", field=sorted(missing)[0]
            )
        self.sweep = sweep
        self.threshold = threshold
        self.intervals = intervals
        self.name = name

    @classmethod
    def from_sweep(
        cls,
        sweep: pd.DataFrame,
        *,
        threshold: float | None = None,
        intervals: pd.DataFrame | None = None,
        name: str | None = None,
        ax: Any = None,
    ) -> SweepDisplay:
        """Plot an existing sweep frame."""
        return cls(sweep, threshold=threshold, intervals=intervals, name=name).plot(ax=ax)

    @classmethod
    def from_predictions(
        cls,
        y_true: Any,
        salience: Any,
        *,
        groups: Any = None,
        thresholds: Any = None,
        threshold: float | None = None,
        intervals: pd.DataFrame | None = None,
        name: str | None = None,
        ax: Any = None,
    ) -> SweepDisplay:
        """Sweep the predictions (see :func:`~truss_lab.evaluate._sweep.sweep`) and plot."""
        from truss_lab.evaluate._sweep import sweep

        df = sweep(y_true, salience, groups=groups, thresholds=thresholds)
        return cls.from_sweep(df, threshold=threshold, intervals=intervals, name=name, ax=ax)

    def plot(self, ax: Any = None) -> SweepDisplay:
        """Draw on ``ax`` (new figure when None).

        Sets ``ax_``, ``ax2_`` (secondary axis), ``figure_`` and ``lines_`` (by metric).
        """
        ax = _axes(ax)
        df = self.sweep.sort_values("threshold")
        t = df["threshold"].to_numpy()
        self.lines_ = {}
        for metric, style in (("precision", "-"), ("recall", "--"), ("f1", "-.")):
            (line,) = ax.plot(t, df[metric].to_numpy(), style, label=metric)
            self.lines_[metric] = line
            if self.intervals is not None and f"{metric}_low" in self.intervals.columns:
                iv = self.intervals.sort_values("threshold")
                ax.fill_between(
                    iv["threshold"].to_numpy(),
                    iv[f"{metric}_low"].to_numpy(),
                    iv[f"{metric}_high"].to_numpy(),
                    color=line.get_color(),
                    alpha=0.2,
                    label=f"{metric} CI",
                )
        ax.set_xlabel("salience threshold (kept when salience >= threshold)")
        ax.set_ylabel("precision / recall / F1")
        ax.set_ylim(-0.02, 1.02)
        secondary = "kept_per_verdict" if "kept_per_verdict" in df.columns else "write_rate"
        ax2 = ax.twinx()
        (line2,) = ax2.plot(t, df[secondary].to_numpy(), ":", color="grey", label=secondary)
        self.lines_[secondary] = line2
        ax2.set_ylabel(secondary.replace("_", " "))
        self.ax2_ = ax2
        if self.threshold is not None and np.isfinite(self.threshold):
            self.threshold_line_ = ax.axvline(
                self.threshold, color="black", lw=1, label=f"chosen {self.threshold:.3g}"
            )
        handles, labels = ax.get_legend_handles_labels()
        h2, l2 = ax2.get_legend_handles_labels()
        ax.legend(handles + h2, labels + l2, loc="best", fontsize="small")
        if self.name:
            ax.set_title(self.name)
        self.ax_ = ax
        self.figure_ = ax.figure
        return self


class PrecisionRecallDisplay:
    """Precision-recall curve (precision on y, recall on x), as a step plot."""

    def __init__(
        self,
        precision: Any,
        recall: Any,
        *,
        average_precision: float | None = None,
        name: str | None = None,
    ) -> None:
        self.precision = np.asarray(precision, dtype=float)
        self.recall = np.asarray(recall, dtype=float)
        self.average_precision = average_precision
        self.name = name

    @classmethod
    def from_sweep(
        cls, sweep: pd.DataFrame, *, name: str | None = None, ax: Any = None
    ) -> PrecisionRecallDisplay:
        """Plot the curve of a sweep frame (thresholds descending, as sweep returns them)."""
        df = sweep.sort_values("threshold", ascending=False)
        return cls(df["precision"], df["recall"], name=name).plot(ax=ax)

    @classmethod
    def from_predictions(
        cls, y_true: Any, salience: Any, *, name: str | None = None, ax: Any = None
    ) -> PrecisionRecallDisplay:
        """Sweep the predictions, compute average precision, plot."""
        from truss_lab.evaluate._sweep import average_precision, sweep

        df = sweep(y_true, salience)
        ap = average_precision(y_true, salience)
        return cls(df["precision"], df["recall"], average_precision=ap, name=name).plot(ax=ax)

    def plot(self, ax: Any = None) -> PrecisionRecallDisplay:
        """Draw on ``ax``; sets ``ax_``, ``figure_``, ``line_``."""
        ax = _axes(ax)
        label = self.name or "extractor"
        if self.average_precision is not None:
            label += f" (AP = {self.average_precision:.3f})"
        (self.line_,) = ax.plot(self.recall, self.precision, drawstyle="steps-post", label=label)
        ax.set_xlabel("recall")
        ax.set_ylabel("precision")
        ax.set_xlim(-0.01, 1.01)
        ax.set_ylim(-0.01, 1.01)
        ax.legend(loc="lower left")
        self.ax_ = ax
        self.figure_ = ax.figure
        return self


class CalibrationDisplay:
    """Reliability diagram: observed frequency per bin with its Wilson interval, and the
    count of candidates per bin (bars, second axis).

    ``table`` is a :func:`~truss_lab.evaluate._calibration.reliability_table`;
    bins under its ``min_bin_count`` (``enough`` False) are drawn hollow, as
    MCE leaves them out. ``name`` labels the curve, ``title`` (optional) heads
    the axes.
    """

    def __init__(
        self, table: pd.DataFrame, *, name: str | None = None, title: str | None = None
    ) -> None:
        self.table = table
        self.name = name
        self.title = title

    @classmethod
    def from_predictions(
        cls,
        y_true: Any,
        prob: Any,
        *,
        n_bins: int = 10,
        strategy: str = "uniform",
        min_bin_count: int | None = None,
        name: str | None = None,
        ax: Any = None,
    ) -> CalibrationDisplay:
        """Bin with :func:`~truss_lab.evaluate._calibration.reliability_table` and plot
        (``min_bin_count`` None: its default)."""
        from truss_lab.evaluate._calibration import DEFAULT_MIN_BIN_COUNT, reliability_table

        table = reliability_table(
            y_true, prob, n_bins=n_bins, strategy=strategy,  # type: ignore[arg-type]
            min_bin_count=DEFAULT_MIN_BIN_COUNT if min_bin_count is None else min_bin_count,
        )
        return cls(table, name=name).plot(ax=ax)

    def plot(self, ax: Any = None) -> CalibrationDisplay:
        """Draw on ``ax``; sets ``ax_``, ``ax2_`` (counts), ``figure_``, ``line_``,
        ``errorbar_`` (Wilson intervals), ``small_`` (hollow markers of small bins)
        and ``bars_``."""
        ax = _axes(ax)
        t = self.table
        full = t[t["count"] > 0]
        # Tables from before the Wilson columns (or hand-made) plot as before.
        enough = (full["enough"].to_numpy(dtype=bool) if "enough" in full.columns
                  else np.ones(len(full), dtype=bool))
        min_count = t.attrs.get("min_bin_count")
        x = full["mean_predicted"].to_numpy(dtype=float)
        f = full["observed_frequency"].to_numpy(dtype=float)
        ax.plot([0, 1], [0, 1], ":", color="grey", label="perfectly calibrated")
        (self.line_,) = ax.plot(x, f, "-", label=self.name or "salience")
        color = self.line_.get_color()
        self.errorbar_ = None
        if {"frequency_low", "frequency_high"} <= set(full.columns):
            # clipped at 0: at 0/n the bound equals the frequency up to rounding
            err = np.clip(np.vstack([f - full["frequency_low"].to_numpy(dtype=float),
                                     full["frequency_high"].to_numpy(dtype=float) - f]), 0, None)
            conf = t.attrs.get("confidence")
            self.errorbar_ = ax.errorbar(
                x, f, yerr=err, fmt="none", ecolor=color, alpha=0.6, capsize=3,
                label=f"Wilson {conf:.0%} interval" if conf else "Wilson interval",
            )
        ax.plot(x[enough], f[enough], "s", color=color, linestyle="none")
        self.small_ = None
        if (~enough).any():
            label = (f"bin of < {min_count} candidates (not in MCE)" if min_count
                     else "small bin (not in MCE)")
            (self.small_,) = ax.plot(x[~enough], f[~enough], "s", mfc="white", mec=color,
                                     linestyle="none", label=label)
        ax.set_xlabel("mean predicted probability (salience)")
        ax.set_ylabel("observed frequency of useful lessons")
        ax.set_xlim(-0.01, 1.01)
        ax.set_ylim(-0.01, 1.01)
        ax2 = ax.twinx()
        width = (t["upper"] - t["lower"]).to_numpy()
        self.bars_ = ax2.bar(
            t["lower"].to_numpy(),
            t["count"].to_numpy(),
            width=width,
            align="edge",
            alpha=0.2,
            color="grey",
            label="count",
        )
        ax2.set_ylabel("candidates per bin")
        ax.legend(loc="upper left", fontsize="small")
        if self.title:
            ax.set_title(self.title)
        self.ax_, self.ax2_, self.figure_ = ax, ax2, ax.figure
        return self


class ComparisonDisplay:
    """Differences B - A with their bootstrap intervals, one panel row per metric."""

    def __init__(self, result: Any, *, row: int = 0) -> None:
        self.result = result
        self.row = row

    @classmethod
    def from_result(cls, result: Any, *, row: int = 0, ax: Any = None) -> ComparisonDisplay:
        """Plot a :class:`~truss_lab.evaluate._compare.ComparisonResult` (threshold row ``row``)."""
        return cls(result, row=row).plot(ax=ax)

    def plot(self, ax: Any = None) -> ComparisonDisplay:
        """Draw on ``ax``; sets ``ax_``, ``figure_``, ``errorbar_``."""
        from truss_lab.evaluate._compare import DELTA_METRICS

        ax = _axes(ax)
        r = self.result.table.iloc[self.row]
        est = np.array([r[f"delta_{m}"] for m in DELTA_METRICS], dtype=float)
        lo = np.array([r[f"delta_{m}_low"] for m in DELTA_METRICS], dtype=float)
        hi = np.array([r[f"delta_{m}_high"] for m in DELTA_METRICS], dtype=float)
        y = np.arange(len(DELTA_METRICS))
        err = np.vstack([est - lo, hi - est])
        self.errorbar_ = ax.errorbar(est, y, xerr=np.nan_to_num(err), fmt="o", capsize=4)
        ax.axvline(0.0, color="grey", lw=1)
        ax.set_yticks(y, [m.replace("_", " ") for m in DELTA_METRICS])
        a, b = self.result.names
        ax.set_xlabel(f"{b} - {a} (paired verdict bootstrap, {self.result.confidence:.0%} CI)")
        ax.set_title(
            f"McNemar p = {r['mcnemar_p']:.3g} "
            f"(thresholds {r['threshold_a']:.3g} / {r['threshold_b']:.3g})"
        )
        self.ax_ = ax
        self.figure_ = ax.figure
        return self


# -- PNG files (the CLI's --plot and make demo) ----------------------------------------------


def _save(fig: Any, path: Any) -> str:
    fig.savefig(path, dpi=100)
    return str(path)


def save_sweep_plot(df: pd.DataFrame, path: Any, *, threshold: float | None = None,
                    name: str | None = None) -> str:
    """Draw a :class:`SweepDisplay` of ``df`` into a PNG at ``path``; returns the path."""
    fig = _figure((6.5, 4.5))
    SweepDisplay(df, threshold=threshold, name=name).plot(ax=fig.subplots())
    return _save(fig, path)


def save_calibration_plot(report: CalibrationReport, path: Any) -> str:
    """Reliability diagrams of a calibration report (before / after, side by side)
    into a PNG; returns the path."""
    names = list(report.tables)
    fig = _figure((6.5 * (len(names) or 1), 4.5))
    axes = np.atleast_1d(fig.subplots(1, len(names) or 1))
    for ax, name in zip(axes, names, strict=False):
        label = f"{report.score} ({name})" if name == "before" else f"{report.method} ({name})"
        ece = report.summary.loc[name, "ece"]
        CalibrationDisplay(report.tables[name], name=label,
                           title=f"{report.run_id}: {name}, ECE {ece:.3f}").plot(ax=ax)
    return _save(fig, path)


def save_comparison_plot(result: ComparisonResult, path: Any, *, row: int = 0) -> str:
    """A :class:`ComparisonDisplay` of ``result`` (threshold row ``row``) into a PNG;
    returns the path."""
    fig = _figure((6.5, 4.5))
    ComparisonDisplay(result, row=row).plot(ax=fig.subplots())
    return _save(fig, path)
