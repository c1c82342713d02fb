"""Which truth a run is judged by: ``truth="labels" | "references" | "judge:<name>"``.

One resolver, :func:`resolve`, turns the ``truth=`` every per-run evaluation
takes (sweep, choice, calibration, bootstrap bands, comparison, the threshold
proposal, the Displays, the explorer, the CLI's ``--truth``) into a
:class:`Truth`:

- ``"labels"``: the human gold labels (majority; judges left out);
- ``"references"``: reference lessons of the run's verdicts
  (:mod:`~truss_lab.evaluate._references`);
- ``"judge:<name>"``: the labels of ONE judge annotator, alone, as the truth.
  ``<name>`` is the annotator as stored (``judge:sim-judge-v1@judge-v1``), the
  part after ``judge:`` (``sim-judge-v1@judge-v1``), or the model alone when one
  prompt version of it labelled. A judge's labels are then counted exactly as
  gold labels are (:mod:`~truss_lab.evaluate._run_truth`: kept, positives,
  ties, transfer to equal lessons), so every output has the same columns.

An unknown name is a :class:`BadInputError` listing the valid ones, including
the judges that have labels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..core._errors import BadInputError
from ..store._store import Store
from ._references import ReferenceTruth, reference_truth
from ._run_truth import DEFAULT_TIES, RunTruth, labels_truth
from ._truth import JUDGE_PREFIX, labelled_candidates, run_labels

__all__ = ["TRUTH_HELP", "Truth", "judge_labels", "judged_by", "resolve", "resolve_truth"]

#: What ``truth=`` accepts, for help texts and errors.
TRUTH_HELP = "labels, references or judge:NAME"


@dataclass(frozen=True)
class Truth:
    """A resolved truth source.

    ``name`` is what results and evidence record (``labels``, ``references`` or
    the judge's full annotator ``judge:<model>@<prompt>``); ``kind`` is how it is
    counted (``labels`` for gold labels and a judge, ``references``); ``labels``
    is what the label-counting path takes as ``labels=``: the caller's source
    for gold labels, the judge's rows (annotator dropped, one voice) for a judge.
    """

    name: str
    kind: str
    labels: Any = None

    @property
    def judge(self) -> str | None:
        """The judge annotator, or None for labels and references."""
        return self.name if self.name.startswith(JUDGE_PREFIX) else None

    def missing(self, run_id: str) -> str:
        """The message of a run with nothing to evaluate by this truth."""
        if self.judge:
            return (f"run {run_id!r} has no lesson labelled by {self.judge} to evaluate "
                    "(label them with `truss-lab judge RUN`)")
        return (f"run {run_id!r} has no labelled candidate to evaluate "
                "(load gold labels with `truss-lab ingest labels`, or pass labels=)")


def _judges(store: Store, labels: Any) -> list[str]:
    lab = run_labels(store, labels, include_judges=True)
    if "annotator" not in lab.columns or lab.empty:
        return []
    ann = lab["annotator"].dropna().astype(str)
    return sorted(set(ann[ann.str.startswith(JUDGE_PREFIX)]))


def _unknown(store: Store, truth: Any, labels: Any) -> BadInputError:
    judges = _judges(store, labels)
    have = (f"; judges with labels: {', '.join(judges)}" if judges
            else "; no judge has labels (`truss-lab judge RUN` makes some)")
    return BadInputError(f"truth must be one of {TRUTH_HELP}{have}; got {truth!r}",
                         field="truth")


def judge_labels(store: Store, judge: str, labels: Any = None) -> pd.DataFrame:
    """The label rows of annotator ``judge`` (from the store or ``labels``) as a
    FORMATS.md §3 frame without the annotator: one voice, the truth of ``truth="judge:…"``."""
    lab = run_labels(store, labels, include_judges=True)
    if "annotator" not in lab.columns:
        return lab.iloc[:0]
    mine = lab[lab["annotator"].astype("string").eq(judge).fillna(False).to_numpy(dtype=bool)]
    # Dropping the name keeps the rows out of the judge filter of run_labels; they
    # are the only voice, so the majority is the judge's label.
    return mine.drop(columns="annotator").reset_index(drop=True)


def resolve(store: Store, truth: Any, *, labels: Any = None) -> Truth:
    """The :class:`Truth` named by ``truth`` (a string or an already resolved Truth)."""
    if isinstance(truth, Truth):
        return truth
    if truth == "labels":
        return Truth("labels", "labels", labels)
    if truth == "references":
        return Truth("references", "references", None)
    if not isinstance(truth, str) or not truth.startswith(JUDGE_PREFIX):
        raise _unknown(store, truth, labels)
    name = truth[len(JUDGE_PREFIX):]
    full = name if name.startswith(JUDGE_PREFIX) else JUDGE_PREFIX + name
    judges = _judges(store, labels)
    if full not in judges:
        # The model alone, when one prompt version of it labelled.
        same = [j for j in judges if j.startswith(full + "@")]
        if len(same) != 1:
            raise _unknown(store, truth, labels)
        full = same[0]
    return Truth(full, "labels", judge_labels(store, full, labels))


def resolve_truth(
    store: Store, run_ids: list[str], truth: str | None, *, labels: Any = None
) -> tuple[str, str]:
    """The truth to judge ``run_ids`` by, and why: ``truth`` itself when given
    (resolved: a judge by its full name); ``None`` or ``"auto"`` means labels when
    every run has a directly labelled candidate, else references."""
    if truth is not None and truth != "auto":
        return resolve(store, truth, labels=labels).name, "as asked"
    for rid in run_ids:
        # Direct labels only: a run labelled by transfer alone is mostly unlabelled.
        if not labelled_candidates(store, rid, labels=labels, transfer=None)["labelled"].any():
            return "references", f"run {rid!r} has no gold labels"
    return "labels", "every run has gold labels"


def judged_by(
    store: Store, run_id: str, truth: Any = "labels", *, labels: Any = None,
    references: Any = None, score: str = "salience", ties: str = DEFAULT_TIES,
    matcher: Any = None,
) -> tuple[Truth, RunTruth | ReferenceTruth]:
    """``(truth, judged run)``: the resolved truth and the run judged by it -- a
    :class:`RunTruth` for gold labels or a judge (counted alike), a
    :class:`ReferenceTruth` for references. Refuses a run with nothing judged."""
    t = resolve(store, truth, labels=labels)
    if t.kind == "references":
        return t, reference_truth(store, run_id, references=references, score=score,
                                 matcher=matcher)
    rt = labels_truth(store, run_id, labels=t.labels, score=score, ties=ties)
    if not rt.candidates["judged"].any():
        raise BadInputError(t.missing(run_id), field="labels" if not t.judge else "truth")
    return t, rt
