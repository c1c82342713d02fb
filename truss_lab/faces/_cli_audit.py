"""``truss-lab audit``: run :func:`truss_lab.govern._audit.audit` over a database file.

Wire it in with ``register(cli)``. Exit 0 when every check passes, 1 when
any fails, 2 (via ``_friendly``) for a user error such as a missing file.
"""

from __future__ import annotations

import sys

import click

from ._cli_common import _emit, _friendly, read_store

__all__ = ["register"]


def _audit_command() -> click.Command:
    @click.command("audit")
    @click.option(
        "--db", default="truss_lab.duckdb", show_default=True,
        type=click.Path(dir_okay=False), help="DuckDB database file.",
    )
    @click.option("--json", "as_json", is_flag=True, help="Print JSON.")
    @_friendly
    def audit_cmd(db: str, as_json: bool) -> None:
        """Check a database against ADR 0011; exit 0 when clean, 1 on any failure."""
        from ..govern._audit import audit

        with read_store(db) as store:
            report = audit(store)
        lines = [f"{'PASS' if c.passed else 'FAIL'} {c.name}: {c.detail}" for c in report.checks]
        n_bad = len(report.failed())
        lines.append("ok: all checks passed" if report.ok
                     else f"FAILED: {n_bad} of {len(report.checks)} checks")
        _emit(report.to_dict(), as_json, "\n".join(lines))
        sys.exit(0 if report.ok else 1)

    return audit_cmd


def register(cli: click.Group) -> None:
    """Add the ``audit`` command to ``cli`` (a no-op when it is already there)."""
    if "audit" not in cli.commands:
        cli.add_command(_audit_command())
