"""Tables as ingest input: a CSV or Parquet file, or a pandas DataFrame, read as the rows
of the format it holds, so each format keeps one reader and one set of errors.

A JSONL format (completions, reference lessons) reads a table as the JSON lines its rows
would be (:func:`table_records`, :func:`records_jsonl`): the same fields, bounds and
errors, each then named by the table's row (:func:`relocate`: a CSV or Parquet file's row
as a spreadsheet numbers it, the header row 1; a DataFrame's 0-based position). A CSV
format (labels, match labels) reads a DataFrame as the CSV it would be written as
(:func:`frame_csv`).
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..core._errors import BadInputError
from ..core._files import open_input, read_input
from ._strict import csv_file_records, input_error

__all__ = [
    "FRAME_SOURCE",
    "MAX_TABLE_FILE",
    "TableRows",
    "frame_csv",
    "input_bytes",
    "is_table",
    "records_jsonl",
    "relocate",
    "source_name",
    "table_record_batches",
    "table_records",
]

FRAME_SOURCE = "<frame>"
"""The source a DataFrame's errors name."""
_INT = re.compile(r"[+-]?[0-9]+")


def is_table(source: Any) -> bool:
    """Whether ``source`` is a DataFrame, a ``.csv`` or a ``.parquet`` file."""
    if isinstance(source, pd.DataFrame):
        return True
    return isinstance(source, str | os.PathLike) and \
        Path(source).suffix.lower() in (".csv", ".parquet")


def source_name(source: Any) -> str:
    """What errors call ``source``: its path, or :data:`FRAME_SOURCE`."""
    return FRAME_SOURCE if isinstance(source, pd.DataFrame) else str(source)


MAX_TABLE_FILE = 4 << 30
"""Most bytes of a table file (CSV or Parquet) read whole: records, labels, match labels."""


def input_bytes(source: Any, what: str, limit: int = MAX_TABLE_FILE) -> bytes:
    """The bytes of a file ``source`` (:func:`~truss_lab.core._files.read_input`: a
    regular file or a pipe, at most ``limit`` bytes; one line on a read error), or a
    DataFrame as the CSV it would be written as (:func:`frame_csv`). ``what`` names the
    file in an error."""
    if isinstance(source, pd.DataFrame):
        return frame_csv(source)
    return read_input(source, what=f"a {what} file", limit=limit)


def frame_csv(df: pd.DataFrame) -> bytes:
    """A DataFrame as CSV text (a header, no index): whole numbers of a column that has
    missing values are written as integers (pandas holds them as floats), a missing value
    as an empty cell."""
    out = df.copy()
    for c in out.columns:
        col = out[c]
        if col.dtype.kind == "f":
            vals = col.dropna().to_numpy()
            if len(vals) and np.isfinite(vals).all() and (vals == np.round(vals)).all():
                out[c] = col.astype("Int64")
    return out.to_csv(index=False).encode("utf-8")


class TableRows:
    """A table's rows as JSON-like records: ``records[i]`` is the table's row
    ``numbers[i]``; ``errors`` are rows the CSV reader refused."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.records: list[dict[str, Any]] = []
        self.numbers: list[int] = []
        self.errors: list[BadInputError] = []


def _plain(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return [_plain(x) for x in v.tolist()]
    if isinstance(v, list | tuple):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, np.generic):
        return v.item()
    return v


def _missing(v: Any) -> bool:
    if v is None or v is pd.NA or v is pd.NaT:
        return True
    return isinstance(v, float) and math.isnan(v)


def _whole(v: Any) -> Any:
    """A float that is a whole number as an int (pandas stores an integer column with a
    missing value as floats); anything else as it is."""
    if isinstance(v, float) and math.isfinite(v) and v == int(v):
        return int(v)
    return v


def _number(text: str, integer: bool) -> Any:
    """A CSV cell of a numeric field as a number when it reads as one, else the text
    (which the format's check then names)."""
    t = text.strip()
    if _INT.fullmatch(t):
        return int(t)
    if not integer:
        try:
            return float(t)
        except ValueError:
            pass
    return text


def table_records(source: Any, *, counts: Collection[str] = (),
                  numbers: Collection[str] = (), nullable: Collection[str] = (),
                  max_cell: int | None = None) -> TableRows:
    """The rows of a DataFrame, a CSV or a Parquet file as records of JSON values.

    A missing value (NA, null, an empty CSV cell of a ``nullable`` field) is an absent
    field; ``counts`` are integer fields (a whole float, or a CSV cell of digits, is an
    int), ``numbers`` other numeric fields (a CSV cell that reads as a number is one).
    Other CSV cells stay text. ``max_cell``: the most characters a CSV cell may hold
    (the csv module's default, 131072, when None), so a value within its format's bound is
    read and checked there.
    """
    out = TableRows(source_name(source))
    for batch in table_record_batches(source, 1 << 62, counts=counts, numbers=numbers,
                                      nullable=nullable, max_cell=max_cell):
        out.records += batch.records
        out.numbers += batch.numbers
        out.errors += batch.errors
    return out


def table_record_batches(source: Any, batch_rows: int, *, counts: Collection[str] = (),
                         numbers: Collection[str] = (), nullable: Collection[str] = (),
                         max_cell: int | None = None) -> Iterator[TableRows]:
    """:func:`table_records` ``batch_rows`` rows at a time, the file read as it goes (a
    CSV a megabyte at a time, a Parquet file a row group at a time), each row read once.
    At least one batch; a CSV file's errors come with the batch read when they were
    found."""
    if isinstance(source, pd.DataFrame):
        for a in range(0, max(len(source), 1), batch_rows):
            out = TableRows(FRAME_SOURCE)
            out.numbers = list(range(a, min(a + batch_rows, len(source))))
            _add_records(out, source.iloc[a:a + batch_rows].to_dict(orient="records"), counts)
            yield out
    elif Path(source).suffix.lower() == ".parquet":
        import pyarrow.parquet as pq  # only a Parquet input pays for it

        first, any_batch = 2, False
        try:
            with open_input(source, what="a Parquet file", limit=MAX_TABLE_FILE) as fh:
                if not fh.seekable():  # Parquet's footer is at its end
                    raise BadInputError("is a pipe; a Parquet file is read from its end, "
                                        "so name the file itself", source=str(source))
                for batch in pq.ParquetFile(fh).iter_batches(
                        batch_size=min(batch_rows, 1 << 24)):
                    out = TableRows(str(source))
                    rows: list[dict[str, Any]] = batch.to_pylist()
                    out.numbers = list(range(first, first + len(rows)))
                    first += len(rows)
                    _add_records(out, rows, counts)
                    any_batch = True
                    yield out
        except (OSError, ValueError) as exc:
            raise BadInputError(f"cannot read Parquet: {exc}", source=str(source)) from None
        if not any_batch:
            yield TableRows(str(source))
    else:
        yield from _csv_batches(str(source), batch_rows, counts, numbers, nullable, max_cell)


def _add_records(out: TableRows, rows: list[dict[str, Any]], counts: Collection[str]) -> None:
    for rec in rows:
        row = {}
        for k, v in rec.items():
            v = _plain(v)
            if _missing(v):
                continue
            row[str(k)] = _whole(v) if k in counts else v
        out.records.append(row)


def _csv_batches(source: str, batch_rows: int, counts: Collection[str],
                 numbers: Collection[str], nullable: Collection[str],
                 max_cell: int | None) -> Iterator[TableRows]:
    errors: list[BadInputError] = []  # in the order found: each batch takes its own

    def batch(out: TableRows) -> TableRows:
        out.errors = errors.copy()
        errors.clear()
        return out

    limit = csv.field_size_limit()
    with open_input(source, what="a CSV file", limit=MAX_TABLE_FILE) as fh:
        rows = csv_file_records(fh, source, errors)
        try:  # the csv module's limit is global: set while this file is read
            csv.field_size_limit(max(limit, max_cell or 0))
            header = next(rows, None)
        finally:
            csv.field_size_limit(limit)
        if header is None:
            errors.append(input_error("empty file; expected a header row", source, None,
                                      None, "bad_header", row=1))
            yield batch(TableRows(source))
            return
        names = header[1]
        more = True
        while more:
            out = TableRows(source)
            more = False
            try:
                csv.field_size_limit(max(limit, max_cell or 0))
                for number, cells in rows:
                    if not any(c.strip() for c in cells):
                        continue
                    if len(cells) != len(names):
                        errors.append(input_error(
                            f"expected {len(names)} cells (the header's), got {len(cells)}",
                            source, None, None, "bad_csv", row=number))
                        continue
                    rec: dict[str, Any] = {}
                    for k, v in zip(names, cells, strict=True):
                        if v == "" and k in nullable:
                            continue
                        rec[k] = _number(v, True) if k in counts else _number(v, False) \
                            if k in numbers else v
                    out.records.append(rec)
                    out.numbers.append(number)
                    if len(out.records) == batch_rows:
                        more = True
                        break
            finally:
                csv.field_size_limit(limit)
            yield batch(out)  # the global limit is restored while the batch is checked


def records_jsonl(records: list[dict[str, Any]]) -> bytes:
    """The records as JSON lines, one per record (a non-JSON value as its text)."""
    enc = json.JSONEncoder(ensure_ascii=False, allow_nan=True, default=str).encode
    return "".join(enc(r) + "\n" for r in records).encode("utf-8")


def relocate(errors: list[BadInputError], rows: TableRows) -> list[BadInputError]:
    """Errors a JSONL reader gave on :func:`records_jsonl`'s lines, naming the table's
    rows instead (``line`` k is ``rows.numbers[k - 1]``: a file's row as a spreadsheet
    numbers it, a DataFrame's 0-based position)."""
    return [e if e.line is None else
            BadInputError(e.message, source=rows.source, row=rows.numbers[e.line - 1],
                          field=e.field, reason=e.reason) for e in errors]
