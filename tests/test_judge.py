"""A judge labels a run's lessons through the Provider seam; recorded, replayed, checked."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.builders.cli import invoke
from tests.builders.http_server import Reply, ScriptedServer
from tests.builders.stores import SAMPLE, copy_db
from truss_lab.core import BadInputError, MemoryConfig
from truss_lab.evaluate import (
    Judge,
    cohen_kappa,
    judge_agreement,
    labelled_candidates,
    parse_judgement,
    run_judge,
)
from truss_lab.extract import Extractor, run_extraction
from truss_lab.simulate._providers import SIMULATED_JUDGE_MODEL, SimulatedJudgeProvider
from truss_lab.store import Store

CONFIG = MemoryConfig(lesson_extraction="model-scored", extraction_min_salience=0.7)


def test_parse_judgement() -> None:
    got, err = parse_judgement('Sure:\n```json\n{"labels": [{"lesson": 0, "useful": 1}, '
                               '{"lesson": 2, "useful": false}, {"lesson": 0, "useful": 0}, '
                               '{"lesson": 9, "useful": 1}, {"lesson": 1, "useful": 7}]}\n```',
                               {0, 1, 2})
    assert got == {0: 1, 2: 0} and err == "1 lesson(s) not labelled"
    assert parse_judgement("no json", {0}) == ({}, "no JSON object with a 'labels' list")
    assert parse_judgement('{"labels": [{"lesson": true, "useful": 1}]}', {1})[0] == {}


@pytest.fixture(scope="module")
def small(sample_labelled: Path, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[tuple[Store, str]]:
    store = Store(copy_db(sample_labelled, tmp_path_factory.mktemp("judge") / "s.duckdb"))
    run = run_extraction(store, Extractor.replay(store, "sim-good-v1"), CONFIG,
                         verdicts="seq <= ?", params=[120], progress=False, write_memory=False)
    yield store, run.run_id
    store.close()


def _answer(labels: list[int]) -> dict:
    text = json.dumps({"labels": [{"lesson": i, "useful": u} for i, u in enumerate(labels)]})
    return {"model": "judge-m", "choices": [{"message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5}}


def test_a_judge_run_replays_with_zero_live_calls(small: tuple[Store, str]) -> None:
    store, run_id = small
    before = labelled_candidates(store, run_id)
    n_verdicts = store.sql("SELECT count(DISTINCT verdict_hash) FROM candidates "
                           "WHERE run_id = ? AND valid", [run_id]).fetchall()[0][0]
    with ScriptedServer() as srv:
        srv.add(*[Reply(200, _answer([1, 0, 1, 0, 1, 0])) for _ in range(n_verdicts)])
        live = Judge.openai(srv.base_url, "judge-m", max_retries=0)
        got = run_judge(store, run_id, live)
        assert srv.count == n_verdicts == got.provider_calls == got.recorded
        assert got.annotator == "judge:judge-m@judge-v1" and got.labels_added == got.n_lessons
        replay = Judge.replay(store, "judge-m")
        again = run_judge(store, run_id, replay)
        assert srv.count == n_verdicts  # zero live calls on replay
    assert again.recorded == 0 and again.labels_added == 0 and again.n_labels == got.n_labels
    assert replay.provider.calls == n_verdicts
    rows = store.sql("SELECT lesson_index, useful FROM labels WHERE annotator = ?",
                     [got.annotator]).df()
    assert (rows["useful"] == (rows["lesson_index"] % 2 == 0)).all()
    # The judge never joins the human majority unless asked.
    after = labelled_candidates(store, run_id)
    assert after["label"].equals(before["label"])
    # A changed prompt (other parameters) is never answered by the old recording.
    other = Judge.replay(store, "judge-m", parameters={"temperature": 0.5})
    assert run_judge(store, run_id, other).n_labels == 0


def test_agreement_of_a_perfect_and_a_simulated_judge(small: tuple[Store, str]) -> None:
    store, run_id = small
    sim = Judge(SimulatedJudgeProvider(SAMPLE / "lesson_truth.csv", noise=0.1),
                SIMULATED_JUDGE_MODEL, parameters={"temperature": 0})
    run_judge(store, run_id, sim)
    res = judge_agreement(store, sim.annotator, run_id, n_boot=200)
    c = res.counts
    assert c["tp"] + c["fp"] + c["fn"] + c["tn"] == c["n"] > 50
    p = res.pairs
    assert res.table.loc["kappa", "value"] == pytest.approx(
        cohen_kappa(p["label_human"].astype(int), p["label_judge"].astype(int)))
    assert res.table.loc["precision", "value"] == pytest.approx(c["tp"] / (c["tp"] + c["fp"]))
    assert res.table.loc["recall", "value"] == pytest.approx(c["tp"] / (c["tp"] + c["fn"]))
    for m in ("kappa", "precision", "recall"):
        lo, v, hi = res.table.loc[m, ["low", "value", "high"]]
        assert lo <= v <= hi
    # A judge that copies the human majority agrees perfectly.
    maj = labelled_candidates(store, run_id, transfer=None)
    maj = maj[maj["labelled"]]
    copy = pd.DataFrame({"verdict_hash": maj["verdict_hash"], "extractor": maj["extractor_id"],
                         "lesson_index": maj["lesson_index"],
                         "useful": maj["label"].astype(int), "annotator": "judge:copy@judge-v1"})
    human = store.sql("SELECT verdict_hash, extractor_id AS extractor, lesson_index, useful, "
                      "annotator FROM labels WHERE NOT starts_with(annotator, 'judge:')").df()
    perfect = judge_agreement(store, "copy@judge-v1", labels=pd.concat([human, copy]), n_boot=50)
    assert np.allclose(perfect.table["value"], 1.0)
    with pytest.raises(BadInputError, match="no label rows of judge"):
        judge_agreement(store, "judge:nobody@judge-v1")


def test_cli_judge_simulated_then_replay_and_agreement(sample_labelled: Path,
                                                      tmp_path: Path) -> None:
    db = copy_db(sample_labelled, tmp_path / "c.duckdb")
    with Store(db) as store:
        run_id = run_extraction(store, Extractor.replay(store, "sim-good-v1"), CONFIG,
                                verdicts="seq <= ?", params=[60], progress=False,
                                write_memory=False).run_id
    r = invoke("judge", run_id, "--db", str(db), "--judge", "simulated:"
               + str(SAMPLE / "lesson_truth.csv"), "--json")
    assert r.exit_code == 0, r.output
    r = invoke("judge", run_id, "--db", str(db), "--judge",
               "replay:" + SIMULATED_JUDGE_MODEL, "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["recorded"] == 0
    r = invoke("judge-agreement", run_id, "--db", str(db), "--judge",
               f"{SIMULATED_JUDGE_MODEL}@judge-v1", "--n-boot", "50")
    assert r.exit_code == 0, r.output
    assert "kappa" in r.output and "precision" in r.output
    r = invoke("judge", run_id, "--db", str(db), "--judge", "bogus")
    assert r.exit_code == 2 and "unknown judge" in r.output
