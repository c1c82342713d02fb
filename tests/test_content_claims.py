"""Issue 39 item 8: integrity claims over the rows no signature covers.

The attacker's edits that passed ``verify`` and ``audit`` (a lesson's text, a flipped
label, a deleted run_chunks row, a deleted reference, an edited completion text) each
fail ``content_claims_hold`` now, on a copy of a database whose run and ingests recorded
their claims; the unedited database passes every check.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.builders.cli import invoke
from tests.builders.inputs import CLAIM_EDITS as EDITS
from tests.builders.stores import copy_db
from truss_lab.govern._audit import audit
from truss_lab.store._claims import claim_problems
from truss_lab.store._store import Store


@pytest.fixture(scope="module")
def claimed(sample_full: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample (its ingests claimed) with a replayed run that wrote lessons."""
    db = copy_db(sample_full, tmp_path_factory.mktemp("claims") / "lab.duckdb")
    r = invoke("extract", "--db", db, "--extractor", "replay:sim-good-v1", "--policy", "on",
               "--verdicts", "seq <= 120", "--chunk-size", "40", "--quiet", "--json")
    assert r.exit_code == 0, r.output
    return db


def test_an_unedited_database_passes_every_check(claimed: Path) -> None:
    with Store(claimed, read_only=True) as s:
        report = audit(s)
        n = s.sql("SELECT count(*) FROM content_claims").fetchall()[0][0]
    assert report.ok, [c.detail for c in report.failed()]
    assert n >= 4 + 7  # the four ingested tables, the run's seven parts


@pytest.mark.parametrize("name", list(EDITS))
def test_each_edit_fails_the_claims_check(claimed: Path, tmp_path: Path, name: str) -> None:
    db = tmp_path / "edited.duckdb"
    shutil.copy(claimed, db)
    with Store(db) as s:
        for sql in EDITS[name]:
            s.sql(sql)
        assert len(claim_problems(s.con)) >= 1
    r = invoke("audit", "--db", db, "--json")
    assert r.exit_code == 1, r.output
    failed = {c["name"] for c in json.loads(r.stdout)["checks"] if not c["passed"]}
    assert "content_claims_hold" in failed


def test_a_resume_and_a_new_ingest_keep_the_claims_true(claimed: Path, tmp_path: Path) -> None:
    db = copy_db(claimed, tmp_path / "again.duckdb")
    with Store(db, read_only=True) as s:
        run_id, = s.sql("SELECT run_id FROM extraction_runs WHERE status = 'finished' "
                        "ORDER BY started_at DESC LIMIT 1").fetchall()[0]
        vh, ex = s.sql("SELECT verdict_hash, extractor_id FROM candidates LIMIT 1"
                       ).fetchall()[0]
    assert invoke("extract", "--db", db, "--resume", run_id, "--quiet").exit_code == 0
    labels = tmp_path / "more.csv"
    labels.write_text("verdict_hash,extractor,lesson_index,useful,annotator\n"
                      f"{vh},{ex},0,1,zoe\n", encoding="utf-8")
    assert invoke("ingest", "labels", labels, "--db", db).exit_code == 0
    with Store(db, read_only=True) as s:
        assert claim_problems(s.con).empty


def test_a_runs_event_claim_is_its_memory_writes() -> None:
    # A policy decision later made on the run carries its run id (provenance) and is
    # covered by the lab journal's signature, not by the run's claim, which it must not
    # break; the condition's literal is the stored event type.
    from truss_lab.store._claims import _RUN_ROWS
    from truss_lab.store._governed import MEMORY_WRITE, POLICY_WRITE

    assert f"'{MEMORY_WRITE}'" in _RUN_ROWS["events"]
    assert POLICY_WRITE not in _RUN_ROWS["events"]


def test_an_appends_claim_equals_the_tables_claim_computed_whole(claimed: Path,
                                                                 tmp_path: Path) -> None:
    # An append adds its own rows' digest to the table's claim (TableAppend) instead of
    # rehashing the table; after appends of new rows, rows already stored (skipped), a
    # judge's calls (claimed) and a run's calls (the run's claim, not the table's), each
    # claim equals the one computed over the whole table.
    import pandas as pd

    from truss_lab.extract._gate import record_completions
    from truss_lab.ingest._ingest import ingest_labels
    from truss_lab.store._claims import TABLE_CLAIMS, claim_table

    db = copy_db(claimed, tmp_path / "more.duckdb")
    claims = ("SELECT subject, n_rows, digest FROM content_claims WHERE scope = 'table' "
              "ORDER BY subject")
    with Store(db) as s:
        before = s.sql(claims).fetchall()
        labels = s.sql("SELECT verdict_hash, extractor_id AS extractor, lesson_index, useful, "
                       "annotator FROM labels ORDER BY ALL LIMIT 4").df()
        ingest_labels(s, pd.concat([labels, labels.assign(annotator="zoe-2")]))
        call = dict(verdict_hash=labels["verdict_hash"][0], extractor="judge-x",
                    model="m", prompt_version="judge-v1", request_hash="r" * 64,
                    text="{}", latency_ms=float("nan"), prompt_tokens=3,
                    completion_tokens=None)
        for run_id, judged in ((None, "good-run"), ("some-run", None), (None, "good-run")):
            record_completions(s, [{**call, "judged_run_id": judged}], run_id)
        after = s.sql(claims).fetchall()
        s.begin()
        for table in TABLE_CLAIMS:
            claim_table(s.con, table)
        whole = s.sql(claims).fetchall()
        s.rollback()
        assert claim_problems(s.con).empty
    moved = {t: (n1 - n0) for (t, n0, _), (_, n1, _) in zip(before, after, strict=True)}
    assert moved == {"completions": 1, "labels": 4, "match_labels": 0,
                     "reference_lessons": 0}
    assert after == whole
