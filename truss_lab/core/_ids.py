"""Content-derived ids: a rerun or a resume derives the same id, so it never duplicates a row."""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

__all__ = ["candidate_id", "candidate_ids", "derive_id", "lesson_id"]


def derive_id(prefix: str, *parts: object) -> str:
    """``prefix-`` + the first 24 hex digits of SHA-256 over the unit-separated parts."""
    text = "\x1f".join(str(p) for p in parts)
    return f"{prefix}-{hashlib.sha256(text.encode('utf-8')).hexdigest()[:24]}"


def _sample_parts(sample_index: int) -> tuple[object, ...]:
    # Sample 0 adds nothing: one-sample runs keep the ids they had before samples.
    return () if int(sample_index) == 0 else (int(sample_index),)


def candidate_id(verdict_hash: str, extractor: str, lesson_index: int,
                 sample_index: int = 0) -> str:
    """Id of a candidate lesson (FORMATS.md §3 key, plus its sample when not the first)."""
    return derive_id("cand", verdict_hash, extractor, int(lesson_index),
                     *_sample_parts(sample_index))


def lesson_id(verdict_hash: str, extractor: str, lesson_index: int,
              sample_index: int = 0) -> str:
    """Id of the memory entry a candidate becomes when written."""
    return derive_id("lesson", verdict_hash, extractor, int(lesson_index),
                     *_sample_parts(sample_index))


def candidate_ids(prefix: str, frame: pd.DataFrame) -> np.ndarray:
    """Vector form over a frame with verdict_hash, extractor_id, lesson_index and,
    optionally, sample_index (absent means sample 0)."""
    samples = (frame["sample_index"] if "sample_index" in frame.columns
               else [0] * len(frame))
    return np.array(
        [
            derive_id(prefix, v, e, int(i), *_sample_parts(s))
            for v, e, i, s in zip(
                frame["verdict_hash"], frame["extractor_id"], frame["lesson_index"], samples,
                strict=True,
            )
        ],
        dtype=object,
    )
