"""The default executor is chosen, not fixed (issue 29): worker processes only where they
pay (the heuristic on a large batch), inline for the sample, replays and live models.
The numbers behind the threshold are benchmarks/bench_executor.py's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.builders.cli import invoke
from tests.builders.stores import copy_db
from truss_lab.core._errors import BadInputError
from truss_lab.extract._batch import (
    AUTO_PROCESSES_MIN_VERDICTS,
    choose_executor,
    parse_executor,
)
from truss_lab.extract._extractor import Extractor
from truss_lab.store._store import Store


def test_auto_picks_processes_only_for_a_large_heuristic_batch(sample_unlabelled: Path) -> None:
    heur = Extractor.heuristic()
    assert choose_executor(heur, AUTO_PROCESSES_MIN_VERDICTS - 1) == "inline"
    kind, n = parse_executor(choose_executor(heur, AUTO_PROCESSES_MIN_VERDICTS))
    assert kind == "processes" and 1 <= n <= 4
    with Store(sample_unlabelled, read_only=True) as s:
        replay = Extractor.replay(s, "sim-good-v1")
    assert choose_executor(replay, 10 * AUTO_PROCESSES_MIN_VERDICTS) == "inline"
    assert parse_executor("auto") == ("auto", 0)
    with pytest.raises(BadInputError, match="expected auto, inline"):
        parse_executor("gpu")


def test_the_quickstart_extract_runs_inline_by_default(sample_unlabelled: Path,
                                                       tmp_path: Path) -> None:
    db = copy_db(sample_unlabelled, tmp_path / "lab.duckdb")
    r = invoke("extract", "--db", db, "--extractor", "heuristic", "--policy", "on",
               "--dry-run", "--run-id", "heur", "--quiet", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["n_verdicts"] == 1200
    with Store(db, read_only=True) as s:
        config = json.loads(s.sql("SELECT config FROM extraction_runs WHERE run_id = 'heur'"
                                  ).fetchall()[0][0])
    assert config["executor"] == "inline"  # what auto chose, stored for a resume
