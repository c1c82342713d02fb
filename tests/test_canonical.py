"""RFC 8785 canonical form and strict JSON reading (truss_lab.core._canonical).

Oracle: the ``rfc8785`` package's own ``dumps``. Decisions pinned here:
integers are safe up to |n| <= 2^53 - 1 (rfc8785's bound); lone surrogates,
raw or escaped, are malformed (UTF-8 cannot encode them).
"""

from __future__ import annotations

import json

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.builders.profiles import examples
from truss_lab.core._canonical import (
    MAX_SAFE_INT,
    MalformedJSON,
    canonical,
    canonical_bytes,
    jcs_string,
    loads_strict,
)

# Keys drawn partly from U+E000–U+FFFF and from beyond the BMP: the one place
# where code-point order (Python's sort) and UTF-16 order (JCS) disagree.
_KEY_CHARS = st.one_of(
    st.characters(min_codepoint=0x20, max_codepoint=0x7E),
    st.characters(min_codepoint=0xE000, max_codepoint=0xFFFD),
    st.characters(min_codepoint=0x10000, max_codepoint=0x10FFFF),
    st.characters(codec="utf-8"),
)
_KEYS = st.text(_KEY_CHARS, max_size=4)
def _writable_float(x: float) -> bool:
    # canonical() refuses integral floats it would write as integers beyond 2^53 - 1
    return not (MAX_SAFE_INT < abs(x) < 1e21 and x.is_integer())


_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-MAX_SAFE_INT, max_value=MAX_SAFE_INT),
    st.floats(allow_nan=False, allow_infinity=False).filter(_writable_float),
    st.text(st.characters(codec="utf-8"), max_size=12),
)
JSON_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.dictionaries(_KEYS, inner, max_size=5),
    ),
    max_leaves=25,
)


@settings(max_examples=examples(600), deadline=None)
@given(JSON_VALUES)
def test_canonical_equals_rfc8785(value: object) -> None:
    expected = rfc8785.dumps(value)
    assert canonical_bytes(value) == expected
    assert canonical(value) == expected.decode("utf-8")


@settings(max_examples=examples(300), deadline=None)
@given(JSON_VALUES)
def test_canonical_round_trips_through_loads_strict(value: object) -> None:
    text = canonical(value)
    again = loads_strict(text)
    assert canonical(again) == text


@settings(max_examples=examples(300), deadline=None)
@given(st.dictionaries(_KEYS, st.integers(0, 9), min_size=2, max_size=8))
def test_key_order_is_utf16_not_code_point(obj: dict[str, int]) -> None:
    assert canonical(obj) == rfc8785.dumps(obj).decode("utf-8")


def test_non_bmp_key_sorts_before_private_use_key() -> None:
    # U+1F600 is D83D DE00 in UTF-16, which sorts before U+E000
    obj = {"\ue000": 1, "\U0001f600": 2, "a": 3}
    assert canonical(obj) == '{"a":3,"\U0001f600":2,"\ue000":1}'


@settings(max_examples=examples(300), deadline=None)
@given(st.text(st.characters(codec="utf-8")))
def test_jcs_string_matches_both_oracles(s: str) -> None:
    assert jcs_string(s) == json.dumps(s, ensure_ascii=False)
    assert jcs_string(s) == rfc8785.dumps(s).decode("utf-8")


@pytest.mark.parametrize(
    ("text", "reason", "field"),
    [
        ('{"a": 1, "a": 2}', "duplicate_key", "a"),
        ('{"p": {"x": [1, {"y": 1, "y": 1}]}}', "duplicate_key", "p.x.1.y"),
        ('{"x": NaN}', "non_finite", "x"),
        ('{"x": [Infinity]}', "non_finite", "x.0"),
        ('{"x": -Infinity}', "non_finite", "x"),
        ('{"x": 1e400}', "non_finite", "x"),
        ('{"x": -1e400}', "non_finite", "x"),
        ('{"x": 9007199254740992}', "unsafe_integer", "x"),
        ('{"x": -9007199254740992}', "unsafe_integer", "x"),
        ('{"x": {"y": 123456789012345678901234567890}}', "unsafe_integer", "x.y"),
        ('{"x": "\\ud800"}', "bad_unicode", "x"),
        ('{"x": ["ok", "\\udfff tail"]}', "bad_unicode", "x.1"),
        ('{"\\udc00": 1}', "bad_unicode", "\udc00"),
        ('{"x": "\ud800"}', "bad_unicode", "x"),
        ('{"x": 1', "bad_json", None),
        ('{"x": 1} trailing', "bad_json", None),
        ("", "bad_json", None),
        ("\ufeff{}", "bad_json", None),
        (b'{"x": "\xff"}', "bad_unicode", None),
    ],
)
def test_loads_strict_rejects(text: str | bytes, reason: str, field: str | None) -> None:
    with pytest.raises(MalformedJSON) as info:
        loads_strict(text)
    assert info.value.reason == reason
    assert info.value.field == field
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("9007199254740991", MAX_SAFE_INT),
        ("-9007199254740991", -MAX_SAFE_INT),
        ("1e308", 1e308),
        ('"\\ud83d\\ude00"', "\U0001f600"),
        ('"\\\\ud800"', "\\ud800"),  # an escaped backslash, not a surrogate
        (b'{"k": "\xc3\xa9"}', {"k": "é"}),
    ],
)
def test_loads_strict_accepts_the_boundaries(text: str | bytes, value: object) -> None:
    assert loads_strict(text) == value


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (2**53, "unsafe_integer"),
        ({"a": [-(2**53)]}, "unsafe_integer"),
        ([1.5, 2**60], "unsafe_integer"),
        (float("nan"), "non_finite"),
        ({"a": float("inf")}, "non_finite"),
        ("\ud800", "bad_unicode"),
        ({"a": [1.5, "\udfff"]}, "bad_unicode"),
    ],
)
def test_canonical_refuses_what_jcs_cannot_write(value: object, reason: str) -> None:
    with pytest.raises(MalformedJSON) as info:
        canonical(value)
    assert info.value.reason == reason
    with pytest.raises(rfc8785.CanonicalizationError):
        rfc8785.dumps(value)  # the oracle refuses them too


@pytest.mark.parametrize("value", [9007199254740992.0, -1e20, {"a": [2.0**60]}])
def test_canonical_refuses_floats_that_read_back_as_unsafe_integers(value: object) -> None:
    # rfc8785 writes 1e20 as 100000000000000000000, which loads_strict refuses:
    # truss_lab refuses to write it, so every canonical text reads back
    written = rfc8785.dumps(value).decode("utf-8")
    with pytest.raises(MalformedJSON) as strict:
        loads_strict(written)
    assert strict.value.reason == "unsafe_integer"
    with pytest.raises(MalformedJSON) as info:
        canonical(value)
    assert info.value.reason == "unsafe_integer"


@pytest.mark.parametrize("value", [1e21, -1e300, 9007199254740991.0, 2.5e-8, 0.1])
def test_canonical_writes_floats_that_read_back(value: float) -> None:
    assert loads_strict(canonical(value)) == value
