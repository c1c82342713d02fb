"""The audit: a clean database passes every check; each corruption trips its check only.

One good database is built per module (60 sample verdicts, three runs with
different policies, an off run, three policy records) and copied per test.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.builders.cli import invoke
from tests.builders.stores import SAMPLE, copy_db
from truss_lab.core._config import MemoryConfig
from truss_lab.core._models import LedgerRef, Policy
from truss_lab.extract._extractor import Extractor, ensure_run, extract_verdicts
from truss_lab.extract._gate import ContractCloseLearning, gated_tables, write_extraction
from truss_lab.govern._audit import CHECKS, AuditReport, audit
from truss_lab.govern._policies import write_policy
from truss_lab.ingest._ingest import ingest_completions
from truss_lab.journal._crypto import SigningKey
from truss_lab.journal._ledger import import_journal
from truss_lab.store._runs import finish_run
from truss_lab.store._store import Store

ON_RUN = "run-good-on"
SCORED_RUN = "run-over-scored"
HEUR_RUN = "run-heuristic-scored"
OFF_RUN = "run-off"


def _batch(store: Store, extractor: Extractor, config: MemoryConfig, run_id: str,
           verdicts: list[tuple[int, str, dict]]) -> None:
    # The same functions ContractCloseLearning uses, over many verdicts at once
    # (one transaction instead of one per verdict keeps the fixture fast).
    rows = extract_verdicts(extractor, verdicts)
    cand, mem, err = gated_tables(rows, config, run_id=run_id)
    with store.transaction():
        ensure_run(store, run_id, extractor, config, status="running", write_memory=True)
        write_extraction(store, cand, mem, err)
        finish_run(store, run_id, "finished", 0.0)  # the run's end records its claim


@pytest.fixture(scope="module")
def good_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("audit")
    path = folder / "good.duckdb"
    # A verified prefix of the sample journal is itself a valid journal: 200
    # entries keep chain verification (run by every audit) quick.
    lines = (SAMPLE / "journal.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (folder / "journal.jsonl").write_text("".join(lines[:200]), encoding="utf-8")
    st = Store(path)
    try:
        import_journal(st, folder / "journal.jsonl", keyring=SAMPLE / "keys.json")
        ingest_completions(st, SAMPLE / "completions.jsonl")
        verdicts = [
            (int(s), h, json.loads(p))
            for s, h, p in st.sql(
                "SELECT seq, hash, payload::VARCHAR FROM journal WHERE seq > 100 "
                "ORDER BY seq LIMIT 60"
            ).fetchall()
        ]
        _batch(st, Extractor.replay(st, "sim-good-v1"), MemoryConfig(lesson_extraction="on"),
               ON_RUN, verdicts)
        _batch(st, Extractor.replay(st, "sim-overconfident-v1"),
               MemoryConfig(lesson_extraction="model-scored", extraction_min_salience=0.8),
               SCORED_RUN, verdicts)
        _batch(st, Extractor.heuristic(),
               MemoryConfig(lesson_extraction="model-scored", extraction_min_salience=0.5),
               HEUR_RUN, verdicts[:30])
        # A few verdicts the live way, one at a time.
        ccl = ContractCloseLearning(Extractor.heuristic(),
                                    MemoryConfig(lesson_extraction="on"))
        for s, h, _ in verdicts[30:33]:
            ccl.on_verdict_recorded(st, LedgerRef(seq=s, hash=h))
        ensure_run(st, OFF_RUN, Extractor.heuristic(), MemoryConfig(), status="running",
                   write_memory=True)
        st.sql("UPDATE extraction_runs SET provider_calls = 0 WHERE run_id = ?", [OFF_RUN])
        finish_run(st, OFF_RUN, "finished", 0.0)
        key = SigningKey.from_seed("test-operator", bytes(range(32)))
        r1 = write_policy(st, Policy(policy_id="min-salience", target="salience",
                                     settings={"extraction_min_salience": 0.7}), key)
        write_policy(st, Policy(policy_id="min-salience", target="salience",
                                settings={"extraction_min_salience": 0.75}), key,
                     supersedes=r1.record_id)
        write_policy(st, Policy(policy_id="router", target="routing", settings={"x": 1}), key)
        st.checkpoint()
    finally:
        st.close()  # a still-open connection would be handed back to every copy
    return path


@pytest.fixture
def db(good_db: Path, tmp_path: Path) -> Iterator[Store]:
    """A writable copy of the good database."""
    path = tmp_path / "copy.duckdb"
    copy_db(good_db, path)
    st = Store(path)
    yield st
    st.close()


# Every edit below changes rows a run's integrity claim covers, so content_claims_hold
# fails on each as well (tests/test_content_claims.py tests that check); these tests
# name the check that finds what the edit breaks, which must fail with or without claims.
_CLAIMS = "content_claims_hold"


def _failed(store: Store) -> set[str]:
    return {c.name for c in audit(store).failed()} - {_CLAIMS}


def _audited(store: Store) -> tuple[set[str], AuditReport]:
    report = audit(store)
    return {c.name for c in report.failed()} - {_CLAIMS}, report


def _one(store: Store, sql: str, params: list | None = None):
    return store.sql(sql, params).fetchall()[0]


def test_the_fixture_exercises_every_policy(db: Store) -> None:
    got = dict(db.sql(
        "SELECT r.policy, count(c.candidate_id) FROM extraction_runs r "
        "LEFT JOIN candidates c USING (run_id) GROUP BY r.policy"
    ).fetchall())
    assert got["on"] > 0 and got["model-scored"] > 0 and got["off"] == 0
    n_lessons, n_invalid = _one(db, "SELECT (SELECT count(*) FROM memory_entries), "
                                    "(SELECT count(*) FROM candidates WHERE NOT valid)")
    assert n_lessons > 50 and n_invalid > 0
    # Candidates that failed the model-scored gate exist (so the gate check is not vacuous).
    assert _one(db, "SELECT count(*) FROM candidates WHERE run_id = ? AND valid "
                    "AND NOT passed_gate", [SCORED_RUN])[0] > 0


def test_clean_database_passes_every_check(db: Store) -> None:
    report = audit(db)
    assert report.ok, report
    assert [c.name for c in report.checks] == list(CHECKS)
    frame = report.to_frame()
    assert list(frame.columns) == ["name", "passed", "n_rows", "invariant", "detail"]
    assert frame["passed"].all() and (frame["n_rows"] == 0).all()
    assert report.failed() == []


def test_read_only_store_can_be_audited(good_db: Path) -> None:
    with Store(good_db, read_only=True) as st:
        assert audit(st).ok


# -- one corruption per check ---------------------------------------------------


def _a_lesson(db: Store, run_id: str = ON_RUN) -> str:
    return _one(db, "SELECT entry_id FROM memory_entries WHERE run_id = ? ORDER BY entry_id "
                    "LIMIT 1", [run_id])[0]


def test_chain_verifies(db: Store) -> None:
    # A verdict no lesson came from: only the signature/hash check can see it.
    db.sql("UPDATE journal SET ts = '2026-11-01T00:00:01Z' WHERE seq = 5")
    failed, report = _audited(db)
    assert failed == {"chain_verifies"}
    assert report["chain_verifies"].rows["seq"].tolist() == [5]


def test_lessons_governed_non_lesson_from_a_run(db: Store) -> None:
    eid = _a_lesson(db)
    db.sql("UPDATE memory_entries SET kind = 'fact' WHERE entry_id = ?", [eid])
    failed, report = _audited(db)
    assert failed == {"lessons_governed"}
    assert report["lessons_governed"].rows["entry_id"].tolist() == [eid]


def test_verified_lesson_breaks_governance_and_the_default_view(db: Store) -> None:
    # A verified lesson breaks invariant 4 (lessons_governed); and because the
    # default query returns verified entries, the lesson now shows up there too,
    # which is exactly what default_query_verified_only exists to catch: the
    # pair must fail together.
    eid = _a_lesson(db)
    db.sql("UPDATE memory_entries SET trust = 'verified' WHERE entry_id = ?", [eid])
    assert _failed(db) == {"lessons_governed", "default_query_verified_only"}


def test_verified_superseded_lesson_is_only_a_governance_failure(db: Store) -> None:
    # Superseded entries are outside the default view, so only invariant 4 fails.
    eid = _a_lesson(db)
    db.sql("UPDATE memory_entries SET trust = 'verified', superseded_by = 'x' "
           "WHERE entry_id = ?", [eid])
    assert _failed(db) == {"lessons_governed"}


def test_default_query_verified_only(db: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    # From data alone this check cannot fail without lessons_governed (above); it
    # also guards the query code: a query that forgets its trust filter fails it alone.
    import truss_lab.govern._audit as audit_mod

    monkeypatch.setattr(audit_mod, "query_memory",
                        lambda store, q=None: store.sql("SELECT * FROM memory_entries").df())
    assert _failed(db) == {"default_query_verified_only"}


@pytest.mark.parametrize("how", ["missing_seq", "other_hash", "not_a_verdict"])
def test_produced_by_exists(db: Store, how: str) -> None:
    eid = _a_lesson(db)
    if how == "missing_seq":
        db.sql("UPDATE memory_entries SET produced_by_seq = 999999 WHERE entry_id = ?", [eid])
    elif how == "other_hash":
        # Another verdict's seq with this lesson's hash: names an entry, wrong hash.
        db.sql("UPDATE memory_entries SET produced_by_seq = 3 WHERE entry_id = ?", [eid])
    else:
        # A journal entry that is not a verdict (policy records are in the lab
        # journal now, so one of another kind is appended upstream-style).
        from truss_lab.journal._ledger import append_entry

        ref = append_entry(db, "note", {"text": "not a verdict"},
                           SigningKey.from_seed("test-operator", bytes(range(32))))
        seq, h = ref.seq, ref.hash
        db.sql("UPDATE memory_entries SET produced_by_seq = ?, produced_by_hash = ? "
               "WHERE entry_id = ?", [seq, h, eid])
    # Keep sources consistent with the new ref, so only produced_by_exists can see it.
    db.sql("UPDATE memory_entries SET sources = [{'seq': produced_by_seq, "
           "'hash': produced_by_hash}] WHERE entry_id = ?", [eid])
    failed, report = _audited(db)
    assert failed == {"produced_by_exists"}
    rows = report["produced_by_exists"].rows
    assert set(rows["entry_id"]) == {eid}


def test_produced_by_in_sources(db: Store) -> None:
    eid = _a_lesson(db)
    db.sql("UPDATE memory_entries SET sources = [{'seq': 1, 'hash': 'x'}] WHERE entry_id = ?",
           [eid])
    assert _failed(db) == {"produced_by_in_sources"}


def test_lesson_not_older_than_verdict(db: Store) -> None:
    eid = _a_lesson(db)
    db.sql("UPDATE memory_entries m SET created_at = j.recorded_at - INTERVAL 1 DAY "
           "FROM journal j WHERE j.seq = m.produced_by_seq AND m.entry_id = ?", [eid])
    assert _failed(db) == {"lesson_not_older_than_verdict"}


def test_lesson_older_than_the_signed_ts(db: Store) -> None:
    eid = _a_lesson(db)
    db.sql("UPDATE journal SET recorded_at = TIMESTAMPTZ '2026-01-01 00:00:00+00'")
    db.sql("UPDATE memory_entries m SET created_at = TIMESTAMPTZ '2026-02-01 00:00:00+00' "
           "WHERE m.entry_id = ?", [eid])
    assert _failed(db) == {"lesson_not_older_than_verdict"}


def test_one_event_per_lesson(db: Store) -> None:
    eid = _a_lesson(db)
    db.sql("DELETE FROM events WHERE subject_id = ?", [eid])
    db.sql("INSERT INTO events SELECT 'ev-orphan', 'memory_write', 'lesson-nowhere', kind, "
           "trust, produced_by_seq, produced_by_hash, run_id, ts FROM events "
           "WHERE type = 'memory_write' LIMIT 1")
    failed, report = _audited(db)
    assert failed == {"one_event_per_lesson"}
    assert set(report["one_event_per_lesson"].rows["subject_id"]) == {eid, "lesson-nowhere"}


def test_one_event_per_lesson_duplicate_event(db: Store) -> None:
    eid = _a_lesson(db)
    db.sql("INSERT INTO events SELECT 'ev-dup', type, subject_id, kind, trust, "
           "produced_by_seq, produced_by_hash, run_id, ts FROM events WHERE subject_id = ?",
           [eid])
    assert _failed(db) == {"one_event_per_lesson"}


def test_off_runs_silent_candidate(db: Store) -> None:
    db.sql("INSERT INTO candidates SELECT 'cand-x', ?, verdict_seq, verdict_hash, "
           "'heuristic-v1', 0, 'a lesson', 0.9, [], true, NULL, 0.9, 'model_salience@1', "
           "false, NULL, 0, NULL FROM candidates LIMIT 1", [OFF_RUN])
    assert _failed(db) == {"off_runs_silent"}


def test_off_runs_silent_provider_call(db: Store) -> None:
    db.sql("UPDATE extraction_runs SET provider_calls = 3 WHERE run_id = ?", [OFF_RUN])
    assert _failed(db) == {"off_runs_silent"}


def _insert_lesson(db: Store, run_id: str, salience: float) -> str:
    eid = "lesson-inserted"
    seq, h = _one(db, "SELECT seq, hash FROM journal WHERE seq = 110")
    db.sql(
        "INSERT INTO memory_entries VALUES (?, 'lesson', 'unverified', 'sneaked in', ?, [], 9, "
        "?, ?, [{'seq': ?, 'hash': ?}], 'sim-overconfident-v1', ?, 'lesson-v1', now(), NULL)",
        [eid, salience, seq, h, seq, h, run_id],
    )
    db.sql("INSERT INTO events VALUES ('ev-inserted', 'memory_write', ?, 'lesson', "
           "'unverified', ?, ?, ?, now())", [eid, seq, h, run_id])
    return eid


def test_gate_respected_lesson_below_threshold(db: Store) -> None:
    eid = _insert_lesson(db, SCORED_RUN, 0.5)
    failed, report = _audited(db)
    # ... and no candidate wrote it
    assert failed == {"gate_respected", "lessons_match_candidates"}
    rows = report["gate_respected"].rows
    assert set(rows["entry_id"]) == {eid}
    assert "lesson below its run's extraction_min_salience" in set(rows["problem"])


def test_gate_respected_lesson_from_failed_candidate(db: Store) -> None:
    eid = _a_lesson(db, SCORED_RUN)
    db.sql("UPDATE candidates SET passed_gate = false WHERE entry_id = ?", [eid])
    assert _failed(db) == {"gate_respected"}


def test_gate_respected_lesson_from_invalid_candidate_in_on_run(db: Store) -> None:
    eid = _a_lesson(db, ON_RUN)
    db.sql("UPDATE candidates SET valid = false, drop_reason = 'empty_text' "
           "WHERE entry_id = ? AND run_id = ?", [eid, ON_RUN])
    failed = _failed(db)
    # Re-parsing the recorded completion says the lesson was valid, so
    # candidates_match_completions must fail too: the row was edited after the fact.
    assert failed == {"gate_respected", "candidates_match_completions"}


def test_gate_respected_on_a_run_without_recordings(db: Store) -> None:
    eid = _a_lesson(db, HEUR_RUN)
    db.sql("UPDATE candidates SET valid = false WHERE entry_id = ?", [eid])
    assert _failed(db) == {"gate_respected"}


def test_policy_targets_valid(db: Store) -> None:
    db.sql("UPDATE policy_records SET target = 'core_identity' WHERE policy_id = 'router'")
    assert _failed(db) == {"policy_targets_valid", "policy_records_match_entries"}


def test_policy_provenance_signed(db: Store) -> None:
    db.sql("UPDATE policy_records SET produced_by_hash = ? WHERE policy_id = 'router'",
           ["f" * 64])
    # verify_chain checks every policy record's provenance too (issue 28 item 14), and the
    # signed entry it pointed at has no record now
    assert _failed(db) == {"policy_provenance_signed", "chain_verifies",
                           "policy_records_match_entries"}


def test_policy_provenance_missing_from_sources(db: Store) -> None:
    db.sql("UPDATE policy_records SET sources = [] WHERE policy_id = 'router'")
    assert _failed(db) == {"policy_provenance_signed"}


def test_policy_chains_simple_cycle(db: Store) -> None:
    v1, v2 = [r[0] for r in db.sql(
        "SELECT record_id FROM policy_records WHERE policy_id = 'min-salience' ORDER BY version"
    ).fetchall()]
    # v1 <-> v2 point at each other both ways: consistent pointers, no head.
    db.sql("UPDATE policy_records SET supersedes = ?, superseded_by = ? WHERE record_id = ?",
           [v2, v2, v1])
    db.sql("UPDATE policy_records SET supersedes = ?, superseded_by = ? WHERE record_id = ?",
           [v1, v1, v2])
    failed, report = _audited(db)
    assert failed == {"policy_chains_simple", "policy_records_match_entries"}
    problems = set(report["policy_chains_simple"].rows["problem"])
    assert "supersession cycle" in problems


def test_policy_chains_simple_fork(db: Store) -> None:
    v1 = _one(db, "SELECT record_id FROM policy_records WHERE policy_id = 'min-salience' "
                  "AND version = 1")[0]
    db.sql("INSERT INTO policy_records SELECT 'policy-fork', policy_id, target, 3, settings, "
           "trust, produced_by_seq, produced_by_hash, sources, extractor_id, run_id, "
           "created_at, ?, NULL FROM policy_records WHERE record_id = ?", [v1, v1])
    assert _failed(db) == {"policy_chains_simple", "policy_records_match_entries"}


# Issue 39 item 7: direct edits of governed rows, each caught against what was signed
# (a policy record against its lab entry) or what wrote it (a lesson against its candidate).


def _policy(db: Store, policy_id: str = "router") -> str:
    return _one(db, "SELECT record_id FROM policy_records WHERE policy_id = ? "
                    "AND superseded_by IS NULL", [policy_id])[0]


@pytest.mark.parametrize("column,value", [
    ("settings", '{"extraction_min_salience": 0.05}'), ("trust", "verified"),
    ("version", 7), ("policy_id", "other")])
def test_policy_records_match_entries_edited(db: Store, column: str, value: object) -> None:
    rid = _policy(db, "min-salience")
    db.sql(f"UPDATE policy_records SET {column} = ? WHERE record_id = ?", [value, rid])
    failed, report = _audited(db)
    assert "policy_records_match_entries" in failed
    assert failed <= {"policy_records_match_entries", "policy_chains_simple"}
    rows = report["policy_records_match_entries"].rows
    assert rows["record_id"].tolist() == [rid]
    assert f"{column} " in rows["problem"].iat[0] and "signed:" in rows["problem"].iat[0]


def test_policy_records_match_entries_deleted(db: Store) -> None:
    n = _one(db, "SELECT count(*) FROM policy_records")[0]
    db.sql("DELETE FROM policy_records")
    failed, report = _audited(db)
    assert failed == {"policy_records_match_entries"}
    rows = report["policy_records_match_entries"].rows
    assert len(rows) == n and set(rows["problem"]) == {
        "signed policy entry has no record (the record was deleted)"}


def test_policy_records_match_entries_supersedes(db: Store) -> None:
    v1, v2 = [r[0] for r in db.sql(
        "SELECT record_id FROM policy_records WHERE policy_id = 'min-salience' ORDER BY version"
    ).fetchall()]
    # v2 no longer supersedes v1, and v1 is a head again: two heads, and unsigned
    db.sql("UPDATE policy_records SET supersedes = NULL WHERE record_id = ?", [v2])
    db.sql("UPDATE policy_records SET superseded_by = NULL WHERE record_id = ?", [v1])
    failed, report = _audited(db)
    assert failed == {"policy_records_match_entries", "policy_chains_simple"}
    assert "supersedes None" in report["policy_records_match_entries"].rows["problem"].iat[0]


@pytest.mark.parametrize("column,value", [
    ("salience", 0.99), ("text", "an edited lesson"), ("evidence", ["check:forged"]),
    ("lesson_index", 7)])
def test_lessons_match_candidates_edited(db: Store, column: str, value: object) -> None:
    eid = _a_lesson(db)
    db.sql(f"UPDATE memory_entries SET {column} = ? WHERE entry_id = ?", [value, eid])
    failed, report = _audited(db)
    assert "lessons_match_candidates" in failed
    rows = report["lessons_match_candidates"].rows
    assert rows["entry_id"].tolist() == [eid]
    assert rows["problem"].iat[0] == f"differs from its candidate in {column}"


def test_candidates_match_completions_text(db: Store) -> None:
    db.sql("UPDATE candidates SET text = text || ' (edited)' WHERE candidate_id = ("
           "SELECT min(candidate_id) FROM candidates WHERE run_id = ? AND valid)", [ON_RUN])
    failed, report = _audited(db)
    # the candidate wrote a lesson, which no longer has its text
    assert failed == {"candidates_match_completions", "lessons_match_candidates"}
    rows = report["candidates_match_completions"].rows
    assert len(rows) == 2  # the edited row, and the parsed lesson it no longer matches


def test_candidates_match_completions_salience_and_deletion(db: Store) -> None:
    # A candidate that wrote no lesson, so nothing but the comparison can notice.
    cid = _one(db, "SELECT min(candidate_id) FROM candidates WHERE run_id = ? "
                   "AND NOT passed_gate AND valid", [SCORED_RUN])[0]
    db.sql("DELETE FROM candidates WHERE candidate_id = ? AND run_id = ?", [cid, SCORED_RUN])
    assert _failed(db) == {"candidates_match_completions"}


def test_candidates_match_completions_invalid_row_edited(db: Store) -> None:
    db.sql("UPDATE candidates SET drop_reason = drop_reason, salience = 0.5 "
           "WHERE candidate_id = (SELECT min(candidate_id) FROM candidates "
           "WHERE run_id = ? AND NOT valid)", [SCORED_RUN])
    assert _failed(db) == {"candidates_match_completions"}


def test_labels_point_at_lessons_unknown_verdict_and_index(db: Store) -> None:
    h, ext = db.sql("SELECT verdict_hash, extractor_id FROM completions JOIN journal "
                    "ON hash = verdict_hash WHERE text LIKE '%\"text\"%' ORDER BY seq LIMIT 1"
                    ).fetchall()[0]
    db.sql("INSERT INTO labels VALUES (?, ?, 0, 1, 'a', 't', now()), "
           "(?, ?, 0, 1, 'a', 't', now())", [h, ext, "ab" * 32, ext])
    assert _failed(db) == {"labels_point_at_lessons"}
    db.sql("DELETE FROM labels WHERE verdict_hash = ?", ["ab" * 32])
    assert _failed(db) == set()
    db.sql("UPDATE labels SET lesson_index = 99")
    assert _failed(db) == {"labels_point_at_lessons"}


def test_references_point_at_verdicts_after_an_ingest_naming_an_unknown_verdict(
        sample_full: Path, tmp_path: Path) -> None:
    """Issue 28 follow-up: a reference to a verdict the journal lacks lands with a warning
    (item 13) and the audit names it; the bundled sample (references, people's match
    labels) passes."""
    path = copy_db(sample_full, tmp_path / "lab.duckdb")
    with Store(path) as s:
        clean = audit(s, checks=["references_point_at_verdicts"])
        n_refs, n_match = _one(s, "SELECT (SELECT count(*) FROM reference_lessons), "
                                  "(SELECT count(*) FROM match_labels)")
    assert clean.ok, clean
    assert n_refs > 0 and n_match > 0  # the sample's rows are checked, not an empty table
    assert clean["references_point_at_verdicts"].detail == (
        f"{n_refs} reference lesson(s) and {n_match} match label(s) name a stored "
        "contract_verdict")
    unknown = "ab" * 32
    refs = tmp_path / "refs.jsonl"
    refs.write_text(json.dumps({"verdict_hash": unknown, "reference_id": "r1",
                                "text": "Check the DST window", "annotator": "x"}) + "\n",
                    encoding="utf-8")
    r = invoke("ingest", "references", refs, "--db", path)
    assert r.exit_code == 0, r.output  # it lands: a warning, not a rejected line
    assert f"verdict {unknown}, 1 reference(s): unknown verdict" in r.output
    r = invoke("audit", "--db", path)
    assert r.exit_code == 1, r.output
    assert "references_point_at_verdicts" in r.output and unknown[:12] in r.output
    with Store(path) as s:
        # A match label whose verdict is gone (say, a journal re-imported from another
        # upstream): the same check, its own row.
        s.sql("INSERT INTO match_labels VALUES (?, 'sim-good-v1', 0, '', 'x', NULL, 't', "
              "now())", ["cd" * 32])
        failed, report = _audited(s)
    assert failed == {"references_point_at_verdicts"}
    rows = report["references_point_at_verdicts"].rows
    assert rows[["table_name", "verdict_hash", "item", "annotator"]].values.tolist() == [
        ["reference_lessons", unknown, "r1", "x"],
        ["match_labels", "cd" * 32, "sim-good-v1 #0", "x"]]
    assert rows["problem"].str.endswith("unknown verdict (not in the journal)").all()


def test_references_point_at_verdicts_of_another_kind(db: Store) -> None:
    # A hash the journal holds, but not of a verdict: a policy proposal of an old database.
    h = _one(db, "SELECT hash FROM journal ORDER BY seq LIMIT 1")[0]
    db.sql("INSERT INTO reference_lessons VALUES (?, 'r1', 'x', [], '', 't', now())", [h])
    assert _failed(db) == set()
    db.sql("UPDATE journal SET kind = 'other' WHERE hash = ?", [h])
    failed, report = _audited(db)
    assert "references_point_at_verdicts" in failed
    assert report["references_point_at_verdicts"].rows["problem"].tolist() == [
        f"reference_lessons {h[:12]}… r1: journal entry is a other, not a contract_verdict"]


def test_each_check_has_a_corruption_test() -> None:
    names = {n for n in globals() if n.startswith("test_")}
    for check in CHECKS:
        assert any(n.startswith(f"test_{check}") for n in names), check


def test_a_check_that_cannot_run_fails_cleanly(db: Store) -> None:
    db.sql("DROP TABLE completions")
    report = audit(db)
    # The claims over completions cannot be recomputed either: failed, with the reason.
    assert {c.name for c in report.failed()} == {"candidates_match_completions", _CLAIMS}
    assert report["candidates_match_completions"].detail.startswith("check could not run")
    assert "cannot recompute" in report[_CLAIMS].detail


def test_content_claims_hold_fails_on_a_deleted_candidate(db: Store) -> None:
    # The claim's own tests, one per edit the attacker made: tests/test_content_claims.py.
    db.sql("DELETE FROM candidates WHERE candidate_id = (SELECT min(candidate_id) "
           "FROM candidates WHERE run_id = ?)", [ON_RUN])
    report = audit(db)
    assert _CLAIMS in {c.name for c in report.failed()}
    assert f"run '{ON_RUN}', candidates" in report[_CLAIMS].detail


def test_unknown_check_name_is_a_clear_error(db: Store) -> None:
    from truss_lab.core._errors import BadInputError

    with pytest.raises(BadInputError, match="unknown audit check"):
        audit(db, checks=["nope"])
    assert [c.name for c in audit(db, checks=["chain_verifies"]).checks] == ["chain_verifies"]


# -- presentation -------------------------------------------------------------


def test_repr_and_html_escape(db: Store) -> None:
    eid = _a_lesson(db)
    db.sql("UPDATE memory_entries SET trust = 'verified', text = '<script>alert(1)</script>' "
           "WHERE entry_id = ?", [eid])
    report = audit(db)
    assert isinstance(report, AuditReport) and not report.ok
    text = repr(report)
    assert "FAIL lessons_governed" in text and "PASS chain_verifies" in text
    page = report._repr_html_()
    assert "<script>" not in page
    assert "&lt;script&gt;" in page
    d = report.to_dict()
    assert d["ok"] is False and json.dumps(d)


# -- CLI ------------------------------------------------------------------------


def test_cli_audit(good_db: Path, tmp_path: Path) -> None:
    res = invoke("audit", "--db", str(good_db))
    assert res.exit_code == 0, res.output
    assert "ok: all checks passed" in res.output

    bad = tmp_path / "bad.duckdb"
    copy_db(good_db, bad)
    with Store(bad) as st:
        st.sql("UPDATE policy_records SET target = 'core_identity' WHERE policy_id = 'router'")
    res = invoke("audit", "--db", str(bad), "--json")
    assert res.exit_code == 1
    doc = json.loads(res.output)
    assert doc["ok"] is False
    assert [c["name"] for c in doc["checks"] if not c["passed"]] == [
        "policy_targets_valid", "policy_records_match_entries"]

    res = invoke("audit", "--db", str(tmp_path / "none.duckdb"))
    assert res.exit_code == 2
    assert "no such database" in res.output and "Traceback" not in res.output


def test_cli_audit_has_help() -> None:
    res = invoke("audit", "--help")
    assert res.exit_code == 0 and "ADR 0011" in res.output
