"""Which correction a run's automated truth gets: :func:`run_correction`.

The one place ``correct=`` (ppi, none, auto) is resolved for a run judged by a truth
(:mod:`~truss_lab.evaluate._truth`): every evaluation (sweep, bands, choice,
comparison, calibration) asks it, so they correct alike. The estimator is
:mod:`~truss_lab.evaluate._ppi`'s.
"""

from __future__ import annotations

from typing import Any

from ..core._errors import BadInputError
from ..store._store import Store
from ._matches import people_matches
from ._ppi import PPIData, check_correct, labels_ppi, reference_ppi
from ._truth import ReferenceTruth, RunTruth, Truth, run_references

__all__ = ["run_correction"]


def run_correction(store: Store, truth: Truth, judged: RunTruth | ReferenceTruth, run_id: str,
                   correct: Any = "auto", *, score: str = "salience", ties: str = "exclude",
                   labels: Any = None, match_labels: Any = None) -> PPIData | None:
    """The people's correction of ``run_id`` judged by ``truth`` (``judged``), or None.

    ``correct``: ``none`` (None back), ``ppi`` (refused when the truth is the people's
    own, gold labels, or when people answered for no verdict the run is judged on),
    ``auto`` (ppi when people answered for some, else None). References are corrected
    by the people's match labels (``match_labels``: the store's table, a §5 path or a
    frame), a judge by the gold labels (``labels``)."""
    mode = check_correct(correct)
    if mode == "none":
        return None
    if truth.kind == "references":
        assert isinstance(judged, ReferenceTruth)
        people = people_matches(store, match_labels, run_id=run_id)
        refs = truth.references if truth.references is not None else run_references(store)
        data = reference_ppi(judged, refs, people) if len(people) else None
        answers = ("match labels (draw verdicts with `truss-lab queue RUN --kind match`, "
                   "fill them in, `truss-lab ingest match-labels`)")
    elif truth.judge:
        assert isinstance(judged, RunTruth)
        gold = Truth.resolve(store, "labels", [run_id], labels=labels)
        data = labels_ppi(judged, gold.counted(run_id, score=score, ties=ties))
        answers = "gold labels (`truss-lab ingest labels`)"
    else:
        if mode == "ppi":
            raise BadInputError("the labels truth is the people's own: nothing to correct "
                                "(correct='ppi' corrects references or judge:NAME)",
                                field="correct")
        return None
    if data is None and mode == "ppi":
        raise BadInputError(f"people answered for no verdict run {run_id!r} is judged on: "
                            f"correct='ppi' needs {answers}", field="correct")
    return data
