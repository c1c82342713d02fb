"""What ``judge`` and ``match`` say when the model's calls fail (issue 28, item 10): every
call failed is a non-zero exit with one line; an unusable ``match`` answer is counted in
the command's own words, never a raw Python warning with a source line."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from tests.builders.cli import invoke
from tests.builders.http_server import Reply, ScriptedServer
from tests.builders.stores import copy_db
from truss_lab.faces._notebook import sample_run_id
from truss_lab.store import Store

RUN = sample_run_id("sim-good-v1")


def _answer(text: str) -> dict:
    return {"model": "m", "choices": [{"message": {"role": "assistant", "content": text}}]}


@pytest.fixture
def db(sample_small_run: Path, tmp_path: Path) -> Path:
    return copy_db(sample_small_run, tmp_path / "s.duckdb")


def _live(command: str, db: Path, srv: ScriptedServer, *more: str):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning reaching the user fails the test
        return invoke(command, RUN, "--db", db, "--judge", "openai:m", "--base-url",
                      srv.base_url, *more)


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_judge_exits_non_zero_with_one_line_when_every_call_failed(db: Path,
                                                                   as_json: bool) -> None:
    # A 400 is each verdict's own error (no breaker): before, 553 of them (the whole
    # run's) exited 0.
    with ScriptedServer(responder=lambda body: "bad request") as srv:
        srv.add(Reply(400, "no such model"))
        r = _live("judge", db, srv, *(["--json"] if as_json else []))
        n = srv.count
    assert r.exit_code == 1, r.output
    assert r.stderr.startswith("error: ") and len(r.stderr.strip().splitlines()) == 1
    assert f"every one of the {n} calls failed" in r.stderr and "no such model" in r.stderr
    if as_json:
        assert json.loads(r.stdout)["labels_added"] == 0
    else:
        assert r.stdout == ""
    with Store(db, read_only=True) as s:
        assert s.sql("SELECT count(*) FROM labels WHERE annotator LIKE 'judge:m@%'"
                     ).fetchone() == (0,)


def test_judge_with_some_failed_calls_still_exits_0(db: Path) -> None:
    good = json.dumps({"labels": [{"lesson": i, "useful": 1} for i in range(20)]})
    with ScriptedServer(responder=lambda body: _answer(good)) as srv:
        srv.add(Reply(400, "one bad"))
        r = _live("judge", db, srv)
    assert r.exit_code == 0, r.output
    assert "1 answer(s) not fully usable" in r.stdout


def test_an_unusable_match_answer_is_counted_not_a_python_warning(db: Path) -> None:
    good_then_bad = iter([json.dumps({"pairs": []})])

    def respond(body: dict) -> dict:
        # The first verdict gets prose (unusable), every other one an empty answer
        # (unusable too unless the verdict has nothing to pair): counted, not warned.
        return _answer(next(good_then_bad, "I think L0 matches R1."))

    with ScriptedServer(responder=respond) as srv:
        r = _live("match", db, srv)
        n = srv.count
    assert "Warning" not in r.output and ".py:" not in r.output
    assert r.exit_code == 1, r.output
    assert r.stderr.startswith("error: ") and len(r.stderr.strip().splitlines()) == 1
    assert f"none of the {n} answers could be used" in r.stderr
    assert "not one JSON object" in r.stderr or "not scored" in r.stderr


def test_a_match_with_one_unusable_answer_says_so_in_its_own_words(db: Path) -> None:
    from truss_lab.evaluate import JudgeMatcher, reference_truth
    from truss_lab.faces._notebook import SAMPLE
    from truss_lab.simulate import SimulatedMatchProvider
    from truss_lab.simulate._providers import SIMULATED_MATCH_MODEL

    sim = JudgeMatcher(SimulatedMatchProvider(SAMPLE / "lesson_truth.csv",
                                              SAMPLE / "references.jsonl"),
                       SIMULATED_MATCH_MODEL, parameters={"temperature": 0})
    with Store(db, read_only=True) as s:
        reference_truth(s, RUN, matcher=sim)
    answers = [r["text"] for r in sim.pending]
    with ScriptedServer() as srv:
        srv.add(Reply(200, _answer("I think L0 matches R1.")),
                *[Reply(200, _answer(t)) for t in answers[1:]])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            r = invoke("match", RUN, "--db", db, "--judge", f"openai:{SIMULATED_MATCH_MODEL}",
                       "--base-url", srv.base_url)
    assert r.exit_code == 0, r.output
    assert "Warning" not in r.output
    assert "1 verdict(s) left out, answer not usable; the first: " in r.stdout
    assert "not one JSON object" in r.stdout
