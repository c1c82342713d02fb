"""The tables loaded from the interchange files (completions, labels, reference lessons):
the questions the ingest asks the store before and after a load, so that the SQL on
those tables is here. The writes are :meth:`Store.append` with the Arrow schemas of
:mod:`truss_lab.store._tables`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any

import pandas as pd
import pyarrow as pa

from ._store import Store, quote_ident

__all__ = ["CONFLICTS_NAMED", "Staging", "label_problems", "match_label_lessons",
           "reference_problems", "stored_conflicts", "verdict_reference_ids"]


#: Most conflicting keys :func:`stored_conflicts` names (the rest are counted).
CONFLICTS_NAMED = 1000


def stored_conflicts(store: Store, table: str, new: pa.Table, key: Sequence[str],
                     value: Sequence[str]) -> tuple[int, list[tuple[Any, ...]]]:
    """The rows of ``new`` that ``table`` holds already with a different ``value`` column
    (the rows an append keeps as stored): how many, and the ``key`` values of the first
    :data:`CONFLICTS_NAMED`."""
    q = quote_ident
    on = " AND ".join(f"t.{q(k)} = n.{q(k)}" for k in key)
    differ = " OR ".join(f"t.{q(v)} IS DISTINCT FROM n.{q(v)}" for v in value)
    cols = ", ".join(f"n.{q(k)}" for k in key)
    # A relation, not register(): a registered table is held until the transaction ends.
    rows = store.con.from_arrow(new).query(
        "_incoming", f"SELECT {cols}, count(*) OVER () FROM _incoming n JOIN {q(table)} t "
        f"ON {on} WHERE {differ} LIMIT {int(CONFLICTS_NAMED)}"
    ).fetchall()
    return (int(rows[0][-1]) if rows else 0), [r[:-1] for r in rows]


_STAGINGS = itertools.count()


class Staging:
    """An ingest's incoming rows, held in a temporary table of the store inside the
    ingest's one transaction, so that a file is read and checked one batch at a time
    and the reader holds a batch, not the file (DuckDB holds the rows and can spill
    them to disk).

    Each row carries ``line``, the number its errors name (a file's line or a table's
    row): batches are added in file order, so ``line`` grows with the rows. What a
    whole-file reader does across its rows is asked here: the rows that share a
    ``key`` (:meth:`duplicates`), the first value of a column per group
    (:meth:`firsts`), and the rows to write (:meth:`rows`: the first of identical
    copies, no row of a key held with different contents). Use it inside
    :meth:`Store.transaction`; :meth:`close` drops the table (a rollback does too).
    """

    def __init__(self, store: Store, schema: pa.Schema, key: Sequence[str]) -> None:
        if "line" not in schema.names:
            raise ValueError("a staging table's rows carry their line")
        self.store, self.schema, self.key = store, schema, list(key)
        n = next(_STAGINGS)
        self.name, self._drop = f"_staged_{n}", f"_staged_{n}_drop"
        self._cols = [c for c in schema.names if c != "line"]
        self._settled = False
        self.store.con.register("_staging_schema", schema.empty_table())
        try:
            self.store.con.execute(f"CREATE TEMP TABLE {quote_ident(self.name)} AS "
                                   "SELECT * FROM _staging_schema")
        finally:
            self.store.con.unregister("_staging_schema")

    def add(self, rows: pa.Table) -> None:
        """Append ``rows`` (the staging schema's columns; after every row added before)."""
        if rows.num_rows:  # not register(): it would hold every batch until the commit
            self.store.con.from_arrow(rows.select(self.schema.names)).query(
                "_staging_rows", f"INSERT INTO {quote_ident(self.name)} "
                "SELECT * FROM _staging_rows").fetchall()

    def _sql(self) -> tuple[str, str, str, str]:
        """The staged table, the table of left-out lines, the key and the content
        columns, each as SQL (quote_ident of our own names)."""
        q = quote_ident
        return (q(self.name), q(self._drop), ", ".join(q(k) for k in self.key),
                ", ".join(q(c) for c in self._cols))

    def duplicates(self) -> pa.Table:
        """The rows whose key another row holds with other contents: identical copies
        as one (the first line), in line order, columns as staged. They are left out of
        :meth:`rows` (with the later copies of identical rows)."""
        table, dropped, keys, cols = self._sql()
        con = self.store.con

        def same(a: str, b: str) -> str:  # a null annotator is a key value too
            return " AND ".join(f"{a}.{quote_ident(k)} IS NOT DISTINCT FROM {b}.{quote_ident(k)}"
                                for k in self.key)

        same_tk, same_cr = same("t", "k"), same("c", "r")
        # Keys held by more than one row: usually none, so the rest is cheap.
        con.execute(f"""
            CREATE TEMP TABLE {dropped} AS
            WITH k AS (SELECT {keys} FROM {table} GROUP BY ALL HAVING count(*) > 1),
            r AS (SELECT * FROM {table} t SEMI JOIN k ON {same_tk}),
            d AS (SELECT {cols}, min(line) AS first FROM r GROUP BY ALL),
            c AS (SELECT {keys} FROM d GROUP BY ALL HAVING count(*) > 1)
            SELECT line, EXISTS (SELECT 1 FROM c WHERE {same_cr}) AS conflict,
                   line IN (SELECT first FROM d) AS first
            FROM r
        """)
        self._settled = True
        return con.sql(f"""
            SELECT {table}.* FROM {table} JOIN {dropped} USING (line)
            WHERE conflict AND first ORDER BY line
        """).to_arrow_table()

    def firsts(self, group: str, value: str) -> list[tuple[Any, Any]]:
        """Per ``group`` value, the ``value`` of its first row (by line) where ``value``
        is not null, among the rows :meth:`rows` gives; sorted by ``group``."""
        q = quote_ident
        return self.store.con.execute(f"""
            SELECT {q(group)}, arg_min({q(value)}, line) FROM {self.kept()}
            WHERE {q(value)} IS NOT NULL GROUP BY ALL ORDER BY 1
        """).fetchall()

    def kept(self) -> str:
        """The rows :meth:`rows` gives, as a subquery (for the questions asked of them all
        once they are written: :func:`label_problems`, :func:`reference_problems`)."""
        if not self._settled:
            raise ValueError("duplicates() first")
        table, dropped, _, _ = self._sql()
        return (f"(SELECT * FROM {table} WHERE line NOT IN (SELECT line FROM {dropped} "
                "WHERE conflict OR NOT first))")

    def rows(self, spans: Sequence[tuple[int, int]]) -> Iterator[pa.Table]:
        """The rows to write, one table per span ``(first line, last line)`` (the lines
        of each batch added), in line order: of identical rows the first, of a key held
        with other contents none (:meth:`duplicates` first)."""
        if not self._settled:
            raise ValueError("duplicates() first")
        table, dropped, _, _ = self._sql()
        for a, b in spans:
            # A span's lines are a range of the table (rows were added in line order),
            # so DuckDB skips the rest by its row groups' line bounds.
            yield self.store.con.sql(f"""
                SELECT * FROM {table}
                WHERE line BETWEEN ? AND ? AND line NOT IN (
                    SELECT line FROM {dropped} WHERE conflict OR NOT first)
                ORDER BY line
            """, params=[a, b]).to_arrow_table()

    def close(self) -> None:
        """Drop the staged rows."""
        for t in (self._drop, self.name):
            self.store.con.execute(f"DROP TABLE IF EXISTS {quote_ident(t)}")


def label_problems(store: Store,
                   incoming: pd.DataFrame | pa.Table | Staging | None = None) -> pd.DataFrame:
    """Labels that point at nothing known: a verdict the journal does not hold, or
    a ``lesson_index`` beyond the lessons of the recorded completion (or of the
    candidates, when no completion is recorded) of that verdict and extractor.

    The stored labels, or the ``incoming`` label rows (table columns: ``verdict_hash``,
    ``extractor_id``, ``lesson_index``; staged: the §3 file's, ``extractor``) when given.
    Columns ``verdict_hash``, ``extractor_id``, ``lesson_index``, ``problem``; the ingest
    reports them and the audit flags them (one definition for both).
    """
    if incoming is None:
        return _label_problems(store, "labels")
    if isinstance(incoming, Staging):
        return _label_problems(store, "(SELECT verdict_hash, extractor AS extractor_id, "
                                      f"lesson_index FROM {incoming.kept()})")
    store.con.register("_incoming_labels", incoming)
    try:
        return _label_problems(store, "_incoming_labels")
    finally:
        store.con.unregister("_incoming_labels")


def reference_problems(store: Store, verdict_hashes: Sequence[str] | Staging) -> pd.DataFrame:
    """The verdicts, among the ``verdict_hashes`` of incoming reference lessons (one per
    reference; or a staged ingest's rows), that the journal does not hold: columns
    ``verdict_hash``, ``n_references`` and ``problem``. A reference to such a verdict
    lands (it may be imported before its verdict) but no run can be judged on it yet;
    the ingest warns, as it does for labels (:func:`label_problems`)."""
    def problems(relation: str) -> pd.DataFrame:
        return store.con.execute(f"""
            SELECT verdict_hash, count(*) AS n_references,
                   'unknown verdict (not in the journal)' AS problem
            FROM {relation} r
            WHERE NOT EXISTS (SELECT 1 FROM journal j WHERE j.hash = r.verdict_hash)
            GROUP BY verdict_hash ORDER BY verdict_hash
        """).df()

    if isinstance(verdict_hashes, Staging):
        return problems(verdict_hashes.kept())
    store.con.register("_incoming_references",
                       pa.table({"verdict_hash": pa.array(list(verdict_hashes), pa.string())}))
    try:
        return problems("_incoming_references")
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

    ``relation`` is ``labels``, the registered incoming rows or a staged ingest's
    subquery (:meth:`Staging.kept`: ours, never a user value).
    """
    if relation.startswith("("):
        source = relation
    elif relation in _LABEL_RELATIONS:  # an identifier, never a user value
        source = quote_ident(relation)
    else:
        raise ValueError(f"unknown label relation {relation!r}")
    return store.con.execute(f"""
        WITH lbl AS (SELECT DISTINCT verdict_hash, extractor_id, lesson_index
                     FROM {source}),
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
