"""A TOML file a person wrote (a grid, a price table), read whole: any mistake in it is
one :class:`BadInputError` naming the file and, for a syntax error, the line."""

from __future__ import annotations

import os
import re
import tomllib
from typing import Any

from ._errors import BadInputError
from ._files import read_input

__all__ = ["MAX_TOML_DEPTH", "MAX_TOML_FILE", "parse_toml", "read_toml"]

MAX_TOML_FILE = 1 << 20
"""Most bytes of a TOML file a person writes (a grid, a price table, a configuration, a
prompt file has its own bound): a pipe is read no further, a larger file is refused."""
MAX_TOML_DEPTH = 32
"""Most nested arrays and inline tables in a TOML value: tomllib recurses once per level
and would end in Python's RecursionError a few hundred levels down."""

# tomllib says where in its message only (its error has no lineno before Python 3.14).
_WHERE = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")


def read_toml(path: str | os.PathLike[str], *, what: str,
              limit: int = MAX_TOML_FILE) -> dict[str, Any]:
    """The table of the TOML file at ``path`` (``what`` names it in errors: "the grid
    file"; read by :func:`~truss_lab.core._files.read_input`, at most ``limit`` bytes);
    unreadable, not UTF-8, not TOML or nested deeper than :data:`MAX_TOML_DEPTH` is a
    :class:`BadInputError`."""
    source = str(path)
    try:
        data = read_input(path, what=what, limit=limit)
    except BadInputError as exc:
        if exc.reason == "too_large":
            raise
        raise BadInputError(f"cannot read {what} ({exc.message})", source=source) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInputError(f"{what} is not UTF-8 text (byte {exc.start})",
                            source=source) from None
    return parse_toml(text, source=source, what=what)


def _too_deep(value: Any, depth: int = 0) -> bool:
    if depth > MAX_TOML_DEPTH:
        return True
    items = value.values() if isinstance(value, dict) else value if isinstance(
        value, list) else ()
    return any(_too_deep(v, depth + 1) for v in items)


def parse_toml(text: str, *, source: str, what: str) -> dict[str, Any]:
    """The table of TOML ``text`` (the text of ``source``; ``what`` names it in errors);
    not TOML, or nested deeper than :data:`MAX_TOML_DEPTH`, is a :class:`BadInputError`."""
    deep = BadInputError(f"{what} nests tables or arrays more than {MAX_TOML_DEPTH} levels "
                         "deep", source=source, reason="too_deep")
    try:
        data = tomllib.loads(text)
    except RecursionError:  # deeper than tomllib can recurse
        raise deep from None
    except tomllib.TOMLDecodeError as exc:
        m = _WHERE.search(str(exc))
        msg = _WHERE.sub("", str(exc)) if m else str(exc)
        raise BadInputError(f"not TOML: {msg}" + (f" (column {m.group(2)})" if m else ""),
                            source=source, line=int(m.group(1)) if m else None) from None
    if _too_deep(data):
        raise deep
    return data
