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
  then timsort, which is fast on the nearly sorted result (in 2 threads, each
  on the keys of its own buckets). ~1.7x faster at 1M keys there. It declines
  (returns None) when the data pile up in few buckets (rounded saliences, one
  outlier), where timsort would be slow, and then the first way runs. Its
  extra memory: uint16 buckets, argsort's scratch and the int64 positions it
  returns, which then hold the sorted keys (the input is left as it was).
"""

from __future__ import annotations

import functools
import itertools
import math
import os
import sys
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

# Below this size one thread sorts faster than splitting and handing out work.
_PARALLEL_MIN = 1 << 18

#: Use the bucket sort: None decides from the CPU (numpy_sort_is_slow); tests set True/False.
BUCKETS: bool | None = None

# The bucket sort's range of sizes. Below ~16k its fixed costs (65536 buckets)
# eat the gain (16k keys: 0.23 against 0.45 ms; 4k: 0.16 against 0.09). Above
# ~4M the radix argsort and the gather miss the cache and the buckets outgrow
# _BUCKET_BITS: 4M 0.83x, 6M 1.12x, 10M 1.05x numpy's time in 2 threads.
_BUCKET_MIN = 1 << 14
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
    """Sort a uint64 array of keys ascending, in ``n_jobs`` threads; returns the sorted array.

    The result is ``key`` itself (sorted in place) or, from the bucket sort, a
    new array (``key`` is then left unsorted).
    """
    jobs = n_jobs if n_jobs is not None else min(4, os.cpu_count() or 1)
    n = len(key)
    if _BUCKET_MIN <= n <= _BUCKET_MAX and _use_buckets():
        out = _bucket_sort(key, jobs)
        if out is not None:
            return out
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


def _bucket_sort(key: np.ndarray, jobs: int) -> np.ndarray | None:
    """Sorted copy of ``key`` by buckets, or None when the data suit it badly."""
    n = len(key)
    if n < 2:
        return None
    one = np.uint64(1)
    lo = float((key.min() >> one).view(np.float64))
    hi = float((key.max() >> one).view(np.float64))
    # Above the largest float (inf, NaN) the values stop ordering like the keys.
    scale = (_N_BUCKETS - 1) / (hi - lo) if math.isfinite(hi) and hi > lo else math.inf
    if not math.isfinite(scale):
        return None
    # Skewed data, the usual reason to decline, show in a 1/16 sample (whose
    # buckets are 16x smaller, 4 bits): declining then costs a small pass
    # instead of a full one. The full count decides.
    sample = _buckets(key[::_SAMPLE], lo, scale)
    sample_compares = _compares(np.bincount(sample, minlength=_N_BUCKETS))
    if float(sample_compares.sum()) / len(sample) > _BUCKET_BITS - 3:
        return None
    bucket = _buckets(key, lo, scale)
    counts = np.bincount(bucket, minlength=_N_BUCKETS)
    compares = _compares(counts)
    if float(compares.sum()) / n > _BUCKET_BITS:
        return None
    idx = np.argsort(bucket, kind="stable")  # radix sort for 16-bit keys
    del bucket
    # The sorted keys overwrite the positions they were gathered by (same item
    # size), slice by slice through a small buffer: no second n-sized array.
    out = idx.view(np.uint64)
    jobs = max(1, min(jobs, n // _PARALLEL_MIN))
    # Split at bucket boundaries (every key of a part is <= every key of the
    # next) into parts of equal work: gathering a key costs about one timsort
    # comparison, and a bucket of c keys takes c log2(c) of them.
    ends = np.cumsum(counts)
    work = np.cumsum(counts + compares)
    at = np.searchsorted(work, [work[-1] * i / jobs for i in range(1, jobs)])
    cuts = [int(ends[j]) for j in at]

    def finish(lo_hi: tuple[int, int]) -> None:
        start, stop = lo_hi
        scratch = np.empty(min(_STEP, stop - start), dtype=np.uint64)
        for a in range(start, stop, _STEP):
            b = min(stop, a + _STEP)
            # mode="clip" skips the per-index error check ("raise"), 1.5x faster;
            # argsort's positions are always in range, so nothing is clipped.
            np.take(key, idx[a:b], out=scratch[: b - a], mode="clip")
            out[a:b] = scratch[: b - a]
        out[start:stop].sort(kind="stable")  # timsort: runs of nearly sorted data

    parts = list(itertools.pairwise([0, *cuts, n]))
    if len(parts) == 1:
        finish(parts[0])
    else:
        with ThreadPoolExecutor(max_workers=len(parts)) as pool:
            list(pool.map(finish, parts))
    return out


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


def _compares(counts: np.ndarray) -> np.ndarray:
    """Timsort's comparisons per bucket of random keys, c log2(c), from the bucket sizes c.

    (Sums, not a dot product: a BLAS dot may wake OpenBLAS threads that then
    spin on a core.)
    """
    return counts * np.log2(np.maximum(counts, 1))
