"""Small samples say so (issue 35 item 5): a choice whose held-out side holds fewer than
SMALL_SAMPLE_VERDICTS verdicts carries one warning line, in the CLI, the result's repr and
HTML, the report and the notebook display text; an interval of zero width from so few
verdicts is never shown without it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.builders.cli import invoke
from tests.builders.stores import simulated_db
from truss_lab.evaluate import choose_threshold
from truss_lab.evaluate._bootstrap import SMALL_SAMPLE_VERDICTS, small_sample_line
from truss_lab.faces._display import format_choice
from truss_lab.faces._notebook import run_sample_extractions, sample_run_id
from truss_lab.faces._report import choice_html
from truss_lab.store import Store


def candidates(n_verdicts: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(y_true, salience, groups)``: two lessons a verdict, the first useful (salience
    0.9), the second not (0.3)."""
    return (np.tile([1, 0], n_verdicts), np.tile([0.9, 0.3], n_verdicts),
            np.repeat(np.arange(n_verdicts), 2))


def test_the_rule() -> None:
    assert small_sample_line(SMALL_SAMPLE_VERDICTS, "x") is None
    line = small_sample_line(2, "the held-out metrics")
    assert line is not None and line.startswith("warning: the held-out metrics rest on 2 "
                                                "verdicts, fewer than 30")


@pytest.mark.parametrize(("n", "warned"), [(4, True), (96, True), (100, False)])
def test_every_face_of_a_choice_says_so_once(n: int, warned: bool) -> None:
    ch = choose_threshold(*candidates(n), test_size=0.3, random_state=0, n_boot=50)
    held_out = ch.split["n_test_verdicts"]
    assert warned == (held_out < SMALL_SAMPLE_VERDICTS)
    iv = ch.test_intervals.iloc[0]
    zero_width = any(iv[f"{m}_low"] == iv[f"{m}_high"] for m in ("precision", "recall"))
    faces = {"repr": repr(ch), "html": ch._repr_html_(), "text": format_choice(ch),
             "report": choice_html(ch)}
    for name, text in faces.items():
        assert text.count("warning:") == (1 if warned else 0), (name, text)
        if warned:
            assert f"rest on {held_out} verdicts" in text, name
    # This data's intervals are of zero width at any size: at 100 verdicts (30 held out)
    # they are shown without a warning, never below.
    assert zero_width


def test_cross_validation_counts_all_verdicts() -> None:
    ch = choose_threshold(*candidates(20), cv=5, random_state=0)
    assert ch.small_sample is not None and "rest on 20 verdicts" in ch.small_sample
    assert choose_threshold(*candidates(40), cv=5, random_state=0).small_sample is None


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A simulated, labelled run of 4 verdicts."""
    tmp = tmp_path_factory.mktemp("tiny")
    simulated_db(tmp / "data", tmp / "tiny.duckdb", runs=4, seed=5, labels=True,
                 extractors=("sim-good-v1",))
    with Store(tmp / "tiny.duckdb") as store:
        run_sample_extractions(store, extractors=("sim-good-v1",), write_memory=False)
    return tmp / "tiny.duckdb"


@pytest.mark.parametrize("command", ["sweep", "choose"])
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_the_command_line_says_it_once_on_stderr(tiny: Path, command: str,
                                                 as_json: bool) -> None:
    # A command's warnings are stderr lines (tests/test_cli_warnings.py): stdout holds
    # the command's own output, with --json the JSON alone.
    r = invoke(command, sample_run_id("sim-good-v1"), "--db", tiny, "--n-boot", "50",
               *(("--json",) if as_json else ()))
    assert r.exit_code == 0, r.output
    said = [ln for ln in r.stderr.splitlines() if "rest on" in ln]
    assert len(said) == 1 and said[0].startswith("warning: the held-out metrics"), r.stderr
    assert "warning" not in r.stdout
