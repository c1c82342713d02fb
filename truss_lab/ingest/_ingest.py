"""Loading the unchained formats (completions, labels, reference lessons, match labels)
into the store.

Bad lines are reported with their file, line and field; the good ones land
in one transaction. A row whose key is already stored with other content is
reported as a conflict and never overwrites what is there.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..core._canonical import canonical_digest
from ..core._clock import utcnow
from ..core._errors import BadInputError
from ..core._gc import full_collections_deferred
from ..store._ingested import (
    CONFLICTS_NAMED,
    Staging,
    label_problems,
    reference_problems,
    stored_conflicts,
)
from ..store._runs import record_extractor_config
from ..store._store import Store
from ..store._tables import (
    COMPLETIONS_SCHEMA,
    LABELS_SCHEMA,
    MATCH_LABELS_SCHEMA,
    REFERENCES_SCHEMA,
)
from ._completions import (
    BATCH_ROWS,
    COMPLETION_ARROW,
    COMPLETION_FIELDS,
    COMPLETION_KEY,
    arrow_completions,
    completion_batches,
)
from ._fields import INCLUSION
from ._labels import LABEL_FIELDS, LABEL_KEY, label_batches
from ._match_labels import MATCH_LABEL_KEY, check_match_labels, read_match_labels
from ._references import REFERENCE_KEY, read_references
from ._strict import dedupe
from ._tables_in import is_table, source_name

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


def _frame(df: pd.DataFrame | pa.Table, schema: pa.Schema, extra: dict[str, Any]) -> pa.Table:
    """Table rows of ``schema`` from a §2/§3 frame or Arrow table (file names mapped)
    plus ``extra`` (a value for every row)."""
    n = len(df) if isinstance(df, pd.DataFrame) else df.num_rows
    names = {FILE_TO_TABLE.get(c, c): c for c in (
        df.columns if isinstance(df, pd.DataFrame) else df.column_names)}
    cols = {}
    for f in schema:
        if f.name in extra:
            cols[f.name] = pa.repeat(pa.scalar(extra[f.name], f.type), n)
        elif f.name not in names:
            cols[f.name] = pa.nulls(n, f.type)
        elif isinstance(df, pa.Table):  # Arrow to Arrow: no Python value per row
            cols[f.name] = df.column(names[f.name]).cast(f.type)
        else:
            col = df[names[f.name]]
            cols[f.name] = pa.array(col.astype(object).where(col.notna(), None), f.type)
    return pa.table(cols, schema=schema)


def _conflicts(store: Store, table: str, new: pa.Table, key: list[str], value: list[str],
               source: str) -> tuple[int, list[BadInputError]]:
    """The one conflict report of every unchained input (completions, labels, reference
    lessons): rows whose key is stored already with other content are kept as stored,
    each named by its key (the first :data:`~truss_lab.store._ingested.CONFLICTS_NAMED`,
    then one line for the rest). Returns (rows in conflict, errors); ``truss-lab ingest``
    exits 3 on them."""
    n, keys = stored_conflicts(store, table, new, key, value)
    return n, _conflict_errors(n, keys, key, source)


def _conflict_errors(n: int, keys: list[tuple[Any, ...]], key: list[str],
                     source: str) -> list[BadInputError]:
    """:func:`_conflicts`' errors for ``n`` rows in conflict, ``keys`` the first named."""
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
    return errors


class _Landing:
    """What an ingest in batches adds up as it writes them: rows added and kept as
    stored, and the conflicts (the first :data:`~truss_lab.store._ingested.CONFLICTS_NAMED`
    named)."""

    def __init__(self) -> None:
        self.kept = self.added = self.n_conflicts = 0
        self.conflict_keys: list[tuple[Any, ...]] = []

    def write(self, store: Store, table: str, new: pa.Table, key: list[str],
              value: list[str]) -> None:
        """Append ``new`` (rows of no stored key; those of one held with other ``value``
        counted as conflicts)."""
        self.kept += new.num_rows
        n, keys = stored_conflicts(store, table, new, key, value)
        self.n_conflicts += n
        self.conflict_keys += keys[:CONFLICTS_NAMED - len(self.conflict_keys)]
        self.added += store.append(table, new, key=key)

    def conflicts(self, key: list[str], source: str) -> list[BadInputError]:
        return _conflict_errors(self.n_conflicts, self.conflict_keys, key, source)


def _config_hash_column(configs: pa.ChunkedArray) -> pa.Array:
    """Per row, the hash of its §2 ``config`` (:func:`canonical_digest` of the canonical
    JSON text the reader gives, as ``ExtractorConfig.config_hash``): each distinct
    configuration hashed once."""
    enc = configs.combine_chunks().dictionary_encode()
    hashes = pa.array([canonical_digest(c) for c in enc.dictionary.to_pylist()], pa.string())
    return hashes.take(enc.indices)


# Not full_collections_deferred (core/_gc.py): a batch is held, not the file, and each
# batch's frames die in reference cycles that only a full collection frees.
def ingest_completions(store: Store, path: str | os.PathLike[str] | pd.DataFrame, *,
                       batch_rows: int = BATCH_ROWS) -> IngestReport:
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
    batch_rows : int, default ``BATCH_ROWS`` (8192)
        Lines (a table's rows) read, checked and written at a time, inside the one
        transaction: the reader holds a batch, not the file; the outcome is the whole
        file's (duplicates across batches collapse or conflict as within one).

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
    return _land_completions(store, completion_batches(path, batch_rows), source,
                             "row" if is_table(path) else "line")


def land_completions(store: Store, df: pd.DataFrame, errors: list[BadInputError], source: str,
                     *, row_sources: list[str] | None = None) -> IngestReport:
    """Write completions :func:`~truss_lab.ingest._completions.read_completions` read
    (``df``, its ``errors``) and their extractor configurations, in one transaction: what
    every completions ingest ends with. ``row_sources``: each row's own ``source`` (a
    Batch output's request ids), default ``source``."""
    lines = np.arange(len(df), dtype=np.int64)
    return _land_completions(store, iter([(df, lines, errors)]), source, "line",
                             row_sources=row_sources, read_whole=True)


_STAGED_COMPLETIONS = pa.schema([*COMPLETION_ARROW, ("source", pa.string()),
                                 ("line", pa.int64())])


def _land_completions(store: Store,
                      batches: Iterator[tuple[pd.DataFrame, np.ndarray, list[BadInputError]]],
                      source: str, where: str, *, row_sources: list[str] | None = None,
                      read_whole: bool = False) -> IngestReport:
    """Read ``batches`` of completions (good rows, their lines, errors) into the store
    in one transaction, a batch at a time: staged as read, then, duplicates across the
    file collapsed or dropped (:func:`~truss_lab.ingest._strict.dedupe`'s errors), their
    extractor configurations kept and the rows written batch by batch. ``read_whole``:
    one batch, read whole (duplicates collapsed, errors in their order)."""
    errors: list[BadInputError] = []
    spans: list[tuple[int, int]] = []
    land = _Landing()
    with store.memory_bounded(), store.transaction():
        staging = Staging(store, _STAGED_COMPLETIONS, list(COMPLETION_KEY))
        for df, lines, errs in batches:
            errors += errs
            if len(df):
                t = pa.Table.from_pandas(df[list(COMPLETION_FIELDS)], preserve_index=False)
                own = (row_sources[int(lines[0]):int(lines[-1]) + 1] if row_sources
                       else [None] * len(df))
                t = t.append_column("source", pa.array(own, pa.string()))
                staging.add(t.append_column("line", pa.array(lines, pa.int64()))
                            .cast(_STAGED_COMPLETIONS))
                spans.append((int(lines[0]), int(lines[-1])))
        dups = staging.duplicates()
        if dups.num_rows:
            frame = arrow_completions(dups.cast(_STAGED_COMPLETIONS).select(COMPLETION_FIELDS))
            errors += dedupe(frame, dups.column("line").to_numpy(), COMPLETION_KEY, source,
                             where=where)[1]
        if not read_whole:
            errors.sort(key=lambda e: e.line or e.row or 0)
        for ext, config in staging.firsts("extractor", "config"):
            try:
                record_extractor_config(store, ext, canonical_digest(config),
                                        json.loads(config))
            except BadInputError as exc:
                raise BadInputError(str(exc.message), source=source, field="config",
                                    reason="config_conflict") from None
        recorded_at = utcnow()
        for t in staging.rows(spans):
            t = t.cast(_STAGED_COMPLETIONS)
            t = t.set_column(t.schema.get_field_index("source"), "source",
                             pc.fill_null(t.column("source"), source))
            new = _frame(t, COMPLETIONS_SCHEMA, {"recorded_at": recorded_at})
            new = new.append_column("config_hash", _config_hash_column(t.column("config")))
            land.write(store, "completions", new, COMPLETIONS_KEY, ["text", "request_hash"])
        problems = reference_problems(store, staging)
        staging.close()
    warnings = [f"{source}: verdict {r.verdict_hash}, {r.n_references} reference(s): "
                f"{r.problem}" for r in problems.itertuples()]
    return IngestReport(source, land.kept + len(errors), land.added,
                        land.kept - land.added - land.n_conflicts,
                        [*errors, *land.conflicts(COMPLETIONS_KEY, source)], warnings)


# Not full_collections_deferred (core/_gc.py): a batch is held, not the file, and each
# batch's frames die in reference cycles that only a full collection frees.
def ingest_labels(store: Store, path: str | os.PathLike[str] | pd.DataFrame, *,
                  batch_rows: int = BATCH_ROWS) -> IngestReport:
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
    batch_rows : int, default ``BATCH_ROWS`` (8192)
        Rows read, checked and written at a time, inside the one transaction (as
        :func:`ingest_completions` does).

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
    errors: list[BadInputError] = []
    spans: list[tuple[int, int]] = []
    blank = 0
    land = _Landing()
    with store.memory_bounded(), store.transaction():
        staging = Staging(store, _STAGED_LABELS, list(LABEL_KEY))
        for df, lines, errs, n_blank in label_batches(path, batch_rows):
            errors += errs
            blank += n_blank
            if len(df):
                t = pa.Table.from_pandas(df[list(LABEL_FIELDS)], preserve_index=False)
                staging.add(t.append_column("line", pa.array(lines, pa.int64()))
                            .cast(_STAGED_LABELS))
                spans.append((int(lines[0]), int(lines[-1])))
        dups = staging.duplicates()
        if dups.num_rows:
            frame = _labels_frame(dups.select(LABEL_FIELDS))
            errors += dedupe(frame, dups.column("line").to_numpy(), LABEL_KEY, source,
                             where="row")[1]
        errors.sort(key=lambda e: e.row or 0)
        labelled_at = utcnow()
        for t in staging.rows(spans):
            new = _label_table(t, source, labelled_at)
            land.write(store, "labels", new, LABELS_KEY, ["useful"])
        problems = label_problems(store, staging)
        staging.close()
    warnings = [f"{source}: verdict {r.verdict_hash}, extractor {r.extractor_id!r}, lesson_index "
                f"{r.lesson_index}: {r.problem}" for r in problems.itertuples()]
    return IngestReport(source, land.kept + len(errors) + blank, land.added,
                        land.kept - land.added - land.n_conflicts,
                        [*errors, *land.conflicts(LABELS_KEY, source)], warnings,
                        rows_blank=blank)


_STAGED_LABELS = pa.schema([("verdict_hash", pa.string()), ("extractor", pa.string()),
                            ("lesson_index", pa.int64()), ("useful", pa.int64()),
                            ("annotator", pa.string()), ("line", pa.int64())])


def _labels_frame(table: pa.Table) -> pd.DataFrame:
    """Staged label rows typed as :func:`~truss_lab.ingest._labels.read_labels` types them."""
    return table.to_pandas(types_mapper={pa.string(): pd.StringDtype()}.get)


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
    new = _label_table(df, source, utcnow())
    key = LABELS_KEY
    n_conflicts, conflicts = _conflicts(store, "labels", new, key, ["useful"], source)
    with store.transaction():
        added = store.append("labels", new, key=key)
    return added, n_conflicts, conflicts


def _label_table(df: pd.DataFrame | pa.Table, source: str, labelled_at: Any) -> pa.Table:
    """``labels`` rows of §3 label rows (a missing annotator stored as ``""``)."""
    if isinstance(df, pa.Table):
        i = df.schema.get_field_index("annotator")
        df = df.set_column(i, "annotator", pc.fill_null(df.column(i), ""))
    else:
        df = df.copy()
        df["annotator"] = df["annotator"].fillna("") if "annotator" in df.columns else ""
    return _frame(df, LABELS_SCHEMA, {"source": source, "labelled_at": labelled_at})


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
