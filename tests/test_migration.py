"""A database written by the previous release opens, migrates and still verifies."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

import truss_lab as tl
from truss_lab.store._store import SCHEMA_VERSION

PREVIOUS = Path(__file__).parent / "data" / "previous" / "v0_1_0.duckdb.gz"

# Row counts of the fixture as written by 0.1.0 (tests/data/previous/README.md).
ROWS_V0_1_0 = {
    "candidates": 55, "completions": 80, "events": 36, "extraction_runs": 2, "journal": 41,
    "labels": 120, "memory_entries": 35, "policy_records": 1, "prompt_templates": 1,
    "run_chunks": 2, "run_verdicts": 80, "signing_keys": 2, "verdict_errors": 2,
}


@pytest.fixture()
def previous_db(tmp_path: Path) -> Path:
    path = tmp_path / "v0_1_0.duckdb"
    with gzip.open(PREVIOUS, "rb") as src, path.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    return path


def test_previous_release_migrates_and_verifies(previous_db: Path) -> None:
    with tl.Store(previous_db) as store:
        counts = store.counts()
        # 006_lab_journal moves the proposal (seq 41) to the lab's own chain.
        for table, n in {**ROWS_V0_1_0, "journal": 40, "lab_journal": 1}.items():
            assert counts[table] == n, table
        report = tl.verify_chain(store)
        assert report.ok, report
        assert report.entries_checked == 41 and report.head_seq == 40
        audit = tl.audit(store)
        assert audit.ok, audit


def test_migrated_database_reopens_read_only(previous_db: Path) -> None:
    tl.Store(previous_db).close()
    with tl.Store(previous_db, read_only=True) as store:
        assert store.counts()["journal"] + store.counts()["lab_journal"] == 41


# Columns that 004_consistent_names renamed: (table, old name, new name, order by).
RENAMED = [
    ("completions", "extractor", "extractor_id", "verdict_hash, extractor"),
    ("labels", "extractor", "extractor_id", "verdict_hash, extractor, lesson_index, annotator"),
    ("extraction_runs", "min_salience", "extraction_min_salience", "run_id"),
]


def _old_values(path: Path) -> dict[str, list[tuple[object, ...]]]:
    """The renamed columns' values as 0.1.0 wrote them, read with plain DuckDB."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        assert con.execute("SELECT max(version) FROM schema_version").fetchall() == [(3,)]
        return {t: con.execute(f"SELECT {old} FROM {t} ORDER BY {order}").fetchall()
                for t, old, _, order in RENAMED}
    finally:
        con.close()


def test_renamed_columns_keep_their_values(previous_db: Path) -> None:
    old = _old_values(previous_db)
    assert all(old.values())
    with tl.Store(previous_db) as store:
        assert store.schema_version() == SCHEMA_VERSION
        for table, before, after, order in RENAMED:
            cols = [r[0] for r in store.sql(
                "SELECT column_name FROM information_schema.columns WHERE table_name = ?",
                [table]).fetchall()]
            assert after in cols and before not in cols, table
            new_order = order.replace(before, after)
            got = store.sql(f"SELECT {after} FROM {table} ORDER BY {new_order}").fetchall()
            assert got == old[table], table
        assert "scores" not in store.counts()
        assert tl.verify_chain(store).ok
        assert tl.audit(store).ok


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "truss_lab.faces.cli", *args],
                          capture_output=True, text=True, timeout=300, check=False)


def test_cli_runs_and_sweep_on_a_migrated_database(previous_db: Path) -> None:
    db = str(previous_db)
    tl.Store(previous_db).close()  # migrate (the CLI's read-only opens do not)
    r = _cli("runs", "--db", db, "--json")
    assert r.returncode == 0, r.stderr
    runs = json.loads(r.stdout)
    assert len(runs) == 2
    assert {"extractor_id", "extraction_min_salience", "n_verdicts", "n_lessons"} <= set(runs[0])
    scored = next(x for x in runs if x["policy"] == "model-scored")
    assert scored["n_verdicts"] == 40 and scored["extraction_min_salience"] == 0.7
    r = _cli("runs", "--db", db)
    assert r.returncode == 0 and "verdicts" in r.stdout.splitlines()[0], r.stderr
    r = _cli("sweep", "--db", db, "--run", scored["run_id"], "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["run_id"] == scored["run_id"]


def test_the_proposal_moves_to_the_lab_chain_and_stays_verifiable(previous_db: Path) -> None:
    from truss_lab.core._errors import ChainError
    from truss_lab.journal._ledger import append_lab_entry
    from truss_lab.journal._table import get_entry

    with tl.Store(previous_db) as store:
        lab = get_entry(store, 41, table="lab_journal")
        assert lab is not None and lab["kind"] == "policy_record"
        (seq, h), = store.sql("SELECT produced_by_seq, produced_by_hash FROM policy_records"
                              ).fetchall()
        assert (seq, h) == (41, lab["hash"])
        # Signed over its seq and prev_hash, it keeps both: it links to verdict 40.
        assert lab["prev_hash"] == get_entry(store, 40)["hash"]
        assert get_entry(store, 41) is None  # the verdict journal ends at 40 again
        # The lab chain goes on after it; tampering with it is caught.
        key = tl.SigningKey.from_seed("lab", bytes(32))
        nxt = append_lab_entry(store, "policy_record", {"x": 1}, key)
        assert nxt.seq == 42 and tl.verify_chain(store).ok
        store.sql("UPDATE lab_journal SET payload = '{\"x\": 2}' WHERE seq = 42")
        rep = tl.verify_chain(store)
        assert not rep.ok and rep.first_bad_seq == 42 and "lab journal" in rep.message
        try:
            rep.raise_for_error()
        except ChainError as exc:
            assert exc.seq == 42


def test_a_migration_that_landed_late_still_runs(tmp_path: Path) -> None:
    # Parallel branches: a database already at a later migration (here, as if
    # 006 had not existed when it was created) gets the missing one on open.
    path = tmp_path / "late.duckdb"
    tl.Store(path).close()
    con = duckdb.connect(str(path))
    con.execute("DROP TABLE lab_journal")
    con.execute("DELETE FROM schema_version WHERE version = 6")
    con.close()
    with tl.Store(path) as store:
        assert "lab_journal" in store.counts()
        assert store.sql("SELECT count(*) FROM schema_version WHERE version = 6").fetchall() == [
            (1,)]
