"""Verify the journal and extract recorded answers at the same time.

A batch writes nothing until the journal up to its last verdict verifies. With
recorded answers (replay, heuristic: no model is called, nothing is paid for)
and the inline executor, the driver need not wait idle for that: while the
signatures of one batch of journal entries are checked (by worker processes for
a long chain: journal/_verify.py), the driver extracts the chunks that batch completes,
from the same rows (one read of the journal serves both). The chunks extracted
so are held, unwritten, until the whole prefix has verified; on a bad chain
they are dropped (and the replay's call counts put back) and the run fails as
before. At most ``max_chunks`` are held, so memory stays bounded; the rest are
extracted afterwards as usual.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ..journal._spec import JournalColumns
from ..journal._table import journal_batches, stored_keyring
from ..journal._verify import VerifyReport, verify_stream
from ..store._store import Store
from ._executors import extract_chunk
from ._extractor import ExtractionRows

__all__ = ["verify_while_extracting"]

Extracted = tuple[int, np.ndarray, Any]


def verify_while_extracting(
    store: Store, runner: Any, todo: list[int], seqs_all: np.ndarray, chunk_size: int,
    last_seq: int, *, max_chunks: int,
    then: Callable[[int, np.ndarray, ExtractionRows], Any] | None = None,
    extracted: Callable[[], None] | None = None,
) -> tuple[VerifyReport, list[Extracted]]:
    """The report of ``verify_chain(store, upto_seq=last_seq)``, and the first
    ``max_chunks`` chunks of ``todo`` extracted meanwhile (in ``todo`` order), each
    passed through ``then(index, seqs, rows)`` when given (the batch gates them).
    ``extracted()`` is called once the journal has been read and those chunks
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
                rows = extract_chunk(runner, chunk)
                out.append((i, seqs, rows if then is None else then(i, seqs, rows)))
                k += 1
        if extracted is not None:
            extracted()

    provider = runner.provider
    tally = provider._tally() if hasattr(provider, "_tally") else None
    report = verify_stream(feed(), stored_keyring(store))
    if report.ok:
        return report, out
    if tally is not None:
        provider._set_tally(tally)  # as if nothing had been asked: nothing was extracted
    return report, []
