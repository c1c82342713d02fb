"""The comparison of two runs as a figure (re-exported by :mod:`truss_lab.faces._display`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from truss_lab.core._errors import BadInputError

from ._plotting import _pyplot

__all__ = ["ComparisonDisplay"]


class ComparisonDisplay:
    """Two runs side by side: each run's values on top, the differences B - A with
    their bootstrap intervals below; rates (precision, recall, F1, in [0, 1]) on
    the left, the count (lessons kept per verdict) on the right, so a count never
    shares an axis with a rate.
    """

    #: Panel names, in the order of a sequence of axes passed to :meth:`plot`.
    PANELS = ("rates", "counts", "rate_deltas", "count_deltas")

    def __init__(self, result: Any, *, row: int = 0) -> None:
        self.result = result
        self.row = row
        self.truth: str | None = None  # set by from_runs, shown in the title

    @classmethod
    def from_result(cls, result: Any, *, row: int = 0, ax: Any = None) -> ComparisonDisplay:
        """Plot a :class:`~truss_lab.evaluate._compare.ComparisonResult` (threshold row ``row``)."""
        return cls(result, row=row).plot(ax=ax)

    @classmethod
    def from_runs(cls, store: Any, run_a: str, run_b: str, *, truth: Any = "labels",
                  threshold: Any = 0.7, row: int = 0, ax: Any = None,
                  **options: Any) -> ComparisonDisplay:
        """Plot :func:`~truss_lab.evaluate._runs.compare_runs` of two runs judged by
        ``truth`` (labels, references, judge:NAME; ``options``: its other keywords,
        e.g. ``n_boot``, ``random_state``, ``labels``, ``references``)."""
        from truss_lab.evaluate._runs import compare_runs

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
        """Draw into ``ax``: None (a new figure), a Figure / SubFigure, or 4 axes in the
        order of :attr:`PANELS`. Sets ``axes_`` (dict by panel), ``ax_`` (the rate
        deltas), ``figure_``, ``values_`` (by run name), ``errorbars_`` (by panel) and
        ``title_``. Run A is ``result.names[0]``, B the other."""
        from truss_lab.evaluate._compare import DELTA_METRICS

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
                bars = val_ax.barh(y + offset, vals, height=0.3, label=name)
                self.values_.setdefault(name, {}).update(dict(zip(metrics, vals, strict=True)))
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
        panels["rates"].set_xlim(0, 1.3)
        panels["rates"].set_xlabel(f"value per run (thresholds {r['threshold_a']:.3g} / "
                                   f"{r['threshold_b']:.3g})")
        panels["counts"].set_xlabel("lessons kept per verdict")
        # "A"/"B" in the legend, the run ids once in the title: a long run id in
        # a legend or an axis label would squeeze or cut off the panels.
        panels["rates"].legend(loc="center right", fontsize="small", labels=["A", "B"])
        ci = f"{self.result.confidence:.0%} CI"
        panels["rate_deltas"].set_xlabel(f"B - A (paired verdict bootstrap, {ci})")
        panels["count_deltas"].set_xlabel(f"B - A ({ci})")
        fig = panels["rates"].figure
        by = f" (truth: {self.truth})" if self.truth else ""
        self.title_ = fig.suptitle(
            f"A = {a}, B = {b}{by}\nMcNemar p = {r['mcnemar_p']:.3g} (verdicts where one run "
            "succeeds and the other does not)", fontsize="medium")
        self.axes_ = panels
        self.ax_ = panels["rate_deltas"]
        self.figure_ = fig
        return self
