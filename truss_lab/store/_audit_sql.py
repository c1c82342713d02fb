"""The audit's reads of the store's tables: every SQL statement of
:mod:`truss_lab.govern._audit`, by name, so that the SQL on the store's tables lives in
the store (one place to follow a schema change) while the audit stays independent of the
write path: these statements re-derive what the writers should have written, they are
not the writers' code.

A statement names the governed definitions it compares with as ``$name`` (the lesson
kind, trusts, event type, policies, tunable targets, ...); the audit passes the values
the writers use (from :mod:`truss_lab.store._governed`, the policy enums, the journal's
spec), never literals here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pandas as pd
import pyarrow as pa

from ._store import Store

__all__ = ["AUDIT_SQL", "REPARSED_COLUMNS", "audit_rows", "candidates_against_reparsed",
           "gate_offenders", "label_count"]

_NAME = re.compile(r"\$(\w+)")

#: Each audit statement by name (the check that runs it is in govern/_audit.py).
AUDIT_SQL: Mapping[str, str] = {
    "lessons_not_governed": """
        SELECT entry_id, kind, trust, run_id, text, 'lesson is not ' || $unverified AS problem
        FROM memory_entries WHERE kind = $lesson AND trust <> $unverified
        UNION ALL
        SELECT m.entry_id, m.kind, m.trust, m.run_id, m.text,
               'an extraction run wrote a ' || m.kind || ' entry' AS problem
        FROM memory_entries m
        WHERE m.kind <> $lesson AND m.run_id IN (SELECT run_id FROM extraction_runs)
        ORDER BY entry_id
    """,
    "lesson_count": """
        SELECT count(*) AS n FROM memory_entries WHERE kind = $lesson
    """,
    "produced_by_not_verdict": """
        WITH m AS (SELECT entry_id, run_id, produced_by_seq, produced_by_hash
                   FROM memory_entries WHERE kind = $lesson)
        SELECT m.entry_id, m.run_id, m.produced_by_seq, m.produced_by_hash,
               j.kind AS journal_kind, j.hash AS journal_hash,
               CASE WHEN j.seq IS NULL THEN 'no journal entry at that seq'
                    WHEN j.hash <> m.produced_by_hash THEN 'journal entry has another hash'
                    ELSE 'journal entry is a ' || j.kind || ', not a ' || $verdict_kind
               END AS problem
        FROM m LEFT JOIN journal j ON j.seq = m.produced_by_seq
        WHERE j.seq IS NULL OR j.hash <> m.produced_by_hash OR j.kind <> $verdict_kind
        UNION ALL
        -- A ref that exists but is not the verdict the lesson was extracted from.
        SELECT DISTINCT m.entry_id, m.run_id, m.produced_by_seq, m.produced_by_hash,
               NULL, c.verdict_hash, 'not the verdict of its candidate ' || c.candidate_id
        FROM m JOIN candidates c ON c.entry_id = m.entry_id
        WHERE c.verdict_seq <> m.produced_by_seq OR c.verdict_hash <> m.produced_by_hash
        ORDER BY entry_id
    """,
    "produced_by_not_in_sources": """
        SELECT entry_id, kind, run_id, produced_by_seq, produced_by_hash, sources,
               'produced_by is not among sources' AS problem
        FROM memory_entries
        WHERE NOT coalesce(list_contains(sources, {'seq': produced_by_seq,
                                                   'hash': produced_by_hash}), false)
        ORDER BY entry_id
    """,
    "lessons_older_than_verdict": """
        SELECT m.entry_id, m.run_id, m.created_at, j.seq AS verdict_seq,
               j.ts AS verdict_ts, j.recorded_at AS verdict_recorded_at,
               CASE WHEN m.created_at < j.recorded_at
                    THEN 'created before the verdict was stored (recorded_at)'
                    ELSE 'created before the verdict was signed (ts)' END AS problem
        FROM memory_entries m
        JOIN journal j ON j.seq = m.produced_by_seq AND j.hash = m.produced_by_hash
        WHERE m.kind = $lesson AND j.kind = $verdict_kind
          AND (m.created_at < j.recorded_at
               OR m.created_at < TRY_CAST(j.ts AS TIMESTAMPTZ))
        ORDER BY m.entry_id
    """,
    "memory_write_events_not_one": """
        WITH ev AS (SELECT subject_id, count(*) AS n_events FROM events
                    WHERE type = $memory_write GROUP BY subject_id),
             me AS (SELECT entry_id, count(*) AS n_entries FROM memory_entries
                    GROUP BY entry_id)
        SELECT me.entry_id AS subject_id, me.n_entries, coalesce(ev.n_events, 0) AS n_events,
               CASE WHEN me.n_entries > 1 THEN 'entry id stored ' || me.n_entries || ' times'
                    ELSE 'entry has ' || coalesce(ev.n_events, 0) || ' ' || $memory_write
                         || ' events'
               END AS problem
        FROM me LEFT JOIN ev ON ev.subject_id = me.entry_id
        WHERE coalesce(ev.n_events, 0) <> 1 OR me.n_entries <> 1
        UNION ALL
        SELECT ev.subject_id, 0, ev.n_events, $memory_write || ' event without an entry'
        FROM ev WHERE NOT EXISTS (SELECT 1 FROM me WHERE me.entry_id = ev.subject_id)
        ORDER BY subject_id
    """,
    "off_runs_working": """
        WITH off AS (SELECT run_id, provider_calls FROM extraction_runs WHERE policy = $off),
             c AS (SELECT run_id, count(*) AS n FROM candidates
                   WHERE run_id IN (SELECT run_id FROM off) GROUP BY run_id),
             m AS (SELECT run_id, count(*) AS n FROM memory_entries
                   WHERE run_id IN (SELECT run_id FROM off) GROUP BY run_id),
             e AS (SELECT run_id, count(*) AS n FROM events
                   WHERE run_id IN (SELECT run_id FROM off) GROUP BY run_id),
             x AS (SELECT run_id, count(*) AS n FROM verdict_errors
                   WHERE run_id IN (SELECT run_id FROM off) GROUP BY run_id)
        SELECT off.run_id, off.provider_calls,
               coalesce(c.n, 0) AS n_candidates, coalesce(m.n, 0) AS n_entries,
               coalesce(e.n, 0) AS n_events, coalesce(x.n, 0) AS n_errors,
               'off run did work' AS problem
        FROM off LEFT JOIN c USING (run_id) LEFT JOIN m USING (run_id)
                 LEFT JOIN e USING (run_id) LEFT JOIN x USING (run_id)
        WHERE coalesce(off.provider_calls, 0) <> 0 OR coalesce(c.n, 0) + coalesce(m.n, 0)
              + coalesce(e.n, 0) + coalesce(x.n, 0) > 0
        ORDER BY off.run_id
    """,
    "off_run_count": """
        SELECT count(*) AS n FROM extraction_runs WHERE policy = $off
    """,
    "k_sample_candidates": """
        SELECT run_id, candidate_id, extractor_id, verdict_hash, sample_index, lesson_index,
               text, valid
        FROM candidates
        WHERE run_id IN (SELECT run_id FROM candidates GROUP BY run_id
                         HAVING bool_or(sample_index > 0 OR self_consistency IS NOT NULL))
        ORDER BY run_id, verdict_hash, sample_index, lesson_index
    """,
    "gate_offenders": """
        WITH l AS (SELECT m.entry_id, m.run_id, m.salience, r.policy, r.extraction_min_salience
                   FROM memory_entries m JOIN extraction_runs r USING (run_id)
                   WHERE m.kind = $lesson),
             -- a lesson's candidates: those that recorded its (content-derived) entry id
             lc AS (SELECT l.entry_id, c.run_id, c.candidate_id, c.valid, c.passed_gate
                    FROM l JOIN candidates c ON c.entry_id = l.entry_id)
        SELECT entry_id, run_id, NULL AS candidate_id, salience AS score, extraction_min_salience,
               'lesson below its run''s extraction_min_salience' AS problem
        FROM l WHERE policy = $model_scored
          AND (salience IS NULL OR isnan(salience) OR salience < extraction_min_salience)
        UNION ALL
        SELECT lc.entry_id, lc.run_id, lc.candidate_id, NULL, NULL,
               'lesson from a candidate that failed the gate'
        FROM lc WHERE NOT lc.passed_gate
        UNION ALL
        SELECT lc.entry_id, lc.run_id, lc.candidate_id, NULL, NULL,
               'lesson from an invalid candidate'
        FROM lc WHERE NOT lc.valid
        UNION ALL
        SELECT l.entry_id, l.run_id, NULL, l.salience, l.extraction_min_salience,
               'lesson without a passing candidate in its run'
        FROM l WHERE l.policy <> $off AND NOT EXISTS (
            SELECT 1 FROM candidates c
            WHERE c.entry_id = l.entry_id AND c.run_id = l.run_id AND c.passed_gate)
        UNION ALL
        SELECT c.entry_id, c.run_id, c.candidate_id, c.score, r.extraction_min_salience,
               'candidate passed_gate disagrees with the ' || r.policy || ' policy'
        FROM candidates c JOIN extraction_runs r USING (run_id)
        WHERE r.policy IN ($on, $model_scored)
          AND c.passed_gate IS DISTINCT FROM (
              c.valid
              -- a k-sample run: one lesson per cluster of near-duplicates, its representative
              AND NOT EXISTS (SELECT 1 FROM _audit_not_representative n
                              WHERE n.run_id = c.run_id AND n.candidate_id = c.candidate_id)
              AND (r.policy = $on
                   OR coalesce(c.score >= r.extraction_min_salience
                               AND NOT isnan(c.score), false)))
        ORDER BY run_id, entry_id, candidate_id
    """,
    "policy_targets_invalid": """
        SELECT record_id, policy_id, target, 'target is not tunable' AS problem
        FROM policy_records WHERE NOT list_contains($targets, target) ORDER BY record_id
    """,
    "policy_provenance_unsigned": """
        SELECT p.record_id, p.policy_id, p.produced_by_seq, p.produced_by_hash,
               j.hash AS journal_hash,
               CASE WHEN j.seq IS NULL THEN 'no lab journal entry at that seq'
                    WHEN j.hash <> p.produced_by_hash THEN 'lab journal entry has another hash'
                    ELSE 'produced_by is not among sources' END AS problem
        FROM policy_records p LEFT JOIN (
            -- The lab journal; a proposal of a database older than the two chains
            -- that could not move (upstream entries follow it) is in the journal.
            SELECT seq, hash FROM lab_journal
            UNION ALL SELECT seq, hash FROM journal WHERE kind = $policy_kind
        ) j ON j.seq = p.produced_by_seq AND j.hash = p.produced_by_hash
        WHERE j.seq IS NULL
           OR NOT coalesce(list_contains(p.sources, {'seq': p.produced_by_seq,
                                                     'hash': p.produced_by_hash}), false)
        ORDER BY p.record_id
    """,
    "policy_records_and_entries": """
        -- Every policy record with the signed lab entry it points at (NULLs when there is
        -- none), and every signed policy entry no record points at (a NULL record_id).
        WITH j AS (SELECT seq, hash, payload FROM lab_journal WHERE kind = $policy_kind
                   UNION ALL SELECT seq, hash, payload FROM journal WHERE kind = $policy_kind)
        SELECT p.record_id, p.policy_id, p.target, p.version, CAST(p.settings AS VARCHAR)
               AS settings, p.trust, p.supersedes, p.superseded_by,
               coalesce(j.seq, p.produced_by_seq) AS entry_seq,
               coalesce(j.hash, p.produced_by_hash) AS entry_hash,
               CAST(j.payload AS VARCHAR) AS payload
        FROM policy_records p
        FULL JOIN j ON j.seq = p.produced_by_seq AND j.hash = p.produced_by_hash
        ORDER BY entry_seq, p.record_id
    """,
    "lessons_unlike_candidates": """
        -- A lesson of an extraction run is its candidate's text, evidence, score, index,
        -- extractor and verdict, as the gate wrote them: an edit of either side shows.
        SELECT m.entry_id, m.run_id,
               CASE WHEN NOT EXISTS (SELECT 1 FROM candidates c WHERE c.entry_id = m.entry_id)
                    THEN 'no candidate wrote it'
                    ELSE 'differs from its candidate in ' || (
                        SELECT concat_ws(', ',
                            CASE WHEN c.text IS DISTINCT FROM m.text THEN 'text' END,
                            CASE WHEN c.score IS DISTINCT FROM m.salience THEN 'salience' END,
                            CASE WHEN c.evidence IS DISTINCT FROM m.evidence
                                 THEN 'evidence' END,
                            CASE WHEN c.lesson_index IS DISTINCT FROM m.lesson_index
                                 THEN 'lesson_index' END,
                            CASE WHEN c.extractor_id IS DISTINCT FROM m.extractor_id
                                 THEN 'extractor_id' END,
                            CASE WHEN c.run_id IS DISTINCT FROM m.run_id THEN 'run_id' END)
                        FROM candidates c WHERE c.entry_id = m.entry_id
                        ORDER BY c.candidate_id LIMIT 1)
               END AS problem
        FROM memory_entries m
        WHERE m.kind = $lesson AND m.run_id IN (SELECT run_id FROM extraction_runs)
          AND NOT EXISTS (
            SELECT 1 FROM candidates c
            WHERE c.entry_id = m.entry_id AND c.run_id = m.run_id
              AND c.text IS NOT DISTINCT FROM m.text
              AND c.score IS NOT DISTINCT FROM m.salience
              AND c.evidence IS NOT DISTINCT FROM m.evidence
              AND c.lesson_index IS NOT DISTINCT FROM m.lesson_index
              AND c.extractor_id IS NOT DISTINCT FROM m.extractor_id)
        ORDER BY m.entry_id
    """,
    "references_not_at_verdicts": """
        -- Reference lessons and match labels whose verdict is no contract_verdict of the
        -- journal (the ingest lands them with a warning: they may come before their verdict).
        WITH v AS (SELECT hash, kind FROM journal),
             r AS (SELECT 'reference_lessons' AS table_name, verdict_hash,
                          reference_id AS item, annotator
                   FROM reference_lessons
                   UNION ALL
                   SELECT 'match_labels', verdict_hash,
                          extractor_id || ' #' || lesson_index, annotator
                   FROM match_labels)
        SELECT r.table_name, r.verdict_hash, r.item, r.annotator, v.kind AS journal_kind,
               CASE WHEN v.kind IS NULL THEN 'unknown verdict (not in the journal)'
                    ELSE 'journal entry is a ' || v.kind || ', not a ' || $verdict_kind
               END AS problem
        FROM r LEFT JOIN v ON v.hash = r.verdict_hash
        WHERE v.kind IS DISTINCT FROM $verdict_kind
        ORDER BY r.table_name DESC, r.verdict_hash, r.item, r.annotator
    """,
    "reference_counts": """
        SELECT (SELECT count(*) FROM reference_lessons) AS n_references,
               (SELECT count(*) FROM match_labels) AS n_match_labels
    """,
    "completion_scope": """
        WITH runs AS (SELECT r.run_id, r.extractor_id FROM extraction_runs r
                      WHERE EXISTS (SELECT 1 FROM completions k
                                    WHERE k.extractor_id = r.extractor_id)),
             v AS (SELECT DISTINCT c.run_id, c.verdict_hash, c.sample_index FROM candidates c
                   WHERE c.run_id IN (SELECT run_id FROM runs)
                   UNION
                   SELECT e.run_id, e.verdict_hash, e.sample_index FROM verdict_errors e
                   WHERE e.stage = 'parse' AND e.run_id IN (SELECT run_id FROM runs)),
             k AS (SELECT verdict_hash, extractor_id, sample_index,
                          arg_max(text, recorded_at) AS text
                   FROM completions GROUP BY verdict_hash, extractor_id, sample_index)
        SELECT v.run_id, v.verdict_hash, runs.extractor_id, v.sample_index, k.text
        FROM v JOIN runs USING (run_id)
        LEFT JOIN k ON k.verdict_hash = v.verdict_hash AND k.extractor_id = runs.extractor_id
                   AND k.sample_index = v.sample_index
    """,
}


def audit_rows(store: Store, name: str, definitions: Mapping[str, Any]) -> pd.DataFrame:
    """Run the audit statement ``name`` with the ``definitions`` it names (DuckDB refuses
    parameters a statement does not use)."""
    sql = AUDIT_SQL[name]
    return store.con.execute(sql, {n: definitions[n] for n in set(_NAME.findall(sql))}).df()


def gate_offenders(store: Store, not_representative: pa.Table,
                   definitions: Mapping[str, Any]) -> pd.DataFrame:
    """The ``gate_offenders`` statement, with ``not_representative`` (``run_id``,
    ``candidate_id``: the k-sample candidates the gate must not pass) as the table it reads."""
    store.con.register("_audit_not_representative", not_representative)
    try:
        return audit_rows(store, "gate_offenders", definitions)
    finally:
        store.con.unregister("_audit_not_representative")


#: The candidate columns the audit compares with the re-parsed completions.
REPARSED_COLUMNS = ("run_id", "verdict_hash", "sample_index", "lesson_index", "text",
                    "salience", "valid")
# The anti-join's pieces, from the literal tuple above.
_GOT = ", ".join(f"c.{c}" for c in REPARSED_COLUMNS)
_COLS = ", ".join(f"a.{c}" for c in REPARSED_COLUMNS)
_ON = " AND ".join(f"a.{c} IS NOT DISTINCT FROM b.{c}" for c in REPARSED_COLUMNS)


def candidates_against_reparsed(store: Store, expected: pa.Table,
                                scope: pa.Table) -> pd.DataFrame:
    """The candidate rows of ``scope`` (``run_id``, ``verdict_hash``, ``sample_index``)
    that differ from ``expected`` (the re-parsed completions, :data:`REPARSED_COLUMNS`)
    on any column, and the expected rows no candidate matches: an anti-join both ways,
    NULL-safe."""
    store.con.register("_audit_expected", expected)
    store.con.register("_audit_scope", scope)
    try:
        return store.con.execute(
            f"""
            WITH got AS (SELECT c.candidate_id, {_GOT}
                         FROM candidates c JOIN _audit_scope s
                         ON s.run_id = c.run_id AND s.verdict_hash = c.verdict_hash
                            AND s.sample_index = c.sample_index)
            SELECT a.candidate_id, {_COLS},
                   'candidate row differs from the re-parsed completion' AS problem
            FROM got a WHERE NOT EXISTS (SELECT 1 FROM _audit_expected b WHERE {_ON})
            UNION ALL
            SELECT NULL, {_COLS}, 'parsed lesson has no matching candidate row'
            FROM _audit_expected a WHERE NOT EXISTS (SELECT 1 FROM got b WHERE {_ON})
            ORDER BY run_id, verdict_hash, lesson_index, problem
            """
        ).df()
    finally:
        store.con.unregister("_audit_expected")
        store.con.unregister("_audit_scope")


def label_count(store: Store) -> int:
    """How many label rows the store holds."""
    return int(store.con.execute("SELECT count(*) FROM labels").fetchall()[0][0])
