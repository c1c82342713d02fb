"""The simulator's words and draws: uniform randomness, the vocabulary, how lessons are worded.

The simulator's random draws, all built from ``Generator.random()``.

NumPy keeps the stream of uniform doubles stable across versions but not that
of its normal, Poisson or integer samplers, so those are built here from
uniforms: the same seed gives byte-identical datasets on any NumPy.

The simulator's vocabulary: domains, checks and canned model text, from package data.

The strings live in ``vocabulary.json`` beside this module (data, not code);
this module loads them once and derives the flat check table the generators
index into. The near-duplicate rewrites are functions, so they stay here.

How the simulator words a lesson: sentence frames, synonyms, reordering, paraphrase.

A grounded lesson says one thing per check, in four wordings written by hand
(``Check.lesson`` and three ``Check.variants``: other verbs and nouns, the passive
voice, the goal first), so two writers who pick different wordings share few
words, as two people do. Each writer (an extractor, a paraphrasing extractor, a
reference annotator) picks a wording, swaps words for synonyms (a fixed pair list,
``SYNONYMS``, and sets of interchangeable words, ``SYNONYM_SETS``, each occurrence
replaced by any other member of its set), may hedge it (``HEDGES``), and puts it in
a frame with the verdict's own specifics (check name, goal object, run id, the
failed check's evidence with its number). The specifics make two verdicts'
lessons about one check different lessons, as real ones are; the rest makes one
lesson's wordings differ. How much each writer does is a :class:`Voice`.

Every choice is a uniform draw made by the caller (``u`` arguments), so this
module holds no random state.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from importlib import resources
from typing import Any, NamedTuple

import numpy as np

__all__ = [
    "CHECKS",
    "DOMAINS",
    "DOM_NCHK",
    "DOM_START",
    "GENERIC_LESSONS",
    "HEAVY_FRAMES",
    "HEAVY_VOICE",
    "HEDGES",
    "LESSON_FRAMES",
    "LIGHT_VOICE",
    "MAX_CHK",
    "NEAR_DUP",
    "N_SYNONYMS",
    "N_VOICE",
    "PARAPHRASE_NAMES",
    "PASS_NOTES",
    "PROSE_AFTER",
    "PROSE_BEFORE",
    "PROSE_ONLY",
    "REFERENCE_FRAMES",
    "SAL_OUT",
    "SAL_STRINGS",
    "SYNONYMS",
    "SYNONYM_SETS",
    "Check",
    "Domain",
    "Seed",
    "Voice",
    "heavy_paraphrase",
    "lesson_text",
    "light_paraphrase",
    "name_key",
    "normal",
    "pick",
    "poisson",
    "reference_text",
    "reorder",
    "resynonymize",
    "sigmoid",
    "stream",
    "synonymize",
    "voiced",
    "wording",
]


Seed = int | tuple[int, int]
"""A simulation's seed, or ``(seed, block)`` for block >= 1 of a long one (its own streams)."""


def stream(seed: Seed, *key: int) -> np.random.Generator:
    """The generator of the sub-stream ``key`` of ``seed`` (a ``(seed, block)`` pair is
    the entropy ``[seed, block]``: streams no other block or seed draws)."""
    entropy = seed if isinstance(seed, int) else list(seed)
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy,
                                                                      spawn_key=key)))


def name_key(name: str) -> int:
    """A stream key from a name (its SHA-256), stable across runs and platforms."""
    return int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:8], "big")


def normal(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` standard normal draws."""
    # Box-Muller; 1 - u keeps the log argument in (0, 1].
    u1 = 1.0 - rng.random(n)
    u2 = rng.random(n)
    return np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)


def poisson(rng: np.random.Generator, mean: np.ndarray, cap: int = 5) -> np.ndarray:
    """One Poisson draw per ``mean``, truncated at ``cap`` (by inverse transform)."""
    mean = np.asarray(mean, dtype=float)
    u = rng.random(mean.shape[0])
    k = np.zeros(mean.shape[0], dtype=np.int64)
    pmf = np.exp(-mean)
    cdf = pmf.copy()
    for i in range(1, cap + 1):
        k += u >= cdf
        pmf = pmf * mean / i
        cdf = cdf + pmf
    return k


def pick(rng: np.random.Generator, n_options: int | np.ndarray, n: int) -> np.ndarray:
    """``n`` uniform choices among ``n_options`` (an int or one per draw)."""
    return np.floor(rng.random(n) * n_options).astype(np.int64)


def sigmoid(x: np.ndarray) -> np.ndarray:
    """The logistic function."""
    return 1.0 / (1.0 + np.exp(-x))



class Check(NamedTuple):
    """One contract check of a domain, with the text each outcome produces."""

    name: str
    tag: str  # added to a verdict's tags when the check fails
    failure: str  # short failure, quoted in the verdict summary
    pass_evidence: str
    fail_evidence: str  # with {n}
    lesson: str  # the specific, grounded lesson
    vague_lesson: str  # the same lesson, too vague to use
    variants: tuple[str, ...] = ()  # the same lesson in other words


class Voice(NamedTuple):
    """How much one writer rewords: P(another wording than ``Check.lesson``), the share
    of synonym sets swapped, P(a hedge)."""

    variant: float
    sets: float
    hedge: float


class Domain(NamedTuple):
    """A kind of contract: goal templates (with {obj}), objects and its checks."""

    name: str
    goals: tuple[str, ...]
    objects: tuple[str, ...]
    checks: tuple[Check, ...]


def _load() -> dict[str, Any]:
    text = resources.files(__package__).joinpath("vocabulary.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


_DATA = _load()
DOMAINS: tuple[Domain, ...] = tuple(
    Domain(d["name"], tuple(d["goals"]), tuple(d["objects"]),
           tuple(Check(**{**c, "variants": tuple(c.get("variants", ()))})
                 for c in d["checks"]))
    for d in _DATA["domains"]
)
GENERIC_LESSONS: tuple[str, ...] = tuple(_DATA["generic_lessons"])
PASS_NOTES: tuple[str, ...] = tuple(_DATA["pass_notes"])  # with {check} and {domain}
PROSE_ONLY: tuple[str, ...] = tuple(_DATA["prose_only"])  # prose instead of JSON
PROSE_BEFORE: tuple[str, ...] = tuple(_DATA["prose_before"])  # chatter around the JSON
PROSE_AFTER: tuple[str, ...] = tuple(_DATA["prose_after"])
SAL_STRINGS: tuple[str, ...] = tuple(_DATA["salience_strings"])  # salience as text
SAL_OUT: tuple[float, ...] = tuple(float(x) for x in _DATA["salience_out_of_range"])
# Sentence frames around a lesson and the verdict's specifics ({L}, {l}, {check},
# {obj}, {evidence}, {failure}): the extractors' own wording, the heavy
# paraphrases' and each reference annotator's.
LESSON_FRAMES: tuple[str, ...] = tuple(_DATA["lesson_frames"])
HEAVY_FRAMES: tuple[str, ...] = tuple(_DATA["heavy_frames"])
REFERENCE_FRAMES: dict[str, tuple[str, ...]] = {
    k: tuple(v) for k, v in _DATA["reference_frames"].items()}
# Word or phrase → a synonym; a writer swaps each with its own probability.
SYNONYMS: tuple[tuple[str, str], ...] = tuple((a, b) for a, b in _DATA["synonyms"])
# Sets of interchangeable words or phrases: any member may stand for any other.
SYNONYM_SETS: tuple[tuple[str, ...], ...] = tuple(tuple(x) for x in _DATA["synonym_sets"])
HEDGES: tuple[str, ...] = tuple(_DATA["hedges"])  # with {L} or {l}

# Rewrites that turn a lesson into a near-duplicate of itself.
NEAR_DUP: tuple[Callable[[str], str], ...] = (
    lambda t: t.rstrip("."),
    lambda t: "Remember: " + t[0].lower() + t[1:],
    lambda t: t.replace(" before ", " prior to ", 1) if " before " in t else t + " (important)",
    lambda t: "Lesson: " + t,
)

# Flattened check table (global check id → check), domain → range of check ids.
CHECKS: list[Check] = [c for d in DOMAINS for c in d.checks]
DOM_START = np.cumsum([0] + [len(d.checks) for d in DOMAINS])[:-1]
DOM_NCHK = np.array([len(d.checks) for d in DOMAINS])
MAX_CHK = int(DOM_NCHK.max())



N_SYNONYMS = len(SYNONYMS)
PARAPHRASE_NAMES = ("", "light", "heavy")  # truth column ``paraphrase`` by level code

_SYN_INDEX = {a.lower(): k for k, (a, _) in enumerate(SYNONYMS)}
# One pass over the text, longest phrase first, so a swapped word is never swapped again.
_SYN_RE = re.compile(
    r"\b(?:" + "|".join(re.escape(a) for a in sorted(_SYN_INDEX, key=len, reverse=True))
    + r")\b", re.IGNORECASE)
_LIGHT_RATE = 0.35  # share of the synonyms a light paraphrase swaps
_HEAVY_RATE = 0.75


def synonymize(text: str, u: Sequence[float], rate: float) -> str:
    """``text`` with synonym ``k`` swapped in where ``u[k] < rate`` (first letter's case kept)."""
    def swap(m: re.Match[str]) -> str:
        w = m.group(0)
        k = _SYN_INDEX[w.lower()]
        if u[k] >= rate:
            return w
        new = SYNONYMS[k][1]
        return new[0].upper() + new[1:] if w[0].isupper() else new
    return _SYN_RE.sub(swap, text)


def _fill(frame: str, sentence: str, check: Check, obj: str, evidence: str,
          run: str = "") -> str:
    s = sentence.rstrip(".")
    return frame.format(L=s[0].upper() + s[1:], l=s[0].lower() + s[1:], check=check.name,
                        obj=obj, evidence=evidence, failure=check.failure, run=run)


def lesson_text(check: Check, obj: str, evidence: str, run: str, u_frame: float,
                u_syn: Sequence[float], syn_rate: float, u_voice: Sequence[float],
                voice: Voice) -> str:
    """An extractor's grounded lesson about ``check`` on run ``run`` (its own wording)."""
    frame = LESSON_FRAMES[int(u_frame * len(LESSON_FRAMES))]
    sentence = voiced(synonymize(wording(check, u_voice[0], voice), u_syn, syn_rate),
                      u_voice, voice)
    return _fill(frame, sentence, check, obj, evidence, run)


def reorder(sentence: str) -> str:
    """The same advice with its clauses in another order."""
    s = sentence.rstrip(".")
    if "; " in s:
        a, b = s.split("; ", 1)
        out = f"{b}, so {a[0].lower()}{a[1:]}"
    elif s.startswith(("When ", "Before ", "If ", "To ", "So that ", "So ")) and ", " in s:
        a, b = s.split(", ", 1)
        out = f"{b} {a[0].lower()}{a[1:]}"
    elif ", and " in s:
        a, b = s.split(", and ", 1)
        out = f"{b}, and {a[0].lower()}{a[1:]}"
    elif " and " in s:
        a, b = s.split(" and ", 1)
        out = f"{b}, after {a[0].lower()}{a[1:]}"
    else:
        out = f"What helps here: {s[0].lower()}{s[1:]}"
    return out[0].upper() + out[1:] + "."


#: A light paraphrase keeps the wording and frame: a third of the pair synonyms and of
#: the synonym sets, now and then a hedge.
LIGHT_VOICE = Voice(variant=0.0, sets=0.35, hedge=0.2)
#: A heavy paraphrase says it its own way: never the canonical wording, nearly every
#: synonym, clauses reordered, often hedged, in a frame that moves the specifics.
HEAVY_VOICE = Voice(variant=1.0, sets=0.95, hedge=0.5)


def light_paraphrase(text: str, u_syn: Sequence[float], u_voice: Sequence[float]) -> str:
    """A light paraphrase of an extractor's ``text``: same frame and order, some words
    swapped, maybe hedged."""
    return voiced(synonymize(text, u_syn, _LIGHT_RATE), u_voice, LIGHT_VOICE)


def heavy_paraphrase(check: Check, obj: str, evidence: str, run: str, u_frame: float,
                     u_syn: Sequence[float], u_voice: Sequence[float]) -> str:
    """A heavy paraphrase: mostly another wording, clauses reordered, specifics moved,
    most synonyms swapped, often hedged."""
    frame = HEAVY_FRAMES[int(u_frame * len(HEAVY_FRAMES))]
    sentence = synonymize(wording(check, u_voice[0], HEAVY_VOICE), u_syn, _HEAVY_RATE)
    return _fill(frame, voiced(sentence, u_voice, HEAVY_VOICE, reordered=True), check, obj,
                 evidence, run)


def reference_text(annotator: str, check: Check, obj: str, u_frame: float,
                   u_syn: Sequence[float], syn_rate: float, u_voice: Sequence[float],
                   voice: Voice) -> str:
    """An annotator's reference lesson for a failed ``check`` (the expert's own wording:
    the advice and the goal's object, not the incident's figures)."""
    frames = REFERENCE_FRAMES[annotator]
    frame = frames[int(u_frame * len(frames))]
    sentence = voiced(synonymize(wording(check, u_voice[0], voice), u_syn, syn_rate),
                      u_voice, voice)
    return _fill(frame, sentence, check, obj, "")


_SET_INDEX = {w.lower(): k for k, members in enumerate(SYNONYM_SETS) for w in members}
# Whole words only: "test" in "load-test" or "re-test" is not the word "test".
_SET_RE = re.compile(
    r"(?<![\w-])(?:" + "|".join(re.escape(a) for a in sorted(_SET_INDEX, key=len, reverse=True))
    + r")(?![\w-])", re.IGNORECASE)
#: Uniforms one :class:`Voice` draws per text: the wording, one per synonym set, two
#: for the hedge.
N_VOICE = 1 + len(SYNONYM_SETS) + 2


def resynonymize(text: str, u: Sequence[float], rate: float) -> str:
    """``text`` with each word of synonym set ``k`` swapped for another member of the
    set where ``u[k] < rate`` (which one: ``u[k] / rate``, uniform again); case of the
    first letter kept."""
    def swap(m: re.Match[str]) -> str:
        w = m.group(0)
        k = _SET_INDEX[w.lower()]
        if u[k] >= rate:
            return w
        others = [x for x in SYNONYM_SETS[k] if x.lower() != w.lower()]
        new = others[min(int(u[k] / rate * len(others)), len(others) - 1)]
        return new[0].upper() + new[1:] if w[0].isupper() else new
    return _SET_RE.sub(swap, text)


def wording(check: Check, u: float, voice: Voice) -> str:
    """Which of the check's wordings a writer with ``voice`` starts from (``u`` uniform)."""
    if u >= voice.variant or not check.variants:
        return check.lesson
    return check.variants[min(int(u / voice.variant * len(check.variants)),
                              len(check.variants) - 1)]


def voiced(sentence: str, u: Sequence[float], voice: Voice, *, reordered: bool = False) -> str:
    """``sentence`` as a writer with ``voice`` says it (``u``: the :data:`N_VOICE`
    uniforms of :func:`wording` and this): synonym sets swapped, clauses reordered when
    asked, then maybe a hedge."""
    out = resynonymize(sentence, u[1:1 + len(SYNONYM_SETS)], voice.sets)
    if reordered:
        out = reorder(out)
    out = out.rstrip(".")
    uh = u[1 + len(SYNONYM_SETS):]
    if uh[0] < voice.hedge:
        out = HEDGES[int(uh[1] * len(HEDGES))].format(
            L=out[0].upper() + out[1:], l=out[0].lower() + out[1:]).rstrip(".")
    return out + "."
