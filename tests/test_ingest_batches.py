"""Completions and labels are ingested a batch at a time (issue 38, item 3): the reader
holds a batch, not the file, and the outcome is the whole-file read's, error for error,
when duplicates, conflicts and bad lines fall in different batches."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import truss_lab as tl
from tests.builders.held import watched
from truss_lab.ingest import _ingest, read_completions, read_labels

SAMPLE = Path(tl.SAMPLE_DIR)
BATCH = 7


@pytest.fixture(scope="module")
def completion_lines() -> list[str]:
    """Sample completions with, across batches of 7: an identical copy (collapses), a
    conflicting copy (every row of the key dropped), bad lines and a blank line."""
    with (SAMPLE / "completions.jsonl").open() as fh:
        lines = [next(fh) for _ in range(60)]
    bad_value = json.loads(lines[3])
    bad_value["latency_ms"] = -1
    other = json.loads(lines[2])
    other["text"] = "another answer"
    return [*lines[:20], lines[1], "\n", json.dumps(bad_value) + "\n", "{not json\n",
            *lines[20:40], json.dumps(other) + "\n", lines[5], *lines[40:]]


def _tracked(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    """Wrap ``_ingest.<name>`` (a batch reader) so that each batch it gives is watched:
    returns, per batch, how many earlier batches were still alive when it was read."""
    real: Callable[..., Iterator[tuple[Any, ...]]] = getattr(_ingest, name)
    held: list[int] = []

    def reader(*args: Any, **kwargs: Any) -> Iterator[tuple[Any, ...]]:
        return watched(real(*args, **kwargs), held, part=lambda batch: batch[0])

    monkeypatch.setattr(_ingest, name, reader)
    return held


def _stored(db: Path, table: str) -> pd.DataFrame:
    with tl.Store(db) as s:
        df = s.sql(f"SELECT * FROM {table}").df()
    stamp = [c for c in ("recorded_at", "labelled_at") if c in df]
    df = df.drop(columns=stamp)
    return df.sort_values(list(df.columns)).reset_index(drop=True)


@pytest.mark.parametrize("kind", ["jsonl", "csv", "parquet", "frame"])
def test_completions_in_batches_are_the_whole_files_import(
        completion_lines: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        kind: str) -> None:
    src: Any = tmp_path / "c.jsonl"
    src.write_text("".join(completion_lines))
    if kind != "jsonl":
        good, _ = read_completions(src)  # a table holds only what its cells can
        df = pd.concat([good, good.iloc[[4]]], ignore_index=True)  # an identical copy
        df.loc[len(df)] = {**good.iloc[9].to_dict(), "text": "changed"}  # a conflict
        src = df if kind == "frame" else tmp_path / f"c.{kind}"
        if kind == "csv":
            df.to_csv(src, index=False)
        elif kind == "parquet":
            df.to_parquet(src)
    with tl.Store(tmp_path / "whole.duckdb") as s:
        whole = tl.ingest_completions(s, src, batch_rows=1 << 20)
    held = _tracked(monkeypatch, "completion_batches")
    with tl.Store(tmp_path / "batches.duckdb") as s:
        parts = tl.ingest_completions(s, src, batch_rows=BATCH)
    assert len(held) >= 8 and max(held) <= 1, held  # the batch before, never the file
    assert parts.to_dict() == whole.to_dict()
    assert [e.reason for e in whole.errors].count("conflicting_duplicate") == 1
    if kind == "jsonl":  # read_completions, the reader without the store, agrees
        assert [str(e) for e in whole.errors] == [str(e) for e in read_completions(src)[1]]
        assert {e.reason for e in whole.errors} >= {"bad_value", "bad_json"}
    pd.testing.assert_frame_equal(_stored(tmp_path / "batches.duckdb", "completions"),
                                  _stored(tmp_path / "whole.duckdb", "completions"))


def test_completions_in_batches_write_all_or_nothing(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure after batches are written rolls every one back, the staged rows too."""
    src = tmp_path / "c.jsonl"
    src.write_text("".join((SAMPLE / "completions.jsonl").read_text()
                           .splitlines(keepends=True)[:40]))
    real = tl.Store.append
    calls: list[str] = []

    def append(self: tl.Store, table: str, *args: Any, **kwargs: Any) -> int:
        calls.append(table)
        if calls.count("completions") == 3:
            raise RuntimeError("the disk is full")
        return real(self, table, *args, **kwargs)

    with tl.Store(tmp_path / "lab.duckdb") as s:
        monkeypatch.setattr(tl.Store, "append", append)
        with pytest.raises(RuntimeError, match="disk"):
            tl.ingest_completions(s, src, batch_rows=BATCH)
        monkeypatch.undo()
        assert s.sql("SELECT count(*) FROM completions").fetchall() == [(0,)]
        assert not s.sql("SELECT * FROM duckdb_tables() WHERE temporary").fetchall()
        assert tl.ingest_completions(s, src, batch_rows=BATCH).rows_added == 40


def test_labels_in_batches_are_the_whole_files_import(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    rows = (SAMPLE / "labels.csv").read_text().splitlines(keepends=True)
    header, body = rows[0], rows[1:61]
    first = body[2].rstrip("\n").split(",")
    flipped = ",".join([*first[:3], "1" if first[3] == "0" else "0", *first[4:]]) + "\n"
    src = tmp_path / "labels.csv"
    src.write_text("".join([header, *body[:20], body[0], "not,a,row\n", "\n",
                            *body[20:40], flipped, "zz,e,1,1,ann\n", *body[40:]]))
    with tl.Store(tmp_path / "whole.duckdb") as s:
        whole = tl.ingest_labels(s, src, batch_rows=1 << 20)
    held = _tracked(monkeypatch, "label_batches")
    with tl.Store(tmp_path / "batches.duckdb") as s:
        parts = tl.ingest_labels(s, src, batch_rows=BATCH)
    assert len(held) >= 8 and max(held) <= 1, held
    assert parts.to_dict() == whole.to_dict()
    assert [str(e) for e in whole.errors] == [str(e) for e in read_labels(src)[1]]
    assert {e.reason for e in whole.errors} >= {"conflicting_duplicate", "bad_value",
                                                "wrong_field_count"}
    pd.testing.assert_frame_equal(_stored(tmp_path / "batches.duckdb", "labels"),
                                  _stored(tmp_path / "whole.duckdb", "labels"))
