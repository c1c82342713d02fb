"""The audit: does a database obey ADR 0011?

``audit(store)`` runs every check below (each named, with the invariant
it guards) and returns an :class:`AuditReport`; each :class:`CheckResult` says
pass/fail, gives a one-line detail and the offending rows as a DataFrame. The
checks are mostly DuckDB SQL, kept by name in :mod:`truss_lab.store._audit_sql` (the
store holds every statement on its tables; these re-derive what the writers should have
written, apart from the writers' code).

A check that cannot run (say, a table was dropped) fails with the error as its detail.

Each check reads the governed tables with the definitions the writers use
(:mod:`truss_lab.store._governed`'s kinds, trusts and event types, the
policy and target enums), so the audit and the write path cannot disagree
about what a lesson is. The checks, by stable name (and the invariant
(docs/explanation/invariants.md) each one guards):

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
``policy_records_match_entries``          8      a policy record's policy_id, target,
                                                 version, settings, trust or supersedes is
                                                 not what its signed lab entry says, its id
                                                 is not the one that entry gives, or a
                                                 signed policy entry has no record
``policy_chains_simple``                  8      supersession pointers fork, cycle, dangle
                                                 or leave a policy without exactly one head
``default_query_verified_only``           5      ``query_memory(store)`` returns an entry
                                                 that is not verified, or a lesson
``candidates_match_completions``          2      re-parsing a run's recorded completions
                                                 (one per sample) does not give its
                                                 candidate rows
``lessons_match_candidates``              2, 4   a lesson of an extraction run differs from
                                                 the candidate that wrote it (text,
                                                 evidence, salience = the candidate's score,
                                                 index, extractor), or no candidate wrote it
``labels_point_at_lessons``               -      a gold label names a verdict the journal
                                                 does not hold, or a lesson_index beyond
                                                 the completion's lessons
``references_point_at_verdicts``          -      a reference lesson or a match label names
                                                 a verdict that is no ``contract_verdict``
                                                 of the journal
``content_claims_hold``                   -      the rows a run wrote (candidates, lessons,
                                                 events, errors, run_chunks,
                                                 run_verdicts, its recordings) or an
                                                 ingested table (labels, references, match
                                                 labels, recordings of no run) differ from
                                                 the integrity claim recorded with them (a
                                                 row edited, deleted or added), or an ended
                                                 run or such a table has no claim
========================================  =====  ==========================================
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..core._errors import BadInputError
from ..core._ids import derive_id
from ..core._models import LessonExtractionPolicy, PolicyTarget, Trust
from ..extract._parser import candidates_frame, parse_completion
from ..journal._ledger import verify_chain
from ..journal._spec import VERDICT_KIND
from ..journal._table import signers_text, verdict_signers
from ..score._consistency import consistency_clusters
from ..store._audit_sql import (
    audit_rows,
    candidates_against_reparsed,
    gate_offenders,
    label_count,
)
from ..store._claims import claim_count, claim_problems
from ..store._governed import LESSON_KIND, LESSON_TRUST, MEMORY_WRITE, query_memory
from ..store._ingested import label_problems
from ..store._store import Store
from ._policies import POLICY_ENTRY_KIND, check_policy_chains

__all__ = ["CHECKS", "AuditReport", "CheckFn", "CheckResult", "audit"]


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one audit check.

    Parameters
    ----------
    name : str
        Stable check name.
    passed : bool
        True when nothing offends.
    detail : str
        One line: what was checked, or what went wrong.
    rows : pandas.DataFrame
        The offending rows (empty when ``passed``).
    invariant : str
        The invariant(s) (docs/explanation/invariants.md) this check guards.
    """

    name: str
    """Stable check name (see the table above)."""
    passed: bool
    """True when nothing offends."""
    detail: str
    """One line: what was checked, or what went wrong."""
    rows: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False)
    """The offending rows (empty when ``passed``)."""
    invariant: str = ""
    """The invariant(s) (docs/explanation/invariants.md) this check guards."""

    def __repr__(self) -> str:
        mark = "PASS" if self.passed else "FAIL"
        return f"{mark} {self.name}: {self.detail}"


class AuditReport:
    """Every check's result. ``ok`` is True when all passed.

    Parameters
    ----------
    checks : sequence of CheckResult
        The results, in check order.
    source : str
        The database the checks ran on.
    """

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
        """JSON-ready: ok, and per check its result and its first offending rows.

        Parameters
        ----------
        max_rows : int, default 20
            Offending rows kept per check (``n_rows`` counts them all).

        Returns
        -------
        dict
            ``source``, ``ok`` and ``checks`` (name, passed, invariant, detail,
            n_rows, rows).
        """
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


def _chain_verifies(store: Store) -> tuple[pd.DataFrame, str]:
    rep = verify_chain(store)
    if rep.ok:
        return pd.DataFrame(), (f"{rep.entries_checked} journal entries verify; "
                                f"{signers_text(verdict_signers(store))}")
    rows = pd.DataFrame(
        [{"seq": rep.first_bad_seq, "reason": rep.reason, "message": rep.message,
          "problem": f"seq {rep.first_bad_seq}: {rep.reason}: {rep.message}"}]
    )
    return rows, ""


def _lessons_governed(store: Store) -> tuple[pd.DataFrame, str]:
    rows = audit_rows(store, "lessons_not_governed", _DEFS)
    n = audit_rows(store, "lesson_count", _DEFS)["n"].iat[0]
    return rows, f"{n} lessons, all kind lesson with trust unverified"


def _produced_by_exists(store: Store) -> tuple[pd.DataFrame, str]:
    rows = audit_rows(store, "produced_by_not_verdict", _DEFS)
    return rows, "every lesson's produced_by is its stored, matching contract_verdict entry"


def _produced_by_in_sources(store: Store) -> tuple[pd.DataFrame, str]:
    rows = audit_rows(store, "produced_by_not_in_sources", _DEFS)
    return rows, "every memory entry lists its produced_by ref among its sources"


def _lesson_not_older_than_verdict(store: Store) -> tuple[pd.DataFrame, str]:
    rows = audit_rows(store, "lessons_older_than_verdict", _DEFS)
    return rows, "no lesson predates its verdict"


def _one_event_per_lesson(store: Store) -> tuple[pd.DataFrame, str]:
    rows = audit_rows(store, "memory_write_events_not_one", _DEFS)
    return rows, "exactly one memory_write event per memory entry, none orphaned"


def _off_runs_silent(store: Store) -> tuple[pd.DataFrame, str]:
    rows = audit_rows(store, "off_runs_working", _DEFS)
    n = audit_rows(store, "off_run_count", _DEFS)["n"].iat[0]
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
    c = audit_rows(store, "k_sample_candidates", _DEFS)
    if len(c):
        rep = consistency_clusters(c)["representative"].to_numpy(dtype=bool)
        c = c[c["valid"].to_numpy(dtype=bool) & ~rep]
    return pa.table({"run_id": pa.array(c["run_id"].astype(object), pa.string()),
                     "candidate_id": pa.array(c["candidate_id"].astype(object), pa.string())})


def _gate_respected(store: Store) -> tuple[pd.DataFrame, str]:
    rows = gate_offenders(store, _not_representatives(store), _DEFS)
    return rows, "every lesson passed its run's gate; every passed_gate matches the policy"


def _policy_targets_valid(store: Store) -> tuple[pd.DataFrame, str]:
    rows = audit_rows(store, "policy_targets_invalid", _DEFS)
    return rows, "every policy record targets a tunable surface"


def _policy_provenance_signed(store: Store) -> tuple[pd.DataFrame, str]:
    rows = audit_rows(store, "policy_provenance_unsigned", _DEFS)
    return rows, "every policy record points at a stored (chain-verified) lab journal entry"


def _policy_records_match_entries(store: Store) -> tuple[pd.DataFrame, str]:
    rows = audit_rows(store, "policy_records_and_entries", _DEFS)
    problems: list[dict[str, Any]] = []
    for r in rows.itertuples():
        where = {"record_id": None if pd.isna(r.record_id) else r.record_id,
                 "entry_seq": int(r.entry_seq), "entry_hash": r.entry_hash}
        if pd.isna(r.payload):
            continue  # a record pointing at no entry: policy_provenance_signed's finding
        signed = json.loads(r.payload)
        if where["record_id"] is None:
            problems.append({**where, "problem": "signed policy entry has no record (the "
                             "record was deleted)"})
            continue
        stored = {"policy_id": r.policy_id, "target": r.target, "version": int(r.version),
                  "settings": json.loads(r.settings), "trust": r.trust,
                  "supersedes": None if pd.isna(r.supersedes) else r.supersedes}
        differ = [f"{k} {stored[k]!r} (signed: {signed[k]!r})" for k in stored
                  if k in signed and stored[k] != signed[k]]
        if r.record_id != derive_id("policy", signed.get("policy_id"), signed.get("version"),
                                    r.entry_hash):
            differ.append("record_id is not the one its signed entry gives")
        if differ:
            problems.append({**where, "problem": "record differs from its signed entry: "
                             + "; ".join(differ)})
    out = pd.DataFrame(problems, columns=["record_id", "entry_seq", "entry_hash", "problem"])
    n = int(rows["record_id"].notna().sum()) if len(rows) else 0
    return out, (f"{n} policy record(s), each what its signed lab entry says (settings, "
                 "target, trust, version, supersession), every signed entry with its record")


def _lessons_match_candidates(store: Store) -> tuple[pd.DataFrame, str]:
    rows = audit_rows(store, "lessons_unlike_candidates", _DEFS)
    return rows, ("every lesson of an extraction run is its candidate's text, evidence, "
                  "score and index")


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


def _reparsed(known: pd.DataFrame) -> pa.Table:
    """The candidate rows (``REPARSED_COLUMNS`` of :mod:`truss_lab.store._audit_sql`) that
    re-parsing the completions of ``known``
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
    scope = audit_rows(store, "completion_scope", _DEFS)
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
    rows = candidates_against_reparsed(store, exp, scope_t)
    # Counted by (run, verdict) as before samples: a verdict's k samples are one pair.
    n_pairs = len(known[["run_id", "verdict_hash"]].drop_duplicates())
    detail = (f"{len(exp)} candidate rows of {n_pairs} (run, verdict) pairs agree with "
              "their re-parsed completions")
    if n_unknown:
        detail += f"; {n_unknown} pair(s) without a recorded completion not compared"
    return rows, detail


def _labels_point_at_lessons(store: Store) -> tuple[pd.DataFrame, str]:
    n = label_count(store)
    if not n:
        return pd.DataFrame(), "no labels"
    rows = label_problems(store)
    if len(rows):
        rows["problem"] = [f"label {r.verdict_hash[:12]}… {r.extractor_id} #{r.lesson_index}: "
                           f"{r.problem}" for r in rows.itertuples()]
    return rows, f"{n} label rows name a stored verdict and a lesson in range"


def _references_point_at_verdicts(store: Store) -> tuple[pd.DataFrame, str]:
    n = audit_rows(store, "reference_counts", _DEFS).iloc[0]
    if not n["n_references"] and not n["n_match_labels"]:
        return pd.DataFrame(), "no reference lessons or match labels"
    rows = audit_rows(store, "references_not_at_verdicts", _DEFS)
    if len(rows):
        rows["problem"] = [f"{r.table_name} {r.verdict_hash[:12]}… {r.item}: {r.problem}"
                           for r in rows.itertuples()]
    return rows, (f"{n['n_references']} reference lesson(s) and {n['n_match_labels']} "
                  f"match label(s) name a stored {VERDICT_KIND}")


def _content_claims_hold(store: Store) -> tuple[pd.DataFrame, str]:
    rows = claim_problems(store.con)
    if len(rows):
        rows["problem"] = [f"{r.scope} {r.subject!r}, {r.part}: {r.problem}"
                           for r in rows.itertuples()]
    n = claim_count(store.con)
    return rows, f"{n} integrity claim(s) (runs and ingested tables) hold"


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
    "policy_records_match_entries": ("8", _policy_records_match_entries),
    "policy_chains_simple": ("8", _policy_chains_simple),
    "default_query_verified_only": ("5", _default_query_verified_only),
    "candidates_match_completions": ("2", _candidates_match_completions),
    "lessons_match_candidates": ("2, 4", _lessons_match_candidates),
    "labels_point_at_lessons": ("-", _labels_point_at_lessons),
    "references_point_at_verdicts": ("-", _references_point_at_verdicts),
    "content_claims_hold": ("-", _content_claims_hold),
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

    Parameters
    ----------
    store : Store
        The database to check.
    checks : sequence of str, optional
        The names of the checks to run (``chain_verifies``, ``lessons_governed``, ...);
        default all.

    Returns
    -------
    truss_lab.govern.AuditReport
        ``ok``, ``failed()`` and ``checks``: one :class:`truss_lab.govern.CheckResult`
        per check, with the invariant it guards and the offending rows.

    Raises
    ------
    BadInputError
        A name in ``checks`` is not a check.

    See Also
    --------
    verify_chain : the first check alone.

    Examples
    --------
    >>> report = tl.audit(store)
    >>> report.ok, report.failed()
    (True, [])
    >>> tl.audit(store, checks=["lessons_governed"]).checks[0].detail
    '414 lessons, all kind lesson with trust unverified'
    """
    names = list(CHECKS) if checks is None else list(checks)
    unknown = [n for n in names if n not in CHECKS]
    if unknown:
        raise BadInputError(
            f"unknown audit check(s) {', '.join(map(repr, unknown))}; expected some of "
            f"{', '.join(CHECKS)}", field="checks",
        )
    return AuditReport([_run(store, n) for n in names], source=store.path)
