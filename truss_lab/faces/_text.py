"""Text tables for people, without pandas: ``truss-lab runs`` prints one and starts at
once (issue 29: every command paid ~2 s of imports before it began)."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["runs_text", "text_table"]


def _cell(value: Any, col: str = "") -> str:
    """``value`` for people: seconds to 2 decimals, a rate per second and a count
    (``n_``) as whole numbers, other floats to 6 significant digits."""
    if value is None:
        return ""
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if col == "seconds" or col.endswith("_seconds"):
            return f"{value:.2f}"
        if col.endswith("_per_s") or col.startswith("n_"):
            return f"{value:.0f}"
        return f"{value:.6g}"
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def text_table(rows: list[dict[str, Any]], cols: list[str],
               headers: list[str] | None = None) -> str:
    """``cols`` of ``rows`` as right-aligned text columns under ``headers`` (default the
    column names); a list cell is comma-joined, a missing one empty."""
    heads = headers or cols
    cells = [[_cell(r.get(c), c) for c in cols] for r in rows]
    widths = [max([len(h), *(len(row[i]) for row in cells)]) for i, h in enumerate(heads)]
    lines = [" ".join(h.rjust(w) for h, w in zip(heads, widths, strict=True))]
    lines += [" ".join(v.rjust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(lines)


def runs_text(runs: Any, cols: list[str]) -> str:
    """``cols`` of :func:`~truss_lab.store.summarize_runs`' runs (a DataFrame, an Arrow
    table or a list of row dicts) as a text table: the counts' ``n_`` prefix (the
    column names in tables and JSON) is dropped."""
    if hasattr(runs, "to_pylist"):  # an Arrow table
        rows = runs.select(cols).to_pylist()
    elif hasattr(runs, "to_dict"):  # a DataFrame
        rows = runs[cols].to_dict(orient="records")
    else:
        rows = list(runs)
    return text_table(rows, cols, [c.removeprefix("n_") for c in cols])
