"""Strict JSON reading and RFC 8785 (JCS) canonical writing.

RFC 8785 cannot represent duplicate keys, NaN/Infinity, integers beyond 2^53
or lone surrogates faithfully, so :func:`loads_strict` rejects them: a value
that would canonicalize differently on another implementation never enters
the journal. "Beyond 2^53" means |n| > 2^53 - 1, the bound of ``rfc8785``
(and of JavaScript's ``Number.MAX_SAFE_INTEGER``), so whatever
:func:`loads_strict` accepts :func:`canonical` can write. Lone surrogates,
raw or escaped (``"\\ud800"``), are rejected: UTF-8 cannot encode them, so
the canonical bytes would not exist.
"""

from __future__ import annotations

import hashlib
import json
import json.encoder
import math
import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import rfc8785

__all__ = [
    "MAX_DEPTH", "MalformedJSON", "canonical", "canonical_bytes", "canonical_digest", "jcs_string",
    "json_safe", "loads_strict",
]

MAX_DEPTH = 200
"""The deepest nesting of arrays and objects accepted. Deeper values are malformed:
Python's recursion (here, in ``rfc8785`` and in the stdlib encoder) would
otherwise end in a ``RecursionError`` somewhere between 400 and 990 levels."""

MAX_SAFE_INT = 2**53 - 1
"""The largest integer magnitude RFC 8785 (an IEEE double) holds exactly; rfc8785 agrees."""

# A lone surrogate can arrive raw (in a ``str``) or as a ``\\uD800``-style escape.
_RAW_SURROGATE = re.compile("[\ud800-\udfff]")
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


class MalformedJSON(ValueError):
    """``field`` is a dotted path when known; ``reason`` is a short code."""

    def __init__(self, message: str, *, reason: str = "malformed", field: str | None = None):
        super().__init__(message)
        self.reason = reason
        self.field = field


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise MalformedJSON(f"duplicate key {k!r}", reason="duplicate_key", field=k)
        out[k] = v
    return out


def _int(s: str) -> int:
    v = int(s)
    if abs(v) > MAX_SAFE_INT:
        raise MalformedJSON(
            f"integer {s} is beyond the exact range of a double (|n| <= 2^53 - 1)",
            reason="unsafe_integer",
        )
    return v


def _float(s: str) -> float:
    v = float(s)
    if v in (float("inf"), float("-inf")):
        raise MalformedJSON(f"number {s} overflows a double", reason="non_finite")
    return v


def _constant(s: str) -> Any:
    raise MalformedJSON(f"{s} is not JSON", reason="non_finite")


def loads_strict(text: str | bytes) -> Any:
    """Parse JSON, rejecting what RFC 8785 cannot represent.

    Raises :class:`MalformedJSON` (a ``ValueError``) with a ``reason`` code:
    ``bad_json``, ``duplicate_key``, ``non_finite``, ``unsafe_integer``,
    ``bad_unicode``, ``too_deep`` (beyond :data:`MAX_DEPTH`), and ``field`` the
    dotted path of the offending value (``payload.checks.0.score``) when there is one.
    """
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        if _RAW_SURROGATE.search(text):
            raise MalformedJSON("text holds a lone surrogate", reason="bad_unicode")
        value = json.loads(
            text,
            object_pairs_hook=_pairs,
            parse_int=_int,
            parse_float=_float,
            parse_constant=_constant,
        )
    except MalformedJSON as exc:
        if isinstance(text, str):
            exc.field = _locate(text, exc.reason) or exc.field
        raise
    except UnicodeDecodeError as exc:
        raise MalformedJSON(f"not UTF-8: {exc.reason}", reason="bad_unicode") from None
    except RecursionError:  # deeper than Python's parser goes: deeper than MAX_DEPTH too
        raise MalformedJSON(f"nested deeper than {MAX_DEPTH} levels", reason="too_deep") from None
    except json.JSONDecodeError as exc:
        raise MalformedJSON(f"not valid JSON: {exc}", reason="bad_json") from None
    # Cheap guard first: fewer opening brackets than MAX_DEPTH cannot nest deeper.
    if text.count("[") + text.count("{") > MAX_DEPTH:
        _check_depth(value)
    # A surrogate pair escape decodes to one non-BMP character; only a lone
    # half survives as a surrogate code point, which UTF-8 cannot encode.
    if _ESCAPED_SURROGATE.search(text) and _has_surrogate(value):
        raise MalformedJSON(
            "string holds a lone surrogate escape",
            reason="bad_unicode",
            field=_locate(text, "bad_unicode"),
        )
    return value


def _check_depth(value: Any) -> None:
    """Refuse nesting deeper than :data:`MAX_DEPTH` (iteratively: no recursion here)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        obj, depth = stack.pop()
        if isinstance(obj, dict):
            children: Any = obj.values()
        elif isinstance(obj, list | tuple):
            children = obj
        else:
            continue
        if depth > MAX_DEPTH:
            raise MalformedJSON(f"nested deeper than {MAX_DEPTH} levels", reason="too_deep")
        stack.extend((c, depth + 1) for c in children)


class _PairList(list):  # an object parsed leniently, its pairs kept in order
    pass


def _offends(v: Any, reason: str) -> bool:
    if reason == "non_finite":
        return isinstance(v, float) and not math.isfinite(v)
    if reason == "unsafe_integer":
        return type(v) is int and abs(v) > MAX_SAFE_INT
    if reason == "bad_unicode":
        return isinstance(v, str) and _RAW_SURROGATE.search(v) is not None
    return False


def _locate(text: str, reason: str) -> str | None:
    """The dotted path of the first value (in document order) that fails ``reason``.

    Only called on the error path: a lenient re-parse keeps every pair, so the
    offending value can be found even though the strict parse stopped at it.
    """
    try:
        root = json.loads(text, object_pairs_hook=_PairList)
    except (ValueError, RecursionError):
        return None

    def walk(obj: Any, path: tuple[str, ...]) -> tuple[str, ...] | None:
        if isinstance(obj, _PairList):
            seen: set[str] = set()
            for k, v in obj:
                if reason == "duplicate_key" and k in seen:
                    return (*path, k)
                seen.add(k)
                if _offends(k, reason):
                    return (*path, k)
                hit = walk(v, (*path, k))
                if hit is not None:
                    return hit
            return None
        if isinstance(obj, list):
            for i, v in enumerate(obj):
                hit = walk(v, (*path, str(i)))
                if hit is not None:
                    return hit
            return None
        return path if _offends(obj, reason) else None

    hit = walk(root, ())
    return ".".join(hit) if hit else None


def _has_surrogate(obj: Any) -> bool:
    if isinstance(obj, str):
        return _RAW_SURROGATE.search(obj) is not None
    if isinstance(obj, dict):
        return any(_has_surrogate(k) or _has_surrogate(v) for k, v in obj.items())
    if isinstance(obj, list):
        return any(_has_surrogate(v) for v in obj)
    return False


def _fast_ok(obj: Any, depth: int = 1) -> bool:
    # json.dumps(sort_keys) equals JCS unless a float (number formatting
    # differs) or a non-BMP key (JCS sorts by UTF-16 units) is present.
    # Beyond MAX_DEPTH it says no (and stops recursing): canonical() refuses.
    t = type(obj)
    if t is str or t is bool or obj is None:
        return True
    if t is int:
        # beyond 2^53 - 1 JCS has no exact form: rfc8785 raises, so must we
        return -MAX_SAFE_INT <= obj <= MAX_SAFE_INT
    if depth > MAX_DEPTH:
        return False
    if t is dict:
        for k, v in obj.items():
            if type(k) is not str or any(ord(c) > 0xFFFF for c in k):
                return False
            if not _fast_ok(v, depth + 1):
                return False
        return True
    if t is list or t is tuple:
        return all(_fast_ok(v, depth + 1) for v in obj)
    return False


def canonical(obj: Any) -> str:
    """The RFC 8785 canonical JSON text of ``obj``.

    Raises :class:`MalformedJSON` for values JCS cannot represent, and (a
    deliberate refusal where ``rfc8785`` would write) for a float whose
    canonical form is an integer beyond 2^53 - 1, e.g. ``1e20`` written as
    ``100000000000000000000``: :func:`loads_strict` would refuse that text,
    so a journal could not read back its own export.
    """
    if _fast_ok(obj):
        text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise MalformedJSON("string holds a lone surrogate", reason="bad_unicode") from None
        return text
    _check_depth(obj)  # _fast_ok says no beyond MAX_DEPTH; rfc8785 would recurse there
    _refuse_big_integral_floats(obj)
    try:
        return rfc8785.dumps(obj).decode("utf-8")
    except rfc8785.IntegerDomainError as exc:
        raise MalformedJSON(f"cannot canonicalize: {exc}", reason="unsafe_integer") from None
    except rfc8785.FloatDomainError as exc:
        raise MalformedJSON(f"cannot canonicalize: {exc}", reason="non_finite") from None
    except rfc8785.CanonicalizationError as exc:
        reason = "bad_unicode" if "UTF-8" in str(exc) else "bad_json"
        raise MalformedJSON(f"cannot canonicalize: {exc}", reason=reason) from None
    except UnicodeEncodeError:
        raise MalformedJSON("string holds a lone surrogate", reason="bad_unicode") from None


def _refuse_big_integral_floats(obj: Any) -> None:
    t = type(obj)
    if t is float:
        # JCS writes integral doubles below 1e21 without an exponent
        if MAX_SAFE_INT < abs(obj) < 1e21 and obj.is_integer():
            raise MalformedJSON(
                f"number {obj!r} would be written as an integer beyond 2^53 - 1",
                reason="unsafe_integer",
            )
    elif t is dict:
        for v in obj.values():
            _refuse_big_integral_floats(v)
    elif t is list or t is tuple:
        for v in obj:
            _refuse_big_integral_floats(v)


def canonical_bytes(obj: Any) -> bytes:
    """UTF-8 bytes of :func:`canonical`."""
    return canonical(obj).encode("utf-8")


def canonical_digest(text: str) -> str:
    """Lowercase hex SHA-256 of a canonical JSON text's UTF-8 bytes: a request's hash
    (``CompletionRequest.request_hash``) and an extractor configuration's, whether it is
    built (``ExtractorConfig.config_hash``) or read from a completions file (ingest), so
    they agree by construction."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_encode_basestring = json.encoder.encode_basestring  # the C encoder json.dumps uses


def jcs_string(s: str) -> str:
    """A JSON string literal exactly as RFC 8785 writes it."""
    # same output as json.dumps(s, ensure_ascii=False), without its per-call overhead
    return _encode_basestring(s)


JSON_SAFE_DIGITS = 6
"""Significant decimals :func:`json_safe` keeps of a float by default."""


def json_safe(value: Any, *, digits: int = JSON_SAFE_DIGITS) -> Any:
    """``value`` with numpy scalars made plain, floats rounded to ``digits`` significant
    decimals, and ``None`` for what RFC 8785 JSON cannot carry faithfully: NaN,
    infinity, integers beyond 2^53 and floats it would write as such integers."""
    if isinstance(value, Mapping):
        return {str(k): json_safe(v, digits=digits) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray, pd.Index, pd.Series)):
        return [json_safe(v, digits=digits) for v in list(value)]
    if value is None or value is pd.NA or isinstance(value, (bool, np.bool_)):
        return None if value is None or value is pd.NA else bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value) if abs(int(value)) <= MAX_SAFE_INT else None
    if isinstance(value, (float, np.floating)):
        f = float(value)
        if not math.isfinite(f):
            return None
        f = float(f"{f:.{digits}g}") if f else 0.0
        # JCS writes integral doubles below 1e21 as plain integers; past 2^53 a
        # strict reader refuses those, so they cannot go into the journal.
        return None if MAX_SAFE_INT < abs(f) < 1e21 and f.is_integer() else f
    if isinstance(value, str):
        return value
    return str(value)
