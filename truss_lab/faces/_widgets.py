"""What the Jupyter widgets share: the lazy ipywidgets import, display, cell formatting.

The widgets themselves (one module each) only wire library calls together:
:class:`~truss_lab.faces._threshold_explorer.ThresholdExplorer` (``sweep``,
``SweepDisplay``), :class:`~truss_lab.faces._lesson_browser.LessonBrowser`
(``query_memory``, ``get_memory_entry``, ``get_entry``, ``verified_verdict``)
and :class:`~truss_lab.faces._labelling.LabellingWidget` (``append_labels``);
what they show is something a researcher could compute in a cell. They are
plain Python objects holding ipywidgets, so they are driven headlessly in
tests (``explorer.set_threshold(0.8)``, ``labeller.label(True)``) and
displayed in a notebook by ending a cell with the object.

ipywidgets and matplotlib are imported lazily: ``pip install 'truss_lab[notebook]'``.
Stable CSS classes (``truss-threshold-slider``, ``truss-metrics``,
``truss-lesson-select``, ``truss-signature-ok``/``-bad``, ``truss-label-useful`` …)
let browser tests find the parts.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

_HINT = "pip install 'truss_lab[notebook]'"


def _widgets() -> Any:
    try:
        import ipywidgets
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(f"the notebook widgets need ipywidgets: {_HINT}") from exc
    return ipywidgets


def _display(widget: Any) -> None:
    from IPython.display import display

    display(widget)


def _fmt(v: Any) -> str:
    if isinstance(v, float | np.floating):
        return "nan" if math.isnan(v) else f"{v:.3f}"
    return str(v)


def _table_html(df: pd.DataFrame, css: str) -> str:
    # to_html escapes cell text by default; lesson texts are model output.
    return df.to_html(index=False, classes=css, float_format=lambda v: f"{v:.3f}",
                      na_rep="", border=0)
