"""make demo ends with the three next commands (issue 37 item 6): the report of its two
labelled runs, the notebooks, the own-data tutorial; each one there to run or read."""

from __future__ import annotations

import shlex
from pathlib import Path

from tests.builders.cli import invoke
from tests.builders.stores import copy_db
from truss_lab.faces._notebook import sample_run_id
from truss_lab.faces.demo import next_steps

ROOT = Path(__file__).resolve().parent.parent


def test_the_next_commands_run(sample_good_run: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    db = copy_db(sample_good_run, tmp_path / "lab.duckdb")
    run = sample_run_id("sim-good-v1")
    text = next_steps(db, [run])
    report, lab, own = [shlex.split(ln, comments=True) for ln in text.splitlines()[2:]]
    assert report[0].endswith("truss-lab") and report[1] == "report"
    r = invoke(*report[1:])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "report.html").stat().st_size > 0
    assert lab == ["make", "lab"]
    assert (ROOT / own[0]).is_file()
