"""A TOML file a person wrote (a grid, a price table), read whole: any mistake in it is
one :class:`BadInputError` naming the file and, for a syntax error, the line."""

from __future__ import annotations

import os
import re
import tomllib
from typing import Any

from ._errors import BadInputError

__all__ = ["read_toml"]

# tomllib says where in its message only (its error has no lineno before Python 3.14).
_WHERE = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")


def read_toml(path: str | os.PathLike[str], *, what: str) -> dict[str, Any]:
    """The table of the TOML file at ``path`` (``what`` names it in errors: "the grid
    file"); unreadable, not UTF-8 or not TOML is a :class:`BadInputError`."""
    source = str(path)
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except OSError as exc:
        raise BadInputError(f"cannot read {what} ({exc.strerror})", source=source) from None
    except UnicodeDecodeError as exc:
        raise BadInputError(f"{what} is not UTF-8 text (byte {exc.start})",
                            source=source) from None
    except tomllib.TOMLDecodeError as exc:
        m = _WHERE.search(str(exc))
        msg = _WHERE.sub("", str(exc)) if m else str(exc)
        raise BadInputError(f"not TOML: {msg}" + (f" (column {m.group(2)})" if m else ""),
                            source=source, line=int(m.group(1)) if m else None) from None
