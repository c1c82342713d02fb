"""Small samples say so (issue 35 item 5): an interval, a threshold choice or a correction
resting on fewer than SMALL_SAMPLE_VERDICTS held-out, labelled or people-answered verdicts
carries one warning line (small_sample_line), on every face: the command line's stderr
(never stdout, with or without --json), the results' reprs and HTML, the report and the
notebook displays; an interval of zero width from so few verdicts is never shown without
it, and a run of the sample's size shows none."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from tests.builders.cli import invoke
from tests.builders.stores import copy_db, simulated_db
from truss_lab.evaluate import choose_threshold
from truss_lab.evaluate._bootstrap import SMALL_SAMPLE_VERDICTS, small_sample_line
from truss_lab.evaluate._calibration import calibration_run
from truss_lab.evaluate._runs import compare_runs, evaluate_run
from truss_lab.faces._display import (
    CalibrationDisplay,
    ComparisonDisplay,
    SweepDisplay,
    format_choice,
)
from truss_lab.faces._notebook import run_sample_extractions, sample_run_id
from truss_lab.faces._report import choice_html, report_html
from truss_lab.store import Store

GOOD, OVER = sample_run_id("sim-good-v1"), sample_run_id("sim-overconfident-v1")
LINE = re.compile(r"warning: the intervals rest on .* fewer than 30: no interval from so few "
                  r"can be trusted")


def candidates(n_verdicts: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(y_true, salience, groups)``: two lessons a verdict, the first useful (salience
    0.9), the second not (0.3)."""
    return (np.tile([1, 0], n_verdicts), np.tile([0.9, 0.3], n_verdicts),
            np.repeat(np.arange(n_verdicts), 2))


def test_the_rule() -> None:
    assert small_sample_line({"held-out": SMALL_SAMPLE_VERDICTS}) is None
    assert small_sample_line({"labelled": None, "held-out": 30}) is None
    line = small_sample_line({"labelled": 4, "people-answered": None, "held-out": 2})
    assert line is not None and line.startswith(
        "warning: the intervals rest on 4 labelled and 2 held-out verdicts, fewer than 30: ")
    assert small_sample_line({"labelled": 40, "held-out": 1}).startswith(  # type: ignore[union-attr]
        "warning: the intervals rest on 1 held-out verdict, fewer")
    assert "\n" not in line


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
            assert f"rest on {held_out} held-out verdicts" in text, name
    # This data's intervals are of zero width at any size: at 100 verdicts (30 held out)
    # they are shown without a warning, never below.
    assert zero_width


def test_cross_validation_counts_all_verdicts() -> None:
    ch = choose_threshold(*candidates(20), cv=5, random_state=0)
    assert ch.small_sample is not None and "rest on 20 verdicts" in ch.small_sample
    assert choose_threshold(*candidates(40), cv=5, random_state=0).small_sample is None


def test_a_correction_on_few_people_answered_verdicts_says_so() -> None:
    # A prediction-powered choice: enough held out and labelled, 12 people-answered.
    ch = choose_threshold(*candidates(200), test_size=0.3, random_state=0, n_boot=0)
    assert ch.small_sample is None
    ch.split.update(correction="ppi (people answered for 12 of 200 verdicts)",
                    people_verdicts=12, labelled_verdicts=200)
    assert ch.small_sample is not None
    assert ch.small_sample.startswith("warning: the intervals rest on 12 people-answered "
                                      "verdicts, fewer than 30")
    ch.split["people_verdicts"] = 48
    assert ch.small_sample is None


# ------------------------------------------------------------------ a run of 4 verdicts


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A simulated run of 4 verdicts, labelled, by two extractors."""
    tmp = tmp_path_factory.mktemp("tiny")
    simulated_db(tmp / "data", tmp / "tiny.duckdb", runs=4, seed=5, labels=True,
                 extractors=("sim-good-v1", "sim-overconfident-v1"))
    with Store(tmp / "tiny.duckdb") as store:
        run_sample_extractions(store, extractors=("sim-good-v1", "sim-overconfident-v1"),
                               write_memory=False)
    return tmp / "tiny.duckdb"


@pytest.fixture(scope="module")
def full(sample_labelled: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample (1200 verdicts, labelled) with both extractors' runs."""
    path = copy_db(sample_labelled, tmp_path_factory.mktemp("full") / "full.duckdb")
    with Store(path) as store:
        run_sample_extractions(store, extractors=("sim-good-v1", "sim-overconfident-v1"),
                               write_memory=False)
    return path


COMMANDS = {
    "sweep": ("sweep", GOOD, "--n-boot", "50"),
    "choose": ("choose", GOOD, "--n-boot", "50"),
    "compare": ("compare", GOOD, OVER, "--n-boot", "50"),
    "calibrate": ("calibrate", GOOD, "--n-boot", "50"),
}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_the_command_line_says_it_once_on_stderr(tiny: Path, full: Path, command: str,
                                                 as_json: bool) -> None:
    extra = ("--json",) if as_json else ()
    few = invoke(*COMMANDS[command], "--db", tiny, *extra)
    assert few.exit_code == 0, few.output
    said = [ln for ln in few.stderr.splitlines() if LINE.match(ln)]
    assert len(said) == 1, few.stderr
    assert re.search(r"rest on \d+ (labelled|held-out)", said[0]), said
    assert "warning" not in few.stdout
    many = invoke(*COMMANDS[command], "--db", full, *extra)
    assert many.exit_code == 0, many.output
    assert "rest on" not in many.stderr and "warning" not in many.stdout


def test_python_reprs_and_displays_say_it_once(tiny: Path) -> None:
    with Store(tiny, read_only=True) as store:
        ev = evaluate_run(store, GOOD, n_boot=50)
        cmp = compare_runs(store, GOOD, OVER, n_boot=50)
        cal = calibration_run(store, GOOD, method=None)
        faces = {
            "evaluation": repr(ev), "choice": repr(ev.choice),
            "choice html": ev.choice._repr_html_(), "comparison": repr(cmp),
            "comparison html": cmp._repr_html_(), "calibration": repr(cal),
            "calibration html": cal._repr_html_(), "choice text": format_choice(ev.choice),
            "sweep display": SweepDisplay.from_run(store, GOOD, n_boot=50).ax_.get_title(),
            "comparison display": ComparisonDisplay.from_result(cmp).title_.get_text(),
            "calibration display": CalibrationDisplay.from_run(store, GOOD).ax_.get_title(),
        }
    for name, text in faces.items():
        text = " ".join(text.split())  # a plot's title wraps the line
        assert len(LINE.findall(text)) == 1, (name, text)
    n = ev.choice.split["labelled_verdicts"]
    assert 0 < n <= 4 and f"rest on {n} labelled" in repr(ev)
    assert ev.small_sample == ev.choice.small_sample
    assert f"rest on {cmp.n_labelled} labelled verdicts" in repr(cmp)


def test_python_faces_of_the_sample_say_nothing(full: Path) -> None:
    with Store(full, read_only=True) as store:
        ev = evaluate_run(store, GOOD, n_boot=20)
        cmp = compare_runs(store, GOOD, OVER, n_boot=20)
        cal = calibration_run(store, GOOD, method=None)
    assert (ev.small_sample, cmp.small_sample, cal.small_sample) == (None, None, None)
    assert "warning" not in repr(ev) + repr(cmp) + repr(cal)


def test_the_report_says_it_once_per_result(tiny: Path) -> None:
    with Store(tiny, read_only=True) as store:
        page = report_html(store, [GOOD, OVER], n_boot=50)
    # One line for each run's evaluation and calibration, one for the comparison.
    said = re.findall(r'<p class="warning">(warning: the intervals rest on [^<]*)</p>', page)
    assert len(said) == 5, said
