from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.builders import profiles
from tests.builders.stores import copy_db, drop_store, fresh_store, sample_template
from truss_lab.faces._notebook import load_sample, run_sample_extractions
from truss_lab.journal._crypto import SigningKey
from truss_lab.store._store import Store

# Hypothesis's example counts: modest under make test, in full under HYPOTHESIS_PROFILE=thorough.
profiles.load()


@pytest.fixture
def store() -> Iterator[Store]:
    """A fresh, migrated store (a temporary file: tests.builders.stores.fresh_store)."""
    s = fresh_store()
    yield s
    drop_store(s)


# -- the bundled sample, ingested once per session ----------------------------------------
# Four closed database files, templates for the whole session: a test (or a module
# fixture) copies one with tests.builders.stores.copy_db before writing, or opens it
# read-only. Never open a template for writing: every other test sees what it holds.


@pytest.fixture(scope="session")
def sample_unlabelled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Template: the sample's signed journal and its completions (no labels, no references)."""
    return sample_template(tmp_path_factory.mktemp("sample") / "unlabelled.duckdb")


@pytest.fixture(scope="session")
def sample_labelled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Template: the sample's journal, completions and gold labels (no references)."""
    return sample_template(tmp_path_factory.mktemp("sample") / "labelled.duckdb", labels=True)


@pytest.fixture(scope="session")
def sample_full(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Template: what ``load_sample`` ingests (journal, completions, labels, references)."""
    path = tmp_path_factory.mktemp("sample") / "full.duckdb"
    load_sample(path).close()
    return path


@pytest.fixture(scope="session")
def sample_good_run(sample_full: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Template: ``sample_full`` with the replay run of sim-good-v1 (no memory writes), the
    run the judge, matcher and call-limit tests judge."""
    path = copy_db(sample_full, tmp_path_factory.mktemp("sample") / "good_run.duckdb")
    with Store(path) as store:
        run_sample_extractions(store, extractors=("sim-good-v1",), write_memory=False)
    return path


@pytest.fixture(scope="session")
def sample_small_run(sample_full: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Template: ``sample_full`` with the replay run of sim-good-v1 on the first 100
    verdicts only, under ``sample_good_run``'s run id: for the tests of live judges and
    judge matchers, which test what a call's failure or answer does, not how many calls
    there are (each answered call is recorded on its own: the whole run's 553 cost
    minutes of the suite)."""
    from truss_lab.core._config import MemoryConfig
    from truss_lab.extract import Extractor, run_extraction
    from truss_lab.faces._notebook import sample_run_id

    path = copy_db(sample_full, tmp_path_factory.mktemp("sample") / "small_run.duckdb")
    with Store(path) as store:
        run_extraction(store, Extractor.replay(store, "sim-good-v1"),
                       MemoryConfig(lesson_extraction="model-scored"),
                       verdicts="seq <= 100", run_id=sample_run_id("sim-good-v1"),
                       progress=False, write_memory=False)
    return path


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
    """A Formats §1 contract_verdict payload."""
    return {**VERDICT, "checks": [dict(c) for c in VERDICT["checks"]]}
