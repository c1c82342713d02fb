"""The common completion, parsed fast: one plain JSON object, bare or in a ``` fence,
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
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import orjson

from ..core._canonical import MAX_SAFE_INT

__all__ = ["all_valid_builder", "fast_lessons"]

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
