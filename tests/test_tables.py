"""The store's Arrow schemas (store/_tables.py) agree with the tables schema.sql makes."""

from __future__ import annotations

import pyarrow as pa
import pytest

from truss_lab.journal._spec import ENTRY_FIELDS
from truss_lab.store._store import Store
from truss_lab.store._tables import TABLE_SCHEMAS

# An Arrow string may land in a JSON column (the journal's payload, a policy's settings).
_SAME = {("VARCHAR", "JSON")}


@pytest.fixture(scope="module")
def tables() -> dict[str, list[tuple[str, str]]]:
    """Per table of a freshly migrated store: its (column, DuckDB type) list, in order."""
    with Store(":memory:") as s:
        rows = s.con.execute(
            "SELECT table_name, column_name, data_type FROM duckdb_columns() "
            "WHERE schema_name = 'main' ORDER BY table_name, column_index"
        ).fetchall()
    out: dict[str, list[tuple[str, str]]] = {}
    for table, column, dtype in rows:
        out.setdefault(table, []).append((column, dtype))
    return out


def _duckdb_types(schema: pa.Schema) -> list[tuple[str, str]]:
    """(column, DuckDB type) of each Arrow field, as DuckDB reads an empty table of it."""
    with Store(":memory:") as s:
        s.con.register("_arrow", schema.empty_table())
        return [(r[0], r[1]) for r in s.con.execute("DESCRIBE SELECT * FROM _arrow").fetchall()]


@pytest.mark.parametrize("table", sorted(TABLE_SCHEMAS))
def test_arrow_schema_matches_schema_sql(
    table: str, tables: dict[str, list[tuple[str, str]]]
) -> None:
    want = tables[table]
    got = _duckdb_types(TABLE_SCHEMAS[table])
    # The schema is the table's first columns, in order (later migrations add columns
    # that their own writers fill): names and order first, then each type.
    assert [c for c, _ in got] == [c for c, _ in want[: len(got)]]
    for (col, arrow_type), (_, sql_type) in zip(got, want, strict=False):
        assert arrow_type == sql_type or (arrow_type, sql_type) in _SAME, (
            f"{table}.{col}: Arrow gives {arrow_type}, schema.sql has {sql_type}"
        )


def test_whole_tables_are_whole(tables: dict[str, list[tuple[str, str]]]) -> None:
    """Every schema covers its whole table except completions, whose later columns
    (config_hash, run_id, sample_index) their writers append."""
    partial = {t for t, s in TABLE_SCHEMAS.items() if len(s) != len(tables[t])}
    # A schema that covers only its table's first columns says so in its docstring
    # (who fills the rest) and is listed here.
    assert partial == {"completions"}, f"schemas covering part of their table: {partial}"


def test_journal_table_holds_the_format_fields_in_order() -> None:
    """The journal tables' first columns are the Formats §1 fields, in their order:
    the store writes and reads entries by those names (journal/_ledger, journal/_table)."""
    assert tuple(TABLE_SCHEMAS["journal"].names[: len(ENTRY_FIELDS)]) == ENTRY_FIELDS
