"""Strict reading of the unchained formats (Formats §2, §3, §4, §5): what their readers
and writers share.

The records: the pydantic field types of the record models and their strict base
(:class:`StrictRecord`), the :class:`BadInputError` builder every reader uses
(:func:`input_error`), the handling of duplicate keys (:func:`dedupe`: identical
copies collapse, conflicting ones are dropped with an error naming both lines). Their
writers write through :func:`truss_lab.core._files.output_text`, as every output.

The JSON lines: a file is split into numbered lines (undecodable ones become
errors), parsed leniently in one C-speed pass where that is safe, and its columns
are checked value by value only where a whole-column check fails; a line that
fails is parsed again by :func:`~truss_lab.core._canonical.loads_strict`, whose
verdict (duplicate key, NaN, unsafe integer...) wins, and :func:`locate_field`
names the culprit's path.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
from collections.abc import Iterator, Mapping
from json.decoder import scanstring
from typing import IO, Annotated, Any

import numpy as np
import pandas as pd
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictInt, StrictStr

from ..core._canonical import MAX_SAFE_INT
from ..core._confusables import id_refusal, lookalike_problem
from ..core._errors import BadInputError, TrussLabWarning
from ..core._files import FORMULA_START, open_input
from ..core._secrets import holds_secret, redact, redact_many

__all__ = [
    "DIGITS_COL_RE",
    "DIGITS_RE",
    "ESCAPE_BREAKS",
    "FORMULA_START",
    "HEX64",
    "HEX64_COL_RE",
    "HEX64_RE",
    "LINE_BREAKS",
    "MISSING",
    "SECRET_HELD",
    "SURROGATE",
    "Count",
    "Hex64",
    "IdSafe",
    "NonEmpty",
    "Problem",
    "SecretFree",
    "StrictRecord",
    "bad_where",
    "bounded_lines",
    "check_count",
    "check_latency",
    "check_str",
    "csv_records",
    "dedupe",
    "has_nested",
    "id_rows",
    "input_error",
    "json_kind",
    "locate_field",
    "parse_lines",
    "read_bounded_lines",
    "secret_rows",
    "short",
    "split_lines",
    "spreadsheet_cell",
    "warn_lookalikes",
]

HEX64 = r"^[0-9a-f]{64}$"
HEX64_RE = re.compile(r"[0-9a-f]{64}")
# A whole column of hashes joined by newlines, checked with one match.
HEX64_COL_RE = re.compile(r"(?:[0-9a-f]{64}\n)*[0-9a-f]{64}")

Hex64 = Annotated[StrictStr, Field(pattern=HEX64)]
NonEmpty = Annotated[StrictStr, Field(min_length=1)]
Count = Annotated[StrictInt, Field(ge=0, le=MAX_SAFE_INT)]


SECRET_HELD = ("holds a secret (a known API key in any encoding, an Authorization value or "
               "URL credentials); a secret is never stored: remove it")
"""Why a value of a user's file is refused: masking it would change the user's data (an
annotator's name, a reference's text, a prompt), so the line is refused instead,
naming the field, and the file's other lines land."""


def _secret_free(value: str) -> str:
    if holds_secret(value):
        raise ValueError(SECRET_HELD)
    return value


SecretFree = AfterValidator(_secret_free)
"""The pydantic check of :data:`SECRET_HELD` on a string field of a record model."""


def secret_rows(col: list[Any]) -> list[int]:
    """Positions of the values of a column of strings (None skipped) that hold a secret
    (:data:`SECRET_HELD`); one redaction pass over the column."""
    texts = [v if isinstance(v, str) else None for v in col]
    # An id column repeats a few values: each distinct one is redacted once.
    distinct = list(dict.fromkeys(t for t in texts if t))
    held = {a for a, b in zip(distinct, redact_many(distinct), strict=True) if a != b}
    return [i for i, t in enumerate(texts) if t in held] if held else []


def _id_safe(value: str) -> str:
    why = id_refusal(value)
    if why is not None:
        raise ValueError(why)
    return value


IdSafe = AfterValidator(_id_safe)
"""The pydantic check of an id field (:func:`~truss_lab.core._confusables.id_refusal`):
no control character."""


# Printable ASCII only: the whole column passes with one match (almost every file).
_PLAIN_ID_COL = re.compile(r"[\x20-\x7e\n]*")


def id_rows(col: list[Any]) -> tuple[dict[int, str], dict[int, str]]:
    """For a column of ids (None skipped): ``(refused, look-alike)``, position -> why. A
    control character (NUL, a line break) is refused
    (:func:`~truss_lab.core._confusables.id_refusal`); a value that may be mistaken for
    another id (mixed scripts, a hyphen that is not ``-``, an invisible character) is
    kept and named, for :func:`warn_lookalikes`."""
    texts = [v for v in col if isinstance(v, str)]
    if _PLAIN_ID_COL.fullmatch("\n".join(texts)) and not any("\n" in v for v in texts):
        return {}, {}
    refused: dict[int, str] = {}
    lookalike: dict[int, str] = {}
    for i, v in enumerate(col):
        if not isinstance(v, str):
            continue
        why = id_refusal(v)
        if why is not None:
            refused[i] = why
        elif (problem := lookalike_problem(v)) is not None:
            lookalike[i] = problem
    return refused, lookalike


def warn_lookalikes(source: str, field: str, col: list[Any], where: dict[int, str],
                    lines: Any, *, rows: bool, seen: set[str] | None = None) -> None:
    """One :class:`TrussLabWarning` line per distinct look-alike value of ``field``
    (:func:`id_rows`), naming the file, the first line (``rows``: CSV row) holding it and
    the field: ``labels.csv, row 3, field 'annotator': annotator 'gооd' mixes scripts
    (Latin, Cyrillic)``. The value is stored as given. ``seen``: the values warned of
    already (a file read in batches warns once a value), updated."""
    import warnings

    seen = set() if seen is None else seen
    for i, problem in sorted(where.items()):
        value = col[i]
        if value in seen:
            continue
        seen.add(value)
        at = int(lines[i])
        warnings.warn(str(BadInputError(
            f"{field.replace('_', ' ')} {value!r} {problem}; it is stored as given",
            source=source, field=field, line=None if rows else at, row=at if rows else None)),
            TrussLabWarning, stacklevel=2)


class StrictRecord(BaseModel):
    model_config = ConfigDict(
        frozen=True, extra="forbid", strict=True, use_attribute_docstrings=True
    )


def input_error(
    message: str, source: str, line: int | None, field: str | None, reason: str, *,
    row: int | None = None,
) -> BadInputError:
    """A bad input at ``line`` (of a JSONL file) or ``row`` (of a CSV file, as a
    spreadsheet numbers it)."""
    return BadInputError(message, source=source, line=line, field=field, reason=reason,
                         row=row)


def short(value: Any, limit: int = 40) -> str:
    # Redacted before it is cut: a key cut in half would no longer be recognised.
    text = repr(redact(value) if isinstance(value, str) else value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def dedupe(
    df: pd.DataFrame, lines: np.ndarray, key: tuple[str, ...], source: str, where: str = "line"
) -> tuple[pd.DataFrame, list[BadInputError]]:
    """Collapse identical duplicates of ``key``; drop conflicting ones with an error each.

    Exact copies go first (vectorized); what still shares a key then differs in
    some field: every distinct row of such a key is dropped, and each one after
    the first gets an error naming the first one's line (``where="row"``: ``lines``
    are a CSV file's rows, and the errors name rows).
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
        key_desc = ", ".join(f"{k}={short(first[k], 24)}" for k in key)
        for m in members[1:]:
            row = sub.iloc[m]
            differ = [c for c in cols if not _same(first[c], row[c])]
            at = int(sub_lines[m])
            errors.append(input_error(
                f"conflicts with {where} {sub_lines[members[0]]} (same {key_desc}; "
                f"differs in {', '.join(differ)}); every row with this key is dropped",
                source, None if where == "row" else at, differ[0], "conflicting_duplicate",
                row=at if where == "row" else None,
            ))
    return df[~dup].reset_index(drop=True), errors


def _same(a: Any, b: Any) -> bool:
    na, nb = pd.isna(a), pd.isna(b)
    if na or nb:
        return bool(na and nb)
    return bool(a == b)


# --- JSON lines ---------------------------------------------------------------------


def json_kind(value: Any) -> str:
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


def locate_field(text: str, reason: str, key: str | None) -> str | None:
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


def split_lines(data: bytes, source: str,
                first: int = 1) -> tuple[list[tuple[int, str]], list[BadInputError]]:
    """Non-blank lines with their 1-based numbers; undecodable lines become errors.
    ``first``: the number of ``data``'s first line (a file's BOM is stripped on line 1)."""
    if first == 1 and data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    errors: list[BadInputError] = []
    try:
        raw = data.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        raw = []
        for i, chunk in enumerate(data.split(b"\n"), start=first):
            try:
                raw.append(chunk.decode("utf-8"))
            except UnicodeDecodeError as exc:
                errors.append(
                    input_error(f"not UTF-8: {exc.reason}", source, i, None, "bad_unicode")
                )
                raw.append("")
    lines = [(i, s) for i, s in enumerate(raw, start=first) if s and not s.isspace()]
    return lines, errors


#: Bytes of an over-long line kept to name the field that makes it long: the fields before
#: it, each within its bound, fit in far less (see the readers' line bounds).
_LONG_LINE_HEAD = 1 << 20
_WS = re.compile(r"[ \t\n\r]*")


def read_bounded_lines(
    path: str | os.PathLike[str], max_line: int, what: str, limit: int,
) -> tuple[bytes, list[tuple[int, str | None]]]:
    """A JSONL file's bytes with every line longer than ``max_line`` bytes (its newline
    not counted) left blank, and ``(line, field)`` of each such line: ``field`` is the
    top-level key whose value runs past the line's first megabyte, when one does.

    A long line is never held whole: lines are read in pieces of a megabyte, and a long
    one's pieces are dropped once it is past the bound, so memory is bounded by the good
    lines, not by what the file holds. A regular file is first scanned a megabyte at a
    time (numpy finds the newlines) and, without a long line, read whole as before; a
    pipe is read once, keeping the good lines. ``what`` names the file in a read error;
    the file (:func:`~truss_lab.core._files.open_input`) holds at most ``limit`` bytes.
    """
    source = str(path)
    try:
        with open_input(path, what=f"a {what} file", limit=limit) as fh:
            if fh.seekable():
                if not _has_long_line(fh, max_line):
                    fh.seek(0)
                    return fh.read(), []
                fh.seek(0)
            parts: list[bytes] = []
            long: list[tuple[int, str | None]] = []
            for number, pieces in enumerate(_line_pieces(fh), start=1):
                kept, head = _bounded(pieces, max_line, keep=True)
                if kept is None:
                    parts.append(b"\n")  # a blank line keeps the numbers after it
                    long.append((number, _open_field(head)))
                else:
                    parts.extend(kept)
    except OSError as exc:
        raise BadInputError(f"cannot read {what} file: {exc.strerror or exc}",
                            source=source) from exc
    return b"".join(parts), long


def bounded_lines(
    path: str | os.PathLike[str], max_line: int, what: str, bounds: Mapping[str, str],
    limit: int,
) -> tuple[list[tuple[int, str]], list[BadInputError]]:
    """The numbered non-blank lines of a JSONL file (:func:`split_lines`), every line over
    ``max_line`` bytes refused unread (:func:`read_bounded_lines`): a ``line_too_long``
    error naming the field that makes it long and, from ``bounds`` (field -> what it may
    hold), its bound. ``what`` names the file in a read error; ``limit`` bounds its size."""
    source = str(path)
    data, long = read_bounded_lines(path, max_line, what, limit)
    lines, errors = split_lines(data, source)
    return lines, errors + _long_line_errors(long, max_line, bounds, source)


def _long_line_errors(long: list[tuple[int, str | None]], max_line: int,
                      bounds: Mapping[str, str], source: str) -> list[BadInputError]:
    """A ``line_too_long`` error per line of ``long`` (its number, the field that makes
    it long), with that field's bound from ``bounds``."""
    return [input_error(
        f"line over {max_line} bytes, not read whole"
        + (f"; expected at most {bounds[field]}" if field in bounds else ""),
        source, number, field, "line_too_long") for number, field in long]


def bounded_line_batches(
    path: str | os.PathLike[str], max_line: int, what: str, bounds: Mapping[str, str],
    limit: int, batch_lines: int,
) -> Iterator[tuple[list[tuple[int, str]], list[BadInputError]]]:
    """:func:`bounded_lines` a batch at a time: the numbered non-blank lines and the errors
    of each ``batch_lines`` lines of the file, read as they are given (a batch is held,
    never the file; a long line not even whole, as :func:`read_bounded_lines` does)."""
    source = str(path)

    def batch(raw: list[bytes], first: int,
              long: list[tuple[int, str | None]]) -> tuple[list[tuple[int, str]],
                                                         list[BadInputError]]:
        lines, errors = split_lines(b"".join(raw), source, first)
        return lines, errors + _long_line_errors(long, max_line, bounds, source)

    try:
        with open_input(path, what=f"a {what} file", limit=limit) as fh:
            raw: list[bytes] = []
            long: list[tuple[int, str | None]] = []
            first = 1
            for number, pieces in enumerate(_line_pieces(fh), start=1):
                kept, head = _bounded(pieces, max_line, keep=True)
                if kept is None:
                    raw.append(b"\n")  # a blank line keeps the numbers after it
                    long.append((number, _open_field(head)))
                else:
                    raw.extend(kept)
                if number - first + 1 == batch_lines:
                    yield batch(raw, first, long)
                    raw, long, first = [], [], number + 1
            if raw or long or first == 1:
                yield batch(raw, first, long)
    except OSError as exc:
        raise BadInputError(f"cannot read {what} file: {exc.strerror or exc}",
                            source=source) from exc


def _has_long_line(fh: IO[bytes], max_line: int) -> bool:
    """Whether a line of ``fh`` (from where it is) is longer than ``max_line`` bytes, its
    newline not counted; reads a megabyte at a time."""
    if os.fstat(fh.fileno()).st_size - fh.tell() <= max_line:
        return False
    run = 0  # bytes of the current line before this block
    while block := fh.read(_LONG_LINE_HEAD):
        nl = np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == 10)
        if not len(nl):
            run += len(block)
        elif run + int(nl[0]) > max_line or (len(nl) > 1 and int(np.diff(nl).max()) - 1
                                              > max_line):
            return True
        else:
            run = len(block) - int(nl[-1]) - 1
        if run > max_line:
            return True
    return False


def _bounded(pieces: Iterator[bytes], max_line: int,
             keep: bool = False) -> tuple[list[bytes] | None, bytes]:
    """Consume one line's pieces: (its pieces, or [] when not ``keep``; None when it is
    longer than ``max_line`` bytes, its newline not counted) and its first piece."""
    head = last = next(pieces)
    size = len(head)
    kept: list[bytes] | None = [head] if keep else []
    for last in pieces:
        size += len(last)
        if kept is not None and keep:
            kept.append(last)
            if size > max_line + 1:  # past the bound, newline or not: drop as read
                kept = None
    if size - last.endswith(b"\n") > max_line:
        return None, head
    return kept, head


def _line_pieces(fh: IO[bytes]) -> Iterator[Iterator[bytes]]:
    """Each line of ``fh`` as an iterator of its pieces (a megabyte at most each, the
    newline in the last); a line's pieces must be consumed before the next line."""
    while first := fh.readline(_LONG_LINE_HEAD):
        yield _rest_of_line(fh, first)


def _rest_of_line(fh: IO[bytes], piece: bytes) -> Iterator[bytes]:
    yield piece
    while not piece.endswith(b"\n") and (piece := fh.readline(_LONG_LINE_HEAD)):
        yield piece


def _open_field(head: bytes) -> str | None:
    """The top-level key of a JSON object's text ``head`` (the start of a line) whose value
    does not end within it; None when the head is not an object's start or every value in
    it ends. Scans with the json module's C string scanner and decoder, not char by char."""
    text = head.decode("utf-8", "replace")  # the cut may split a character
    decode = json.JSONDecoder().raw_decode
    i = _WS.match(text).end()
    if text[i:i + 1] != "{":
        return None
    i += 1
    while True:
        i = _WS.match(text, i).end()
        if text[i:i + 1] != '"':
            return None
        try:
            key, i = scanstring(text, i + 1)
        except ValueError:  # the key itself runs past the head
            return None
        i = _WS.match(text, i).end()
        if text[i:i + 1] != ":":
            return None
        i = _WS.match(text, i + 1).end()
        try:
            _, i = decode(text, i)
        except (ValueError, RecursionError):
            return key
        i = _WS.match(text, i).end()
        if text[i:i + 1] != ",":
            return None
        i += 1


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
    by :func:`has_nested` afterwards) element ``i`` is exactly line ``i``.
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


def parse_lines(texts: list[str], *, per_line: bool = False) -> tuple[list[Any], bool]:
    """Lenient parse: a dict per line, the value itself when a line is valid JSON but
    not an object, or None where loads_strict must decide.

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
            values.append(None)  # duplicate keys: loads_strict names them
        else:
            # Not an object: keep the value, so the error says what it is (an
            # array, a number, a string) instead of "got null".
            values.append(pairs)
    return values, fast


def _holds_array(value: Any) -> bool:
    """Whether a parsed value (objects as pair tuples) holds an array at any depth."""
    if type(value) is list:
        return True
    return type(value) is tuple and any(_holds_array(x) for x in value)


def has_nested(cols: dict[str, list[Any]], values: list[Any], rows: np.ndarray) -> bool:
    """Whether any record may hide an element spanning lines: an array anywhere, or
    any nested value in ``rows`` (those with unexpected fields). A nested object
    without an array cannot (after its ``,`` a key must follow, never a line's ``{``),
    so a file repeating one object per line (§2 ``config``) keeps the one-shot parse."""
    for col in cols.values():
        types = set(map(type, col))
        if list in types:
            return True
        if tuple in types:
            try:
                distinct = {x for x in col if type(x) is tuple}
            except TypeError:  # a list inside makes a tuple unhashable
                return True
            if any(_holds_array(x) for x in distinct):
                return True
    for i in np.flatnonzero(rows):
        v = values[i]
        if type(v) is dict and any(type(x) in (tuple, list) for x in v.values()):
            return True
    return False


# ------------------------------------------------------- column validation


def check_str(
    col: list[Any], *, nullable: bool, non_empty: bool, hex64: bool,
    max_len: int | None = None,
) -> dict[int, str]:
    """Row -> what was expected, for the invalid values of a string column (``max_len``:
    the most characters a value may hold)."""
    types = set(map(type, col))
    allowed = {str, type(None)} if nullable else {str}
    if types <= allowed:
        strs = col if type(None) not in types else [x for x in col if x is not None]
        long = max_len is not None and max(map(len, strs), default=0) > max_len
        joined = "" if long else "\n".join(strs)
        # A lone surrogate anywhere sends the column to the per-value walk.
        if not long and _utf8_ok(joined):
            if hex64:
                # A value holding a newline could pass as two hashes: count them.
                if not strs or (
                    joined.count("\n") == len(strs) - 1 and HEX64_COL_RE.fullmatch(joined)
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
                out[i] = f"{SURROGATE}; expected {what}"
            elif hex64:
                if len(v) != 64 or HEX64_RE.fullmatch(v) is None:
                    out[i] = f"expected {what}, got {short(v)}"
            elif non_empty and not v:
                out[i] = f"expected {what}, got an empty string"
            elif max_len is not None and len(v) > max_len:
                out[i] = f"expected at most {max_len} characters, got {len(v)}"
        elif v is None and nullable:
            continue
        else:
            out[i] = f"expected {what}, got {json_kind(v)}"
    return out


SURROGATE = "string holds a lone surrogate (not valid Unicode)"


def _utf8_ok(text: str) -> bool:
    # A JSON \\ud800 escape decodes to a lone surrogate: no UTF-8 form, so
    # neither Arrow nor DuckDB can store it.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_count(col: list[Any]) -> dict[int, str]:
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
            out[i] = f"expected an integer >= 0 or null, got {json_kind(v)}"
        elif not 0 <= v <= MAX_SAFE_INT:
            out[i] = f"expected an integer from 0 to 2^53 - 1, got {v}"
    return out


def check_latency(col: list[Any]) -> dict[int, str]:
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
            out[i] = f"expected a number >= 0 or null, got {json_kind(v)}"
        elif _is_bad_number(v) or not v >= 0:
            out[i] = f"expected a finite number >= 0, got {v}"
    return out


# Marks a field absent from a record (None is a present null).
MISSING = object()

# A problem: (row, field or None, message, reason).
Problem = tuple[int, str | None, str, str]

# Readers that split on str.splitlines() also break at these; json leaves them
# raw under ensure_ascii=False. They can only sit inside strings, so escaping is safe.
LINE_BREAKS = re.compile("[\x85\u2028\u2029]")
ESCAPE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


# ------------------------------------------------------------------ CSV (§3, §5)

#: A lesson_index cell: digits only (16 at most, checked against 2^53 - 1 after).
DIGITS_RE = re.compile(r"[0-9]{1,16}")
DIGITS_COL_RE = re.compile(r"(?:[0-9]{1,16}\n)*[0-9]{1,16}")


def bad_where(col: list[str], col_re: re.Pattern[str], one_re: re.Pattern[str]) -> list[int]:
    """Positions of values not matching ``one_re``; ``col_re`` checks all at once."""
    joined = "\n".join(col)
    # A value holding a newline would split in two and could pass as two.
    if not col or (joined.count("\n") == len(col) - 1 and col_re.fullmatch(joined)):
        return []
    return [i for i, v in enumerate(col) if one_re.fullmatch(v) is None]


def csv_records(data: bytes, source: str,
                errors: list[BadInputError]) -> Iterator[tuple[int, list[str]]]:
    """``(row, fields)`` of every CSV record of ``data``, recovering per line; ``row`` is
    the row a spreadsheet shows (the header is row 1, a blank line is a row, a record
    whose quoted field holds newlines is one row), which errors name.

    A line that is not UTF-8 is reported and skipped; a record the CSV reader
    refuses (a stray quote, a field over the csv module's limit, a quote never
    closed) is reported at its row, and reading starts again on the next line: one
    bad row never hides the good rows after it.
    """
    return csv_line_records(_decoded_lines(iter([data])), source, errors)


def csv_file_records(fh: IO[bytes], source: str,
                     errors: list[BadInputError]) -> Iterator[tuple[int, list[str]]]:
    """:func:`csv_records` of a file read as it goes, a megabyte at a time: what is held
    is the record being read (and, after a refused one, the lines its retry reads)."""
    return csv_line_records(_decoded_lines(iter(lambda: fh.read(1 << 20), b"")), source,
                            errors)


def _decoded_lines(blocks: Iterator[bytes]) -> Iterator[str | UnicodeDecodeError]:
    """The lines of a byte stream (ends kept), split as ``io.StringIO(newline="")``
    splits text (``\\n``, ``\\r``, ``\\r\\n``), each decoded from UTF-8, or the
    error of a line that is not; a BOM at the start is dropped."""
    carry = b""
    start = True
    for block in blocks:
        data = carry + block
        if start:
            if len(data) < 3 and b"\xef\xbb\xbf".startswith(data):
                carry = data  # the BOM may continue in the next block
                continue
            data, start = data.removeprefix(b"\xef\xbb\xbf"), False
        parts = data.splitlines(keepends=True)
        # The last part may go on in the next block: it has no line end yet, or ends
        # in a \r that a \n may follow.
        carry = parts.pop() if parts and not parts[-1].endswith(b"\n") else b""
        yield from map(_decoded, parts)
    if carry:
        yield _decoded(carry if not start else carry.removeprefix(b"\xef\xbb\xbf"))


def _decoded(line: bytes) -> str | UnicodeDecodeError:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc


def csv_line_records(lines: Iterator[str | UnicodeDecodeError], source: str,
                     errors: list[BadInputError]) -> Iterator[tuple[int, list[str]]]:
    """:func:`csv_records` of decoded lines (a line that is not UTF-8 as its error),
    holding only the lines of the record being read."""
    buf: list[str | UnicodeDecodeError] = []  # lines from index `base` on
    base = 0
    end = object()

    def feed(start: int) -> Iterator[str]:
        i = start
        while True:
            j = i - base
            if j >= len(buf):
                t = next(lines, end)
                if t is end:
                    return
                buf.append(t)  # type: ignore[arg-type]
            t = buf[i - base]
            i += 1
            yield t if isinstance(t, str) else "\n"

    pos = 0
    row = 0  # rows read so far
    while True:
        del buf[:pos - base]
        base = pos
        reader = csv.reader(feed(pos), strict=True)
        done = 0  # physical lines of this pass consumed by complete records
        try:
            for fields in reader:
                row += 1
                first = buf[pos + done - base]
                done = reader.line_num
                del buf[:pos + done - base]  # read: the next record starts after them
                base = pos + done
                if isinstance(first, UnicodeDecodeError):
                    errors.append(input_error(
                        f"not UTF-8: {first.reason} at byte {first.start}", source, None,
                        None, "bad_unicode", row=row))
                    continue
                yield row, fields
            return
        except csv.Error as exc:
            row += 1
            errors.append(input_error(f"malformed CSV: {exc}", source, None, None, "bad_csv",
                                      row=row))
            pos += done + 1


def spreadsheet_cell(value: object) -> str:
    """A context cell as text, never a spreadsheet formula."""
    text = "" if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)
    return "'" + text if text.startswith(FORMULA_START) else text
