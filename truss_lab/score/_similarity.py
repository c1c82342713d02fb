"""Similarity of short texts: token sets, exact Jaccard, MinHash/LSH candidate pairs.

The generic machinery behind near-duplicate detection (``score._junk``): each
text becomes a set of content words (:func:`~truss_lab.score._tokens.content_words`),
held as unique (row, token id) pairs in CSR form by :class:`TokenSets`, and
:func:`similar_pairs` returns the pairs of rows in the same group whose sets
have Jaccard similarity >= a threshold.

Method (chosen by measurement, see ``benchmarks/bench_junk.py``): exact
token-set Jaccard on candidate pairs. Small groups compare all pairs; large
ones get candidate pairs from a numpy MinHash with LSH banding, then the
exact Jaccard decides. Pure numpy/pandas. Callers collapse identical sets
first with the order-independent set hashes of :class:`TokenSets`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ._tokens import content_words

__all__ = ["TokenSets", "jaccard", "similar_pairs", "token_sets"]

_MAX_ALL_PAIRS = 3_000_000  # above this many within-group pairs, use MinHash/LSH


def token_sets(texts: Sequence[str] | pd.Series) -> list[frozenset[str]]:
    """The token set each detector compares, per text (for inspection and tests)."""
    ser = pd.Series(list(texts), dtype=object)
    rows, toks = content_words(ser)
    out: list[set[str]] = [set() for _ in range(len(ser))]
    for r, t in zip(rows.tolist(), toks.tolist(), strict=True):
        out[r].add(t)
    return [frozenset(s) for s in out]


class TokenSets:
    """The content-word sets of ``texts``: unique (row, token id) pairs in CSR form.

    ``rows``/``toks`` are the pairs sorted by row then token id, ``size[r]`` is
    row r's set size, ``is_ident[t]`` marks identifier tokens (with ``_`` or a
    digit), ``set_key[r]``/``ident_key[r]`` are order-independent hashes of row
    r's whole set and of its identifiers (equal sets have equal keys).
    """

    def __init__(self, texts: pd.Series) -> None:
        n = len(texts)
        rows, toks = content_words(texts)
        codes, uniq = pd.factorize(pd.Series(toks, dtype=object))
        self.vocab_size = len(uniq)
        self.is_ident = np.array(
            [("_" in t) or any(c.isdigit() for c in t) for t in uniq], dtype=bool
        )
        key = np.unique(rows * max(self.vocab_size, 1) + codes.astype(np.int64))
        self.rows = key // max(self.vocab_size, 1)
        self.toks = key % max(self.vocab_size, 1)
        self.n = n
        self.size = np.bincount(self.rows, minlength=n).astype(np.int64)
        rng = np.random.default_rng(0x5EED)
        tok_hash = rng.integers(0, 2**63, size=max(self.vocab_size, 1), dtype=np.uint64) * 2 + 1
        # Order-independent set hashes: sums of random 64-bit token values (wrapping).
        with np.errstate(over="ignore"):
            self.set_key = np.zeros(n, dtype=np.uint64)
            np.add.at(self.set_key, self.rows, tok_hash[self.toks])
            self.ident_key = np.zeros(n, dtype=np.uint64)
            m = self.is_ident[self.toks]
            np.add.at(self.ident_key, self.rows[m], tok_hash[self.toks[m]])


def jaccard(sets: TokenSets, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Exact Jaccard of the token sets of rows a[k] and b[k], vectorized."""
    if len(a) == 0:
        return np.zeros(0)
    v = max(sets.vocab_size, 1)
    keys = sets.rows * v + sets.toks  # sorted (np.unique output)
    starts = np.concatenate([[0], np.cumsum(sets.size)])
    la = sets.size[a]
    pair = np.repeat(np.arange(len(a)), la)
    # positions of a's tokens in the CSR arrays
    offs = np.arange(la.sum()) - np.repeat(np.cumsum(la) - la, la)
    tok_a = sets.toks[np.repeat(starts[a], la) + offs]
    probe = np.repeat(b, la) * v + tok_a
    pos = np.searchsorted(keys, probe)
    pos = np.minimum(pos, len(keys) - 1)
    hit = keys[pos] == probe if len(keys) else np.zeros(len(probe), bool)
    inter = np.bincount(pair[hit], minlength=len(a)).astype(np.float64)
    union = la + sets.size[b] - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        j = np.where(union > 0, inter / union, 0.0)
    return j


def _minhash(sets: TokenSets, items: np.ndarray, k: int) -> np.ndarray:
    """MinHash signatures (len(items) x k, uint32) of the token sets of rows ``items``."""
    rng = np.random.default_rng(0xC0FFEE)
    a = rng.integers(1, 2**31 - 1, size=k, dtype=np.uint64)
    b = rng.integers(0, 2**31 - 1, size=k, dtype=np.uint64)
    p = np.uint64(2**31 - 1)
    sel = np.isin(sets.rows, items)
    r, t = sets.rows[sel], sets.toks[sel].astype(np.uint64)
    pos = pd.Index(items).get_indexer(r)
    order = np.argsort(pos, kind="stable")
    pos, t = pos[order], t[order]
    h = ((t[:, None] * a[None, :] + b[None, :]) % p).astype(np.uint32)
    sig = np.full((len(items), k), np.iinfo(np.uint32).max, dtype=np.uint32)
    if len(pos):
        bounds = np.flatnonzero(np.r_[True, pos[1:] != pos[:-1]])
        sig[pos[bounds]] = np.minimum.reduceat(h, bounds, axis=0)
    return sig


def similar_pairs(
    sets: TokenSets,
    items: np.ndarray,
    groups: np.ndarray,
    *,
    threshold: float,
    method: str = "auto",
    bands: int = 24,
    rows_per_band: int = 3,
) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (i, j), i < j positions in ``items``, of the same group whose token
    sets have Jaccard >= ``threshold``.

    Parameters
    ----------
    sets : TokenSets
        The token sets of every row.
    items : numpy.ndarray
        The rows to pair (positions in ``sets``).
    groups : numpy.ndarray
        Each item's group: only items of one group are paired.
    threshold : float
        The least Jaccard of a pair.
    method : {"auto", "all", "lsh"}, default "auto"
        "all" (every within-group pair), "lsh" (MinHash/LSH candidates), or "auto"
        (all pairs when few).
    bands : int, default 24
        LSH bands.
    rows_per_band : int, default 3
        MinHash rows per band.

    Returns
    -------
    tuple of numpy.ndarray
        The positions ``i`` and ``j`` of each pair.
    """
    m = len(items)
    if m < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    g_codes, _ = pd.factorize(pd.Series(groups))
    counts = np.bincount(g_codes)
    n_pairs = int((counts * (counts - 1) // 2).sum())
    if method == "all" or (method == "auto" and n_pairs <= _MAX_ALL_PAIRS):
        order = np.argsort(g_codes, kind="stable")
        sizes = counts[counts > 0]
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        ii, jj = [], []
        # One vectorized block per group size (few distinct sizes), not per group.
        for size in np.unique(sizes[sizes > 1]):
            base = starts[sizes == size]
            tri_i, tri_j = np.triu_indices(int(size), 1)
            ii.append((base[:, None] + tri_i[None, :]).ravel())
            jj.append((base[:, None] + tri_j[None, :]).ravel())
        if not ii:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        pi, pj = order[np.concatenate(ii)], order[np.concatenate(jj)]
    else:
        sig = _minhash(sets, items, bands * rows_per_band)
        parts = []
        for band in range(bands):
            block = sig[:, band * rows_per_band:(band + 1) * rows_per_band]
            key = pd.DataFrame(block).assign(g=g_codes)
            bucket = key.groupby(list(key.columns), sort=False).ngroup().to_numpy()
            order = np.argsort(bucket, kind="stable")
            bs = bucket[order]
            bounds = np.flatnonzero(np.r_[True, bs[1:] != bs[:-1], True])
            sizes = np.diff(bounds)
            for size in np.unique(sizes[sizes > 1]):
                base = bounds[:-1][sizes == size]
                tri_i, tri_j = np.triu_indices(int(size), 1)
                parts.append(np.stack([
                    order[(base[:, None] + tri_i[None, :]).ravel()],
                    order[(base[:, None] + tri_j[None, :]).ravel()],
                ]))
        if not parts:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        pairs = np.unique(np.sort(np.concatenate(parts, axis=1), axis=0), axis=1)
        pi, pj = pairs[0], pairs[1]
    lo, hi = np.minimum(pi, pj), np.maximum(pi, pj)
    j = jaccard(sets, items[lo], items[hi])
    keep = j >= threshold
    return lo[keep], hi[keep]
