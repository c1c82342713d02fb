"""Salience-scoring functions (_salience), calibrators (_calibrators), text similarity
(_similarity, _tokens), junk-lesson detectors (_junk) and matching lessons to reference
lessons (_matching), self-consistency across samples (_consistency)."""

from __future__ import annotations

import typing

from ..core._lazy import attach as _attach

if typing.TYPE_CHECKING:
    # Imported on first use (core/_lazy.py): importing the package stays cheap, so the
    # command line starts at once. These lines are the exports' one list of homes.
    from ._calibrators import IsotonicCalibrator, PlattCalibrator
    from ._consistency import consistency_clusters, self_consistency
    from ._junk import junk_flags, junk_rates
    from ._matching import LexicalMatcher, SemanticMatcher, match_lessons
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

__getattr__, __dir__ = _attach(__name__, __file__)

__all__ = [
    "IsotonicCalibrator",
    "LexicalMatcher",
    "PlattCalibrator",
    "Scorer",
    "SemanticMatcher",
    "consistency_clusters",
    "failed_checks",
    "grounding",
    "junk_flags",
    "junk_rates",
    "match_lessons",
    "model_salience",
    "novelty",
    "score_candidates",
    "self_consistency",
    "similar_pairs",
    "specificity",
    "verdict_outcome",
    "weighted_sum",
]
