"""The registered prompt templates (``prompts``, Formats §6): one row per prompt
version, written once; its columns are :data:`~truss_lab.store._tables.PROMPTS_SCHEMA`
(``SELECT *`` reads them in that order: tests/test_tables.py checks it). The SQL on
the table is here; the templates themselves (rendering, placeholders, the built-in
ones) are :mod:`truss_lab.extract._prompts`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from ..core._models import utcnow
from ._sql import has_table
from ._store import Store
from ._tables import PROMPTS_SCHEMA

__all__ = ["add_prompt", "stored_prompt", "stored_prompts"]


def _table_exists(store: Store) -> bool:
    # A read-only open of a database from before migration 010 has no such table.
    return has_table(store.con, "prompts")


def stored_prompt(store: Store, name: str) -> dict[str, Any] | None:
    """The ``prompts`` row of version ``name`` (column -> value), or None."""
    if not _table_exists(store):
        return None
    rows = store.con.execute("SELECT * FROM prompts WHERE name = ?", [name]).fetchall()
    return dict(zip(PROMPTS_SCHEMA.names, rows[0], strict=True)) if rows else None


def stored_prompts(store: Store) -> list[dict[str, Any]]:
    """Every registered prompt (column -> value), by name."""
    if not _table_exists(store):
        return []
    rows = store.con.execute("SELECT * FROM prompts ORDER BY name").fetchall()
    return [dict(zip(PROMPTS_SCHEMA.names, r, strict=True)) for r in rows]


def add_prompt(store: Store, row: Mapping[str, Any]) -> bool:
    """Store one prompt row (the columns but ``registered_at``) unless its name is
    stored already; True when it landed. The caller checks that a stored name has
    the same text (:func:`truss_lab.extract._prompts.register_prompt`)."""
    cols = {c: [row[c]] for c in PROMPTS_SCHEMA.names if c != "registered_at"}
    cols["registered_at"] = [utcnow()]
    return store.append("prompts", pa.table(cols, schema=PROMPTS_SCHEMA), key=["name"]) > 0
