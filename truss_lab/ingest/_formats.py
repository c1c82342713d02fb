"""Readers and writers of the two unchained interchange formats (FORMATS.md §2, §3).

* Recorded completions: JSONL, one extractor call per line
  (:class:`CompletionRecordModel`, :func:`read_completions`, :func:`write_completions`).
* Gold labels: CSV with a header (:class:`LabelRecordModel`, :func:`read_labels`).

Neither format is chained, so a bad line does not spoil the file: the readers
return the good rows *and* a list of :class:`BadInputError`, one per problem,
each naming the file, the 1-based line and the field.

The pydantic models are the specification (they feed ``truss-lab schema NAME``);
the readers validate column-wise with the same rules so that a 100k-line file
reads in about a second. ``tests/test_formats.py`` checks that both agree.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import pandas as pd
import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from ..core._canonical import MAX_SAFE_INT, MalformedJSON, loads_strict
from ..core._errors import BadInputError

__all__ = [
    "COMPLETION_FIELDS",
    "COMPLETION_KEY",
    "LABEL_FIELDS",
    "LABEL_KEY",
    "CompletionRecordModel",
    "LabelRecordModel",
    "read_completions",
    "read_labels",
    "write_completions",
]

HEX64 = r"^[0-9a-f]{64}$"
_HEX64_RE = re.compile(r"[0-9a-f]{64}")

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
)
"""The §2 fields, in FORMATS.md order (also the column order of the frames)."""
COMPLETION_KEY: tuple[str, ...] = ("verdict_hash", "extractor")
"""Unique key of a recorded completion within a file."""
LABEL_FIELDS: tuple[str, ...] = ("verdict_hash", "extractor", "lesson_index", "useful", "annotator")
"""The §3 CSV header, in order (``annotator`` may be left out of the header)."""
LABEL_KEY: tuple[str, ...] = ("verdict_hash", "extractor", "lesson_index", "annotator")
"""Unique key of a gold label within a file."""

_REQUIRED_COMPLETION = frozenset({"verdict_hash", "extractor", "model", "prompt_version", "text"})
_ALLOWED_COMPLETION = frozenset(COMPLETION_FIELDS)

Hex64 = Annotated[StrictStr, Field(pattern=HEX64)]
NonEmpty = Annotated[StrictStr, Field(min_length=1)]
Count = Annotated[StrictInt, Field(ge=0, le=MAX_SAFE_INT)]


class _Record(BaseModel):
    model_config = ConfigDict(
        frozen=True, extra="forbid", strict=True, use_attribute_docstrings=True
    )


class CompletionRecordModel(_Record):
    """One recorded extractor call: a line of a completions JSONL file (FORMATS.md §2)."""

    verdict_hash: Hex64
    """The ``hash`` of the verdict's journal entry (64 lowercase hex digits)."""
    extractor: NonEmpty
    """The extractor configuration id (model + prompt version); with
    ``verdict_hash`` it is unique within a file."""
    model: NonEmpty
    """The model that answered."""
    prompt_version: NonEmpty
    """The version of the prompt template that rendered the request."""
    request_hash: Hex64 | None = None
    """SHA-256 (64 lowercase hex) of the request the model saw; null (or absent)
    in data recorded elsewhere, in which case a replay cannot check it."""
    text: StrictStr
    """The raw completion text, whatever the model returned (may be empty)."""
    latency_ms: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None
    """Wall time of the call in milliseconds (>= 0), when known."""
    prompt_tokens: Count | None = None
    """Tokens in the prompt (integer >= 0), when reported."""
    completion_tokens: Count | None = None
    """Tokens in the completion (integer >= 0), when reported."""


class LabelRecordModel(_Record):
    """One gold label: a row of a labels CSV file (FORMATS.md §3)."""

    verdict_hash: Hex64
    """The ``hash`` of the verdict's journal entry (64 lowercase hex digits)."""
    extractor: NonEmpty
    """The extractor configuration id whose completion proposed the lesson."""
    lesson_index: Count
    """0-based position of the lesson in the completion's ``lessons`` array
    (lessons dropped by the parser still count)."""
    useful: Literal[0, 1]
    """1 when the annotator judged the lesson useful, else 0."""
    annotator: NonEmpty | None = None
    """Who labelled it; optional (an empty CSV cell means none)."""


# ---------------------------------------------------------------- helpers


def _err(
    message: str, source: str, line: int | None, field: str | None, reason: str
) -> BadInputError:
    return BadInputError(message, source=source, line=line, field=field, reason=reason)


def _short(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _is_bad_number(value: Any) -> bool:
    """Whether a JSON scalar is one RFC 8785 cannot represent."""
    t = type(value)
    if t is float:
        return not math.isfinite(value)
    if t is int:
        return abs(value) > MAX_SAFE_INT
    return False


class _Obj(list):  # type: ignore[type-arg]
    """A JSON object as its (key, value) pairs, duplicates kept."""


def _locate_field(text: str, reason: str, key: str | None) -> str | None:
    """Best effort: the dotted path of the value loads_strict refused.

    loads_strict names only the duplicated key (not where it sits) and nothing
    for NaN or unsafe integers; a lenient parse walks to the first culprit.
    """
    if reason not in ("duplicate_key", "non_finite", "unsafe_integer"):
        return key
    try:
        value = json.loads(text, object_pairs_hook=_Obj)
    except (ValueError, RecursionError):
        return key

    def walk(v: Any, path: tuple[str, ...]) -> tuple[str, ...] | None:
        if isinstance(v, _Obj):
            seen: set[str] = set()
            for k, x in v:
                if reason == "duplicate_key" and k == key and k in seen:
                    return (*path, k)
                seen.add(k)
                found = walk(x, (*path, k))
                if found is not None:
                    return found
        elif isinstance(v, list):
            for i, x in enumerate(v):
                found = walk(x, (*path, str(i)))
                if found is not None:
                    return found
        elif reason != "duplicate_key" and _is_bad_number(v):
            return path
        return None

    found = walk(value, ())
    return ".".join(found) if found else key


def _split_lines(data: bytes, source: str) -> tuple[list[tuple[int, str]], list[BadInputError]]:
    """Non-blank lines with their 1-based numbers; undecodable lines become errors."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    errors: list[BadInputError] = []
    try:
        raw = data.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        raw = []
        for i, chunk in enumerate(data.split(b"\n"), start=1):
            try:
                raw.append(chunk.decode("utf-8"))
            except UnicodeDecodeError as exc:
                errors.append(_err(f"not UTF-8: {exc.reason}", source, i, None, "bad_unicode"))
                raw.append("")
    lines = [(i, s) for i, s in enumerate(raw, start=1) if s and not s.isspace()]
    return lines, errors


# A decoder that accepts what json accepts but keeps objects as pair tuples, so
# duplicate keys can be spotted after a single C-speed parse. Anything else
# loads_strict refuses (NaN, Infinity, integers beyond 2^53, nested duplicates)
# makes a record fail validation, and every failing record is parsed again by
# loads_strict, whose verdict wins.
_PAIRS_DECODER = json.JSONDecoder(object_pairs_hook=tuple)


def _fast_objects(texts: list[str]) -> list[Any] | None:
    """Parse all lines at once; None when the batch cannot be trusted line by line.

    The batch is joined with ``"\\n,"``: a raw newline cannot sit inside a JSON
    string and every line starts with ``{``, so an element can span two lines
    only inside an array. Hence when every element is a flat object (checked
    by :func:`_has_nested` afterwards) element ``i`` is exactly line ``i``.
    """
    if not texts or not all(t.lstrip().startswith("{") for t in texts):
        return None
    try:
        out = _PAIRS_DECODER.decode("[" + "\n,".join(texts) + "]")
    except (ValueError, RecursionError):
        return None
    if len(out) != len(texts):
        return None
    return out


def _parse_lines(texts: list[str], *, per_line: bool = False) -> tuple[list[Any], bool]:
    """Lenient parse: a dict per line, or None where loads_strict must decide.

    The flag says whether the one-shot batch parse was used.
    """
    batch = None if per_line else _fast_objects(texts)
    fast = batch is not None
    if batch is None:
        batch = []
        for t in texts:
            try:
                batch.append(_PAIRS_DECODER.decode(t))
            except (ValueError, RecursionError):
                batch.append(None)
    values: list[Any] = []
    for pairs in batch:
        if type(pairs) is tuple:
            d = dict(pairs)
            if len(d) == len(pairs):
                values.append(d)
                continue
        values.append(None)
    return values, fast


def _has_nested(cols: dict[str, list[Any]], values: list[Any], rows: np.ndarray) -> bool:
    """Whether any record holds an array or object (``rows`` have unexpected fields)."""
    for col in cols.values():
        types = set(map(type, col))
        if tuple in types or list in types:
            return True
    for i in np.flatnonzero(rows):
        v = values[i]
        if type(v) is dict and any(type(x) in (tuple, list) for x in v.values()):
            return True
    return False


# ------------------------------------------------------- column validation


def _check_str(
    col: list[Any], *, nullable: bool, non_empty: bool, hex64: bool
) -> dict[int, str]:
    """Row -> what was expected, for the invalid values of a string column."""
    types = set(map(type, col))
    allowed = {str, type(None)} if nullable else {str}
    if types <= allowed:
        strs = col if type(None) not in types else [x for x in col if x is not None]
        joined = "\n".join(strs)
        # A lone surrogate anywhere sends the column to the per-value walk.
        if _utf8_ok(joined):
            if hex64:
                # A value holding a newline could pass as two hashes: count them.
                if not strs or (
                    joined.count("\n") == len(strs) - 1 and _HEX64_COL_RE.fullmatch(joined)
                ):
                    return {}
            elif not non_empty or all(strs):
                return {}
    out: dict[int, str] = {}
    what = (
        "64 lowercase hex digits" if hex64 else ("a non-empty string" if non_empty else "a string")
    )
    if nullable:
        what += " or null"
    for i, v in enumerate(col):
        if type(v) is str:
            if not _utf8_ok(v):
                out[i] = f"{_SURROGATE}; expected {what}"
            elif hex64:
                if len(v) != 64 or _HEX64_RE.fullmatch(v) is None:
                    out[i] = f"expected {what}, got {_short(v)}"
            elif non_empty and not v:
                out[i] = f"expected {what}, got an empty string"
        elif v is None and nullable:
            continue
        else:
            out[i] = f"expected {what}, got {_json_kind(v)}"
    return out


_SURROGATE = "string holds a lone surrogate (not valid Unicode)"


def _utf8_ok(text: str) -> bool:
    # A JSON \\ud800 escape decodes to a lone surrogate: no UTF-8 form, so
    # neither Arrow nor DuckDB can store it.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_count(col: list[Any]) -> dict[int, str]:
    types = set(map(type, col))
    if types <= {int, type(None)}:
        ints = col if type(None) not in types else [x for x in col if x is not None]
        if not ints or (min(ints) >= 0 and max(ints) <= MAX_SAFE_INT):
            return {}
    out: dict[int, str] = {}
    for i, v in enumerate(col):
        if v is None:
            continue
        if type(v) is not int:
            out[i] = f"expected an integer >= 0 or null, got {_json_kind(v)}"
        elif not 0 <= v <= MAX_SAFE_INT:
            out[i] = f"expected an integer from 0 to 2^53 - 1, got {v}"
    return out


def _check_latency(col: list[Any]) -> dict[int, str]:
    types = set(map(type, col))
    if types <= {int, float, type(None)}:
        nums = col if type(None) not in types else [x for x in col if x is not None]
        a = np.asarray(nums, dtype=np.float64)
        if not len(a) or (np.isfinite(a).all() and (a >= 0).all() and (a < MAX_SAFE_INT).all()):
            return {}
    out: dict[int, str] = {}
    for i, v in enumerate(col):
        if v is None:
            continue
        t = type(v)
        if t is not int and t is not float:
            out[i] = f"expected a number >= 0 or null, got {_json_kind(v)}"
        elif _is_bad_number(v) or not v >= 0:
            out[i] = f"expected a finite number >= 0, got {v}"
    return out


_HEX64_COL_RE = re.compile(r"(?:[0-9a-f]{64}\n)*[0-9a-f]{64}")
_MISSING = object()
_CHECKS: dict[str, Any] = {
    "verdict_hash": lambda c: _check_str(c, nullable=False, non_empty=True, hex64=True),
    "extractor": lambda c: _check_str(c, nullable=False, non_empty=True, hex64=False),
    "model": lambda c: _check_str(c, nullable=False, non_empty=True, hex64=False),
    "prompt_version": lambda c: _check_str(c, nullable=False, non_empty=True, hex64=False),
    "request_hash": lambda c: _check_str(c, nullable=True, non_empty=True, hex64=True),
    "text": lambda c: _check_str(c, nullable=False, non_empty=False, hex64=False),
    "latency_ms": _check_latency,
    "prompt_tokens": _check_count,
    "completion_tokens": _check_count,
}

# A problem: (row, field or None, message, reason).
_Problem = tuple[int, str | None, str, str]


def _validate_columns(
    cols: dict[str, list[Any]], n: int, *, skip: np.ndarray | None = None
) -> tuple[dict[str, list[Any]], np.ndarray, list[_Problem]]:
    """Check §2 columns (``_MISSING`` marks an absent field; ``skip`` rows are
    already known bad). Returns the columns with absent values as None, the bad
    mask and the problems, in row then field order."""
    problems: list[_Problem] = []
    skip = np.zeros(n, dtype=bool) if skip is None else skip
    out: dict[str, list[Any]] = {}
    for name in COMPLETION_FIELDS:
        col = cols.get(name)
        if col is None:
            col = [_MISSING] * n
        missing = np.fromiter((x is _MISSING for x in col), dtype=bool, count=n)
        if missing.any():
            if name in _REQUIRED_COMPLETION:
                problems.extend(
                    (int(i), name, "required field is missing", "missing")
                    for i in np.flatnonzero(missing & ~skip)
                )
            col = [None if x is _MISSING else x for x in col]
        for i, msg in _CHECKS[name](col).items():
            if not skip[i] and not (missing[i] and name in _REQUIRED_COMPLETION):
                reason = "bad_unicode" if msg.startswith(_SURROGATE) else "bad_value"
                problems.append((i, name, msg, reason))
        out[name] = col
    bad = skip.copy()
    if problems:
        bad[[p[0] for p in problems]] = True
    problems.sort(key=lambda p: p[0])
    return out, bad, problems


def _columns_of(values: list[Any]) -> tuple[dict[str, list[Any]], np.ndarray, list[_Problem]]:
    """Columns of a list of parsed lines, plus the rows that are not objects or
    carry unexpected fields."""
    n = len(values)
    problems: list[_Problem] = []
    is_dict = np.fromiter((type(v) is dict for v in values), dtype=bool, count=n)
    recs = values
    if not is_dict.all():
        recs = [v if ok else {} for v, ok in zip(values, is_dict, strict=True)]
        problems.extend(
            (int(i), None, f"expected a JSON object, got {_json_kind(values[i])}", "not_object")
            for i in np.flatnonzero(~is_dict)
        )
    cols = {name: [r.get(name, _MISSING) for r in recs] for name in COMPLETION_FIELDS}
    lens = np.fromiter(map(len, recs), dtype=np.int64, count=n)
    known = np.zeros(n, dtype=np.int64)
    for col in cols.values():
        known += np.fromiter((x is not _MISSING for x in col), dtype=bool, count=n)
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


def _completion_frame(cols: dict[str, list[Any]], rows: np.ndarray | None = None) -> pd.DataFrame:
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
    table = pa.Table.from_arrays(arrays, names=list(COMPLETION_FIELDS))
    return table.to_pandas(types_mapper=_PANDAS_TYPES.get)


def _dedupe(
    df: pd.DataFrame, lines: np.ndarray, key: tuple[str, ...], source: str, where: str = "line"
) -> tuple[pd.DataFrame, list[BadInputError]]:
    """Collapse identical duplicates of ``key``; drop conflicting ones with an error each.

    Exact copies go first (vectorized); what still shares a key then differs in
    some field: every distinct row of such a key is dropped, and each one after
    the first gets an error naming the first one's line.
    """
    if df.empty or len(set(zip(*(df[k].tolist() for k in key), strict=True))) == len(df):
        return df, []
    copies = df.duplicated(keep="first").to_numpy()
    df, lines = df[~copies], lines[~copies]
    dup = df.duplicated(subset=list(key), keep=False).to_numpy()
    if not dup.any():
        return df.reset_index(drop=True), []
    errors: list[BadInputError] = []
    sub = df[dup]
    sub_lines = lines[dup]
    cols = list(df.columns)
    for members in sub.groupby(list(key), dropna=False, sort=False).indices.values():
        first = sub.iloc[members[0]]
        key_desc = ", ".join(f"{k}={_short(first[k], 24)}" for k in key)
        for m in members[1:]:
            row = sub.iloc[m]
            differ = [c for c in cols if not _same(first[c], row[c])]
            errors.append(_err(
                f"conflicts with {where} {sub_lines[members[0]]} (same {key_desc}; "
                f"differs in {', '.join(differ)}); every row with this key is dropped",
                source, int(sub_lines[m]), differ[0], "conflicting_duplicate",
            ))
    return df[~dup].reset_index(drop=True), errors


def _same(a: Any, b: Any) -> bool:
    na, nb = pd.isna(a), pd.isna(b)
    if na or nb:
        return bool(na and nb)
    return bool(a == b)


# ------------------------------------------------------------------ public


def read_completions(path: str | os.PathLike[str]) -> tuple[pd.DataFrame, list[BadInputError]]:
    """Read a §2 completions JSONL file: ``(good rows, errors)``.

    The frame has the columns of :data:`COMPLETION_FIELDS` in that order
    (strings as ``string``, ``latency_ms`` as ``Float64``, token counts as
    ``Int64``; null is ``<NA>``), one row per unique (verdict_hash, extractor).
    Every bad line gives a :class:`BadInputError` naming the file, the line and
    (when known) the field, with a ``reason`` code: malformed JSON (``bad_json``,
    ``not_object``, ``bad_unicode`` — also for a lone-surrogate escape),
    ``duplicate_key``, ``non_finite`` (NaN/Infinity), ``unsafe_integer``
    (beyond 2^53 - 1), ``missing``, ``unexpected_field``, ``bad_value``. Identical
    duplicate lines collapse into one row; conflicting ones are all dropped,
    with an error naming both lines. Blank lines are ignored.
    """
    source = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise BadInputError(f"cannot read completions file: {exc.strerror}", source=source) from exc
    lines, errors = _split_lines(data, source)
    texts = [t for _, t in lines]
    numbers = np.asarray([i for i, _ in lines], dtype=np.int64)
    values, fast = _parse_lines(texts)
    cols, skip, problems = _columns_of(values)
    if fast and _has_nested(cols, values, skip):
        # A nested value could hide an element spanning lines: parse line by line.
        values, _ = _parse_lines(texts, per_line=True)
        cols, skip, problems = _columns_of(values)
    cols, bad, more = _validate_columns(cols, len(values), skip=skip)
    problems = sorted(problems + more, key=lambda p: p[0])
    # Every failing row is parsed again strictly: a JSON-level fault wins.
    json_errors: dict[int, BadInputError] = {}
    for i in np.flatnonzero(bad):
        try:
            loads_strict(texts[i])
        except MalformedJSON as exc:
            field = _locate_field(texts[i], exc.reason, exc.field)
            json_errors[int(i)] = _err(str(exc), source, int(numbers[i]), field, exc.reason)
    for i, field, msg, reason in problems:
        if i not in json_errors:
            errors.append(_err(msg, source, int(numbers[i]), field, reason))
    errors.extend(json_errors.values())
    good = np.flatnonzero(~bad)
    df = _completion_frame(cols, None if len(good) == len(values) else good)
    df, dup_errors = _dedupe(df, numbers[good], COMPLETION_KEY, source)
    errors += dup_errors
    errors.sort(key=lambda e: e.line or 0)
    return df, errors


_DIGITS_RE = re.compile(r"[0-9]{1,16}")
_DIGITS_COL_RE = re.compile(r"(?:[0-9]{1,16}\n)*[0-9]{1,16}")


def _bad_where(col: list[str], col_re: re.Pattern[str], one_re: re.Pattern[str]) -> list[int]:
    """Positions of values not matching ``one_re``; ``col_re`` checks all at once."""
    joined = "\n".join(col)
    # A value holding a newline would split in two and could pass as two.
    if not col or (joined.count("\n") == len(col) - 1 and col_re.fullmatch(joined)):
        return []
    return [i for i, v in enumerate(col) if one_re.fullmatch(v) is None]


def read_labels(path: str | os.PathLike[str]) -> tuple[pd.DataFrame, list[BadInputError]]:
    """Read a §3 gold-labels CSV file: ``(good rows, errors)``.

    The header must be exactly ``verdict_hash,extractor,lesson_index,useful,annotator``
    (``annotator`` may be left out); otherwise the only error names the header
    found and nothing is read. The frame has the columns of :data:`LABEL_FIELDS`
    (``lesson_index`` and ``useful`` as ``int64``, ``annotator`` ``<NA>`` when
    empty). Each bad row gives a :class:`BadInputError` naming its line and
    field; identical duplicates of (verdict_hash, extractor, lesson_index,
    annotator) collapse, conflicting ones are all dropped with an error naming both lines.
    """
    source = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise BadInputError(f"cannot read labels file: {exc.strerror}", source=source) from exc
    empty = pd.DataFrame(
        {
            "verdict_hash": pd.array([], dtype="string"),
            "extractor": pd.array([], dtype="string"),
            "lesson_index": np.array([], dtype=np.int64),
            "useful": np.array([], dtype=np.int64),
            "annotator": pd.array([], dtype="string"),
        }
    )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        return empty, [_err(f"not UTF-8: {exc.reason}", source, line, None, "bad_unicode")]
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    errors: list[BadInputError] = []
    rows: list[list[str]] = []
    row_lines: list[int] = []
    header: list[str] | None = None
    prev = 0
    try:
        for row in reader:
            start, prev = prev + 1, reader.line_num
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            if header is None:
                header = row
                if tuple(header) not in (LABEL_FIELDS, LABEL_FIELDS[:4]):
                    return empty, [_err(
                        f"wrong CSV header {','.join(header)!r}; expected "
                        f"{','.join(LABEL_FIELDS)!r} (annotator may be left out)",
                        source, start, None, "bad_header",
                    )]
                continue
            if len(row) != len(header):
                errors.append(_err(
                    f"expected {len(header)} fields ({','.join(header)}), got {len(row)}",
                    source, start, None, "wrong_field_count",
                ))
                continue
            rows.append(row)
            row_lines.append(start)
    except csv.Error as exc:
        errors.append(_err(f"malformed CSV: {exc}", source, reader.line_num, None, "bad_csv"))
    if header is None:
        return empty, [_err(
            f"empty file; expected the header {','.join(LABEL_FIELDS)!r}",
            source, 1, None, "bad_header",
        )]
    if not rows:
        return empty, errors
    lines = np.asarray(row_lines, dtype=np.int64)
    cols = list(zip(*rows, strict=True))
    vh, ex, li, us = (list(c) for c in cols[:4])
    an = [a or None for a in cols[4]] if len(header) == 5 else [None] * len(rows)
    # Whole-column checks first (one regex over the joined column); only a
    # column that fails is walked value by value.
    bad_vh = _bad_where(vh, _HEX64_COL_RE, _HEX64_RE)
    bad_ex = [] if all(ex) else [i for i, v in enumerate(ex) if not v]
    bad_li = _bad_where(li, _DIGITS_COL_RE, _DIGITS_RE)
    li_num = [int(v) if len(v) <= 16 and v.isascii() and v.isdigit() else -1 for v in li]
    bad_li = sorted(set(bad_li) | {i for i, v in enumerate(li_num) if v > MAX_SAFE_INT})
    bad_us = [] if set(us) <= {"0", "1"} else [i for i, v in enumerate(us) if v not in ("0", "1")]
    bad = np.zeros(len(rows), dtype=bool)
    checks = [
        ("verdict_hash", bad_vh, vh, "expected 64 lowercase hex digits"),
        ("extractor", bad_ex, ex, "expected a non-empty string"),
        ("lesson_index", bad_li, li, "expected an integer from 0 to 2^53 - 1 (digits only)"),
        ("useful", bad_us, us, "expected 0 or 1"),
    ]
    for name, idx, col, expected in checks:
        for i in idx:
            errors.append(
                _err(f"{expected}, got {_short(col[i])}", source, int(lines[i]), name, "bad_value")
            )
        bad[idx] = True
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
    keep_mask = ~bad
    df, dup_errors = _dedupe(df, lines[keep_mask], LABEL_KEY, source)
    errors += dup_errors
    errors.sort(key=lambda e: e.line or 0)
    return df, errors


# Readers that split on str.splitlines() also break at these; json leaves them
# raw under ensure_ascii=False. They can only sit inside strings, so escaping is safe.
_LINE_BREAKS = re.compile("[\x85\u2028\u2029]")
_ESCAPE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def _frame_columns(df: pd.DataFrame) -> dict[str, list[Any]]:
    """Python-valued §2 columns of a frame (absent columns are ``_MISSING``)."""
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
    """Write recorded completions as §2 JSONL (fields in FORMATS order); returns rows written.

    ``data`` is a frame with the §2 columns (other columns are ignored), or
    records (dicts or :class:`CompletionRecordModel`). Every record is checked
    first: a bad one raises :class:`BadInputError` naming the record (0-based)
    and field, and nothing is written. Identical duplicates are written once;
    conflicting ones raise. The file is replaced atomically.
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
        cols, skip, problems = _columns_of(values)
    cols, _, more = _validate_columns(cols, n, skip=skip)
    problems = sorted(problems + more, key=lambda p: p[0])
    if problems:
        i, field, msg, reason = problems[0]
        raise BadInputError(
            f"record {i}: {msg} ({len(problems)} problem(s) in all; nothing written)",
            source=source, field=field, reason=reason,
        )
    df = _completion_frame(cols)
    df, dup_errors = _dedupe(df, np.arange(n, dtype=np.int64), COMPLETION_KEY, source,
                             where="record")
    if dup_errors:
        e = dup_errors[0]
        raise BadInputError(f"record {e.line}: {e.message}; nothing written", source=source,
                            field=e.field, reason=e.reason)
    out = _frame_columns(df)
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=target.name + ".", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            dumps = json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode
            for row in zip(*(out[k] for k in COMPLETION_FIELDS), strict=True):
                line = dumps(dict(zip(COMPLETION_FIELDS, row, strict=True)))
                if _LINE_BREAKS.search(line):
                    line = line.translate(_ESCAPE_BREAKS)
                fh.write(line)
                fh.write("\n")
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return len(df)
