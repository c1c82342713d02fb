"""Prompt templates: stable hashes, deterministic rendering, every check rendered."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.builders.profiles import examples
from truss_lab.core._errors import BadInputError
from truss_lab.extract._prompts import (
    PromptTemplate,
    build_request,
    get_template,
    known_templates,
    register_template,
    render_messages,
    validate_verdict_payload,
)
from truss_lab.extract._providers import CompletionRequest

VH = "9f" * 32

# Pinned on purpose: editing lesson-v1's text must fail this test. Give the
# edited template a new version instead, so old recordings are not replayed.
LESSON_V1_HASH = "f300d041fdca32ad1f29d108d20dfcbcff8a0de0762e586fa86efdc429e83f5e"


def _req(payload: dict[str, Any], **kw: Any) -> CompletionRequest:
    args: dict[str, Any] = {"verdict_hash": VH, "extractor": "sim-v1", "model": "m"}
    args.update(kw)
    return build_request(get_template("lesson-v1"), payload, **args)


def test_lesson_v1_hash_is_pinned() -> None:
    t = get_template("lesson-v1")
    assert t.template_hash == LESSON_V1_HASH
    assert "lesson-v1" in known_templates()


def test_template_change_changes_hash() -> None:
    t = get_template("lesson-v1")
    for change in (
        {"system": t.system + " "},
        {"user": t.user.replace("Goal:", "Goal :")},
    ):
        assert dataclasses.replace(t, **change).template_hash != t.template_hash
    # The description is not part of what the model sees.
    assert dataclasses.replace(t, description="x").template_hash == t.template_hash


def test_same_payload_same_request_hash(verdict: dict[str, Any]) -> None:
    a = _req(verdict)
    reordered = json.loads(json.dumps(verdict, sort_keys=True))
    reordered["checks"] = [dict(reversed(list(c.items()))) for c in reordered["checks"]]
    b = _req(reordered)
    assert a.request_hash == b.request_hash
    assert a.messages == b.messages
    # The replay keys are not part of the hash; what the model sees is.
    assert _req(verdict, verdict_hash="00" * 32).request_hash == a.request_hash
    assert _req(verdict, model="other").request_hash != a.request_hash
    assert _req(verdict, parameters={"temperature": 0}).request_hash != a.request_hash
    changed = {**verdict, "summary": verdict["summary"] + "!"}
    assert _req(changed).request_hash != a.request_hash


def test_request_fields(verdict: dict[str, Any]) -> None:
    r = build_request(
        "lesson-v1", verdict, verdict_hash=VH, extractor="sim-v1", model="m",
        parameters={"temperature": 0.0},
    )
    assert r.prompt_version == "lesson-v1"
    assert r.verdict == verdict
    assert r.parameters == {"temperature": 0.0}
    assert [m.role for m in r.messages] == ["system", "user"]
    assert r.messages[0].content == get_template("lesson-v1").system
    user = r.messages[1].content
    for piece in (
        "Goal: Migrate the billing cron job to the new scheduler",
        "Verdict: fail",
        "Summary: Job migrated but timezone handling regressed",
        "- check:tz_regression [FAIL]: 02:00 UTC run fired at 03:00 after DST change",
        "- check:job_registered [PASS]: scheduler lists billing-cron",
        "Checks (2, 1 failed)",
        "Tags: scheduler, dst",
        "c-0042",
    ):
        assert piece in user
    assert '"lessons"' in r.messages[0].content and "check:<name>" in r.messages[0].content


names = st.text(st.characters(exclude_categories=("Cs", "Cc")), min_size=1, max_size=12).filter(
    lambda s: bool(s.strip())
)
free = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)


@st.composite
def payloads(draw: st.DrawFn) -> dict[str, Any]:
    check_names = draw(st.lists(names, max_size=6, unique=True))
    return {
        "goal": draw(free),
        "verdict": draw(st.sampled_from(["pass", "fail", "partial"])),
        "summary": draw(free),
        "checks": [
            {"name": n, "passed": draw(st.booleans()), "evidence": draw(free)} for n in check_names
        ],
        "tags": draw(st.lists(names, max_size=3)),
    }


@settings(max_examples=examples(200), deadline=None)
@given(payloads())
def test_rendering_includes_every_check(payload: dict[str, Any]) -> None:
    _, user = render_messages(get_template("lesson-v1"), payload)
    lines = user.content
    for c in payload["checks"]:
        status = "PASS" if c["passed"] else "FAIL"
        evidence = c["evidence"] or "(no evidence recorded)"
        assert f"- check:{c['name']} [{status}]: {evidence}" in lines
    n_failed = sum(not c["passed"] for c in payload["checks"])
    assert f"Checks ({len(payload['checks'])}, {n_failed} failed)" in lines
    for t in payload["tags"]:
        assert t in lines
    # Deterministic.
    assert render_messages(get_template("lesson-v1"), payload)[1] == user


def test_dollar_and_braces_in_payload_are_rendered_literally(verdict: dict[str, Any]) -> None:
    verdict["goal"] = "Pay $amount {goal} $$ ${x}"
    user = _req(verdict).messages[1].content
    assert "Goal: Pay $amount {goal} $$ ${x}" in user


def test_unknown_version_lists_known_ones() -> None:
    with pytest.raises(BadInputError, match=r"unknown prompt version 'lesson-v0'.*lesson-v1"):
        get_template("lesson-v0")


def test_register_refuses_changed_text_under_same_version() -> None:
    t = get_template("lesson-v1")
    assert register_template(t) is t  # same text: fine
    with pytest.raises(BadInputError, match="new version"):
        register_template(dataclasses.replace(t, system="other"))
    with pytest.raises(BadInputError, match="unknown placeholder 'goall'"):
        register_template(PromptTemplate("test-bad", "s", "Goal: $goall"))
    with pytest.raises(BadInputError, match="unknown placeholder 'lessons' for a lesson"):
        register_template(PromptTemplate("test-bad3", "s", "$lessons"))
    with pytest.raises(BadInputError, match="stray"):
        register_template(PromptTemplate("test-bad2", "s", "costs 5$"))
    assert get_template("lesson-v1") is t


def test_custom_template_roundtrip(verdict: dict[str, Any]) -> None:
    t = register_template(PromptTemplate("test-short-v1", "Be brief.", "$goal / $verdict"))
    r = build_request("test-short-v1", verdict, verdict_hash=VH, extractor="x", model="m")
    assert r.messages[1].content == f"{verdict['goal']} / fail"
    assert r.prompt_version == "test-short-v1"
    assert t.text.startswith("[system]\nBe brief.")


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda p: p.update(verdict="maybe"), "payload.verdict"),
        (lambda p: p.pop("goal"), "payload.goal"),
        (lambda p: p.update(summary=3), "payload.summary"),
        (lambda p: p.update(checks={"a": 1}), "payload.checks"),
        (lambda p: p["checks"].append(7), "payload.checks[2]"),
        (lambda p: p["checks"][0].update(passed="no"), "payload.checks[0].passed"),
        (lambda p: p["checks"][1].update(name="tz_regression"), "payload.checks[1].name"),
        (lambda p: p["checks"][0].update(name=" "), "payload.checks[0].name"),
        (lambda p: p["checks"][0].update(evidence=["x"]), "payload.checks[0].evidence"),
        (lambda p: p.update(tags="dst"), "payload.tags"),
        (lambda p: p.update(run_id=5), "payload.run_id"),
    ],
)
def test_bad_payload_names_the_field(verdict: dict[str, Any], mutate: Any, field: str) -> None:
    mutate(verdict)
    with pytest.raises(BadInputError) as info:
        _req(verdict)
    assert info.value.field == field
    assert field in str(info.value)


def test_validate_rejects_non_object() -> None:
    with pytest.raises(BadInputError, match="expected a JSON object"):
        validate_verdict_payload(["not", "a", "payload"], source="j.jsonl")


def test_minimal_payload_defaults() -> None:
    p = {"goal": "g", "verdict": "pass", "summary": "s", "checks": []}
    user = _req(p).messages[1].content
    assert "- (no checks)" in user and "Tags: (none)" in user and "(unknown)" in user
