"""The commands that list runs: ``runs`` (list, delete) and ``errors``.

They import only the store (no pandas, no evaluation stack), so they start at once
(issue 29). No logic lives here: everything is a call to the store's run functions
(:mod:`truss_lab.store._run_list`, plain rows: no pyarrow either).
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any

import click

from .._text import runs_text
from .common import (
    db_option,
    emit,
    friendly,
    json_option,
    option,
    read_store,
    run_argument,
)

__all__ = ["errors", "runs"]


@click.group(invoke_without_command=True)
@db_option
@json_option
@click.pass_context
@friendly
def runs(ctx: click.Context, db: str, as_json: bool) -> None:
    """List extraction runs with their names, tags and counts (`runs delete RUN`
    deletes one)."""
    if ctx.invoked_subcommand is not None:
        return
    from ...store._run_list import list_runs

    with read_store(db) as store:
        rows = list_runs(store)
    if as_json:
        emit([{k: _json_value(v) for k, v in r.items()} for r in rows], True, "")
    elif not rows:
        click.echo("no runs")
    else:
        click.echo(runs_text(rows, ["run_id", "name", "tags", "extractor_id",
                                    "prompt_version", "policy", "status", "n_verdicts",
                                    "n_candidates", "n_lessons", "n_errors", "seconds",
                                    "signed_by"]))


def _json_value(value: Any) -> Any:
    """A (UTC) timestamp as ISO 8601 to the millisecond, as ``runs --json`` always wrote it."""
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    return value


@runs.command("delete")
@run_argument
@db_option
@json_option
@friendly
def runs_delete(run_id: str, db: str, as_json: bool) -> None:
    """Delete a run that wrote no memory (its candidates, errors and progress rows);
    a run that wrote governed records is refused, saying which."""
    from ...store._run_list import delete_run
    from ...store._store import open_store

    with open_store(db, must_exist=True) as store:
        gone = delete_run(store, run_id)
    text = f"deleted run {run_id}: " + ", ".join(f"{n} {t}" for t, n in gone.items())
    emit({"run_id": run_id, "deleted": gone}, as_json, text)

@click.command()
@run_argument
@db_option
@option("--n-errors", "limit", default=50, show_default=True, type=click.IntRange(0),
        old=("--limit",), help="Show at most this many errors in the text output (0: all).")
@json_option
@friendly
def errors(run_id: str, db: str, limit: int, as_json: bool) -> None:
    """List a run's per-verdict errors (provider, parse, prompt), by verdict."""
    from ...store._run_list import list_run_errors

    with read_store(db) as store:
        rows = list_run_errors(store, run_id)
    if as_json:
        emit(rows, True, "")
        return
    if not rows:
        click.echo(f"run {run_id}: no errors")
        return
    counts = Counter((r["stage"], r["reason"]) for r in rows)
    # most first; ties by (stage, reason), as the table's grouping listed them
    ranked = sorted(sorted(counts.items()), key=lambda kv: kv[1], reverse=True)
    lines = [f"run {run_id}: {len(rows)} errors ("
             + ", ".join(f"{n} {st}/{rs}" for (st, rs), n in ranked) + ")"]
    shown = rows if not limit else rows[:limit]
    for r in shown:
        msg = " ".join(str(r["message"] or "").split())
        lines.append(f"  seq {r['verdict_seq']} {r['stage']}/{r['reason']}: "
                     f"{msg[:117] + '...' if len(msg) > 120 else msg}")
    if len(shown) < len(rows):
        lines.append(f"  ... and {len(rows) - len(shown)} more (--n-errors 0 or --json)")
    click.echo("\n".join(lines))
