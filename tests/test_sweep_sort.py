"""The sweep's key sort: the bucket sort (AMD Zen 4) and numpy's sort agree exactly."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.metrics import precision_recall_curve

from tests.builders.profiles import examples
from truss_lab.evaluate import _sort_u64 as su
from truss_lab.evaluate._sweep import distinct_counts, sweep

pytestmark = pytest.mark.filterwarnings(
    "ignore::truss_lab.evaluate._sweep.UndefinedMetricWarning"
)


@pytest.fixture
def numpy_path(monkeypatch):
    monkeypatch.setattr(su, "BUCKETS", False)


@pytest.fixture
def bucket_path(monkeypatch):
    """Bucket sort at every size and skew, split over threads from 16 keys on.

    The size and skew limits only pick the faster way, so lifting them tests
    the bucket sort on inputs it would decline (ties, one value, subnormals).
    """
    monkeypatch.setattr(su, "BUCKETS", True)
    monkeypatch.setattr(su, "_PARALLEL_MIN", 8)
    monkeypatch.setattr(su, "_BUCKET_MIN", 2)
    monkeypatch.setattr(su, "_BUCKET_MAX", 1 << 40)
    monkeypatch.setattr(su, "_BUCKET_BITS", 99.0)


def keys(s, y=None) -> np.ndarray:
    """The sweep's packed keys of ``s`` (as distinct_counts builds them)."""
    s = np.asarray(s, dtype=np.float64)
    y = np.zeros(len(s), np.uint8) if y is None else np.asarray(y, np.uint8)
    return (s.view(np.uint64) << np.uint64(1)) | y


def hostile(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    r = rng.random(n)
    outlier = r.copy()
    outlier[n // 2] = 1e6
    tiny = np.finfo(np.float64).smallest_subnormal
    return {
        "random": r,
        "ties": rng.integers(0, 7, n) / 7,
        "rounded": np.round(r, 2),
        "one_outlier": outlier,
        "all_equal": np.full(n, 0.375),
        "zeros": np.zeros(n),
        "signed_zeros": np.where(r < 0.5, 0.0, -0.0),
        "subnormals": rng.integers(0, 50, n) * tiny,
        "subnormal_and_normal": np.where(r < 0.5, rng.integers(0, 9, n) * tiny, r),
        "nan_mix": np.where(r < 0.2, np.nan, r),
        "inf_mix": np.where(r < 0.1, np.inf, r),
        "negatives": r - 0.5,
        "huge_range": np.where(r < 0.5, r * 1e-300, r * 1e300),
        "beta_skewed": rng.beta(0.3, 0.3, n),
        "exponential": rng.exponential(1.0, n),
        "max_float": np.where(r < 0.5, np.finfo(np.float64).max, r),
    }


KINDS = list(hostile(4))


@pytest.mark.parametrize("n", [2, 3, 17, 1000, 70_000])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.usefixtures("bucket_path")
def test_bucket_sort_equals_np_sort(kind, n):
    s = hostile(n, seed=n)[kind]
    s = s[~np.isnan(s)]
    y = np.random.default_rng(1).integers(0, 2, len(s))
    for part in (s[s >= 0], s[s < 0]):  # distinct_counts sorts negatives apart
        key = keys(part, y[: len(part)])
        expected = np.sort(key)
        for n_jobs in (1, 2, 3):
            got = su.sort_u64(key.copy(), n_jobs)
            np.testing.assert_array_equal(got, expected)


def spy_parts(monkeypatch) -> list[tuple[int, bool]]:
    """Record (length, bucket-sorted?) of every part _sort_part handles."""
    seen: list[tuple[int, bool]] = []
    real = su._sort_part

    def spy(src: np.ndarray, dst: np.ndarray) -> bool:
        done = real(src, dst)
        seen.append((len(src), done))
        return done

    monkeypatch.setattr(su, "_sort_part", spy)
    return seen


@pytest.mark.parametrize("n_jobs", [1, 2, 3])
@pytest.mark.usefixtures("bucket_path")
def test_bucket_sort_runs_and_splits_over_threads(monkeypatch, n_jobs):
    """Spread-out input really takes the bucket sort, in place, in n_jobs parts."""
    monkeypatch.setattr(su, "_PARALLEL_MIN", 1000)
    seen = spy_parts(monkeypatch)
    key = keys(hostile(5000)["random"], np.arange(5000) % 2)
    expected = np.sort(key)
    assert su.sort_u64(key, n_jobs) is key
    np.testing.assert_array_equal(key, expected)
    assert len(seen) == n_jobs
    assert all(done for _, done in seen)
    assert sum(length for length, _ in seen) == len(key)
    assert min(length for length, _ in seen) > 5000 / n_jobs / 2  # sample quantiles balance


def test_bucket_sort_declines_what_it_cannot_order_or_would_be_slow(monkeypatch):
    n = 1 << 15
    r = np.random.default_rng(2).random(n)

    def declines(s: np.ndarray) -> bool:
        key = keys(s)
        before = key.copy()
        if su._bucket_sort(key, 2):
            np.testing.assert_array_equal(key, np.sort(before))
            return False
        np.testing.assert_array_equal(key, before)  # untouched
        return True

    assert not declines(r)
    # Skewed: one outlier puts everything else in bucket 0.
    assert declines(np.r_[r[:-1], 1e9])
    assert declines(np.round(r, 2))
    # Piled up at the ends but spread out on the whole (like probabilities): accepted.
    assert not declines(np.random.default_rng(3).beta(0.5, 0.5, n))
    assert declines(np.full(n, 0.5))  # one value
    # Keys past the largest float do not order like floats.
    assert declines(np.r_[r[:-1], np.inf])
    assert declines(np.r_[r[:-1], np.nan])
    tiny = np.finfo(np.float64).smallest_subnormal
    assert declines(np.arange(n) % 3 * tiny)  # the scale overflows
    # A pile-up the 1/16 sample misses: the full count sends the part to numpy.
    seen = spy_parts(monkeypatch)
    hidden = np.full(n, 0.5)
    hidden[:: su._SAMPLE] = r[:: su._SAMPLE]  # the sample sees spread-out keys only
    key = keys(hidden)
    assert su._bucket_sort(key, 1)
    np.testing.assert_array_equal(key, np.sort(keys(hidden)))
    assert seen == [(n, False)]


@pytest.mark.parametrize("seed", range(3))
def test_sort_u64_keeps_the_numpy_path_when_declining(monkeypatch, seed):
    monkeypatch.setattr(su, "BUCKETS", True)
    seen = spy_parts(monkeypatch)
    s = hostile(1 << 15, seed)["one_outlier"]
    key = keys(s)
    assert su.sort_u64(key, 2) is key
    np.testing.assert_array_equal(key, np.sort(keys(s)))
    assert seen == []


@pytest.mark.parametrize("kind", KINDS)
def test_distinct_counts_identical_on_both_paths(monkeypatch, kind):
    s = hostile(40_000, seed=3)[kind]
    y = (np.random.default_rng(4).random(len(s)) < 0.4).astype(np.uint8)
    monkeypatch.setattr(su, "BUCKETS", False)
    expected = distinct_counts(y, s, n_jobs=2)
    with monkeypatch.context() as m:
        for name, value in [
            ("BUCKETS", True), ("_BUCKET_MIN", 2), ("_BUCKET_BITS", 99.0),
            ("_PARALLEL_MIN", 8),
        ]:
            m.setattr(su, name, value)
        for n_jobs in (1, 2):
            got = distinct_counts(y, s, n_jobs=n_jobs)
            for g, e in zip(got, expected, strict=True):
                assert g.dtype == e.dtype
                assert g.tobytes() == e.tobytes()


@pytest.mark.parametrize("kind", ["random", "ties", "rounded", "negatives", "beta_skewed"])
@pytest.mark.usefixtures("bucket_path")
def test_bucket_path_matches_sklearn(kind):
    s = hostile(30_000, seed=5)[kind]
    y = (np.random.default_rng(6).random(len(s)) < 0.3).astype(int)
    frame = sweep(y, s)
    precision, recall, thresholds = precision_recall_curve(y, s)
    np.testing.assert_array_equal(frame["threshold"].to_numpy(), thresholds[::-1])
    np.testing.assert_allclose(frame["precision"].to_numpy(), precision[:-1][::-1])
    np.testing.assert_allclose(frame["recall"].to_numpy(), recall[:-1][::-1])


@pytest.mark.usefixtures("numpy_path")
def test_numpy_path_matches_sklearn():
    s = hostile(30_000, seed=7)["random"]
    y = (np.random.default_rng(8).random(len(s)) < 0.3).astype(int)
    precision, _recall, thresholds = precision_recall_curve(y, s)
    frame = sweep(y, s)
    np.testing.assert_array_equal(frame["threshold"].to_numpy(), thresholds[::-1])
    np.testing.assert_allclose(frame["precision"].to_numpy(), precision[:-1][::-1])


@settings(max_examples=examples(200), deadline=None)
@given(
    s=arrays(np.float64, st.integers(2, 300), elements=st.floats(allow_subnormal=True)),
    seed=st.integers(0, 2**16),
    n_jobs=st.sampled_from([1, 2]),
)
def test_hypothesis_both_paths_give_the_same_sweep(s, seed, n_jobs):
    y = np.random.default_rng(seed).integers(0, 2, len(s))
    saved = (su.BUCKETS, su._BUCKET_MIN, su._BUCKET_BITS, su._PARALLEL_MIN)
    try:
        su.BUCKETS = False
        expected = sweep(y, s, n_jobs=n_jobs)
        su.BUCKETS, su._BUCKET_MIN, su._BUCKET_BITS, su._PARALLEL_MIN = True, 2, 99.0, 64
        got = sweep(y, s, n_jobs=n_jobs)
    finally:
        su.BUCKETS, su._BUCKET_MIN, su._BUCKET_BITS, su._PARALLEL_MIN = saved
    pd.testing.assert_frame_equal(got, expected, check_exact=True)


def test_zen4_detection_reads_vendor_family_and_avx512():
    def cpuinfo(vendor: str, family: int, flags: str) -> list[str]:
        return [
            "processor\t: 0\n",
            f"vendor_id\t: {vendor}\n",
            f"cpu family\t: {family}\n",
            f"flags\t\t: fpu sse2 avx2 {flags}\n",
            "\n",
            "processor\t: 1\n",
            "vendor_id\t: AuthenticAMD\n",
            "cpu family\t: 25\n",
            "flags\t\t: avx512f\n",
        ]

    assert su.is_zen4(cpuinfo("AuthenticAMD", 25, "avx512f avx512bw"))
    assert not su.is_zen4(cpuinfo("AuthenticAMD", 25, "vaes"))  # Zen 3: no AVX-512
    assert not su.is_zen4(cpuinfo("AuthenticAMD", 26, "avx512f"))  # Zen 5: fast
    assert not su.is_zen4(cpuinfo("GenuineIntel", 6, "avx512f"))
    assert not su.is_zen4([])
