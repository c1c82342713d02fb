"""Issue 27 items 3 and 5 for the judges: a judge's (and a judge matcher's) call belongs
to the judge run that paid for it -- the judge on one run of an extractor -- so two runs
of the same extractor, judged live against a real local server that answers differently
on each call, keep every call each paid for, and each replays (and resumes) as itself
with zero requests to the server."""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import truss_lab as tl
from tests.builders.cli import invoke_json
from tests.builders.http_server import CountingResponder, ScriptedServer
from tests.builders.stores import copy_db
from truss_lab.evaluate._judges import Judge, JudgeMatcher, match_run, run_judge

RUNS = ("first", "second")


class Changing(CountingResponder):
    """A model that answers each call differently: an extraction request gets the
    lesson "answer number n" (n counts the calls), a judge request labels the lessons
    it is shown useful or not by a hash of n and their index, a match request
    gives each pair a similarity that moves with n."""

    def answer(self, body: Any, n: int) -> str:
        user = body["messages"][-1]["content"]
        system = body["messages"][0]["content"]
        if '"pairs"' in system:
            ls = sorted(set(re.findall(r"\[(L\d+)\]", user)))
            rs = sorted(set(re.findall(r"\[(R\d+)\]", user)))
            return json.dumps({"pairs": [
                {"lesson": a, "reference": b, "similarity": round((n * 7 + i) % 10 / 10, 1)}
                for i, (a, b) in enumerate(itertools.product(ls, rs))]})
        if '"labels"' in system:
            shown = sorted({int(i) for i in re.findall(r"\[(\d+)\]", user)})
            return json.dumps({"labels": [
                {"lesson": i, "useful": hashlib.sha256(f"{n}/{i}".encode()).digest()[0] % 2}
                for i in shown]})
        return json.dumps({"lessons": [
            {"text": f"answer number {n}", "salience": 0.9},
            {"text": f"another answer {n}", "salience": 0.8}]})


def judge_rows(db: Path, prefix: str) -> dict[Any, int]:
    """Recorded calls of the judge (or matcher) whose replay keys start with ``prefix``,
    by the run they judged."""
    with tl.Store(db, read_only=True) as s:
        return dict(s.sql("SELECT judged_run_id, count(*) FROM completions WHERE "
                          "starts_with(extractor_id, ?) GROUP BY 1", [prefix]).fetchall())


@pytest.fixture(scope="module")
def lab(sample_full: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Two live extraction runs of one extractor on the annotated verdicts, each judged
    live (the label judge and the judge matcher), all against one changing server."""
    db = copy_db(sample_full, tmp_path_factory.mktemp("judgerec") / "lab.duckdb")
    with tl.Store(db, read_only=True) as s:
        seqs = [r[0] for r in s.sql(
            "SELECT seq FROM journal WHERE hash IN (SELECT verdict_hash FROM "
            "reference_lessons WHERE reference_id <> 'none') ORDER BY seq LIMIT 8").fetchall()]
    verdicts = f"seq IN ({', '.join(map(str, seqs))})"
    out: dict[str, Any] = {"db": db, "n": len(seqs), "judged": {}, "matched": {}}
    with ScriptedServer(responder=Changing()) as srv:
        out["base_url"] = srv.base_url
        with tl.Store(db) as s:
            for run in RUNS:
                tl.run_extraction(s, tl.Extractor.openai(srv.base_url, "tiny"),
                                  tl.MemoryConfig(lesson_extraction="on"), verdicts=verdicts,
                                  write_memory=False, progress=False, run_id=run)
            before = srv.count
            for run in RUNS:
                out["judged"][run] = run_judge(s, run, Judge.openai(srv.base_url, "jm"))
            out["judge_requests"] = srv.count - before
            before = srv.count
            for run in RUNS:
                m = JudgeMatcher.openai(srv.base_url, "mm")
                out["matched"][run] = (match_run(s, run, m), _similarities(s, run, m))
            out["match_requests"] = srv.count - before
        out["count"] = srv.count
    return out


def _similarities(store: tl.Store, run: str, matcher: Any) -> pd.Series:
    """The similarity the matcher gave each lesson of ``run`` (its best), by lesson."""
    from truss_lab.evaluate._truth import reference_truth

    rows = reference_truth(store, run, matcher=matcher).rows
    les = rows[rows["kind"] == "lesson"]
    return les.set_index(["verdict_hash", "lesson_index"])["similarity"].sort_index()


def test_each_judge_run_records_every_call_it_paid_for(lab: dict[str, Any]) -> None:
    n = lab["n"]
    assert lab["judge_requests"] == 2 * n and lab["match_requests"] == 2 * n
    for run in RUNS:
        assert lab["judged"][run].provider_calls == n == lab["judged"][run].recorded
        assert lab["matched"][run][0]["recorded"] == n
    # Label rows are keyed by lesson, not run: the second run's differing labels of
    # lessons at the same (verdict, extractor, index) are kept as stored, and counted.
    first, second = lab["judged"]["first"], lab["judged"]["second"]
    differ = first.labels.merge(second.labels, on=["verdict_hash", "extractor",
                                                   "lesson_index", "annotator"])
    n_differ = int((differ["useful_x"] != differ["useful_y"]).sum())
    assert 0 < n_differ == second.labels_kept and first.labels_kept == 0
    assert second.labels_added == len(second.labels) - len(differ)
    assert judge_rows(lab["db"], "judge:jm@") == {"first": n, "second": n}
    assert judge_rows(lab["db"], "match:mm@") == {"first": n, "second": n}


def test_each_judge_run_replays_as_itself_with_no_request(lab: dict[str, Any]) -> None:
    db, count = lab["db"], lab["count"]
    with ScriptedServer(responder=Changing()) as srv, tl.Store(db) as s:
        for run in RUNS:
            live = lab["judged"][run]
            replayed = run_judge(s, run, Judge.replay(s, "jm"))
            assert replayed.provider_calls == n_calls(live) and not replayed.errors
            pd.testing.assert_frame_equal(replayed.labels, live.labels)
            # Resumed live: every answer is the run's own recording, no call.
            resumed = run_judge(s, run, Judge.openai(srv.base_url, "jm"))
            assert (resumed.resumed, resumed.provider_calls) == (lab["n"], 0)
            pd.testing.assert_frame_equal(resumed.labels, live.labels)
            sims = _similarities(s, run, JudgeMatcher.replay(s, "mm"))
            pd.testing.assert_series_equal(sims, lab["matched"][run][1])
            again = match_run(s, run, JudgeMatcher.openai(srv.base_url, "mm"))
            assert (again["resumed"], again["recorded"], again["errors"]) == (lab["n"], 0, {})
        assert not lab["judged"]["first"].labels.equals(lab["judged"]["second"].labels)
        assert srv.count == 0
    assert count == lab["count"]


def n_calls(run: Any) -> int:
    return int(run.provider_calls + run.resumed)


def test_the_cli_replays_each_judge_run_as_itself(lab: dict[str, Any]) -> None:
    db = lab["db"]
    for run in RUNS:
        out = invoke_json("judge", run, "--db", db, "--judge", "replay:jm")
        assert out["n_labels"] == len(lab["judged"][run].labels) and not out["errors"]
        m = invoke_json("match", run, "--db", db, "--judge", "replay:mm")
        assert m["errors"] == {} and m["matched"] == lab["matched"][run][0]["matched"]


def test_a_rerun_of_a_judged_run_replays_the_judges_by_request(lab: dict[str, Any],
                                                               tmp_path: Path) -> None:
    """A rerun has no judge calls of its own; its requests are the judged run's, so a
    replay answers them with that run's recorded answers (never the other run's)."""
    db = copy_db(lab["db"], tmp_path / "lab.duckdb")
    with tl.Store(db) as s:
        again = tl.rerun(s, "second", progress=False)
        replayed = run_judge(s, again.run_id, Judge.replay(s, "jm"))
        pd.testing.assert_frame_equal(replayed.labels, lab["judged"]["second"].labels)
        sims = _similarities(s, again.run_id, JudgeMatcher.replay(s, "mm"))
        pd.testing.assert_series_equal(sims, lab["matched"]["second"][1])


def test_calls_recorded_before_migration_013_still_replay_and_resume(
        lab: dict[str, Any], tmp_path: Path) -> None:
    """A database from before 013 kept the first judged run's calls, without a run, and
    lost the second's: migrated, the old calls answer their own requests (replay and
    resume, the label judge and the matcher), and the second run is judged anew."""
    db, n = copy_db(lab["db"], tmp_path / "old.duckdb"), lab["n"]
    with tl.Store(db) as s:
        s.sql("DELETE FROM completions WHERE judged_run_id = 'second'")
        s.sql("ALTER TABLE completions DROP COLUMN judged_run_id")
        s.sql("DELETE FROM schema_version WHERE version = 13")
    with tl.Store(db) as s:  # migrated: the column is back, the old calls name no run
        assert s.sql("SELECT count(*) FROM completions WHERE judged_run_id IS NULL AND "
                     "starts_with(extractor_id, 'judge:jm@')").fetchall() == [(n,)]
        replayed = run_judge(s, "first", Judge.replay(s, "jm"))
        pd.testing.assert_frame_equal(replayed.labels, lab["judged"]["first"].labels)
        sims = _similarities(s, "first", JudgeMatcher.replay(s, "mm"))
        pd.testing.assert_series_equal(sims, lab["matched"]["first"][1])
        with ScriptedServer(responder=Changing()) as srv:
            resumed = run_judge(s, "first", Judge.openai(srv.base_url, "jm"))
            assert (resumed.resumed, resumed.provider_calls) == (n, 0)
            second = run_judge(s, "second", Judge.openai(srv.base_url, "jm"))
            assert second.provider_calls == n == second.recorded
            assert srv.count == n
        assert dict(s.sql("SELECT judged_run_id, count(*) FROM completions WHERE "
                          "starts_with(extractor_id, 'judge:jm@') GROUP BY 1").fetchall()) == {
            None: n, "second": n}


def test_compare_with_a_live_matcher_records_each_run_and_replays_it(
        lab: dict[str, Any], tmp_path: Path) -> None:
    """`compare A B --matcher judge:openai:M` matches both runs of one extractor live:
    each run's calls are recorded as its own, and the same compare replayed
    (`judge:replay:M`) reaches the server with no request and says the same."""
    db, n = copy_db(lab["db"], tmp_path / "lab.duckdb"), lab["n"]
    args = ("compare", *RUNS, "--db", db, "--truth", "references", "--n-boot", "50")
    with ScriptedServer(responder=Changing()) as srv:
        live = invoke_json(*args, "--matcher", "judge:openai:cm", "--base-url", srv.base_url)
        asked = srv.count
        replayed = invoke_json(*args, "--matcher", "judge:replay:cm")
        assert srv.count == asked == 2 * n
    assert judge_rows(db, "match:cm@") == {"first": n, "second": n}
    assert replayed == live
