"""The one redaction point: secrets never reach the database, a recording, a log or an error.

Free text that came from outside (a server's error body, an exception from
the HTTP stack, a run's configuration, a URL) passes through :func:`redact`
before it is kept anywhere. Three kinds of secret are removed:

* values registered with :func:`register_secret` (a provider registers the
  API key it reads, so a server that echoes the key back is caught too), and
  the values of environment variables whose names say they are secret
  (``*_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*_PASSWORD``);
* ``Authorization`` values and ``Bearer``/``Basic`` credentials;
* the userinfo of URLs (``http://user:KEY@host`` -> ``http://[REDACTED]@host``) and
  the values of URL query parameters named like a credential (``?api-key=KEY``,
  ``&access_token=KEY``, ``sig=``: Azure OpenAI and signed URLs carry the key there).

Where the text lands decides nothing: :class:`~truss_lab.core._errors.TrussLabError`
redacts its message, :class:`~truss_lab.store._store.Store` redacts every column a
server or the user's configuration can fill, on every append (``FREE_TEXT_COLUMNS``;
list columns such as ``evidence`` element by element), and a recording is
redacted whole (:func:`redact_json`) before the recorder sees it.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable
from typing import Any

__all__ = [
    "MASK",
    "control_characters",
    "is_secret_parameter",
    "redact",
    "redact_arrow",
    "redact_json",
    "redact_many",
    "register_secret",
]

MASK = "[REDACTED]"

# Shorter values would mask ordinary words; no real key is this short.
_MIN_SECRET = 8
_SECRET_ENV = re.compile(r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD)$", re.I)
# Query parameter names (or their last ``-``/``_`` part) that carry a credential.
_QUERY_SECRET = (r"(?:api[-_]?key|key|token|secret|password|passwd|sig|signature|"
                 r"credential|auth|code)")
_SECRET_PARAMETER = re.compile(r"(?i)(?:[a-z0-9_.-]*[_-])?" + _QUERY_SECRET)
_PATTERNS = (
    # Authorization: <scheme> <credentials>, as a header line, a dict entry or JSON.
    (re.compile(r"""(?i)(authorization['"]?\s*[:=]\s*['"]?)(?:(?:bearer|basic|token)\s+)?"""
                r"""[^\s'",}]+"""), r"\1" + MASK),
    (re.compile(r"(?i)\b(bearer|basic)(\s+)[^\s'\",}]+"), r"\1\2" + MASK),
    # userinfo in a URL: scheme://user[:password]@host
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@'\"]+@"), r"\1" + MASK + "@"),
    # a credential in a URL query: ?api-key=KEY, &access_token=KEY, &sig=...
    (re.compile(r"(?i)([?&](?:[a-z0-9_.-]*[_-])?" + _QUERY_SECRET + r"=)[^&#\s'\"]+"),
     r"\1" + MASK),
)

_GUARD = (r"(?i)authorization|bearer|basic|://[^/@\s]+@|[?&](?:[a-z0-9_.-]*[_-])?"
          + _QUERY_SECRET + "=")

_lock = threading.Lock()
_registered: set[str] = set()


def register_secret(value: str | None) -> None:
    """Remember ``value`` as secret for every later :func:`redact` of this process."""
    if value and len(value.strip()) >= _MIN_SECRET:
        with _lock:
            _registered.add(value)
            _registered.add(value.strip())


def is_secret_parameter(name: str) -> bool:
    """Whether a URL query parameter called ``name`` carries a credential (``api-key``,
    ``access_token``, ``sig``; not ``api-version``): a provider registers its value."""
    return _SECRET_PARAMETER.fullmatch(name) is not None


def control_characters(value: str) -> bool:
    """Whether ``value`` holds a control character (a key read from a CRLF file ends in
    ``\\r``): such a value cannot go into an HTTP header, and the HTTP stack's own
    error would print it."""
    return any(ord(c) < 0x20 or ord(c) == 0x7F for c in value)


def _secret_values() -> list[str]:
    with _lock:
        values = set(_registered)
    for name, value in os.environ.items():
        if _SECRET_ENV.search(name) and len(value.strip()) >= _MIN_SECRET:
            values.add(value)
            values.add(value.strip())
    out: set[str] = set()
    for v in values:
        out.add(v)
        # The forms an exception message shows: repr escapes (b'sk-\r'), JSON escapes.
        out.add(v.encode("unicode_escape").decode("ascii", "replace"))
        out.add(repr(v)[1:-1])
    # Longest first, so a key is not half-masked by a shorter prefix of it.
    return sorted((v for v in out if len(v) >= _MIN_SECRET), key=len, reverse=True)


def _redact_with(text: str, values: list[str]) -> str:
    for v in values:
        if v in text:
            text = text.replace(v, MASK)
    for pattern, repl in _PATTERNS:
        text = pattern.sub(repl, text)
    return text


def redact(text: str | None) -> str | None:
    """``text`` with every secret (see the module docstring) replaced by ``[REDACTED]``."""
    if not text:
        return text
    return _redact_with(text, _secret_values())


def redact_many(texts: Iterable[str | None]) -> list[str | None]:
    """:func:`redact` over many texts (the secret list is built once)."""
    values = _secret_values()
    return [_redact_with(t, values) if t else t for t in texts]


def redact_json(obj: Any) -> Any:
    """A JSON-like value with every string in it redacted (keys kept)."""
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        return {k: redact_json(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [redact_json(v) for v in obj]
    return obj


def redact_arrow(array: Any) -> Any:
    """:func:`redact` over a pyarrow string array, or every element of a list-of-strings
    array (``evidence``), vectorized (bulk appends); a chunked array chunk by chunk."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(array, pa.ChunkedArray):
        return pa.chunked_array([redact_arrow(c) for c in array.chunks], type=array.type)
    if pa.types.is_list(array.type) or pa.types.is_large_list(array.type):
        # The elements are redacted in place; lengths and nulls stay as they were
        # (offsets rebased to 0: a sliced array's offsets start further on).
        cls = pa.ListArray if pa.types.is_list(array.type) else pa.LargeListArray
        first, last = array.offsets[0].as_py(), array.offsets[-1].as_py()
        offsets = pc.subtract(array.offsets, pa.scalar(first, array.offsets.type))
        values = redact_arrow(array.values.slice(first, last - first))
        return cls.from_arrays(offsets, values, type=array.type,
                               mask=array.is_null() if array.null_count else None)
    for v in _secret_values():
        array = pc.replace_substring(array, v, MASK)
    # One guard pass (what every pattern needs) instead of three rewriting
    # passes: almost no bulk text (lessons, completions) holds any of it.
    if not pc.any(pc.match_substring_regex(array, _GUARD)).as_py():
        return array
    for pattern, repl in _PATTERNS:
        array = pc.replace_substring_regex(array, pattern.pattern, repl)
    return array
