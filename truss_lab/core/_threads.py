"""The BLAS thread pool the numerical hot paths run under.

The bootstraps (metric intervals, the choice's interval, prediction-powered
intervals), the held-out calibration and the logistic calibrator turn their
replicates into counts with matrix products (replicates x verdicts times
verdicts x threshold bins). numpy hands those to its BLAS (OpenBLAS in the
wheels), which by default starts one thread per core and spins while it waits
for work. On a machine whose cores are shared (a notebook beside a test run,
six processes on two cores) those threads wait for each other: measured on a
2-core machine, ``truss-lab sweep`` of a 10k-verdict run used 3.7x the CPU and
2-6x the wall time of the same command with ``OPENBLAS_NUM_THREADS=1``. The
products are small (at most 2M weight cells per chunk against a few hundred
bins), so one thread loses little when the machine is idle and wins a lot when
it is not; and one thread sums in one order, so the same seed gives the same
floats whatever the environment's thread count.

So every hot path runs inside :func:`blas_limited`, which sets the BLAS pool
(through threadpoolctl) to :func:`blas_thread_limit` threads for the duration
and puts the caller's setting back afterwards: a notebook's own numpy work
keeps whatever pool it had. The limit is 1 unless overridden, by the
environment (``TRUSS_LAB_BLAS_THREADS=N``, or ``inherit`` to leave the pool as
the environment set it) or in code (``with blas_threads(N):``, which takes
precedence). Nested and concurrent uses are counted: only the outermost sets
and restores the pool, so an inner hot path costs a counter increment.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ._errors import ConfigError

__all__ = ["BLAS_THREADS_ENV", "DEFAULT_BLAS_THREADS", "blas_limited", "blas_thread_limit",
           "blas_threads"]

#: The environment variable that overrides the hot paths' BLAS thread count.
BLAS_THREADS_ENV = "TRUSS_LAB_BLAS_THREADS"
#: Threads the hot paths' BLAS runs on unless overridden.
DEFAULT_BLAS_THREADS = 1
_INHERIT = "inherit"

_lock = threading.RLock()
_depth = 0
_restore: Any = None  # the threadpoolctl limiter of the outermost use, restored at its end
_overrides: list[int | None] = []  # blas_threads() blocks, innermost last
_controller: Any = None
_modules_seen = -1


def _check_count(n: object, layer: str, field: str | None) -> int | None:
    if n is None:
        return None
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigError(f"BLAS threads must be a whole number >= 1 or {_INHERIT!r} "
                          f"(leave the pool as it is), got {n!r}", layer=layer, field=field)
    return n


def _from_environment() -> int | None:
    raw = os.environ.get(BLAS_THREADS_ENV, "").strip()
    if not raw:
        return DEFAULT_BLAS_THREADS
    if raw.lower() == _INHERIT:
        return None
    try:
        n: object = int(raw)
    except ValueError:
        n = raw
    return _check_count(n, "environment", BLAS_THREADS_ENV)


def blas_thread_limit() -> int | None:
    """The BLAS threads truss_lab's numerical hot paths run on now.

    Returns
    -------
    int or None
        The innermost :func:`blas_threads` block's count, else the environment's
        ``TRUSS_LAB_BLAS_THREADS``, else 1. None means the pool is left as the
        environment set it (``inherit``).

    Raises
    ------
    ConfigError
        ``TRUSS_LAB_BLAS_THREADS`` is neither a whole number >= 1 nor ``inherit``.

    See Also
    --------
    blas_threads : override the count within a block.

    Examples
    --------
    >>> from truss_lab.core import blas_thread_limit
    >>> blas_thread_limit()  # doctest: +SKIP
    1
    """
    with _lock:
        if _overrides:
            return _overrides[-1]
    return _from_environment()


@contextmanager
def blas_threads(n: int | None) -> Iterator[None]:
    """Within the block, truss_lab's hot paths run their BLAS on ``n`` threads.

    The bootstraps, the prediction-powered intervals and the calibration products run
    on one BLAS thread by default (fastest on shared cores, and the same floats whatever
    the environment); this raises or lowers that for a block of code. The environment's
    ``TRUSS_LAB_BLAS_THREADS`` does the same for a whole process.

    Parameters
    ----------
    n : int or None
        Threads (>= 1), or None to leave the BLAS pool as the environment set it
        (``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS`` or the library's default).

    Returns
    -------
    contextmanager
        A context manager; the previous setting comes back when it exits.

    Raises
    ------
    ConfigError
        ``n`` is not None and not a whole number >= 1.

    See Also
    --------
    blas_thread_limit : the count in effect.

    Examples
    --------
    >>> from truss_lab.core import blas_threads
    >>> with blas_threads(2):
    ...     pass  # sweep_run(...) here uses two BLAS threads
    """
    _check_count(n, "blas_threads", "n")
    with _lock:
        _overrides.append(n)
    try:
        yield
    finally:
        with _lock:
            _overrides.pop()


def _limiter(n: int) -> Any:
    """A threadpoolctl limiter of the BLAS libraries loaded now to ``n`` threads."""
    global _controller, _modules_seen
    from threadpoolctl import ThreadpoolController

    # Scanning the loaded libraries takes about a millisecond; rescan only when a
    # module was imported since (it may have loaded another BLAS, e.g. scipy's).
    if _controller is None or len(sys.modules) != _modules_seen:
        _controller = ThreadpoolController()
        _modules_seen = len(sys.modules)
    return _controller.limit(limits=n, user_api="blas")


@contextmanager
def blas_limited() -> Iterator[None]:
    """Within the block (also a decorator), BLAS runs on :func:`blas_thread_limit`
    threads; the outermost of nested or concurrent uses sets and restores the pool."""
    global _depth, _restore
    with _lock:
        if _depth == 0:
            n = blas_thread_limit()
            _restore = None if n is None else _limiter(n)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _restore is not None:
                _restore.restore_original_limits()
                _restore = None
