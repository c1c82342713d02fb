"""One self-contained HTML file about some runs: ``write_report(store, run_ids, path)``.

The file needs no server and no network: plots are inline base64 PNGs, style
and script are inline, and its Content-Security-Policy forbids any request.
Sections: the runs and their config; per run the sweep (verdict-bootstrap
bands, chosen and default thresholds), precision-recall with the operating
point, and calibration, judged by one truth named in the header (gold
labels, reference lessons or a judge's labels: one
:class:`~truss_lab.evaluate._truth.Truth`, resolved once and passed to every section); the
comparison of every run with the first; each run's slices (where it fails, discoveries
marked); junk rates; the audit; and a
filterable verdict list (completion, lessons, saliences, gate outcome,
labels, reference lessons with the lesson each was matched to, junk flags,
errors). Every number comes from the library; every piece of text is escaped
(``html.escape``).

Size: the verdict list holds at most ``max_verdicts`` verdicts (up to half
with errors, the rest the first by seq; the report says how many it left out),
completions are cut at :data:`COMPLETION_CHARS` characters and any other piece of
text (a lesson, a reference lesson, evidence, a summary, an error, a table cell) at
:data:`TEXT_CHARS`, saying how long it was, and the page shows :data:`PAGE_SIZE`
verdicts at a time.

The page: everything it needs is in the file; no stylesheet, script or font is
fetched, and the Content-Security-Policy forbids any request (images are
``data:`` URIs). Every value reaches the page through :func:`esc`
(``html.escape``); the script reads and hides elements but never writes
markup (no ``innerHTML``), so a lesson holding ``<script>`` stays text.

The verdict list: each verdict with its reference lessons (every annotator's) and,
per run, its completion, lessons, saliences, gate outcome, labels, the reference
each lesson was matched to, junk flags and errors. The matching is the evaluation's
own (a references :class:`~truss_lab.evaluate._truth.Truth`: its matcher's, by default
the semantic one's, greedy one-to-one assignment by score; the report's own when it judges by
references, so each run is matched once), so the list shows the pairs the reference
sweep counted. Store reads only (the store's functions and the evaluation's readers).
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import os
import warnings
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..core._errors import BadInputError
from ..core._files import check_output_file, write_output
from ..core._threshold import DEFAULT_MIN_SALIENCE
from ..core._version import __version__
from ..evaluate._calibration import CalibrationReport
from ..evaluate._choose import INTERVAL_LABELS, ThresholdChoice
from ..evaluate._compare import DELTA_METRICS
from ..evaluate._defaults import DEFAULT_CV, DEFAULT_N_BOOT, DEFAULT_OBJECTIVE
from ..evaluate._people import people_agreement
from ..evaluate._runs import (
    DEFAULT_TEST_SIZE,
    RunEvaluation,
    calibration_run,
    compare_runs,
    evaluate_run,
    label_report,
)
from ..evaluate._slices import slice_run
from ..evaluate._sweep import UndefinedMetricWarning, average_precision
from ..evaluate._truth import ReferenceTruth, Truth, labelled_candidates, truth_of
from ..govern._audit import audit
from ..journal._table import verdict_payloads
from ..score._junk import junk_flags, junk_rates
from ..score._matching import match_threshold_of, matcher_name
from ..store._ingested import completion_texts
from ..store._runs import (
    processed_verdicts,
    run_info,
    summarize_runs,
    valid_candidates,
    verdict_errors_of,
)
from ..store._store import Store
from ._display import (
    SUMMARY_THRESHOLDS,
    CalibrationDisplay,
    ComparisonDisplay,
    PrecisionRecallDisplay,
    SliceDisplay,
    SweepDisplay,
    bare_figure,
    plot_title,
    save_png,
)

__all__ = [
    "COMPLETION_CHARS",
    "CSP",
    "DECIMALS",
    "PAGE_SIZE",
    "TEXT_CHARS",
    "choice_html",
    "cut",
    "esc",
    "fmt",
    "judged_arrays",
    "page",
    "png_img",
    "report_html",
    "select_verdicts",
    "table",
    "verdict_list",
    "write_report",
]

# -- the page: HTML helpers, inline CSS and the verdict filter --------------------------------

#: Verdicts shown per page of the verdict list (the script paginates the matches).
PAGE_SIZE = 25

#: No network, no plugins: inline style and script, images from data: URIs only.
CSP = ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
       "script-src 'unsafe-inline'; base-uri 'none'; form-action 'none'")


#: Any piece of text but a completion longer than this is cut in the report, saying how long
#: it was: one oversized value (a reference lesson pasted from a file) must not make the
#: page huge or unreadable.
TEXT_CHARS = 2000


def cut(value: Any, limit: int = TEXT_CHARS) -> str:
    """``str(value)``, cut to ``limit`` characters with a note of its length when longer."""
    text = str(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… (first {limit} of {len(text)} characters)"


def esc(value: Any) -> str:
    """``html.escape`` of ``str(value)`` (quotes too, so it is safe in attributes)."""
    return html.escape(str(value), quote=True)


#: Decimals of every number the report shows (thresholds, rates, counts per verdict,
#: intervals): one format, so 0.370 and 0.460 read alike.
DECIMALS = 3


def fmt(value: Any, column: str = "") -> str:
    """A cell as text, one format for the whole report: whole numbers as integers, seconds
    to 2 decimals, other numbers to :data:`DECIMALS` decimals (a p-value below 0.001 as
    ``< 0.001``), NaN/None as an empty cell, booleans as yes/no, text cut at
    :data:`TEXT_CHARS`."""
    if value is None or (isinstance(value, (float, np.floating)) and math.isnan(value)):
        return ""
    if isinstance(value, (np.bool_, bool)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if column.endswith("_p") and 0 <= v < 10 ** -DECIMALS:
            return f"< {10 ** -DECIMALS:.{DECIMALS}f}"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if column == "seconds" or column.endswith("_seconds"):
            return f"{v:.2f}"
        if v.is_integer() and column not in _RATE_COLUMNS and abs(v) >= 1:
            return str(int(v))
        return f"{v:.{DECIMALS}f}"
    return cut(value)


# Columns whose values are rates or thresholds: shown with decimals even when whole (1.000).
_RATE_COLUMNS = frozenset({"threshold", "precision", "recall", "f1", "kept_per_verdict",
                           "write_rate", "coverage", "ece", "mce", "brier", "value"})


#: What each column (or field) a table of the report shows means: the legend under the
#: table names the ones it shows (tests/test_report.py checks every header has one).
COLUMN_NOTES: dict[str, str] = {
    # the runs and their configuration
    "field": "a property of the run", "value": "its value",
    "extractor_id": "what proposed the lessons (recorded completions or a model)",
    "extractor": "what proposed the lessons",
    "prompt_version": "the extraction prompt's version",
    "prompt_hash": "hash of that prompt's text (empty: not registered here)",
    "policy": "lesson_extraction: off, on or model-scored",
    "extraction_min_salience": "the gate: a lesson is written when salience >= it",
    "write_memory": "whether the run wrote its lessons to memory",
    "status": "finished, failed or running", "name": "the run's name", "tags": "its tags",
    "n_verdicts": "verdicts the run processed",
    "n_candidates": "candidate lessons (proposed, before the gate)",
    "n_lessons": "lessons that passed the gate and were written",
    "n_lessons_new": "memory entries this run added",
    "n_errors": "verdicts whose completion could not be used (parse or call error)",
    "provider_calls": "model calls made (0: replayed from recordings)",
    "seconds": "active wall time, summed over resumes",
    "verdicts_per_s": "verdicts processed per second",
    "started_at": "when it started (UTC)", "finished_at": "when it finished (UTC)",
    "error": "why it failed", "signed_by": "key ids that signed the run's verdicts",
    "provider": "the model provider", "scorer": "what scored salience",
    "dataset_hash": "hash of the verdicts it ran on",
    "code_version": "truss_lab version that ran it",
    # what a run is judged on
    "n_labelled": "candidates with a majority gold label",
    "n_ties": "candidates whose annotators tied (no label; left out)",
    "n_unlabelled": "candidates no annotator labelled",
    "n_orphan_labels": "labels that match no candidate (often a wrong extractor name or "
                       "lesson_index)",
    "coverage": "n_labelled / n_candidates",
    "annotator_a": "one annotator", "annotator_b": "the other",
    "n_common": "candidates both labelled",
    "raw_agreement": "share of those with equal labels",
    "kappa": "Cohen's kappa: agreement beyond chance (1 full, 0 chance)",
    "n_lessons_labelled": "lessons with a label",
    "n_direct": "lessons with a direct majority label",
    "n_transferred": "lessons labelled only by transfer (an equal text of another "
                     "extractor on the same verdict)",
    "n_both": "lessons with a direct label that a transfer would also label",
    "agreement": "share of n_both where the direct and transferred labels are equal",
    "n_references": "reference lessons of the annotated verdicts",
    "n_matched": "reference lessons a kept lesson matched",
    # the sweep and the choice
    "row": "which threshold the row is (chosen, ADR default, or a grid point)",
    "threshold": "salience threshold: lessons with salience >= it are kept",
    "kept": "lessons kept at the threshold (written by the gate)",
    "tp": "kept and useful", "fp": "kept and not useful",
    "fn": "useful but not kept (a useful lesson the parser dropped included)",
    "precision": "tp / (tp + fp): share of kept lessons that are useful",
    "recall": "tp / (tp + fn): share of useful lessons that are kept",
    "f1": "harmonic mean of precision and recall",
    "kept_per_verdict": "lessons kept per verdict processed",
    "write_rate": "share of candidates kept",
    "metric": "the measure",
    # the counts of a judge's labels or of reference lessons
    "candidates": "candidate lessons counted", "verdicts": "verdicts counted",
    "valid": "candidates the parser kept", "dropped": "candidates the parser dropped",
    "dropped_useful": "dropped ones labelled useful (misses)",
    "labelled": "candidates with a label", "tied": "candidates whose labels tied",
    "tied_judged": "tied candidates counted (by the ties policy)",
    "transferred": "labels lent by an equal text of another extractor",
    "unlabelled": "candidates without a label", "ties": "how a tie counts",
    "verdicts_processed": "verdicts the run processed",
    "verdicts_annotated": "of those, verdicts with reference lessons",
    "verdicts_without_lessons": "annotated verdicts where the run wrote nothing",
    "lessons": "the run's lessons on annotated verdicts",
    "matched": "lessons matched to a reference lesson",
    "references": "reference lessons (each a lesson to find)",
    "lessons_unannotated": "lessons on verdicts without reference lessons (not judged)",
    "annotator": "whose reference lessons (union: every annotator's)",
    "verdicts_unmatched": "annotated verdicts left out (no match could be made)",
    "matcher": "how lessons are matched to reference lessons",
    # calibration
    "scores": "before: the raw salience; after: calibrated (both on held-out verdicts)",
    "ece": "expected calibration error: mean gap between salience and the observed "
           "share of useful lessons (lower is better)",
    "mce": "maximum calibration error over bins with enough candidates (lower is better)",
    "brier": "mean squared error of salience as a probability (lower is better)",
    # the comparison
    "B - A": "difference of the two runs (B minus A)",
    # junk
    "run_id": "the run", "passed_gate": "lessons that passed the gate (yes) or all (no)",
    "n": "candidates counted",
    "duplicate_in_verdict": "repeats another lesson of the same verdict",
    "duplicate_in_run": "repeats a lesson of another verdict of the run",
    "duplicate_of_memory": "repeats a lesson already in memory",
    "ungrounded": "cites a check the verdict does not have",
    "no_evidence": "gives no evidence", "restates_summary": "restates the verdict summary",
    "junk": "flagged by any detector",
    # the audit
    "passed": "the check passed", "n_rows": "offending rows",
    "invariant": "the ADR 0011 invariant it guards", "detail": "what it found",
}


def legend(names: Sequence[str], extra: dict[str, str] | None = None) -> str:
    """The legend of a table: each of ``names`` that ``extra`` (the table's own columns)
    or :data:`COLUMN_NOTES` explains, once."""
    notes = {**COLUMN_NOTES, **(extra or {})}
    shown = [n for n in dict.fromkeys(names) if n in notes]
    if not shown:
        return ""
    return ("<p class=\"legend\">" + " · ".join(
        f"<b>{esc(n)}</b>: {esc(notes[n])}" for n in shown) + "</p>")


def table(df: pd.DataFrame, *, index: bool = False, cls: str = "",
          mark: Sequence[bool] | None = None, notes: Sequence[str] | None = None,
          extra: dict[str, str] | None = None) -> str:
    """An escaped HTML table of ``df`` (cells formatted by :func:`fmt`, by column), in a
    box that scrolls sideways rather than overflow the page, with its :func:`legend`
    (of its columns, or of ``notes``; ``extra`` explains columns of its own); rows with
    ``mark`` True are highlighted."""
    frame = df.reset_index() if index else df
    cols = [str(c) for c in frame.columns]
    head = "".join(f"<th>{esc(c)}</th>" for c in cols)
    marks = list(mark) if mark is not None else [False] * len(frame)
    rows = "".join(
        ("<tr class=\"mark\">" if marked else "<tr>")
        + "".join(f"<td>{esc(fmt(v, c))}</td>" for c, v in zip(cols, row, strict=True))
        + "</tr>"
        for row, marked in zip(frame.itertuples(index=False, name=None), marks, strict=True)
    )
    attr = f' class="{esc(cls)}"' if cls else ""
    return (f"<div class=\"table-box\"><table{attr}><thead><tr>{head}</tr></thead>"
            f"<tbody>{rows}</tbody></table></div>"
            + legend(cols if notes is None else notes, extra))


def png_img(fig: Any, alt: str, *, dpi: int = 90) -> str:
    """``fig`` as an inline base64 PNG ``<img>`` (no file beside the report)."""
    buf = io.BytesIO()
    save_png(fig, buf, dpi=dpi)
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return f'<img class="plot" alt="{esc(alt)}" src="data:image/png;base64,{data}">'


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:0 auto;max-width:1200px;
 padding:0 1.2em 3em;color:#1d1d1f}
h1{margin:.8em 0 .2em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
nav a{margin-right:1em}table{border-collapse:collapse;margin:.5em 0;font-size:13px}
th,td{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}
th{background:#f4f4f6}img.plot{max-width:100%;height:auto;display:block;margin:.5em 0}
.ok{color:#1a7f37;font-weight:bold}.bad{color:#c62828;font-weight:bold}.muted{color:#666}
pre{white-space:pre-wrap;word-break:break-word;background:#f7f7f9;padding:.5em;
 max-height:20em;overflow:auto;font-size:12px}
details.verdict{border:1px solid #ddd;border-radius:4px;margin:.4em 0;padding:.2em .6em}
details.verdict>summary{cursor:pointer}.badge{display:inline-block;padding:0 .5em;
 border-radius:3px;background:#eee;font-size:12px}.badge.pass{background:#d7f5dd}
.badge.fail{background:#fbd9d9}.badge.err{background:#ffe8b3}.badge.ref{background:#dde8fb}
#filters{position:sticky;top:0;background:#fff;padding:.5em 0;border-bottom:1px solid #eee}
#filters input[type=search]{width:24em}.lesson-text{max-width:40em}
.table-box{max-width:100%;overflow-x:auto}tr.mark td{background:#fff6d6;font-weight:bold}
p.legend{font-size:12px;color:#555;margin:.1em 0 1em}p.note{background:#fff3e0;
 border-left:4px solid #e65100;padding:.3em .6em}#summary ul{padding-left:1.2em}
#summary li{margin:.3em 0}#summary li.note{color:#b34700}
td{overflow-wrap:anywhere}
"""

_JS = """
(function () {
  "use strict";
  var PAGE = %(page)d;
  var items = Array.prototype.slice.call(document.querySelectorAll("details.verdict"));
  var text = items.map(function (el) { return el.textContent.toLowerCase(); });
  var q = document.getElementById("verdict-filter");
  var outcome = document.getElementById("outcome-filter");
  var errorsOnly = document.getElementById("errors-only");
  var refsOnly = document.getElementById("refs-only");
  var status = document.getElementById("filter-status");
  var prev = document.getElementById("page-prev");
  var next = document.getElementById("page-next");
  var page = 0;
  function matches(i) {
    var el = items[i];
    var needle = q.value.trim().toLowerCase();
    if (needle && text[i].indexOf(needle) < 0) return false;
    if (outcome.value && el.dataset.outcome !== outcome.value) return false;
    if (errorsOnly.checked && el.dataset.errors === "0") return false;
    if (refsOnly.checked && el.dataset.refs === "0") return false;
    return true;
  }
  function render() {
    var hits = [];
    for (var i = 0; i < items.length; i++) { if (matches(i)) hits.push(i); }
    var pages = Math.max(1, Math.ceil(hits.length / PAGE));
    if (page >= pages) page = pages - 1;
    var lo = page * PAGE, hi = lo + PAGE, shown = {};
    hits.slice(lo, hi).forEach(function (i) { shown[i] = true; });
    items.forEach(function (el, i) { el.hidden = !shown[i]; });
    status.textContent = hits.length + " of " + items.length + " verdicts match; page " +
      (page + 1) + " of " + pages;
    prev.disabled = page === 0;
    next.disabled = page >= pages - 1;
  }
  function reset() { page = 0; render(); }
  q.addEventListener("input", reset);
  outcome.addEventListener("change", reset);
  errorsOnly.addEventListener("change", reset);
  refsOnly.addEventListener("change", reset);
  prev.addEventListener("click", function () { page -= 1; render(); });
  next.addEventListener("click", function () { page += 1; render(); });
  render();
})();
"""


def page(title: str, body: str) -> str:
    """The whole document: head (CSP, inline CSS), ``body`` (already escaped HTML), script."""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{_CSS}</style></head><body>{body}"
        f"<script>{_JS % {'page': PAGE_SIZE}}</script></body></html>\n"
    )


# -- the verdict list ---------------------------------------------------------------------------

#: A completion longer than this is cut in the report (its lessons are listed, each cut
#: at :data:`TEXT_CHARS`).
COMPLETION_CHARS = 2000


def select_verdicts(store: Store, run_ids: Sequence[str], max_verdicts: int | None
                    ) -> tuple[pd.DataFrame, int]:
    """``(verdicts, n_total)``: the verdicts the runs processed, in journal order.

    With ``max_verdicts`` (None or 0: all), up to half of it goes to verdicts
    with an error (the first ones by seq) and the rest to the first verdicts
    by seq, so a list cut short still shows both failures and ordinary verdicts.
    """
    df = processed_verdicts(store, run_ids)
    n_total = len(df)
    if max_verdicts and n_total > max_verdicts:
        errors = df.index[df["n_errors"] > 0][: max_verdicts // 2]
        rest = df.index.difference(errors)[: max_verdicts - len(errors)]
        df = df.loc[errors.union(rest)]
    return df.reset_index(drop=True), n_total


def _run_rows(store: Store, run_id: str, hashes: list[str], flags: pd.DataFrame | None,
              truth: Truth | None = None) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """One run's candidates (with labels and junk), completions and errors for ``hashes``
    (the gold labels: the report's labels truth's own frame when it judges by them)."""
    cands = (truth.labelled(run_id) if truth is not None and truth.name == "labels"
             else labelled_candidates(store, run_id, valid_only=False))
    if flags is not None and len(flags):
        cands = cands.merge(flags, on="candidate_id", how="left")
    cands = cands[cands["verdict_hash"].isin(hashes)]
    extractor = run_info(store, run_id)["extractor_id"]
    comps = completion_texts(store, extractor, hashes).drop_duplicates("verdict_hash",
                                                                       keep="last")
    errs = verdict_errors_of(store, run_id, hashes)
    return cands, comps, errs


def reference_matches(store: Store, run_ids: Sequence[str], hashes: list[str],
                      truth: Truth | None = None
                      ) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """``(references, matches)``: the reference lessons of ``hashes`` (Formats §4
    rows, every annotator's) and, per run with an annotated verdict, its valid
    lessons on annotated verdicts among ``hashes`` with ``candidate_id,
    verdict_hash, lesson_index, reference_id`` (the reference the lesson claimed,
    ``<NA>`` if none), ``similarity`` and ``y`` (1 when matched). ``truth``: the
    report's truth, reused when it is the store's references (else they are read)."""
    t = (truth if truth is not None and truth.kind == "references"
         else Truth.resolve(store, "references", run_ids))
    assert t.reference_rows is not None  # a references truth holds its rows
    refs = t.reference_rows
    refs = refs[refs["verdict_hash"].astype(str).isin(hashes)].reset_index(drop=True)
    matches: dict[str, pd.DataFrame] = {}
    if refs.empty:
        return refs, matches
    for rid in run_ids:
        try:
            jr = t.judged(rid)
        except BadInputError:
            continue  # none of this run's verdicts is annotated
        assert isinstance(jr, ReferenceTruth)
        les = jr.lessons
        matches[rid] = les.loc[les["verdict_hash"].isin(hashes),
                               ["candidate_id", "verdict_hash", "lesson_index", "reference_id",
                                "similarity", "y"]].reset_index(drop=True)
    return refs, matches


def _match_text(m: Any) -> str:
    if m is None:
        return ""
    if int(m.y):
        return f"{m.reference_id} ({m.similarity:.2f})"
    return f"no match (best {m.similarity:.2f})"


def _references_table(refs: list[Any], matches: dict[str, list[Any]]) -> str:
    """One verdict's reference lessons, each with the lesson of every run that claimed it."""
    if not refs:
        return ""
    claimed: dict[str, dict[str, list[str]]] = {}
    for run, m in matches.items():
        got = claimed.setdefault(run, {})
        for h in (h for h in m if int(h.y) == 1):
            got.setdefault(str(h.reference_id), []).append(
                f"lesson #{int(h.lesson_index)} ({h.similarity:.2f})")
    rows = []
    for r in sorted(refs, key=lambda r: (str(r.reference_id), str(r.annotator or ""))):
        rid = str(r.reference_id)
        if rid == "none":
            text, ev, by = "(this verdict teaches nothing, says this annotator)", "", ""
        else:
            text = cut(r.text)
            ev = cut(", ".join(map(str, r.evidence))) if r.evidence is not None else ""
            claims = [f"{run}: " + ("; ".join(got.get(rid, [])) or "missed")
                      for run, got in claimed.items()]
            by = cut(" · ".join(claims))
        rows.append(f"<tr><td>{esc(cut(rid))}</td><td>{esc(cut(r.annotator or ''))}</td>"
                    f"<td class=\"lesson-text\">{esc(text)}</td><td>{esc(ev)}</td>"
                    f"<td>{esc(by)}</td></tr>")
    return ("<h4>reference lessons</h4><table class=\"references\"><thead><tr><th>id</th>"
            "<th>annotator</th><th>reference lesson</th><th>evidence</th>"
            "<th>matched by (run: lesson, similarity)</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def _label(row: Any) -> str:
    if row.tie:
        return f"tie ({row.n_annotators} annotators)"
    if pd.isna(row.label):
        return "unlabelled"
    word = "useful" if int(row.label) == 1 else "not useful"
    return f"{word} ({row.n_annotators} annotator{'s' if row.n_annotators != 1 else ''})"


def _lessons_table(c: list[Any], matched: list[Any] | None) -> str:
    """The lessons of one verdict in one run; ``matched``: that run's matcher rows
    of the verdict (None when the verdict has no reference lessons)."""
    if not c:
        return '<p class="muted">no candidate lesson</p>'
    by_id = {} if matched is None else {m.candidate_id: m for m in matched}
    rows = []
    for r in c:
        gate = "written" if r.passed_gate else ("dropped: " + str(r.drop_reason)
                                                if not r.valid else "below threshold")
        junk = [k for k in ("duplicate_in_verdict", "duplicate_in_run", "ungrounded",
                            "no_evidence", "restates_summary") if bool(getattr(r, k, False))]
        evidence = cut(", ".join(map(str, r.evidence))) if r.evidence is not None else ""
        rows.append(
            f"<tr><td>{esc(r.lesson_index)}</td><td class=\"lesson-text\">"
            f"{esc(cut(r.text) if isinstance(r.text, str) else '')}"
            f"</td><td>{esc(fmt(r.salience))}</td><td>{esc(fmt(r.score))}</td>"
            f"<td>{esc(gate)}</td><td>{esc(_label(r))}</td>"
            f"<td>{esc(_match_text(by_id.get(r.candidate_id)))}</td>"
            f"<td>{esc(', '.join(junk))}</td><td>{esc(evidence)}</td></tr>")
    return ("<table class=\"lessons\"><thead><tr><th>#</th><th>lesson</th><th>salience</th>"
            "<th>score</th><th>gate</th><th>label</th><th>reference matched</th><th>junk</th>"
            f"<th>evidence</th></tr></thead><tbody>{''.join(rows)}</tbody></table>")


class _ByVerdict:
    """The rows of a frame (named tuples) by verdict hash, read in one pass for the
    whole list: a boolean filter per verdict and pandas rows made the list cost tens of
    milliseconds a verdict."""

    def __init__(self, df: pd.DataFrame) -> None:
        self.groups: dict[str, list[Any]] = {}
        for row in df.itertuples(index=False):
            self.groups.setdefault(str(row.verdict_hash), []).append(row)

    def __getitem__(self, verdict_hash: str) -> list[Any]:
        return self.groups.get(verdict_hash, [])


def _verdict_html(v: Any, per_run: dict[str, tuple[_ByVerdict, _ByVerdict, _ByVerdict]],
                  refs: _ByVerdict, matches: dict[str, _ByVerdict]) -> str:
    try:
        payload = json.loads(v.payload) if isinstance(v.payload, str) else {}
    except ValueError:
        payload = {}
    outcome = str(payload.get("verdict", "unknown"))
    counts = []
    runs_html = []
    v_refs = refs[v.verdict_hash]
    v_matches = {rid: m[v.verdict_hash] for rid, m in matches.items()}
    for rid, (cands, comps, errs) in per_run.items():
        c, e, comp = cands[v.verdict_hash], errs[v.verdict_hash], comps[v.verdict_hash]
        # Each run's own count: the lessons of two runs are two proposals, not one sum.
        written = sum(bool(r.passed_gate) for r in c)
        counts.append(f"{rid}: {len(c)} lesson(s), {written} written" if len(per_run) > 1
                      else f"{len(c)} lesson(s), {written} written")
        part = [f"<h4>run <code>{esc(rid)}</code></h4>",
                _lessons_table(c, v_matches.get(rid) if len(v_refs) else None)]
        if comp:
            text = str(comp[0].text)
            note = (f" (first {COMPLETION_CHARS} of {len(text)} characters)"
                    if len(text) > COMPLETION_CHARS else "")
            part.append(f"<details><summary>completion{esc(note)}</summary>"
                        f"<pre>{esc(text[:COMPLETION_CHARS])}</pre></details>")
        for r in e:
            part.append(f"<p class=\"bad\">error ({esc(r.stage)}): {esc(r.reason)}: "
                        f"{esc(cut(r.message or ''))}</p>")
        runs_html.append("".join(part))
    checks = payload.get("checks") or []
    check_rows = "".join(
        f"<tr><td>{esc(cut(ch.get('name', '')))}</td><td>{esc(fmt(ch.get('passed')))}</td>"
        f"<td>{esc(cut(ch.get('evidence', '')))}</td></tr>" for ch in checks
        if isinstance(ch, dict))
    badge = "pass" if outcome == "pass" else "fail" if outcome == "fail" else ""
    errs_badge = (f' <span class="badge err">{int(v.n_errors)} error(s)</span>'
                  if v.n_errors else "")
    refs_badge = f' <span class="badge ref">{esc(_refs_badge(v_refs))}</span>' if len(
        v_refs) else ""
    goal = str(payload.get("goal", ""))
    return (
        f'<details class="verdict" data-outcome="{esc(outcome)}" '
        f'data-errors="{int(v.n_errors)}" data-seq="{int(v.verdict_seq)}" '
        f'data-refs="{len(v_refs)}" data-hash="{esc(v.verdict_hash)}">'
        f"<summary><code>seq {int(v.verdict_seq)}</code> "
        f'<span class="badge {badge}">{esc(outcome)}</span> '
        f"<b>{esc(cut(payload.get('contract_id', ''), 90))}</b> {esc(goal[:90])} · "
        f"{esc(' · '.join(counts))}{refs_badge}{errs_badge}</summary>"
        f"<p><b>summary</b>: {esc(cut(payload.get('summary', '')))}</p>"
        f"<p class=\"muted\">run {esc(cut(payload.get('run_id', '')))} · tags "
        f"{esc(cut(', '.join(map(str, payload.get('tags') or []))))} · verdict hash "
        f"<code>{esc(v.verdict_hash)}</code></p>"
        + (f"<table><thead><tr><th>check</th><th>passed</th><th>evidence</th></tr></thead>"
           f"<tbody>{check_rows}</tbody></table>" if check_rows else "")
        + _references_table(v_refs, v_matches) + "".join(runs_html) + "</details>"
    )


def _refs_badge(v_refs: list[Any]) -> str:
    """What a verdict's annotators say it teaches: its reference count, or that it
    teaches nothing (every annotator wrote a ``none`` line)."""
    n_refs = len({str(r.reference_id) for r in v_refs} - {"none"})
    n_ann = len({r.annotator for r in v_refs})
    who = f"{n_ann} annotator{'s' if n_ann != 1 else ''}"
    if n_refs == 0:
        return f"teaches nothing ({who})"
    return f"{n_refs} reference lesson{'s' if n_refs != 1 else ''} ({who})"


def verdict_list(store: Store, run_ids: Sequence[str], *, flags: pd.DataFrame | None,
                 max_verdicts: int | None, truth: Truth | None = None) -> str:
    """The filterable verdict list (filters, pager, one ``<details>`` per verdict).

    ``flags`` holds :func:`~truss_lab.score._junk.junk_flags` columns keyed by
    ``candidate_id`` (or None); ``truth`` is the report's (see
    :func:`reference_matches`)."""
    verdicts, n_total = select_verdicts(store, run_ids, max_verdicts)
    hashes = [str(h) for h in verdicts["verdict_hash"]]
    per_run = {rid: tuple(_ByVerdict(f) for f in _run_rows(store, rid, hashes, flags, truth))
               for rid in run_ids}
    refs, matches = reference_matches(store, run_ids, hashes, truth)
    by_refs, by_matches = _ByVerdict(refs), {r: _ByVerdict(m) for r, m in matches.items()}
    outcomes = sorted({str(json.loads(p).get("verdict", "unknown")) if isinstance(p, str)
                       else "unknown" for p in verdicts["payload"]})
    options = "".join(f'<option value="{esc(o)}">{esc(o)}</option>' for o in outcomes)
    limit = ("" if len(verdicts) == n_total else
             f"<p class=\"muted\">Showing {len(verdicts)} of {n_total} verdicts: up to half "
             "of them with errors, the rest the first in journal order (raise the limit "
             "with --n-verdicts, 0 for all).</p>")
    items = "".join(_verdict_html(v, per_run, by_refs, by_matches)  # type: ignore[arg-type]
                    for v in verdicts.itertuples(index=False))
    return (
        f"{limit}<div id=\"filters\"><input type=\"search\" id=\"verdict-filter\" "
        "placeholder=\"filter: contract, goal, lesson text, hash…\" aria-label=\"filter\"> "
        "<label>verdict <select id=\"outcome-filter\"><option value=\"\">all</option>"
        f"{options}</select></label> <label><input type=\"checkbox\" id=\"errors-only\"> "
        "only verdicts with errors</label> <label><input type=\"checkbox\" id=\"refs-only\"> "
        "only verdicts with reference lessons</label> "
        "<button id=\"page-prev\">&larr; previous</button> "
        "<button id=\"page-next\">next &rarr;</button> <span id=\"filter-status\"></span>"
        f"</div><div id=\"verdicts\">{items}</div>"
    )


# -- the sections and the file ------------------------------------------------------------------

def _section(anchor: str, title: str, body: str) -> str:
    return f'<section id="{esc(anchor)}"><h2>{esc(title)}</h2>{body}</section>'


def _runs_section(store: Store, run_ids: Sequence[str]) -> str:
    summary = summarize_runs(store, run_ids)
    configs = []
    for rid in run_ids:
        info = run_info(store, rid)
        cfg = info.get("config")
        cfg_text = json.dumps(json.loads(cfg), indent=2) if isinstance(cfg, str) else str(cfg)
        meta = {k: info.get(k) for k in ("provider", "scorer", "prompt_version", "prompt_hash",
                                         "dataset_hash", "code_version", "finished_at")}
        configs.append(f"<details><summary>config of <code>{esc(rid)}</code></summary>"
                       + table(pd.DataFrame({"field": list(meta), "value": list(meta.values())}),
                               notes=["field", "value", *meta]) +
                       f"<pre>{esc(cfg_text)}</pre></details>")
    # One column per run, one row per field: a run's many fields fit the page's width;
    # each cell formatted by its field (a count whole, seconds to 2 decimals).
    runs = summary.set_index("run_id").T
    cells = pd.DataFrame({rid: [fmt(v, str(f)) for f, v in runs[rid].items()]
                          for rid in runs.columns}, index=runs.index)
    cells = cells.reset_index().rename(columns={"index": "field"})
    return table(cells, notes=["field", *map(str, runs.columns), *map(str, runs.index)],
                 extra={str(rid): "one column per run" for rid in runs.columns}
                 ) + "".join(configs)


def _truth_counts(store: Store, rid: str, truth: Truth, counts: dict[str, Any]) -> str:
    """What the run is judged on: label coverage and agreement, or the reference counts."""
    if truth.name == "labels":
        rep = label_report(store, rid)
        f = rep.fleiss
        kappa = (f"; Fleiss' kappa {fmt(float(f['kappa']))} on {f['n_items']} of "
                 f"{f['n_candidates']} labelled candidates ({f['raters']} annotations each)"
                 if f else "")
        return (f"<p>Judged by the gold labels: {rep.n_label_rows} label rows, {rep.n_ties} "
                f"ties{esc(kappa)}.</p>" + table(rep.coverage) + table(rep.agreement)
                + (table(rep.transfer, extra={"n_lessons": "the extractor's candidate "
                                                             "lessons"})
                   if len(rep.transfer) else ""))
    if truth.name == "references":
        m = truth.matching
        what = (f"reference lessons matched by the {matcher_name(m)} matcher (threshold "
                f"{match_threshold_of(m):g}"
                f"{', the default' if truth.matcher in (None, 'auto') else ''})")
    else:
        what = f"the labels of {truth.name}"
    return (f"<p>Judged by {esc(what)}.</p>"
            + table(pd.DataFrame([dict(counts)])))


def _sweep_rows(ev: RunEvaluation) -> str:
    """The sweep at :data:`SUMMARY_THRESHOLDS`, the default and the chosen threshold, in
    threshold order, the chosen and default rows named (and the chosen one marked)."""
    chosen = ev.choice.threshold
    grid = sorted({*SUMMARY_THRESHOLDS, *([chosen] if math.isfinite(chosen) else [])})
    at = ev.at(grid)
    names = []
    for t in at["threshold"]:
        tags = [w for w, v in (("chosen", chosen), ("ADR default", DEFAULT_MIN_SALIENCE))
                if math.isfinite(v) and abs(t - v) < 1e-9]
        names.append(" · ".join(tags))
    at.insert(0, "row", names)
    cols = [c for c in ("row", "threshold", "kept", "tp", "fp", "fn", "precision", "recall",
                        "f1", "kept_per_verdict") if c in at.columns]
    return ("<div class=\"sweep-rows\">"
            + table(at[cols], mark=[bool(n.startswith("chosen")) for n in names]) + "</div>")


def choice_html(choice: ThresholdChoice) -> str:
    """The choice as people read it: the threshold with its interval, how it was made,
    and :meth:`~truss_lab.evaluate._choose.ThresholdChoice.metrics_table` (one row per
    metric: each side, each interval): no NaN cell, no raw dict."""
    lo_hi = (f" [{fmt(choice.threshold_interval[0])}, {fmt(choice.threshold_interval[1])}]"
             if choice.threshold_interval is not None else "")
    conf = f"{choice.confidence:.0%} " if choice.confidence is not None else ""
    folds = ""
    if choice.folds is not None:
        folds = ("<p>thresholds per fold: "
                 + esc(", ".join(fmt(t) for t in choice.fold_thresholds)) + "</p>")
    metrics = choice.metrics_table()
    sides = list(metrics.columns[1:3])
    has_iv = len(metrics.columns) > 3
    return (f"<div class=\"choice\"><p><b>chosen threshold {esc(fmt(choice.threshold))}</b>"
            f"{esc(lo_hi)} ({esc(conf)}bootstrap interval of the choice) · objective "
            f"{esc(choice.objective)} · {esc(choice.how)}</p>"
            + folds + _warning(choice.small_sample)
            + (f"<p class=\"muted\">{esc(conf)}intervals of the held-out metrics</p>"
               if has_iv else "")
            + table(metrics, extra={
                sides[0]: "the metric at the chosen threshold on the verdicts it was "
                          "chosen on (flatters the choice)",
                sides[1]: "the metric on verdicts the choice did not see: the one to read",
                INTERVAL_LABELS["fixed"]: f"{conf}verdict-bootstrap interval of the "
                                          "held-out value at this threshold",
                INTERVAL_LABELS["procedure"]: f"{conf}interval that also covers the "
                                              "threshold choosing itself (wider)"})
            + "</div>")


# Fixed margins of the report's figures (fractions of the figure): their labels are
# known, and a fixed layout draws in half the time of a constrained one.
_SWEEP_MARGINS = {"left": 0.09, "right": 0.9, "bottom": 0.11, "top": 0.88}
_PR_MARGINS = {"left": 0.13, "right": 0.97, "bottom": 0.12, "top": 0.87}
_CAL_MARGINS = {"left": 0.07, "right": 0.93, "bottom": 0.12, "top": 0.86, "wspace": 0.35}


def _calibration(store: Store, ev: RunEvaluation) -> CalibrationReport | None:
    """The report's calibration of one run (isotonic, judged on held-out verdicts), None
    when it judges by references: a calibration judges scored lessons only, so it would
    leave out the references no lesson matched, which the sweep counts."""
    if ev.truth.kind == "references":
        return None
    return calibration_run(store, ev.run_id, method="isotonic",
                           random_state=ev.options.get("random_state", 0),
                           truth=ev.truth.corrected("ppi" if ev.ppi is not None else "none"))


def _people_line(store: Store, rid: str, ev: RunEvaluation, *, n_boot: int,
                 random_state: int) -> str:
    """How far the people whose answers corrected the run agree with each other (the
    line of ``match-agreement RUN --between-people``), when the run was corrected."""
    if ev.correction == "none" or n_boot < 1:
        return ""
    kind = "match labels" if ev.truth.kind == "references" else "gold labels"
    agree = people_agreement(store, rid, match_labels=ev.truth.match_labels,
                             labels=ev.truth.gold_labels, n_boot=n_boot,
                             random_state=random_state)
    line = next(x.strip() for x in repr(agree).splitlines()[1:]
                if x.strip().startswith(f"{kind}:"))
    return (f"<p>People against people ({agree.confidence:.0%} intervals, {n_boot} verdict "
            f"resamples): {esc(line)}.</p>")


def _evaluation(store: Store, ev: RunEvaluation | BadInputError, rid: str,
                cal: CalibrationReport | None, *, n_boot: int, random_state: int) -> str:
    """The sweep, PR and calibration of one run from its one evaluation (a note when
    the run has no truth)."""
    if isinstance(ev, BadInputError):
        return f'<h3>{esc(rid)}</h3><p class="muted">{esc(ev)}</p>'
    truth, choice, full = ev.truth, ev.choice, ev.sweep
    fig = bare_figure((7.5, 4.6), margins=_SWEEP_MARGINS)
    conf = f"{ev.bands.confidence:.0%} " if ev.bands is not None else ""
    SweepDisplay(full, threshold=choice.threshold,
                 intervals=ev.bands.with_band() if ev.bands is not None else None,
                 name=plot_title(rid, f"metrics vs threshold ({conf}verdict-bootstrap bands)",
                                 truth=truth.name, correction=ev.correction),
                 ).plot(ax=fig.subplots())
    parts = [f"<h3>{esc(rid)}</h3>", _truth_counts(store, rid, truth, ev.counts),
             _people_line(store, rid, ev, n_boot=n_boot, random_state=random_state),
             png_img(fig, f"sweep of {rid}"), _sweep_rows(ev), choice_html(choice)]
    fig = bare_figure((5.5, 4.4), margins=_PR_MARGINS)
    # The curve of the run's own sweep (misses count in recall), with the
    # average precision of the same rows.
    y, s = judged_arrays(ev)
    ap = average_precision(y, s)
    PrecisionRecallDisplay.from_sweep(full, threshold=choice.threshold, ax=fig.subplots(),
                                      name=f"{rid} (AP = {ap:.3f})",
                                      title=plot_title(rid, "precision-recall",
                                                       truth=truth.name,
                                                       correction=ev.correction))
    parts.append(png_img(fig, f"precision-recall of {rid}"))
    if cal is None:
        # The report calibrates scores against labels only (a references calibration
        # would leave out the misses its sweep counts).
        parts.append(f"<h4>calibration</h4><p class=\"muted\">not drawn for {esc(truth.name)}: "
                     "a calibration judges scored lessons only, so it would leave out the "
                     "references no lesson matched, which the sweep counts (<code>truss-lab "
                     "calibrate RUN --truth references</code> draws it)</p>")
        return "".join(parts)
    names = list(cal.tables)
    fig = bare_figure((5.5 * len(names), 4.2), margins=_CAL_MARGINS)
    for ax, name in zip(fig.subplots(1, len(names), squeeze=False)[0], names, strict=True):
        CalibrationDisplay(cal.tables[name], name=f"{name} (held-out verdicts)",
                           title=plot_title(rid, f"calibration {name}, ECE "
                                            f"{cal.summary.loc[name, 'ece']:.3f}",
                                            truth=truth.name, correction=ev.correction)
                           ).plot(ax=ax)
    worse = cal.worsened()
    parts += [f"<h4>calibration, by {esc(truth.name)}</h4>", _warning(cal.small_sample),
              png_img(fig, f"calibration of {rid}"),
              f'<p class="note"><b>note</b>: {esc(worse)}</p>' if worse else "",
              table(cal.summary, index=True)]
    return "".join(parts)


def judged_arrays(ev: RunEvaluation) -> tuple[np.ndarray, np.ndarray]:
    """``(y, s)`` of the rows the sweep judges: candidates with a truth value (dropped
    useful ones too: NaN score, a miss), or the reference rows (matches and misses)."""
    jr = ev.judged
    if isinstance(jr, ReferenceTruth):
        y, s, _ = jr.arrays()
        return y, s
    c = jr.candidates
    on = c["judged"].to_numpy(dtype=bool)
    return c["y"].to_numpy()[on], c["s"].to_numpy()[on]


def _comparison_table(res: Any) -> str:
    """One row per metric: each run (by name), B - A and its interval; then the verdict
    outcomes."""
    r = res.table.iloc[0]
    a, b = res.names
    conf = f"{res.confidence:.0%} interval of B - A"
    # Two runs of one name (a run against itself) keep two columns.
    col_a, col_b = (f"{a} (A)", f"{b} (B)")
    rows = [{"metric": m.replace("_", " "), col_a: r[f"{m}_a"], col_b: r[f"{m}_b"],
             "B - A": r[f"delta_{m}"],
             conf: f"[{fmt(r[f'delta_{m}_low'])}, {fmt(r[f'delta_{m}_high'])}]"}
            for m in DELTA_METRICS]
    outcome = (f"<p>thresholds A {fmt(r['threshold_a'])}, B {fmt(r['threshold_b'])} · "
               f"{res.n_common} common verdicts · kept set right on {fmt(r['success_a'])} (A) "
               f"and {fmt(r['success_b'])} (B) · A only {fmt(r['a_only'])}, B only "
               f"{fmt(r['b_only'])}"
               + (" (on the verdicts people answered for in both runs, by their truth)"
                  if res.correction != "none" else "")
               + f" · McNemar p {fmt(float(r['mcnemar_p']), 'mcnemar_p')}"
               + (f" · correction {esc(res.correction)}" if res.correction != "none" else "")
               + "</p>")
    return _warning(res.small_sample) + table(pd.DataFrame(rows), extra={
        col_a: "run A at its threshold", col_b: "run B at its threshold",
        conf: "paired verdict-bootstrap interval (the same verdicts drawn for both runs): "
              "excluding 0, the difference is more than noise"}) + outcome


def _warning(line: str | None) -> str:
    """A result's small-sample warning as the report shows it (nothing without one)."""
    return f"<p class=\"warning\">{esc(line)}</p>" if line else ""


def _comparisons(store: Store, run_ids: Sequence[str], truth: Truth, *, n_boot: int,
                 random_state: int) -> dict[str, Any]:
    """Every run after the first compared with the first at the ADR default (the
    result, or the error that says why not), by run id."""
    out: dict[str, Any] = {}
    for other in run_ids[1:]:
        try:
            out[other] = compare_runs(store, run_ids[0], other, threshold=DEFAULT_MIN_SALIENCE,
                                      n_boot=n_boot, random_state=random_state, truth=truth)
        except BadInputError as exc:
            out[other] = exc
    return out


def _comparison_section(run_ids: Sequence[str], truth: Truth,
                        results: dict[str, Any]) -> str:
    parts = []
    for other, res in results.items():
        if isinstance(res, BadInputError):
            parts.append(f'<p class="muted">{esc(run_ids[0])} vs {esc(other)}: {esc(res)}</p>')
            continue
        fig = bare_figure((10, 5.5))
        d = ComparisonDisplay(res)
        d.truth = truth.name
        d.plot(ax=fig)
        parts += [f"<h3>{esc(run_ids[0])} (A) vs {esc(other)} (B) at the default "
                  f"{fmt(DEFAULT_MIN_SALIENCE)}, by {esc(truth.name)}</h3>",
                  png_img(fig, f"comparison with {other}"), _comparison_table(res)]
    return "".join(parts)


def _against_default(choice: ThresholdChoice) -> str:
    """Where the ADR default stands against the choice and its interval, in words."""
    d, t = DEFAULT_MIN_SALIENCE, choice.threshold
    if not math.isfinite(t):
        return "no threshold meets the objective"
    side = "below" if t < d else "above" if t > d else "at"
    if choice.threshold_interval is None:
        return f"{side} the ADR default {fmt(d)} (no interval: n_boot 0)"
    lo, hi = choice.threshold_interval
    inside = lo <= d <= hi
    return (f"{side} the ADR default {fmt(d)}, which lies "
            + ("inside the interval: the data do not tell the two apart" if inside else
               "outside the interval: the data favour the chosen threshold"))


def _verdict_of(res: Any) -> str:
    """The comparison's answer in one sentence: which run is better on F1, and whether
    the paired interval of the difference says more than noise."""
    r = res.table.iloc[0]
    a, b = res.names
    lo, hi, d = (float(r["delta_f1_low"]), float(r["delta_f1_high"]), float(r["delta_f1"]))
    if lo > 0:
        answer = f"{b} is better on F1"
    elif hi < 0:
        answer = f"{a} is better on F1"
    else:
        answer = "no clear difference in F1 (the interval holds 0)"
    p = float(r["mcnemar_p"])
    return (f"{b} vs {a} at {fmt(DEFAULT_MIN_SALIENCE)}: F1 {b} - {a} = {fmt(d)} "
            f"[{fmt(lo)}, {fmt(hi)}] ({res.confidence:.0%} paired interval): {answer}; "
            f"McNemar p {fmt(p, 'mcnemar_p')}")


def _summary(evals: dict[str, RunEvaluation | BadInputError],
             cals: dict[str, CalibrationReport | None], comparisons: dict[str, Any],
             truth: Truth, fixed: str) -> str:
    """What the report answers, before any table: per run the chosen threshold and its
    interval against the ADR default, the held-out precision, recall and F1 there and F1
    at the default; the truth and correction; each comparison's verdict; a calibration
    that makes a score worse."""
    items, rows = [], []
    for rid, ev in evals.items():
        if isinstance(ev, BadInputError):
            items.append(f"<li><b>{esc(rid)}</b>: not evaluated: {esc(ev)}</li>")
            continue
        ch = ev.choice
        iv = ("" if ch.threshold_interval is None else
              f" [{fmt(ch.threshold_interval[0])}, {fmt(ch.threshold_interval[1])}]")
        at_default = ev.at([DEFAULT_MIN_SALIENCE]).iloc[0]
        held = "out-of-fold" if ch.cv else "held-out"
        warn = f" <span class=\"bad\">{esc(ch.small_sample)}</span>" if ch.small_sample else ""
        items.append(
            f"<li><b>{esc(rid)}</b>: chosen threshold <b>{esc(fmt(ch.threshold))}</b>"
            f"{esc(iv)}, {esc(_against_default(ch))}. {esc(held.capitalize())} at "
            f"{esc(fmt(ch.threshold))}: precision {esc(fmt(ch.test.get('precision')))}, "
            f"recall {esc(fmt(ch.test.get('recall')))}, F1 <b>{esc(fmt(ch.test.get('f1')))}"
            f"</b>; at the default {esc(fmt(DEFAULT_MIN_SALIENCE))} (all verdicts): F1 "
            f"{esc(fmt(at_default['f1']))}.{warn}</li>")
        rows.append({"run": rid, "chosen threshold": ch.threshold,
                     "interval of the choice": iv.strip(),
                     "precision": ch.test.get("precision", np.nan),
                     "recall": ch.test.get("recall", np.nan), "f1": ch.test.get("f1", np.nan),
                     f"f1 at {fmt(DEFAULT_MIN_SALIENCE)}": at_default["f1"]})
    for res in comparisons.values():
        if not isinstance(res, BadInputError):
            items.append(f"<li>{esc(_verdict_of(res))}.</li>")
    for rid, cal in cals.items():
        if cal is not None and cal.worsened():
            items.append(f'<li class="note">{esc(rid)}: {esc(cal.worsened())}.</li>')
    head = (f"<p>Lessons judged by <b>{esc(truth.label)}</b> · correction "
            f"<b>{esc(fixed)}</b>. The ADR default threshold is "
            f"{esc(fmt(DEFAULT_MIN_SALIENCE))}.</p>")
    conf = next((f"{ev.choice.confidence:.0%} " for ev in evals.values()
                 if isinstance(ev, RunEvaluation) and ev.choice.confidence is not None), "")
    summary_table = table(pd.DataFrame(rows), extra={
        "run": "the run",
        "chosen threshold": "the objective's choice on the run's verdicts",
        "interval of the choice": f"{conf}verdict-bootstrap interval of that choice",
        f"f1 at {fmt(DEFAULT_MIN_SALIENCE)}": "F1 at the ADR default, on all verdicts",
        "precision": "held-out precision at the chosen threshold",
        "recall": "held-out recall at the chosen threshold",
        "f1": "held-out F1 at the chosen threshold"}) if rows else ""
    return head + f"<ul>{''.join(items)}</ul>" + summary_table


def _slices_section(store: Store, run_ids: Sequence[str], truth: Truth, *, by: str,
                    n_boot: int, random_state: int) -> str:
    """Each run's slices (:func:`~truss_lab.evaluate._slices.slice_run` at the default
    threshold): the :class:`SliceDisplay` and a row per slice, discoveries marked."""
    parts = [f"<p>Verdicts sliced by {esc(by)} at the default threshold "
             f"{fmt(DEFAULT_MIN_SALIENCE)}: each metric with its verdict-bootstrap interval, "
             "each slice of enough verdicts tested against the rest (verdict permutation, "
             "Benjamini-Hochberg q-values across the slices), and the threshold each "
             "slice would choose on its own (docs/how-to/slices.md).</p>"]
    for rid in run_ids:
        try:
            res = slice_run(store, rid, by=by, truth=truth, n_boot=n_boot,
                            random_state=random_state)
        except BadInputError as exc:
            parts.append(f'<h3>{esc(rid)}</h3><p class="muted">{esc(exc)}</p>')
            continue
        d = SliceDisplay(res)
        rows = d.rows()
        fig = bare_figure((11, 1.4 + 0.32 * len(rows)))
        d.plot(ax=fig)

        def iv(r: Any, m: str) -> str:
            if not np.isfinite(r[f"{m}_low"]):
                return fmt(r[m])
            return f"{fmt(r[m])} [{fmt(r[f'{m}_low'])}, {fmt(r[f'{m}_high'])}]"

        shown = pd.DataFrame([{
            "slice": ("* " if r["discovery"] else "") + str(r["slice"]),
            "verdicts": int(r["verdicts"]), "precision": iv(r, "precision"),
            "recall": iv(r, "recall"), "f1": iv(r, "f1"), "q": r["q_value"],
            "own threshold": iv(r, "own_threshold"),
            "not tested": "" if r["tested"] else r["why"]} for _, r in rows.iterrows()])
        parts += [f"<h3>{esc(rid)}</h3><p>{esc(res.header())}</p>",
                  png_img(fig, f"slices of {rid}"),
                  table(shown, mark=rows["discovery"].astype(bool).tolist(), extra={
                      "slice": "the verdicts whose payload has this value (* a discovery: "
                               "q < 0.05); the first row is every verdict",
                      "verdicts": "the slice's verdicts the run is judged on",
                      "q": "Benjamini-Hochberg q-value of the slice against the rest "
                           "(verdict permutation of the F1 difference)",
                      "own threshold": "the threshold the slice would choose on its own, "
                                       "with its verdict-bootstrap interval",
                      "not tested": "why a slice has no test (fewer than 30 verdicts)"})]
        if len(res.table) > len(rows):
            parts.append(f'<p class="muted">{len(res.table) - len(rows)} more slices: '
                         f"<code>truss-lab slices {esc(rid)} --by {esc(by)} --csv FILE</code> "
                         "lists every one</p>")
    return "".join(parts)


def _junk(store: Store, run_ids: Sequence[str]) -> tuple[str, pd.DataFrame | None]:
    cands = valid_candidates(store, run_ids)
    if not len(cands):
        return '<p class="muted">no valid candidate</p>', None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # verdicts missing from the journal: flagged False
        flags = junk_flags(cands, verdict_payloads(store))
    rates = junk_rates(flags, by=["run_id", "passed_gate"], candidates=cands)
    keyed = flags.assign(candidate_id=cands["candidate_id"].to_numpy())
    body = ("<p>Share of valid candidates each detector flags, for all of them and for "
            "those that passed the gate (no labels needed).</p>" + table(rates))
    return body, keyed


def _audit_section(store: Store) -> str:
    rep = audit(store)
    head = ('<p class="ok">all checks passed</p>' if rep.ok else
            f'<p class="bad">{len(rep.failed())} of {len(rep.checks)} checks failed</p>')
    return head + table(rep.to_frame())


def report_html(
    store: Store,
    run_ids: Sequence[str],
    *,
    objective: str = DEFAULT_OBJECTIVE,
    n_boot: int = DEFAULT_N_BOOT,
    random_state: int = 0,
    max_verdicts: int | None = 200,
    title: str | None = None,
    truth: str | Truth = "auto",
    cv: int | str | None = DEFAULT_CV,
    cv_repeats: int = 1,
    test_size: float | int = DEFAULT_TEST_SIZE,
    slices_by: str | None = "tag",
    **deprecated: Any,
) -> str:
    """The report as one HTML string (see :func:`write_report`).

    Many parameters because each is one of :func:`write_report`'s options, passed on by
    name: the choice's, the bootstrap's, the truth, the verdict list's and the slices'."""
    run_ids = list(dict.fromkeys(run_ids))
    if not run_ids:
        raise BadInputError("a report needs at least one run id", field="run_ids")
    for rid in run_ids:
        run_info(store, rid)  # an unknown run is an error naming the recent ones
    judged = Truth.resolve(store, truth_of(truth, deprecated, where="report_html"), run_ids)
    title = title or f"truss_lab report: {', '.join(run_ids)}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)  # degenerate sides show NaN
        # One evaluation per run (evaluate_run), the one the CLI's sweep, the demo and
        # choose_run_threshold give with these options.
        evals: dict[str, RunEvaluation | BadInputError] = {}
        for rid in run_ids:
            try:
                evals[rid] = evaluate_run(store, rid, objective=objective, n_boot=n_boot,
                                          random_state=random_state, truth=judged, cv=cv,
                                          cv_repeats=cv_repeats, test_size=test_size)
            except BadInputError as exc:
                evals[rid] = exc
        cals = {rid: _calibration(store, ev) for rid, ev in evals.items()
                if isinstance(ev, RunEvaluation)}
        comparisons = _comparisons(store, run_ids, judged, n_boot=n_boot,
                                   random_state=random_state)
    fixes = sorted({f"{rid}: {ev.correction}" for rid, ev in evals.items()
                    if isinstance(ev, RunEvaluation) and ev.correction != "none"})
    fixed = "; ".join(fixes) if fixes else "none"
    # The answer first (summary), then the evidence, then what was run and checked.
    sections = [("summary", "Summary", _summary(evals, cals, comparisons, judged, fixed))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        sections.append(("sweep", "Sweep, precision-recall and calibration",
                         "".join(_evaluation(store, ev, rid, cals.get(rid), n_boot=n_boot,
                                             random_state=random_state)
                                 for rid, ev in evals.items())))
    if len(run_ids) >= 2:
        sections.append(("comparison", "Comparison",
                         _comparison_section(run_ids, judged, comparisons)))
    sections.append(("runs", "Runs and their configuration", _runs_section(store, run_ids)))
    if slices_by:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            sections.append(("slices", f"Slices by {slices_by}", _slices_section(
                store, run_ids, judged, by=slices_by, n_boot=n_boot,
                random_state=random_state)))
    junk_body, flags = _junk(store, run_ids)
    sections.append(("junk", "Junk rates", junk_body))
    sections.append(("audit", "Audit (ADR 0011)", _audit_section(store)))
    sections.append(("verdicts", "Verdicts",
                     verdict_list(store, run_ids, flags=flags, max_verdicts=max_verdicts,
                                  truth=judged)))
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    nav = "".join(f'<a href="#{a}">{esc(t)}</a>' for a, t, _ in sections)
    db = (f"{store.snapshot.source} (a snapshot copied at {store.snapshot.taken_at:%H:%M:%S} "
          "UTC: another process was writing it)" if store.snapshot is not None else store.path)
    split = ("cross-validated choice (cv auto: 5 folds when the data allow)" if cv == "auto"
             else f"{cv}-fold cross-validated choice" if cv else
             f"one split, {test_size} held out")
    head = (f"<h1>{esc(title)}</h1><p id=\"truth\"><b>truth</b>: lessons judged by "
            f"{esc(judged.label)} · correction {esc(fixed)}</p>"
            f"<p class=\"muted\">database {esc(db)} · "
            f"truss_lab {esc(__version__)} · {esc(when)} · objective {esc(objective)}, "
            f"{esc(split)}, {n_boot} verdict-bootstrap replicates, seed {random_state}</p>"
            f"<nav>{nav}</nav>")
    return page(title, head + "".join(_section(a, t, b) for a, t, b in sections))


def write_report(
    store: Store,
    run_ids: Sequence[str] | str,
    path: str | os.PathLike[str],
    **options: Any,
) -> Path:
    """Write a self-contained HTML report about ``run_ids`` to ``path``.

    The report opens with a summary (each run's chosen threshold and its interval
    against the ADR default, the held-out precision, recall and F1 there, the truth and
    correction, each comparison's verdict, a calibration that makes a score worse),
    then the evidence: sweeps, precision-recall, calibration, the comparison, the runs'
    configuration, junk rates, the audit and a filterable verdict list. Every table has
    a legend of its columns.

    Parameters
    ----------
    store : Store
        The database.
    run_ids : str or sequence of str
        The runs; the first is A in every comparison.
    path : path
        The HTML file to write.
    **options
        See below.

    Returns
    -------
    pathlib.Path
        The path written.

    Raises
    ------
    BadInputError
        No run, an unknown run, an unknown truth, a path that is not a writable
        regular file.

    Notes
    -----
    Options (keyword): ``objective`` (the threshold choice, default ``"f1"``),
    ``n_boot`` (verdict-bootstrap replicates, default
    :data:`~truss_lab.evaluate._bootstrap.DEFAULT_N_BOOT`, every face's), ``random_state``,
    ``max_verdicts`` (verdicts in the list, default 200; None or 0 for all),
    ``title``, ``truth`` (what the sweep, calibration and comparison judge by: a
    :class:`~truss_lab.evaluate._truth.Truth` or a spec, ``"labels"``,
    ``"references"``, ``"judge:NAME"`` or ``"auto"``, the default: labels when every
    run has some, else references; the header says which; its correction corrects the
    sweeps by the people's answers) and the choice's ``cv``, ``cv_repeats`` and
    ``test_size`` (defaults those of
    :func:`~truss_lab.evaluate._runs.choose_run_threshold`: the run's numbers are
    those of :func:`~truss_lab.evaluate._runs.evaluate_run`, as in ``truss-lab sweep``),
    and ``slices_by`` (how the slices section cuts each run's verdicts, default
    ``"tag"``, as ``truss-lab slices --by``; None leaves the section out).
    The loose ``correct=`` is still taken, with a DeprecationWarning.
    A run without that truth gets its sections replaced by a note.

    ``path`` must be absent or a regular file in an existing folder (a folder, a
    symbolic link, a device or a pipe is refused before any work); the report is
    written whole or not at all, as every output (:mod:`truss_lab.core._files`).
    """
    ids = [run_ids] if isinstance(run_ids, str) else list(run_ids)
    out = check_output_file(path)
    text = report_html(store, ids, **options)
    return write_output(out, lambda tmp: tmp.write_text(text, encoding="utf-8"))
