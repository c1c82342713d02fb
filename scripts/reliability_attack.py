"""Rows of ``make reliability`` for issue 39 (the attacker's fourth pass), one per item.

Each row re-runs the issue's reproduction (through the real CLI where a user would meet
it, against a local server on 127.0.0.1) and counts the checks that held.
``scripts/reliability.py`` calls :func:`attack_rows`; the rows use its ``Row``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from scripts.reliability_holes import tally
from scripts.secrets_dump import find_secrets


def secrets_dump_row(row: Callable[..., Any], tmp: Path) -> Any:
    """Items 1-3: a key echoed encoded in error bodies, in --base-url, in a prompt file, a
    labels and a references file; every table, file, export, report and output dumped and
    searched for every secret in every encoding."""
    d = tmp / "secrets_dump"
    d.mkdir()
    found, ran, needles = find_secrets(d)
    checks = {f"scenario: {k}": v for k, v in ran.items()}
    checks[f"{needles} needles: none in any table, file, export, report, output"] = not found
    r = tally(row, "secrets in every encoding and user file: dump of everything", checks)
    if found:
        r.detail = f"found {len(found)}: " + "; ".join(found)[:140]
    return r


def attack_rows(row: Callable[..., Any], tmp: Path, quick: bool) -> list[Any]:
    """The rows of issue 39's items."""
    return [secrets_dump_row(row, tmp)]
