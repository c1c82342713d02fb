"""The simulator's vocabulary: domains, checks and canned model text, from package data.

The strings live in ``vocabulary.json`` beside this module (data, not code);
this module loads them once and derives the flat check table the generators
index into. The near-duplicate rewrites are functions, so they stay here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
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
    "LESSON_FRAMES",
    "MAX_CHK",
    "NEAR_DUP",
    "PASS_NOTES",
    "PROSE_AFTER",
    "PROSE_BEFORE",
    "PROSE_ONLY",
    "REFERENCE_FRAMES",
    "SAL_OUT",
    "SAL_STRINGS",
    "SYNONYMS",
    "Check",
    "Domain",
]


class Check(NamedTuple):
    """One contract check of a domain, with the text each outcome produces."""

    name: str
    tag: str  # added to a verdict's tags when the check fails
    failure: str  # short failure, quoted in the verdict summary
    pass_evidence: str
    fail_evidence: str  # with {n}
    lesson: str  # the specific, grounded lesson
    vague_lesson: str  # the same lesson, too vague to use


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
           tuple(Check(**c) for c in d["checks"]))
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
