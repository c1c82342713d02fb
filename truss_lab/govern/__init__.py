"""Governance: policy records, the threshold decision, the audit of ADR 0011's invariants."""
