"""The package's version: what a run row, an export and a report record as the code
that made them. Owned by core, so a stage that records it imports down, never the
package root (``truss_lab.__version__`` is this same string); pyproject.toml's
``version`` is the same number (tests/test_public_api.py checks they agree)."""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
