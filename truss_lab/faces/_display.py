"""How an evaluation is shown: plots of sweeps, precision-recall, calibration,
comparisons and the cost-quality frontier (scikit-learn style), their PNG files, and the
same numbers as text for the terminal.

Each Display holds the numbers, ``plot(ax=None)`` draws them, keeps ``ax_``
and ``figure_`` and returns ``self``; ``from_predictions`` / ``from_*``
constructors compute and plot in one call. matplotlib is imported only when
plotting (``pip install 'truss_lab[notebook]'``). The text (a sweep as a
fixed-width table, a threshold choice, a table of runs) is what the CLI
(``truss-lab sweep``, ``truss-lab runs``) and ``make demo`` print.
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from truss_lab.core._errors import BadInputError
from truss_lab.core._threshold import DEFAULT_MIN_SALIENCE
from truss_lab.evaluate._bootstrap import small_sample_line
from truss_lab.evaluate._calibration import (
    DEFAULT_MIN_BIN_COUNT,
    calibration_run,
    reliability_table,
)
from truss_lab.evaluate._choose import ThresholdChoice
from truss_lab.evaluate._compare import DELTA_METRICS
from truss_lab.evaluate._defaults import DEFAULT_N_BOOT
from truss_lab.evaluate._ppi import correction_label
from truss_lab.evaluate._runs import bootstrap_run, compare_runs, sweep_run
from truss_lab.evaluate._slices import ALL, SliceAnalysis, slice_run
from truss_lab.evaluate._sweep import average_precision, sweep
from truss_lab.evaluate._truth import Truth, truth_of

if TYPE_CHECKING:
    from truss_lab.evaluate._compare import ComparisonResult
    from truss_lab.evaluate._runs import CalibrationReport

__all__ = [
    "SUMMARY_THRESHOLDS",
    "CalibrationDisplay",
    "ComparisonDisplay",
    "PrecisionRecallDisplay",
    "SliceDisplay",
    "SweepDisplay",
    "bare_figure",
    "format_choice",
    "format_slices",
    "format_sweep",
    "frontier_plot",
    "plot_title",
    "save_calibration_plot",
    "save_comparison_plot",
    "save_frontier_plot",
    "save_slices_plot",
    "save_sweep_plot",
    "with_warning",
]

# -- what every plot shares: lazy matplotlib, figures that never cut labels off ---------------

_HINT = "pip install 'truss_lab[notebook]'"

def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(f"plotting needs matplotlib: {_HINT}") from exc
    return plt


def bare_figure(figsize: tuple[float, float], *, dpi: float | None = None,
                margins: dict[str, float] | None = None) -> Any:
    """A bare matplotlib Figure, for PNGs and widget images.

    A bare Figure renders through Agg without pyplot, so no display (and no
    global backend switch or figure list) is ever needed, and nothing is shown
    twice inline in a notebook. Its layout is constrained (labels never cut off),
    or with ``margins`` (``subplots_adjust`` keywords) fixed: half the drawing time,
    for figures whose labels are known to fit (the report's).
    """
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(f"plotting needs matplotlib: {_HINT}") from exc
    if margins is None:
        return Figure(figsize=figsize, dpi=dpi, layout="constrained")
    fig = Figure(figsize=figsize, dpi=dpi)
    fig.subplots_adjust(**margins)
    return fig


#: Room (inches) a fixed-layout figure gets on each side while :func:`save_png` draws it,
#: for what sticks out of its margins (a long run id in a title) to be drawn, not cut.
_ROOM = 2.0


def save_png(fig: Any, target: Any, *, dpi: float) -> None:
    """Write ``fig`` as a PNG at ``dpi`` to ``target`` (a path or binary file), cut to the
    tight box of what is drawn with its 0.1 inch pad, as ``bbox_inches="tight"`` does.

    Drawn once: a figure of fixed margins is drawn with :data:`_ROOM` around it (the
    axes keep their size in inches), a constrained one as it is, and the picture is cut
    to the box. matplotlib's tight save draws every figure twice (once to measure,
    once to paint), half the time of the report's figures. What the room cannot hold
    is saved that way, so nothing is ever cut off.
    """
    import matplotlib as mpl
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    pad = mpl.rcParams["savefig.pad_inches"]
    size, kept_dpi = fig.get_size_inches().copy(), fig.dpi
    room = 0.0 if fig.get_layout_engine() is not None else _ROOM
    places = [(ax, ax.get_position(original=True)) for ax in fig.axes]
    try:
        if room:
            (w, h), (big_w, big_h) = size, size + 2 * room
            for ax, p in places:
                ax.set_position([(p.x0 * w + room) / big_w, (p.y0 * h + room) / big_h,
                                 p.width * w / big_w, p.height * h / big_h])
            fig.set_size_inches(big_w, big_h)
        fig.dpi = dpi
        canvas = FigureCanvasAgg(fig)
        canvas.draw()
        rgba = np.asarray(canvas.buffer_rgba())
        # The box of what is drawn: the pixels that differ from the figure's own
        # (its corner, which no fixed-layout figure reaches with the room around it).
        ink = (rgba != rgba[0, 0]).any(axis=2)
        rows, cols = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
        if (len(rows) and rows[0] > 0 and cols[0] > 0 and rows[-1] < len(ink) - 1
                and cols[-1] < ink.shape[1] - 1):
            px = round(pad * dpi)  # the pad, as far as the figure reaches
            top, bottom = max(0, rows[0] - px), min(len(ink), rows[-1] + 1 + px)
            left, right = max(0, cols[0] - px), min(ink.shape[1], cols[-1] + 1 + px)
            # What savefig writes: Agg's pixels through PIL, with its metadata.
            mpl.image.imsave(target, rgba[top:bottom, left:right], format="png",
                             origin="upper", dpi=dpi)
            return
        fig.savefig(target, format="png", dpi=dpi, bbox_inches="tight")
    finally:
        fig.dpi = kept_dpi
        fig.set_size_inches(size)
        for ax, p in places:
            ax.set_position(p)


def _axes(ax: Any) -> Any:
    if ax is None:
        # constrained layout: axis labels and legends are never cut off.
        _, ax = _pyplot().subplots(layout="constrained")
    return ax


def _row_at(df: pd.DataFrame, threshold: float) -> pd.Series | None:
    """The sweep row whose kept set is the one at ``threshold``: the smallest sweep
    threshold >= it (no candidate scores in between). None when nothing is kept."""
    at = df[df["threshold"] >= threshold]
    if not len(at):
        return None
    return at.loc[at["threshold"].idxmin()]


def with_warning(title: str | None, warning: str | None) -> str | None:
    """A plot's title with a result's small-sample warning line below it (wrapped to
    the plot's width), so a figure of intervals from too few verdicts says so too."""
    if not warning:
        return title
    said = textwrap.fill(warning, 90)
    return f"{title}\n{said}" if title else said


def plot_title(run_id: str, what: str, *, truth: str, correction: str = "none") -> str:
    """The title of a saved plot: the run, what is drawn, and the truth and correction
    it was judged by (``correction`` ``none``: the truth's own counts)."""
    return f"{run_id}: {what}\ntruth {truth} · correction {correction}"


# -- the displays ----------------------------------------------------------------------------


class SweepDisplay:
    """Precision, recall and F1 against the threshold, kept-per-verdict on a second axis.

    The chosen threshold and the ADR default are two facts, so two lines: a solid
    black one and a dashed red one. Build it with :meth:`from_run`,
    :meth:`from_sweep` or :meth:`from_predictions` (they plot), or construct it
    and call :meth:`plot`.

    Parameters
    ----------
    sweep : DataFrame
        A :func:`~truss_lab.evaluate._sweep.sweep` frame (``threshold``,
        ``precision``, ``recall``, ``f1``; ``kept_per_verdict`` or ``write_rate``).
    threshold : float, optional
        The chosen threshold, a solid black line labelled ``threshold_label``.
    intervals : DataFrame, optional
        ``threshold`` and ``<metric>_low``/``<metric>_high`` columns (e.g.
        ``BootstrapResult.table``), drawn as bands; ``<metric>_band_low``/``_high``
        columns (``BootstrapResult.with_band()``) as dotted lines.
    name : str, optional
        The title of the axes.
    default_threshold : float or None, default 0.7
        The ADR default (:data:`~truss_lab.core.DEFAULT_MIN_SALIENCE`), a dashed
        red line; None hides it.
    threshold_label : str, default "chosen"
        The legend label of ``threshold``.

    Raises
    ------
    BadInputError
        ``sweep`` lacks one of the metric columns.

    See Also
    --------
    sweep_run : The frame of a run in the store.
    PrecisionRecallDisplay : The same sweep as a precision-recall curve.
    ThresholdExplorer : The plot with a slider.

    Examples
    --------
    >>> disp = tl.SweepDisplay.from_run(store, "good", n_boot=100, threshold=0.41)
    >>> sorted(disp.lines_)
    ['f1', 'kept_per_verdict', 'precision', 'recall']
    >>> print(disp.ax_.get_title())
    good: metrics vs threshold
    truth labels · correction none
    >>> disp.threshold_line_.get_label(), disp.default_line_.get_label()
    ('chosen 0.41', 'default 0.70')
    """

    def __init__(
        self,
        sweep: pd.DataFrame,
        *,
        threshold: float | None = None,
        intervals: pd.DataFrame | None = None,
        name: str | None = None,
        default_threshold: float | None = DEFAULT_MIN_SALIENCE,
        threshold_label: str = "chosen",
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
        self.default_threshold = default_threshold
        self.threshold_label = threshold_label
        #: The small-sample warning of the run's intervals (set by from_run), drawn
        #: under the title.
        self.small_sample: str | None = None

    @classmethod
    def from_sweep(
        cls,
        sweep: pd.DataFrame,
        *,
        threshold: float | None = None,
        intervals: pd.DataFrame | None = None,
        name: str | None = None,
        default_threshold: float | None = DEFAULT_MIN_SALIENCE,
        ax: Any = None,
    ) -> SweepDisplay:
        """Plot an existing sweep frame.

        Parameters
        ----------
        sweep, threshold, intervals, name, default_threshold
            As the class takes them.
        ax : matplotlib Axes, optional
            Where to draw (None: a new figure).

        Returns
        -------
        SweepDisplay
            The display, plotted.
        """
        return cls(sweep, threshold=threshold, intervals=intervals, name=name,
                   default_threshold=default_threshold).plot(ax=ax)

    @classmethod
    def from_run(
        cls,
        store: Any,
        run_id: str,
        *,
        threshold: float | None = None,
        n_boot: int = DEFAULT_N_BOOT,
        random_state: Any = 0,
        name: str | None = None,
        default_threshold: float | None = DEFAULT_MIN_SALIENCE,
        ax: Any = None,
        truth: Any = "labels",
        score: str = "salience",
        **deprecated: Any,
    ) -> SweepDisplay:
        """:func:`~truss_lab.evaluate._runs.sweep_run` of ``run_id`` with bands from
        :func:`~truss_lab.evaluate._runs.bootstrap_run`, both judged by one truth.

        Parameters
        ----------
        store : Store
            The database.
        run_id : str
            The run.
        threshold : float, optional
            The chosen threshold (e.g. ``choose_run_threshold(...).threshold``).
        n_boot : int, default 1000
            Verdict-bootstrap replicates of the bands (0: no bands).
        random_state : int, default 0
            Seed of the bootstrap.
        name : str, optional
            The title (default: the run id, the truth and the correction).
        default_threshold : float or None, default 0.7
            The ADR default line (None hides it).
        ax : matplotlib Axes, optional
            Where to draw (None: a new figure).
        truth : Truth or str, default "labels"
            A :class:`~truss_lab.evaluate._truth.Truth` or a spec (labels,
            references, judge:NAME); its correction is named in the title.
        score : str, default "salience"
            The candidates column to threshold.
        **deprecated
            The loose truth keywords (``labels=``, ``correct=``, ...), still taken
            with a DeprecationWarning.

        Returns
        -------
        SweepDisplay
            The display, plotted.
        """
        # Resolved once: the sweep and its bands read and match the truth once.
        t = Truth.resolve(store, truth_of(truth, deprecated, where="SweepDisplay.from_run"),
                          [run_id])
        df = sweep_run(store, run_id, truth=t, score=score)
        iv = (bootstrap_run(store, run_id, n_boot=n_boot, random_state=random_state, truth=t,
                            score=score).with_band() if n_boot else None)
        out = cls(df, threshold=threshold, intervals=iv,
                  name=name if name else plot_title(
                      run_id, "metrics vs threshold", truth=df.attrs["truth"],
                      correction=correction_label(df.attrs.get("correction"))),
                  default_threshold=default_threshold)
        fixed = df.attrs.get("correction") or {}
        out.small_sample = small_sample_line({
            "labelled": df.attrs.get("labelled_verdicts"),
            "people-answered": (fixed.get("people_verdicts")
                                if fixed.get("correction") == "ppi" else None),
        }) if iv is not None else None
        return out.plot(ax=ax)

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
        default_threshold: float | None = DEFAULT_MIN_SALIENCE,
        ax: Any = None,
    ) -> SweepDisplay:
        """Sweep the predictions (see :func:`~truss_lab.evaluate._sweep.sweep`) and plot.

        Parameters
        ----------
        y_true : array of 0/1
            Gold label of each candidate.
        salience : array of float
            Score of each candidate.
        groups : array, optional
            Verdict of each candidate (enables kept per verdict).
        thresholds : array of float, optional
            Where to evaluate (default every distinct salience).
        threshold, intervals, name, default_threshold
            As the class takes them.
        ax : matplotlib Axes, optional
            Where to draw (None: a new figure).

        Returns
        -------
        SweepDisplay
            The display, plotted.
        """
        df = sweep(y_true, salience, groups=groups, thresholds=thresholds)
        return cls.from_sweep(df, threshold=threshold, intervals=intervals, name=name,
                              default_threshold=default_threshold, ax=ax)

    def plot(self, ax: Any = None) -> SweepDisplay:
        """Draw on ``ax`` (new figure when None).

        Parameters
        ----------
        ax : matplotlib Axes, optional
            Where to draw.

        Returns
        -------
        SweepDisplay
            This display. It sets ``ax_``, ``ax2_`` (secondary axis), ``figure_``,
            ``lines_`` (by metric), ``bands_`` (by metric, when ``intervals`` has
            them, drawn over the thresholds the lines span; dotted lines bound the
            simultaneous band over its domain where ``intervals`` has
            ``*_band_low``/``*_band_high``:
            :meth:`~truss_lab.evaluate._bootstrap.BootstrapResult.with_band`),
            ``chance_line_`` (the precision of keeping everything),
            ``threshold_line_`` and ``default_line_`` (when drawn).
        """
        ax = _axes(ax)
        df = self.sweep.sort_values("threshold")
        t = df["threshold"].to_numpy()
        self.lines_ = {}
        self.bands_ = {}
        for metric, style in (("precision", "-"), ("recall", "--"), ("f1", "-.")):
            (line,) = ax.plot(t, df[metric].to_numpy(), style, label=metric)
            self.lines_[metric] = line
            if self.intervals is not None and f"{metric}_low" in self.intervals.columns:
                iv = self.intervals.sort_values("threshold")
                # Bands where the lines are: a grid threshold below the lowest score
                # keeps what the lowest keeps, and the line does not go there.
                iv = iv[(iv["threshold"] >= t.min()) & (iv["threshold"] <= t.max())]
                self.bands_[metric] = ax.fill_between(
                    iv["threshold"].to_numpy(),
                    iv[f"{metric}_low"].to_numpy(),
                    iv[f"{metric}_high"].to_numpy(),
                    color=line.get_color(),
                    alpha=0.2,
                    # one legend entry for all bands: the colour already says which
                    label="bootstrap interval" if not self.bands_ else "_nolegend_",
                )
                if f"{metric}_band_low" in iv.columns:
                    # The simultaneous band: what holds the whole curve, the one to
                    # read when choosing a threshold by eye.
                    for side in ("low", "high"):
                        ax.plot(iv["threshold"].to_numpy(),
                                iv[f"{metric}_band_{side}"].to_numpy(),
                                color=line.get_color(), lw=0.8, ls=(0, (1, 2)),
                                label=("simultaneous band (the whole curve)"
                                       if metric == "precision" and side == "low"
                                       else "_nolegend_"))
        self.chance_line_ = None
        if len(df) and np.isfinite(df["precision"].iloc[0]):
            # Precision of keeping everything (the lowest threshold): what a gate
            # that picks at random would reach.
            chance = float(df["precision"].iloc[0])
            self.chance_line_ = ax.axhline(chance, color=self.lines_["precision"].get_color(),
                                           ls=":", lw=1,
                                           label=f"chance precision (keep all) {chance:.2f}")
        ax.set_xlabel("salience threshold (kept when salience >= threshold)")
        ax.set_ylabel("precision / recall / F1")
        ax.set_ylim(-0.02, 1.02)
        secondary = "kept_per_verdict" if "kept_per_verdict" in df.columns else "write_rate"
        ax2 = ax.twinx()
        (line2,) = ax2.plot(t, df[secondary].to_numpy(), ":", color="grey", label=secondary)
        self.lines_[secondary] = line2
        ax2.set_ylabel(secondary.replace("_", " "))
        self.ax2_ = ax2
        if self.default_threshold is not None:
            self.default_line_ = ax.axvline(
                self.default_threshold, color="tab:red", lw=1, ls="--",
                label=f"default {self.default_threshold:.2f}",
            )
        if self.threshold is not None and np.isfinite(self.threshold):
            self.threshold_line_ = ax.axvline(
                self.threshold, color="black", lw=1.2,
                label=f"{self.threshold_label} {self.threshold:.3g}",
            )
        handles, labels = ax.get_legend_handles_labels()
        h2, l2 = ax2.get_legend_handles_labels()
        ax.legend(handles + h2, labels + l2, loc="best", fontsize="small")
        title = with_warning(self.name, self.small_sample)
        if title:
            ax.set_title(title)
        self.ax_ = ax
        self.figure_ = ax.figure
        return self


class PrecisionRecallDisplay:
    """Precision-recall curve (precision on y, recall on x), as a step plot.

    Several displays may share one axes (one curve per run): the legend then names
    each run once, with its chance level, and stands beside the axes, not over the
    curves.

    Parameters
    ----------
    precision : array of float
        Precision at each threshold.
    recall : array of float
        Recall at the same thresholds.
    average_precision : float, optional
        Shown in the legend.
    name : str, optional
        The curve's legend label (default "extractor").
    chance_level : float, optional
        The precision of keeping every candidate (the share of useful ones), a
        dotted horizontal line.
    operating_point : tuple of float, optional
        ``(recall, precision, threshold)`` at a chosen threshold, a marker labelled
        with the threshold.

    See Also
    --------
    SweepDisplay : The same sweep against the threshold.
    sweep_run : The frame of a run in the store.

    Examples
    --------
    >>> disp = tl.PrecisionRecallDisplay.from_run(store, "good", threshold=0.7)
    >>> disp.line_.get_label(), disp.operating_point_.get_label()
    ('good (truth: labels)', 'operating point (threshold 0.7)')
    >>> ap = tl.PrecisionRecallDisplay.from_predictions([1, 0, 1, 0], [0.9, 0.8, 0.6, 0.3])
    >>> round(ap.average_precision, 3)
    0.833
    """

    def __init__(
        self,
        precision: Any,
        recall: Any,
        *,
        average_precision: float | None = None,
        name: str | None = None,
        chance_level: float | None = None,
        operating_point: tuple[float, float, float] | None = None,
    ) -> None:
        self.precision = np.asarray(precision, dtype=float)
        self.recall = np.asarray(recall, dtype=float)
        self.average_precision = average_precision
        self.name = name
        self.chance_level = chance_level
        self.operating_point = operating_point
        self.title: str | None = None

    @staticmethod
    def _point(df: pd.DataFrame, threshold: float | None) -> tuple[float, float, float] | None:
        if threshold is None or not np.isfinite(threshold):
            return None
        row = _row_at(df, threshold)
        if row is None:
            return None
        return float(row["recall"]), float(row["precision"]), float(threshold)

    @classmethod
    def from_sweep(
        cls, sweep: pd.DataFrame, *, threshold: float | None = None, name: str | None = None,
        chance_level: float | None = None, ax: Any = None, title: str | None = None,
    ) -> PrecisionRecallDisplay:
        """Plot the curve of a sweep frame (thresholds descending, as sweep returns them).

        Parameters
        ----------
        sweep : DataFrame
            A :func:`~truss_lab.evaluate._sweep.sweep` frame.
        threshold : float, optional
            Marks the operating point.
        name : str, optional
            The curve's legend label.
        chance_level : float, optional
            Default: the precision at the lowest threshold of the sweep (everything kept).
        ax : matplotlib Axes, optional
            Where to draw (None: a new figure).
        title : str, optional
            Heads the axes.

        Returns
        -------
        PrecisionRecallDisplay
            The display, plotted.
        """
        df = sweep.sort_values("threshold", ascending=False)
        if chance_level is None and len(df):
            chance_level = float(df["precision"].iloc[-1])
        out = cls(df["precision"], df["recall"], name=name, chance_level=chance_level,
                  operating_point=cls._point(df, threshold))
        out.title = title
        return out.plot(ax=ax)

    @classmethod
    def from_run(
        cls, store: Any, run_id: str, *, truth: Any = "labels", score: str = "salience",
        threshold: float | None = None, name: str | None = None, ax: Any = None,
        **deprecated: Any,
    ) -> PrecisionRecallDisplay:
        """The curve of :func:`~truss_lab.evaluate._runs.sweep_run` of ``run_id``.

        Kept is what the gate would write, and with references recall counts every
        missed reference.

        Parameters
        ----------
        store : Store
            The database.
        run_id : str
            The run.
        truth : Truth or str, default "labels"
            A :class:`~truss_lab.evaluate._truth.Truth` or a spec (labels,
            references, judge:NAME).
        score : str, default "salience"
            The candidates column to threshold.
        threshold : float, optional
            Marks the operating point.
        name : str, optional
            The curve's legend label (default: the run id and the truth).
        ax : matplotlib Axes, optional
            Where to draw (None: a new figure); pass one axes to several runs to
            draw their curves together.
        **deprecated
            The loose truth keywords, still taken with a DeprecationWarning.

        Returns
        -------
        PrecisionRecallDisplay
            The display, plotted.
        """
        df = sweep_run(store, run_id, score=score, truth=truth_of(
            truth, deprecated, where="PrecisionRecallDisplay.from_run"))
        return cls.from_sweep(df, threshold=threshold, ax=ax,
                              name=name if name else f"{run_id} (truth: {df.attrs['truth']})",
                              title=plot_title(run_id, "precision-recall",
                                               truth=df.attrs["truth"],
                                               correction=correction_label(
                                                   df.attrs.get("correction"))))

    @classmethod
    def from_predictions(
        cls, y_true: Any, salience: Any, *, threshold: float | None = None,
        name: str | None = None, ax: Any = None,
    ) -> PrecisionRecallDisplay:
        """Sweep the predictions, compute average precision, plot.

        Parameters
        ----------
        y_true : array of 0/1
            Gold label of each candidate; the chance level is the share of 1s.
        salience : array of float
            Score of each candidate.
        threshold : float, optional
            Marks the operating point.
        name : str, optional
            The curve's legend label.
        ax : matplotlib Axes, optional
            Where to draw (None: a new figure).

        Returns
        -------
        PrecisionRecallDisplay
            The display, plotted.
        """
        df = sweep(y_true, salience)
        ap = average_precision(y_true, salience)
        y = np.asarray(y_true, dtype=float)
        chance = float(y.mean()) if len(y) else None
        return cls(df["precision"], df["recall"], average_precision=ap, name=name,
                   chance_level=chance, operating_point=cls._point(df, threshold)).plot(ax=ax)

    def plot(self, ax: Any = None) -> PrecisionRecallDisplay:
        """Draw on ``ax``.

        Parameters
        ----------
        ax : matplotlib Axes, optional
            Where to draw (None: a new figure).

        Returns
        -------
        PrecisionRecallDisplay
            This display; it sets ``ax_``, ``figure_``, ``line_`` and, when given,
            ``chance_line_`` and ``operating_point_``.
        """
        ax = _axes(ax)
        label = self.name or "extractor"
        if self.average_precision is not None:
            label += f" (AP = {self.average_precision:.3f})"
        (self.line_,) = ax.plot(self.recall, self.precision, drawstyle="steps-post", label=label)
        if self.chance_level is not None and np.isfinite(self.chance_level):
            self.chance_line_ = ax.axhline(
                self.chance_level, color=self.line_.get_color(), ls=":", lw=1,
                label=f"chance level (keep all) {self.chance_level:.2f}",
            )
        if self.operating_point is not None:
            r, p, t = self.operating_point
            (self.operating_point_,) = ax.plot(
                [r], [p], "o", color=self.line_.get_color(), markeredgecolor="black",
                markersize=8, label=f"operating point (threshold {t:.3g})",
            )
        ax.set_xlabel("recall")
        ax.set_ylabel("precision")
        ax.set_xlim(-0.01, 1.01)
        ax.set_ylim(-0.01, 1.01)
        # The curves already on these axes (one per run when several share them).
        shared = [d for d in getattr(ax, "_truss_pr_displays", []) if d is not self] + [self]
        ax._truss_pr_displays = shared
        if len(shared) == 1:
            ax.legend(loc="lower left", fontsize="small")
        else:
            self._shared_legend(ax, shared)
        if self.title:
            ax.set_title(self.title)
        self.ax_ = ax
        self.figure_ = ax.figure
        return self

    @staticmethod
    def _shared_legend(ax: Any, shared: list[PrecisionRecallDisplay]) -> None:
        """One entry per run (its chance level in the label, the dotted line in its
        colour) and one for the operating points, beside the axes: three entries a run
        over the curves hid them."""
        handles, labels = [], []
        for d in shared:
            label = d.line_.get_label()
            if getattr(d, "chance_line_", None) is not None:
                label += f", chance {d.chance_level:.2f}"
            handles.append(d.line_)
            labels.append(label)
        points = [d for d in shared if getattr(d, "operating_point_", None) is not None]
        if points:
            ts = sorted({f"{d.operating_point[2]:.3g}" for d in points})  # type: ignore[index]
            handles.append(points[0].operating_point_)
            labels.append(f"operating point (threshold {', '.join(ts)})")
        ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1),
                  fontsize="small", title="dotted: chance (keep all)",
                  title_fontsize="x-small", borderaxespad=0)


class CalibrationDisplay:
    """Reliability diagram: observed frequency per bin with its Wilson interval, and the
    count of candidates per bin (bars, second axis).

    Bins under the table's ``min_bin_count`` (``enough`` False) are drawn hollow, as
    MCE leaves them out.

    Parameters
    ----------
    table : DataFrame
        A :func:`~truss_lab.evaluate._calibration.reliability_table`.
    name : str, optional
        Labels the curve (default "salience").
    title : str, optional
        Heads the axes.

    See Also
    --------
    calibration_run : The report of a run (before and after a calibrator).
    truss_lab.evaluate.reliability_table : The table it draws.

    Examples
    --------
    >>> disp = tl.CalibrationDisplay.from_run(store, "good")
    >>> disp.report.summary[["candidates", "ece"]].round(3)
            candidates    ece
    scores
    before         313  0.073
    >>> print(disp.ax_.get_title())
    good: calibration (before)
    truth labels · correction none
    """

    def __init__(
        self, table: pd.DataFrame, *, name: str | None = None, title: str | None = None
    ) -> None:
        self.table = table
        self.name = name
        self.title = title
        self.report: CalibrationReport | None = None  # set by from_run

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
        """Bin with :func:`~truss_lab.evaluate._calibration.reliability_table` and plot.

        Parameters
        ----------
        y_true : array of 0/1
            Gold label of each candidate.
        prob : array of float
            Predicted probability (salience) of each candidate.
        n_bins : int, default 10
            Bins.
        strategy : {"uniform", "quantile"}, default "uniform"
            Equal-width bins or equal-count bins.
        min_bin_count : int, optional
            Bins with fewer candidates are drawn hollow (None: the table's default).
        name : str, optional
            Labels the curve.
        ax : matplotlib Axes, optional
            Where to draw (None: a new figure).

        Returns
        -------
        CalibrationDisplay
            The display, plotted.
        """
        table = reliability_table(
            y_true, prob, n_bins=n_bins, strategy=strategy,  # type: ignore[arg-type]
            min_bin_count=DEFAULT_MIN_BIN_COUNT if min_bin_count is None else min_bin_count,
        )
        return cls(table, name=name).plot(ax=ax)

    @classmethod
    def from_run(
        cls, store: Any, run_id: str, *, truth: Any = "labels", score: str = "salience",
        method: Literal["isotonic", "platt"] | None = None,
        scores: str | None = None, random_state: Any = 0, n_bins: int = 10,
        ax: Any = None, **deprecated: Any,
    ) -> CalibrationDisplay:
        """A reliability table of :func:`~truss_lab.evaluate._calibration.calibration_run`
        of ``run_id``; the report is kept as ``report``.

        Parameters
        ----------
        store : Store
            The database.
        run_id : str
            The run.
        truth : Truth or str, default "labels"
            A :class:`~truss_lab.evaluate._truth.Truth` or a spec; its correction is
            named in the title.
        score : str, default "salience"
            The candidates column to calibrate.
        method : {"isotonic", "platt"}, optional
            A calibrator fitted on training verdicts (None: the raw score only).
        scores : {"before", "after"}, optional
            Which table (default ``"after"`` with a ``method``, ``"before"`` without).
        random_state : int, default 0
            Seed of the split.
        n_bins : int, default 10
            Bins.
        ax : matplotlib Axes, optional
            Where to draw (None: a new figure).
        **deprecated
            The loose truth keywords, still taken with a DeprecationWarning.

        Returns
        -------
        CalibrationDisplay
            The display, plotted.
        """
        rep = calibration_run(store, run_id, method=method, score=score,
                              random_state=random_state, n_bins=n_bins, truth=truth_of(
                                  truth, deprecated, where="CalibrationDisplay.from_run"))
        which = scores or ("after" if method else "before")
        out = cls(rep.tables[which], name=f"{score} ({which})",
                  title=with_warning(plot_title(run_id, f"calibration ({which})",
                                                truth=rep.truth, correction=rep.correction),
                                     rep.small_sample))
        out.report = rep
        return out.plot(ax=ax)

    def plot(self, ax: Any = None) -> CalibrationDisplay:
        """Draw on ``ax``.

        Parameters
        ----------
        ax : matplotlib Axes, optional
            Where to draw (None: a new figure).

        Returns
        -------
        CalibrationDisplay
            This display; it sets ``ax_``, ``ax2_`` (counts), ``figure_``, ``line_``,
            ``errorbar_`` (Wilson intervals), ``small_`` (hollow markers of small
            bins) and ``bars_``.
        """
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
    """Two runs side by side: each run's values on top (bars with each run's bootstrap
    interval), the differences B - A with their paired bootstrap intervals below;
    rates (precision, recall, F1, on [0, 1]) on the left, the count (lessons kept per
    verdict) on the right, so a count never shares an axis with a rate. The legend
    names the two runs; the title says which is A and which B.

    Parameters
    ----------
    result : ComparisonResult
        A :func:`~truss_lab.evaluate._runs.compare_runs` (or ``compare_extractors``)
        result.
    row : int, default 0
        The row (threshold) of ``result.table`` to draw.

    See Also
    --------
    compare_runs : The comparison it draws.

    Examples
    --------
    >>> disp = tl.ComparisonDisplay.from_runs(store, "good", "good", n_boot=50,
    ...                                       truth=tl.Truth.references(correct="none"))
    >>> [t.get_text() for t in disp.axes_["rates"].get_legend().get_texts()]
    ['good', 'good']
    >>> tuple(float(x) for x in disp.axes_["rates"].get_xlim())
    (-0.02, 1.02)
    """

    #: Panel names, in the order of a sequence of axes passed to :meth:`plot`.
    PANELS = ("rates", "counts", "rate_deltas", "count_deltas")

    def __init__(self, result: Any, *, row: int = 0) -> None:
        self.result = result
        self.row = row
        self.truth: str | None = None  # set by from_runs, shown in the title
        self.correction = str(getattr(result, "correction", "none"))

    @classmethod
    def from_result(cls, result: Any, *, row: int = 0, ax: Any = None) -> ComparisonDisplay:
        """Plot a :class:`~truss_lab.evaluate._compare.ComparisonResult`.

        Parameters
        ----------
        result : ComparisonResult
            The comparison.
        row : int, default 0
            The row (threshold) of ``result.table`` to draw.
        ax : matplotlib Figure or sequence of 4 Axes, optional
            Where to draw (see :meth:`plot`).

        Returns
        -------
        ComparisonDisplay
            The display, plotted.
        """
        return cls(result, row=row).plot(ax=ax)

    @classmethod
    def from_runs(cls, store: Any, run_a: str, run_b: str, *, truth: Any = "labels",
                  threshold: Any = DEFAULT_MIN_SALIENCE, row: int = 0, ax: Any = None,
                  **options: Any) -> ComparisonDisplay:
        """Plot :func:`~truss_lab.evaluate._runs.compare_runs` of two runs.

        Parameters
        ----------
        store : Store
            The database.
        run_a : str
            Run A.
        run_b : str
            Run B (the differences are B - A).
        truth : Truth or str, default "labels"
            What both are judged by (labels, references, judge:NAME); the title names
            it and its correction.
        threshold : float or sequence of float, default 0.7
            The threshold(s) of the comparison (one per row).
        row : int, default 0
            The row (threshold) to draw.
        ax : matplotlib Figure or sequence of 4 Axes, optional
            Where to draw (see :meth:`plot`).
        **options
            The other keywords of ``compare_runs`` (``n_boot``, ``random_state``, ...).

        Returns
        -------
        ComparisonDisplay
            The display, plotted.
        """
        res = compare_runs(store, run_a, run_b, truth=truth, threshold=threshold, **options)
        out = cls(res, row=row)
        out.truth = getattr(truth, "name", truth)  # a resolved Truth shows its name
        return out.plot(ax=ax)

    @classmethod
    def _panels(cls, ax: Any) -> dict[str, Any]:
        if ax is None:
            fig = _pyplot().figure(figsize=(10, 5.5), layout="constrained")
            ax = fig
        if hasattr(ax, "subplots") and not hasattr(ax, "plot"):  # a Figure or SubFigure
            grid = ax.subplots(2, 2, gridspec_kw={"width_ratios": [3, 1]})
            return dict(zip(cls.PANELS, grid.ravel(), strict=True))
        axes = list(np.ravel(ax)) if not hasattr(ax, "plot") else [ax]
        if len(axes) != len(cls.PANELS):
            raise BadInputError(
                f"ComparisonDisplay draws {len(cls.PANELS)} panels ({', '.join(cls.PANELS)}): "
                f"pass a Figure, 4 axes or None, got {len(axes)} axes", field="ax")
        return dict(zip(cls.PANELS, axes, strict=True))

    def plot(self, ax: Any = None) -> ComparisonDisplay:
        """Draw the four panels.

        Parameters
        ----------
        ax : matplotlib Figure or sequence of 4 Axes, optional
            None (a new figure), a Figure / SubFigure, or 4 axes in the order of
            :attr:`PANELS`.

        Returns
        -------
        ComparisonDisplay
            This display; it sets ``axes_`` (dict by panel), ``ax_`` (the rate
            deltas), ``figure_``, ``values_`` (by run name), ``errorbars_`` (by
            panel) and ``title_``. Run A is ``result.names[0]``, B the other.

        Raises
        ------
        BadInputError
            ``ax`` is a number of axes other than 4.
        """
        panels = self._panels(ax)
        r = self.result.table.iloc[self.row]
        a, b = self.result.names
        rates = [m for m in DELTA_METRICS if m != "kept_per_verdict"]
        groups = {"rates": rates, "counts": ["kept_per_verdict"]}
        self.values_ = {}
        self.errorbars_ = {}
        for kind, metrics in groups.items():
            y = np.arange(len(metrics))
            val_ax, delta_ax = panels[kind], panels[f"{kind[:-1]}_deltas"]
            for name, side, offset in ((a, "a", 0.15), (b, "b", -0.15)):
                vals = np.array([r[f"{m}_{side}"] for m in metrics], dtype=float)
                xerr = None
                if all(f"{m}_{side}_low" in r.index for m in metrics):
                    # each run's own bootstrap interval (same replicates as the deltas)
                    lo = np.array([r[f"{m}_{side}_low"] for m in metrics], dtype=float)
                    hi = np.array([r[f"{m}_{side}_high"] for m in metrics], dtype=float)
                    xerr = np.clip(np.nan_to_num(np.vstack([vals - lo, hi - vals])), 0, None)
                bars = val_ax.barh(y + offset, vals, height=0.3, label=name, xerr=xerr,
                                   error_kw={"capsize": 3, "elinewidth": 1})
                self.values_.setdefault(name, {}).update(dict(zip(metrics, vals, strict=True)))
                if kind == "rates":
                    # On a [0, 1] axis there is no room right of a bar near 1: a value is
                    # written inside its bar, at its start, clear of the error bar; a
                    # short bar's value goes right of its interval.
                    ends = vals if xerr is None else vals + xerr[1]
                    for bar, v, end in zip(bars, vals, ends, strict=True):
                        inside = bool(np.isfinite(v) and v >= 0.15)
                        y_mid = bar.get_y() + bar.get_height() / 2
                        val_ax.annotate(f"{v:.3g}", (0 if inside else np.nan_to_num(end), y_mid),
                                        xytext=(3, 0), textcoords="offset points",
                                        va="center", ha="left", fontsize="x-small",
                                        color="white" if inside else "black")
                else:
                    val_ax.bar_label(bars, fmt="%.3g", fontsize="x-small", padding=2)
            est = np.array([r[f"delta_{m}"] for m in metrics], dtype=float)
            lo = np.array([r[f"delta_{m}_low"] for m in metrics], dtype=float)
            hi = np.array([r[f"delta_{m}_high"] for m in metrics], dtype=float)
            err = np.nan_to_num(np.vstack([est - lo, hi - est]))
            self.errorbars_[kind] = delta_ax.errorbar(est, y, xerr=err, fmt="o", capsize=4,
                                                      color="black")
            delta_ax.axvline(0.0, color="grey", lw=1)
            ticks = [m.replace("_", " ") for m in metrics]
            for axis in (val_ax, delta_ax):
                axis.set_yticks(y, ticks)
                axis.invert_yaxis()
            val_ax.margins(x=0.3)  # room for the value labels
        # Rates live on [0, 1]: a small margin keeps the bars' ends and error caps in view.
        panels["rates"].set_xlim(-0.02, 1.02)
        panels["rates"].set_xlabel(f"value per run (thresholds {r['threshold_a']:.3g} / "
                                   f"{r['threshold_b']:.3g})")
        panels["counts"].set_xlabel("lessons kept per verdict")
        # The run ids in a legend above the rates panel, in one row: outside the axes,
        # so it covers no bar, and the layout makes room for a long id.
        panels["rates"].legend(loc="lower left", bbox_to_anchor=(0, 1.01), ncols=2,
                               fontsize="small", frameon=False, borderaxespad=0)
        ci = f"{self.result.confidence:.0%} CI"
        panels["rate_deltas"].set_xlabel(f"B - A (paired verdict bootstrap, {ci})")
        panels["count_deltas"].set_xlabel(f"B - A ({ci})")
        fig = panels["rates"].figure
        by = (f"\ntruth {self.truth} · correction {self.correction}" if self.truth
              else f"\ncorrection {self.correction}")
        p = float(r["mcnemar_p"])
        p_text = "< 0.001" if p < 0.001 else f"= {p:.3f}"
        self.title_ = fig.suptitle(with_warning(
            f"A = {a}, B = {b}{by}\nMcNemar p {p_text} (verdicts where one run "
            "succeeds and the other does not)", getattr(self.result, "small_sample", None)),
            fontsize="medium")
        self.axes_ = panels
        self.ax_ = panels["rate_deltas"]
        self.figure_ = fig
        return self


def frontier_plot(frontier: Any, ax: Any = None) -> Any:
    """A :class:`~truss_lab.evaluate._frontier.Frontier`'s runs: cost per verdict against
    F1 with its interval, each run named, dominated runs hollow and grey; runs without a
    cost are left out (the title counts them).

    Parameters
    ----------
    frontier : Frontier
        What :func:`~truss_lab.evaluate._frontier.frontier` returns.
    ax : matplotlib Axes, optional
        Where to draw (None: a new figure).

    Returns
    -------
    matplotlib Axes
        The axes drawn on.

    Raises
    ------
    BadInputError
        No run has a cost (give a price table naming every model the runs called).
    """
    t = frontier.table
    shown = t[np.isfinite(t["cost_per_verdict"].to_numpy(dtype=float))]
    if shown.empty:
        raise BadInputError("no run has a cost to plot: give a price table (--prices, "
                            "prices=) naming every model the runs called", field="prices")
    ax = _axes(ax)
    for dominated, style in ((False, {"color": "C0", "label": "not dominated"}),
                             (True, {"color": "grey", "mfc": "none", "label": "dominated"})):
        d = shown[shown["dominated"] == dominated]
        if len(d):
            f1 = d["f1"].to_numpy(dtype=float)
            err = np.nan_to_num(np.vstack([f1 - d["f1_low"].to_numpy(dtype=float),
                                           d["f1_high"].to_numpy(dtype=float) - f1]))
            ax.errorbar(d["cost_per_verdict"], f1, yerr=err, fmt="o", capsize=3, **style)
    # Names left of the points in the right half (never cut off at the edge); of two
    # points at about the same F1, the lower one's name goes below it.
    mid = float(shown["cost_per_verdict"].max()) / 2
    last = -np.inf
    for r in shown.sort_values("f1", kind="stable").itertuples(index=False):
        right, below = r.cost_per_verdict > mid, abs(r.f1 - last) < 0.04
        ax.annotate(r.run_id, (r.cost_per_verdict, r.f1), textcoords="offset points",
                    xytext=(-5 if right else 5, -5 if below else 4), fontsize="x-small",
                    ha="right" if right else "left", va="top" if below else "bottom")
        last = r.f1
    ax.margins(x=0.1, y=0.1)
    ax.set_xlabel(f"cost per verdict ({frontier.currency})")
    ax.set_ylabel(f"F1 at the run's threshold ({frontier.confidence:.0%} CI)")
    left = len(t) - len(shown)
    ax.set_title(f"cost and quality, truth: {frontier.truth}"
                 + (f" ({left} run(s) without a cost not shown)" if left else ""),
                 fontsize="medium")
    ax.legend(fontsize="small")
    return ax


class SliceDisplay:
    """A run's slices as rows (:func:`~truss_lab.evaluate._slices.slice_run`): precision,
    recall and F1 at the threshold, each a point with its verdict-bootstrap interval as a
    bar, and the threshold each slice would choose on its own with its interval, beside
    the whole run's (a dashed line per panel). A discovery (q below the analysis's level)
    is red and its name starred; a slice listed, not tested (too few verdicts) is a grey
    point without a bar. Its repr is the short table (:func:`format_slices`).

    Parameters
    ----------
    result : SliceAnalysis
        What :func:`~truss_lab.evaluate._slices.slice_run` returned.
    max_rows : int, default 20
        Slices drawn and printed (the whole run, then discoveries, tested slices and
        listed ones); the result's table holds every one.

    See Also
    --------
    truss_lab.slice_run : the analysis it draws.

    Examples
    --------
    >>> d = tl.SliceDisplay.from_run(store, "good", by="outcome", n_boot=50, n_perm=200)
    >>> list(d.axes_), repr(d).splitlines()[0].split(":")[0]
    (['precision', 'recall', 'f1', 'own_threshold'], 'run good')
    """

    #: Panel names, in the order of a sequence of axes passed to :meth:`plot`.
    PANELS = ("precision", "recall", "f1", "own_threshold")

    def __init__(self, result: SliceAnalysis, *, max_rows: int = 20) -> None:
        self.result = result
        self.max_rows = max_rows

    @classmethod
    def from_result(cls, result: SliceAnalysis, *, max_rows: int = 20,
                    ax: Any = None) -> SliceDisplay:
        """Plot a :class:`~truss_lab.evaluate._slices.SliceAnalysis`.

        Parameters
        ----------
        result : SliceAnalysis
            What :func:`~truss_lab.evaluate._slices.slice_run` returned.
        max_rows : int, default 20
            Slices drawn.
        ax : matplotlib Figure or sequence of 4 Axes, optional
            Where to draw (:meth:`plot`).

        Returns
        -------
        SliceDisplay
            The display, drawn.
        """
        return cls(result, max_rows=max_rows).plot(ax=ax)

    @classmethod
    def from_run(cls, store: Any, run_id: str, *, max_rows: int = 20, ax: Any = None,
                 **options: Any) -> SliceDisplay:
        """Plot :func:`~truss_lab.evaluate._slices.slice_run` of one run.

        Parameters
        ----------
        store : Store
            The database the run is in.
        run_id : str
            The run.
        max_rows : int, default 20
            Slices drawn.
        ax : matplotlib Figure or sequence of 4 Axes, optional
            Where to draw (:meth:`plot`).
        **options
            :func:`~truss_lab.evaluate._slices.slice_run`'s keywords (``by``, ``where``,
            ``truth``, ``threshold``, ``n_boot``, ...).

        Returns
        -------
        SliceDisplay
            The display, drawn.
        """
        return cls(slice_run(store, run_id, **options), max_rows=max_rows).plot(ax=ax)

    def rows(self) -> pd.DataFrame:
        """The rows drawn and printed: the whole run, then discoveries, tested slices and
        listed ones (by q-value, then name), the first ``max_rows`` slices."""
        t = self.result.table
        rest = t.iloc[1:].assign(_d=~t["discovery"].iloc[1:].astype(bool),
                                 _t=~t["tested"].iloc[1:].astype(bool))
        rest = rest.sort_values(["_d", "_t", "q_value", "slice"], kind="stable")
        return pd.concat([t.iloc[:1], rest.drop(columns=["_d", "_t"]).iloc[:self.max_rows]])

    def lines(self, max_rows: int | None = None) -> list[str]:
        """The result as fixed-width lines (:func:`format_slices`).

        Parameters
        ----------
        max_rows : int, optional
            Slices printed (default the display's ``max_rows``).

        Returns
        -------
        list of str
            The header row, the whole run, then a row per slice shown.
        """
        return format_slices(self.result, self.max_rows if max_rows is None else max_rows)

    def __repr__(self) -> str:
        return "\n".join([self.result.header(), *self.lines(10)])

    def plot(self, ax: Any = None) -> SliceDisplay:
        """Draw the slices as rows, one panel per metric and one for the own thresholds.

        Parameters
        ----------
        ax : matplotlib Figure or sequence of 4 Axes, optional
            None (a new figure), a Figure, or 4 axes in the order of :attr:`PANELS`.

        Returns
        -------
        SliceDisplay
            Itself, with ``axes_`` (dict by panel), ``ax_`` (the F1 panel),
            ``figure_`` and ``discoveries_`` (the slices marked) set.
        """
        rows = self.rows()
        n = len(rows)
        if ax is None:
            fig = _pyplot().figure(figsize=(11, 1.2 + 0.32 * n), layout="constrained")
            ax = fig
        if hasattr(ax, "subplots") and not hasattr(ax, "plot"):
            axes = list(ax.subplots(1, 4, sharey=True))
        else:
            axes = list(np.ravel(ax))
            if len(axes) != len(self.PANELS):
                raise BadInputError(f"SliceDisplay draws {len(self.PANELS)} panels "
                                    f"({', '.join(self.PANELS)}): pass a Figure, 4 axes or "
                                    f"None, got {len(axes)} axes", field="ax")
        panels = dict(zip(self.PANELS, axes, strict=True))
        y = np.arange(n)[::-1]
        names = [("* " if d else "") + str(s) for s, d in zip(rows["slice"], rows["discovery"],
                                                               strict=True)]
        whole = rows.iloc[0]
        for name, a in panels.items():
            col = name
            lo, hi = rows[f"{col}_low"].to_numpy(float), rows[f"{col}_high"].to_numpy(float)
            v = rows[col].to_numpy(float)
            for i in range(n):
                r = rows.iloc[i]
                color = ("black" if r["slice"] == ALL else "tab:red" if r["discovery"]
                         else "tab:blue" if r["tested"] else "0.6")
                if np.isfinite(lo[i]) and np.isfinite(hi[i]) and np.isfinite(v[i]):
                    # The interval and the point drawn apart: a choice's bootstrap interval
                    # (the replicates' own choices) need not hold the choice itself.
                    a.plot([lo[i], hi[i]], [y[i], y[i]], "|-", color=color, ms=6, lw=1.2)
                    a.plot(v[i], y[i], "o", color=color, ms=4)
                elif np.isfinite(v[i]):
                    a.plot(v[i], y[i], "o", mfc="none", color=color, ms=4)
            if np.isfinite(whole[col]):
                a.axvline(whole[col], color="black", ls="--", lw=0.8)
            if name == "own_threshold":
                a.axvline(self.result.threshold, color="tab:red", ls=":", lw=1,
                          label=f"threshold {self.result.threshold:.2f}")
                a.legend(fontsize="small", loc="lower right")
            a.set_xlim(-0.02, 1.02)
            a.set_title(name.replace("_", " "), fontsize="medium")
            a.grid(axis="x", alpha=0.3)
        first = axes[0]
        first.set_yticks(y)
        first.set_yticklabels(names, fontsize="small")
        for t, d in zip(first.get_yticklabels(), rows["discovery"], strict=True):
            if d:
                t.set_color("tab:red")
        res = self.result
        fig = first.figure
        fig.suptitle(f"{res.run_id}: slices by {res.by} at {res.threshold:.2f}; truth "
                     f"{res.truth} · correction {res.correction}; * q < {res.q_level:g} "
                     f"({res.test}, slice vs rest)", fontsize="medium")
        self.axes_, self.ax_, self.figure_ = panels, panels["f1"], fig
        self.discoveries_ = list(res.discoveries)
        return self


# -- PNG files (the CLI's --plot and make demo) ----------------------------------------------


def _save(fig: Any, path: Any) -> str:
    # "tight": a long run id in a title grows the image instead of being cut at its edge.
    fig.savefig(path, dpi=100, bbox_inches="tight")
    return str(path)


def save_sweep_plot(df: pd.DataFrame, path: Any, *, threshold: float | None = None,
                    name: str | None = None, intervals: pd.DataFrame | None = None) -> str:
    """Draw a :class:`SweepDisplay` of ``df`` (chosen ``threshold``, the default, bands
    from ``intervals``) into a PNG at ``path``; returns the path."""
    fig = bare_figure((7, 4.5))
    SweepDisplay(df, threshold=threshold, name=name, intervals=intervals).plot(
        ax=fig.subplots())
    return _save(fig, path)


def save_calibration_plot(report: CalibrationReport, path: Any, *,
                          correction: str | None = None) -> str:
    """Reliability diagrams of a calibration report (before / after, side by side)
    into a PNG, titled with the run, its truth and ``correction`` (default the
    report's); returns the path."""
    correction = report.correction if correction is None else correction
    names = list(report.tables)
    fig = bare_figure((6.5 * (len(names) or 1), 4.5))
    axes = np.atleast_1d(fig.subplots(1, len(names) or 1))
    for ax, name in zip(axes, names, strict=False):
        label = f"{report.score} ({name})" if name == "before" else f"{report.method} ({name})"
        ece = report.summary.loc[name, "ece"]
        CalibrationDisplay(report.tables[name], name=label,
                           title=plot_title(report.run_id, f"calibration {name}, ECE {ece:.3f}",
                                            truth=report.truth, correction=correction)
                           ).plot(ax=ax)
    return _save(fig, path)


def save_comparison_plot(result: ComparisonResult, path: Any, *, row: int = 0,
                         truth: str | None = None, correction: str | None = None) -> str:
    """A :class:`ComparisonDisplay` of ``result`` (threshold row ``row``) into a PNG,
    titled with the runs, ``truth`` and ``correction`` (default the result's); returns
    the path."""
    fig = bare_figure((10, 5.5))
    d = ComparisonDisplay(result, row=row)
    d.truth = truth
    if correction is not None:
        d.correction = correction
    d.plot(ax=fig)
    return _save(fig, path)


def save_slices_plot(result: SliceAnalysis, path: Any, *, max_rows: int = 20) -> str:
    """A :class:`SliceDisplay` of ``result`` into a PNG at ``path``; returns the path."""
    n = min(len(result.table), max_rows + 1)
    fig = bare_figure((11, 1.4 + 0.32 * n))
    SliceDisplay(result, max_rows=max_rows).plot(ax=fig)
    return _save(fig, path)


def save_frontier_plot(frontier: Any, path: Any) -> str:
    """:func:`frontier_plot` into a PNG at ``path``; returns the path."""
    fig = bare_figure((7, 4.5))
    frontier_plot(frontier, ax=fig.subplots())
    return _save(fig, path)


# -- text for the terminal ----------------------------------------------------------------

#: Thresholds at which text summaries (the CLI's, the demo's, the report's) show a sweep:
#: a grid around the ADR default.
SUMMARY_THRESHOLDS = (0.3, 0.5, 0.6, DEFAULT_MIN_SALIENCE, 0.8, 0.9)


def format_sweep(df: pd.DataFrame) -> str:
    """A fixed-width text table of a sweep frame (threshold, kept, precision, recall, F1,
    kept per verdict)."""
    cols = [c for c in ("threshold", "kept", "tp", "fp", "precision", "recall", "f1",
                        "kept_per_verdict") if c in df.columns]
    head = "  ".join(f"{c:>16}" if c == "kept_per_verdict" else f"{c:>9}" for c in cols)
    lines = [head]
    for r in df[cols].itertuples(index=False):
        cells = []
        for c, v in zip(cols, r, strict=True):
            width = 16 if c == "kept_per_verdict" else 9
            whole = c in ("kept", "tp", "fp") and float(v).is_integer()
            # Corrected (prediction-powered) tp and fp are estimates, not whole lessons.
            cells.append(f"{int(v):>{width}d}" if whole else
                         f"{v:>{width}.1f}" if c in ("kept", "tp", "fp") else f"{v:>{width}.3f}")
        lines.append("  ".join(cells))
    return "\n".join(lines)


def format_choice(choice: ThresholdChoice) -> str:
    """The chosen threshold, its bootstrap interval, its train / held-out metrics and the
    held-out intervals, each saying what it covers (threshold fixed; choice re-made)."""
    sp = choice.split
    ci = ""
    if choice.threshold_interval is not None:
        lo, hi = choice.threshold_interval
        ci = f"  (bootstrap interval of the choice [{lo:.3f}, {hi:.3f}])"
    if choice.cv:
        reps = f" x {sp['cv_repeats']} repeats" if sp.get("cv_repeats", 1) > 1 else ""
        how = (f"cross-validated by verdict: {sp['cv']} folds{reps} of {sp['n_verdicts']} "
               f"verdicts (random_state={sp['random_state']})")
        sides = ("in-sample", "held-out (out-of-fold)")
    else:
        how = (f"split by verdict: {sp['n_train_verdicts']} train / {sp['n_test_verdicts']} "
               f"held-out verdicts (test_size={sp['test_size']}, "
               f"random_state={sp['random_state']})")
        sides = ("train", "held-out")
    lines = [f"chosen threshold: {choice.threshold:.4g}{ci}",
             f"objective: {choice.objective}; {how}"]
    if choice.folds is not None:
        spread = choice.threshold_spread
        lines.append("thresholds per fold: " + ", ".join(
            f"{t:.4g}" for t in choice.fold_thresholds)
            + (f" (min {spread['min']:.4g}, max {spread['max']:.4g}, sd {spread['std']:.3g})"
               if spread else ""))
    iv = choice.test_intervals.iloc[0] if choice.test_intervals is not None else None
    for m in ("precision", "recall", "f1", "kept_per_verdict"):
        tr, te = choice.train.get(m, np.nan), choice.test.get(m, np.nan)
        band = ""
        if iv is not None and f"{m}_low" in iv.index:
            band = f" [{iv[f'{m}_low']:.3f}, {iv[f'{m}_high']:.3f}]"
        lines.append(f"  {m:<17} {sides[0]} {tr:.3f}   {sides[1]} {te:.3f}{band}")
    lines += choice.interval_lines()
    return "\n".join(lines)


def format_slices(result: SliceAnalysis, max_rows: int | None = 20) -> list[str]:
    """A :class:`~truss_lab.evaluate._slices.SliceAnalysis` as fixed-width lines: the whole
    run, then a row per slice (discoveries, then tested slices, then listed ones; the
    first ``max_rows``, None: all), intervals in brackets, a discovery marked ``*``, the
    q-value and the slice's own threshold with its interval."""
    shown = SliceDisplay(result, max_rows=len(result.table) if max_rows is None
                         else max_rows).rows()
    more = len(result.table) - len(shown)
    width = min(32, max(12, *(len(str(s)) for s in shown["slice"])))

    def iv(r: pd.Series, m: str) -> str:
        v = r[m]
        if not np.isfinite(v):
            return f"{'-':<21}"
        lo, hi = r[f"{m}_low"], r[f"{m}_high"]
        if not (np.isfinite(lo) and np.isfinite(hi)):
            return f"{v:<21.3f}"
        return f"{v:.3f} [{lo:.3f},{hi:.3f}]"

    out = [f"  {'slice':<{width}} {'verdicts':>8}  {'precision':<21} {'recall':<21} "
           f"{'f1':<21} {'q':>6}  own threshold"]
    for _, r in shown.iterrows():
        q = f"{r['q_value']:.3f}" if np.isfinite(r["q_value"]) else "-"
        own = ("-" if not np.isfinite(r["own_threshold"]) else
               f"{r['own_threshold']:.2f} [{r['own_threshold_low']:.2f},"
               f"{r['own_threshold_high']:.2f}]")
        name = str(r["slice"])
        name = name if len(name) <= width else name[:width - 1] + "~"
        why = "" if r["tested"] or r["slice"] == ALL else f"  (not tested: {r['why']})"
        out.append(f"{'*' if r['discovery'] else ' '} {name:<{width}} "
                   f"{int(r['verdicts']):>8}  {iv(r, 'precision')} {iv(r, 'recall')} "
                   f"{iv(r, 'f1')} {q:>6}  {own}{why}")
    if more > 0:
        out.append(f"  ... {more} more slices (--csv, --json or to_frame() hold every one)")
    return out
