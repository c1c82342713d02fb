"""The DuckDB store: schema and migrations (schema.sql), transactions and bulk appends
(_store), the Arrow schemas of its tables (_tables), and the one module per record: the
run record (_runs), governed memory entries, policy records and their events (_governed),
the ingested interchange tables (_ingested)."""

from __future__ import annotations

from ._governed import query_memory
from ._runs import summarize_runs
from ._store import SCHEMA_VERSION, Store, open_store

__all__ = [
    "SCHEMA_VERSION",
    "Store",
    "open_store",
    "query_memory",
    "summarize_runs",
]
