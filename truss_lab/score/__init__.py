"""Salience-scoring functions (_salience), calibrators (_calibrators), text similarity
(_similarity, _tokens), junk-lesson detectors (_junk) and matching lessons to reference
lessons (_matching)."""

from __future__ import annotations

from ._calibrators import IsotonicCalibrator, PlattCalibrator
from ._junk import junk_flags, junk_rates
from ._matching import LexicalMatcher, match_lessons
from ._salience import (
    Scorer,
    failed_checks,
    grounding,
    model_salience,
    novelty,
    score_candidates,
    specificity,
    verdict_outcome,
    weighted_sum,
)
from ._similarity import similar_pairs

__all__ = [
    "IsotonicCalibrator",
    "LexicalMatcher",
    "PlattCalibrator",
    "Scorer",
    "failed_checks",
    "grounding",
    "junk_flags",
    "junk_rates",
    "match_lessons",
    "model_salience",
    "novelty",
    "score_candidates",
    "similar_pairs",
    "specificity",
    "verdict_outcome",
    "weighted_sum",
]
