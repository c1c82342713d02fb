"""Pick an unverified lesson and follow it back to the signed verdict that produced it."""

from __future__ import annotations

import html
import json
from typing import Any

import pandas as pd

from ..core._errors import BadInputError, TrussLabError
from ..store._store import Store
from ._widgets import _display, _fmt, _table_html, _widgets

__all__ = ["LessonBrowser"]


class LessonBrowser:
    """Pick an unverified lesson and follow it back to the signed verdict that produced it.

    Shows the lesson's governed provenance (``produced_by`` seq + hash,
    sources, run, extractor), the verdict's journal entry (goal, outcome,
    summary, checks) and whether that entry verifies now
    (``verified_verdict``: hash, signature, link to its predecessor).
    ``query`` defaults to ``MemoryQuery.unverified_lessons(limit=500)``.
    """

    def __init__(self, store: Store, *, query: Any = None, limit: int = 500) -> None:
        from ..core._models import MemoryQuery
        from ..store._memory import query_memory

        w = _widgets()
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
        """Show lesson ``entry_id`` (also selects it in the dropdown)."""
        from ..journal._table import get_entry, verified_verdict
        from ..store._memory import get_memory_entry

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
                      _fmt(self.entry.salience), f"seq {p.produced_by.seq} · {p.produced_by.hash}",
                      "; ".join(f"seq {s.seq} · {s.hash[:16]}…" for s in p.sources),
                      p.run_id, p.extractor_id, p.prompt_version, p.created_at.isoformat()],
        })
        parts = [f"<h4>Lesson</h4><p>{e(self.entry.text)}</p>", status,
                 "<h4>Provenance</h4>", _table_html(prov, "truss-provenance")]
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
                      _table_html(pd.DataFrame({"field": list(summary),
                                                "value": [json.dumps(v) if isinstance(v, list)
                                                          else str(v) for v in summary.values()]}),
                                  "truss-verdict")]
            checks = pl.get("checks")
            if isinstance(checks, list) and checks:
                parts += ["<h4>Checks</h4>", _table_html(pd.DataFrame(checks), "truss-checks")]
        return "".join(parts)

    def _ipython_display_(self) -> None:
        _display(self.widget)

    def __repr__(self) -> str:
        cur = self.entry.entry_id if self.entry is not None else None
        ok = self.status.get("ok")
        return (f"LessonBrowser({len(self.lessons)} lessons, current={cur!r}, "
                f"verified={ok})")
