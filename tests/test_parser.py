"""The completion parser: never raises, drops bad lessons with a reason, keeps indexes."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.builders.profiles import examples
from truss_lab.core._canonical import MAX_SAFE_INT
from truss_lab.core._errors import BadInputError
from truss_lab.extract._parser import (
    COMPLETION_ERRORS,
    DROP_REASONS,
    ParseResult,
    candidates_frame,
    parse_completion,
    parse_errors_frame,
)

GOOD = {"text": "Verify DST handling", "salience": 0.82, "evidence": ["check:tz_regression"]}


def _invariants(res: ParseResult) -> None:
    assert isinstance(res, ParseResult)
    if res.error is not None:
        assert res.error in COMPLETION_ERRORS
        assert res.lessons == ()
        assert res.detail
    for i, le in enumerate(res.lessons):
        assert le.lesson_index == i
        if le.valid:
            assert le.drop_reason is None
            assert isinstance(le.text, str) and le.text == le.text.strip() and le.text
            assert isinstance(le.salience, float) and 0.0 <= le.salience <= 1.0
            assert all(isinstance(e, str) for e in le.evidence)
        else:
            assert le.drop_reason in DROP_REASONS
            assert le.salience is None


# --- reference: what a lesson's fate should be, written independently ------


def _expected_reason(raw: Any) -> str | None:
    if not isinstance(raw, dict):
        return "lesson_not_object"
    if _has_unsafe_int(raw):
        return "unsafe_integer"
    text = raw.get("text")
    if text is None:
        return "missing_text"
    if not isinstance(text, str):
        return "text_not_string"
    if not text.strip():
        return "empty_text"
    sal = raw.get("salience")
    if sal is None:
        return "salience_missing"
    if isinstance(sal, bool) or not isinstance(sal, int | float):
        return "salience_not_number"
    if not 0 <= sal <= 1:
        return "salience_out_of_range"
    ev = raw.get("evidence")
    if ev is None:
        return None
    if not isinstance(ev, list):
        return "evidence_not_list"
    if not all(isinstance(e, str) for e in ev):
        return "evidence_item_not_string"
    return None


def _has_unsafe_int(v: Any) -> bool:
    if isinstance(v, dict):
        return any(_has_unsafe_int(x) for x in v.values())
    if isinstance(v, list):
        return any(_has_unsafe_int(x) for x in v)
    return isinstance(v, int) and abs(v) > MAX_SAFE_INT


# Safe text: no lone surrogates (those are tested by hand below).
texts = st.text(st.characters(exclude_categories=("Cs",)), max_size=20)
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=12,
)
salience_values = (
    st.floats(0, 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.integers(-3, 3)
    | st.booleans()
    | st.none()
    | texts
)
evidence_values = st.none() | st.lists(texts | st.integers(), max_size=3) | texts
lesson_like = st.fixed_dictionaries(
    {},
    optional={
        "text": texts | st.none() | st.integers(),
        "salience": salience_values,
        "evidence": evidence_values,
        "extra": json_values,
    },
)
lesson_lists = st.lists(lesson_like | json_values, max_size=6)


@settings(max_examples=examples(1500), deadline=None)
@given(st.text())
def test_arbitrary_text_never_raises(text: str) -> None:
    _invariants(parse_completion(text))


@settings(max_examples=examples(1000), deadline=None)
@given(json_values)
def test_arbitrary_json_values_never_raise(value: Any) -> None:
    res = parse_completion(json.dumps(value))
    _invariants(res)
    if not (isinstance(value, dict) and "lessons" in value):
        assert res.error in ("no_lessons_key", "not_json")
    elif not isinstance(value["lessons"], list):
        assert res.error == "lessons_not_list"


@settings(max_examples=examples(1000), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lesson_lists, st.sampled_from(["plain", "fence", "json_fence", "prose"]))
def test_arbitrary_lesson_lists_match_the_reference(lessons: list[Any], wrap: str) -> None:
    body = json.dumps({"lessons": lessons}, ensure_ascii=False)
    text = {
        "plain": body,
        "fence": f"```\n{body}\n```",
        "json_fence": f"Here you go:\n```json\n{body}\n```\n",
        "prose": f"Sure. The lessons are {body} -- hope that helps {{not json}}.",
    }[wrap]
    res = parse_completion(text)
    _invariants(res)
    assert res.error is None
    assert len(res.lessons) == len(lessons)
    for raw, le in zip(lessons, res.lessons, strict=True):
        assert le.drop_reason == _expected_reason(raw)
        if le.valid:
            assert le.text == raw["text"].strip()
            assert le.salience == float(raw["salience"])
            assert le.evidence == tuple(raw.get("evidence") or ())


@settings(max_examples=examples(300), deadline=None)
@given(st.text(max_size=30), lesson_lists, st.text(max_size=30))
def test_prose_around_json_never_raises(prefix: str, lessons: list[Any], suffix: str) -> None:
    res = parse_completion(prefix + json.dumps({"lessons": lessons}) + suffix)
    _invariants(res)
    if "{" not in prefix:
        # No object can start before ours, so ours is the one found.
        assert res.error is None and len(res.lessons) == len(lessons)


# --- golden cases -------------------------------------------------------------


def _one(text: str) -> tuple[str | None, list[tuple[bool, str | None]]]:
    res = parse_completion(text)
    return res.error, [(le.valid, le.drop_reason) for le in res.lessons]


@pytest.mark.parametrize(
    "text",
    [
        json.dumps({"lessons": [GOOD]}),
        "```json\n" + json.dumps({"lessons": [GOOD]}) + "\n```",
        "```\n" + json.dumps({"lessons": [GOOD]}) + "\n```",
        "I found one lesson:\n\n" + json.dumps({"lessons": [GOOD]}, indent=2) + "\nDone.",
        "Note {this brace} first. " + json.dumps({"lessons": [GOOD]}),
        '{"note": "not this one"} then ' + json.dumps({"lessons": [GOOD]}),
        "   \n" + json.dumps({"lessons": [GOOD]}) + "\n\n",
    ],
    ids=["plain", "json_fence", "fence", "prose", "stray_brace", "earlier_object", "ws"],
)
def test_golden_accepts_wrapped_json(text: str) -> None:
    res = parse_completion(text)
    assert res.error is None
    (le,) = res.lessons
    assert (le.text, le.salience, le.evidence) == (
        "Verify DST handling", 0.82, ("check:tz_regression",)
    )
    assert le.valid


def test_nested_lessons_key_is_not_top_level() -> None:
    # The inner object has a lessons key but sits inside another object.
    text = 'prose {"wrapper": {"lessons": []}} more prose'
    assert parse_completion(text).error == "no_lessons_key"


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", "not_json"),
        ("I have no lessons for you.", "not_json"),
        ("{not json at all", "not_json"),
        ('{"lessons": [', "not_json"),
        ("[1, 2, 3]", "no_lessons_key"),
        ('"just a string"', "no_lessons_key"),
        ('{"lesson": []}', "no_lessons_key"),
        ('{"lessons": {"text": "x"}}', "lessons_not_list"),
        ('{"lessons": "none"}', "lessons_not_list"),
        ('{"lessons": null}', "lessons_not_list"),
        ('{"lessons": [], "lessons": [{"text": "x", "salience": 1}]}', "duplicate_key"),
        ('{"lessons": [], "note": 1, "note": 2}', "duplicate_key"),
        ("[" * 50_000 + "]" * 50_000, "not_json"),
        ("{" * 5_000, "not_json"),
    ],
)
def test_golden_completion_errors(text: str, error: str) -> None:
    res = parse_completion(text)
    assert res.error == error
    assert res.lessons == ()
    assert not res.ok


def test_empty_lessons_is_ok() -> None:
    res = parse_completion('{"lessons": []}')
    assert res.ok and res.lessons == ()


@pytest.mark.parametrize(
    ("lesson", "reason"),
    [
        ('{"salience": 0.5}', "missing_text"),
        ('{"text": null, "salience": 0.5}', "missing_text"),
        ('{"text": 3, "salience": 0.5}', "text_not_string"),
        ('{"text": "  \\n ", "salience": 0.5}', "empty_text"),
        ('{"text": "x"}', "salience_missing"),
        ('{"text": "x", "salience": null}', "salience_missing"),
        ('{"text": "x", "salience": "0.9"}', "salience_not_number"),
        ('{"text": "x", "salience": true}', "salience_not_number"),
        ('{"text": "x", "salience": [0.5]}', "salience_not_number"),
        ('{"text": "x", "salience": 1.5}', "salience_out_of_range"),
        ('{"text": "x", "salience": -0.01}', "salience_out_of_range"),
        ('{"text": "x", "salience": 82}', "salience_out_of_range"),
        ('{"text": "x", "salience": NaN}', "non_finite"),
        ('{"text": "x", "salience": Infinity}', "non_finite"),
        ('{"text": "x", "salience": -Infinity}', "non_finite"),
        ('{"text": "x", "salience": 1e400}', "non_finite"),
        ('{"text": "x", "salience": 0.5, "extra": NaN}', "non_finite"),
        ('{"text": "x", "salience": 0.5, "n": 9007199254740993}', "unsafe_integer"),
        ('{"text": "x", "salience": 0.5, "salience": 0.9}', "duplicate_key"),
        ('{"text": "x", "salience": 0.5, "meta": {"a": 1, "a": 2}}', "duplicate_key"),
        ('{"text": "x", "salience": 0.5, "evidence": "check:a"}', "evidence_not_list"),
        ('{"text": "x", "salience": 0.5, "evidence": {"check": "a"}}', "evidence_not_list"),
        ('{"text": "x", "salience": 0.5, "evidence": ["check:a", 3]}', "evidence_item_not_string"),
        ('{"text": "\\ud800 lone", "salience": 0.5}', "bad_unicode"),
        ('{"text": "x", "salience": 0.5, "evidence": ["\\udfff"]}', "bad_unicode"),
        ("[1, 2]", "lesson_not_object"),
        ('"a lesson as a bare string"', "lesson_not_object"),
        ("null", "lesson_not_object"),
    ],
)
def test_golden_drop_reasons_keep_other_lessons(lesson: str, reason: str) -> None:
    good = json.dumps(GOOD)
    text = '{"lessons": [' + good + ", " + lesson + ", " + good + "]}"
    error, fates = _one(text)
    assert error is None
    assert fates == [(True, None), (False, reason), (True, None)]
    res = parse_completion(text)
    assert [le.lesson_index for le in res.valid_lessons] == [0, 2]


@pytest.mark.parametrize(
    ("lesson", "salience", "evidence"),
    [
        ('{"text": " a ", "salience": 0}', 0.0, ()),
        ('{"text": "a", "salience": 1}', 1.0, ()),
        ('{"text": "a", "salience": 1.0, "evidence": null}', 1.0, ()),
        ('{"text": "a", "salience": 0.5, "evidence": []}', 0.5, ()),
        ('{"text": "a", "salience": 5e-1, "evidence": ["check:x", "log"]}', 0.5,
         ("check:x", "log")),
        ('{"text": "a", "salience": 0.5, "unknown_field": {"x": [1]}}', 0.5, ()),
    ],
)
def test_golden_valid_edges(lesson: str, salience: float, evidence: tuple[str, ...]) -> None:
    (le,) = parse_completion('{"lessons": [' + lesson + "]}").lessons
    assert le.valid and le.text == "a"
    assert le.salience == salience and type(le.salience) is float
    assert le.evidence == evidence


def test_non_str_input_is_a_recorded_error() -> None:
    res = parse_completion(b'{"lessons": []}')  # type: ignore[arg-type]
    assert res.error == "not_json"


def test_nan_in_unused_top_level_field_is_ignored() -> None:
    res = parse_completion('{"lessons": [' + json.dumps(GOOD) + '], "confidence": NaN}')
    assert res.ok and res.lessons[0].valid


# --- frames -------------------------------------------------------------------


def test_to_frame_columns_and_dtypes() -> None:
    text = '{"lessons": [' + json.dumps(GOOD) + ', {"text": "x", "salience": 2}, 7]}'
    df = parse_completion(text).to_frame()
    assert list(df.columns) == [
        "lesson_index", "text", "salience", "evidence", "valid", "drop_reason"
    ]
    assert df["lesson_index"].tolist() == [0, 1, 2]
    assert df["lesson_index"].dtype == np.int64
    assert df["valid"].tolist() == [True, False, False]
    assert df["salience"].iloc[0] == 0.82 and np.isnan(df["salience"].iloc[1:]).all()
    assert df["evidence"].tolist() == [["check:tz_regression"], [], []]
    assert pd.isna(df["drop_reason"].iloc[0])
    assert df["drop_reason"].iloc[1:].tolist() == ["salience_out_of_range", "lesson_not_object"]
    assert df["text"].iloc[1] == "x" and pd.isna(df["text"].iloc[2])


def test_candidates_frame_many_results() -> None:
    ok = parse_completion('{"lessons": [' + json.dumps(GOOD) + ", " + json.dumps(GOOD) + "]}")
    bad = parse_completion("no json")
    empty = parse_completion('{"lessons": []}')
    items = [
        ({"verdict_hash": "a" * 64, "extractor": "sim-v1"}, ok),
        ({"verdict_hash": "b" * 64, "extractor": "sim-v1"}, bad),
        ({"verdict_hash": "c" * 64, "extractor": "sim-v1"}, empty),
        ({"verdict_hash": "d" * 64, "extractor": "sim-v1"}, ok),
    ]
    df = candidates_frame(items)
    assert list(df.columns[:2]) == ["verdict_hash", "extractor"]
    assert df["verdict_hash"].tolist() == ["a" * 64] * 2 + ["d" * 64] * 2
    assert df["lesson_index"].tolist() == [0, 1, 0, 1]
    errs = parse_errors_frame(items)
    assert errs["verdict_hash"].tolist() == ["b" * 64]
    assert errs["error"].tolist() == ["not_json"]
    assert candidates_frame([]).empty
    assert parse_errors_frame([]).empty
    with pytest.raises(BadInputError, match="same key columns"):
        candidates_frame([({"a": 1}, ok), ({"b": 1}, ok)])


@pytest.mark.parametrize("value", ["lesson-v1", "", None, 1, 0, -3, 2**63, 2**70, 1.5, True])
@pytest.mark.parametrize("n_ok", [0, 1, 3])
def test_candidates_frame_constants_are_the_assigned_columns(value: object, n_ok: int) -> None:
    ok = parse_completion('{"lessons": [' + json.dumps(GOOD) + "]}")
    items = [({"verdict_hash": f"{i:064x}", "sample_index": 0}, ok) for i in range(n_ok)]
    want = candidates_frame(items)
    want["prompt_version"] = value
    want["n_samples"] = 1
    got = candidates_frame(items, {"prompt_version": value, "n_samples": 1})
    pd.testing.assert_frame_equal(got, want)


def test_salience_float_is_finite_everywhere() -> None:
    df = candidates_frame(
        [({}, parse_completion('{"lessons": [{"text": "t", "salience": 1e-320}]}'))]
    )
    assert math.isfinite(df["salience"].iloc[0])
