"""Salience-scoring functions (_salience), calibrators (_calibrators), text similarity
(_similarity, _tokens) and junk-lesson detectors (_junk)."""

from __future__ import annotations

from ._calibrators import IsotonicCalibrator, PlattCalibrator
from ._junk import junk_flags, junk_rates
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
    "PlattCalibrator",
    "Scorer",
    "failed_checks",
    "grounding",
    "junk_flags",
    "junk_rates",
    "model_salience",
    "novelty",
    "score_candidates",
    "similar_pairs",
    "specificity",
    "verdict_outcome",
    "weighted_sum",
]
