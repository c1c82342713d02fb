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
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..core._config import MemoryConfig
from ..core._errors import BadInputError, ChainError, StoreError
from ..core._gc import full_collections_deferred
from ..core._models import LessonExtractionPolicy
from ..journal._ledger import verify_chain
from ..journal._table import check_verdict_refs, entry_payloads, verdict_refs
from ..store._runs import (
    check_resumable,
    finish_run,
    get_run,
    missing_run_error,
    record_prompt_template,
    reopen_run,
)
from ..store._store import Store
from ._breaker import DEFAULT_MAX_CONSECUTIVE_FAILURES, CircuitOpenError, with_breaker
from ._executors import Chunk, Executor, make_executor, parse_executor
from ._extractor import ExtractionRows, Extractor, ensure_run
from ._gate import ScoreFunction
from ._overlap import verify_while_extracting
from ._providers import is_live
from ._result import ExtractionRun, run_result
from ._writes import Gated, HeldWrites, gate_chunk, write_group

__all__ = ["DEFAULT_CHUNK_SIZE", "ExtractionRun", "resolve_batch", "run_extraction"]

DEFAULT_CHUNK_SIZE = 1000
_GROUP_VERDICTS = 65_536  # verdicts of recorded answers per transaction (a commit costs ~0.1 s)
# At most this many verdicts are extracted (and held, unwritten) while the journal
# verifies: the signature checks run in worker processes meanwhile (journal/_verify.py),
# so this work is free of the GIL they would otherwise share; ~1 KB held per verdict.
_EARLY_VERDICTS = 262_144


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
        import pyarrow.parquet as pq

        try:
            return _refs_from_frame(pq.read_table(path).to_pandas(), source)
        except (OSError, pa.ArrowException) as exc:
            raise BadInputError(f"cannot read Parquet refs ({exc})", source=source) from None
    rows = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise BadInputError(f"not JSON ({exc.msg})", source=source, line=lineno) from None
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
        "prompt_hash": extractor.template.template_hash,
        "dataset_hash": dataset_hash,
    }
    if row.get("config_hash") is not None:  # runs started before 008 recorded none
        want["config_hash"] = None if extractor.config is None else extractor.config.config_hash
    check_resumable(row, want)


# -- the run -------------------------------------------------------------------------------


def _load_chunk(store: Store, seqs: np.ndarray) -> Chunk:
    return entry_payloads(store, seqs.tolist())


def _progress_bar(total: int, initial: int, enabled: bool, run_id: str) -> Any:
    from tqdm.auto import tqdm

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
    executor: Any = "inline",
    progress: bool = True,
    run_id: str | None = None,
    write_memory: bool = True,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
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
    verdict). ``executor``: ``"inline"``, ``"threads:N"``, ``"processes:N"``,
    ``"dask-local"``, ``"dask://host:port"`` or a ``distributed.Client``.
    ``write_memory=False`` keeps candidates only (a dry run). ``resume=True``
    continues run ``run_id`` (killed, failed or finished) and writes exactly
    what an uninterrupted run would have. Raises :class:`ChainError` (after
    recording a failed run) when the journal does not verify. ``run_config``
    adds JSON values to the run's stored config (the CLI keeps its extractor spec
    there so ``--resume RUN`` needs nothing else). ``name`` and ``tags`` label a new
    run for people. ``max_consecutive_failures``: a live provider that fails this
    many verdicts in a row (the endpoint is down, retries exhausted) stops the
    run with :class:`CircuitOpenError`; the run is marked failed and resumable
    (``None``: never stop).
    """
    t0 = time.perf_counter()
    config = config or MemoryConfig()
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise BadInputError(f"chunk_size must be a positive integer, got {chunk_size!r}",
                            field="chunk_size")
    parse_executor(executor)
    runner = with_breaker(extractor, max_consecutive_failures)  # what the workers call
    batch = resolve_batch(store, verdicts, params)
    dataset_hash = _dataset_hash(batch)
    existing = get_run(store, run_id) if run_id else None
    if resume:
        if run_id is None:
            raise BadInputError("resume=True needs the run_id of the run to continue",
                                field="run_id")
        if existing is None:
            raise missing_run_error(store, run_id)
        _check_resumable(existing, extractor, config, write_memory, dataset_hash)
        chunk_size = int(json.loads(existing["config"]).get("chunk_size", chunk_size))
        reopen_run(store, run_id)
    else:
        if existing is not None:
            raise StoreError(
                f"run {run_id!r} already exists; pass resume=True (--resume {run_id}) to "
                "continue it, or choose another run id")
        run_id = run_id or (
            f"run-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{uuid.uuid4().hex[:8]}")
        extra = {"chunk_size": chunk_size, "batch_size": len(batch),
                 "executor": executor if isinstance(executor, str) else "dask-client",
                 "verdicts": verdicts if isinstance(verdicts, str) else None,
                 "params": list(params) if params else None, **(run_config or {})}
        with store.transaction():
            ensure_run(store, run_id, extractor, config, status="running",
                       write_memory=write_memory, extra=extra, templates=False,
                       scorer=scorer_name, dataset_hash=dataset_hash, counted=True,
                       name=name, tags=tags)

    n_chunks = -(-len(batch) // chunk_size)
    bar: Any = None
    try:
        done = {int(r[0]) for r in store.con.execute(
            "SELECT chunk_index FROM run_chunks WHERE run_id = ?", [run_id]).fetchall()}
        seqs_all = batch["seq"].to_numpy(dtype=np.int64)
        todo = [i for i in range(n_chunks) if i not in done]
        live = is_live(extractor.provider)
        hashes_all = batch["hash"].tolist()
        last = t0  # setup (batch, verification) counts toward the first chunk's time

        def gated(index: int, seqs: np.ndarray, rows: ExtractionRows) -> Gated:
            nonlocal last
            now = time.perf_counter()
            g = gate_chunk(
                run_id, index, seqs, hashes_all[index * chunk_size:(index + 1) * chunk_size],
                rows, config, write_memory=write_memory, score=score,
                scorer_name=scorer_name, elapsed=now - last, live=live)
            last = now  # this chunk's gate and write count with the next (or finish)
            return g

        gate_failed = False
        # A live provider's chunks are written one by one (its answers cost money);
        # recorded ones in groups of about _GROUP_VERDICTS, one append per table,
        # since each append costs a scan of the table it checks keys against.
        per_write = 1 if live else max(1, _GROUP_VERDICTS // chunk_size)
        held: HeldWrites | None = None

        def gated_early(index: int, seqs: np.ndarray,
                        rows: ExtractionRows) -> Gated | ExtractionRows:
            # A gate that raises here (a score function) must raise where it did
            # before, after verification, so the chunks gated before it are written:
            # from the first failure on, chunks stay ungated and the loop below gates
            # (and fails) again.
            nonlocal gate_failed
            if gate_failed:
                return rows
            try:
                g = gated(index, seqs, rows)
            except Exception:
                gate_failed = True
                return rows
            if held is not None:
                held.add(g)
            bar.update(len(seqs))  # a chunk gated here is counted here, not below
            return g

        early: list[tuple[int, np.ndarray, Gated | ExtractionRows]] = []
        written: set[int] = set()  # chunks whose rows the held transaction stored
        done_verdicts = len(batch) - sum(
            len(seqs_all[i * chunk_size:(i + 1) * chunk_size]) for i in todo)
        if len(batch):
            last_seq = int(batch["seq"].iloc[-1])
            if (executor == "inline" and not live and todo
                    and config.lesson_extraction is not LessonExtractionPolicy.off):
                # Recorded answers: extract, gate and write (uncommitted) while the
                # signatures verify (_overlap.py, _writes.HeldWrites); the driver would
                # wait for them anyway.
                tpl = extractor.template
                # The bar moves as chunks are extracted and written (uncommitted).
                bar = _progress_bar(len(batch), done_verdicts, progress, run_id)
                held = HeldWrites(store, run_id, per_write,
                                  (tpl.version, tpl.template_hash, tpl.text))
                try:
                    report, early = verify_while_extracting(
                        store, runner, todo, seqs_all, chunk_size, last_seq,
                        max_chunks=max(1, _EARLY_VERDICTS // chunk_size), then=gated_early,
                        extracted=held.flush)
                    if report.ok:
                        written = held.commit()
                finally:
                    held.rollback()  # when not committed: a bad chain, or an error
            else:
                report = _verify_prefix(store, last_seq)
            if not report.ok:
                msg = (f"the journal does not verify at seq {report.first_bad_seq} "
                       f"({report.reason}): {report.message}; nothing was extracted")
                finish_run(store, run_id, "failed", time.perf_counter() - t0, error=msg)
                raise ChainError(msg, seq=report.first_bad_seq, reason=report.reason or
                                 "malformed")
        if config.lesson_extraction is LessonExtractionPolicy.off:
            # ADR 0011 invariant 1: no provider call, no write but the run record.
            finish_run(store, run_id, "finished", time.perf_counter() - t0)
            return run_result(store, run_id, time.perf_counter() - t0, 0, n_chunks, 0)
        if todo and not written:  # a committed held write recorded it already
            tpl = extractor.template
            with store.transaction():
                record_prompt_template(store, tpl.version, tpl.template_hash, tpl.text)
        done_now = 0
        errors_seen = int(get_run(store, run_id)["n_errors"] or 0)  # type: ignore[index]
        ex = make_executor(executor, runner) if todo else None
        if bar is None:
            bar = _progress_bar(len(batch), done_verdicts, progress, run_id)
        group: list[Gated] = []
        try:
            rest = todo[len(early):]
            for index, seqs, item in itertools.chain(
                    early, _pipeline(store, ex, rest, seqs_all, chunk_size)):
                done_now += len(seqs)
                if index in written:  # stored with the verification (counted there too)
                    continue
                early_gated = isinstance(item, Gated)  # the bar counted it then
                g = item if early_gated else gated(index, seqs, item)
                group.append(g)
                errors_seen += g.err.num_rows
                if len(group) >= per_write:
                    full, group = group, []  # a failed write is not retried below
                    write_group(store, run_id, full)
                if not early_gated:
                    bar.update(len(seqs))
                bar.set_postfix(errors=errors_seen, refresh=False)
        finally:
            try:
                # Chunks extracted before a failure are kept, as if written one by one.
                write_group(store, run_id, group)
            finally:
                if ex is not None:
                    ex.close()
        finish_run(store, run_id, "finished", time.perf_counter() - last)
        store.checkpoint()
        return run_result(store, run_id, time.perf_counter() - t0, done_now, n_chunks,
                       n_chunks - len(todo))
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
        if bar is not None:
            bar.close()


def _pipeline(store: Store, ex: Executor | None, todo: list[int], seqs_all: np.ndarray,
              chunk_size: int) -> Iterator[tuple[int, np.ndarray, ExtractionRows]]:
    """Submit chunks (a bounded window ahead) and yield them as they complete."""
    if ex is None:
        return
    pending: dict[Any, tuple[int, np.ndarray]] = {}
    it = iter(todo)

    def fill() -> None:
        while len(pending) < ex.window:
            i = next(it, None)
            if i is None:
                return
            seqs = seqs_all[i * chunk_size:(i + 1) * chunk_size]
            pending[ex.submit(_load_chunk(store, seqs))] = (i, seqs)

    fill()
    while pending:
        for fut in ex.wait(list(pending)):
            i, seqs = pending.pop(fut)
            yield i, seqs, fut.result()
        fill()
