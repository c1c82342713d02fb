"""Directives that write reference pages from the code, so the site cannot drift from it.

- ``truss-schema NAME``: the JSON Schema of interchange format ``NAME`` as
  ``truss-lab schema NAME`` prints it (``truss_lab.ingest.json_schema``).
- ``truss-tables``: every table and view of a freshly migrated database with its
  ``COMMENT ON`` text, and each column's type and comment, read from DuckDB's catalog.
"""

from __future__ import annotations

import json
from typing import Any

from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx.application import Sphinx


class SchemaDirective(Directive):
    required_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        from truss_lab.ingest import json_schema

        text = json.dumps(json_schema(self.arguments[0]), indent=2, ensure_ascii=False)
        block = nodes.literal_block(text, text, language="json")
        return [block]


def _catalog() -> list[dict[str, Any]]:
    import truss_lab as tl

    with tl.Store(":memory:") as store:
        rels = store.sql(
            "SELECT table_name, 'table', comment FROM duckdb_tables() WHERE schema_name = 'main' "
            "UNION ALL SELECT view_name, 'view', comment FROM duckdb_views() "
            "WHERE NOT internal AND schema_name = 'main' ORDER BY 1").fetchall()
        cols = store.sql(
            "SELECT table_name, column_name, data_type, comment FROM duckdb_columns() "
            "WHERE schema_name = 'main' ORDER BY table_name, column_index").fetchall()
    by_rel: dict[str, list[tuple[str, str, str]]] = {}
    for rel, col, typ, comment in cols:
        by_rel.setdefault(rel, []).append((col, typ, comment or ""))
    return [{"name": n, "kind": k, "comment": c or "", "columns": by_rel.get(n, [])}
            for n, k, c in rels]


def _table(rows: list[tuple[str, str, str]]) -> nodes.table:
    table = nodes.table(classes=["truss-columns"])
    group = nodes.tgroup(cols=3)
    table += group
    for width in (20, 15, 65):
        group += nodes.colspec(colwidth=width)
    head = nodes.thead()
    group += head
    body = nodes.tbody()
    group += body
    for target, cells, literal in ((head, ("column", "type", "comment"), False),
                                   *((body, r, True) for r in rows)):
        row = nodes.row()
        for i, cell in enumerate(cells):
            entry = nodes.entry()
            para = nodes.paragraph()
            para += nodes.literal(cell, cell) if literal and i < 2 else nodes.Text(cell)
            entry += para
            row += entry
        target += row
    return table


class TablesDirective(Directive):
    has_content = False

    def run(self) -> list[nodes.Node]:
        out: list[nodes.Node] = []
        for rel in _catalog():
            anchor = f"table-{rel['name'].replace('_', '-')}"
            title = nodes.rubric(text=f"{rel['name']} ({rel['kind']})", ids=[anchor])
            out += [title, nodes.paragraph(text=rel["comment"]), _table(rel["columns"])]
        return out


def _plain_help(app: Sphinx, ctx: Any, lines: list[str]) -> None:
    """A command's help is plain text for a terminal; sphinx-click reads it as
    reStructuredText, where ``*_low`` would open an emphasis: escape the asterisks of
    the help text (not of the directives sphinx-click writes around it)."""
    for i, line in enumerate(lines):
        if not line.lstrip().startswith((".. ", ":")):
            lines[i] = line.replace("*", "\\*")


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("truss-schema", SchemaDirective)
    app.add_directive("truss-tables", TablesDirective)
    for event in ("description", "options", "arguments", "epilog"):
        app.connect(f"sphinx-click-process-{event}", _plain_help)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
