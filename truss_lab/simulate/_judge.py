"""A simulated judge: a deterministic Provider answering ``judge-v1`` requests from the
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

__all__ = ["SIMULATED_JUDGE_MODEL", "SimulatedJudgeProvider"]

#: The model name of the simulated judge (its annotator: ``judge:sim-judge-v1@judge-v1``).
SIMULATED_JUDGE_MODEL = "sim-judge-v1"

_LESSON_LINE = re.compile(r"^\[(\d+)\] ", re.MULTILINE)


def _uniform(*parts: Any) -> float:
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


class SimulatedJudgeProvider:
    """Answers judge requests from the simulator's latent truth with noise (synthetic).

    ``lesson_truth``: the simulator's ``lesson_truth.csv`` (a path or a frame with
    ``verdict_hash, extractor, lesson_index, useful_true``). ``noise``: the chance
    of flipping each answer.
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
