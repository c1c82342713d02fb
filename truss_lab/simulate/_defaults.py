"""The simulator's parameters a command's options show as defaults, free of numpy: their
one home, so ``truss-lab simulate --help`` shows them without importing the simulator
(issue 38)."""

from __future__ import annotations

__all__ = ["DEFAULT_MATCH_DISAGREEMENT", "DEFAULT_MATCH_SHARE"]

DEFAULT_MATCH_SHARE = 0.25  # of the annotated verdicts, matched by a person
DEFAULT_MATCH_DISAGREEMENT = 0.02  # P(a person's answer is wrong, when a wrong one exists)
