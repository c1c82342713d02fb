"""Gold labels: a CSV file with a header (Formats §3), and the labelling queue.

:class:`LabelRecordModel` is the specification (it feeds ``truss-lab schema
labels``); :func:`read_labels` checks whole columns at once and returns the good
rows *and* a list of :class:`BadInputError`, one per problem, each naming the
file, the row (as a spreadsheet numbers it: the header is row 1) and the field.

A labelling queue file (``truss-lab queue``, :class:`LabelQueueRecordModel`,
``truss-lab schema label-queue``) is a labels file with context columns after
the §3 ones and ``useful`` left empty for the annotator: :func:`write_label_queue`
writes it, :func:`read_labels` reads it back (recognised by its header), skipping
and counting the rows still left empty.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Annotated, Literal

import numpy as np
import pandas as pd
import pyarrow as pa
from pydantic import Field, StrictStr

from ..core._canonical import MAX_SAFE_INT
from ..core._errors import BadInputError
from ..core._files import open_input, output_text
from ..store._tables import LABELS_SCHEMA
from ._completions import BATCH_ROWS, MAX_COMPLETION_NAME
from ._fields import MAX_REFERENCE_NAME
from ._strict import (
    DIGITS_COL_RE,
    DIGITS_RE,
    HEX64_COL_RE,
    HEX64_RE,
    SECRET_HELD,
    Count,
    Hex64,
    NonEmpty,
    StrictRecord,
    bad_where,
    csv_file_records,
    csv_records,
    dedupe,
    id_rows,
    input_error,
    secret_rows,
    short,
    spreadsheet_cell,
    warn_lookalikes,
)
from ._tables_in import MAX_TABLE_FILE, frame_csv, source_name

__all__ = ["LABEL_FIELDS", "LABEL_KEY", "QUEUE_FIELDS", "LabelQueueRecordModel",
           "LabelRecordModel", "label_batches", "read_labels", "write_label_queue"]

LABEL_FIELDS: tuple[str, ...] = ("verdict_hash", "extractor", "lesson_index", "useful", "annotator")
"""The §3 CSV header, in order (``annotator`` may be left out of the header)."""
LABEL_KEY: tuple[str, ...] = ("verdict_hash", "extractor", "lesson_index", "annotator")
"""Unique key of a gold label within a file."""
QUEUE_FIELDS: tuple[str, ...] = (*LABEL_FIELDS, "run_id", "verdict_seq", "n_annotators",
                                 "salience", "text", "verdict", "goal", "summary", "checks")
"""The header of a labelling queue file: the §3 fields, then context for the annotator
(ignored when the file is read back)."""
_USEFUL = LABEL_FIELDS.index("useful")
_EXPORTED = tuple(LABELS_SCHEMA.names)
"""The header of ``truss-lab export``'s labels.csv (the table's columns: ``extractor_id``
for ``extractor``, then ``source`` and ``labelled_at``, which a re-ingest sets anew)."""

class LabelRecordModel(StrictRecord):
    """One gold label: a row of a labels CSV file (Formats §3)."""

    verdict_hash: Hex64
    """The ``hash`` of the verdict's journal entry (64 lowercase hex digits)."""
    extractor: Annotated[StrictStr, Field(min_length=1, max_length=MAX_COMPLETION_NAME)]
    """The extractor configuration id whose completion proposed the lesson."""
    lesson_index: Count
    """0-based position of the lesson in the completion's ``lessons`` array
    (lessons dropped by the parser still count)."""
    useful: Literal[0, 1]
    """1 when the annotator judged the lesson useful, else 0."""
    annotator: Annotated[StrictStr, Field(min_length=1, max_length=MAX_REFERENCE_NAME)] | None \
        = None
    """Who labelled it; optional (an empty CSV cell means none)."""


class LabelQueueRecordModel(LabelRecordModel):
    """One row of a labelling queue file (``truss-lab queue``): a §3 label whose
    ``useful`` the annotator fills in, with context to decide it. Read back by
    ``truss-lab ingest labels``: a row left empty is skipped and counted; the
    context columns are not read."""

    useful: Literal[0, 1] | None = None  # type: ignore[assignment]
    """Empty in the queue as written; 1 (useful) or 0 (not useful) once labelled."""
    run_id: NonEmpty
    """The run whose candidate this is."""
    verdict_seq: Count
    """The verdict's journal seq."""
    n_annotators: Count
    """Annotators whose labels it has: 0 (none) or an even split (a tie)."""
    salience: float
    """The lesson's salience (inside the interval where the threshold is chosen)."""
    text: str
    """The lesson's text."""
    verdict: str
    """The verdict's outcome (pass, fail, partial)."""
    goal: str
    """The verdict's goal."""
    summary: str
    """The verdict's summary."""
    checks: str
    """The verdict's checks, one per line: ``FAIL name: evidence`` or ``pass name: evidence``."""


def _empty_labels() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "verdict_hash": pd.array([], dtype="string"),
            "extractor": pd.array([], dtype="string"),
            "lesson_index": np.array([], dtype=np.int64),
            "useful": np.array([], dtype=np.int64),
            "annotator": pd.array([], dtype="string"),
        }
    )


def label_batches(
    path: str | os.PathLike[str] | pd.DataFrame, batch_rows: int = BATCH_ROWS,
) -> Iterator[tuple[pd.DataFrame, np.ndarray, list[BadInputError], int]]:
    """:func:`read_labels` a batch at a time, the file read once as it goes: per batch of
    ``batch_rows`` rows, its good rows (duplicates not yet collapsed: that spans
    batches), the row of each, its errors and its queue rows left without a label. At
    least one batch; a wrong header is the only error of the only batch."""
    source = source_name(path)
    with ExitStack() as stack:
        errors: list[BadInputError] = []
        if isinstance(path, pd.DataFrame):  # read as the CSV it would be written as
            records = csv_records(frame_csv(path), source, errors)
        else:
            fh = stack.enter_context(open_input(path, what="a labels file",
                                                limit=MAX_TABLE_FILE))
            records = csv_file_records(fh, source, errors)
        header: list[str] | None = None
        rows: list[list[str]] = []
        row_lines: list[int] = []
        n_blank = 0
        seen: dict[str, set[str]] = {"extractor": set(), "annotator": set()}

        def batch() -> tuple[pd.DataFrame, np.ndarray, list[BadInputError], int]:
            nonlocal rows, row_lines, n_blank
            errs = errors.copy()
            errors.clear()
            lines = np.asarray(row_lines, dtype=np.int64)
            if rows:
                df, keep = _checked_labels(rows, lines, source, errs, seen)
                lines = lines[keep]
            else:
                df = _empty_labels()
            out = (df, lines, errs, n_blank)
            rows, row_lines, n_blank = [], [], 0
            return out

        for start, row in records:
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            if header is None:
                header = row
                if tuple(header) not in (LABEL_FIELDS, LABEL_FIELDS[:4], QUEUE_FIELDS,
                                         _EXPORTED):
                    yield _empty_labels(), np.zeros(0, np.int64), [input_error(
                        f"wrong CSV header {','.join(header)!r}; expected "
                        f"{','.join(LABEL_FIELDS)!r} (annotator may be left out), a "
                        "labelling queue's header (truss-lab schema label-queue) or an "
                        "exported labels.csv's (truss-lab export)",
                        source, None, None, "bad_header", row=start,
                    )], 0
                    return
                continue
            if len(row) != len(header):
                errors.append(input_error(
                    f"expected {len(header)} fields ({','.join(header)}), got {len(row)}",
                    source, None, None, "wrong_field_count", row=start,
                ))
                continue
            if tuple(header) == QUEUE_FIELDS:
                if not row[_USEFUL].strip():  # a queue row the annotator has not labelled
                    n_blank += 1
                    continue
                row = row[:len(LABEL_FIELDS)]
            elif tuple(header) == _EXPORTED:
                row = row[:len(LABEL_FIELDS)]
            rows.append(row)
            row_lines.append(start)
            if len(rows) == batch_rows:
                yield batch()
        if header is None:
            yield _empty_labels(), np.zeros(0, np.int64), [input_error(
                f"empty file; expected the header {','.join(LABEL_FIELDS)!r}",
                source, None, None, "bad_header", row=1,
            )], 0
            return
        yield batch()


def _checked_labels(rows: list[list[str]], lines: np.ndarray, source: str,
                    errors: list[BadInputError],
                    seen: dict[str, set[str]]) -> tuple[pd.DataFrame, np.ndarray]:
    """The frame of the valid ``rows`` and the mask of those kept; each bad value is
    reported in ``errors`` with its row and field (``seen``: per field, the look-alike
    values warned of already)."""
    cols = list(zip(*rows, strict=True))
    vh, ex, li, us = (list(c) for c in cols[:4])
    an = [a or None for a in cols[4]] if len(cols) == 5 else [None] * len(rows)
    # Whole-column checks first (one regex over the joined column); only a
    # column that fails is walked value by value.
    bad_vh = bad_where(vh, HEX64_COL_RE, HEX64_RE)
    bad_ex = ([] if all(ex) and max(map(len, ex), default=0) <= MAX_COMPLETION_NAME
              else [i for i, v in enumerate(ex) if not v or len(v) > MAX_COMPLETION_NAME])
    bad_an = [i for i, v in enumerate(an) if v is not None and len(v) > MAX_REFERENCE_NAME]
    bad_li = bad_where(li, DIGITS_COL_RE, DIGITS_RE)
    li_num = [int(v) if len(v) <= 16 and v.isascii() and v.isdigit() else -1 for v in li]
    bad_li = sorted(set(bad_li) | {i for i, v in enumerate(li_num) if v > MAX_SAFE_INT})
    bad_us = [] if set(us) <= {"0", "1"} else [i for i, v in enumerate(us) if v not in ("0", "1")]
    bad = np.zeros(len(rows), dtype=bool)
    checks = [
        ("verdict_hash", bad_vh, vh, "expected 64 lowercase hex digits"),
        ("extractor", bad_ex, ex,
         f"expected a non-empty string of at most {MAX_COMPLETION_NAME} characters"),
        ("lesson_index", bad_li, li, "expected an integer from 0 to 2^53 - 1 (digits only)"),
        ("useful", bad_us, us, "expected 0 or 1"),
        ("annotator", bad_an, an, f"expected at most {MAX_REFERENCE_NAME} characters"),
        ("extractor", secret_rows(ex), ex, SECRET_HELD),
        ("annotator", secret_rows(an), an, SECRET_HELD),
    ]
    lookalike: dict[str, dict[int, str]] = {}
    for name, col in (("extractor", ex), ("annotator", an)):
        refused, lookalike[name] = id_rows(col)
        for i, why in refused.items():
            checks.append((name, [i], col, why))
    for name, idx, col, expected in checks:
        for i in idx:
            errors.append(
                input_error(expected if expected is SECRET_HELD or not expected.startswith(
                    "expected") else f"{expected}, got {short(col[i])}", source, None, name,
                            "bad_value", row=int(lines[i]))
            )
        bad[idx] = True
    for name, col in (("extractor", ex), ("annotator", an)):
        warn_lookalikes(source, name, col, {i: p for i, p in lookalike[name].items()
                                            if not bad[i]}, lines, rows=True,
                        seen=seen[name])
    keep = np.flatnonzero(~bad)
    take = (lambda c: c) if len(keep) == len(rows) else (lambda c: [c[i] for i in keep])
    df = pd.DataFrame(
        {
            "verdict_hash": pd.array(pa.array(take(vh), type=pa.string()), dtype="string"),
            "extractor": pd.array(pa.array(take(ex), type=pa.string()), dtype="string"),
            "lesson_index": np.asarray(take(li_num), dtype=np.int64),
            "useful": np.asarray([v == "1" for v in take(us)], dtype=np.int64),
            "annotator": pd.array(pa.array(take(an), type=pa.string()), dtype="string"),
        }
    )
    return df, ~bad


def read_labels(
    path: str | os.PathLike[str] | pd.DataFrame,
) -> tuple[pd.DataFrame, list[BadInputError]]:
    """Read a §3 gold-labels CSV file: ``(good rows, errors)``.

    A DataFrame of the same columns is read as the CSV it would be written as (its rows
    numbered as that file's: the header row 1).

    The header must be exactly ``verdict_hash,extractor,lesson_index,useful,annotator``
    (``annotator`` may be left out), or a labelling queue's (:data:`QUEUE_FIELDS`:
    its context columns are not read, and a row whose ``useful`` is empty is
    skipped, not an error, and counted in ``frame.attrs["blank_rows"]``), or the
    labels.csv of ``truss-lab export`` (the table's columns; its ``source`` and
    ``labelled_at`` are not read); otherwise the only error names the header found and
    nothing is read. The frame
    has the columns of :data:`LABEL_FIELDS`
    (``lesson_index`` and ``useful`` as ``int64``, ``annotator`` ``<NA>`` when
    empty). Each bad row gives a :class:`BadInputError` naming its row (as a
    spreadsheet numbers it: the header is row 1) and field; identical duplicates of
    (verdict_hash, extractor, lesson_index, annotator) collapse, conflicting ones are
    all dropped with an error naming both rows.

    Parameters
    ----------
    path : path or pandas.DataFrame
        The CSV file (or a pipe), or a frame of its columns.

    Returns
    -------
    tuple of (pandas.DataFrame, list of BadInputError)
        The good rows, and one error per bad line or row.
    """
    source = source_name(path)
    frames, numbers, errors, n_blank = [], [], [], 0
    for df, lines, errs, blank in label_batches(path):
        frames.append(df)
        numbers.append(lines)
        errors += errs
        n_blank += blank
    df = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    df, dup_errors = dedupe(df, np.concatenate(numbers), LABEL_KEY, source, where="row")
    errors += dup_errors
    errors.sort(key=lambda e: e.row or 0)
    df.attrs["blank_rows"] = n_blank
    return df, errors


def write_label_queue(queue: pd.DataFrame, path: str | os.PathLike[str]) -> int:
    """Write a labelling queue (the columns of :data:`QUEUE_FIELDS`) as CSV; the rows written.

    The file replaces ``path`` whole or not at all. The §3 columns are written as
    they are (``useful`` empty where it is missing), so :func:`read_labels` reads
    them back; a context cell that a spreadsheet would run as a formula gets a
    leading apostrophe.

    Parameters
    ----------
    queue : pandas.DataFrame
        The queue (:func:`~truss_lab.evaluate._queue.labelling_queue`).
    path : path
        The CSV file to write.

    Returns
    -------
    int
        Rows written.

    Raises
    ------
    BadInputError
        The queue lacks a column.
    """
    missing = [c for c in QUEUE_FIELDS if c not in queue.columns]
    if missing:
        raise BadInputError(f"the queue lacks column(s) {', '.join(missing)}", field=missing[0])
    n_label = len(LABEL_FIELDS)
    columns = [queue[c].astype(object).where(queue[c].notna(), None).tolist()
               for c in QUEUE_FIELDS]
    with output_text(path) as fh:
        out = csv.writer(fh, lineterminator="\n")
        out.writerow(QUEUE_FIELDS)
        for row in zip(*columns, strict=True):
            out.writerow(["" if v is None else str(v) for v in row[:n_label]]
                         + [spreadsheet_cell(v) for v in row[n_label:]])
    return len(queue)
