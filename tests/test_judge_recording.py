"""Issue 27 item 5: the judge and the judge matcher record each paid call as it is
answered, so a run stopped part way (the breaker, SIGKILL) keeps its calls, and run
again makes none of them twice (a real local server; the CLI in a killed process)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import truss_lab as tl
from tests.builders.cli import invoke
from tests.builders.http_server import Reply, ScriptedServer, default_completion
from tests.builders.stores import copy_db
from truss_lab.evaluate._judges import Judge, JudgeMatcher, match_run, run_judge
from truss_lab.evaluate._truth import reference_truth
from truss_lab.extract._providers import CircuitOpenError
from truss_lab.faces import SAMPLE_DIR as SAMPLE
from truss_lab.simulate._providers import SIMULATED_MATCH_MODEL, SimulatedMatchProvider

ROOT = Path(__file__).resolve().parent.parent
CONFIG = tl.MemoryConfig(lesson_extraction="on")


def labels_all_useful(body: Any) -> dict[str, Any]:
    """A judge that calls every lesson it is shown useful (their tags are [L<i>])."""
    out = default_completion(body)
    shown = sorted({int(i) for i in re.findall(r"\[L?(\d+)\]",
                                               body["messages"][-1]["content"])})
    out["choices"][0]["message"]["content"] = json.dumps(
        {"labels": [{"lesson": i, "useful": 1} for i in shown]})
    return out


@pytest.fixture()
def judged(sample_full: Path, tmp_path: Path) -> tuple[Path, str, int]:
    db = copy_db(sample_full, tmp_path / "lab.duckdb")
    with tl.Store(db) as s:
        run = tl.run_extraction(s, tl.Extractor.replay(s, "sim-good-v1"), CONFIG,
                                verdicts="seq <= 80", progress=False, write_memory=False,
                                run_id="r")
        n = s.sql("SELECT count(DISTINCT verdict_hash) FROM candidates WHERE run_id = 'r' "
                  "AND valid").fetchall()[0][0]
    return db, run.run_id, int(n)


def judge_rows(db: Path) -> int:
    with tl.Store(db, read_only=True) as s:
        return int(s.sql("SELECT count(*) FROM completions WHERE "
                         "starts_with(extractor_id, 'judge:judge-m@')").fetchall()[0][0])


def test_a_judge_stopped_by_the_breaker_keeps_its_calls_and_resumes(
        judged: tuple[Path, str, int]) -> None:
    db, run_id, n = judged
    with ScriptedServer(responder=labels_all_useful) as srv, tl.Store(db) as s:
        srv.add(*[Reply()] * 20, *[Reply(status=500)] * 2)
        live = Judge.openai(srv.base_url, "judge-m", max_retries=0,
                            max_consecutive_failures=2)
        with pytest.raises(CircuitOpenError):
            run_judge(s, run_id, live)
        assert srv.count == 22
        kept = s.sql("SELECT count(*) FROM completions WHERE starts_with(extractor_id, "
                     "'judge:judge-m@')").fetchall()[0][0]
        assert kept == 20  # the answered calls, recorded as they came
        again = run_judge(s, run_id, Judge.openai(srv.base_url, "judge-m", max_retries=0))
    assert again.resumed == 20 and again.provider_calls == n - 20 == again.recorded
    assert srv.count == 22 + n - 20  # the two failed calls are asked again, nothing else
    assert again.n_labels == again.n_lessons and not again.errors


def _reply(text: str) -> Reply:
    return Reply(body={"model": SIMULATED_MATCH_MODEL,
                       "choices": [{"message": {"role": "assistant", "content": text}}]})


def test_a_matcher_stopped_part_way_keeps_its_calls_and_resumes(
        judged: tuple[Path, str, int]) -> None:
    db, run_id, _ = judged
    with tl.Store(db) as s:
        # What a model answers, in the order the verdicts are asked: the simulator's.
        sim = JudgeMatcher(SimulatedMatchProvider(SAMPLE / "lesson_truth.csv",
                                                  SAMPLE / "references.jsonl"),
                           SIMULATED_MATCH_MODEL, parameters={"temperature": 0})
        reference_truth(s, run_id, matcher=sim)
        answers = [r["text"] for r in sim.pending]
        k = len(answers) // 2
        assert k >= 3
        with ScriptedServer() as srv:
            srv.add(*[_reply(t) for t in answers[:k]], *[Reply(status=500)] * 2)
            live = JudgeMatcher.openai(srv.base_url, SIMULATED_MATCH_MODEL, max_retries=0,
                                       max_consecutive_failures=2)
            with pytest.raises(CircuitOpenError):
                match_run(s, run_id, live)
            # Kept though the run stopped before its end.
            assert s.sql("SELECT count(*) FROM completions WHERE starts_with(extractor_id, "
                         "'match:')").fetchall() == [(k,)]
            srv.add(*[_reply(t) for t in answers[k:]])
            again = match_run(s, run_id, JudgeMatcher.openai(
                srv.base_url, SIMULATED_MATCH_MODEL, max_retries=0))
    assert again["resumed"] == k and again["recorded"] == len(answers) - k
    assert again["requests"] == len(answers) and again["provider_calls"] == len(answers) - k
    assert srv.count == k + 2 + len(answers) - k  # none of the k was asked twice
    assert again["errors"] == {}


def test_sigkill_during_a_live_judge_keeps_every_answered_call(
        judged: tuple[Path, str, int]) -> None:
    """A judge killed (SIGKILL) after some calls keeps them; run again it asks only for
    the rest (at most the one call in flight at the kill is asked twice)."""
    db, run_id, n = judged
    with ScriptedServer(responder=labels_all_useful, latency=0.05) as srv:
        cmd = [sys.executable, "-m", "truss_lab.faces.cli", "judge", run_id, "--db", str(db),
               "--judge", "openai:judge-m", "--base-url", srv.base_url]
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, env={**os.environ, "OPENAI_API_KEY": "k"})
        deadline = time.monotonic() + 120
        while srv.count < 12 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert proc.returncode == -signal.SIGKILL
        asked = srv.count
        kept = judge_rows(db)
        assert asked >= 12 and kept >= asked - 1  # only the call in flight can be lost
        with tl.Store(db) as s:
            again = run_judge(s, run_id, Judge.openai(srv.base_url, "judge-m"))
    assert again.resumed == kept and again.provider_calls == n - kept
    assert srv.count == asked + n - kept <= n + 1
    assert again.n_labels == again.n_lessons


# -- a second live judge of a run answers from its recordings, and says so -----------------


def _prose(body: Any) -> dict[str, Any]:
    out = default_completion(body)
    out["choices"][0]["message"]["content"] = "I think L0 matches R1, and lesson 0 is useful."
    return out


def pairs_all_alike(body: Any) -> dict[str, Any]:
    """A usable match answer: every (lesson, reference) pair the request shows, 0.9."""
    text = body["messages"][-1]["content"]
    tags = [sorted(set(re.findall(rf"^\[({k}\d+)\]", text, re.M))) for k in "LR"]
    out = default_completion(body)
    out["choices"][0]["message"]["content"] = json.dumps({"pairs": [
        {"lesson": a, "reference": b, "similarity": 0.9} for a in tags[0] for b in tags[1]]})
    return out


def _cli_live(command: str, run_id: str, db: Path, srv: ScriptedServer, *more: str) -> Any:
    return invoke(command, run_id, "--db", db, "--judge", "openai:m", "--base-url",
                  srv.base_url, *more)


def recorded_by_run(db: Path, prefix: str) -> dict[Any, int]:
    with tl.Store(db, read_only=True) as s:
        return dict(s.sql("SELECT judged_run_id, count(*) FROM completions WHERE "
                          "starts_with(extractor_id, ?) GROUP BY 1", [prefix]).fetchall())


@pytest.mark.parametrize(("command", "usable", "prefix"), [
    ("match", pairs_all_alike, "match:m@"), ("judge", labels_all_useful, "judge:m@")])
def test_a_second_live_judge_of_a_run_says_its_unusable_answers_were_replayed(
        judged: tuple[Path, str, int], command: str, usable: Any, prefix: str) -> None:
    """The defect: a run whose live answers were prose, judged live again against a
    fixed server, answered from its recorded prose and called nothing -- and said
    "none of the answers could be used" as if the model had been asked. Now it says the
    answers were replayed, with no call, and how to ask again: a rerun, judged live,
    makes the calls and uses the answers, while the run keeps replaying its own."""
    db, run_id, _ = judged
    with ScriptedServer(responder=_prose) as srv:
        first = _cli_live(command, run_id, db, srv)
        n = srv.count
    assert first.exit_code == 1 and n > 3, first.output
    assert "replayed" not in first.stderr  # every answer was the model's, just now
    with ScriptedServer(responder=usable) as srv:
        again = _cli_live(command, run_id, db, srv, "--json")
        assert srv.count == 0  # the fixed server is never asked
        assert again.exit_code == 1, again.output
        res = json.loads(again.stdout)
        assert (res["resumed"], res["resumed_unusable"], res["recorded"]) == (n, n, 0)
        assert res["provider_calls"] == 0  # match's and judge's count the calls sent
        assert len(again.stderr.strip().splitlines()) == 1
        assert (f"({n} of them recorded answers replayed from this run's recordings, no "
                "call made; to ask the model again, " in again.stderr)
        assert f"truss-lab rerun {run_id} --run-id NEW, then truss-lab {command} NEW" in (
            again.stderr)
        # What the line says to do asks the model, and its usable answers are used.
        assert invoke("rerun", run_id, "--db", db, "--run-id", "again").exit_code == 0
        fresh = _cli_live(command, "again", db, srv)
        assert fresh.exit_code == 0, fresh.output
        assert srv.count == n and "replayed" not in fresh.stdout
        assert f"; {n} requests, {n} live calls recorded for replay" in fresh.stdout
        assert "not usable" not in fresh.stdout and "not fully usable" not in fresh.stdout
        # Asked once more, the rerun answers from its own recordings and says so.
        third = _cli_live(command, "again", db, srv)
        assert srv.count == n and third.exit_code == 0, third.output
        # Its main line counts the calls sent (none); the replayed answers have their own.
        assert "; 0 requests, 0 live calls recorded for replay" in third.stdout
        assert (f"{n} answer(s) replayed from this run's recordings (no call made); to ask "
                "the model again" in third.stdout)
    assert recorded_by_run(db, prefix) == {run_id: n, "again": n}
    # The run still replays its own (prose) answers, the rerun its usable ones.
    replay = invoke(command, run_id, "--db", db, "--judge", "replay:m")
    assert replay.exit_code == 1 and "replayed from" not in replay.stderr
    assert invoke(command, "again", "--db", db, "--judge", "replay:m").exit_code == 0


def test_the_python_results_count_replayed_and_live_answers(
        judged: tuple[Path, str, int]) -> None:
    db, run_id, n = judged
    with ScriptedServer(responder=labels_all_useful) as srv, tl.Store(db) as s:
        srv.add(*[Reply(body=_prose({"messages": []}))] * 3)  # the first three: prose
        live = run_judge(s, run_id, Judge.openai(srv.base_url, "m"))
        assert (live.provider_calls, live.resumed, live.resumed_unusable) == (n, 0, 0)
        assert len(live.errors) == 3
        again = run_judge(s, run_id, Judge.openai(srv.base_url, "m"))
        assert (again.provider_calls, again.resumed, again.resumed_unusable) == (0, n, 3)
        assert again.to_dict()["resumed_unusable"] == 3 and srv.count == n


def test_an_evaluation_by_a_live_judge_matcher_notes_its_replayed_answers(
        judged: tuple[Path, str, int]) -> None:
    """`sweep --matcher judge:openai:M` answers from the run's recordings too: its own
    output cannot say where the similarities came from, so a note on stderr does."""
    db, run_id, _ = judged
    args = ("sweep", run_id, "--db", db, "--truth", "references", "--n-boot", "20",
            "--matcher", "judge:openai:m")
    with ScriptedServer(responder=_prose) as srv:
        first = invoke(*args, "--base-url", srv.base_url)
        n = srv.count
    assert first.exit_code == 0 and n > 3, first.output
    assert "replayed" not in first.stderr
    with ScriptedServer(responder=pairs_all_alike) as srv:
        again = invoke(*args, "--base-url", srv.base_url)
        assert srv.count == 0 and again.exit_code == 0, again.output
    assert (f"note: judge:m@match-v1: {n} answer(s) replayed from the matched run's "
            f"recordings (no call made, {n} of them not usable); to ask the model again, "
            "evaluate a rerun of the run: truss-lab rerun RUN --run-id NEW") in again.stderr
