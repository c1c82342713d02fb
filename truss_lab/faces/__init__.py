"""What a researcher touches: the CLI (``truss-lab``), displays, widgets, notebook helpers
and the demo. Faces hold no logic of their own: everything they show is a library call."""

from __future__ import annotations

import importlib
from typing import Any

from ._display import (
    CalibrationDisplay,
    ComparisonDisplay,
    PrecisionRecallDisplay,
    SweepDisplay,
    frontier_plot,
)
from ._notebook import SAMPLE as SAMPLE_DIR
from ._notebook import copy_store, load_sample, notebook_store, run_sample_extractions
from ._report import write_report

#: Each widget and the module that holds it. Widgets need ipywidgets (the [notebook]
#: extra), so they are imported on first use.
WIDGETS = {
    "LabellingWidget": "_widgets",
    "LessonBrowser": "_widgets",
    "ThresholdExplorer": "_widgets",
}


def __getattr__(name: str) -> Any:
    if name in WIDGETS:
        return getattr(importlib.import_module(f".{WIDGETS[name]}", __name__), name)
    raise AttributeError(f"module 'truss_lab.faces' has no attribute {name!r}")


__all__ = [
    "SAMPLE_DIR",
    "CalibrationDisplay",
    "ComparisonDisplay",
    "LabellingWidget",
    "LessonBrowser",
    "PrecisionRecallDisplay",
    "SweepDisplay",
    "ThresholdExplorer",
    "copy_store",
    "frontier_plot",
    "load_sample",
    "notebook_store",
    "run_sample_extractions",
    "write_report",
]
