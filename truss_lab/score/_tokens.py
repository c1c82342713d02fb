"""How lesson text becomes tokens: the two tokenisers of the score stage.

There are two on purpose, because they answer different questions:

- **Informative tokens** (:func:`informative_tokens`), for the salience scorers
  ``specificity`` and ``novelty`` and the heuristic extractor. They keep
  identifiers whole: lower-cased runs of ``[a-z0-9_]`` joined by ``. : / -``
  (so ``02:00``, ``utc+1``'s parts and ``v2.1`` survive); informative means
  containing a digit, or 3+ characters and not in :data:`STOPWORDS`. The
  tokens are part of versioned scorer definitions: changing them means
  bumping the ``specificity``/``novelty`` versions.
- **Content words** (:func:`content_words`), for near-duplicate detection
  (``score._similarity``, ``score._junk``). Two phrasings of one lesson must
  meet, so words are split at punctuation, possessives and the suffixes -s,
  -es, -ed, -ing, -ion are stripped, and the filler models wrap lessons in
  ("Remember:", "(important)") is dropped with the stop words. Scores here
  are not versioned; the junk tests and ``benchmarks/bench_junk.py`` pin them.

Merging them would change either the scorer versions or the duplicate flags.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

__all__ = [
    "STOPWORDS",
    "TOKEN_PATTERN",
    "content_words",
    "informative_token_pairs",
    "informative_tokens",
]

# -- informative tokens (salience) -------------------------------------------------

TOKEN_PATTERN = r"[a-z0-9_]+(?:[.:/-][a-z0-9_]+)*"
_TOKEN = re.compile(TOKEN_PATTERN)
# A small, fixed English stopword list: part of the scorer's definition, so
# changing it means bumping the specificity/novelty versions.
STOPWORDS = frozenset(
    """a about above after again against all also and any are as at be because been
    before being below between both but by can could did do does doing down during each
    few for from further had has have having here how if in into is it its itself just
    more most must no nor not now of off on once only or other our out over own same
    should so some such than that the their them then there these they this those
    through to too under until up very was we were what when where which while who why
    will with would you your next time make sure always never use using""".split()
)


def informative_tokens(text: str) -> list[str]:
    """The informative tokens of one text, in order (see the module docstring)."""
    return [t for t in _TOKEN.findall(text.lower()) if _informative(t)]


def _informative(tok: str) -> bool:
    return any(c.isdigit() for c in tok) or (len(tok) >= 3 and tok not in STOPWORDS)


def informative_token_pairs(texts: pd.Series) -> pd.DataFrame:
    """Distinct (row, tok) pairs of informative tokens; row is the position in ``texts``.

    The vectorized form of :func:`informative_tokens` (same tokens, as a set per row).
    """
    s = pd.Series(texts.to_numpy(dtype=object), dtype=object).where(texts.notna().to_numpy(), "")
    exploded = s.astype("str").str.lower().str.findall(_TOKEN).explode().dropna()
    if exploded.empty:
        return pd.DataFrame({"row": np.array([], np.int64), "tok": pd.array([], "str")})
    toks = exploded.astype("str")
    has_digit = toks.str.contains(r"\d", regex=True)
    keep = has_digit | ((toks.str.len() >= 3) & ~toks.isin(STOPWORDS))
    pairs = pd.DataFrame({"row": toks.index.to_numpy(np.int64)[keep.to_numpy()],
                          "tok": toks[keep].to_numpy()})
    return pairs.drop_duplicates(ignore_index=True)


# -- content words (near-duplicates) -----------------------------------------------

_WORD = r"[a-z0-9_]+(?:'[a-z]+)?"
_STOP = frozenset(
    """a an the and or but nor of to in on at by for with from as into onto than then
    this that these those it its is are was were be been being do does did done so
    such very just also too only not no all any each every some more most other
    our your their his her we you they he she i me my us them there here when
    while before after about over under again once can could should would will
    may might must shall has have had having if else up down out off always
    remember lesson learned note important tip takeaway please""".split()
)
"""Stop words, plus the filler models wrap lessons in ("Remember:", "(important)")."""


def content_words(texts: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(row position, token string) for every content word of every text."""
    s = pd.Series(texts.to_numpy(dtype=object), dtype=object).fillna("")
    words = s.astype(str).str.lower().str.findall(_WORD).explode()
    words = words.dropna()
    words = words[~words.isin(_STOP)]
    # Light suffix stripping, enough to match "tests"/"test", "migrated"/"migration"
    # and "scheduler's"/"scheduler" without a stemmer dependency.
    words = words.str.replace(r"'[a-z]+$", "", regex=True)
    words = words.str.replace(r"(?<=[a-z]{3})(?:ions|ion|ings|ing|ed)$", "",
                              regex=True)
    words = words.str.replace(r"(ss|[xz]|ch|sh)es$", r"\1", regex=True)
    words = words.str.replace(r"(?<=[a-z]{3})(?<!s)s$", "", regex=True)
    words = words[words.str.len() > 0]
    return words.index.to_numpy(dtype=np.int64), words.to_numpy(dtype=object)
