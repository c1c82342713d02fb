"""The DuckDB store: schema and migrations (schema.sql), transactions and bulk appends
(_store), the Arrow schemas of its tables (_tables), and the one module per record: the
run record (_runs), governed memory entries, policy records and their events (_governed),
the ingested interchange tables (_ingested)."""

from __future__ import annotations

import typing

from ..core._lazy import attach as _attach

if typing.TYPE_CHECKING:
    # Imported on first use (core/_lazy.py): importing the package stays cheap, so the
    # command line starts at once. These lines are the exports' one list of homes.
    from ._governed import query_memory
    from ._runs import summarize_runs
    from ._store import SCHEMA_VERSION, Store, open_store

__getattr__, __dir__ = _attach(__name__, __file__)

__all__ = [
    "SCHEMA_VERSION",
    "Store",
    "open_store",
    "query_memory",
    "summarize_runs",
]
