"""Given thresholds mean what they show: grid points rounded to the decimal they were typed as.

The gate compares ``salience >= threshold`` exactly, so a grid point of
0.7000000000000001 (``np.linspace(0, 1, 101)[70]``) drops every salience of
exactly 0.70 while its row reads "0.7". :func:`snap_thresholds` rounds such
points, with a warning, and leaves the data's own saliences alone.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

__all__ = ["THRESHOLD_DIGITS", "ThresholdGridWarning", "snap_thresholds"]


class ThresholdGridWarning(UserWarning):
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
