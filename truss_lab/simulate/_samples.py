"""k samples per verdict: what a sampling extractor would have answered k times.

Sample 0 of each extractor is its completion in ``completions.jsonl``
(unchanged); sample ``s > 0`` is a fresh draw of the same profile on the same
verdicts, from the stream of the name ``<extractor>#sample<s>``, so every
sample has its own lessons, wording, defects and latent usefulness. What makes
self-consistency informative here is what makes it informative for a model: a
grounded lesson about a failed check is emitted by most samples (``emit_rate``
each), while generic, ungrounded and duplicate lessons come and go.

``completions_samples.jsonl`` holds every sample of every extractor (the §2
fields plus ``sample_index``: read it with :func:`read_sample_completions`, not
the strict §2 reader, which knows one completion per verdict);
``truth_samples.csv`` holds each candidate lesson's latent usefulness per sample.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..core._errors import BadInputError
from ._completions import KIND_NAMES, Completions, ExtractorProfile, make_completions
from ._verdicts import Verdicts

__all__ = ["SAMPLE_FILES", "TRUTH_SAMPLES_HEADER", "read_sample_completions", "sample_lines"]

SAMPLE_FILES = ("completions_samples.jsonl", "truth_samples.csv")
TRUTH_SAMPLES_HEADER = ("verdict_hash,extractor,sample_index,lesson_index,p_useful,useful_true,"
                        "lesson_kind")


def sample_lines(seed: int, profiles: Sequence[ExtractorProfile], v: Verdicts,
                 hashes: list[str], first: Sequence[Completions],
                 samples: int) -> tuple[list[str], list[str]]:
    """Lines of ``completions_samples.jsonl`` and rows of ``truth_samples.csv``
    (without header): by verdict, extractor, sample; ``first`` are the sample-0
    completions already drawn for ``completions.jsonl``."""
    comps: list[list[Completions]] = [[c] for c in first]
    for k, prof in enumerate(profiles):
        for s in range(1, samples):
            twin = dataclasses.replace(prof, name=f"{prof.name}#sample{s}")
            comps[k].append(make_completions(seed, twin, v, hashes))
    lines: list[tuple[int, int, int, str]] = []
    truth: list[tuple[int, int, int, int, str]] = []
    for k, prof in enumerate(profiles):
        for s, c in enumerate(comps[k]):
            for i, line in enumerate(c.lines):
                rec = json.loads(line)
                rec["extractor"] = prof.name
                rec["sample_index"] = s
                lines.append((i, k, s, json.dumps(rec, ensure_ascii=False,
                                                  separators=(",", ":"))))
            for j in np.flatnonzero(c.candidate).tolist():
                vi, li = int(c.comp[j]), int(c.index[j])
                truth.append((vi, k, s, li, ",".join((
                    hashes[vi], prof.name, str(s), str(li), f"{c.p_useful[j]:.4f}",
                    str(int(c.useful[j])), KIND_NAMES[int(c.kind[j])]))))
    lines.sort(key=lambda r: r[:3])
    truth.sort(key=lambda r: r[:4])
    return [r[3] for r in lines], [r[4] for r in truth]


def read_sample_completions(path: str | Path) -> pd.DataFrame:
    """``completions_samples.jsonl`` as a frame a replay takes
    (``Extractor.replay(frame, EXTRACTOR, samples=K)``): the §2 columns and
    ``sample_index``; a line that is not such a record is an error naming it."""
    rows = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise BadInputError(f"not JSON ({exc.msg})", source=str(path),
                                    line=lineno) from None
            if not isinstance(rec, dict) or not isinstance(rec.get("sample_index"), int):
                raise BadInputError("expected a completion record with an integer "
                                    "sample_index", source=str(path), line=lineno,
                                    field="sample_index")
            rows.append(rec)
    return pd.DataFrame(rows)
