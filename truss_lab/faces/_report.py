"""One self-contained HTML file about some runs: ``write_report(store, run_ids, path)``.

The file needs no server and no network: plots are inline base64 PNGs, style
and script are inline, and its Content-Security-Policy forbids any request.
Sections: the runs and their config; per run the sweep (verdict-bootstrap
bands, chosen and default thresholds), precision-recall with the operating
point, and calibration; the comparison of every run with the first; junk
rates; the audit; and a filterable verdict list (completion, lessons,
saliences, gate outcome, labels, junk flags, errors). Every number comes
from the library; every piece of text is escaped (``html.escape``).

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

import pandas as pd

from ..core._errors import BadInputError, TrussLabError
from ..evaluate._objective import DEFAULT_OBJECTIVE
from ..evaluate._runs import (
    bootstrap_run,
    calibration_run,
    choose_run_threshold,
    compare_runs,
    label_report,
    sweep_run,
)
from ..evaluate._sweep import UndefinedMetricWarning
from ..evaluate._truth import scored_candidates
from ..govern._audit import audit
from ..journal._table import verdict_payloads
from ..score._junk import junk_flags, junk_rates
from ..store._runs import run_info, summarize_runs
from ..store._store import Store
from ._display import (
    CalibrationDisplay,
    ComparisonDisplay,
    PrecisionRecallDisplay,
    SweepDisplay,
)
from ._plotting import DEFAULT_THRESHOLD, _figure
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


def _evaluation(store: Store, rid: str, *, objective: str, n_boot: int,
                random_state: int) -> tuple[str, float | None]:
    """The sweep, PR and calibration of one run; its chosen threshold (None without labels)."""
    try:
        full = sweep_run(store, rid)
    except BadInputError as exc:
        return f'<p class="muted">{esc(exc)}</p>', None
    choice = choose_run_threshold(store, rid, objective=objective, n_boot=n_boot,
                                  random_state=random_state)
    bands = bootstrap_run(store, rid, n_boot=n_boot, random_state=random_state,
                          objective=objective).table
    fig = _figure((7.5, 4.6))
    SweepDisplay(full, threshold=choice.threshold, intervals=bands,
                 name=f"{rid}: metrics vs threshold (95% verdict-bootstrap bands)").plot(
        ax=fig.subplots())
    parts = [f"<h3>{esc(rid)}</h3>", label_report(store, rid)._repr_html_(),
             png_img(fig, f"sweep of {rid}")]
    at = sweep_run(store, rid, thresholds=[*_SUMMARY_AT, round(choice.threshold, 6)]
                   if choice.threshold == choice.threshold else list(_SUMMARY_AT))
    parts.append(table(at.drop_duplicates("threshold")))
    parts.append(choice._repr_html_())
    d = scored_candidates(store, rid)
    fig = _figure((5.5, 4.4))
    PrecisionRecallDisplay.from_predictions(d["y"], d["s"], threshold=choice.threshold,
                                            name=rid, ax=fig.subplots())
    parts.append(png_img(fig, f"precision-recall of {rid}"))
    cal = calibration_run(store, rid, method="isotonic", random_state=random_state)
    names = list(cal.tables)
    fig = _figure((5.5 * len(names), 4.2))
    for ax, name in zip(fig.subplots(1, len(names), squeeze=False)[0], names, strict=True):
        CalibrationDisplay(cal.tables[name], name=f"{name} (held-out verdicts)",
                           title=f"ECE {cal.summary.loc[name, 'ece']:.3f}").plot(ax=ax)
    parts += ["<h4>calibration</h4>", png_img(fig, f"calibration of {rid}"),
              table(cal.summary, index=True)]
    return "".join(parts), choice.threshold


def _comparison_section(store: Store, run_ids: Sequence[str], *, n_boot: int,
                        random_state: int) -> str:
    parts = []
    for other in run_ids[1:]:
        try:
            res = compare_runs(store, run_ids[0], other, threshold=DEFAULT_THRESHOLD,
                               n_boot=n_boot, random_state=random_state)
        except BadInputError as exc:
            parts.append(f'<p class="muted">{esc(run_ids[0])} vs {esc(other)}: {esc(exc)}</p>')
            continue
        fig = _figure((10, 5.5))
        ComparisonDisplay(res).plot(ax=fig)
        parts += [f"<h3>{esc(run_ids[0])} (A) vs {esc(other)} (B) at the default "
                  f"{DEFAULT_THRESHOLD:.2f}</h3>", png_img(fig, f"comparison with {other}"),
                  table(res.table.T.reset_index().set_axis(["metric", "value"], axis=1))]
    return "".join(parts)


def _junk(store: Store, run_ids: Sequence[str]) -> tuple[str, pd.DataFrame | None]:
    cands = store.sql("SELECT * FROM candidates WHERE run_id IN (SELECT unnest(?)) AND valid",
                      [list(run_ids)]).df()
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
) -> str:
    """The report as one HTML string (see :func:`write_report`)."""
    run_ids = list(dict.fromkeys(run_ids))
    if not run_ids:
        raise BadInputError("a report needs at least one run id", field="run_ids")
    for rid in run_ids:
        run_info(store, rid)  # an unknown run is an error naming the recent ones
    title = title or f"truss_lab report: {', '.join(run_ids)}"
    sections = [("runs", "Runs and their configuration", _runs_section(store, run_ids))]
    evals = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)  # degenerate sides show NaN
        for rid in run_ids:
            body, _ = _evaluation(store, rid, objective=objective, n_boot=n_boot,
                                  random_state=random_state)
            evals.append(body)
        sections.append(("sweep", "Sweep, precision-recall and calibration", "".join(evals)))
        if len(run_ids) >= 2:
            sections.append(("comparison", "Comparison", _comparison_section(
                store, run_ids, n_boot=n_boot, random_state=random_state)))
    junk_body, flags = _junk(store, run_ids)
    sections.append(("junk", "Junk rates", junk_body))
    sections.append(("audit", "Audit (ADR 0011)", _audit_section(store)))
    sections.append(("verdicts", "Verdicts",
                     verdict_list(store, run_ids, flags=flags, max_verdicts=max_verdicts)))
    from .. import __version__

    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    nav = "".join(f'<a href="#{a}">{esc(t)}</a>' for a, t, _ in sections)
    head = (f"<h1>{esc(title)}</h1><p class=\"muted\">database {esc(store.path)} · "
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
    ``max_verdicts`` (verdicts in the list, default 200; None or 0 for all) and
    ``title``. Runs without gold labels get their sections replaced by a note.
    """
    ids = [run_ids] if isinstance(run_ids, str) else list(run_ids)
    text = report_html(store, ids, **options)
    out = Path(path)
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise TrussLabError(f"cannot write the report to {out}: {exc.strerror}") from exc
    return out
