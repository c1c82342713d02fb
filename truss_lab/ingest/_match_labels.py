"""Match labels: a CSV file with a header (Formats §5), and the match queue file.

A match label is a person's answer to "which reference of its verdict does this
lesson express?": ``reference_id`` names one, or is empty (none of them).
:class:`MatchLabelRecordModel` is the specification (it feeds ``truss-lab schema
match-labels``); :func:`read_match_labels` checks whole columns at once and returns
the good rows *and* a list of :class:`BadInputError`, one per problem, each naming
the file, the row (as a spreadsheet numbers it: the header is row 1) and the
field, as the labels reader does.

The verdicts a person matched are a **sample**, and a sampled verdict counts only
whole: every lesson of it answered. So the unit that lands or not is the
*answered verdict* -- (verdict_hash, extractor, annotator) -- and when a row of one
is rejected, the unit's other rows are dropped too, with one error saying so
(reason ``verdict_incomplete``); the good units land. What the file alone cannot
tell (whether ``reference_id`` names a reference of the verdict, whether every
lesson of the verdict was answered) is checked against the store by
:func:`check_match_labels`, with the same errors and the same rule.

A **match queue** file (``truss-lab queue RUN --kind match``,
:class:`MatchQueueRecordModel`, ``truss-lab schema match-queue``) is a match-labels
file with context columns after the §5 ones: the lesson, its verdict and the
verdict's references to choose from. Its ``reference_id`` cells are written as
:data:`UNANSWERED` (``?``) for the person to replace with a reference id or to
empty (none); :func:`read_match_labels` reads it back (recognised by its header),
skipping and counting the verdicts still wholly unanswered, and refusing a verdict
answered only in part.
"""

from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass, field
from typing import Annotated

import numpy as np
import pandas as pd
import pyarrow as pa
from pydantic import Field, StrictFloat, StrictStr

from ..core._canonical import MAX_SAFE_INT
from ..core._errors import BadInputError
from ..core._files import output_text
from ..store._ingested import match_label_lessons, verdict_reference_ids
from ..store._store import Store
from ._completions import MAX_COMPLETION_NAME
from ._fields import INCLUSION, MATCH_LABEL_FIELDS, MAX_REFERENCE_NAME
from ._references import NO_REFERENCE
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
    csv_records,
    dedupe,
    id_rows,
    input_error,
    secret_rows,
    short,
    spreadsheet_cell,
    warn_lookalikes,
)
from ._tables_in import input_bytes, source_name

__all__ = [
    "MATCH_LABEL_KEY",
    "MATCH_QUEUE_FIELDS",
    "UNANSWERED",
    "MatchLabelCheck",
    "MatchLabelRecordModel",
    "MatchQueueRecordModel",
    "check_match_labels",
    "read_match_labels",
    "write_match_queue",
]

MATCH_LABEL_KEY: tuple[str, ...] = ("verdict_hash", "extractor", "lesson_index", "annotator")
"""Unique key of a match label within a file (and in the store)."""
MATCH_QUEUE_FIELDS: tuple[str, ...] = (*MATCH_LABEL_FIELDS, "run_id", "verdict_seq",
                                       "salience", "text", "references", "verdict", "goal",
                                       "summary", "checks")
"""The header of a match queue file: the §5 fields, then context for the person
(ignored when the file is read back)."""
UNANSWERED = "?"
"""The ``reference_id`` of a queue row not answered yet (empty means "none of them")."""

# The answered verdict: the rows of one person's answer to one verdict's lessons.
_UNIT = ("verdict_hash", "extractor", "annotator")
_HEADERS = {
    MATCH_LABEL_FIELDS: MATCH_LABEL_FIELDS,
    MATCH_LABEL_FIELDS[:4]: MATCH_LABEL_FIELDS[:4],
    (*MATCH_LABEL_FIELDS, INCLUSION): (*MATCH_LABEL_FIELDS, INCLUSION),
    (*MATCH_LABEL_FIELDS[:4], INCLUSION): (*MATCH_LABEL_FIELDS[:4], INCLUSION),
    MATCH_QUEUE_FIELDS: MATCH_LABEL_FIELDS,  # the context columns are not read
}

_RefId = Annotated[StrictStr, Field(max_length=MAX_REFERENCE_NAME)]


def _row_error(message: str, source: str, row: int | None, field: str | None,
               reason: str) -> BadInputError:
    """A bad input at ``row`` of the CSV file (as a spreadsheet numbers it: the header is
    row 1; the ``line`` column of the frames here holds that row)."""
    return input_error(message, source, None, field, reason, row=row)


class MatchLabelRecordModel(StrictRecord):
    """One match label: a row of a match-labels CSV file (Formats §5)."""

    verdict_hash: Hex64
    """The ``hash`` of the verdict's journal entry (64 lowercase hex digits)."""
    extractor: Annotated[StrictStr, Field(min_length=1, max_length=MAX_COMPLETION_NAME)]
    """The extractor configuration id whose completion proposed the lesson."""
    lesson_index: Count
    """0-based position of the lesson in the completion's ``lessons`` array
    (lessons dropped by the parser still count), as in gold labels."""
    reference_id: _RefId
    """A ``reference_id`` of the same verdict's reference lessons (any annotator's), or
    empty: the lesson expresses none of them (not ``"none"``)."""
    annotator: Annotated[StrictStr, Field(min_length=1, max_length=MAX_REFERENCE_NAME)] | None \
        = None
    """Who matched it; optional (an empty CSV cell means none)."""
    inclusion_probability: Annotated[StrictFloat, Field(gt=0.0, le=1.0)] | None = None
    """Optional column: the probability the verdict was drawn into the sample, in (0, 1],
    equal on every row of a verdict. Absent: a simple random sample of annotated verdicts."""


class MatchQueueRecordModel(MatchLabelRecordModel):
    """One row of a match queue file (``truss-lab queue RUN --kind match``): a §5 match
    label whose ``reference_id`` the person fills in, with context to decide it. Read back
    by ``truss-lab ingest match-labels``: a verdict whose rows are all still ``?`` is
    skipped and counted; the context columns are not read."""

    reference_id: _RefId = UNANSWERED
    """``?`` as written; then a reference id from ``references``, or empty (none)."""
    run_id: NonEmpty
    """The run whose lesson this is."""
    verdict_seq: Count
    """The verdict's journal seq."""
    salience: float | None = None
    """The lesson's salience."""
    text: str
    """The lesson's text."""
    references: str
    """The verdict's references to choose from, one per line: ``<reference_id>: <text>``."""
    verdict: str
    """The verdict's outcome (pass, fail, partial)."""
    goal: str
    """The verdict's goal."""
    summary: str
    """The verdict's summary."""
    checks: str
    """The verdict's checks, one per line: ``FAIL name: evidence`` or ``pass name: evidence``."""


def _empty() -> pd.DataFrame:
    return pd.DataFrame({
        "verdict_hash": pd.array([], dtype="string"),
        "extractor": pd.array([], dtype="string"),
        "lesson_index": np.array([], dtype=np.int64),
        "reference_id": pd.array([], dtype="string"),
        "annotator": pd.array([], dtype="string"),
        INCLUSION: np.array([], dtype=np.float64),
        "line": np.array([], dtype=np.int64),
    })


@dataclass
class _Rows:
    """The data rows of a file, as text, with their first lines."""

    header: tuple[str, ...]
    rows: list[list[str]] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)


def _records(data: bytes, source: str, errors: list[BadInputError]) -> BadInputError | _Rows:
    """The data rows (queue rows cut to the §5 fields); or the one ``bad_header`` error."""
    out: _Rows | None = None
    for start, row in csv_records(data, source, errors):
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        if out is None:
            if tuple(row) not in _HEADERS:
                return _row_error(
                    f"wrong CSV header {','.join(row)!r}; expected "
                    f"{','.join(MATCH_LABEL_FIELDS)!r} (annotator may be left out), optionally "
                    f"followed by {INCLUSION}, or a match queue's header "
                    "(truss-lab schema match-queue)", source, start, None, "bad_header")
            width = len(row)
            out = _Rows(_HEADERS[tuple(row)])
            continue
        if len(row) != width:
            errors.append(_row_error(
                f"expected {width} fields, got {len(row)}", source, start, None,
                "wrong_field_count"))
            continue
        out.rows.append(row[:len(out.header)])
        out.lines.append(start)
    if out is None:
        return _row_error(f"empty file; expected the header {','.join(MATCH_LABEL_FIELDS)!r}",
                           source, 1, None, "bad_header")
    return out


def _column(rows: list[list[str]], header: tuple[str, ...], name: str,
            default: str = "") -> list[str]:
    if name not in header:
        return [default] * len(rows)
    i = header.index(name)
    return [r[i] for r in rows]


def _probability(text: str) -> float | None:
    try:
        v = float(text)
    except ValueError:
        return None
    return v if math.isfinite(v) and 0.0 < v <= 1.0 else None


def _row_problems(cols: dict[str, list[str]], has_p: bool) -> dict[int, tuple[str, str]]:
    """Row -> (field, message) of the first bad value of each bad row."""
    vh, ex, li, rid, an = (cols[c] for c in MATCH_LABEL_FIELDS)
    bad: dict[int, tuple[str, str]] = {}

    def add(idx: list[int] | set[int], name: str, message: object) -> None:
        for i in sorted(idx):
            if i not in bad:
                bad[i] = (name, message(i) if callable(message) else str(message))

    add(bad_where(vh, HEX64_COL_RE, HEX64_RE), "verdict_hash",
        lambda i: f"expected 64 lowercase hex digits, got {short(vh[i])}")
    add([i for i, v in enumerate(ex) if not v], "extractor", "expected a non-empty string")
    add([i for i, v in enumerate(ex) if len(v) > MAX_COMPLETION_NAME], "extractor",
        f"expected at most {MAX_COMPLETION_NAME} characters")
    li_bad = set(bad_where(li, DIGITS_COL_RE, DIGITS_RE))
    li_bad |= {i for i, v in enumerate(li) if i not in li_bad and int(v) > MAX_SAFE_INT}
    add(li_bad, "lesson_index",
        lambda i: f"expected an integer from 0 to 2^53 - 1 (digits only), got {short(li[i])}")
    add([i for i, v in enumerate(rid) if v == NO_REFERENCE], "reference_id",
        f"{NO_REFERENCE!r} is not a reference id: leave the cell empty when the lesson "
        "expresses none of its verdict's references")
    add([i for i, v in enumerate(rid) if len(v) > MAX_REFERENCE_NAME], "reference_id",
        f"expected at most {MAX_REFERENCE_NAME} characters")
    add([i for i, v in enumerate(an) if len(v) > MAX_REFERENCE_NAME], "annotator",
        f"expected at most {MAX_REFERENCE_NAME} characters")
    for name, col in (("extractor", ex), ("reference_id", rid), ("annotator", an)):
        add(secret_rows(col), name, SECRET_HELD)
        refused = id_rows(col)[0]
        add(refused, name, refused.__getitem__)
    if has_p:
        ps = cols[INCLUSION]
        add([i for i, v in enumerate(ps) if _probability(v) is None], INCLUSION,
            lambda i: f"expected a number in (0, 1], got {short(ps[i])}")
    return bad


def read_match_labels(
    path: str | os.PathLike[str] | pd.DataFrame,
) -> tuple[pd.DataFrame, list[BadInputError]]:
    """Read a §5 match-labels CSV file (or a match queue file, or a DataFrame of its
    columns, read as the CSV it would be written as): ``(good rows, errors)``.

    The header is ``verdict_hash,extractor,lesson_index,reference_id,annotator``
    (``annotator`` may be left out), optionally followed by ``inclusion_probability``,
    or a match queue's (:data:`MATCH_QUEUE_FIELDS`); otherwise the only error names the
    header found and nothing is read. The frame has the columns of
    :data:`MATCH_LABEL_FIELDS`, then ``inclusion_probability`` (NaN without the column)
    and ``line`` (where the row came from); ``reference_id`` and ``annotator`` are
    ``""`` when empty. Each bad row gives a :class:`BadInputError` naming its line and
    field, with a reason: ``bad_value``, ``wrong_field_count``, ``bad_csv``,
    ``bad_unicode``, ``conflicting_duplicate``, ``unanswered`` (a ``?`` left on a
    verdict whose other lessons are answered), ``inconsistent_probability`` (a verdict's
    rows disagree on ``inclusion_probability``) and ``verdict_incomplete`` (the other
    rows of an answered verdict with a rejected row: it lands whole or not at all).
    Identical duplicates collapse. Verdicts whose rows are all :data:`UNANSWERED` are
    skipped, their rows counted in ``frame.attrs["blank_rows"]``.

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
    data = input_bytes(path, "match labels")  # a DataFrame: as the CSV it would be written as
    errors: list[BadInputError] = []
    got = _records(data, source, errors)
    if isinstance(got, BadInputError):
        return _empty(), [got]
    header, rows, lines = got.header, got.rows, np.asarray(got.lines, dtype=np.int64)
    cols = {c: _column(rows, header, c) for c in (*MATCH_LABEL_FIELDS, INCLUSION)}
    unit_of = list(zip(*(cols[c] for c in _UNIT), strict=True))
    # Unanswered rows: a verdict all "?" is not sampled (skipped); a "?" beside
    # answered rows of the same verdict is a lesson left out of a sampled verdict.
    unanswered = np.asarray([r == UNANSWERED for r in cols["reference_id"]], dtype=bool)
    answered_units = {u for u, q in zip(unit_of, unanswered.tolist(), strict=True) if not q}
    rejected = np.zeros(len(rows), dtype=bool)
    n_blank = 0
    for i in np.flatnonzero(unanswered):
        if unit_of[i] in answered_units:
            errors.append(_row_error(
                "not answered ('?') while other lessons of this verdict are: every lesson of "
                "a sampled verdict must be matched (a reference id, or empty for none)",
                source, int(lines[i]), "reference_id", "unanswered"))
            rejected[i] = True
        else:
            n_blank += 1
    for i, (name, message) in _row_problems(cols, INCLUSION in header).items():
        if not unanswered[i]:
            errors.append(_row_error(message, source, int(lines[i]), name, "bad_value"))
            rejected[i] = True
    keep = np.flatnonzero(~rejected & ~unanswered)
    for name in ("extractor", "reference_id", "annotator"):
        col = cols[name]
        warn_lookalikes(source, name, col, {i: p for i, p in id_rows(col)[1].items()
                                            if not rejected[i] and not unanswered[i]},
                        lines, rows=True)
    df = pd.DataFrame({
        "verdict_hash": pd.array(pa.array([cols["verdict_hash"][i] for i in keep],
                                          pa.string()), dtype="string"),
        "extractor": pd.array([cols["extractor"][i] for i in keep], dtype="string"),
        "lesson_index": np.asarray([int(cols["lesson_index"][i]) for i in keep],
                                   dtype=np.int64),
        "reference_id": pd.array([cols["reference_id"][i] for i in keep], dtype="string"),
        "annotator": pd.array([cols["annotator"][i] for i in keep], dtype="string"),
        INCLUSION: np.asarray([_probability(cols[INCLUSION][i]) if INCLUSION in header
                               else np.nan for i in keep], dtype=np.float64),
    })
    kept_lines = lines[keep]
    df, dup_errors = dedupe(df, kept_lines, MATCH_LABEL_KEY, source, where="row")
    errors += dup_errors
    df["line"] = _lines_after_dedupe(df, kept_lines, cols, keep)
    # A conflicting duplicate drops every row of its key: its verdict is then incomplete.
    rejected_units = {unit_of[i] for i in np.flatnonzero(rejected)}
    rejected_units |= {unit_of[int(np.flatnonzero(lines == e.row)[0])] for e in dup_errors}
    p_bad, p_errors = _inconsistent_probability(df, source)
    errors += p_errors
    rejected_units |= {_unit(df.iloc[i]) for i in p_bad}
    df = df.drop(index=df.index[p_bad])
    df, unit_errors = drop_units(df, rejected_units, source,
                                 "as a row of it was rejected (see above)")
    errors += unit_errors
    errors.sort(key=lambda e: e.row or 0)
    df = df.reset_index(drop=True)
    df.attrs["blank_rows"] = n_blank
    return df, errors


def _unit(row: pd.Series) -> tuple[str, str, str]:
    return str(row["verdict_hash"]), str(row["extractor"]), str(row["annotator"])


def _lines_after_dedupe(df: pd.DataFrame, kept_lines: np.ndarray, cols: dict[str, list[str]],
                        keep: np.ndarray) -> np.ndarray:
    """The first line of each row of ``df`` (after :func:`dedupe`), found by its key."""
    first: dict[tuple[str, str, int, str], int] = {}
    for i, line in zip(keep.tolist(), kept_lines.tolist(), strict=True):
        key = (cols["verdict_hash"][i], cols["extractor"][i], int(cols["lesson_index"][i]),
               cols["annotator"][i])
        first.setdefault(key, line)
    return np.asarray([first[(str(a), str(b), int(c), str(d))] for a, b, c, d in zip(
        df["verdict_hash"], df["extractor"], df["lesson_index"], df["annotator"],
        strict=True)], dtype=np.int64)


def _inconsistent_probability(df: pd.DataFrame, source: str
                              ) -> tuple[list[int], list[BadInputError]]:
    """The rows whose ``inclusion_probability`` differs from the first row of their
    verdict (positions), each with an error."""
    p = df[INCLUSION].to_numpy(dtype=np.float64)
    if np.isnan(p).all():
        return [], []
    by = df.groupby("verdict_hash", sort=False)
    first = by[INCLUSION].transform("first").to_numpy()
    first_line = by["line"].transform("first").to_numpy()
    bad = np.flatnonzero(p != first).tolist()
    return bad, [_row_error(
        f"{p[i]:g} differs from {first[i]:g} on row {first_line[i]} of the same verdict: a "
        "verdict is drawn with one probability", source, int(df["line"].iloc[i]), INCLUSION,
        "inconsistent_probability") for i in bad]


def drop_units(df: pd.DataFrame, units: set[tuple[str, str, str]], source: str,
               why: str) -> tuple[pd.DataFrame, list[BadInputError]]:
    """Drop every row of the answered verdicts ``units`` ((verdict_hash, extractor,
    annotator)), with one ``verdict_incomplete`` error per unit that had rows left,
    at its first line, saying ``why``."""
    if not units or df.empty:
        return df, []
    unit = list(zip(df["verdict_hash"].astype(str), df["extractor"].astype(str),
                    df["annotator"].astype(str), strict=True))
    hit = np.asarray([u in units for u in unit], dtype=bool)
    errors = []
    seen: set[tuple[str, str, str]] = set()
    for i in np.flatnonzero(hit):
        u = unit[i]
        if u in seen:
            continue
        seen.add(u)
        n = sum(1 for x in unit if x == u)
        who = f", annotator {u[2]!r}" if u[2] else ""
        errors.append(_row_error(
            f"verdict {u[0][:12]}…, extractor {u[1]!r}{who}: its {n} other row(s) not "
            f"loaded either, {why}; a sampled verdict lands whole or not at all",
            source, int(df["line"].iloc[i]), "lesson_index", "verdict_incomplete"))
    return df[~hit].reset_index(drop=True), errors


@dataclass
class MatchLabelCheck:
    """What :func:`check_match_labels` found: the rows that may land, the errors (line
    and field) and warnings (rows that land but cannot be fully checked yet)."""

    rows: pd.DataFrame
    errors: list[BadInputError]
    warnings: list[str]


def check_match_labels(store: Store, df: pd.DataFrame, source: str) -> MatchLabelCheck:
    """Check read match labels (:func:`read_match_labels`' frame, with ``line``) against
    the store: ``reference_id`` must name a reference of the verdict (any annotator's
    reference ids; reason ``unknown_reference``), ``lesson_index`` a lesson some run holds
    of that verdict and extractor (``unknown_lesson``), and every valid lesson of an
    answered verdict must be answered (``missing_lesson``, at the verdict's first line).
    An answered verdict with a rejected row is dropped whole (``verdict_incomplete``).
    A verdict no run of the extractor holds lands with a warning: its lessons cannot be
    checked yet."""
    if df.empty:
        return MatchLabelCheck(df, [], [])
    hashes = df["verdict_hash"].astype(str).unique().tolist()
    refs = verdict_reference_ids(store, hashes)
    lessons = match_label_lessons(store, hashes)
    vh = df["verdict_hash"].astype(str).to_numpy(dtype=object)
    ex = df["extractor"].astype(str).to_numpy(dtype=object)
    li = df["lesson_index"].to_numpy(dtype=np.int64)
    rid = df["reference_id"].astype(str).to_numpy(dtype=object)
    ann = df["annotator"].astype(str).to_numpy(dtype=object)
    line = df["line"].to_numpy(dtype=np.int64)
    ref_ids: dict[str, list[str]] = {}
    for h, r in zip(refs["verdict_hash"], refs["reference_id"], strict=True):
        ref_ids.setdefault(str(h), []).append(str(r))
    known: dict[tuple[str, str], dict[int, bool]] = {}
    for h, e, i, v in zip(lessons["verdict_hash"], lessons["extractor_id"],
                          lessons["lesson_index"], lessons["valid"], strict=True):
        known.setdefault((str(h), str(e)), {})[int(i)] = bool(v)
    errors: list[BadInputError] = []
    warnings: list[str] = []
    row_bad = np.zeros(len(df), dtype=bool)
    for k in range(len(df)):
        if rid[k] and rid[k] not in ref_ids.get(vh[k], ()):
            have = ref_ids.get(vh[k])
            hint = (f"its references: {', '.join(have)}" if have else
                    "the database holds no reference lesson of it (ingest references first)")
            errors.append(_row_error(f"{short(rid[k])} names no reference of verdict "
                                      f"{vh[k][:12]}…; {hint}", source, int(line[k]),
                                      "reference_id", "unknown_reference"))
            row_bad[k] = True
        of = known.get((vh[k], ex[k]))
        if of is not None and int(li[k]) not in of:
            errors.append(_row_error(
                f"verdict {vh[k][:12]}… has no lesson {li[k]} of extractor {ex[k]!r} "
                f"(its lessons: {_spans(sorted(of))})", source, int(line[k]), "lesson_index",
                "unknown_lesson"))
            row_bad[k] = True
    units = list(zip(vh, ex, ann, strict=True))
    rejected = {units[k] for k in np.flatnonzero(row_bad)}
    incomplete: set[tuple[str, str, str]] = set()
    rows_of: dict[tuple[str, str, str], list[int]] = {}
    for k, unit in enumerate(units):
        rows_of.setdefault(unit, []).append(k)
    for unit, rows in rows_of.items():
        idx = np.asarray(rows, dtype=np.int64)
        of = known.get((unit[0], unit[1]))
        if of is None:
            warnings.append(f"{source}: verdict {unit[0]}, extractor {unit[1]!r}: no run of "
                            "this extractor on this verdict in the database, so whether every "
                            "lesson was matched is not checked")
            continue
        missing = sorted({i for i, v in of.items() if v} - set(li[idx].tolist()))
        if missing and unit not in rejected:
            who = f", annotator {unit[2]!r}" if unit[2] else ""
            errors.append(_row_error(
                f"verdict {unit[0][:12]}…, extractor {unit[1]!r}{who}: lesson(s) "
                f"{_spans(missing)} not matched; every lesson of a sampled verdict must be "
                f"(its {len(idx)} row(s) are not loaded)", source, int(line[idx].min()),
                "lesson_index", "missing_lesson"))
            incomplete.add(unit)
    out, unit_errors = drop_units(df[~row_bad], rejected, source,
                                  "as a row of it was rejected (see above)")
    out, _ = drop_units(out, incomplete, source, "")  # its error said so already
    errors += unit_errors
    errors.sort(key=lambda e: e.row or 0)
    return MatchLabelCheck(out, errors, warnings)


def _spans(values: list[int]) -> str:
    """``0-3, 5`` for ``[0, 1, 2, 3, 5]`` (sorted)."""
    runs: list[list[int]] = []
    for v in values:
        if runs and v == runs[-1][1] + 1:
            runs[-1][1] = v
        else:
            runs.append([v, v])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def write_match_queue(queue: pd.DataFrame, path: str | os.PathLike[str]) -> int:
    """Write a match queue (the columns of :data:`MATCH_QUEUE_FIELDS`) as CSV; the rows
    written.

    The file replaces ``path`` whole or not at all. The §5 columns are written as they
    are (``reference_id`` :data:`UNANSWERED` where it is missing), so
    :func:`read_match_labels` reads them back; a context cell that a spreadsheet would
    run as a formula gets a leading apostrophe.

    Parameters
    ----------
    queue : pandas.DataFrame
        The queue (:func:`~truss_lab.evaluate._queue.match_queue`).
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
    missing = [c for c in MATCH_QUEUE_FIELDS if c not in queue.columns]
    if missing:
        raise BadInputError(f"the queue lacks column(s) {', '.join(missing)}", field=missing[0])
    n_label = len(MATCH_LABEL_FIELDS)
    columns = [queue[c].astype(object).where(queue[c].notna(), None).tolist()
               for c in MATCH_QUEUE_FIELDS]
    rid = MATCH_LABEL_FIELDS.index("reference_id")
    with output_text(path) as fh:
        out = csv.writer(fh, lineterminator="\n")
        out.writerow(MATCH_QUEUE_FIELDS)
        for row in zip(*columns, strict=True):
            head = ["" if v is None else str(v) for v in row[:n_label]]
            if row[rid] is None:
                head[rid] = UNANSWERED
            out.writerow(head + [spreadsheet_cell(v) for v in row[n_label:]])
    return len(queue)
