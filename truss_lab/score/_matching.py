"""Matching a run's lessons to reference lessons (Formats §4).

A **matcher** is a function from the candidate lessons and the reference
lessons of ONE verdict (two frames with ``text`` and ``evidence``) to a
similarity matrix, element ``[i, j]`` the similarity of lesson ``i`` to
reference ``j`` (higher is more alike). :class:`SemanticMatcher` (static sentence
embeddings) is the default wherever no matcher is named (``None``, ``"auto"``:
:func:`matcher_named`); :class:`LexicalMatcher` (word overlap) is the cheap one by
name; any callable of that shape (a judge) plugs in.

**Assignment** (:func:`match_lessons`) is one-to-one and greedy in descending
score, ties broken by ``lesson_index``: each lesson in turn claims the most
similar reference of its verdict that no earlier lesson claimed, if that
similarity reaches ``threshold``. So a lesson's matched flag depends only on
lessons ranked above it, and it is the same at every gate threshold: the
reference sweep is one sort plus cumulative sums. A duplicate of a matched
lesson finds its reference taken and stays unmatched (a false positive).
Lessons without a score (NaN) are never written and claim nothing. A NaN
similarity means the matcher could not score the pair (a judge matcher whose
answer was malformed): it claims nothing, and evaluation leaves a verdict with
such pairs out (``evaluate._truth``) rather than count it as judged.

The lexical matcher: word-set Jaccard of the two texts, over the content words
of :func:`~truss_lab.score._tokens.content_words` (the near-duplicate
detector's words: stop words and filler dropped, light suffix stripping),
computed with :class:`~truss_lab.score._similarity.TokenSets` for every
(lesson, reference) pair of a whole run at once. Evidence is a feature: when
both cite evidence and share none (the lesson is about another check), the
similarity is multiplied by ``evidence_conflict`` (0.5). The factor was chosen on an
earlier, templated sample against the simulator's truth: adding evidence *agreement* as
a bonus matched vague lessons that cite the right check and cost precision; the
conflict factor guards against a lesson about one check matching another
check's reference (and costs a paraphrase that cites only the summary).
Threshold: :data:`LEXICAL_MATCH_THRESHOLD`.

The semantic matcher (the default): cosine similarity (negative values clipped to 0)
of WordLlama sentence embeddings (``l2_supercat``, 256 dimensions: token embeddings
averaged in numpy, no torch), with the same evidence-conflict factor. ``wordllama`` is
a core dependency; its weights and tokenizer ship inside its 19 MB wheel, and it is
loaded from there with downloads disabled: nothing is fetched at run time. Loading it
imports ``tokenizers``, ``safetensors`` and the like (its own dependencies; no request
is made), so it is imported inside :func:`_wordllama` only when a semantic matcher is
first built, never when truss_lab or its command line is imported.
Threshold: :data:`SEMANTIC_MATCH_THRESHOLD`.

Both thresholds were tuned on the bundled sample against its people's match labels
(``scripts/tune_match_thresholds.py`` prints the grid and says how).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..core._errors import BadInputError
from ..core._threads import blas_limited
from ..ingest._fields import MAX_REFERENCE_TEXT
from ._similarity import TokenSets, jaccard

__all__ = [
    "DEFAULT_MATCHER",
    "LEXICAL_MATCH_THRESHOLD",
    "MATCHER_NAMES",
    "SEMANTIC_HINT",
    "SEMANTIC_MATCH_THRESHOLD",
    "LexicalMatcher",
    "Matcher",
    "SemanticMatcher",
    "match_lessons",
    "match_threshold_of",
    "matcher_name",
    "matcher_named",
]

#: The lexical matcher's match threshold (word-set Jaccard): the best pair F1 against
#: the bundled sample's people's match labels, pooled over its three simulated
#: extractors (``scripts/tune_match_thresholds.py``, docs/how-to/score-without-labels.md,
#: "Match thresholds": 0.817, flat from 0.04 to 0.08; 0.551 at the 0.22 chosen on an
#: earlier, templated sample, where it matched little of the sample's rewordings). So low
#: a threshold costs precision (0.761 against the people).
LEXICAL_MATCH_THRESHOLD = 0.06

#: The semantic matcher's match threshold (cosine similarity of sentence embeddings):
#: the best pair F1 against the bundled sample's people's match labels, pooled over its
#: three simulated extractors (``scripts/tune_match_thresholds.py``: 0.871; 0.863 at the
#: 0.3 chosen before against the simulator's truth).
SEMANTIC_MATCH_THRESHOLD = 0.26

#: The matcher used wherever none is named (``None``, ``"auto"``).
DEFAULT_MATCHER = "semantic"

#: The names a matcher goes by (``"auto"``: :data:`DEFAULT_MATCHER`); a judge matcher is
#: an object (``JudgeMatcher``, the CLI's ``--matcher judge:SPEC``).
MATCHER_NAMES = ("auto", "lexical", "semantic")

SEMANTIC_HINT = ("WordLlama is a dependency of truss_lab: reinstall it "
                 "(pip install -e . in a checkout)")

Matcher = Callable[[pd.DataFrame, pd.DataFrame], np.ndarray]
"""(lessons of one verdict, references of that verdict) -> similarity matrix
of shape (n_lessons, n_references); both frames have ``text`` and ``evidence``."""


def matcher_named(matcher: Any = None) -> Any:
    """The matcher ``matcher`` names.

    Parameters
    ----------
    matcher : None, str or matcher object
        ``None`` or ``"auto"``: the default (:data:`DEFAULT_MATCHER`, one
        :class:`SemanticMatcher` per process); ``"lexical"``: a :class:`LexicalMatcher`;
        ``"semantic"``: the :class:`SemanticMatcher`; any other object is returned as it
        is (a judge matcher, a callable).

    Returns
    -------
    object
        The matcher.

    Raises
    ------
    BadInputError
        Another string, or WordLlama missing or unloadable.
    """
    if matcher is None or (isinstance(matcher, str) and matcher == "auto"):
        matcher = DEFAULT_MATCHER
    if isinstance(matcher, str):
        if matcher == "lexical":
            return LexicalMatcher()
        if matcher == "semantic":
            return _default_semantic()
        raise BadInputError(f"matcher must be one of {', '.join(MATCHER_NAMES)} or a matcher "
                            f"object, got {matcher!r}", field="matcher")
    return matcher


def matcher_name(matcher: Any = None) -> str:
    """What outputs call ``matcher``, without building it.

    Parameters
    ----------
    matcher : None, str or matcher object
        As :func:`matcher_named` takes it.

    Returns
    -------
    str
        ``"semantic"`` for ``None`` and ``"auto"`` (:data:`DEFAULT_MATCHER`), a name as
        it is, else the object's ``name``.
    """
    if matcher is None or (isinstance(matcher, str) and matcher == "auto"):
        return DEFAULT_MATCHER
    return matcher if isinstance(matcher, str) else str(getattr(matcher, "name", matcher))


def match_threshold_of(matcher: Any, threshold: float | None = None) -> float:
    """``threshold`` when given, else the matcher's own ``match_threshold`` (each
    matcher's similarities live on their own scale; ``None`` and a name: that matcher's),
    else :data:`LEXICAL_MATCH_THRESHOLD` (a plain callable, taken as word overlap)."""
    if threshold is not None:
        return float(threshold)
    if matcher is None or isinstance(matcher, str):
        return (LEXICAL_MATCH_THRESHOLD if matcher_name(matcher) == "lexical"
                else SEMANTIC_MATCH_THRESHOLD)
    return float(getattr(matcher, "match_threshold", LEXICAL_MATCH_THRESHOLD))


def _evidence_sets(col: pd.Series) -> list[frozenset[str]]:
    out = []
    for v in col.tolist():
        if v is None or (isinstance(v, float) and np.isnan(v)):
            out.append(frozenset())
        else:
            out.append(frozenset(str(x) for x in v))
    return out


def _evidence_conflict(lessons: pd.DataFrame, references: pd.DataFrame,
                       li: np.ndarray, ri: np.ndarray) -> np.ndarray:
    """Per pair, whether both cite evidence and share none (the lesson is about another
    check); all False when either frame has no ``evidence`` column."""
    if "evidence" not in lessons or "evidence" not in references:
        return np.zeros(len(li), dtype=bool)
    ev_l, ev_r = _evidence_sets(lessons["evidence"]), _evidence_sets(references["evidence"])
    return np.fromiter((bool(ev_l[a]) and bool(ev_r[b]) and ev_l[a].isdisjoint(ev_r[b])
                        for a, b in zip(np.asarray(li).tolist(), np.asarray(ri).tolist(),
                                        strict=True)),
                       dtype=bool, count=len(li))


def _check_conflict_factor(evidence_conflict: float) -> float:
    if not 0.0 <= evidence_conflict <= 1.0:
        raise BadInputError(f"evidence_conflict must be in [0, 1], got {evidence_conflict}",
                            field="evidence_conflict")
    return float(evidence_conflict)


class LexicalMatcher:
    """Word-set Jaccard of lesson and reference texts, damped on conflicting evidence.

    Calling it on one verdict's frames returns the matrix; :meth:`pairs` scores
    given (lesson, reference) pairs of many verdicts in one vectorised pass,
    which :func:`match_lessons` uses for a whole run.

    Parameters
    ----------
    evidence_conflict : float, default 0.5
        The factor a similarity is multiplied by when the lesson's and the
        reference's evidence conflict, in [0, 1] (1: no damping).

    Raises
    ------
    BadInputError
        ``evidence_conflict`` outside [0, 1].
    """

    name = "lexical"
    match_threshold = LEXICAL_MATCH_THRESHOLD

    def __init__(self, *, evidence_conflict: float = 0.5) -> None:
        self.evidence_conflict = _check_conflict_factor(evidence_conflict)

    def __repr__(self) -> str:
        return f"LexicalMatcher(evidence_conflict={self.evidence_conflict})"

    def __call__(self, lessons: pd.DataFrame, references: pd.DataFrame) -> np.ndarray:
        n, m = len(lessons), len(references)
        li, ri = np.repeat(np.arange(n), m), np.tile(np.arange(m), n)
        return self.pairs(lessons, references, li, ri).reshape(n, m)

    def pairs(self, lessons: pd.DataFrame, references: pd.DataFrame,
              li: np.ndarray, ri: np.ndarray) -> np.ndarray:
        """Similarity of lesson ``li[k]`` to reference ``ri[k]`` (row positions), for every k.

        Parameters
        ----------
        lessons : pandas.DataFrame
            The lessons (``text``, ``evidence``).
        references : pandas.DataFrame
            The references (``text``, ``evidence``).
        li, ri : numpy.ndarray
            The pairs' lesson and reference row positions.

        Returns
        -------
        numpy.ndarray
            One similarity in [0, 1] per pair.
        """
        texts = pd.concat([lessons["text"], references["text"]], ignore_index=True)
        sets = TokenSets(texts)
        sim = jaccard(sets, np.asarray(li, np.int64), np.asarray(ri, np.int64) + len(lessons))
        if self.evidence_conflict < 1.0 and len(sim):
            conflict = _evidence_conflict(lessons, references, li, ri)
            sim = np.where(conflict, sim * self.evidence_conflict, sim)
        return sim


@functools.cache
def _wordllama() -> Any:
    """The WordLlama model of the wheel, loaded once per process with downloads disabled."""
    try:
        # Imported here, not at module top: loading it costs about a second and pulls in
        # tokenizers, so only a command that matches lessons pays for it.
        import wordllama
    except ImportError:
        raise BadInputError(f"the semantic matcher needs WordLlama: {SEMANTIC_HINT}",
                            field="matcher") from None
    # The wheel ships weights/l2_supercat_256.safetensors and
    # tokenizers/l2_supercat_tokenizer_config.json; 0.4.0.post1 looks for the tokenizer
    # under tokenizer/ and would then download it, so the package folder is also its
    # cache (where it looks under tokenizers/) and downloads are off.
    here = Path(wordllama.__file__).parent
    try:
        return wordllama.WordLlama.load(config="l2_supercat", dim=256, cache_dir=here,
                                        disable_download=True)
    except (FileNotFoundError, ValueError) as exc:
        raise BadInputError(f"the semantic matcher cannot load WordLlama's bundled model "
                            f"({exc}): {SEMANTIC_HINT}", field="matcher") from None


class SemanticMatcher:
    """Cosine similarity of static sentence embeddings (WordLlama), damped on conflicting
    evidence: it sees "pin schedules to UTC" and "fix the timetable in universal time" as
    close where word overlap sees nothing in common.

    Same protocol as :class:`LexicalMatcher` (``__call__`` on one verdict, ``pairs`` in
    bulk); each distinct text is embedded once per call. The default matcher.

    Parameters
    ----------
    evidence_conflict : float, default 0.5
        The factor a similarity is multiplied by when the lesson's and the
        reference's evidence conflict, in [0, 1] (1: no damping).

    Raises
    ------
    BadInputError
        ``evidence_conflict`` outside [0, 1], or WordLlama missing or unloadable.
    """

    name = "semantic"
    match_threshold = SEMANTIC_MATCH_THRESHOLD

    def __init__(self, *, evidence_conflict: float = 0.5) -> None:
        self.evidence_conflict = _check_conflict_factor(evidence_conflict)
        self._model = _wordllama()

    def __repr__(self) -> str:
        return f"SemanticMatcher(evidence_conflict={self.evidence_conflict})"

    def __call__(self, lessons: pd.DataFrame, references: pd.DataFrame) -> np.ndarray:
        n, m = len(lessons), len(references)
        li, ri = np.repeat(np.arange(n), m), np.tile(np.arange(m), n)
        return self.pairs(lessons, references, li, ri).reshape(n, m)

    @blas_limited()
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length embeddings of ``texts`` (rows), each of its first 16,384 characters
        (a reference's bound); an empty text is the zero vector.

        Parameters
        ----------
        texts : sequence of str
            The texts.

        Returns
        -------
        numpy.ndarray
            One row per text.
        """
        # Each text cut to a reference's bound before it is tokenized: WordLlama holds a
        # text's every token at once (a 20 MB reference written past the ingest's bound
        # took 23 GB), and a mean over the first 16,384 characters says what it is about.
        texts = [str(t)[:MAX_REFERENCE_TEXT] for t in texts]
        out = np.zeros((len(texts), int(self._model.embedding.shape[1])), dtype=np.float64)
        idx = [i for i, t in enumerate(texts) if t.strip()]
        if idx:
            e = np.asarray(self._model.embed([texts[i] for i in idx]), dtype=np.float64)
            norm = np.linalg.norm(e, axis=1, keepdims=True)
            out[idx] = np.divide(e, norm, out=np.zeros_like(e), where=norm > 0)
        return out

    def pairs(self, lessons: pd.DataFrame, references: pd.DataFrame,
              li: np.ndarray, ri: np.ndarray) -> np.ndarray:
        """Similarity of lesson ``li[k]`` to reference ``ri[k]`` (row positions), for every k.

        Parameters
        ----------
        lessons : pandas.DataFrame
            The lessons (``text``, ``evidence``).
        references : pandas.DataFrame
            The references (``text``, ``evidence``).
        li, ri : numpy.ndarray
            The pairs' lesson and reference row positions.

        Returns
        -------
        numpy.ndarray
            One similarity in [0, 1] per pair.
        """
        li, ri = np.asarray(li, np.int64), np.asarray(ri, np.int64)
        if not len(li):
            return np.zeros(0)
        texts = pd.concat([lessons["text"], references["text"]], ignore_index=True)
        texts = texts.fillna("").astype(str)
        # factorize, not np.unique: a fixed-width unicode array is as wide as the longest
        # text times every text (a 20 MB reference asked for 61 GiB).
        inv, uniq = pd.factorize(texts.to_numpy(dtype=object))
        emb = self.embed([str(t) for t in uniq])
        a, b = emb[inv[li]], emb[inv[ri + len(lessons)]]
        sim = np.clip(np.einsum("ij,ij->i", a, b), 0.0, 1.0)
        if self.evidence_conflict < 1.0:
            conflict = _evidence_conflict(lessons, references, li, ri)
            sim = np.where(conflict, sim * self.evidence_conflict, sim)
        return sim


@functools.cache
def _default_semantic() -> SemanticMatcher:
    """The default matcher, built once per process (its model is loaded once anyway)."""
    return SemanticMatcher()


def _pair_similarity(matcher: Any, lessons: pd.DataFrame, refs: pd.DataFrame,
                     li: np.ndarray, ri: np.ndarray) -> np.ndarray:
    """Similarities of the given pairs: in bulk when the matcher can, else verdict by verdict."""
    if hasattr(matcher, "pairs"):
        return np.asarray(matcher.pairs(lessons, refs, li, ri), dtype=np.float64)
    sim = np.empty(len(li), dtype=np.float64)
    # A plain matcher sees one verdict at a time, as its contract says.
    verdict = lessons["verdict_hash"].to_numpy(dtype=object)[li]
    for _, idx in pd.Series(range(len(li))).groupby(verdict, sort=False).indices.items():
        ul, inv_l = np.unique(li[idx], return_inverse=True)
        ur, inv_r = np.unique(ri[idx], return_inverse=True)
        mat = np.asarray(matcher(lessons.iloc[ul].reset_index(drop=True),
                                 refs.iloc[ur].reset_index(drop=True)), dtype=np.float64)
        if mat.shape != (len(ul), len(ur)):
            raise BadInputError(f"matcher returned shape {mat.shape}, expected "
                                f"{(len(ul), len(ur))}", field="matcher")
        sim[idx] = mat[inv_l, inv_r]
    return sim


def _require(df: pd.DataFrame, cols: Sequence[str], name: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise BadInputError(f"{name} lack column(s) {', '.join(missing)}", field=name)


def _greedy_claims(cand: pd.DataFrame, les: pd.DataFrame,
                   s: np.ndarray) -> tuple[dict[int, str], dict[int, float]]:
    """The claims of :func:`match_lessons`' greedy pass over the candidate pairs
    ``cand`` (``li``, ``reference_id``, ``sim``, all above the threshold): per lesson
    row that claimed one, its reference id and the similarity. ``s`` is the score."""
    bl = cand["li"].to_numpy(np.int64)
    # Greedy order: score descending, then lesson_index, then similarity
    # descending (then reference id, so equal similarities resolve the same way).
    order = np.lexsort((cand["reference_id"].to_numpy(dtype=str), -cand["sim"].to_numpy(),
                        les["lesson_index"].to_numpy(np.int64)[bl], -s[bl]))
    verdict = les["verdict_hash"].astype(str).to_numpy(dtype=object)
    claimed: set[tuple[str, str]] = set()
    done: set[int] = set()
    ref_ids = cand["reference_id"].to_numpy(dtype=object)[order].tolist()
    sims = cand["sim"].to_numpy()[order].tolist()
    match_ref: dict[int, str] = {}
    match_sim: dict[int, float] = {}
    # Only pairs above the match threshold are walked (a few per lesson); the
    # claims are sequential by nature, so this is the one Python loop.
    for i, r, sm in zip(bl[order].tolist(), ref_ids, sims, strict=True):
        if i in done:
            continue
        key = (verdict[i], r)
        if key in claimed:
            continue
        claimed.add(key)
        done.add(i)
        match_ref[i], match_sim[i] = r, sm
    return match_ref, match_sim


def match_lessons(
    lessons: pd.DataFrame,
    references: pd.DataFrame,
    *,
    matcher: Matcher | str | None = None,
    threshold: float | None = None,
    score: str = "s",
) -> pd.DataFrame:
    """Greedy one-to-one assignment of one run's lessons to their verdicts' references.

    ``lessons``: one row per lesson of ONE run (one extractor), with
    ``verdict_hash``, ``lesson_index``, ``text``, ``evidence`` and the ``score``
    column that orders the greedy pass (the score the gate thresholds).
    ``references``: ``verdict_hash``, ``reference_id``, ``text``, ``evidence``;
    several rows may share a (verdict_hash, reference_id) -- one reference worded
    by several annotators -- and a lesson's similarity to the reference is then
    its best over those wordings. ``"none"`` rows (empty text) are ignored.

    Returns ``lessons``' rows in their order with three columns added, for row
    ``i``: ``reference_id`` (the reference lesson i claimed, ``<NA>`` when
    none), ``similarity`` (of that match; else the best similarity lesson i had
    to any reference of its verdict, 0.0 without one) and ``matched`` (bool).

    Parameters
    ----------
    lessons : pandas.DataFrame
        The run's lessons (above).
    references : pandas.DataFrame
        The references (above).
    matcher : Matcher or str, optional
        The similarity or its name (:func:`matcher_named`; default the semantic
        matcher).
    threshold : float, optional
        The similarity a lesson needs to claim a reference, in [0, 1] (default the
        matcher's own: :func:`match_threshold_of`).
    score : str, default "s"
        The column that orders the greedy pass.

    Returns
    -------
    pandas.DataFrame
        ``lessons`` with the three columns (above).

    Raises
    ------
    BadInputError
        A missing column, a threshold outside [0, 1].
    """
    _require(lessons, ["verdict_hash", "lesson_index", "text", score], "lessons")
    _require(references, ["verdict_hash", "reference_id", "text"], "references")
    matcher = matcher_named(matcher)
    threshold = match_threshold_of(matcher, threshold)
    if not 0.0 <= float(threshold) <= 1.0 or np.isnan(threshold):
        raise BadInputError(f"match threshold must be in [0, 1], got {threshold}",
                            field="threshold")
    les = lessons.reset_index(drop=True)
    refs = references[references["reference_id"].astype(str) != "none"].reset_index(drop=True)
    if "evidence" not in refs.columns:
        refs = refs.assign(evidence=[[] for _ in range(len(refs))])
    les = les.assign(text=les["text"].fillna("").astype(str))
    n = len(les)
    out = lessons.reset_index(drop=True).copy()
    out["reference_id"] = pd.array([pd.NA] * n, dtype="string")
    out["similarity"] = np.zeros(n)
    out["matched"] = np.zeros(n, dtype=bool)
    if n == 0 or refs.empty:
        return out
    # Every (lesson, reference wording) pair of the same verdict, found by a join.
    lv = pd.DataFrame({"verdict_hash": les["verdict_hash"].astype(str), "li": np.arange(n)})
    rv = pd.DataFrame({"verdict_hash": refs["verdict_hash"].astype(str),
                       "ri": np.arange(len(refs)),
                       "reference_id": refs["reference_id"].astype(str)})
    pairs = lv.merge(rv, on="verdict_hash", how="inner")
    if pairs.empty:
        return out
    li, ri = pairs["li"].to_numpy(np.int64), pairs["ri"].to_numpy(np.int64)
    pairs["sim"] = _pair_similarity(matcher, les, refs, li, ri)
    # One similarity per (lesson, reference): its best wording.
    best = pairs.groupby(["li", "reference_id"], as_index=False, sort=False)["sim"].max()
    top = best.groupby("li")["sim"].max()
    out.loc[top.index.to_numpy(), "similarity"] = top.to_numpy()
    s = les[score].to_numpy(dtype=np.float64, na_value=np.nan)
    cand = best[(best["sim"].to_numpy() >= threshold) & ~np.isnan(s[best["li"].to_numpy()])]
    if cand.empty:
        return out
    match_ref, match_sim = _greedy_claims(cand, les, s)
    if match_ref:
        idx = np.fromiter(match_ref, dtype=np.int64, count=len(match_ref))
        out.loc[idx, "reference_id"] = list(match_ref.values())
        out.loc[idx, "similarity"] = list(match_sim.values())
        out.loc[idx, "matched"] = True
    return out
