"""The one definition of a journal entry and of a verdict payload (FORMATS.md §1).

:class:`JournalEntryModel` is the entry; the strict reader
(:mod:`truss_lab.journal._reader`) keeps a hand-written fast check for speed,
but takes its field list and its value rules (:func:`ts_problem`,
:func:`signature_problem`, the patterns) from here, and tests/test_journal.py
checks that the reader and the model accept and reject the same lines.

:class:`VerdictPayloadModel` is the payload of a ``contract_verdict``;
:func:`validate_verdict_payload` (what the prompts and the heuristic call)
validates with it. ``truss-lab schema journal`` and ``truss-lab schema verdict``
print the JSON Schemas of the same two models.

What a verdict payload requires follows what the extraction path has always
accepted, which FORMATS.md §1 and the bundled sample satisfy: ``goal``,
``verdict``, ``summary`` and ``checks`` are required (a lesson is grounded in
the checks; an empty list says "no checks"); ``contract_id``, ``run_id`` and
``tags`` are optional (the prompt renders ``(unknown)`` / ``(none)``); fields
beyond these are allowed and kept, so a newer Truss that adds one does not
stop extraction.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any, Literal, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from ..core._errors import BadInputError

__all__ = [
    "ENTRY_FIELDS",
    "VERDICT_KIND",
    "VERDICT_OUTCOMES",
    "CheckModel",
    "JournalEntryModel",
    "VerdictPayloadModel",
    "plainly_valid_payload",
    "signature_problem",
    "ts_problem",
    "validate_verdict_payload",
]

VERDICT_KIND = "contract_verdict"
"""The ``kind`` of a recorded contract verdict."""

VerdictOutcome = Literal["pass", "fail", "partial"]
VERDICT_OUTCOMES: tuple[str, ...] = get_args(VerdictOutcome)

# The value rules, shared by the model (JSON Schema patterns) and the fast reader.
HEX64_PATTERN = r"[0-9a-f]{64}"
SIGNATURE_PATTERN = r"[A-Za-z0-9+/]{86}=="
TS_PATTERN = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|\+00:00)"
_TS = re.compile(TS_PATTERN)
_SIG = re.compile(SIGNATURE_PATTERN)


def _clip(v: str, n: int = 40) -> str:
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
        return f"expected standard base64 of 64 bytes (88 characters), got {_clip(v)!r}"
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
    """One line of a journal export (FORMATS.md §1)."""

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
    """The payload of a ``contract_verdict`` journal entry (FORMATS.md §1)."""

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
        return path, f"expected {_EXPECTED[err['type']]}, got {_clip(shown)}"
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
