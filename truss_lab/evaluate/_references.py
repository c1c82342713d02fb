"""Reference lessons as the truth of a run: which lessons match, what was missed.

Definitions (README, "Reference lessons"):

- A verdict is **annotated** when at least one annotator wrote a reference
  line for it (a ``"none"`` line counts: the verdict teaches nothing). Only
  annotated verdicts the run processed are evaluated; the rest are left out.
- A verdict's **references** are the union over annotators of their reference
  ids (ids name the lesson, so ``r2`` of two annotators is one reference
  worded twice; a lesson's similarity to it is its best over the wordings).
  ``annotator=`` keeps one annotator's references instead.
- Each valid lesson is **matched** or not by
  :func:`~truss_lab.score._matching.match_lessons` (greedy in descending score,
  ties by lesson index, one-to-one): the flag is the same at every threshold.
- At threshold t: **kept** = valid lessons with score >= t (NaN never kept);
  **precision(t)** = matched kept / kept; **recall(t)** = matched kept /
  references of the annotated verdicts. A reference no kept lesson matches
  is a **miss**, also on a verdict where the extractor wrote nothing or whose
  completion did not parse; a duplicate of a matched lesson is a false
  positive.
- A verdict the matcher could not score (a NaN similarity: a judge matcher's
  malformed answer) is **left out** like an unannotated one and counted
  (``counts["verdicts_unmatched"]``), never scored as if judged.

So the sweep stays one sort plus cumulative sums: :class:`ReferenceTruth`
holds one row per valid lesson (``y`` = matched) plus one row per reference
nobody matched (``y`` = 1, score NaN: never kept, so always a miss), and
:func:`~truss_lab.evaluate._sweep.sweep` of those rows gives exactly the
definitions above. Every other evaluation of (y, score, verdict) arrays
(threshold choice, bootstrap, comparison) takes the same rows.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..core._errors import BadInputError
from ..score._matching import Matcher, match_lessons, match_threshold_of
from ..store._store import Store
from ._sweep import UndefinedMetricWarning, sweep
from ._truth import _score_values, run_info

__all__ = [
    "ReferenceTruth",
    "judge_lessons",
    "reference_agreement",
    "reference_sweep",
    "reference_truth",
    "run_references",
]

def run_references(store: Store, references: Any = None) -> pd.DataFrame:
    """Reference lessons as a FORMATS.md §4 frame: from the store's
    ``reference_lessons`` table (default), a JSONL path, or a DataFrame.
    ``annotator`` is ``""`` where none was given."""
    if references is None:
        df = store.sql(
            "SELECT verdict_hash, reference_id, text, evidence, annotator "
            "FROM reference_lessons ORDER BY verdict_hash, annotator, reference_id"
        ).df()
    elif isinstance(references, pd.DataFrame):
        df = references.copy()
        if "annotator" not in df.columns:
            df["annotator"] = ""
        if "evidence" not in df.columns:
            df["evidence"] = [[] for _ in range(len(df))]
    elif isinstance(references, str | os.PathLike):
        from ..ingest._references import read_references

        df, errors = read_references(references)
        if errors:
            raise BadInputError(f"{len(errors)} bad reference line(s); the first: {errors[0]}",
                                source=str(references))
    else:
        raise BadInputError(
            f"references must be None, a path or a DataFrame, got {type(references)}")
    df["annotator"] = df["annotator"].fillna("").astype(str)
    return df


def reference_agreement(references: pd.DataFrame) -> pd.DataFrame:
    """How far annotators agree on what each verdict teaches, per annotator pair.

    On the verdicts both annotators of a pair annotated, compares the SETS of
    reference ids each wrote (a ``"none"`` line is the empty set), which
    assumes ids name the lesson across annotators (as in the bundled sample).
    One row per pair: ``annotator_a, annotator_b, n_common`` (verdicts both
    annotated), ``both_none`` (both say it teaches nothing),
    ``same_set`` (share of common verdicts with identical id sets),
    ``n_a, n_b`` (references each wrote there), ``n_both`` (ids both wrote)
    and ``id_agreement`` = n_both / (ids either wrote), NaN without any.
    """
    refs = references.assign(annotator=references["annotator"].fillna("").astype(str),
                             reference_id=references["reference_id"].astype(str),
                             verdict_hash=references["verdict_hash"].astype(str))
    real = refs[refs["reference_id"] != "none"]
    sets = {a: g.groupby("verdict_hash")["reference_id"].agg(frozenset).to_dict()
            for a, g in real.groupby("annotator")}
    annotated = {a: set(g["verdict_hash"]) for a, g in refs.groupby("annotator")}
    names = sorted(annotated)
    rows = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            common = annotated[a] & annotated[b]
            empty: frozenset[str] = frozenset()
            sa = [sets.get(a, {}).get(v, empty) for v in common]
            sb = [sets.get(b, {}).get(v, empty) for v in common]
            n_both = sum(len(x & y) for x, y in zip(sa, sb, strict=True))
            n_either = sum(len(x | y) for x, y in zip(sa, sb, strict=True))
            rows.append({
                "annotator_a": a, "annotator_b": b, "n_common": len(common),
                "both_none": sum(not x and not y for x, y in zip(sa, sb, strict=True)),
                "same_set": (np.mean([x == y for x, y in zip(sa, sb, strict=True)])
                             if common else np.nan),
                "n_a": sum(map(len, sa)), "n_b": sum(map(len, sb)), "n_both": n_both,
                "id_agreement": n_both / n_either if n_either else np.nan,
            })
    cols = ["annotator_a", "annotator_b", "n_common", "both_none", "same_set", "n_a", "n_b",
            "n_both", "id_agreement"]
    return pd.DataFrame(rows, columns=cols)


@dataclass(frozen=True, eq=False)
class ReferenceTruth:
    """One run judged against reference lessons.

    ``rows`` has one row per valid lesson of an annotated verdict (``kind``
    ``"lesson"``), one per reference no lesson matched (``kind`` ``"miss"``) and
    one for each annotated verdict with neither (``kind`` ``"verdict"``: y 0,
    never kept, so it only counts in per-verdict rates), ordered by verdict
    seq, then lessons by lesson index, then misses by reference id. Columns:
    ``kind, candidate_id, verdict_seq, verdict_hash, extractor_id,
    lesson_index`` (``<NA>`` but for a lesson), ``text``,
    ``reference_id`` (what the lesson matched, or the missed reference),
    ``similarity``, ``y`` (uint8: 1 for a matched lesson and for a miss) and
    ``s`` (the score; NaN for a miss: never kept). ``n_references`` is recall's
    denominator; ``n_verdicts`` the annotated verdicts the run processed;
    ``n_lessons`` the valid lessons on them. ``counts`` adds: verdicts the run
    processed, annotated ones with no lesson (empty or unparseable
    completions), lessons of unannotated verdicts left out.
    """

    run_id: str
    rows: pd.DataFrame = field(repr=False)
    n_references: int
    n_verdicts: int
    n_lessons: int
    match_threshold: float
    counts: dict[str, Any]
    verdicts: list[str] = field(default_factory=list, repr=False)
    """The annotated verdicts the run processed, in verdict order."""

    @property
    def lessons(self) -> pd.DataFrame:
        """The lesson rows only (one per valid lesson of an annotated verdict)."""
        return self.rows[self.rows["kind"] == "lesson"].reset_index(drop=True)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(y, s, verdict_hash)`` of every row: what sweep, choice and bootstrap take."""
        r = self.rows
        return (r["y"].to_numpy(dtype=np.uint8), r["s"].to_numpy(dtype=np.float64),
                r["verdict_hash"].to_numpy(dtype=object))


def _processed_verdicts(store: Store, run_id: str) -> pd.DataFrame:
    """Every verdict the run processed (seq, hash): run_verdicts, error rows, candidates."""
    return store.sql(
        "SELECT verdict_hash, min(verdict_seq) AS verdict_seq FROM ("
        " SELECT verdict_hash, verdict_seq FROM run_verdicts WHERE run_id = ?"
        " UNION ALL SELECT verdict_hash, verdict_seq FROM verdict_errors WHERE run_id = ?"
        " UNION ALL SELECT verdict_hash, verdict_seq FROM candidates WHERE run_id = ?"
        ") GROUP BY verdict_hash", [run_id, run_id, run_id]).df()


def reference_truth(
    store: Store,
    run_id: str,
    *,
    references: Any = None,
    score: str = "salience",
    matcher: Matcher | None = None,
    match_threshold: float | None = None,
    annotator: str | None = None,
) -> ReferenceTruth:
    """Match the valid lessons of ``run_id`` to the reference lessons of its verdicts.

    ``references``: None (the store's ``reference_lessons``), a §4 JSONL path or
    a frame. ``score`` orders the greedy assignment and is what a sweep
    thresholds (a candidates column or a stored scorer). ``matcher`` defaults
    to :class:`~truss_lab.score._matching.LexicalMatcher`; ``match_threshold``
    to the matcher's own (:func:`~truss_lab.score._matching.match_threshold_of`).
    A verdict the matcher could not score is left out and counted
    (``counts["verdicts_unmatched"]``, with a warning). ``annotator`` keeps
    one annotator's references (default: the union over annotators). Raises
    :class:`BadInputError` when no verdict of the run is annotated.
    """
    run_info(store, run_id)
    refs = run_references(store, references)
    if annotator is not None:
        refs = refs[refs["annotator"] == annotator]
    processed = _processed_verdicts(store, run_id)
    annotated = set(refs["verdict_hash"].astype(str))
    verdicts = processed[processed["verdict_hash"].isin(annotated)]
    if verdicts.empty:
        who = f" by annotator {annotator!r}" if annotator is not None else ""
        raise BadInputError(
            f"run {run_id!r} has no verdict with reference lessons{who} to evaluate "
            "(load them with `truss-lab ingest references`, or pass references=)",
            field="references")
    cands = store.sql(
        "SELECT * FROM candidates WHERE run_id = ? AND valid ORDER BY verdict_seq, lesson_index",
        [run_id]).df()
    s_all = _score_values(run_id, cands, score)
    in_ann = cands["verdict_hash"].isin(annotated).to_numpy()
    les = cands[in_ann].reset_index(drop=True).assign(s=s_all[in_ann])
    keep = set(verdicts["verdict_hash"])
    extractor = str(run_info(store, run_id)["extractor_id"])
    seq = dict(zip(verdicts["verdict_hash"], verdicts["verdict_seq"], strict=True))
    rows, n_refs = judge_lessons(les, refs[refs["verdict_hash"].isin(keep)], verdict_seq=seq,
                                 extractor_id=extractor, matcher=matcher,
                                 match_threshold=match_threshold)
    unmatched = set(rows.attrs.get("unmatched_verdicts", ()))
    if unmatched:
        warnings.warn(f"{len(unmatched)} verdict(s) of run {run_id!r} left out: the matcher "
                      "could not score their lessons (see the matcher's errors)", stacklevel=2)
        verdicts = verdicts[~verdicts["verdict_hash"].isin(unmatched)]
        keep -= unmatched
    lesson_rows = rows[rows["kind"] == "lesson"]
    with_lessons = set(lesson_rows["verdict_hash"])
    counts = {
        "verdicts_processed": len(processed), "verdicts_annotated": len(verdicts),
        "verdicts_without_lessons": len(keep - with_lessons),
        "lessons": len(lesson_rows), "matched": int(lesson_rows["y"].sum()),
        "references": n_refs, "lessons_unannotated": int((~in_ann).sum()),
        "annotator": annotator or "union", "verdicts_unmatched": len(unmatched),
        "matcher": str(getattr(matcher, "name", "lexical" if matcher is None else matcher)),
    }
    return ReferenceTruth(run_id=run_id, rows=rows, n_references=n_refs,
                          n_verdicts=len(verdicts), n_lessons=len(lesson_rows),
                          match_threshold=match_threshold_of(matcher, match_threshold),
                          counts=counts,
                          verdicts=verdicts.sort_values("verdict_seq")["verdict_hash"].tolist())


def judge_lessons(
    lessons: pd.DataFrame,
    references: pd.DataFrame,
    *,
    verdict_seq: dict[str, int] | None = None,
    extractor_id: str | None = None,
    matcher: Matcher | None = None,
    match_threshold: float | None = None,
) -> tuple[pd.DataFrame, int]:
    """The rows of :class:`ReferenceTruth` from one run's lessons and the references
    of its annotated verdicts (pure: no store). Returns ``(rows, n_references)``.

    ``lessons`` has ``verdict_hash, lesson_index, text, evidence, s`` (and
    optionally ``candidate_id, verdict_seq, extractor_id``); ``references``
    the §4 columns. ``verdict_seq`` orders verdicts (default: first seen).
    A verdict with a lesson the matcher could not score (NaN similarity) is
    left out; ``rows.attrs["unmatched_verdicts"]`` lists them.
    """
    les = lessons.reset_index(drop=True)
    matched = match_lessons(les, references, matcher=matcher,
                            threshold=match_threshold_of(matcher, match_threshold), score="s")
    unmatched = sorted(set(matched.loc[matched["similarity"].isna(), "verdict_hash"].astype(str)))
    if unmatched:
        matched = matched[~matched["verdict_hash"].astype(str).isin(unmatched)]
        matched = matched.reset_index(drop=True)
        references = references[~references["verdict_hash"].astype(str).isin(unmatched)]
    n = len(matched)
    real = references[references["reference_id"].astype(str) != "none"]
    all_refs = real[["verdict_hash", "reference_id"]].astype(str).drop_duplicates()
    got = matched.loc[matched["matched"], ["verdict_hash", "reference_id"]].astype(str)
    missed = all_refs.merge(got.assign(_m=True), on=["verdict_hash", "reference_id"],
                            how="left")
    missed = missed[missed["_m"].isna()].drop(columns="_m")
    if verdict_seq is None:
        order = pd.unique(pd.concat([les["verdict_hash"].astype(str),
                                     references["verdict_hash"].astype(str)]))
        verdict_seq = {v: i for i, v in enumerate(order)}

    def col(name: str, default: Any) -> Any:
        return matched[name].astype(object) if name in matched.columns else default

    lesson_rows = pd.DataFrame({
        "kind": "lesson", "candidate_id": col("candidate_id", None),
        "verdict_seq": matched["verdict_hash"].astype(str).map(verdict_seq).astype("int64"),
        "verdict_hash": matched["verdict_hash"].astype(str),
        "extractor_id": col("extractor_id", extractor_id),
        "lesson_index": pd.array(matched["lesson_index"], dtype="Int64"),
        "text": matched["text"].astype(object),
        "reference_id": matched["reference_id"].astype(object),
        "similarity": matched["similarity"].astype(np.float64),
        "y": matched["matched"].to_numpy(dtype=np.uint8),
        "s": matched["s"].to_numpy(dtype=np.float64),
    }, index=pd.RangeIndex(n))
    miss_rows = pd.DataFrame({
        "kind": "miss", "candidate_id": None,
        "verdict_seq": missed["verdict_hash"].map(verdict_seq).astype("int64"),
        "verdict_hash": missed["verdict_hash"], "extractor_id": extractor_id,
        "lesson_index": pd.array([pd.NA] * len(missed), dtype="Int64"), "text": None,
        "reference_id": missed["reference_id"].astype(object), "similarity": np.nan,
        "y": np.ones(len(missed), dtype=np.uint8), "s": np.full(len(missed), np.nan),
    })
    # An annotated verdict with neither lessons nor references (it teaches
    # nothing and the extractor wrote nothing) still counts in per-verdict
    # rates and is resampled by the bootstrap: one placeholder row, never kept.
    seen = set(lesson_rows["verdict_hash"]) | set(miss_rows["verdict_hash"])
    quiet = [v for v in pd.unique(references["verdict_hash"].astype(str)) if v not in seen]
    quiet_rows = pd.DataFrame({
        "kind": "verdict", "candidate_id": None,
        "verdict_seq": pd.Series(quiet, dtype=object).map(verdict_seq).astype("int64"),
        "verdict_hash": pd.Series(quiet, dtype=object), "extractor_id": extractor_id,
        "lesson_index": pd.array([pd.NA] * len(quiet), dtype="Int64"), "text": None,
        "reference_id": None, "similarity": np.nan,
        "y": np.zeros(len(quiet), dtype=np.uint8), "s": np.full(len(quiet), np.nan),
    })
    rows = pd.concat([lesson_rows, miss_rows, quiet_rows], ignore_index=True)
    rows["_k"] = rows["kind"].map({"lesson": 0, "miss": 1, "verdict": 2})
    rows = rows.sort_values(["verdict_seq", "_k", "lesson_index", "reference_id"],
                            kind="stable").drop(columns="_k").reset_index(drop=True)
    rows.attrs["unmatched_verdicts"] = unmatched
    return rows, len(all_refs)


def reference_sweep(truth: ReferenceTruth, *, thresholds: Any = None) -> pd.DataFrame:
    """The sweep of :func:`~truss_lab.evaluate._sweep.sweep` judged by references.

    Same columns; for threshold row ``i``: ``kept`` = lessons with score >=
    threshold, ``tp`` = those matched, ``fp`` = kept - tp, ``fn`` = references
    not matched by a kept lesson (misses), ``precision`` = tp / kept,
    ``recall`` = tp / ``truth.n_references``, ``f1``; ``kept_per_verdict``
    divides by the annotated verdicts the run processed (also those with no
    lesson) and ``write_rate`` by the lessons on them.
    """
    y, s, g = truth.arrays()
    with warnings.catch_warnings():
        # Miss rows are NaN-scored positives: the sweep's "never kept" warning
        # would only restate that; real degeneracies are warned below.
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        df = sweep(y, s, groups=g, thresholds=thresholds)
    if truth.n_references == 0:
        warnings.warn("no references on the annotated verdicts: recall is undefined (NaN)",
                      UndefinedMetricWarning, stacklevel=2)
    with np.errstate(divide="ignore", invalid="ignore"):
        df["kept_per_verdict"] = df["kept"].to_numpy() / truth.n_verdicts
        df["write_rate"] = df["kept"].to_numpy() / truth.n_lessons
    return df
