"""What the report judges lessons by: the one place its ``truth=`` becomes arguments.

``truth`` is ``"labels"`` (gold labels on the lessons), ``"references"``
(reference lessons of the verdicts, matched by
:func:`~truss_lab.score._matching.match_lessons`), ``"judge:NAME"`` (the labels
of the judge annotator ``judge:NAME``) or ``"auto"`` (labels when every run has
some, else references: :func:`~truss_lab.evaluate._truth_source.resolve_truth`).
Every section of the report calls the evaluation with :meth:`ReportTruth.kw`,
so a truth source the evaluation learns is wired here, once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..core._errors import BadInputError
from ..evaluate._judge_agreement import judge_names
from ..evaluate._truth import JUDGE_PREFIX, run_labels
from ..evaluate._truth_source import resolve_truth
from ..store._store import Store

__all__ = ["TRUTH_HELP", "ReportTruth", "check_report_truth", "report_truth"]

# The truth sources besides judge:NAME.
TRUTHS = ("labels", "references")

TRUTH_HELP = ("What lessons are judged by in the sweep, calibration and comparison: labels "
              "(gold labels on them), references (reference lessons of their verdicts, "
              "`truss-lab schema references`), judge:NAME (the labels of judge annotator "
              "judge:NAME, `truss-lab judge`) or auto (labels when every run has some, else "
              "references; the report says which).")


@dataclass(frozen=True)
class ReportTruth:
    """The truth a report uses: its ``name`` (as asked, resolved from auto), ``why``
    (one phrase for the header) and, for a judge, that judge's label rows."""

    name: str
    why: str
    judge_labels: pd.DataFrame | None = None

    def kw(self) -> dict[str, Any]:
        """Keyword arguments of sweep_run, choose_run_threshold and compare_runs."""
        if self.judge_labels is not None:
            # The evaluation has no judge truth source yet: the judge's rows are
            # passed as the gold labels (one annotator: its label is the majority).
            # Once sweep_run takes truth="judge:NAME", this is {"truth": self.name}.
            return {"truth": "labels", "labels": self.judge_labels}
        return {"truth": self.name}

    def calibration_kw(self) -> dict[str, Any] | None:
        """Keyword arguments of calibration_run, or None when it cannot judge by this
        truth (it takes gold labels only: no ``truth=`` yet)."""
        if self.name == "references":
            return None
        return {"labels": self.judge_labels}

    @property
    def label(self) -> str:
        """The truth and why, for the report header."""
        return f"{self.name} ({self.why})"


def check_report_truth(truth: str) -> str:
    """``truth`` if it is auto, a truth source or ``judge:NAME``; else BadInputError."""
    if truth == "auto" or truth in TRUTHS or (
            truth.startswith(JUDGE_PREFIX) and len(truth) > len(JUDGE_PREFIX)):
        return truth
    raise BadInputError(f"truth must be auto, {', '.join(TRUTHS)} or judge:NAME, got {truth!r}",
                        field="truth")


def _judge_rows(store: Store, name: str) -> pd.DataFrame:
    lab = run_labels(store, include_judges=True)
    if "annotator" in lab.columns:
        lab = lab[(lab["annotator"].astype("string").fillna("") == name).to_numpy(dtype=bool)]
    if lab.empty:
        known = ", ".join(judge_names(store)) or "none"
        raise BadInputError(f"no label rows of judge {name!r} (judges in the store: {known}); "
                            "label a run with `truss-lab judge`", field="truth")
    # Renamed, or the label readers would leave the judge out as they do by default.
    return lab.assign(annotator="judge").reset_index(drop=True)


def report_truth(store: Store, run_ids: list[str], truth: str) -> ReportTruth:
    """Resolve ``truth`` (see the module docstring) for ``run_ids``."""
    truth = check_report_truth(truth)
    if truth.startswith(JUDGE_PREFIX):
        return ReportTruth(truth, "as asked", _judge_rows(store, truth))
    return ReportTruth(*resolve_truth(store, run_ids, None if truth == "auto" else truth))
