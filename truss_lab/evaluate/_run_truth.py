"""The one definition of what a run's evaluation counts, and the truth it is judged by.

A *truth source* is a function ``(store, run_id, *, labels, score, ties) ->
RunTruth``: per-candidate truth plus the per-verdict counts. Every per-run
evaluation (sweep, compare, the CLI report) counts from a :class:`RunTruth`,
so the definitions below are written once:

- **kept** at threshold t: every candidate the gate would write, i.e. valid
  with ``score >= t`` -- labelled, tied or unlabelled alike;
- **tp / fp**: kept candidates whose truth is useful / not useful
  (unlabelled ones, and ties under ``ties="exclude"``, have no truth);
- **positives** (recall's denominator): every candidate whose truth is useful,
  including those the parser dropped (they can never be written: a miss);
- **kept per verdict** = kept / every verdict the run processed (table
  ``run_verdicts``, also verdicts that yielded no candidate);
- **write rate** = kept / every candidate the run proposed (dropped ones too).

Ties (annotators split evenly) follow ``ties``: ``"exclude"`` (default: no
truth, still kept), ``"adjudicate"`` (the label of the annotator named
:data:`ADJUDICATOR` decides; a tie it did not label stays without truth) or
``"half"`` (a tie counts half useful, half not). ``"half"`` keeps every count
a whole number by counting in half-lessons: each candidate becomes two rows of
the same verdict and score -- a tie one useful and one not, any other two
equal copies -- and :attr:`RunTruth.count_scale` is 2, by which the reported
counts (kept, tp, fp, fn, kept per verdict) are divided; ratios (precision,
recall, F1, write rate) are unchanged by the doubling, and a verdict's two
copies always travel together (they share the verdict).
:attr:`RunTruth.counts` says how many candidates were unlabelled, tied and
dropped, and the policy used, in every result built from it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, get_args

import numpy as np
import pandas as pd

from ..core._errors import BadInputError
from ..store._store import Store
from ._transfer import DEFAULT_TRANSFER
from ._truth import _score_values, labelled_candidates, run_labels

__all__ = ["ADJUDICATOR", "TIES", "RunTruth", "TruthSource", "labels_truth", "whole_lessons"]

TiesPolicy = Literal["exclude", "half", "adjudicate"]
TIES: tuple[str, ...] = get_args(TiesPolicy)
DEFAULT_TIES: TiesPolicy = "exclude"
#: The annotator whose label settles a tie under ``ties="adjudicate"``.
ADJUDICATOR = "adjudicator"


@dataclass(frozen=True, eq=False)
class RunTruth:
    """One run's candidates with their truth, and the counts every metric divides by.

    ``candidates`` has one row per candidate the run proposed (valid or
    dropped), ordered by verdict seq and lesson index: ``candidate_id,
    verdict_hash, extractor_id, lesson_index, valid``, ``s`` (the thresholded
    score; NaN for dropped or unscored candidates: never kept), ``y`` (uint8
    truth, 0 where there is none) and ``judged`` (bool: has a truth value).
    ``n_verdicts`` is every verdict the run processed. ``counts``: candidates,
    valid, dropped, dropped_useful, labelled, tied, tied_judged, unlabelled,
    verdicts, and the ``ties`` policy (all in lessons, never doubled).
    ``count_scale`` is how many rows of ``candidates`` make one lesson: 1, or 2
    under ``ties="half"`` (every candidate twice; a tie once useful, once not),
    so a count over the rows divided by ``count_scale`` is in lessons.
    """

    run_id: str
    candidates: pd.DataFrame = field(repr=False)
    n_verdicts: int
    verdicts: list[str] = field(repr=False)
    counts: dict[str, Any]
    count_scale: int = 1

    def sweep_inputs(self) -> dict[str, Any]:
        """Keyword arguments of :func:`~truss_lab.evaluate._sweep.sweep` for this run."""
        c = self.candidates
        return {"y_true": c["y"].to_numpy(), "salience": c["s"].to_numpy(),
                "groups": c["verdict_hash"].to_numpy(dtype=object),
                "judged": c["judged"].to_numpy(), "n_verdicts": self.n_verdicts}

    def in_lessons(self, df: pd.DataFrame) -> pd.DataFrame:
        """A sweep frame of :meth:`sweep_inputs` with its counts (kept, tp, fp, fn,
        kept per verdict) in lessons: divided by :attr:`count_scale` (floats under
        ``ties="half"``; ratios need no change)."""
        if self.count_scale != 1:
            for c in ("kept", "tp", "fp", "fn", "kept_per_verdict"):
                if c in df.columns:
                    df[c] = df[c] / self.count_scale
        return df


class TruthSource(Protocol):
    """A function giving a run's :class:`RunTruth` (labels today; references, a judge later)."""

    def __call__(self, store: Store, run_id: str, *, labels: Any = ..., score: str = ...,
                 ties: str = ...) -> RunTruth: ...


def check_ties(ties: str) -> TiesPolicy:
    """``ties`` if it is a known policy, else :class:`BadInputError`."""
    if ties not in TIES:
        raise BadInputError(f"ties must be one of {', '.join(TIES)}, got {ties!r}", field="ties")
    return ties  # type: ignore[return-value]


def whole_lessons(ties: str, what: str) -> None:
    """Refuse ``ties="half"`` where the counting needs whole lessons (README:
    the budget objective, McNemar's per-verdict outcome, a calibrator's 0/1 fit)."""
    if ties == "half":
        raise BadInputError(
            f'ties="half" is a counting rule of sweep_run, not a label: {what} needs whole '
            'lessons (use ties="exclude" or "adjudicate")', field="ties")


def _adjudicated(store: Store, labels: Any) -> pd.DataFrame:
    """The adjudicator's labels keyed like the candidates (``label_adj``)."""
    lab = run_labels(store, labels)
    if "annotator" not in lab.columns:
        lab = lab.assign(annotator=None)
    adj = lab[lab["annotator"].astype("string") == ADJUDICATOR]
    return pd.DataFrame({
        "verdict_hash": adj["verdict_hash"].astype(str),
        "extractor_id": adj["extractor"].astype(str),
        "lesson_index": pd.to_numeric(adj["lesson_index"]).astype("int64"),
        "label_adj": pd.to_numeric(adj["useful"]).astype("int64"),
    }).drop_duplicates(["verdict_hash", "extractor_id", "lesson_index"], keep="last")


def labels_truth(
    store: Store, run_id: str, *, labels: Any = None, score: str = "salience",
    ties: str = DEFAULT_TIES, transfer: str | float | None = DEFAULT_TRANSFER,
) -> RunTruth:
    """The truth source of gold labels: majority label per candidate, ties by ``ties``;
    labels follow content to equal lessons of other extractors (``transfer``, see
    :func:`~truss_lab.evaluate._truth.labelled_candidates`)."""
    policy = check_ties(ties)
    df = labelled_candidates(store, run_id, labels=labels, valid_only=False,
                             transfer=transfer)
    valid = df["valid"].to_numpy(dtype=bool)
    s = _score_values(run_id, df, score)
    s = np.where(valid, s, np.nan)  # a dropped lesson is never written
    label = df["label"]
    judged = label.notna().to_numpy()
    y = label.fillna(0).to_numpy(dtype=np.uint8)
    tie = df["tie"].to_numpy(dtype=bool)
    tied_judged = 0
    if policy == "adjudicate" and tie.any():
        key = ["verdict_hash", "extractor_id", "lesson_index"]
        adj = df[key].assign(verdict_hash=df["verdict_hash"].astype(str),
                             extractor_id=df["extractor_id"].astype(str)).merge(
            _adjudicated(store, labels), on=key, how="left")["label_adj"].to_numpy()
        settle = tie & ~np.isnan(adj.astype(np.float64))
        y[settle] = adj[settle].astype(np.uint8)
        judged = judged | settle
        tied_judged = int(settle.sum())
    verdicts = [r[0] for r in store.sql(
        "SELECT verdict_hash FROM run_verdicts WHERE run_id = ? ORDER BY verdict_seq",
        [run_id]).fetchall()]
    # A run recorded before run_verdicts existed: its candidates' verdicts are all we know.
    verdicts = verdicts or [str(v) for v in pd.unique(df["verdict_hash"])]
    scale = 1
    if policy == "half":  # every tie has a truth: half useful, half not
        tied_judged, scale = int(tie.sum()), 2
    cands = pd.DataFrame({
        "candidate_id": df["candidate_id"], "verdict_hash": df["verdict_hash"].astype(str),
        "extractor_id": df["extractor_id"], "lesson_index": df["lesson_index"],
        "valid": valid, "s": s, "y": y, "judged": judged,
    })
    counts = {
        "candidates": len(df), "valid": int(valid.sum()), "dropped": int((~valid).sum()),
        "dropped_useful": int((~valid & judged & (y == 1)).sum()),
        "labelled": int(label.notna().sum()), "tied": int(tie.sum()),
        "tied_judged": tied_judged, "transferred": int(df["transferred"].sum()),
        "unlabelled": int((~label.notna().to_numpy() & ~tie).sum()),
        "verdicts": len(verdicts), "ties": policy,
    }
    if scale == 2:
        cands = _halves(cands, tie)
    return RunTruth(run_id=run_id, candidates=cands, n_verdicts=len(verdicts),
                    verdicts=verdicts, counts=counts, count_scale=scale)


def _halves(cands: pd.DataFrame, tie: np.ndarray) -> pd.DataFrame:
    """``cands`` counted in half-lessons: every row twice, the second copy of a
    tie judged not useful and the first useful (half of each), both judged.

    The copies stay next to each other (a stable sort on the row number), so
    the order by verdict seq and lesson index is kept."""
    first = cands.copy()
    first.loc[tie, "y"] = np.uint8(1)
    first.loc[tie, "judged"] = True
    second = first.copy()
    second.loc[tie, "y"] = np.uint8(0)
    both = pd.concat([first, second], keys=[0, 1], names=["copy", "row"]).reset_index()
    both = both.sort_values(["row", "copy"], kind="stable").drop(columns=["copy", "row"])
    return both.reset_index(drop=True)


#: The truth sources by name (``labels`` today; #9 adds references and a judge).
TRUTH_SOURCES: dict[str, Callable[..., RunTruth]] = {"labels": labels_truth}
