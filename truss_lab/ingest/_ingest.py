"""Loading the unchained formats (completions, labels, reference lessons, match labels)
into the store.

Bad lines are reported with their file, line and field; the good ones land
in one transaction. A row whose key is already stored with other content is
reported as a conflict and never overwrites what is there.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pyarrow as pa

from ..core._canonical import canonical_digest
from ..core._clock import utcnow
from ..core._errors import BadInputError
from ..core._gc import full_collections_deferred
from ..store._ingested import label_problems, reference_problems, stored_conflicts
from ..store._runs import record_extractor_config
from ..store._store import Store
from ..store._tables import (
    COMPLETIONS_SCHEMA,
    LABELS_SCHEMA,
    MATCH_LABELS_SCHEMA,
    REFERENCES_SCHEMA,
)
from ._completions import read_completions
from ._fields import INCLUSION
from ._labels import LABEL_FIELDS, LABEL_KEY, read_labels
from ._match_labels import MATCH_LABEL_KEY, check_match_labels, read_match_labels
from ._references import REFERENCE_KEY, read_references
from ._tables_in import source_name

__all__ = [
    "COMPLETIONS_KEY",
    "FILE_TO_TABLE",
    "IngestReport",
    "append_labels",
    "ingest_completions",
    "ingest_labels",
    "ingest_match_labels",
    "ingest_references",
    "land_completions",
]

@dataclass
class IngestReport:
    """What an ingest of completions, labels or reference lessons did."""

    source: str
    """The file (or ``<records>``) read."""
    rows_read: int
    """Rows (lines) read, bad and blank ones included."""
    rows_added: int
    """Rows written."""
    rows_present: int
    """Rows whose key was stored already with the same content. A row stored with other
    content is a conflict: kept as stored, reported among ``errors``, not counted here."""
    errors: list[BadInputError] = field(default_factory=list)
    """One per bad row (naming its line and field) and per conflict."""
    warnings: list[str] = field(default_factory=list)
    """Rows that landed but point at nothing known (labels: an unknown verdict, a
    lesson_index beyond the completion's lessons, which ``audit`` flags too; reference
    lessons: an unknown verdict)."""
    rows_blank: int = 0
    """Rows of a labelling queue file still without a label (of a match queue file: of a
    verdict still wholly unanswered): skipped, not errors (counted in ``rows_read``)."""

    @property
    def header_ok(self) -> bool:
        """False when the file's header (or its emptiness) stopped the read."""
        return not any(e.reason == "bad_header" for e in self.errors)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "rows_read": self.rows_read,
            "rows_added": self.rows_added,
            "rows_present": self.rows_present,
            "rows_blank": self.rows_blank,
            "errors": [str(e) for e in self.errors],
            "warnings": list(self.warnings),
        }


# The interchange files (Formats §2, §3) and their frames call the extractor id
# ``extractor``; every table calls it ``extractor_id``. This is the one mapping.
FILE_TO_TABLE: dict[str, str] = {"extractor": "extractor_id"}
COMPLETIONS_KEY = ["verdict_hash", "extractor_id"]
LABELS_KEY = [FILE_TO_TABLE.get(k, k) for k in LABEL_KEY]


def _frame(df: pd.DataFrame, schema: pa.Schema, extra: dict[str, Any]) -> pa.Table:
    """Table rows of ``schema`` from a §2/§3 frame (file names mapped) plus ``extra``."""
    df = df.rename(columns=FILE_TO_TABLE)
    cols = {}
    n = len(df)
    for f in schema:
        if f.name in extra:
            cols[f.name] = pa.array([extra[f.name]] * n, f.type)
        elif f.name in df.columns:
            cols[f.name] = pa.array(df[f.name].astype(object).where(df[f.name].notna(), None),
                                    f.type)
        else:
            cols[f.name] = pa.nulls(n, f.type)
    return pa.table(cols, schema=schema)


def _conflicts(store: Store, table: str, new: pa.Table, key: list[str], value: list[str],
               source: str) -> tuple[int, list[BadInputError]]:
    """The one conflict report of every unchained input (completions, labels, reference
    lessons): rows whose key is stored already with other content are kept as stored,
    each named by its key (the first :data:`~truss_lab.store._ingested.CONFLICTS_NAMED`,
    then one line for the rest). Returns (rows in conflict, errors); ``truss-lab ingest``
    exits 3 on them."""
    n, keys = stored_conflicts(store, table, new, key, value)
    errors = [
        BadInputError(
            f"{dict(zip(key, r, strict=True))} is already stored with different content; "
            "kept the stored row",
            source=source, reason="conflict",
        )
        for r in keys
    ]
    if n > len(keys):
        errors.append(BadInputError(
            f"{n - len(keys)} more row(s) already stored with different content; kept the "
            "stored rows", source=source, reason="conflict"))
    return n, errors


def _config_hashes(df: pd.DataFrame) -> tuple[list[str | None], dict[str, tuple[str, str]]]:
    """Per row, the hash of its §2 ``config`` (:func:`canonical_digest` of the canonical
    JSON text the reader gives, as ``ExtractorConfig.config_hash``), and per extractor the
    (hash, config) to keep in ``extractor_configs``."""
    configs = df["config"].astype(object).where(df["config"].notna(), None).tolist()
    hashes = [None if c is None else canonical_digest(c) for c in configs]
    kept: dict[str, tuple[str, str]] = {}
    for ext, h, c in zip(df["extractor"].tolist(), hashes, configs, strict=True):
        if h is not None:
            kept.setdefault(ext, (h, c))
    return hashes, kept


@full_collections_deferred()  # a large file's rows are held until written: core/_gc.py
def ingest_completions(store: Store, path: str | os.PathLike[str] | pd.DataFrame) -> IngestReport:
    """Load Formats §2 completions: a JSONL file, a CSV or Parquet file or a DataFrame
    of the same fields (:func:`~truss_lab.ingest._completions.read_completions`; a
    table's errors name its rows). The extractor configurations the rows carry are kept
    too (``extractor_configs``), so ``replay:EXTRACTOR_ID`` rebuilds the recorded
    requests from the database as from the file.

    Parameters
    ----------
    store : Store
        The database written.
    path : path or DataFrame
        The completions.

    Returns
    -------
    IngestReport
        Rows added, already present, and an error per bad row (the good ones land).

    Raises
    ------
    BadInputError
        An unreadable file; a configuration conflicting with the stored one.

    See Also
    --------
    truss_lab.ingest.read_completions : the reader, without the store.

    Examples
    --------
    >>> import pandas as pd, truss_lab as tl
    >>> store = tl.Store(":memory:")
    >>> rep = tl.ingest_completions(store, pd.DataFrame([{"verdict_hash": "0" * 64,
    ...     "extractor": "mine", "model": "m", "prompt_version": "p", "text": "{}"}]))
    >>> rep.rows_added
    1
    """
    source = source_name(path)
    df, errors = read_completions(path)
    return land_completions(store, df, errors, source)


def land_completions(store: Store, df: pd.DataFrame, errors: list[BadInputError], source: str,
                     *, row_sources: list[str] | None = None) -> IngestReport:
    """Write completions :func:`~truss_lab.ingest._completions.read_completions` read
    (``df``, its ``errors``) and their extractor configurations, in one transaction: what
    every completions ingest ends with. ``row_sources``: each row's own ``source`` (a
    Batch output's request ids), default ``source``."""
    hashes, configs = _config_hashes(df)
    new = _frame(df, COMPLETIONS_SCHEMA, {"recorded_at": utcnow()})
    new = new.set_column(new.schema.get_field_index("source"), "source",
                         pa.array(row_sources or [source] * len(df), pa.string()))
    new = new.append_column("config_hash", pa.array(hashes, pa.string()))
    key = COMPLETIONS_KEY
    n_read = len(df) + len(errors)
    n_conflicts, conflicts = _conflicts(store, "completions", new, key,
                                        ["text", "request_hash"], source)
    with store.transaction():
        for ext, (h, config) in sorted(configs.items()):
            try:
                record_extractor_config(store, ext, h, json.loads(config))
            except BadInputError as exc:
                raise BadInputError(str(exc.message), source=source, field="config",
                                    reason="config_conflict") from None
        added = store.append("completions", new, key=key)
    problems = reference_problems(store, df["verdict_hash"].astype(object).tolist())
    warnings = [f"{source}: verdict {r.verdict_hash}, {r.n_references} reference(s): "
                f"{r.problem}" for r in problems.itertuples()]
    return IngestReport(source, n_read, added, len(df) - added - n_conflicts,
                        [*errors, *conflicts], warnings)


@full_collections_deferred()  # a large file's rows are held until written: core/_gc.py
def ingest_labels(store: Store, path: str | os.PathLike[str] | pd.DataFrame) -> IngestReport:
    """Load a Formats §3 labels CSV, or a labelling queue file (``truss-lab queue``)
    whose rows left without a label are skipped and counted (``rows_blank``).

    A bad row is reported by row and field and the good ones land; a label naming a
    verdict the journal does not hold, or a lesson beyond its completion's, lands with
    a warning (and ``audit`` flags it until the verdict is there).

    Parameters
    ----------
    store : Store
        The database written.
    path : str or os.PathLike or pandas.DataFrame
        The labels CSV, a labelling queue file, or a frame of the same columns.

    Returns
    -------
    truss_lab.ingest.IngestReport
        Rows read, added, already present, skipped blank, an error per bad row or
        conflict, and the warnings.

    Raises
    ------
    BadInputError
        An unreadable file, or a header that is not the labels' or the queue's.

    See Also
    --------
    ingest_completions : The completions the labels name.
    LabellingWidget : Labels from a notebook.

    Examples
    --------
    >>> rep = tl.ingest_labels(store, tl.SAMPLE_DIR / "labels.csv")  # in store already
    >>> rep.rows_added, rep.rows_present > 0, rep.errors
    (0, True, [])
    """
    source = source_name(path)
    df, errors = read_labels(path)
    blank = int(df.attrs.get("blank_rows", 0))
    n_read = len(df) + len(errors) + blank
    added, n_conflicts, conflicts = _append_labels(store, df, source)
    problems = label_problems(store, df.rename(columns=FILE_TO_TABLE))
    warnings = [f"{source}: verdict {r.verdict_hash}, extractor {r.extractor_id!r}, lesson_index "
                f"{r.lesson_index}: {r.problem}" for r in problems.itertuples()]
    return IngestReport(source, n_read, added, len(df) - added - n_conflicts,
                        [*errors, *conflicts], warnings, rows_blank=blank)


def append_labels(
    store: Store, df: pd.DataFrame, *, source: str
) -> tuple[int, list[BadInputError]]:
    """Append gold-label rows to the ``labels`` table: the one writer of label rows.

    ``df`` has the Formats §3 columns (``verdict_hash``, ``extractor``,
    ``lesson_index``, ``useful``, optional ``annotator``: missing or null is
    stored as ``""``); each row is stamped with ``source`` and the time and its
    ``extractor`` stored as ``extractor_id``. A row
    whose key (verdict_hash, extractor, lesson_index, annotator) is stored
    already is never overwritten; one stored with a different ``useful`` is
    reported as a conflict. Returns (rows added, conflicts).
    """
    added, _, conflicts = _append_labels(store, df, source)
    return added, conflicts


def _append_labels(store: Store, df: pd.DataFrame,
                   source: str) -> tuple[int, int, list[BadInputError]]:
    """:func:`append_labels`, with the number of rows in conflict."""
    missing = [c for c in LABEL_FIELDS[:4] if c not in df.columns]
    if missing:
        raise BadInputError(f"label rows lack column(s) {', '.join(missing)}", source=source,
                            field=missing[0])
    df = df.copy()
    df["annotator"] = df["annotator"].fillna("") if "annotator" in df.columns else ""
    new = _frame(df, LABELS_SCHEMA, {"source": source, "labelled_at": utcnow()})
    key = LABELS_KEY
    n_conflicts, conflicts = _conflicts(store, "labels", new, key, ["useful"], source)
    with store.transaction():
        added = store.append("labels", new, key=key)
    return added, n_conflicts, conflicts


@full_collections_deferred()  # a large file's rows are held until written: core/_gc.py
def ingest_references(store: Store, path: str | os.PathLike[str] | pd.DataFrame) -> IngestReport:
    """Load a Formats §4 reference-lessons file into ``reference_lessons``.

    Bad lines are reported (file, line, field) and the good ones land in one
    transaction; a row whose key (verdict_hash, reference_id, annotator) is
    stored already is kept as stored, and reported as a conflict (as labels and
    completions are; not counted as already present) when its text or evidence
    differ. A reference to a verdict the journal does not hold lands with a
    warning, as a label does. A field beyond its bound
    (:data:`~truss_lab.ingest._fields.MAX_REFERENCE_TEXT` and the others) is a bad line.

    Parameters
    ----------
    store : Store
        The database.
    path : path or pandas.DataFrame
        The reference-lessons JSONL file, or a frame of its fields.

    Returns
    -------
    IngestReport
        Rows read, added and present, the errors (bad lines, conflicts) and warnings.
    """
    source = source_name(path)
    df, errors = read_references(path)
    n_read = len(df) + len(errors)
    new = _frame(df, REFERENCES_SCHEMA, {"source": source, "annotated_at": utcnow()})
    key = list(REFERENCE_KEY)
    n_conflicts, conflicts = _conflicts(store, "reference_lessons", new, key,
                                        ["text", "evidence"], source)
    with store.transaction():
        added = store.append("reference_lessons", new, key=key)
    problems = reference_problems(store, df["verdict_hash"].astype(object).tolist())
    warnings = [f"{source}: verdict {r.verdict_hash}, {r.n_references} reference(s): "
                f"{r.problem}" for r in problems.itertuples()]
    return IngestReport(source, n_read, added, len(df) - added - n_conflicts,
                        [*errors, *conflicts], warnings)


@full_collections_deferred()  # a large file's rows are held until written: core/_gc.py
def ingest_match_labels(store: Store, path: str | os.PathLike[str] | pd.DataFrame) -> IngestReport:
    """Load a Formats §5 match-labels CSV into ``match_labels``, or a match queue file
    (``truss-lab queue RUN --kind match``) whose verdicts left unanswered are skipped and
    counted (``rows_blank``).

    Bad rows are reported with line and field
    (:func:`~truss_lab.ingest._match_labels.read_match_labels`), and so are rows the
    store refuses (:func:`~truss_lab.ingest._match_labels.check_match_labels`: a
    ``reference_id`` that names no reference of the verdict, a lesson no run holds, a
    sampled verdict with a lesson not matched); a verdict answered by one annotator
    lands whole or not at all; the good ones land in one transaction. A row whose key
    (verdict_hash, extractor, lesson_index, annotator) is stored already is kept as
    stored, and reported as a conflict when its ``reference_id`` or
    ``inclusion_probability`` differ (``truss-lab ingest`` exits 3, as for labels).

    Parameters
    ----------
    store : Store
        The database.
    path : path or pandas.DataFrame
        The match-labels CSV or match queue file, or a frame of its columns.

    Returns
    -------
    IngestReport
        Rows read, added, present and blank, the errors (bad rows, conflicts) and
        warnings.
    """
    source = source_name(path)
    df, errors = read_match_labels(path)
    blank = int(df.attrs.get("blank_rows", 0))
    n_read = len(df) + len(errors) + blank
    checked = check_match_labels(store, df, source)
    rows = checked.rows.drop(columns="line")
    new = _frame(rows, MATCH_LABELS_SCHEMA, {"source": source, "labelled_at": utcnow()})
    key = [FILE_TO_TABLE.get(k, k) for k in MATCH_LABEL_KEY]
    n_conflicts, conflicts = _conflicts(store, "match_labels", new, key,
                                        ["reference_id", INCLUSION], source)
    with store.transaction():
        added = store.append("match_labels", new, key=key)
    problems = reference_problems(store, rows["verdict_hash"].astype(object).tolist())
    warnings = [*checked.warnings,
                *(f"{source}: verdict {r.verdict_hash}, {r.n_references} match label(s): "
                  f"{r.problem}" for r in problems.itertuples())]
    return IngestReport(source, n_read, added, len(rows) - added - n_conflicts,
                        [*errors, *checked.errors, *conflicts], warnings, rows_blank=blank)
