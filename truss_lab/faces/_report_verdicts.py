"""The report's verdict list: each verdict with its reference lessons (every
annotator's) and, per run, its completion, lessons, saliences, gate outcome,
labels, the reference each lesson was matched to, junk flags and errors.

The matching is the evaluation's own (a references
:class:`~truss_lab.evaluate._truth.Truth`: the lexical matcher's greedy one-to-one
assignment by score; the report's own when it judges by references, so each run
is matched once), so the list shows the pairs the reference sweep counted. Store
reads only (the store's functions and the evaluation's readers); the HTML is
escaped value by value with :func:`~truss_lab.faces._report_page.esc`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pandas as pd

from ..core._errors import BadInputError
from ..evaluate._truth import ReferenceTruth, Truth, labelled_candidates
from ..store._ingested import completion_texts
from ..store._runs import processed_verdicts, run_info, verdict_errors_of
from ..store._store import Store
from ._report_page import esc, fmt

__all__ = ["COMPLETION_CHARS", "select_verdicts", "verdict_list"]

#: A completion longer than this is cut in the report (the lessons are listed in full).
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


def _run_rows(store: Store, run_id: str, hashes: list[str], flags: pd.DataFrame | None
              ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """One run's candidates (with labels and junk), completions and errors for ``hashes``."""
    cands = labelled_candidates(store, run_id, valid_only=False)
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
    """``(references, matches)``: the reference lessons of ``hashes`` (FORMATS.md §4
    rows, every annotator's) and, per run with an annotated verdict, its valid
    lessons on annotated verdicts among ``hashes`` with ``candidate_id,
    verdict_hash, lesson_index, reference_id`` (the reference the lesson claimed,
    ``<NA>`` if none), ``similarity`` and ``y`` (1 when matched). ``truth``: the
    report's truth, reused when it is the store's references (else they are read)."""
    t = (truth if truth is not None and truth.kind == "references"
         else Truth.resolve(store, "references", run_ids))
    assert t.references is not None  # a references truth holds its rows
    refs = t.references
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


def _references_table(refs: pd.DataFrame, matches: dict[str, pd.DataFrame]) -> str:
    """One verdict's reference lessons, each with the lesson of every run that claimed it."""
    if refs.empty:
        return ""
    rows = []
    for r in refs.sort_values(["reference_id", "annotator"], kind="stable").itertuples(
            index=False):
        rid = str(r.reference_id)
        if rid == "none":
            text, ev, by = "(this verdict teaches nothing, says this annotator)", "", ""
        else:
            text = str(r.text)
            ev = ", ".join(map(str, r.evidence)) if r.evidence is not None else ""
            claims = []
            for run, m in matches.items():
                hit = m[(m["y"] == 1) & (m["reference_id"].astype("string") == rid)]
                claims.append(f"{run}: " + ("; ".join(
                    f"lesson #{int(h.lesson_index)} ({h.similarity:.2f})"
                    for h in hit.itertuples(index=False)) or "missed"))
            by = " · ".join(claims)
        rows.append(f"<tr><td>{esc(rid)}</td><td>{esc(r.annotator or '')}</td>"
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


def _lessons_table(c: pd.DataFrame, matched: pd.DataFrame | None) -> str:
    """The lessons of one verdict in one run; ``matched``: that run's matcher rows
    of the verdict (None when the verdict has no reference lessons)."""
    if not len(c):
        return '<p class="muted">no candidate lesson</p>'
    by_id = ({} if matched is None else
             {m.candidate_id: m for m in matched.itertuples(index=False)})
    rows = []
    for r in c.itertuples(index=False):
        gate = "written" if r.passed_gate else ("dropped: " + str(r.drop_reason)
                                                if not r.valid else "below threshold")
        junk = [k for k in ("duplicate_in_verdict", "duplicate_in_run", "ungrounded",
                            "no_evidence", "restates_summary") if bool(getattr(r, k, False))]
        evidence = ", ".join(map(str, r.evidence)) if r.evidence is not None else ""
        rows.append(
            f"<tr><td>{esc(r.lesson_index)}</td><td class=\"lesson-text\">{esc(r.text or '')}"
            f"</td><td>{esc(fmt(r.salience))}</td><td>{esc(fmt(r.score))}</td>"
            f"<td>{esc(gate)}</td><td>{esc(_label(r))}</td>"
            f"<td>{esc(_match_text(by_id.get(r.candidate_id)))}</td>"
            f"<td>{esc(', '.join(junk))}</td><td>{esc(evidence)}</td></tr>")
    return ("<table class=\"lessons\"><thead><tr><th>#</th><th>lesson</th><th>salience</th>"
            "<th>score</th><th>gate</th><th>label</th><th>reference matched</th><th>junk</th>"
            f"<th>evidence</th></tr></thead><tbody>{''.join(rows)}</tbody></table>")


def _verdict_html(v: Any, per_run: dict[str, tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]],
                  refs: pd.DataFrame, matches: dict[str, pd.DataFrame]) -> str:
    try:
        payload = json.loads(v.payload) if isinstance(v.payload, str) else {}
    except ValueError:
        payload = {}
    outcome = str(payload.get("verdict", "unknown"))
    n_lessons = n_written = 0
    runs_html = []
    v_refs = refs[refs["verdict_hash"].astype(str) == v.verdict_hash]
    v_matches = {rid: m[m["verdict_hash"] == v.verdict_hash] for rid, m in matches.items()}
    for rid, (cands, comps, errs) in per_run.items():
        c = cands[cands["verdict_hash"] == v.verdict_hash]
        e = errs[errs["verdict_hash"] == v.verdict_hash]
        comp = comps[comps["verdict_hash"] == v.verdict_hash]
        n_lessons += len(c)
        n_written += int(c["passed_gate"].sum())
        part = [f"<h4>run <code>{esc(rid)}</code></h4>",
                _lessons_table(c, v_matches.get(rid) if len(v_refs) else None)]
        if len(comp):
            text = str(comp["text"].iloc[0])
            cut = (f" (first {COMPLETION_CHARS} of {len(text)} characters)"
                   if len(text) > COMPLETION_CHARS else "")
            part.append(f"<details><summary>completion{esc(cut)}</summary>"
                        f"<pre>{esc(text[:COMPLETION_CHARS])}</pre></details>")
        for r in e.itertuples(index=False):
            part.append(f"<p class=\"bad\">error ({esc(r.stage)}): {esc(r.reason)}: "
                        f"{esc(r.message or '')}</p>")
        runs_html.append("".join(part))
    checks = payload.get("checks") or []
    check_rows = "".join(
        f"<tr><td>{esc(ch.get('name', ''))}</td><td>{esc(fmt(ch.get('passed')))}</td>"
        f"<td>{esc(ch.get('evidence', ''))}</td></tr>" for ch in checks if isinstance(ch, dict))
    badge = "pass" if outcome == "pass" else "fail" if outcome == "fail" else ""
    errs_badge = (f' <span class="badge err">{int(v.n_errors)} error(s)</span>'
                  if v.n_errors else "")
    n_refs = int((v_refs["reference_id"].astype(str) != "none").sum()) if len(v_refs) else 0
    refs_badge = (f' <span class="badge ref">{n_refs} reference(s), '
                  f'{v_refs["annotator"].nunique()} annotator(s)</span>' if len(v_refs) else "")
    goal = str(payload.get("goal", ""))
    return (
        f'<details class="verdict" data-outcome="{esc(outcome)}" '
        f'data-errors="{int(v.n_errors)}" data-seq="{int(v.verdict_seq)}" '
        f'data-refs="{len(v_refs)}" data-hash="{esc(v.verdict_hash)}">'
        f"<summary><code>seq {int(v.verdict_seq)}</code> "
        f'<span class="badge {badge}">{esc(outcome)}</span> '
        f"<b>{esc(payload.get('contract_id', ''))}</b> {esc(goal[:90])} · "
        f"{n_lessons} lesson(s), {n_written} written{refs_badge}{errs_badge}</summary>"
        f"<p><b>summary</b>: {esc(payload.get('summary', ''))}</p>"
        f"<p class=\"muted\">run {esc(payload.get('run_id', ''))} · tags "
        f"{esc(', '.join(map(str, payload.get('tags') or [])))} · verdict hash "
        f"<code>{esc(v.verdict_hash)}</code></p>"
        + (f"<table><thead><tr><th>check</th><th>passed</th><th>evidence</th></tr></thead>"
           f"<tbody>{check_rows}</tbody></table>" if check_rows else "")
        + _references_table(v_refs, v_matches) + "".join(runs_html) + "</details>"
    )


def verdict_list(store: Store, run_ids: Sequence[str], *, flags: pd.DataFrame | None,
                 max_verdicts: int | None, truth: Truth | None = None) -> str:
    """The filterable verdict list (filters, pager, one ``<details>`` per verdict).

    ``flags`` holds :func:`~truss_lab.score._junk.junk_flags` columns keyed by
    ``candidate_id`` (or None); ``truth`` is the report's (see
    :func:`reference_matches`)."""
    verdicts, n_total = select_verdicts(store, run_ids, max_verdicts)
    hashes = [str(h) for h in verdicts["verdict_hash"]]
    per_run = {rid: _run_rows(store, rid, hashes, flags) for rid in run_ids}
    refs, matches = reference_matches(store, run_ids, hashes, truth)
    outcomes = sorted({str(json.loads(p).get("verdict", "unknown")) if isinstance(p, str)
                       else "unknown" for p in verdicts["payload"]})
    options = "".join(f'<option value="{esc(o)}">{esc(o)}</option>' for o in outcomes)
    limit = ("" if len(verdicts) == n_total else
             f"<p class=\"muted\">Showing {len(verdicts)} of {n_total} verdicts: up to half "
             "of them with errors, the rest the first in journal order (raise the limit "
             "with --max-verdicts, 0 for all).</p>")
    items = "".join(_verdict_html(v, per_run, refs, matches)
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
