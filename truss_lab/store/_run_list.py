"""Reading and deleting ``extraction_runs`` rows as plain Python values.

Its own module, apart from :mod:`truss_lab.store._runs` (which writes runs with Arrow
tables), so that the light commands ``truss-lab runs`` and ``errors`` start without
pyarrow, numpy or pandas (issue 29). The SQL lives here once; ``_runs`` builds its
DataFrames on the same statements.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core._confusables import lookalike_note
from ..core._errors import BadInputError
from ._claims import drop_run_claims
from ._store import Store

__all__ = [
    "RUN_ERRORS_SQL",
    "delete_run",
    "get_run",
    "list_run_errors",
    "list_runs",
    "missing_run_error",
    "run_exists",
    "run_info",
    "runs_query",
]

RUN_ERRORS_SQL = (
    "SELECT verdict_seq, verdict_hash, stage, reason, message FROM verdict_errors "
    "WHERE run_id = ? ORDER BY verdict_seq, stage, reason")
"""A run's per-verdict errors (verdict_seq, verdict_hash, stage, reason, message)."""


def _rows(store: Store, query: str, params: Sequence[Any]) -> list[dict[str, Any]]:
    cur = store.con.execute(query, list(params))
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def get_run(store: Store, run_id: str) -> dict[str, Any] | None:
    """The extraction_runs row of ``run_id`` as a dict, or ``None``."""
    cur = store.con.execute("SELECT * FROM extraction_runs WHERE run_id = ?", [run_id])
    names = [d[0] for d in cur.description]
    rows = cur.fetchall()
    return dict(zip(names, rows[0], strict=True)) if rows else None


def missing_run_error(store: Store, run_id: str) -> BadInputError:
    """The error for an unknown run id; it names the ten most recent runs."""
    every = [r[0] for r in store.con.execute(
        "SELECT run_id FROM extraction_runs ORDER BY started_at DESC").fetchall()]
    known = every[:10]
    # An id that reads as a stored one and is not it (Cyrillic 'о', U+2010 for '-')
    # says so: the list below would show the "same" id and leave the user puzzled.
    return BadInputError(
        f"no extraction run {run_id!r}{lookalike_note(run_id, every, 'run id')}; "
        f"recent runs: {', '.join(known) or '(none)'}",
        field="run_id",
    )


def run_exists(store: Store, run_id: str) -> bool:
    """Whether ``extraction_runs`` has a row for ``run_id``."""
    return get_run(store, run_id) is not None


def run_info(store: Store, run_id: str) -> dict[str, Any]:
    """The extraction_runs row of ``run_id`` as a dict, or :func:`missing_run_error`."""
    row = get_run(store, run_id)
    if row is None:
        raise missing_run_error(store, run_id)
    return row


def delete_run(store: Store, run_id: str) -> dict[str, int]:
    """Delete run ``run_id`` and the rows only it owns (candidates, verdict_errors,
    run_verdicts, run_chunks, its extraction_runs row); return rows deleted per table.

    Governed records are never deleted: a run that wrote memory entries, events or
    policy records is refused with :class:`BadInputError` saying how many (a dry run,
    an ``off`` run or one whose lessons were all already in memory can go).
    Recorded completions stay: what a run paid for is never deleted (they keep its
    ``run_id`` and still replay by extractor id).
    """
    run_info(store, run_id)
    governed = {
        t: int(store.con.execute(f"SELECT count(*) FROM {t} WHERE run_id = ?",
                                 [run_id]).fetchall()[0][0])
        for t in ("memory_entries", "events", "policy_records")
    }
    if any(governed.values()):
        what = ", ".join(f"{n} {t}" for t, n in governed.items() if n)
        raise BadInputError(
            f"run {run_id!r} wrote governed records ({what}); governed memory is "
            "append-only, so the run stays (a dry run, --dry-run, writes none)",
            field="run_id")
    out: dict[str, int] = {}
    with store.transaction():
        for t in ("candidates", "verdict_errors", "run_verdicts", "run_chunks",
                  "extraction_runs"):
            out[t] = int(store.con.execute(f"DELETE FROM {t} WHERE run_id = ?",
                                           [run_id]).fetchall()[0][0])
        drop_run_claims(store.con, run_id)
    return out


def runs_query(run_ids: Sequence[str] | None) -> tuple[str, list[Any]]:
    """The SQL (and parameters) of one row per run, every run when ``run_ids`` is None:
    what :func:`~truss_lab.store._runs.summarize_runs` and :func:`list_runs` read."""
    where, params = "", []
    if run_ids is not None:
        where, params = "WHERE r.run_id IN (SELECT unnest(?))", [list(run_ids)]
    return (
        "SELECT r.run_id, r.extractor_id, r.prompt_version, r.prompt_hash, r.policy, "
        "r.extraction_min_salience, "
        "r.write_memory, r.status, r.name, coalesce(r.tags, []) AS tags, "
        "coalesce(r.n_verdicts, 0) AS n_verdicts, "
        "coalesce(r.n_candidates, 0) AS n_candidates, coalesce(r.n_lessons, 0) AS n_lessons, "
        "coalesce((SELECT sum(c.n_lessons_new) FROM run_chunks c WHERE c.run_id = r.run_id), "
        "0)::BIGINT AS n_lessons_new, "
        "coalesce(r.n_errors, 0) AS n_errors, coalesce(r.provider_calls, 0) AS provider_calls, "
        "coalesce(r.seconds, 0.0) AS seconds, "
        "CASE WHEN r.seconds > 0 THEN coalesce(r.n_verdicts, 0) / r.seconds "
        "ELSE NULL END::DOUBLE AS verdicts_per_s, r.started_at, r.error, "
        # Whose verdicts the run was made on: a researcher's own key is not an operator's.
        "(SELECT string_agg(DISTINCT j.key_id, ', ' ORDER BY j.key_id) FROM run_verdicts v "
        "JOIN journal j ON j.seq = v.verdict_seq WHERE v.run_id = r.run_id) AS signed_by "
        f"FROM extraction_runs r {where} ORDER BY r.started_at, r.run_id",
        params,
    )


def list_runs(store: Store, run_ids: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """:func:`~truss_lab.store._runs.summarize_runs`' rows as dicts (None where it has
    NaN), with ``started_at`` a UTC datetime without a zone: what ``truss-lab runs``
    lists without loading pandas or pyarrow."""
    query, params = runs_query(run_ids)
    return _rows(store, "SELECT * REPLACE (timezone('UTC', started_at) AS started_at) "
                 f"FROM ({query}) ORDER BY started_at, run_id", params)


def list_run_errors(store: Store, run_id: str) -> list[dict[str, Any]]:
    """The per-verdict errors of ``run_id`` as dicts (:data:`RUN_ERRORS_SQL`), by
    verdict; an unknown run is an error."""
    run_info(store, run_id)
    return _rows(store, RUN_ERRORS_SQL, [run_id])
