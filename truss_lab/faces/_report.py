"""One self-contained HTML file about some runs: ``write_report(store, run_ids, path)``.

The file needs no server and no network: plots are inline base64 PNGs, style
and script are inline, and its Content-Security-Policy forbids any request.
Sections: the runs and their config; per run the sweep (verdict-bootstrap
bands, chosen and default thresholds), precision-recall with the operating
point, and calibration, judged by one truth named in the header (gold
labels, reference lessons or a judge's labels: one
:class:`~truss_lab.evaluate._truth.Truth`, resolved once and passed to every section); the
comparison of every run with the first; junk rates; the audit; and a
filterable verdict list (completion, lessons, saliences, gate outcome,
labels, reference lessons with the lesson each was matched to, junk flags,
errors). Every number comes from the library; every piece of text is escaped
(``html.escape``).

Size: the verdict list holds at most ``max_verdicts`` verdicts (up to half
with errors, the rest the first by seq; the report says how many it left out),
completions are cut at :data:`~truss_lab.faces._report_verdicts.COMPLETION_CHARS`
characters, and the page shows :data:`~truss_lab.faces._report_page.PAGE_SIZE`
verdicts at a time.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..core._errors import BadInputError, TrussLabError
from ..core._threshold import DEFAULT_MIN_SALIENCE
from ..evaluate._bootstrap import bootstrap_metrics
from ..evaluate._objective import DEFAULT_OBJECTIVE, parse_objective
from ..evaluate._runs import (
    calibration_run,
    choose_run_threshold,
    compare_runs,
    label_report,
    sweep_run,
)
from ..evaluate._sweep import UndefinedMetricWarning, average_precision
from ..evaluate._truth import ReferenceTruth, Truth, check_truth_spec
from ..govern._audit import audit
from ..journal._table import verdict_payloads
from ..score._junk import junk_flags, junk_rates
from ..score._matching import DEFAULT_MATCH_THRESHOLD
from ..store._runs import run_info, summarize_runs, valid_candidates
from ..store._store import Store
from ._display import (
    CalibrationDisplay,
    ComparisonDisplay,
    PrecisionRecallDisplay,
    SweepDisplay,
    bare_figure,
)
from ._report_page import esc, page, png_img, table
from ._report_verdicts import verdict_list

__all__ = ["report_html", "write_report"]

_SUMMARY_AT = (0.3, 0.5, 0.6, 0.7, 0.8, 0.9)


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
                       f"{table(pd.DataFrame([meta]))}<pre>{esc(cfg_text)}</pre></details>")
    return table(summary) + "".join(configs)


def _judged_rows(rid: str, truth: Truth) -> pd.DataFrame:
    """The rows :func:`sweep_run` judges (``y``, ``s``, ``verdict_hash``): candidates with
    a truth value (dropped useful ones too: NaN score, a miss), or the reference rows
    (matched lessons and misses). The run as the truth judged it for the sweep."""
    jr = truth.judged(rid)
    if isinstance(jr, ReferenceTruth):
        return jr.rows
    c = jr.candidates
    return c[c["judged"].to_numpy(dtype=bool)]


def _bands(d: pd.DataFrame, *, objective: str, n_boot: int, random_state: int) -> pd.DataFrame:
    """The sweep's verdict-bootstrap bands over the judged rows ``d`` (bootstrap_run
    takes no ``truth=`` yet, and leaves out the misses the sweep counts)."""
    return bootstrap_metrics(
        d["y"].to_numpy(), d["s"].to_numpy(), d["verdict_hash"].to_numpy(dtype=object),
        thresholds=np.round(np.linspace(0.0, 1.0, 101), 2), n_boot=n_boot,
        random_state=random_state, objective=parse_objective(objective)).table


def _truth_counts(store: Store, rid: str, truth: Truth, counts: dict[str, Any]) -> str:
    """What the run is judged on: label coverage and agreement, or the reference counts."""
    if truth.name == "labels":
        return label_report(store, rid)._repr_html_()
    what = ("reference lessons matched by the lexical matcher (threshold "
            f"{DEFAULT_MATCH_THRESHOLD})" if truth.name == "references"
            else f"the labels of {truth.name}")
    return (f"<p>Judged by {esc(what)}.</p>"
            + table(pd.DataFrame([dict(counts)])))


def _evaluation(store: Store, rid: str, truth: Truth, *, objective: str, n_boot: int,
                random_state: int) -> tuple[str, float | None]:
    """The sweep, PR and calibration of one run; its chosen threshold (None without truth)."""
    try:
        full = sweep_run(store, rid, truth=truth)
    except BadInputError as exc:
        return f'<h3>{esc(rid)}</h3><p class="muted">{esc(exc)}</p>', None
    choice = choose_run_threshold(store, rid, objective=objective, n_boot=n_boot,
                                  random_state=random_state, truth=truth)
    judged = _judged_rows(rid, truth)
    bands = _bands(judged, objective=objective, n_boot=n_boot, random_state=random_state)
    fig = bare_figure((7.5, 4.6))
    SweepDisplay(full, threshold=choice.threshold, intervals=bands,
                 name=f"{rid}: metrics vs threshold, by {truth.name} "
                      "(95% verdict-bootstrap bands)").plot(ax=fig.subplots())
    parts = [f"<h3>{esc(rid)}</h3>", _truth_counts(store, rid, truth, full.attrs["counts"]),
             png_img(fig, f"sweep of {rid}")]
    at = sweep_run(store, rid, thresholds=[*_SUMMARY_AT, round(choice.threshold, 6)]
                   if choice.threshold == choice.threshold else list(_SUMMARY_AT), truth=truth)
    parts.append(table(at.drop_duplicates("threshold")))
    parts.append(choice._repr_html_())
    fig = bare_figure((5.5, 4.4))
    # The curve of the run's own sweep (misses count in recall), with the
    # average precision of the same rows.
    ap = average_precision(judged["y"], judged["s"])
    PrecisionRecallDisplay.from_sweep(full, threshold=choice.threshold, ax=fig.subplots(),
                                      name=f"{rid} (AP = {ap:.3f})")
    parts.append(png_img(fig, f"precision-recall of {rid}"))
    if truth.kind == "references":
        # The report calibrates scores against labels only (a references calibration
        # would leave out the misses its sweep counts).
        parts.append(f"<h4>calibration</h4><p class=\"muted\">not judged by {esc(truth.name)}: "
                     "calibration_run fits gold labels only</p>")
        return "".join(parts), choice.threshold
    cal = calibration_run(store, rid, method="isotonic", random_state=random_state,
                          truth=truth)
    names = list(cal.tables)
    fig = bare_figure((5.5 * len(names), 4.2))
    for ax, name in zip(fig.subplots(1, len(names), squeeze=False)[0], names, strict=True):
        CalibrationDisplay(cal.tables[name], name=f"{name} (held-out verdicts)",
                           title=f"ECE {cal.summary.loc[name, 'ece']:.3f}").plot(ax=ax)
    parts += [f"<h4>calibration, by {esc(truth.name)}</h4>",
              png_img(fig, f"calibration of {rid}"), table(cal.summary, index=True)]
    return "".join(parts), choice.threshold


def _comparison_section(store: Store, run_ids: Sequence[str], truth: Truth, *,
                        n_boot: int, random_state: int) -> str:
    parts = []
    for other in run_ids[1:]:
        try:
            res = compare_runs(store, run_ids[0], other, threshold=DEFAULT_MIN_SALIENCE,
                               n_boot=n_boot, random_state=random_state, truth=truth)
        except BadInputError as exc:
            parts.append(f'<p class="muted">{esc(run_ids[0])} vs {esc(other)}: {esc(exc)}</p>')
            continue
        fig = bare_figure((10, 5.5))
        ComparisonDisplay(res).plot(ax=fig)
        parts += [f"<h3>{esc(run_ids[0])} (A) vs {esc(other)} (B) at the default "
                  f"{DEFAULT_MIN_SALIENCE:.2f}, by {esc(truth.name)}</h3>",
                  png_img(fig, f"comparison with {other}"),
                  table(res.table.T.reset_index().set_axis(["metric", "value"], axis=1))]
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
    n_boot: int = 200,
    random_state: int = 0,
    max_verdicts: int | None = 200,
    title: str | None = None,
    truth: str = "auto",
) -> str:
    """The report as one HTML string (see :func:`write_report`)."""
    run_ids = list(dict.fromkeys(run_ids))
    if not run_ids:
        raise BadInputError("a report needs at least one run id", field="run_ids")
    for rid in run_ids:
        run_info(store, rid)  # an unknown run is an error naming the recent ones
    judged = Truth.resolve(store, check_truth_spec(truth), run_ids)
    title = title or f"truss_lab report: {', '.join(run_ids)}"
    sections = [("runs", "Runs and their configuration", _runs_section(store, run_ids))]
    evals = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)  # degenerate sides show NaN
        for rid in run_ids:
            body, _ = _evaluation(store, rid, judged, objective=objective, n_boot=n_boot,
                                  random_state=random_state)
            evals.append(body)
        sections.append(("sweep", "Sweep, precision-recall and calibration", "".join(evals)))
        if len(run_ids) >= 2:
            sections.append(("comparison", "Comparison", _comparison_section(
                store, run_ids, judged, n_boot=n_boot, random_state=random_state)))
    junk_body, flags = _junk(store, run_ids)
    sections.append(("junk", "Junk rates", junk_body))
    sections.append(("audit", "Audit (ADR 0011)", _audit_section(store)))
    sections.append(("verdicts", "Verdicts",
                     verdict_list(store, run_ids, flags=flags, max_verdicts=max_verdicts,
                                  truth=judged)))
    from .. import __version__

    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    nav = "".join(f'<a href="#{a}">{esc(t)}</a>' for a, t, _ in sections)
    db = (f"{store.snapshot.source} (a snapshot copied at {store.snapshot.taken_at:%H:%M:%S} "
          "UTC: another process was writing it)" if store.snapshot is not None else store.path)
    head = (f"<h1>{esc(title)}</h1><p id=\"truth\"><b>truth</b>: lessons judged by "
            f"{esc(judged.label)}</p><p class=\"muted\">database {esc(db)} · "
            f"truss_lab {esc(__version__)} · {esc(when)} · objective {esc(objective)}, "
            f"{n_boot} verdict-bootstrap replicates, seed {random_state}</p><nav>{nav}</nav>")
    return page(title, head + "".join(_section(a, t, b) for a, t, b in sections))


def write_report(
    store: Store,
    run_ids: Sequence[str] | str,
    path: str | os.PathLike[str],
    **options: Any,
) -> Path:
    """Write a self-contained HTML report about ``run_ids`` to ``path``; returns the path.

    Options (keyword): ``objective`` (the threshold choice, default ``"f1"``),
    ``n_boot`` (verdict-bootstrap replicates, default 200), ``random_state``,
    ``max_verdicts`` (verdicts in the list, default 200; None or 0 for all),
    ``title`` and ``truth`` (what the sweep, calibration and comparison judge by:
    ``"labels"``, ``"references"``, ``"judge:NAME"`` or ``"auto"``, the default:
    labels when every run has some, else references; the header says which).
    A run without that truth gets its sections replaced by a note.
    """
    ids = [run_ids] if isinstance(run_ids, str) else list(run_ids)
    text = report_html(store, ids, **options)
    out = Path(path)
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise TrussLabError(f"cannot write the report to {out}: {exc.strerror}") from exc
    return out
