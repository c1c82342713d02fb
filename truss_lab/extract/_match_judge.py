"""A judge matcher: a model scores how far each lesson of a verdict expresses each
reference lesson, through the Provider seam (prompt ``match-v1``).

:class:`JudgeMatcher` is a matcher in the sense of
:mod:`truss_lab.score._matching`: called on the lessons and the references of
ONE verdict it returns their similarity matrix, so it plugs in wherever the
lexical matcher does (``reference_truth(..., matcher=)``, ``sweep_run``,
``choose_run_threshold``, ``compare_runs``, ``--matcher judge`` on the CLI);
the greedy one-to-one assignment stays :func:`~truss_lab.score._matching.match_lessons`.
It lives in the extract stage because it calls providers; evaluation only
calls it as a function.

One request per verdict lists its lessons (``[L<lesson_index>] ...``) and
its reference wordings (``[R1]``, ``[R2]``, ...) and asks for
``{"pairs": [{"lesson": "L0", "reference": "R1", "similarity": 0.9}, ...]}``.
The answer is parsed strictly (:func:`parse_similarities`): every pair exactly
once, each similarity a number in [0, 1]. Anything else leaves that verdict's
pairs without a similarity (NaN: evaluation leaves the verdict out and counts
it) and the error is kept in :attr:`JudgeMatcher.errors`; it is never
0-filled as if judged.

Recorded and replayed by request hash like extraction and the label judge:
live calls are kept in memory until :meth:`JudgeMatcher.record` appends them
to the ``completions`` table (keyed by the verdict and
``match:<model>@<prompt version>/<extractor_id>``); :meth:`JudgeMatcher.replay`
answers from those recordings and refuses a changed request. Answers are
memoised by request hash, so evaluating a run several times (a sweep, then a
threshold choice) asks the model once per verdict.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ..core._errors import BadInputError, ProviderError
from ..evaluate._references import reference_truth
from ..store._runs import run_info
from ..store._store import Store
from ._extractor import completion_record
from ._judge import ModelJudge, record_calls
from ._prompts import PromptTemplate, build_match_request, get_template
from ._providers import Provider, is_live

__all__ = ["DEFAULT_JUDGE_MATCH_THRESHOLD", "MATCH_PREFIX", "JudgeMatcher", "match_run",
           "parse_similarities"]

#: The replay keys of a judge matcher's calls start with this.
MATCH_PREFIX = "match:"

#: A judge's similarity is a degree of "says the same thing" in [0, 1]: half way.
DEFAULT_JUDGE_MATCH_THRESHOLD = 0.5


def _json_object(text: str) -> Any:
    """The one JSON object of an answer, allowing only a code fence around it."""
    body = text.strip()
    if body.startswith("```"):
        body = body.split("\n", 1)[1] if "\n" in body else ""
        body = body.rsplit("```", 1)[0].strip()
    return json.loads(body)


def parse_similarities(text: str, lessons: list[str],
                       references: list[str]) -> tuple[np.ndarray | None, str | None]:
    """The similarity matrix in a match answer, strictly: ``(matrix, None)`` or
    ``(None, error)``.

    ``lessons`` / ``references`` are the tags the request showed (``"L0"``,
    ``"R1"``), in matrix order. The answer must be one JSON object (a code fence
    around it is allowed) with a ``"pairs"`` list holding every (lesson,
    reference) pair exactly once, each with a ``"similarity"`` number (not a
    boolean) in [0, 1]. Never raises.
    """
    try:
        root = _json_object(text)
    except ValueError as exc:
        return None, f"not one JSON object ({exc})"
    if not isinstance(root, dict) or not isinstance(root.get("pairs"), list):
        return None, "no 'pairs' list in the answer"
    li = {t: k for k, t in enumerate(lessons)}
    ri = {t: k for k, t in enumerate(references)}
    mat = np.full((len(lessons), len(references)), np.nan)
    for n, item in enumerate(root["pairs"]):
        if not isinstance(item, dict):
            return None, f"pairs[{n}] is not an object"
        lesson, ref, sim = item.get("lesson"), item.get("reference"), item.get("similarity")
        if lesson not in li or ref not in ri:
            return None, f"pairs[{n}] names an unknown lesson or reference: {lesson!r}, {ref!r}"
        if (type(sim) not in (int, float) or not math.isfinite(sim)
                or not 0.0 <= sim <= 1.0):
            return None, f"pairs[{n}] similarity {sim!r} is not a number in [0, 1]"
        if not np.isnan(mat[li[lesson], ri[ref]]):
            return None, f"pairs[{n}] repeats the pair ({lesson}, {ref})"
        mat[li[lesson], ri[ref]] = float(sim)
    missing = int(np.isnan(mat).sum())
    if missing:
        return None, f"{missing} of {mat.size} pair(s) not scored"
    return mat, None


def _triples(df: pd.DataFrame) -> list[tuple[int, str, Any]]:
    """(lesson_index or position, text, evidence) of each row."""
    ev = df["evidence"] if "evidence" in df.columns else [None] * len(df)
    idx = (df["lesson_index"].astype(int).tolist() if "lesson_index" in df.columns
           else list(range(len(df))))
    return list(zip(idx, df["text"].fillna("").astype(str).tolist(), list(ev), strict=True))


@dataclass(eq=False)
class JudgeMatcher(ModelJudge):
    """A matcher that asks a model: a provider, a match prompt template and a model.

    ``match_threshold`` is the similarity a lesson needs to claim a reference
    when evaluation is not given one (:data:`DEFAULT_JUDGE_MATCH_THRESHOLD`).
    State after use: :attr:`errors` (``{"<extractor_id>/<verdict_hash>": why}``
    for verdicts left without similarities), :attr:`requests` (verdicts asked,
    memoised ones once), :attr:`pending` (live calls not yet recorded). Built
    like a :class:`~truss_lab.extract._judge.Judge`: :meth:`openai` (live) or
    :meth:`replay` (its recorded calls in a Store, a §2 JSONL path or a frame).
    """

    _PREFIX: ClassVar[str] = MATCH_PREFIX
    _TEMPLATE: ClassVar[str] = "match-v1"

    provider: Provider
    model: str
    template: PromptTemplate = field(default_factory=lambda: get_template("match-v1"))
    parameters: Mapping[str, Any] = field(default_factory=dict)
    match_threshold: float = DEFAULT_JUDGE_MATCH_THRESHOLD
    errors: dict[str, str] = field(default_factory=dict, init=False, repr=False)
    pending: list[dict[str, Any]] = field(default_factory=list, init=False, repr=False)
    requests: int = field(default=0, init=False)
    _memo: dict[str, tuple[np.ndarray | None, str | None]] = field(
        default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if not 0.0 <= float(self.match_threshold) <= 1.0:
            raise BadInputError(f"match_threshold must be in [0, 1], got "
                                f"{self.match_threshold}", field="match_threshold")

    @property
    def name(self) -> str:
        """``judge:<model>@<prompt version>``: what evaluation reports as the matcher."""
        return f"judge:{self.model}@{self.template.version}"

    def replay_key(self, extractor_id: str) -> str:
        """The recordings' ``extractor`` for this matcher on ``extractor_id``'s lessons."""
        return f"{MATCH_PREFIX}{self.model}@{self.template.version}/{extractor_id}"

    def __call__(self, lessons: pd.DataFrame, references: pd.DataFrame) -> np.ndarray:
        """Similarities of one verdict's lessons (rows) to its references (columns);
        all NaN when the model's answer could not be used."""
        n, m = len(lessons), len(references)
        if n == 0 or m == 0:
            return np.zeros((n, m))
        if "verdict_hash" not in lessons.columns:
            raise BadInputError("a judge matcher needs the lessons' verdict_hash (its "
                                "recordings are keyed by it)", field="lessons")
        verdicts = pd.unique(lessons["verdict_hash"].astype(str))
        if len(verdicts) != 1:
            raise BadInputError(f"a matcher scores one verdict at a time, got {len(verdicts)}",
                                field="lessons")
        vhash = str(verdicts[0])
        extractor_id = (str(lessons["extractor_id"].iloc[0])
                        if "extractor_id" in lessons.columns else "")
        triples = _triples(lessons)
        refs = [(t, e) for _, t, e in _triples(references)]
        request = build_match_request(self.template, triples, refs, verdict_hash=vhash,
                                      extractor=self.replay_key(extractor_id),
                                      model=self.model, parameters=dict(self.parameters))
        key = request.request_hash
        if key not in self._memo:
            self._memo[key] = self._ask(request, [f"L{t[0]}" for t in triples],
                                        [f"R{k}" for k in range(1, m + 1)])
        mat, err = self._memo[key]
        if err is not None:
            self.errors[f"{extractor_id}/{vhash}"] = err
            return np.full((n, m), np.nan)
        assert mat is not None
        return mat.copy()

    def _ask(self, request: Any, ltags: list[str],
             rtags: list[str]) -> tuple[np.ndarray | None, str | None]:
        self.requests += 1
        try:
            completion = self.provider.complete(request)
        except ProviderError as exc:
            return None, f"provider: {exc}"
        if is_live(self.provider) and not completion.replayed:
            rec = completion_record(request, completion)
            rec.pop("replayed")
            self.pending.append(rec)
        return parse_similarities(completion.text, ltags, rtags)

    def record(self, store: Store) -> int:
        """Append the live calls made so far to ``completions``; how many were written."""
        n = record_calls(store, self.pending)
        self.pending.clear()
        return n


def match_run(store: Store, run_id: str, matcher: JudgeMatcher, *,
              references: Any = None, match_threshold: float | None = None,
              score: str = "salience") -> dict[str, Any]:
    """Match the valid lessons of ``run_id`` to their verdicts' references with a judge
    matcher, record its live calls, and say what it did (integer counts).

    What ``truss-lab match`` runs before evaluating by replay: the returned dict
    has the matcher's name, requests made, live calls recorded, verdicts and
    lessons judged, lessons matched, references, and ``errors`` (the verdicts
    left without similarities, with why).
    """
    asked = matcher.requests
    truth = reference_truth(store, run_id, references=references, score=score,
                            matcher=matcher, match_threshold=match_threshold)
    recorded = matcher.record(store)
    prefix = f"{run_info(store, run_id)['extractor_id']}/"
    errors = {k: v for k, v in matcher.errors.items() if k.startswith(prefix)}
    c = truth.counts
    return {"run_id": run_id, "matcher": matcher.name, "requests": matcher.requests - asked,
            "recorded": recorded, "verdicts": truth.n_verdicts,
            "verdicts_unmatched": int(c.get("verdicts_unmatched", 0)),
            "lessons": truth.n_lessons, "matched": int(c["matched"]),
            "references": truth.n_references, "match_threshold": truth.match_threshold,
            "errors": errors}
