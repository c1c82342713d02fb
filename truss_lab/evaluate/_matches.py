"""People's match labels (Formats §5): the human truth a matcher is checked against.

:func:`run_match_labels` reads them (the store's ``match_labels`` table, a §5 CSV
path, or a frame), as :func:`~truss_lab.evaluate._truth.run_references` reads
reference lessons; :func:`people_matches` turns the rows into one answer per lesson
by majority over annotators, ties reported, never guessed.

A lesson's answer is the ``reference_id`` most of its annotators gave (``""``: none
of the verdict's references), each annotator one vote, an anonymous one (empty
``annotator``) one voice. When two or more answers share the top count the lesson is
**tied**: its ``reference_id`` is ``<NA>``, and it has no human truth.

The verdicts with match labels are a sample of the annotated verdicts (simple
random unless the file gave ``inclusion_probability``); every valid lesson of a
sampled verdict is answered (the ingest refuses a partial verdict).

**People as a matcher.** :class:`~truss_lab.evaluate._ppi.PeopleMatcher` turns those
answers into a matcher (similarity 1 to the reference a lesson's answer names, 0 to the
others; the prediction-powered correction builds the people's truth with it too), so the
people's truth goes through the very code the lexical, semantic and judge matchers go
through: :func:`~truss_lab.score._matching.match_lessons`' one-to-one greedy pass in
descending score (Formats §5: two lessons naming one reference make the later one a
duplicate, exactly as for a matcher's pairs) and
:func:`~truss_lab.evaluate._truth.reference_truth`'s rows (lessons, misses).
:func:`people_truth` is that truth on the people-matched verdicts of a run.

**A matcher against people.** :func:`match_agreement` (``truss-lab match-agreement``)
compares a matcher's assignment with the people's on the valid lessons people matched
(untied), on the verdicts people matched:

- **pair precision**: of the (lesson, reference) pairs the matcher made, the share
  people made too; **pair recall**: of the people's pairs, the share the matcher made;
- **kappa**: Cohen's kappa of the matched flag (the lesson counts as matched in the
  sweep, by the matcher / by people), the ``y`` a reference sweep counts;

each with a percentile interval from a bootstrap over verdicts, computed by
:func:`~truss_lab.evaluate._agreement.agreement_table`, the function behind a judge's
agreement with gold labels (``judge-agreement``) too. A verdict's counts are weighted
by ``1 / inclusion_probability`` when the match labels give it.
"""

from __future__ import annotations

import html
import os
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..core._errors import BadInputError
from ..ingest._fields import INCLUSION, MATCH_LABEL_FIELDS
from ..store._labels import match_label_rows
from ..store._runs import RunRecord, run_record
from ..store._store import Store
from ._agreement import CANDIDATE_KEY, agreement_table, kappa_counts
from ._ppi import PeopleMatcher
from ._sweep import UndefinedMetricWarning
from ._truth import MatcherLeftOutWarning, ReferenceTruth, reference_truth, run_references

__all__ = ["MATCH_COLUMNS", "MatchAgreement", "match_agreement", "people_matches",
           "people_truth", "run_match_labels"]

MATCH_COLUMNS: tuple[str, ...] = (*CANDIDATE_KEY, "reference_id", "n_annotators", "n_agree",
                                  "tied", INCLUSION)
"""The columns of :func:`people_matches`, in order."""


def run_match_labels(store: Store, match_labels: Any = None) -> pd.DataFrame:
    """Match labels as a Formats §5 frame: from the store's ``match_labels`` table
    (default), a §5 CSV path (read strictly and checked against the store as the ingest
    checks it: any bad row is a :class:`BadInputError` naming the first), or a frame.

    Columns ``verdict_hash, extractor, lesson_index, reference_id, annotator,
    inclusion_probability``; ``reference_id`` and ``annotator`` are ``""`` where none
    was given, ``inclusion_probability`` NaN where the file gave none.

    Parameters
    ----------
    store : Store
        The database.
    match_labels : path or pandas.DataFrame, optional
        A CSV path or a frame (None: the store's ``match_labels`` table).

    Returns
    -------
    pandas.DataFrame
        The rows (columns above).

    Raises
    ------
    BadInputError
        A bad row of the file (naming the first), a frame lacking a column.
    """
    if match_labels is None:
        df = match_label_rows(store)
    elif isinstance(match_labels, pd.DataFrame):
        missing = [c for c in MATCH_LABEL_FIELDS[:4] if c not in match_labels.columns]
        if missing:
            raise BadInputError(f"match labels lack column(s) {', '.join(missing)}; expected "
                                f"{', '.join(MATCH_LABEL_FIELDS)}", field=missing[0])
        df = match_labels.copy()
    elif isinstance(match_labels, str | os.PathLike):
        # The file reader loads only for a file (as _truth's readers do).
        from ..ingest._match_labels import check_match_labels, read_match_labels

        source = str(match_labels)
        df, errors = read_match_labels(match_labels)
        if not errors:
            checked = check_match_labels(store, df, source)
            df, errors = checked.rows, checked.errors
        if errors:
            raise BadInputError(f"{len(errors)} bad match label row(s); the first: {errors[0]}",
                                source=source)
        df = df.drop(columns="line")
    else:
        raise BadInputError("match_labels must be None, a path or a DataFrame, got "
                            f"{type(match_labels).__name__}", field="match_labels")
    for c in ("reference_id", "annotator"):
        df[c] = (df[c].astype(object).where(df[c].notna(), "").astype(str)
                 if c in df.columns else "")
    df[INCLUSION] = (pd.to_numeric(df[INCLUSION], errors="coerce").astype(np.float64)
                     if INCLUSION in df.columns else np.nan)
    df["verdict_hash"] = df["verdict_hash"].astype(str)
    df["extractor"] = df["extractor"].astype(str)
    df["lesson_index"] = df["lesson_index"].astype(np.int64)
    return df[[*MATCH_LABEL_FIELDS, INCLUSION]].reset_index(drop=True)


def people_matches(store: Store, match_labels: Any = None, *,
                   run_id: str | None = None, record: RunRecord | None = None
                   ) -> pd.DataFrame:
    """One answer per lesson people matched: the majority over annotators.

    ``match_labels``: as :func:`run_match_labels` takes it. ``run_id`` keeps the lessons
    of that run's extractor on the verdicts it processed. One row per lesson, sorted by
    key, with the columns of :data:`MATCH_COLUMNS`: ``verdict_hash, extractor,
    lesson_index``; ``reference_id`` (the answer most annotators gave, ``""`` = none of
    the verdict's references, ``<NA>`` on a tie); ``n_annotators`` (answers);
    ``n_agree`` (of them, the top answer's); ``tied`` (two or more answers share the top
    count: no truth, reported, not guessed); ``inclusion_probability`` (of the verdict,
    NaN for a simple random sample).

    Parameters
    ----------
    store : Store
        The database.
    match_labels : pandas.DataFrame or path, optional
        As :func:`run_match_labels` takes it.
    run_id : str, optional
        Keep that run's extractor's lessons on the verdicts it processed.
    record : RunRecord, optional
        The run as :func:`~truss_lab.store._runs.run_record` read it, when held.

    Returns
    -------
    pandas.DataFrame
        One row per lesson (above).
    """
    df = run_match_labels(store, match_labels)
    if run_id is not None:
        record = record if record is not None else run_record(store, run_id)
        processed = set(record.verdicts["verdict_hash"].astype(str))
        df = df[(df["extractor"] == record.extractor_id).to_numpy()
                & df["verdict_hash"].isin(processed).to_numpy()]
    if df.empty:
        return pd.DataFrame({
            "verdict_hash": pd.Series([], dtype=object), "extractor": pd.Series([], dtype=object),
            "lesson_index": np.array([], dtype=np.int64),
            "reference_id": pd.array([], dtype="string"),
            "n_annotators": np.array([], dtype=np.int64), "n_agree": np.array([], dtype=np.int64),
            "tied": np.array([], dtype=bool), INCLUSION: np.array([], dtype=np.float64)})
    votes = (df.groupby([*CANDIDATE_KEY, "reference_id"], sort=True).size()
             .rename("votes").reset_index())
    by = votes.groupby(CANDIDATE_KEY, sort=True)["votes"]
    votes["top"] = by.transform("max")
    votes["n_annotators"] = by.transform("sum")
    best = votes[votes["votes"] == votes["top"]]
    n_best = best.groupby(CANDIDATE_KEY, sort=True)["votes"].transform("size")
    best = best.assign(tied=n_best.to_numpy() > 1).drop_duplicates(CANDIDATE_KEY)
    out = best[CANDIDATE_KEY].reset_index(drop=True)
    tied = best["tied"].to_numpy(dtype=bool)
    ref = pd.array(best["reference_id"].astype(str).to_numpy(dtype=object), dtype="string")
    ref[tied] = pd.NA
    out["reference_id"] = ref
    out["n_annotators"] = best["n_annotators"].to_numpy(dtype=np.int64)
    out["n_agree"] = best["top"].to_numpy(dtype=np.int64)
    out["tied"] = tied
    p = df.groupby("verdict_hash")[INCLUSION].max()
    out[INCLUSION] = out["verdict_hash"].map(p).to_numpy(dtype=np.float64)
    return out[list(MATCH_COLUMNS)]


def _sampled(store: Store, run_id: str, match_labels: Any,
             references: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(people, references)``: the people's answers on ``run_id``'s lessons and the
    reference lessons of the verdicts they matched; refuses a run nobody matched."""
    people = people_matches(store, match_labels, run_id=run_id)
    if people.empty:
        raise BadInputError(
            f"no match labels on the lessons of run {run_id!r} (draw verdicts with `truss-lab "
            "queue RUN --kind match`, fill them in, `truss-lab ingest match-labels`)",
            field="match_labels")
    refs = run_references(store, references)
    return people, refs[refs["verdict_hash"].isin(set(people["verdict_hash"]))]


def people_truth(store: Store, run_id: str, match_labels: Any = None, *,
                 references: Any = None, score: str = "salience") -> ReferenceTruth:
    """``run_id`` judged by the people's match labels, on the verdicts they matched: the
    :class:`~truss_lab.evaluate._truth.ReferenceTruth` the automated truth gives (rows of
    lessons, misses and quiet verdicts; one-to-one in descending ``score``), with
    :class:`~truss_lab.evaluate._ppi.PeopleMatcher` as the matcher.
    ``counts["lessons_tied"]``: lessons whose annotators tied (they claim nothing here;
    :func:`match_agreement` leaves them out).

    Parameters
    ----------
    store : Store
        The database.
    run_id : str
        The run.
    match_labels : pandas.DataFrame or path, optional
        The people's match labels (default the store's).
    references : pandas.DataFrame or path, optional
        The reference lessons (default the store's).
    score : str, default "salience"
        The order of the one-to-one assignment.

    Returns
    -------
    ReferenceTruth
        The run judged by the people.

    Raises
    ------
    BadInputError
        Nobody matched a lesson of the run.
    """
    people, refs = _sampled(store, run_id, match_labels, references)
    truth = reference_truth(store, run_id, references=refs, score=score,
                            matcher=PeopleMatcher(people))
    truth.counts["lessons_tied"] = int(people["tied"].sum())
    truth.counts["matcher"] = "people"
    return truth


_MATCH_METRICS = ("precision", "recall", "kappa")


def _match_metrics(counts: np.ndarray) -> np.ndarray:
    """(3, ...) pair precision, pair recall and matched-flag kappa from the counts
    ``(same pair, matcher pairs, people pairs, both matched, matcher only, people only,
    neither)``."""
    same, auto, human, a, b, c, d = counts
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.stack([same / auto, same / human, kappa_counts(a, b, c, d)])


def _warn_no_pairs(run_id: str, n: int, matcher_pairs: int, people_pairs: int) -> None:
    """Say why pair precision (the matcher made no pair) or pair recall (people made none)
    is NaN: a NaN in the table never comes without a word."""
    for n_pairs, who, metric in ((matcher_pairs, "the matcher", "pair precision"),
                                 (people_pairs, "people", "pair recall")):
        if n_pairs == 0:
            warnings.warn(f"run {run_id!r}: {who} made no pair on the {n} lessons compared, "
                          f"so {metric} is undefined (NaN)", UndefinedMetricWarning,
                          stacklevel=3)


@dataclass(frozen=True, eq=False)
class MatchAgreement:
    """A matcher against people's match labels on the lessons people matched.

    ``table`` has one row per metric (``precision``, ``recall`` of the matcher's
    (lesson, reference) pairs; ``kappa`` of the matched flag) with ``value``, ``low``
    and ``high`` (the verdict-bootstrap percentile interval at ``confidence``).
    ``counts``: ``n`` lessons compared, ``verdicts``, ``pairs_same`` (pairs both made),
    ``pairs_matcher``, ``pairs_people``, the flag table ``both``, ``matcher_only``,
    ``people_only``, ``neither``, ``lessons_tied`` (left out), ``lessons_not_valid``
    (answers on lessons the parser dropped: no matcher sees them, left out) and
    ``verdicts_unmatched`` (the matcher could not score them: left out); weighted by
    ``1 / inclusion_probability`` when the labels give it (``weighted``). ``pairs`` has
    one row per lesson compared: its key, both references (``<NA>``: none) and flags.

    Parameters
    ----------
    matcher : str
        The matcher's name.
    run_id : str
        The run.
    table : pandas.DataFrame
        One row per metric (above).
    counts : dict
        The counts above.
    confidence : float
        The intervals' level.
    n_boot : int
        Their replicates.
    match_threshold : float
        The matcher's threshold.
    pairs : pandas.DataFrame
        One row per lesson compared (above).
    """

    matcher: str
    run_id: str
    table: pd.DataFrame
    counts: dict[str, Any]
    confidence: float
    n_boot: int
    match_threshold: float
    pairs: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)

    def __repr__(self) -> str:
        c = self.counts
        lines = [f"MatchAgreement(matcher={self.matcher!r} at {self.match_threshold:g}, "
                 f"run={self.run_id!r}: {c['n']} lessons people matched on {c['verdicts']} "
                 f"verdicts; pairs: {c['pairs_same']} same, {c['pairs_matcher']} by the "
                 f"matcher, {c['pairs_people']} by people)"]
        pct = f"{self.confidence:.0%}"
        for name, r in self.table.iterrows():
            lines.append(f"  {name:<9} {r['value']:.3f}  [{r['low']:.3f}, {r['high']:.3f}] "
                         f"({pct}, {self.n_boot} verdict resamples)")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        head = html.escape(repr(self).splitlines()[0])
        return (f"<div><p><b>MatchAgreement</b>: {head}</p>"
                f"{self.table.to_html(float_format=lambda v: f'{v:.3f}')}</div>")

    def to_dict(self) -> dict[str, Any]:
        return {"matcher": self.matcher, "run_id": self.run_id,
                "match_threshold": self.match_threshold, "counts": self.counts,
                "confidence": self.confidence, "n_boot": self.n_boot,
                "metrics": {k: {c: float(v) for c, v in r.items()}
                            for k, r in self.table.iterrows()}}


def _lesson_rows(truth: ReferenceTruth) -> pd.DataFrame:
    les = truth.lessons
    return pd.DataFrame({"verdict_hash": les["verdict_hash"].astype(str).to_numpy(),
                         "lesson_index": les["lesson_index"].astype("int64").to_numpy(),
                         "reference_id": les["reference_id"].astype(object).where(
                             les["y"].astype(bool), None).to_numpy(),
                         "y": les["y"].to_numpy(dtype=bool)})


def match_agreement(
    store: Store,
    run_id: str,
    *,
    matcher: Any = None,
    match_labels: Any = None,
    references: Any = None,
    match_threshold: float | None = None,
    score: str = "salience",
    n_boot: int = 1000,
    confidence: float = 0.95,
    random_state: Any = 0,
) -> MatchAgreement:
    """Pair precision, pair recall and matched-flag kappa of ``matcher`` (default the
    semantic one; ``"lexical"``, a
    :class:`~truss_lab.evaluate._judges.JudgeMatcher`, any matcher) against the people's
    match labels of ``run_id``'s lessons (module docstring), with verdict-bootstrap
    intervals.

    Both sides are assigned one-to-one in descending ``score`` on the verdicts people
    matched (``references``: the reference lessons, default the store's;
    ``match_labels``: default the store's); the matcher at ``match_threshold`` (default
    its own). Lessons whose annotators tied are left out, and so are the verdicts the
    matcher could not score.

    Parameters
    ----------
    store : Store
        The database.
    run_id : str
        The run.
    matcher : Matcher or str, optional
        The matcher judged (default the semantic one:
        :func:`~truss_lab.score._matching.matcher_named`).
    match_labels : pandas.DataFrame or path, optional
        The people's match labels (default the store's).
    references : pandas.DataFrame or path, optional
        The reference lessons (default the store's).
    match_threshold : float, optional
        The matcher's threshold (default its own).
    score : str, default "salience"
        The order of the one-to-one assignments.
    n_boot : int, default 1000
        Verdict-bootstrap replicates.
    confidence : float, default 0.95
        The intervals' level.
    random_state : int or numpy.random.Generator, default 0
        Seed of the bootstrap.

    Returns
    -------
    MatchAgreement
        Pair precision, pair recall and kappa with their intervals, and the counts.

    Raises
    ------
    BadInputError
        Nobody matched a lesson of the run.
    """
    people, refs = _sampled(store, run_id, match_labels, references)
    with warnings.catch_warnings():
        # The verdicts the matcher leaves out are counted in the result.
        warnings.simplefilter("ignore", MatcherLeftOutWarning)
        auto = reference_truth(store, run_id, references=refs, score=score, matcher=matcher,
                               match_threshold=match_threshold)
    human = reference_truth(store, run_id, references=refs, score=score,
                            matcher=PeopleMatcher(people))
    left_out = set(human.verdicts) - set(auto.verdicts)
    key = ["verdict_hash", "lesson_index"]
    answered = people[~people["tied"].to_numpy(dtype=bool)][[*key, INCLUSION]]
    both = _lesson_rows(human).merge(_lesson_rows(auto), on=key,
                                     suffixes=("_people", "_matcher"))
    rows = both.merge(answered.astype({"lesson_index": "int64"}), on=key)
    # Answers on lessons the parser dropped: no matcher sees them, no gate writes them.
    n_not_valid = len(answered) - len(answered.astype({"lesson_index": "int64"}).merge(
        _lesson_rows(human)[key], on=key))
    rows = rows[~rows["verdict_hash"].isin(left_out)].reset_index(drop=True)
    if rows.empty:
        raise BadInputError(f"no lesson of run {run_id!r} that people matched (without a tie) "
                            "could be compared with the matcher", field="match_labels")
    h, m = rows["y_people"].to_numpy(dtype=bool), rows["y_matcher"].to_numpy(dtype=bool)
    same = h & m & (rows["reference_id_people"] == rows["reference_id_matcher"]).to_numpy(
        dtype=bool)
    cells = np.stack([same, m, h, m & h, m & ~h, ~m & h, ~m & ~h]).astype(np.float64)
    p = rows[INCLUSION].to_numpy(dtype=np.float64)
    if np.isnan(p).any() and not np.isnan(p).all():
        raise BadInputError("inclusion_probability is given for some matched verdicts of the "
                            "run and not others; give it for all or none", field=INCLUSION)
    weights = None if np.isnan(p).all() else 1.0 / p
    table, totals = agreement_table(cells, rows["verdict_hash"].to_numpy(dtype=object),
                                    _match_metrics, _MATCH_METRICS, n_boot=n_boot,
                                    confidence=confidence, random_state=random_state,
                                    weights=weights)
    raw = cells.sum(axis=1).astype(int)
    _warn_no_pairs(run_id, len(rows), int(raw[1]), int(raw[2]))
    counts: dict[str, Any] = {
        "n": len(rows), "verdicts": int(rows["verdict_hash"].nunique()),
        **dict(zip(("pairs_same", "pairs_matcher", "pairs_people", "both", "matcher_only",
                    "people_only", "neither"), (int(x) for x in raw), strict=True)),
        "lessons_tied": int(people["tied"].sum()), "lessons_not_valid": n_not_valid,
        "verdicts_unmatched": len(left_out),
        "weighted": weights is not None,
    }
    if weights is not None:
        counts["weighted_counts"] = [float(x) for x in totals]
    pairs = rows.rename(columns={"reference_id_people": "people", "reference_id_matcher":
                                 "matcher", "y_people": "matched_people",
                                 "y_matcher": "matched_matcher"})
    return MatchAgreement(matcher=str(auto.counts["matcher"]), run_id=run_id,
                          table=table, counts=counts, confidence=confidence, n_boot=n_boot,
                          match_threshold=auto.match_threshold, pairs=pairs)
