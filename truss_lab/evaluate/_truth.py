"""The truth a run is judged by: one concept, one entry, :meth:`Truth.resolve`.

Every per-run evaluation (sweep, choice, calibration, bootstrap bands,
comparison, the threshold proposal, the Displays, the explorer, the report,
the CLI's ``--truth``) is judged by a :class:`Truth`, resolved once per
command from a spec and passed along:

- ``"labels"``: the human gold labels (majority; judges left out);
- ``"references"``: the reference lessons of the run's verdicts, matched to
  its lessons (:class:`ReferenceTruth`);
- ``"judge:<name>"``: the labels of ONE judge annotator, alone, as the truth.
  ``<name>`` is the annotator as stored (``judge:sim-judge-v1@judge-v1``), the
  part after ``judge:`` (``sim-judge-v1@judge-v1``), or the model alone when one
  prompt version of it labelled. A judge's labels are then counted exactly as
  gold labels are (:class:`RunTruth`: kept, positives, ties, transfer to equal
  lessons), so every output has the same columns;
- ``"auto"`` (or None): labels when every run has a directly labelled
  candidate, else references; :attr:`Truth.why` says which.

A :class:`Truth` reads its rows (labels or references) once and judges each
run once (:meth:`Truth.judged`, memoised per run, score, ties and matcher), so
a command that sweeps, chooses and bootstraps a run reads and matches its truth
once. An unknown name is a :class:`BadInputError` listing the valid ones,
including the judges that have labels.

**Labels** (Formats §3) are counted by :class:`RunTruth`, written once:

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

**Labels follow content.** A gold label names a lesson by position, so only the
extractor it was written for can use it; but two extractors often write the
same lesson, and then the label is about the text and should travel:

- **Exact** (the default, ``transfer="exact"``): the two texts are equal after
  :func:`normalise_text` (case folded, punctuation dropped, whitespace collapsed).
  Similarity 1.0.
- **Matched** (opt-in, ``transfer=<float>``): the lexical matcher
  (:class:`~truss_lab.score._matching.LexicalMatcher`: word overlap, so the float is
  on its scale; reference lessons default to the semantic one) scores at least that
  threshold; exact equals still count with 1.0.
- ``transfer=None`` switches it off.

Each target lesson takes the labels of ONE source lesson: the most similar
labelled lesson of another extractor on its verdict (ties: extractor id, then
lesson index), every annotator's row copied with the key replaced, so the
majority vote counts transferred annotators as it counts direct ones. A
transferred label **never overrides a direct one**: a lesson with any direct
label row (a tie included) keeps its own. Transferred rows carry
``transferred=True``, ``similarity``, ``from_extractor`` and ``from_lesson_index``.
Source texts come from the store's ``candidates`` table (any run of the
labelled extractor), so a labelled extractor must have been run in the store
for its labels to travel.

**Reference lessons** (Formats §4; docs/how-to/score-without-labels.md):

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
from dataclasses import dataclass, field, replace
from typing import Any, Literal, get_args

import numpy as np
import pandas as pd

from ..core._errors import BadInputError, TrussLabWarning
from ..score._matching import (
    MATCHER_NAMES,
    LexicalMatcher,
    Matcher,
    match_lessons,
    match_threshold_of,
    matcher_name,
    matcher_named,
)
from ..store._labels import JUDGE_PREFIX, label_rows, lesson_texts, reference_rows
from ..store._runs import RunRecord, run_record, run_verdict_hashes
from ..store._store import Store
from ._agreement import CANDIDATE_KEY, majority_labels
from ._defaults import CORRECTIONS
from ._sweep import UndefinedMetricWarning, sweep

__all__ = [
    "ADJUDICATOR",
    "DEFAULT_TIES",
    "DEFAULT_TRANSFER",
    "LOOSE_KEYWORDS",
    "TIES",
    "MatcherLeftOutWarning",
    "ReferenceTruth",
    "RunTruth",
    "Truth",
    "check_correct",
    "check_transfer",
    "check_truth_spec",
    "judge_labels",
    "judge_lessons",
    "labelled_candidates",
    "labels_truth",
    "normalise_text",
    "reference_sweep",
    "reference_truth",
    "run_labels",
    "run_references",
    "score_values",
    "scored_candidates",
    "transfer_label_rows",
    "transfer_report",
    "transferred_labels",
    "truth_of",
    "whole_lessons",
]

# The named truths besides judge:NAME, in the order errors list them.
_TRUTHS = ("labels", "references")

TiesPolicy = Literal["exclude", "half", "adjudicate"]
TIES: tuple[str, ...] = get_args(TiesPolicy)
DEFAULT_TIES: TiesPolicy = "exclude"
#: The annotator whose label settles a tie under ``ties="adjudicate"``.
ADJUDICATOR = "adjudicator"

#: Labels follow equal texts by default; a float opts in to lexical matches.
DEFAULT_TRANSFER = "exact"


class MatcherLeftOutWarning(TrussLabWarning):
    """Verdicts left out of an evaluation because the matcher could not score their
    lessons (a judge matcher's unusable answers); a caller that reports them itself
    (``truss-lab match``) silences it."""


# --------------------------------------------------------------------------- label rows


def run_labels(store: Store, labels: Any = None, *,
               include_judges: bool = False) -> pd.DataFrame:
    """Gold labels as a Formats §3 frame: from the store's labels table
    (default), a CSV path, or a DataFrame. Rows of judge annotators
    (``judge:<model>@<prompt>``) are left out unless ``include_judges``: a judge
    never joins the human majority unless asked."""
    if labels is None:
        df = label_rows(store)
    elif isinstance(labels, pd.DataFrame):
        df = labels
    elif isinstance(labels, str | os.PathLike):
        # The file readers (pydantic models, CSV parsing) load only for a file: a sweep of
        # stored labels, the usual case, starts without them.
        from ..ingest._labels import read_labels

        df, errors = read_labels(labels)
        if errors:
            raise BadInputError(
                f"{len(errors)} bad label line(s); the first: {errors[0]}", source=str(labels)
            )
    else:
        raise BadInputError(f"labels must be None, a path or a DataFrame, got {type(labels)}")
    if not include_judges:
        df = _without_judges(df)
    return df


def _without_judges(df: pd.DataFrame) -> pd.DataFrame:
    if "annotator" in df.columns and len(df):
        df = df[~df["annotator"].astype("string").str.startswith(JUDGE_PREFIX).fillna(False)
                .to_numpy(dtype=bool)].reset_index(drop=True)
    return df


def _judges_in(rows: pd.DataFrame) -> list[str]:
    """The judge annotators with rows in ``rows`` (every label row, judges included)."""
    if "annotator" not in rows.columns or rows.empty:
        return []
    ann = rows["annotator"].dropna().astype(str)
    return sorted(set(ann[ann.str.startswith(JUDGE_PREFIX)]))


def _judge_rows(rows: pd.DataFrame, judge: str) -> pd.DataFrame:
    if "annotator" not in rows.columns:
        return rows.iloc[:0]
    mine = rows[rows["annotator"].astype("string").eq(judge).fillna(False).to_numpy(dtype=bool)]
    # Dropping the name keeps the rows out of the judge filter of run_labels; they
    # are the only voice, so the majority is the judge's label.
    return mine.drop(columns="annotator").reset_index(drop=True)


def judge_labels(store: Store, judge: str, labels: Any = None) -> pd.DataFrame:
    """The label rows of annotator ``judge`` (from the store or ``labels``) as a
    Formats §3 frame without the annotator: one voice, the truth of ``truth="judge:…"``."""
    return _judge_rows(run_labels(store, labels, include_judges=True), judge)


def run_references(store: Store, references: Any = None) -> pd.DataFrame:
    """Reference lessons as a references-format frame.

    Parameters
    ----------
    store : Store
        The database.
    references : path or pandas.DataFrame, optional
        A JSONL path or a frame (None: the store's ``reference_lessons`` table).

    Returns
    -------
    pandas.DataFrame
        The rows; ``annotator`` is ``""`` where none was given.

    Raises
    ------
    BadInputError
        A file with a bad line (naming the first), a value of another type.
    """
    if references is None:
        df = reference_rows(store)
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


# --------------------------------------------------------------------------- label transfer


_LESSON_COLS = ["verdict_hash", "extractor", "lesson_index", "text"]


def normalise_text(texts: pd.Series) -> pd.Series:
    """What "equal texts" compares: case folded, every run of non-word characters
    a single space, trimmed (``"Check DST!"`` equals ``"check  dst"``)."""
    return (texts.fillna("").astype(str).str.casefold()
            .str.replace(r"[\W_]+", " ", regex=True).str.strip())


def check_transfer(transfer: Any) -> str | float | None:
    """``transfer`` if valid: None, ``"exact"`` or a threshold in (0, 1]."""
    if transfer is None or transfer == "exact":
        return transfer
    if isinstance(transfer, bool) or not isinstance(transfer, int | float) or not (
            0.0 < float(transfer) <= 1.0):
        raise BadInputError(f"transfer must be None, 'exact' or a similarity in (0, 1], "
                            f"got {transfer!r}", field="transfer")
    return float(transfer)


def transfer_label_rows(
    targets: pd.DataFrame,
    sources: pd.DataFrame,
    labels: pd.DataFrame,
    *,
    transfer: str | float | None = DEFAULT_TRANSFER,
) -> pd.DataFrame:
    """Label rows transferred to ``targets`` from labelled ``sources`` (pure: no store).

    ``targets`` and ``sources``: lessons with ``verdict_hash, extractor,
    lesson_index, text`` (and optionally ``evidence``). ``labels``: §3 rows keyed
    like the sources. Returns §3 rows (``verdict_hash, extractor, lesson_index,
    useful, annotator``) keyed by the TARGET lesson, plus ``transferred`` (True),
    ``similarity``, ``from_extractor`` and ``from_lesson_index``; one source per
    target, never a source of the target's own extractor. Targets that have
    direct labels are included (the caller decides; :func:`transferred_labels`
    drops them), so agreement between the two can be measured.
    """
    mode = check_transfer(transfer)
    cols = [*CANDIDATE_KEY, "useful", "annotator", "transferred", "similarity",
            "from_extractor", "from_lesson_index"]
    empty = pd.DataFrame({c: pd.Series([], dtype=object) for c in cols})
    if mode is None or targets.empty or sources.empty or labels.empty:
        return empty
    lab = labels.assign(verdict_hash=labels["verdict_hash"].astype(str),
                        extractor=labels["extractor"].astype(str),
                        lesson_index=pd.to_numeric(labels["lesson_index"]).astype("int64"))
    if "annotator" not in lab.columns:
        lab = lab.assign(annotator=None)
    keys = lab[CANDIDATE_KEY].drop_duplicates()
    src = _lessons(sources).merge(keys, on=CANDIDATE_KEY, how="inner")
    tgt = _lessons(targets)
    if src.empty:
        return empty
    # The pairs carry keys and normalised texts only; an exact transfer pairs equal texts
    # alone (one join on verdict and text, not every pair of a verdict's lessons).
    slim = ["verdict_hash", "extractor", "lesson_index", "norm"]
    pairs = tgt[slim].reset_index(names="ti").merge(
        src[slim].reset_index(names="si"),
        on="verdict_hash" if isinstance(mode, float) else ["verdict_hash", "norm"],
        suffixes=("", "_src"))
    pairs = pairs[pairs["extractor"] != pairs["extractor_src"]].reset_index(drop=True)
    if pairs.empty:
        return empty
    sim = ((pairs["norm"] == pairs["norm_src"]).to_numpy(dtype=np.float64)
           if isinstance(mode, float) else np.ones(len(pairs)))
    if isinstance(mode, float):
        lexical = LexicalMatcher().pairs(tgt, src, pairs["ti"].to_numpy(np.int64),
                                         pairs["si"].to_numpy(np.int64))
        sim = np.maximum(sim, lexical)
        ok = sim >= mode
    else:
        ok = sim >= 1.0
    pairs = pairs.assign(similarity=sim)[ok]
    if pairs.empty:
        return empty
    best = (pairs.sort_values(["ti", "similarity", "extractor_src", "lesson_index_src"],
                              ascending=[True, False, True, True], kind="stable")
            .drop_duplicates("ti"))
    link = best[[*CANDIDATE_KEY, "extractor_src", "lesson_index_src", "similarity"]].rename(
        columns={"extractor_src": "from_extractor", "lesson_index_src": "from_lesson_index"})
    out = link.merge(
        lab[[*CANDIDATE_KEY, "useful", "annotator"]].rename(
            columns={"verdict_hash": "verdict_hash", "extractor": "from_extractor",
                     "lesson_index": "from_lesson_index"}),
        on=["verdict_hash", "from_extractor", "from_lesson_index"], how="inner")
    out["transferred"] = True
    return out[cols].reset_index(drop=True)


def _lessons(df: pd.DataFrame) -> pd.DataFrame:
    d = df.rename(columns={"extractor_id": "extractor"})
    missing = [c for c in _LESSON_COLS if c not in d.columns]
    if missing:
        raise BadInputError(f"lessons lack column(s) {', '.join(missing)}", field=missing[0])
    out = pd.DataFrame({
        "verdict_hash": d["verdict_hash"].astype(str), "extractor": d["extractor"].astype(str),
        "lesson_index": pd.to_numeric(d["lesson_index"]).astype("int64"),
        "text": d["text"].fillna("").astype(str),
        "evidence": d["evidence"] if "evidence" in d.columns else [[]] * len(d),
    }).drop_duplicates(CANDIDATE_KEY).reset_index(drop=True)
    out["norm"] = normalise_text(out["text"])
    return out


def _direct_keys(labels: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({
        "verdict_hash": labels["verdict_hash"].astype(str),
        "extractor": labels["extractor"].astype(str),
        "lesson_index": pd.to_numeric(labels["lesson_index"]).astype("int64"),
    }).drop_duplicates()


def transferred_labels(
    store: Store, run_id: str | None, labels: pd.DataFrame, *,
    transfer: str | float | None = DEFAULT_TRANSFER,
) -> pd.DataFrame:
    """The label rows ``labels`` lend to the lessons of ``run_id`` (every run's when
    None) that have no direct label: :func:`transfer_label_rows` over the store's
    candidates, direct keys dropped (a transferred label never overrides a direct one)."""
    if check_transfer(transfer) is None or labels.empty:
        return transfer_label_rows(labels.iloc[:0], labels.iloc[:0], labels, transfer=None)
    mode = check_transfer(transfer)
    targets, sources = lesson_texts(store, run_id, paired_only=True,
                                    evidence=isinstance(mode, float))
    rows = transfer_label_rows(targets, sources, labels, transfer=transfer)
    if rows.empty:
        return rows
    rows["lesson_index"] = rows["lesson_index"].astype("int64")
    hit = rows[CANDIDATE_KEY].merge(_direct_keys(labels).assign(_d=True), on=CANDIDATE_KEY,
                                    how="left")["_d"].notna().to_numpy()
    return rows[~hit].reset_index(drop=True)



def transfer_report(
    store: Store, run_id: str | None = None, labels: pd.DataFrame | None = None, *,
    transfer: str | float | None = DEFAULT_TRANSFER, valid_only: bool = True,
) -> pd.DataFrame:
    """Direct vs transferred labels per extractor, and how often they agree.

    One row per extractor with candidates (of ``run_id``, or of every run):
    ``n_lessons``, ``n_direct`` (lessons with a direct majority label),
    ``n_transferred`` (lessons labelled only by transfer), ``n_both`` (lessons
    with a direct majority label that a transfer would also label, with a
    majority) and ``agreement`` = share of those where the two labels are equal
    (NaN when none).

    Parameters
    ----------
    store : Store
        The database.
    run_id : str, optional
        The run (None: every run).
    labels : pandas.DataFrame, optional
        Gold labels (default: the store's labels table).
    transfer : {"exact"}, float or None, default "exact"
        How labels follow content (as :func:`labelled_candidates`).
    valid_only : bool, default True
        Count valid lessons only (as :func:`label_report` does).

    Returns
    -------
    pandas.DataFrame
        One row per extractor (above).
    """
    lab = run_labels(store, labels)
    cols = ["extractor", "n_lessons", "n_direct", "n_transferred", "n_both", "agreement"]
    targets, sources = lesson_texts(store, run_id, valid_only=valid_only)
    n_lessons = targets.groupby("extractor").size() if len(targets) else pd.Series(dtype=int)
    if lab.empty or check_transfer(transfer) is None:
        rows = transfer_label_rows(targets.iloc[:0], sources, lab.iloc[:0], transfer=None)
    else:
        rows = transfer_label_rows(targets, sources, lab, transfer=transfer)
    key = CANDIDATE_KEY
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        direct = (majority_labels(lab)[[*key, "label"]] if len(lab)
                  else pd.DataFrame(columns=[*key, "label"]))
        moved = (majority_labels(rows[[*key, "useful", "annotator"]])[[*key, "label"]]
                 if len(rows) else pd.DataFrame(columns=[*key, "label"]))
    tkeys = _lessons(targets)[key] if len(targets) else pd.DataFrame(columns=key)
    direct = direct.merge(tkeys, on=key, how="inner")
    direct_any = _direct_keys(lab).merge(tkeys, on=key, how="inner") if len(lab) else tkeys[:0]
    moved = moved.merge(tkeys, on=key, how="inner")
    only = moved.merge(direct_any.assign(_d=True), on=key, how="left")
    only = only[only["_d"].isna() & only["label"].notna()]
    both = direct.merge(moved, on=key, suffixes=("_direct", "_moved"))
    both = both[both["label_direct"].notna() & both["label_moved"].notna()]
    out = []
    for ext in sorted(n_lessons.index):
        d = direct[(direct["extractor"] == ext) & direct["label"].notna()]
        b = both[both["extractor"] == ext]
        agree = (float((b["label_direct"].astype(int) == b["label_moved"].astype(int)).mean())
                 if len(b) else np.nan)
        out.append((ext, int(n_lessons[ext]), len(d), int((only["extractor"] == ext).sum()),
                    len(b), agree))
    return pd.DataFrame(out, columns=cols)


# --------------------------------------------------------- labelled candidates and the labels truth


def labelled_candidates(
    store: Store,
    run_id: str,
    *,
    labels: Any = None,
    valid_only: bool = True,
    transfer: str | float | None = DEFAULT_TRANSFER,
    record: RunRecord | None = None,
) -> pd.DataFrame:
    """The candidates of ``run_id`` with their majority gold label.

    Labels follow content (the module docstring): a direct label always wins; a
    transfer lends a label to another extractor's lesson on the same verdict.

    Parameters
    ----------
    store : Store
        The database.
    run_id : str
        The run.
    labels : path or DataFrame, optional
        Gold labels (the labels format's rows; default the store's ``labels`` table).
    valid_only : bool, default True
        Valid candidates only (those the parser kept).
    transfer : {"exact"}, float or None, default "exact"
        ``"exact"`` lends a label to an equal text of another extractor on the same
        verdict, a float to a lexical match at least that similar, None never.
    record : RunRecord, optional
        The run as :func:`~truss_lab.store._runs.run_record` read it, when the caller
        holds it (saves a read).

    Returns
    -------
    DataFrame
        One row per candidate, ordered by verdict seq and lesson_index: the
        candidates columns plus ``label`` (nullable Int8: 1 useful, 0 not, ``<NA>``
        when unlabelled or tied), ``tie``, ``n_annotators``, ``labelled`` (bool),
        and where the label came from: ``transferred`` (bool),
        ``transfer_similarity`` and ``transferred_from`` (the source extractor).
        ``df[df.labelled]`` holds the rows a sweep can score.

    Raises
    ------
    BadInputError
        An unknown run (naming the recent ones), a labels file that does not read.

    See Also
    --------
    scored_candidates : The labelled, untied rows as ``y`` and ``s``.
    label_report : Coverage and agreement of the labels.

    Examples
    --------
    >>> df = tl.labelled_candidates(store, "good")
    >>> len(df), int(df["labelled"].sum()), int(df["tie"].sum())
    (1105, 1026, 79)
    >>> df.loc[df["labelled"], "label"].value_counts().sort_index().tolist()
    [464, 562]
    """
    return _labelled(store, run_id, labels=labels, valid_only=valid_only, transfer=transfer,
                     record=record)


def _labelled(store: Store, run_id: str, *, labels: Any = None, valid_only: bool = True,
              transfer: str | float | None = DEFAULT_TRANSFER,
              record: RunRecord | None = None, texts: bool = True) -> pd.DataFrame:
    """:func:`labelled_candidates`; without ``texts``, of the candidates' columns but text
    and evidence (:attr:`~truss_lab.store._runs.RunRecord.keys`: what counting takes)."""
    if record is None:
        record = run_record(store, run_id)  # an unknown run is an error naming the recent ones
    cands = (record.valid_candidates(texts=texts) if valid_only
             else (record.candidates if texts else record.keys).copy())
    lab = run_labels(store, labels)
    moved = transferred_labels(store, run_id, lab, transfer=transfer)
    if len(moved):
        lab = pd.concat([lab.assign(transferred=False), moved], ignore_index=True)
    if len(lab):
        maj = majority_labels(lab).rename(columns={"extractor": "extractor_id"})
    else:
        maj = pd.DataFrame({
            "verdict_hash": pd.Series([], dtype=object),
            "extractor_id": pd.Series([], dtype=object),
            "lesson_index": pd.Series([], dtype="int64"),
            "label": pd.array([], dtype="Int8"), "n_annotators": pd.Series([], dtype="int64"),
            "n_positive": pd.Series([], dtype="int64"), "tie": pd.Series([], dtype=bool),
        })
    cands["lesson_index"] = cands["lesson_index"].astype("int64")
    maj["lesson_index"] = maj["lesson_index"].astype("int64")
    on = ["verdict_hash", "extractor_id", "lesson_index"]
    if "sample_index" in cands.columns:
        # A §3 label has no sample: it names a lesson of the verdict's completion, which
        # in a k-sample run is sample 0's (issue #16); other samples stay unlabelled.
        on = [*on, "sample_index"]
        cands["sample_index"] = cands["sample_index"].fillna(0).astype("int64")
        maj = maj.assign(sample_index=0)
        moved = moved.assign(sample_index=0)
    out = cands.merge(maj[[*on, "label", "n_annotators", "tie"]], on=on, how="left",
                      validate="one_to_one")
    out["n_annotators"] = out["n_annotators"].fillna(0).astype("int64")
    out["tie"] = out["tie"].fillna(False).astype(bool)
    out["label"] = out["label"].astype("Int8")
    out["labelled"] = out["label"].notna().to_numpy()
    out["transferred"] = False
    out["transfer_similarity"] = np.nan
    out["transferred_from"] = None
    if len(moved):
        src = moved.drop_duplicates(["verdict_hash", "extractor", "lesson_index"]).rename(
            columns={"extractor": "extractor_id"})
        src["lesson_index"] = src["lesson_index"].astype("int64")
        got = out[on].merge(src[[*on, "similarity", "from_extractor"]], on=on, how="left")
        hit = got["from_extractor"].notna().to_numpy()
        out.loc[hit, "transferred"] = True
        out.loc[hit, "transfer_similarity"] = got.loc[hit, "similarity"].to_numpy(float)
        out.loc[hit, "transferred_from"] = got.loc[hit, "from_extractor"].to_numpy()
    return out


def score_values(run_id: str, df: pd.DataFrame, score: str) -> np.ndarray:
    """The score column ``score`` of ``df``: a numeric candidates column (``salience``,
    the model's own; ``score``, the one the gate used)."""
    if not isinstance(score, str) or not score:
        raise BadInputError(f"score must be a column name, got {score!r}", field="score")
    if score not in df.columns or score in _NOT_SCORES:
        raise BadInputError(
            f"no score {score!r} for run {run_id!r}: expected a numeric candidates column "
            "(salience, score)",
            field="score",
        )
    try:
        return df[score].to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError):
        raise BadInputError(f"column {score!r} is not numeric", field="score") from None


_NOT_SCORES = frozenset({"candidate_id", "run_id", "verdict_hash", "extractor_id", "text",
                         "evidence", "drop_reason", "scorer", "entry_id", "label", "tie",
                         "labelled", "transferred", "transfer_similarity",
                         "transferred_from"})


def scored_candidates(
    store: Store, run_id: str, *, labels: Any = None, score: str = "salience",
    record: RunRecord | None = None,
) -> pd.DataFrame:
    """The labelled, non-tied valid candidates of ``run_id`` that a sweep scores.

    Parameters
    ----------
    store : Store
        The database.
    run_id : str
        The run.
    labels : path or DataFrame, optional
        Gold labels (default the store's ``labels`` table).
    score : str, default "salience"
        The candidates column that becomes ``s`` (``salience``, ``score``).
    record : RunRecord, optional
        The run as :func:`~truss_lab.store._runs.run_record` read it, when the caller
        holds it.

    Returns
    -------
    DataFrame
        Columns ``candidate_id, verdict_seq, verdict_hash, extractor_id,
        lesson_index, y`` (uint8 majority label) and ``s`` (the ``score`` values;
        NaN = unscored, never kept), ordered by verdict seq and lesson index: the
        arrays of :func:`~truss_lab.evaluate._sweep.sweep`.

    Raises
    ------
    BadInputError
        An unknown run, or a run with no labelled, untied valid candidate.

    See Also
    --------
    labelled_candidates : Every candidate, labelled or not.
    sweep : What these arrays feed.

    Examples
    --------
    >>> df = tl.scored_candidates(store, "good")
    >>> len(df), int(df["y"].sum())
    (1026, 562)
    >>> tl.sweep(df["y"], df["s"], groups=df["verdict_hash"], thresholds=[0.7])["f1"].round(3)
    0    0.572
    Name: f1, dtype: float64
    """
    df = labelled_candidates(store, run_id, labels=labels, record=record)
    s = score_values(run_id, df, score)
    keep = df["labelled"].to_numpy()
    out = df.loc[keep, ["candidate_id", "verdict_seq", "verdict_hash", "extractor_id",
                        "lesson_index"]].reset_index(drop=True)
    out["y"] = df.loc[keep, "label"].to_numpy(dtype=np.uint8)
    out["s"] = s[keep]
    if out.empty:
        raise BadInputError(
            f"run {run_id!r} has no labelled, untied valid candidates to evaluate "
            "(load gold labels with `truss-lab ingest labels`, or pass labels=)",
            field="labels",
        )
    return out


@dataclass(frozen=True, eq=False)
class RunTruth:
    """One run's candidates with their truth, and the counts every metric divides by.

    ``candidates`` has one row per candidate the run proposed (valid or
    dropped), ordered by verdict seq and lesson index: ``candidate_id,
    verdict_hash, extractor_id, lesson_index, valid``, ``s`` (the thresholded
    score; NaN for dropped or unscored candidates: never kept), ``y`` (uint8
    truth, 0 where there is none), ``judged`` (bool: has a truth value) and
    ``answered`` (bool: labelled, or tied: people answered for it; the gold side
    of a prediction-powered correction needs it on every lesson of a verdict).
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

    def on_verdicts(self, verdicts: Any) -> RunTruth:
        """This run judged on ``verdicts`` only (a slice of them, in this run's order):
        their candidates, and those of them the run processed as :attr:`verdicts`.

        Parameters
        ----------
        verdicts : iterable of str
            The verdict hashes of the slice.

        Returns
        -------
        RunTruth
            A copy holding only those verdicts' candidates and counts.
        """
        keep = set(verdicts)
        vs = [v for v in self.verdicts if v in keep]
        c = self.candidates
        c = c[c["verdict_hash"].isin(keep).to_numpy()].reset_index(drop=True)
        return replace(self, candidates=c, verdicts=vs, n_verdicts=len(vs),
                       counts={**self.counts, "verdicts": len(vs),
                               "candidates": len(c) // self.count_scale})


def check_ties(ties: str) -> TiesPolicy:
    """``ties`` if it is a known policy, else :class:`BadInputError`."""
    if ties not in TIES:
        raise BadInputError(f"ties must be one of {', '.join(TIES)}, got {ties!r}", field="ties")
    return ties  # type: ignore[return-value]


def whole_lessons(ties: str, what: str) -> None:
    """Refuse ``ties="half"`` where the counting needs whole lessons (docs/how-to/tune-threshold.md:
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
    candidates: pd.DataFrame | None = None, record: RunRecord | None = None,
) -> RunTruth:
    """The truth source of gold labels: majority label per candidate, ties by ``ties``;
    labels follow content to equal lessons of other extractors (``transfer``, see
    :func:`~truss_lab.evaluate._truth.labelled_candidates`). ``candidates``: that
    frame (``valid_only=False``) and ``record`` the run when the caller holds them."""
    policy = check_ties(ties)
    df = (candidates if candidates is not None else
          labelled_candidates(store, run_id, labels=labels, valid_only=False,
                              transfer=transfer))
    valid = df["valid"].to_numpy(dtype=bool)
    s = score_values(run_id, df, score)
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
    verdicts = record.recorded if record is not None else run_verdict_hashes(store, run_id)
    # A run recorded before run_verdicts existed: its candidates' verdicts are all we know.
    verdicts = verdicts or [str(v) for v in pd.unique(df["verdict_hash"])]
    scale = 1
    if policy == "half":  # every tie has a truth: half useful, half not
        tied_judged, scale = int(tie.sum()), 2
    cands = pd.DataFrame({
        "candidate_id": df["candidate_id"], "verdict_hash": df["verdict_hash"].astype(str),
        "extractor_id": df["extractor_id"], "lesson_index": df["lesson_index"],
        "valid": valid, "s": s, "y": y, "judged": judged,
        # People answered (a label or a tie): what makes a verdict wholly labelled.
        "answered": label.notna().to_numpy() | tie,
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



# --------------------------------------------------------------------------- the references truth


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

    Parameters
    ----------
    run_id : str
        The run.
    rows : pandas.DataFrame
        The rows above.
    n_references : int
        Recall's denominator.
    n_verdicts : int
        The annotated verdicts the run processed.
    n_lessons : int
        The valid lessons on them.
    match_threshold : float
        The matcher's similarity threshold.
    counts : dict
        The counts above.
    verdicts : list of str
        The annotated verdicts the run processed, in verdict order.
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

    def on_verdicts(self, verdicts: Any) -> ReferenceTruth:
        """This run judged on those of ``verdicts`` it is judged on (a slice of them): their
        rows (lessons, misses, empty verdicts), references and lessons.

        Parameters
        ----------
        verdicts : iterable of str
            The verdict hashes of the slice.

        Returns
        -------
        ReferenceTruth
            A copy holding only those verdicts' rows and counts.
        """
        keep = set(verdicts)
        vs = [v for v in self.verdicts if v in keep]
        r = self.rows
        r = r[r["verdict_hash"].astype(str).isin(keep).to_numpy()].reset_index(drop=True)
        lesson = (r["kind"] == "lesson").to_numpy()
        # Every reference of a verdict is a matched lesson or a miss row (y = 1).
        n_refs = int(r["y"].to_numpy(dtype=np.int64).sum())
        return replace(self, rows=r, verdicts=vs, n_verdicts=len(vs),
                       n_lessons=int(lesson.sum()), n_references=n_refs,
                       counts={**self.counts, "verdicts_annotated": len(vs)})


def reference_truth(
    store: Store,
    run_id: str,
    *,
    references: Any = None,
    score: str = "salience",
    matcher: Matcher | str | None = None,
    match_threshold: float | None = None,
    annotator: str | None = None,
    record: RunRecord | None = None,
) -> ReferenceTruth:
    """Match the valid lessons of ``run_id`` to the reference lessons of its verdicts.

    ``references``: None (the store's ``reference_lessons``), a §4 JSONL path or
    a frame. ``score`` orders the greedy assignment and is what a sweep
    thresholds (a candidates column or a stored scorer). ``matcher``: a matcher or
    its name, default the semantic matcher
    (:func:`~truss_lab.score._matching.matcher_named`); ``match_threshold``
    to the matcher's own (:func:`~truss_lab.score._matching.match_threshold_of`).
    A verdict the matcher could not score is left out and counted
    (``counts["verdicts_unmatched"]``, with a warning). ``annotator`` keeps
    one annotator's references (default: the union over annotators).

    Parameters
    ----------
    store : Store
        The database.
    run_id : str
        The run.
    references : path or pandas.DataFrame, optional
        The reference lessons (above).
    score : str, default "salience"
        The score (above).
    matcher : Matcher or str, optional
        The matcher (above).
    match_threshold : float, optional
        The similarity at which a lesson matches (above).
    annotator : str, optional
        One annotator's references (above).
    record : RunRecord, optional
        The run as :func:`~truss_lab.store._runs.run_record` read it, when held.

    Returns
    -------
    ReferenceTruth
        The run judged.

    Raises
    ------
    BadInputError
        An unknown run, no verdict of the run annotated.
    """
    if record is None:
        record = run_record(store, run_id)
    matcher = matcher_named(matcher)
    refs = run_references(store, references)
    if annotator is not None:
        refs = refs[refs["annotator"] == annotator]
    processed = record.verdicts
    annotated = set(refs["verdict_hash"].astype(str))
    verdicts = processed[processed["verdict_hash"].isin(annotated)]
    if verdicts.empty:
        who = f" by annotator {annotator!r}" if annotator is not None else ""
        raise BadInputError(
            f"run {run_id!r} has no verdict with reference lessons{who} to evaluate "
            "(load them with `truss-lab ingest references`, or pass references=)",
            field="references")
    cands = record.valid_candidates()
    s_all = score_values(run_id, cands, score)
    in_ann = cands["verdict_hash"].isin(annotated).to_numpy()
    les = cands[in_ann].reset_index(drop=True).assign(s=s_all[in_ann])
    keep = set(verdicts["verdict_hash"])
    extractor = record.extractor_id
    seq = dict(zip(verdicts["verdict_hash"], verdicts["verdict_seq"], strict=True))
    rows, n_refs = judge_lessons(les, refs[refs["verdict_hash"].isin(keep)], verdict_seq=seq,
                                 extractor_id=extractor, matcher=matcher,
                                 match_threshold=match_threshold)
    unmatched = set(rows.attrs.get("unmatched_verdicts", ()))
    if unmatched:
        warnings.warn(f"{len(unmatched)} verdict(s) of run {run_id!r} left out: the matcher "
                      "could not score their lessons (see the matcher's errors)",
                      MatcherLeftOutWarning, stacklevel=2)
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
        "matcher": matcher_name(matcher),
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
    the references format's columns. A verdict with a lesson the matcher could not
    score (NaN similarity) is left out; ``rows.attrs["unmatched_verdicts"]`` lists
    them.

    Parameters
    ----------
    lessons : pandas.DataFrame
        The run's lessons (above).
    references : pandas.DataFrame
        The references of its annotated verdicts.
    verdict_seq : dict of str to int, optional
        Orders verdicts (default: first seen).
    extractor_id : str, optional
        The extractor the rows name.
    matcher : Matcher or str, optional
        The matcher (default the semantic one: :func:`~truss_lab.score._matching.matcher_named`).
    match_threshold : float, optional
        The similarity at which a lesson matches (default the matcher's).

    Returns
    -------
    tuple of (pandas.DataFrame, int)
        The rows and the number of references.
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

    Parameters
    ----------
    truth : ReferenceTruth
        The run judged by references.
    thresholds : array-like, optional
        Where to evaluate (default every distinct score).

    Returns
    -------
    pandas.DataFrame
        The sweep rows.
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


# --------------------------------------------------------------------------- the truth


def check_truth_spec(spec: Any) -> str:
    """``spec`` if it is auto, labels, references or ``judge:NAME`` (the judge itself is
    checked against the labels by :meth:`Truth.resolve`); else :class:`BadInputError`."""
    if isinstance(spec, str) and (spec == "auto" or spec in _TRUTHS or (
            spec.startswith(JUDGE_PREFIX) and len(spec) > len(JUDGE_PREFIX))):
        return spec
    raise BadInputError(f"truth must be auto, {', '.join(_TRUTHS)} or judge:NAME, got {spec!r}",
                        field="truth")


def _unknown(truth: Any, judges: list[str]) -> BadInputError:
    have = (f"; judges with labels: {', '.join(judges)}" if judges
            else "; no judge has labels (`truss-lab judge RUN` makes some)")
    return BadInputError(f"truth must be one of labels, references or judge:NAME{have}; "
                         f"got {truth!r}", field="truth")



def _check_has_candidates(record: RunRecord) -> None:
    """Refuse a run with no valid candidate in one line (a sweep of it has nothing to
    threshold): a run whose every verdict failed, or whose recordings proposed nothing."""
    run_id = record.run_id
    n = len(record.keys)
    valid = int(record.keys["valid"].sum()) if n else 0
    if not valid:
        raise BadInputError(
            f"run {run_id!r} has no candidates to evaluate ("
            + (f"{n} candidate(s), none valid" if n else "it proposed no lesson")
            + f"; its errors: `truss-lab errors {run_id}`)", field="run")


#: The keywords a :class:`Truth` gathers, as the evaluating functions took them loose
#: before (:func:`truth_of` still accepts them, with a DeprecationWarning).
LOOSE_KEYWORDS = ("labels", "references", "matcher", "correct", "match_labels", "ties")



def check_correct(correct: Any) -> str:
    """``correct`` if it is ppi, none or auto (None means auto); else :class:`BadInputError`."""
    if correct is None:
        return "auto"
    if isinstance(correct, str) and correct in CORRECTIONS:
        return correct
    raise BadInputError(f"correct must be one of {', '.join(CORRECTIONS)}, got {correct!r}",
                        field="correct")


def _rows_repr(value: Any) -> str:
    """How a repr names where rows come from: the store, a file, or a frame's size."""
    if value is None:
        return "store"
    if isinstance(value, pd.DataFrame):
        return f"<DataFrame {len(value)} rows>"
    return repr(os.fspath(value)) if isinstance(value, str | os.PathLike) else repr(value)


@dataclass(frozen=True, eq=False, repr=False)
class Truth:
    """How runs are judged: the truth, its matcher and correction, and the people's rows.

    One value carries what every evaluating function takes as ``truth=``
    (:func:`~truss_lab.evaluate._runs.sweep_run`, ``evaluate_run``, ``compare_runs``,
    ``calibration_run``, ``frontier``, ``propose_threshold``, the Displays, the
    explorer and the report). Make it with :meth:`labels`, :meth:`references`,
    :meth:`judge`, :meth:`auto` or :meth:`parse` (the CLI's ``--truth`` spelling); it
    is resolved against a store once per command (:meth:`resolve`: its rows read, the
    name of ``auto`` chosen) and passed along, so each run is read and judged once
    (:meth:`judged`, memoised per run and score).

    Parameters
    ----------
    source : str
        ``"labels"`` (the human gold labels' majority), ``"references"`` (reference
        lessons matched to the lessons), ``"judge:NAME"`` (one judge's labels, counted
        as gold labels are) or ``"auto"`` (labels when every run has a directly
        labelled candidate, else references).
    matcher : None, str or Matcher
        How lessons are matched to references: None or ``"auto"`` (the default, the
        semantic matcher), ``"semantic"``, ``"lexical"`` (word overlap, cheap), or a
        matcher object (a judge matcher the CLI builds).
    correct : {"auto", "ppi", "none"}
        The correction of an automated truth (references, a judge) by the people's
        answers: prediction-powered (``ppi``), none, or ``auto`` (ppi when people
        answered for some verdict of the run).
    gold_labels : None, path or DataFrame
        The gold labels (FORMATS §3 rows): None reads the store's ``labels`` table.
        They are the truth of ``labels`` and correct a judge.
    reference_lessons : None, path or DataFrame
        The reference lessons (§4 rows): None reads the store's table.
    match_labels : None, path or DataFrame
        The people's match labels (§5 rows) that correct references: None reads the
        store's table.
    ties : {"exclude", "adjudicate", "half"}
        How a label tie among annotators counts (module docstring).

    Attributes
    ----------
    name : str
        Once resolved: what results and evidence record (``labels``, ``references`` or
        the judge's full annotator ``judge:<model>@<prompt>``); before, the source.
    kind : str
        Once resolved: how it is counted (``labels`` for gold labels and a judge,
        ``references``).
    why : str
        How it was chosen (``as asked``, or the reason of ``auto``).
    label_rows, reference_rows : DataFrame or None
        The rows read once by :meth:`resolve`.

    Raises
    ------
    BadInputError
        An unknown source, matcher, correction or ties policy.

    See Also
    --------
    truth_of : ``truth=`` as a Truth (a spec string, or the deprecated loose keywords).
    truss_lab.evaluate.evaluate_run : the one evaluation of a run by a Truth.

    Examples
    --------
    >>> tl.Truth.references(matcher="semantic", correct="ppi")
    Truth.references(matcher='semantic', correct='ppi', references=store, match_labels=store)
    >>> tl.Truth.parse("judge:sim-judge-v1@judge-v1")
    Truth.judge('sim-judge-v1@judge-v1', correct='auto', labels=store, ties='exclude')
    >>> tl.Truth.resolve(store, "auto", ["good"]).label
    'labels (every run has gold labels)'
    """

    source: str = "labels"
    matcher: Any = None
    correct: str = "auto"
    gold_labels: Any = None
    reference_lessons: Any = None
    match_labels: Any = None
    ties: str = DEFAULT_TIES
    name: str = field(default="", init=False)
    kind: str = field(default="", init=False)
    why: str = field(default="as asked", init=False)
    label_rows: pd.DataFrame | None = field(default=None, init=False)
    reference_rows: pd.DataFrame | None = field(default=None, init=False)
    store: Store | None = field(default=None, init=False)
    _judged: dict[tuple[Any, ...], Any] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        check_truth_spec(self.source)
        object.__setattr__(self, "correct", check_correct(self.correct))
        check_ties(self.ties)
        if isinstance(self.matcher, str) and self.matcher not in MATCHER_NAMES:
            raise BadInputError(f"matcher must be auto, lexical, semantic or a matcher object, got "
                                f"{self.matcher!r} (a judge matcher: JudgeMatcher, or the "
                                "CLI's --matcher judge:SPEC)", field="matcher")
        object.__setattr__(self, "name", self.source)
        object.__setattr__(self, "kind", self.source if self.source in _TRUTHS else "")

    # ------------------------------------------------------------------ making one

    @classmethod
    def labels(cls, labels: Any = None, *, ties: str = DEFAULT_TIES) -> Truth:
        """The human gold labels (majority; judges left out).

        Parameters
        ----------
        labels : path or DataFrame, optional
            A labels CSV path or frame (None: the store's ``labels`` table).
        ties : {"exclude", "adjudicate", "half"}, default "exclude"
            How a label tie among annotators counts.

        Returns
        -------
        Truth
            Not resolved yet.
        """
        return cls("labels", gold_labels=labels, ties=ties)

    @classmethod
    def references(cls, *, matcher: Any = None, correct: str = "auto",
                   references: Any = None, match_labels: Any = None) -> Truth:
        """Reference lessons matched to the lessons, corrected by the people's match labels.

        Parameters
        ----------
        matcher : None, str or Matcher
            None or ``"auto"`` (the default: the semantic matcher), ``"semantic"``,
            ``"lexical"`` (word overlap), or a matcher object.
        correct : {"auto", "ppi", "none"}, default "auto"
            The correction by the people's match labels.
        references : path or DataFrame, optional
            Reference lessons (None: the store's table).
        match_labels : path or DataFrame, optional
            The people's match labels (None: the store's table).

        Returns
        -------
        Truth
            Not resolved yet.
        """
        return cls("references", matcher=matcher, correct=correct,
                   reference_lessons=references, match_labels=match_labels)

    @classmethod
    def judge(cls, name: str, *, correct: str = "auto", labels: Any = None,
              ties: str = DEFAULT_TIES) -> Truth:
        """One judge's labels, corrected by the gold labels.

        Parameters
        ----------
        name : str
            The judge: ``sim-judge-v1@judge-v1``, with or without ``judge:``, or the
            model alone when one prompt version of it labelled.
        correct : {"auto", "ppi", "none"}, default "auto"
            The correction by the gold labels.
        labels : path or DataFrame, optional
            Gold labels (None: the store's table).
        ties : {"exclude", "adjudicate", "half"}, default "exclude"
            How a label tie counts.

        Returns
        -------
        Truth
            Not resolved yet.
        """
        bare = name.removeprefix(JUDGE_PREFIX)
        return cls(JUDGE_PREFIX + bare, correct=correct, gold_labels=labels, ties=ties)

    @classmethod
    def auto(cls, *, matcher: Any = None, correct: str = "auto", labels: Any = None,
             references: Any = None, match_labels: Any = None,
             ties: str = DEFAULT_TIES) -> Truth:
        """Labels when every run judged has a directly labelled candidate, else references.

        Parameters
        ----------
        matcher, correct, references, match_labels
            As :meth:`references` takes them.
        labels, ties
            As :meth:`labels` takes them.

        Returns
        -------
        Truth
            Not resolved yet; once resolved ``why`` says which it chose.
        """
        return cls("auto", matcher=matcher, correct=correct, gold_labels=labels,
                   reference_lessons=references, match_labels=match_labels, ties=ties)

    @classmethod
    def parse(cls, spec: Any = "labels", **parts: Any) -> Truth:
        """A Truth from the CLI's ``--truth`` spelling.

        Parameters
        ----------
        spec : str, Truth or None, default "labels"
            labels, references, judge:NAME, auto (None: auto), or a Truth.
        **parts
            Under the names of the loose keywords (:data:`LOOSE_KEYWORDS`:
            ``labels``, ``references``, ``matcher``, ``correct``, ``match_labels``,
            ``ties``).

        Returns
        -------
        Truth
            A Truth ``spec`` as it is when no part is given, else with those parts
            replaced (then resolved again).

        Raises
        ------
        BadInputError
            An unknown spec.
        TypeError
            A part that is no loose keyword.
        """
        unknown = sorted(set(parts) - set(LOOSE_KEYWORDS))
        if unknown:
            raise TypeError(f"unexpected keyword argument {unknown[0]!r} "
                            f"(a Truth takes {', '.join(LOOSE_KEYWORDS)})")
        fields = {{"labels": "gold_labels", "references": "reference_lessons"}.get(k, k): v
                  for k, v in parts.items()}
        if isinstance(spec, Truth):
            return replace(spec, **fields) if fields else spec
        return cls("auto" if spec is None else spec, **fields)

    def __repr__(self) -> str:
        head = {"labels": "Truth.labels(", "references": "Truth.references(",
                "auto": "Truth.auto("}.get(self.source)
        if head is None:
            head = f"Truth.judge({self.source.removeprefix(JUDGE_PREFIX)!r}, "
        parts = []
        if self.source in ("references", "auto"):
            parts.append(f"matcher={matcher_name(self.matcher)!r}")
        if self.source != "labels":
            parts.append(f"correct={self.correct!r}")
        if self.source != "references":
            parts.append(f"labels={_rows_repr(self.gold_labels)}")
        if self.source in ("references", "auto"):
            parts += [f"references={_rows_repr(self.reference_lessons)}",
                      f"match_labels={_rows_repr(self.match_labels)}"]
        if self.source != "references":
            parts.append(f"ties={self.ties!r}")
        done = f" -> {self.label}" if self.store is not None else ""
        return head + ", ".join(parts) + ")" + done

    # ------------------------------------------------------------------ resolving it

    @classmethod
    def resolve(cls, store: Store, spec: Any = "labels", runs: Any = (),
                **parts: Any) -> Truth:
        """A truth resolved against ``store``: its rows read once, ``auto`` decided.

        Parameters
        ----------
        store : Store
            The database.
        spec : Truth or str, default "labels"
            A Truth, or a spec with ``parts`` (:meth:`parse`).
        runs : str or sequence of str, default ()
            The runs it will judge: each is checked to have a valid candidate.
        **parts
            As :meth:`parse` takes them.

        Returns
        -------
        Truth
            Resolved; a Truth already resolved against ``store`` is returned as it is
            (its rows and judged runs are reused).

        Raises
        ------
        BadInputError
            An unknown run or judge, a run without a valid candidate.
        """
        if isinstance(spec, Truth) and not parts and spec.store is store:
            return spec
        ids = [runs] if isinstance(runs, str) else list(runs)
        if not isinstance(spec, Truth) and spec is not None:
            try:
                check_truth_spec(spec)
            except BadInputError:
                # The runs first, then the judges the store has labels of.
                for rid in ids:
                    _check_has_candidates(run_record(store, rid))
                raise _unknown(spec, _judges_in(run_labels(
                    store, parts.get("labels"), include_judges=True))) from None
        self = cls.parse(spec, **parts)
        out = replace(self)  # a fresh value: the spec's own never holds a store
        object.__setattr__(out, "store", store)
        for rid in ids:
            _check_has_candidates(out.record(rid))
        src = self.source
        if src == "references":
            out._set("references", "references",
                     reference_rows=run_references(store, self.reference_lessons))
            return out
        rows = run_labels(store, self.gold_labels, include_judges=True)
        if src == "labels":
            out._set("labels", "labels", label_rows=_without_judges(rows))
        elif src == "auto":
            humans = _without_judges(rows)
            for rid in ids:
                # Direct labels only: a run labelled by transfer alone is mostly unlabelled.
                if not _labelled(store, rid, labels=humans, transfer=None,
                                 record=out.record(rid), texts=False)["labelled"].any():
                    out._set("references", "references", f"run {rid!r} has no gold labels",
                             label_rows=humans,
                             reference_rows=run_references(store, self.reference_lessons))
                    return out
            out._set("labels", "labels", "every run has gold labels", label_rows=humans)
        else:
            full = _judge_name(src, _judges_in(rows))
            out._set(full, "labels", label_rows=_judge_rows(rows, full))
        return out

    def _set(self, name: str, kind: str, why: str = "as asked", **rows: Any) -> None:
        for k, v in {"name": name, "kind": kind, "why": why, **rows}.items():
            object.__setattr__(self, k, v)

    def memo(self, key: tuple[Any, ...], make: Any) -> Any:
        """``make()`` once per ``key`` for this resolved truth.

        Its judged runs, records and corrections live here, shared by
        :meth:`corrected` copies.

        Parameters
        ----------
        key : tuple
            What is made.
        make : callable
            Makes it, without arguments.

        Returns
        -------
        object
            What ``make()`` returned the first time.
        """
        self._check_resolved()
        if key not in self._judged:
            self._judged[key] = make()
        return self._judged[key]

    def record(self, run_id: str) -> RunRecord:
        """``run_id``'s row, processed verdicts and candidates, read once per run.

        Parameters
        ----------
        run_id : str
            The run.

        Returns
        -------
        RunRecord
            What ``store._runs.run_record`` reads.
        """
        key = ("record", run_id)
        if key not in self._judged:
            # A reference truth matches the candidates' texts: read with them at once.
            self._judged[key] = run_record(self._store(), run_id,
                                           texts=self.source == "references")
        return self._judged[key]

    @property
    def judge_name(self) -> str | None:
        """The judge annotator, or None for labels and references."""
        return self.name if self.name.startswith(JUDGE_PREFIX) else None

    @property
    def label(self) -> str:
        """The truth and why it was chosen: ``labels (every run has gold labels)``."""
        return f"{self.name} ({self.why})"

    @property
    def matching(self) -> Matcher:
        """The matcher object (:func:`~truss_lab.score._matching.matcher_named`: None and
        ``"auto"`` are the semantic matcher, the default of every reference match)."""
        if self.matcher is None or isinstance(self.matcher, str):
            key = ("matcher",)
            if key not in self._judged:
                self._judged[key] = matcher_named(self.matcher)
            return self._judged[key]
        return self.matcher

    def missing(self, run_id: str) -> str:
        """The message of a run with nothing to evaluate by this truth.

        Parameters
        ----------
        run_id : str
            The run.

        Returns
        -------
        str
            The message, naming the command that would give it a truth.
        """
        if self.judge_name:
            return (f"run {run_id!r} has no lesson labelled by {self.judge_name} to evaluate "
                    "(label them with `truss-lab judge RUN`)")
        return (f"run {run_id!r} has no labelled candidate to evaluate "
                "(load gold labels with `truss-lab ingest labels`, or pass labels=)")

    def _store(self) -> Store:
        if self.store is None:
            raise BadInputError("this Truth is not resolved: Truth.resolve(store, truth, runs)",
                                field="truth")
        return self.store

    def _check_resolved(self) -> None:
        if not self.kind or self.store is None:
            raise BadInputError("this Truth is not resolved: Truth.resolve(store, truth, runs)",
                                field="truth")

    def judged(self, run_id: str, *, score: str = "salience") -> RunTruth | ReferenceTruth:
        """``run_id`` judged by this truth, once per run and score.

        Parameters
        ----------
        run_id : str
            The run.
        score : str, default "salience"
            The candidates column that is thresholded.

        Returns
        -------
        RunTruth or ReferenceTruth
            A :class:`RunTruth` for gold labels or a judge (counted alike; ``ties``
            applies), a :class:`ReferenceTruth` for references (matched by
            ``matcher``).

        Raises
        ------
        BadInputError
            Not resolved, or a run with nothing judged.
        """
        self._check_resolved()
        if self.kind == "references":
            key: tuple[Any, ...] = (run_id, score)
            if key not in self._judged:
                self._judged[key] = reference_truth(
                    self._store(), run_id, references=self.reference_rows, score=score,
                    matcher=self.matching, record=self.record(run_id))
            return self._judged[key]
        rt = self.counted(run_id, score=score)
        if not rt.candidates["judged"].any():
            raise BadInputError(self.missing(run_id),
                                field="labels" if not self.judge_name else "truth")
        return rt

    def counted(self, run_id: str, *, score: str = "salience") -> RunTruth:
        """``run_id`` counted by this labels (or judge) truth, once per run and score.

        As :meth:`judged` gives it, but a run with nothing judged is not refused
        (calibration reports that itself).

        Parameters
        ----------
        run_id : str
            The run.
        score : str, default "salience"
            The candidates column that is thresholded.

        Returns
        -------
        RunTruth
            The counted run.
        """
        self._check_resolved()
        if self.kind == "references":
            raise BadInputError("a references truth counts no labels; use judged()",
                                field="truth")
        key = (run_id, score, self.ties)
        if key not in self._judged:
            self._judged[key] = labels_truth(self._store(), run_id, labels=self.label_rows,
                                             score=score, ties=self.ties,
                                             candidates=self._counted_rows(run_id),
                                             record=self.record(run_id))
        rt = self._judged[key]
        assert isinstance(rt, RunTruth)
        return rt

    def labelled(self, run_id: str) -> pd.DataFrame:
        """:func:`labelled_candidates` of ``run_id`` by this truth's rows, once per run.

        Parameters
        ----------
        run_id : str
            The run.

        Returns
        -------
        DataFrame
            Every candidate, dropped ones too: what its counting, and a report's
            verdict list, take.
        """
        self._check_resolved()
        if self.kind == "references":
            raise BadInputError("a references truth has no labelled candidates; use judged()",
                                field="truth")
        key = ("labelled", run_id)
        if key not in self._judged:
            self._judged[key] = labelled_candidates(self._store(), run_id,
                                                    labels=self.label_rows, valid_only=False,
                                                    record=self.record(run_id))
        return self._judged[key]

    def _counted_rows(self, run_id: str) -> pd.DataFrame:
        """:meth:`labelled` without the text and evidence columns (what counting takes),
        once per run; :meth:`labelled`'s own frame when it was made."""
        if ("labelled", run_id) in self._judged:
            return self.labelled(run_id)
        key = ("counted rows", run_id)
        if key not in self._judged:
            self._judged[key] = _labelled(self._store(), run_id, labels=self.label_rows,
                                          valid_only=False, record=self.record(run_id),
                                          texts=False)
        return self._judged[key]

    def scored(self, run_id: str, *, score: str = "salience") -> pd.DataFrame:
        """The labelled, untied valid candidates of ``run_id`` by this labels truth.

        Parameters
        ----------
        run_id : str
            The run.
        score : str, default "salience"
            The column that becomes ``s``.

        Returns
        -------
        DataFrame
            :func:`scored_candidates` of its rows (what the bootstrap bands and the
            labels hash take); a judge that labelled nothing of the run says so.
        """
        self._check_resolved()
        if self.kind == "references":
            raise BadInputError("a references truth has no labelled candidates; use judged()",
                                field="truth")
        if self.judge_name:  # the judge's own message when it labelled nothing of the run
            self.judged(run_id, score=score)
        return scored_candidates(self._store(), run_id, labels=self.label_rows, score=score)

    def corrected(self, correct: str) -> Truth:
        """This truth with another correction, resolved as it is.

        Parameters
        ----------
        correct : {"auto", "ppi", "none"}
            The correction in place of its own.

        Returns
        -------
        Truth
            Its rows and judged runs shared, so a comparison can set one correction
            for every run.
        """
        if check_correct(correct) == self.correct:
            return self
        out = replace(self, correct=correct)
        if self.store is not None:
            for k in ("name", "kind", "why", "label_rows", "reference_rows", "store",
                      "_judged"):
                object.__setattr__(out, k, getattr(self, k))
        return out

    def gold(self) -> Truth:
        """The gold labels this truth's people gave (what corrects a judge).

        Returns
        -------
        Truth
            Resolved against the same store.
        """
        key = ("gold",)
        if key not in self._judged:
            self._judged[key] = Truth.resolve(self._store(), Truth.labels(self.gold_labels,
                                                                          ties=self.ties))
        return self._judged[key]


def _judge_name(spec: str, judges: list[str]) -> str:
    """The judge annotator ``spec`` (``judge:NAME``) names among ``judges``."""
    name = spec[len(JUDGE_PREFIX):]
    full = name if name.startswith(JUDGE_PREFIX) else JUDGE_PREFIX + name
    if full not in judges:
        # The model alone, when one prompt version of it labelled.
        same = [j for j in judges if j.startswith(full + "@")]
        if len(same) != 1:
            raise _unknown(spec, judges)
        full = same[0]
    return full


def truth_of(truth: Any = "labels", loose: dict[str, Any] | None = None, *,
             where: str) -> Truth | str:
    """``truth=`` of an evaluating function as a :class:`Truth`.

    Parameters
    ----------
    truth : Truth or str
        A Truth (returned as it is) or a spec (``labels``, ``references``,
        ``judge:NAME``, ``auto``; :meth:`Truth.parse`).
    loose : dict, optional
        The keywords a caller passed loose (``labels=``, ``references=``, ``matcher=``,
        ``correct=``, ``match_labels=``, ``ties=``), deprecated: they become the
        Truth's parts, with a :class:`DeprecationWarning` naming the new form.
    where : str
        The function's name, for the warning and a :class:`TypeError` on a keyword
        it does not take.

    Returns
    -------
    Truth or str
        ``truth`` itself without loose keywords (a spec string is checked by
        :meth:`Truth.resolve`, whose error lists the judges with labels), else the Truth
        they make.
    """
    if not loose:
        return truth
    unknown = sorted(set(loose) - set(LOOSE_KEYWORDS))
    if unknown:
        raise TypeError(f"{where}() got an unexpected keyword argument {unknown[0]!r}")
    new = Truth.parse(truth, **loose)
    warnings.warn(f"{where}(..., {'=..., '.join(loose)}=...) is deprecated: the truth is one "
                  f"value, truth={new!r}", DeprecationWarning, stacklevel=3)
    return new
