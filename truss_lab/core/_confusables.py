"""Look-alike identifiers: ids that read as another id and are not it.

An id a person types or reads (a run id, an extractor, an annotator, a reference id) can
hold characters that look like others: Cyrillic ``о`` for Latin ``o``, U+2010 HYPHEN for
``-``, a zero-width space, a full-width letter. Such an id is stored as given (it is the
user's data) but never silently:

* :func:`id_refusal`: a control character (NUL, a line break, DEL, C1) has no place in an
  id (it cuts a C string, splits a CSV line, hides in a terminal): refused, naming it;
* :func:`lookalike_problem`: one line saying why an id may be mistaken for another (it
  mixes scripts, holds a character that looks like an ASCII one, an invisible one, or a
  compatibility form NFKC changes); ingests and new runs warn with it;
* :func:`skeleton` and :func:`lookalike_note`: a "not found" error compares the id asked
  for with the known ones by their skeletons (after Unicode TR39: NFKC, then each
  character mapped to the one it is mistaken for, invisible ones dropped) and names the
  known id that looks the same, and the characters that differ.

The confusables map is small on purpose (no new dependency): the Cyrillic and Greek
letters that look like Latin ones, the dashes and spaces that look like ASCII ones, and
the invisible characters; TR39's full table maps thousands more.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

__all__ = ["id_refusal", "lookalike_note", "lookalike_problem", "lookalikes", "scripts",
           "skeleton"]

# Letters of other scripts drawn like a Latin one (TR39 confusables.txt, the common ones).
_LETTERS = {
    # Cyrillic
    "а": "a", "в": "B", "е": "e", "ё": "e", "і": "i", "ї": "i", "ј": "j", "к": "k",
    "м": "M", "н": "H", "о": "o", "р": "p", "с": "c", "т": "T", "у": "y", "х": "x",
    "ѕ": "s", "ԁ": "d", "ԛ": "q", "ԝ": "w", "һ": "h", "ӏ": "l",
    "А": "A", "В": "B", "Е": "E", "Ё": "E", "І": "I", "Ї": "I", "Ј": "J", "К": "K",
    "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C", "Т": "T", "У": "Y", "Х": "X",
    "Ѕ": "S", "Ԁ": "D", "Ԛ": "Q", "Ԝ": "W", "Һ": "h", "Ӏ": "l",
    # Greek
    "α": "a", "ο": "o", "ρ": "p", "ν": "v", "ι": "i", "κ": "k", "τ": "t", "υ": "u",
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M",
    "Ν": "N", "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
}
# Punctuation and spaces drawn like an ASCII one (NFKC keeps these as they are).
_MARKS = {
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2015": "-",
    "\u2212": "-", "\u2043": "-", "\ufe63": "-", "\u00ad": "",
    "\u2018": "'", "\u2019": "'", "\u201a": ",", "\u201c": '"', "\u201d": '"',
    "\u2024": ".", "\u2027": ".", "\u00b7": ".", "\u2215": "/", "\u2044": "/",
    "\u00a0": " ", "\u2007": " ", "\u202f": " ",
}
_CONFUSABLE = {**_LETTERS, **_MARKS}


def _invisible(c: str) -> bool:
    # Format characters: zero-width space/joiners, bidi overrides, BOM, soft hyphen.
    return unicodedata.category(c) == "Cf"


def _name(c: str) -> str:
    return f"U+{ord(c):04X} {unicodedata.name(c, 'UNNAMED')}"


def id_refusal(value: str) -> str | None:
    """Why ``value`` cannot be an id (it holds a control character: NUL, a line break,
    DEL, a C1 control), or None."""
    for i, c in enumerate(value):
        if unicodedata.category(c) == "Cc":
            return (f"holds the control character U+{ord(c):04X} at position {i + 1}; "
                    "an id has none")
    return None


def _script(c: str) -> str | None:
    """The script of a letter, read from its Unicode name (``CYRILLIC SMALL LETTER O``);
    None for what belongs to every script (digits, punctuation, marks)."""
    if not c.isalpha():
        return None
    word = unicodedata.name(c, "").split(" ", 1)[0]
    return {"FULLWIDTH": "Latin", "CJK": "Han", "HIRAGANA": "Han", "KATAKANA": "Han",
            "HANGUL": "Hangul"}.get(word, word.capitalize() or None)


def scripts(value: str) -> list[str]:
    """The scripts of ``value``'s letters, in order of first use."""
    out: list[str] = []
    for c in value:
        s = _script(c)
        if s is not None and s not in out:
            out.append(s)
    return out


def lookalike_problem(value: str) -> str | None:
    """Why ``value`` may be mistaken for another id, in a few words (``"mixes scripts
    (Latin, Cyrillic)"``, ``"holds U+2010 HYPHEN, drawn like '-'"``), or None."""
    used = scripts(value)
    if len(used) > 1:
        return f"mixes scripts ({', '.join(used)})"
    for c in value:
        if _invisible(c):
            return f"holds the invisible {_name(c)}"
        if c in _MARKS:
            return f"holds {_name(c)}, drawn like {_MARKS[c]!r}"
    normal = unicodedata.normalize("NFKC", value)
    if normal != value:
        c = next(c for c in value if unicodedata.normalize("NFKC", c) != c)
        return (f"holds {_name(c)}, a compatibility form of "
                f"{unicodedata.normalize('NFKC', c)!r} (NFKC changes it)")
    if used and used[0] != "Latin" and skeleton(value) != value and skeleton(value).isascii():
        return f"is written in {used[0]} letters that look like Latin ones"
    return None


def skeleton(value: str) -> str:
    """What ``value`` looks like: NFKC, each confusable character replaced by the ASCII
    one it is drawn like, invisible characters dropped (after TR39's skeleton). Two ids
    with the same skeleton read the same."""
    text = unicodedata.normalize("NFKC", value)
    return "".join(_CONFUSABLE.get(c, c) for c in text if not _invisible(c))


def lookalikes(value: str, known: Iterable[str]) -> list[str]:
    """The ids of ``known`` that look like ``value`` (the same :func:`skeleton`) and are
    not it."""
    sk = skeleton(value)
    return sorted({k for k in known if k != value and skeleton(k) == sk})


def _differences(value: str, other: str) -> str:
    if len(value) != len(other):
        return lookalike_problem(value) or lookalike_problem(other) or "differs"
    diff = [(i, c) for i, (c, o) in enumerate(zip(value, other, strict=True)) if c != o]
    shown = "; ".join(f"{_name(c)} at {i + 1} where {other!r} has {other[i]!r}"
                      for i, c in diff[:3])
    return shown + (f" (and {len(diff) - 3} more)" if len(diff) > 3 else "")


def lookalike_note(value: str, known: Iterable[str], what: str = "id") -> str:
    """For a "not found" error: why ``value`` matched none of ``known`` though one looks
    the same (``"; 'good' looks the same but is another run id: 'gооd' holds U+043E
    CYRILLIC SMALL LETTER O at 2 ..."``), or why ``value`` itself may be mistyped; ""
    when neither."""
    near = lookalikes(value, known)
    if near:
        return (f"; {near[0]!r} looks the same but is another {what}: {value!r} holds "
                f"{_differences(value, near[0])}")
    problem = lookalike_problem(value)
    return f"; {value!r} {problem}" if problem else ""
