"""The tables loaded from the interchange files (completions, labels, reference lessons):
the questions the ingest asks the store before and after a load, so that the SQL on
those tables is here. The writes are :meth:`Store.append` with the Arrow schemas of
:mod:`truss_lab.store._tables`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
import pyarrow as pa

from ._store import Store, quote_ident

__all__ = ["CONFLICTS_NAMED", "label_problems", "match_label_lessons", "reference_problems",
           "stored_conflicts", "verdict_reference_ids"]


#: Most conflicting keys :func:`stored_conflicts` names (the rest are counted).
CONFLICTS_NAMED = 1000


def stored_conflicts(store: Store, table: str, new: pa.Table, key: Sequence[str],
                     value: Sequence[str]) -> tuple[int, list[tuple[Any, ...]]]:
    """The rows of ``new`` that ``table`` holds already with a different ``value`` column
    (the rows an append keeps as stored): how many, and the ``key`` values of the first
    :data:`CONFLICTS_NAMED`."""
    store.con.register("_incoming", new)
    try:
        q = quote_ident
        on = " AND ".join(f"t.{q(k)} = n.{q(k)}" for k in key)
        differ = " OR ".join(f"t.{q(v)} IS DISTINCT FROM n.{q(v)}" for v in value)
        cols = ", ".join(f"n.{q(k)}" for k in key)
        rows = store.con.execute(
            f"SELECT {cols}, count(*) OVER () FROM _incoming n JOIN {q(table)} t ON {on} "
            f"WHERE {differ} LIMIT ?", [CONFLICTS_NAMED]
        ).fetchall()
    finally:
        store.con.unregister("_incoming")
    return (int(rows[0][-1]) if rows else 0), [r[:-1] for r in rows]


def label_problems(store: Store, incoming: pd.DataFrame | None = None) -> pd.DataFrame:
    """Labels that point at nothing known: a verdict the journal does not hold, or
    a ``lesson_index`` beyond the lessons of the recorded completion (or of the
    candidates, when no completion is recorded) of that verdict and extractor.

    The stored labels, or the ``incoming`` label rows (table columns: ``verdict_hash``,
    ``extractor_id``, ``lesson_index``) when given. Columns ``verdict_hash``,
    ``extractor_id``, ``lesson_index``, ``problem``; the ingest reports them and the
    audit flags them (one definition for both).
    """
    if incoming is None:
        return _label_problems(store, "labels")
    store.con.register("_incoming_labels", incoming)
    try:
        return _label_problems(store, "_incoming_labels")
    finally:
        store.con.unregister("_incoming_labels")


def reference_problems(store: Store, verdict_hashes: Sequence[str]) -> pd.DataFrame:
    """The verdicts, among the ``verdict_hashes`` of incoming reference lessons (one per
    reference), that the journal does not hold: columns ``verdict_hash``,
    ``n_references`` and ``problem``. A reference to such a verdict lands (it may be
    imported before its verdict) but no run can be judged on it yet; the ingest warns,
    as it does for labels (:func:`label_problems`)."""
    store.con.register("_incoming_references",
                       pa.table({"verdict_hash": pa.array(list(verdict_hashes), pa.string())}))
    try:
        return store.con.execute("""
            SELECT verdict_hash, count(*) AS n_references,
                   'unknown verdict (not in the journal)' AS problem
            FROM _incoming_references r
            WHERE NOT EXISTS (SELECT 1 FROM journal j WHERE j.hash = r.verdict_hash)
            GROUP BY verdict_hash ORDER BY verdict_hash
        """).df()
    finally:
        store.con.unregister("_incoming_references")


def verdict_reference_ids(store: Store, verdict_hashes: Sequence[str]) -> pd.DataFrame:
    """The reference ids (any annotator's, ``"none"`` left out) of the ``verdict_hashes``:
    columns ``verdict_hash``, ``reference_id``, one row per pair, sorted. What a match
    label's ``reference_id`` may name (Formats §5)."""
    return store.sql(
        "SELECT DISTINCT verdict_hash, reference_id FROM reference_lessons "
        "WHERE reference_id <> 'none' AND verdict_hash IN (SELECT unnest(?)) ORDER BY ALL",
        [sorted(set(verdict_hashes))],
    ).df()


def match_label_lessons(store: Store, verdict_hashes: Sequence[str]) -> pd.DataFrame:
    """The lessons any run holds of the ``verdict_hashes``: columns ``verdict_hash``,
    ``extractor_id``, ``lesson_index`` and ``valid`` (valid in some run), one row per
    lesson, sorted. A match label must name one, and a verdict whose lessons a person
    matched must have every valid one answered (Formats §5)."""
    return store.sql(
        "SELECT verdict_hash, extractor_id, lesson_index, bool_or(valid) AS valid "
        "FROM candidates WHERE verdict_hash IN (SELECT unnest(?)) GROUP BY ALL ORDER BY ALL",
        [sorted(set(verdict_hashes))],
    ).df()


_LABEL_RELATIONS = frozenset({"labels", "_incoming_labels"})


def _label_problems(store: Store, relation: str) -> pd.DataFrame:
    """Labels that point at nothing known: a verdict the journal does not hold, or
    a ``lesson_index`` beyond the lessons of the recorded completion (or of the
    candidates, when no completion is recorded) of that verdict and extractor.

    ``relation`` is ``labels`` or the registered incoming rows.
    """
    if relation not in _LABEL_RELATIONS:  # an identifier, never a user value
        raise ValueError(f"unknown label relation {relation!r}")
    return store.con.execute(f"""
        WITH lbl AS (SELECT DISTINCT verdict_hash, extractor_id, lesson_index
                     FROM {quote_ident(relation)}),
        n_from_completions AS (
            SELECT verdict_hash, extractor_id,
                   CASE WHEN json_valid(text)
                        AND json_type(json_extract(text, '$.lessons')) = 'ARRAY'
                        THEN json_array_length(json_extract(text, '$.lessons')) END AS n
            FROM completions),
        n_from_candidates AS (
            SELECT verdict_hash, extractor_id, max(lesson_index) + 1 AS n
            FROM candidates GROUP BY ALL),
        known AS (
            SELECT l.*, coalesce(c.n, k.n) AS n,
                   EXISTS (SELECT 1 FROM journal j WHERE j.hash = l.verdict_hash) AS in_journal
            FROM lbl l
            LEFT JOIN n_from_completions c USING (verdict_hash, extractor_id)
            LEFT JOIN n_from_candidates k USING (verdict_hash, extractor_id))
        SELECT verdict_hash, extractor_id, lesson_index,
               CASE WHEN NOT in_journal THEN 'unknown verdict (not in the journal)'
                    ELSE 'lesson_index out of range (the completion has ' || n
                         || ' lesson(s))' END AS problem
        FROM known
        WHERE NOT in_journal OR lesson_index >= n
        ORDER BY verdict_hash, extractor_id, lesson_index
    """).df()


def recorded_extractors(store: Store) -> list[str]:
    """The extractor ids that have recorded completions in the store, sorted: the ones
    ``replay:EXTRACTOR_ID`` can replay."""
    return [r[0] for r in store.sql(
        "SELECT DISTINCT extractor_id FROM completions ORDER BY 1").fetchall()]


def completion_texts(store: Store, extractor_id: str, verdict_hashes: Sequence[str]
                     ) -> pd.DataFrame:
    """The recorded completions of ``extractor_id`` on ``verdict_hashes`` (verdict_hash,
    text), oldest first: a verdict recorded twice has two rows, the last the newest."""
    return store.sql(
        "SELECT verdict_hash, text FROM completions WHERE extractor_id = ? "
        "AND verdict_hash IN (SELECT unnest(?)) ORDER BY recorded_at",
        [extractor_id, list(verdict_hashes)],
    ).df()


def judge_recordings(store: Store, prefix: str) -> pd.DataFrame:
    """The recorded calls (``completions`` rows) of a judge or judge matcher: those
    whose extractor starts with ``prefix`` (``<kind>:<model>@<prompt>/``), oldest first."""
    return store.sql(
        "SELECT * FROM completions WHERE starts_with(extractor_id, ?) "
        "ORDER BY recorded_at, verdict_hash, extractor_id, request_hash, text", [prefix]).df()


def judge_run_answers(store: Store, key: str, judged_run_id: str | None) -> pd.DataFrame:
    """The recorded calls under a judge's replay key ``key`` that its judge run on
    ``judged_run_id`` answers from before calling: those the run paid for, and those
    recorded before migration 013 (``judged_run_id`` NULL: no run can be told from
    another). Only rows with a request hash (the answer to one request); the run's own
    last, so a caller keeping one row per request hash keeps its own."""
    return store.sql(
        "SELECT * FROM completions WHERE extractor_id = ? AND request_hash IS NOT NULL "
        "AND (judged_run_id = ? OR judged_run_id IS NULL) "
        "ORDER BY judged_run_id NULLS FIRST, recorded_at", [key, judged_run_id]).df()
