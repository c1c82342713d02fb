"""How the simulator words a lesson: sentence frames, synonyms, reordering, paraphrase.

A grounded lesson is one canonical sentence per check (``Check.lesson``); each
writer (an extractor, a paraphrasing extractor, a reference annotator) puts
it in a frame with the verdict's own specifics (check name, goal object, run
id, the failed check's evidence with its number) and swaps some words for synonyms.
The specifics make two verdicts' lessons about one check different lessons,
as real ones are; the synonyms and frames make one lesson's wordings differ.

Every choice is a uniform draw made by the caller (``u`` arguments), so this
module holds no random state.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ._vocabulary import HEAVY_FRAMES, LESSON_FRAMES, REFERENCE_FRAMES, SYNONYMS, Check

__all__ = [
    "N_SYNONYMS",
    "PARAPHRASE_NAMES",
    "heavy_paraphrase",
    "lesson_text",
    "light_paraphrase",
    "reference_text",
    "reorder",
    "synonymize",
]

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
                u_syn: Sequence[float], syn_rate: float) -> str:
    """An extractor's grounded lesson about ``check`` on run ``run`` (its own wording)."""
    frame = LESSON_FRAMES[int(u_frame * len(LESSON_FRAMES))]
    return _fill(frame, synonymize(check.lesson, u_syn, syn_rate), check, obj, evidence, run)


def reorder(sentence: str) -> str:
    """The same advice with its clauses in another order."""
    s = sentence.rstrip(".")
    if "; " in s:
        a, b = s.split("; ", 1)
        out = f"{b}, so {a[0].lower()}{a[1:]}"
    elif s.startswith(("When ", "Before ", "If ")) and ", " in s:
        a, b = s.split(", ", 1)
        out = f"{b} {a[0].lower()}{a[1:]}"
    elif ", and " in s:
        a, b = s.split(", and ", 1)
        out = f"{b}, and {a[0].lower()}{a[1:]}"
    elif " and " in s:
        a, b = s.split(" and ", 1)
        out = f"First {a[0].lower()}{a[1:]}, then {b}"
    else:
        out = f"It pays to {s[0].lower()}{s[1:]}"
    return out[0].upper() + out[1:] + "."


def light_paraphrase(text: str, u_syn: Sequence[float]) -> str:
    """A light paraphrase: same frame and order, about a third of the synonyms swapped."""
    return synonymize(text, u_syn, _LIGHT_RATE)


def heavy_paraphrase(check: Check, obj: str, evidence: str, run: str, u_frame: float,
                     u_syn: Sequence[float]) -> str:
    """A heavy paraphrase: clauses reordered, specifics moved, most synonyms swapped."""
    frame = HEAVY_FRAMES[int(u_frame * len(HEAVY_FRAMES))]
    sentence = reorder(synonymize(check.lesson, u_syn, _HEAVY_RATE))
    return _fill(frame, sentence, check, obj, evidence, run)


def reference_text(annotator: str, check: Check, obj: str, u_frame: float,
                   u_syn: Sequence[float], syn_rate: float) -> str:
    """An annotator's reference lesson for a failed ``check`` (the expert's own wording:
    the advice and the goal's object, not the incident's figures)."""
    frames = REFERENCE_FRAMES[annotator]
    frame = frames[int(u_frame * len(frames))]
    return _fill(frame, synonymize(check.lesson, u_syn, syn_rate), check, obj, "")
