"""The ADR 0011 policy gate: which candidates become lessons, and their write.

This module is the one place the gate is applied: :class:`ContractCloseLearning`
(one verdict, as Truss does it live) and :func:`truss_lab.run_extraction`
(a batch) both gate :class:`ExtractionRows` with :func:`gated_tables` (which
calls :func:`apply_gate`) and write them with :func:`write_extraction`.

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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..core._config import MemoryConfig
from ..core._ids import key_digests
from ..core._models import LessonExtractionPolicy, utcnow
from ..score._consistency import consistency_clusters
from ..store._memory import lesson_rows, write_memory_table
from ..store._store import Store
from ._extractor import ERROR_SCHEMA, ExtractionRows
from ._frames import CandidateColumns

__all__ = [
    "CANDIDATE_SCHEMA",
    "ScoreFunction",
    "apply_gate",
    "gated_tables",
    "record_run_verdicts",
    "write_extraction",
]


CANDIDATE_SCHEMA = pa.schema(
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


def apply_gate(scores: np.ndarray, valid: np.ndarray, config: MemoryConfig) -> np.ndarray:
    """Which candidates are written, vectorized: the ADR 0011 policy gate.

    ``off`` writes none; ``on`` every valid lesson; ``model-scored`` valid
    lessons with ``score >= extraction_min_salience`` (NaN never passes).
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
        schema=CANDIDATE_SCHEMA,
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
        schema=ERROR_SCHEMA,
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


def record_run_verdicts(store: Store, run_id: str, seqs: Sequence[int],
                        hashes: Sequence[str]) -> None:
    """Record that ``run_id`` processed these verdicts (whatever they yielded)."""
    store.append(
        "run_verdicts",
        pa.table({"run_id": [run_id] * len(seqs), "verdict_seq": pa.array(seqs, pa.int64()),
                  "verdict_hash": list(hashes)}),
        key=["run_id", "verdict_seq"],
    )
