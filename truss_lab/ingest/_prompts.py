"""Prompt template files (Formats §6): TOML, one file per prompt version.

A file names the version (``name``, the ``prompt_version`` recorded with every call),
its ``kind`` (``lesson``, ``judge`` or ``match``), a ``description``, the ``system``
text (sent as it is) and the ``user`` template, whose ``{placeholder}`` fields the
toolkit renders (``{{`` and ``}}`` for literal braces). :data:`PLACEHOLDERS` lists
the fields of each kind (``truss-lab schema prompt`` prints them); any other field
is an error naming it.

Inside the toolkit a template's user text is a :class:`string.Template` (``$name``):
:func:`user_from_file` and :func:`user_to_file` translate between the two spellings
exactly, so a template's hash (over the ``$`` spelling) is the same whichever way it
was written, and the built-in templates, kept as files beside
:mod:`truss_lab.extract._prompts`, keep the hashes their runs recorded.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..core._errors import BadInputError
from ..core._files import read_input
from ..core._toml import parse_toml
from ._strict import SecretFree

__all__ = [
    "MAX_PROMPT_FILE",
    "MAX_PROMPT_TEXT",
    "PLACEHOLDERS",
    "PROMPT_KINDS",
    "PromptFileModel",
    "parse_prompt_text",
    "prompt_file_text",
    "read_prompt_file",
    "user_from_file",
    "user_to_file",
]

PROMPT_KINDS = ("lesson", "judge", "match")
"""What a template asks: lessons of a verdict, labels of lessons, or matches of
lessons to reference lessons."""

_VERDICT_FIELDS = {
    "contract_id": "the verdict's contract_id ('(unknown)' when absent)",
    "run_id": "the verdict's run_id ('(unknown)' when absent)",
    "goal": "the contract's goal",
    "verdict": "pass, fail or partial",
    "summary": "the verdict's summary",
    "checks": "one line per check: '- check:<name> [PASS|FAIL]: <evidence>'",
    "n_checks": "the number of checks",
    "n_failed": "the number of failed checks",
    "tags": "the tags, comma-separated, or '(none)'",
}

PLACEHOLDERS: dict[str, dict[str, str]] = {
    "lesson": dict(_VERDICT_FIELDS),
    "judge": {**_VERDICT_FIELDS,
              "lessons": "one line per lesson to judge: '[<lesson_index>] <text> "
                         "(evidence: ...)'"},
    "match": {"lessons": "one line per lesson: '[L<lesson_index>] <text> (evidence: ...)'",
              "references": "one line per reference lesson: '[R<k>] <text> (evidence: "
                            "...)', k = 1, 2, ..."},
}
"""The placeholders of a user template, by kind, each with what it renders."""

# Bounds (docs/reference/formats.md; ``truss-lab schema prompt`` shows them), as the other inputs
# have: a template is instructions and a few examples, the verdict comes in through its
# placeholders, so a far longer value is a mistake (a pasted file) that every run's
# requests would carry.
MAX_PROMPT_TEXT = 1_048_576
"""Most characters of a template's ``system``, ``user`` or ``description``: some 250k
tokens, more than most models read in one request."""
MAX_PROMPT_FILE = 4 * 1024 * 1024
"""Most bytes of a prompt file; a larger file is refused before it is read whole."""

_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"
_IDENT = re.compile(r"[A-Za-z0-9_]")


class PromptFileModel(BaseModel):
    """One prompt template file (Formats §6)."""

    model_config = ConfigDict(
        extra="forbid", use_attribute_docstrings=True,
        json_schema_extra={"x-placeholders": PLACEHOLDERS})

    name: Annotated[str, Field(pattern=_NAME), SecretFree]
    """The prompt version recorded with every call (letters, digits, '.', '_', '-')."""
    kind: Literal["lesson", "judge", "match"] = "lesson"
    """What the template asks: lesson (extract), judge (judge) or match (match)."""
    description: Annotated[str, Field(max_length=MAX_PROMPT_TEXT), SecretFree] = ""
    """For people; not part of the template's hash."""
    system: Annotated[str, Field(min_length=1, max_length=MAX_PROMPT_TEXT), SecretFree]
    """The system message, sent as written (no placeholders)."""
    user: Annotated[str, Field(min_length=1, max_length=MAX_PROMPT_TEXT), SecretFree]
    """The user message: text with {placeholder} fields of the kind (x-placeholders);
    '{{' and '}}' for literal braces."""


def _fields(user: str) -> list[tuple[str, str | None]]:
    """``user`` as (literal text, placeholder name or None) pieces; a bad field
    (format spec, conversion, index, stray brace) is an error naming it."""
    try:
        parsed = list(string.Formatter().parse(user))
    except ValueError as exc:
        raise BadInputError(f"bad template: {exc} (write '{{{{' and '}}}}' for literal "
                            "braces)", field="user", reason="bad_placeholder") from None
    out: list[tuple[str, str | None]] = []
    for literal, name, spec, conversion in parsed:
        if name is not None and (spec or conversion or not name.isidentifier()):
            shown = name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec
                                                                        else "")
            raise BadInputError(f"placeholder {{{shown}}} is not a plain name; write "
                                "{name}", field="user", reason="bad_placeholder")
        out.append((literal, name))
    return out


def user_from_file(user: str, kind: str) -> str:
    """A file's ``{placeholder}`` user template as the toolkit's ``$name`` template;
    a placeholder that ``kind`` does not render is an error naming it."""
    known = PLACEHOLDERS[kind]
    pieces = _fields(user)
    bad = [name for _, name in pieces if name is not None and name not in known]
    if bad:
        raise BadInputError(
            f"unknown placeholder {{{bad[0]}}} for a {kind} prompt; known: "
            + ", ".join("{" + k + "}" for k in known), field="user", reason="bad_placeholder")
    out: list[str] = []
    for i, (literal, name) in enumerate(pieces):
        out.append(literal.replace("$", "$$"))
        if name is not None:
            following = pieces[i + 1][0] if i + 1 < len(pieces) else ""
            # "$name" would swallow the identifier characters that follow it.
            out.append("${" + name + "}" if following[:1] and _IDENT.match(following[:1])
                       else "$" + name)
    return "".join(out)


def user_to_file(user: str) -> str:
    """The toolkit's ``$name`` user template in the file's ``{placeholder}`` spelling
    (the inverse of :func:`user_from_file`)."""
    out, pos = [], 0
    for m in string.Template.pattern.finditer(user):
        out.append(user[pos:m.start()].replace("{", "{{").replace("}", "}}"))
        pos = m.end()
        if m.group("escaped") is not None:
            out.append("$")
        elif m.group("invalid") is not None:
            out.append("$")
        else:
            out.append("{" + (m.group("named") or m.group("braced")) + "}")
    out.append(user[pos:].replace("{", "{{").replace("}", "}}"))
    return "".join(out)


def parse_prompt_text(text: str, source: str = "<memory>") -> PromptFileModel:
    """Read the TOML text of one prompt file; errors name ``source`` and the field."""
    try:
        data = parse_toml(text, source=source, what="the prompt file")
    except BadInputError as exc:
        raise BadInputError(exc.message, source=source, line=exc.line,
                            reason=exc.reason or "bad_toml") from None
    return _model(data, source)


def _model(data: Mapping[str, Any], source: str) -> PromptFileModel:
    try:
        model = PromptFileModel.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or None
        raise BadInputError(err["msg"].removeprefix("Value error, "), source=source, field=where,
                            reason="bad_value") from None
    try:
        user_from_file(model.user, model.kind)
    except BadInputError as exc:
        raise BadInputError(exc.message, source=source, field="user",
                            reason=exc.reason) from None
    return model


def read_prompt_file(path: str | Path) -> PromptFileModel:
    """Read one prompt template file (Formats §6)."""
    source = str(path)
    data = read_input(path, what="a prompt file (system, user and description hold at most "
                      f"{MAX_PROMPT_TEXT} characters each)", limit=MAX_PROMPT_FILE)
    try:
        # As a text-mode read would: universal newlines (a template's hash sees "\n").
        text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except UnicodeDecodeError:
        raise BadInputError("not UTF-8 text", source=source) from None
    return parse_prompt_text(text, source)


def _toml_string(s: str) -> str:
    # A literal multi-line string keeps the text as written (no escapes); a text it
    # cannot hold (''' inside, a control character) goes in a basic string, escaped.
    if "'''" not in s and not s.endswith("'") and not re.search(r"[\x00-\x08\x0b-\x1f\x7f]",
                                                                  s):
        return "'''\n" + s + "'''"
    body = s.replace("\\", "\\\\").replace('"', '\\"')
    body = re.sub(r"[\x00-\x08\x0b-\x1f\x7f]", lambda m: f"\\u{ord(m.group()):04x}", body)
    return '"""\n' + body + '"""'


def prompt_file_text(name: str, kind: str, description: str, system: str, user: str) -> str:
    """The TOML text of a prompt file (``user`` in the file's ``{placeholder}``
    spelling); :func:`parse_prompt_text` reads it back to the same values."""
    return (f"name = {_basic(name)}\n"
            f"kind = {_basic(kind)}\n"
            f"description = {_basic(description)}\n"
            f"system = {_toml_string(system)}\n"
            f"user = {_toml_string(user)}\n")


def _basic(s: str) -> str:
    # A one-line TOML basic string.
    body = s.replace("\\", "\\\\").replace('"', '\\"')
    body = re.sub(r"[\x00-\x1f\x7f]", lambda m: f"\\u{ord(m.group()):04x}", body)
    return f'"{body}"'
