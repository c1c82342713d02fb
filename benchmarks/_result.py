"""The one result format every benchmark prints and ``scripts/bench_all.py`` reads.

A figure is one line::

    RESULT name=verify_chain value=30512 unit=entries/s baseline=36011 ratio=0.847 goal=">= 0.8"

``value`` and ``baseline`` are numbers in the same ``unit`` (``baseline`` may be
empty when a figure has none); ``ratio`` is the number the goal is stated on
(each benchmark says which way it divides); ``goal`` is ``">= x"``, ``"<= x"``
or empty (an informational figure). ``baseline_name`` says what the baseline is
and ``load`` is the 1-minute load average when the figure was taken, because on
a shared machine every timing depends on it; ``threads`` says which thread pools
the figure ran with (:func:`thread_counts`: the BLAS pool numpy has, the
limit truss_lab's hot paths set, and the thread environment variables). Tokens
are shell-quoted, so names and notes may hold spaces.

``scripts/bench_all.py`` fixes those pools for every benchmark it runs (one BLAS
thread unless ``--blas-threads`` says otherwise), so a figure does not depend on
the shell it was started from; a benchmark that compares pools sets its own.
"""

from __future__ import annotations

import gc
import math
import os
import shlex
import time
from collections.abc import Callable

__all__ = ["FIELDS", "THREAD_ENV", "best_time", "best_times", "load_average", "result",
           "result_line", "thread_counts"]

FIELDS = ("name", "value", "unit", "baseline", "ratio", "goal", "baseline_name", "load",
          "threads", "note")
#: The environment variables that size the thread pools of numpy's BLAS (OpenBLAS,
#: MKL or an OpenMP build) and of truss_lab's hot paths.
THREAD_ENV = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
              "TRUSS_LAB_BLAS_THREADS")


def load_average() -> float:
    """The 1-minute load average (NaN where the platform has none)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return math.nan


def thread_counts() -> str:
    """``blas=N lib=M`` and each set variable of :data:`THREAD_ENV`: ``N`` the BLAS
    threads numpy has now (threadpoolctl), ``M`` those truss_lab's hot paths run on
    (``inherit``: the environment's pool)."""
    import numpy  # noqa: F401  # its BLAS is what threadpoolctl is asked about
    from threadpoolctl import threadpool_info

    from truss_lab.core._threads import blas_thread_limit

    blas = sorted({p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"})
    lib = blas_thread_limit()
    parts = [f"blas={','.join(map(str, blas)) or '?'}",
             f"lib={'inherit' if lib is None else lib}"]
    parts += [f"{k}={os.environ[k]}" for k in THREAD_ENV if k in os.environ]
    return " ".join(parts)


def _num(x: float | int | None) -> str:
    if x is None:
        return ""
    if isinstance(x, int):
        return str(x)
    return f"{x:.6g}"


def result_line(name: str, value: float, unit: str, *, baseline: float | None = None,
                ratio: float | None = None, goal: str = "", baseline_name: str = "",
                note: str = "", threads: str | None = None) -> str:
    """The ``RESULT ...`` line of one figure (see the module docstring); ``threads``
    defaults to this process's :func:`thread_counts` (a figure timed in child
    processes passes theirs)."""
    if goal and not (goal.startswith((">= ", "<= ")) and _is_number(goal[3:])):
        raise ValueError(f"goal must be '>= x' or '<= x', got {goal!r}")
    fields = {"name": name, "value": _num(value), "unit": unit, "baseline": _num(baseline),
              "ratio": _num(ratio), "goal": goal, "baseline_name": baseline_name,
              "load": f"{load_average():.2f}",
              "threads": thread_counts() if threads is None else threads, "note": note}
    return "RESULT " + " ".join(f"{k}={shlex.quote(v)}" for k, v in fields.items())


def result(name: str, value: float, unit: str, **kw: object) -> None:
    """Print the ``RESULT`` line of one figure (flushed: a later crash keeps it)."""
    print(result_line(name, value, unit, **kw), flush=True)  # type: ignore[arg-type]


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def best_time(fn: Callable[[], object], repeat: int) -> float:
    """The fastest of ``repeat`` timed calls of ``fn``, each after a garbage collection."""
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def best_times(fns: list[Callable[[], object]], repeat: int) -> list[float]:
    """:func:`best_time` of each of ``fns``, their calls interleaved (``repeat`` rounds
    of one call each): a figure and its baseline then meet the same moments of a shared
    machine, where back-to-back blocks of calls can each meet a different neighbour."""
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            best[i] = min(best[i], best_time(fn, 1))
    return best
