"""A salience slider over judged lessons: metrics, a sweep plot, lessons at the cut."""

from __future__ import annotations

import html
import io
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from ..core._errors import BadInputError
from ._widgets import display_widget, fmt_value, ipywidgets_module, table_html

__all__ = ["ThresholdExplorer"]


class ThresholdExplorer:
    """A salience slider over labelled candidates: metrics, a sweep plot, lessons at the cut.

    ``candidates`` is e.g. ``labelled_candidates(store, run_id)``: one row per
    candidate with ``score_col`` (salience), ``label_col`` (1 useful / 0 not;
    unlabelled rows, ``<NA>``, are left out) and ``groups_col`` (the verdict).
    Moving the slider (or :meth:`set_threshold`) recomputes :attr:`metrics`
    (``sweep`` at that one threshold), moves the threshold line of the
    ``SweepDisplay`` and refills :attr:`above` / :attr:`below`, the ``n_rows``
    lessons nearest the cut on each side.

    :meth:`from_run` judges a run in the store by any truth (``truth="labels" |
    "references" | "judge:NAME"``); its metrics are then exactly
    :func:`~truss_lab.evaluate._runs.sweep_run`'s at the slider's threshold
    (``sweep_at``: a function of a threshold list giving those sweep rows).
    """

    def __init__(
        self,
        candidates: pd.DataFrame,
        *,
        groups_col: str = "verdict_hash",
        score_col: str = "salience",
        label_col: str = "label",
        text_col: str = "text",
        initial: float = 0.70,
        n_rows: int = 5,
        plot: bool = True,
        sweep_at: Callable[[Any], pd.DataFrame] | None = None,
        truth: str | None = None,
    ) -> None:
        from ..evaluate._sweep import sweep

        missing = [c for c in (groups_col, score_col, label_col) if c not in candidates.columns]
        if missing:
            raise BadInputError(
                f"candidates lack column(s) {', '.join(missing)}; expected e.g. the frame of "
                "labelled_candidates(store, run_id)", field=missing[0],
            )
        w = ipywidgets_module()
        lab = pd.to_numeric(candidates[label_col], errors="coerce")
        keep = lab.notna().to_numpy()
        df = candidates.loc[keep].reset_index(drop=True)
        self.candidates = df
        self.groups_col, self.score_col, self.label_col = groups_col, score_col, label_col
        self.text_col = text_col if text_col in df.columns else None
        self.n_rows = int(n_rows)
        self._y = lab[keep].to_numpy(dtype=np.int64)
        self._s = df[score_col].to_numpy(dtype=np.float64)
        self._g = df[groups_col].to_numpy()
        self.truth = truth
        self._sweep_at = sweep_at
        self.sweep = (sweep_at(None) if sweep_at is not None
                      else sweep(self._y, self._s, groups=self._g))
        finite = self._s[np.isfinite(self._s)]
        lo = float(min(0.0, finite.min())) if finite.size else 0.0
        hi = float(max(1.0, finite.max())) if finite.size else 1.0
        self.slider = w.FloatSlider(
            value=float(np.clip(initial, lo, hi)), min=lo, max=hi, step=0.01,
            description="min salience", continuous_update=False, readout_format=".2f",
            style={"description_width": "initial"},
            layout=w.Layout(width="60%"),
        )
        self.slider.add_class("truss-threshold-slider")
        self.metrics_html = w.HTML()
        self.metrics_html.add_class("truss-metrics")
        self.above_html = w.HTML()
        self.above_html.add_class("truss-above")
        self.below_html = w.HTML()
        self.below_html.add_class("truss-below")
        self.plot_image = w.Image(format="png", layout=w.Layout(max_width="720px"))
        self.plot_image.add_class("truss-sweep-plot")
        self.display_: Any = None
        self._figure: Any = None
        if plot:
            self._make_plot()
        parts = [self.slider, self.metrics_html]
        if plot:
            parts.append(self.plot_image)
        parts.append(w.HBox([
            w.VBox([w.HTML("<b>just above the cut (kept)</b>"), self.above_html]),
            w.VBox([w.HTML("<b>just below the cut (dropped)</b>"), self.below_html]),
        ]))
        self.widget = w.VBox(parts)
        self.widget.add_class("truss-threshold-explorer")
        self.metrics: dict[str, float] = {}
        self.above = pd.DataFrame()
        self.below = pd.DataFrame()
        self.slider.observe(self._on_change, names="value")
        self._update(self.slider.value)

    @classmethod
    def from_run(
        cls,
        store: Any,
        run_id: str,
        *,
        truth: Any = "labels",
        labels: Any = None,
        references: Any = None,
        score: str = "salience",
        initial: float = 0.70,
        n_rows: int = 5,
        plot: bool = True,
    ) -> ThresholdExplorer:
        """An explorer over ``run_id`` judged by ``truth`` (labels, references,
        judge:NAME or a resolved Truth). The lessons listed at the cut are the judged
        ones (labelled candidates; with references, the run's lessons on annotated verdicts, with
        the reference each matched); the metrics count as
        :func:`~truss_lab.evaluate._runs.sweep_run` does."""
        from ..evaluate._runs import sweep_judged
        from ..evaluate._truth import Truth, labelled_candidates

        t = Truth.resolve(store, truth, [run_id], labels=labels, references=references)
        jr = t.judged(run_id, score=score)
        if t.kind == "references":
            view = jr.lessons.rename(columns={"s": score, "y": "label"})  # type: ignore[union-attr]
        else:
            view = labelled_candidates(store, run_id, labels=t.labels)
        return cls(view, score_col=score, initial=initial, n_rows=n_rows, plot=plot,
                   sweep_at=lambda thresholds: sweep_judged(jr, thresholds), truth=t.name)

    # -- wiring --------------------------------------------------------------------

    @property
    def threshold(self) -> float:
        """The current threshold (the slider's value)."""
        return float(self.slider.value)

    def set_threshold(self, t: float) -> ThresholdExplorer:
        """Move the slider to ``t`` (clipped to its range); updates everything."""
        self.slider.value = float(np.clip(t, self.slider.min, self.slider.max))
        return self

    def _on_change(self, change: dict[str, Any]) -> None:
        self._update(float(change["new"]))

    def _update(self, t: float) -> None:
        from ..evaluate._sweep import UndefinedMetricWarning, sweep

        with warnings.catch_warnings():
            # Degenerate labels already warned once, from the full sweep in __init__.
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            row = (self._sweep_at([t]) if self._sweep_at is not None
                   else sweep(self._y, self._s, groups=self._g, thresholds=[t])).iloc[0]
        self.metrics = {k: (float(v) if k not in ("kept", "tp", "fp", "fn") else int(v))
                        for k, v in row.items()}
        self.metrics_html.value = self._metrics_markup()
        self.above, self.below = self._near_cut(t)
        # The tables show what a reader needs at a glance; the frames keep the keys.
        shown = [c for c in (self.text_col, self.score_col, self.label_col, "reference_id",
                             "verdict_seq")
                 if c is not None and c in self.above.columns]
        self.above_html.value = table_html(self.above[shown], "truss-above-table")
        self.below_html.value = table_html(self.below[shown], "truss-below-table")
        if self.display_ is not None:
            line = getattr(self.display_, "threshold_line_", None)
            if line is not None:
                line.set_xdata([t, t])
                line.set_label(f"threshold {t:.2f}")
                ax, ax2 = self.display_.ax_, self.display_.ax2_
                h1, l1 = ax.get_legend_handles_labels()
                h2, l2 = ax2.get_legend_handles_labels()
                ax.legend(h1 + h2, l1 + l2, loc="best", fontsize="small")
            self._render()

    def _near_cut(self, t: float) -> tuple[pd.DataFrame, pd.DataFrame]:
        cols = [c for c in (self.text_col, self.score_col, self.label_col, "reference_id",
                            "verdict_seq", self.groups_col, "lesson_index")
                if c is not None and c in self.candidates.columns]
        cols = list(dict.fromkeys(cols))
        view = self.candidates[cols]
        s = self._s
        with np.errstate(invalid="ignore"):
            kept = s >= t
        up = np.flatnonzero(kept)
        up = up[np.argsort(s[up], kind="stable")][: self.n_rows]
        down = np.flatnonzero(~kept & np.isfinite(s))
        down = down[np.argsort(-s[down], kind="stable")][: self.n_rows]
        return view.iloc[up].reset_index(drop=True), view.iloc[down].reset_index(drop=True)

    def _metrics_markup(self) -> str:
        m = self.metrics
        items = [("threshold", m["threshold"]), ("precision", m["precision"]),
                 ("recall", m["recall"]), ("F1", m["f1"]), ("kept", m["kept"]),
                 ("kept per verdict", m.get("kept_per_verdict", float("nan"))),
                 ("write rate", m["write_rate"])]
        cells = "".join(
            f"<td data-metric='{html.escape(k)}' style='padding:0 1.2em 0 0'>"
            f"<b>{html.escape(k)}</b><br>"
            f"{html.escape(fmt_value(v))}</td>" for k, v in items
        )
        return f"<table class='truss-metrics-table'><tr>{cells}</tr></table>"

    def _make_plot(self) -> None:
        from ._display import SweepDisplay, bare_figure

        # A bare Figure (not pyplot): no global figure list, nothing shown twice inline.
        self._figure = bare_figure((7, 3.6), dpi=90)
        ax = self._figure.subplots()
        self.display_ = SweepDisplay(self.sweep, threshold=self.slider.value,
                                     threshold_label="slider",
                                     name="threshold sweep" + (
                                         f" (truth: {self.truth})" if self.truth else "")
                                     ).plot(ax=ax)

    def _render(self) -> None:
        buf = io.BytesIO()
        self._figure.savefig(buf, format="png")
        self.plot_image.value = buf.getvalue()

    # -- display -------------------------------------------------------------------

    def _ipython_display_(self) -> None:
        display_widget(self.widget)

    def __repr__(self) -> str:
        m = self.metrics
        by = f"truth={self.truth!r}, " if self.truth else ""
        return (f"ThresholdExplorer({by}threshold={self.threshold:.2f}, "
                f"candidates={len(self.candidates)}, precision={fmt_value(m.get('precision'))}, "
                f"recall={fmt_value(m.get('recall'))}, f1={fmt_value(m.get('f1'))}, "
                f"kept={m.get('kept')})")
