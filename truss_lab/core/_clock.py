"""The one clock: every timestamp truss_lab writes is :func:`utcnow`. Its own module so
that the store reads the time without loading the governed models (pydantic), which
``truss-lab runs`` does not need."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["utcnow"]


def utcnow() -> datetime:
    """The current time, timezone-aware UTC, at microsecond precision (DuckDB's)."""
    return datetime.now(UTC)
