"""The Jupyter widgets and what they share (the lazy ipywidgets import, display, cell
formatting).

The widgets only wire library calls together: :class:`ThresholdExplorer` (``sweep``,
``SweepDisplay``), :class:`LessonBrowser` (``query_memory``, ``get_memory_entry``,
``get_entry``, ``verified_verdict``) and :class:`LabellingWidget` (``append_labels``);
what they show is something a researcher could compute in a cell. They are
plain Python objects holding ipywidgets, so they are driven headlessly in
tests (``explorer.set_threshold(0.8)``, ``labeller.label(True)``) and
displayed in a notebook by ending a cell with the object.

Each leaves a static picture in a saved notebook: its display bundle holds the live
widget view and, beside it, an HTML snapshot of what it shows (:func:`widget_bundle`),
which a page without a kernel or widget state (nbconvert, the documentation site)
renders where the live view would be blank; JupyterLab shows the live view.

ipywidgets and matplotlib are imported lazily: ``pip install 'truss_lab[notebook]'``.
Stable CSS classes (``truss-threshold-slider``, ``truss-metrics``,
``truss-lesson-select``, ``truss-signature-ok``/``-bad``, ``truss-label-useful`` …)
let browser tests find the parts.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from ..core._errors import BadInputError, TrussLabError
from ..core._models import MemoryQuery
from ..core._threshold import DEFAULT_MIN_SALIENCE
from ..evaluate._ppi import correction_label
from ..evaluate._queue import labelling_queue
from ..evaluate._runs import run_correction, sweep_judged
from ..evaluate._sweep import UndefinedMetricWarning, sweep
from ..evaluate._truth import Truth, labelled_candidates, truth_of
from ..ingest._ingest import append_labels
from ..journal._table import get_entry, payload_by_hash, verified_verdict
from ..store._governed import get_memory_entry, query_memory
from ..store._labels import labelled_keys
from ..store._store import Store
from ._display import SweepDisplay, bare_figure, plot_title

__all__ = ["LabellingWidget", "LessonBrowser", "ThresholdExplorer", "fmt_value",
           "ipywidgets_module", "table_html", "widget_bundle"]

_HINT = "pip install 'truss_lab[notebook]'"


def ipywidgets_module() -> Any:
    """ipywidgets, or an ImportError saying which extra to install."""
    try:
        import ipywidgets
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(f"the notebook widgets need ipywidgets: {_HINT}") from exc
    return ipywidgets


#: The MIME type of a live widget view (ipywidgets).
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def widget_bundle(widget: Any, snapshot: str, text: str) -> dict[str, Any]:
    """The display bundle of a truss_lab widget: the live view of ``widget``, the static
    HTML ``snapshot`` of what it shows and ``text`` (its repr).

    JupyterLab renders the live view; a page without a kernel or without the widget
    state (an exported notebook, the documentation site) skips the view it cannot
    render and shows the snapshot, as ipywidgets-based libraries (ipympl, ...) leave a
    PNG beside their view, instead of a blank cell.
    """
    bundle = dict(widget._repr_mimebundle_() or {})
    bundle["text/html"] = ("<div class=\"truss-static\"><p style=\"color:#666;font-size:"
                           "12px\">static picture of the widget (moving it needs a "
                           f"running kernel)</p>{snapshot}</div>")
    bundle["text/plain"] = text
    return bundle


def fmt_value(v: Any) -> str:
    """A cell value for people: floats to three decimals, NaN as nan."""
    if isinstance(v, float | np.floating):
        return "nan" if math.isnan(v) else f"{v:.3f}"
    return str(v)


def table_html(df: pd.DataFrame, css: str) -> str:
    """``df`` as an HTML table of class ``css``, cell text escaped."""
    # to_html escapes cell text by default; lesson texts are model output.
    return df.to_html(index=False, classes=css, float_format=lambda v: f"{v:.3f}",
                      na_rep="", border=0)


class LabellingWidget:
    """Label candidate lessons one at a time: Useful / Not useful / Skip.

    A click appends one Formats §3 row (``verdict_hash``, ``extractor``,
    ``lesson_index``, ``useful``, ``annotator``, source ``"widget"``,
    ``labelled_at``) to the store's ``labels`` table through
    :func:`~truss_lab.ingest._ingest.append_labels` and moves on. Labels are
    never overwritten: a candidate this annotator already labelled keeps its
    stored label (the widget says so), as ``ingest_labels`` does. With
    ``skip_labelled`` (default) the session starts at the first candidate the
    annotator has not labelled yet, so it resumes where it stopped.

    Parameters
    ----------
    store : Store
        The database the labels are written to.
    candidates : pandas.DataFrame
        The lessons to label (``verdict_hash``, ``extractor_id``, ``lesson_index``,
        ``text``; a labelling queue's rows).
    annotator : str
        The name every label carries.
    skip_labelled : bool, default True
        Start at the first candidate this annotator has not labelled.

    See Also
    --------
    ingest_labels : Labels from a CSV file (a queue filled in a spreadsheet).

    Examples
    --------
    >>> widget = tl.LabellingWidget.from_queue(store, "good", annotator="me", n=5)
    >>> widget.label(True)  # "Useful": one row written, the next lesson shown
    True
    >>> labels = store.table("labels")
    >>> int((labels["annotator"] == "me").sum())
    1
    """

    def __init__(
        self,
        store: Store,
        candidates: pd.DataFrame,
        *,
        annotator: str,
        skip_labelled: bool = True,
    ) -> None:
        if not isinstance(annotator, str) or not annotator.strip():
            raise BadInputError(f"annotator must be a non-empty name, got {annotator!r}",
                                field="annotator")
        ex_col = "extractor_id" if "extractor_id" in candidates.columns else "extractor"
        missing = [c for c in ("verdict_hash", ex_col, "lesson_index")
                   if c not in candidates.columns]
        if missing:
            raise BadInputError(f"candidates lack column(s) {', '.join(missing)}",
                                field=missing[0])
        w = ipywidgets_module()
        self.store = store
        self.annotator = annotator.strip()
        cols = [c for c in ("verdict_seq", "verdict_hash", ex_col, "lesson_index", "text",
                            "salience") if c in candidates.columns]
        self.candidates = candidates[cols].rename(columns={ex_col: "extractor"}).reset_index(
            drop=True)
        self.candidates["lesson_index"] = self.candidates["lesson_index"].astype("int64")
        self.position = 0
        self.written = 0
        self.queue: dict[str, Any] | None = None
        self.message = ""
        if skip_labelled:
            done = labelled_keys(self.store, self.annotator)
            key = list(zip(self.candidates["verdict_hash"], self.candidates["extractor"],
                           self.candidates["lesson_index"], strict=True))
            todo = [i for i, k in enumerate(key) if k not in done]
            self.position = todo[0] if todo else len(self.candidates)
        self.card = w.HTML()
        self.card.add_class("truss-label-card")
        self.progress = w.HTML()
        self.progress.add_class("truss-label-progress")
        self.useful_button = w.Button(description="Useful", button_style="success",
                                      icon="check")
        self.useful_button.add_class("truss-label-useful")
        self.not_useful_button = w.Button(description="Not useful", button_style="danger",
                                          icon="times")
        self.not_useful_button.add_class("truss-label-not-useful")
        self.skip_button = w.Button(description="Skip")
        self.skip_button.add_class("truss-label-skip")
        self.useful_button.on_click(lambda _b: self.label(True))
        self.not_useful_button.on_click(lambda _b: self.label(False))
        self.skip_button.on_click(lambda _b: self.skip())
        self.widget = w.VBox([
            self.progress, self.card,
            w.HBox([self.useful_button, self.not_useful_button, self.skip_button]),
        ])
        self.widget.add_class("truss-labelling-widget")
        self._refresh()

    @classmethod
    def from_queue(cls, store: Store, run_id: str, *, annotator: str,
                   **queue_options: Any) -> LabellingWidget:
        """Label the labelling queue of ``run_id``: the lessons whose labels would most
        move the threshold choice (:func:`~truss_lab.evaluate._queue.labelling_queue`,
        whose options ``n``, ``per_verdict``, ``interval``, ``objective``, ``n_boot``
        and ``random_state`` pass through), leaving out those ``annotator`` labelled.
        ``widget.queue`` holds the queue's description (interval, source, counts).

        Parameters
        ----------
        store : Store
            The database.
        run_id : str
            The run whose lessons are queued.
        annotator : str
            The name every label carries.
        **queue_options : Any
            Options of the labelling queue (above).

        Returns
        -------
        LabellingWidget
            The widget at the queue's first lesson.
        """
        frame = labelling_queue(store, run_id, annotator=annotator, **queue_options)
        widget = cls(store, frame, annotator=annotator)
        widget.queue = dict(frame.attrs["queue"])
        widget._refresh()
        return widget

    @property
    def done(self) -> bool:
        """True when every candidate has been labelled or skipped."""
        return self.position >= len(self.candidates)

    @property
    def current(self) -> dict[str, Any] | None:
        """The candidate on show (a dict of its columns), or None when done."""
        if self.done:
            return None
        return self.candidates.iloc[self.position].to_dict()

    def label(self, useful: bool) -> bool:
        """Label the current candidate and advance; True when a new row was written.

        Parameters
        ----------
        useful : bool
            The label: useful (1) or not (0).

        Returns
        -------
        bool
            Whether a new row was written (False when this annotator had labelled it).
        """
        cur = self.current
        if cur is None:
            self.message = "nothing left to label"
            self._refresh()
            return False
        row = pd.DataFrame({
            "verdict_hash": [str(cur["verdict_hash"])],
            "extractor": [str(cur["extractor"])],
            "lesson_index": [int(cur["lesson_index"])],
            "useful": [1 if useful else 0],
            "annotator": [self.annotator],
        })
        # A label that differs from the stored one is kept as stored; the message says so.
        added, _conflicts = append_labels(self.store, row, source="widget")
        where = f"{cur['extractor']} #{cur['lesson_index']} of {str(cur['verdict_hash'])[:12]}…"
        if added:
            self.written += added
            self.message = f"saved: {where} is {'useful' if useful else 'not useful'}"
        else:
            self.message = (f"{where} was already labelled by {self.annotator}; "
                            "kept the stored label")
        self.position += 1
        self._refresh()
        return bool(added)

    def skip(self) -> None:
        """Move on without writing a label."""
        if not self.done:
            self.position += 1
            self.message = "skipped"
        self._refresh()

    def _queue_line(self) -> str:
        q = self.queue or {}
        lo, hi = q.get("interval", (float("nan"), float("nan")))
        return (f"<p>queue of run {html.escape(str(q.get('run_id')))}: salience in "
                f"[{lo:.4g}, {hi:.4g}] ({html.escape(str(q.get('source')))}: "
                f"{html.escape(str(q.get('why')))})</p>")

    def _verdict(self, vhash: str) -> dict[str, Any]:
        return payload_by_hash(self.store, vhash) or {}

    def _refresh(self) -> None:
        e = html.escape
        n = len(self.candidates)
        self.progress.value = (
            f"<p>{min(self.position + 1, n)} / {n} · annotator <b>{e(self.annotator)}</b> · "
            f"{self.written} label(s) written this session"
            + (f" · <i>{e(self.message)}</i>" if self.message else "") + "</p>"
            + (self._queue_line() if self.queue else ""))
        cur = self.current
        for b in (self.useful_button, self.not_useful_button, self.skip_button):
            b.disabled = cur is None
        if cur is None:
            self.card.value = "<p><b>Done.</b> Every candidate has been labelled or skipped.</p>"
            return
        v = self._verdict(str(cur["verdict_hash"]))
        checks = v.get("checks") if isinstance(v.get("checks"), list) else []
        failed = [c for c in checks if isinstance(c, dict) and c.get("passed") is False]
        sal = cur.get("salience")
        self.card.value = (
            f"<div><p style='font-size:1.1em'><b>{e(str(cur.get('text', '')))}</b></p>"
            f"<p>salience {e(fmt_value(sal))} · {e(str(cur['extractor']))} "
            f"#{int(cur['lesson_index'])}</p>"
            f"<p><i>verdict</i> {e(str(v.get('verdict', '?')))}: {e(str(v.get('goal', '')))}"
            f"<br>{e(str(v.get('summary', '')))}</p>"
            + "".join(f"<p>✘ {e(str(c.get('name')))}: {e(str(c.get('evidence')))}</p>"
                      for c in failed)
            + "</div>")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return widget_bundle(self.widget, self.progress.value + self.card.value, repr(self))

    def __repr__(self) -> str:
        return (f"LabellingWidget(annotator={self.annotator!r}, position={self.position}/"
                f"{len(self.candidates)}, written={self.written})")


class LessonBrowser:
    """Pick an unverified lesson and follow it back to the signed verdict that produced it.

    Shows the lesson's governed provenance (``produced_by`` seq + hash,
    sources, run, extractor), the verdict's journal entry (goal, outcome,
    summary, checks) and whether that entry verifies now
    (``verified_verdict``: hash, signature, link to its predecessor).
    ``query`` defaults to ``MemoryQuery.unverified_lessons(limit=500)``.

    Parameters
    ----------
    store : Store
        The database.
    query : MemoryQuery, optional
        The lessons to pick from.
    limit : int, default 500
        At most this many lessons in the dropdown, when ``query`` is not given.

    See Also
    --------
    query_memory : The same lessons as a frame.
    verify_chain : Verifies every entry, not one.

    Examples
    --------
    >>> browser = tl.LessonBrowser(store)
    >>> lesson = tl.query_memory(store, tl.MemoryQuery.unverified_lessons(limit=1))
    >>> _ = browser.show(lesson["entry_id"][0])
    >>> browser.status["ok"], browser.journal_entry["kind"]
    (True, 'contract_verdict')
    """

    def __init__(self, store: Store, *, query: Any = None, limit: int = 500) -> None:
        w = ipywidgets_module()
        self.store = store
        q = query if query is not None else MemoryQuery.unverified_lessons(limit=limit)
        self.lessons = query_memory(store, q).sort_values(
            ["produced_by_seq", "extractor_id", "lesson_index"], kind="stable"
        ).reset_index(drop=True)
        options = [
            (f"seq {int(r.produced_by_seq)} · {r.extractor_id} #{int(r.lesson_index)}: "
             f"{str(r.text)[:70]}", r.entry_id)
            for r in self.lessons[["produced_by_seq", "extractor_id", "lesson_index", "text",
                                   "entry_id"]].itertuples()
        ]
        self._ids = {v for _, v in options}
        self.select = w.Dropdown(options=options, description="lesson",
                                 layout=w.Layout(width="95%"))
        self.select.add_class("truss-lesson-select")
        self.details = w.HTML()
        self.details.add_class("truss-lesson-details")
        self.widget = w.VBox([self.select, self.details])
        self.widget.add_class("truss-lesson-browser")
        self.entry: Any = None
        self.journal_entry: dict[str, Any] | None = None
        self.status: dict[str, Any] = {}
        self.select.observe(lambda ch: self.show(ch["new"]), names="value")
        if options:
            self.show(self.select.value)
        else:
            self.details.value = "<p>No unverified lessons in this store (run an extraction).</p>"

    def show(self, entry_id: str) -> LessonBrowser:
        """Show lesson ``entry_id`` (also selects it in the dropdown).

        Parameters
        ----------
        entry_id : str
            A lesson of the dropdown.

        Returns
        -------
        LessonBrowser
            This browser.
        """
        if entry_id is None:
            return self
        entry = get_memory_entry(self.store, entry_id)
        if entry is None:
            raise BadInputError(f"no memory entry {entry_id!r}", field="entry_id")
        if self.select.value != entry_id and entry_id in self._ids:
            self.select.value = entry_id  # re-enters show() through the observer
            return self
        ref = entry.provenance.produced_by
        self.entry = entry
        self.journal_entry = get_entry(self.store, ref.seq)
        try:
            verified_verdict(self.store, ref)
            self.status = {"ok": True, "reason": None,
                           "message": f"verified: journal entry {ref.seq} has this hash, its "
                           "Ed25519 signature is valid and it links to its predecessor"}
        except TrussLabError as exc:
            self.status = {"ok": False, "message": f"FAILED: {exc}",
                           "reason": getattr(exc, "reason", type(exc).__name__)}
        self.details.value = self._markup()
        return self

    def _markup(self) -> str:
        e = html.escape
        p = self.entry.provenance
        ok = self.status["ok"]
        css = "truss-signature-ok" if ok else "truss-signature-bad"
        color = "#2a7a2a" if ok else "#b00020"
        status = (f"<p class='{css}' style='color:{color}'><b>"
                  f"{'✔' if ok else '✘'} {e(self.status['message'])}</b></p>")
        prov = pd.DataFrame({
            "field": ["entry_id", "kind", "trust", "salience", "produced_by", "sources", "run_id",
                      "extractor_id", "prompt_version", "created_at"],
            "value": [self.entry.entry_id, self.entry.kind.value, self.entry.trust.value,
                      fmt_value(self.entry.salience),
                      f"seq {p.produced_by.seq} · {p.produced_by.hash}",
                      "; ".join(f"seq {s.seq} · {s.hash[:16]}…" for s in p.sources),
                      p.run_id, p.extractor_id, p.prompt_version, p.created_at.isoformat()],
        })
        parts = [f"<h4>Lesson</h4><p>{e(self.entry.text)}</p>", status,
                 "<h4>Provenance</h4>", table_html(prov, "truss-provenance")]
        j = self.journal_entry
        if j is None:
            parts.append(f"<p>journal entry {p.produced_by.seq} is missing</p>")
        else:
            pl = j["payload"] if isinstance(j["payload"], dict) else {}
            head = (f"seq {j['seq']} · {j['kind']} · {j['ts']} · key {j['key_id']}<br>"
                    f"hash {j['hash']}<br>prev {j['prev_hash']}")
            summary = {k: pl.get(k) for k in ("contract_id", "run_id", "verdict", "goal",
                                              "summary", "tags") if k in pl}
            parts += ["<h4>Verdict journal entry</h4>", f"<p><code>{e(head)}</code></p>",
                      table_html(pd.DataFrame({"field": list(summary),
                                                "value": [json.dumps(v) if isinstance(v, list)
                                                          else str(v) for v in summary.values()]}),
                                  "truss-verdict")]
            checks = pl.get("checks")
            if isinstance(checks, list) and checks:
                parts += ["<h4>Checks</h4>", table_html(pd.DataFrame(checks), "truss-checks")]
        return "".join(parts)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return widget_bundle(self.widget, self.details.value, repr(self))

    def __repr__(self) -> str:
        cur = self.entry.entry_id if self.entry is not None else None
        ok = self.status.get("ok")
        return (f"LessonBrowser({len(self.lessons)} lessons, current={cur!r}, "
                f"verified={ok})")


class ThresholdExplorer:
    """A salience slider over labelled candidates: metrics, a sweep plot, lessons at the cut.

    ``candidates`` is e.g. ``labelled_candidates(store, run_id)``: one row per
    candidate with ``score_col`` (salience), ``label_col`` (1 useful / 0 not;
    unlabelled rows, ``<NA>``, are left out) and ``groups_col`` (the verdict).
    Moving the slider (or :meth:`set_threshold`) recomputes ``metrics``
    (``sweep`` at that one threshold), moves the threshold line of the
    ``SweepDisplay`` and refills ``above`` / ``below``, the ``n_rows``
    lessons nearest the cut on each side.

    :meth:`from_run` judges a run in the store by any truth (``truth="labels" |
    "references" | "judge:NAME"``); its metrics are then exactly
    :func:`~truss_lab.evaluate._runs.sweep_run`'s at the slider's threshold
    (``sweep_at``: a function of a threshold list giving those sweep rows).

    Parameters
    ----------
    candidates : pandas.DataFrame
        One row per candidate (above).
    groups_col : str, default "verdict_hash"
        The verdict of each candidate.
    score_col : str, default "salience"
        The score the slider thresholds.
    label_col : str, default "label"
        The truth: 1 useful, 0 not, ``<NA>`` left out.
    text_col : str, default "text"
        The lesson text listed at the cut.
    initial : float, default 0.7
        Where the slider starts.
    n_rows : int, default 5
        Lessons listed on each side of the cut.
    plot : bool, default True
        Draw the sweep with the threshold line.
    sweep_at : callable, optional
        A function of a list of thresholds giving their sweep rows (what
        :meth:`from_run` passes).
    truth : str, optional
        The truth's name, shown with the metrics.
    run_id : str, optional
        The run's id, shown with the metrics.

    See Also
    --------
    sweep_run : Every threshold at once.
    SweepDisplay : The plot alone.

    Examples
    --------
    >>> explorer = tl.ThresholdExplorer.from_run(store, "good", plot=False)
    >>> explorer.metrics["kept"], round(explorer.metrics["precision"], 3)
    (414, 0.702)
    >>> _ = explorer.set_threshold(0.5)
    >>> round(explorer.metrics["precision"], 3), len(explorer.above), len(explorer.below)
    (0.69, 5, 5)
    """

    def __init__(
        self,
        candidates: pd.DataFrame,
        *,
        groups_col: str = "verdict_hash",
        score_col: str = "salience",
        label_col: str = "label",
        text_col: str = "text",
        initial: float = DEFAULT_MIN_SALIENCE,
        n_rows: int = 5,
        plot: bool = True,
        sweep_at: Callable[[Any], pd.DataFrame] | None = None,
        truth: str | None = None,
        run_id: str | None = None,
    ) -> None:
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
        self.run_id = run_id  # named in the plot's title, with the truth
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
        score: str = "salience",
        initial: float = DEFAULT_MIN_SALIENCE,
        n_rows: int = 5,
        plot: bool = True,
        **deprecated: Any,
    ) -> ThresholdExplorer:
        """An explorer over ``run_id`` judged by ``truth``. The lessons listed at the cut
        are the judged ones (labelled candidates; with references, the run's lessons on
        annotated verdicts, with the reference each matched); the metrics count as
        :func:`~truss_lab.evaluate._runs.sweep_run` does (corrected as the truth says).

        Parameters
        ----------
        store : Store
            The database.
        run_id : str
            The run to explore.
        truth : str or truss_lab.evaluate.Truth, default "labels"
            What the lessons are judged by: a Truth (resolved or not: its matcher,
            correction and the people's rows) or a spec (labels, references,
            judge:NAME).
        score : str, default "salience"
            The candidates' score column the slider thresholds.
        initial : float, default 0.7
            Where the slider starts.
        n_rows : int, default 5
            Lessons listed on each side of the cut.
        plot : bool, default True
            Draw the sweep.
        **deprecated
            The loose truth keywords (``labels``, ``references``, ``correct``, ...),
            still taken with a DeprecationWarning; they are parts of ``truth``.

        Returns
        -------
        ThresholdExplorer
            The explorer.
        """
        t = Truth.resolve(store, truth_of(truth, deprecated,
                                          where="ThresholdExplorer.from_run"), [run_id])
        jr = t.judged(run_id, score=score)
        fix = run_correction(store, t, jr, run_id, score=score)
        if t.kind == "references":
            view = jr.lessons.rename(columns={"s": score, "y": "label"})  # type: ignore[union-attr]
        else:
            view = labelled_candidates(store, run_id, labels=t.label_rows,
                                       record=t.record(run_id))
        return cls(view, score_col=score, initial=initial, n_rows=n_rows, plot=plot,
                   sweep_at=lambda thresholds: sweep_judged(jr, thresholds, correction=fix),
                   truth=t.name, run_id=run_id)

    # -- wiring --------------------------------------------------------------------

    @property
    def threshold(self) -> float:
        """The current threshold (the slider's value)."""
        return float(self.slider.value)

    def set_threshold(self, t: float) -> ThresholdExplorer:
        """Move the slider to ``t`` (clipped to its range); updates everything.

        Parameters
        ----------
        t : float
            The threshold.

        Returns
        -------
        ThresholdExplorer
            This explorer.
        """
        self.slider.value = float(np.clip(t, self.slider.min, self.slider.max))
        return self

    def _on_change(self, change: dict[str, Any]) -> None:
        self._update(float(change["new"]))

    def _update(self, t: float) -> None:
        with warnings.catch_warnings():
            # Degenerate labels already warned once, from the full sweep in __init__.
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            row = (self._sweep_at([t]) if self._sweep_at is not None
                   else sweep(self._y, self._s, groups=self._g, thresholds=[t])).iloc[0]
        # Counts are whole lessons, but prediction-powered tp/fp/fn are estimates.
        self.metrics = {k: (int(v) if k in ("kept", "tp", "fp", "fn") and float(v).is_integer()
                            else float(v)) for k, v in row.items()}
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
        # A bare Figure (not pyplot): no global figure list, nothing shown twice inline.
        self._figure = bare_figure((7, 3.6), dpi=90)
        ax = self._figure.subplots()
        self.display_ = SweepDisplay(self.sweep, threshold=self.slider.value,
                                     threshold_label="slider",
                                     name=plot_title(self.run_id or "candidates",
                                                     "threshold sweep",
                                                     truth=self.truth or "labels given",
                                                     correction=correction_label(
                                                         self.sweep.attrs.get("correction")))
                                     ).plot(ax=ax)

    def _render(self) -> None:
        buf = io.BytesIO()
        self._figure.savefig(buf, format="png")
        self.plot_image.value = buf.getvalue()

    # -- display -------------------------------------------------------------------

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return widget_bundle(self.widget, self.snapshot(), repr(self))

    def snapshot(self) -> str:
        """What the explorer shows now, as static HTML: the metrics, the sweep plot at
        the slider's threshold (an inline PNG) and the lessons on each side of the cut.

        Returns
        -------
        str
            The HTML (every text escaped).
        """
        plot = ""
        if self.display_ is not None and self.plot_image.value:
            data = base64.b64encode(bytes(self.plot_image.value)).decode("ascii")
            plot = (f'<img class="truss-sweep-plot" alt="sweep at threshold '
                    f'{self.threshold:.2f}" style="max-width:720px" '
                    f'src="data:image/png;base64,{data}">')
        return (f"<p><b>min salience {self.threshold:.2f}</b></p>{self.metrics_html.value}"
                f"{plot}<p><b>just above the cut (kept)</b></p>{self.above_html.value}"
                f"<p><b>just below the cut (dropped)</b></p>{self.below_html.value}")

    def __repr__(self) -> str:
        m = self.metrics
        by = f"truth={self.truth!r}, " if self.truth else ""
        return (f"ThresholdExplorer({by}threshold={self.threshold:.2f}, "
                f"candidates={len(self.candidates)}, precision={fmt_value(m.get('precision'))}, "
                f"recall={fmt_value(m.get('recall'))}, f1={fmt_value(m.get('f1'))}, "
                f"kept={m.get('kept')})")
