"""Self-consistency salience: how often a lesson recurs across k samples of one prompt.

An extractor that draws k completions (samples) per verdict proposes some
lessons in most of them and others once. :func:`consistency_clusters` groups
a verdict's valid lessons across its samples into clusters of near-duplicates
— the junk module's definition (:func:`~truss_lab.score._junk.near_duplicate_pairs`:
content-word Jaccard >= ``threshold`` and the same identifiers), linked
transitively — and scores each cluster by the share of the k samples holding
at least one of its lessons. The cluster's **representative** is its earliest
lesson (lowest ``sample_index``, then ``lesson_index``); it carries the score,
the other members get NaN (their lesson is already counted once).

The denominator k is, in order: the ``samples`` argument, the candidates'
``n_samples`` column (extraction sets it), else the number of distinct
``sample_index`` values seen for the verdict (which misses samples that gave
no lesson, so it overstates consistency: pass k when you know it).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..core._errors import BadInputError
from ._junk import NEAR_DUPLICATE_THRESHOLD, group_column, near_duplicate_pairs
from ._salience import Scorer
from ._similarity import TokenSets

__all__ = ["DEFAULT_CONSISTENCY_THRESHOLD", "consistency_clusters", "self_consistency"]

#: The junk detectors' near-duplicate threshold: one notion of "the same lesson".
DEFAULT_CONSISTENCY_THRESHOLD = NEAR_DUPLICATE_THRESHOLD


def _components(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Connected-component label (the smallest row of the component) per row."""
    label = np.arange(n, dtype=np.int64)
    if len(a) == 0:
        return label
    while True:
        m = np.minimum(label[a], label[b])
        new = label.copy()
        np.minimum.at(new, a, m)
        np.minimum.at(new, b, m)
        new = new[new]  # pointer jumping: converges in a few rounds
        if np.array_equal(new, label):
            return label
        label = new


def consistency_clusters(
    candidates: pd.DataFrame,
    *,
    samples: int | None = None,
    threshold: float = DEFAULT_CONSISTENCY_THRESHOLD,
    method: str = "auto",
    same_identifiers: bool = True,
) -> pd.DataFrame:
    """Cluster each verdict's lessons across its samples; score the representatives.

    ``candidates`` needs ``verdict_hash``, ``text`` and ``sample_index``;
    ``valid`` (default all valid), ``lesson_index`` (order) and ``run_id`` /
    ``extractor_id`` (kept apart, as in the junk detectors) are used when present.
    Returns a frame with the candidates' index and columns: ``cluster`` (int64,
    the position of the representative in ``candidates``; -1 for invalid rows),
    ``representative`` (bool), ``n_samples_with`` (samples holding the cluster),
    ``n_samples`` (k) and ``self_consistency`` (``n_samples_with / n_samples`` on
    representatives, NaN elsewhere). ``same_identifiers=False`` links lessons on
    Jaccard alone (paraphrases that name the run or the check in one sample and not
    in another then still cluster).

    Parameters
    ----------
    candidates : pandas.DataFrame
        The candidates (columns above).
    samples : int, optional
        Samples per verdict, k (default: the ``n_samples`` column, else the distinct
        samples each verdict has).
    threshold : float
        Token-Jaccard at which two lessons are near-duplicates, in (0, 1].
    method : {"auto", "all", "lsh"}, default "auto"
        How pairs are found (:func:`~truss_lab.score._similarity.similar_pairs`).
    same_identifiers : bool, default True
        Link lessons only when they name the same identifiers.

    Returns
    -------
    pandas.DataFrame
        The columns above, on the candidates' index.

    Raises
    ------
    BadInputError
        A missing column, a threshold outside (0, 1], ``samples`` not a positive integer.
    """
    missing = [c for c in ("verdict_hash", "text", "sample_index") if c not in candidates]
    if missing:
        raise BadInputError(f"candidates lack column(s) {', '.join(missing)}",
                            field=missing[0])
    if not 0.0 < threshold <= 1.0:
        raise BadInputError(f"threshold must be in (0, 1], got {threshold!r}", field="threshold")
    if samples is not None and (isinstance(samples, bool) or not isinstance(samples, int)
                                or samples < 1):
        raise BadInputError(f"samples must be a positive integer, got {samples!r}",
                            field="samples")
    c = candidates.reset_index(drop=True)
    n = len(c)
    sample = c["sample_index"].fillna(0).to_numpy(dtype=np.int64)
    valid = (c["valid"].to_numpy(dtype=bool) if "valid" in c.columns
             else np.ones(n, dtype=bool))
    group = (pd.Series(group_column(c), dtype=object).astype(str) + "\x1f"
             + c["verdict_hash"].astype(str).reset_index(drop=True)).to_numpy(dtype=object)
    gcode, _ = pd.factorize(pd.Series(group))
    lesson = (c["lesson_index"].to_numpy(dtype=np.int64) if "lesson_index" in c.columns
              else np.zeros(n, dtype=np.int64))
    order = np.lexsort((np.arange(n), lesson, sample, gcode))
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    if samples is not None:
        k = np.full(n, samples, dtype=np.int64)
    elif "n_samples" in c.columns:
        k = c["n_samples"].fillna(1).to_numpy(dtype=np.int64)
    else:
        k = pd.Series(sample).groupby(gcode).transform("nunique").to_numpy(np.int64)

    rows = np.flatnonzero(valid)
    cluster = np.full(n, -1, dtype=np.int64)
    with_ = np.zeros(n, dtype=np.int64)
    rep = np.zeros(n, dtype=bool)
    if len(rows):
        texts = c["text"].iloc[rows].astype(object).where(c["text"].iloc[rows].notna(), "")
        sets = TokenSets(texts.reset_index(drop=True))
        a, b = near_duplicate_pairs(sets, group[rows], rank[rows], threshold, method,
                                    same_identifiers=same_identifiers)
        comp = _components(len(rows), a, b)
        # The representative is the earliest member: relabel each component by it.
        first = pd.Series(rank[rows]).groupby(comp).transform("idxmin").to_numpy(np.int64)
        cluster[rows] = rows[first]
        rep[rows] = rows[first] == rows
        n_with = pd.DataFrame({"cl": cluster[rows], "s": sample[rows]}).groupby(
            "cl")["s"].transform("nunique").to_numpy(np.int64)
        with_[rows] = n_with
    share = np.where(rep, with_ / np.maximum(k, 1), np.nan)
    if np.any(share[rep] > 1.0):
        raise BadInputError(
            f"a cluster spans more samples than the {int(k[rep][share[rep] > 1][0])} given; "
            "pass the verdicts' real sample count (samples=)", field="samples")
    return pd.DataFrame({"cluster": cluster, "representative": rep, "n_samples_with": with_,
                         "n_samples": k, "self_consistency": share}, index=candidates.index)


def self_consistency(
    *, samples: int | None = None, threshold: float = DEFAULT_CONSISTENCY_THRESHOLD,
    same_identifiers: bool = True,
) -> Scorer:
    """The self-consistency salience as a :class:`Scorer` (``self_consistency``):
    the share of a verdict's samples holding a near-duplicate of the lesson, on
    cluster representatives; NaN on other members and invalid rows.

    Parameters
    ----------
    samples, threshold, same_identifiers
        As :func:`consistency_clusters` takes them.

    Returns
    -------
    Scorer
        The scorer.
    """

    def fn(c: pd.DataFrame, _: pd.DataFrame | None) -> np.ndarray:
        return consistency_clusters(c, samples=samples, threshold=threshold,
                                    same_identifiers=same_identifiers)[
            "self_consistency"].to_numpy(np.float64)

    return Scorer(
        "self_consistency", f"1+t{threshold:g}" + ("" if same_identifiers else "+anyid")
        + ("" if samples is None else f"+k{samples}"),
        fn, ("verdict_hash", "text", "sample_index"),
        description="Share of the verdict's samples holding a near-duplicate of the lesson "
                    "(cluster representatives only).",
    )
