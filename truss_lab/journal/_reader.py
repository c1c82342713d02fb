"""Strict reading of a FORMATS.md §1 JSONL journal into :class:`JournalColumns`.

The per-line check is hand-written for speed; its field list and value rules
come from :mod:`truss_lab.journal._spec` (the one definition of an entry), and
tests/test_journal.py checks that it accepts and rejects what
:class:`~truss_lab.journal._spec.JournalEntryModel` does. Chain checks are
:func:`truss_lab.journal._verify.verify_columns`'.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..core._canonical import MalformedJSON, canonical, loads_strict
from ..core._errors import BadInputError
from ._columns import JournalColumns
from ._spec import (
    ENTRY_FIELDS,
    HEX64_PATTERN,
    _clip,
    _json_type,
    signature_problem,
    ts_problem,
)

__all__ = ["MalformedLine", "ParsedJournal", "read_journal", "read_journal_lines"]

_HEX64 = re.compile(HEX64_PATTERN)
_N_FIELDS = len(ENTRY_FIELDS)
_STRINGS = ("kind", "ts", "key_id", "prev_hash", "hash", "signature")



@dataclass(frozen=True)
class MalformedLine:
    """Where and why a journal line could not be read.

    ``reason`` is always ``"malformed"``; ``detail`` is a sub-reason:
    ``bad_json``, ``duplicate_key``, ``non_finite``, ``unsafe_integer``,
    ``bad_unicode``, ``not_an_object``, ``missing_field``, ``unknown_field``,
    ``wrong_type`` or ``bad_value``.
    """

    source: str
    line: int
    field: str | None
    detail: str
    message: str
    reason: str = "malformed"

    def to_error(self) -> BadInputError:
        """The same diagnosis as a :class:`BadInputError`."""
        return BadInputError(
            self.message, source=self.source, line=self.line, field=self.field, reason=self.detail
        )


@dataclass
class ParsedJournal:
    """What :func:`read_journal_lines` read: the good prefix and the first bad line."""

    source: str
    columns: JournalColumns
    error: MalformedLine | None = None

    @property
    def ok(self) -> bool:
        """True when every line parsed."""
        return self.error is None


class _Bad(Exception):
    def __init__(self, field: str | None, detail: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.detail = detail
        self.message = message


def _parse_line(text: str | bytes) -> tuple[int, str, str, str, str, str, str, str]:
    try:
        obj = loads_strict(text)
    except MalformedJSON as exc:
        raise _Bad(exc.field, exc.reason, str(exc)) from None
    if type(obj) is not dict:
        raise _Bad(None, "not_an_object", f"expected a JSON object, got {type(obj).__name__}")
    for name in ENTRY_FIELDS:
        if name not in obj:
            raise _Bad(name, "missing_field", f"required field {name!r} is missing")
    if len(obj) != _N_FIELDS:
        extra = sorted(set(obj) - set(ENTRY_FIELDS))
        raise _Bad(extra[0], "unknown_field", f"unknown field(s) {extra}; FORMATS.md §1 has none")
    seq = obj["seq"]
    if type(seq) is not int:  # bool is an int subclass: excluded on purpose
        raise _Bad("seq", "wrong_type", f"expected an integer, got {_json_type(seq)}")
    if seq < 1:
        raise _Bad("seq", "bad_value", f"expected seq >= 1, got {seq}")
    for name in _STRINGS:
        if type(obj[name]) is not str:
            raise _Bad(name, "wrong_type", f"expected a string, got {_json_type(obj[name])}")
    for name in ("kind", "key_id"):
        if not obj[name]:
            raise _Bad(name, "bad_value", "expected a non-empty string")
    problem = ts_problem(obj["ts"])
    if problem is not None:
        raise _Bad("ts", "bad_value", problem)
    payload = obj["payload"]
    if type(payload) is not dict:
        raise _Bad("payload", "wrong_type", f"expected a JSON object, got {_json_type(payload)}")
    for name in ("prev_hash", "hash"):
        if not _HEX64.fullmatch(obj[name]):
            raise _Bad(
                name, "bad_value", f"expected 64 lowercase hex digits, got {_clip(obj[name])!r}"
            )
    problem = signature_problem(obj["signature"])
    if problem is not None:
        raise _Bad("signature", "bad_value", problem)
    try:
        payload_c = canonical(payload)
    except MalformedJSON as exc:  # unreachable after loads_strict, kept as a guard
        raise _Bad("payload", exc.reason, str(exc)) from None
    return (
        seq, obj["kind"], obj["ts"], obj["key_id"], payload_c,
        obj["prev_hash"], obj["hash"], obj["signature"],
    )  # fmt: skip


def read_journal_lines(lines: Iterable[str | bytes], *, source: str = "<memory>") -> ParsedJournal:
    """Parse FORMATS.md §1 JSONL strictly, stopping at the first malformed line.

    Each line must be a JSON object with exactly the eight fields, each of the
    documented type and shape; JSON that RFC 8785 cannot represent (duplicate
    keys, NaN/Infinity, integers beyond 2^53, lone surrogates) is malformed.
    Blank lines are allowed only at the end. Returns the entries before the
    first bad line as :class:`JournalColumns` (with 1-based line numbers) and
    that line's diagnosis, if any. Chain checks are :func:`verify_columns`'.
    """
    cols = JournalColumns(line=[])
    assert cols.line is not None
    blank_at: int | None = None
    appends = (
        cols.seq.append, cols.kind.append, cols.ts.append, cols.key_id.append,
        cols.payload.append, cols.prev_hash.append, cols.hash.append, cols.signature.append,
    )  # fmt: skip
    lineno = 0
    for lineno, raw in enumerate(lines, start=1):
        text = raw.rstrip(b"\r\n") if isinstance(raw, bytes) else raw.rstrip("\r\n")
        if not text.strip():
            if blank_at is None:
                blank_at = lineno
            continue
        if blank_at is not None:
            bad = MalformedLine(
                source, blank_at, None, "bad_json", "blank line inside the journal"
            )
            return ParsedJournal(source, cols, bad)
        try:
            values = _parse_line(text)
        except _Bad as exc:
            bad = MalformedLine(source, lineno, exc.field, exc.detail, exc.message)
            return ParsedJournal(source, cols, bad)
        for append, v in zip(appends, values, strict=True):
            append(v)
        cols.line.append(lineno)
    return ParsedJournal(source, cols)


def read_journal(path: str | os.PathLike[str]) -> ParsedJournal:
    """:func:`read_journal_lines` over a file (read as UTF-8, line by line)."""
    p = Path(path)
    try:
        with p.open("rb") as fh:
            return read_journal_lines(fh, source=str(p))
    except FileNotFoundError:
        raise BadInputError("no such journal file", source=str(p)) from None
    except IsADirectoryError:
        raise BadInputError("expected a journal file, got a directory", source=str(p)) from None


