"""Completions from any table (issue 35 item 2): CSV, Parquet and a DataFrame ingest as the
JSONL of the same rows does (the same rows stored, the same errors, named by row), and
labels, references and match labels take DataFrames in Python."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import truss_lab as tl
from tests.builders.cli import invoke
from truss_lab.ingest import (
    ingest_labels,
    ingest_match_labels,
    ingest_references,
    read_completions,
)

SAMPLE = Path(tl.SAMPLE_DIR)
COLS = ["verdict_hash", "extractor_id", "model", "prompt_version", "request_hash", "text",
        "latency_ms", "prompt_tokens", "completion_tokens", "config_hash"]


@pytest.fixture(scope="module")
def lines() -> list[dict]:
    with (SAMPLE / "completions.jsonl").open() as fh:
        return [json.loads(next(fh)) for _ in range(30)]


def as_frame(lines: list[dict]) -> pd.DataFrame:
    df = pd.DataFrame(lines)
    if "config" in df:
        df["config"] = [None if c is None or c != c else json.dumps(c) for c in df["config"]]
    return df


def stored(path_or_frame: object, tmp_path: Path, name: str) -> pd.DataFrame:
    with tl.Store(tmp_path / f"{name}.duckdb") as s:
        rep = tl.ingest_completions(s, path_or_frame)
        assert rep.errors == [] and rep.rows_added == 30
        return s.sql(f"SELECT {', '.join(COLS)} FROM completions ORDER BY verdict_hash, "
                     "extractor_id").df()


def test_csv_parquet_and_frame_store_what_jsonl_stores(lines: list[dict],
                                                       tmp_path: Path) -> None:
    src = tmp_path / "c.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in lines))
    want = stored(src, tmp_path, "jsonl")
    df = as_frame(lines)
    df.to_csv(tmp_path / "c.csv", index=False)
    df.to_parquet(tmp_path / "c.parquet")
    for name, source in (("csv", tmp_path / "c.csv"), ("parquet", tmp_path / "c.parquet"),
                         ("frame", df)):
        pd.testing.assert_frame_equal(stored(source, tmp_path, name), want, obj=name)
    r = invoke("ingest", "completions", tmp_path / "c.csv", "--db", tmp_path / "cli.duckdb")
    assert r.exit_code == 0 and "30 added" in r.output, r.output


def test_a_tables_errors_are_the_jsonl_errors_named_by_row(lines: list[dict],
                                                           tmp_path: Path) -> None:
    bad = [dict(r) for r in lines[:4]]
    bad[1]["prompt_tokens"] = -3
    bad[2]["model"] = ""
    bad[3]["text"] = "x" * (1_048_576 + 1)
    src = tmp_path / "c.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in bad))
    _, jsonl_errors = read_completions(src)
    as_frame(bad).to_csv(tmp_path / "c.csv", index=False)
    df, csv_errors = read_completions(tmp_path / "c.csv")
    assert len(df) == 1
    assert [(e.field, e.message, e.reason) for e in csv_errors] == \
        [(e.field, e.message, e.reason) for e in jsonl_errors]
    # a line k of the JSONL is row k + 1 of the CSV (its header is row 1)
    assert [e.row for e in csv_errors] == [e.line + 1 for e in jsonl_errors] == [3, 4, 5]
    assert str(csv_errors[0]).startswith(f"{tmp_path / 'c.csv'}, row 3, field "
                                         "'prompt_tokens': expected an integer")
    _, frame_errors = read_completions(as_frame(bad))
    assert [(e.source, e.row) for e in frame_errors] == [("<frame>", 1), ("<frame>", 2),
                                                         ("<frame>", 3)]
    r = invoke("ingest", "completions", tmp_path / "c.csv", "--db", tmp_path / "x.duckdb")
    assert r.exit_code == 3 and "1 added" in r.output and "row 4, field 'model'" in r.output


def test_labels_references_and_match_labels_take_frames(sample_full: Path,
                                                        tmp_path: Path) -> None:
    from tests.builders.stores import copy_db

    db = copy_db(sample_full, tmp_path / "lab.duckdb")
    with tl.Store(db) as s:
        s.con.execute("DELETE FROM labels; DELETE FROM reference_lessons; "
                      "DELETE FROM match_labels")
        labels = pd.read_csv(SAMPLE / "labels.csv", keep_default_na=False)
        rep = ingest_labels(s, labels)
        assert (rep.rows_added, rep.errors, rep.source) == (len(labels), [], "<frame>")
        refs = pd.read_json(SAMPLE / "references.jsonl", lines=True)
        rep = ingest_references(s, refs)
        assert (rep.rows_added, rep.errors) == (len(refs), [])
        match = pd.read_csv(SAMPLE / "match_labels.csv", keep_default_na=False)
        rep = ingest_match_labels(s, match)
        assert rep.errors == [] and rep.rows_added == len(match)
        # a bad cell is named by its row, as in the CSV file it would be
        labels.loc[4, "useful"] = 7
        rep = ingest_labels(s, labels)
        assert [(e.row, e.field) for e in rep.errors] == [(6, "useful")]
