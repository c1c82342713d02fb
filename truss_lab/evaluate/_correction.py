"""Which correction a run's automated truth gets: :func:`run_correction`.

The one place ``correct=`` (ppi, none, auto) is resolved for a run judged by a truth
(:mod:`~truss_lab.evaluate._truth`): every evaluation (sweep, bands, choice,
comparison, calibration) asks it, so they correct alike. The estimator is
:mod:`~truss_lab.evaluate._ppi`'s.
"""

from __future__ import annotations

import warnings
from typing import Any

from ..core._errors import BadInputError
from ..store._store import Store
from ._matches import people_matches
from ._ppi import (
    PartialLabelsWarning,
    PPIData,
    check_correct,
    labels_ppi,
    partial_labels,
    partial_matches,
    reference_ppi,
)
from ._truth import DEFAULT_TIES, ReferenceTruth, RunTruth, Truth, run_references

__all__ = ["run_correction", "runs_correction", "runs_correction_label"]


def run_correction(store: Store, truth: Truth, judged: RunTruth | ReferenceTruth, run_id: str,
                   correct: Any = "auto", *, score: str = "salience", ties: str = "exclude",
                   labels: Any = None, match_labels: Any = None) -> PPIData | None:
    """The people's correction of ``run_id`` judged by ``truth`` (``judged``), or None.

    ``correct``: ``none`` (None back), ``ppi`` (refused when the truth is the people's
    own, gold labels, or when people answered for no verdict the run is judged on),
    ``auto`` (ppi when people answered for some, else None). Gold labels that cover a
    verdict in part (:func:`~truss_lab.evaluate._ppi.partial_labels`: a labelling
    queue's band) break the correction's design: ``ppi`` refuses them, ``auto`` leaves
    the run uncorrected with a :class:`~truss_lab.evaluate._ppi.PartialLabelsWarning`
    saying why. References are corrected
    by the people's match labels (``match_labels``: the store's table, a §5 path or a
    frame), a judge by the gold labels (``labels``)."""
    mode = check_correct(correct)
    if mode == "none":
        return None
    if truth.kind == "references":
        assert isinstance(judged, ReferenceTruth)
        people = people_matches(store, match_labels, run_id=run_id)
        refs = truth.references if truth.references is not None else run_references(store)
        why = partial_matches(judged, people) if len(people) else None
        if why is not None:
            if mode == "auto":  # never a correction whose design the answers break
                warnings.warn(f"not corrected: {why}", PartialLabelsWarning, stacklevel=2)
                return None
            raise BadInputError(f"correct='ppi' refused: {why}", field="match_labels")
        data = reference_ppi(judged, refs, people) if len(people) else None
        answers = ("match labels (draw verdicts with `truss-lab queue RUN --kind match`, "
                   "fill them in, `truss-lab ingest match-labels`)")
    elif truth.judge:
        assert isinstance(judged, RunTruth)
        gold = Truth.resolve(store, "labels", [run_id], labels=labels).counted(
            run_id, score=score, ties=ties)
        why = partial_labels(judged, gold)
        if why is not None:
            if mode == "auto":  # never a correction whose design the labels break
                warnings.warn(f"not corrected: {why}", PartialLabelsWarning, stacklevel=2)
                return None
            raise BadInputError(f"correct='ppi' refused: {why}", field="labels")
        data = labels_ppi(judged, gold)
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


def runs_correction(store: Store, truth: Truth, run_ids: Any, correct: Any = "auto", *,
                    score: str = "salience", ties: str = DEFAULT_TIES, matcher: Any = None,
                    labels: Any = None, match_labels: Any = None
                    ) -> dict[str, PPIData | None]:
    """:func:`run_correction` of several runs judged side by side (a comparison, a
    ranking, a frontier), all or none: ``auto`` corrects every run when people answered
    for some verdict of each, else none of them (a corrected run beside an uncorrected
    one would compare two truths); ``ppi`` refuses a run without answers."""
    mode = check_correct(correct)
    fixes = {rid: run_correction(store, truth, truth.judged(rid, score=score, ties=ties,
                                                            matcher=matcher),
                                 rid, mode, score=score, ties=ties, labels=labels,
                                 match_labels=match_labels)
             for rid in dict.fromkeys(run_ids)}
    if any(f is None for f in fixes.values()):
        return dict.fromkeys(fixes)
    return fixes


def runs_correction_label(fixes: dict[str, PPIData | None]) -> str:
    """How outputs name the correction of several runs: ``none``, or ``ppi (people
    answered for 48 of 402 verdicts of A, 69 of 402 of B)``."""
    done = [(rid, f) for rid, f in fixes.items() if f is not None]
    if not done:
        return "none"
    parts = [f"{f.n_sampled} of {f.n_verdicts}{' verdicts' if i == 0 else ''} of {rid}"
             for i, (rid, f) in enumerate(done)]
    return f"ppi (people answered for {', '.join(parts)})"
