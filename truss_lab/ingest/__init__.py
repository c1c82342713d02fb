"""Bringing data in: strict readers of recorded completions and gold labels (bad lines
named, good lines land), their JSON Schemas, and ingest into the store."""

from __future__ import annotations

from ._completions import read_completions, write_completions
from ._ingest import IngestReport, ingest_completions, ingest_labels
from ._labels import read_labels
from ._schemas import json_schema

__all__ = [
    "IngestReport",
    "ingest_completions",
    "ingest_labels",
    "json_schema",
    "read_completions",
    "read_labels",
    "write_completions",
]
