"""Hypothesis profiles: a modest ``default`` for ``make test``, ``thorough`` for ``make test-slow``.

The profile is chosen by the ``HYPOTHESIS_PROFILE`` environment variable
(``default`` when unset; an unknown name is an error, so a typo cannot silently
run the modest profile). ``tests/conftest.py`` calls :func:`load` once.

``thorough`` runs today's example counts: Hypothesis's own 100 for a test
without settings, and ``N`` for a test whose settings say
``max_examples=examples(N)``. ``default`` runs a tenth of that, at least
:data:`FLOOR` examples (never more than ``N``), so every property test still
runs on every ``make test``, only on fewer examples; the nightly
``make test-slow`` runs them in full.

An explicit ``@settings(max_examples=N)`` would override the profile, which is
why the tests write ``examples(N)`` and never a bare count.
"""

from __future__ import annotations

import math
import os

from hypothesis import settings

__all__ = ["FLOOR", "PROFILE", "SHARE", "THOROUGH", "examples", "load", "modest"]

#: The profile this process runs under.
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "default")
THOROUGH = PROFILE == "thorough"
#: The share of a test's thorough count the default profile runs, and its floor.
SHARE = 0.1
FLOOR = 10


def modest(n: int) -> int:
    """The default profile's share of a thorough count ``n``."""
    return min(n, max(FLOOR, math.ceil(n * SHARE)))


def examples(n: int) -> int:
    """The examples a test that runs ``n`` under ``thorough`` runs under the current profile."""
    return n if THOROUGH else modest(n)


def load() -> None:
    """Register both profiles and load the one ``HYPOTHESIS_PROFILE`` names."""
    settings.register_profile("thorough", max_examples=100)  # Hypothesis's default count
    settings.register_profile("default", max_examples=modest(100))
    if PROFILE not in ("default", "thorough"):
        raise ValueError(f"HYPOTHESIS_PROFILE={PROFILE!r}: use 'default' or 'thorough'")
    settings.load_profile(PROFILE)
