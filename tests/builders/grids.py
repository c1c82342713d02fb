"""Test grids split between ``make test`` and ``make test-slow``.

A grid (a test parametrized over several axes, or over many seeds) runs whole in
``make test-slow``, which CI runs after ``make test``; ``make test`` runs a share that
still shows every value of every axis: :func:`covering` keeps, in order, each case
that brings a value of some axis no case kept before it has, plus the cases its
``always`` keeps whole (a size or a position where every combination matters). The
rest are marked slow. docs/explanation/reliability.md lists the grids split this way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import pytest


def covering(cases: Iterable[Sequence[Any] | Any],
             always: Callable[..., bool] | None = None) -> list[Any]:
    """``cases`` as ``pytest.param``: a covering share for ``make test``, the rest slow.

    Parameters
    ----------
    cases : iterable
        The grid's cases, each a tuple of one value per axis (or one value).
    always : callable, optional
        Called with a case's values; true keeps the case in ``make test`` whatever it
        covers.

    Returns
    -------
    list
        One ``pytest.param`` per case, in order, marked slow unless kept.
    """
    seen: set[tuple[int, Any]] = set()
    out = []
    for case in cases:
        values = tuple(case) if isinstance(case, tuple | list) else (case,)
        new = {(i, repr(v)) for i, v in enumerate(values)} - seen
        keep = bool(new) or (always is not None and always(*values))
        seen |= new
        out.append(pytest.param(*values, marks=() if keep else pytest.mark.slow))
    return out


def first(cases: Iterable[Any], n: int) -> list[Any]:
    """``cases`` as ``pytest.param``: the first ``n`` in ``make test``, the rest slow
    (a grid of seeds: every seed is a fresh random case of one property)."""
    return [pytest.param(*(c if isinstance(c, tuple) else (c,)),
                         marks=() if i < n else pytest.mark.slow)
            for i, c in enumerate(cases)]
