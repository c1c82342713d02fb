"""The batch runner: extract lessons from many recorded verdicts, resumably.

:func:`run_extraction` is the batch face of the one gate in
:mod:`truss_lab.extract._gate`: workers run :func:`extract_verdicts` on chunks of
verdicts and return plain rows; the driver (the only process that touches the
store) gates them with :func:`gated_tables` and writes them with
:func:`write_extraction`, one transaction per chunk that also records the chunk
in ``run_chunks`` and adds its counts to the run's ``extraction_runs`` row.

1. The batch is resolved (all verdicts, a SQL filter, refs) and hashed.
2. The run row is created (or, on resume, checked against the same config,
   extractor and batch).
3. The journal up to the batch's last verdict is verified; a bad chain marks
   the run failed and writes nothing else.
4. ``off`` stops here: no provider call, no row but the run record.
5. Chunks not yet in ``run_chunks`` are extracted (inline, threads, processes
   or Dask) and written as they complete, so a killed run resumes where it
   stopped; ids are content-derived and appends idempotent, so nothing
   duplicates and nothing is lost.

Executors
---------

Where a batch's chunks are extracted: inline, threads, processes or Dask. An
executor takes chunks of ``(seq, hash, payload text)`` verdicts and returns
futures of :class:`ExtractionRows`; the driver writes them as they complete. Processes
and Dask workers get the extractor pickled once per run (with fresh locks), not once
per chunk.

Verification and extraction at once
-----------------------------------

Verify the journal and extract recorded answers at the same time.

A batch writes nothing until the journal up to its last verdict verifies. With
recorded answers (replay, heuristic: no model is called, nothing is paid for)
and the inline executor, the driver need not wait idle for that: while the
signatures of one batch of journal entries are checked (by worker processes for
a long chain: journal/_verify.py), the driver extracts the chunks that batch
completes, from the same rows (one read of the journal serves both). The chunks extracted
so are gated and written in a transaction that commits only once the whole prefix has
verified (:class:`~truss_lab.extract._gate.HeldWrites`), and let go once written; on a
bad chain it is rolled back (and the replay's call counts put back) and the run fails as
before; a chunk the transaction did not store (a failed write) is extracted again
afterwards. At most ``max_chunks`` are extracted so; the rest are extracted afterwards
as usual. A replay from the store reads its recordings a window of chunks ahead
(:class:`_RecordingWindows`), whichever way the chunks are extracted.

The run's result
----------------

What a batch run did: :class:`ExtractionRun`, read back from its run record.
"""

from __future__ import annotations

import copyreg
import hashlib
import html
import io
import json
import multiprocessing
import os
import pickle
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import (
    FIRST_COMPLETED,
    Future,
    ProcessPoolExecutor,
    ThreadPoolExecutor,
)
from concurrent.futures import wait as futures_wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pandas as pd
import pyarrow as pa

from ..core._canonical import MalformedJSON, loads_strict
from ..core._config import MemoryConfig
from ..core._errors import BadInputError, ChainError, ProviderError, StoreError
from ..core._gc import full_collections_deferred
from ..core._models import LessonExtractionPolicy
from ..journal._ledger import verify_chain
from ..journal._spec import JournalColumns
from ..journal._table import (
    check_verdict_refs,
    entry_payloads,
    journal_batches,
    stored_keyring,
    verdict_refs,
)
from ..journal._verify import VerifyReport, verify_stream
from ..store._runs import (
    check_resumable,
    done_chunks,
    finish_run,
    get_run,
    missing_run_error,
    record_prompt_template,
    reopen_run,
    run_candidates,
    run_error_rows,
    run_info,
    run_memory_entries,
    run_processed_verdicts,
    unanswered_verdicts,
    update_run_config,
)
from ..store._store import Store
from ..store._usage import Prices, RunUsage, run_usage
from ._extractor import ExtractionRows, Extractor, ensure_run, extract_verdicts
from ._gate import Gated, HeldWrites, ScoreFunction, gate_chunk, write_group, write_retry
from ._heuristic import HeuristicProvider
from ._limits import DEFAULT_MAX_CONSECUTIVE_FAILURES
from ._providers import (
    CircuitOpenError,
    is_live,
    with_breaker,
)

__all__ = [
    "AUTO_PROCESSES_MIN_VERDICTS",
    "DEFAULT_CHUNK_SIZE",
    "Chunk",
    "Executor",
    "ExtractionRun",
    "choose_executor",
    "extract_chunk",
    "make_executor",
    "parse_executor",
    "rerun",
    "resolve_batch",
    "run_extraction",
    "verify_while_extracting",
]


# --- the run --------------------------------------------------------------------------------------

DEFAULT_CHUNK_SIZE = 1000
AUTO_PROCESSES_MIN_VERDICTS = 20_000
"""``executor="auto"`` (the default) runs the heuristic on worker processes only from this
many verdicts. A spawned worker first imports the extract stack (about 1 s on an idle
core, several under load) and the inline run extracts while the journal verifies; the
heuristic costs ~0.5 ms a verdict, so the sample's 1,200 verdicts never earn a worker
back (processes:2 took 6x inline's time; benchmarks/bench_executor.py)."""
_GROUP_VERDICTS = 65_536  # verdicts of recorded answers per transaction (a commit costs ~0.1 s)
# At most this many verdicts are extracted while the journal verifies: the signature
# checks run in worker processes meanwhile (journal/_verify.py), so this work is free of
# the GIL they would otherwise share. Their rows wait uncommitted, which DuckDB keeps in
# memory until the commit (~1 KB a verdict; docs/explanation/performance.md).
_EARLY_VERDICTS = 262_144
# A replay from the store reads its recordings a window of this many verdicts at a time
# (one scan of the completions table per window), and keeps only the windows of the
# chunks being extracted (_RecordingWindows).
_RECORDING_VERDICTS = 32_768


# -- the batch -----------------------------------------------------------------------


def _refs_from_frame(df: pd.DataFrame, source: str) -> pd.DataFrame:
    missing = [c for c in ("seq", "hash") if c not in df.columns]
    if missing:
        raise BadInputError(
            f"verdict refs need columns seq and hash; missing {', '.join(missing)}",
            source=source, field=missing[0],
        )
    out = df[["seq", "hash"]].copy()
    if out["seq"].isna().any() or out["hash"].isna().any():
        bad = int(np.flatnonzero((out["seq"].isna() | out["hash"].isna()).to_numpy())[0])
        raise BadInputError("seq and hash must not be null", source=source, line=bad + 1)
    try:
        out["seq"] = out["seq"].astype("int64")
    except (TypeError, ValueError):
        raise BadInputError("seq must be an integer", source=source, field="seq") from None
    out["hash"] = out["hash"].astype(str)
    return out


def _read_refs_file(path: Path) -> pd.DataFrame:
    source = str(path)
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq  # a refs file in Parquet is rare: loaded when given

        try:
            return _refs_from_frame(pq.read_table(path).to_pandas(), source)
        except (OSError, pa.ArrowException) as exc:
            raise BadInputError(f"cannot read Parquet refs ({exc})", source=source) from None
    rows = []
    with open(path, "rb") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = loads_strict(line)  # the one strict JSON reader: depth bounded, UTF-8
            except MalformedJSON as exc:
                raise BadInputError(f"not JSON ({exc})", source=source, line=lineno,
                                    field=exc.field) from None
            if not isinstance(obj, dict) or not isinstance(obj.get("seq"), int) or \
                    not isinstance(obj.get("hash"), str):
                raise BadInputError('expected {"seq": <int>, "hash": "<hex>"}', source=source,
                                    line=lineno)
            rows.append((obj["seq"], obj["hash"]))
    return pd.DataFrame(rows, columns=["seq", "hash"]).astype({"seq": "int64"})


def resolve_batch(
    store: Store,
    verdicts: Any = None,
    params: Sequence[Any] | None = None,
) -> pd.DataFrame:
    """The batch as a frame of ``seq`` and ``hash``, in ``seq`` order, one row per verdict.

    ``verdicts``: ``None`` (every ``contract_verdict``), a SQL ``WHERE`` clause over
    the journal table (with ``?`` ``params``), a DataFrame of refs (``seq``, ``hash``),
    a sequence of :class:`LedgerRef`, or the path of a JSONL/Parquet file of refs.
    Refs must name stored ``contract_verdict`` entries with those hashes.
    """
    if verdicts is None:
        return verdict_refs(store)
    if isinstance(verdicts, str | os.PathLike) and (
        isinstance(verdicts, os.PathLike) or Path(verdicts).suffix in (".jsonl", ".parquet")
    ):
        p = Path(verdicts)
        if not p.is_file():
            raise BadInputError("no such refs file", source=str(p))
        refs = _read_refs_file(p)
        source = str(p)
    elif isinstance(verdicts, str):
        return verdict_refs(store, verdicts, params)
    elif isinstance(verdicts, pd.DataFrame):
        refs, source = _refs_from_frame(verdicts, "<DataFrame>"), "<DataFrame>"
    elif isinstance(verdicts, Sequence):
        refs = pd.DataFrame(
            {"seq": [int(r.seq) for r in verdicts], "hash": [str(r.hash) for r in verdicts]}
        ).astype({"seq": "int64"})
        source = "<refs>"
    else:
        raise BadInputError(
            f"verdicts must be None, a WHERE clause, a DataFrame of refs, a list of "
            f"LedgerRef or a .jsonl/.parquet refs file; got {type(verdicts).__name__}",
            field="verdicts",
        )
    refs = refs.drop_duplicates().reset_index(drop=True)
    dup = refs["seq"].duplicated()
    if dup.any():
        s = int(refs["seq"][dup].iloc[0])
        raise BadInputError(f"seq {s} appears with two different hashes", source=source,
                            field="hash")
    check_verdict_refs(store, refs["seq"].tolist(), refs["hash"].tolist(), source=source)
    return refs.sort_values("seq", kind="stable").reset_index(drop=True)


def _dataset_hash(batch: pd.DataFrame) -> str:
    return hashlib.sha256("\n".join(batch["hash"].tolist()).encode("ascii")).hexdigest()


def _verify_prefix(store: Store, last_seq: int) -> Any:
    """Verify the stored chain from seq 1 up to ``last_seq``: every verdict in the
    batch, and every entry it links back to."""
    return verify_chain(store, upto_seq=last_seq)


# -- the run record --------------------------------------------------------------------


def _check_resumable(row: Mapping[str, Any], extractor: Extractor, config: MemoryConfig,
                     write_memory: bool, dataset_hash: str) -> None:
    want = {
        "extractor_id": extractor.extractor_id,
        "policy": config.lesson_extraction.value,
        "extraction_min_salience": config.extraction_min_salience,
        "write_memory": write_memory,
        "prompt_hash": extractor.template.prompt_hash,
        "dataset_hash": dataset_hash,
    }
    if row.get("config_hash") is not None:  # runs started before 008 recorded none
        want["config_hash"] = None if extractor.config is None else extractor.config.config_hash
    check_resumable(row, want)


# -- the run -------------------------------------------------------------------------------


def _load_chunk(store: Store, seqs: np.ndarray) -> Chunk:
    return entry_payloads(store, seqs.tolist())


def _progress_bar(total: int, initial: int, enabled: bool, run_id: str) -> Any:
    from tqdm.auto import tqdm  # it probes for a notebook on import: loaded when a run starts

    return tqdm(total=total, initial=initial, unit="verdict", disable=not enabled,
                desc=f"extract {run_id}", smoothing=0.1, dynamic_ncols=True)


@full_collections_deferred()  # the run holds its rows until they are written: core/_gc.py
def run_extraction(
    store: Store,
    extractor: Extractor,
    config: MemoryConfig | None = None,
    *,
    verdicts: Any = None,
    params: Sequence[Any] | None = None,
    executor: Any = None,
    progress: bool = True,
    run_id: str | None = None,
    write_memory: bool = True,
    chunk_size: int | None = None,
    resume: bool = False,
    score: ScoreFunction | None = None,
    scorer_name: str = "model_salience@1",
    run_config: Mapping[str, Any] | None = None,
    name: str | None = None,
    tags: Sequence[str] = (),
    max_consecutive_failures: int | None = DEFAULT_MAX_CONSECUTIVE_FAILURES,
) -> ExtractionRun:
    """Extract, gate and write lessons for a batch of recorded verdicts.

    ``verdicts`` selects the batch (see :func:`resolve_batch`; default: every
    verdict). ``executor``: ``"auto"`` (:func:`choose_executor`), ``"inline"``, ``"threads:N"``,
    ``"processes:N"``, ``"dask-local"``, ``"dask://host:port"`` or a ``distributed.Client``.
    ``chunk_size``: verdicts per chunk (default :data:`DEFAULT_CHUNK_SIZE`).
    ``write_memory=False`` keeps candidates only (a dry run). ``resume=True``
    continues run ``run_id`` (killed, failed or finished) and writes exactly
    what an uninterrupted run would have, on the run's executor and chunk size unless
    given others (see :func:`_run_settings`), recording in its config what changed
    (:func:`_open_run`: a moved ``base_url``). Raises :class:`ChainError` (after
    recording a failed run) when the journal does not verify. ``run_config``
    adds JSON values to the run's stored config (the CLI keeps its extractor spec
    there so ``--resume RUN`` needs nothing else). ``name`` and ``tags`` label a new
    run for people. ``max_consecutive_failures``: a live provider that fails this
    many verdicts in a row (the endpoint is down, retries exhausted) stops the
    run with :class:`CircuitOpenError`; the run is marked failed and resumable (``None``:
    never stop).

    Every candidate is kept with its salience whether it passed the gate or not, so any
    other threshold is a filter over the ``candidates`` table, with no model call.

    Parameters
    ----------
    store : Store
        The database holding the verified journal (opened for writing).
    extractor : Extractor
        The extractor to run.
    config : MemoryConfig, optional
        The policy and threshold (default ``MemoryConfig()``: off, which records an
        empty run and calls nothing).
    verdicts : optional
        The batch: a SQL condition on the journal (``"seq <= 600"``), a frame or file of
        verdict references; default every verdict.
    params : sequence, optional
        The values of ``?`` placeholders in a ``verdicts`` condition.
    executor : str or distributed.Client, optional
        Where extraction runs (above); default ``"auto"``.
    progress : bool, default True
        Show a progress bar.
    run_id : str, optional
        The run's id (default: derived from the extractor, policy, threshold and
        batch); with ``resume=True`` the run to continue.
    write_memory : bool, default True
        Write the gate's lessons to memory; ``False`` keeps candidates only.
    chunk_size : int, optional
        Verdicts per chunk.
    resume : bool, default False
        Continue run ``run_id``.
    score : callable, optional
        The score the gate compares with the threshold (default the model's salience).
    scorer_name : str, default "model_salience@1"
        The name and version of ``score``, recorded with the run.
    run_config : mapping, optional
        JSON values added to the run's stored configuration.
    name : str, optional
        A name for people (``truss-lab runs`` shows it).
    tags : sequence of str, default ()
        Tags for people.
    max_consecutive_failures : int or None, default 5
        The circuit breaker's limit (above).

    Returns
    -------
    truss_lab.extract.ExtractionRun
        The run: counts, seconds, errors (``.errors()``), usage (``.usage()``).

    Raises
    ------
    ChainError
        The journal does not verify (a failed run is recorded).
    BadInputError
        A bad batch, executor, chunk size or run id (an existing run without
        ``resume``, another chunk size on resume).

    See Also
    --------
    rerun : Replay a run from its own recordings.
    summarize_runs : Every run as a table.
    ContractCloseLearning : One verdict as it closes.

    Notes
    -----
    Many parameters because a batch is the run's record (run_id, name, tags, run_config,
    scorer_name), its selection (verdicts, params), its execution (executor, chunk_size,
    resume, progress, max_consecutive_failures) and its gate (config, write_memory, score)
    in one call, each stored with the run so a resume can check it.

    Examples
    --------
    >>> run = tl.run_extraction(store, tl.Extractor.heuristic(),
    ...                         tl.MemoryConfig(lesson_extraction="model-scored"),
    ...                         verdicts="seq <= 100", run_id="heur", write_memory=False,
    ...                         progress=False)
    >>> run.status, run.n_verdicts, run.n_candidates, run.n_lessons
    ('finished', 100, 69, 0)"""
    t0 = time.perf_counter()
    config = config or MemoryConfig()
    if chunk_size is not None and (isinstance(chunk_size, bool)
                                   or not isinstance(chunk_size, int) or chunk_size < 1):
        raise BadInputError(f"chunk_size must be a positive integer, got {chunk_size!r}",
                            field="chunk_size")
    executor, chunk_size = _run_settings(store, run_id if resume else None, executor,
                                         chunk_size)
    parse_executor(executor)
    runner = with_breaker(extractor, max_consecutive_failures)  # what the workers call
    batch = resolve_batch(store, verdicts, params)
    executor = choose_executor(extractor, len(batch)) if executor == "auto" else executor
    run_id, chunk_size = _open_run(
        store, run_id, extractor, config, batch, resume=resume, write_memory=write_memory,
        chunk_size=chunk_size, extra={
            "chunk_size": chunk_size, "batch_size": len(batch),
            "executor": executor if isinstance(executor, str) else "dask-client",
            "verdicts": verdicts if isinstance(verdicts, str) else None,
            "params": list(params) if params else None, **(run_config or {})},
        scorer_name=scorer_name, name=name, tags=tags)
    run = _Run(store, run_id, extractor, runner, config, batch, chunk_size,
               write_memory=write_memory, score=score, scorer_name=scorer_name,
               progress=progress, t0=t0, resume=resume)
    try:
        # DuckDB keeps the held write's uncommitted rows and the pages it reads and writes
        # in memory up to its limit (80 % of RAM by default): bounded, they spill to disk.
        with store.memory_bounded():
            return run.carry_out(executor)
    except ChainError:
        raise
    except CircuitOpenError as exc:
        msg = (f"run {run_id} stopped: {exc}; resume it with `truss-lab extract --resume "
               f"{run_id}` (or resume=True) once the endpoint answers")
        finish_run(store, run_id, "failed", 0.0, error=msg[:2000])
        raise CircuitOpenError(msg) from None
    except BaseException as exc:
        # Record why, so `truss-lab runs` shows it; a SIGKILL leaves 'running'.
        try:
            finish_run(store, run_id, "failed", 0.0, error=f"{type(exc).__name__}: {exc}"[:2000])
        except Exception:  # the store itself may be what failed
            pass
        raise
    finally:
        if run.bar is not None:
            run.bar.close()


def _run_settings(store: Store, resumed: str | None, executor: Any,
                  chunk_size: int | None) -> tuple[Any, int]:
    """The executor and chunk size a call runs with: those given, else (a resume of run
    ``resumed``) the run's stored ones, else auto and :data:`DEFAULT_CHUNK_SIZE`. A
    resume keeps its chunk size: its written chunks are numbered by it."""
    stored: dict[str, Any] = {}
    row = get_run(store, resumed) if resumed else None
    if row is not None:
        stored = json.loads(row["config"] or "{}")
    if executor is None:
        # A distributed.Client is not stored (only "dask-client"): a resume of such a
        # run runs inline unless given a client again.
        executor = stored.get("executor") if stored.get("executor") not in (
            None, "dask-client") else "auto"
    before = stored.get("chunk_size")
    if chunk_size is not None and before is not None and int(before) != chunk_size:
        raise BadInputError(
            f"run {resumed} was cut into chunks of {before} verdicts and resumes with them "
            f"(its written chunks are numbered by that size); chunk size {chunk_size} "
            "would redo or skip verdicts: leave it out (--chunk-size)", field="chunk_size")
    return executor, int(before or chunk_size or DEFAULT_CHUNK_SIZE)


def _open_run(store: Store, run_id: str | None, extractor: Extractor, config: MemoryConfig,
              batch: pd.DataFrame, *, resume: bool, write_memory: bool, chunk_size: int,
              extra: dict[str, Any], scorer_name: str, name: str | None,
              tags: Sequence[str]) -> tuple[str, int]:
    """The run's id and chunk size: a new run's record created with ``extra`` in its
    config, or (``resume``) the existing one checked against this call and reopened,
    with the chunk size it was started with."""
    dataset_hash = _dataset_hash(batch)
    existing = get_run(store, run_id) if run_id else None
    if resume:
        if run_id is None:
            raise BadInputError("resume=True needs the run_id of the run to continue",
                                field="run_id")
        if existing is None:
            raise missing_run_error(store, run_id)
        _check_resumable(existing, extractor, config, write_memory, dataset_hash)
        stored = json.loads(existing["config"] or "{}")
        chunk_size = int(stored.get("chunk_size", chunk_size))
        # What this resume runs with, where it differs: a moved endpoint (base_url) is
        # the next resume's endpoint too, and readers see where the calls went.
        update_run_config(store, run_id, {
            k: v for k, v in extra.items()
            if v is not None and k not in ("chunk_size", "batch_size") and stored.get(k) != v})
        reopen_run(store, run_id)
        return run_id, chunk_size
    if existing is not None:
        raise StoreError(
            f"run {run_id!r} already exists; pass resume=True (--resume {run_id}) to "
            "continue it, or choose another run id")
    run_id = run_id or (
        f"run-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{uuid.uuid4().hex[:8]}")
    with store.transaction():
        ensure_run(store, run_id, extractor, config, status="running",
                   write_memory=write_memory, extra=extra, templates=False,
                   scorer=scorer_name, dataset_hash=dataset_hash, counted=True,
                   name=name, tags=tags)
    return run_id, chunk_size


def rerun(store: Store, run_id: str, *, new_run_id: str | None = None,
          executor: Any = None, progress: bool = True,
          score: ScoreFunction | None = None) -> ExtractionRun:
    """Replay run ``run_id`` from its own recordings, as a new run: zero live calls.

    The new run has the run's extractor, policy, threshold, scorer and dry-run
    setting and processes the verdicts it processed. A live run is answered by the
    recordings its own calls made (never another run's answers to the same
    verdicts: a second live run with the same settings replays as itself); a rerun
    by its source's; a replay by extractor id as it was (each verdict's earliest
    recording); a heuristic run by the heuristic. So the candidates, lessons and
    events are the run's (:func:`~truss_lab.store._runs.run_content_hashes` equal);
    a verdict whose live call failed has no recording, and fails again in the rerun
    with the error it met (the same error row). ``new_run_id`` (default: generated)
    names the new run; when it exists already as a rerun of ``run_id``, it is
    resumed. A run gated on a score other than the model's salience needs that
    ``score`` function again. ``usage`` of the new run shows the recorded calls'
    tokens and latency.

    Parameters
    ----------
    store : Store
        The database holding the run and its recordings.
    run_id : str
        The run to replay.
    new_run_id : str, optional
        The new run's id (default: generated from ``run_id``).
    executor : str, optional
        As for :func:`run_extraction`; default the run's own.
    progress : bool, default True
        Show a progress bar.
    score : callable, optional
        The score function the run was gated on, when not the model's salience.

    Returns
    -------
    truss_lab.extract.ExtractionRun
        The new run.

    Raises
    ------
    BadInputError
        No such run, ``new_run_id`` names another run, or a gating score is missing.

    See Also
    --------
    run_extraction : Makes a run.

    Examples
    --------
    >>> again = tl.rerun(store, "good", new_run_id="good-again", progress=False)
    >>> again.run_id, again.n_candidates, again.n_lessons
    ('good-again', 1134, 414)
    """
    row = run_info(store, run_id)
    cfg = json.loads(row["config"] or "{}")
    ext_id, provider = str(row["extractor_id"]), str(row["provider"])
    scorer = str(row["scorer"] or "model_salience@1")
    if score is None and scorer != "model_salience@1":
        raise BadInputError(
            f"run {run_id} was gated on the score {scorer!r}; give that score function "
            "(rerun(..., score=...)) to rerun it", field="score")
    source: str | None = cfg.get("rerun_of") or None
    extractor: Extractor
    if provider == "heuristic":
        extractor = Extractor.heuristic()
    elif source is None and provider != "replay":
        source = run_id  # a live run: the answers it paid for
    spec = cfg.get("extractor_spec")
    if provider == "replay" and source is None and spec not in (None, f"replay:{ext_id}"):
        raise BadInputError(
            f"run {run_id} replayed recordings from {spec!r}, not from the database: "
            "ingest them (`truss-lab ingest completions`), then extract with "
            f"--extractor replay:{ext_id}", field="run_id")
    if provider != "heuristic":
        extractor = Extractor.replay(store, ext_id, run_id=source)
    if extractor.extractor_id != ext_id:
        raise BadInputError(f"run {run_id} ran extractor {ext_id!r}, which a rerun cannot "
                            f"rebuild (it would run {extractor.extractor_id!r})",
                            field="run_id")
    refs = run_processed_verdicts(store, run_id).rename(
        columns={"verdict_seq": "seq", "verdict_hash": "hash"})[["seq", "hash"]]
    existing = get_run(store, new_run_id) if new_run_id is not None else None
    resume = existing is not None
    if existing is not None and json.loads(existing["config"] or "{}").get(
            "rerun_of") != source:
        raise StoreError(f"run {new_run_id!r} already exists and is not a rerun of "
                         f"{run_id!r}; choose another run id")
    config = MemoryConfig(lesson_extraction=row["policy"],
                          extraction_min_salience=row["extraction_min_salience"])
    return run_extraction(
        store, extractor, config, verdicts=refs, executor=executor, progress=progress,
        run_id=new_run_id, write_memory=bool(row["write_memory"]),
        chunk_size=None if resume else int(cfg.get("chunk_size") or DEFAULT_CHUNK_SIZE),
        resume=resume, score=score, scorer_name=scorer,
        run_config={"rerun_of": source, "extractor_spec": (
            "heuristic" if provider == "heuristic" else f"replay:{ext_id}")},
        name=None if resume else f"rerun of {run_id}",
        tags=() if resume else list(row["tags"] or ()))


class _Run:
    """One call of :func:`run_extraction` once its run record is open: the chunks not
    yet in ``run_chunks``, extracted, gated and written as they complete (the steps are
    :meth:`verify`, :meth:`extract_and_write`; :meth:`carry_out` runs them in order).

    ``last`` is when the previous chunk was gated: setup (batch, verification) counts
    toward the first chunk's time, a chunk's gate and write with the next (or finish).
    """

    def __init__(self, store: Store, run_id: str, extractor: Extractor, runner: Extractor,
                 config: MemoryConfig, batch: pd.DataFrame, chunk_size: int, *,
                 write_memory: bool, score: ScoreFunction | None, scorer_name: str,
                 progress: bool, t0: float, resume: bool = False) -> None:
        """Many parameters because each is one setting of :func:`run_extraction` the run's
        steps read (the record, the batch, the gate, the chunking, a resume)."""
        self.store, self.run_id, self.runner, self.config = store, run_id, runner, config
        self.resume = resume
        self.template = extractor.template
        self.live = is_live(extractor.provider)
        self.batch = batch
        self.chunk_size = chunk_size
        self.write_memory, self.score, self.scorer_name = write_memory, score, scorer_name
        self.progress = progress
        self.t0 = self.last = t0
        self.n_chunks = -(-len(batch) // chunk_size)
        self.seqs_all = batch["seq"].to_numpy(dtype=np.int64)
        self.hashes_all = batch["hash"].tolist()
        # A live provider's chunks are written one by one (its answers cost money);
        # recorded ones in groups of about _GROUP_VERDICTS, one append per table,
        # since each append costs a scan of the table it checks keys against.
        self.per_write = 1 if self.live else max(1, _GROUP_VERDICTS // chunk_size)
        self.bar: Any = None
        self._gate_failed = False
        self._held: HeldWrites | None = None
        # Per chunk extracted while the journal verifies: the replay's call tally it
        # added (put back should the chunk be extracted again), and whether the bar
        # counted it.
        self._tally: tuple[int, int] | None = None
        self._early_calls: dict[int, tuple[int, int]] = {}
        self._counted: set[int] = set()
        self.windows = _RecordingWindows(runner.provider, self.hashes_all, chunk_size)

    def seqs(self, index: int) -> np.ndarray:
        """The seqs of chunk ``index``."""
        return self.seqs_all[index * self.chunk_size:(index + 1) * self.chunk_size]

    def carry_out(self, executor: Any) -> ExtractionRun:
        """Verify, extract, gate and write the chunks still to do; finish the run."""
        store, run_id = self.store, self.run_id
        done = done_chunks(store, run_id)
        todo = [i for i in range(self.n_chunks) if i not in done]
        # A resume of a live run asks again for the verdicts every call of which failed
        # before this call (a timeout, a 5xx): a finished run is not done with them.
        # Recorded answers (replay) would fail again as they did: not retried.
        failed = (unanswered_verdicts(store, run_id) if self.resume and self.live
                  else pd.DataFrame({"verdict_seq": []}))
        done_verdicts = len(self.batch) - sum(len(self.seqs(i)) for i in todo)
        try:
            written = self.verify(executor, todo, done_verdicts)
            if self.config.lesson_extraction is LessonExtractionPolicy.off:
                # ADR 0011 invariant 1: no provider call, no write but the run record.
                finish_run(store, run_id, "finished", time.perf_counter() - self.t0)
                return _run_result(store, run_id, time.perf_counter() - self.t0, 0,
                                  self.n_chunks, 0)
            if todo and not written:  # a committed held write recorded it already
                tpl = self.template
                with store.transaction():
                    record_prompt_template(store, tpl.version, tpl.prompt_hash, tpl.text)
            done_now = self.extract_and_write(executor, todo, written, done_verdicts)
            retried = self.retry(executor, failed["verdict_seq"].tolist())
        finally:
            self.windows.close()
        finish_run(store, run_id, "finished", time.perf_counter() - self.last)
        store.checkpoint()
        return _run_result(store, run_id, time.perf_counter() - self.t0, done_now,
                          self.n_chunks, self.n_chunks - len(todo), retried)

    def gate(self, index: int, seqs: np.ndarray, rows: ExtractionRows) -> Gated:
        """Chunk ``index``'s rows through the gate, timed since the previous one."""
        now = time.perf_counter()
        g = gate_chunk(
            self.run_id, index, seqs,
            self.hashes_all[index * self.chunk_size:(index + 1) * self.chunk_size],
            rows, self.config, write_memory=self.write_memory, score=self.score,
            scorer_name=self.scorer_name, elapsed=now - self.last, live=self.live)
        self.last = now
        return g

    def gate_early(self, index: int, seqs: np.ndarray, rows: ExtractionRows) -> bool:
        """:meth:`gate` for a chunk extracted while the journal verifies, handed to the
        held write that commits once it has; nothing of it is kept here. Whether the
        held write took it: a chunk it did not take, or whose write is rolled back, is
        extracted again after verification (:meth:`verify`)."""
        provider = self.runner.provider
        if self._tally is not None:
            now = provider.call_tally()
            self._early_calls[index] = (now[0] - self._tally[0], now[1] - self._tally[1])
            self._tally = now
        held = self._held
        # A gate that raises here (a score function) must raise where it did
        # before, after verification, so the chunks gated before it are written:
        # from the first failure on, chunks are left to the main loop, which gates
        # (and fails) again.
        if self._gate_failed or held is None or not held.active:
            return False
        try:
            g = self.gate(index, seqs, rows)
        except Exception:
            self._gate_failed = True
            return False
        held.add(g)
        self.bar.update(len(seqs))  # a chunk gated here is counted here, not below
        self._counted.add(index)
        return True

    def verify(self, executor: Any, todo: list[int], done_verdicts: int) -> set[int]:
        """Verify the journal up to the batch's last verdict: the chunks extracted
        meanwhile and stored (committed) with the verification. The others extracted
        meanwhile were not kept (a held write failed, or the gate raised): they are
        extracted again after, their replay calls and progress taken back. A bad chain
        fails the run (:class:`ChainError`) with nothing written but its record."""
        if not len(self.batch):
            return set()
        store, run_id = self.store, self.run_id
        last_seq = int(self.batch["seq"].iloc[-1])
        early: list[tuple[int, np.ndarray, bool]] = []
        written: set[int] = set()  # chunks whose rows the held transaction stored
        if (executor == "inline" and not self.live and todo
                and self.config.lesson_extraction is not LessonExtractionPolicy.off):
            # Recorded answers: extract, gate and write (uncommitted) while the
            # signatures verify (verify_while_extracting, _gate.HeldWrites); the driver
            # would wait for them anyway.
            tpl = self.template
            # The bar moves as chunks are extracted and written (uncommitted).
            self.bar = _progress_bar(len(self.batch), done_verdicts, self.progress, run_id)
            held = self._held = HeldWrites(store, run_id, self.per_write,
                                           (tpl.version, tpl.prompt_hash, tpl.text))
            provider = self.runner.provider
            if hasattr(provider, "call_tally"):
                self._tally = provider.call_tally()
            try:
                report, early = verify_while_extracting(
                    store, self.runner, todo, self.seqs_all, self.chunk_size, last_seq,
                    max_chunks=max(1, _EARLY_VERDICTS // self.chunk_size),
                    then=self.gate_early, extracted=held.flush, before=self.windows.before)
                if report.ok:
                    written = held.commit()
            finally:
                held.rollback()  # when not committed: a bad chain, or an error
            again = [i for i, _, _ in early if i not in written]
            if report.ok and again:
                self.take_back(again)
        else:
            report = _verify_prefix(store, last_seq)
        if not report.ok:
            msg = (f"the journal does not verify at seq {report.first_bad_seq} "
                   f"({report.reason}): {report.message}; nothing was extracted")
            finish_run(store, run_id, "failed", time.perf_counter() - self.t0, error=msg)
            raise ChainError(msg, seq=report.first_bad_seq, reason=report.reason or
                             "malformed")
        return written

    def take_back(self, chunks: list[int]) -> None:
        """Chunks extracted while the journal verified but not stored with it are to be
        extracted again: put back the replay calls they counted and the progress."""
        if self._tally is not None:
            calls, unchecked = self.runner.provider.call_tally()
            for i in chunks:
                c, u = self._early_calls.get(i, (0, 0))
                calls, unchecked = calls - c, unchecked - u
            self.runner.provider.restore_call_tally((calls, unchecked))
        counted = [i for i in chunks if i in self._counted]
        if counted and self.bar is not None:
            self.bar.n -= sum(len(self.seqs(i)) for i in counted)
            self.bar.refresh()

    def extract_and_write(self, executor: Any, todo: list[int], written: set[int],
                          done_verdicts: int) -> int:
        """Extract the chunks of ``todo`` not ``written`` with the verification on
        ``executor``, gating and writing each as it completes (in groups of
        :attr:`per_write`); the verdicts of this call."""
        store, run_id = self.store, self.run_id
        done_now = sum(len(self.seqs(i)) for i in todo if i in written)
        rest = [i for i in todo if i not in written]
        errors_seen = int(get_run(store, run_id)["n_errors"] or 0)  # type: ignore[index]
        ex = make_executor(executor, self.runner) if rest else None
        if self.bar is None:
            self.bar = _progress_bar(len(self.batch), done_verdicts, self.progress, run_id)
        bar = self.bar
        group: list[Gated] = []
        try:
            if parse_executor(executor)[0] in ("processes", "dask"):
                self.windows.provider = None  # each worker got every recording, pickled
            elif ex is not None:
                self.windows.in_flight(ex.window)
            for index, seqs, rows in _pipeline(store, ex, [(i, self.seqs(i)) for i in rest],
                                               self.windows.before):
                done_now += len(seqs)
                g = self.gate(index, seqs, rows)
                group.append(g)
                errors_seen += g.err.num_rows
                if len(group) >= self.per_write:
                    full, group = group, []  # a failed write is not retried below
                    write_group(store, run_id, full)
                bar.update(len(seqs))
                bar.set_postfix(errors=errors_seen, refresh=False)
        finally:
            try:
                # Chunks extracted before a failure are kept, as if written one by one.
                write_group(store, run_id, group)
            finally:
                if ex is not None:
                    ex.close()
        return done_now


    def retry(self, executor: Any, seqs: list[int]) -> int:
        """Extract again the verdicts ``seqs`` (of this run's batch) every call of which
        had failed, each chunk's together, and write each chunk's retry in place of its
        errors (:func:`~truss_lab.extract._gate.write_retry`); the verdicts retried."""
        if not seqs:
            return 0
        where = {int(s): i for i, s in enumerate(self.seqs_all)}
        chunks: dict[int, list[int]] = {}
        for seq in seqs:
            if int(seq) in where:
                pos = where[int(seq)]
                chunks.setdefault(pos // self.chunk_size, []).append(pos)
        hashes = {c: [self.hashes_all[p] for p in ps] for c, ps in chunks.items()}
        ex = make_executor(executor, self.runner)
        try:
            for index, got, rows in _pipeline(self.store, ex, [
                    (c, self.seqs_all[ps]) for c, ps in sorted(chunks.items())]):
                now = time.perf_counter()
                g = gate_chunk(self.run_id, index, got, hashes[index], rows, self.config,
                               write_memory=self.write_memory, score=self.score,
                               scorer_name=self.scorer_name, elapsed=now - self.last,
                               live=self.live)
                self.last = now
                write_retry(self.store, self.run_id, g)
        finally:
            ex.close()
        return sum(map(len, chunks.values()))


def _pipeline(store: Store, ex: Executor | None, todo: list[tuple[int, np.ndarray]],
              before: Callable[[int], None] | None = None,
              ) -> Iterator[tuple[int, np.ndarray, ExtractionRows]]:
    """Submit chunks ``(index, seqs)`` (a bounded window ahead) and yield them as they
    complete; ``before(index)`` is called before a chunk is submitted."""
    if ex is None:
        return
    pending: dict[Any, tuple[int, np.ndarray]] = {}
    it = iter(todo)

    def fill() -> None:
        while len(pending) < ex.window:
            nxt = next(it, None)
            if nxt is None:
                return
            i, seqs = nxt
            if before is not None:
                before(i)
            pending[ex.submit(_load_chunk(store, seqs))] = (i, seqs)

    fill()
    while pending:
        for fut in ex.wait(list(pending)):
            i, seqs = pending.pop(fut)
            yield i, seqs, fut.result()
        fill()


# --- executors ------------------------------------------------------------------------------------

_DASK_HINT = "pip install 'truss_lab[dask]'"

Chunk = list[tuple[int, str, str]]  # (seq, hash, canonical payload text)


_LOCKS = {type(threading.Lock()): threading.Lock, type(threading.RLock()): threading.RLock}


class _Pickler(pickle.Pickler):
    # Providers hold locks (ReplayProvider's counters, the OpenAI semaphore); a
    # worker needs fresh ones, not the driver's, so locks pickle as new locks.
    def reducer_override(self, obj: Any) -> Any:
        make = _LOCKS.get(type(obj))
        if make is not None:
            return make, ()
        return NotImplemented


def _portable(extractor: Extractor) -> bytes:
    buf = io.BytesIO()
    try:
        p = _Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL)
        p.dispatch_table = copyreg.dispatch_table.copy()
        p.dump(extractor)
    except (pickle.PicklingError, TypeError, AttributeError) as exc:
        raise ProviderError(
            f"extractor {extractor.extractor_id!r} cannot be sent to worker processes "
            f"({exc}); use executor='threads:N' for it"
        ) from None
    return buf.getvalue()


_WORKER_EXTRACTORS: dict[str, Extractor] = {}


def _worker_extractor(token: str, blob: bytes | None) -> Extractor:
    ex = _WORKER_EXTRACTORS.get(token)
    if ex is None:
        if blob is None:
            raise RuntimeError("worker has no extractor")  # initializer did not run
        _WORKER_EXTRACTORS.clear()  # one run at a time per worker
        ex = pickle.loads(blob)
        _WORKER_EXTRACTORS[token] = ex
    return ex


def _payload(text: str) -> Any:
    # orjson reads the stored canonical payloads ~1.5x faster; anything it refuses
    # (an integer beyond 64 bits, a lone surrogate) is read as json.loads reads it.
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def extract_chunk(extractor: Extractor, chunk: Chunk) -> ExtractionRows:
    """Extract one chunk of ``(seq, hash, payload text)`` verdicts: what a worker runs."""
    # Each payload is read as it is reached and dropped once rendered, while it is
    # still in cache: holding a chunk's parsed payloads at once measured ~15% more
    # time per verdict of replay (more heap pages touched, fewer cache hits).
    provider = extractor.provider
    own = (getattr(provider, "reads_store", False)
           and not provider.covers(h for _, h, _ in chunk))
    if own:  # no window of the run's holds them: read this chunk's recordings at once
        key = object()
        provider.hold(key, [h for _, h, _ in chunk])
    try:
        return extract_verdicts(extractor, ((s, h, _payload(p)) for s, h, p in chunk))
    finally:
        if own:
            provider.release(key)


class _RecordingWindows:
    """A replay's recordings read from the store a window of chunks at a time, ahead of
    the chunks' extraction (:meth:`before`), and dropped once the run has moved on: at
    most :attr:`keep` windows are held (two, and as many as the chunks in flight on the
    executor span), so memory does not grow with the run's verdicts. A provider that
    holds its recordings in memory (a file, a frame, worker processes) is left alone."""

    def __init__(self, provider: Any, hashes: list[str], chunk_size: int) -> None:
        self.provider = provider if getattr(provider, "reads_store", False) else None
        self.hashes, self.chunk_size = hashes, chunk_size
        self.per = max(1, _RECORDING_VERDICTS // chunk_size)  # chunks per window
        self.keep = 2
        self.held: list[int] = []

    def in_flight(self, chunks: int) -> None:
        """Keep the windows ``chunks`` chunks in flight may span."""
        self.keep = max(self.keep, 2 + -(-chunks // self.per))

    def before(self, index: int) -> None:
        """Chunk ``index`` is to be extracted: hold its window, drop the oldest."""
        if self.provider is None:
            return
        w = index // self.per
        if w in self.held:
            return
        while len(self.held) >= self.keep:
            self.provider.release(("window", self.held.pop(0)))
        span = self.per * self.chunk_size
        self.provider.hold(("window", w), self.hashes[w * span:(w + 1) * span])
        self.held.append(w)

    def close(self) -> None:
        """Drop every window held."""
        while self.held:
            self.provider.release(("window", self.held.pop()))


# A worker whose driver died (kill -9: no chance to shut the pool down) would
# wait on its task queue forever, and keep multiprocessing's resource tracker
# alive with it. Each worker watches its parent: once the driver is gone the
# worker is re-parented, and it exits.
_PARENT_POLL_S = 0.5


def _exit_when_orphaned(driver_pid: int) -> None:
    while os.getppid() == driver_pid:
        time.sleep(_PARENT_POLL_S)
    os._exit(1)


def _process_init(token: str, blob: bytes, driver_pid: int | None = None) -> None:
    if driver_pid is not None:
        threading.Thread(target=_exit_when_orphaned, args=(driver_pid,), daemon=True,
                         name="truss-parent-watch").start()
    _worker_extractor(token, blob)


def _process_task(token: str, chunk: Chunk) -> ExtractionRows:
    return extract_chunk(_worker_extractor(token, None), chunk)


def _dask_task(token: str, blob: bytes, chunk: Chunk) -> ExtractionRows:
    return extract_chunk(_worker_extractor(token, blob), chunk)


class Executor:
    """submit(chunk) -> future; wait(futures) -> done set; close()."""

    window = 1

    def submit(self, chunk: Chunk) -> Any:
        raise NotImplementedError

    def wait(self, futures: list[Any]) -> set[Any]:
        return set(futures_wait(futures, return_when=FIRST_COMPLETED).done)

    def close(self) -> None:
        pass


class _Inline(Executor):
    def __init__(self, extractor: Extractor) -> None:
        self.extractor = extractor

    def submit(self, chunk: Chunk) -> Any:
        fut: Future[ExtractionRows] = Future()
        fut.set_result(extract_chunk(self.extractor, chunk))
        return fut


class _Pool(Executor):
    def __init__(self, pool: Any, fn: Callable[[Chunk], Any], workers: int) -> None:
        self.pool, self.fn, self.window = pool, fn, 2 * workers

    def submit(self, chunk: Chunk) -> Any:
        return self.fn(chunk)

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


class _Dask(Executor):
    def __init__(self, extractor: Extractor, spec: Any) -> None:
        try:
            import distributed  # the optional [dask] extra
        except ImportError:
            raise BadInputError(
                f"the Dask executor needs dask.distributed: {_DASK_HINT}", field="executor"
            ) from None
        self._distributed = distributed
        self.cluster = None
        self.own_client = True
        if isinstance(spec, str) and spec == "dask-local":
            self.cluster = distributed.LocalCluster(
                n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
            self.client = distributed.Client(self.cluster)
        elif isinstance(spec, str):
            try:
                self.client = distributed.Client(spec.removeprefix("dask://"), timeout=10)
            except OSError as exc:
                raise BadInputError(f"cannot reach the Dask scheduler at {spec}: {exc}",
                                    field="executor") from None
        else:
            self.client, self.own_client = spec, False
        n = max(1, len(self.client.scheduler_info().get("workers", {})) or 2)
        self.window = 2 * n
        self.token = uuid.uuid4().hex
        self.blob = self.client.scatter(_portable(extractor), broadcast=True)

    def submit(self, chunk: Chunk) -> Any:
        return self.client.submit(_dask_task, self.token, self.blob, chunk, pure=False)

    def wait(self, futures: list[Any]) -> set[Any]:
        return set(self._distributed.wait(futures, return_when="FIRST_COMPLETED").done)

    def close(self) -> None:
        if self.own_client:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()


def choose_executor(extractor: Extractor, n_verdicts: int) -> str:
    """What ``executor="auto"`` runs ``n_verdicts`` on: ``processes:N`` (N the cores, at
    most 4) for the heuristic from :data:`AUTO_PROCESSES_MIN_VERDICTS` verdicts (pure
    Python work that worker processes share out), else ``inline``: a replay or a live
    extractor waits on recordings or the network, not the CPU, and inline extracts
    while the journal verifies."""
    if isinstance(extractor.provider, HeuristicProvider) and \
            n_verdicts >= AUTO_PROCESSES_MIN_VERDICTS:
        return f"processes:{min(4, os.cpu_count() or 2)}"
    return "inline"


def parse_executor(spec: Any) -> tuple[str, int]:
    """(kind, workers) of an executor spec; a clear error for a bad one."""
    if type(spec).__module__.split(".")[0] == "distributed":
        return "dask", 0
    if not isinstance(spec, str):
        raise BadInputError(f"executor must be a string or a distributed.Client, got "
                            f"{type(spec).__name__}", field="executor")
    if spec == "inline":
        return "inline", 1
    if spec == "auto":  # resolved by choose_executor once the batch is known
        return "auto", 0
    if spec == "dask-local" or (spec.startswith("dask://") and len(spec) > 7):
        return "dask", 0
    name, _, n = spec.partition(":")
    if name in ("threads", "processes"):
        try:
            workers = int(n) if n else (os.cpu_count() or 2)
        except ValueError:
            workers = 0
        if workers < 1:
            raise BadInputError(f"executor {spec!r}: expected {name}:N with N >= 1",
                                field="executor")
        return name, workers
    raise BadInputError(
        f"unknown executor {spec!r}; expected auto, inline, threads:N, processes:N, "
        "dask-local or dask://host:port", field="executor")


def make_executor(spec: Any, extractor: Extractor) -> Executor:
    name, workers = parse_executor(spec)
    if name == "inline":
        return _Inline(extractor)
    if name == "dask":
        return _Dask(extractor, spec)
    if name == "threads":
        tp = ThreadPoolExecutor(workers, thread_name_prefix="truss-extract")
        return _Pool(tp, lambda c: tp.submit(extract_chunk, extractor, c), workers)
    token = uuid.uuid4().hex
    # spawn, not fork: the driver holds a DuckDB connection and threads.
    pp = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                             initializer=_process_init,
                             initargs=(token, _portable(extractor), os.getpid()))
    return _Pool(pp, lambda c: pp.submit(_process_task, token, c), workers)


# --- verification and extraction at once ----------------------------------------------------------

Extracted = tuple[int, np.ndarray, Any]


def verify_while_extracting(
    store: Store, runner: Any, todo: list[int], seqs_all: np.ndarray, chunk_size: int,
    last_seq: int, *, max_chunks: int,
    then: Callable[[int, np.ndarray, ExtractionRows], Any] | None = None,
    extracted: Callable[[], None] | None = None,
    before: Callable[[int], None] | None = None,
) -> tuple[VerifyReport, list[Extracted]]:
    """The report of ``verify_chain(store, upto_seq=last_seq)``, and the first
    ``max_chunks`` chunks of ``todo`` extracted meanwhile (in ``todo`` order), each
    passed through ``then(index, seqs, rows)`` when given (the batch gates and writes
    them, and keeps nothing of them here). ``before(index)`` is called before a chunk
    is extracted; ``extracted()`` once the journal has been read and those chunks
    extracted, while the last signatures may still be checked."""
    early = todo[:max_chunks]
    need: dict[int, int] = {}
    for i in early:
        for q in seqs_all[i * chunk_size:(i + 1) * chunk_size].tolist():
            need[q] = i
    held: dict[int, tuple[int, str, str]] = {}
    out: list[Extracted] = []

    def feed() -> Iterator[JournalColumns]:
        k = 0  # the next chunk of ``early`` to extract
        for part in journal_batches(store, upto_seq=last_seq):
            yield part  # the pool starts on this batch; meanwhile, extract from it
            if k == len(early):
                continue
            for q, h, p in zip(part.seq, part.hash, part.payload, strict=True):
                if q in need:
                    held[q] = (q, h, p)
            top = part.seq[-1] if len(part) else -1
            while k < len(early):
                i = early[k]
                seqs = seqs_all[i * chunk_size:(i + 1) * chunk_size]
                if int(seqs[-1]) > top:
                    break
                chunk = [held.pop(q) for q in seqs.tolist() if q in held]
                if before is not None:
                    before(i)
                rows = extract_chunk(runner, chunk)
                out.append((i, seqs, rows if then is None else then(i, seqs, rows)))
                k += 1
        if extracted is not None:
            extracted()

    provider = runner.provider
    tally = provider.call_tally() if hasattr(provider, "call_tally") else None
    report = verify_stream(feed(), stored_keyring(store))
    if report.ok:
        return report, out
    if tally is not None:
        provider.restore_call_tally(tally)  # as if nothing had been asked: nothing was extracted
    return report, []


# --- the run's result -----------------------------------------------------------------------------

@dataclass
class ExtractionRun:
    """What :func:`run_extraction` did. Counts are the run's totals (over resumes);
    ``seconds`` and ``verdicts_per_second`` are this call's."""

    run_id: str
    """The run."""
    status: str
    """``finished``, ``failed`` or ``running``."""
    extractor_id: str
    """The extractor."""
    policy: str
    """The lesson_extraction policy."""
    n_verdicts: int
    """Verdicts processed."""
    n_candidates: int
    """Candidate lessons proposed."""
    n_lessons: int
    """Lessons that passed the gate and were written."""
    n_errors: int
    """Verdicts whose completion could not be used (parse or call error)."""
    provider_calls: int
    """Model calls made (0 for a replay)."""
    seconds: float
    """Wall time of this call."""
    verdicts_this_call: int = 0
    """Verdicts this call processed (a resume skips the done ones)."""
    chunks_total: int = 0
    """Chunks of the run."""
    chunks_skipped: int = 0
    """Chunks already done before this call (resumed)."""
    error: str | None = None
    """Why the run failed, or None."""
    retried: int = 0
    """Verdicts every call of which had failed, asked again by this call (a resume)."""
    store: Store | None = field(default=None, repr=False, compare=False)
    """The database the run is in (for :meth:`usage`, :meth:`candidates`, ...)."""

    @property
    def verdicts_per_second(self) -> float:
        """Verdicts extracted per second of wall time in this call (NaN when none)."""
        if not self.verdicts_this_call or self.seconds <= 0:
            return float("nan")
        return self.verdicts_this_call / self.seconds

    def to_dict(self) -> dict[str, Any]:
        """The counts as plain JSON-ready values."""
        keys = ("run_id", "status", "extractor_id", "policy", "n_verdicts", "n_candidates",
                "n_lessons", "n_errors", "provider_calls", "seconds", "verdicts_this_call",
                "chunks_total", "chunks_skipped", "retried", "error")
        out = {k: getattr(self, k) for k in keys}
        vps = self.verdicts_per_second
        out["verdicts_per_second"] = None if np.isnan(vps) else round(vps, 1)
        return out

    def __repr__(self) -> str:
        vps = self.verdicts_per_second
        rate = "" if np.isnan(vps) else f", {vps:,.0f} verdicts/s"
        err = f", error={self.error!r}" if self.error else ""
        if self.retried:
            err = f", retried={self.retried}{err}"
        return (
            f"ExtractionRun({self.run_id!r}, status={self.status!r}, "
            f"extractor={self.extractor_id!r}, policy={self.policy!r}, "
            f"n_verdicts={self.n_verdicts}, n_candidates={self.n_candidates}, "
            f"n_lessons={self.n_lessons}, n_errors={self.n_errors}, "
            f"provider_calls={self.provider_calls}, {self.seconds:.2f}s{rate}{err})"
        )

    def _repr_html_(self) -> str:
        e = html.escape
        color = {"finished": "#2a7a2a", "failed": "#b00020"}.get(self.status, "#555")
        rows = [(k, v) for k, v in self.to_dict().items() if v is not None]
        body = "".join(
            f"<tr><th style='text-align:left'>{e(str(k))}</th><td>{e(str(v))}</td></tr>"
            for k, v in rows
        )
        return (f"<div><p>Extraction run <code>{e(self.run_id)}</code>: "
                f"<b style='color:{color}'>{e(self.status)}</b></p><table>{body}</table></div>")

    def _need_store(self) -> Store:
        if self.store is None:
            raise StoreError("this ExtractionRun has no store attached")
        return self.store

    def candidates(self) -> pd.DataFrame:
        """Every candidate of the run (passed the gate or not), by verdict and index."""
        return run_candidates(self._need_store(), self.run_id)

    def lessons(self) -> pd.DataFrame:
        """The memory entries (lessons) the run's candidates became."""
        return run_memory_entries(self._need_store(), self.run_id)

    def usage(self, prices: Prices | None = None) -> RunUsage:
        """Calls, tokens, latency percentiles, errors by kind, time per verdict and cost.

        Parameters
        ----------
        prices : Prices, optional
            A price table (:func:`truss_lab.store._usage.load_prices`); without one
            the cost is unknown.

        Returns
        -------
        RunUsage
            The run's usage.
        """
        return run_usage(self._need_store(), self.run_id, prices=prices)

    def errors(self) -> pd.DataFrame:
        """The run's per-verdict errors (provider, parse, prompt)."""
        return run_error_rows(self._need_store(), self.run_id)


def _run_result(store: Store, run_id: str, seconds: float, done_now: int, chunks_total: int,
                skipped: int, retried: int = 0) -> ExtractionRun:
    """The :class:`ExtractionRun` of this call: the run record's totals, this call's time,
    verdicts and chunks."""
    r = get_run(store, run_id)
    assert r is not None
    return ExtractionRun(
        run_id=run_id, status=r["status"], extractor_id=r["extractor_id"], policy=r["policy"],
        n_verdicts=int(r["n_verdicts"] or 0), n_candidates=int(r["n_candidates"] or 0),
        n_lessons=int(r["n_lessons"] or 0), n_errors=int(r["n_errors"] or 0),
        provider_calls=int(r["provider_calls"] or 0), seconds=seconds,
        verdicts_this_call=done_now, chunks_total=chunks_total, chunks_skipped=skipped,
        error=r["error"], store=store, retried=retried,
    )
