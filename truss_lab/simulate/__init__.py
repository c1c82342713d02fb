"""The seeded simulator of a Truss deployment: signed verdicts, completions, labels and
the latent truth (synthetic data). ``python -m truss_lab.simulate --help``."""

from __future__ import annotations

from ._providers import SimulatedJudgeProvider, SimulatedMatchProvider
from ._simulate import SimulatedMatching, SimulationResult, simulate, simulate_matching

__all__ = [
    "SimulatedJudgeProvider",
    "SimulatedMatchProvider",
    "SimulatedMatching",
    "SimulationResult",
    "simulate",
    "simulate_matching",
]
