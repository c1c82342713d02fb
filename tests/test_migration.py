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
        for table, n in ROWS_V0_1_0.items():
            assert counts[table] == n, table
        report = tl.verify_chain(store)
        assert report.ok, report
        assert report.entries_checked == 41
        audit = tl.audit(store)
        assert audit.ok, audit


def test_migrated_database_reopens_read_only(previous_db: Path) -> None:
    tl.Store(previous_db).close()
    with tl.Store(previous_db, read_only=True) as store:
        assert store.counts()["journal"] == 41


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
    return subprocess.run([sys.executable, "-m", "truss_lab.faces._cli", *args],
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
