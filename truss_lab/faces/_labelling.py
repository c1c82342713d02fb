"""Label candidate lessons one at a time: Useful / Not useful / Skip."""

from __future__ import annotations

import html
from typing import Any

import pandas as pd

from ..core._errors import BadInputError
from ..store._store import Store
from ._widgets import _display, _fmt, _widgets

__all__ = ["LabellingWidget"]


class LabellingWidget:
    """Label candidate lessons one at a time: Useful / Not useful / Skip.

    A click appends one FORMATS.md §3 row (``verdict_hash``, ``extractor``,
    ``lesson_index``, ``useful``, ``annotator``, source ``"widget"``,
    ``labelled_at``) to the store's ``labels`` table through
    :func:`~truss_lab.ingest._ingest.append_labels` and moves on. Labels are
    never overwritten: a candidate this annotator already labelled keeps its
    stored label (the widget says so), as ``ingest_labels`` does. With
    ``skip_labelled`` (default) the session starts at the first candidate the
    annotator has not labelled yet, so it resumes where it stopped.
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
        w = _widgets()
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
            done = self._labelled_keys()
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
        ``widget.queue`` holds the queue's description (interval, source, counts)."""
        from ..evaluate._queue import labelling_queue

        frame = labelling_queue(store, run_id, annotator=annotator, **queue_options)
        widget = cls(store, frame, annotator=annotator)
        widget.queue = dict(frame.attrs["queue"])
        widget._refresh()
        return widget

    def _labelled_keys(self) -> set[tuple[str, str, int]]:
        rows = self.store.sql(
            "SELECT verdict_hash, extractor_id, lesson_index FROM labels WHERE annotator = ?",
            [self.annotator],
        ).fetchall()
        return {(h, e, int(i)) for h, e, i in rows}

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
        """Label the current candidate and advance; True when a new row was written."""
        from ..ingest._ingest import append_labels

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
        from ..journal._table import payload_by_hash

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
            f"<p>salience {e(_fmt(sal))} · {e(str(cur['extractor']))} "
            f"#{int(cur['lesson_index'])}</p>"
            f"<p><i>verdict</i> {e(str(v.get('verdict', '?')))}: {e(str(v.get('goal', '')))}"
            f"<br>{e(str(v.get('summary', '')))}</p>"
            + "".join(f"<p>✘ {e(str(c.get('name')))}: {e(str(c.get('evidence')))}</p>"
                      for c in failed)
            + "</div>")

    def _ipython_display_(self) -> None:
        _display(self.widget)

    def __repr__(self) -> str:
        return (f"LabellingWidget(annotator={self.annotator!r}, position={self.position}/"
                f"{len(self.candidates)}, written={self.written})")
