"""Bringing data in: strict readers of recorded completions, gold labels, reference
lessons and match labels (bad lines named, good lines land), their JSON Schemas, and
ingest into the store."""

from __future__ import annotations

import typing

from ..core._lazy import attach as _attach

if typing.TYPE_CHECKING:
    # Imported on first use (core/_lazy.py): importing the package stays cheap, so the
    # command line starts at once. These lines are the exports' one list of homes.
    from ._completions import read_completions, write_completions
    from ._ingest import (
        IngestReport,
        ingest_completions,
        ingest_labels,
        ingest_match_labels,
        ingest_references,
    )
    from ._labels import read_labels, write_label_queue
    from ._match_labels import read_match_labels, write_match_queue
    from ._references import read_references
    from ._schemas import json_schema
    from ._verdict_records import (
        BadRecordsError,
        VerdictRecords,
        read_verdict_records,
        sign_verdicts,
    )

__getattr__, __dir__ = _attach(__name__, __file__)

__all__ = [
    "BadRecordsError",
    "IngestReport",
    "VerdictRecords",
    "ingest_completions",
    "ingest_labels",
    "ingest_match_labels",
    "ingest_references",
    "json_schema",
    "read_completions",
    "read_labels",
    "read_match_labels",
    "read_references",
    "read_verdict_records",
    "sign_verdicts",
    "write_completions",
    "write_label_queue",
    "write_match_queue",
]
