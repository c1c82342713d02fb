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


def candidate_id(verdict_hash: str, extractor: str, lesson_index: int) -> str:
    """Id of a candidate lesson (FORMATS.md §3 key)."""
    return derive_id("cand", verdict_hash, extractor, int(lesson_index))


def lesson_id(verdict_hash: str, extractor: str, lesson_index: int) -> str:
    """Id of the memory entry a candidate becomes when written."""
    return derive_id("lesson", verdict_hash, extractor, int(lesson_index))


def candidate_ids(prefix: str, frame: pd.DataFrame) -> np.ndarray:
    """Vector form over a frame with verdict_hash, extractor_id, lesson_index."""
    return np.array(
        [
            derive_id(prefix, v, e, int(i))
            for v, e, i in zip(
                frame["verdict_hash"], frame["extractor_id"], frame["lesson_index"], strict=True
            )
        ],
        dtype=object,
    )
