"""The simulator's parameters a command's options show as defaults, free of numpy: their
one home, so ``truss-lab simulate --help`` shows them without importing the simulator
(issue 38)."""

from __future__ import annotations

__all__ = ["DEFAULT_MATCH_DISAGREEMENT", "DEFAULT_MATCH_DOUBLE_SHARE", "DEFAULT_MATCH_SHARE"]

DEFAULT_MATCH_SHARE = 0.25  # of the annotated verdicts, matched by a person
DEFAULT_MATCH_DISAGREEMENT = 0.02  # P(a person's answer is wrong, when a wrong one exists)
#: Of the matched verdicts, the share a second person matches too (people against people):
#: none by default, so that a study's data stays as it was; the bundled sample's is 0.3.
DEFAULT_MATCH_DOUBLE_SHARE = 0.0
