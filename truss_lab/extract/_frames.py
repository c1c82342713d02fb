"""Parse results as frames: the candidates table a chunk of verdicts yields.

:class:`CandidateColumns` gathers candidate rows column by column, from parse results or,
on replay's fast path (:mod:`._bulk`), straight from :func:`._fastparse.fast_lessons`'
triples; :func:`candidates_frame` and :func:`parse_errors_frame` are the frames of many
parse results (what :meth:`ParseResult.to_frame` gives for one).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ._fastparse import Lessons
from ._parser import ParsedLesson, ParseResult

__all__ = ["CandidateColumns", "candidates_frame", "parse_errors_frame"]


class CandidateColumns:
    """Candidate rows gathered column by column: what :func:`candidates_frame` builds
    its frame from, fed parse results (:meth:`add`) or, on replay's fast path, the
    ``(text, salience, evidence)`` triples of :func:`fast_lessons` (:meth:`add_valid`,
    the rows ``add`` would give for their all-valid result, without its objects).
    ``constants`` (name -> value) are columns holding one value on every row (see
    :func:`candidates_frame`), added by :meth:`frame`."""

    def __init__(self, key_names: tuple[str, ...],
                 constants: Mapping[str, Any] | None = None) -> None:
        self.key_names = key_names
        self.constants: dict[str, Any] = dict(constants or {})
        # Each add's key values and row count; the key columns are spelled out once,
        # when read (four list extends per verdict were ~5% of a replay's driver time).
        self._key_values: list[Sequence[Any]] = []
        self._key_rows: list[int] = []
        self.lesson_index: list[int] = []
        self.text: list[Any] = []
        self.salience: list[float] = []
        self.evidence: list[list[str]] = []
        self.valid: list[bool] = []
        self.drop_reason: list[str | None] = []

    def __len__(self) -> int:
        return len(self.valid)

    def _keys(self, values: Sequence[Any], n: int) -> None:
        if len(values) != len(self.key_names):
            raise ValueError(f"expected {len(self.key_names)} key values, got {len(values)}")
        self._key_values.append(values)
        self._key_rows.append(n)

    def key_columns(self) -> dict[str, list[Any]]:
        """Per key name, its value on every row (the objects given, repeated); built
        anew on each call."""
        names = self.key_names
        # Row i holds the values of add number which[i] (map runs the loop in C).
        which = np.repeat(np.arange(len(self._key_rows)), self._key_rows).tolist()
        per_add = list(zip(*self._key_values, strict=True)) or [()] * len(names)
        return {k: list(map(per_add[j].__getitem__, which)) for j, k in enumerate(names)}

    def add(self, values: Sequence[Any], lessons: Sequence[ParsedLesson]) -> None:
        """Rows for ``lessons``, each with the key ``values`` (in ``key_names`` order)."""
        self._keys(values, len(lessons))
        self.lesson_index += [le.lesson_index for le in lessons]
        self.text += [le.text for le in lessons]
        self.salience += [np.nan if le.salience is None else le.salience for le in lessons]
        self.evidence += [list(le.evidence) for le in lessons]
        self.valid += [le.valid for le in lessons]
        self.drop_reason += [le.drop_reason for le in lessons]

    def add_valid(self, values: Sequence[Any], lessons: Lessons) -> None:
        n = len(lessons)
        self._keys(values, n)
        self.lesson_index += range(n)
        for text, salience, evidence in lessons:
            self.text.append(text)
            self.salience.append(salience)
            self.evidence.append(list(evidence))
        self.valid += [True] * n
        self.drop_reason += [None] * n

    def frame(self) -> pd.DataFrame:
        data: dict[str, Any] = self.key_columns()
        data["lesson_index"] = np.asarray(self.lesson_index, dtype=np.int64)
        data["text"] = pd.array(self.text, dtype="str")
        data["salience"] = np.asarray(self.salience, dtype=np.float64)
        ev = np.empty(len(self.evidence), dtype=object)
        ev[:] = self.evidence
        data["evidence"] = ev
        data["valid"] = np.asarray(self.valid, dtype=bool)
        data["drop_reason"] = pd.array(self.drop_reason, dtype="str")
        n = len(self)
        for name, value in self.constants.items():
            # A list of one str or int value infers the dtype its scalar assignment does
            # (tests/test_bulk_replay.py compares the frames); an empty frame is left to
            # the assignment itself.
            data[name] = [value] * n if n and type(value) in (str, int) else value
        return pd.DataFrame(data)


def candidates_frame(
    results: Iterable[tuple[Mapping[str, Any], ParseResult]],
    constants: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Many parse results as one candidates DataFrame.

    ``results`` yields ``(keys, result)``; ``keys`` (e.g. ``{"verdict_hash": …,
    "extractor": …}``) become leading columns repeated on each lesson row, and
    every ``keys`` mapping must have the same key names. Columns after the
    keys: lesson_index (int64), text (str, missing when not a string),
    salience (float64, NaN when invalid), evidence (list[str]), valid (bool),
    drop_reason (str, missing when valid). Results with a completion-level
    error contribute no rows (see :func:`parse_errors_frame`). ``constants``
    (name -> value) are last columns holding one value on every row, the frame
    ``frame[name] = value`` would make, built with the others (one construction).
    """
    cols: CandidateColumns | None = None
    for keys, res in results:
        names = tuple(keys)
        if cols is None:
            cols = CandidateColumns(names, constants)
        elif names != cols.key_names:
            from ..core._errors import BadInputError

            raise BadInputError(
                f"every result needs the same key columns: expected {list(cols.key_names)}, "
                f"got {list(names)}",
                field="keys",
            )
        if res.lessons:
            cols.add([keys[k] for k in names], res.lessons)
    return (cols or CandidateColumns((), constants)).frame()


def parse_errors_frame(
    results: Iterable[tuple[Mapping[str, Any], ParseResult]],
) -> pd.DataFrame:
    """One row per result with a completion-level error: the key columns, error, detail."""
    rows = [{**dict(keys), "error": r.error, "detail": r.detail} for keys, r in results if r.error]
    if not rows:
        return pd.DataFrame({"error": pd.array([], dtype="str"), "detail": pd.array([], "str")})
    return pd.DataFrame(rows)
