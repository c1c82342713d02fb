"""The completion parser: any text in, a :class:`ParseResult` out, never an exception.

Expected shape (Formats §2)::

    {"lessons": [{"text": "...", "salience": 0.82, "evidence": ["check:tz_regression"]}]}

Where the JSON is found, in order:

1. the whole text (stripped) is one JSON value;
2. otherwise the first *top-level* JSON object inside the text that has a
   ``"lessons"`` key — this covers ```` ``` ```` / ```` ```json ```` fences and
   prose around the object. Scanning tries :meth:`json.JSONDecoder.raw_decode`
   at each ``{``; after an object decodes, scanning resumes after its end, so
   objects nested inside it are never taken for top-level ones.

JSON that RFC 8785 cannot represent is rejected as :func:`truss_lab.core._canonical.loads_strict`
rejects it (same reason codes), but at the narrowest level that holds it: a
duplicate key, NaN/Infinity or an integer beyond 2^53 - 1 inside one lesson drops
that lesson only; a duplicate key in the top-level object fails the completion.
Top-level fields other than ``lessons`` are ignored.

Completion-level errors (:attr:`ParseResult.error`; then ``lessons`` is empty):

- ``not_json``: no JSON value could be decoded (and no embedded object found);
- ``no_lessons_key``: JSON was found, but no top-level object with ``"lessons"``;
- ``lessons_not_list``: ``lessons`` is not a list;
- ``duplicate_key``: the top-level object repeats a key.

Per-lesson drop reasons (:attr:`ParsedLesson.drop_reason`; first failing rule wins):

- ``lesson_not_object``; ``duplicate_key`` / ``non_finite`` / ``unsafe_integer``
  (anywhere inside the lesson);
- ``missing_text`` (absent or null), ``text_not_string``, ``empty_text``
  (only whitespace), ``bad_unicode`` (a lone surrogate in text or evidence);
- ``salience_missing`` (absent or null), ``salience_not_number`` (incl. booleans
  and numeric strings), ``salience_out_of_range`` (outside [0, 1]);
- ``evidence_not_list``, ``evidence_item_not_string``.

Decisions: ``evidence`` is optional — absent or null means an empty list (a
lesson without evidence is still a lesson; the grounding scorer gives it 0).
Lesson text is stored stripped. Extra lesson fields are ignored.
Every lesson keeps its 0-based ``lesson_index`` in the ``lessons`` array,
dropped or not (Formats §3).

The common completion (one plain object, bare or fenced, every lesson valid) is
parsed by :func:`fast_lessons` with orjson ("The fast path" below); it declines
anything it could decide differently, and :func:`_parse_exact` (the rules above)
decides those.

The fast path
-------------

The common completion, parsed fast: one plain JSON object, bare or in a ``` fence,
whose every lesson is valid.

:func:`fast_lessons` either returns what :func:`truss_lab.extract._parser._parse_exact`
would return for the text (as ``(text, salience, evidence)`` triples of valid lessons)
or ``None``; it never decides a case differently, it only declines. It declines
whenever orjson and the exact path could part ways:

- orjson is strict RFC 8259 (no NaN/Infinity, no trailing content, no lone
  surrogates), a subset of what :mod:`json` accepts, so a text it decodes is decoded
  by the exact path to the same values — except where orjson is lossy: duplicate keys
  (last wins; the exact path keeps the first and flags it) and integers beyond 64 bits
  (orjson returns floats). Duplicates are ruled out by counting keys (see
  :data:`_KEY_END`); every number must lie within +-MAX_SAFE_INT, which also rules out
  those floats, NaN and infinities, i.e. everything the exact path would taint.
- escaped surrogates (``\\ud...``) decline: whether a pair or a lone one, the exact
  path decides ``bad_unicode`` itself.
- deep nesting declines (:data:`_MAX_CONTAINERS`): :mod:`json` recurses and can hit
  the interpreter's recursion limit where orjson (limit 1024) succeeds.
- a fence is taken only when no ``{`` precedes the object, so the exact path's scan
  for the first top-level object finds this same object.

Parse results as frames
-----------------------

Parse results as frames: the candidates table a chunk of verdicts yields.

:class:`CandidateColumns` gathers candidate rows column by column, from parse results or,
on replay's fast path (:func:`truss_lab.extract._extractor.replay_verdicts`), straight
from :func:`fast_lessons`' triples; :func:`candidates_frame` and :func:`parse_errors_frame`
are the frames of many parse results (what :meth:`ParseResult.to_frame` gives for one).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
import pandas as pd

from ..core._canonical import MAX_SAFE_INT
from ..core._errors import BadInputError

__all__ = [
    "COMPLETION_ERRORS",
    "DROP_REASONS",
    "LESSONS_JSON_SCHEMA",
    "CandidateColumns",
    "ParseResult",
    "ParsedLesson",
    "all_valid_builder",
    "candidates_frame",
    "fast_lessons",
    "parse_completion",
    "parse_errors_frame",
    "parse_fast_or_exact",
]


# --- the exact parser -----------------------------------------------------------------------------

# The expected shape as a JSON Schema, for servers that constrain decoding to it
# (``response_format: json_schema``). Strict-mode servers (OpenAI) need every
# property required and no others; a lesson without evidence sends ``[]``.
LESSONS_JSON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"lessons": {"type": "array", "items": {
        "type": "object",
        "properties": {"text": {"type": "string"},
                       "salience": {"type": "number", "minimum": 0, "maximum": 1},
                       "evidence": {"type": "array", "items": {"type": "string"}}},
        "required": ["text", "salience", "evidence"],
        "additionalProperties": False,
    }}},
    "required": ["lessons"],
    "additionalProperties": False,
}

COMPLETION_ERRORS = ("not_json", "no_lessons_key", "lessons_not_list", "duplicate_key")
DROP_REASONS = (
    "lesson_not_object",
    "duplicate_key",
    "non_finite",
    "unsafe_integer",
    "missing_text",
    "text_not_string",
    "empty_text",
    "bad_unicode",
    "salience_missing",
    "salience_not_number",
    "salience_out_of_range",
    "evidence_not_list",
    "evidence_item_not_string",
)

CANDIDATE_COLUMNS = ("lesson_index", "text", "salience", "evidence", "valid", "drop_reason")


@dataclass(frozen=True, slots=True)
class ParsedLesson:
    """One entry of the completion's ``lessons`` array, valid or dropped."""

    lesson_index: int
    """0-based position in the ``lessons`` array (dropped entries count)."""
    text: str | None
    """The stripped lesson text; ``None`` when it was not a string."""
    salience: float | None
    """The model's salience in [0, 1]; ``None`` for a dropped lesson."""
    evidence: tuple[str, ...]
    """Evidence strings (``check:<name>``); empty when absent or invalid."""
    valid: bool
    """True when the lesson passed every rule."""
    drop_reason: str | None
    """Why the lesson was dropped (one of :data:`DROP_REASONS`); ``None`` if valid."""


@dataclass(frozen=True, slots=True)
class ParseResult:
    """The parsed completion: its lessons, or a completion-level error."""

    lessons: tuple[ParsedLesson, ...]
    """Every entry of ``lessons``, in order; empty when ``error`` is set."""
    error: str | None = None
    """A completion-level error code (one of :data:`COMPLETION_ERRORS`) or ``None``."""
    detail: str | None = None
    """A human-readable explanation of ``error``."""

    @property
    def ok(self) -> bool:
        """True when the completion itself parsed (some lessons may still be dropped)."""
        return self.error is None

    @property
    def valid_lessons(self) -> tuple[ParsedLesson, ...]:
        """The lessons that passed every rule."""
        return tuple(le for le in self.lessons if le.valid)

    def to_frame(self) -> pd.DataFrame:
        """One row per lesson: lesson_index, text, salience (NaN when invalid),
        evidence (list[str]), valid (bool), drop_reason (str, missing when valid)."""
        return candidates_frame([({}, self)])


# ---------------------------------------------------------------------------
# A tolerant decoder: it never raises for the values loads_strict rejects,
# it marks them, so the rejection can be applied per lesson.


class _Taint:
    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


_NON_FINITE = _Taint("non_finite")
_UNSAFE_INT = _Taint("unsafe_integer")


class _Obj(dict):  # type: ignore[type-arg]
    """A decoded object; ``dup`` is set when a key repeats (first value kept)."""

    __slots__ = ("dup",)


def _pairs(pairs: list[tuple[str, Any]]) -> _Obj:
    out = _Obj()
    out.dup = None
    for k, v in pairs:
        if k in out:
            if out.dup is None:
                out.dup = k
            continue
        out[k] = v
    return out


def _int(s: str) -> Any:
    v = int(s)
    return _UNSAFE_INT if abs(v) > MAX_SAFE_INT else v


def _float(s: str) -> Any:
    v = float(s)
    return _NON_FINITE if math.isinf(v) else v


def _constant(s: str) -> Any:
    return _NON_FINITE


_DECODER = json.JSONDecoder(
    object_pairs_hook=_pairs, parse_int=_int, parse_float=_float, parse_constant=_constant
)
_MAX_FAILED_STARTS = 2000


def _decode_at(text: str, pos: int) -> tuple[Any, int] | None:
    try:
        return _DECODER.raw_decode(text, pos)
    except (ValueError, RecursionError, OverflowError):
        return None


# The common case first: the whole text is one JSON object. Numbers are then
# parsed by the C scanner (no per-number Python hook) and checked afterwards; a
# text with a number the strict hooks would taint is decoded again by them.
_PLAIN_DECODER = json.JSONDecoder(object_pairs_hook=_pairs)


def _plain_numbers(value: Any) -> bool:
    """No number in ``value`` that :data:`_DECODER`'s hooks would have tainted."""
    stack = [value]
    while stack:
        v = stack.pop()
        t = type(v)
        if t is _Obj:
            stack.extend(v.values())
        elif t is list:
            stack.extend(v)
        elif t is float:
            if not math.isfinite(v):
                return False
        elif t is int and abs(v) > MAX_SAFE_INT:
            return False
    return True


def _plain_root(stripped: str) -> Any:
    """The root object when ``stripped`` is exactly one plain JSON object with a
    'lessons' key; None when the strict path must decide."""
    if not stripped.startswith("{"):
        return None
    try:
        root, end = _PLAIN_DECODER.raw_decode(stripped, 0)
    except (ValueError, RecursionError, OverflowError):
        return None
    if end != len(stripped) or "lessons" not in root or not _plain_numbers(root):
        return None
    return root


def _find_root(text: str) -> tuple[Any, str | None, str | None]:
    """(root object or None, error code, detail)."""
    stripped = text.strip()
    root = _plain_root(stripped)
    if root is not None:
        return root, None, None
    if stripped:
        got = _decode_at(stripped, 0)
        if got is not None and got[1] == len(stripped):
            root = got[0]
            if isinstance(root, _Obj) and "lessons" in root:
                return root, None, None
            # Valid JSON, but not our object: maybe it wraps a fenced block?
            # No: a whole-text JSON value *is* the answer; report it.
            kind = "object without a 'lessons' key" if isinstance(root, _Obj) else _kind(root)
            return None, "no_lessons_key", f"the completion is a JSON {kind}"
    found_object = False
    failures = 0
    pos = text.find("{")
    while pos != -1:
        got = _decode_at(text, pos)
        if got is None:
            failures += 1
            if failures > _MAX_FAILED_STARTS:
                # Each failed attempt can read to the end of the text; bound the
                # quadratic worst case on adversarial input.
                break
            pos = text.find("{", pos + 1)
            continue
        value, end = got
        found_object = True
        if isinstance(value, _Obj) and "lessons" in value:
            return value, None, None
        pos = text.find("{", end)
    if found_object:
        return None, "no_lessons_key", "no top-level JSON object with a 'lessons' key"
    return None, "not_json", "no JSON object found in the completion"


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool) or value is None:
        return "literal"
    return "number"


def _subtree_taint(value: Any) -> str | None:
    # Iterative, so a deeply nested lesson cannot exhaust the stack.
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, _Taint):
            return v.reason
        if isinstance(v, _Obj):
            if v.dup is not None:
                return "duplicate_key"
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return None


def _utf8_ok(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _lesson(index: int, raw: Any) -> ParsedLesson:
    def drop(reason: str, text: str | None = None) -> ParsedLesson:
        return ParsedLesson(index, text, None, (), False, reason)

    if not isinstance(raw, _Obj):
        return drop("lesson_not_object")
    text_raw = raw.get("text")
    text = text_raw.strip() if isinstance(text_raw, str) else None
    if text is not None and not _utf8_ok(text):
        # Not storable as UTF-8: keep neither the text nor the lesson.
        return drop("bad_unicode")
    taint = _subtree_taint(raw)
    if taint is not None:
        return drop(taint, text)
    if text_raw is None:
        return drop("missing_text")
    if not isinstance(text_raw, str):
        return drop("text_not_string")
    if not text:
        return drop("empty_text", text)
    sal = raw.get("salience")
    if sal is None:
        return drop("salience_missing", text)
    if isinstance(sal, bool) or not isinstance(sal, int | float):
        return drop("salience_not_number", text)
    sal = float(sal)
    if not 0.0 <= sal <= 1.0:
        return drop("salience_out_of_range", text)
    ev = raw.get("evidence")
    if ev is None:
        evidence: tuple[str, ...] = ()
    elif not isinstance(ev, list):
        return drop("evidence_not_list", text)
    elif not all(isinstance(e, str) for e in ev):
        return drop("evidence_item_not_string", text)
    else:
        if not all(_utf8_ok(e) for e in ev):
            return drop("bad_unicode", text)
        evidence = tuple(ev)
    return ParsedLesson(index, text, sal, evidence, True, None)


def parse_completion(text: str) -> ParseResult:
    """Parse a completion's raw text into lessons. Never raises.

    See the module docstring for where the JSON is looked for, the error codes
    and the drop reasons.

    Parameters
    ----------
    text : str
        The completion's text as the model answered.

    Returns
    -------
    ParseResult
        The lessons (each valid or with its drop reason), or the error.
    """
    got = parse_fast_or_exact(text)
    return got if type(got) is ParseResult else _all_valid(got)


def parse_fast_or_exact(text: str) -> Lessons | ParseResult:
    """:func:`parse_completion`'s answer: the ``(text, salience, evidence)`` triples of
    its lessons when the fast path takes the text (every lesson valid), else the
    exact parser's :class:`ParseResult`."""
    try:
        got = fast_lessons(text) if isinstance(text, str) else None
    except Exception:  # pragma: no cover - the exact path decides instead
        got = None
    return _parse_exact(text) if got is None else got


def _parse_exact(text: str) -> ParseResult:
    """:func:`parse_completion` without the fast path (which must agree with it)."""
    try:
        if not isinstance(text, str):
            return ParseResult((), "not_json", f"expected text, got {type(text).__name__}")
        root, error, detail = _find_root(text)
        if root is None:
            return ParseResult((), error, detail)
        if root.dup is not None:
            return ParseResult(
                (), "duplicate_key", f"the top-level object repeats the key {root.dup!r}"
            )
        lessons = root["lessons"]
        if not isinstance(lessons, list):
            return ParseResult(
                (), "lessons_not_list", f"'lessons' is a {_kind_any(lessons)}, expected a list"
            )
        return ParseResult(tuple(_lesson(i, raw) for i, raw in enumerate(lessons)))
    except Exception as exc:  # pragma: no cover - a last guard: the batch must go on
        return ParseResult((), "not_json", f"parser failure: {type(exc).__name__}")


def _kind_any(value: Any) -> str:
    if isinstance(value, _Obj):
        return "object"
    if isinstance(value, _Taint):
        return "non-finite or unsafe number"
    return _kind(value)


# --- the fast path --------------------------------------------------------------------------------

Lessons = list[tuple[str, float, tuple[str, ...]]]

# The end of every key: its closing quote, JSON whitespace, a colon. Each real key
# (duplicates included) yields one match, and strings may add more, so
# keys kept after decoding <= keys in the text <= matches; equality proves no key
# repeats in any object.
_KEY_END = re.compile(r'"\s*:')
# Containers bound the nesting depth; a real completion has a handful.
_MAX_CONTAINERS = 128
_LESSON_FIELDS = frozenset({"text", "salience", "evidence"})
_ABSENT = object()
_loads = orjson.loads
_JSONDecodeError = orjson.JSONDecodeError


def _object_text(text: str) -> str | None:
    """The candidate JSON object text, or None when the shape is not the common one."""
    s = text.strip()
    if s.startswith("```"):
        nl = s.find("\n")
        if nl < 0 or not s.endswith("```") or "{" in s[:nl]:
            return None
        s = s[nl + 1 : -3].strip()
    if not (s.startswith("{") and s.endswith("}")):
        return None
    if "\\u" in s and ("\\ud" in s or "\\uD" in s):
        return None
    return s


def _walk(stack: list[Any]) -> tuple[int, int] | None:
    """(keys, containers) in the values on ``stack``; None when a number is out of
    range (NaN included)."""
    keys = 0
    containers = 0
    pop = stack.pop
    push = stack.extend
    while stack:
        v = pop()
        t = type(v)
        if t is dict:
            keys += len(v)
            containers += 1
            push(v.values())
        elif t is list:
            containers += 1
            push(v)
        elif (t is float or t is int) and not -MAX_SAFE_INT <= v <= MAX_SAFE_INT:
            return None
    return keys, containers


def fast_lessons(text: str) -> Lessons | None:
    """Every lesson of ``text`` as (stripped text, salience, evidence) when the text
    is the common case and all its lessons are valid; None when the exact path must
    decide."""
    s = _object_text(text)
    if s is None:
        return None
    try:
        root = _loads(s)
    except _JSONDecodeError:
        return None
    if type(root) is not dict:
        return None
    lessons = root.get("lessons", _ABSENT)
    if type(lessons) is not list:
        return None
    # The lesson fields are checked below; every other value is walked for its
    # keys, containers and numbers.
    keys = len(root)
    containers = 2
    others = [v for k, v in root.items() if k != "lessons"] if keys > 1 else []
    out = []
    for raw in lessons:
        if type(raw) is not dict:
            return None
        body = raw.get("text")
        sal = raw.get("salience")
        ev = raw.get("evidence", _ABSENT)
        if type(body) is not str or (type(sal) is not float and type(sal) is not int):
            return None
        body = body.strip()
        # Also rules out NaN; a salience in [0, 1] needs no range check of its own.
        if not body or not 0.0 <= sal <= 1.0:
            return None
        if ev is _ABSENT:
            evidence: tuple[str, ...] = ()
            known = 2
        elif ev is None:
            evidence = ()
            known = 3
        elif type(ev) is list:
            for e in ev:
                if type(e) is not str:
                    return None
            evidence = tuple(ev)
            known = 3
            containers += 1
        else:
            return None
        n = len(raw)
        if n != known:
            others.extend([v for k, v in raw.items() if k not in _LESSON_FIELDS])
        keys += n
        containers += 1
        out.append((body, float(sal), evidence))
    if others:
        got = _walk(others)
        if got is None:
            return None
        keys += got[0]
        containers += got[1]
    if containers > _MAX_CONTAINERS or keys != len(_KEY_END.findall(s)):
        return None
    return out


def all_valid_builder(lesson_cls: type, result_cls: type) -> Callable[[Lessons], Any]:
    """``build(got) == result_cls(tuple(lesson_cls(i, text, salience, evidence, True,
    None) for i, (text, salience, evidence) in enumerate(got)))``, for the parser's
    frozen, slotted ParsedLesson and ParseResult.

    Their generated ``__init__`` sets each field through ``object.__setattr__``, a
    third of a fast-path parse; the slot descriptors set the same fields directly.
    """
    set_index, set_text, set_salience, set_evidence, set_valid, set_drop = (
        getattr(lesson_cls, f).__set__
        for f in ("lesson_index", "text", "salience", "evidence", "valid", "drop_reason")
    )
    set_lessons, set_error, set_detail = (
        getattr(result_cls, f).__set__ for f in ("lessons", "error", "detail")
    )
    new = object.__new__

    def build(got: Lessons) -> Any:
        lessons = []
        for i, (text, salience, evidence) in enumerate(got):
            le = new(lesson_cls)
            set_index(le, i)
            set_text(le, text)
            set_salience(le, salience)
            set_evidence(le, evidence)
            set_valid(le, True)
            set_drop(le, None)
            lessons.append(le)
        res = new(result_cls)
        set_lessons(res, tuple(lessons))
        set_error(res, None)
        set_detail(res, None)
        return res

    return build


_all_valid = all_valid_builder(ParsedLesson, ParseResult)


# --- parse results as frames ----------------------------------------------------------------------

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
