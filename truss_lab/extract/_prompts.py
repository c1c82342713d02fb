"""Versioned prompt templates: a verdict payload becomes a :class:`CompletionRequest`.

A template is a system text plus a user template, of one ``kind`` (``lesson``:
extract, ``judge``: judge, ``match``: match). Researchers write templates as TOML
files (Formats §6, ``{placeholder}`` fields, read by
:mod:`truss_lab.ingest._prompts`); inside the toolkit the user template is a
:class:`string.Template` (``$name``, so the JSON example in a text needs no brace
escaping), and the two spellings translate exactly. Rendering is deterministic: the
same payload, template, model and parameters always give the same ``request_hash``,
and a template whose text changes gets a new :attr:`PromptTemplate.template_hash`
(and must get a new version name, so recordings made with the old one are never
replayed for it).

The registry
------------

One registry holds every template by version: the built-in ones (``lesson-v1``,
``judge-v1``, ``match-v1``) are files beside this module (``prompts/*.toml``),
read at import by the same reader as a researcher's file; :func:`register_template`
adds one for this process; :func:`register_prompt` stores one in a database
(``prompts`` table, ``truss-lab prompts add FILE``), where :func:`get_template`
finds it when given the store. A version is registered with one text only: the
same name with another text is refused. The placeholders of each kind
(``truss-lab schema prompt``) are :data:`~truss_lab.ingest._prompts.PLACEHOLDERS`:
the verdict's ``contract_id``, ``run_id``, ``goal``, ``verdict``, ``summary``,
``checks`` (one line per check, ``- check:<name> [PASS|FAIL]: <evidence>``),
``n_checks``, ``n_failed``, ``tags``; a judge template also gets ``lessons``
(``[<lesson_index>] <text> (evidence: ...)``, :func:`build_judge_request`); a match
template gets only ``lessons`` (``[L<lesson_index>] ...``) and ``references``
(``[R<k>] ...``), :func:`build_match_request`.
"""

from __future__ import annotations

import functools
import hashlib
import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core._errors import BadInputError
from ..ingest._prompts import (
    PLACEHOLDERS,
    PROMPT_KINDS,
    PromptFileModel,
    prompt_file_text,
    read_prompt_file,
    user_from_file,
    user_to_file,
)

# The one verdict payload spec (journal/_spec.py); re-exported here, where prompts use it.
from ..journal._spec import VERDICT_OUTCOMES, validate_verdict_payload
from ..store._prompts import add_prompt, stored_prompt, stored_prompts
from ..store._store import Store
from ._providers import ChatMessage, CompletionRequest

__all__ = [
    "BUILTIN_PROMPTS",
    "VERDICT_OUTCOMES",
    "PromptTemplate",
    "build_judge_request",
    "build_match_request",
    "build_request",
    "check_kind",
    "get_template",
    "known_templates",
    "load_prompt",
    "prompt_toml",
    "prompts_table",
    "register_prompt",
    "register_template",
    "render_messages",
    "unregistered_template",
    "validate_verdict_payload",
]


@dataclass(frozen=True)
class PromptTemplate:
    """A versioned (system, user) prompt pair of one ``kind``.

    ``user`` is a :class:`string.Template`; see the module docstring for the
    placeholders. ``text`` is the full template text and ``template_hash`` its
    SHA-256, so any edit to either message is visible in the hash.
    """

    version: str
    """The prompt version: its name, recorded with every run and candidate."""
    system: str
    """The system message."""
    user: str
    """The user message template (placeholders: the module docstring)."""
    description: str = field(default="", compare=False)
    """What the prompt is for, for people."""
    kind: str = "lesson"
    """lesson, judge or match: what the template asks (which placeholders it has)."""
    registered: bool = field(default=True, compare=False)
    """False for the stand-in of a prompt version recorded elsewhere and not
    registered here (:func:`unregistered_template`): its text is unknown."""

    @property
    def text(self) -> str:
        """The whole template text (system and user parts, labelled)."""
        return f"[system]\n{self.system}\n[user]\n{self.user}"

    @property
    def template_hash(self) -> str:
        """Lowercase hex SHA-256 of :attr:`text`."""
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    @property
    def prompt_hash(self) -> str | None:
        """:attr:`template_hash`, or None when the template is not registered here
        (what a run records as ``prompt_hash``)."""
        return self.template_hash if self.registered else None

    def render(self, verdict_payload: Mapping[str, Any]) -> tuple[ChatMessage, ...]:
        """The chat messages for one verdict payload (validated first).

        Parameters
        ----------
        verdict_payload : mapping
            The verdict.

        Returns
        -------
        tuple of ChatMessage
            The system and user messages.
        """
        return render_messages(self, verdict_payload)

    @classmethod
    def from_file(cls, model: PromptFileModel) -> PromptTemplate:
        """The template of a read prompt file.

        Parameters
        ----------
        model : PromptFileModel
            What :func:`~truss_lab.ingest._prompts.read_prompt_file` read.

        Returns
        -------
        PromptTemplate
            The template (not registered).
        """
        return cls(model.name, model.system, user_from_file(model.user, model.kind),
                   model.description, model.kind)


_PLACEHOLDERS = frozenset(name for names in PLACEHOLDERS.values() for name in names)


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


_REGISTRY: dict[str, PromptTemplate] = {}
_BUILTIN_DIR = Path(__file__).with_name("prompts")


def _conflict(template: PromptTemplate, known: PromptTemplate, where: str,
              source: str | None = None) -> BadInputError:
    return BadInputError(
        f"prompt version {template.version!r} is already registered ({where}) with a "
        f"different {'kind' if known.text == template.text else 'text'} (sha256 "
        f"{known.template_hash[:12]}…, this one {template.template_hash[:12]}…); give the "
        "changed template a new version name", source=source, field="name",
        reason="version_conflict")


def _check_placeholders(template: PromptTemplate) -> None:
    if template.kind not in PROMPT_KINDS:
        raise BadInputError(f"prompt {template.version!r} has kind {template.kind!r}; "
                            f"expected one of {', '.join(PROMPT_KINDS)}", field="kind",
                            reason="bad_value")
    known = PLACEHOLDERS[template.kind]
    bad = [name for name in _placeholders(template.user) if name not in known]
    if bad:
        raise BadInputError(
            f"prompt {template.version!r} uses unknown placeholder {bad[0]!r} for a "
            f"{template.kind} prompt; known: {', '.join(known)}",
            field="user", reason="bad_placeholder")


def register_template(template: PromptTemplate) -> PromptTemplate:
    """Add a template to this process's registry; re-registering a version with
    other text (or another kind) fails, as does a placeholder its kind lacks."""
    known = _REGISTRY.get(template.version)
    if known is not None and (known.text, known.kind) != (template.text, template.kind):
        raise _conflict(template, known, "in this process")
    _check_placeholders(template)  # now, not on the first render
    _REGISTRY[template.version] = template
    return template


def load_prompt(path: str | Path) -> PromptTemplate:
    """The template of a prompt file (the prompts format), checked but not registered.

    Parameters
    ----------
    path : str or pathlib.Path
        The prompt file (TOML).

    Returns
    -------
    PromptTemplate
        The template.

    Raises
    ------
    BadInputError
        A file that does not read, a missing or unknown key, a bad placeholder.
    """
    return PromptTemplate.from_file(read_prompt_file(path))


BUILTIN_PROMPTS: tuple[str, ...] = tuple(
    register_template(load_prompt(p)).version for p in sorted(_BUILTIN_DIR.glob("*.toml")))
"""The versions of the built-in templates (files in ``truss_lab/extract/prompts/``)."""


def _from_row(row: Mapping[str, Any]) -> PromptTemplate:
    return PromptTemplate(row["name"], row["system_text"],
                          user_from_file(row["user_template"], row["kind"]),
                          row["description"], row["kind"])


def get_template(version: str, store: Store | None = None) -> PromptTemplate:
    """The registered template of ``version``: this process's registry (the built-in
    ones and :func:`register_template`'s), else ``store``'s ``prompts`` table.

    Parameters
    ----------
    version : str
        The prompt version.
    store : Store, optional
        A database whose registered prompts are looked in too.

    Returns
    -------
    PromptTemplate
        The template.

    Raises
    ------
    BadInputError
        An unknown version, listing the known ones.
    """
    found = _REGISTRY.get(version) if isinstance(version, str) else None
    if found is None and store is not None and isinstance(version, str):
        row = stored_prompt(store, version)
        found = None if row is None else _from_row(row)
    if found is None:
        names = sorted(set(_REGISTRY) | ({r["name"] for r in stored_prompts(store)}
                                         if store is not None else set()))
        raise BadInputError(
            f"unknown prompt version {version!r}; known versions: {', '.join(names)} "
            "(register one with `truss-lab prompts add FILE`)",
            field="prompt_version", reason="unknown_prompt_version")
    return found


def unregistered_template(version: str) -> PromptTemplate:
    """The stand-in for prompt version ``version`` of recordings made elsewhere whose
    template is not registered here: it names the version (runs and candidates record
    it) and renders nothing; recordings under it replay unchecked."""
    return PromptTemplate(version, "", "", "not registered here", "lesson", registered=False)


def check_kind(template: PromptTemplate, kind: str, field: str = "--prompt") -> PromptTemplate:
    """``template``, refused unless it is of ``kind`` (a judge prompt cannot extract)."""
    if template.kind != kind:
        raise BadInputError(
            f"prompt {template.version!r} is a {template.kind} prompt; this needs a {kind} "
            f"prompt", field=field, reason="wrong_kind")
    return template


def register_prompt(store: Store, template: PromptTemplate, source: str = "<memory>") -> bool:
    """Store ``template`` in ``store``'s ``prompts`` table (the prompts format).

    Parameters
    ----------
    store : Store
        The database.
    template : PromptTemplate
        The template (e.g. :func:`load_prompt`'s).
    source : str, default "<memory>"
        Where it came from, recorded with it.

    Returns
    -------
    bool
        True when new, False when the same template is there already.

    Raises
    ------
    BadInputError
        The same version with other text (there, or among the built-in and process
        templates), or a bad placeholder.
    """
    _check_placeholders(template)
    known = _REGISTRY.get(template.version)
    if known is not None and (known.text, known.kind) != (template.text, template.kind):
        raise _conflict(template, known,
                        "built in" if template.version in BUILTIN_PROMPTS else "in this process",
                        source)
    row = stored_prompt(store, template.version)
    if row is not None:
        stored = _from_row(row)
        if (stored.text, stored.kind) != (template.text, template.kind):
            raise _conflict(template, stored, f"in {store.path}", source)
        return False
    return add_prompt(store, {
        "name": template.version, "kind": template.kind, "description": template.description,
        "system_text": template.system, "user_template": user_to_file(template.user),
        "template_hash": template.template_hash, "source": source})


def known_templates(store: Store | None = None) -> tuple[str, ...]:
    """The registered prompt versions (with ``store``'s), sorted."""
    extra = {r["name"] for r in stored_prompts(store)} if store is not None else set()
    return tuple(sorted(set(_REGISTRY) | extra))


def prompts_table(store: Store | None = None) -> list[dict[str, Any]]:
    """One row per known prompt version: name, kind, template_hash, description and
    where it is registered (``built-in``, ``process`` or the file a store has it from)."""
    rows = {v: {"name": v, "kind": t.kind, "template_hash": t.template_hash,
                "description": t.description,
                "registered": "built-in" if v in BUILTIN_PROMPTS else "process"}
            for v, t in _REGISTRY.items()}
    for r in stored_prompts(store) if store is not None else []:
        rows.setdefault(r["name"], {"name": r["name"], "kind": r["kind"],
                                    "template_hash": r["template_hash"],
                                    "description": r["description"],
                                    "registered": r["source"]})
    return [rows[k] for k in sorted(rows)]


def prompt_toml(template: PromptTemplate) -> str:
    """``template`` as a Formats §6 file (what ``truss-lab prompts show`` prints)."""
    return prompt_file_text(template.version, template.kind, template.description,
                            template.system, user_to_file(template.user))


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

    The payload travels along in ``request.verdict`` (not hashed) for
    providers that read it directly, such as the heuristic extractor.

    Parameters
    ----------
    template : PromptTemplate or str
        The template, or a registered version name.
    verdict_payload : mapping
        The verdict (the journal entry's payload).
    verdict_hash : str
        The verdict's hash (the replay key's part).
    extractor : str
        The replay key of the caller.
    model : str
        The model asked.
    parameters : mapping, optional
        Sampling parameters sent with the request.

    Returns
    -------
    CompletionRequest
        The request (its hash is the replay key of its answer).
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
    one verdict.

    Parameters
    ----------
    template : PromptTemplate or str
        The judge's template, or a registered version name.
    verdict_payload : mapping
        The verdict (the journal entry's payload).
    lessons : iterable of tuple
        ``(lesson_index, text, evidence)`` triples, rendered one per line as
        ``[lesson_index] text (evidence: ...)``.
    verdict_hash : str
        The verdict's hash (the replay key's part).
    extractor : str
        The replay key (a judge uses ``<annotator>/<judged extractor_id>``).
    model : str
        The model asked.
    parameters : mapping, optional
        Sampling parameters sent with the request.

    Returns
    -------
    CompletionRequest
        The request (its hash is the replay key of its answer).
    """
    if isinstance(template, str):
        template = get_template(template)
    payload = validate_verdict_payload(verdict_payload)
    lines = "\n".join(_render_lesson(int(i), t, e) for i, t, e in lessons)
    return _request(template, payload, _render(template, payload, lines or "- (no lessons)"),
                    verdict_hash=verdict_hash, extractor=extractor, model=model,
                    parameters=parameters)


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
    order. The verdict itself is not shown (the texts are compared).

    Parameters
    ----------
    template : PromptTemplate or str
        The matcher's template, or a registered version name.
    lessons : iterable of tuple
        ``(lesson_index, text, evidence)`` triples.
    references : iterable of tuple
        ``(text, evidence)`` pairs.
    verdict_hash : str
        The verdict's hash (the replay key's part).
    extractor : str
        The replay key (``match:<model>@<prompt version>/<extractor_id>``).
    model : str
        The model asked.
    parameters : mapping, optional
        Sampling parameters sent with the request.

    Returns
    -------
    CompletionRequest
        The request (its hash is the replay key of its answer).
    """
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


