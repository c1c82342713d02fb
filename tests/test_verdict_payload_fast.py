"""validate_verdict_payload's plain-Python check never accepts what the model refuses."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.builders.profiles import examples
from truss_lab.core._errors import BadInputError
from truss_lab.journal._spec import VerdictPayloadModel, _plainly_valid, validate_verdict_payload

_scalar = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=False),
                    st.text(max_size=4), st.sampled_from(["pass", "fail", "partial", " ", "\t"]))
_name = st.one_of(st.text(max_size=4), st.sampled_from(["a", " a", "\u00a0", "  ", "x\n"]),
                  _scalar)
_check = st.one_of(
    st.fixed_dictionaries({"name": _name, "passed": st.one_of(st.booleans(), _scalar)},
                          optional={"evidence": st.one_of(st.text(max_size=3), _scalar),
                                    "extra": _scalar}),
    _scalar, st.lists(_scalar, max_size=2))
_payload = st.fixed_dictionaries(
    {"goal": st.one_of(st.text(max_size=3), _scalar),
     "verdict": st.one_of(st.sampled_from(["pass", "fail", "partial"]), _scalar),
     "summary": st.one_of(st.text(max_size=3), _scalar),
     "checks": st.one_of(st.lists(_check, max_size=3), _scalar)},
    optional={"tags": st.one_of(st.lists(st.one_of(st.text(max_size=2), _scalar), max_size=2),
                                _scalar),
              "contract_id": _scalar, "run_id": _scalar, "other": _scalar})


def _model_accepts(p: dict[str, Any]) -> bool:
    try:
        VerdictPayloadModel.model_validate(p)
    except Exception:
        return False
    return True


@settings(max_examples=examples(400), deadline=None)
@given(_payload)
def test_the_fast_check_accepts_only_what_the_model_accepts(p: dict[str, Any]) -> None:
    if _plainly_valid(dict(p)):
        assert _model_accepts(p), p


def test_the_fast_check_takes_the_common_payload_and_returns_what_the_model_path_did() -> None:
    p = {"goal": "g", "verdict": "fail", "summary": "s", "extra": 1,
         "checks": [{"name": "tz", "passed": False}, {"name": "b", "passed": True,
                                                        "evidence": "ok"}]}
    assert _plainly_valid(p)
    out = validate_verdict_payload(p)
    assert out == {**p, "tags": []} and out["checks"] is not p["checks"]
    # Refused payloads go to the model, which words the error as before.
    bad = {**p, "checks": [{"name": "tz", "passed": False}, {"name": "tz", "passed": True}]}
    assert not _plainly_valid(bad)
    with pytest.raises(BadInputError, match="duplicate check name 'tz'"):
        validate_verdict_payload(bad)
