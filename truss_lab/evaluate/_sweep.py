"""Threshold sweeps: the counts and metrics of every salience threshold at once.

The gate of ADR 0011 keeps a candidate lesson when ``salience >= threshold``
(equality passes). :func:`sweep` evaluates that rule at every distinct
salience (or at thresholds you give) from one sort and cumulative sums, so a
researcher can read off any ``extraction_min_salience`` without re-running a
model.

Conventions (scikit-learn's): data first, options keyword-only; input that
leaves a metric undefined (no candidates, no positive labels, no negative
labels) emits :class:`UndefinedMetricWarning` and gives NaN where the metric is
undefined instead of raising.

Speed: the distinct-threshold sweep sorts one packed uint64 key (salience
bits + label bit) instead of an argsort plus gathers; above ~262k candidates
the sort runs in up to 4 threads (``os.cpu_count()``), each sorting one slice of
an in-place partition. On AMD Zen 4, where numpy's AVX-512 sort of 64-bit
numbers is ~4x slower than elsewhere, spread-out saliences (64k to 4M of them)
are bucket-sorted instead (``_sort_u64``: 16-bit radix buckets, then timsort of
the nearly sorted keys; same result). Given thresholds need no sort at all.

**NaN salience** means "the scorer gave no score". Such a candidate is never
kept at any threshold (as if its salience were -inf), but it still counts in
``n`` (so in ``write_rate``) and, when useful, in the positives (so it costs
recall). It never appears as a threshold.

**Given thresholds mean what they show**: the gate compares ``salience >=
threshold`` exactly, so a grid point of 0.7000000000000001
(``np.linspace(0, 1, 101)[70]``) would drop every salience of exactly 0.70 while
its row reads "0.7". :func:`snap_thresholds` rounds such points, with a
:class:`ThresholdGridWarning`, and leaves the data's own saliences alone.

**Past memory**, :func:`sweep_parquet` gives the frame of :func:`sweep` with
default thresholds (every distinct salience, descending) for candidates stored
as (partitioned) Parquet, computed in DuckDB: one ``GROUP BY salience`` of
counts and positives, then cumulative sums over the groups in descending order.
DuckDB streams the files and spills to disk past ``memory_limit``, so the memory
needed grows with the number of distinct saliences, not of candidates. The same
conventions as :func:`sweep`: NaN (or NULL) salience is never kept but counts in
``n`` and, when labelled 1, in the positives; -0.0 and 0.0 are one threshold.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from truss_lab.core._errors import BadInputError, TrussLabWarning
from truss_lab.evaluate._sort_u64 import sort_u64 as _sort_u64
from truss_lab.store._store import quote_ident

__all__ = [
    "SWEEP_COLUMNS",
    "THRESHOLD_DIGITS",
    "ThresholdGridWarning",
    "UndefinedMetricWarning",
    "average_precision",
    "snap_thresholds",
    "sweep",
    "sweep_parquet",
]

class ThresholdGridWarning(TrussLabWarning):
    """A given threshold is not the decimal it was meant to be (e.g. ``np.linspace``'s
    0.7000000000000001) and was rounded to it."""


#: Significant digits a given threshold is rounded to. A double holds 15-17; grids
#: built by arithmetic (``np.linspace(0, 1, 101)``, ``0.1 * 7``) are off in the last
#: one or two, which would move the gate past every salience exactly at 0.70.
THRESHOLD_DIGITS = 12


def snap_thresholds(
    thresholds: np.ndarray, data: Any = None, name: str = "thresholds"
) -> np.ndarray:
    """``thresholds`` rounded to :data:`THRESHOLD_DIGITS` significant digits, with a
    :class:`ThresholdGridWarning` naming the values that changed. A threshold equal
    to one of the ``data`` saliences is the data's own value and stays as it is.

    The gate compares ``salience >= threshold`` exactly, so a grid point of
    0.7000000000000001 drops every salience of exactly 0.70 while its row reads
    "0.7". Rounding makes the grid mean what it shows.
    """
    t = np.asarray(thresholds, dtype=np.float64)
    snapped = np.array([float(f"{v:.{THRESHOLD_DIGITS}g}") if np.isfinite(v) else v
                        for v in t.ravel()], dtype=np.float64).reshape(t.shape)
    off = (snapped != t) & np.isfinite(t)
    if data is not None and off.any():
        off &= ~np.isin(t, np.asarray(data, dtype=np.float64))
        snapped = np.where(off, snapped, t)
    moved = np.flatnonzero(off)
    if len(moved):
        shown = ", ".join(f"{float(t.flat[i])!r} -> {float(snapped.flat[i])!r}"
                          for i in moved[:3])
        warnings.warn(
            f"{len(moved)} {name} not representable as typed, rounded to "
            f"{THRESHOLD_DIGITS} significant digits: {shown}"
            + (" ..." if len(moved) > 3 else "")
            + " (build grids with np.round(..., 2) to silence this)",
            ThresholdGridWarning, stacklevel=3)
    return snapped


#: Columns of :func:`sweep`'s frame, in order (``kept_per_verdict`` only with groups).
SWEEP_COLUMNS = (
    "threshold",
    "kept",
    "tp",
    "fp",
    "fn",
    "precision",
    "recall",
    "f1",
    "kept_per_verdict",
    "write_rate",
)

# Given thresholds are applied to the candidates in slices of this many, so the
# temporaries of a 10M-candidate sweep stay a few MB.
_CHUNK = 1 << 20


class UndefinedMetricWarning(TrussLabWarning):
    """A metric is undefined for this input (e.g. recall without positives); it is NaN."""


def _warn(message: str) -> None:
    warnings.warn(message, UndefinedMetricWarning, stacklevel=3)


# --------------------------------------------------------------------------- input checks


def _as_1d(values: Any, name: str) -> np.ndarray:
    if isinstance(values, pd.DataFrame):
        raise BadInputError("expected a 1-D array or Series, got a DataFrame", field=name)
    arr = values.to_numpy() if isinstance(values, (pd.Series, pd.Index)) else np.asarray(values)
    if arr.ndim != 1:
        raise BadInputError(f"expected a 1-D array, got shape {arr.shape}", field=name)
    return arr


def as_labels(y_true: Any, name: str = "y_true") -> np.ndarray:
    """Return ``y_true`` as a uint8 array of 0/1, or raise :class:`BadInputError`."""
    if isinstance(y_true, pd.Series) and y_true.isna().any():
        bad = int(np.flatnonzero(y_true.isna().to_numpy())[0])
        raise BadInputError(
            f"missing label at position {bad}; expected 0 or 1 for every candidate "
            "(drop unlabelled candidates and ties first, see majority_labels)",
            field=name,
        )
    arr = _as_1d(y_true, name)
    if arr.dtype == np.bool_:
        return arr.view(np.uint8)
    if arr.dtype in (np.int8, np.uint8):
        u = arr.view(np.uint8)  # -1 as uint8 is 255: one comparison checks both bounds
        if u.max(initial=0) <= 1:
            return u
    if arr.dtype.kind not in "iuf":
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise BadInputError(
                f"expected labels 0 or 1, got dtype {arr.dtype}", field=name
            ) from exc
    ok = (arr == 0) | (arr == 1)
    if not ok.all():
        bad = int(np.flatnonzero(~ok)[0])
        raise BadInputError(
            f"expected labels 0 or 1, got {arr[bad]!r} at position {bad}", field=name
        )
    return arr.astype(np.uint8)


def as_scores(salience: Any, name: str = "salience") -> np.ndarray:
    """Return ``salience`` as a float64 array (NaN allowed), or raise :class:`BadInputError`."""
    arr = _as_1d(salience, name)
    if isinstance(salience, pd.Series) and salience.dtype != np.float64:
        arr = salience.to_numpy(dtype=np.float64, na_value=np.nan)
    try:
        return np.asarray(arr, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise BadInputError(f"expected numbers, got dtype {arr.dtype}", field=name) from exc


def check_lengths(**arrays: Any) -> None:
    """Raise :class:`BadInputError` unless all given arrays have the same length."""
    lengths = {k: len(v) for k, v in arrays.items() if v is not None}
    if len(set(lengths.values())) > 1:
        shown = ", ".join(f"{k}={n}" for k, n in lengths.items())
        raise BadInputError(f"expected arrays of one length, got {shown}")


def count_groups(groups: Any) -> int:
    """Number of distinct verdicts in ``groups`` (hash-based, no sort)."""
    arr = _as_1d(groups, "groups")
    if len(arr) == 0:
        return 0
    return len(pd.unique(arr))


def group_codes(groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``pd.factorize(groups, use_na_sentinel=False)`` (int64 codes, uniques in order of
    appearance, a missing value a group of its own), faster for rows in runs of one
    verdict, as the store gives them: neighbours are compared once and only the first
    row of each run is hashed (hashing a million strings dominates otherwise)."""
    n = len(groups)
    head = np.empty(n, dtype=np.bool_)
    try:
        head[:1] = True
        np.not_equal(groups[1:], groups[:-1], out=head[1:])
    except (TypeError, ValueError):  # values that do not compare as scalars: hash them all
        head[:] = True
    starts = np.flatnonzero(head)
    del head
    # Rows the comparison calls equal are equal (a run split where it is unsure, such
    # as NaN, is merged again by the hash).
    runs = groups if 2 * len(starts) > n else groups[starts]
    # The sentinel form is cheaper: it needs no separate pass for missing values.
    codes, uniques = pd.factorize(runs)
    if len(codes) and codes.min() < 0:
        codes, uniques = pd.factorize(runs, use_na_sentinel=False)
    codes = codes.astype(np.int64, copy=False)
    if runs is not groups:
        codes = np.repeat(codes, np.diff(np.append(starts, n)))
    return codes, uniques


def _check_thresholds(thresholds: Any, data: np.ndarray, snap: bool) -> np.ndarray:
    t = as_scores(thresholds, "thresholds")
    if np.isnan(t).any():
        raise BadInputError("thresholds must not contain NaN", field="thresholds")
    return snap_thresholds(t, data) if snap else t


# --------------------------------------------------------------------------- counting


def distinct_counts(
    y: np.ndarray, s: np.ndarray, n_jobs: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Counts at every distinct non-NaN salience, thresholds descending.

    Returns ``(thresholds, kept, tp)``: element ``i`` is the i-th largest distinct
    salience, the number of candidates with salience >= it, and how many of
    those are positive.

    It is long because it is one pass over one packed key array whose n-sized
    buffers it frees as soon as it is done with them (``del``, reused scratch
    slices): steps in functions of their own would keep them alive across the
    calls, and the sweep's peak memory (bench_sweep) is what this is written for.
    """
    # One reduction answers both "any NaN?" and "any negative?" for the usual
    # input (min propagates NaN, and NaN >= 0 is False).
    plain = len(s) > 0 and bool(s.min() >= 0)
    if not plain:
        nan = np.isnan(s)
        if nan.any():
            valid = ~nan
            s, y = s[valid], y[valid]
        del nan
    n = len(s)
    if n == 0:
        empty = np.empty(0, dtype=np.int64)
        return np.empty(0), empty, empty
    # One sort of a packed key: the float's bits shifted left by one (dropping
    # the sign bit, so -0.0 == +0.0) carry the label in the freed low bit. For
    # non-negative floats the bit pattern orders like the value, so sorting
    # this uint64 sorts by salience and drags the labels along without an
    # argsort and two gathers. Negative saliences sort by magnitude; they are
    # sorted apart and reversed.
    key = s.view(np.uint64) << np.uint64(1)
    np.bitwise_or(key, y, out=key)
    neg = None if plain else s < 0
    n_neg = 0 if neg is None else int(np.count_nonzero(neg))
    if n_neg:
        kp = _sort_u64(key[~neg], n_jobs)
        kn = _sort_u64(key[neg], n_jobs)
        asc = np.concatenate((kn[::-1], kp))  # ascending by value
        del kp, kn
    else:
        asc = _sort_u64(key, n_jobs)
    del key
    # Where the salience changes between neighbours, slice by slice so the
    # comparison temporaries stay small. Keys differing only in the label bit
    # (xor == 1) are the same salience. Counting first is cheap; only inputs with
    # ties need the positions (writing n int64 positions costs more than the sort's
    # tail, and float scores from a model rarely tie).
    step = 1 << 16  # cache-sized scratch buffers, reused: no fresh pages to fault in
    xor_buf = np.empty(min(step, n), dtype=np.uint64)
    change_buf = np.empty(min(step, n), dtype=np.bool_)

    def changes(lo: int, hi: int) -> np.ndarray:
        xb, cb = xor_buf[: hi - lo], change_buf[: hi - lo]
        np.bitwise_xor(asc[lo + 1 : hi + 1], asc[lo:hi], out=xb)
        return np.greater(xb, 1, out=cb)

    spans = [(lo, min(n - 1, lo + step)) for lo in range(0, n - 1, step)]
    n_changes = sum(int(np.count_nonzero(changes(lo, hi))) for lo, hi in spans)
    if sys.byteorder == "little":
        labels = asc.view(np.uint8)[::8] & np.uint8(1)
    else:  # pragma: no cover - big-endian hosts
        labels = (asc & np.uint64(1)).astype(np.uint8)
    if n_changes == n - 1:
        # No ties: every candidate is its own threshold; tp at the i-th largest is
        # the positives among the i + 1 largest.
        tp = np.cumsum(labels[::-1], dtype=np.int64)
        del labels
        values = np.right_shift(asc, np.uint64(1), out=asc).view(np.float64)
        if n_neg:
            values[:n_neg] *= -1.0
        return values[::-1].copy(), np.arange(1, n + 1, dtype=np.int64), tp
    # First index of each tie group (ascending).
    found = [np.flatnonzero(changes(lo, hi)) + (lo + 1) for lo, hi in spans]
    starts = np.concatenate([np.zeros(1, dtype=np.int64), *found])
    if 0 < n_neg < n:  # -x and +x have equal magnitude keys: force a group start
        at = int(np.searchsorted(starts, n_neg))
        if at == len(starts) or starts[at] != n_neg:
            starts = np.insert(starts, at, n_neg)
    if 4 * len(starts) < n:
        # Few distinct saliences: per-group sums need no n-sized int64 array.
        pos_per_group = np.add.reduceat(labels, starts, dtype=np.int64)
        n_pos = int(pos_per_group.sum())
        pos_below = np.cumsum(pos_per_group)[:-1]
    else:
        pos_cum = np.cumsum(labels, dtype=np.int64)
        n_pos = int(pos_cum[-1])
        # No ties at all (common for float scores): groups are positions, skip gathers.
        pos_below = pos_cum[:-1] if len(starts) == n else pos_cum[starts[1:] - 1]
        del pos_cum
    del labels
    if len(starts) == n:
        values = np.right_shift(asc, np.uint64(1), out=asc).view(np.float64)
    else:
        values = (asc[starts] >> np.uint64(1)).view(np.float64)
    if n_neg:
        values[: np.searchsorted(starts, n_neg)] *= -1.0
    # Descending thresholds: kept at a group = everything from its start upwards.
    thresholds = values[::-1].copy()
    kept = n - starts[::-1]
    tp = np.empty(len(starts), dtype=np.int64)
    np.subtract(n_pos, pos_below[::-1], out=tp[:-1])
    tp[-1] = n_pos  # the lowest threshold keeps every scored candidate
    return thresholds, kept, tp


def threshold_counts(
    y: np.ndarray, s: np.ndarray, thresholds: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Counts at given thresholds (any order). Returns ``(kept, tp)``, element i for thresholds[i].

    No sort of the candidates: each is binned among the sorted thresholds with
    ``np.searchsorted`` (n log T), then per-bin counts are reverse-cumulated.
    """
    order = np.argsort(thresholds, kind="stable")
    ts = thresholds[order]
    n_t = len(ts)
    hist = np.zeros(n_t + 1, dtype=np.int64)
    hist_pos = np.zeros(n_t + 1, dtype=np.int64)
    for lo in range(0, len(s), _CHUNK):
        c = np.searchsorted(ts, s[lo : lo + _CHUNK], side="right")
        nan = np.isnan(s[lo : lo + _CHUNK])
        if nan.any():
            c[nan] = 0  # NaN salience: kept at no threshold
        hist += np.bincount(c, minlength=n_t + 1)
        hist_pos += np.bincount(c[y[lo : lo + _CHUNK].view(np.bool_)], minlength=n_t + 1)
    # kept at ts[k] = candidates whose bin index c > k (c = number of thresholds <= s).
    kept_sorted = np.cumsum(hist[::-1])[::-1][1:]
    tp_sorted = np.cumsum(hist_pos[::-1])[::-1][1:]
    kept = np.empty(n_t, dtype=np.int64)
    tp = np.empty(n_t, dtype=np.int64)
    kept[order] = kept_sorted
    tp[order] = tp_sorted
    return kept, tp


def metrics_from_counts(
    kept: np.ndarray, tp: np.ndarray, n: int, n_pos: Any, n_groups: Any = None,
    judged: Any = None,
) -> dict[str, np.ndarray]:
    """Precision, recall, F1, write rate (and kept per verdict) from counts.

    ``kept`` is every kept candidate (what the gate writes); ``judged`` those
    of them with a truth value (``tp + fp``; default: all of ``kept``).
    Precision and F1 read ``judged``; kept per verdict and write rate read
    ``kept``. Works elementwise on arrays of any shape (``n_pos``/``n_groups``
    broadcast), which is what the bootstrap uses for (replicate x threshold)
    matrices. No warnings here: NaN marks an undefined cell (0/0).
    """
    # Integer arrays divide straight into float64: no float copies of the counts.
    kept = np.asarray(kept)
    tp = np.asarray(tp)
    n_pos = np.asarray(n_pos)
    jk = kept if judged is None else np.asarray(judged)
    out: dict[str, np.ndarray] = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        # 0/0 -> NaN under errstate; x/0 with x > 0 cannot happen (tp <= judged, tp <= n_pos).
        out["precision"] = np.true_divide(tp, jk)
        out["recall"] = np.true_divide(tp, n_pos)
        # 2tp + fp + fn == judged + n_pos
        f1 = np.true_divide(tp, jk + n_pos)
        f1 *= 2
        out["f1"] = f1
        if n_groups is not None:
            out["kept_per_verdict"] = np.true_divide(kept, n_groups)
        out["write_rate"] = np.true_divide(kept, n)
    return out


def _warn_degenerate(n: int, n_pos: int, n_valid: int) -> None:
    if n == 0:
        _warn("no candidates: every metric is undefined (NaN)")
        return
    if n_valid == 0:
        _warn("no candidate has a salience (all NaN): nothing is ever kept")
    if n_pos == 0:
        _warn("y_true has no positive labels: recall is undefined (NaN)")
    elif n_pos == n:
        _warn("y_true has no negative labels: precision is 1 wherever something is kept")


# --------------------------------------------------------------------------- public API


def sweep(
    y_true: Any,
    salience: Any,
    *,
    groups: Any = None,
    thresholds: Any = None,
    n_jobs: int | None = None,
    snap: bool = True,
    judged: Any = None,
    n_verdicts: int | None = None,
) -> pd.DataFrame:
    """Counts and metrics of the rule ``kept = salience >= threshold`` at many thresholds.

    Parameters
    ----------
    y_true : array of 0/1, shape (n,)
        Gold label of each candidate lesson (1 = useful).
    salience : array of float, shape (n,)
        Score of each candidate. NaN = no score: never kept (see module docstring).
    groups : array, shape (n,), optional
        Verdict of each candidate (e.g. ``verdict_hash``); enables ``kept_per_verdict``.
    thresholds : array of float, optional
        Evaluate these thresholds, in the order given, each rounded to 12
        significant digits (:func:`snap_thresholds`, warns when one moves). By
        default every distinct non-NaN salience, in decreasing order (like
        ``roc_curve``): the data's own values, so nothing to round.
    n_jobs : int, optional
        Threads for the sort of large inputs (None: up to 4; 1: no threads, e.g.
        inside a process pool).
    judged : array of bool, shape (n,), optional
        Which candidates have a truth value (default: all). The others
        (unlabelled, tied under ``ties="exclude"``) are still kept, i.e. written,
        so they count in ``kept``, ``kept_per_verdict`` and ``write_rate`` but
        in neither ``tp`` nor ``fp``; their ``y_true`` is ignored.
    n_verdicts : int, optional
        Denominator of ``kept_per_verdict``: every verdict the run processed,
        also those that yielded no candidate (default: the distinct ``groups``).
    snap : bool, default True
        Round given thresholds as typed (see ``thresholds``); False when they
        are data values of other candidates (a threshold chosen on training
        verdicts, applied to held-out ones).

    Returns
    -------
    DataFrame
        One row per threshold; for row ``i``:

        - ``threshold``: the i-th threshold;
        - ``kept``: candidates with ``salience >= threshold`` (lessons that would be
          written, judged or not);
        - ``tp`` / ``fp``: kept judged candidates labelled 1 / 0;
        - ``fn``: judged candidates labelled 1 that are not kept (NaN-salience ones
          included: a useful lesson the parser dropped is a miss);
        - ``precision`` = tp / (tp + fp) (NaN when nothing judged is kept);
        - ``recall`` = tp / (number of judged 1 labels) (NaN without positives);
        - ``f1`` = 2 tp / (2 tp + fp + fn) (NaN when that is 0/0);
        - ``kept_per_verdict`` = kept / ``n_verdicts`` (default: distinct groups),
          only with ``groups`` or ``n_verdicts``;
        - ``write_rate`` = kept / n.

        With default thresholds, ``precision``, ``recall`` and ``threshold`` equal
        scikit-learn's ``precision_recall_curve`` without its final (recall 0,
        precision 1) point, in reverse order.

    Raises
    ------
    BadInputError
        Labels other than 0/1, scores that are not numbers, arrays of different
        lengths or not 1-D, a NaN threshold.

    Warns
    -----
    UndefinedMetricWarning
        No positive label, or no candidate: the metrics that divide by them are NaN.
    ThresholdGridWarning
        A given threshold moved when rounded to 12 significant digits.

    See Also
    --------
    sweep_run : The sweep of a run in the store, judged by a truth.
    bootstrap_metrics : Intervals of the same metrics, resampling verdicts.
    choose_threshold : Chooses one threshold on training verdicts.

    Examples
    --------
    >>> df = tl.sweep([1, 0, 1, 0], [0.9, 0.8, 0.6, 0.3], groups=["a", "a", "b", "b"])
    >>> df[["threshold", "kept", "tp", "fp", "precision", "recall"]].round(3)
       threshold  kept  tp  fp  precision  recall
    0        0.9     1   1   0      1.000     0.5
    1        0.8     2   1   1      0.500     0.5
    2        0.6     3   2   1      0.667     1.0
    3        0.3     4   2   2      0.500     1.0
    >>> tl.sweep([1, 0, 1, 0], [0.9, 0.8, 0.6, 0.3], thresholds=[0.7])["f1"].round(3).tolist()
    [0.5]

    (It is long because this docstring is the reference of every parameter and
    column; the code is some forty lines.)
    """
    y = as_labels(y_true)
    s = as_scores(salience)
    check_lengths(y_true=y, salience=s, groups=groups, judged=judged)
    jm = None if judged is None else as_labels(judged, "judged")
    if jm is not None and jm.all():
        jm = None
    if jm is not None:
        y = y & jm  # an unjudged candidate is never a positive
    n = len(y)
    n_pos = int(np.count_nonzero(y))
    n_groups = n_verdicts if n_verdicts is not None else (
        count_groups(groups) if groups is not None else None)
    if thresholds is None:
        thr, kept, tp = distinct_counts(y, s, n_jobs)
        n_valid = int(kept[-1]) if len(kept) else 0
    else:
        thr = _check_thresholds(thresholds, s, snap)
        kept, tp = threshold_counts(y, s, thr)
        n_valid = n - int(np.count_nonzero(np.isnan(s)))
    judged_kept = kept if jm is None else threshold_counts(jm, s, thr)[1]
    _warn_degenerate(n, n_pos, n_valid)
    m = metrics_from_counts(kept, tp, n, n_pos, n_groups, judged_kept)
    cols: dict[str, Any] = {
        "threshold": thr,
        "kept": kept,
        "tp": tp,
        "fp": judged_kept - tp,
        "fn": n_pos - tp,
        "precision": m["precision"],
        "recall": m["recall"],
        "f1": m["f1"],
    }
    if n_groups is not None:
        cols["kept_per_verdict"] = m["kept_per_verdict"]
    cols["write_rate"] = m["write_rate"]
    return pd.DataFrame(cols, copy=False)


def average_precision(y_true: Any, salience: Any) -> float:
    """Average precision: ``sum_i (R_i - R_{i-1}) P_i`` over distinct thresholds, descending.

    Equals scikit-learn's ``average_precision_score`` (no interpolation). NaN
    saliences are never kept, so their positives are never recalled and add
    nothing.

    Parameters
    ----------
    y_true : array of 0/1
        Each candidate's label.
    salience : array of float
        Each candidate's score (NaN: never kept).

    Returns
    -------
    float
        The average precision; NaN with a warning without positives (or candidates).
    """
    y = as_labels(y_true)
    s = as_scores(salience)
    check_lengths(y_true=y, salience=s)
    n_pos = int(np.count_nonzero(y))
    if len(y) == 0 or n_pos == 0:
        _warn("y_true has no positive labels: average precision is undefined (NaN)")
        return float("nan")
    _thr, kept, tp = distinct_counts(y, s)
    if len(kept) == 0:
        return 0.0
    recall_step = np.diff(np.r_[0, tp]) / n_pos
    return float(np.sum(recall_step * (tp / kept)))


def sweep_parquet(
    files: str | os.PathLike[str] | list[str],
    *,
    salience: str = "salience",
    label: str = "y_true",
    memory_limit: str | None = None,
    threads: int | None = None,
    temp_directory: str | os.PathLike[str] | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
) -> pd.DataFrame:
    """:func:`sweep` (default thresholds, no groups) of the candidates in Parquet ``files``.

    ``files``: a path, a glob (``"cands/**/*.parquet"``, hive partitions allowed) or
    a list of them; ``salience`` and ``label`` name the columns (label 0/1 or
    boolean). ``memory_limit`` (e.g. ``"1GB"``), ``threads`` and ``temp_directory``
    (where DuckDB spills) set DuckDB for this call, on a connection of its own
    unless ``con`` is given.
    """
    sources = [str(f) for f in files] if isinstance(files, list) else [str(files)]
    own = con is None
    c = duckdb.connect() if own else con
    try:
        if memory_limit is not None:
            c.execute("SET memory_limit = ?", [str(memory_limit)])
        if threads is not None:
            c.execute("SET threads = ?", [int(threads)])
        if temp_directory is not None:
            c.execute("SET temp_directory = ?", [str(temp_directory)])
        s, y = quote_ident(salience), quote_ident(label)
        src = "read_parquet(?, hive_partitioning = true)"
        try:
            n, n_pos = c.execute(
                f"SELECT count(*), coalesce(sum({y}::BIGINT), 0) FROM {src}", [sources]
            ).fetchall()[0]
            # Every distinct scored salience with its counts, then running sums from the
            # top: kept / tp at each threshold. 0.0 stands for -0.0 (one threshold).
            rows = c.execute(f"""
                WITH g AS (
                    SELECT CASE WHEN {s} = 0 THEN 0.0::DOUBLE ELSE {s}::DOUBLE END AS t,
                           count(*) AS k, sum({y}::BIGINT) AS p
                    FROM {src}
                    WHERE {s} IS NOT NULL AND NOT isnan({s}::DOUBLE)
                    GROUP BY 1)
                SELECT t, sum(k) OVER w AS kept, sum(p) OVER w AS tp FROM g
                WINDOW w AS (ORDER BY t DESC ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
                ORDER BY t DESC""", [sources]).fetchnumpy()
        except duckdb.Error as exc:
            raise BadInputError(f"cannot sweep the Parquet candidates: {exc}",
                                source=", ".join(sources), field=f"{salience}, {label}") from None
    finally:
        if own:
            c.close()
    thr = np.asarray(rows["t"], dtype=np.float64)
    kept = np.asarray(rows["kept"], dtype=np.int64)
    tp = np.asarray(rows["tp"], dtype=np.int64)
    n, n_pos = int(n), int(n_pos)
    _warn_degenerate(n, n_pos, int(kept[-1]) if len(kept) else 0)
    m = metrics_from_counts(kept, tp, n, n_pos)
    cols: dict[str, Any] = {"threshold": thr, "kept": kept, "tp": tp, "fp": kept - tp,
                            "fn": n_pos - tp, **{k: m[k] for k in ("precision", "recall", "f1",
                                                                   "write_rate")}}
    return pd.DataFrame(cols, copy=False)
