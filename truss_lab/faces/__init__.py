"""What a researcher touches: the CLI (``truss-lab``), displays, widgets, notebook helpers
and the demo. Faces hold no logic of their own: everything they show is a library call."""

from __future__ import annotations

import typing

from ..core._lazy import attach as _attach

if typing.TYPE_CHECKING:
    # Imported on first use (core/_lazy.py): importing the package stays cheap, so the
    # command line starts at once. These lines are the exports' one list of homes.
    from ._display import (
        CalibrationDisplay,
        ComparisonDisplay,
        PrecisionRecallDisplay,
        SliceDisplay,
        SweepDisplay,
        frontier_plot,
    )
    from ._notebook import SAMPLE as SAMPLE_DIR
    from ._notebook import copy_store, load_sample, notebook_store, run_sample_extractions
    from ._report import write_report
    from ._widgets import LabellingWidget, LessonBrowser, ThresholdExplorer

__getattr__, __dir__ = _attach(__name__, __file__)


__all__ = [
    "SAMPLE_DIR",
    "CalibrationDisplay",
    "ComparisonDisplay",
    "LabellingWidget",
    "LessonBrowser",
    "PrecisionRecallDisplay",
    "SliceDisplay",
    "SweepDisplay",
    "ThresholdExplorer",
    "copy_store",
    "frontier_plot",
    "load_sample",
    "notebook_store",
    "run_sample_extractions",
    "write_report",
]
