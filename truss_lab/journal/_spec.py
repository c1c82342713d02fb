"""The journal format (Formats §1): the one definition of an entry and of a verdict
payload, the journal as columns, and the strict reader of a JSONL export.

:class:`JournalEntryModel` is the entry; the strict reader
(:func:`read_journal_lines`) keeps a hand-written fast check for speed, but takes
its field list and its value rules (:func:`ts_problem`, :func:`signature_problem`,
the patterns) from the model's definitions here, and tests/test_journal.py checks
that the reader and the model accept and reject the same lines. What it reads is
a :class:`JournalColumns` (the journal as equal-length columns, as the store keeps
it and :mod:`truss_lab.journal._verify` checks it); chain checks are
:func:`truss_lab.journal._verify.verify_columns`'.

:class:`VerdictPayloadModel` is the payload of a ``contract_verdict``;
:func:`validate_verdict_payload` (what the prompts and the heuristic call)
validates with it. ``truss-lab schema journal`` and ``truss-lab schema verdict``
print the JSON Schemas of the same two models.

What a verdict payload requires follows what the extraction path has always
accepted, which Formats §1 and the bundled sample satisfy: ``goal``,
``verdict``, ``summary`` and ``checks`` are required (a lesson is grounded in
the checks; an empty list says "no checks"); ``contract_id``, ``run_id`` and
``tags`` are optional (the prompt renders ``(unknown)`` / ``(none)``); fields
beyond these are allowed and kept, so a newer Truss that adds one does not
stop extraction.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import IO, Annotated, Any, Literal, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from ..core._canonical import MalformedJSON, canonical, jcs_string, loads_strict
from ..core._errors import BadInputError
from ..core._files import open_input

__all__ = [
    "ENTRY_FIELDS",
    "MAX_JOURNAL_FILE",
    "MAX_JOURNAL_LINE",
    "POLICY_ENTRY_KIND",
    "VERDICT_KIND",
    "VERDICT_OUTCOMES",
    "CheckModel",
    "JournalColumns",
    "JournalEntryModel",
    "MalformedLine",
    "ParsedJournal",
    "VerdictPayloadModel",
    "clip",
    "journal_line_batches",
    "plainly_valid_payload",
    "read_journal",
    "read_journal_batches",
    "read_journal_lines",
    "signature_problem",
    "ts_problem",
    "validate_verdict_payload",
]

VERDICT_KIND = "contract_verdict"
"""The ``kind`` of a recorded contract verdict."""
POLICY_ENTRY_KIND = "policy_record"
"""The ``kind`` of the lab's entry a policy record's provenance points at
(:func:`truss_lab.govern.write_policy` signs one per record; ``verify_chain`` checks
that each record's entry is stored)."""

VerdictOutcome = Literal["pass", "fail", "partial"]
VERDICT_OUTCOMES: tuple[str, ...] = get_args(VerdictOutcome)

# The value rules, shared by the model (JSON Schema patterns) and the fast reader.
HEX64_PATTERN = r"[0-9a-f]{64}"
SIGNATURE_PATTERN = r"[A-Za-z0-9+/]{86}=="
TS_PATTERN = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|\+00:00)"
_TS = re.compile(TS_PATTERN)
_SIG = re.compile(SIGNATURE_PATTERN)


def clip(v: str, n: int = 40) -> str:
    """``v`` for a message: its first ``n`` characters and an ellipsis when longer."""
    return v if len(v) <= n else v[:n] + "…"


def _json_type(v: Any) -> str:
    if v is None:
        return "null"
    return {bool: "boolean", int: "integer", float: "number", str: "string",
            list: "array", dict: "object"}.get(type(v), type(v).__name__)  # fmt: skip


def ts_problem(v: str) -> str | None:
    """Why ``v`` is not an RFC 3339 UTC timestamp, or None when it is one."""
    if not _TS.fullmatch(v):
        return f"expected RFC 3339 UTC like 2026-11-30T10:00:00Z, got {v!r}"
    try:  # the pattern accepts 2026-02-31; the calendar does not
        datetime.fromisoformat(v[:19])
    except ValueError:
        return f"not a calendar date and time: {v!r}"
    return None


def signature_problem(v: str) -> str | None:
    """Why ``v`` is not the canonical standard base64 of 64 bytes, or None."""
    if not _SIG.fullmatch(v):
        return f"expected standard base64 of 64 bytes (88 characters), got {clip(v)!r}"
    raw = binascii.a2b_base64(v)
    if base64.b64encode(raw).decode("ascii") != v:  # non-zero padding bits
        return "base64 is not in canonical form (padding bits set)"
    return None


def _rule(problem: Any) -> AfterValidator:
    def check(v: str) -> str:
        msg = problem(v)
        if msg is not None:
            raise ValueError(msg)
        return v

    return AfterValidator(check)


class _Frozen(BaseModel):
    model_config = ConfigDict(
        frozen=True, extra="forbid", strict=True, use_attribute_docstrings=True
    )


class JournalEntryModel(_Frozen):
    """One line of a journal export (Formats §1)."""

    seq: int = Field(ge=1, le=2**53 - 1)
    """Position in the chain: 1 for the first entry, then +1 per entry."""
    kind: str = Field(min_length=1)
    """What the entry records: ``contract_verdict`` for verdicts; the library adds its own."""
    ts: Annotated[str, _rule(ts_problem)] = Field(pattern=f"^{TS_PATTERN}$")
    """When it was written: RFC 3339 in UTC, e.g. ``2026-11-30T10:00:00Z``."""
    key_id: str = Field(min_length=1)
    """The signing key's id; the keyring maps it to the Ed25519 public key."""
    payload: dict[str, Any]
    """The recorded content, a JSON object (for ``contract_verdict`` see VerdictPayloadModel)."""
    prev_hash: str = Field(pattern=f"^{HEX64_PATTERN}$")
    """The previous entry's ``hash``; 64 zeros for ``seq`` 1."""
    hash: str = Field(pattern=f"^{HEX64_PATTERN}$")
    """Lowercase hex SHA-256 of the RFC 8785 canonical JSON of
    ``{seq, kind, ts, key_id, payload, prev_hash}``."""
    signature: Annotated[str, _rule(signature_problem)] = Field(
        pattern=f"^{SIGNATURE_PATTERN}$"
    )
    """Standard base64 of the Ed25519 signature over the 32 raw bytes of ``hash``."""


ENTRY_FIELDS: tuple[str, ...] = tuple(JournalEntryModel.model_fields)
"""The eight fields of an entry, in the documented order."""


class _Open(BaseModel):
    # Fields beyond the documented ones are kept (see the module docstring).
    model_config = ConfigDict(
        frozen=True, extra="allow", strict=True, use_attribute_docstrings=True
    )


def _absent_by_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


class CheckModel(_Open):
    """One check of a contract verdict."""

    name: str = Field(pattern=r"\S")
    """The check's name, e.g. ``tz_regression``, unique within its verdict; evidence
    refers to it as ``check:NAME``."""
    passed: bool
    """Whether the check passed."""
    evidence: str = ""
    """What was observed, in words."""


class VerdictPayloadModel(_Open):
    """The payload of a ``contract_verdict`` journal entry (Formats §1)."""

    # Optional, but a string when present (null is refused, as it always was):
    # the default None stands for "absent" and is kept out of the JSON Schema.
    contract_id: str = Field(default=None, json_schema_extra=_absent_by_default)
    """The contract judged, e.g. ``c-0042``."""
    run_id: str = Field(default=None, json_schema_extra=_absent_by_default)
    """The run of the contract that was judged, e.g. ``r-0042-1``."""
    goal: str
    """The contract's goal, in words."""
    verdict: VerdictOutcome
    """The outcome: ``pass``, ``fail`` or ``partial``."""
    summary: str
    """A one-line account of the outcome."""
    checks: list[CheckModel]
    """The individual checks behind the verdict, names unique (may be empty)."""
    tags: list[str] = Field(default_factory=list)
    """Free-form labels, e.g. ``scheduler``, ``dst``."""

    @field_validator("checks")
    @classmethod
    def _unique_names(cls, checks: list[CheckModel]) -> list[CheckModel]:
        # evidence cites a check by name, so two checks with one name are ambiguous
        seen: set[str] = set()
        for i, c in enumerate(checks):
            if c.name in seen:
                raise PydanticCustomError(
                    "duplicate_check_name", "duplicate check name {name}",
                    {"name": c.name, "index": i},
                )  # fmt: skip
            seen.add(c.name)
        return checks


_EXPECTED = {
    "string_type": "a string", "bool_type": "true or false", "list_type": "a list",
    "model_type": "an object", "dict_type": "an object",
    "literal_error": f"one of {list(VERDICT_OUTCOMES)}",
    "string_pattern_mismatch": "a non-empty string",
}  # fmt: skip


def _first_error(exc: ValidationError) -> tuple[str, str]:
    """(field path under ``payload``, message) of the first validation error."""
    err = exc.errors(include_url=False)[0]
    loc = list(err["loc"])
    dup = err["type"] == "duplicate_check_name"
    if dup:
        loc += [err["ctx"]["index"], "name"]
    path = "payload"
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    if dup:
        return path, f"duplicate check name {err['ctx']['name']!r}"
    got = err.get("input")
    if err["type"] == "missing":
        return path, "required field is missing"
    if err["type"] in _EXPECTED:
        shown = repr(got) if isinstance(got, str | bool) else _json_type(got)
        return path, f"expected {_EXPECTED[err['type']]}, got {clip(shown)}"
    return path, err["msg"]


# A check name must contain a non-space character (the model's pattern ``\\S``);
# plainly valid when it has a printable ASCII one, where every regex engine agrees.
_ASCII_NONSPACE = re.compile(r"[!-~]")
_PAYLOAD_STR_KEYS = ("goal", "summary")
_OPTIONAL_STR_KEYS = ("contract_id", "run_id")


def _plainly_valid(p: dict[str, Any]) -> bool:
    """True only for payloads :class:`VerdictPayloadModel` (strict) surely accepts:
    exact JSON types, no duplicate check name. False means "ask the model"."""
    for k in _PAYLOAD_STR_KEYS:
        if type(p.get(k)) is not str:
            return False
    for k in _OPTIONAL_STR_KEYS:
        if k in p and type(p[k]) is not str:
            return False
    if p.get("verdict") not in VERDICT_OUTCOMES or type(p["verdict"]) is not str:
        return False
    tags = p.get("tags", [])
    if type(tags) is not list or any(type(t) is not str for t in tags):
        return False
    checks = p.get("checks")
    if type(checks) is not list:
        return False
    names = set()
    for c in checks:
        if type(c) is not dict:
            return False
        name = c.get("name")
        if type(name) is not str or type(c.get("passed")) is not bool or \
                type(c.get("evidence", "")) is not str or not _ASCII_NONSPACE.search(name):
            return False
        names.add(name)
    return len(names) == len(checks)


def plainly_valid_payload(payload: Any) -> bool:
    """True when ``payload`` is a dict that :func:`validate_verdict_payload` surely
    accepts unchanged but for copies (and a defaulted ``tags``): the bulk replay path
    renders such a payload as it is, without the copies (~6 µs of ~9 per verdict);
    False means "call :func:`validate_verdict_payload`", which decides."""
    return type(payload) is dict and _plainly_valid(payload)


def validate_verdict_payload(payload: Any, *, source: str | None = None) -> dict[str, Any]:
    """Check a ``contract_verdict`` payload against :class:`VerdictPayloadModel`.

    Returns it as a plain dict (``tags`` defaulted to an empty list, ``checks``
    and ``tags`` as lists, other fields as given). Raises :class:`BadInputError`
    (reason ``bad_verdict_payload``) naming the first bad field, e.g.
    ``payload.checks[1].name``, and what was expected.
    """
    if not isinstance(payload, Mapping):
        raise BadInputError(
            f"expected a JSON object, got {type(payload).__name__}",
            source=source, field="payload", reason="bad_verdict_payload",
        )  # fmt: skip
    out = dict(payload)
    if _plainly_valid(out):
        # The common case, checked in plain Python (the model costs ~10x more per
        # verdict on the replay path); anything it does not accept goes to the
        # model, which decides and words the error.
        out["tags"] = list(out.get("tags", []))
        out["checks"] = [dict(c) for c in out["checks"]]
        return out
    try:
        VerdictPayloadModel.model_validate(out)
    except ValidationError as exc:
        path, msg = _first_error(exc)
        raise BadInputError(msg, source=source, field=path, reason="bad_verdict_payload") from None
    out["tags"] = list(out.get("tags", []))
    out["checks"] = [dict(c) for c in out["checks"]]
    return out


# --- the journal as columns ---------------------------------------------------------

@dataclass
class JournalColumns:
    """A journal as equal-length columns, in chain order.

    Element ``i`` of every list belongs to the ``i``-th entry. ``payload`` holds
    the canonical JSON text of each payload (as :func:`canonical` writes it), so
    verification hashes it as is and never re-canonicalizes. ``line`` holds the
    1-based file line of each entry when the columns came from a file.
    """

    seq: list[int] = field(default_factory=list)
    kind: list[str] = field(default_factory=list)
    ts: list[str] = field(default_factory=list)
    key_id: list[str] = field(default_factory=list)
    payload: list[str] = field(default_factory=list)
    prev_hash: list[str] = field(default_factory=list)
    hash: list[str] = field(default_factory=list)
    signature: list[str] = field(default_factory=list)
    line: list[int] | None = None

    def __post_init__(self) -> None:
        n = len(self.seq)
        for name in (*ENTRY_FIELDS, "line"):
            col = getattr(self, name)
            if col is None:
                continue
            if not isinstance(col, list):
                col = list(col)
                setattr(self, name, col)
            if len(col) != n:
                raise BadInputError(
                    f"journal columns differ in length: seq has {n}, {name} has {len(col)}",
                    field=name,
                )

    def __len__(self) -> int:
        return len(self.seq)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Sequence[Any]]) -> JournalColumns:
        """Columns from a mapping of sequences (e.g. ``arrow_table.to_pydict()``).

        The eight Formats §1 columns are required (``payload`` as canonical
        text); ``line`` is optional; other keys are ignored.
        """
        missing = [c for c in ENTRY_FIELDS if c not in data]
        if missing:
            raise BadInputError(f"journal columns missing: {', '.join(missing)}", field=missing[0])
        cols = {c: list(data[c]) for c in ENTRY_FIELDS}
        cols["seq"] = [int(v) for v in cols["seq"]]
        line = data.get("line")
        return cls(**cols, line=None if line is None else [int(v) for v in line])

    @classmethod
    def from_entries(cls, entries: Iterable[Mapping[str, Any]]) -> JournalColumns:
        """Columns from Formats §1 entry dicts (as :func:`build_entry` returns).

        Each payload is canonicalized here; no validation happens (use
        :func:`read_journal_lines` for untrusted input).
        """
        cols = cls()
        for e in entries:
            cols.seq.append(e["seq"])
            cols.kind.append(e["kind"])
            cols.ts.append(e["ts"])
            cols.key_id.append(e["key_id"])
            cols.payload.append(canonical(e["payload"]))
            cols.prev_hash.append(e["prev_hash"])
            cols.hash.append(e["hash"])
            cols.signature.append(e["signature"])
        return cols

    def prefix(self, n: int) -> JournalColumns:
        """The first ``n`` entries (e.g. the verified prefix of a report)."""
        return JournalColumns(
            *(getattr(self, c)[:n] for c in ENTRY_FIELDS),
            line=None if self.line is None else self.line[:n],
        )

    def extend(self, part: JournalColumns) -> None:
        """Append ``part``'s entries (a streamed batch) to these columns, in place."""
        for c in ENTRY_FIELDS:
            getattr(self, c).extend(getattr(part, c))

    def to_pydict(self) -> dict[str, list[Any]]:
        """The columns as a dict of lists (``line`` included when known)."""
        out: dict[str, list[Any]] = {c: getattr(self, c) for c in ENTRY_FIELDS}
        if self.line is not None:
            out["line"] = self.line
        return out

    def iter_jsonl(self) -> Iterator[str]:
        """Formats §1 lines (no newline), fields in the documented order."""
        for i in range(len(self)):
            yield (
                '{"seq":' + str(self.seq[i])
                + ',"kind":' + jcs_string(self.kind[i])
                + ',"ts":' + jcs_string(self.ts[i])
                + ',"key_id":' + jcs_string(self.key_id[i])
                + ',"payload":' + self.payload[i]
                + ',"prev_hash":' + jcs_string(self.prev_hash[i])
                + ',"hash":' + jcs_string(self.hash[i])
                + ',"signature":' + jcs_string(self.signature[i])
                + "}"
            )


# --- strict reading of a JSONL export ------------------------------------------------

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
            hint = ""
            if "verdict" in obj or name in ("hash", "signature"):
                # the newcomer's mistake: verdicts not (yet) signed into a journal
                hint = ("; unsigned verdict records? `truss-lab journal sign RECORDS --key KEY "
                        "--out journal.jsonl` signs them into a journal")
            raise _Bad(name, "missing_field", f"required field {name!r} is missing{hint}")
    if len(obj) != _N_FIELDS:
        extra = sorted(set(obj) - set(ENTRY_FIELDS))
        raise _Bad(extra[0], "unknown_field", f"unknown field(s) {extra}; a journal entry has none")
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
                name, "bad_value", f"expected 64 lowercase hex digits, got {clip(obj[name])!r}"
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
    """Parse Formats §1 JSONL strictly, stopping at the first malformed line.

    Each line must be a JSON object with exactly the eight fields, each of the
    documented type and shape; JSON that RFC 8785 cannot represent (duplicate
    keys, NaN/Infinity, integers beyond 2^53, lone surrogates) is malformed.
    Blank lines are allowed only at the end. Returns the entries before the
    first bad line as :class:`JournalColumns` (with 1-based line numbers) and
    that line's diagnosis, if any. Chain checks are :func:`verify_columns`'.
    """
    return next(journal_line_batches(lines, source=source, rows=None))


def journal_line_batches(lines: Iterable[str | bytes], *, source: str = "<memory>",
                         rows: int | None = 16_384) -> Iterator[ParsedJournal]:
    """:func:`read_journal_lines` in batches of ``rows`` entries, parsed as the lines are
    read (``None``: one batch of them all). Every batch but the last holds ``rows``
    entries; the last (maybe empty) carries the first malformed line, if any, and no
    entry after it is read."""
    def fresh() -> tuple[JournalColumns, tuple[Callable[[Any], None], ...]]:
        cols = JournalColumns(line=[])
        return cols, (
            cols.seq.append, cols.kind.append, cols.ts.append, cols.key_id.append,
            cols.payload.append, cols.prev_hash.append, cols.hash.append,
            cols.signature.append, cols.line.append,  # type: ignore[union-attr]
        )  # fmt: skip

    cols, appends = fresh()
    blank_at: int | None = None
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
            yield ParsedJournal(source, cols, bad)
            return
        try:
            values = _parse_line(text)
        except _Bad as exc:
            bad = MalformedLine(source, lineno, exc.field, exc.detail, exc.message)
            yield ParsedJournal(source, cols, bad)
            return
        for append, v in zip(appends, (*values, lineno), strict=True):
            append(v)
        if rows is not None and len(cols) >= rows:
            yield ParsedJournal(source, cols)
            cols, appends = fresh()
    yield ParsedJournal(source, cols)


MAX_JOURNAL_LINE = 16 << 20
"""Most bytes of one journal line (an entry whose payload is a verdict with its checks is a
few kilobytes); a longer line is refused without being read whole."""
MAX_JOURNAL_FILE = 64 << 30
"""Most bytes of a journal file (a pipe is read no further)."""


def read_journal(path: str | os.PathLike[str]) -> ParsedJournal:
    """:func:`read_journal_lines` over a file or a pipe
    (:func:`~truss_lab.core._files.open_input`), read as UTF-8 line by line, each line at
    most :data:`MAX_JOURNAL_LINE` bytes.

    Parameters
    ----------
    path : path
        The journal (JSONL, the journal format).

    Returns
    -------
    ParsedJournal
        The entries before the first malformed line, and that line's diagnosis.

    Raises
    ------
    BadInputError
        A missing file, a folder or device, a file or line over its bound.
    """
    return next(read_journal_batches(path, rows=None))


def read_journal_batches(path: str | os.PathLike[str], *,
                         rows: int | None = 16_384) -> Iterator[ParsedJournal]:
    """:func:`read_journal` in batches of ``rows`` entries
    (:func:`journal_line_batches`), read as they are consumed: a long journal is never
    held whole."""
    source = str(path)
    with open_input(path, what="a journal file", limit=MAX_JOURNAL_FILE) as fh:
        yield from journal_line_batches(_bounded_lines(fh, source), source=source, rows=rows)


def _bounded_lines(fh: IO[bytes], source: str) -> Iterator[bytes]:
    number = 0
    while line := fh.readline(MAX_JOURNAL_LINE + 1):
        number += 1
        if len(line) > MAX_JOURNAL_LINE and not (len(line) == MAX_JOURNAL_LINE + 1
                                                  and line.endswith(b"\n")):
            raise BadInputError(f"line over {MAX_JOURNAL_LINE} bytes, not read whole",
                                source=source, line=number, reason="line_too_long")
        yield line
