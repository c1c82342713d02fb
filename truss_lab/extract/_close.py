"""Lesson extraction after a verdict lands (ADR 0011), one verdict at a time.

1. ``off`` returns before the provider is touched (0 calls, 0 writes, 0 events).
2. The verdict must be in the journal and verify, else nothing is written.
3. Its lessons go through the one gate (:mod:`truss_lab.extract._gate`); one
   verdict's writes land in one transaction.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core._config import MemoryConfig
from ..core._ids import derive_id
from ..core._models import LedgerRef, LessonExtractionPolicy
from ..journal._table import verified_verdict
from ..store._store import Store
from ._extractor import Extractor, ensure_run, extract_verdicts
from ._gate import gated_tables, record_run_verdicts, write_extraction

__all__ = ["CloseResult", "ContractCloseLearning"]


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
