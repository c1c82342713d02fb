"""The audit: does a database obey ADR 0011?

``audit(store)`` runs every check of :mod:`truss_lab.govern._checks` (named
there, with the DESIGN.md invariant each guards) and returns an
:class:`AuditReport`; each :class:`CheckResult` says pass/fail, gives a
one-line detail and the offending rows as a DataFrame.

A check that cannot run (say, a table was dropped) fails with the error as its detail.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..core._errors import BadInputError
from ..store._store import Store
from ._checks import CHECKS

__all__ = ["CHECKS", "AuditReport", "CheckResult", "audit"]


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one audit check."""

    name: str
    """Stable check name (see :mod:`truss_lab.govern._checks`)."""
    passed: bool
    """True when nothing offends."""
    detail: str
    """One line: what was checked, or what went wrong."""
    rows: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False)
    """The offending rows (empty when ``passed``)."""
    invariant: str = ""
    """The DESIGN.md invariant(s) this check guards."""

    def __repr__(self) -> str:
        mark = "PASS" if self.passed else "FAIL"
        return f"{mark} {self.name}: {self.detail}"


class AuditReport:
    """Every check's result. ``ok`` is True when all passed."""

    def __init__(self, checks: Sequence[CheckResult], *, source: str = "") -> None:
        self.checks: list[CheckResult] = list(checks)
        self.source = source

    @property
    def ok(self) -> bool:
        """True when every check passed."""
        return all(c.passed for c in self.checks)

    def failed(self) -> list[CheckResult]:
        """The checks that failed, in check order."""
        return [c for c in self.checks if not c.passed]

    def __getitem__(self, name: str) -> CheckResult:
        for c in self.checks:
            if c.name == name:
                return c
        raise KeyError(name)

    def to_frame(self) -> pd.DataFrame:
        """One row per check: name, passed, n_rows (offending rows), invariant, detail."""
        return pd.DataFrame(
            {
                "name": [c.name for c in self.checks],
                "passed": np.array([c.passed for c in self.checks], dtype=bool),
                "n_rows": np.array([len(c.rows) for c in self.checks], dtype=np.int64),
                "invariant": [c.invariant for c in self.checks],
                "detail": [c.detail for c in self.checks],
            }
        )

    def to_dict(self, *, max_rows: int = 20) -> dict[str, Any]:
        """JSON-ready: ok, and per check its result and up to ``max_rows`` offending rows."""
        return {
            "source": self.source,
            "ok": self.ok,
            "checks": [
                {
                    "name": c.name,
                    "passed": c.passed,
                    "invariant": c.invariant,
                    "detail": c.detail,
                    "n_rows": len(c.rows),
                    "rows": json.loads(
                        c.rows.head(max_rows).to_json(orient="records", date_format="iso")
                    )
                    if len(c.rows)
                    else [],
                }
                for c in self.checks
            ],
        }

    def __repr__(self) -> str:
        n_bad = len(self.failed())
        head = (
            f"AuditReport({self.source or 'store'}: "
            + ("all checks passed" if self.ok else f"{n_bad} of {len(self.checks)} checks failed")
            + ")"
        )
        return "\n".join([head, *(f"  {c!r}" for c in self.checks)])

    def _repr_html_(self) -> str:
        esc = html.escape
        status = "all checks passed" if self.ok else f"{len(self.failed())} check(s) failed"
        rows = "".join(
            f"<tr><td>{'&#10004;' if c.passed else '&#10008;'}</td><td><code>{esc(c.name)}"
            f"</code></td><td>{esc(c.invariant)}</td><td>{len(c.rows)}</td>"
            f"<td>{esc(c.detail)}</td></tr>"
            for c in self.checks
        )
        samples = "".join(
            f"<details><summary>{esc(c.name)}: {len(c.rows)} offending row(s)</summary>"
            f"{_html_table(c.rows.head(10))}</details>"
            for c in self.failed()
            if len(c.rows)
        )
        return (
            f"<div><strong>Audit of {esc(self.source or 'store')}: {esc(status)}</strong>"
            "<table><thead><tr><th></th><th>check</th><th>invariant</th><th>rows</th>"
            f"<th>detail</th></tr></thead><tbody>{rows}</tbody></table>{samples}</div>"
        )


def _html_table(df: pd.DataFrame) -> str:
    # Build the cells ourselves: every value (a lesson text may hold markup) is escaped.
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>"
        for row in df.itertuples(index=False)
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _run(store: Store, name: str) -> CheckResult:
    invariant, fn = CHECKS[name]
    try:
        rows, clean = fn(store)
    except Exception as exc:  # a check that cannot run is a failed check, not a crash
        return CheckResult(name, False, f"check could not run: {type(exc).__name__}: {exc}",
                           pd.DataFrame(), invariant)
    if rows.empty:
        return CheckResult(name, True, clean, rows, invariant)
    first = str(rows["problem"].iat[0]) if "problem" in rows else "see rows"
    return CheckResult(name, False, f"{len(rows)} offending row(s); first: {first}",
                       rows.reset_index(drop=True), invariant)


def audit(store: Store, *, checks: Sequence[str] | None = None) -> AuditReport:
    """Run the audit checks (all, or those named) over ``store``.

    Read-only: works on a store opened with ``read_only=True``. Returns an
    :class:`AuditReport`; it never raises for a failing check.
    """
    names = list(CHECKS) if checks is None else list(checks)
    unknown = [n for n in names if n not in CHECKS]
    if unknown:
        raise BadInputError(
            f"unknown audit check(s) {', '.join(map(repr, unknown))}; expected some of "
            f"{', '.join(CHECKS)}", field="checks",
        )
    return AuditReport([_run(store, n) for n in names], source=store.path)
