"""Which correction a run's automated truth gets: :func:`run_correction`.

The one place a truth's ``correct`` (ppi, none, auto) is resolved for a run judged by a truth
(:mod:`~truss_lab.evaluate._truth`): every evaluation (sweep, bands, choice,
comparison, calibration) asks it, so they correct alike. The estimator is
:mod:`~truss_lab.evaluate._ppi`'s.
"""

from __future__ import annotations

import warnings
from typing import Any

import pandas as pd

from ..core._errors import BadInputError
from ..store._store import Store
from ._matches import people_matches, run_match_labels
from ._people import unchecked_people, warn_unchecked
from ._ppi import (
    PartialLabelsWarning,
    PPIData,
    labels_ppi,
    partial_labels,
    partial_matches,
    reference_ppi,
)
from ._truth import ReferenceTruth, RunTruth, Truth, run_references

__all__ = ["run_correction", "runs_correction", "runs_correction_label", "runs_mode"]


def run_correction(store: Store, truth: Truth, judged: RunTruth | ReferenceTruth, run_id: str,
                   *, score: str = "salience") -> PPIData | None:
    """The people's correction of ``run_id`` judged by ``truth`` (``judged``), or None.

    ``truth.correct``: ``none`` (None back), ``ppi`` (refused when the truth is the
    people's own, gold labels, or when people answered for no verdict the run is judged
    on), ``auto`` (ppi when people answered for some, else None). Gold labels that cover
    a verdict in part (:func:`~truss_lab.evaluate._ppi.partial_labels`: a labelling
    queue's band), or match labels that do
    (:func:`~truss_lab.evaluate._ppi.partial_matches`), break the correction's design:
    ``ppi`` refuses them, ``auto`` leaves the run uncorrected with a
    :class:`~truss_lab.evaluate._ppi.PartialLabelsWarning` saying why. References are
    corrected by the people's match labels (``truth.match_labels``: the store's table, a
    §5 path or a frame), a judge by the gold labels (``truth.gold_labels``). A correction
    whose people were never checked against each other (no lesson answered by two of
    them) says so once per truth, in one line
    (:class:`~truss_lab.evaluate._people.PeopleUncheckedWarning`)."""
    mode = truth.correct
    if mode == "none":
        return None
    if truth.kind != "references" and not truth.judge_name:
        if mode == "ppi":
            raise BadInputError("the labels truth is the people's own: nothing to correct "
                                "(correct='ppi' corrects references or judge:NAME)",
                                field="correct")
        return None
    if truth.kind == "references":
        assert isinstance(judged, ReferenceTruth)
        people = _people(store, truth, run_id)
        why, field = (partial_matches(judged, people) if len(people) else None), "match_labels"
    else:
        assert isinstance(judged, RunTruth)
        why, field = partial_labels(judged, truth.gold().counted(run_id, score=score)), "labels"
    if why is not None:
        if mode == "auto":  # never a correction whose design the people's answers break
            warnings.warn(f"not corrected: {why}", PartialLabelsWarning, stacklevel=2)
            return None
        raise BadInputError(f"correct='ppi' refused: {why}", field=field)
    data = truth.memo(("correction", run_id, score),
                      lambda: _people_correction(store, truth, judged, run_id, score))
    if data is None and mode == "ppi":
        answers = (("match labels (draw verdicts with `truss-lab queue RUN --kind match`, "
                    "fill them in, `truss-lab ingest match-labels`)")
                   if truth.kind == "references" else "gold labels (`truss-lab ingest labels`)")
        raise BadInputError(f"people answered for no verdict run {run_id!r} is judged on: "
                            f"correct='ppi' needs {answers}", field="correct")
    if data is not None:
        # Once per run and truth (a sweep asks more than once; a comparison, per run).
        # The rows the correction read, not read again.
        truth.memo(("unchecked", run_id), lambda: warn_unchecked(unchecked_people(
            store, *(("match labels", _match_rows(store, truth)) if truth.kind == "references"
                     else ("gold labels", truth.gold().label_rows)),
            run_id, _extractor_of(judged))))
    return data


def _people(store: Store, truth: Truth, run_id: str) -> pd.DataFrame:
    """The people's answers on ``run_id``'s lessons (:func:`people_matches` of the truth's
    match labels), read once per run."""
    return truth.memo(("people", run_id), lambda: people_matches(
        store, _match_rows(store, truth), run_id=run_id, record=truth.record(run_id)))


def _match_rows(store: Store, truth: Truth) -> pd.DataFrame:
    """The truth's people's match labels (:func:`run_match_labels`), read once."""
    return truth.memo(("match rows",), lambda: run_match_labels(store, truth.match_labels))


def _people_correction(store: Store, truth: Truth, judged: RunTruth | ReferenceTruth,
                       run_id: str, score: str) -> PPIData | None:
    """The two truths of ``run_id`` (automated, and the people's where they answered), or
    None when people answered for none of its verdicts; once per run and score."""
    if truth.kind == "references":
        assert isinstance(judged, ReferenceTruth)
        people = _people(store, truth, run_id)
        refs = (truth.reference_rows if truth.reference_rows is not None
                else run_references(store))
        return reference_ppi(judged, refs, people) if len(people) else None
    assert isinstance(judged, RunTruth)
    return labels_ppi(judged, truth.gold().counted(run_id, score=score))


def runs_correction(store: Store, truth: Truth, run_ids: Any, *,
                    score: str = "salience") -> dict[str, PPIData | None]:
    """:func:`run_correction` of several runs judged side by side (a comparison, a
    ranking, a frontier), all or none: ``auto`` corrects every run when people answered
    for some verdict of each, else none of them (a corrected run beside an uncorrected
    one would compare two truths); ``ppi`` refuses a run without answers."""
    fixes = {rid: run_correction(store, truth, truth.judged(rid, score=score), rid,
                                 score=score)
             for rid in dict.fromkeys(run_ids)}
    if any(f is None for f in fixes.values()):
        return dict.fromkeys(fixes)
    return fixes


def runs_mode(fixes: dict[str, PPIData | None]) -> str:
    """The correction every run of ``fixes`` (:func:`runs_correction`) got: ``ppi`` or
    ``none``, what each run's own evaluation is then told."""
    return "ppi" if fixes and all(f is not None for f in fixes.values()) else "none"


def runs_correction_label(fixes: dict[str, PPIData | None]) -> str:
    """How outputs name the correction of several runs: ``none``, or ``ppi (people
    answered for 48 of 402 verdicts of A, 69 of 402 of B)``."""
    done = [(rid, f) for rid, f in fixes.items() if f is not None]
    if not done:
        return "none"
    parts = [f"{f.n_sampled} of {f.n_verdicts}{' verdicts' if i == 0 else ''} of {rid}"
             for i, (rid, f) in enumerate(done)]
    return f"ppi (people answered for {', '.join(parts)})"


def _extractor_of(judged: RunTruth | ReferenceTruth) -> str | None:
    """The extractor of the run ``judged`` holds (None: it holds no lesson)."""
    rows = judged.candidates if isinstance(judged, RunTruth) else judged.rows
    ids = rows["extractor_id"].dropna()
    return str(ids.iloc[0]) if len(ids) else None
