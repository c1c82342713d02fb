"""Governance: policy records and their supersession chains, the signed threshold decision,
and the audit of ADR 0011's invariants."""

from __future__ import annotations

import typing

from ..core._lazy import attach as _attach

if typing.TYPE_CHECKING:
    # Imported on first use (core/_lazy.py): importing the package stays cheap, so the
    # command line starts at once. These lines are the exports' one list of homes.
    from ._audit import AuditReport, CheckResult, audit
    from ._decision import propose_threshold
    from ._policies import current_policies, current_policy, policy_history, write_policy

__getattr__, __dir__ = _attach(__name__, __file__)

__all__ = [
    "AuditReport",
    "CheckResult",
    "audit",
    "current_policies",
    "current_policy",
    "policy_history",
    "propose_threshold",
    "write_policy",
]
