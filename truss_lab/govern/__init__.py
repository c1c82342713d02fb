"""Governance: policy records and their supersession chains, the signed threshold decision,
and the audit of ADR 0011's invariants."""

from __future__ import annotations

from ._audit import AuditReport, CheckResult, audit
from ._decision import propose_threshold
from ._policies import current_policies, current_policy, policy_history, write_policy

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
