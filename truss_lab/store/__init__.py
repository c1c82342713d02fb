"""The DuckDB store: schema and migrations (schema.sql), transactions and bulk appends,
and the one module per record: the run record (_runs), governed memory and events
(_memory, _governed), policy records (_policy_records)."""

from __future__ import annotations

from ._memory import query_memory
from ._runs import summarize_runs
from ._store import SCHEMA_VERSION, Store, open_store

__all__ = [
    "SCHEMA_VERSION",
    "Store",
    "open_store",
    "query_memory",
    "summarize_runs",
]
