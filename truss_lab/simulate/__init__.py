"""The seeded simulator of a Truss deployment: signed verdicts, completions, labels and
the latent truth (synthetic data). ``python -m truss_lab.simulate --help``."""

from __future__ import annotations

from ._judge import SimulatedJudgeProvider
from ._match import SimulatedMatchProvider
from ._simulate import SimulationResult, simulate

__all__ = [
    "SimulatedJudgeProvider",
    "SimulatedMatchProvider",
    "SimulationResult",
    "simulate",
]
