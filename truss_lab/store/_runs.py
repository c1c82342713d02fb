"""The run record: one ``extraction_runs`` row per run, and the prompt template it used.

Every face of a run (a batch, the live one-verdict learner, the evaluation
reads, ``truss-lab runs``) creates, reads, counts, finishes and summarizes its
row here, so the row's shape, its stored config and the missing-run message
are written once. :func:`run_content_hashes` fingerprints the rows a run wrote. Values are
plain (ids, names, numbers), not an ``Extractor``: the store sits below extract.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ..core._clock import utcnow
from ..core._confusables import id_refusal, lookalike_problem, lookalikes
from ..core._errors import BadInputError, TrussLabWarning
from ..core._secrets import redact
from ..core._version import __version__
from ._claims import claim_run, drop_run_claims
from ._run_list import (
    RUN_ERRORS_SQL,
    delete_run,
    get_run,
    missing_run_error,
    run_exists,
    run_info,
    runs_query,
)
from ._store import Store
from ._tables import RUN_CHUNKS_SCHEMA, RUN_VERDICTS_SCHEMA

if TYPE_CHECKING:  # only named in annotations: `truss-lab runs` never loads pandas
    import pandas as pd

__all__ = [
    "REPLAY_COLUMNS",
    "RunRecord",
    "add_chunk_counts",
    "add_run_counts",
    "check_resumable",
    "create_run",
    "delete_run",
    "done_chunks",
    "drop_verdict_errors",
    "extractor_config",
    "extractor_config_by_hash",
    "finish_run",
    "get_run",
    "lessons_stored",
    "missing_run_error",
    "processed_verdicts",
    "record_chunks",
    "record_extractor_config",
    "record_prompt_template",
    "record_run_verdicts",
    "recorded_completions",
    "recording_counts",
    "recordings_of",
    "reopen_run",
    "run_candidate_counts",
    "run_candidates",
    "run_content_hashes",
    "run_error_rows",
    "run_errors",
    "run_exists",
    "run_info",
    "run_lessons",
    "run_memory_entries",
    "run_processed_verdicts",
    "run_provider_failures",
    "run_record",
    "run_verdict_hashes",
    "summarize_runs",
    "unanswered_verdicts",
    "update_run_config",
    "valid_candidates",
    "verdict_errors_of",
]

_TS = pa.timestamp("us", tz="UTC")
_COUNTS = ("n_verdicts", "n_candidates", "n_lessons", "n_errors", "provider_calls")


def create_run(
    store: Store,
    run_id: str,
    *,
    extractor_id: str,
    provider: str,
    policy: str,
    extraction_min_salience: float,
    write_memory: bool,
    prompt_version: str | None,
    prompt_hash: str | None,
    scorer: str = "model_salience@1",
    config: Mapping[str, Any] | None = None,
    dataset_hash: str | None = None,
    status: str = "running",
    counted: bool = True,
    name: str | None = None,
    tags: Sequence[str] = (),
    config_hash: str | None = None,
) -> int:
    """Create the extraction_runs row of ``run_id`` unless it exists; return rows added.

    The stored ``config`` JSON is ``config`` (what the caller adds: chunk size, batch,
    the CLI's extractor spec); the policy and the threshold are the row's columns
    ``policy`` and ``extraction_min_salience``, stored once (runs recorded before also
    copied them into the JSON; readers take the columns).
    ``counted``: a batch keeps its counts in the row (they start at 0 and
    ``seconds`` at 0.0); a live run does not (they stay NULL). ``name`` and
    ``tags`` are for people (``truss-lab runs`` shows them). ``config_hash``:
    the extractor configuration (``extractor_configs``), when it has one.

    Many parameters because each is one column of the extraction_runs row it writes (the
    store owns the row's shape; a caller names each value).
    """
    why = id_refusal(run_id)
    if why is not None:
        raise BadInputError(f"run id {run_id!r} {why}", field="run_id")
    cfg = dict(config or {})
    start = 0 if counted else None
    cols: dict[str, Any] = {
        "run_id": [run_id], "extractor_id": [extractor_id], "provider": [provider],
        "policy": [policy], "extraction_min_salience": [extraction_min_salience],
        "scorer": [scorer],
        "write_memory": [write_memory], "config": [json.dumps(cfg, sort_keys=True)],
        "prompt_version": pa.array([prompt_version], pa.string()),
        "prompt_hash": pa.array([prompt_hash], pa.string()),
        "dataset_hash": pa.array([dataset_hash], pa.string()), "code_version": [__version__],
        "started_at": pa.array([utcnow()], _TS), "finished_at": pa.array([None], _TS),
        "status": [status],
        **{c: pa.array([start], pa.int64()) for c in _COUNTS},
        "name": pa.array([name], pa.string()),
        "tags": pa.array([list(tags)], pa.list_(pa.string())),
        "config_hash": pa.array([config_hash], pa.string()),
    }
    if counted:
        cols |= {"error": pa.array([None], pa.string()), "seconds": [0.0]}
    added = store.append("extraction_runs", pa.table(cols), key=["run_id"])
    if added:
        _warn_lookalike_run(store, run_id)
    return added


def _warn_lookalike_run(store: Store, run_id: str) -> None:
    """A new run whose id may be mistaken for another (mixed scripts, a hyphen that is not
    ``-``, or the same look as a stored run's id) is kept, with one warning saying so."""
    problem = lookalike_problem(run_id)
    others = lookalikes(run_id, (r[0] for r in store.con.execute(
        "SELECT run_id FROM extraction_runs WHERE run_id <> ?", [run_id]).fetchall()))
    if others:
        problem = (f"{problem}; " if problem else "") + f"it looks like run {others[0]!r}"
    if problem:
        warnings.warn(f"run id {run_id!r} {problem}", TrussLabWarning, stacklevel=3)


def record_prompt_template(store: Store, version: str, template_hash: str | None,
                           text: str) -> None:
    """Keep the text of a prompt template a run used (once per version and hash);
    nothing for a template not registered here (``template_hash`` None: no text)."""
    if template_hash is None:
        return
    store.append(
        "prompt_templates",
        pa.table({"prompt_version": [version], "template_hash": [template_hash],
                  "text": [text]}),
        key=["prompt_version", "template_hash"],
    )


_CONFIG_HASHES = (
    "SELECT config_hash FROM completions WHERE extractor_id = ? AND config_hash IS NOT NULL "
    "UNION SELECT config_hash FROM extraction_runs WHERE extractor_id = ? "
    "AND config_hash IS NOT NULL")


def record_extractor_config(store: Store, extractor_id: str, config_hash: str,
                            config: Mapping[str, Any]) -> None:
    """Keep an extractor configuration (once per hash), refusing a second
    configuration under ``extractor_id``: the id keys the recordings a replay
    answers from, so it must name one configuration."""
    known = [r[0] for r in store.con.execute(_CONFIG_HASHES, [extractor_id] * 2).fetchall()]
    other = [h for h in known if h != config_hash]
    if other:
        raise BadInputError(
            f"extractor {extractor_id!r} was recorded with configuration {other[0][:12]}, "
            f"this one is {config_hash[:12]}; give this configuration another extractor id",
            field="extractor_id", reason="config_conflict")
    store.append("extractor_configs", pa.table({
        "config_hash": [config_hash], "config": [json.dumps(dict(config), sort_keys=True)],
        "recorded_at": pa.array([utcnow()], _TS)}), key=["config_hash"])


def extractor_config_by_hash(store: Store, prefix: str) -> dict[str, Any] | None:
    """The one kept configuration whose hash starts with ``prefix`` (hex digits, as a Batch
    request's ``custom_id`` carries it), as a dict; None when none or several do."""
    if not prefix or any(c not in "0123456789abcdef" for c in prefix):
        return None
    rows = store.con.execute("SELECT config FROM extractor_configs WHERE "
                             "starts_with(config_hash, ?) LIMIT 2", [prefix]).fetchall()
    return dict(json.loads(rows[0][0])) if len(rows) == 1 else None


def extractor_config(store: Store, extractor_id: str) -> dict[str, Any] | None:
    """The configuration recorded for ``extractor_id`` (its recordings and runs), as
    a dict; ``None`` when it has none (heuristic, recordings made elsewhere)."""
    hashes = [r[0] for r in store.con.execute(_CONFIG_HASHES, [extractor_id] * 2).fetchall()]
    if not hashes:
        return None
    if len(hashes) > 1:
        raise BadInputError(
            f"extractor {extractor_id!r} has {len(hashes)} recorded configurations "
            f"({', '.join(h[:12] for h in sorted(hashes))}); a replay needs one",
            field="extractor_id", reason="config_conflict")
    row = store.con.execute("SELECT config FROM extractor_configs WHERE config_hash = ?",
                            hashes).fetchall()
    if not row:
        raise BadInputError(f"configuration {hashes[0][:12]} of extractor {extractor_id!r} is "
                            "not in extractor_configs", field="extractor_id")
    return dict(json.loads(row[0][0]))


def _recordings_sql(columns: str, run_id: str | None, some: bool) -> str:
    """The statement of :func:`recorded_completions` (``some``: of the verdicts in a list
    parameter after the extractor's), selecting ``columns``."""
    where = "extractor_id = ?" + (" AND verdict_hash IN (SELECT unnest(?))" if some else "")
    if run_id is not None:
        return f"SELECT {columns} FROM completions WHERE {where} AND run_id = ?"
    return (f"SELECT {columns} FROM completions WHERE {where} QUALIFY row_number() OVER ("
            "PARTITION BY verdict_hash, sample_index "
            "ORDER BY recorded_at, run_id NULLS FIRST, request_hash, text) = 1")


def recorded_completions(store: Store, extractor_id: str, *,
                         run_id: str | None = None) -> pd.DataFrame:
    """The recorded completions of ``extractor_id`` a replay answers from (its
    ``completions`` rows, one per verdict and sample).

    With ``run_id``: the recordings that run's live calls made, which it owns (what
    :func:`~truss_lab.extract._batch.rerun` replays). Without: per verdict and sample
    the earliest recording, whichever run or file made it (several live runs of one
    configuration each keep their own answers; a replay by extractor id answers as
    the first of them did, as before a second could be kept).
    """
    params = [extractor_id] + ([run_id] if run_id is not None else [])
    return store.sql(_recordings_sql("*", run_id, False), params).df()


#: The columns of a recording a replay answers with, in :func:`recordings_of` order.
REPLAY_COLUMNS = ("verdict_hash", "sample_index", "model", "prompt_version", "request_hash",
                  "text", "latency_ms", "prompt_tokens", "completion_tokens")


def recordings_of(store: Store, extractor_id: str, verdict_hashes: Sequence[str], *,
                  run_id: str | None = None) -> pa.Table:
    """The rows of :func:`recorded_completions` for the verdicts ``verdict_hashes`` only,
    as an Arrow table of :data:`REPLAY_COLUMNS` (a replay reads its recordings a window
    of verdicts at a time: the same recording per verdict and sample, since the
    earliest is chosen within each verdict's own rows)."""
    params = [extractor_id, list(verdict_hashes)] + ([run_id] if run_id is not None else [])
    return store.con.sql(_recordings_sql(", ".join(REPLAY_COLUMNS), run_id, True),
                         params=params).to_arrow_table()


def recording_counts(store: Store, extractor_id: str, *, run_id: str | None = None,
                     ) -> tuple[int, bool, dict[str, tuple[int, int]]]:
    """What a replay needs to know of ``extractor_id``'s recordings before it reads them:
    (how many :func:`recorded_completions` gives, whether each verdict and sample has
    one of them only, and per prompt version (recordings, recordings with a
    ``request_hash``)). When a verdict and sample were recorded more than once
    (several live runs without ``run_id``) the per-version counts are of the rows
    :func:`recorded_completions` chooses."""
    params = [extractor_id] + ([run_id] if run_id is not None else [])
    cond = "extractor_id = ?" + (" AND run_id = ?" if run_id is not None else "")
    total, keys = store.con.execute(
        f"SELECT count(*), count(DISTINCT (verdict_hash, sample_index)) FROM completions "
        f"WHERE {cond}", params).fetchall()[0]
    rows = (f"SELECT prompt_version, request_hash FROM completions WHERE {cond}"
            if total == keys else _recordings_sql("prompt_version, request_hash", run_id, False))
    versions = store.con.execute(
        f"SELECT prompt_version, count(*), count(request_hash) FROM ({rows}) GROUP BY ALL",
        params).fetchall()
    return int(keys), total == keys, {v: (int(n), int(h)) for v, n, h in versions}


def run_provider_failures(store: Store, run_id: str) -> pd.DataFrame:
    """The provider errors of ``run_id`` (``verdict_hash, sample_index, message``, one
    per failed call, sorted): the calls it paid for that left no recording, which a
    replay of the run gives back as they were (:func:`~truss_lab.extract._batch.rerun`)."""
    return store.sql(
        "SELECT verdict_hash, sample_index, message FROM verdict_errors WHERE run_id = ? "
        "AND stage = 'provider' ORDER BY verdict_hash, sample_index", [run_id]).df()



def check_resumable(row: Mapping[str, Any], want: Mapping[str, Any]) -> None:
    """Refuse to resume run ``row`` when a column differs from this call's ``want``
    (extractor, policy, threshold, write_memory, prompt hash, batch hash)."""
    for k, v in want.items():
        if row[k] != v:
            raise BadInputError(
                f"cannot resume run {row['run_id']}: it was started with {k}={row[k]!r}, "
                f"this call has {k}={v!r}; resume with the same extractor, policy and batch, "
                "or start a new run",
                field=k,
            )


def done_chunks(store: Store, run_id: str) -> set[int]:
    """The chunk indexes ``run_id`` has written (its ``run_chunks`` rows): what a
    resume skips."""
    return {int(r[0]) for r in store.con.execute(
        "SELECT chunk_index FROM run_chunks WHERE run_id = ?", [run_id]).fetchall()}


def record_run_verdicts(store: Store, run_id: str, seqs: Sequence[int],
                        hashes: Sequence[str]) -> None:
    """Record that ``run_id`` processed these verdicts (whatever they yielded)."""
    store.append(
        "run_verdicts",
        pa.table({"run_id": [run_id] * len(seqs), "verdict_seq": pa.array(seqs, pa.int64()),
                  "verdict_hash": list(hashes)}, schema=RUN_VERDICTS_SCHEMA),
        key=["run_id", "verdict_seq"],
    )


def record_chunks(store: Store, run_id: str, *, chunk_index: Sequence[int],
                  first_seq: Sequence[int], last_seq: Sequence[int],
                  n_verdicts: Sequence[int], n_candidates: Sequence[int],
                  n_lessons: Sequence[int], n_lessons_new: Sequence[int],
                  n_errors: Sequence[int], provider_calls: Sequence[int]) -> None:
    """Record chunks of ``run_id`` as written (one ``run_chunks`` row each, finished now):
    what a resume skips, with the counts each chunk's write added."""
    now = utcnow()
    n = len(chunk_index)
    store.append("run_chunks", pa.table({
        "run_id": [run_id] * n, "chunk_index": list(chunk_index),
        "first_seq": list(first_seq), "last_seq": list(last_seq),
        "n_verdicts": list(n_verdicts), "n_candidates": list(n_candidates),
        "n_lessons": list(n_lessons), "n_lessons_new": list(n_lessons_new),
        "n_errors": list(n_errors), "provider_calls": list(provider_calls),
        "finished_at": [now] * n,
    }, schema=RUN_CHUNKS_SCHEMA), key=["run_id", "chunk_index"])


def lessons_stored(store: Store, entry_ids: pa.Array) -> set[str]:
    """Of ``entry_ids``, those ``memory_entries`` holds already (a write adds the others)."""
    store.con.register("_new_lesson_ids", pa.table({"entry_id": entry_ids}))
    try:
        return {r[0] for r in store.con.execute(
            "SELECT entry_id FROM memory_entries WHERE entry_id IN "
            "(SELECT entry_id FROM _new_lesson_ids)").fetchall()}
    finally:
        store.con.unregister("_new_lesson_ids")


def reopen_run(store: Store, run_id: str) -> None:
    """Mark a run running again (a resume): no finish time, no error, no claim (its
    rows move until it ends again)."""
    with store.transaction():
        store.con.execute(
            "UPDATE extraction_runs SET status = 'running', finished_at = NULL, "
            "error = NULL WHERE run_id = ?", [run_id])
        drop_run_claims(store.con, run_id)


def update_run_config(store: Store, run_id: str, changes: Mapping[str, Any]) -> None:
    """Record in the run's stored config what a resume ran with (a moved endpoint,
    another executor): ``changes`` replace those keys, so the next resume and every
    reader see them. Redacted as every config is when stored (a base URL's key)."""
    if not changes:
        return
    row = run_info(store, run_id)
    cfg = {**json.loads(row["config"] or "{}"), **changes}
    with store.transaction():
        store.con.execute("UPDATE extraction_runs SET config = ? WHERE run_id = ?",
                          [redact(json.dumps(cfg, sort_keys=True)), run_id])


def unanswered_verdicts(store: Store, run_id: str) -> pd.DataFrame:
    """The verdicts of ``run_id`` every call of which failed (``verdict_seq``,
    ``verdict_hash``, by seq): a provider error and no recording of the run's for them.
    What ``--resume`` retries (:func:`drop_verdict_errors` then makes room for the
    retry's rows); a verdict with a recording is never asked again (it was paid for)."""
    return store.sql(
        "SELECT DISTINCT e.verdict_seq, e.verdict_hash FROM verdict_errors e "
        "WHERE e.run_id = ? AND e.stage = 'provider' AND NOT EXISTS (SELECT 1 FROM "
        "completions c WHERE c.run_id = e.run_id AND c.verdict_hash = e.verdict_hash) "
        "ORDER BY e.verdict_seq", [run_id]).df()


def drop_verdict_errors(store: Store, run_id: str, verdict_hashes: Sequence[str]) -> int:
    """Delete the errors of ``run_id`` on ``verdict_hashes`` (a retry of them writes its
    own, in the same transaction); the number of verdicts that had one."""
    with store.transaction():
        n = store.con.execute(
            "SELECT count(DISTINCT verdict_hash) FROM verdict_errors WHERE run_id = ? "
            "AND verdict_hash IN (SELECT unnest(?))", [run_id, list(verdict_hashes)]
        ).fetchall()[0][0]
        store.con.execute(
            "DELETE FROM verdict_errors WHERE run_id = ? AND verdict_hash IN "
            "(SELECT unnest(?))", [run_id, list(verdict_hashes)])
    return int(n)


def add_chunk_counts(store: Store, run_id: str, chunk_index: int, *, n_candidates: int,
                     n_lessons: int, n_lessons_new: int, n_errors: int,
                     provider_calls: int) -> None:
    """Add a retry's counts to chunk ``chunk_index`` of ``run_id`` (its verdicts are the
    chunk's: ``n_verdicts`` stays; ``n_errors`` may fall)."""
    with store.transaction():
        store.con.execute(
            "UPDATE run_chunks SET n_candidates = n_candidates + ?, n_lessons = n_lessons + ?, "
            "n_lessons_new = n_lessons_new + ?, n_errors = n_errors + ?, "
            "provider_calls = provider_calls + ? WHERE run_id = ? AND chunk_index = ?",
            [n_candidates, n_lessons, n_lessons_new, n_errors, provider_calls, run_id,
             chunk_index])


def add_run_counts(store: Store, run_id: str, *, n_verdicts: int, n_candidates: int,
                   n_lessons: int, n_errors: int, provider_calls: int,
                   seconds: float) -> None:
    """Add one chunk's counts and active seconds to the run's totals (in the
    current transaction, so the chunk's rows and its counts land together)."""
    with store.transaction():
        store.con.execute(
            "UPDATE extraction_runs SET n_verdicts = n_verdicts + ?, "
            "n_candidates = n_candidates + ?, n_lessons = n_lessons + ?, "
            "n_errors = n_errors + ?, provider_calls = provider_calls + ?, "
            "seconds = coalesce(seconds, 0) + ? WHERE run_id = ?",
            [n_verdicts, n_candidates, n_lessons, n_errors, provider_calls, seconds, run_id],
        )


def finish_run(store: Store, run_id: str, status: str, seconds: float,
               error: str | None = None) -> None:
    """Record how a run ended (``finished`` or ``failed`` and why) and add its seconds,
    with the run's integrity claim (:func:`~truss_lab.store._claims.claim_run`)."""
    with store.transaction():
        store.con.execute(
            "UPDATE extraction_runs SET status = ?, finished_at = ?, error = ?, "
            "seconds = coalesce(seconds, 0) + ? WHERE run_id = ?",
            [status, utcnow(), redact(error), seconds, run_id],
        )
        claim_run(store.con, run_id)


# -- reading runs back ------------------------------------------------------------------


def summarize_runs(store: Store, run_ids: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per run: run_id, extractor_id, prompt_version and prompt_hash (the prompt
    template that produced its candidates; the hash null when the version is not
    registered here), policy, extraction_min_salience,
    write_memory, status, name, tags (a list), n_verdicts, n_candidates, n_lessons
    (passed the gate and written), n_lessons_new (memory entries this run added),
    n_errors, provider_calls, seconds (active wall time, summed over resumes),
    verdicts_per_s (NaN before a run has taken time), started_at, error, signed_by (the
    key ids that signed the run's verdicts, comma-separated).
    The counts are named as in ``extraction_runs`` and :class:`ExtractionRun`. All
    runs when ``run_ids`` is None.

    Parameters
    ----------
    store : Store
        The database.
    run_ids : sequence of str, optional
        The runs to list, in this order; default every run.

    Returns
    -------
    pandas.DataFrame
        One row per run, the columns above.

    See Also
    --------
    run_extraction : makes a run.
    Store : The database the runs are recorded in (``truss-lab runs`` prints this).

    Examples
    --------
    >>> runs = tl.summarize_runs(store)
    >>> runs[["run_id", "n_verdicts", "n_candidates", "n_lessons"]]
      run_id  n_verdicts  n_candidates  n_lessons
    0   good        1200          1134        414"""
    query, params = runs_query(run_ids)
    return store.sql(query, params).df()


def run_errors(store: Store, run_id: str) -> pd.DataFrame:
    """The per-verdict errors of ``run_id`` (``verdict_errors`` rows: verdict_seq,
    verdict_hash, stage, reason, message), by verdict; an unknown run is an error."""
    run_info(store, run_id)
    return store.sql(RUN_ERRORS_SQL, [run_id]).df()


def run_memory_entries(store: Store, run_id: str) -> pd.DataFrame:
    """The memory entries (lessons) the candidates of ``run_id`` became."""
    return store.sql(
        "SELECT m.* FROM memory_entries m WHERE m.entry_id IN "
        "(SELECT entry_id FROM candidates WHERE run_id = ? AND entry_id IS NOT NULL) "
        "ORDER BY m.produced_by_seq, m.lesson_index",
        [run_id],
    ).df()


def run_error_rows(store: Store, run_id: str) -> pd.DataFrame:
    """The ``verdict_errors`` rows of ``run_id``, every column, by verdict and stage
    (:func:`run_errors` is the checked, narrower view the CLI prints)."""
    return store.sql(
        "SELECT * FROM verdict_errors WHERE run_id = ? ORDER BY verdict_seq, stage",
        [run_id],
    ).df()


_HASHED = {
    "candidates": ("SELECT * EXCLUDE (run_id) FROM candidates WHERE run_id = ? "
                   "ORDER BY candidate_id"),
    "memory_entries": ("SELECT * EXCLUDE (run_id, created_at) FROM memory_entries WHERE entry_id "
                       "IN (SELECT entry_id FROM candidates WHERE run_id = ?) ORDER BY entry_id"),
    "events": ("SELECT * EXCLUDE (run_id, ts) FROM events WHERE subject_id IN (SELECT entry_id "
               "FROM candidates WHERE run_id = ?) ORDER BY event_id"),
    "verdict_errors": ("SELECT * EXCLUDE (run_id) FROM verdict_errors WHERE run_id = ? "
                       "ORDER BY verdict_hash, stage, sample_index"),
}


def run_content_hashes(store: Store, run_id: str) -> dict[str, str]:
    """SHA-256 of a run's rows per table (candidates, memory_entries, events,
    verdict_errors), without run ids and timestamps, plus row counts: two runs that
    wrote the same content have equal hashes whatever their executor or resumes."""
    out: dict[str, Any] = {}
    for name, sql in _HASHED.items():
        rows = store.con.execute(sql, [run_id]).fetchall()
        out[name] = hashlib.sha256(repr(rows).encode("utf-8")).hexdigest()
        out[f"n_{name}"] = len(rows)
    return out



def processed_verdicts(store: Store, run_ids: Sequence[str]) -> pd.DataFrame:
    """Every verdict the runs processed (a run_verdicts, candidates or verdict_errors row
    of one of ``run_ids``), in journal order: ``verdict_seq``, ``verdict_hash``,
    ``n_errors`` (the runs' errors on it) and ``payload`` (its journal entry's payload
    as JSON text, NULL when the journal lacks it)."""
    return store.sql(
        "WITH v AS (SELECT DISTINCT verdict_seq, verdict_hash FROM run_verdicts "
        "  WHERE run_id IN (SELECT unnest(?)) "
        "  UNION SELECT DISTINCT verdict_seq, verdict_hash FROM candidates "
        "  WHERE run_id IN (SELECT unnest(?)) "
        "  UNION SELECT DISTINCT verdict_seq, verdict_hash FROM verdict_errors "
        "  WHERE run_id IN (SELECT unnest(?))), "
        "e AS (SELECT verdict_hash, count(*) AS n_errors FROM verdict_errors "
        "  WHERE run_id IN (SELECT unnest(?)) GROUP BY verdict_hash) "
        "SELECT v.verdict_seq, v.verdict_hash, coalesce(e.n_errors, 0) AS n_errors, "
        "  j.payload::VARCHAR AS payload "
        "FROM v LEFT JOIN e USING (verdict_hash) LEFT JOIN journal j ON j.hash = v.verdict_hash "
        "ORDER BY v.verdict_seq",
        [list(run_ids)] * 4,
    ).df()


def verdict_errors_of(store: Store, run_id: str, verdict_hashes: Sequence[str]
                      ) -> pd.DataFrame:
    """Run ``run_id``'s errors on ``verdict_hashes``: verdict_hash, stage, reason, message."""
    return store.sql(
        "SELECT verdict_hash, stage, reason, message FROM verdict_errors WHERE run_id = ? "
        "AND verdict_hash IN (SELECT unnest(?))", [run_id, list(verdict_hashes)],
    ).df()


def valid_candidates(store: Store, run_ids: Sequence[str]) -> pd.DataFrame:
    """The valid candidates of ``run_ids`` (every column of the candidates table)."""
    return store.sql("SELECT * FROM candidates WHERE run_id IN (SELECT unnest(?)) AND valid",
                     [list(run_ids)]).df()


# --------------------------------------------------------------------------- evaluation reads


@dataclass(frozen=True, eq=False)
class RunRecord:
    """One run as an evaluation reads it, fetched by one store call (:func:`run_record`).

    ``info``: its ``extraction_runs`` row (:func:`run_info`); ``verdicts``: every verdict
    it processed (``verdict_hash, verdict_seq``: :func:`run_processed_verdicts`, by seq);
    ``recorded``: the verdicts it recorded in ``run_verdicts``, by seq
    (:func:`run_verdict_hashes`); ``keys``: every candidates column of every candidate,
    dropped ones too, but the text and evidence (what counting a run needs: the texts
    held 1.5 KB a candidate); ``candidates``: every column (:func:`run_candidates`),
    read from ``store`` when first asked.
    """

    run_id: str
    info: dict[str, Any]
    verdicts: pd.DataFrame
    recorded: list[str]
    keys: pd.DataFrame
    store: Store = field(repr=False)

    @cached_property
    def candidates(self) -> pd.DataFrame:
        """Every candidates column of the run, as :func:`run_candidates` reads them."""
        return run_candidates(self.store, self.run_id)

    def valid_candidates(self, *, texts: bool = True) -> pd.DataFrame:
        """The valid candidates, as ``run_candidates(valid_only=True)`` reads them
        (without text and evidence when not ``texts``: of :attr:`keys`)."""
        c = self.candidates if texts else self.keys
        return c[c["valid"].to_numpy(dtype=bool)].reset_index(drop=True)

    @property
    def extractor_id(self) -> str:
        return str(self.info["extractor_id"])


def run_record(store: Store, run_id: str, *, texts: bool = False) -> RunRecord:
    """``run_id``'s row, processed verdicts and candidates in one call (three statements:
    what :func:`run_info`, :func:`run_processed_verdicts`, :func:`run_verdict_hashes` and
    :func:`run_candidates` read one by one): the candidates without text and evidence
    (``keys``), or with them when ``texts`` (a reference truth matches the texts: one
    read). An unknown run is :func:`missing_run_error`."""
    con = store.con
    cur = con.execute("SELECT * FROM extraction_runs WHERE run_id = ?", [run_id])
    names = [d[0] for d in cur.description]
    rows = cur.fetchall()
    if not rows:
        raise missing_run_error(store, run_id)
    seen = con.execute(
        "SELECT verdict_hash, min(verdict_seq) AS verdict_seq,"
        " min(verdict_seq) FILTER (WHERE recorded) AS recorded_seq FROM ("
        " SELECT verdict_hash, verdict_seq, true AS recorded FROM run_verdicts"
        " WHERE run_id = ?"
        " UNION ALL SELECT verdict_hash, verdict_seq, false FROM verdict_errors"
        " WHERE run_id = ?"
        " UNION ALL SELECT verdict_hash, verdict_seq, false FROM candidates WHERE run_id = ?"
        ") GROUP BY verdict_hash ORDER BY verdict_seq, verdict_hash",
        [run_id, run_id, run_id]).df()
    keys = con.execute("SELECT *" + ("" if texts else " EXCLUDE (text, evidence)")
                       + " FROM candidates WHERE run_id = ? ORDER BY verdict_seq, lesson_index",
                       [run_id]).df()
    rec = seen[seen["recorded_seq"].notna().to_numpy()].sort_values(
        ["recorded_seq", "verdict_hash"], kind="stable")
    out = RunRecord(run_id=run_id, info=dict(zip(names, rows[0], strict=True)),
                    verdicts=seen[["verdict_hash", "verdict_seq"]].reset_index(drop=True),
                    recorded=[str(v) for v in rec["verdict_hash"]], keys=keys, store=store)
    if texts:
        out.__dict__["candidates"] = keys  # every column read: candidates asks no more
    return out


def run_candidates(store: Store, run_id: str, *, valid_only: bool = False) -> pd.DataFrame:
    """Every candidates column of ``run_id`` (valid ones only with ``valid_only``), by
    verdict seq and lesson index."""
    return store.sql(
        "SELECT * FROM candidates WHERE run_id = ?"
        + (" AND valid" if valid_only else "")
        + " ORDER BY verdict_seq, lesson_index",
        [run_id],
    ).df()


def run_candidate_counts(store: Store, run_id: str) -> tuple[int, int]:
    """(candidates, valid candidates) of ``run_id``."""
    row = store.sql("SELECT count(*), count(*) FILTER (WHERE valid) FROM candidates "
                    "WHERE run_id = ?", [run_id]).fetchall()[0]
    return int(row[0]), int(row[1])


def run_lessons(store: Store, run_id: str) -> pd.DataFrame:
    """The valid lessons of ``run_id`` as a judge reads them (``verdict_seq,
    verdict_hash, lesson_index, text, evidence``), by verdict seq and lesson index."""
    return store.sql(
        "SELECT verdict_seq, verdict_hash, lesson_index, text, evidence FROM candidates "
        "WHERE run_id = ? AND valid ORDER BY verdict_seq, lesson_index", [run_id]).df()


def run_verdict_hashes(store: Store, run_id: str) -> list[str]:
    """The verdicts ``run_id`` recorded in ``run_verdicts``, by verdict seq (empty for a
    run recorded before that table existed)."""
    return [r[0] for r in store.sql(
        "SELECT verdict_hash FROM run_verdicts WHERE run_id = ? ORDER BY verdict_seq",
        [run_id]).fetchall()]


def run_processed_verdicts(store: Store, run_id: str) -> pd.DataFrame:
    """Every verdict the run processed (``verdict_hash, verdict_seq``): its
    run_verdicts, error rows and candidates."""
    return store.sql(
        "SELECT verdict_hash, min(verdict_seq) AS verdict_seq FROM ("
        " SELECT verdict_hash, verdict_seq FROM run_verdicts WHERE run_id = ?"
        " UNION ALL SELECT verdict_hash, verdict_seq FROM verdict_errors WHERE run_id = ?"
        " UNION ALL SELECT verdict_hash, verdict_seq FROM candidates WHERE run_id = ?"
        ") GROUP BY verdict_hash", [run_id, run_id, run_id]).df()
