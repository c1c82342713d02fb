"""Simulated providers that produce truth: a judge and a judge matcher (SYNTHETIC, not models).

A simulated judge: a deterministic Provider answering ``judge-v1`` requests from the
simulator's latent truth, with noise. SYNTHETIC: it stands in for a judge model
where none is available offline (the sample, tests, the demo); it is not a model.

It reads the lessons to judge from the rendered request (``[<lesson_index>] ...``
lines) and the judged extractor from the replay key (``<annotator>/<extractor>``),
looks each lesson up in ``lesson_truth.csv`` (``useful_true``: the latent
usefulness the simulator drew) and flips it with probability ``noise``; a lesson
the truth does not know (the heuristic's) is called useful with probability
``unknown_useful``. Draws are a hash of (seed, verdict,
extractor, lesson), so the same request always gets the same answer. It counts as
live (``live = True``): its calls are recorded, and a replay of them makes none.

A simulated judge matcher: a deterministic Provider answering ``match-v1`` requests
from the simulator's truth of which lesson expresses which reference, with noise.
SYNTHETIC: it stands in for a matching model where none runs offline (the
sample, tests); it is not a model.

It reads the lessons (``[L<lesson_index>] ...``) and reference wordings
(``[R<k>] <text> (evidence: ...)``) from the rendered request and the judged
extractor from the replay key (``match:<model>@<prompt>/<extractor>``). A
reference wording is identified by its text in ``references.jsonl`` (the
verdict's ``reference_id``); a lesson by ``lesson_truth.csv`` (its
``reference_id``: the latent lesson it expresses, also for a repeat). A pair
where the lesson expresses the reference gets a similarity drawn uniformly in
[0.7, 1.0], any other pair one in [0.0, 0.3]; with probability ``noise`` a
pair's call is flipped (an expressed pair scored low, another pair high). A
lesson the truth does not know (the heuristic's) counts as expressing a
reference when their lexical similarity reaches the lexical match threshold.
Draws are a hash of (seed, verdict, extractor, lesson, reference text), so the
same request always gets the same answer. It counts as live: its calls are
recorded, and a replay of them makes none.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from typing import Any

import pandas as pd

from ..core._errors import ProviderError
from ..extract._providers import Completion, CompletionRequest
from ..score._matching import LexicalMatcher

__all__ = [
    "SIMULATED_JUDGE_MODEL",
    "SIMULATED_MATCH_MODEL",
    "SimulatedJudgeProvider",
    "SimulatedMatchProvider",
]


#: The model name of the simulated judge (its annotator: ``judge:sim-judge-v1@judge-v1``).
SIMULATED_JUDGE_MODEL = "sim-judge-v1"

_LESSON_LINE = re.compile(r"^\[(\d+)\] ", re.MULTILINE)


def _uniform(*parts: Any) -> float:
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


class SimulatedJudgeProvider:
    """Answers judge requests from the simulator's latent truth with noise (synthetic).

    Parameters
    ----------
    lesson_truth : pandas.DataFrame or path
        The simulator's ``lesson_truth.csv`` (a path or a frame with
        ``verdict_hash, extractor, lesson_index, useful_true``).
    noise : float, default 0.1
        The chance of flipping each answer.
    unknown_useful : float, default 0.3
        The chance that a lesson the truth does not know is answered useful.
    seed : int, default 0
        Seed of the draws (each answer is a function of the seed and the lesson).
    model : str
        The model name it answers for.
    """

    provider_id = "simulated-judge"
    live = True  # stands in for a model: its calls are recorded for replay

    def __init__(self, lesson_truth: pd.DataFrame | str | os.PathLike[str], *,
                 noise: float = 0.1, unknown_useful: float = 0.3, seed: int = 0,
                 model: str = SIMULATED_JUDGE_MODEL) -> None:
        df = (lesson_truth if isinstance(lesson_truth, pd.DataFrame)
              else pd.read_csv(lesson_truth))
        self._truth: dict[tuple[str, str, int], int] = {
            (str(v), str(e), int(i)): int(u) for v, e, i, u in zip(
                df["verdict_hash"], df["extractor"], df["lesson_index"], df["useful_true"],
                strict=True)}
        self.noise, self.unknown_useful, self.seed, self.model = noise, unknown_useful, seed, model
        self.calls = 0

    def __repr__(self) -> str:
        return f"SimulatedJudgeProvider(noise={self.noise}, seed={self.seed})"

    def complete(self, request: CompletionRequest) -> Completion:
        if request.model != self.model:
            raise ProviderError(f"the simulated judge serves {self.model!r}, "
                                f"not {request.model!r}")
        extractor = request.extractor.rsplit("/", 1)[-1]
        labels = []
        for m in _LESSON_LINE.finditer(request.messages[-1].content):
            i = int(m.group(1))
            key = (request.verdict_hash, extractor, i)
            if key in self._truth:
                useful = self._truth[key]
            else:
                useful = int(_uniform(self.seed, "unknown", *key) < self.unknown_useful)
            if _uniform(self.seed, "flip", *key) < self.noise:
                useful = 1 - useful
            labels.append({"lesson": i, "useful": useful})
        self.calls += 1
        return Completion(text=json.dumps({"labels": labels}), model=self.model,
                          latency_ms=0.0, request_hash=request.request_hash)



#: The model name of the simulated matcher (matcher ``judge:sim-match-v1@match-v1``).
SIMULATED_MATCH_MODEL = "sim-match-v1"

#: The word overlap at which the simulated judge matcher says a lesson its truth does not
#: know matches a reference: the lexical matcher's threshold before it was tuned against
#: people (0.22, chosen on an earlier, templated sample), kept here so that the simulated
#: answers, and the sample's recordings, do not move with the lexical matcher's tuning.
SIMULATED_MATCH_OVERLAP = 0.22

_LINE = re.compile(r"^\[([LR])(\d+)\] (.*) \(evidence: [^()]*\)$", re.MULTILINE)


def _norm(text: str) -> str:
    # The request renders texts with whitespace collapsed.
    return " ".join(str(text).split())


class SimulatedMatchProvider:
    """Answers match requests from the simulator's truth with noise (synthetic).

    Parameters
    ----------
    lesson_truth : pandas.DataFrame or path
        ``lesson_truth.csv`` (a path or a frame with ``verdict_hash, extractor,
        lesson_index, reference_id``).
    references : pandas.DataFrame or path
        ``references.jsonl`` (a path or a frame with ``verdict_hash, reference_id,
        text``).
    noise : float, default 0.05
        The chance of flipping each pair's call.
    seed : int, default 0
        Seed of the draws.
    model : str
        The model name it answers for.
    """

    provider_id = "simulated-match"
    live = True  # stands in for a model: its calls are recorded for replay

    def __init__(self, lesson_truth: pd.DataFrame | str | os.PathLike[str],
                 references: pd.DataFrame | str | os.PathLike[str], *,
                 noise: float = 0.05, seed: int = 0,
                 model: str = SIMULATED_MATCH_MODEL) -> None:
        lt = (lesson_truth if isinstance(lesson_truth, pd.DataFrame)
              else pd.read_csv(lesson_truth, dtype={"reference_id": str}))
        refs = (references if isinstance(references, pd.DataFrame)
                else pd.read_json(references, lines=True, dtype={"reference_id": str}))
        self._truth: dict[tuple[str, str, int], str] = {
            (str(v), str(e), int(i)): str(r) for v, e, i, r in zip(
                lt["verdict_hash"], lt["extractor"], lt["lesson_index"],
                lt["reference_id"].fillna("none"), strict=True)}
        self._refs: dict[tuple[str, str], str] = {
            (str(v), _norm(t)): str(r) for v, r, t in zip(
                refs["verdict_hash"], refs["reference_id"], refs["text"].fillna(""),
                strict=True)}
        self.noise, self.seed, self.model = noise, seed, model
        self._lexical = LexicalMatcher()
        self.calls = 0

    def __repr__(self) -> str:
        return f"SimulatedMatchProvider(noise={self.noise}, seed={self.seed})"

    def _expresses(self, verdict: str, extractor: str, index: int, text: str,
                   ref_text: str) -> bool:
        got = self._truth.get((verdict, extractor, index))
        if got is not None:
            return got != "none" and got == self._refs.get((verdict, ref_text))
        sim = self._lexical(pd.DataFrame({"text": [text], "evidence": [[]]}),
                            pd.DataFrame({"text": [ref_text], "evidence": [[]]}))
        return bool(sim[0, 0] >= SIMULATED_MATCH_OVERLAP)

    def complete(self, request: CompletionRequest) -> Completion:
        if request.model != self.model:
            raise ProviderError(f"the simulated matcher serves {self.model!r}, "
                                f"not {request.model!r}")
        extractor = request.extractor.rsplit("/", 1)[-1]
        v = request.verdict_hash
        lines: dict[str, list[tuple[int, str]]] = {"L": [], "R": []}
        for m in _LINE.finditer(request.messages[-1].content):
            lines[m.group(1)].append((int(m.group(2)), m.group(3)))
        pairs: list[dict[str, Any]] = []
        for i, text in lines["L"]:
            for k, ref_text in lines["R"]:
                hit = self._expresses(v, extractor, i, text, ref_text)
                if _uniform(self.seed, "match-flip", v, extractor, i, ref_text) < self.noise:
                    hit = not hit
                u = _uniform(self.seed, "match-sim", v, extractor, i, ref_text)
                sim = 0.7 + 0.3 * u if hit else 0.3 * u
                pairs.append({"lesson": f"L{i}", "reference": f"R{k}",
                              "similarity": round(sim, 3)})
        self.calls += 1
        return Completion(text=json.dumps({"pairs": pairs}), model=self.model,
                          latency_ms=0.0, request_hash=request.request_hash)
