"""Junk-lesson detectors: the usual complaints about memory systems, as columns.

:func:`junk_flags` returns one boolean column per detector, aligned with the
candidates passed in (same index, same order), so the flags drop straight into
a sweep or a groupby. The detectors:

``duplicate_in_verdict``
    a near-duplicate of an earlier lesson for the same verdict (same run);
``duplicate_in_run``
    a near-duplicate of an earlier lesson anywhere in the same run (a superset
    of ``duplicate_in_verdict``: memory would hold the same lesson twice);
``duplicate_of_memory``
    a near-duplicate of an entry of ``memory`` that is not the candidate's own
    entry and was not written by the candidate's run (always False when no
    ``memory`` is given);
``ungrounded``
    the evidence cites a check (``check:<name>``) the verdict does not have;
``no_evidence``
    the evidence list is missing or empty (a separate flag: nothing to check);
``restates_summary``
    the lesson only repeats the verdict's summary (at least ``restate_containment``
    of its content words are in the summary);
``junk``
    any of the above.

Near-duplicate means: the token sets (content words as in ``score._tokens``:
lower-cased words; stop words and filler such as "Remember:" dropped;
possessives and the suffixes -s, -es, -ed, -ing, -ion stripped) have Jaccard
similarity >= ``threshold``
AND the two lessons name the same identifiers (tokens with ``_`` or a digit,
such as check names): "the tz_regression check …" and "the dedup check …" are
different lessons however alike the rest of the sentence is. "Earlier" is by
(``verdict_seq``, ``lesson_index``) when those columns exist, else row order;
the first of a group of duplicates is never flagged.

Identical token sets collapse first; the rest are compared by
``score._similarity`` (exact Jaccard on all pairs or on MinHash/LSH candidates).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..core._errors import BadInputError, TrussLabWarning
from ._similarity import TokenSets, similar_pairs
from ._tokens import content_words

__all__ = [
    "DETECTORS",
    "NEAR_DUPLICATE_THRESHOLD",
    "group_column",
    "junk_flags",
    "junk_rates",
    "near_duplicate_pairs",
]

NEAR_DUPLICATE_THRESHOLD = 0.7
"""Content-word Jaccard from which two lessons are near-duplicates (the same lesson):
the default of the duplicate detectors and of self-consistency's clusters."""

DETECTORS = (
    "duplicate_in_verdict",
    "duplicate_in_run",
    "duplicate_of_memory",
    "ungrounded",
    "no_evidence",
    "restates_summary",
)
"""The detector columns of :func:`junk_flags`, in order (``junk`` follows)."""


# -- duplicates --------------------------------------------------------------------


def _order(c: pd.DataFrame) -> np.ndarray:
    """Rank of each row in "earlier" order."""
    cols = [x for x in ("verdict_seq", "lesson_index") if x in c.columns]
    if not cols:
        return np.arange(len(c))
    frame = c[cols].reset_index(drop=True).assign(_pos=np.arange(len(c)))
    ranked = frame.sort_values([*cols, "_pos"], kind="stable")["_pos"].to_numpy()
    rank = np.empty(len(c), dtype=np.int64)
    rank[ranked] = np.arange(len(c))
    return rank


def near_duplicate_pairs(sets: TokenSets, group: np.ndarray, rank: np.ndarray,
                         threshold: float, method: str = "auto", *,
                         same_identifiers: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Row pairs ``(a[k], b[k])`` of the same ``group`` that are near-duplicates (the
    module's definition): each row whose (identifiers, token set) equals an earlier
    row's (by ``rank``) is paired with that first row; the distinct sets are paired
    by :func:`similar_pairs`. Rows without content words pair with nothing.
    The one definition behind the duplicate detectors and self-consistency clusters;
    ``same_identifiers=False`` drops the identifier rule (Jaccard alone decides)."""
    n = sets.n
    nonempty = sets.size > 0
    g, _ = pd.factorize(pd.Series(group))
    ident = sets.ident_key if same_identifiers else np.zeros(n, dtype=np.uint64)
    # Collapse identical token sets: per (group, identifiers, set), its first row.
    frame = pd.DataFrame({"g": g, "ik": ident, "sk": sets.set_key, "rank": rank,
                          "row": np.arange(n)})[nonempty]
    frame = frame.sort_values("rank", kind="stable")
    first = frame.groupby(["g", "ik", "sk"], sort=False)["row"].transform("first").to_numpy()
    rows = frame["row"].to_numpy()
    same = first != rows
    a_id, b_id = first[same], rows[same]
    reps = rows[~same]  # one row per unique set, the earliest
    if len(reps) < 2:
        return a_id, b_id
    gk = pd.Series(g[reps]).astype(str) + ":" + pd.Series(ident[reps]).astype(str)
    i, j = similar_pairs(sets, reps, gk.to_numpy(), threshold=threshold, method=method)
    return np.r_[a_id, reps[i]].astype(np.int64), np.r_[b_id, reps[j]].astype(np.int64)


def _dup_within(sets: TokenSets, group: np.ndarray, rank: np.ndarray, threshold: float,
                method: str) -> np.ndarray:
    """Flag rows with an earlier near-duplicate in the same group."""
    a, b = near_duplicate_pairs(sets, group, rank, threshold, method)
    flags = np.zeros(sets.n, dtype=bool)
    flags[np.where(rank[a] > rank[b], a, b)] = True
    return flags


def _dup_of_memory(sets: TokenSets, n_cand: int, cand: pd.DataFrame, memory: pd.DataFrame,
                   threshold: float, method: str) -> np.ndarray:
    n = sets.n
    side = np.r_[np.zeros(n_cand, bool), np.ones(n - n_cand, bool)]
    nonempty = sets.size > 0
    rows = np.flatnonzero(nonempty)
    # Unique (side, identifiers, set): compare unique sets only.
    frame = pd.DataFrame({"side": side[rows], "ik": sets.ident_key[rows],
                          "sk": sets.set_key[rows], "row": rows})
    rep = frame.groupby(["side", "ik", "sk"], sort=False)["row"].transform("first").to_numpy()
    reps = np.unique(rep)
    i, j = similar_pairs(sets, reps, sets.ident_key[reps].astype(str), threshold=threshold,
                         method=method)
    a, b = reps[i], reps[j]
    cross = side[a] != side[b]
    c_rep = np.where(side[a], b, a)[cross]
    m_rep = np.where(side[a], a, b)[cross]
    if len(c_rep) == 0:
        return np.zeros(n_cand, dtype=bool)
    # Expand back to rows: candidate rows of c_rep x memory rows of m_rep; drop
    # a candidate's own entry and entries its own run wrote.
    row_rep = pd.DataFrame({"row": rows, "rep": rep})
    pairs = pd.DataFrame({"c_rep": c_rep, "m_rep": m_rep})
    pairs = pairs.merge(row_rep.rename(columns={"row": "c_row", "rep": "c_rep"}), on="c_rep")
    pairs = pairs.merge(row_rep.rename(columns={"row": "m_row", "rep": "m_rep"}), on="m_rep")
    m_idx = pairs["m_row"].to_numpy() - n_cand
    c_idx = pairs["c_row"].to_numpy()
    keep = np.ones(len(pairs), dtype=bool)
    for col in ("entry_id", "run_id"):
        if col in cand.columns and col in memory.columns:
            cv = cand[col].to_numpy(dtype=object)[c_idx]
            mv = memory[col].to_numpy(dtype=object)[m_idx]
            same = (pd.Series(cv).eq(pd.Series(mv)) & pd.Series(cv).notna()).to_numpy()
            keep &= ~same
    flags = np.zeros(n_cand, dtype=bool)
    flags[c_idx[keep]] = True
    return flags


# -- grounding and restating -----------------------------------------------------


def _payloads(verdicts: pd.DataFrame) -> pd.DataFrame:
    """verdict_hash, summary, check_names (list) from a verdicts frame."""
    if "verdict_hash" not in verdicts.columns:
        if "hash" in verdicts.columns:
            verdicts = verdicts.rename(columns={"hash": "verdict_hash"})
        else:
            raise BadInputError(
                "verdicts need a verdict_hash (or hash) column and either payload or "
                "summary + checks columns", field="verdicts",
            )
    if "payload" in verdicts.columns:
        pl = [json.loads(p) if isinstance(p, str | bytes) else dict(p)
              for p in verdicts["payload"]]
        summary = [str(p.get("summary") or "") for p in pl]
        checks = [p.get("checks") or [] for p in pl]
    elif {"summary", "checks"} <= set(verdicts.columns):
        summary = verdicts["summary"].fillna("").astype(str).tolist()
        checks = list(verdicts["checks"])
    else:
        raise BadInputError(
            "verdicts need a payload column, or summary and checks columns", field="verdicts"
        )
    names = [
        [c["name"] if isinstance(c, dict) else str(c) for c in (cs if cs is not None else [])]
        for cs in checks
    ]
    return pd.DataFrame({"verdict_hash": verdicts["verdict_hash"].to_numpy(dtype=object),
                         "summary": summary, "check_names": names}).drop_duplicates(
        "verdict_hash")


def _evidence_frame(evidence: pd.Series) -> pd.DataFrame:
    ev = pd.Series(evidence.to_numpy(dtype=object), dtype=object)
    ev = ev.map(lambda e: list(e) if isinstance(e, list | tuple | np.ndarray) else [])
    x = ev.explode().dropna().astype(str).str.strip()
    return pd.DataFrame({"row": x.index.to_numpy(dtype=np.int64), "item": x.to_numpy()})


def _grounding(cand: pd.DataFrame, v: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    n = len(cand)
    ev = _evidence_frame(cand["evidence"]) if "evidence" in cand.columns else pd.DataFrame(
        {"row": np.zeros(0, np.int64), "item": []})
    ev = ev[ev["item"].str.len() > 0]
    no_evidence = np.bincount(ev["row"].to_numpy(), minlength=n) == 0
    vh = cand["verdict_hash"].to_numpy(dtype=object)
    checks = (v[["verdict_hash", "check_names"]].explode("check_names").dropna()
              .rename(columns={"check_names": "name"}).drop_duplicates())
    checks["known"] = True
    ev = ev.assign(verdict_hash=vh[ev["row"].to_numpy()])
    # "check:<name>" cites a check; a bare item equal to one of the verdict's
    # check names counts as a citation too; anything else is free-text evidence.
    cited = ev["item"].str.extract(r"^check:\s*(.+)$", expand=False).str.strip()
    bare = ev.merge(checks, left_on=["verdict_hash", "item"],
                    right_on=["verdict_hash", "name"], how="left")["known"]
    name = cited.where(cited.notna(), ev["item"].where(bare.fillna(False).to_numpy()))
    ev = ev.assign(name=name.to_numpy())
    ev = ev[ev["name"].notna()]
    found = ev.merge(checks, on=["verdict_hash", "name"], how="left")["known"]
    bad_rows = ev["row"].to_numpy()[found.isna().to_numpy()]
    has_verdict = pd.Series(vh).isin(v["verdict_hash"]).to_numpy()
    ungrounded = np.zeros(n, dtype=bool)
    ungrounded[bad_rows] = True
    return ungrounded & has_verdict, no_evidence


# -- public ------------------------------------------------------------------------


def group_column(c: pd.DataFrame) -> np.ndarray:
    """Per candidate, the group the duplicate detectors look within: its ``run_id``,
    else its ``extractor_id`` (or §3 ``extractor``), else one group for all."""
    for col in ("run_id", "extractor_id", "extractor"):
        if col in c.columns:
            return c[col].astype(object).fillna("").to_numpy()
    return np.zeros(len(c), dtype=object)


def junk_flags(
    candidates: pd.DataFrame,
    verdicts: pd.DataFrame,
    *,
    memory: pd.DataFrame | None = None,
    threshold: float = NEAR_DUPLICATE_THRESHOLD,
    restate_containment: float = 0.8,
    method: str = "auto",
) -> pd.DataFrame:
    """Flag junk lessons: one boolean column per detector (:data:`DETECTORS`) + ``junk``.

    ``candidates`` needs ``text``, ``evidence`` and ``verdict_hash``; ``run_id``
    (else ``extractor_id``) groups the duplicate detectors, ``verdict_seq`` and
    ``lesson_index`` order them, ``entry_id`` excludes a candidate's own memory
    entry. ``verdicts`` has ``verdict_hash`` (or ``hash``) and a ``payload``
    (dict or JSON text, as :func:`truss_lab.verdict_payloads` gives them) or
    ``summary`` and ``checks``. ``memory`` (``text``, optional ``entry_id`` and
    ``run_id``) enables ``duplicate_of_memory``. The result has the candidates'
    index, so ``candidates.join(flags)`` lines up. Candidates whose verdict is
    not in ``verdicts`` get ``ungrounded`` and ``restates_summary`` False, with
    a warning.

    Parameters
    ----------
    candidates : pandas.DataFrame
        Candidate lessons (the ``candidates`` table, or a run's rows of it).
    verdicts : pandas.DataFrame
        Their verdicts, as :func:`verdict_payloads` gives them.
    memory : pandas.DataFrame, optional
        Lessons already in memory (``query_memory``); enables ``duplicate_of_memory``.
    threshold : float, default 0.7
        Token-set Jaccard similarity at which two lessons are near-duplicates.
    restate_containment : float, default 0.8
        Share of a lesson's tokens found in its verdict's summary at which it only
        restates the summary.
    method : {"auto", "exact", "lsh"}, default "auto"
        How near-duplicates are found: every pair, MinHash/LSH, or LSH for large groups.

    Returns
    -------
    pandas.DataFrame
        On the candidates' index: ``duplicate_in_verdict``, ``duplicate_in_run``,
        ``duplicate_of_memory``, ``ungrounded``, ``no_evidence``, ``restates_summary``
        and ``junk`` (any of them), all booleans.

    Raises
    ------
    BadInputError
        A required column is missing, or ``method`` or a threshold is invalid.

    See Also
    --------
    junk_rates : The share of candidates each detector flags, per run.

    Examples
    --------
    >>> candidates = store.table("candidates").query("run_id == 'good'")
    >>> flags = tl.junk_flags(candidates, tl.verdict_payloads(store))
    >>> int(flags["junk"].sum()), int(flags["no_evidence"].sum())
    (379, 223)
    """
    missing = [c for c in ("text", "verdict_hash") if c not in candidates.columns]
    if missing:
        raise BadInputError(f"candidates lack column(s) {', '.join(missing)}",
                            field="candidates")
    if not 0.0 < threshold <= 1.0:
        raise BadInputError(f"threshold must be in (0, 1], got {threshold!r}", field="threshold")
    if not 0.0 < restate_containment <= 1.0:
        raise BadInputError(f"restate_containment must be in (0, 1], got "
                            f"{restate_containment!r}", field="restate_containment")
    if method not in ("auto", "all", "lsh"):
        raise BadInputError(f"method must be auto, all or lsh, got {method!r}", field="method")
    c = candidates.reset_index(drop=True)
    n = len(c)
    v = _payloads(verdicts)
    unknown = ~c["verdict_hash"].isin(v["verdict_hash"]).to_numpy()
    if unknown.any():
        warnings.warn(
            f"{int(unknown.sum())} candidate(s) name a verdict not in `verdicts`: "
            "ungrounded and restates_summary are False for them", TrussLabWarning,
            stacklevel=2,
        )
    texts = c["text"]
    if memory is not None and len(memory):
        if "text" not in memory.columns:
            raise BadInputError("memory lacks a text column", field="memory")
        mem = memory.reset_index(drop=True)
        all_sets = TokenSets(pd.concat([texts.astype(object), mem["text"].astype(object)],
                                   ignore_index=True))
    else:
        mem = None
        all_sets = TokenSets(texts)
    cand_sets = TokenSets(texts) if mem is not None else all_sets
    rank = _order(c)
    group = group_column(c)
    vh = c["verdict_hash"].astype(object).fillna("").to_numpy()
    verdict_group = (pd.Series(group, dtype=object).astype(str) + "\x1f"
                     + pd.Series(vh, dtype=object).astype(str)).to_numpy(dtype=object)
    in_verdict = _dup_within(cand_sets, verdict_group, rank, threshold, method)
    in_run = _dup_within(cand_sets, group, rank, threshold, method) | in_verdict
    of_memory = (_dup_of_memory(all_sets, n, c, mem, threshold, method)
                 if mem is not None else np.zeros(n, dtype=bool))
    ungrounded, no_evidence = _grounding(c, v)
    summaries = c[["verdict_hash"]].merge(v[["verdict_hash", "summary"]], how="left",
                                          on="verdict_hash")["summary"].fillna("")
    restates = _restate_flags(texts, summaries, restate_containment) & ~unknown
    out = pd.DataFrame(
        {
            "duplicate_in_verdict": in_verdict,
            "duplicate_in_run": in_run,
            "duplicate_of_memory": of_memory,
            "ungrounded": ungrounded,
            "no_evidence": no_evidence,
            "restates_summary": restates,
        },
        index=candidates.index,
    )
    out["junk"] = out.to_numpy().any(axis=1)
    return out


def _restate_flags(texts: pd.Series, summaries: pd.Series, containment: float) -> np.ndarray:
    """Lesson k restates summary k: >= ``containment`` of its content words (and at
    least two) appear in the summary."""
    n = len(texts)
    if n == 0:
        return np.zeros(0, dtype=bool)
    lr, lt = content_words(pd.Series(texts.to_numpy(dtype=object)))
    sr, st = content_words(pd.Series(summaries.to_numpy(dtype=object)))
    lesson = pd.DataFrame({"row": lr, "tok": lt}).drop_duplicates()
    summ = pd.DataFrame({"row": sr, "tok": st}).drop_duplicates()
    hit = lesson.merge(summ, on=["row", "tok"], how="left", indicator=True)
    inter = np.bincount(hit.loc[hit["_merge"] == "both", "row"].to_numpy(dtype=np.int64),
                        minlength=n)
    size = np.bincount(lesson["row"].to_numpy(dtype=np.int64), minlength=n)
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.where(size > 0, inter / np.maximum(size, 1), 0.0)
    return (size >= 2) & (frac >= containment)


def junk_rates(
    flags: pd.DataFrame,
    by: Sequence[str] = ("run_id",),
    *,
    candidates: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The fraction of candidates each detector flags, per group.

    ``by`` names columns of ``flags`` or, when given, of ``candidates`` (aligned
    by index, as :func:`junk_flags` returns them). One row per group: the ``by``
    columns, ``n`` (candidates), then one rate column per flag (in [0, 1]).

    Parameters
    ----------
    flags : pandas.DataFrame
        What :func:`junk_flags` returned.
    by : sequence of str, default ("run_id",)
        The columns to group by.
    candidates : pandas.DataFrame, optional
        The candidates ``flags`` was computed on, when ``by`` names their columns.

    Returns
    -------
    pandas.DataFrame
        One row per group: the ``by`` columns, ``n`` and one rate per flag.

    Raises
    ------
    BadInputError
        A column of ``by`` is in neither frame.

    See Also
    --------
    junk_flags : The flags per candidate.

    Examples
    --------
    >>> candidates = store.table("candidates").query("run_id == 'good'")
    >>> flags = tl.junk_flags(candidates, tl.verdict_payloads(store))
    >>> rates = tl.junk_rates(flags, candidates=candidates)
    >>> rates[["run_id", "n", "junk"]].round(3)
      run_id     n   junk
    0   good  1134  0.334
    """
    by = list(by)
    flag_cols = [c for c in (*DETECTORS, "junk") if c in flags.columns]
    if not flag_cols:
        raise BadInputError("flags has none of the junk_flags columns", field="flags")
    frame: Any = flags[flag_cols].astype(float)
    for col in by:
        if col in flags.columns:
            frame[col] = flags[col]
        elif candidates is not None and col in candidates.columns:
            frame[col] = candidates[col].reindex(flags.index)
        else:
            raise BadInputError(
                f"no column {col!r} to group by: pass candidates=... or join it to flags",
                field="by",
            )
    g = frame.groupby(by, dropna=False, sort=True)
    out = g[flag_cols].mean()
    out.insert(0, "n", g.size())
    return out.reset_index()
