from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.builders import profiles
from tests.builders.stores import fresh_store
from truss_lab.journal._crypto import SigningKey
from truss_lab.store._store import Store

# Hypothesis's example counts: modest under make test, in full under HYPOTHESIS_PROFILE=thorough.
profiles.load()


@pytest.fixture
def store() -> Iterator[Store]:
    """A fresh, migrated in-memory store."""
    s = fresh_store()
    yield s
    s.close()


@pytest.fixture
def key() -> SigningKey:
    """A deterministic test key (public test material, never a real key)."""
    return SigningKey.from_seed("test-operator", bytes(range(32)))


VERDICT = {
    "contract_id": "c-0042",
    "run_id": "r-0042-1",
    "goal": "Migrate the billing cron job to the new scheduler",
    "verdict": "fail",
    "summary": "Job migrated but timezone handling regressed",
    "checks": [
        {"name": "tz_regression", "passed": False,
         "evidence": "02:00 UTC run fired at 03:00 after DST change"},
        {"name": "job_registered", "passed": True, "evidence": "scheduler lists billing-cron"},
    ],
    "tags": ["scheduler", "dst"],
}


@pytest.fixture
def verdict() -> dict:
    """A FORMATS.md contract_verdict payload."""
    return {**VERDICT, "checks": [dict(c) for c in VERDICT["checks"]]}
