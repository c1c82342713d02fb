"""Bulk work and Python's cyclic garbage collector.

A replay run holds the rows of up to hundreds of thousands of verdicts (small
dicts, lists, parsed payloads) until the journal has verified and they are
written. CPython's collector walks every tracked object on each full
(oldest-generation) collection, and 3.11 runs one whenever the objects that
survived the young collections have grown by a quarter since the last: a run
that keeps building rows triggers one after another. Measured on 100k replayed
verdicts: 12 full collections, about 1 s of the driver's ~7.5 s of CPU. An ingest
that reads a whole file into rows does the same (references, match labels; 100k labels
were 0.45 s of 1.67 s before labels were read in batches, which hold one batch).

:func:`full_collections_deferred` keeps the young collections (the ones that
free short-lived cycles: exceptions, HTTP client internals) and defers the full
ones until the bulk work ends; the first full collection afterwards finds what
is left. It is process-wide, so overlapping uses (threads) are counted and the
last one out restores the thresholds.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["full_collections_deferred"]

# gc.set_threshold's third value: young collections between full ones. Far more
# than any run performs (about 130 per 100k verdicts).
_DEFERRED = 1 << 30

_lock = threading.Lock()
_depth = 0
_saved = 0  # the third threshold before the outermost use


@contextmanager
def full_collections_deferred() -> Iterator[None]:
    """Within the block, the cyclic GC runs its young collections only.

    Also a decorator. Thresholds someone else changed meanwhile are left alone:
    only the value this set is put back.
    """
    global _depth, _saved
    with _lock:
        if _depth == 0:
            young0, young1, _saved = gc.get_threshold()
            gc.set_threshold(young0, young1, _DEFERRED)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                young0, young1, full = gc.get_threshold()
                if full == _DEFERRED:
                    gc.set_threshold(young0, young1, _saved)
