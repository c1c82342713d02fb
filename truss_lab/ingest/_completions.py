"""Recorded completions: JSONL, one extractor call per line (Formats §2).

:class:`CompletionRecordModel` is the specification (it feeds ``truss-lab
schema completions``); :func:`read_completions` validates column-wise with the
same rules, so that a 100k-line file reads in about a second, and returns the
good rows *and* a list of :class:`BadInputError`, one per problem, each naming
the file, the 1-based line and the field. ``tests/test_formats.py`` checks
that both agree. :func:`write_completions` checks every record the same way
before it writes anything.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Annotated, Any

import numpy as np
import pandas as pd
import pyarrow as pa
from pydantic import BaseModel, Field, StrictStr, field_validator

from ..core._canonical import MalformedJSON, canonical, loads_strict
from ..core._errors import BadInputError
from ..core._files import output_text
from ._strict import (
    ESCAPE_BREAKS,
    LINE_BREAKS,
    MISSING,
    SURROGATE,
    Count,
    Hex64,
    Problem,
    StrictRecord,
    bounded_line_batches,
    check_count,
    check_latency,
    check_str,
    dedupe,
    has_nested,
    id_rows,
    input_error,
    json_kind,
    locate_field,
    parse_lines,
)
from ._tables_in import is_table, source_name, table_record_batches

__all__ = [
    "BATCH_ROWS",
    "COMPLETION_ARROW",
    "COMPLETION_FIELDS",
    "COMPLETION_KEY",
    "MAX_COMPLETIONS_FILE",
    "MAX_COMPLETION_CONFIG",
    "MAX_COMPLETION_LINE",
    "MAX_COMPLETION_NAME",
    "MAX_COMPLETION_TEXT",
    "CompletionRecordModel",
    "arrow_completions",
    "completion_batches",
    "completion_columns",
    "completion_frame",
    "read_completions",
    "validate_completion_columns",
    "write_completions",
]

COMPLETION_FIELDS: tuple[str, ...] = (
    "verdict_hash",
    "extractor",
    "model",
    "prompt_version",
    "request_hash",
    "text",
    "latency_ms",
    "prompt_tokens",
    "completion_tokens",
    "config",
)
"""The §2 fields, in the documented order (also the column order of the frames)."""
COMPLETION_KEY: tuple[str, ...] = ("verdict_hash", "extractor")
"""Unique key of a recorded completion within a file."""

# Bounds on a line's fields (docs/reference/formats.md; ``truss-lab schema completions`` shows
# them), as reference lessons have: far longer is a mistake or an attack (a pasted file,
# a server sending megabytes), which would swell every table, export and report it
# reaches. A value beyond its bound is a bad line, named by line and field.
MAX_COMPLETION_TEXT = 1_048_576
"""Most characters of a completion's ``text``. Every real completion fits: the longest
answers models give in one call are 64k-128k tokens, about half a million characters at
some four characters a token; 1 Mi characters is twice that. A live call whose answer is
longer is a failed call (``extract/_providers.py``), so no recording exceeds it."""
MAX_COMPLETION_NAME = 1024
"""Most characters of an ``extractor``, a ``model`` or a ``prompt_version`` (and of the
``extractor`` a label or match label names): an extractor id is ``MODEL@PROMPT_VERSION``
plus eight hex digits, and model ids are paths of a hundred characters or so."""
MAX_COMPLETION_CONFIG = 65_536
"""Most characters of a line's ``config`` as canonical JSON (an extractor configuration,
its response format's JSON Schema included, is a few kilobytes)."""
MAX_COMPLETION_LINE = 16 * 1024 * 1024
"""Most bytes of one line (its newline not counted). Every line whose fields are within
their bounds fits, however it is escaped (a character is at most 12 bytes of JSON, a
``\\uXXXX`` surrogate pair: 12 MiB of text, 768 KiB of config, 36 KiB of names); a
longer line is refused without being read whole (a megabyte at a time, dropped as read),
so a 50 MB line costs the reader a few megabytes of memory, not several copies of it."""
MAX_COMPLETIONS_FILE = 16 << 30
"""Most bytes of a completions JSONL file (read whole: a pipe is read no further, a larger
file is refused unread)."""

_Name = Annotated[StrictStr, Field(min_length=1, max_length=MAX_COMPLETION_NAME)]

_REQUIRED_COMPLETION = frozenset({"verdict_hash", "extractor", "model", "prompt_version", "text"})
_NULLABLE = ("request_hash", "latency_ms", "prompt_tokens", "completion_tokens", "config")
"""The fields an empty CSV cell leaves absent (null); an empty ``text`` is the empty
answer, an empty name a bad value."""
_ALLOWED_COMPLETION = frozenset(COMPLETION_FIELDS)

class CompletionRecordModel(StrictRecord):
    """One recorded extractor call: a line of a completions JSONL file (Formats §2)."""

    verdict_hash: Hex64
    """The ``hash`` of the verdict's journal entry (64 lowercase hex digits)."""
    extractor: _Name
    """The extractor configuration id (model + prompt version); with
    ``verdict_hash`` it is unique within a file."""
    model: _Name
    """The model that answered."""
    prompt_version: _Name
    """The version of the prompt template that rendered the request."""
    request_hash: Hex64 | None = None
    """SHA-256 (64 lowercase hex) of the request the model saw; null (or absent)
    in data recorded elsewhere, in which case a replay cannot check it."""
    text: Annotated[StrictStr, Field(max_length=MAX_COMPLETION_TEXT)]
    """The raw completion text, whatever the model returned (may be empty)."""
    latency_ms: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None
    """Wall time of the call in milliseconds (>= 0), when known."""
    prompt_tokens: Count | None = None
    """Tokens in the prompt (integer >= 0), when reported."""
    completion_tokens: Count | None = None
    """Tokens in the completion (integer >= 0), when reported."""
    config: dict[str, Any] | None = None
    """The extractor configuration the call was made under (the fields of
    ``ExtractorConfig``: provider, model, prompt_version, response_format, sampling,
    samples), when truss_lab recorded the call; a replay of the file rebuilds the
    same requests from it. Null (or absent) in data recorded elsewhere. In frames it
    is the configuration's canonical JSON text (at most ``MAX_COMPLETION_CONFIG``
    characters)."""

    @field_validator("config")
    @classmethod
    def _config_bounded(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None and len(canonical(value)) > MAX_COMPLETION_CONFIG:
            raise ValueError(f"expected at most {MAX_COMPLETION_CONFIG} characters of "
                             "canonical JSON")
        return value


_CHECKS: dict[str, Any] = {
    "verdict_hash": lambda c: check_str(c, nullable=False, non_empty=True, hex64=True),
    # An extractor id is an id (replay:<extractor>): no control character (NUL).
    "extractor": lambda c: {**id_rows(c)[0], **check_str(
        c, nullable=False, non_empty=True, hex64=False, max_len=MAX_COMPLETION_NAME)},
    "model": lambda c: check_str(c, nullable=False, non_empty=True, hex64=False,
                                 max_len=MAX_COMPLETION_NAME),
    "prompt_version": lambda c: check_str(c, nullable=False, non_empty=True, hex64=False,
                                          max_len=MAX_COMPLETION_NAME),
    "request_hash": lambda c: check_str(c, nullable=True, non_empty=True, hex64=True),
    "text": lambda c: check_str(c, nullable=False, non_empty=False, hex64=False,
                                max_len=MAX_COMPLETION_TEXT),
    "latency_ms": check_latency,
    "prompt_tokens": check_count,
    "completion_tokens": check_count,
}


_BOUNDS = {
    "text": f"{MAX_COMPLETION_TEXT} characters",
    "config": f"{MAX_COMPLETION_CONFIG} characters of canonical JSON",
    **dict.fromkeys(("extractor", "model", "prompt_version"),
                    f"{MAX_COMPLETION_NAME} characters"),
}
"""What the error of an over-long line says its field may hold."""


def _object(value: Any) -> Any:
    """A parsed JSON value with its objects (pair tuples from the reader) as dicts;
    raises ValueError on a duplicate key."""
    if type(value) is tuple:
        d = {k: _object(v) for k, v in value}
        if len(d) != len(value):
            raise ValueError("duplicate key")
        return d
    if type(value) is list:
        return [_object(v) for v in value]
    if type(value) is dict:
        return {k: _object(v) for k, v in value.items()}
    return value


def _config_texts(col: list[Any]) -> tuple[list[Any], dict[int, str]]:
    """The ``config`` column as canonical JSON text (frames stay flat and comparable),
    and row -> what was expected for the values that are not a JSON object."""
    out: list[Any] = []
    problems: dict[int, str] = {}
    # A file repeats one configuration on every line: canonicalize each distinct one once.
    seen: dict[Any, str] = {}
    for i, v in enumerate(col):
        if v is None:
            out.append(None)
            continue
        key = _memo_key(v)
        text = None if key is None else seen.get(key)
        if text is not None:
            out.append(text)
            continue
        try:
            obj = _object(loads_strict(v) if type(v) is str else v)
            if type(obj) is not dict:
                raise ValueError("not an object")
            text = canonical(obj)
        except (ValueError, TypeError, MalformedJSON):
            problems[i] = "expected a JSON object (the extractor configuration) or null"
            out.append(v)
            continue
        if len(text) > MAX_COMPLETION_CONFIG:
            problems[i] = (f"expected at most {MAX_COMPLETION_CONFIG} characters of canonical "
                           f"JSON, got {len(text)}")
            out.append(v)
            continue
        out.append(text)
        if key is not None:
            seen[key] = text
    return out, problems


def _memo_key(value: Any) -> Any:
    """A hashable stand-in for a ``config`` value (None: do not memoize it)."""
    try:
        if type(value) is dict:  # a record's: its sorted JSON names it
            return json.dumps(value, sort_keys=True, allow_nan=True)
        hash(value)
    except (TypeError, ValueError):  # a list inside, or not JSON at all
        return None
    return value


def validate_completion_columns(
    cols: dict[str, list[Any]], n: int, *, skip: np.ndarray | None = None
) -> tuple[dict[str, list[Any]], np.ndarray, list[Problem]]:
    """Check §2 columns (``MISSING`` marks an absent field; ``skip`` rows are
    already known bad). Returns the columns with absent values as None, the bad
    mask and the problems, in row then field order."""
    problems: list[Problem] = []
    skip = np.zeros(n, dtype=bool) if skip is None else skip
    out: dict[str, list[Any]] = {}
    for name in COMPLETION_FIELDS:
        col = cols.get(name)
        if col is None:
            col = [MISSING] * n
        missing = np.fromiter((x is MISSING for x in col), dtype=bool, count=n)
        if missing.any():
            if name in _REQUIRED_COMPLETION:
                problems.extend(
                    (int(i), name, "required field is missing", "missing")
                    for i in np.flatnonzero(missing & ~skip)
                )
            col = [None if x is MISSING else x for x in col]
        if name == "config":
            col, msgs = _config_texts(col)
        else:
            msgs = _CHECKS[name](col)
        for i, msg in msgs.items():
            if not skip[i] and not (missing[i] and name in _REQUIRED_COMPLETION):
                reason = "bad_unicode" if msg.startswith(SURROGATE) else "bad_value"
                problems.append((i, name, msg, reason))
        out[name] = col
    bad = skip.copy()
    if problems:
        bad[[p[0] for p in problems]] = True
    problems.sort(key=lambda p: p[0])
    return out, bad, problems


def completion_columns(values: list[Any]) -> tuple[dict[str, list[Any]], np.ndarray, list[Problem]]:
    """Columns of a list of parsed lines, plus the rows that are not objects or
    carry unexpected fields."""
    n = len(values)
    problems: list[Problem] = []
    is_dict = np.fromiter((type(v) is dict for v in values), dtype=bool, count=n)
    recs = values
    if not is_dict.all():
        recs = [v if ok else {} for v, ok in zip(values, is_dict, strict=True)]
        problems.extend(
            (int(i), None, f"expected a JSON object, got {json_kind(values[i])}", "not_object")
            for i in np.flatnonzero(~is_dict)
        )
    cols = {name: [r.get(name, MISSING) for r in recs] for name in COMPLETION_FIELDS}
    lens = np.fromiter(map(len, recs), dtype=np.int64, count=n)
    known = np.zeros(n, dtype=np.int64)
    for col in cols.values():
        known += np.fromiter((x is not MISSING for x in col), dtype=bool, count=n)
    for i in np.flatnonzero(lens != known):
        for k in sorted(recs[i].keys() - _ALLOWED_COMPLETION):
            msg = f"unexpected field (allowed: {', '.join(COMPLETION_FIELDS)})"
            problems.append((int(i), k, msg, "unexpected_field"))
    return cols, ~is_dict | (lens != known), problems


_ARROW_TYPES = {
    "latency_ms": pa.float64(),
    "prompt_tokens": pa.int64(),
    "completion_tokens": pa.int64(),
}
_PANDAS_TYPES = {
    pa.string(): pd.StringDtype(),
    pa.float64(): pd.Float64Dtype(),
    pa.int64(): pd.Int64Dtype(),
}


COMPLETION_ARROW = pa.schema([(name, _ARROW_TYPES.get(name, pa.string()))
                              for name in COMPLETION_FIELDS])
"""The Arrow types of :func:`completion_frame`'s columns."""


def arrow_completions(table: pa.Table) -> pd.DataFrame:
    """A frame of §2 columns (and any others) from Arrow, typed as :func:`completion_frame`
    types them."""
    return table.to_pandas(types_mapper=_PANDAS_TYPES.get)


def completion_frame(cols: dict[str, list[Any]], rows: np.ndarray | None = None) -> pd.DataFrame:
    """A frame of §2 columns; ``rows`` selects rows (all when None)."""
    arrays = []
    for name in COMPLETION_FIELDS:
        col = cols[name]
        if rows is not None:
            col = [col[i] for i in rows]
        typ = _ARROW_TYPES.get(name, pa.string())
        if name == "latency_ms":
            col = [None if x is None else float(x) for x in col]
        arrays.append(pa.array(col, type=typ))
    return arrow_completions(pa.Table.from_arrays(arrays, names=list(COMPLETION_FIELDS)))


def read_completions(
    path: str | os.PathLike[str] | pd.DataFrame,
) -> tuple[pd.DataFrame, list[BadInputError]]:
    """Read §2 completions: ``(good rows, errors)``.

    ``path`` is a JSONL file, or a table of the same fields as columns: a ``.csv`` file
    (a header row; ``config`` as JSON text; an empty cell of ``request_hash``, the
    numbers or ``config`` is null), a ``.parquet`` file or a DataFrame. A table is read
    as the JSON lines its rows would be, with the same checks and errors, each naming
    the table's row instead of a line (a file's row as a spreadsheet numbers it, the
    header row 1; a DataFrame's 0-based position).

    The frame has the columns of :data:`COMPLETION_FIELDS` in that order
    (strings as ``string``, ``latency_ms`` as ``Float64``, token counts as
    ``Int64``; null is ``<NA>``), one row per unique (verdict_hash, extractor).
    Every bad line gives a :class:`BadInputError` naming the file, the line and
    (when known) the field, with a ``reason`` code: malformed JSON (``bad_json``,
    ``not_object``, ``bad_unicode`` — also for a lone-surrogate escape),
    ``duplicate_key``, ``non_finite`` (NaN/Infinity), ``unsafe_integer``
    (beyond 2^53 - 1), ``missing``, ``unexpected_field``, ``bad_value`` (a value
    beyond its bound too: :data:`MAX_COMPLETION_TEXT` and the others), ``line_too_long``
    (over :data:`MAX_COMPLETION_LINE` bytes: refused unread, naming the field that makes
    it long when it can). Identical
    duplicate lines collapse into one row; conflicting ones are all dropped,
    with an error naming both lines. Blank lines are ignored.

    Parameters
    ----------
    path : path or pandas.DataFrame
        A JSONL, ``.csv`` or ``.parquet`` file, or a frame of the same fields.

    Returns
    -------
    tuple of (pandas.DataFrame, list of BadInputError)
        The good rows, and one error per bad line or row.
    """
    source = source_name(path)
    frames, numbers, errors = [], [], []
    for df, lines, errs in completion_batches(path):
        frames.append(df)
        numbers.append(lines)
        errors += errs
    df = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    df, dup_errors = dedupe(df, np.concatenate(numbers), COMPLETION_KEY, source,
                            where="row" if is_table(path) else "line")
    errors += dup_errors
    errors.sort(key=lambda e: e.line or e.row or 0)
    return df, errors


BATCH_ROWS = 8192
"""Lines (a table's rows) :func:`completion_batches` reads at a time: an ingest holds a
batch of them, not the file."""


def completion_batches(
    path: str | os.PathLike[str] | pd.DataFrame, batch_rows: int = BATCH_ROWS,
) -> Iterator[tuple[pd.DataFrame, np.ndarray, list[BadInputError]]]:
    """:func:`read_completions` a batch at a time, the file read once as it goes: per
    batch of ``batch_rows`` lines (rows), its good rows (duplicates not yet collapsed:
    that spans batches), the line (row) of each and its errors. At least one batch."""
    source = source_name(path)
    if is_table(path):
        for table in table_record_batches(
                path, batch_rows, counts=("prompt_tokens", "completion_tokens"),
                numbers=("latency_ms",), nullable=_NULLABLE, max_cell=MAX_COMPLETION_LINE):
            df, good, errors = _checked_records(table.records, table.numbers, source)
            yield df, good, [*table.errors, *errors]
        return
    for lines, errors in bounded_line_batches(path, MAX_COMPLETION_LINE, "completions",
                                              _BOUNDS, MAX_COMPLETIONS_FILE, batch_rows):
        df, good, more = _checked_lines(lines, source)
        yield df, good, errors + more


def _checked_lines(lines: list[tuple[int, str]],
                   source: str) -> tuple[pd.DataFrame, np.ndarray, list[BadInputError]]:
    """The good rows of numbered JSON lines, their line numbers, and an error per
    problem (row then field order; a JSON-level fault wins)."""
    texts = [t for _, t in lines]
    numbers = np.asarray([i for i, _ in lines], dtype=np.int64)
    values, fast = parse_lines(texts)
    cols, skip, problems = completion_columns(values)
    if fast and has_nested(cols, values, skip):
        # A nested value could hide an element spanning lines: parse line by line.
        values, _ = parse_lines(texts, per_line=True)
        cols, skip, problems = completion_columns(values)
    return _checked(cols, skip, problems, texts.__getitem__, numbers, source, "line")


def _checked_records(records: list[dict[str, Any]], numbers: list[int],
                     source: str) -> tuple[pd.DataFrame, np.ndarray, list[BadInputError]]:
    """:func:`_checked_lines` of a table's rows, read as the JSON lines they would be
    without writing and parsing them: a value JSON has no type for is its text (as the
    line would hold it), and a failing row alone is written as its line to be parsed
    strictly, so every error is the line's, naming the table's row."""
    values = [{k: _json_value(v) for k, v in r.items()} for r in records]
    cols, skip, problems = completion_columns(values)
    line = json.JSONEncoder(ensure_ascii=False, allow_nan=True, default=str).encode
    return _checked(cols, skip, problems, lambda i: line(records[i]),
                    np.asarray(numbers, dtype=np.int64), source, "row")


def _json_value(v: Any) -> Any:
    """``v`` as the JSON line of a table's row holds it (``default=str``)."""
    if v is None or type(v) in (str, int, float, bool):
        return v
    if isinstance(v, dict):
        return {k: _json_value(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_json_value(x) for x in v]
    if isinstance(v, str | int | float):  # a subclass: JSON writes its plain value
        return json.loads(json.dumps(v, allow_nan=True))
    return str(v)


def _checked(cols: dict[str, list[Any]], skip: np.ndarray, problems: list[Problem],
             text: Any, numbers: np.ndarray, source: str,
             where: str) -> tuple[pd.DataFrame, np.ndarray, list[BadInputError]]:
    """Validate parsed §2 columns (``text(i)``: row ``i``'s JSON line, parsed strictly
    when the row fails); ``where`` is what errors name, a ``line`` or a ``row``."""
    n = len(numbers)
    cols, bad, more = validate_completion_columns(cols, n, skip=skip)
    problems = sorted(problems + more, key=lambda p: p[0])
    at = ((lambda i: {"line": int(numbers[i])}) if where == "line"
          else (lambda i: {"line": None, "row": int(numbers[i])}))
    errors: list[BadInputError] = []
    # Every failing row is parsed again strictly: a JSON-level fault wins.
    json_errors: dict[int, BadInputError] = {}
    for i in np.flatnonzero(bad):
        t = text(i)
        try:
            loads_strict(t)
        except MalformedJSON as exc:
            field = locate_field(t, exc.reason, exc.field)
            json_errors[int(i)] = _error(str(exc), source, field, exc.reason, **at(i))
    for i, field, msg, reason in problems:
        if i not in json_errors:
            errors.append(_error(msg, source, field, reason, **at(i)))
    errors.extend(json_errors.values())
    good = np.flatnonzero(~bad)
    df = completion_frame(cols, None if len(good) == n else good)
    return df, numbers[good], errors


def _error(msg: str, source: str, field: str | None, reason: str, *, line: int | None,
           row: int | None = None) -> BadInputError:
    return input_error(msg, source, line, field, reason, row=row)


def _frame_columns(df: pd.DataFrame) -> dict[str, list[Any]]:
    """Python-valued §2 columns of a frame (absent columns are ``MISSING``)."""
    cols: dict[str, list[Any]] = {}
    for name in COMPLETION_FIELDS:
        if name not in df.columns:
            continue
        ser = df[name]
        values = ser.astype(object).tolist()
        na = ser.isna().to_numpy()
        if na.any():
            values = [None if m else v for v, m in zip(values, na, strict=True)]
        cols[name] = [v.item() if isinstance(v, np.generic) else v for v in values]
    return cols


def write_completions(
    data: pd.DataFrame | Iterable[Mapping[str, Any] | BaseModel], path: str | os.PathLike[str]
) -> int:
    """Write recorded completions as §2 JSONL (fields in order); returns rows written.

    ``data`` is a frame with the §2 columns (other columns are ignored), or
    records (dicts or :class:`CompletionRecordModel`). Every record is checked
    first: a bad one raises :class:`BadInputError` naming the record (0-based)
    and field, and nothing is written. Identical duplicates are written once;
    conflicting ones raise. The file is replaced atomically.

    Parameters
    ----------
    data : pandas.DataFrame or iterable of mapping or CompletionRecordModel
        The completions.
    path : path
        The JSONL file to write.

    Returns
    -------
    int
        Rows written.

    Raises
    ------
    BadInputError
        A bad record (naming it and its field) or conflicting duplicates: nothing is
        written.
    """
    source = "<records>"
    if isinstance(data, pd.DataFrame):
        n = len(data)
        cols = _frame_columns(data)
        skip, problems = np.zeros(n, dtype=bool), []
    else:
        values = [r.model_dump() if isinstance(r, BaseModel) else r for r in data]
        values = [dict(v) if isinstance(v, Mapping) else v for v in values]
        n = len(values)
        cols, skip, problems = completion_columns(values)
    cols, _, more = validate_completion_columns(cols, n, skip=skip)
    problems = sorted(problems + more, key=lambda p: p[0])
    if problems:
        i, field, msg, reason = problems[0]
        raise BadInputError(
            f"record {i}: {msg} ({len(problems)} problem(s) in all; nothing written)",
            source=source, field=field, reason=reason,
        )
    df = completion_frame(cols)
    df, dup_errors = dedupe(df, np.arange(n, dtype=np.int64), COMPLETION_KEY, source,
                             where="record")
    if dup_errors:
        e = dup_errors[0]
        raise BadInputError(f"record {e.line}: {e.message}; nothing written", source=source,
                            field=e.field, reason=e.reason)
    out = _frame_columns(df)
    with output_text(path) as fh:
        dumps = json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode
        for row in zip(*(out[k] for k in COMPLETION_FIELDS), strict=True):
            rec = dict(zip(COMPLETION_FIELDS, row, strict=True))
            # The configuration travels as an object; a line without one omits it.
            config = rec.pop("config")
            if config is not None:
                rec["config"] = json.loads(config)
            line = dumps(rec)
            if LINE_BREAKS.search(line):
                line = line.translate(ESCAPE_BREAKS)
            fh.write(line)
            fh.write("\n")
    return len(df)
