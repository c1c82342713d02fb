"""Versioned prompt templates: a verdict payload becomes a :class:`CompletionRequest`.

A template is a system text plus a user template with ``$name`` placeholders
(:class:`string.Template`, so the JSON example in the text needs no brace
escaping). Rendering is deterministic: the same payload, template, model and
parameters always give the same ``request_hash``, and a template whose text
changes gets a new :attr:`PromptTemplate.template_hash` (and should get a new
version name, so recordings made with the old one are never replayed for it).

Placeholders available to a user template: ``$contract_id``, ``$run_id``,
``$goal``, ``$verdict``, ``$summary``, ``$checks`` (one line per check,
``- check:<name> [PASS|FAIL]: <evidence>``), ``$n_checks``, ``$n_failed``,
``$tags`` (comma-separated, or ``(none)``); a judge template (``judge-v1``) also
gets ``$lessons``, one line per lesson to judge (``[<lesson_index>] <text>
(evidence: ...)``), rendered by :func:`build_judge_request`. A match template
(``match-v1``) gets only ``$lessons`` (``[L<lesson_index>] ...``) and
``$references`` (``[R<k>] ...``, k = 1, 2, ...), rendered by
:func:`build_match_request`.
"""

from __future__ import annotations

import functools
import hashlib
import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core._errors import BadInputError

# The one verdict payload spec (journal/_spec.py); re-exported here, where prompts use it.
from ..journal._spec import VERDICT_OUTCOMES, validate_verdict_payload
from ._providers import ChatMessage, CompletionRequest

__all__ = [
    "VERDICT_OUTCOMES",
    "PromptTemplate",
    "build_judge_request",
    "build_match_request",
    "build_request",
    "get_template",
    "known_templates",
    "register_template",
    "render_messages",
    "validate_verdict_payload",
]



@dataclass(frozen=True)
class PromptTemplate:
    """A versioned (system, user) prompt pair.

    ``user`` is a :class:`string.Template`; see the module docstring for the
    placeholders. ``text`` is the full template text and ``template_hash`` its
    SHA-256, so any edit to either message is visible in the hash.
    """

    version: str
    system: str
    user: str
    description: str = field(default="", compare=False)

    @property
    def text(self) -> str:
        """The whole template text (system and user parts, labelled)."""
        return f"[system]\n{self.system}\n[user]\n{self.user}"

    @property
    def template_hash(self) -> str:
        """Lowercase hex SHA-256 of :attr:`text`."""
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    def render(self, verdict_payload: Mapping[str, Any]) -> tuple[ChatMessage, ...]:
        """The chat messages for one verdict payload (validated first)."""
        return render_messages(self, verdict_payload)


_LESSON_V1_SYSTEM = """\
You review the verdict of a finished contract run and propose durable lessons:
short, reusable guidance that would have prevented a failed check or would make
a similar contract succeed next time. A lesson must be grounded in the checks of
this verdict; do not invent facts. Propose no lesson when there is nothing worth
remembering (for example, every check passed and the summary shows nothing new).

Answer with one JSON object and nothing else, of exactly this shape:
{"lessons": [{"text": "<one or two sentences>", "salience": 0.82, "evidence": ["check:<name>"]}]}

- "text": the lesson, self-contained, imperative where possible.
- "salience": a number in [0, 1]: how important and reusable the lesson is
  (1 = must remember, 0 = trivial).
- "evidence": the checks the lesson rests on, each written "check:<name>" with
  the check's exact name from the verdict.
An empty list, {"lessons": []}, is a valid answer."""

_LESSON_V1_USER = """\
Contract: $contract_id (run $run_id)
Goal: $goal
Verdict: $verdict
Summary: $summary
Checks ($n_checks, $n_failed failed):
$checks
Tags: $tags

Propose the lessons of this run as JSON."""

_REGISTRY: dict[str, PromptTemplate] = {}


def register_template(template: PromptTemplate) -> PromptTemplate:
    """Add a template to the registry; re-registering a version with other text fails."""
    known = _REGISTRY.get(template.version)
    if known is not None and known.text != template.text:
        raise BadInputError(
            f"prompt version {template.version!r} is already registered with a different "
            "text; give the changed template a new version name",
            field="version",
            reason="version_conflict",
        )
    # Validate the placeholders now, not on the first render.
    bad = [
        name
        for name in _placeholders(template.user)
        if name not in _PLACEHOLDERS
    ]
    if bad:
        raise BadInputError(
            f"prompt {template.version!r} uses unknown placeholders {sorted(bad)}; "
            f"expected some of {sorted(_PLACEHOLDERS)}",
            field="user",
            reason="bad_placeholder",
        )
    _REGISTRY[template.version] = template
    return template


def get_template(version: str) -> PromptTemplate:
    """The registered template of ``version``; unknown versions list the known ones."""
    try:
        return _REGISTRY[version]
    except (KeyError, TypeError):
        raise BadInputError(
            f"unknown prompt version {version!r}; known versions: {sorted(_REGISTRY)}",
            field="prompt_version",
            reason="unknown_prompt_version",
        ) from None


def known_templates() -> tuple[str, ...]:
    """The registered prompt versions, sorted."""
    return tuple(sorted(_REGISTRY))


_PLACEHOLDERS = frozenset(
    {"contract_id", "run_id", "goal", "verdict", "summary", "checks", "n_checks",
     "n_failed", "tags", "lessons", "references"}
)


def _placeholders(user: str) -> list[str]:
    names = []
    for m in string.Template.pattern.finditer(user):
        if m.group("invalid") is not None:
            raise BadInputError(
                "prompt template has a stray '$' (write '$$' for a literal dollar)",
                field="user",
                reason="bad_placeholder",
            )
        name = m.group("named") or m.group("braced")
        if name:
            names.append(name)
    return names


def _render_check(check: Mapping[str, Any]) -> str:
    status = "PASS" if check["passed"] else "FAIL"
    evidence = check.get("evidence", "") or "(no evidence recorded)"
    return f"- check:{check['name']} [{status}]: {evidence}"


def render_messages(
    template: PromptTemplate, verdict_payload: Mapping[str, Any]
) -> tuple[ChatMessage, ...]:
    """Render ``template`` for one verdict payload: (system, user) messages."""
    return _render(template, validate_verdict_payload(verdict_payload))


@functools.lru_cache(maxsize=64)
def _format_of(user: str) -> str | None:
    """``user`` (a :class:`string.Template` text) as an equivalent ``str.format``
    text, or None when it has a placeholder outside :data:`_PLACEHOLDERS` (then
    :class:`string.Template` renders it, and raises as it always did)."""
    out, pos = [], 0
    for m in string.Template.pattern.finditer(user):
        out.append(user[pos:m.start()].replace("{", "{{").replace("}", "}}"))
        pos = m.end()
        name = m.group("named") or m.group("braced")
        if m.group("escaped") is not None:
            out.append("$")
        elif name in _PLACEHOLDERS:
            out.append("{" + name + "}")
        else:
            return None
    out.append(user[pos:].replace("{", "{{").replace("}", "}}"))
    return "".join(out)


def render_user(template: PromptTemplate, p: Mapping[str, Any], lessons: str = "") -> str:
    """The user message for a validated payload ``p`` (what :func:`_render` sends)."""
    values = _values(p, lessons)
    fmt = _format_of(template.user)
    if fmt is None:
        return string.Template(template.user).substitute(values)
    return fmt.format_map(values)


def _render(template: PromptTemplate, p: Mapping[str, Any],
            lessons: str = "") -> tuple[ChatMessage, ...]:
    # ``p`` is already validated: the batch path validates once per verdict.
    return (
        ChatMessage(role="system", content=template.system),
        ChatMessage(role="user", content=render_user(template, p, lessons)),
    )


def _values(p: Mapping[str, Any], lessons: str) -> dict[str, str]:
    checks = p["checks"]
    return {
        "lessons": lessons,
        "references": "",
        "contract_id": p.get("contract_id", "(unknown)"),
        "run_id": p.get("run_id", "(unknown)"),
        "goal": p["goal"],
        "verdict": p["verdict"],
        "summary": p["summary"],
        "checks": "\n".join(_render_check(c) for c in checks) if checks else "- (no checks)",
        "n_checks": str(len(checks)),
        "n_failed": str(sum(not c["passed"] for c in checks)),
        "tags": ", ".join(p["tags"]) if p.get("tags") else "(none)",
    }


def build_request(
    template: PromptTemplate | str,
    verdict_payload: Mapping[str, Any],
    *,
    verdict_hash: str,
    extractor: str,
    model: str,
    parameters: Mapping[str, Any] | None = None,
) -> CompletionRequest:
    """The :class:`CompletionRequest` asking ``model`` for the lessons of one verdict.

    ``template`` is a :class:`PromptTemplate` or a registered version name.
    The payload travels along in ``request.verdict`` (not hashed) for
    providers that read it directly, such as the heuristic extractor.
    """
    if isinstance(template, str):
        template = get_template(template)
    payload = validate_verdict_payload(verdict_payload)
    return _request(template, payload, _render(template, payload), verdict_hash=verdict_hash,
                    extractor=extractor, model=model, parameters=parameters)


def _request(template: PromptTemplate, payload: dict[str, Any], messages: Any, *,
             verdict_hash: str, extractor: str, model: str,
             parameters: Mapping[str, Any] | None) -> CompletionRequest:
    # One place that turns a rendered prompt into a request, for lessons and judges alike.
    return CompletionRequest(
        messages=messages,
        model=model,
        parameters=dict(parameters or {}),
        verdict_hash=verdict_hash,
        extractor=extractor,
        prompt_version=template.version,
        verdict=payload,
    )


LESSON_V1 = register_template(
    PromptTemplate(
        version="lesson-v1",
        system=_LESSON_V1_SYSTEM,
        user=_LESSON_V1_USER,
        description="Lessons grounded in the verdict's checks; JSON answer with salience.",
    )
)


_JUDGE_V1_SYSTEM = """\
You judge lessons that an extractor proposed from the verdict of a finished
contract run. A lesson is USEFUL when it is durable, reusable guidance that is
grounded in this verdict's checks and would help a similar contract next time;
it is NOT useful when it is vague, generic, a platitude, not grounded in the
checks, or merely restates the summary.

Answer with one JSON object and nothing else, of exactly this shape:
{"labels": [{"lesson": 0, "useful": 1}, {"lesson": 1, "useful": 0}]}

- "lesson": the number in brackets before the lesson.
- "useful": 1 for useful, 0 for not useful.
Label every lesson listed, once."""

_JUDGE_V1_USER = """\
Contract: $contract_id (run $run_id)
Goal: $goal
Verdict: $verdict
Summary: $summary
Checks ($n_checks, $n_failed failed):
$checks
Tags: $tags

Lessons to judge:
$lessons

Label each lesson as JSON."""


def _render_lesson(index: int | str, text: str, evidence: Any) -> str:
    ev = ", ".join(str(e) for e in evidence) if evidence is not None and len(evidence) else ""
    return f"[{index}] {' '.join(str(text).split())} (evidence: {ev or 'none'})"


def build_judge_request(
    template: PromptTemplate | str,
    verdict_payload: Mapping[str, Any],
    lessons: Any,
    *,
    verdict_hash: str,
    extractor: str,
    model: str,
    parameters: Mapping[str, Any] | None = None,
) -> CompletionRequest:
    """The :class:`CompletionRequest` asking a judge ``model`` to label the lessons of
    one verdict. ``lessons``: ``(lesson_index, text, evidence)`` triples, rendered one
    per line as ``[lesson_index] text (evidence: ...)``. ``extractor`` is the replay
    key (a judge uses ``<annotator>/<judged extractor_id>``)."""
    if isinstance(template, str):
        template = get_template(template)
    payload = validate_verdict_payload(verdict_payload)
    lines = "\n".join(_render_lesson(int(i), t, e) for i, t, e in lessons)
    return _request(template, payload, _render(template, payload, lines or "- (no lessons)"),
                    verdict_hash=verdict_hash, extractor=extractor, model=model,
                    parameters=parameters)


JUDGE_V1 = register_template(
    PromptTemplate(
        version="judge-v1",
        system=_JUDGE_V1_SYSTEM,
        user=_JUDGE_V1_USER,
        description="A judge labels each lesson of a verdict useful (1) or not (0); JSON answer.",
    )
)


_MATCH_V1_SYSTEM = """\
You compare lessons that an extractor proposed for one verdict of a contract run
with reference lessons that an expert wrote for the same verdict. For every
(lesson, reference) pair, say how far the lesson expresses the reference: the
same advice about the same check, whatever the wording.

Answer with one JSON object and nothing else, of exactly this shape:
{"pairs": [{"lesson": "L0", "reference": "R1", "similarity": 0.9}]}

- "lesson", "reference": the tags in brackets before each lesson and reference.
- "similarity": a number in [0, 1]: 1 = the lesson says what the reference
  says, 0 = it says something else.
Give every (lesson, reference) pair listed, exactly once."""

_MATCH_V1_USER = """\
Lessons:
$lessons

References:
$references

Score every (lesson, reference) pair as JSON."""


def build_match_request(
    template: PromptTemplate | str,
    lessons: Any,
    references: Any,
    *,
    verdict_hash: str,
    extractor: str,
    model: str,
    parameters: Mapping[str, Any] | None = None,
) -> CompletionRequest:
    """The :class:`CompletionRequest` asking a judge ``model`` how far each lesson of one
    verdict expresses each of its reference lessons. ``lessons``: ``(lesson_index,
    text, evidence)`` triples, one line each as ``[L<lesson_index>] text (evidence:
    ...)``; ``references``: ``(text, evidence)`` pairs, ``[R1]``, ``[R2]``, ... in
    order. The verdict itself is not shown (the texts are compared); ``extractor`` is
    the replay key (``match:<model>@<prompt version>/<extractor_id>``)."""
    if isinstance(template, str):
        template = get_template(template)
    values = {
        "lessons": "\n".join(_render_lesson(f"L{int(i)}", t, e) for i, t, e in lessons),
        "references": "\n".join(_render_lesson(f"R{k}", t, e)
                                 for k, (t, e) in enumerate(references, start=1)),
    }
    user = string.Template(template.user).substitute(values)
    return CompletionRequest(
        messages=(ChatMessage(role="system", content=template.system),
                  ChatMessage(role="user", content=user)),
        model=model, parameters=dict(parameters or {}), verdict_hash=verdict_hash,
        extractor=extractor, prompt_version=template.version)


MATCH_V1 = register_template(
    PromptTemplate(
        version="match-v1",
        system=_MATCH_V1_SYSTEM,
        user=_MATCH_V1_USER,
        description="A judge scores how far each lesson of a verdict expresses each "
                    "reference lesson (similarity in [0, 1]); JSON answer.",
    )
)
