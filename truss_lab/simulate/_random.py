"""The simulator's random draws, all built from ``Generator.random()``.

NumPy keeps the stream of uniform doubles stable across versions but not that
of its normal, Poisson or integer samplers, so those are built here from
uniforms: the same seed gives byte-identical datasets on any NumPy.
"""

from __future__ import annotations

import hashlib

import numpy as np

__all__ = ["name_key", "normal", "pick", "poisson", "sigmoid", "stream"]


def stream(seed: int, *key: int) -> np.random.Generator:
    """The generator of the sub-stream ``key`` of ``seed``."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=key)))


def name_key(name: str) -> int:
    """A stream key from a name (its SHA-256), stable across runs and platforms."""
    return int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:8], "big")


def normal(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` standard normal draws."""
    # Box-Muller; 1 - u keeps the log argument in (0, 1].
    u1 = 1.0 - rng.random(n)
    u2 = rng.random(n)
    return np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)


def poisson(rng: np.random.Generator, mean: np.ndarray, cap: int = 5) -> np.ndarray:
    """One Poisson draw per ``mean``, truncated at ``cap`` (by inverse transform)."""
    mean = np.asarray(mean, dtype=float)
    u = rng.random(mean.shape[0])
    k = np.zeros(mean.shape[0], dtype=np.int64)
    pmf = np.exp(-mean)
    cdf = pmf.copy()
    for i in range(1, cap + 1):
        k += u >= cdf
        pmf = pmf * mean / i
        cdf = cdf + pmf
    return k


def pick(rng: np.random.Generator, n_options: int | np.ndarray, n: int) -> np.ndarray:
    """``n`` uniform choices among ``n_options`` (an int or one per draw)."""
    return np.floor(rng.random(n) * n_options).astype(np.int64)


def sigmoid(x: np.ndarray) -> np.ndarray:
    """The logistic function."""
    return 1.0 / (1.0 + np.exp(-x))
