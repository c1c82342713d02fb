from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest

from tests.builders.cli import invoke
from tests.builders.stores import lock_holder
from truss_lab.core._errors import StoreError, StoreLockedError
from truss_lab.store._store import SCHEMA_VERSION, Store, _migrations, open_store

TABLES = {
    "journal", "signing_keys", "memory_entries", "policy_records", "events",
    "extraction_runs", "candidates", "completions", "labels", "schema_version",
}


def test_schema_and_migrations(tmp_path) -> None:
    path = tmp_path / "t.duckdb"
    with Store(path) as s:
        assert TABLES <= set(s.counts())
        assert s.schema_version() == SCHEMA_VERSION
        # One row per migration (numbers may skip while migrations land on branches).
        assert s.counts()["schema_version"] == len(_migrations())
    with Store(path) as s:  # reopening applies nothing twice
        assert s.counts()["schema_version"] == len(_migrations())
    with Store(path, read_only=True) as s:
        with pytest.raises(StoreError, match="read-only"):
            with s.transaction():
                pass


def test_read_only_missing_file(tmp_path) -> None:
    with pytest.raises(StoreError, match="no such database"):
        Store(tmp_path / "missing.duckdb", read_only=True)


@pytest.mark.parametrize("kw", [{"read_only": True}, {"must_exist": True}])
def test_open_store_says_why(tmp_path, kw) -> None:
    # One message and one error class for every face (CLI, notebook helpers).
    missing = tmp_path / "missing.duckdb"
    with pytest.raises(StoreError, match=r"missing.duckdb: no such database \(run `truss-lab"):
        open_store(missing, **kw)
    assert not missing.exists()  # refused, not created
    with open_store(missing) as s:  # a writable open creates and migrates it
        assert s.schema_version() == SCHEMA_VERSION
    with open_store(missing, **kw) as s:
        assert s.read_only is kw.get("read_only", False)


def _rows(n: int, start: int = 0) -> pd.DataFrame:
    return pd.DataFrame({
        "verdict_hash": [f"{i:064x}" for i in range(start, start + n)],
        "extractor_id": ["x"] * n,
        "text": [f"t{i}" for i in range(start, start + n)],
        "source": ["test"] * n,
        "recorded_at": pd.Timestamp("2026-01-01", tz="UTC"),
    })


def test_append_is_idempotent(store) -> None:
    key = ["verdict_hash", "extractor_id"]
    assert store.append("completions", _rows(5), key=key) == 5
    assert store.append("completions", _rows(5), key=key) == 0
    assert store.append("completions", _rows(5, start=3), key=key) == 3
    assert store.counts()["completions"] == 8


def test_append_refuses_conflicting_duplicates_in_one_batch(store) -> None:
    rows = pd.concat([_rows(2), _rows(1).assign(text="other")])
    with pytest.raises(StoreError, match="two different rows share the key"):
        store.append("completions", rows, key=["verdict_hash", "extractor_id"])
    assert store.counts()["completions"] == 0
    # Identical duplicates collapse.
    assert store.append("completions", pd.concat([_rows(2), _rows(2)]),
                        key=["verdict_hash", "extractor_id"]) == 2


def test_transaction_rolls_back_everything(store) -> None:
    before = store.counts()
    with pytest.raises(RuntimeError):
        with store.transaction():
            store.append("completions", _rows(3), key=["verdict_hash", "extractor_id"])
            raise RuntimeError("boom")
    assert store.counts() == before


def test_failed_statement_is_not_committed(store) -> None:
    # DuckDB would turn a COMMIT after a failed statement into a silent rollback;
    # the store must surface the failure instead of reporting success.
    with pytest.raises(Exception, match=r"NOT NULL|Constraint"):
        with store.transaction():
            store.append("completions", _rows(2), key=["verdict_hash", "extractor_id"])
            store.con.execute("INSERT INTO completions (verdict_hash) VALUES ('x')")
    assert store.counts()["completions"] == 0


def test_nested_transaction_joins_outer(store) -> None:
    with pytest.raises(ValueError):
        with store.transaction():
            with store.transaction():
                store.append("completions", _rows(1), key=["verdict_hash", "extractor_id"])
            raise ValueError
    assert store.counts()["completions"] == 0


def test_a_held_transaction_on_a_cursor_commits_or_drops_when_told(tmp_path) -> None:
    # What HeldWrites does: write on a cursor, uncommitted, while the store reads;
    # blocks inside join the held transaction, and only commit() makes rows visible.
    with Store(tmp_path / "held.duckdb") as store:
        key = ["verdict_hash", "extractor_id"]
        for end, stored in (("rollback", 0), ("commit", 3)):
            cur = store.cursor()
            cur.begin()
            with cur.transaction():
                cur.append("completions", _rows(3), key=key)
            assert cur.counts()["completions"] == 3  # its own transaction sees them
            assert store.counts()["completions"] == 0  # not committed yet
            with pytest.raises(StoreError, match="already open"):
                cur.begin()
            getattr(cur, end)()
            cur.close()
            assert store.counts()["completions"] == stored, end


def test_begin_refuses_a_read_only_store(tmp_path) -> None:
    Store(tmp_path / "ro.duckdb").close()
    with Store(tmp_path / "ro.duckdb", read_only=True) as ro:
        with pytest.raises(StoreError, match="read-only"):
            ro.begin()


def test_second_writer_gets_a_clear_lock_error(tmp_path) -> None:
    path = tmp_path / "locked.duckdb"
    Store(path).close()
    with lock_holder(path) as holder:
        with pytest.raises(StoreLockedError) as info:
            Store(path)
        msg = str(info.value)
        assert f"PID {holder.pid}" in msg and "locked by another process" in msg
        assert "\n" not in msg
        # The CLI turns it into one line and a non-zero exit, no traceback.
        r = invoke("init", "--db", path, catch_exceptions=False)
        assert r.exit_code == 2
        assert r.stderr.startswith("error:") and "Traceback" not in r.stderr
        assert f"PID {holder.pid}" in r.stderr


def test_arrow_append_with_nested_types(store) -> None:
    from truss_lab.store._tables import MEMORY_SCHEMA

    t = pa.table({
        "entry_id": ["e1"], "kind": ["lesson"], "trust": ["unverified"], "text": ["x"],
        "salience": [0.5], "evidence": [["check:a"]], "lesson_index": pa.array([0], pa.int32()),
        "produced_by_seq": [1], "produced_by_hash": ["a" * 64],
        "sources": [[{"seq": 1, "hash": "a" * 64}]], "extractor_id": ["x"], "run_id": ["r"],
        "prompt_version": [None], "created_at": [pd.Timestamp("2026-01-01", tz="UTC")],
        "superseded_by": [None],
    }).cast(MEMORY_SCHEMA)
    assert store.append("memory_entries", t, key=["entry_id"]) == 1
    row = store.sql("SELECT sources[1].seq, evidence[1] FROM memory_entries").fetchall()[0]
    assert row == (1, "check:a")


def test_run_record(store) -> None:
    from truss_lab.core._errors import BadInputError
    from truss_lab.store._runs import (
        check_resumable,
        create_run,
        finish_run,
        get_run,
        missing_run_error,
        run_info,
    )

    with pytest.raises(BadInputError, match=r"no extraction run 'r1'; recent runs: \(none\)"):
        run_info(store, "r1")
    kw = dict(extractor_id="x", provider="replay", policy="on", extraction_min_salience=0.7,
              write_memory=True, prompt_version="lesson-v1", prompt_hash="h")
    assert create_run(store, "r1", config={"chunk_size": 10}, **kw) == 1
    assert create_run(store, "r1", **kw) == 0  # a second create is a no-op
    row = run_info(store, "r1")
    assert (row["status"], row["n_lessons"], row["seconds"]) == ("running", 0, 0.0)
    # policy and threshold are columns only (one fact each), not copied into config
    assert row["config"] == '{"chunk_size": 10}'
    assert (row["policy"], row["extraction_min_salience"]) == ("on", 0.7)
    create_run(store, "live", status="live", counted=False, **kw)
    assert get_run(store, "live")["n_lessons"] is None
    assert "recent runs: " in str(missing_run_error(store, "nope"))
    finish_run(store, "r1", "finished", 1.5)
    assert get_run(store, "r1")["status"] == "finished" and get_run(store, "nope") is None
    check_resumable(row, {"policy": "on"})
    with pytest.raises(BadInputError, match="started with policy='on', this call has"):
        check_resumable(row, {"policy": "off"})


OLD_SCHEMA = 3  # the schema of the previous release (migrations 001-003)


def _old_store(path) -> None:
    """A database as the previous version left it: migrations 001-003 only, and a row."""
    import duckdb

    from truss_lab.store._store import _migrations

    con = duckdb.connect(str(path))
    for version, name, sql in _migrations():
        if version <= OLD_SCHEMA:
            con.execute(sql)
            con.execute("INSERT INTO schema_version VALUES (?, ?, now())", [version, name])
    con.execute(
        "INSERT INTO labels VALUES (?, 'x', 0, 1, 'ann', 'old.csv', "
        "TIMESTAMPTZ '2026-01-01 00:00:00+00')", ["a" * 64])
    con.close()


def test_previous_version_database_migrates(tmp_path) -> None:
    path = tmp_path / "old.duckdb"
    _old_store(path)
    if SCHEMA_VERSION > OLD_SCHEMA:
        # Read-only cannot migrate: it says so instead of reading a stale schema.
        with pytest.raises(StoreError, match=f"schema version {OLD_SCHEMA}, this truss_lab"):
            Store(path, read_only=True)
    with Store(path) as s:  # a writable open migrates, keeping the data
        assert s.schema_version() == SCHEMA_VERSION
        assert s.sql("SELECT verdict_hash, useful FROM labels").fetchall() == [("a" * 64, 1)]
        # 004_consistent_names renamed the column and kept its value.
        assert s.sql("SELECT extractor_id FROM labels").fetchall() == [("x",)]
    with Store(path, read_only=True) as s:
        assert TABLES <= set(s.counts())
