"""People's match labels (FORMATS.md §5): the human truth a matcher is checked against.

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
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pandas as pd

from ..core._errors import BadInputError
from ..ingest._match_labels import (
    INCLUSION,
    MATCH_LABEL_FIELDS,
    check_match_labels,
    read_match_labels,
)
from ..store._labels import match_label_rows
from ..store._runs import run_info, run_processed_verdicts
from ..store._store import Store
from ._agreement import CANDIDATE_KEY

__all__ = ["MATCH_COLUMNS", "people_matches", "run_match_labels"]

MATCH_COLUMNS: tuple[str, ...] = (*CANDIDATE_KEY, "reference_id", "n_annotators", "n_agree",
                                  "tied", INCLUSION)
"""The columns of :func:`people_matches`, in order."""


def run_match_labels(store: Store, match_labels: Any = None) -> pd.DataFrame:
    """Match labels as a FORMATS.md §5 frame: from the store's ``match_labels`` table
    (default), a §5 CSV path (read strictly and checked against the store as the ingest
    checks it: any bad row is a :class:`BadInputError` naming the first), or a frame.

    Columns ``verdict_hash, extractor, lesson_index, reference_id, annotator,
    inclusion_probability``; ``reference_id`` and ``annotator`` are ``""`` where none
    was given, ``inclusion_probability`` NaN where the file gave none."""
    if match_labels is None:
        df = match_label_rows(store)
    elif isinstance(match_labels, pd.DataFrame):
        missing = [c for c in MATCH_LABEL_FIELDS[:4] if c not in match_labels.columns]
        if missing:
            raise BadInputError(f"match labels lack column(s) {', '.join(missing)}; expected "
                                f"{', '.join(MATCH_LABEL_FIELDS)}", field=missing[0])
        df = match_labels.copy()
    elif isinstance(match_labels, str | os.PathLike):
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
                   run_id: str | None = None) -> pd.DataFrame:
    """One answer per lesson people matched: the majority over annotators.

    ``match_labels``: as :func:`run_match_labels` takes it. ``run_id`` keeps the lessons
    of that run's extractor on the verdicts it processed. One row per lesson, sorted by
    key, with the columns of :data:`MATCH_COLUMNS`: ``verdict_hash, extractor,
    lesson_index``; ``reference_id`` (the answer most annotators gave, ``""`` = none of
    the verdict's references, ``<NA>`` on a tie); ``n_annotators`` (answers);
    ``n_agree`` (of them, the top answer's); ``tied`` (two or more answers share the top
    count: no truth, reported, not guessed); ``inclusion_probability`` (of the verdict,
    NaN for a simple random sample).
    """
    df = run_match_labels(store, match_labels)
    if run_id is not None:
        info = run_info(store, run_id)
        processed = set(run_processed_verdicts(store, run_id)["verdict_hash"].astype(str))
        df = df[(df["extractor"] == str(info["extractor_id"])).to_numpy()
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
