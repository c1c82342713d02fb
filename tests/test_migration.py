"""A database written by the previous release opens, migrates and still verifies."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

import truss_lab as tl

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
