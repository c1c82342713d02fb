"""How a name enters a SQL statement (:func:`quote_ident`, the store's one way) and
how the store asks its catalog about one (:func:`has_table`, :func:`table_columns`).

Its own module so that every store module can use it, the ones the store's connection
class imports (``_claims``) too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core._errors import StoreError

if TYPE_CHECKING:
    import duckdb

__all__ = ["has_table", "quote_ident", "table_columns"]


def quote_ident(name: str) -> str:
    """``name`` as a quoted SQL identifier (``"`` doubled): the one way a name that
    is not a literal of our own SQL (a table, a column, a database named after a
    file) enters a statement. Values are never formatted in: they are bound (``?``)."""
    if "\x00" in name:
        raise StoreError(f"an identifier cannot hold a NUL character: {name!r}")
    return '"' + name.replace('"', '""') + '"'


# The catalog of this database alone (duckdb_tables(), duckdb_columns() filtered to
# current_database()): information_schema (and those functions unfiltered) reads every
# attached catalog, the system's included, which cost about a third of a store's
# opening (17 of 53 ms, a fresh process on a migrated file).


def has_table(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    """Whether the connection's database has table ``name`` in its current schema."""
    return bool(con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() "
        "AND schema_name = current_schema() AND table_name = ?",
        [name]).fetchall()[0][0])


def table_columns(con: duckdb.DuckDBPyConnection, name: str) -> list[str]:
    """The column names of table ``name`` of the connection's database, in order."""
    return [r[0] for r in con.execute(
        "SELECT column_name FROM duckdb_columns() WHERE database_name = current_database() "
        "AND schema_name = current_schema() AND table_name = ? ORDER BY column_index",
        [name]).fetchall()]
