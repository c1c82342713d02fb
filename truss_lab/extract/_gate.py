"""The ADR 0011 policy gate: which candidates become lessons, and their write.

This module is the one place the gate is applied and its rows written:
:class:`ContractCloseLearning` (one verdict, as Truss does it live) and
:func:`truss_lab.run_extraction` (a batch) both gate :class:`ExtractionRows` with
:func:`gated_tables` (which calls :func:`apply_gate`) and write them with
:func:`write_extraction`.

1. ``off`` writes nothing (the callers return before the provider is touched).
2. ``on`` writes every valid lesson; ``model-scored`` those whose score is
   >= ``extraction_min_salience`` (equality passes; NaN never does).
3. Each lesson: kind lesson, trust unverified, ``produced_by`` = the verdict's
   LedgerRef, the same ref in ``sources``; one MemoryWrite event each. Ids
   derive from (verdict hash, extractor, lesson_index[, sample_index when not
   0]), so a repeat is a no-op.
4. k > 1 samples per verdict: only the representative of each cluster of
   near-duplicates across the samples may pass (one lesson per cluster, not k
   copies of it); its ``self_consistency`` is stored beside the model's
   salience, and the gate's score is still the run's scorer (the model's
   salience by default; ``score=self_consistency()`` gates on consistency).

The batch's writes
------------------

Gated, then appended in groups. The driver of :mod:`truss_lab.extract._batch` gates each
chunk as it completes (:func:`gate_chunk`) and writes gated chunks with
:func:`write_group`: one transaction, one append per table, and per chunk the
``run_chunks`` row and the counts its own write would have recorded, so a resumed or
regrouped run ends with the same rows.

Live extraction when a contract closes
--------------------------------------

Lesson extraction after a verdict lands (ADR 0011), one verdict at a time.

1. ``off`` returns before the provider is touched (0 calls, 0 writes, 0 events).
2. The verdict must be in the journal and verify, else nothing is written.
3. Its lessons go through the one gate (above); one
   verdict's writes land in one transaction, with a live model's answer recorded
   under the learner's run (so it is billed, and replays, like a batch's).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..core._clock import utcnow
from ..core._config import MemoryConfig
from ..core._errors import StoreError
from ..core._ids import derive_id, key_digests
from ..core._models import LedgerRef, LessonExtractionPolicy
from ..ingest._ingest import FILE_TO_TABLE
from ..journal._table import verified_verdict
from ..score._consistency import consistency_clusters
from ..store._governed import lesson_rows, write_memory_table
from ..store._runs import (
    add_chunk_counts,
    add_run_counts,
    drop_verdict_errors,
    lessons_stored,
    record_chunks,
    record_prompt_template,
    record_run_verdicts,
)
from ..store._store import Store
from ..store._tables import (
    CANDIDATES_SCHEMA,
    COMPLETIONS_SCHEMA,
    RECORDING_KEY,
    VERDICT_ERRORS_SCHEMA,
)
from ._extractor import ExtractionRows, Extractor, ensure_run, extract_verdicts
from ._parser import CandidateColumns
from ._providers import is_live

__all__ = [
    "CloseResult",
    "ContractCloseLearning",
    "Gated",
    "HeldWrites",
    "ScoreFunction",
    "apply_gate",
    "gate_chunk",
    "gated_tables",
    "record_completions",
    "write_extraction",
    "write_group",
    "write_retry",
]


# --- the gate -------------------------------------------------------------------------------------


def apply_gate(scores: np.ndarray, valid: np.ndarray, config: MemoryConfig) -> np.ndarray:
    """Which candidates are written, vectorized: the ADR 0011 policy gate.

    ``off`` writes none; ``on`` every valid lesson; ``model-scored`` valid
    lessons with ``score >= extraction_min_salience`` (NaN never passes).

    Parameters
    ----------
    scores : numpy.ndarray
        Each candidate's score.
    valid : numpy.ndarray
        Whether each candidate is valid (the parser kept it).
    config : MemoryConfig
        The policy and its threshold.

    Returns
    -------
    numpy.ndarray of bool
        Whether each candidate is written.
    """
    valid = np.asarray(valid, dtype=bool)
    policy = config.lesson_extraction
    if policy is LessonExtractionPolicy.off:
        return np.zeros(valid.shape, dtype=bool)
    if policy is LessonExtractionPolicy.on:
        return valid.copy()
    s = np.asarray(scores, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return valid & (s >= config.extraction_min_salience)


ScoreFunction = Callable[[pd.DataFrame], np.ndarray]


def _strings(col: pd.Series) -> pa.Array | None:
    """An Arrow-backed ``str`` column as a pa.string() array (null where missing), or
    None for any other dtype. It holds exact str values or missing ones only, so this is
    what ``[None if missing else str(v) ...]`` gives, without a Python object per row."""
    dtype = col.dtype
    if isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow":
        arr = pa.array(col)
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        return arr.cast(pa.string())
    return None


def _text(col: pd.Series) -> pa.Array | list[str | None]:
    fast = _strings(col)
    return fast if fast is not None else \
        [None if t is None or t != t else str(t) for t in col.tolist()]


def _keys(col: pd.Series, values: list[Any]) -> pa.Array | list[Any]:
    # A key column as its values (what the table took before) unless Arrow-backed str.
    fast = _strings(col)
    return fast if fast is not None else values


@dataclass
class _Gate:
    """One path's candidates before their table is built (:func:`gated_tables` builds it
    once, with the ids): the data columns, the scores, each row's key digest, the rows
    written and their texts and prompt versions."""

    columns: dict[str, Any]
    scores: np.ndarray
    digests: list[str]
    idx: np.ndarray
    texts: pa.Array | list[str]
    pv: pa.Array | list[Any]


_BULK_KEYS = ("verdict_seq", "verdict_hash", "extractor_id", "sample_index")


def _plain_candidates(cols: CandidateColumns, config: MemoryConfig, *,
                      write_memory: bool) -> _Gate | None:
    """What :func:`_frame_candidates` gives for the frame of ``cols``, from the columns'
    lists without the frame (replay's bulk path: one sample, the model's salience as the
    score). None when a value is not of the plain type the frame would leave as it is (a
    text that is not a str, a written lesson without a text): the frame decides those
    (tests/test_gate_pinned.py compares the two)."""
    pv = cols.constants.get("prompt_version")
    if cols.key_names != _BULK_KEYS or type(pv) is not str:
        return None
    k = cols.key_columns()
    vh, ex, si = k["verdict_hash"], k["extractor_id"], k["sample_index"]
    li = cols.lesson_index
    if not set(map(type, si)) <= {int}:
        return None
    n = len(cols)
    salience = np.asarray(cols.salience, dtype=np.float64)
    valid = np.asarray(cols.valid, dtype=bool)
    passed = apply_gate(salience, valid, config)
    try:
        strings = {name: pa.array(values, pa.string()) for name, values in (
            ("verdict_hash", vh), ("extractor_id", ex), ("text", cols.text),
            ("drop_reason", cols.drop_reason))}
        seq = pa.array(k["verdict_seq"], pa.int64())
    except (pa.ArrowException, TypeError, ValueError):
        return None
    idx = np.flatnonzero(passed & write_memory)
    texts = strings["text"].take(pa.array(idx, pa.int64()))
    if texts.null_count:
        return None
    scores = pa.array(salience, pa.float64(), from_pandas=True)
    return _Gate(
        {"verdict_seq": seq, **strings, "lesson_index": pa.array(li, pa.int32()),
         "salience": scores, "evidence": cols.evidence, "valid": valid, "score": scores,
         "passed_gate": passed, "sample_index": pa.array(si, pa.int32()),
         "self_consistency": pa.nulls(n, pa.float64())},
        salience, key_digests(vh, ex, li, si), idx, texts, [pv] * len(idx))


def gated_tables(
    rows: ExtractionRows,
    config: MemoryConfig,
    *,
    run_id: str,
    write_memory: bool = True,
    score: ScoreFunction | None = None,
    scorer_name: str = "model_salience@1",
) -> tuple[pa.Table, pa.Table, pa.Table]:
    """Candidates (every one, gate result included), memory rows and error rows."""
    cols = rows.columns if score is None and rows.samples == 1 else None
    got = None if cols is None else _plain_candidates(cols, config, write_memory=write_memory)
    if got is None:
        got = _frame_candidates(rows, config, write_memory=write_memory, score=score)
    digests, idx = got.digests, got.idx
    n = len(digests)
    # One hash per candidate: its lesson id is the same digits under another prefix,
    # and is only spelled out for the rows written.
    lesson_ids = ["lesson-" + digests[i] for i in idx.tolist()]
    entry_ids: list[str | None] = [None] * n
    for i, lid in zip(idx.tolist(), lesson_ids, strict=True):
        entry_ids[i] = lid
    cand = pa.table(
        {"candidate_id": ["cand-" + d for d in digests], "run_id": [run_id] * n,
         **got.columns, "scorer": [scorer_name] * n,
         "entry_id": pa.array(entry_ids, pa.string())},
        schema=CANDIDATES_SCHEMA,
    )
    # The written rows' key and evidence columns are the candidate table's own, taken:
    # the same values (evidence is list(e) in both).
    w = cand.take(pa.array(idx, pa.int64()))
    mem = lesson_rows(
        entry_ids=lesson_ids,
        texts=got.texts,
        salience=got.scores[idx],
        evidence=w.column("evidence").combine_chunks(),
        lesson_index=w.column("lesson_index").combine_chunks(),
        verdict_seq=w.column("verdict_seq").combine_chunks(),
        verdict_hash=w.column("verdict_hash").combine_chunks(),
        extractor_id=w.column("extractor_id").combine_chunks(),
        prompt_version=got.pv,
        run_id=run_id,
        created_at=utcnow(),
    )
    e = rows.errors
    err = pa.table(
        {
            "run_id": [run_id] * len(e),
            "verdict_seq": e["verdict_seq"].astype("int64").to_numpy() if len(e) else [],
            "verdict_hash": e["verdict_hash"].tolist(),
            "stage": e["stage"].tolist(),
            "reason": e["reason"].tolist(),
            "message": e["message"].tolist(),
            "sample_index": pa.array(e["sample_index"].fillna(0).astype("int64").tolist()
                                     if "sample_index" in e else [0] * len(e), pa.int32()),
        },
        schema=VERDICT_ERRORS_SCHEMA,
    )
    return cand, mem, err


def _frame_candidates(rows: ExtractionRows, config: MemoryConfig, *, write_memory: bool,
                      score: ScoreFunction | None) -> _Gate:
    """The gate's candidates from the candidates frame."""
    c = rows.candidates
    n = len(c)
    salience = c["salience"].to_numpy(dtype=np.float64)
    scores = (np.asarray(score(c), dtype=np.float64) if score is not None and n
              else salience)
    given_valid = c["valid"].to_numpy(dtype=bool)
    valid = given_valid
    si = (c["sample_index"].fillna(0).astype("int64").tolist() if "sample_index" in c
          else [0] * n)
    consistency = np.full(n, np.nan)
    if rows.samples > 1 and n:
        clusters = consistency_clusters(c, samples=rows.samples)
        consistency = clusters["self_consistency"].to_numpy(np.float64)
        valid = valid & clusters["representative"].to_numpy(dtype=bool)
    passed = apply_gate(scores, valid, config)
    vh_col, ex_col = c["verdict_hash"], c["extractor_id"]
    vh = vh_col.tolist()
    ex = ex_col.tolist()
    lic = c["lesson_index"]
    # An integer dtype's tolist() gives the Python ints int() would.
    li = (lic.tolist() if isinstance(lic.dtype, np.dtype) and lic.dtype.kind in "iu"
          else [int(i) for i in lic])
    idx = np.flatnonzero(passed & write_memory)
    text_col = c["text"]
    text = _text(text_col)
    text_arr = text if isinstance(text, pa.Array) else pa.array(text, pa.string())
    evidence = c["evidence"].tolist()
    if not set(map(type, evidence)) <= {list}:
        evidence = [list(e) for e in evidence]  # lists as they are; others copied into one
    take = pa.array(idx, pa.int64())
    # A missing text is the exception: the candidate stores NULL, the lesson str() of
    # it ("nan").
    texts: pa.Array | list[str] = text_arr.take(take)
    if texts.null_count:
        all_texts = text_col.tolist()
        texts = [str(all_texts[i]) for i in idx]
    pv_col = c["prompt_version"] if "prompt_version" in c else None
    pv_arr = _strings(pv_col) if pv_col is not None else None
    pv: pa.Array | list[Any]
    if pv_arr is not None and not pv_arr.take(take).null_count:
        pv = pv_arr.take(take)
    else:
        # No column, another dtype, or a missing version among the written rows (NaN
        # in the list, which pa.array then handles as it always did).
        pv_all = pv_col.tolist() if pv_col is not None else [None] * n
        pv = [pv_all[i] for i in idx]
    return _Gate(
        {"verdict_seq": c["verdict_seq"].astype("int64").to_numpy(),
         "verdict_hash": _keys(vh_col, vh), "extractor_id": _keys(ex_col, ex),
         "lesson_index": pa.array(li, pa.int32()), "text": text_arr,
         "salience": pa.array(salience, pa.float64(), from_pandas=True),
         "evidence": evidence, "valid": given_valid, "drop_reason": _text(c["drop_reason"]),
         "score": pa.array(scores, pa.float64(), from_pandas=True), "passed_gate": passed,
         "sample_index": pa.array(si, pa.int32()),
         "self_consistency": pa.array(consistency, pa.float64(), from_pandas=True)},
        scores, key_digests(vh, ex, li, si), idx, texts, pv)


def write_extraction(store: Store, cand: pa.Table, mem: pa.Table, err: pa.Table) -> int:
    """Append candidates, lessons (+ events) and errors in one transaction.

    Returns the number of new lessons. Everything is keyed by content-derived
    ids, so writing the same rows twice adds nothing.
    """
    with store.transaction():
        store.append("candidates", cand, key=["run_id", "candidate_id"])
        n = write_memory_table(store, mem) if mem.num_rows else 0
        if err.num_rows:
            store.append("verdict_errors", err,
                         key=["run_id", "verdict_hash", "stage", "sample_index"])
    return n


# --- the batch's writes ---------------------------------------------------------------------------


@dataclass
class Gated:
    """One extracted chunk, gated, waiting for its write."""

    index: int
    seqs: np.ndarray
    hashes: list[str]
    cand: pa.Table
    mem: pa.Table
    err: pa.Table
    recorded: list[dict[str, Any]]
    provider_calls: int
    elapsed: float
    n_err: int
    """Verdicts with an error (k samples of one verdict may fail alike: one verdict)."""


def gate_chunk(run_id: str, index: int, seqs: np.ndarray, hashes: list[str],
               rows: ExtractionRows, config: MemoryConfig, *, write_memory: bool,
               score: ScoreFunction | None, scorer_name: str, elapsed: float,
               live: bool = True) -> Gated:
    """Chunk ``index``'s extracted rows through the gate, held for :func:`write_group`
    with the completions to record (a live provider's only) and its counts."""
    cand, mem, err = gated_tables(rows, config, run_id=run_id, write_memory=write_memory,
                                  score=score, scorer_name=scorer_name)
    # Only a live provider's answers are recorded (replay and heuristic call no model).
    recorded = [c for c in rows.completions if not c.get("replayed")] if live else []
    n_err = len(set(err.column("verdict_hash").to_pylist()))
    return Gated(index, seqs, hashes, cand, mem, err, recorded, rows.provider_calls, elapsed,
                 n_err)


def _new_lessons(store: Store, group: list[Gated]) -> list[int]:
    """Per chunk, its memory rows whose entry_id the store does not hold yet: what
    each chunk's own append would have counted (ids are unique across verdicts)."""
    if len(group) == 1:
        return [-1]  # counted by the append itself
    have = lessons_stored(store, pa.concat_arrays(
        [g.mem.column("entry_id").combine_chunks() for g in group if g.mem.num_rows]
        or [pa.array([], pa.string())]))
    return [sum(i not in have for i in g.mem.column("entry_id").to_pylist()) for g in group]


def write_group(store: Store, run_id: str, group: list[Gated]) -> None:
    """Write gated chunks in one transaction, each table in one append, each chunk
    recorded in ``run_chunks`` with the counts its own write would have recorded."""
    if not group:
        return
    cand = pa.concat_tables([g.cand for g in group])
    mem = pa.concat_tables([g.mem for g in group])
    err = pa.concat_tables([g.err for g in group])
    recorded = [c for g in group for c in g.recorded]
    with store.transaction():
        new = _new_lessons(store, group)
        landed = write_extraction(store, cand, mem, err)
        if new == [-1]:
            new = [landed]
        record_run_verdicts(store, run_id, np.concatenate([g.seqs for g in group]).tolist(),
                            [h for g in group for h in g.hashes])
        if recorded:
            record_completions(store, recorded, run_id)
        record_chunks(
            store, run_id, chunk_index=[g.index for g in group],
            first_seq=[int(g.seqs[0]) for g in group],
            last_seq=[int(g.seqs[-1]) for g in group],
            n_verdicts=[len(g.seqs) for g in group],
            n_candidates=[g.cand.num_rows for g in group],
            n_lessons=[g.mem.num_rows for g in group], n_lessons_new=new,
            n_errors=[g.n_err for g in group],
            provider_calls=[g.provider_calls for g in group])
        add_run_counts(store, run_id, n_verdicts=sum(len(g.seqs) for g in group),
                       n_candidates=cand.num_rows, n_lessons=mem.num_rows,
                       n_errors=sum(g.n_err for g in group),
                       provider_calls=sum(g.provider_calls for g in group),
                       seconds=sum(g.elapsed for g in group))


def write_retry(store: Store, run_id: str, g: Gated) -> None:
    """Write the retry of verdicts every call of which had failed (``--resume``): in one
    transaction their old errors go, the retry's rows (candidates, lessons, errors,
    recordings) land, and the counts of their chunk and of the run move by the
    difference, so a killed retry leaves the run as it was and nothing is counted twice."""
    with store.transaction():
        had = drop_verdict_errors(store, run_id, g.hashes)
        landed = write_extraction(store, g.cand, g.mem, g.err)
        if g.recorded:
            record_completions(store, g.recorded, run_id)
        add_chunk_counts(store, run_id, g.index, n_candidates=g.cand.num_rows,
                         n_lessons=g.mem.num_rows, n_lessons_new=landed,
                         n_errors=g.n_err - had, provider_calls=g.provider_calls)
        add_run_counts(store, run_id, n_verdicts=0, n_candidates=g.cand.num_rows,
                       n_lessons=g.mem.num_rows, n_errors=g.n_err - had,
                       provider_calls=g.provider_calls, seconds=g.elapsed)


class HeldWrites:
    """Groups of gated chunks written while the journal still verifies, in one
    transaction that commits only once the chain has verified.

    A run writes nothing until its journal verifies (a bad chain fails the run with
    only its run record). Recorded answers are extracted during verification
    (:func:`truss_lab.extract._batch.verify_while_extracting`); their writes need not
    wait either, only their commit: they go into a transaction on a cursor of the store
    (whose own connection streams the journal meanwhile), committed by :meth:`commit`
    when the chain verified and rolled back by :meth:`rollback` when it did not, or when
    the run stops (a killed process commits nothing). A write that fails rolls back everything held:
    the run then writes its chunks after verification as it would have, and meets
    the same failure where it did.
    """

    def __init__(self, store: Store, run_id: str, per_write: int,
                 template: tuple[str, str, str]) -> None:
        self._run_id = run_id
        self._per_write = per_write
        self._group: list[Gated] = []
        self._written: list[int] = []
        self._store: Store | None = store.cursor()
        self._store.begin()
        self._guard(record_prompt_template, self._store, *template)

    def _guard(self, fn: Any, *args: Any) -> None:
        try:
            fn(*args)
        except Exception:
            self.rollback()

    @property
    def active(self) -> bool:
        """Whether the held writes still stand: none failed, none committed or rolled
        back yet."""
        return self._store is not None

    def add(self, g: Gated) -> None:
        """Hold chunk ``g``; a full group is written (uncommitted), and not kept."""
        if self._store is None:
            return
        self._group.append(g)
        if len(self._group) >= self._per_write:
            self.flush()

    def flush(self) -> None:
        """Write the chunks held so far (uncommitted)."""
        if self._store is None or not self._group:
            return
        group, self._group = self._group, []
        self._guard(write_group, self._store, self._run_id, group)
        if self._store is not None:
            self._written += [g.index for g in group]

    def commit(self) -> set[int]:
        """Commit the chunks written; the indexes of those now stored (none when a
        write or the commit failed: then nothing was)."""
        if self._store is None:
            return set()
        store, self._store = self._store, None
        try:
            store.commit()
        except StoreError:
            return set()
        finally:
            store.close()
        return set(self._written)

    def rollback(self) -> None:
        """Drop everything held; nothing of it is stored."""
        if self._store is None:
            return
        store, self._store = self._store, None
        try:
            store.rollback()
        finally:
            store.close()


def _missing(value: Any) -> bool:
    """A field a record lacks: None, or a float NaN."""
    return value is None or (isinstance(value, float) and value != value)


def record_completions(store: Store, records: list[dict[str, Any]],
                       run_id: str | None = None) -> int:
    """Append live completion records (Formats §2) to ``completions``, with the
    configuration hash and the run that made each call (None for a judge's; a judge's
    record names the run it judged as ``judged_run_id``).

    A recording belongs to the run that paid for it (:data:`RECORDING_KEY`): a second
    live run with the same settings is recorded beside the first, never dropped
    because the first answered the same verdict, and so is a judge's call on a second
    run of one extractor; only a call already recorded for the same run (a chunk
    written twice) adds nothing. Returns the rows added."""
    # Plain lists, not a DataFrame: a judge records each answered call on its own (so a
    # kill keeps every call paid for), and a one-row frame's casts cost more than the
    # call's write.
    table_to_file = {t: f for f, t in FILE_TO_TABLE.items()}

    def column(name: str, default: Any = None) -> list[Any]:
        field = table_to_file.get(name, name)
        return [default if _missing(v := r.get(field)) else v for r in records]

    now, n = utcnow(), len(records)
    cols = {}
    for f in COMPLETIONS_SCHEMA:
        if f.name == "source":
            cols[f.name] = pa.array(["live"] * n, f.type)
        elif f.name == "recorded_at":
            cols[f.name] = pa.array([now] * n, f.type)
        else:
            cols[f.name] = pa.array(column(f.name), f.type)
    # Beyond the §2 fields: the configuration that made each call and the extraction
    # run that made it (what `truss-lab usage RUN` counts; None for a judge's calls).
    cols["config_hash"] = pa.array(column("config_hash"), pa.string())
    cols["run_id"] = pa.array([run_id] * n, pa.string())
    cols["judged_run_id"] = pa.array(column("judged_run_id"), pa.string())
    # One recording per sample of a verdict (issue #16): the sample is part of the key.
    cols["sample_index"] = pa.array([int(v) for v in column("sample_index", 0)], pa.int32())
    return store.append("completions", pa.table(cols), key=RECORDING_KEY)


# --- live extraction when a contract closes -------------------------------------------------------

@dataclass(frozen=True)
class CloseResult:
    """What one :meth:`ContractCloseLearning.on_verdict_recorded` did."""

    verdict: LedgerRef
    """The verdict's journal entry."""
    policy: LessonExtractionPolicy
    """The policy it ran under."""
    provider_calls: int
    """Model calls made (0 under ``off``)."""
    candidates: int
    """Candidate lessons proposed."""
    lessons_written: int
    """Lessons that passed the gate and were written."""
    error: str | None = None
    """Why the verdict gave no lessons (a parse or call error), or None."""
    lesson_ids: tuple[str, ...] = ()
    """The memory entries written."""


class ContractCloseLearning:
    """Learn lessons when a contract closes (ADR 0011), one verdict at a time.

    The live form of :func:`run_extraction`, with the same gate: under policy ``off``
    it returns before the extractor or the store is touched; otherwise it checks that
    the verdict's journal entry is stored and verifies, extracts, gates and writes the
    lessons as unverified memory entries in one transaction.

    Parameters
    ----------
    extractor : Extractor
        The extractor to call.
    config : MemoryConfig, optional
        The policy and threshold (default ``MemoryConfig()``: off).
    run_id : str, optional
        The run its candidates and lessons are recorded under (default: derived from
        the extractor, the policy and the threshold).

    See Also
    --------
    run_extraction : The same over a batch of verdicts.
    truss_lab.extract.CloseResult : What a call returns.

    Examples
    --------
    >>> import json
    >>> from truss_lab.core import LedgerRef
    >>> verdicts = tl.verdict_payloads(store)
    >>> seq, h, _ = next(v for v in verdicts.itertuples(index=False)
    ...                  if json.loads(v.payload)["verdict"] == "fail")
    >>> learn = tl.ContractCloseLearning(tl.Extractor.heuristic(),
    ...                                  tl.MemoryConfig(lesson_extraction="model-scored"))
    >>> result = learn.on_verdict_recorded(store, LedgerRef(seq=seq, hash=h))
    >>> result.provider_calls, result.candidates, result.lessons_written
    (1, 3, 3)
    >>> off = tl.ContractCloseLearning(tl.Extractor.heuristic())  # policy off
    >>> off.on_verdict_recorded(store, LedgerRef(seq=seq, hash=h)).provider_calls
    0
    """

    def __init__(self, extractor: Extractor, config: MemoryConfig | None = None, *,
                 run_id: str | None = None) -> None:
        self.extractor = extractor
        self.config = config or MemoryConfig()
        self.run_id = run_id or derive_id(
            "live", extractor.extractor_id, self.config.lesson_extraction.value,
            self.config.extraction_min_salience,
        )

    def on_verdict_recorded(self, store: Store, verdict_ref: LedgerRef) -> CloseResult:
        """Extract, gate and write the lessons of one recorded verdict.

        Parameters
        ----------
        store : Store
            The database holding the verdict (opened for writing).
        verdict_ref : truss_lab.core.LedgerRef
            The verdict's journal entry (seq and hash).

        Returns
        -------
        truss_lab.extract.CloseResult
            Provider calls, candidates, lessons written, their ids, and the error
            of the extraction, if any.

        Raises
        ------
        ChainError
            The verdict's entry is not stored, or does not verify: nothing is written.
        """
        policy = self.config.lesson_extraction
        if policy is LessonExtractionPolicy.off:
            # Invariant 1: return before the provider (or the store) is touched.
            return CloseResult(verdict_ref, policy, 0, 0, 0)
        payload = verified_verdict(store, verdict_ref)
        rows = extract_verdicts(self.extractor, [(verdict_ref.seq, verdict_ref.hash, payload)])
        cand, mem, err = gated_tables(rows, self.config, run_id=self.run_id)
        with store.transaction():
            ensure_run(store, self.run_id, self.extractor, self.config, status="live",
                       write_memory=True)
            written = write_extraction(store, cand, mem, err)
            record_run_verdicts(store, self.run_id, [verdict_ref.seq], [verdict_ref.hash])
            # A live model's answer is recorded as the batch's are, under this run.
            paid = [c for c in rows.completions if not c.get("replayed")]
            if paid and is_live(self.extractor.provider):
                record_completions(store, paid, self.run_id)
        error = None
        if len(rows.errors):
            r = rows.errors.iloc[0]
            error = f"{r['stage']}: {r['reason']}: {r['message']}"
        return CloseResult(
            verdict_ref, policy, rows.provider_calls, cand.num_rows, written, error,
            tuple(mem.column("entry_id").to_pylist()),
        )
