"""The heuristic baseline extractor: deterministic lessons, no model.

:class:`HeuristicProvider` implements the :class:`~truss_lab.extract._providers.Provider`
protocol. It reads the verdict payload carried by the request
(``request.verdict``) and answers with the same JSON a model would
(Formats §2), so its output goes through the same parser, scorers and gate.

The heuristic baseline's rules
------------------------------

1. **Nothing to learn.** A ``pass`` verdict whose checks all passed yields
   no lessons (``{"lessons": []}``).
2. **One lesson per failed check.** For ``fail`` and ``partial`` verdicts,
   every check with ``passed: false`` (for ``partial``: every check that did
   not pass) yields one lesson, in check order, with evidence
   ``["check:<name>"]``. Text: ``<goal>: check "<name>" failed: <evidence>.
   Before closing a similar contract, verify <name in words> explicitly.``
3. **Inconsistent pass.** A ``pass`` verdict with failed checks still yields
   a lesson per failed check (rule 2's text), but with the low ``pass``
   outcome weight, so it ranks below real failures.
4. **Failure without a failing check.** A ``fail``/``partial`` verdict with
   no failed check yields one lesson from the summary, without evidence:
   ``<goal>: the run ended <verdict> although every check passed: <summary>.
   Add a check that would have caught this.``
5. **Salience** is a fixed weighting of four features, each in [0, 1],
   rounded to 4 decimals::

       salience = 0.15 + 0.35*outcome + 0.20*focus + 0.20*specificity + 0.10*relevance

   - *outcome*: fail 1.0, partial 0.6, pass 0.2;
   - *focus*: 1/sqrt(number of lessons from rule 2/3) — one failed check is a
     sharper lesson than one of many; 0.5 for rule 4;
   - *specificity*: distinct informative tokens of the check's evidence (rule
     4: the summary) / 8, capped at 1 (tokens as in ``truss_lab.score._tokens``:
     lower-cased, digits kept, stopwords and 1–2 letter words dropped);
   - *relevance*: informative tokens shared by the check's name + evidence
     and the verdict's tags + goal, divided by min(3, tokens in tags + goal),
     capped at 1 (0 when tags and goal have none).
6. **Cap.** At most ``max_lessons`` lessons (default 5): the highest
   salience ones, ties broken by check order, emitted in check order.

The same payload always gives byte-identical completion text.
"""

from __future__ import annotations

import json
import math
import time
from typing import Any

from ..core._errors import ProviderError
from ..journal._spec import validate_verdict_payload
from ..score._tokens import informative_tokens
from ._providers import Completion, CompletionRequest

__all__ = ["HEURISTIC_ID", "HeuristicProvider", "heuristic_lessons"]

HEURISTIC_ID = "heuristic-v1"

_OUTCOME = {"fail": 1.0, "partial": 0.6, "pass": 0.2}
_W_BASE, _W_OUTCOME, _W_FOCUS, _W_SPEC, _W_REL = 0.15, 0.35, 0.20, 0.20, 0.10
_SPEC_TARGET = 8.0
_REL_TARGET = 3


def _specificity(text: str) -> float:
    return min(1.0, len(set(informative_tokens(text))) / _SPEC_TARGET)


def _relevance(text: str, context: set[str]) -> float:
    if not context:
        return 0.0
    shared = set(informative_tokens(text)) & context
    return min(1.0, len(shared) / min(_REL_TARGET, len(context)))


def _salience(outcome: float, focus: float, spec: float, rel: float) -> float:
    s = _W_BASE + _W_OUTCOME * outcome + _W_FOCUS * focus + _W_SPEC * spec + _W_REL * rel
    return round(min(1.0, max(0.0, s)), 4)


def _words(name: str) -> str:
    return name.replace("_", " ").replace("-", " ").strip()


def heuristic_lessons(payload: dict[str, Any], *, max_lessons: int = 5) -> list[dict[str, Any]]:
    """The lessons the heuristic baseline proposes for one verdict payload.

    Each lesson is ``{"text", "salience", "evidence"}`` (Formats §2); see
    the module docstring for the rules.
    """
    p = validate_verdict_payload(payload)
    verdict = p["verdict"]
    goal = p["goal"].strip() or "This contract"
    failed = [c for c in p["checks"] if not c["passed"]]
    context = set(informative_tokens(" ".join([*p["tags"], p["goal"]])))
    outcome = _OUTCOME[verdict]

    lessons: list[dict[str, Any]] = []
    if failed:  # rules 2 and 3
        focus = 1.0 / math.sqrt(len(failed))
        for c in failed:
            evidence = (c.get("evidence") or "").strip()
            detail = f": {evidence.rstrip('.')}" if evidence else ""
            text = (
                f'{goal}: check "{c["name"]}" failed{detail}. Before closing a similar '
                f"contract, verify {_words(c['name'])} explicitly."
            )
            sal = _salience(
                outcome, focus, _specificity(evidence),
                _relevance(f"{c['name']} {evidence}", context),
            )
            lessons.append({"text": text, "salience": sal, "evidence": [f"check:{c['name']}"]})
    elif verdict != "pass":  # rule 4
        summary = p["summary"].strip()
        detail = f": {summary.rstrip('.')}" if summary else ""
        text = (
            f"{goal}: the run ended {verdict} although every check passed{detail}. "
            "Add a check that would have caught this."
        )
        sal = _salience(outcome, 0.5, _specificity(summary), _relevance(summary, context))
        lessons.append({"text": text, "salience": sal, "evidence": []})
    # rule 1 falls through with no lessons

    if len(lessons) > max_lessons:  # rule 6
        order = sorted(range(len(lessons)), key=lambda i: (-lessons[i]["salience"], i))
        keep = sorted(order[:max_lessons])
        lessons = [lessons[i] for i in keep]
    return lessons


class HeuristicProvider:
    """A deterministic, model-free provider (the baseline extractor's answers).

    It needs the verdict payload in ``request.verdict`` (``build_request``
    puts it there). ``model`` and ``extractor_id`` are ``heuristic-v1``.

    Parameters
    ----------
    max_lessons : int, default 5
        The most lessons it proposes for one verdict (>= 0).

    Raises
    ------
    ProviderError
        A negative ``max_lessons``.
    """

    provider_id = "heuristic"
    live = False  # no model: nothing to record for a replay
    extractor_id = HEURISTIC_ID
    model = HEURISTIC_ID

    def __init__(self, *, max_lessons: int = 5) -> None:
        if max_lessons < 0:
            raise ProviderError(f"max_lessons must be >= 0, got {max_lessons}")
        self.max_lessons = max_lessons

    def complete(self, request: CompletionRequest) -> Completion:
        """Lessons for ``request.verdict`` as completions-format JSON text.

        Parameters
        ----------
        request : CompletionRequest
            The request.

        Returns
        -------
        Completion
            The answer.

        Raises
        ------
        ProviderError
            The request carries no verdict payload.
        """
        if request.verdict is None:
            raise ProviderError(
                f"the heuristic extractor needs the verdict payload in request.verdict "
                f"(verdict {request.verdict_hash}); build the request with build_request()"
            )
        start = time.perf_counter()
        lessons = heuristic_lessons(request.verdict, max_lessons=self.max_lessons)
        text = json.dumps({"lessons": lessons}, ensure_ascii=False, separators=(", ", ": "))
        latency = (time.perf_counter() - start) * 1000.0
        return Completion(
            text=text,
            model=self.model,
            latency_ms=latency,
            request_hash=request.request_hash,
        )

    def __repr__(self) -> str:
        return f"HeuristicProvider(max_lessons={self.max_lessons})"
