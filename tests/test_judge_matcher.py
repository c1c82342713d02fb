"""The judge matcher: a model scores lesson-reference pairs through the Provider seam;
parsed strictly, recorded and replayed, assigned by the same greedy code as the lexical one."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.builders.cli import invoke
from tests.builders.http_server import Reply, ScriptedServer
from tests.builders.stores import copy_db
from truss_lab.core import BadInputError
from truss_lab.evaluate import (
    JudgeMatcher,
    match_run,
    parse_similarities,
    reference_truth,
    sweep_run,
)
from truss_lab.extract._providers import Completion, CompletionRequest
from truss_lab.faces._notebook import SAMPLE, sample_run_id
from truss_lab.score import LexicalMatcher
from truss_lab.simulate import SimulatedMatchProvider
from truss_lab.simulate._providers import _LINE, SIMULATED_MATCH_MODEL
from truss_lab.store import Store

RUN = sample_run_id("sim-good-v1")
L2, R2 = ["L0", "L3"], ["R1", "R2"]


def _pairs(*items: tuple[str, str, object]) -> str:
    return json.dumps({"pairs": [{"lesson": a, "reference": b, "similarity": s}
                                 for a, b, s in items]})


GOOD = _pairs(("L0", "R1", 0.9), ("L0", "R2", 0.1), ("L3", "R1", 0), ("L3", "R2", 1))


def test_parse_similarities_is_strict() -> None:
    mat, err = parse_similarities(GOOD, L2, R2)
    assert err is None and np.array_equal(mat, [[0.9, 0.1], [0.0, 1.0]])
    assert parse_similarities(f"```json\n{GOOD}\n```", L2, R2)[1] is None
    bad = {
        "Sure! " + GOOD: "not one JSON object",
        "[]": "no 'pairs' list",
        _pairs(("L0", "R1", 0.9), ("L0", "R2", 0.1), ("L3", "R1", 0)): "1 of 4 pair(s) not",
        _pairs(("L0", "R1", 1.5), ("L0", "R2", 0.1), ("L3", "R1", 0), ("L3", "R2", 1)):
            "not a number in [0, 1]",
        _pairs(("L0", "R1", True), ("L0", "R2", 0.1), ("L3", "R1", 0), ("L3", "R2", 1)):
            "not a number in [0, 1]",
        _pairs(("L0", "R1", "0.9"), ("L0", "R2", 0.1), ("L3", "R1", 0), ("L3", "R2", 1)):
            "not a number in [0, 1]",
        _pairs(("L0", "R1", 0.9), ("L0", "R1", 0.9), ("L0", "R2", 0.1), ("L3", "R1", 0),
               ("L3", "R2", 1)): "repeats the pair",
        _pairs(("L1", "R1", 0.9)): "unknown lesson or reference",
        '{"pairs": [7]}': "is not an object",
        '{"pairs": [{"lesson": "L0", "reference": "R1", "similarity": NaN}]}':
            "not a number in [0, 1]",
    }
    for text, why in bad.items():
        mat, err = parse_similarities(text, L2, R2)
        assert mat is None and err is not None and why in err, (text, err)


@pytest.fixture
def store(sample_good_run: Path, tmp_path: Path) -> Iterator[Store]:
    # A copy per test: the live runs write recordings.
    with Store(copy_db(sample_good_run, tmp_path / "s.duckdb")) as s:
        yield s


def _simulated(noise: float = 0.05) -> JudgeMatcher:
    return JudgeMatcher(SimulatedMatchProvider(SAMPLE / "lesson_truth.csv",
                                               SAMPLE / "references.jsonl", noise=noise),
                        SIMULATED_MATCH_MODEL, parameters={"temperature": 0})


def _reply(text: str) -> Reply:
    return Reply(200, {"model": SIMULATED_MATCH_MODEL, "usage": {"prompt_tokens": 9,
                                                                 "completion_tokens": 9},
                       "choices": [{"message": {"role": "assistant", "content": text}}]})


def test_a_live_run_records_and_a_replay_reproduces_it_with_zero_live_calls(store) -> None:
    # What a model would answer, in the order the verdicts are asked.
    sim = _simulated()
    expected = reference_truth(store, RUN, matcher=sim)
    answers = [r["text"] for r in sim.pending]
    with ScriptedServer() as srv:
        srv.add(*[_reply(t) for t in answers])
        live = JudgeMatcher.openai(srv.base_url, SIMULATED_MATCH_MODEL, max_retries=0)
        got = match_run(store, RUN, live)
        assert srv.count == len(answers) == got["requests"] == got["recorded"] > 50
        assert "[L0]" in srv.requests[0].body["messages"][-1]["content"]
        assert got["errors"] == {} and got["matcher"] == "judge:sim-match-v1@match-v1"
        replay = JudgeMatcher.replay(store, SIMULATED_MATCH_MODEL)
        again = reference_truth(store, RUN, matcher=replay)
        sweep_run(store, RUN, truth="references", matcher=replay)
        assert srv.count == len(answers)  # zero live calls on replay
    assert replay.provider.calls == len(answers) and replay.pending == []
    pd.testing.assert_frame_equal(again.rows, expected.rows)
    assert again.counts["matched"] == got["matched"]
    # A changed request (other parameters) is never answered by the old recording.
    other = JudgeMatcher.replay(store, SIMULATED_MATCH_MODEL, parameters={"temperature": 1})
    with pytest.warns(UserWarning, match="left out"):
        t = reference_truth(store, RUN, matcher=other)
    assert t.counts["verdicts_unmatched"] == len(answers) == len(other.errors)
    assert all("different request" in e for e in other.errors.values())
    with pytest.raises(BadInputError, match="no recorded calls"):
        JudgeMatcher.replay(store, "nobody")


def test_a_malformed_answer_leaves_its_verdict_out_never_zero_filled(store) -> None:
    sim = _simulated()
    lexical = reference_truth(store, RUN)
    reference_truth(store, RUN, matcher=sim)
    answers = [r["text"] for r in sim.pending]
    first_verdict = sim.pending[0]["verdict_hash"]
    with ScriptedServer() as srv:
        srv.add(_reply("I think L0 matches R1."), *[_reply(t) for t in answers[1:]])
        live = JudgeMatcher.openai(srv.base_url, SIMULATED_MATCH_MODEL, max_retries=0)
        with pytest.warns(UserWarning, match="1 verdict"):
            t = reference_truth(store, RUN, matcher=live)
    assert list(live.errors) == [f"sim-good-v1/{first_verdict}"]
    assert "not one JSON object" in live.errors[f"sim-good-v1/{first_verdict}"]
    assert t.counts["verdicts_unmatched"] == 1
    assert first_verdict not in set(t.rows["verdict_hash"]) and first_verdict not in t.verdicts
    n_refs = lexical.rows.query("verdict_hash == @first_verdict")["reference_id"].nunique()
    assert t.n_verdicts == lexical.n_verdicts - 1
    assert t.n_references == lexical.n_references - n_refs
    # The matrix of that verdict is NaN (no similarity), never 0 as if judged.
    les = store.sql("SELECT * FROM candidates WHERE run_id = ? AND valid AND verdict_hash = ?",
                    [RUN, first_verdict]).df()
    refs = store.sql("SELECT * FROM reference_lessons WHERE verdict_hash = ? "
                     "ORDER BY annotator, reference_id", [first_verdict]).df()
    assert np.isnan(live(les, refs)).all()
    with pytest.raises(BadInputError, match="verdict_hash"):
        live(les.drop(columns="verdict_hash"), refs)


class _LexicalModel:
    """A 'model' answering match requests with the lexical matcher's similarities."""

    provider_id, live = "lexical-model", False

    def complete(self, request: CompletionRequest) -> Completion:
        seen: dict[str, list[tuple[str, str]]] = {"L": [], "R": []}
        for m in _LINE.finditer(request.messages[-1].content):
            seen[m.group(1)].append((m.group(1) + m.group(2), m.group(3)))
        frame = lambda xs: pd.DataFrame({"text": [t for _, t in xs],  # noqa: E731
                                         "evidence": [[] for _ in xs]})
        mat = LexicalMatcher(evidence_conflict=1.0)(frame(seen["L"]), frame(seen["R"]))
        pairs = [{"lesson": a, "reference": b, "similarity": float(mat[i, j])}
                 for i, (a, _) in enumerate(seen["L"]) for j, (b, _) in enumerate(seen["R"])]
        return Completion(text=json.dumps({"pairs": pairs}), model=request.model)


def test_judge_similarities_are_assigned_by_the_lexical_paths_greedy_code(store) -> None:
    # Same similarities, same threshold -> identical matches: one assignment function.
    judge = JudgeMatcher(_LexicalModel(), "lexical-model", match_threshold=0.22)
    a = reference_truth(store, RUN, matcher=judge)
    b = reference_truth(store, RUN, matcher=LexicalMatcher(evidence_conflict=1.0),
                        match_threshold=0.22)
    assert judge.errors == {} and a.counts["matched"] > 100
    pd.testing.assert_frame_equal(a.rows, b.rows)


def test_the_simulated_matcher_without_noise_reproduces_the_truth(store) -> None:
    t = reference_truth(store, RUN, matcher=_simulated(noise=0.0))
    truth = pd.read_csv(SAMPLE / "lesson_truth.csv", dtype={"reference_id": str})
    d = t.lessons.merge(truth.rename(columns={"extractor": "extractor_id",
                                              "reference_id": "true_ref"}),
                        on=["verdict_hash", "extractor_id", "lesson_index"])
    assert len(d) == t.n_lessons
    m = d[d["y"] == 1]
    assert len(m) > 100 and (m["reference_id"] == m["true_ref"]).all()
    # Lessons left unmatched express nothing, or repeat a matched one.
    missed = d[(d["y"] == 0) & (d["true_ref"] != "none") & d["s"].notna()]
    taken = set(zip(m["verdict_hash"], m["true_ref"], strict=True))
    assert all((v, r) in taken for v, r in zip(missed["verdict_hash"], missed["true_ref"],
                                               strict=True))


def test_cli_match_then_evaluate_by_replay(store) -> None:
    db = store.path
    store.close()
    spec = "simulated:" + str(SAMPLE / "lesson_truth.csv")
    r = invoke("match", RUN, "--db", str(db), "--judge", spec, "--json")
    assert r.exit_code == 0, r.output
    made = json.loads(r.output)
    assert made["recorded"] == made["requests"] > 50 and made["errors"] == {}
    base = ["--db", str(db), "--truth", "references", "--n-boot", "50", "--json"]
    judged = ["--matcher", "judge:replay:" + SIMULATED_MATCH_MODEL]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no verdict left out
        r = invoke("sweep", RUN, *base, *judged)
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["matcher"] == "judge:sim-match-v1@match-v1"
    r = invoke("compare", RUN, RUN, *base, *judged)
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["matcher"] == "judge:sim-match-v1@match-v1"
    r = invoke("sweep", RUN, *base, "--matcher", "judge")
    assert r.exit_code == 2 and "--matcher judge:SPEC" in r.output
    r = invoke("sweep", RUN, *base, "--matcher", "judge:bogus")
    assert r.exit_code == 2 and "unknown judge" in r.output and "'--matcher'" in r.output
