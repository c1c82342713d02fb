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

A URL given as configuration (a provider's base URL) may carry a key anywhere else too:
:func:`register_url_secrets` registers its userinfo, its credential query values and
every path segment that looks like a key (:func:`looks_like_key`: a known key prefix, or
a long run of letters and digits such as a hex or base64 token), with the rest of the path
after it; ``/v1/sk-abc.../chat`` is then stored and printed as ``/v1/[REDACTED]/chat``.
The pattern rules above are not widened to paths: in free text (a lesson citing a commit
URL) a long token is data, not a key.

Where the text lands decides nothing: :class:`~truss_lab.core._errors.TrussLabError`
redacts its message, :class:`~truss_lab.store._store.Store` redacts every column a
server or the user's configuration can fill, on every append (``FREE_TEXT_COLUMNS``;
list columns such as ``evidence`` element by element), and a recording is
redacted whole (:func:`redact_json`) before the recorder sees it.
"""

from __future__ import annotations

import functools
import os
import re
import threading
from collections.abc import Iterable
from typing import Any

__all__ = [
    "MASK",
    "control_characters",
    "holds_secret",
    "is_secret_parameter",
    "looks_like_key",
    "redact",
    "redact_arrow",
    "redact_json",
    "redact_many",
    "register_secret",
    "register_url_secrets",
    "url_secrets",
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


# Prefixes providers give their keys (OpenAI sk-, Anthropic sk-ant-, GitHub ghp_,
# Slack xoxb-, Hugging Face hf_, Groq gsk_, GitLab glpat-, Google AIza, AWS AKIA, ...).
_KEY_PREFIX = re.compile(r"(?i)^(?:sk|pk|rk|ak|key|apikey|api|tok|token|secret|pat|ghp|gho|"
                         r"ghs|ghu|github_pat|xox[abprs]|hf|gsk|glpat|AIza|AKIA)[-_]?")
# A key's body: a run of letters and digits this long is a token, not a word or a
# version (``gpt-4o-mini-2024-07-18`` has no run over 4, ``deployments`` no digit).
_KEY_RUN = 16


def looks_like_key(segment: str) -> bool:
    """Whether a URL path segment (percent-decoded) looks like a credential: 16 or more
    characters with letters and digits, either after a known key prefix (``sk-``,
    ``ghp_``, ``AIza``...) or holding a run of 16 or more letters and digits (a hex or
    base64 token, a 32-digit account id: masking one of those costs a ``--base-url``
    given again on resume, missing a key costs the key)."""
    from urllib.parse import unquote

    s = unquote(segment)
    if len(s) < _KEY_RUN or any(c.isspace() for c in s):
        return False
    if not (any(c.isdigit() for c in s) and any(c.isalpha() for c in s)):
        return False
    return bool(_KEY_PREFIX.match(s)) or max(
        (len(r) for r in re.findall(r"[A-Za-z0-9]+", s)), default=0) >= _KEY_RUN


def url_secrets(url: str) -> list[str]:
    """The parts of ``url`` that carry a credential (:func:`register_url_secrets`): its
    userinfo (user and password), the values of its credential query parameters
    (:func:`is_secret_parameter`), each path segment that :func:`looks_like_key`, and the
    path from the first such segment on (a key holding ``/`` spans segments), each both
    as given and percent-decoded. Not the fragment: a base URL refuses one
    (it is never sent)."""
    from urllib.parse import parse_qsl, unquote, urlsplit

    try:
        parts = urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:  # not a URL (a bad port): nothing of it is known to be a key
        return []
    out = [user or "", password or ""]
    out += [v for k, v in parse_qsl(parts.query, keep_blank_values=True)
            if is_secret_parameter(k)]
    segments = parts.path.split("/")
    keyed = [i for i, seg in enumerate(segments) if looks_like_key(seg)]
    if keyed:
        out += ["/".join(segments[keyed[0]:]), *(segments[i] for i in keyed)]
    return [v for x in out if x for v in {x, unquote(x)}]


def register_url_secrets(url: str | None) -> None:
    """:func:`register_secret` every part of ``url`` that carries a credential
    (:func:`url_secrets`): a provider and a run's stored configuration call it with the
    base URL before anything can print or store it."""
    for value in url_secrets(url or ""):
        register_secret(value)


def control_characters(value: str) -> bool:
    """Whether ``value`` holds a control character (a key read from a CRLF file ends in
    ``\\r``): such a value cannot go into an HTTP header, and the HTTP stack's own
    error would print it."""
    return any(ord(c) < 0x20 or ord(c) == 0x7F for c in value)


def _secret_values() -> list[str]:
    """The known secrets (registered, and named secret by the environment), longest first."""
    with _lock:
        values = set(_registered)
    for name, value in os.environ.items():
        if _SECRET_ENV.search(name) and len(value.strip()) >= _MIN_SECRET:
            values.add(value)
            values.add(value.strip())
    # Longest first, so a key is not half-masked by a shorter prefix of it.
    return sorted((v for v in values if len(v) >= _MIN_SECRET), key=len, reverse=True)


def _char_forms(c: str) -> str:
    """A pattern for the character ``c`` in every form a text that carries it may show.

    A key reaches a message through encoders that are not ours: JSON (``\\/`` for ``/``,
    ``\\u0073``; escaped again when the JSON is itself quoted), a URL (``%2F``, either
    case), Python's repr (``\\x2f``, ``\\r``) and HTML (``&#47;``, ``&#x2f;``). The match
    ignores case: an echo that upper-cases a key (a header name's case-folding applied to
    the value, a log that shouts) still gives away all but one bit a letter.
    """
    o = ord(c)
    # \xHH reads the same in Python's re and in RE2 (Arrow's regexes), whatever c is.
    literal = c if c.isalnum() or o >= 0x100 else f"\\x{o:02x}"
    forms = [literal if c.isalnum() else r"\\*" + literal]  # JSON's \/ (or \\\/ quoted)
    if o < 0x10000:
        forms.append(rf"\\+u{o:04x}")
    if o < 0x100:
        forms += [rf"%{o:02x}", rf"\\+x{o:02x}", rf"&#0*{o};", rf"&#x0*{o:x};"]
    if c in "\r\n\t":
        forms.append(r"\\+" + {"\r": "r", "\n": "n", "\t": "t"}[c])
    return forms[0] if len(forms) == 1 else "(?:" + "|".join(forms) + ")"


def _secret_pattern() -> str | None:
    """One case-insensitive pattern matching every known secret in any of its encoded
    forms (:func:`_char_forms`); None when there is no known secret."""
    values = _secret_values()
    return _pattern_of(tuple(values)) if values else None


@functools.lru_cache(maxsize=16)  # built per character of every secret: once per set
def _pattern_of(values: tuple[str, ...]) -> str:
    return "(?i)" + "|".join("".join(_char_forms(c) for c in v) for v in values)


@functools.lru_cache(maxsize=16)  # the secrets change rarely
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _redact_with(text: str, pattern: str | None) -> str:
    if pattern is not None:
        text = _compiled(pattern).sub(MASK, text)
    for pat, repl in _PATTERNS:
        text = pat.sub(repl, text)
    return text


def redact(text: str | None) -> str | None:
    """``text`` with every secret (see the module docstring) replaced by ``[REDACTED]``."""
    if not text:
        return text
    return _redact_with(text, _secret_pattern())


def redact_many(texts: Iterable[str | None]) -> list[str | None]:
    """:func:`redact` over many texts (the secret pattern is built once)."""
    pattern = _secret_pattern()
    return [_redact_with(t, pattern) if t else t for t in texts]


def holds_secret(text: str | None) -> bool:
    """Whether ``text`` holds a secret :func:`redact` would mask (a known key in any of
    its encoded forms, an ``Authorization`` value, URL credentials): a reader of the
    user's own files refuses such a value, naming its field, where masking it would
    change the user's data."""
    return bool(text) and redact(text) != text


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
    pattern = _secret_pattern()
    if pattern is not None and pc.any(pc.match_substring_regex(array, pattern)).as_py():
        array = pc.replace_substring_regex(array, pattern, MASK)
    # One guard pass (what every pattern needs) instead of three rewriting
    # passes: almost no bulk text (lessons, completions) holds any of it.
    if not pc.any(pc.match_substring_regex(array, _GUARD)).as_py():
        return array
    for pattern, repl in _PATTERNS:
        array = pc.replace_substring_regex(array, pattern.pattern, repl)
    return array
