"""The Arrow column lists of the store's tables: the one home of every schema a writer
appends with, beside ``schema.sql`` (tests/test_tables.py checks each one against the
migrated tables: column names, order and types).

A schema here is what a writer appends, in the table's column order. Most cover the
whole table; a few cover its first columns only, because the later ones were added by
later migrations and are filled by one writer each (or take their SQL ``DEFAULT``): the
docstring says so. The governed tables (memory entries, policy records, events) map
each column onto a field of the pydantic models of :mod:`truss_lab.core._models`;
:mod:`truss_lab.store._governed` checks those maps against the models at import.
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa

__all__ = [
    "CANDIDATES_SCHEMA",
    "COMPLETIONS_SCHEMA",
    "EVENT_COLUMNS",
    "EVENT_SCHEMA",
    "JOURNAL_SCHEMA",
    "LABELS_SCHEMA",
    "MATCH_LABELS_SCHEMA",
    "MEMORY_COLUMNS",
    "MEMORY_SCHEMA",
    "POLICY_COLUMNS",
    "POLICY_SCHEMA",
    "PROMPTS_SCHEMA",
    "RECORDING_KEY",
    "REFERENCES_SCHEMA",
    "REF_TYPE",
    "RUN_CHUNKS_SCHEMA",
    "RUN_VERDICTS_SCHEMA",
    "TABLE_SCHEMAS",
    "TS",
    "VERDICT_ERRORS_SCHEMA",
]

TS = pa.timestamp("us", tz="UTC")
"""Every ``TIMESTAMPTZ`` column: microseconds, UTC."""
REF_TYPE = pa.struct([("seq", pa.int64()), ("hash", pa.string())])
"""A LedgerRef as an Arrow struct (``STRUCT(seq BIGINT, hash VARCHAR)``)."""


# -- the journal ------------------------------------------------------------------------

JOURNAL_SCHEMA = pa.schema(
    [
        ("seq", pa.int64()),
        ("kind", pa.string()),
        ("ts", pa.string()),
        ("key_id", pa.string()),
        ("payload", pa.string()),  # JSON: the canonical text
        ("prev_hash", pa.string()),
        ("hash", pa.string()),
        ("signature", pa.string()),
        ("recorded_at", TS),
    ]
)
"""``journal`` and ``lab_journal`` (the same columns): the eight Formats §1 fields in
their documented order, then when this database received the entry."""


# -- the unchained formats (ingest) -------------------------------------------------------

COMPLETIONS_SCHEMA = pa.schema(
    [
        ("verdict_hash", pa.string()),
        ("extractor_id", pa.string()),
        ("model", pa.string()),
        ("prompt_version", pa.string()),
        ("request_hash", pa.string()),
        ("text", pa.string()),
        ("latency_ms", pa.float64()),
        ("prompt_tokens", pa.int64()),
        ("completion_tokens", pa.int64()),
        ("source", pa.string()),
        ("recorded_at", TS),
    ]
)
"""The first columns of ``completions``: a recorded call (Formats §2) and where it came
from. The later ones (``config_hash``, ``run_id``, ``sample_index``, ``judged_run_id``,
migrations 008, 009 and 013) are appended by their writers: the ingest adds
``config_hash``; a live recording adds all four."""

RECORDING_KEY = ("run_id", "judged_run_id", "verdict_hash", "extractor_id", "sample_index")
"""What identifies a live recording in ``completions``: a recording belongs to the run
that paid for the call (migration 011), so a second live run with the same settings
keeps its own answers beside the first run's. A judge's or judge matcher's calls belong
to no extraction run (``run_id`` NULL) but to the judge run on one (``judged_run_id``,
migration 013: the judge on a second run of the same extractor keeps its own calls);
an extractor's calls have ``judged_run_id`` NULL. A file's rows are keyed by the ingest
(``verdict_hash``, ``extractor_id``)."""

LABELS_SCHEMA = pa.schema(
    [
        ("verdict_hash", pa.string()),
        ("extractor_id", pa.string()),
        ("lesson_index", pa.int32()),
        ("useful", pa.int8()),
        ("annotator", pa.string()),
        ("source", pa.string()),
        ("labelled_at", TS),
    ]
)
"""``labels``: a gold label (Formats §3), where it came from and when it was loaded."""

REFERENCES_SCHEMA = pa.schema(
    [
        ("verdict_hash", pa.string()),
        ("reference_id", pa.string()),
        ("text", pa.string()),
        ("evidence", pa.list_(pa.string())),
        ("annotator", pa.string()),
        ("source", pa.string()),
        ("annotated_at", TS),
    ]
)
"""``reference_lessons``: a reference lesson (Formats §4), its source and load time."""

MATCH_LABELS_SCHEMA = pa.schema(
    [
        ("verdict_hash", pa.string()),
        ("extractor_id", pa.string()),
        ("lesson_index", pa.int32()),
        ("reference_id", pa.string()),
        ("annotator", pa.string()),
        ("inclusion_probability", pa.float64()),
        ("source", pa.string()),
        ("labelled_at", TS),
    ]
)
"""``match_labels``: a person's match of a lesson to a reference (Formats §5), its
source and load time."""


# -- governed records, mapped onto the models ---------------------------------------------
# column -> (model field path, Arrow type). A path is dotted through nested models.

MEMORY_COLUMNS: dict[str, tuple[str, pa.DataType]] = {
    "entry_id": ("entry_id", pa.string()),
    "kind": ("kind", pa.string()),
    "trust": ("trust", pa.string()),
    "text": ("text", pa.string()),
    "salience": ("salience", pa.float64()),
    "evidence": ("evidence", pa.list_(pa.string())),
    "lesson_index": ("lesson_index", pa.int32()),
    "produced_by_seq": ("provenance.produced_by.seq", pa.int64()),
    "produced_by_hash": ("provenance.produced_by.hash", pa.string()),
    "sources": ("provenance.sources", pa.list_(REF_TYPE)),
    "extractor_id": ("provenance.extractor_id", pa.string()),
    "run_id": ("provenance.run_id", pa.string()),
    "prompt_version": ("provenance.prompt_version", pa.string()),
    "created_at": ("provenance.created_at", TS),
    "superseded_by": ("superseded_by", pa.string()),
}

POLICY_COLUMNS: dict[str, tuple[str, pa.DataType]] = {
    "record_id": ("record_id", pa.string()),
    "policy_id": ("policy.policy_id", pa.string()),
    "target": ("policy.target", pa.string()),
    "version": ("policy.version", pa.int32()),
    "settings": ("policy.settings", pa.string()),  # JSON text
    "trust": ("trust", pa.string()),
    "produced_by_seq": ("provenance.produced_by.seq", pa.int64()),
    "produced_by_hash": ("provenance.produced_by.hash", pa.string()),
    "sources": ("provenance.sources", pa.list_(REF_TYPE)),
    "extractor_id": ("provenance.extractor_id", pa.string()),
    "run_id": ("provenance.run_id", pa.string()),
    "created_at": ("provenance.created_at", TS),
    "supersedes": ("supersedes", pa.string()),
    "superseded_by": ("superseded_by", pa.string()),
}

# The events table is the AgentEvent union flattened: subject_id is the entry
# or record id, kind the entry kind or the policy target; event_id derives from it.
EVENT_COLUMNS: dict[str, tuple[str, pa.DataType]] = {
    "event_id": ("", pa.string()),
    "type": ("type", pa.string()),
    "subject_id": ("entry_id|record_id", pa.string()),
    "kind": ("kind|target", pa.string()),
    "trust": ("trust", pa.string()),
    "produced_by_seq": ("produced_by.seq", pa.int64()),
    "produced_by_hash": ("produced_by.hash", pa.string()),
    "run_id": ("run_id", pa.string()),
    "ts": ("ts", TS),
}


def _schema(columns: Mapping[str, tuple[str, pa.DataType]]) -> pa.Schema:
    return pa.schema([(c, t) for c, (_, t) in columns.items()])


MEMORY_SCHEMA = _schema(MEMORY_COLUMNS)
"""Arrow schema of ``memory_entries`` (the columns of :class:`MemoryEntry`)."""
POLICY_SCHEMA = _schema(POLICY_COLUMNS)
"""Arrow schema of ``policy_records`` (the columns of :class:`PolicyRecord`)."""
EVENT_SCHEMA = _schema(EVENT_COLUMNS)
"""Arrow schema of ``events`` (:class:`MemoryWrite` and :class:`PolicyWrite`)."""


# -- what an extraction run writes ----------------------------------------------------------

CANDIDATES_SCHEMA = pa.schema(
    [
        ("candidate_id", pa.string()),
        ("run_id", pa.string()),
        ("verdict_seq", pa.int64()),
        ("verdict_hash", pa.string()),
        ("extractor_id", pa.string()),
        ("lesson_index", pa.int32()),
        ("text", pa.string()),
        ("salience", pa.float64()),
        ("evidence", pa.list_(pa.string())),
        ("valid", pa.bool_()),
        ("drop_reason", pa.string()),
        ("score", pa.float64()),
        ("scorer", pa.string()),
        ("passed_gate", pa.bool_()),
        ("entry_id", pa.string()),
        ("sample_index", pa.int32()),
        ("self_consistency", pa.float64()),
    ]
)
"""Arrow schema of ``candidates``: every lesson a run proposed, with the gate's verdict."""
VERDICT_ERRORS_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("verdict_seq", pa.int64()),
        ("verdict_hash", pa.string()),
        ("stage", pa.string()),
        ("reason", pa.string()),
        ("message", pa.string()),
        ("sample_index", pa.int32()),
    ]
)
"""Arrow schema of ``verdict_errors``: a verdict whose prompt, provider call or parse failed."""
RUN_VERDICTS_SCHEMA = pa.schema(
    [("run_id", pa.string()), ("verdict_seq", pa.int64()), ("verdict_hash", pa.string())]
)
"""Arrow schema of ``run_verdicts``: the verdicts a run processed."""
RUN_CHUNKS_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("chunk_index", pa.int32()),
        ("first_seq", pa.int64()),
        ("last_seq", pa.int64()),
        ("n_verdicts", pa.int64()),
        ("n_candidates", pa.int64()),
        ("n_lessons", pa.int64()),
        ("n_lessons_new", pa.int64()),
        ("n_errors", pa.int64()),
        ("provider_calls", pa.int64()),
        ("finished_at", TS),
    ]
)
"""Arrow schema of ``run_chunks``: each chunk a batch run wrote, with its counts."""


# -- registered prompt templates ------------------------------------------------------------

PROMPTS_SCHEMA = pa.schema(
    [
        ("name", pa.string()),
        ("kind", pa.string()),
        ("description", pa.string()),
        ("system_text", pa.string()),
        ("user_template", pa.string()),
        ("template_hash", pa.string()),
        ("source", pa.string()),
        ("registered_at", TS),
    ]
)
"""Arrow schema of ``prompts``: a prompt template registered from a file (Formats §6)."""


# -- every schema by table ----------------------------------------------------------------

TABLE_SCHEMAS: dict[str, pa.Schema] = {
    "journal": JOURNAL_SCHEMA,
    "lab_journal": JOURNAL_SCHEMA,
    "completions": COMPLETIONS_SCHEMA,
    "labels": LABELS_SCHEMA,
    "reference_lessons": REFERENCES_SCHEMA,
    "match_labels": MATCH_LABELS_SCHEMA,
    "memory_entries": MEMORY_SCHEMA,
    "policy_records": POLICY_SCHEMA,
    "events": EVENT_SCHEMA,
    "candidates": CANDIDATES_SCHEMA,
    "verdict_errors": VERDICT_ERRORS_SCHEMA,
    "run_verdicts": RUN_VERDICTS_SCHEMA,
    "run_chunks": RUN_CHUNKS_SCHEMA,
    "prompts": PROMPTS_SCHEMA,
}
"""Table name -> the Arrow schema its writers append with (the table's first columns,
in order; the test checks each against ``schema.sql``)."""
