"""How a name enters a SQL statement: :func:`quote_ident`, the store's one way.

Its own module so that every store module can use it, the ones the store's connection
class imports (``_claims``) too.
"""

from __future__ import annotations

from ..core._errors import StoreError

__all__ = ["quote_ident"]


def quote_ident(name: str) -> str:
    """``name`` as a quoted SQL identifier (``"`` doubled): the one way a name that
    is not a literal of our own SQL (a table, a column, a database named after a
    file) enters a statement. Values are never formatted in: they are bound (``?``)."""
    if "\x00" in name:
        raise StoreError(f"an identifier cannot hold a NUL character: {name!r}")
    return '"' + name.replace('"', '""') + '"'
