"""The result of a threshold choice (:class:`ThresholdChoice`) and how it reads."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from truss_lab.evaluate._bootstrap import BootstrapResult

__all__ = ["INTERVAL_LABELS", "ThresholdChoice"]

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

    def _sides(self) -> tuple[str, str]:
        sp = self.split
        if self.cv:
            reps = sp.get("cv_repeats", 1)
            rep = f" x {reps} repeats" if reps > 1 else ""
            return (f"all {sp['n_verdicts']} verdicts, in-sample",
                    f"out-of-fold, {sp['cv']} folds{rep}")
        return (f"{sp['n_train_verdicts']} verdicts", f"{sp['n_test_verdicts']} verdicts")

    def interval_lines(self) -> list[str]:
        """One line per held-out interval, each saying what it covers."""
        lines = []
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
        head = html.escape(
            f"threshold = {self.threshold:.4g} ({self.objective}); split: "
            + ", ".join(f"{k}={v}" for k, v in self.split.items())
        )
        if self.threshold_interval is not None:
            lo, hi = self.threshold_interval
            head += html.escape(f"; bootstrap interval of the choice: [{lo:.4g}, {hi:.4g}]")
        notes = "".join(f"<br>{html.escape(line)}" for line in self.interval_lines())
        table = self.to_frame().to_html(float_format=lambda v: f"{v:.4g}")
        folds = ("" if self.folds is None
                 else self.folds.to_html(index=False, float_format=lambda v: f"{v:.4g}"))
        return f"<div><p><b>ThresholdChoice</b>: {head}{notes}</p>{table}{folds}</div>"
