"""What a run is judged against: its candidates joined to the gold labels.

Store reads only: the labels (from the store, a CSV or a frame), a run's
candidates with their majority label, and the score a sweep thresholds (a
candidates column). The
per-run evaluations in :mod:`truss_lab.evaluate._runs` start from here.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pandas as pd

from ..core._errors import BadInputError
from ..store._runs import run_info
from ..store._store import Store
from ._agreement import majority_labels
from ._transfer import DEFAULT_TRANSFER, transferred_labels

__all__ = ["labelled_candidates", "run_labels", "scored_candidates"]


#: Annotators whose name starts with this are judges (models), not people.
JUDGE_PREFIX = "judge:"


def run_labels(store: Store, labels: Any = None, *,
               include_judges: bool = False) -> pd.DataFrame:
    """Gold labels as a FORMATS.md §3 frame: from the store's labels table
    (default), a CSV path, or a DataFrame. Rows of judge annotators
    (``judge:<model>@<prompt>``) are left out unless ``include_judges``: a judge
    never joins the human majority unless asked."""
    if labels is None:
        df = store.sql(
            "SELECT verdict_hash, extractor_id AS extractor, lesson_index, useful, "
            "NULLIF(annotator, '') AS annotator FROM labels"
        ).df()
    elif isinstance(labels, pd.DataFrame):
        df = labels
    elif isinstance(labels, str | os.PathLike):
        from ..ingest._labels import read_labels

        df, errors = read_labels(labels)
        if errors:
            raise BadInputError(
                f"{len(errors)} bad label line(s); the first: {errors[0]}", source=str(labels)
            )
    else:
        raise BadInputError(f"labels must be None, a path or a DataFrame, got {type(labels)}")
    if not include_judges and "annotator" in df.columns and len(df):
        df = df[~df["annotator"].astype("string").str.startswith(JUDGE_PREFIX).fillna(False)
                .to_numpy(dtype=bool)].reset_index(drop=True)
    return df


def labelled_candidates(
    store: Store,
    run_id: str,
    *,
    labels: Any = None,
    valid_only: bool = True,
    transfer: str | float | None = DEFAULT_TRANSFER,
) -> pd.DataFrame:
    """The candidates of ``run_id`` with their majority gold label.

    One row per candidate (valid ones only by default), ordered by verdict
    seq and lesson_index, with the candidates columns plus ``label`` (nullable
    Int8: 1 useful, 0 not, ``<NA>`` when unlabelled or tied), ``tie``,
    ``n_annotators``, ``labelled`` (bool), and where the label came from:
    ``transferred`` (bool), ``transfer_similarity`` and ``transferred_from``
    (the source extractor). Labels follow content
    (:mod:`~truss_lab.evaluate._transfer`): ``transfer="exact"`` (default) lends
    a label to an equal text of another extractor on the same verdict, a float
    to a lexical match at least that similar, None never; a direct label always
    wins. Use ``df[df.labelled]`` for the rows a sweep can score.
    """
    run_info(store, run_id)  # an unknown run is an error naming the recent ones
    cands = store.sql(
        "SELECT * FROM candidates WHERE run_id = ?"
        + (" AND valid" if valid_only else "")
        + " ORDER BY verdict_seq, lesson_index",
        [run_id],
    ).df()
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


def _score_values(run_id: str, df: pd.DataFrame, score: str) -> np.ndarray:
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
    store: Store, run_id: str, *, labels: Any = None, score: str = "salience"
) -> pd.DataFrame:
    """The labelled, non-tied valid candidates of ``run_id`` that a sweep scores.

    Columns: ``candidate_id, verdict_seq, verdict_hash, extractor_id,
    lesson_index, y`` (uint8 majority label) and ``s`` (the ``score`` values;
    NaN = unscored, never kept). Ordered by verdict seq and lesson index.
    """
    df = labelled_candidates(store, run_id, labels=labels)
    s = _score_values(run_id, df, score)
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
