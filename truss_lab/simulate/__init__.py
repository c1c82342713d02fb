"""The seeded simulator of a Truss deployment: signed verdicts, completions, labels and
the latent truth (synthetic data). ``python -m truss_lab.simulate --help``."""

from __future__ import annotations

from ._simulate import SimulationResult, simulate

__all__ = [
    "SimulationResult",
    "simulate",
]
