"""One name per meaning across the command line (issue 29, /work/wt/CLI_NAMES.md): the
renamed options answer to their new names, the old spellings still work (hidden), the
two disagreeing is one line, and an error names the option the user typed."""

from __future__ import annotations

from pathlib import Path

import click
import pytest

from tests.builders.cli import invoke
from tests.builders.stores import copy_db
from truss_lab.faces.cli import cli

# command, new name, its old spellings
RENAMES = [
    (("sweep",), "--matcher", ("--match-judge",)),
    (("sweep",), "--base-url", ("--match-base-url",)),
    (("compare",), "--base-url", ("--match-base-url",)),
    (("judge",), "--judge", ("--extractor",)),
    (("match",), "--judge", ("--extractor",)),
    (("simulate",), "--n-verdicts", ("--verdicts", "--runs")),
    (("simulate",), "--random-state", ("--seed",)),
    (("report",), "--n-verdicts", ("--max-verdicts",)),
    (("queue",), "--n-lessons", ("--n",)),
    (("errors",), "--n-errors", ("--limit",)),
    (("ingest", "journal"), "--keyring", ("--keys",)),
]


def _command(path: tuple[str, ...]) -> click.Command:
    cmd: click.Command = cli
    for name in path:
        assert isinstance(cmd, click.Group)
        found = cmd.get_command(click.Context(cmd), name)
        assert found is not None, path
        cmd = found
    return cmd


@pytest.mark.parametrize(("path", "new", "old"), RENAMES)
def test_new_name_shown_old_ones_hidden_but_accepted(path, new, old) -> None:
    params = {o: p for p in _command(path).params for o in p.opts}
    assert new in params and not getattr(params[new], "hidden", False)
    for o in old:
        assert o in params and params[o].hidden, (path, o)
    shown = invoke(*path, "--help").output
    assert new in shown
    assert not any(f"{o} " in shown or f"{o}\n" in shown for o in old if o != "--n"), shown


@pytest.fixture(scope="module")
def db(sample_full: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = copy_db(sample_full, tmp_path_factory.mktemp("names") / "lab.duckdb")
    r = invoke("extract", "--db", path, "--quiet", "--extractor", "heuristic", "--policy",
               "on", "--dry-run", "--run-id", "h", "--verdicts", "seq <= 40")
    assert r.exit_code == 0, r.output
    return path


def _one_line(r: click.testing.Result, code: int = 2) -> str:
    assert r.exit_code == code, r.output
    assert r.output.startswith("error: ") and len(r.output.strip().splitlines()) == 1, r.output
    assert "Traceback" not in r.output
    return r.output


def test_old_spellings_do_what_the_new_ones_do(db: Path) -> None:
    new = invoke("errors", "h", "--db", db, "--n-errors", "1")
    old = invoke("errors", "h", "--db", db, "--limit", "1")
    assert new.exit_code == old.exit_code == 0 and new.output == old.output


def test_old_and_new_disagreeing_is_one_line(tmp_path: Path) -> None:
    out = _one_line(invoke("simulate", "--out", tmp_path / "s", "--n-verdicts", "4",
                           "--verdicts", "3"))
    assert "--n-verdicts" in out and "--verdicts" in out and "old name" in out
    assert not (tmp_path / "s").exists()
    out = _one_line(invoke("sweep", "r", "--matcher", "lexical", "--match-judge", "replay:x"))
    assert "--matcher judge:replay:x" in out


@pytest.mark.parametrize(("given", "value", "named"), [
    ("--judge", "replay:nobody", "--judge"),
    ("--extractor", "replay:nobody", "--extractor"),
    ("--judge", "bogus", "--judge"),
    ("--extractor", "bogus", "--extractor"),
])
def test_a_judge_error_names_the_option_given(db: Path, given: str, value: str,
                                              named: str) -> None:
    out = _one_line(invoke("judge", "h", "--db", db, given, value))
    assert f"'{named}'" in out
    other = {"--judge": "--extractor", "--extractor": "--judge"}[named]
    assert other not in out


@pytest.mark.parametrize("args", [
    ["--match-judge", "replay:nobody"], ["--matcher", "judge", "--match-judge", "replay:nobody"],
    ["--matcher", "judge:replay:nobody"]])
def test_a_matcher_error_names_the_option_given(db: Path, args: list[str]) -> None:
    out = _one_line(invoke("sweep", "h", "--db", db, "--truth", "references", *args))
    named = "--match-judge" if "--match-judge" in args else "--matcher"
    assert f"'{named}'" in out and "--extractor" not in out and "nobody" in out
    assert ("--matcher" not in out) if named == "--match-judge" else True


def test_a_mistyped_choice_is_one_line_that_suggests(db: Path) -> None:
    out = _one_line(invoke("sweep", "h", "--db", db, "--truth", "label"))
    assert "did you mean 'labels'?" in out and "--truth" in out and "Usage:" not in out
    out = _one_line(invoke("sweep", "h", "--db", db, "--matcher", "lexcal"))
    assert "did you mean 'lexical'?" in out
    out = _one_line(invoke("sweep", "h", "--db", db, "--matcher", "jduge:replay:x"))
    assert "did you mean 'judge:replay:x'?" in out
    out = _one_line(invoke("sweep", "h", "--db", db, "--matcher", "judge"))
    assert "--matcher judge:SPEC" in out
    # Any usage error: one line saying where the help is.
    out = _one_line(invoke("sweep", "h", "--frob"))
    assert "--frob" in out and "sweep --help`" in out
    out = _one_line(invoke("swep"))
    assert "swep" in out and " --help`" in out
