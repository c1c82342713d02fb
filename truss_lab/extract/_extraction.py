"""Lesson extraction after a verdict lands (ADR 0011) and the policy gate.

This module is the one place the gate is applied: :class:`ContractCloseLearning`
(one verdict, as Truss does it live) and :func:`truss_lab.run_extraction`
(a batch) both call :func:`extract_verdicts`, :func:`apply_gate` and
:func:`write_extraction`.

1. ``off`` returns before the provider is touched (0 calls, 0 writes, 0 events).
2. ``on`` writes every valid lesson; ``model-scored`` those whose score is
   >= ``extraction_min_salience`` (equality passes).
3. The verdict must be in the journal and verify, else nothing is written.
4. Each lesson: kind lesson, trust unverified, ``produced_by`` = the verdict's
   LedgerRef, the same ref in ``sources``; one MemoryWrite event each; one
   verdict's writes land in one transaction. Ids derive from (verdict hash,
   extractor, lesson_index), so a repeat is a no-op.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..core._config import MemoryConfig
from ..core._errors import BadInputError, ProviderError
from ..core._ids import derive_id
from ..core._models import LedgerRef, LessonExtractionPolicy, utcnow
from ..journal._table import verified_verdict
from ..store._memory import lesson_rows, write_memory_table
from ..store._runs import create_run, record_prompt_template
from ..store._store import Store
from ._parser import candidates_frame, parse_completion
from ._prompts import PromptTemplate, build_request, get_template
from ._providers import Completion, CompletionRequest, Provider, provider_name

__all__ = [
    "CANDIDATE_SCHEMA",
    "CloseResult",
    "ContractCloseLearning",
    "ExtractionRows",
    "Extractor",
    "apply_gate",
    "extract_verdicts",
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
    ]
)

ERROR_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("verdict_seq", pa.int64()),
        ("verdict_hash", pa.string()),
        ("stage", pa.string()),
        ("reason", pa.string()),
        ("message", pa.string()),
    ]
)


@dataclass(frozen=True)
class Extractor:
    """An extractor configuration: a provider, a prompt template and a model.

    ``extractor_id`` names it in every row it produces (and is the replay key).
    """

    extractor_id: str
    provider: Provider
    template: PromptTemplate = field(default_factory=lambda: get_template("lesson-v1"))
    model: str = "unknown"
    parameters: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def replay(
        cls,
        recordings: Any,
        extractor_id: str,
        *,
        template: str | PromptTemplate = "lesson-v1",
        model: str | None = None,
        parameters: Mapping[str, Any] | None = None,
    ) -> Extractor:
        """Replay recorded completions (a §2 file, a DataFrame, or a Store's table).

        To replay a live run recorded by truss_lab, give the same ``model`` and
        ``parameters`` it used: the request hash covers them, and a request
        that differs from the recorded one is refused.
        """
        from ._replay import ReplayProvider

        if isinstance(recordings, Store):
            recordings = recordings.sql(
                "SELECT * FROM completions WHERE extractor = ?", [extractor_id]
            ).df()
        tpl = get_template(template) if isinstance(template, str) else template
        return cls(extractor_id, ReplayProvider(recordings), tpl, model or extractor_id,
                   dict(parameters or {}))

    @classmethod
    def heuristic(cls, *, max_lessons: int = 5) -> Extractor:
        """The deterministic, model-free baseline (``heuristic-v1``)."""
        from ._heuristic import HeuristicProvider

        h = HeuristicProvider(max_lessons=max_lessons)
        return cls(h.extractor_id, h, get_template("lesson-v1"), h.model)

    @classmethod
    def openai(
        cls,
        base_url: str,
        model: str,
        *,
        extractor_id: str | None = None,
        template: str | PromptTemplate = "lesson-v1",
        parameters: Mapping[str, Any] | None = None,
        **provider_options: Any,
    ) -> Extractor:
        """A live OpenAI-compatible endpoint (vLLM, llama.cpp server, Ollama, OpenAI)."""
        from ._openai import OpenAICompatibleProvider

        tpl = get_template(template) if isinstance(template, str) else template
        provider = OpenAICompatibleProvider(base_url, model, **provider_options)
        return cls(extractor_id or f"{model}@{tpl.version}", provider, tpl, model,
                   dict(parameters or {"temperature": 0}))

    def request(self, verdict_hash: str, payload: Mapping[str, Any]) -> CompletionRequest:
        """The request for one verdict."""
        return build_request(
            self.template, payload, verdict_hash=verdict_hash, extractor=self.extractor_id,
            model=self.model, parameters=dict(self.parameters),
        )


@dataclass
class ExtractionRows:
    """What extraction of some verdicts produced, before any gate or write.

    Plain data (picklable), so workers on other processes or machines can
    return it to the single writer.
    """

    candidates: pd.DataFrame
    """One row per proposed lesson (valid or dropped)."""
    errors: pd.DataFrame
    """One row per verdict whose provider call or parse failed."""
    provider_calls: int = 0
    """How many times the provider was called."""
    completions: list[dict[str, Any]] = field(default_factory=list)
    """The completions received (FORMATS.md §2 fields), for recording live calls."""


def extract_verdicts(
    extractor: Extractor,
    verdicts: Sequence[tuple[int, str, Mapping[str, Any]]],
) -> ExtractionRows:
    """Run the extractor over ``(seq, hash, payload)`` verdicts; never raises for one
    bad verdict: its provider or parse failure becomes an error row."""
    results: list[tuple[dict[str, Any], Any]] = []
    errors: list[dict[str, Any]] = []
    completions: list[dict[str, Any]] = []
    calls = 0
    for seq, vhash, payload in verdicts:
        try:
            request = extractor.request(vhash, payload)
        except BadInputError as exc:
            errors.append(_err(seq, vhash, "prompt", "bad_verdict", str(exc)))
            continue
        calls += 1
        try:
            completion = extractor.provider.complete(request)
        except ProviderError as exc:
            errors.append(_err(seq, vhash, "provider", "provider_error", str(exc)))
            continue
        completions.append(_completion_record(request, completion))
        parsed = parse_completion(completion.text)
        if parsed.error is not None:
            errors.append(_err(seq, vhash, "parse", parsed.error, parsed.detail))
            continue
        if parsed.lessons:
            results.append(({"verdict_seq": seq, "verdict_hash": vhash,
                             "extractor_id": extractor.extractor_id}, parsed))
    # One frame per batch, not per verdict: building frames dominated the run time.
    if results:
        cands = candidates_frame(results)
        cands["prompt_version"] = extractor.template.version
    else:
        cands = _empty_candidates()
    return ExtractionRows(cands, pd.DataFrame(errors, columns=list(ERROR_SCHEMA.names)[1:]),
                          calls, completions)


def _err(seq: int, vhash: str, stage: str, reason: str, message: str | None) -> dict[str, Any]:
    return {"verdict_seq": seq, "verdict_hash": vhash, "stage": stage, "reason": reason,
            "message": (message or "")[:2000]}


def _completion_record(request: CompletionRequest, c: Completion) -> dict[str, Any]:
    return {
        "verdict_hash": request.verdict_hash, "extractor": request.extractor, "model": c.model,
        "prompt_version": request.prompt_version, "request_hash": c.request_hash,
        "text": c.text, "latency_ms": c.latency_ms, "prompt_tokens": c.prompt_tokens,
        "completion_tokens": c.completion_tokens, "replayed": c.replayed,
    }


def _empty_candidates() -> pd.DataFrame:
    return pd.DataFrame({
        "verdict_seq": pd.Series([], dtype="int64"), "verdict_hash": pd.Series([], dtype=object),
        "extractor_id": pd.Series([], dtype=object),
        "lesson_index": pd.Series([], dtype="int64"), "text": pd.Series([], dtype=object),
        "salience": pd.Series([], dtype="float64"), "evidence": pd.Series([], dtype=object),
        "valid": pd.Series([], dtype=bool), "drop_reason": pd.Series([], dtype=object),
        "prompt_version": pd.Series([], dtype=object),
    })


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
    c = rows.candidates
    n = len(c)
    scores = (np.asarray(score(c), dtype=np.float64) if score is not None and n
              else c["salience"].to_numpy(dtype=np.float64))
    passed = apply_gate(scores, c["valid"].to_numpy(dtype=bool), config)
    vh = c["verdict_hash"].tolist()
    ex = c["extractor_id"].tolist()
    li = [int(i) for i in c["lesson_index"]]
    cand_ids = [derive_id("cand", *k) for k in zip(vh, ex, li, strict=True)]
    lesson_ids = [derive_id("lesson", *k) for k in zip(vh, ex, li, strict=True)]
    write = passed & write_memory
    entry_ids = [lid if w else None for lid, w in zip(lesson_ids, write, strict=True)]
    cand = pa.table(
        {
            "candidate_id": cand_ids,
            "run_id": [run_id] * n,
            "verdict_seq": c["verdict_seq"].astype("int64").to_numpy(),
            "verdict_hash": vh,
            "extractor_id": ex,
            "lesson_index": pa.array(li, pa.int32()),
            "text": [None if t is None or t != t else str(t) for t in c["text"].tolist()],
            "salience": pa.array(c["salience"].to_numpy(dtype=np.float64), pa.float64(),
                                 from_pandas=True),
            "evidence": [list(e) for e in c["evidence"].tolist()],
            "valid": c["valid"].to_numpy(dtype=bool),
            "drop_reason": [None if d is None or d != d else str(d)
                            for d in c["drop_reason"].tolist()],
            "score": pa.array(scores, pa.float64(), from_pandas=True),
            "scorer": [scorer_name] * n,
            "passed_gate": passed,
            "entry_id": entry_ids,
        },
        schema=CANDIDATE_SCHEMA,
    )
    idx = np.flatnonzero(write)
    now = utcnow()
    seqs = c["verdict_seq"].astype("int64").tolist()
    texts = c["text"].tolist()
    evid = c["evidence"].tolist()
    pv = c["prompt_version"].tolist() if "prompt_version" in c else [None] * n
    mem = lesson_rows(
        entry_ids=[lesson_ids[i] for i in idx],
        texts=[str(texts[i]) for i in idx],
        salience=scores[idx],
        evidence=[list(evid[i]) for i in idx],
        lesson_index=[li[i] for i in idx],
        verdict_seq=[seqs[i] for i in idx],
        verdict_hash=[vh[i] for i in idx],
        extractor_id=[ex[i] for i in idx],
        prompt_version=[pv[i] for i in idx],
        run_id=run_id,
        created_at=now,
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
        },
        schema=ERROR_SCHEMA,
    )
    return cand, mem, err


def write_extraction(store: Store, cand: pa.Table, mem: pa.Table, err: pa.Table) -> int:
    """Append candidates, lessons (+ events) and errors in one transaction.

    Returns the number of new lessons. Everything is keyed by content-derived
    ids, so writing the same rows twice adds nothing.
    """
    with store.transaction():
        store.append("candidates", cand, key=["run_id", "candidate_id"])
        n = write_memory_table(store, mem) if mem.num_rows else 0
        if err.num_rows:
            store.append("verdict_errors", err, key=["run_id", "verdict_hash", "stage"])
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


@dataclass(frozen=True)
class CloseResult:
    """What one :meth:`ContractCloseLearning.on_verdict_recorded` did."""

    verdict: LedgerRef
    policy: LessonExtractionPolicy
    provider_calls: int
    candidates: int
    lessons_written: int
    error: str | None = None
    lesson_ids: tuple[str, ...] = ()


class ContractCloseLearning:
    """Learn lessons when a contract closes (ADR 0011), one verdict at a time.

    >>> ccl = ContractCloseLearning(Extractor.heuristic(), MemoryConfig(lesson_extraction="on"))
    >>> ccl.on_verdict_recorded(store, verdict_ref)
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
        """Extract, gate and write the lessons of one recorded verdict."""
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
        error = None
        if len(rows.errors):
            r = rows.errors.iloc[0]
            error = f"{r['stage']}: {r['reason']}: {r['message']}"
        return CloseResult(
            verdict_ref, policy, rows.provider_calls, cand.num_rows, written, error,
            tuple(mem.column("entry_id").to_pylist()),
        )


def ensure_run(
    store: Store,
    run_id: str,
    extractor: Extractor,
    config: MemoryConfig,
    *,
    status: str,
    write_memory: bool,
    extra: Mapping[str, Any] | None = None,
    templates: bool = True,
    scorer: str = "model_salience@1",
    dataset_hash: str | None = None,
    counted: bool = False,
) -> None:
    """Create the extraction_runs row for ``run_id`` if it does not exist
    (and, with ``templates``, record the prompt template it uses): the run
    record of :mod:`truss_lab.store._runs`, filled from ``extractor`` and ``config``.
    ``counted``: the run keeps counts in its row (a batch does, a live learner not)."""
    tpl = extractor.template
    create_run(
        store, run_id, extractor_id=extractor.extractor_id,
        provider=provider_name(extractor.provider),
        policy=config.lesson_extraction.value, min_salience=config.extraction_min_salience,
        write_memory=write_memory, prompt_version=tpl.version, prompt_hash=tpl.template_hash,
        scorer=scorer, config=extra, dataset_hash=dataset_hash, status=status, counted=counted,
    )
    if templates:
        record_prompt_template(store, tpl.version, tpl.template_hash, tpl.text)
