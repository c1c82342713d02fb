"""The audit: does a database obey ADR 0011?

``audit(store)`` runs every check below (each named, with the DESIGN.md invariant
it guards) and returns an :class:`AuditReport`; each :class:`CheckResult` says
pass/fail, gives a one-line detail and the offending rows as a DataFrame. The
checks are mostly DuckDB SQL: the audit keeps its own SQL on the store's tables.

A check that cannot run (say, a table was dropped) fails with the error as its detail.

Each check reads the governed tables with the definitions the writers use
(:mod:`truss_lab.store._governed`'s kinds, trusts and event types, the
policy and target enums), so the audit and the write path cannot disagree
about what a lesson is. The checks, by stable name (and the DESIGN.md
invariant each one guards):

========================================  =====  ==========================================
name                                      inv.   fails when
========================================  =====  ==========================================
``chain_verifies``                        9      ``verify_chain`` finds a bad entry
``lessons_governed``                      4      a lesson is not ``unverified``, or an
                                                 extraction run wrote a non-lesson entry
``produced_by_exists``                    3, 4   a lesson's produced_by (seq + hash) is not
                                                 a stored ``contract_verdict`` with that
                                                 hash, or not the verdict of its candidate
``produced_by_in_sources``                4      a lesson's produced_by ref is not among
                                                 its sources
``lesson_not_older_than_verdict``         3      a lesson was created before its verdict
                                                 was signed (ts) or stored (recorded_at)
``one_event_per_lesson``                  4      an entry has 0 or >1 memory_write events,
                                                 or an event names no entry
``off_runs_silent``                       1      an ``off`` run has candidates, lessons,
                                                 events, errors or provider calls
``gate_respected``                        2      a lesson bypassed the gate (below its
                                                 run's threshold, from a candidate that
                                                 failed the gate or was invalid, or with no
                                                 passing candidate), or a candidate's
                                                 passed_gate disagrees with the policy (in a
                                                 k-sample run only the representative of
                                                 each cluster of near-duplicates may pass)
``policy_targets_valid``                  7      a policy record has a non-tunable target
``policy_provenance_signed``              8      a policy record's produced_by is not a
                                                 stored journal entry with that hash, or is
                                                 not among its sources
``policy_chains_simple``                  8      supersession pointers fork, cycle, dangle
                                                 or leave a policy without exactly one head
``default_query_verified_only``           5      ``query_memory(store)`` returns an entry
                                                 that is not verified, or a lesson
``candidates_match_completions``          2      re-parsing a run's recorded completions
                                                 (one per sample) does not give its
                                                 candidate rows
``labels_point_at_lessons``               -      a gold label names a verdict the journal
                                                 does not hold, or a lesson_index beyond
                                                 the completion's lessons
========================================  =====  ==========================================
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..core._errors import BadInputError
from ..core._models import LessonExtractionPolicy, PolicyTarget, Trust
from ..extract._parser import candidates_frame, parse_completion
from ..journal._ledger import verify_chain
from ..journal._spec import VERDICT_KIND
from ..score._consistency import consistency_clusters
from ..store._governed import LESSON_KIND, LESSON_TRUST, MEMORY_WRITE, query_memory
from ..store._ingested import label_problems
from ..store._store import Store
from ._policies import POLICY_ENTRY_KIND, check_policy_chains

__all__ = ["CHECKS", "AuditReport", "CheckFn", "CheckResult", "audit"]


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one audit check."""

    name: str
    """Stable check name (see the table above)."""
    passed: bool
    """True when nothing offends."""
    detail: str
    """One line: what was checked, or what went wrong."""
    rows: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False)
    """The offending rows (empty when ``passed``)."""
    invariant: str = ""
    """The DESIGN.md invariant(s) this check guards."""

    def __repr__(self) -> str:
        mark = "PASS" if self.passed else "FAIL"
        return f"{mark} {self.name}: {self.detail}"


class AuditReport:
    """Every check's result. ``ok`` is True when all passed."""

    def __init__(self, checks: Sequence[CheckResult], *, source: str = "") -> None:
        self.checks: list[CheckResult] = list(checks)
        self.source = source

    @property
    def ok(self) -> bool:
        """True when every check passed."""
        return all(c.passed for c in self.checks)

    def failed(self) -> list[CheckResult]:
        """The checks that failed, in check order."""
        return [c for c in self.checks if not c.passed]

    def __getitem__(self, name: str) -> CheckResult:
        for c in self.checks:
            if c.name == name:
                return c
        raise KeyError(name)

    def to_frame(self) -> pd.DataFrame:
        """One row per check: name, passed, n_rows (offending rows), invariant, detail."""
        return pd.DataFrame(
            {
                "name": [c.name for c in self.checks],
                "passed": np.array([c.passed for c in self.checks], dtype=bool),
                "n_rows": np.array([len(c.rows) for c in self.checks], dtype=np.int64),
                "invariant": [c.invariant for c in self.checks],
                "detail": [c.detail for c in self.checks],
            }
        )

    def to_dict(self, *, max_rows: int = 20) -> dict[str, Any]:
        """JSON-ready: ok, and per check its result and up to ``max_rows`` offending rows."""
        return {
            "source": self.source,
            "ok": self.ok,
            "checks": [
                {
                    "name": c.name,
                    "passed": c.passed,
                    "invariant": c.invariant,
                    "detail": c.detail,
                    "n_rows": len(c.rows),
                    "rows": json.loads(
                        c.rows.head(max_rows).to_json(orient="records", date_format="iso")
                    )
                    if len(c.rows)
                    else [],
                }
                for c in self.checks
            ],
        }

    def __repr__(self) -> str:
        n_bad = len(self.failed())
        head = (
            f"AuditReport({self.source or 'store'}: "
            + ("all checks passed" if self.ok else f"{n_bad} of {len(self.checks)} checks failed")
            + ")"
        )
        return "\n".join([head, *(f"  {c!r}" for c in self.checks)])

    def _repr_html_(self) -> str:
        esc = html.escape
        status = "all checks passed" if self.ok else f"{len(self.failed())} check(s) failed"
        rows = "".join(
            f"<tr><td>{'&#10004;' if c.passed else '&#10008;'}</td><td><code>{esc(c.name)}"
            f"</code></td><td>{esc(c.invariant)}</td><td>{len(c.rows)}</td>"
            f"<td>{esc(c.detail)}</td></tr>"
            for c in self.checks
        )
        samples = "".join(
            f"<details><summary>{esc(c.name)}: {len(c.rows)} offending row(s)</summary>"
            f"{_html_table(c.rows.head(10))}</details>"
            for c in self.failed()
            if len(c.rows)
        )
        return (
            f"<div><strong>Audit of {esc(self.source or 'store')}: {esc(status)}</strong>"
            "<table><thead><tr><th></th><th>check</th><th>invariant</th><th>rows</th>"
            f"<th>detail</th></tr></thead><tbody>{rows}</tbody></table>{samples}</div>"
        )


def _html_table(df: pd.DataFrame) -> str:
    # Build the cells ourselves: every value (a lesson text may hold markup) is escaped.
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>"
        for row in df.itertuples(index=False)
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


# -- the checks -----------------------------------------------------------------
# Each returns (offending rows, detail when clean). Failures get a detail from
# the row count and the first problem.

CheckFn = Callable[[Store], tuple[pd.DataFrame, str]]


# The governed definitions, named in the checks' SQL as $name: the same values
# the writers (store._governed, the gate) use, never literals of their own.
_DEFS: Mapping[str, Any] = {
    "lesson": LESSON_KIND,
    "unverified": LESSON_TRUST,
    "verified": Trust.verified.value,
    "memory_write": MEMORY_WRITE,
    "verdict_kind": VERDICT_KIND,
    "off": LessonExtractionPolicy.off.value,
    "on": LessonExtractionPolicy.on.value,
    "model_scored": LessonExtractionPolicy.model_scored.value,
    "targets": [t.value for t in PolicyTarget],
    "policy_kind": POLICY_ENTRY_KIND,
}
_NAME = re.compile(r"\$(\w+)")


def _df(store: Store, sql: str) -> pd.DataFrame:
    """Run a check's SQL with the definitions it names (DuckDB refuses unused ones)."""
    return store.con.execute(sql, {n: _DEFS[n] for n in set(_NAME.findall(sql))}).df()


def _chain_verifies(store: Store) -> tuple[pd.DataFrame, str]:
    rep = verify_chain(store)
    if rep.ok:
        return pd.DataFrame(), f"{rep.entries_checked} journal entries verify"
    rows = pd.DataFrame(
        [{"seq": rep.first_bad_seq, "reason": rep.reason, "message": rep.message,
          "problem": f"seq {rep.first_bad_seq}: {rep.reason}: {rep.message}"}]
    )
    return rows, ""


def _lessons_governed(store: Store) -> tuple[pd.DataFrame, str]:
    rows = _df(
        store,
        """
        SELECT entry_id, kind, trust, run_id, text, 'lesson is not ' || $unverified AS problem
        FROM memory_entries WHERE kind = $lesson AND trust <> $unverified
        UNION ALL
        SELECT m.entry_id, m.kind, m.trust, m.run_id, m.text,
               'an extraction run wrote a ' || m.kind || ' entry' AS problem
        FROM memory_entries m
        WHERE m.kind <> $lesson AND m.run_id IN (SELECT run_id FROM extraction_runs)
        ORDER BY entry_id
        """,
    )
    n = _df(store, "SELECT count(*) AS n FROM memory_entries WHERE kind = $lesson")["n"].iat[0]
    return rows, f"{n} lessons, all kind lesson with trust unverified"


def _produced_by_exists(store: Store) -> tuple[pd.DataFrame, str]:
    rows = _df(
        store,
        """
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
    )
    return rows, "every lesson's produced_by is its stored, matching contract_verdict entry"


def _produced_by_in_sources(store: Store) -> tuple[pd.DataFrame, str]:
    rows = _df(
        store,
        """
        SELECT entry_id, kind, run_id, produced_by_seq, produced_by_hash, sources,
               'produced_by is not among sources' AS problem
        FROM memory_entries
        WHERE NOT coalesce(list_contains(sources, {'seq': produced_by_seq,
                                                   'hash': produced_by_hash}), false)
        ORDER BY entry_id
        """,
    )
    return rows, "every memory entry lists its produced_by ref among its sources"


def _lesson_not_older_than_verdict(store: Store) -> tuple[pd.DataFrame, str]:
    rows = _df(
        store,
        """
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
    )
    return rows, "no lesson predates its verdict"


def _one_event_per_lesson(store: Store) -> tuple[pd.DataFrame, str]:
    rows = _df(
        store,
        """
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
    )
    return rows, "exactly one memory_write event per memory entry, none orphaned"


def _off_runs_silent(store: Store) -> tuple[pd.DataFrame, str]:
    rows = _df(
        store,
        """
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
    )
    n = _df(store, "SELECT count(*) AS n FROM extraction_runs WHERE policy = $off")["n"].iat[0]
    return rows, f"{n} off run(s): no provider call, candidate, entry, event or error"


def _not_representatives(store: Store) -> pa.Table:
    """(run_id, candidate_id) of the valid candidates of k-sample runs that are not the
    representative of their cluster of near-duplicates across the verdict's samples.

    The gate lets only representatives pass in such a run (one lesson per cluster, not
    k copies); they are found again here with the gate's own definition
    (:func:`~truss_lab.score._consistency.consistency_clusters`, default threshold),
    not read from the stored ``self_consistency``. A k-sample run is one whose
    candidates name a sample other than 0 or carry a self-consistency (a one-sample
    run sets neither).
    """
    c = _df(
        store,
        """
        SELECT run_id, candidate_id, extractor_id, verdict_hash, sample_index, lesson_index,
               text, valid
        FROM candidates
        WHERE run_id IN (SELECT run_id FROM candidates GROUP BY run_id
                         HAVING bool_or(sample_index > 0 OR self_consistency IS NOT NULL))
        ORDER BY run_id, verdict_hash, sample_index, lesson_index
        """,
    )
    if len(c):
        rep = consistency_clusters(c)["representative"].to_numpy(dtype=bool)
        c = c[c["valid"].to_numpy(dtype=bool) & ~rep]
    return pa.table({"run_id": pa.array(c["run_id"].astype(object), pa.string()),
                     "candidate_id": pa.array(c["candidate_id"].astype(object), pa.string())})


def _gate_respected(store: Store) -> tuple[pd.DataFrame, str]:
    store.con.register("_audit_not_representative", _not_representatives(store))
    try:
        rows = _gate_offenders(store)
    finally:
        store.con.unregister("_audit_not_representative")
    return rows, "every lesson passed its run's gate; every passed_gate matches the policy"


def _gate_offenders(store: Store) -> pd.DataFrame:
    return _df(
        store,
        """
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
    )


def _policy_targets_valid(store: Store) -> tuple[pd.DataFrame, str]:
    rows = _df(
        store,
        """
        SELECT record_id, policy_id, target, 'target is not tunable' AS problem
        FROM policy_records WHERE NOT list_contains($targets, target) ORDER BY record_id
        """,
    )
    return rows, "every policy record targets a tunable surface"


def _policy_provenance_signed(store: Store) -> tuple[pd.DataFrame, str]:
    rows = _df(
        store,
        """
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
    )
    return rows, "every policy record points at a stored (chain-verified) lab journal entry"


def _policy_chains_simple(store: Store) -> tuple[pd.DataFrame, str]:
    problems = check_policy_chains(store)
    # Invalid targets are policy_targets_valid's finding; report each fault once.
    rows = problems[~problems["problem"].str.startswith("invalid target")]
    return rows.reset_index(drop=True), "supersession pointers form simple chains, one head each"


def _default_query_verified_only(store: Store) -> tuple[pd.DataFrame, str]:
    df = query_memory(store)
    verified = _DEFS["verified"]
    bad = df[(df["trust"] != verified) | (df["kind"] == LESSON_KIND)]
    rows = bad[["entry_id", "kind", "trust", "run_id", "text"]].copy()
    rows["problem"] = np.where(
        bad["trust"] != verified, "default query returned an unverified entry",
        "default query returned a lesson",
    )
    return rows.reset_index(drop=True), (
        f"the default MemoryQuery returns {len(df)} entries, all verified, no lesson"
    )


_KEYS = ["run_id", "verdict_hash", "sample_index", "lesson_index", "text", "salience", "valid"]


def _reparsed(known: pd.DataFrame) -> pa.Table:
    """The candidate rows (:data:`_KEYS`) that re-parsing the completions of ``known``
    (``run_id``, ``verdict_hash``, ``extractor_id``, ``sample_index``, ``text``) gives,
    each distinct completion (one per sample of a verdict) parsed once."""
    on = ["verdict_hash", "extractor_id", "sample_index"]
    texts = known[[*on, "text"]].drop_duplicates(on)
    parsed = candidates_frame(
        ({"verdict_hash": v, "extractor_id": e, "sample_index": int(i)}, parse_completion(t))
        for v, e, i, t in zip(texts["verdict_hash"], texts["extractor_id"],
                              texts["sample_index"], texts["text"], strict=True)
    )
    expected = known[["run_id", *on]].merge(parsed, on=on)
    exp = pa.table(
        {
            "run_id": pa.array(expected["run_id"].astype(object), pa.string()),
            "verdict_hash": pa.array(expected["verdict_hash"].astype(object), pa.string()),
            "sample_index": pa.array(expected["sample_index"].to_numpy(), pa.int32()),
            "lesson_index": pa.array(expected["lesson_index"].to_numpy(), pa.int32()),
            "text": pa.array(expected["text"].astype(object), pa.string(), from_pandas=True),
            "salience": pa.array(expected["salience"].to_numpy(), pa.float64(),
                                 from_pandas=True),
            "valid": pa.array(expected["valid"].to_numpy(), pa.bool_()),
        }
    )
    return exp


def _candidates_match_completions(store: Store) -> tuple[pd.DataFrame, str]:
    # 1. The completions behind each checked (run, verdict, sample): runs whose
    #    extractor has recordings; verdict samples the run produced candidates or a
    #    parse error for (a k-sample run's recordings and candidates name their sample).
    scope = _df(
        store,
        """
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
    )
    if scope.empty:
        return pd.DataFrame(), "no run replays recorded completions: nothing to compare"
    known = scope[scope["text"].notna()]
    missing = scope[scope["text"].isna()]
    n_unknown = len(missing[["run_id", "verdict_hash"]].drop_duplicates())
    if known.empty:
        return pd.DataFrame(), f"no recorded completion to compare; {n_unknown} pair(s) without one"
    # 2. Parse each distinct completion once (parsing is Python; the rest is joins).
    exp = _reparsed(known)
    scope_t = pa.table(
        {
            "run_id": pa.array(known["run_id"].astype(object), pa.string()),
            "verdict_hash": pa.array(known["verdict_hash"].astype(object), pa.string()),
            "sample_index": pa.array(known["sample_index"].to_numpy(), pa.int32()),
        }
    )
    # 3. Anti-join both ways on every compared column (NULL-safe).
    on = " AND ".join(f"a.{c} IS NOT DISTINCT FROM b.{c}" for c in _KEYS)
    cols = ", ".join(f"a.{c}" for c in _KEYS)
    store.con.register("_audit_expected", exp)
    store.con.register("_audit_scope", scope_t)
    try:
        rows = _df(
            store,
            f"""
            WITH got AS (SELECT c.candidate_id, {", ".join("c." + k for k in _KEYS)}
                         FROM candidates c JOIN _audit_scope s
                         ON s.run_id = c.run_id AND s.verdict_hash = c.verdict_hash
                            AND s.sample_index = c.sample_index)
            SELECT a.candidate_id, {cols},
                   'candidate row differs from the re-parsed completion' AS problem
            FROM got a WHERE NOT EXISTS (SELECT 1 FROM _audit_expected b WHERE {on})
            UNION ALL
            SELECT NULL, {cols}, 'parsed lesson has no matching candidate row'
            FROM _audit_expected a WHERE NOT EXISTS (SELECT 1 FROM got b WHERE {on})
            ORDER BY run_id, verdict_hash, lesson_index, problem
            """,
        )
    finally:
        store.con.unregister("_audit_expected")
        store.con.unregister("_audit_scope")
    # Counted by (run, verdict) as before samples: a verdict's k samples are one pair.
    n_pairs = len(known[["run_id", "verdict_hash"]].drop_duplicates())
    detail = (f"{len(exp)} candidate rows of {n_pairs} (run, verdict) pairs agree with "
              "their re-parsed completions")
    if n_unknown:
        detail += f"; {n_unknown} pair(s) without a recorded completion not compared"
    return rows, detail


def _labels_point_at_lessons(store: Store) -> tuple[pd.DataFrame, str]:
    n = store.con.execute("SELECT count(*) FROM labels").fetchall()[0][0]
    if not n:
        return pd.DataFrame(), "no labels"
    rows = label_problems(store)
    if len(rows):
        rows["problem"] = [f"label {r.verdict_hash[:12]}… {r.extractor_id} #{r.lesson_index}: "
                           f"{r.problem}" for r in rows.itertuples()]
    return rows, f"{n} label rows name a stored verdict and a lesson in range"


CHECKS: dict[str, tuple[str, CheckFn]] = {
    "chain_verifies": ("9", _chain_verifies),
    "lessons_governed": ("4", _lessons_governed),
    "produced_by_exists": ("3, 4", _produced_by_exists),
    "produced_by_in_sources": ("4", _produced_by_in_sources),
    "lesson_not_older_than_verdict": ("3", _lesson_not_older_than_verdict),
    "one_event_per_lesson": ("4", _one_event_per_lesson),
    "off_runs_silent": ("1", _off_runs_silent),
    "gate_respected": ("2", _gate_respected),
    "policy_targets_valid": ("7", _policy_targets_valid),
    "policy_provenance_signed": ("8", _policy_provenance_signed),
    "policy_chains_simple": ("8", _policy_chains_simple),
    "default_query_verified_only": ("5", _default_query_verified_only),
    "candidates_match_completions": ("2", _candidates_match_completions),
    "labels_point_at_lessons": ("-", _labels_point_at_lessons),
}
"""Every check by stable name: (invariant, function)."""


# -- running them ---------------------------------------------------------------


def _run(store: Store, name: str) -> CheckResult:
    invariant, fn = CHECKS[name]
    try:
        rows, clean = fn(store)
    except Exception as exc:  # a check that cannot run is a failed check, not a crash
        return CheckResult(name, False, f"check could not run: {type(exc).__name__}: {exc}",
                           pd.DataFrame(), invariant)
    if rows.empty:
        return CheckResult(name, True, clean, rows, invariant)
    first = str(rows["problem"].iat[0]) if "problem" in rows else "see rows"
    return CheckResult(name, False, f"{len(rows)} offending row(s); first: {first}",
                       rows.reset_index(drop=True), invariant)


def audit(store: Store, *, checks: Sequence[str] | None = None) -> AuditReport:
    """Run the audit checks (all, or those named) over ``store``.

    Read-only: works on a store opened with ``read_only=True``. Returns an
    :class:`AuditReport`; it never raises for a failing check.
    """
    names = list(CHECKS) if checks is None else list(checks)
    unknown = [n for n in names if n not in CHECKS]
    if unknown:
        raise BadInputError(
            f"unknown audit check(s) {', '.join(map(repr, unknown))}; expected some of "
            f"{', '.join(CHECKS)}", field="checks",
        )
    return AuditReport([_run(store, n) for n in names], source=store.path)
