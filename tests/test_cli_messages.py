"""What the command line says, in its own words (issue 29, CLI consistency): short
summaries, help that lists what is written and mentions only options that exist, CLI
wording (not Python's) in errors, and one line for a bad simulated:PATH."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from tests.builders.cli import invoke
from tests.builders.stores import SAMPLE, copy_db


def _one_line(r: click.testing.Result, code: int = 2) -> str:
    assert r.exit_code == code, r.output
    assert r.output.startswith("error: ") and len(r.output.strip().splitlines()) == 1, r.output
    assert "Traceback" not in r.output
    return r.output


def _help(*cmd: str) -> str:
    return " ".join(invoke(*cmd, "--help").output.split())


def test_simulate_prints_a_short_summary_and_its_help_lists_every_file(tmp_path: Path) -> None:
    r = invoke("simulate", "--out", tmp_path / "s", "--n-verdicts", "12")
    assert r.exit_code == 0, r.output
    written = sorted(p.name for p in (tmp_path / "s").iterdir())
    assert len(r.output) < 400 and len(r.output.strip().splitlines()) == 2, r.output
    assert "SimulationResult" not in r.output and "12 verdicts" in r.output
    assert all(name in r.output for name in written)
    shown = _help("simulate")
    assert [n for n in written if n not in shown] == []


def test_sample_help_lists_every_file_it_copies(tmp_path: Path) -> None:
    r = invoke("sample", "--out", tmp_path / "s")
    assert r.exit_code == 0, r.output
    copied = sorted(p.name for p in (tmp_path / "s").iterdir())
    assert copied == sorted(p.name for p in SAMPLE.iterdir() if p.is_file())
    shown = _help("sample")
    assert [n for n in copied if n not in shown] == []


@pytest.mark.parametrize("cmd", ["calibrate", "sweep", "propose", "compare", "report"])
def test_help_mentions_only_options_the_command_has(cmd: str) -> None:
    from truss_lab.faces.cli import cli

    command = cli.get_command(click.Context(cli), cmd)
    assert command is not None
    have = {o for p in command.params for o in p.opts}
    mentioned = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*[a-z]", _help(cmd)))
    assert mentioned - have - {"--help"} == set(), cmd


@pytest.fixture(scope="module")
def db(sample_full: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = copy_db(sample_full, tmp_path_factory.mktemp("msg") / "lab.duckdb")
    r = invoke("extract", "--db", path, "--quiet", "--extractor", "heuristic", "--policy",
               "on", "--dry-run", "--run-id", "h", "--verdicts", "seq <= 20")
    assert r.exit_code == 0, r.output
    return path


def test_a_run_id_taken_says_resume_in_cli_words(db: Path) -> None:
    out = _one_line(invoke("extract", "--db", db, "--quiet", "--extractor", "heuristic",
                           "--policy", "on", "--dry-run", "--run-id", "h",
                           "--verdicts", "seq <= 20"))
    assert "--resume h" in out and "resume=True" not in out and "--run-id" in out


@pytest.mark.parametrize("args", [
    ["judge", "h", "--judge"], ["match", "h", "--judge"],
    ["sweep", "h", "--truth", "references", "--matcher"]])
@pytest.mark.parametrize("bad", ["missing", "wrong"])
def test_a_bad_simulated_path_is_one_line(db: Path, tmp_path: Path, args: list[str],
                                          bad: str) -> None:
    truth = tmp_path / "lesson_truth.csv"
    if bad == "wrong":
        truth.write_text("verdict_hash,extractor\nab,x\n")
        (tmp_path / "references.jsonl").write_text('{"verdict_hash": "ab"}\n')
    spec = f"simulated:{truth}"
    if args[0] == "sweep":
        spec = f"judge:{spec}"
    out = _one_line(invoke(*args, spec, "--db", db))
    assert str(truth) in out or "references.jsonl" in out
    assert ("no such file" in out) if bad == "missing" else ("missing column" in out)
