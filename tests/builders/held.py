"""How many of a stream's earlier batches are still alive when the next is read.

A streamed reader must let each batch go once it is used: :func:`watched` yields a
stream's batches and records, before each, how many of the earlier ones a garbage
collection leaves alive. Used by tests/test_ingest_batches.py (the completions and
labels readers) and tests/test_sigpool.py (the journal's verification stream).
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

__all__ = ["watched"]

T = TypeVar("T")


def watched(batches: Iterable[T], held: list[int],
            part: Callable[[T], Any] = lambda batch: batch) -> Iterator[T]:
    """Yield ``batches``, appending to ``held`` before each how many earlier batches
    (their ``part``, the object a weak reference can watch) are still alive.

    What lived before the first batch (modules, fixtures) is frozen out of the
    collections (``gc.freeze``) while the stream runs: a batch is never among it, and
    a full collection of a test process that has run hundreds of tests costs a second
    or more, each batch.
    """
    refs: list[weakref.ref[Any]] = []
    gc.collect()
    gc.freeze()
    try:
        for batch in batches:
            gc.collect()
            held.append(sum(r() is not None for r in refs))
            refs.append(weakref.ref(part(batch)))
            yield batch
    finally:
        gc.unfreeze()
