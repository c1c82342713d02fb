"""Content-derived ids: a rerun or a resume derives the same id, so it never duplicates a row."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
import pandas as pd

__all__ = ["candidate_id", "candidate_ids", "derive_id", "derive_ids", "key_digests", "lesson_id"]

_sha256 = hashlib.sha256


def derive_id(prefix: str, *parts: object) -> str:
    """``prefix-`` + the first 24 hex digits of SHA-256 over the unit-separated parts."""
    return f"{prefix}-{_digest(parts)}"


def derive_ids(prefix: str, values: Sequence[object], *head: object) -> list[str]:
    """``[derive_id(prefix, *head, v) for v in values]``, the head joined once."""
    pre = "".join(str(p) + "\x1f" for p in head)
    return [f"{prefix}-{_hex24(pre + (v if type(v) is str else str(v)))}" for v in values]


def _hex24(text: str) -> str:
    # The prefix is not hashed: ids of one key under two prefixes share these digits.
    return _sha256(text.encode("utf-8")).hexdigest()[:24]


def _digest(parts: tuple[object, ...]) -> str:
    return _hex24("\x1f".join(map(str, parts)))


def _sample_parts(sample_index: int) -> tuple[object, ...]:
    # Sample 0 adds nothing: one-sample runs keep the ids they had before samples.
    return () if int(sample_index) == 0 else (int(sample_index),)


def candidate_id(verdict_hash: str, extractor: str, lesson_index: int,
                 sample_index: int = 0) -> str:
    """Id of a candidate lesson (Formats §3 key, plus its sample when not the first)."""
    return derive_id("cand", verdict_hash, extractor, int(lesson_index),
                     *_sample_parts(sample_index))


def lesson_id(verdict_hash: str, extractor: str, lesson_index: int,
              sample_index: int = 0) -> str:
    """Id of the memory entry a candidate becomes when written."""
    return derive_id("lesson", verdict_hash, extractor, int(lesson_index),
                     *_sample_parts(sample_index))


def key_digests(verdict_hash: Sequence[object] | pd.Series, extractor: Sequence[object] | pd.Series,
                lesson_index: Sequence[object] | pd.Series,
                sample_index: Sequence[object] | pd.Series) -> list[str]:
    """Per key, the 24 hex digits after the prefix of its :func:`candidate_id` and of
    its :func:`lesson_id` (the same digits: the prefix is not hashed), computed once."""
    if (set(map(type, verdict_hash)) | set(map(type, extractor))) <= {str} and \
            (set(map(type, lesson_index)) | set(map(type, sample_index))) <= {int}:
        # Exact str and int only, so each f-string field is what str() and int() give
        # derive_id; sample 0 adds no part (_sample_parts).
        return [_hex24(f"{v}\x1f{e}\x1f{i}" if not s else f"{v}\x1f{e}\x1f{i}\x1f{s}")
                for v, e, i, s in zip(verdict_hash, extractor, lesson_index, sample_index,
                                      strict=True)]
    return [_digest((v, e, int(i), *_sample_parts(s)))  # type: ignore[call-overload]
            for v, e, i, s in zip(verdict_hash, extractor, lesson_index, sample_index,
                                  strict=True)]


def candidate_ids(prefix: str, frame: pd.DataFrame) -> np.ndarray:
    """Vector form over a frame with verdict_hash, extractor_id, lesson_index and,
    optionally, sample_index (absent means sample 0)."""
    samples = (frame["sample_index"] if "sample_index" in frame.columns
               else [0] * len(frame))
    digests = key_digests(frame["verdict_hash"], frame["extractor_id"],
                          frame["lesson_index"], samples)
    return np.array([f"{prefix}-{d}" for d in digests], dtype=object)
