"""Leaving the lab: export to Parquet/CSV with a manifest, the views, the comments."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import truss_lab as tl
from tests.builders.cli import invoke
from tests.builders.stores import copy_db
from truss_lab.faces._notebook import sample_run_id
from truss_lab.store._export import content_hash, relations

RUNS = ("sim-good-v1", "sim-overconfident-v1")


@pytest.fixture(scope="module")
def db(sample_full: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = copy_db(sample_full, tmp_path_factory.mktemp("export") / "lab.duckdb")
    store = tl.Store(path)
    tl.run_sample_extractions(store, extractors=RUNS)
    key = tl.SigningKey.generate("tester")
    tl.propose_threshold(store, sample_run_id(RUNS[0]), key, n_boot=20)
    store.close()
    return path


def test_parquet_export_round_trips_every_table_and_view(db: Path, tmp_path: Path) -> None:
    r = invoke("export", "--db", str(db), "--out", str(tmp_path / "x"))
    assert r.exit_code == 0, r.output
    manifest = json.loads((tmp_path / "x" / "manifest.json").read_text())
    with tl.Store(db, read_only=True) as store:
        names = relations(store)
        assert [(e["name"], e["kind"]) for e in manifest["relations"]] == names
        assert {"labelled_candidates", "lesson_verdicts"} <= {n for n, k in names if k == "view"}
        for e in manifest["relations"]:
            f = tmp_path / "x" / e["file"]
            literal = "'" + str(f).replace("'", "''") + "'"
            assert store.sql(f"SELECT count(*) FROM read_parquet({literal})").fetchall()[0][0] \
                == e["rows"], e["name"]
            assert content_hash(store, f"read_parquet({literal})") == e["content_sha256"], \
                e["name"]
        assert all(e["rows"] for e in manifest["relations"]
                   if e["name"] in ("journal", "candidates", "memory_entries",
                                    "policy_records", "labelled_candidates"))
    # An export is written whole into a new folder, never over another one.
    r = invoke("export", "--db", str(db), "--out", str(tmp_path / "x"))
    assert r.exit_code == 2 and "already holds an export" in r.output


def test_content_hash_ignores_order_and_sees_every_value(store) -> None:
    store.sql("CREATE TABLE t (a INTEGER, b VARCHAR[])")
    store.sql("INSERT INTO t VALUES (1, ['x']), (2, NULL)")
    h = content_hash(store, "t")
    store.sql("CREATE TABLE u AS SELECT * FROM t ORDER BY a DESC")
    assert content_hash(store, "u") == h
    store.sql("UPDATE u SET b = ['y'] WHERE a = 1")
    assert content_hash(store, "u") != h


def test_csv_export_writes_every_relation(db: Path, tmp_path: Path) -> None:
    r = invoke("export", "--db", str(db), "--format", "csv",
               "--out", str(tmp_path / "c"), "--json")
    assert r.exit_code == 0, r.output
    manifest = json.loads(r.stdout)
    for e in manifest["relations"]:
        df = pd.read_csv(tmp_path / "c" / e["file"])
        assert len(df) == e["rows"], e["name"]


@pytest.mark.parametrize("text", ['=HYPERLINK("http://evil.example","x")', "@SUM(A1)", "+1",
                                  "-2", "\tTAB", "\rCR"])
def test_csv_export_escapes_cells_a_spreadsheet_would_run(db: Path, tmp_path: Path,
                                                          text: str) -> None:
    # Issue 39 item 8 (OWASP's CSV injection rule): a text cell starting with = + - @ tab
    # or CR gets a leading apostrophe; Parquet keeps the value as it is.
    work = copy_db(db, tmp_path / "w.duckdb")
    with tl.Store(work) as s:
        s.sql("UPDATE candidates SET text = ? WHERE candidate_id = (SELECT min(candidate_id) "
              "FROM candidates)", [text])
    for fmt in ("csv", "parquet"):
        r = invoke("export", "--db", str(work), "--format", fmt, "--out", str(tmp_path / fmt))
        assert r.exit_code == 0, r.output
    df = pd.read_csv(tmp_path / "csv" / "candidates.csv", keep_default_na=False)
    assert "'" + text in set(df["text"]) and text not in set(df["text"])
    texts = [c for c in df.columns if not pd.api.types.is_numeric_dtype(df[c])]
    assert not any(str(v).startswith(("=", "+", "-", "@", "\t", "\r"))
                   for v in df[texts].to_numpy().ravel())
    assert text in set(pd.read_parquet(tmp_path / "parquet" / "candidates.parquet")["text"])


def test_labelled_candidates_view_agrees_with_the_library(db: Path) -> None:
    run = sample_run_id(RUNS[0])
    with tl.Store(db, read_only=True) as store:
        lib = tl.labelled_candidates(store, run, valid_only=False)
        view = store.sql("SELECT * FROM labelled_candidates WHERE run_id = ? "
                         "ORDER BY verdict_seq, lesson_index", [run]).df()
    assert len(view) == len(lib)
    assert view["labelled"].sum() == lib["labelled"].sum()
    assert view["label"].astype("Int8").equals(lib["label"].astype("Int8").reset_index(drop=True))
    assert view["n_annotators"].tolist() == lib["n_annotators"].fillna(0).astype(int).tolist()


def test_lesson_verdicts_view(db: Path) -> None:
    with tl.Store(db, read_only=True) as store:
        n_lessons = store.sql("SELECT count(*) FROM memory_entries WHERE kind = 'lesson'"
                              ).fetchall()[0][0]
        rows = store.sql("SELECT * FROM lesson_verdicts").df()
    assert len(rows) == n_lessons > 0
    assert rows["goal"].notna().all() and set(rows["verdict"]) <= {"pass", "fail", "partial"}


def test_every_table_view_and_column_has_a_comment(store) -> None:
    missing_tables = store.sql(
        "SELECT table_name FROM duckdb_tables() WHERE NOT internal AND comment IS NULL "
        "UNION ALL SELECT view_name FROM duckdb_views() WHERE NOT internal AND comment IS NULL"
    ).fetchall()
    missing_columns = store.sql(
        "SELECT table_name, column_name FROM duckdb_columns() WHERE NOT internal "
        "AND schema_name = 'main' AND comment IS NULL").fetchall()
    assert missing_tables == [] and missing_columns == []


def test_an_export_never_lands_among_other_files(db: Path, tmp_path: Path) -> None:
    # `truss-lab sample` output in the folder: its labels.csv is not overwritten.
    folder = tmp_path / "s"
    assert invoke("sample", "--out", folder).exit_code == 0
    before = (folder / "labels.csv").read_bytes()
    r = invoke("export", "--db", db, "--format", "csv", "--out", folder)
    assert r.exit_code == 2 and "holds other files" in r.output
    assert len(r.output.strip().splitlines()) == 1
    assert (folder / "labels.csv").read_bytes() == before


def test_an_exported_labels_csv_ingests_back(db: Path, tmp_path: Path) -> None:
    r = invoke("export", "--db", db, "--format", "csv", "--out", tmp_path / "c")
    assert r.exit_code == 0, r.output
    fresh = tmp_path / "fresh.duckdb"
    assert invoke("init", "--db", fresh).exit_code == 0
    r = invoke("ingest", "labels", tmp_path / "c" / "labels.csv", "--db", fresh, "--json")
    assert r.exit_code == 0, r.output
    key = ["verdict_hash", "extractor_id", "lesson_index", "useful", "annotator"]
    with tl.Store(db, read_only=True) as a, tl.Store(fresh, read_only=True) as b:
        want = a.sql(f"SELECT {', '.join(key)} FROM labels ORDER BY ALL").fetchall()
        got = b.sql(f"SELECT {', '.join(key)} FROM labels ORDER BY ALL").fetchall()
    assert len(want) > 100 and got == want
    assert json.loads(r.stdout)["rows_added"] == len(want)
    # Again into the database it came from: nothing new.
    r = invoke("ingest", "labels", tmp_path / "c" / "labels.csv", "--db", fresh)
    assert r.exit_code == 0 and f"0 added, {len(want)} already present" in r.output


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_manifest_types_columns_and_nullable_integers_read_back_as_integers(
        db: Path, tmp_path: Path, fmt: str) -> None:
    r = invoke("export", "--db", db, "--format", fmt, "--out", tmp_path / "x", "--json")
    assert r.exit_code == 0, r.output
    manifest = json.loads(r.stdout)
    with tl.Store(db, read_only=True) as store:
        for e in manifest["relations"]:
            want = store.sql("SELECT column_name, data_type FROM information_schema.columns "
                             "WHERE table_name = ? ORDER BY ordinal_position",
                             [e["name"]]).fetchall()
            assert [(c["name"], c["type"]) for c in e["columns"]] == want, e["name"]
    read = pd.read_parquet if fmt == "parquet" else pd.read_csv
    ints = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT")
    checked = 0
    for e in manifest["relations"]:
        if not e["rows"]:
            continue
        df = read(tmp_path / "x" / e["file"], dtype_backend="numpy_nullable")  # the README's
        for c in e["columns"]:
            if c["type"] in ints and df[c["name"]].notna().any():
                assert pd.api.types.is_integer_dtype(df[c["name"]]), (e["name"], c)
                checked += df[c["name"]].isna().any()
    assert checked  # a nullable integer column with nulls was among them
