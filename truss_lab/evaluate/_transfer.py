"""Labels follow content: a gold label on one extractor's lesson applies to another
extractor's lesson on the same verdict that says the same thing.

A gold label (FORMATS.md §3) names a lesson by position, so only the extractor it
was written for can use it. But two extractors often write the same lesson: then
the label is about the text, not the position, and it should travel.

- **Exact** (the default, ``transfer="exact"``): the two texts are equal after
  :func:`normalise_text` (case folded, punctuation dropped, whitespace collapsed).
  Similarity 1.0.
- **Matched** (opt-in, ``transfer=<float>``): the lexical matcher
  (:class:`~truss_lab.score._matching.LexicalMatcher`, the one reference lessons
  use) scores at least that threshold; exact equals still count with 1.0.
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
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd

from ..core._errors import BadInputError
from ..score._matching import LexicalMatcher
from ..store._store import Store
from ._agreement import CANDIDATE_KEY, majority_labels
from ._sweep import UndefinedMetricWarning

__all__ = [
    "DEFAULT_TRANSFER",
    "check_transfer",
    "normalise_text",
    "transfer_label_rows",
    "transfer_report",
    "transferred_labels",
]

#: Labels follow equal texts by default; a float opts in to lexical matches.
DEFAULT_TRANSFER = "exact"

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
    pairs = tgt.reset_index(names="ti").merge(
        src.reset_index(names="si"), on="verdict_hash", suffixes=("", "_src"))
    pairs = pairs[pairs["extractor"] != pairs["extractor_src"]].reset_index(drop=True)
    if pairs.empty:
        return empty
    sim = (pairs["norm"] == pairs["norm_src"]).to_numpy(dtype=np.float64)
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


def _store_lessons(store: Store, run_id: str | None, *,
                   valid_only: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(targets, sources): the run's lessons (every run's without ``run_id``; valid
    ones only with ``valid_only``) and the lessons of every extractor on the same
    verdicts."""
    where, params = ("run_id = ?", [run_id]) if run_id is not None else ("TRUE", [])
    targets = store.sql(
        "SELECT DISTINCT ON (verdict_hash, extractor_id, lesson_index) verdict_hash, "
        "extractor_id AS extractor, lesson_index, text, evidence FROM candidates "
        f"WHERE {where}" + (" AND valid" if valid_only else ""), params).df()
    sources = store.sql(
        "SELECT DISTINCT ON (verdict_hash, extractor_id, lesson_index) verdict_hash, "
        "extractor_id AS extractor, lesson_index, text, evidence FROM candidates "
        f"WHERE verdict_hash IN (SELECT verdict_hash FROM candidates WHERE {where})",
        params).df()
    return targets, sources


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
    targets, sources = _store_lessons(store, run_id)
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
    (NaN when none). ``labels``: §3 rows (default: the store's labels table);
    ``valid_only``: count valid lessons only (as :func:`label_report` does).
    """
    from ._truth import run_labels

    lab = run_labels(store, labels)
    cols = ["extractor", "n_lessons", "n_direct", "n_transferred", "n_both", "agreement"]
    targets, sources = _store_lessons(store, run_id, valid_only=valid_only)
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
