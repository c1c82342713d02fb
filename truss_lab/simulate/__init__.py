"""The seeded simulator of a Truss deployment: signed verdicts, completions, labels and
the latent truth (synthetic data). ``python -m truss_lab.simulate --help``."""

from __future__ import annotations

import typing

from ..core._lazy import attach as _attach

if typing.TYPE_CHECKING:
    # Imported on first use (core/_lazy.py): importing the package stays cheap, so the
    # command line starts at once. These lines are the exports' one list of homes.
    from ._providers import SimulatedJudgeProvider, SimulatedMatchProvider
    from ._simulate import SimulatedMatching, SimulationResult, simulate, simulate_matching

__getattr__, __dir__ = _attach(__name__, __file__)

__all__ = [
    "SimulatedJudgeProvider",
    "SimulatedMatchProvider",
    "SimulatedMatching",
    "SimulationResult",
    "simulate",
    "simulate_matching",
]
