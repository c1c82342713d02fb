"""Reference lessons: JSONL, one expected lesson per line (Formats §4).

:class:`ReferenceRecordModel` is the specification (it feeds ``truss-lab
schema references``) and :func:`read_references` validates every line with it,
so the reader and the schema cannot drift. Reference files are small (a few
references per annotated verdict), so each line is parsed strictly with
:func:`~truss_lab.core._canonical.loads_strict` and validated by the model; the
bulk column checks of the completions reader are not worth their code here.

Like completions and labels: bad lines are reported with file, line and field,
and the good ones land; identical duplicates of (verdict_hash, reference_id,
annotator) collapse, conflicting ones are all dropped with an error naming both
lines. A verdict an annotator says teaches nothing is one line with
``reference_id`` ``"none"`` and empty text; a ``"none"`` line beside real
references of the same annotator and verdict contradicts them and is dropped.
"""

from __future__ import annotations

import os
from typing import Annotated, Any

import numpy as np
import pandas as pd
from pydantic import Field, StrictStr, ValidationError, model_validator

from ..core._canonical import MalformedJSON, loads_strict
from ..core._errors import BadInputError
from ._fields import MAX_REFERENCE_EVIDENCE, MAX_REFERENCE_NAME, MAX_REFERENCE_TEXT
from ._strict import (
    Hex64,
    IdSafe,
    SecretFree,
    StrictRecord,
    bounded_lines,
    dedupe,
    id_rows,
    input_error,
    json_kind,
    locate_field,
    split_lines,
    warn_lookalikes,
)
from ._tables_in import is_table, records_jsonl, relocate, source_name, table_records

__all__ = [
    "MAX_REFERENCE_FILE",
    "MAX_REFERENCE_LINE",
    "NO_REFERENCE",
    "REFERENCE_FIELDS",
    "REFERENCE_KEY",
    "ReferenceRecordModel",
    "read_references",
]

REFERENCE_FIELDS: tuple[str, ...] = ("verdict_hash", "reference_id", "text", "evidence",
                                     "annotator")
"""The §4 fields, in the documented order (also the column order of the frame)."""
REFERENCE_KEY: tuple[str, ...] = ("verdict_hash", "reference_id", "annotator")
"""Unique key of a reference lesson within a file."""
NO_REFERENCE = "none"
"""The ``reference_id`` of the line saying "this verdict teaches nothing"."""

MAX_REFERENCE_LINE = 1024 * 1024
"""Most bytes of one line (its newline not counted): every line whose fields are within
their bounds fits, however it is escaped (at most 12 bytes of JSON a character: 192 KiB of
text, 195 KiB of evidence); a longer line is refused without being read whole."""
MAX_REFERENCE_FILE = 1 << 30
"""Most bytes of a references file (a pipe is read no further; a larger file unread)."""
_BOUNDS = {"text": f"{MAX_REFERENCE_TEXT} characters",
           "reference_id": f"{MAX_REFERENCE_NAME} characters",
           "annotator": f"{MAX_REFERENCE_NAME} characters",
           "evidence": f"{MAX_REFERENCE_EVIDENCE} tokens of {MAX_REFERENCE_NAME} characters"}

_Name = Annotated[StrictStr, Field(min_length=1, max_length=MAX_REFERENCE_NAME), SecretFree,
                  IdSafe]


class ReferenceRecordModel(StrictRecord):
    """One reference lesson: a line of a references JSONL file (Formats §4)."""

    verdict_hash: Hex64
    """The ``hash`` of the verdict's journal entry (64 lowercase hex digits)."""
    reference_id: _Name
    """The reference's id within its verdict (``r1``, ``r2`` ...); ``"none"``
    (with empty ``text``) says the annotator found nothing worth teaching."""
    text: Annotated[StrictStr, Field(max_length=MAX_REFERENCE_TEXT), SecretFree]
    """What the lesson should say; empty exactly when ``reference_id`` is ``"none"``."""
    evidence: list[_Name] = Field(default_factory=list, max_length=MAX_REFERENCE_EVIDENCE)
    """``check:<name>`` / ``summary`` / ``goal`` tokens, as in lesson evidence; may be empty."""
    annotator: Annotated[StrictStr, Field(max_length=MAX_REFERENCE_NAME), SecretFree,
                         IdSafe] | None = None
    """Who wrote it; optional (absent, null or empty: one anonymous annotator)."""

    @model_validator(mode="after")
    def _none_is_empty(self) -> ReferenceRecordModel:
        if (self.reference_id == NO_REFERENCE) != (self.text.strip() == ""):
            raise ValueError(
                "text must be empty exactly when reference_id is 'none' "
                f"(got reference_id {self.reference_id!r} with "
                f"{'empty' if not self.text.strip() else 'non-empty'} text)"
            )
        return self


def _empty_frame() -> pd.DataFrame:
    return pd.DataFrame({
        "verdict_hash": pd.Series([], dtype="string"),
        "reference_id": pd.Series([], dtype="string"),
        "text": pd.Series([], dtype="string"),
        "evidence": pd.Series([], dtype=object),
        "annotator": pd.Series([], dtype="string"),
    })


def _field_of(err: dict[str, Any]) -> str | None:
    loc = [str(x) for x in err.get("loc", ())]
    if not loc:
        # The cross-field rule: name the field a reader would fix first.
        return "text" if "text must be empty" in str(err.get("msg", "")) else None
    return ".".join(loc)


def read_references(
    path: str | os.PathLike[str] | pd.DataFrame,
) -> tuple[pd.DataFrame, list[BadInputError]]:
    """Read a §4 reference-lessons JSONL file (or a DataFrame of its fields, read as the
    lines its rows would be; its errors name rows, 0-based): ``(good rows, errors)``.

    The frame has the columns of :data:`REFERENCE_FIELDS` (strings as
    ``string``; ``evidence`` a list of str per row; ``annotator`` ``""`` when
    the line gave none, so the key never holds a null), one row per unique
    (verdict_hash, reference_id, annotator). Each bad line gives a
    :class:`BadInputError` naming the file, the 1-based line and (when known)
    the field, with a ``reason``: ``bad_json``, ``not_object``,
    ``bad_unicode``, ``duplicate_key``, ``non_finite``, ``unsafe_integer``,
    ``missing``, ``unexpected_field``, ``bad_value``,
    ``conflicting_duplicate``, ``none_with_references`` or ``line_too_long`` (over
    :data:`MAX_REFERENCE_LINE` bytes: refused unread, naming the field that makes it long
    when it can). Blank lines are ignored.

    Parameters
    ----------
    path : path or pandas.DataFrame
        The JSONL file (or a pipe), or a frame of its fields.

    Returns
    -------
    tuple of (pandas.DataFrame, list of BadInputError)
        The good rows, and one error per bad line or row.
    """
    source = source_name(path)
    table = table_records(path) if is_table(path) else None
    if table is not None:  # a table: read as the JSON lines its rows would be
        lines, errors = split_lines(records_jsonl(table.records), source)
    else:
        lines, errors = bounded_lines(path, MAX_REFERENCE_LINE, "references", _BOUNDS,
                                      MAX_REFERENCE_FILE)
    rows: list[dict[str, Any]] = []
    numbers: list[int] = []
    for number, text in lines:
        try:
            value = loads_strict(text)
        except MalformedJSON as exc:
            field = locate_field(text, exc.reason, exc.field)
            errors.append(input_error(str(exc), source, number, field, exc.reason))
            continue
        if not isinstance(value, dict):
            errors.append(input_error(f"expected a JSON object, got {json_kind(value)}", source,
                               number, None, "not_object"))
            continue
        try:
            rec = ReferenceRecordModel.model_validate(value)
        except ValidationError as exc:
            for e in exc.errors():
                kind = e.get("type", "")
                reason = {"missing": "missing", "extra_forbidden": "unexpected_field"}.get(
                    kind, "bad_value")
                msg = ("required field is missing" if reason == "missing" else
                       f"unexpected field (allowed: {', '.join(REFERENCE_FIELDS)})"
                       if reason == "unexpected_field"
                       else e["msg"].removeprefix("Value error, "))
                errors.append(input_error(msg, source, number, _field_of(dict(e)), reason))
            continue
        row = rec.model_dump()
        row["annotator"] = row["annotator"] or ""
        rows.append(row)
        numbers.append(number)
    if not rows:
        errors.sort(key=lambda e: e.line or 0)
        return _empty_frame(), errors if table is None else relocate(errors, table)
    df = pd.DataFrame(rows, columns=list(REFERENCE_FIELDS))
    for c in ("reference_id", "annotator"):
        col = df[c].tolist()
        warn_lookalikes(source, c, col, id_rows(col)[1], numbers, rows=False)
    for c in ("verdict_hash", "reference_id", "text", "annotator"):
        df[c] = df[c].astype("string")
    lines_arr = np.asarray(numbers, dtype=np.int64)
    # Lists are unhashable: compare evidence as a tuple while deduplicating.
    keyed = df.assign(evidence=df["evidence"].map(tuple))
    keyed, dup_errors = dedupe(keyed, lines_arr, REFERENCE_KEY, source)
    errors += dup_errors
    keep_lines = _surviving_lines(df, lines_arr, keyed)
    df = keyed.assign(evidence=keyed["evidence"].map(list))
    df, none_errors = _drop_contradicting_none(df, keep_lines, source)
    errors += none_errors
    errors.sort(key=lambda e: e.line or 0)
    return df.reset_index(drop=True), errors if table is None else relocate(errors, table)


def _surviving_lines(before: pd.DataFrame, lines: np.ndarray, after: pd.DataFrame) -> np.ndarray:
    """The first line number of each row that survived deduplication."""
    first = (before.assign(_line=lines, evidence=before["evidence"].map(tuple))
             .drop_duplicates(list(REFERENCE_KEY), keep="first"))
    by_key = {tuple(r[:3]): r[3] for r in first[[*REFERENCE_KEY, "_line"]].itertuples(
        index=False)}
    return np.asarray([by_key[tuple(r)] for r in after[list(REFERENCE_KEY)].itertuples(
        index=False)], dtype=np.int64)


def _drop_contradicting_none(
    df: pd.DataFrame, lines: np.ndarray, source: str
) -> tuple[pd.DataFrame, list[BadInputError]]:
    """Drop "none" lines of an (annotator, verdict) that also has real references."""
    is_none = (df["reference_id"] == NO_REFERENCE).to_numpy(dtype=bool)
    if not is_none.any():
        return df, []
    key = ["verdict_hash", "annotator"]
    real = df.loc[~is_none, key].drop_duplicates()
    clash = df[key].merge(real.assign(_real=True), on=key, how="left")["_real"]
    bad = is_none & clash.fillna(False).to_numpy(dtype=bool)
    errors = [
        input_error("reference_id 'none' (teaches nothing) beside real references of the same "
             "verdict and annotator; the 'none' line is dropped", source, int(lines[i]),
             "reference_id", "none_with_references")
        for i in np.flatnonzero(bad)
    ]
    return df[~bad], errors
