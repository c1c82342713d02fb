"""What a batch run did: :class:`ExtractionRun`, read back from its run record."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..core._errors import StoreError
from ..store._runs import get_run
from ..store._store import Store
from ..store._usage import Prices, RunUsage, run_usage

__all__ = ["ExtractionRun", "run_result"]


@dataclass
class ExtractionRun:
    """What :func:`run_extraction` did. Counts are the run's totals (over resumes);
    ``seconds`` and ``verdicts_per_second`` are this call's."""

    run_id: str
    status: str
    extractor_id: str
    policy: str
    n_verdicts: int
    n_candidates: int
    n_lessons: int
    n_errors: int
    provider_calls: int
    seconds: float
    verdicts_this_call: int = 0
    chunks_total: int = 0
    chunks_skipped: int = 0
    error: str | None = None
    store: Store | None = field(default=None, repr=False, compare=False)

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
                "chunks_total", "chunks_skipped", "error")
        out = {k: getattr(self, k) for k in keys}
        vps = self.verdicts_per_second
        out["verdicts_per_second"] = None if np.isnan(vps) else round(vps, 1)
        return out

    def __repr__(self) -> str:
        vps = self.verdicts_per_second
        rate = "" if np.isnan(vps) else f", {vps:,.0f} verdicts/s"
        err = f", error={self.error!r}" if self.error else ""
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
        return self._need_store().sql(
            "SELECT * FROM candidates WHERE run_id = ? ORDER BY verdict_seq, lesson_index",
            [self.run_id],
        ).df()

    def lessons(self) -> pd.DataFrame:
        """The memory entries (lessons) the run's candidates became."""
        return self._need_store().sql(
            "SELECT m.* FROM memory_entries m WHERE m.entry_id IN "
            "(SELECT entry_id FROM candidates WHERE run_id = ? AND entry_id IS NOT NULL) "
            "ORDER BY m.produced_by_seq, m.lesson_index",
            [self.run_id],
        ).df()

    def usage(self, prices: Prices | None = None) -> RunUsage:
        """Calls, tokens, latency percentiles, errors by kind, time per verdict and,
        given ``prices`` (:func:`truss_lab.store._usage.load_prices`), cost."""
        return run_usage(self._need_store(), self.run_id, prices=prices)

    def errors(self) -> pd.DataFrame:
        """The run's per-verdict errors (provider, parse, prompt)."""
        return self._need_store().sql(
            "SELECT * FROM verdict_errors WHERE run_id = ? ORDER BY verdict_seq, stage",
            [self.run_id],
        ).df()


def run_result(store: Store, run_id: str, seconds: float, done_now: int, chunks_total: int,
            skipped: int) -> ExtractionRun:
    r = get_run(store, run_id)
    assert r is not None
    return ExtractionRun(
        run_id=run_id, status=r["status"], extractor_id=r["extractor_id"], policy=r["policy"],
        n_verdicts=int(r["n_verdicts"] or 0), n_candidates=int(r["n_candidates"] or 0),
        n_lessons=int(r["n_lessons"] or 0), n_errors=int(r["n_errors"] or 0),
        provider_calls=int(r["provider_calls"] or 0), seconds=seconds,
        verdicts_this_call=done_now, chunks_total=chunks_total, chunks_skipped=skipped,
        error=r["error"], store=store,
    )
