"""The truth tables as evaluation reads them: gold and judge labels (``labels``),
reference lessons (``reference_lessons``), the judges that labelled, and the lessons
labels are keyed to (the ingest's own questions on these tables are
:mod:`truss_lab.store._ingested`).

Every read of those tables for evaluation is here, so the truth module
(:mod:`truss_lab.evaluate._truth`) and the judges (:mod:`truss_lab.evaluate._judges`)
call functions instead of writing SQL; the writes are the governed ingest's
(:func:`~truss_lab.ingest._ingest.append_labels`). Frames come back as DuckDB
gives them; shaping them is the caller's job.
"""

from __future__ import annotations

import pandas as pd

from ._store import Store

__all__ = [
    "JUDGE_PREFIX",
    "judge_annotators",
    "label_rows",
    "lesson_keys",
    "lesson_texts",
    "match_label_rows",
    "reference_rows",
]

#: Annotators whose name starts with this are judges (models), not people: the labels
#: table's convention, written by a judge (``judge:<model>@<prompt>``), left out of the
#: human majority by the truth, listed by :func:`judge_annotators`.
JUDGE_PREFIX = "judge:"


def label_rows(store: Store) -> pd.DataFrame:
    """Every label row as Formats §3 columns (``verdict_hash, extractor,
    lesson_index, useful, annotator``; an empty annotator is NULL)."""
    return store.sql(
        "SELECT verdict_hash, extractor_id AS extractor, lesson_index, useful, "
        "NULLIF(annotator, '') AS annotator FROM labels"
    ).df()


def judge_annotators(store: Store) -> list[str]:
    """The judge annotators (:data:`JUDGE_PREFIX`) with label rows, sorted."""
    return [r[0] for r in store.sql(
        "SELECT DISTINCT annotator FROM labels WHERE starts_with(annotator, ?) ORDER BY 1",
        [JUDGE_PREFIX]).fetchall()]


def reference_rows(store: Store) -> pd.DataFrame:
    """Every reference lesson as Formats §4 columns, by verdict, annotator, id."""
    return store.sql(
        "SELECT verdict_hash, reference_id, text, evidence, annotator "
        "FROM reference_lessons ORDER BY verdict_hash, annotator, reference_id"
    ).df()


def match_label_rows(store: Store) -> pd.DataFrame:
    """Every match label as Formats §5 columns (``verdict_hash, extractor,
    lesson_index, reference_id, annotator, inclusion_probability``; ``reference_id`` and
    ``annotator`` ``""`` when none), by verdict, extractor, lesson, annotator."""
    return store.sql(
        "SELECT verdict_hash, extractor_id AS extractor, lesson_index, reference_id, "
        "annotator, inclusion_probability FROM match_labels ORDER BY verdict_hash, "
        "extractor_id, lesson_index, annotator"
    ).df()


def lesson_keys(store: Store, run_id: str | None, *, valid_only: bool = False) -> pd.DataFrame:
    """The distinct label keys (``verdict_hash, extractor, lesson_index``) of the
    candidates of ``run_id`` (of every run when None; valid ones only with
    ``valid_only``): the lessons a label can name."""
    where, params = ("run_id = ?", [run_id]) if run_id is not None else ("TRUE", [])
    return store.sql(
        "SELECT DISTINCT verdict_hash, extractor_id AS extractor, lesson_index FROM candidates "
        f"WHERE {where}" + (" AND valid" if valid_only else ""), params,
    ).df()


def lesson_texts(store: Store, run_id: str | None, *, valid_only: bool = False,
                 paired_only: bool = False, evidence: bool = True,
                 ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(targets, sources)`` of label transfer: the lessons of ``run_id`` (every
    run's when None; valid ones only with ``valid_only``) and the lessons of every
    extractor on the same verdicts, one row per label key with ``text, evidence``.
    ``paired_only``: on the verdicts that hold lessons of two extractors or more only
    (a label moves between extractors: on no other verdict can one move); ``evidence``
    False leaves that column out (an exact transfer compares texts alone)."""
    where, params = ("run_id = ?", [run_id]) if run_id is not None else ("TRUE", [])
    cols = ("verdict_hash, extractor_id AS extractor, lesson_index, text"
            + (", evidence" if evidence else ""))
    verdicts = f"SELECT verdict_hash FROM candidates WHERE {where}"
    also = " AND valid" if valid_only else ""
    if paired_only:
        verdicts = ("SELECT verdict_hash FROM candidates WHERE verdict_hash IN ("
                    + verdicts + ") GROUP BY verdict_hash HAVING count(DISTINCT extractor_id) > 1")
        also += " AND verdict_hash IN (" + verdicts + ")"
    targets = store.sql(
        f"SELECT DISTINCT ON (verdict_hash, extractor_id, lesson_index) {cols} FROM candidates "
        f"WHERE {where}{also}", params + (params if paired_only else [])).df()
    sources = store.sql(
        f"SELECT DISTINCT ON (verdict_hash, extractor_id, lesson_index) {cols} FROM candidates "
        f"WHERE verdict_hash IN ({verdicts})", params).df()
    return targets, sources


def labelled_keys(store: Store, annotator: str) -> set[tuple[str, str, int]]:
    """The label keys ``(verdict_hash, extractor_id, lesson_index)`` ``annotator`` has
    labelled: the lessons a labelling session of theirs can skip."""
    rows = store.sql(
        "SELECT verdict_hash, extractor_id, lesson_index FROM labels WHERE annotator = ?",
        [annotator],
    ).fetchall()
    return {(h, e, int(i)) for h, e, i in rows}
