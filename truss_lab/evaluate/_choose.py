"""Choosing ``extraction_min_salience``: on training verdicts, judged on held-out ones.

A threshold tuned and scored on the same verdicts flatters itself. So
:func:`choose_threshold` splits *verdicts* (never candidates: lessons of one
verdict are correlated) into train and test, picks the threshold on train
with an :class:`~truss_lab.evaluate._objective.Objective`, and reports the metrics of
that one threshold on both sides. With ``cv=k`` it cross-validates instead:
the choice is made k times, each time without one fold of verdicts, and
judged on that fold (out-of-fold metrics, the per-fold thresholds and their
spread); the threshold it returns is the choice on every verdict.

Every count is :func:`~truss_lab.evaluate._sweep.sweep`'s: ``judged`` marks the
candidates with a truth value, ``verdicts`` lists every verdict the run
processed (those that yielded nothing are split, folded and resampled too, and
count in kept per verdict). The split, the folds and the bootstraps draw from
independent streams of one seed (:func:`~truss_lab.evaluate._bootstrap.seed_streams`).

**Intervals of the held-out metrics** (:func:`choice_intervals`, carried by
:class:`ThresholdChoice`): threshold fixed, or choice re-made. A choice is one or
more *sides*: verdicts the threshold is chosen on and verdicts it is judged on
(one train/test split, or the folds of a cross-validation). Both intervals come
from the same replicates, which resample verdicts with replacement within each
*stratum* (one split: the training and the held-out verdicts each among
themselves, so both sides keep their size; cross-validation: all verdicts, each
copy keeping its fold):

- **fixed**: every side's held-out verdicts at the threshold that side chose
  on the data, held fixed: the interval of the held-out metrics given the choice;
- **procedure**: every replicate re-makes each side's choice on its resampled
  training verdicts and scores its resampled held-out verdicts with it: the
  interval of the whole choose-then-evaluate procedure, which also covers the
  choice of threshold.

Counts are pooled over sides (out-of-fold metrics) and read as
:func:`~truss_lab.evaluate._sweep.sweep` reads them (``judged``, every processed
verdict). The choices are made on a grid of thresholds (at most a few hundred
data values plus each side's choice, see :func:`boot_grid`), all replicates at
once as in :mod:`~truss_lab.evaluate._bootstrap`.
"""

from __future__ import annotations

import dataclasses
import html
import math
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from truss_lab.core._errors import BadInputError
from truss_lab.core._threads import blas_limited
from truss_lab.evaluate._bootstrap import (
    BOOT_METRICS,
    MAX_W_CELLS,
    BootstrapResult,
    WeightedCounter,
    bin_cells,
    bin_counts,
    bootstrap_metrics,
    check_boot,
    choice_interval,
    percentile_interval,
    seed_streams,
    small_sample_line,
    stream,
    verdict_codes,
)
from truss_lab.evaluate._defaults import DEFAULT_OBJECTIVE
from truss_lab.evaluate._objective import (
    KEEP_NOTHING,
    Objective,
    make_objective,
)
from truss_lab.evaluate._ppi import (
    PPIData,
    clip_metrics,
    ppi_bootstrap,
    ppi_on_verdicts,
)
from truss_lab.evaluate._sweep import (
    UndefinedMetricWarning,
    as_labels,
    as_scores,
    check_lengths,
    distinct_counts,
    metrics_from_counts,
    sweep,
    threshold_counts,
)

__all__ = [
    "COUNT_COLUMNS",
    "INTERVAL_LABELS",
    "Side",
    "ThresholdChoice",
    "boot_grid",
    "choice_intervals",
    "choose_threshold",
    "choose_threshold_ppi",
    "draw_weights",
    "people_frame",
    "split_by_verdict",
    "verdict_kfold",
]

# --------------------------------------------------------------------------- the result


#: What each held-out interval covers, as every result and its repr say it.
INTERVAL_LABELS = {
    "fixed": "threshold held fixed at the choice",
    "procedure": "choice re-made on every replicate (covers the choice of threshold)",
}

_SHOWN = ("precision", "recall", "f1", "kept_per_verdict")


@dataclass(frozen=True, eq=False)
class ThresholdChoice:
    """A threshold chosen on training verdicts, with its metrics on train and held-out verdicts.

    ``train``/``test`` map the :func:`~truss_lab.evaluate._sweep.sweep` columns
    (threshold, kept, tp, fp, fn, precision, recall, f1, kept_per_verdict,
    write_rate) to their values. With one split, ``train`` is the training side
    and ``test`` the held-out side at the chosen threshold. With
    cross-validation (``split["cv"]``), ``threshold`` is the choice on every
    verdict, ``train`` its in-sample metrics and ``test`` the *out-of-fold*
    metrics: each fold's held-out verdicts at the threshold chosen without them,
    counts pooled over folds (and repeats); ``folds`` has one row per fold
    (repeat, fold, threshold, verdict counts and held-out metrics).

    Intervals (with ``n_boot``), both percentile intervals over replicates that
    resample verdicts (one split: training and held-out verdicts each among
    themselves; cross-validation: all verdicts, each copy keeping its fold):
    ``test_intervals`` holds the threshold fixed (:data:`INTERVAL_LABELS` ``fixed``);
    ``procedure_intervals`` re-makes the choice on every replicate's training
    side and scores its held-out side (``procedure``), so it also covers the
    choice. ``threshold_interval`` is the interval of the choice re-made on
    resampled training verdicts (``bootstrap`` holds that bootstrap).
    ``split`` describes the split or folds (verdict and candidate counts,
    test_size or cv/cv_repeats, random_state).

    Parameters
    ----------
    threshold : float
        The chosen threshold.
    objective : str
        The objective, described.
    train, test : dict
        The sweep columns' values on each side (above).
    split : dict
        The split or folds (above).
    test_intervals, procedure_intervals : pandas.DataFrame, optional
        The held-out intervals (above).
    threshold_interval : tuple of float, optional
        The interval of the choice.
    bootstrap : BootstrapResult, optional
        The bootstrap that interval comes from.
    folds : pandas.DataFrame, optional
        One row per fold (cross-validation).
    confidence : float, optional
        The intervals' level.
    """

    threshold: float
    objective: str
    train: dict[str, float]
    test: dict[str, float]
    split: dict[str, Any]
    test_intervals: pd.DataFrame | None = field(default=None, repr=False)
    threshold_interval: tuple[float, float] | None = None
    bootstrap: BootstrapResult | None = field(default=None, repr=False)
    procedure_intervals: pd.DataFrame | None = field(default=None, repr=False)
    folds: pd.DataFrame | None = field(default=None, repr=False)
    confidence: float | None = None

    @property
    def cv(self) -> bool:
        """Whether the held-out metrics are out-of-fold (cross-validation)."""
        return bool(self.split.get("cv"))

    @property
    def fold_thresholds(self) -> np.ndarray:
        """The threshold chosen in each fold (cross-validation; empty otherwise)."""
        if self.folds is None:
            return np.empty(0)
        return self.folds["threshold"].to_numpy(dtype=np.float64)

    @property
    def threshold_spread(self) -> dict[str, float]:
        """Spread of the per-fold thresholds: ``min``, ``max``, ``mean``, ``std`` (ddof=1)."""
        t = self.fold_thresholds
        t = t[np.isfinite(t)]
        if len(t) == 0:
            return {}
        return {"min": float(t.min()), "max": float(t.max()), "mean": float(t.mean()),
                "std": float(t.std(ddof=1)) if len(t) > 1 else 0.0}

    def to_frame(self) -> pd.DataFrame:
        """One row per metric: ``train``, ``test`` and each interval's bounds
        (``test_low``/``test_high``: threshold fixed; ``procedure_low``/``procedure_high``:
        choice re-made)."""
        df = pd.DataFrame({"train": pd.Series(self.train), "test": pd.Series(self.test)})
        for name, table in (("test", self.test_intervals),
                            ("procedure", self.procedure_intervals)):
            if table is not None:
                row = table.iloc[0]
                df[f"{name}_low"] = [row.get(f"{m}_low", np.nan) for m in df.index]
                df[f"{name}_high"] = [row.get(f"{m}_high", np.nan) for m in df.index]
        df.index.name = "metric"
        return df

    @property
    def how(self) -> str:
        """How the choice was made and judged, in words: the folds or the split, the
        verdict counts, the seed."""
        sp = self.split
        if self.cv:
            reps = sp.get("cv_repeats", 1)
            rep = f" x {reps} repeats" if reps > 1 else ""
            return (f"cross-validated by verdict, {sp.get('cv')} folds{rep} of "
                    f"{sp.get('n_verdicts')} verdicts, seed {sp.get('random_state')}")
        # .get: a choice made by hand (or read back) may lack a key; the repr must not fail.
        return (f"one split by verdict: {sp.get('n_train_verdicts')} train, "
                f"{sp.get('n_test_verdicts')} held out (test_size {sp.get('test_size')}), "
                f"seed {sp.get('random_state')}")

    def metrics_table(self) -> pd.DataFrame:
        """The choice as people read it: one row per metric (precision, recall, F1,
        kept per verdict), its value on the side the threshold was chosen on and on the
        held-out side, and each held-out interval as ``[low, high]``: no NaN cell, no
        count printed as a rate.

        Returns
        -------
        pandas.DataFrame
            Columns ``metric``, the two sides (named as :attr:`how` says them) and one
            column per interval (:data:`INTERVAL_LABELS`).
        """
        sides = (("in-sample (all verdicts)", "held-out (out-of-fold)") if self.cv
                 else ("train", "held-out"))
        ivs = [(INTERVAL_LABELS[k], t.iloc[0]) for k, t in
               (("fixed", self.test_intervals), ("procedure", self.procedure_intervals))
               if t is not None]
        rows = []
        for m in _SHOWN:
            row: dict[str, Any] = {"metric": m.replace("_", " "),
                                   sides[0]: self.train.get(m, np.nan),
                                   sides[1]: self.test.get(m, np.nan)}
            for label, r in ivs:
                row[label] = (f"[{r[f'{m}_low']:.3f}, {r[f'{m}_high']:.3f}]"
                              if f"{m}_low" in r.index else "")
            rows.append(row)
        return pd.DataFrame(rows)

    def _sides(self) -> tuple[str, str]:
        sp = self.split
        if self.cv:
            reps = sp.get("cv_repeats", 1)
            rep = f" x {reps} repeats" if reps > 1 else ""
            return (f"all {sp['n_verdicts']} verdicts, in-sample",
                    f"out-of-fold, {sp['cv']} folds{rep}")
        return (f"{sp['n_train_verdicts']} verdicts", f"{sp['n_test_verdicts']} verdicts")

    @property
    def small_sample(self) -> str | None:
        """The one warning line (:func:`~truss_lab.evaluate._bootstrap.small_sample_line`)
        when the choice's intervals rest on fewer than :data:`SMALL_SAMPLE_VERDICTS`
        verdicts of a kind: held out (with cross-validation: all the verdicts split), labelled
        (``split["labelled_verdicts"]``, set by the run's evaluation) or, with a correction,
        people-answered (``split["people_verdicts"]``); else None."""
        sp = self.split
        people = sp.get("people_verdicts") if sp.get("correction", "none") != "none" else None
        if self.cv:  # every verdict is held out once
            labelled = sp.get("labelled_verdicts")
            return small_sample_line({"labelled": labelled, "people-answered": people,
                                      "": None if labelled is not None else sp["n_verdicts"]})
        return small_sample_line({"labelled": sp.get("labelled_verdicts"),
                                  "people-answered": people,
                                  "held-out": int(sp["n_test_verdicts"])})

    def interval_lines(self) -> list[str]:
        """The small-sample warning (:attr:`small_sample`), if any, then one line per
        held-out interval, each saying what it covers."""
        lines = [self.small_sample] if self.small_sample else []
        conf = f"{self.confidence:.0%} " if self.confidence is not None else ""
        for key, table in (("fixed", self.test_intervals),
                           ("procedure", self.procedure_intervals)):
            if table is None:
                continue
            row = table.iloc[0]
            cells = ", ".join(f"{m} [{row[f'{m}_low']:.3f}, {row[f'{m}_high']:.3f}]"
                              for m in _SHOWN if f"{m}_low" in row.index)
            lines.append(f"{conf}interval, {INTERVAL_LABELS[key]}: {cells}")
        return lines

    def __repr__(self) -> str:
        def fmt(d: dict[str, float]) -> str:
            return ", ".join(f"{k}={d[k]:.3f}" for k in _SHOWN if k in d)

        ci = ""
        if self.threshold_interval is not None:
            lo, hi = self.threshold_interval
            ci = f" [{lo:.4g}, {hi:.4g}]"
        train_side, test_side = self._sides()
        lines = [
            f"ThresholdChoice(threshold={self.threshold:.4g}{ci}, objective={self.objective!r},",
            f"  train ({train_side}): {fmt(self.train)},",
            f"  test ({test_side}): {fmt(self.test)}",
        ]
        if self.folds is not None:
            sp = self.threshold_spread
            shown = ", ".join(f"{t:.4g}" for t in self.fold_thresholds)
            spread = (f"; spread min {sp['min']:.4g}, max {sp['max']:.4g}, sd {sp['std']:.3g}"
                      if sp else "")
            lines.append(f"  thresholds per fold: {shown}{spread}")
        lines += [f"  {line}" for line in self.interval_lines()]
        return "\n".join(lines) + ")"

    def _repr_html_(self) -> str:
        # The answer first (the threshold and its interval), then how it was made, then
        # short tables: the raw split dict and the full to_frame() read as a wall of text.
        conf = f"{self.confidence:.0%} " if self.confidence is not None else ""
        ci = ""
        if self.threshold_interval is not None:
            lo, hi = self.threshold_interval
            ci = f" [{lo:.3f}, {hi:.3f}] ({conf}bootstrap interval of the choice)"
        head = html.escape(f"{self.threshold:.3f}{ci}")
        how = html.escape(f"objective {self.objective} · {self.how}")
        notes = f"<br>{html.escape(self.small_sample)}" if self.small_sample else ""
        table = self.metrics_table().to_html(index=False, na_rep="",
                                             float_format=lambda v: f"{v:.3f}")
        folds = ""
        if self.folds is not None:
            shown = self.folds[[c for c in ("repeat", "fold", "threshold", "kept", "precision",
                                            "recall", "f1", "kept_per_verdict")
                                if c in self.folds.columns]]
            if shown["repeat"].nunique() == 1:
                shown = shown.drop(columns="repeat")
            folds = ("<p>each fold's choice, judged on its held-out verdicts:</p>"
                     + people_frame(shown).to_html(index=False, na_rep="",
                                                   float_format=lambda v: f"{v:.3f}"))
        return (f"<div><p><b>ThresholdChoice</b>: chosen threshold <b>{head}</b><br>{how}"
                f"{notes}</p>{table}{folds}</div>")


#: Columns that count lessons: whole numbers, shown without decimals (a prediction-powered
#: count is an estimate and keeps its decimals).
COUNT_COLUMNS = ("kept", "tp", "fp", "fn", "repeat", "fold", "n_train_verdicts",
                 "n_test_verdicts")


def people_frame(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with its count columns as integers where every value is whole (782, not
    782.000), for a table people read; other columns unchanged.

    Parameters
    ----------
    df : pandas.DataFrame
        A table of counts and rates (a sweep, a choice's folds).

    Returns
    -------
    pandas.DataFrame
        A copy.
    """
    out = df.copy()
    for c in COUNT_COLUMNS:
        if c in out.columns:
            v = pd.to_numeric(out[c], errors="coerce")
            if v.notna().all() and (v % 1 == 0).all():
                out[c] = v.astype("int64")
    return out


# ---------------------------------------------------------- intervals of the held-out metrics


# Beyond this many distinct saliences the replicates' choices run on their quantiles.
MAX_BOOT_GRID = 256


@dataclass(frozen=True)
class Side:
    """One choice: verdicts it is made on (``train``) and judged on (``test``), as
    boolean masks over the verdicts, and the threshold chosen on the data."""

    train: np.ndarray
    test: np.ndarray
    threshold: float


def boot_grid(s: np.ndarray, chosen: Sequence[float], obj: Objective | None = None,
              ) -> np.ndarray:
    """Thresholds the replicates choose among: the distinct saliences of ``s`` (their
    ``inverted_cdf`` quantiles -- data values -- beyond :data:`MAX_BOOT_GRID`) plus
    the thresholds ``chosen`` on the data, plus :data:`KEEP_NOTHING` when ``obj``
    considers it (ascending)."""
    vals = np.unique(s[~np.isnan(s)])
    if len(vals) > MAX_BOOT_GRID:
        vals = np.unique(np.quantile(vals, np.linspace(0, 1, MAX_BOOT_GRID),
                                     method="inverted_cdf"))
    extra = [c for c in chosen if not np.isnan(c)]
    if obj is not None and obj.considers_nothing:
        extra.append(KEEP_NOTHING)
    return np.union1d(vals, extra) if extra else vals


def draw_weights(
    rng: np.random.Generator, n_boot: int, strata: Sequence[np.ndarray], n_verdicts: int
) -> Iterator[np.ndarray]:
    """Verdict weights (replicates x verdicts, float32 counts) in chunks: each
    replicate draws, within every stratum (array of verdict positions), as many
    verdicts as it holds, with replacement, in replicate order."""
    rows = max(1, min(n_boot, MAX_W_CELLS // max(n_verdicts, 1)))
    for lo in range(0, n_boot, rows):
        c = min(rows, n_boot - lo)
        w = np.zeros((c, n_verdicts), dtype=np.float32)
        for members in strata:
            m = len(members)
            if m == 0:
                continue
            idx = rng.integers(0, m, size=(c, m))
            idx += (np.arange(c, dtype=np.int64) * m)[:, None]
            w[:, members] = np.bincount(idx.ravel(), minlength=c * m).reshape(c, m)
        yield w


def _fixed_counts(y: np.ndarray, s: np.ndarray, jm: np.ndarray, codes: np.ndarray,
                  n_verdicts: int, sides: Sequence[Side],
                  weights: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """Per verdict: held-out ``kept, tp, judged, n, n_pos, times held out`` at each
    side's own threshold, summed over sides (shape ``(verdicts, 6)``). ``weights``:
    ``(truth weight, written)`` per row of a prediction-powered choice (see
    :func:`choice_intervals`)."""
    out = np.zeros((n_verdicts, 6))
    w, k = (np.ones(len(y)), np.ones(len(y), dtype=bool)) if weights is None else weights
    yw, jw = y * w, jm * w
    with np.errstate(invalid="ignore"):
        for side in sides:
            on = side.test[codes]
            kept = on & (s >= side.threshold)  # NaN salience or threshold: never kept
            for i, x in enumerate((kept & k, kept * yw, kept * jw, on & k, on * yw)):
                out[:, i] += np.bincount(codes, weights=x, minlength=n_verdicts)
            out[:, 5] += side.test
    return out


def _metrics(c: np.ndarray, clip: bool = False) -> dict[str, np.ndarray]:
    m = metrics_from_counts(c[:, 0], c[:, 1], c[:, 3], c[:, 4], c[:, 5], c[:, 2])
    return clip_metrics(m, c[:, 4]) if clip else m


def _table(threshold: float, point: dict[str, float], reps: dict[str, list[np.ndarray]],
           confidence: float) -> pd.DataFrame:
    row: dict[str, float] = {"threshold": threshold}
    for m in BOOT_METRICS:
        lo, hi = percentile_interval(np.concatenate(reps[m])[:, None], confidence)
        row[m] = float(point.get(m, np.nan))
        row[f"{m}_low"], row[f"{m}_high"] = float(lo[0]), float(hi[0])
    return pd.DataFrame([row])


@blas_limited()
def choice_intervals(
    y: np.ndarray, s: np.ndarray, jm: np.ndarray, codes: np.ndarray, n_verdicts: int, *,
    sides: Sequence[Side], strata: Sequence[np.ndarray], obj: Objective, threshold: float,
    point: dict[str, float], n_boot: int, confidence: float, rng: np.random.Generator,
    weights: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(fixed, procedure)``: one-row tables (``threshold``, each metric of
    :data:`~truss_lab.evaluate._bootstrap.BOOT_METRICS` with ``_low``/``_high``).

    ``y`` (positives, already 0 where unjudged), ``s`` (NaN: never kept), ``jm``
    (judged) and ``codes`` (verdict position of each candidate) describe the
    candidates; ``point`` holds the held-out values shown beside the bounds.
    ``weights`` = ``(w, written)`` makes the counts prediction-powered
    (:func:`choose_threshold_ppi`): a row's truth counts (tp, judged, positives) weigh
    ``w`` and only ``written`` rows count as kept (the people's rows are not).

    Many parameters because it is the inner step of both choices (plain and prediction-
    powered): the arrays the caller already encoded once (y, s, jm, codes, strata, weights)
    are passed as they are rather than rebuilt.
    """
    clip = weights is not None
    grid_desc = boot_grid(s if weights is None else s[weights[1]],
                          [side.threshold for side in sides], obj)[::-1].copy()
    counter = WeightedCounter(
        bin_cells(y, s, codes, n_verdicts, grid_desc, judged=jm) if weights is None
        else bin_counts(y, s, codes, n_verdicts, grid_desc, judged=jm, weights=weights))
    fixed = _fixed_counts(y, s, jm, codes, n_verdicts, sides, weights)
    reps_f: dict[str, list[np.ndarray]] = {m: [] for m in BOOT_METRICS}
    reps_p: dict[str, list[np.ndarray]] = {m: [] for m in BOOT_METRICS}
    # A side's train verdicts are usually the rest of its test ones (k-fold, one split):
    # with whole counts its train counts are then every verdict's less its test ones, so
    # a replicate costs one product over every verdict plus one per fold over that fold's
    # verdicts (two in all) instead of two over every verdict per fold (ten at 5 folds).
    rest = [bool(counter.exact and np.array_equal(side.train, ~side.test)) for side in sides]
    for w in draw_weights(rng, n_boot, strata, n_verdicts):
        mf = _metrics(w.astype(np.float64) @ fixed, clip)
        acc = np.zeros((len(w), 6))
        ok = np.ones(len(w), dtype=bool)
        full = counter.judged(w) if any(rest) else None
        for side, is_rest in zip(sides, rest, strict=True):
            te = counter.judged(w, side.test)
            tr = (full.minus(te) if full is not None and is_rest
                  else counter.judged(w, side.train))
            idx = tr.best_index(obj)
            ok &= idx >= 0
            at = np.maximum(idx, 0)[:, None]
            for i, a in enumerate((te.kept, te.tp, te.judged)):
                acc[:, i] += np.take_along_axis(a, at, axis=1)[:, 0]
            acc[:, 3] += te.n[:, 0]
            acc[:, 4] += te.n_pos[:, 0]
            acc[:, 5] += te.n_verdicts[:, 0]
        mp = _metrics(acc, clip)
        for m in BOOT_METRICS:
            reps_f[m].append(mf[m])
            reps_p[m].append(np.where(ok, mp[m], np.nan))  # a side chose nothing: undefined
    return (_table(threshold, point, reps_f, confidence),
            _table(threshold, point, reps_p, confidence))


# --------------------------------------------------------------------------- the choice


_METRICS = ("threshold", "kept", "tp", "fp", "fn", "precision", "recall", "f1",
            "kept_per_verdict", "write_rate")


def _n_test(test_size: float | int, n_groups: int) -> int:
    if isinstance(test_size, (bool, np.bool_)):
        raise BadInputError("test_size must be a float in (0, 1) or an int", field="test_size")
    if isinstance(test_size, (int, np.integer)):
        n_test = int(test_size)
    elif isinstance(test_size, float) and 0.0 < test_size < 1.0:
        n_test = math.ceil(test_size * n_groups)  # scikit-learn's rounding
    else:
        raise BadInputError(
            f"test_size must be a float in (0, 1) or an int, got {test_size!r}", field="test_size"
        )
    if not 1 <= n_test <= n_groups - 1:
        raise BadInputError(
            f"test_size={test_size!r} leaves {n_test} of {n_groups} verdicts for testing; "
            "expected at least one verdict on each side",
            field="test_size",
        )
    return n_test


def _test_verdicts(n_verdicts: int, test_size: float | int, rng: np.random.Generator
                   ) -> np.ndarray:
    """Boolean mask over verdicts: which are held out."""
    n_test = _n_test(test_size, n_verdicts)
    is_test = np.zeros(n_verdicts, dtype=bool)
    is_test[rng.permutation(n_verdicts)[:n_test]] = True
    return is_test


def _verdict_folds(n_verdicts: int, n_splits: int, rng: np.random.Generator) -> np.ndarray:
    """Fold of each verdict: shuffled, then dealt round-robin (sizes differ by at most one)."""
    if (isinstance(n_splits, (bool, np.bool_)) or not isinstance(n_splits, (int, np.integer))
            or not 2 <= n_splits <= n_verdicts):
        raise BadInputError(
            f"n_splits must be an int in [2, {n_verdicts}] (the number of verdicts), "
            f"got {n_splits!r}",
            field="n_splits",
        )
    fold = np.empty(n_verdicts, dtype=np.int64)
    fold[rng.permutation(n_verdicts)] = np.arange(n_verdicts) % n_splits
    return fold


def split_by_verdict(
    groups: Any, *, test_size: float | int = 0.3, random_state: Any = 0, verdicts: Any = None
) -> tuple[np.ndarray, np.ndarray]:
    """Split candidates into train and test so that no verdict is on both sides.

    ``test_size`` is the share (float) or number (int) of *verdicts* held out
    (of ``verdicts``, every verdict processed, when given; default the distinct
    ``groups``). Verdicts are shuffled by the ``split`` stream of
    :func:`~truss_lab.evaluate._bootstrap.seed_streams` (``random_state`` an int
    or None; a Generator is used as is), so the same seed splits alike here,
    in :func:`choose_threshold` and in calibration.

    Parameters
    ----------
    groups : array-like
        Each candidate's verdict.
    test_size : float or int, default 0.3
        Share or number of verdicts held out.
    random_state : int, numpy.random.Generator or None, default 0
        Seed of the shuffle.
    verdicts : array-like, optional
        Every verdict processed (default the distinct ``groups``).

    Returns
    -------
    tuple of numpy.ndarray
        ``(train_idx, test_idx)``: sorted positions into ``groups``.
    """
    codes, vlist = verdict_codes(groups, verdicts)
    mask = _test_verdicts(len(vlist), test_size, stream(random_state, "split"))[codes]
    return np.flatnonzero(~mask), np.flatnonzero(mask)


def verdict_kfold(
    groups: Any, *, n_splits: int = 5, random_state: Any = 0, verdicts: Any = None
) -> list[tuple[np.ndarray, np.ndarray]]:
    """K folds of verdicts: list of ``(train_idx, test_idx)``, each verdict tested once.

    Verdicts (``verdicts`` when given, else the distinct ``groups``) are
    shuffled by the ``folds`` stream of ``random_state`` and dealt round-robin
    into ``n_splits`` folds (sizes differ by at most one verdict).

    Parameters
    ----------
    groups : array-like
        Each candidate's verdict.
    n_splits : int, default 5
        Folds.
    random_state : int, numpy.random.Generator or None, default 0
        Seed of the shuffle.
    verdicts : array-like, optional
        Every verdict processed (default the distinct ``groups``).

    Returns
    -------
    list of tuple of numpy.ndarray
        ``(train_idx, test_idx)`` per fold: positions into ``groups``.
    """
    codes, vlist = verdict_codes(groups, verdicts)
    cand_fold = _verdict_folds(len(vlist), n_splits, stream(random_state, "folds"))[codes]
    return [
        (np.flatnonzero(cand_fold != k), np.flatnonzero(cand_fold == k)) for k in range(n_splits)
    ]


class _Data:
    """The candidates of a choice: positives (0 where unjudged), scores, judged, verdicts.

    A prediction-powered choice (:meth:`of_ppi`) also has per row a truth weight ``w``
    (tp, judged and positives sum it) and ``written`` (the rows the gate writes: kept,
    candidates; a people's row is not one), and per verdict ``people`` (people answered
    for it: the bootstraps resample those among themselves). Without them every count is
    whole and the metrics are :func:`~truss_lab.evaluate._sweep.sweep`'s."""

    def __init__(self, y: np.ndarray, s: np.ndarray, jm: np.ndarray, codes: np.ndarray,
                 n_verdicts: int, *, w: np.ndarray | None = None,
                 written: np.ndarray | None = None, people: np.ndarray | None = None,
                 ppi: PPIData | None = None) -> None:
        self.y, self.s, self.jm, self.codes, self.n_verdicts = y, s, jm, codes, n_verdicts
        self.all_judged = bool(jm.all())
        self.w, self.written, self.people, self.ppi = w, written, people, ppi
        self.vlist: np.ndarray | None = None  # the verdicts, with a correction

    @classmethod
    def of(cls, y_true: Any, salience: Any, groups: Any, judged: Any, verdicts: Any) -> _Data:
        """The candidates of :func:`choose_threshold`'s arguments, checked."""
        y = as_labels(y_true)
        s = as_scores(salience)
        check_lengths(y_true=y, salience=s, groups=groups, judged=judged)
        jm = np.ones(len(y), dtype=np.uint8) if judged is None else as_labels(judged, "judged")
        codes, vlist = verdict_codes(groups, verdicts)
        return cls(y & jm, s, jm, codes, len(vlist))  # an unjudged candidate is never a positive

    @classmethod
    def of_ppi(cls, data: PPIData, verdicts: Any) -> _Data:
        """The automated rows of every verdict stacked on the people's rows of the sampled
        ones, weighted as :func:`~truss_lab.evaluate._ppi.ppi_sweep` weighs them (lam = 1):
        an automated row 1 - 1/pi_v on a sampled verdict (1 elsewhere), a people's row
        1/pi_v. Verdicts in the order of ``verdicts`` (default: the population's)."""
        order = data.verdicts if verdicts is None else verdicts
        codes, vlist = verdict_codes(np.concatenate([data.groups_auto, data.groups_human]),
                                     pd.unique(np.concatenate([
                                         np.asarray(list(order), dtype=object),
                                         data.verdicts])))
        inv = np.zeros(len(vlist))
        inv[pd.Index(vlist, dtype=object).get_indexer(data.sampled)] = data.inv_pi
        n_a = len(data.y_auto)
        w = np.concatenate([1.0 - inv[codes[:n_a]], inv[codes[n_a:]]])
        written = np.zeros(len(codes), dtype=bool)
        written[:n_a] = True
        out = cls(np.concatenate([data.y_auto, data.y_human]),
                  np.concatenate([data.s_auto, data.s_human]),
                  np.concatenate([data.judged_auto, data.judged_human]), codes, len(vlist),
                  w=w, written=written, people=inv > 0, ppi=data)
        out.vlist = np.asarray(vlist, dtype=object)
        return out

    def on(self, verdict_mask: np.ndarray) -> tuple[np.ndarray, int]:
        """Positions of the candidates of the masked verdicts, and how many verdicts."""
        return np.flatnonzero(verdict_mask[self.codes]), int(verdict_mask.sum())

    def n_rows(self, idx: np.ndarray) -> int:
        """Candidates among ``idx`` (rows the gate writes: not a people's row)."""
        return len(idx) if self.written is None else int(np.count_nonzero(self.written[idx]))

    def n_pos(self, idx: np.ndarray) -> float:
        """Positives among ``idx`` (weighted: prediction-powered)."""
        if self.w is None:
            return int(np.count_nonzero(self.y[idx]))
        return float(np.sum(self.y[idx] * self.w[idx]))

    def _weighted(self, idx: np.ndarray, thr_desc: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(kept, tp, judged)`` of ``idx`` at each descending threshold (weighted)."""
        assert self.w is not None and self.written is not None
        s, w, wr = self.s[idx], self.w[idx], self.written[idx]
        n_t = len(thr_desc)
        b = n_t - np.searchsorted(thr_desc[::-1], s, side="right")
        b[np.isnan(s)] = n_t

        def cum(x: np.ndarray) -> np.ndarray:
            return np.cumsum(np.bincount(b, weights=x, minlength=n_t + 1))[:n_t]

        return cum(wr.astype(np.float64)), cum(self.y[idx] * w), cum(self.jm[idx] * w)

    def choose(self, idx: np.ndarray, n_verdicts: int, obj: Objective) -> float:
        """The objective's threshold among the distinct saliences of ``idx`` (NaN: none)."""
        y, s = self.y[idx], self.s[idx]
        if self.w is None:
            thr, kept, tp = distinct_counts(y, s)
            judged = kept if self.all_judged else threshold_counts(self.jm[idx], s, thr)[1]
        else:
            mine = s[self.written[idx]] if self.written is not None else s
            thr = np.unique(mine[~np.isnan(mine)])[::-1]
            kept, tp, judged = self._weighted(idx, thr)
        if obj.considers_nothing:  # first: the highest threshold, so it wins ties
            thr, kept, tp, judged = (np.concatenate([[v], a]) for v, a in (
                (KEEP_NOTHING, thr), (0, kept), (0, tp), (0, judged)))
        best = int(obj.best_index(kept, tp, self.n_pos(idx), n_verdicts, judged))
        return float(thr[best]) if best >= 0 else float("nan")

    def at(self, idx: np.ndarray, n_verdicts: int, threshold: float) -> dict[str, float]:
        """Sweep metrics of ``idx`` at one threshold (NaN threshold: every metric NaN;
        :data:`KEEP_NOTHING`: the counts of keeping nothing)."""
        t = threshold if not np.isnan(threshold) else np.inf
        if self.w is not None:
            kept, tp, judged = (float(x[0]) for x in self._weighted(idx, np.array([t])))
            n_pos = self.n_pos(idx)
            m = clip_metrics(metrics_from_counts(np.array([kept]), np.array([tp]),
                                                 self.n_rows(idx), n_pos, n_verdicts,
                                                 np.array([judged])), n_pos)
            row = {"threshold": t, "kept": kept, "tp": tp, "fp": judged - tp,
                   "fn": n_pos - tp, **{k: float(v[0]) for k, v in m.items()}}
        else:
            with warnings.catch_warnings():
                # Degenerate sides warn once, from choose_threshold, with the side named.
                warnings.simplefilter("ignore", UndefinedMetricWarning)
                df = sweep(self.y[idx], self.s[idx], thresholds=[t], snap=False,
                           judged=None if self.all_judged else self.jm[idx],
                           n_verdicts=n_verdicts)
            row = {k: float(df[k].iloc[0]) for k in _METRICS if k in df.columns}
        if np.isnan(threshold):
            row = {k: (np.nan if k != "threshold" else threshold) for k in row}
        return row


def _pooled(rows: list[dict[str, float]], n: int, n_pos: float, n_verdicts: int,
            threshold: float, clip: bool = False) -> dict[str, float]:
    """Out-of-fold metrics: the folds' counts summed, then divided (never averaged ratios);
    ``clip``: prediction-powered counts (ratios clipped to [0, 1])."""
    if any(np.isnan(r["threshold"]) for r in rows):
        return {k: (threshold if k == "threshold" else np.nan) for k in _METRICS}
    kept, tp, fp = (sum(r[k] for r in rows) for k in ("kept", "tp", "fp"))
    m = metrics_from_counts(np.array(kept), np.array(tp), n, n_pos, n_verdicts,
                            np.array(tp + fp))
    if clip:
        m = clip_metrics(m, n_pos)
    out = {"threshold": threshold, "kept": kept, "tp": tp, "fp": fp, "fn": n_pos - tp}
    out.update({k: float(v) for k, v in m.items()})
    return {k: out[k] for k in _METRICS}


def choose_threshold(
    y_true: Any,
    salience: Any,
    groups: Any,
    *,
    objective: str | Objective = DEFAULT_OBJECTIVE,
    judged: Any = None,
    verdicts: Any = None,
    test_size: float | int = 0.3,
    cv: int | None = None,
    cv_repeats: int = 1,
    random_state: Any = 0,
    n_boot: int = 0,
    confidence: float = 0.95,
    intervals: Literal["all", "threshold"] = "all",
    **objective_options: float | None,
) -> ThresholdChoice:
    """Choose a salience threshold on training verdicts and score it on held-out ones.

    Candidate thresholds are the distinct training saliences; ties go to the highest.
    Counts are :func:`~truss_lab.evaluate._sweep.sweep`'s. Without ``cv``: one split,
    :func:`split_by_verdict` with ``test_size``. With ``cv=k``: :func:`verdict_kfold`
    folds (``cv_repeats`` times, each with fresh folds); the result's ``test`` is
    out-of-fold, ``folds`` has each fold's threshold and held-out metrics, and
    ``threshold`` is the choice on every verdict. The split, folds and bootstraps use
    independent streams of ``random_state``.

    Parameters
    ----------
    y_true : array of 0/1, shape (n,)
        Gold label of each candidate lesson (1 = useful).
    salience : array of float, shape (n,)
        Score of each candidate (NaN: never kept).
    groups : array, shape (n,)
        Verdict of each candidate: the unit of the split and the resampling.
    objective : str or Objective, default "f1"
        ``"f1"``, ``"fbeta"`` (with ``beta``), ``"precision_floor"`` (with
        ``min_precision``), ``"budget"`` (with ``max_per_verdict``), ``"cost"`` (with
        ``cost_fp``, ``cost_fn``) or an :class:`~truss_lab.evaluate._objective.Objective`.
    judged : array of bool, shape (n,), optional
        Which candidates have a truth value (default all), as in ``sweep``.
    verdicts : array, optional
        Every verdict processed (default the distinct ``groups``), as in ``sweep``.
    test_size : float or int, default 0.3
        Share (or number) of verdicts held out, without ``cv``.
    cv : int, optional
        Folds of cross-validation by verdict (None: one split).
    cv_repeats : int, default 1
        Repeats of the cross-validation, each with fresh folds.
    random_state : int or numpy.random.Generator, default 0
        Seed of the split, the folds and the bootstraps.
    n_boot : int, default 0
        Verdict-bootstrap replicates (0: no intervals). With ``n_boot > 0`` the
        result carries two labelled intervals of the held-out metrics (threshold
        fixed; choice re-made, see :func:`choice_intervals`) and the interval of
        the choice.
    confidence : float, default 0.95
        Level of the intervals.
    intervals : {"all", "threshold"}, default "all"
        What ``n_boot`` bootstraps: ``all`` (the held-out intervals, the interval of
        the choice and its bootstrap) or ``threshold`` (the interval of the choice
        alone, the same numbers from the same draws, without the held-out intervals
        and the bootstrap's table: a slice's own threshold needs no more).
    **objective_options
        ``beta``, ``min_precision``, ``max_per_verdict``, ``cost_fp``, ``cost_fn``
        (None: the :class:`~truss_lab.evaluate._objective.Objective` default).

    Returns
    -------
    ThresholdChoice
        The threshold, its train and held-out metrics, the split (and folds), the
        intervals when ``n_boot`` is given. If no threshold satisfies the objective,
        warns and carries NaN metrics.

    Raises
    ------
    BadInputError
        Bad arrays (as ``sweep``), an unknown objective or a missing option, a split
        that leaves a side without verdicts.

    See Also
    --------
    choose_run_threshold : The same for a run in the store, judged by a truth.
    Objective : What "the best threshold" means.
    sweep : Every threshold's metrics.

    Examples
    --------
    >>> cands = tl.scored_candidates(store, "good")
    >>> choice = tl.choose_threshold(cands["y"], cands["s"], cands["verdict_hash"], cv=5)
    >>> choice.threshold, choice.split["n_verdicts"], round(choice.test["f1"], 3)
    (0.18, 537, 0.714)
    >>> strict = tl.choose_threshold(cands["y"], cands["s"], cands["verdict_hash"],
    ...                              objective="precision_floor", min_precision=0.85)
    >>> strict.threshold > choice.threshold
    True

    Many parameters because it mirrors scikit-learn's model-selection options (the split:
    test_size, cv, cv_repeats, random_state; the bootstrap: n_boot, confidence) beside the
    rows (y_true, salience, groups, judged, verdicts) and the objective.
    """
    obj = make_objective(objective, **objective_options)
    data = _Data.of(y_true, salience, groups, judged, verdicts)
    return _choose(data, obj, test_size=test_size, cv=cv, cv_repeats=cv_repeats,
                   random_state=random_state, n_boot=n_boot, confidence=confidence,
                   intervals=intervals)


def choose_threshold_ppi(
    data: PPIData,
    *,
    objective: str | Objective = DEFAULT_OBJECTIVE,
    verdicts: Any = None,
    test_size: float | int = 0.3,
    cv: int | None = None,
    cv_repeats: int = 1,
    random_state: Any = 0,
    n_boot: int = 0,
    confidence: float = 0.95,
    intervals: Literal["all", "threshold"] = "all",
) -> ThresholdChoice:
    """:func:`choose_threshold` on prediction-powered counts
    (:func:`~truss_lab.evaluate._ppi.ppi_sweep`'s, lam = 1): the automated truth of
    every verdict corrected by the people's answers (``data``:
    :func:`~truss_lab.evaluate._ppi.ppi_data`).

    The same rules, on corrected counts: the threshold maximises the objective on the
    corrected tp, judged and positives (kept is exact) among the distinct automated
    scores; the split or folds are drawn over the verdicts in the order ``verdicts``
    gives (default the population's) exactly as the uncorrected choice draws them, so
    where people agree with the automated truth the choice is the uncorrected one. A
    side (training verdicts, a fold) is corrected by the people's answers on its own
    verdicts, each weighed by its inclusion probability in the whole sample (domain
    estimation: a fold's corrected count is unbiased for the people's count over the
    fold, and the folds' counts add up to the whole corrected count); a side with no
    people's answer is the automated count. Held-out metrics are the corrected counts
    of the held-out verdicts (pooled over folds), clipped to [0, 1]. Intervals resample
    the verdicts people answered for and the others each among themselves (within each
    side's strata): the choice's by :func:`~truss_lab.evaluate._ppi.ppi_bootstrap`.

    Parameters
    ----------
    data : PPIData
        The two truths of the run (:func:`~truss_lab.evaluate._ppi.ppi_data`).
    objective : str or Objective, default "f1"
        What the best threshold is.
    verdicts : array-like, optional
        The order the split or folds are drawn in (default the population's).
    test_size : float or int, default 0.3
        Share (or number) of verdicts held out, without ``cv``.
    cv : int, optional
        Folds of cross-validation by verdict.
    cv_repeats : int, default 1
        Repeats of the cross-validation.
    random_state : int or numpy.random.Generator, default 0
        Seed of the split, the folds and the bootstraps.
    n_boot : int, default 0
        Bootstrap replicates of the intervals (0: none).
    confidence : float, default 0.95
        The intervals' level.
    intervals : {"all", "threshold"}, default "all"
        What ``n_boot`` bootstraps, as :func:`choose_threshold` takes it.

    Returns
    -------
    ThresholdChoice
        As :func:`choose_threshold` returns it, on corrected counts.
    """
    obj = make_objective(objective)
    return _choose(_Data.of_ppi(data, verdicts), obj, test_size=test_size, cv=cv,
                   cv_repeats=cv_repeats, random_state=random_state, n_boot=n_boot,
                   confidence=confidence, intervals=intervals)


def _choose(data: _Data, obj: Objective, *, test_size: float | int, cv: int | None,
            cv_repeats: int, random_state: Any, n_boot: int, confidence: float,
            intervals: str = "all") -> ThresholdChoice:
    """The body of :func:`choose_threshold` and :func:`choose_threshold_ppi`."""
    if intervals not in ("all", "threshold"):
        raise BadInputError(f"intervals must be all or threshold, got {intervals!r}",
                            field="intervals")
    if n_boot:
        check_boot(n_boot, confidence)
    n_v = data.n_verdicts
    every = np.arange(len(data.y))
    streams = seed_streams(random_state)
    sides_masks, strata = _side_masks(n_v, test_size, cv, cv_repeats, streams)
    if data.people is not None:  # the people's verdicts and the others, each among themselves
        strata = [part for st in strata for part in (st[data.people[st]],
                                                      st[~data.people[st]])]
    sides, rows, fold_rows = _choose_sides(data, sides_masks, obj, cv)
    if cv is None:
        chosen, train, test, split, fit_idx = _one_split(data, sides_masks[0], sides[0],
                                                         rows[0], test_size, random_state)
    else:
        fit_idx = every
        chosen = data.choose(fit_idx, n_v, obj)
        train = data.at(fit_idx, n_v, chosen)
        test = _pooled(rows, data.n_rows(every) * cv_repeats,
                       data.n_pos(every) * cv_repeats, n_v * cv_repeats, chosen,
                       clip=data.w is not None)
        split = {"by": "verdict", "cv": int(cv), "cv_repeats": int(cv_repeats),
                 "random_state": random_state, "n_verdicts": n_v,
                 "n_candidates": data.n_rows(every),
                 "n_train_verdicts": n_v, "n_test_verdicts": n_v}
    _warn_undefined(data, obj, chosen, sides, fit_idx, sides_masks)
    boot = test_intervals = procedure_intervals = threshold_interval = None
    if n_boot and not np.isnan(chosen):
        fit_verdicts = np.flatnonzero(sides_masks[0][0] if cv is None
                                      else np.ones(n_v, dtype=bool))
        if intervals == "threshold":
            threshold_interval = _threshold_interval(data, obj, chosen, fit_idx, fit_verdicts,
                                                     streams, n_boot=n_boot,
                                                     confidence=confidence)
        else:
            boot, test_intervals, procedure_intervals = _intervals(
                data, obj, chosen, test, fit_idx, fit_verdicts, sides, strata, streams,
                n_boot=n_boot, confidence=confidence)
            threshold_interval = (boot.threshold_low, boot.threshold_high)
            boot = dataclasses.replace(boot, random_state=random_state)  # the seed
    return ThresholdChoice(
        threshold=chosen, objective=obj.describe(), train=train, test=test, split=split,
        test_intervals=test_intervals, threshold_interval=threshold_interval, bootstrap=boot,
        procedure_intervals=procedure_intervals,
        folds=pd.DataFrame(fold_rows) if cv is not None else None,
        confidence=float(confidence) if n_boot else None)


def _side_masks(n_verdicts: int, test_size: float | int, cv: int | None, cv_repeats: int,
                streams: dict[str, Any]
                ) -> tuple[list[tuple[np.ndarray, np.ndarray]], list[np.ndarray]]:
    """``(sides, strata)`` of a choice: the (train, test) verdict masks of one split or
    of every fold of every repeat, and the verdicts the bootstraps resample within."""
    if cv is None:
        is_test = _test_verdicts(n_verdicts, test_size, streams["split"])
        return [(~is_test, is_test)], [np.flatnonzero(~is_test), np.flatnonzero(is_test)]
    if (isinstance(cv_repeats, (bool, np.bool_))
            or not isinstance(cv_repeats, (int, np.integer)) or cv_repeats < 1):
        raise BadInputError(f"cv_repeats must be an int >= 1, got {cv_repeats!r}",
                            field="cv_repeats")
    sides_masks = []
    for _ in range(cv_repeats):
        fold = _verdict_folds(n_verdicts, cv, streams["folds"])
        sides_masks += [(fold != k, fold == k) for k in range(cv)]
    return sides_masks, [np.flatnonzero(np.ones(n_verdicts, dtype=bool))]


def _one_split(data: _Data, masks: tuple[np.ndarray, np.ndarray], side: Side,
               held_out: dict[str, float], test_size: float | int, random_state: Any
               ) -> tuple[float, dict[str, float], dict[str, float], dict[str, Any],
                          np.ndarray]:
    """``(threshold, train metrics, test metrics, split, training candidates)`` of a
    choice on one train/test split: the side's own choice."""
    tr_idx, n_tr = data.on(masks[0])
    te_idx, n_te = data.on(masks[1])
    split: dict[str, Any] = {
        "by": "verdict", "test_size": test_size, "random_state": random_state,
        "n_train_verdicts": n_tr, "n_test_verdicts": n_te,
        "n_train_candidates": data.n_rows(tr_idx), "n_test_candidates": data.n_rows(te_idx)}
    return side.threshold, data.at(tr_idx, n_tr, side.threshold), held_out, split, tr_idx


def _choose_sides(data: _Data, sides_masks: list[tuple[np.ndarray, np.ndarray]],
                  obj: Objective, cv: int | None
                  ) -> tuple[list[Side], list[dict[str, float]], list[dict[str, Any]]]:
    """Each side's choice on its training verdicts and its metrics on its held-out
    ones: ``(sides, held-out rows, fold rows)`` (fold rows only with ``cv``)."""
    sides, rows, fold_rows = [], [], []
    for i, (tr_v, te_v) in enumerate(sides_masks):
        tr_idx, n_tr = data.on(tr_v)
        te_idx, n_te = data.on(te_v)
        t = data.choose(tr_idx, n_tr, obj)
        sides.append(Side(train=tr_v, test=te_v, threshold=t))
        row = data.at(te_idx, n_te, t)
        rows.append(row)
        if cv is not None:
            fold_rows.append({"repeat": i // cv, "fold": i % cv, "n_train_verdicts": n_tr,
                              "n_test_verdicts": n_te, **row})
    return sides, rows, fold_rows


def _warn_undefined(data: _Data, obj: Objective, chosen: float, sides: list[Side],
                    fit_idx: np.ndarray,
                    sides_masks: list[tuple[np.ndarray, np.ndarray]]) -> None:
    """Warn (at :func:`choose_threshold`'s caller) of a NaN choice and of a side
    without positives."""
    if np.isnan(chosen) or any(np.isnan(sd.threshold) for sd in sides):
        warnings.warn(
            f"no training threshold satisfies the objective ({obj.describe()}); "
            "the choice is NaN" + (" in some folds" if not np.isnan(chosen) else ""),
            UndefinedMetricWarning,
            stacklevel=3,
        )
    for side_name, idx in (("train", fit_idx), ("test", np.concatenate(
            [data.on(te)[0] for _, te in sides_masks]))):
        if not data.y[idx].any():
            warnings.warn(
                f"the {side_name} verdicts have no positive labels: recall is undefined (NaN)",
                UndefinedMetricWarning,
                stacklevel=3,
            )


def _intervals(data: _Data, obj: Objective, chosen: float, test: dict[str, float],
               fit_idx: np.ndarray, fit_verdicts: np.ndarray, sides: list[Side],
               strata: list[np.ndarray], streams: dict[str, Any], *, n_boot: int,
               confidence: float) -> tuple[BootstrapResult, pd.DataFrame, pd.DataFrame]:
    """``(bootstrap of the fitting verdicts, held-out intervals with the threshold
    fixed, with the choice re-made)`` of a choice (see :func:`choice_intervals`)."""
    y, s, jm, codes = data.y, data.s, data.jm, data.codes
    weights = None if data.w is None or data.written is None else (data.w, data.written)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        fit_idx, fit_ppi, grid = _fit(data, obj, chosen, fit_idx, fit_verdicts)
        if fit_ppi is not None:
            boot = _ppi_choice_bootstrap(fit_ppi, grid, obj, streams, n_boot=n_boot,
                                         confidence=confidence)
        else:  # uncorrected, or no people's answer among the training verdicts
            boot = bootstrap_metrics(
                y[fit_idx], s[fit_idx], codes[fit_idx], thresholds=grid,
                n_boot=n_boot, confidence=confidence, random_state=streams["choice"],
                objective=obj, judged=jm[fit_idx], verdicts=fit_verdicts,
            )
        test_intervals, procedure_intervals = choice_intervals(
            y, s, jm, codes, data.n_verdicts, sides=sides, strata=strata, obj=obj,
            threshold=chosen, point=test, n_boot=n_boot, confidence=confidence,
            rng=streams["bootstrap"], weights=weights)
    return boot, test_intervals, procedure_intervals


def _ppi_choice_bootstrap(fit_ppi: Any, grid: np.ndarray, obj: Objective,
                          streams: dict[str, Any], *, n_boot: int,
                          confidence: float) -> BootstrapResult:
    """The bootstrap of a corrected choice on its fitting verdicts (the ``choice`` stream)."""
    # lam = 1: the choice is made on classic PPI counts (_Data.of_ppi), so its
    # bootstrap re-makes that choice; ppi_bootstrap's default tunes lam, whose
    # choice can fall outside the interval of this one.
    return ppi_bootstrap(fit_ppi, thresholds=grid, n_boot=n_boot, confidence=confidence,
                         random_state=streams["choice"], objective=obj, lam=1.0)


def _threshold_interval(data: _Data, obj: Objective, chosen: float, fit_idx: np.ndarray,
                        fit_verdicts: np.ndarray, streams: dict[str, Any], *, n_boot: int,
                        confidence: float) -> tuple[float, float]:
    """The interval of the choice :func:`_intervals` gives (``threshold_low``,
    ``threshold_high`` of its bootstrap, from the same stream), without the rest."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        fit_idx, fit_ppi, grid = _fit(data, obj, chosen, fit_idx, fit_verdicts)
        if fit_ppi is not None:
            boot = _ppi_choice_bootstrap(fit_ppi, grid, obj, streams, n_boot=n_boot,
                                         confidence=confidence)
            return boot.threshold_low, boot.threshold_high
        return choice_interval(data.y[fit_idx], data.s[fit_idx], data.codes[fit_idx],
                               thresholds=grid, n_boot=n_boot, confidence=confidence,
                               random_state=streams["choice"], objective=obj,
                               judged=data.jm[fit_idx], verdicts=fit_verdicts)


def _fit(data: _Data, obj: Objective, chosen: float, fit_idx: np.ndarray,
         fit_verdicts: np.ndarray) -> tuple[np.ndarray, PPIData | None, np.ndarray]:
    """``(rows, correction, grid)`` the choice's bootstrap resamples: the fitting rows
    (written ones only under a correction: the people's rows, the automated rows'
    duplicates, aside), the correction on the fitting verdicts and the replicates' grid."""
    fit_ppi = _fit_ppi(data, fit_verdicts)
    if data.w is not None and data.written is not None:
        fit_idx = fit_idx[data.written[fit_idx]]
    return fit_idx, fit_ppi, boot_grid(data.s[fit_idx], [chosen], obj)


def _fit_ppi(data: _Data, fit_verdicts: np.ndarray) -> PPIData | None:
    """The people's correction restricted to the training verdicts (positions), each
    sampled verdict keeping its inclusion probability (domain estimation); None without
    a correction or when people answered for none of them."""
    p = data.ppi
    if p is None or data.vlist is None:
        return None
    if len(fit_verdicts) == data.n_verdicts:
        return p
    return ppi_on_verdicts(p, data.vlist[fit_verdicts])
