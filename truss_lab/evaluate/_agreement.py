"""Gold labels: majority vote, annotator agreement (Cohen's and Fleiss' kappa), coverage;
how far annotators of reference lessons agree (:func:`reference_agreement`); and how far
an automated truth agrees with people, with verdict-bootstrap intervals
(:func:`agreement_table`: the one computation behind a judge's agreement with gold
labels and a matcher's agreement with match labels).

Labels come as a DataFrame with columns ``verdict_hash, extractor,
lesson_index, useful, annotator`` (Formats §3). A candidate lesson is
keyed by ``(verdict_hash, extractor, lesson_index)``. ``annotator`` may be
missing (null): an anonymous annotation. Anonymous rows of one source (the
optional ``source`` column; a frame without it is one source) are one
anonymous annotator: the same row twice counts once, not as two votes. The
same annotator (named, or anonymous within a source) labelling one candidate
twice with different values is an error, not a vote.
Ties are reported, never guessed: their label is ``<NA>``.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from truss_lab.core._errors import BadInputError
from truss_lab.core._threads import blas_limited
from truss_lab.evaluate._bootstrap import (
    check_boot,
    percentile_interval,
    stream,
    verdict_codes,
    weight_chunks,
)
from truss_lab.evaluate._sweep import UndefinedMetricWarning

__all__ = [
    "CANDIDATE_KEY",
    "agreement_table",
    "annotator_agreement",
    "cohen_cells",
    "cohen_kappa",
    "fleiss_agreement",
    "fleiss_cells",
    "fleiss_kappa",
    "kappa_counts",
    "label_coverage",
    "majority_labels",
    "reference_agreement",
]

#: The columns that identify one candidate lesson.
CANDIDATE_KEY = ["verdict_hash", "extractor", "lesson_index"]


def _require(df: Any, columns: list[str], what: str) -> None:
    if not isinstance(df, pd.DataFrame):
        raise BadInputError(f"{what} must be a pandas DataFrame, got {type(df).__name__}")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise BadInputError(
            f"{what} lacks column(s) {', '.join(missing)}; expected {', '.join(columns)}",
            field=missing[0],
        )


def _clean_key(df: pd.DataFrame, what: str) -> pd.DataFrame:
    out = df.copy()
    for col in ("verdict_hash", "extractor"):
        if out[col].isna().any():
            i = int(np.flatnonzero(out[col].isna().to_numpy())[0])
            raise BadInputError(f"{what} row {i}: missing {col}", field=col)
        out[col] = out[col].astype(str)
    idx = pd.to_numeric(out["lesson_index"], errors="coerce")
    bad = idx.isna() | (idx < 0) | (idx != np.floor(idx))
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise BadInputError(
            f"{what} row {i}: lesson_index must be an integer >= 0, "
            f"got {df['lesson_index'].iloc[i]!r}",
            field="lesson_index",
        )
    out["lesson_index"] = idx.astype(np.int64)
    return out


def _clean_labels(labels: Any) -> pd.DataFrame:
    _require(labels, [*CANDIDATE_KEY, "useful"], "labels")
    df = _clean_key(labels, "labels")
    useful = pd.to_numeric(df["useful"], errors="coerce")
    bad = ~useful.isin([0, 1])
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise BadInputError(
            f"labels row {i}: useful must be 0 or 1, got {labels['useful'].iloc[i]!r}",
            field="useful",
        )
    df["useful"] = useful.astype(np.int64)
    if "annotator" not in df.columns:
        df["annotator"] = pd.Series([None] * len(df), dtype="string", index=df.index)
    # An anonymous source that repeats a row (a file loaded twice, a frame
    # concatenated with itself) is one annotator saying it twice: one vote.
    anon = df["annotator"].isna()
    by = [*CANDIDATE_KEY, *(["source"] if "source" in df.columns else [])]
    repeats = df[anon].duplicated([*by, "useful"])
    df = df.drop(index=repeats.index[repeats.to_numpy()])
    anon = df["annotator"].isna()
    clash = df[anon].duplicated(by, keep=False)
    if clash.any():
        row = df[anon][clash.to_numpy()].iloc[0]
        raise BadInputError(
            f"anonymous labels of one source disagree on candidate ({row['verdict_hash']}, "
            f"{row['extractor']}, {row['lesson_index']}); expected one label per candidate "
            "and source, or name the annotators",
            field="annotator",
        )
    named = df[df["annotator"].notna()]
    dup = named.duplicated([*CANDIDATE_KEY, "annotator"], keep=False)
    if dup.any():
        i = int(np.flatnonzero(dup.to_numpy())[0])
        row = named.iloc[i]
        raise BadInputError(
            f"annotator {row['annotator']!r} labels candidate "
            f"({row['verdict_hash']}, {row['extractor']}, {row['lesson_index']}) more than once; "
            "expected one label per annotator and candidate",
            field="annotator",
        )
    return df


def majority_labels(labels: pd.DataFrame) -> pd.DataFrame:
    """The majority label of each labelled candidate.

    Returns one row per candidate key (sorted by key) with columns
    ``verdict_hash, extractor, lesson_index``, ``label`` (nullable Int8: 1 when
    more than half the annotations say useful, 0 when fewer than half, ``<NA>``
    on a tie), ``n_annotators`` (annotations), ``n_positive`` (of them useful)
    and ``tie`` (bool).

    Parameters
    ----------
    labels : pandas.DataFrame
        Gold labels (the labels format's rows).

    Returns
    -------
    pandas.DataFrame
        The rows above.
    """
    df = _clean_labels(labels)
    agg = (
        df.groupby(CANDIDATE_KEY, sort=True)["useful"]
        .agg(n_annotators="size", n_positive="sum")
        .reset_index()
    )
    n = agg["n_annotators"].to_numpy()
    pos = agg["n_positive"].to_numpy()
    tie = 2 * pos == n
    label = pd.array(np.where(2 * pos > n, 1, 0), dtype="Int8")
    label[tie] = pd.NA
    agg.insert(3, "label", label)
    agg["n_annotators"] = agg["n_annotators"].astype(np.int64)
    agg["n_positive"] = agg["n_positive"].astype(np.int64)
    agg["tie"] = tie
    return agg


def cohen_kappa(a: Any, b: Any) -> float:
    """Cohen's kappa between two raters' labels of the same items (element i = item i).

    ``(p_o - p_e) / (1 - p_e)`` with ``p_o`` the observed agreement and ``p_e``
    the agreement expected from each rater's label frequencies.

    Parameters
    ----------
    a : array-like
        The first rater's labels.
    b : array-like
        The second rater's labels of the same items.

    Returns
    -------
    float
        Kappa; NaN with an :class:`UndefinedMetricWarning` for no items or when
        ``p_e == 1`` (both raters always give the same single label).

    Raises
    ------
    BadInputError
        Arrays of different lengths or not 1-D, a missing label.
    """
    a_arr = np.asarray(a.to_numpy() if isinstance(a, pd.Series) else a, dtype=object)
    b_arr = np.asarray(b.to_numpy() if isinstance(b, pd.Series) else b, dtype=object)
    if a_arr.ndim != 1 or b_arr.ndim != 1 or len(a_arr) != len(b_arr):
        raise BadInputError(
            f"expected two 1-D label arrays of one length, got {a_arr.shape} and {b_arr.shape}"
        )
    if pd.isna(a_arr).any() or pd.isna(b_arr).any():
        raise BadInputError("labels must not be missing; compare only items both raters labelled")
    n = len(a_arr)
    if n == 0:
        warnings.warn("Cohen's kappa of no items is NaN", UndefinedMetricWarning, stacklevel=2)
        return float("nan")
    codes, _ = pd.factorize(np.concatenate([a_arr, b_arr]))
    ca, cb, k = codes[:n], codes[n:], int(codes.max()) + 1
    # The cells of cohen_cells summed over the items, without an items x categories array.
    totals = np.concatenate([[n, np.count_nonzero(ca == cb)], np.bincount(ca, minlength=k),
                             np.bincount(cb, minlength=k)]).astype(np.float64)
    kappa = float(_cohen_metrics(k)(totals)[0])
    if np.isnan(kappa):
        warnings.warn(
            "Cohen's kappa is undefined when both raters use one single label (NaN)",
            UndefinedMetricWarning,
            stacklevel=2,
        )
    return kappa


def cohen_cells(ca: np.ndarray, cb: np.ndarray, k: int
                ) -> tuple[np.ndarray, Callable[[np.ndarray], np.ndarray]]:
    """Cohen's kappa as additive counts: ``(cells, metrics)`` for :func:`agreement_table`.

    ``ca``, ``cb``: the two raters' category codes (0 to ``k - 1``) of the same items.
    ``cells`` is ``(2 + 2k, items)``: per item 1, whether the two agree, then a's
    category one-hot and b's; ``metrics`` maps summed cells (``(2 + 2k, ...)``) to
    ``(kappa, observed agreement)``, kappa NaN where ``p_e`` is 1. One formula for
    :func:`cohen_kappa` (the cells of every item summed) and for a verdict bootstrap."""
    cells = np.vstack([np.ones(len(ca)), (ca == cb).astype(np.float64),
                       np.eye(k)[ca].T, np.eye(k)[cb].T])
    return cells, _cohen_metrics(k)


def _cohen_metrics(k: int) -> Callable[[np.ndarray], np.ndarray]:
    def metrics(c: np.ndarray) -> np.ndarray:
        n, agree, na, nb = c[0], c[1], c[2:2 + k], c[2 + k:]
        with np.errstate(divide="ignore", invalid="ignore"):
            p_o = agree / n
            p_e = (na * nb).sum(axis=0) / (n * n)
            return np.stack([np.where(p_e < 1.0, (p_o - p_e) / (1.0 - p_e), np.nan), p_o])

    return metrics


def fleiss_kappa(table: Any) -> float:
    """Fleiss' kappa of any number of raters: ``table[i, j]`` = raters who put item i
    in category j, every item rated by the same number ``m >= 2`` of raters.

    ``(P_bar - P_e) / (1 - P_e)`` with ``P_bar`` the mean over items of
    ``(sum_j n_ij^2 - m) / (m (m - 1))`` and ``P_e = sum_j p_j^2``, ``p_j`` the
    share of all ratings in category j (Fleiss 1971; equals statsmodels'
    ``fleiss_kappa(table, method="fleiss")``). The raters need not be the same
    people across items. NaN with an :class:`UndefinedMetricWarning` for no
    items or when ``P_e == 1`` (one category only).
    """
    arr = np.asarray(table, dtype=np.float64)
    if arr.ndim != 2 or (arr < 0).any() or not np.array_equal(arr, np.rint(arr)):
        raise BadInputError("expected a 2-D table of non-negative counts (items x categories)",
                            field="table")
    if arr.shape[0] == 0:
        warnings.warn("Fleiss' kappa of no items is NaN", UndefinedMetricWarning, stacklevel=2)
        return float("nan")
    m = arr.sum(axis=1)
    if not (m == m[0]).all() or m[0] < 2:
        raise BadInputError("every item needs the same number (>= 2) of ratings for "
                            "Fleiss' kappa", field="table")
    cells, metrics = fleiss_cells(arr, int(m[0]))
    kappa = float(metrics(cells.sum(axis=1))[0])
    if np.isnan(kappa):
        warnings.warn("Fleiss' kappa is undefined when every rating is one category (NaN)",
                      UndefinedMetricWarning, stacklevel=2)
    return kappa


def fleiss_cells(table: np.ndarray, m: int
                 ) -> tuple[np.ndarray, Callable[[np.ndarray], np.ndarray]]:
    """Fleiss' kappa as additive counts: ``(cells, metrics)`` for :func:`agreement_table`.

    ``table``: items x categories, each item's ``m`` ratings counted. ``cells`` is
    ``(2 + categories, items)``: per item 1, its agreement ``P_i``, then its category
    counts over ``m``; ``metrics`` maps summed cells to ``(kappa, mean agreement
    P_bar)``, kappa NaN where ``P_e`` is 1. One formula for :func:`fleiss_kappa` and a
    verdict bootstrap."""
    t = np.asarray(table, dtype=np.float64)
    p_i = ((t**2).sum(axis=1) - m) / (m * (m - 1))
    cells = np.vstack([np.ones(len(t)), p_i, (t / m).T])

    def metrics(c: np.ndarray) -> np.ndarray:
        n, pbar_sum, p = c[0], c[1], c[2:]
        with np.errstate(divide="ignore", invalid="ignore"):
            pbar = pbar_sum / n
            p_e = ((p / n) ** 2).sum(axis=0)
            return np.stack([np.where(p_e < 1.0, (pbar - p_e) / (1.0 - p_e), np.nan), pbar])

    return cells, metrics


def fleiss_agreement(labels: pd.DataFrame) -> dict[str, Any] | None:
    """Fleiss' kappa of the labels (useful / not), or None with fewer than two annotators.

    Fleiss' kappa needs every item rated the same number of times, so it is
    computed on the candidates labelled by the most common number ``m >= 2``
    of annotators (the larger on a tie); the raters need not be the same
    people, so anonymous annotations count too. Returns ``kappa`` (NaN when
    undefined), ``n_items`` (candidates used), ``raters`` (m),
    ``n_annotators`` (distinct named annotators in ``labels``) and
    ``n_candidates`` (every labelled candidate).
    """
    df = _clean_labels(labels)
    n_named = int(df["annotator"].dropna().nunique())
    maj = majority_labels(labels)
    per_item = maj["n_annotators"].to_numpy()
    counts = pd.Series(per_item[per_item >= 2]).value_counts()
    if counts.empty:
        return None
    m = int(max(counts.index[counts == counts.max()]))
    items = maj[maj["n_annotators"] == m]
    table = np.column_stack([items["n_positive"], m - items["n_positive"]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        kappa = fleiss_kappa(table)
    return {"kappa": kappa, "n_items": len(items), "raters": m, "n_annotators": n_named,
            "n_candidates": len(maj)}


def annotator_agreement(labels: pd.DataFrame) -> pd.DataFrame:
    """Pairwise agreement of named annotators on the candidates both labelled.

    One row per pair ``(annotator_a, annotator_b)`` with ``a < b``: ``n_common``
    (candidates both labelled), ``raw_agreement`` (share with equal labels,
    NaN when none in common) and ``kappa`` (:func:`cohen_kappa` on those
    candidates, NaN when undefined; one warning sums up undefined pairs).
    Rows without an annotator are ignored here.

    Parameters
    ----------
    labels : pandas.DataFrame
        Gold labels (the labels format's rows).

    Returns
    -------
    pandas.DataFrame
        One row per annotator pair (above).
    """
    df = _clean_labels(labels)
    named = df[df["annotator"].notna()].copy()
    named["annotator"] = named["annotator"].astype(str)
    wide = named.pivot(index=CANDIDATE_KEY, columns="annotator", values="useful")
    rows = []
    undefined = 0
    for a, b in itertools.combinations(sorted(wide.columns), 2):
        both = wide[[a, b]].dropna()
        n_common = len(both)
        raw = float((both[a] == both[b]).mean()) if n_common else float("nan")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            kappa = cohen_kappa(both[a].astype(np.int64), both[b].astype(np.int64))
        undefined += int(np.isnan(kappa))
        rows.append((a, b, n_common, raw, kappa))
    if undefined:
        warnings.warn(
            f"Cohen's kappa is undefined (NaN) for {undefined} annotator pair(s) "
            "(no common items, or one single label throughout)",
            UndefinedMetricWarning,
            stacklevel=2,
        )
    return pd.DataFrame(
        rows, columns=["annotator_a", "annotator_b", "n_common", "raw_agreement", "kappa"]
    ).astype({"n_common": np.int64, "raw_agreement": np.float64, "kappa": np.float64})


def label_coverage(candidates: pd.DataFrame, labels: pd.DataFrame) -> pd.DataFrame:
    """How many candidates have a usable gold label, per extractor.

    ``candidates`` needs the key columns. One row per extractor:
    ``n_candidates``; ``n_labelled`` (a majority label exists); ``n_ties``
    (annotated but tied, so no label); ``n_unlabelled`` (never annotated);
    ``coverage`` = n_labelled / n_candidates; ``n_orphan_labels``: labelled keys
    that match no candidate (often a wrong extractor name or lesson_index).

    Parameters
    ----------
    candidates : pandas.DataFrame
        The candidates (``verdict_hash``, ``extractor``, ``lesson_index``).
    labels : pandas.DataFrame
        Gold labels (the labels format's rows).

    Returns
    -------
    pandas.DataFrame
        One row per extractor (above).

    Raises
    ------
    BadInputError
        A key column missing from ``candidates`` or ``labels``.
    """
    _require(candidates, CANDIDATE_KEY, "candidates")
    cand = _clean_key(candidates[CANDIDATE_KEY], "candidates").drop_duplicates()
    maj = majority_labels(labels)
    merged = cand.merge(maj, on=CANDIDATE_KEY, how="left", indicator=True)
    annotated = merged["_merge"] == "both"
    merged["labelled"] = annotated & ~merged["tie"].fillna(False).astype(bool)
    merged["is_tie"] = annotated & merged["tie"].fillna(False).astype(bool)
    merged["unlabelled"] = ~annotated
    per = merged.groupby("extractor", sort=True).agg(
        n_candidates=("lesson_index", "size"),
        n_labelled=("labelled", "sum"),
        n_ties=("is_tie", "sum"),
        n_unlabelled=("unlabelled", "sum"),
    )
    orphans = maj.merge(cand, on=CANDIDATE_KEY, how="left", indicator=True)
    orphans = orphans[orphans["_merge"] == "left_only"].groupby("extractor").size()
    per = per.join(orphans.rename("n_orphan_labels"), how="outer").fillna(0)
    per = per.astype(np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        per["coverage"] = np.where(
            per["n_candidates"] > 0, per["n_labelled"] / per["n_candidates"], np.nan
        )
    return per.reset_index()


def reference_agreement(references: pd.DataFrame) -> pd.DataFrame:
    """How far annotators agree on what each verdict teaches, per annotator pair.

    On the verdicts both annotators of a pair annotated, compares the SETS of
    reference ids each wrote (a ``"none"`` line is the empty set), which
    assumes ids name the lesson across annotators (as in the bundled sample).
    One row per pair: ``annotator_a, annotator_b, n_common`` (verdicts both
    annotated), ``both_none`` (both say it teaches nothing),
    ``same_set`` (share of common verdicts with identical id sets),
    ``n_a, n_b`` (references each wrote there), ``n_both`` (ids both wrote)
    and ``id_agreement`` = n_both / (ids either wrote), NaN without any.

    Parameters
    ----------
    references : pandas.DataFrame
        Reference lessons (the references format's rows).

    Returns
    -------
    pandas.DataFrame
        One row per annotator pair (above).
    """
    refs = references.assign(annotator=references["annotator"].fillna("").astype(str),
                             reference_id=references["reference_id"].astype(str),
                             verdict_hash=references["verdict_hash"].astype(str))
    real = refs[refs["reference_id"] != "none"]
    sets = {a: g.groupby("verdict_hash")["reference_id"].agg(frozenset).to_dict()
            for a, g in real.groupby("annotator")}
    annotated = {a: set(g["verdict_hash"]) for a, g in refs.groupby("annotator")}
    names = sorted(annotated)
    rows = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            common = annotated[a] & annotated[b]
            empty: frozenset[str] = frozenset()
            sa = [sets.get(a, {}).get(v, empty) for v in common]
            sb = [sets.get(b, {}).get(v, empty) for v in common]
            n_both = sum(len(x & y) for x, y in zip(sa, sb, strict=True))
            n_either = sum(len(x | y) for x, y in zip(sa, sb, strict=True))
            rows.append({
                "annotator_a": a, "annotator_b": b, "n_common": len(common),
                "both_none": sum(not x and not y for x, y in zip(sa, sb, strict=True)),
                "same_set": (np.mean([x == y for x, y in zip(sa, sb, strict=True)])
                             if common else np.nan),
                "n_a": sum(map(len, sa)), "n_b": sum(map(len, sb)), "n_both": n_both,
                "id_agreement": n_both / n_either if n_either else np.nan,
            })
    cols = ["annotator_a", "annotator_b", "n_common", "both_none", "same_set", "n_a", "n_b",
            "n_both", "id_agreement"]
    return pd.DataFrame(rows, columns=cols)


# ------------------------------------------------------------ automated truth vs people


def kappa_counts(both: Any, auto_only: Any, people_only: Any, neither: Any) -> np.ndarray:
    """Cohen's kappa of two raters' yes/no calls from their 2x2 counts (arrays broadcast):
    ``both`` say yes, only the automated one, only people, ``neither``. NaN where
    undefined (no items, or both raters always give one same call), as
    :func:`cohen_kappa` on the items would give."""
    a, b, c, d = (np.asarray(x, dtype=np.float64) for x in (both, auto_only, people_only,
                                                             neither))
    n = a + b + c + d
    with np.errstate(divide="ignore", invalid="ignore"):
        p_o = (a + d) / n
        p_e = ((a + b) * (a + c) + (c + d) * (b + d)) / (n * n)
        return np.where(p_e < 1.0, (p_o - p_e) / (1.0 - p_e), np.nan)


@blas_limited()
def agreement_table(
    cells: np.ndarray,
    verdicts: Any,
    metrics: Callable[[np.ndarray], np.ndarray],
    names: Sequence[str],
    *,
    n_boot: int = 1000,
    confidence: float = 0.95,
    random_state: Any = 0,
    weights: Any = None,
) -> tuple[pd.DataFrame, np.ndarray]:
    """An automated truth against people: metrics of additive counts, with percentile
    intervals from a bootstrap over verdicts (items of one verdict are correlated, so
    verdicts are resampled whole).

    ``cells`` is ``(k, n_items)``: item i's contribution to each of k counts (0/1 cells of
    a 2x2 table, pairs found...); ``verdicts`` the verdict of each item; ``metrics`` maps
    ``(k, ...)`` counts to ``(len(names), ...)`` metric values (NaN where undefined).
    ``weights``: per item, the weight of its verdict (``1 / inclusion_probability`` of an
    unequal sampling design; None: 1). Returns ``(table, totals)``: ``table`` indexed by
    ``names`` (index name ``metric``) with ``value``, ``low`` and ``high``; ``totals``
    the k weighted counts. The same seed draws the same replicates (stream
    ``bootstrap`` of :func:`~truss_lab.evaluate._bootstrap.seed_streams`).

    Parameters
    ----------
    cells : numpy.ndarray, shape (k, n_items)
        Each item's contribution to each count.
    verdicts : array-like, shape (n_items,)
        Each item's verdict.
    metrics : callable
        Maps ``(k, ...)`` counts to ``(len(names), ...)`` metric values.
    names : sequence of str
        The metrics' names.
    n_boot : int, default 1000
        Replicates.
    confidence : float, default 0.95
        The intervals' level.
    random_state : int or numpy.random.Generator, default 0
        Seed of the bootstrap.
    weights : array-like, optional
        Per item, its verdict's weight (None: 1).

    Returns
    -------
    tuple of (pandas.DataFrame, numpy.ndarray)
        ``(table, totals)`` (above).
    """
    check_boot(n_boot, confidence)
    cells = np.asarray(cells, dtype=np.float64)
    if weights is not None:
        cells = cells * np.asarray(weights, dtype=np.float64)
    codes, groups = verdict_codes(np.asarray(verdicts, dtype=object))
    per_v = np.stack([np.bincount(codes, weights=c, minlength=len(groups)) for c in cells])
    totals = per_v.sum(axis=1)
    values = metrics(totals)
    reps = []
    for w in weight_chunks(n_boot, len(groups), stream(random_state, "bootstrap")):
        counts = w.astype(np.float64) @ per_v.T  # (replicates, k)
        reps.append(metrics(counts.T).T)
    low, high = percentile_interval(np.concatenate(reps), confidence)
    table = pd.DataFrame({"value": values, "low": low, "high": high}, index=list(names))
    table.index.name = "metric"
    return table, totals
