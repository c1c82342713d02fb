"""Sorting the packed uint64 keys of the threshold sweep (see ``_sweep.distinct_counts``).

A key is ``float bits << 1 | label`` of one candidate; the caller sorts
negative saliences apart, so ``key >> 1`` read as float64 is the salience's
magnitude and orders like the key.

Two exact ways, same output:

- numpy's sort, in up to ``n_jobs`` threads each sorting one slice of an
  in-place partition (no extra memory);
- a bucket sort for CPUs where numpy's sort of 64-bit numbers is slow (AMD Zen 4
  with its AVX-512 kernel, see :func:`numpy_sort_is_slow`): a 16-bit bucket
  that is monotone in the key, numpy's radix argsort of the buckets, a gather,
  then timsort, which is fast on the nearly sorted result (and makes it exact
  whatever the buckets). In threads, each thread does all that for the keys
  between two pivots. 1.4-2x faster at 1M keys there, result in place. It
  declines when the data pile up in few buckets (rounded saliences, one
  outlier), where timsort would be slow, and then the first way runs. Its
  extra memory: with threads a copy of the keys (the parts), uint16 buckets,
  argsort's int64 positions and scratch.
"""

from __future__ import annotations

import functools
import itertools
import math
import os
import sys
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

# Below this size one thread sorts faster than splitting and handing out work.
_PARALLEL_MIN = 1 << 18

#: Use the bucket sort: None decides from the CPU (numpy_sort_is_slow); tests set True/False.
BUCKETS: bool | None = None

# The bucket sort's range of sizes. Below ~64k its fixed costs (65536 buckets)
# eat much of the gain and declining costs up to 10% (16k keys: 0.31 against
# 0.46 ms; skewed ones 0.50 against 0.45; 64k: 0.8x, skewed 1.05x). Above
# ~4M a thread's buckets outgrow _BUCKET_BITS (uniform keys: log2(n / 65536)
# bits) and the radix argsort and the gather miss the cache: numpy's time x
# 0.70 (4M keys), 1.01 (6M), 1.01 (10M) in one thread; 0.72, 0.78, 1.04 in two.
_BUCKET_MIN = 1 << 16
_BUCKET_MAX = 4 << 20
_N_BUCKETS = 1 << 16
# Work left to the finishing timsort, in comparisons per key: the mean over
# keys of log2(size of the key's bucket). Timsort of 1M keys in buckets of B
# random keys each takes ~13 ms (B=16, 4 bits), 20 (6), 28 (8), 36 (10), 45 (12),
# the rest of the bucket sort 15-25 ms. Measured on 1M keys of skewed shapes
# (x**k, beta, exponential, rounded), the bucket sort is ahead of numpy's
# (~53 ms, ~35 ms in 2 threads) up to ~6 bits in 2 threads and ~8 in one.
_BUCKET_BITS = 6.0
_STEP = 1 << 16  # cache-sized slices for the bucket and gather passes
_SAMPLE = 16  # every 16th key goes into the early skew check


@functools.cache
def numpy_sort_is_slow() -> bool:
    """True on AMD Zen 4 when numpy sorts 64-bit numbers with its AVX-512 kernel.

    That kernel (x86-simd-sort) moves data with AVX-512 compress-stores, which
    are microcoded on Zen 4 (family 25 with AVX-512): np.sort of 1M float64 takes
    ~55 ms there, against ~13 ms with the AVX2 kernel and on Intel CPUs or Zen 5
    (family 26). numpy reports AVX512_SKX False when that kernel is disabled
    (NPY_DISABLE_CPU_FEATURES). Linux only (reads /proc/cpuinfo); False elsewhere.
    """
    try:  # private, but the only runtime view of numpy's dispatch (np.show_runtime prints it)
        from numpy._core._multiarray_umath import __cpu_features__
    except ImportError:
        return False
    if not __cpu_features__.get("AVX512_SKX", False) or not sys.platform.startswith("linux"):
        return False
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            return is_zen4(f)
    except OSError:
        return False


def is_zen4(cpuinfo: Iterable[str]) -> bool:
    """Whether the first processor in /proc/cpuinfo lines is AMD family 25 with AVX-512."""
    fields: dict[str, str] = {}
    for line in cpuinfo:
        name, sep, value = line.partition(":")
        if not sep:
            break  # end of the first processor's block
        fields.setdefault(name.strip(), value.strip())
    return (
        fields.get("vendor_id") == "AuthenticAMD"
        and fields.get("cpu family") == "25"
        and "avx512f" in fields.get("flags", "").split()
    )


def _use_buckets() -> bool:
    return BUCKETS if BUCKETS is not None else numpy_sort_is_slow()


def sort_u64(key: np.ndarray, n_jobs: int | None) -> np.ndarray:
    """Sort a uint64 array of keys ascending in place, in ``n_jobs`` threads; returns it."""
    jobs = n_jobs if n_jobs is not None else min(4, os.cpu_count() or 1)
    n = len(key)
    if _BUCKET_MIN <= n <= _BUCKET_MAX and _use_buckets() and _bucket_sort(key, jobs):
        return key
    if jobs <= 1 or n < _PARALLEL_MIN:
        key.sort()
        return key
    # ndarray.partition splits the array in place into contiguous slices
    # (everything left of a split point is <= everything right of it); each
    # slice is sorted by its own thread (numpy releases the GIL while sorting).
    cuts = [n * i // jobs for i in range(1, jobs)]
    key.partition(cuts)
    bounds = [0, *cuts, n]
    parts = [key[lo:hi] for lo, hi in itertools.pairwise(bounds)]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(np.ndarray.sort, parts))
    return key


def _bucket_sort(key: np.ndarray, jobs: int) -> bool:
    """Sort ``key`` in place by buckets; False (``key`` untouched) when the data suit it badly."""
    n = len(key)
    spread = _spread(key) if n >= 2 else None
    if spread is None:
        return False
    lo, scale = spread
    # Skewed data, the usual reason to decline, show in a 1/16 sample (whose
    # buckets are 16x smaller, 4 bits): declining then costs a small pass.
    sample = key[::_SAMPLE]
    counts = np.bincount(_buckets(sample, lo, scale), minlength=_N_BUCKETS)
    if _compares(counts) / len(sample) > _BUCKET_BITS - 3:
        return False
    jobs = max(1, min(jobs, n // _PARALLEL_MIN))
    if jobs == 1:
        _sort_part(key, key)
        return True
    # Each thread takes the keys between two pivots (sample quantiles), so the
    # parts are disjoint in value and their sorted runs line up end to end.
    ranks = [len(sample) * i // jobs for i in range(1, jobs)]
    pivots = [None, *np.partition(sample, ranks)[ranks], None]

    def extract(bounds: tuple[Any, Any]) -> np.ndarray:
        low, high = bounds
        if low is None:
            return key[key < high]
        return key[key >= low] if high is None else key[(key >= low) & (key < high)]

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        # All parts are copied out before any thread writes its result back.
        parts = list(pool.map(extract, itertools.pairwise(pivots)))
        ends = np.cumsum([0, *map(len, parts)])
        dests = [key[a:b] for a, b in itertools.pairwise(ends)]
        list(pool.map(_sort_part, parts, dests))
    return True


def _sort_part(src: np.ndarray, dst: np.ndarray) -> bool:
    """Write ``src`` sorted into ``dst`` (same length; it may be ``src`` itself).

    The order of the buckets, then timsort (returns True); numpy's sort when
    the buckets of this part are too full (the sample missed it) or it holds
    one value (returns False).
    """
    n = len(src)
    spread = _spread(src)
    bucket = _buckets(src, *spread) if spread is not None else None
    if bucket is None or (
        _compares(np.bincount(bucket, minlength=_N_BUCKETS)) / n > _BUCKET_BITS
    ):
        dst[:] = src
        dst.sort()
        return False
    idx = np.argsort(bucket, kind="stable")  # radix sort for 16-bit keys
    del bucket
    # mode="clip" skips the per-index error check ("raise"), 1.5x faster;
    # argsort's positions are always in range, so nothing is clipped.
    if dst is src:
        # Gathered keys overwrite the positions they were gathered by (same
        # item size), slice by slice through a small buffer, then go home.
        out = idx.view(np.uint64)
        scratch = np.empty(min(_STEP, n), dtype=np.uint64)
        for a in range(0, n, _STEP):
            b = min(n, a + _STEP)
            np.take(src, idx[a:b], out=scratch[: b - a], mode="clip")
            out[a:b] = scratch[: b - a]
        out.sort(kind="stable")  # timsort: runs of nearly sorted data
        dst[:] = out
    else:
        np.take(src, idx, out=dst, mode="clip")
        dst.sort(kind="stable")
    return True


def _spread(key: np.ndarray) -> tuple[float, float] | None:
    """``(lo, scale)`` of the map of ``key``'s values onto the buckets, or None when
    they cannot spread over them: no key, one value, or values above the largest
    float (inf, NaN), which stop ordering like the keys."""
    if not len(key):
        return None
    one = np.uint64(1)
    lo = float((key.min() >> one).view(np.float64))
    hi = float((key.max() >> one).view(np.float64))
    if not (math.isfinite(hi) and hi > lo):
        return None
    scale = (_N_BUCKETS - 1) / (hi - lo)
    return (lo, scale) if math.isfinite(scale) else None


def _buckets(key: np.ndarray, lo: float, scale: float) -> np.ndarray:
    """trunc((value - lo) * scale) as uint16, where value = key >> 1 read as float64.

    Each step rounds monotonically, so a larger key never gets a smaller bucket;
    with ``lo`` <= every value and ``scale`` = 65535 / (largest - lo), every
    bucket is below 65536. Computed in cache-sized slices.
    """
    n = len(key)
    one = np.uint64(1)
    bucket = np.empty(n, dtype=np.uint16)
    buf = np.empty(min(_STEP, n), dtype=np.uint64)
    for a in range(0, n, _STEP):
        t = buf[: min(_STEP, n - a)]
        np.right_shift(key[a : a + _STEP], one, out=t)
        v = t.view(np.float64)
        v -= lo
        v *= scale
        np.copyto(bucket[a : a + _STEP], v, casting="unsafe")
    return bucket


def _compares(counts: np.ndarray) -> float:
    """Timsort's comparisons for buckets of random keys, sum of c log2(c) over the sizes c.

    (A sum, not a dot product: a BLAS dot may wake OpenBLAS threads that then
    spin on a core.)
    """
    c = counts[counts > 1].astype(np.float64)  # log2 of all 65536 would cost 0.15 ms
    return float(np.sum(c * np.log2(c)))
