"""A warning of truss_lab's reaches a command-line user as one ``warning: <message>`` line
on stderr, once per message, never Python's file, line number and source line; stdout
(``--json``) stays the command's own. One mechanism, the ``truss-lab`` group's, for every
command (faces/cli/oneline.py ``one_line_warnings``)."""

from __future__ import annotations

import gc
import json
import re
import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest

from tests.builders.cli import invoke
from tests.builders.http_server import ScriptedServer
from tests.builders.stores import SAMPLE, copy_db
from truss_lab.core import TrussLabWarning
from truss_lab.faces._notebook import sample_run_id
from truss_lab.faces.cli.oneline import one_line_warnings

RUN = sample_run_id("sim-good-v1")
# What Python's own display of a warning holds: "path.py:12: SomeWarning: ...".
PYTHON_FORM = re.compile(r"\.py:\d+|Warning\b")


@pytest.fixture(scope="module")
def db(sample_good_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_db(sample_good_run, tmp_path_factory.mktemp("warn") / "s.duckdb")


@pytest.fixture(scope="module")
def small_db(sample_small_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_db(sample_small_run, tmp_path_factory.mktemp("warn") / "small.duckdb")


def _warning_lines(stderr: str) -> list[str]:
    assert not PYTHON_FORM.search(stderr), stderr
    return [ln for ln in stderr.splitlines() if ln.startswith("warning: ")]


def test_one_line_warnings_shows_truss_labs_once_and_leaves_the_rest_to_python(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.warns(UserWarning) as python_shows:
        with one_line_warnings():
            for _ in range(2):
                warnings.warn("ours,\n  on two lines", TrussLabWarning, stacklevel=1)
                warnings.warn("a library's own", UserWarning, stacklevel=1)
    assert capsys.readouterr().err == "warning: ours, on two lines\n"
    assert [str(w.message) for w in python_shows] == ["a library's own"] * 2


def test_warnings_given_inside_follow_the_filters() -> None:
    # A test's "error" (or a user's -W ignore) still decides: the line replaces only
    # Python's display of a warning, not whether it is given.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(TrussLabWarning), one_line_warnings():
            warnings.warn("ours", TrussLabWarning, stacklevel=1)


def test_sweep_with_recall_undefined_says_each_warning_once_in_a_line(
        db: Path, tmp_path: Path) -> None:
    # Every label "not useful": no positive, so recall is undefined (the library warns
    # from the sweep, the choice's train and test sides, and the sweep again).
    labels = pd.read_csv(SAMPLE / "labels.csv").assign(useful=0)
    labels.to_csv(tmp_path / "none_useful.csv", index=False)
    args = ("sweep", RUN, "--db", db, "--labels", tmp_path / "none_useful.csv",
            "--n-boot", "20")
    text, as_json = invoke(*args), invoke(*args, "--json")
    for r in (text, as_json):
        assert r.exit_code == 0, r.output
        said = _warning_lines(r.stderr)
        assert said == sorted(set(said), key=said.index) and len(said) >= 2, r.stderr
        assert "warning: y_true has no positive labels: recall is undefined (NaN)" in said
        assert r.stderr.strip().splitlines() == said  # nothing else on stderr
    assert "nan" in text.stdout and "warning" not in text.stdout
    assert json.loads(as_json.stdout)["run_id"] == RUN
    assert _warning_lines(text.stderr) == _warning_lines(as_json.stderr)


def _prose(body: dict) -> dict:
    return {"model": "m", "choices": [{"message": {"role": "assistant",
                                                   "content": "I think L0 matches R1."}}]}


@pytest.mark.parametrize("command", [
    ("sweep", RUN, "--truth", "references", "--n-boot", "20"),
    ("sweep", RUN, "--truth", "references", "--n-boot", "20", "--json"),
    ("choose", RUN, "--truth", "references"),
    ("compare", RUN, RUN, "--truth", "references", "--n-boot", "20", "--json"),
], ids=["sweep", "sweep-json", "choose", "compare-json"])
def test_a_judge_matcher_leaving_verdicts_out_is_one_warning_line(
        small_db: Path, command: tuple[str, ...]) -> None:
    # Prose is no similarity: the live judge matcher leaves every verdict with
    # references out (the first command asks the server, the others replay its answers).
    with ScriptedServer(responder=_prose) as srv:
        r = invoke(*command, "--db", small_db, "--matcher", "judge:openai:m",
                   "--base-url", srv.base_url)
    assert r.exit_code == 0, r.output
    # With most verdicts left out, the correction rests on few people-answered verdicts:
    # that is its own warning line (tests/test_small_samples.py).
    said = [ln for ln in _warning_lines(r.stderr) if "rest on" not in ln]
    assert len(said) == 1, r.stderr
    assert re.fullmatch(rf"warning: \d+ verdict\(s\) of run '{RUN}' left out: the matcher "
                        r"could not score their lessons \(see the matcher's errors\)", said[0])
    if "--json" in command:
        json.loads(r.stdout)  # stdout is the JSON alone
    else:
        assert "warning" not in r.stdout


def test_a_live_judge_matcher_closes_its_connections_with_the_command(
        sample_small_run: Path, tmp_path: Path) -> None:
    """An evaluating command's live judge matcher closed nothing: its sockets were found
    by the garbage collector later, in whatever test ran then (a ResourceWarning that
    failed unrelated tests under pytest's unraisable-exception check)."""
    db = copy_db(sample_small_run, tmp_path / "s.duckdb")
    lost: list[object] = []
    hook = sys.unraisablehook
    sys.unraisablehook = lost.append
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", ResourceWarning)
            with ScriptedServer(responder=_prose) as srv:
                r = invoke("sweep", RUN, "--db", db, "--truth", "references", "--n-boot", "20",
                           "--matcher", "judge:openai:m", "--base-url", srv.base_url)
                asked = len(srv.requests)
            gc.collect()
    finally:
        sys.unraisablehook = hook
    assert r.exit_code == 0, r.output
    assert asked > 0  # live calls were made, so there were connections to close
    unclosed = [u for u in lost if isinstance(getattr(u, "exc_value", None), ResourceWarning)]
    assert unclosed == [], [str(getattr(u, "exc_value", u)) for u in unclosed]


def test_ingest_warnings_go_to_stderr(sample_full: Path, tmp_path: Path) -> None:
    # Issue 37 item 6: match labels of verdicts no run holds land with a warning each;
    # stdout holds the report alone, each warning is one 'warning:' line on stderr.
    from truss_lab.store import Store

    db = copy_db(sample_full, tmp_path / "s.duckdb")
    with Store(db) as store:
        store.sql("DELETE FROM match_labels")
    r = invoke("ingest", "match-labels", SAMPLE / "match_labels.csv", "--db", db)
    assert r.exit_code == 0, r.output
    assert "warning" not in r.stdout and r.stdout.count("\n") == 1, r.stdout
    said = r.stderr.splitlines()
    assert len(said) == 11 and all(ln.startswith("warning: ") for ln in said), said
    assert "more (--json lists them all)" in said[-1]
