"""What every display shares: lazy matplotlib, figures that never cut labels off, the
ADR default threshold and the sweep row at a threshold."""

from __future__ import annotations

from typing import Any

import pandas as pd

from truss_lab.core._threshold import DEFAULT_MIN_SALIENCE

__all__ = ["DEFAULT_THRESHOLD", "_axes", "_figure", "_pyplot", "_row_at"]

_HINT = "pip install 'truss_lab[notebook]'"

#: The ADR 0011 default ``extraction_min_salience``: the plots carry no copy of the number.
DEFAULT_THRESHOLD: float = DEFAULT_MIN_SALIENCE


def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(f"plotting needs matplotlib: {_HINT}") from exc
    return plt


def _figure(figsize: tuple[float, float], *, dpi: float | None = None) -> Any:
    """A bare matplotlib Figure, for PNGs and widget images.

    A bare Figure renders through Agg without pyplot, so no display (and no
    global backend switch or figure list) is ever needed, and nothing is shown
    twice inline in a notebook.
    """
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(f"plotting needs matplotlib: {_HINT}") from exc
    return Figure(figsize=figsize, dpi=dpi, layout="constrained")


def _axes(ax: Any) -> Any:
    if ax is None:
        # constrained layout: axis labels and legends are never cut off.
        _, ax = _pyplot().subplots(layout="constrained")
    return ax


def _row_at(df: pd.DataFrame, threshold: float) -> pd.Series | None:
    """The sweep row whose kept set is the one at ``threshold``: the smallest sweep
    threshold >= it (no candidate scores in between). None when nothing is kept."""
    at = df[df["threshold"] >= threshold]
    if not len(at):
        return None
    return at.loc[at["threshold"].idxmin()]
