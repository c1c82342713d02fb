"""The parser's fast path (orjson) only declines, never decides differently.

Every case compares :func:`parse_completion` with the exact path
(:func:`_parse_exact`, the parser without the fast path) field by field, via
``repr`` too, so 0.0 vs -0.0 or an int salience would show.
"""

from __future__ import annotations

import json
from dataclasses import FrozenInstanceError, fields
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.builders.profiles import examples
from truss_lab.extract._parser import (
    ParsedLesson,
    ParseResult,
    _all_valid,
    _parse_exact,
    fast_lessons,
    parse_completion,
)

GOOD = '{"text": "Verify DST handling", "salience": 0.82, "evidence": ["check:tz"]}'


def _doc(*lessons: str, extra: str = "") -> str:
    return '{"lessons": [' + ", ".join(lessons) + "]" + extra + "}"


def _lesson(text: str = '"a"', salience: str = "0.5", rest: str = "") -> str:
    return '{"text": ' + text + ', "salience": ' + salience + rest + "}"


def _same(text: str) -> ParseResult:
    fast = parse_completion(text)
    exact = _parse_exact(text)
    assert fast == exact
    assert repr(fast) == repr(exact)
    for le in fast.lessons:
        assert le.salience is None or type(le.salience) is float
    return fast


# Texts the fast path takes: the comparison there is not vacuous.
TAKEN = [
    _doc(GOOD),
    _doc(),
    _doc(GOOD, _lesson(), _lesson('" padded\\t"', "1")),
    json.dumps(json.loads(_doc(GOOD, GOOD)), indent=2),
    "```json\n" + _doc(GOOD) + "\n```",
    "```\n" + _doc(GOOD) + "\n```",
    "```json\n" + _doc(GOOD) + "```",
    "```json \r\n" + _doc(GOOD) + "\r\n  ```",
    "```python\n" + _doc(GOOD) + "\n```",
    "  \n\u2003```json\n\n " + _doc(GOOD) + " \n```\n\n",
    "\n\t " + _doc(GOOD) + "\u00a0\n",
    _doc(_lesson(salience="0")),
    _doc(_lesson(salience="1")),
    _doc(_lesson(salience="-0")),
    _doc(_lesson(salience="-0.0")),
    _doc(_lesson(salience="0.0")),
    _doc(_lesson(salience="1.0")),
    _doc(_lesson(salience="1E-0")),
    _doc(_lesson(salience="5e-1")),
    _doc(_lesson(salience="1e-400")),
    _doc(_lesson(salience="-1e-400")),
    _doc(_lesson(salience="5e-324")),
    _doc(_lesson(salience="0.1000000000000000055511151231257827021181583404541015625")),
    _doc(_lesson(salience="0.99999999999999999999")),
    _doc(_lesson(salience="1.0000000000000001")),
    _doc(_lesson(salience="0.30000000000000004")),
    _doc(_lesson(rest=', "evidence": null')),
    _doc(_lesson(rest=', "evidence": []')),
    _doc(_lesson(rest=', "evidence": ["😀", "check:x"]')),
    _doc(_lesson(text='"say \\"hi\\" to a:b, \\"c\\"  \\\\"')),
    _doc(_lesson(text='"non-BMP 😀 𝔘 and \\u00e9 \\/ \\n"')),
    _doc(_lesson(rest=', "extra": {"k": [1, 2.5, null, true, {"z": "y"}]}')),
    _doc(_lesson(rest=', "n": 9007199254740991, "m": -9007199254740991')),
    _doc(GOOD, extra=', "note": "x", "meta": {"a": [1, {"b": null}]}'),
    '{"note": "first", "lessons": [' + GOOD + "]}",
    '{"lessons" : [' + _lesson().replace('"text":', '"text"\n\t :') + "]}",
    _doc(_lesson(text='"\x7f del"')),
]


@pytest.mark.parametrize("text", TAKEN)
def test_fast_path_takes_and_agrees(text: str) -> None:
    assert fast_lessons(text) is not None
    res = _same(text)
    assert res.ok and all(le.valid for le in res.lessons)


# Texts the fast path must decline (each is decided differently by orjson or needs
# the exact path's rules), plus ones where both paths fail alike.
DECLINED = [
    # duplicate keys: orjson keeps the last, the exact path flags them
    '{"lessons": [], "lessons": [' + GOOD + "]}",
    _doc(_lesson(rest=', "salience": 0.9')),
    _doc(_lesson(rest=', "text": "b"')),
    _doc(_lesson(rest=', "meta": {"a": 1, "a": 2}')),
    _doc(GOOD, extra=', "note": {"a": 1, "\\u0061": 2}'),
    _doc(_lesson(rest=', "\\u0074ext": "b"')),
    _doc(GOOD, extra=', "x": 1, "x": 1'),
    # a string with an escaped quote before a colon: counted as a key, so declined
    _doc(_lesson(text='"a\\":b"')),
    _doc(_lesson(rest=', "evidence": ["x\\"  :"]')),
    # integers orjson turns into floats, or keeps beyond 2^53 - 1
    _doc(_lesson(rest=', "n": 100000000000000000000')),
    _doc(_lesson(rest=', "n": 18446744073709551616')),
    _doc(_lesson(rest=', "n": -9223372036854775809')),
    _doc(_lesson(rest=', "n": 9007199254740992')),
    _doc(_lesson(rest=', "n": -9007199254740993')),
    _doc(_lesson(rest=', "n": ' + "9" * 400)),
    _doc(_lesson(rest=', "n": ' + "9" * 5000)),
    _doc(GOOD, extra=', "n": 100000000000000000000'),
    _doc(_lesson(rest=', "x": 1e20')),
    # non-finite: orjson refuses, the exact path taints
    _doc(_lesson(salience="NaN")),
    _doc(_lesson(salience="Infinity")),
    _doc(_lesson(salience="1e400")),
    _doc(_lesson(rest=', "x": -1e400')),
    _doc(GOOD, extra=', "confidence": NaN'),
    _doc(GOOD, extra=', "confidence": 1e999'),
    # surrogates, escaped (pair or lone) and raw
    _doc(_lesson(text='"\\ud800 lone"')),
    _doc(_lesson(text='"\\uDFFF"')),
    _doc(_lesson(text='"\\ud83d\\ude00 pair"')),
    _doc(_lesson(rest=', "evidence": ["\\udfff"]')),
    _doc(_lesson(text='"\ud800 raw"')),
    _doc(_lesson(rest=', "x": "\\ud800"')),
    # lessons the exact path drops
    _doc(GOOD, _lesson(salience="true")),
    _doc(_lesson(salience="false")),
    _doc(_lesson(salience='"0.5"')),
    _doc(_lesson(salience="null")),
    _doc(_lesson(salience="1.5")),
    _doc(_lesson(salience="-0.01")),
    _doc(_lesson(salience="1.0000000000000002")),
    _doc(_lesson(text="null")),
    _doc(_lesson(text="5")),
    _doc(_lesson(text='"  \\n "')),
    _doc(_lesson(text='""')),
    _doc('{"salience": 0.5}'),
    _doc(_lesson(rest=', "evidence": "check:a"')),
    _doc(_lesson(rest=', "evidence": ["a", 1]')),
    _doc(_lesson(rest=', "evidence": [null]')),
    _doc("1"),
    _doc("[]"),
    _doc("null"),
    # completion-level outcomes
    '{"lessons": {}}',
    '{"lessons": null}',
    '{"lesson": []}',
    "[" + _doc(GOOD) + "]",
    '"' + _doc(GOOD).replace('"', '\\"') + '"',
    # shapes left to the exact scan
    "\ufeff" + _doc(GOOD),
    _doc(GOOD) + " trailing",
    _doc(GOOD) + "}",
    _doc(GOOD) + _doc(),
    _doc(GOOD) + "\n\n" + _doc(),
    "Here you go: " + _doc(GOOD),
    "```json\n" + _doc(GOOD),
    "```json\n" + _doc(GOOD) + "\n```\nMore text",
    "```{json}\n" + _doc(GOOD) + "\n```",
    '```{"lessons": []}\n' + _doc(GOOD) + "\n```",
    "```" + _doc(GOOD) + "```",
    "```\n```",
    _doc(GOOD)[:-2] + ",]}",
    "{'lessons': []}",
    _doc(GOOD).replace(": 0.82", ": 01"),
    _doc(GOOD).replace(": 0.82", ": .82"),
    _doc(GOOD).replace(": 0.82", ": +0.82"),
    _doc(GOOD).replace(": 0.82", ":\f0.82"),
    _doc(GOOD).replace(": 0.82", ":\v0.82"),
    _doc(GOOD).replace('"text"', '"text"\u00a0'),
    _doc(_lesson(text='"a\x01b"')),
    _doc(_lesson(text='"a\\xb"')),
    _doc(_lesson(text='"a\\u00G1"')),
    # nesting: too deep for the fast path, or for either decoder
    _doc(_lesson(rest=', "deep": ' + "[" * 200 + "]" * 200)),
    _doc(_lesson(rest=', "deep": ' + "[" * 900 + "]" * 900)),
    _doc(GOOD, extra=', "deep": ' + "[" * 2000 + "]" * 2000),
    _doc(*[GOOD] * 70),
    "",
    "   ",
    "{}",
    "{",
]


@pytest.mark.parametrize("text", DECLINED)
def test_fast_path_declines_and_exact_decides(text: str) -> None:
    assert fast_lessons(text) is None
    _same(text)


def test_many_lessons_within_the_container_bound() -> None:
    text = _doc(*[GOOD] * 60)
    assert fast_lessons(text) is not None
    assert len(_same(text).lessons) == 60


def test_all_valid_builds_what_the_constructors_build() -> None:
    # The builder sets these fields by name; a new field would be left unset.
    assert [f.name for f in fields(ParsedLesson)] == [
        "lesson_index", "text", "salience", "evidence", "valid", "drop_reason"
    ]
    assert [f.name for f in fields(ParseResult)] == ["lessons", "error", "detail"]
    got = [("a", 0.5, ("check:x",)), ("b", 1.0, ())]
    built = _all_valid(got)
    want = ParseResult(
        tuple(ParsedLesson(i, t, s, e, True, None) for i, (t, s, e) in enumerate(got))
    )
    assert type(built) is ParseResult and type(built.lessons[0]) is ParsedLesson
    assert built == want and repr(built) == repr(want) and hash(built) == hash(want)
    assert built.ok and built.valid_lessons == want.lessons
    with pytest.raises(FrozenInstanceError):
        built.lessons[0].text = "c"  # type: ignore[misc]
    assert _all_valid([]) == ParseResult(())


def test_non_str_input_skips_the_fast_path() -> None:
    assert parse_completion(None).error == "not_json"  # type: ignore[arg-type]


# --- generated --------------------------------------------------------------------

keys = st.sampled_from(["text", "salience", "evidence", "lessons", "note", "a", "\u00e9"]) | (
    st.text(max_size=4)
)
strings = st.text(max_size=12) | st.sampled_from(
    ["", " ", "check:x", 'q"', "a\\", ": ", '":', "😀", "\u2028", "\x00", "\ud800"]
)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.sampled_from([2**53 - 1, 2**53, -(2**53), 0, 1, -1])
    | st.floats()
    | st.floats(0, 1)
    | strings
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=10,
)
lessons = st.fixed_dictionaries(
    {},
    optional={
        "text": strings | st.sampled_from(["Run the tests.", "  x  "]) | values,
        "salience": st.floats(0, 1) | st.sampled_from([0, 1, True, 0.5]) | scalars,
        "evidence": st.none() | st.lists(strings | scalars, max_size=3) | values,
        "extra": values,
    },
)
docs = st.fixed_dictionaries(
    {"lessons": st.lists(lessons | values, max_size=4) | values},
    optional={"note": values},
)


def _dump(value: Any, style: int) -> str:
    if style == 0:
        return json.dumps(value, ensure_ascii=False)
    if style == 1:
        return json.dumps(value, indent=2)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


WRAPS = ["{}", "  {}\n", "```json\n{}\n```", "```\n{}\n```", "Sure: {}", "{} done", "\ufeff{}"]


@settings(max_examples=examples(1500), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs, st.integers(0, 2), st.sampled_from(WRAPS))
def test_generated_documents_agree(doc: dict[str, Any], style: int, wrap: str) -> None:
    try:
        body = _dump(doc, style)
    except (UnicodeEncodeError, ValueError):
        return
    _same(wrap.replace("{}", body))


# Edits that make a valid document hostile: repeat a key, put text in odd places.
EDITS = [
    ('"salience":', '"salience": 0.5, "salience":'),
    ('"text":', '"text": "dup", "text":'),
    ('"lessons":', '"note": 1, "note":'),
    ('"salience":', '"salience"  \n:'),
    ("0.", "-0."),
    (", ", ",\f"),
    ('"', '\\"'),
    ("]", ",]"),
    ("}", "}}"),
    ("e", "\\ud800"),
    ("1", "100000000000000000000"),
    ("0", "NaN"),
]


@settings(max_examples=examples(1500), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    docs,
    st.integers(0, 2),
    st.sampled_from(EDITS),
    st.integers(0, 5),
    st.sampled_from(WRAPS[:4]),
)
def test_edited_documents_agree(
    doc: dict[str, Any], style: int, edit: tuple[str, str], nth: int, wrap: str
) -> None:
    try:
        body = _dump(doc, style)
    except (UnicodeEncodeError, ValueError):
        return
    old, new = edit
    pos = -1
    for _ in range(nth + 1):
        pos = body.find(old, pos + 1)
        if pos < 0:
            return
    _same(wrap.replace("{}", body[:pos] + new + body[pos + len(old) :]))


digits = st.text("0123456789", min_size=1, max_size=40)


@settings(max_examples=examples(2000), deadline=None)
@given(
    st.sampled_from(["", "-"]),
    st.sampled_from(["0", "1"]) | digits,
    st.none() | digits,
    st.none() | st.tuples(st.sampled_from(["e", "E"]), st.sampled_from(["", "+", "-"]), digits),
    st.booleans(),
)
def test_number_literals_agree(
    sign: str, whole: str, frac: str | None, exp: tuple[str, str, str] | None, as_salience: bool
) -> None:
    """orjson's own number parser must round exactly as float() does."""
    if len(whole) > 1 and whole.startswith("0"):
        whole = whole.lstrip("0") or "0"
    lit = sign + whole + ("." + frac if frac is not None else "") + ("".join(exp) if exp else "")
    if as_salience:
        text = _doc(_lesson(salience=lit))
    else:
        text = _doc(_lesson(rest=', "x": ' + lit))
    _same(text)


@settings(max_examples=examples(1000), deadline=None)
@given(st.floats(0, 1), st.sampled_from(["repr", "e", "long"]))
def test_salience_floats_agree(x: float, form: str) -> None:
    lit = {"repr": repr(x), "e": f"{x:e}", "long": f"{x:.40f}"}[form]
    text = _doc(_lesson(salience=lit))
    res = _same(text)
    if fast_lessons(text) is not None:
        assert res.lessons[0].salience == float(lit)
