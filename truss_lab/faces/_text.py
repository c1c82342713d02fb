"""Text for the terminal: a sweep as a fixed-width table, a threshold choice, a table of runs.

The CLI (``truss-lab sweep``, ``truss-lab runs``) and ``make demo`` print these.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..evaluate._choose import ThresholdChoice

__all__ = ["SUMMARY_THRESHOLDS", "format_choice", "format_sweep", "runs_text"]

#: Thresholds at which text summaries show a sweep.
SUMMARY_THRESHOLDS = (0.3, 0.5, 0.6, 0.7, 0.8, 0.9)


def format_sweep(df: pd.DataFrame) -> str:
    """A fixed-width text table of a sweep frame (threshold, kept, precision, recall, F1,
    kept per verdict)."""
    cols = [c for c in ("threshold", "kept", "tp", "fp", "precision", "recall", "f1",
                        "kept_per_verdict") if c in df.columns]
    head = "  ".join(f"{c:>16}" if c == "kept_per_verdict" else f"{c:>9}" for c in cols)
    lines = [head]
    for r in df[cols].itertuples(index=False):
        cells = []
        for c, v in zip(cols, r, strict=True):
            width = 16 if c == "kept_per_verdict" else 9
            cells.append(f"{int(v):>{width}d}" if c in ("kept", "tp", "fp")
                         else f"{v:>{width}.3f}")
        lines.append("  ".join(cells))
    return "\n".join(lines)


def format_choice(choice: ThresholdChoice) -> str:
    """The chosen threshold, its bootstrap interval, its train / held-out metrics and the
    held-out intervals, each saying what it covers (threshold fixed; choice re-made)."""
    sp = choice.split
    ci = ""
    if choice.threshold_interval is not None:
        lo, hi = choice.threshold_interval
        ci = f"  (bootstrap interval of the choice [{lo:.3f}, {hi:.3f}])"
    if choice.cv:
        reps = f" x {sp['cv_repeats']} repeats" if sp.get("cv_repeats", 1) > 1 else ""
        how = (f"cross-validated by verdict: {sp['cv']} folds{reps} of {sp['n_verdicts']} "
               f"verdicts (random_state={sp['random_state']})")
        sides = ("in-sample", "held-out (out-of-fold)")
    else:
        how = (f"split by verdict: {sp['n_train_verdicts']} train / {sp['n_test_verdicts']} "
               f"held-out verdicts (test_size={sp['test_size']}, "
               f"random_state={sp['random_state']})")
        sides = ("train", "held-out")
    lines = [f"chosen threshold: {choice.threshold:.4g}{ci}",
             f"objective: {choice.objective}; {how}"]
    if choice.folds is not None:
        spread = choice.threshold_spread
        lines.append("thresholds per fold: " + ", ".join(
            f"{t:.4g}" for t in choice.fold_thresholds)
            + (f" (min {spread['min']:.4g}, max {spread['max']:.4g}, sd {spread['std']:.3g})"
               if spread else ""))
    iv = choice.test_intervals.iloc[0] if choice.test_intervals is not None else None
    for m in ("precision", "recall", "f1", "kept_per_verdict"):
        tr, te = choice.train.get(m, np.nan), choice.test.get(m, np.nan)
        band = ""
        if iv is not None and f"{m}_low" in iv.index:
            band = f" [{iv[f'{m}_low']:.3f}, {iv[f'{m}_high']:.3f}]"
        lines.append(f"  {m:<17} {sides[0]} {tr:.3f}   {sides[1]} {te:.3f}{band}")
    lines += choice.interval_lines()
    return "\n".join(lines)


def runs_text(runs: pd.DataFrame, cols: list[str]) -> str:
    """``cols`` of a :func:`summarize_runs` frame as a text table for people: the
    counts' ``n_`` prefix (the column names in tables and JSON) is dropped."""
    shown = runs[cols]
    return shown.rename(columns=lambda c: c.removeprefix("n_")).to_string(index=False)
