"""Which slice each verdict of a run belongs to: the SQL of a per-slice error analysis.

A slice is a set of verdicts, named by what its verdicts' journal payloads share
(Formats §1): their ``verdict`` (``outcome``), a tag (``tag``), a check they have
(``check``, passed or failed), their ``contract_id`` (``contract``), the value of any
payload field (a dotted path of names, ``tags`` excepted), or a predicate. A verdict
belongs to one slice of an outcome, a contract or a field, to as many as it has tags or
checks, and a predicate is one slice (the verdicts it holds for).

A predicate is never pasted into SQL: :func:`parse_predicate` reads it into clauses
(a validated path, one of six operators, a value), each written here as a fixed
template whose path and value are bound parameters. The grammar, for the help text and
the docs, is :data:`PREDICATE_HELP`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..core._errors import BadInputError
from ._store import Store

__all__ = [
    "MISSING_SLICE",
    "PREDICATE_HELP",
    "SLICE_KINDS",
    "Clause",
    "check_field",
    "parse_predicate",
    "predicate_verdicts",
    "verdict_slices",
]

#: The named ways to slice verdicts; anything else is a payload field path.
SLICE_KINDS = ("outcome", "tag", "check", "contract")
#: The slice of verdicts whose payload lacks the field (a field slicing lists them too).
MISSING_SLICE = "(missing)"

#: JSON paths of the named slicings (fixed text: bound as parameters all the same).
_PATHS = {"outcome": "$.verdict", "contract": "$.contract_id"}
_LISTS = {"tag": "$.tags[*]", "check": "$.checks[*].name"}

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_FIELD = re.compile(rf"{_NAME}(?:\.{_NAME})*")
#: The operators a clause may use, each mapped to its SQL (a literal of this table: the
#: operator a user typed is looked up here, never pasted).
_SQL_OPS = {"<=": "<=", ">=": ">=", "!=": "<>", "=": "=", "<": "<", ">": ">"}
_CLAUSE = re.compile(
    rf"\s*(?P<path>{_NAME}(?:\.{_NAME})*)\s*(?P<op><=|>=|!=|=|<|>)\s*"
    r"""(?P<value>'[^']*'|"[^"]*"|[^\s'"]+)\s*""")

PREDICATE_HELP = (
    "A predicate on the verdict's payload: clauses joined by 'and', each PATH OP VALUE. "
    "PATH is a payload field (dotted names: verdict, contract_id, goal ...), or tag / "
    "check (true when any tag / check name compares so); OP one of = != < <= > >= (< <= "
    "> >= compare numbers); VALUE a word, a number or a quoted string. E.g. "
    "\"verdict = fail and tag = retry\".")


def check_field(path: Any, *, field: str = "by") -> str:
    """``path`` if it is a payload field path (dotted names), else a BadInputError."""
    if not isinstance(path, str) or not _FIELD.fullmatch(path):
        raise BadInputError(
            f"expected {', '.join(SLICE_KINDS)} or a payload field (dotted names such as "
            f"goal or checks), got {path!r}", field=field)
    return path


@dataclass(frozen=True)
class Clause:
    """One clause of a predicate: a payload ``path`` (or ``tag`` / ``check``), an ``op``
    of ``= != < <= > >=`` and its ``value`` (a number for the four orderings)."""

    path: str
    op: str
    value: str | float

    def sql(self) -> tuple[str, list[Any]]:
        """The clause's fixed SQL template over ``payload`` and its bound parameters."""
        op = _SQL_OPS[self.op]
        if self.path in _LISTS:
            listed = "list_contains(json_extract_string(payload, ?), ?)"
            if self.op == "=":
                return listed, [_LISTS[self.path], str(self.value)]
            if self.op == "!=":
                return f"NOT {listed}", [_LISTS[self.path], str(self.value)]
            return ("list_has_any(list_transform(json_extract_string(payload, ?), "
                    f"x -> TRY_CAST(x AS DOUBLE) {op} ?), [true])",
                    [_LISTS[self.path], self.value])
        path = "$." + self.path
        if isinstance(self.value, float):
            return (f"TRY_CAST(json_extract_string(payload, ?) AS DOUBLE) {op} ?",
                    [path, self.value])
        return f"json_extract_string(payload, ?) {op} ?", [path, self.value]


def parse_predicate(text: Any, *, field: str = "where") -> list[Clause]:
    """The clauses of a predicate (:data:`PREDICATE_HELP`), or a BadInputError naming
    the first part that is not one."""
    if not isinstance(text, str) or not text.strip():
        raise BadInputError(f"expected a predicate ({PREDICATE_HELP}), got {text!r}",
                            field=field)
    clauses = []
    for part in re.split(r"\s+and\s+", text.strip(), flags=re.IGNORECASE):
        m = _CLAUSE.fullmatch(part)
        if m is None:
            raise BadInputError(f"not a clause PATH OP VALUE: {part!r} in {text!r} "
                                f"({PREDICATE_HELP})", field=field)
        raw = m["value"]
        value: str | float = raw[1:-1] if raw[:1] in "'\"" else raw
        if m["op"] in ("<", "<=", ">", ">="):
            try:
                value = float(value)
            except ValueError:
                raise BadInputError(f"{m['op']} compares numbers, got {raw!r} in {text!r}",
                                    field=field) from None
        clauses.append(Clause(m["path"], m["op"], value))
    return clauses


def verdict_slices(store: Store, verdict_hashes: Sequence[str], by: str) -> pd.DataFrame:
    """Each of ``verdict_hashes`` with the slice(s) it belongs to by ``by``
    (:data:`SLICE_KINDS` or a payload field path): ``verdict_hash``, ``slice``, one row
    per pair, sorted by slice then journal order. A verdict whose payload lacks the
    field is in the slice :data:`MISSING_SLICE`; one with no tag or check in none."""
    hashes = [str(h) for h in verdict_hashes]
    if by in _LISTS:
        return store.sql(
            "SELECT hash AS verdict_hash, s AS slice FROM ("
            " SELECT hash, seq, unnest(json_extract_string(payload, ?)) AS s FROM journal"
            " WHERE hash IN (SELECT unnest(?))) WHERE s IS NOT NULL"
            " GROUP BY hash, seq, s ORDER BY s, seq", [_LISTS[by], hashes]).df()
    path = _PATHS.get(by) or "$." + check_field(by)
    return store.sql(
        "SELECT hash AS verdict_hash, coalesce(json_extract_string(payload, ?), ?) AS slice"
        " FROM journal WHERE hash IN (SELECT unnest(?)) ORDER BY slice, seq",
        [path, MISSING_SLICE, hashes]).df()


def predicate_verdicts(store: Store, verdict_hashes: Sequence[str],
                       clauses: Sequence[Clause]) -> list[str]:
    """Those of ``verdict_hashes`` whose payload satisfies every clause, in journal order."""
    parts, params = [], []
    for c in clauses:
        sql, p = c.sql()
        parts.append(f"coalesce({sql}, false)")
        params += p
    return [r[0] for r in store.sql(
        "SELECT hash FROM journal WHERE hash IN (SELECT unnest(?)) AND "
        + " AND ".join(parts) + " ORDER BY seq",
        [[str(h) for h in verdict_hashes], *params]).fetchall()]
