"""Issue #16 item 2: several samples per verdict, recorded per sample, replayed offline,
with one lesson per cluster of near-duplicates and its self-consistency."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import truss_lab as tl
from tests.builders.cli import invoke
from tests.builders.http_server import Reply, ScriptedServer, default_completion
from tests.builders.stores import copy_db
from truss_lab.core._ids import derive_id
from truss_lab.extract._extractor import Extractor, ExtractorConfig, extract_verdicts
from truss_lab.score._consistency import consistency_clusters, self_consistency
from truss_lab.store._runs import run_content_hashes

VERDICTS = "seq <= 12"


@pytest.fixture(scope="module")
def db(sample_full: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_db(sample_full, tmp_path_factory.mktemp("samples") / "lab.duckdb")


def _sampled(body: Any) -> dict[str, Any]:
    """A model stand-in whose samples agree on one lesson and differ on another: the
    stable lesson recurs in every sample, the other names the sample's seed."""
    out = default_completion(body)
    seed = body.get("seed", 0)
    n = body.get("n", 1)
    for i in range(n):
        lessons = [{"text": "Pin the scheduler timezone before the DST switch", "salience": 0.6,
                    "evidence": []},
                   {"text": f"Variant lesson number{seed + i} about retries", "salience": 0.9,
                    "evidence": []}]
        out["choices"][i]["message"]["content"] = json.dumps({"lessons": lessons})
    return out


def test_one_sample_keeps_todays_requests_and_ids(verdict: dict) -> None:
    ext = Extractor.openai("http://127.0.0.1:9/v1", "m")
    assert ext.n_samples == 1
    [req] = ext.sample_requests("ab" * 32, verdict)
    assert req == ext.request("ab" * 32, verdict) and req.sample_index is None
    k3 = Extractor.openai("http://127.0.0.1:9/v1", "m",
                          config=ExtractorConfig(model="m", samples=3, seed=5))
    reqs = k3.sample_requests("ab" * 32, verdict)
    assert [r.sample_index for r in reqs] == [0, 1, 2]
    assert [r.parameters["seed"] for r in reqs] == [5, 6, 7]
    assert len({r.request_hash for r in reqs}) == 3
    # Sample 0 of a k-sample request differs from the one-sample request only by its index.
    assert reqs[0].model_copy(update={"sample_index": None, "parameters": {
        **reqs[0].parameters}}).request_hash != reqs[0].request_hash
    with pytest.raises(ValueError):
        ExtractorConfig(model="m", samples=0)


@pytest.mark.parametrize("supports_n", [False, True])
def test_k_samples_are_recorded_per_sample_and_replay_from_the_cli(
        db: Path, supports_n: bool) -> None:
    live, again = f"live-n{int(supports_n)}", f"replayed-n{int(supports_n)}"
    seed = 10 + 100 * supports_n  # another configuration: its own recordings
    with ScriptedServer(responder=_sampled) as srv:
        args = ["extract", "--db", str(db), "--extractor", "openai:tiny", "--base-url",
                srv.base_url, "--samples", "3", "--seed", str(seed), "--temperature", "0.8",
                "--policy", "on", "--verdicts", VERDICTS, "--run-id", live, "--quiet", "--json"]
        r = invoke(*args, *(["--supports-n"] if supports_n else []))
        assert r.exit_code == 0, r.output
        # n=3 in one call per verdict, or three calls with seeds 10, 11, 12.
        assert srv.count == (12 if supports_n else 36)
        if supports_n:
            assert {s.body["n"] for s in srv.requests} == {3}
        else:
            assert sorted({s.body["seed"] for s in srv.requests}) == [seed, seed + 1, seed + 2]
            assert all("n" not in s.body for s in srv.requests)
        ext_id = json.loads(r.stdout)["extractor_id"]
        calls = srv.count
        r = invoke("extract", "--db", str(db), "--extractor", f"replay:{ext_id}", "--policy",
                   "on", "--verdicts", VERDICTS, "--run-id", again, "--quiet", "--json")
        assert r.exit_code == 0, r.output
        assert srv.count == calls  # zero live calls
    with tl.Store(db, read_only=True) as s:
        assert run_content_hashes(s, again) == run_content_hashes(s, live)
        rec = s.sql("SELECT verdict_hash, sample_index, request_hash FROM completions "
                    "WHERE run_id = ?", [live]).df()
        assert len(rec) == 36 and sorted(set(rec["sample_index"])) == [0, 1, 2]
        assert rec["request_hash"].nunique() == 36  # one hash per sample
        c = s.sql("SELECT * FROM candidates WHERE run_id = ? ORDER BY verdict_seq, "
                  "sample_index, lesson_index", [live]).df()
    assert len(c) == 12 * 3 * 2
    # Per verdict: the stable lesson is one cluster over 3 samples (1.0), each variant
    # its own (1/3); only representatives (sample 0's stable lesson and each variant) pass.
    assert int(c["passed_gate"].sum()) == 12 * 4
    stable = c[c["text"].str.startswith("Pin")]
    assert stable.loc[stable["sample_index"] == 0, "self_consistency"].eq(1.0).all()
    assert stable.loc[stable["sample_index"] > 0, "self_consistency"].isna().all()
    assert not stable.loc[stable["sample_index"] > 0, "passed_gate"].any()
    variant = c[c["text"].str.startswith("Variant")]
    assert np.allclose(variant["self_consistency"], 1 / 3)
    # Candidate ids: sample 0 keeps the one-sample id; the others add their index.
    row = c.iloc[0]
    assert row["candidate_id"] == derive_id("cand", row["verdict_hash"], row["extractor_id"],
                                            int(row["lesson_index"]))
    assert c["candidate_id"].is_unique


def test_a_server_that_ignores_n_is_an_error_per_sample(verdict: dict) -> None:
    one_choice = default_completion({"messages": [{"role": "user", "content": "x"}]})
    with ScriptedServer() as srv:
        srv.add(Reply(body=one_choice))
        ext = Extractor.openai(srv.base_url, "m", supports_n=True, max_retries=0,
                               config=ExtractorConfig(model="m", samples=2))
        rows = extract_verdicts(ext, [(1, "ab" * 32, verdict)])
    assert rows.provider_calls == 1
    assert list(rows.errors["sample_index"]) == [0, 1]
    assert rows.errors["message"].str.contains("supports_n=False").all()


def test_replay_of_k_sample_recordings_made_elsewhere(verdict: dict) -> None:
    vh = "cd" * 32
    recs = pd.DataFrame({
        "verdict_hash": [vh] * 2, "extractor": ["x"] * 2, "model": ["m"] * 2,
        "prompt_version": ["lesson-v1"] * 2, "request_hash": [None] * 2,
        "text": [json.dumps({"lessons": [{"text": f"lesson {i} of sample", "salience": .5}]})
                 for i in range(2)],
        "sample_index": [0, 1]})
    rows = extract_verdicts(Extractor.replay(recs, "x", samples=2), [(1, vh, verdict)])
    assert rows.samples == 2 and list(rows.candidates["sample_index"]) == [0, 1]
    rows = extract_verdicts(Extractor.replay(recs, "x", samples=3), [(1, vh, verdict)])
    assert list(rows.errors["sample_index"]) == [2]  # no recording for sample 2


def test_consistency_clusters_by_hand() -> None:
    c = pd.DataFrame({
        "verdict_hash": ["a"] * 5 + ["b"],
        "sample_index": [0, 0, 1, 2, 2, 0],
        "lesson_index": [0, 1, 0, 0, 1, 0],
        "text": ["Check the tz_regression cron after the DST change",
                 "Document the runbook",
                 "After a DST change check the tz_regression cron",
                 "Check the dedup_window cron after the DST change",  # other identifier
                 "check tz_regression cron after the DST change",
                 "Check the tz_regression cron after the DST change"],  # other verdict
        "valid": [True, True, True, True, True, True],
    }, index=[10, 11, 12, 13, 14, 15])
    got = consistency_clusters(c, samples=3)
    assert list(got.index) == [10, 11, 12, 13, 14, 15]
    assert list(got["representative"]) == [True, True, False, True, False, True]
    assert list(got["cluster"]) == [0, 1, 0, 3, 0, 5]
    assert list(got["n_samples_with"]) == [3, 1, 3, 1, 3, 1]
    np.testing.assert_allclose(got["self_consistency"],
                               [1.0, 1 / 3, np.nan, 1 / 3, np.nan, 1 / 3])
    # Without k, the distinct samples seen per verdict (b saw one: 1/1).
    np.testing.assert_allclose(self_consistency()(c), [1.0, 1 / 3, np.nan, 1 / 3, np.nan, 1.0])
    # Invalid rows belong to no cluster.
    bad = consistency_clusters(c.assign(valid=[False, True, True, True, True, True]),
                               samples=3)
    assert bad["cluster"].iloc[0] == -1 and np.isnan(bad["self_consistency"].iloc[0])
    assert bad["representative"].iloc[2]  # sample 1's lesson now leads the cluster
    with pytest.raises(tl.BadInputError, match="more samples"):
        consistency_clusters(c, samples=2)
    with pytest.raises(tl.BadInputError, match="sample_index"):
        consistency_clusters(c.drop(columns="sample_index"))


def test_the_simulator_emits_k_samples_and_leaves_its_other_files_alone(
        tmp_path: Path) -> None:
    from truss_lab.simulate import simulate
    from truss_lab.simulate._simulate import read_sample_completions

    one = simulate(tmp_path / "one", runs=40, seed=3, extractors=["sim-good-v1"])
    three = simulate(tmp_path / "three", runs=40, seed=3, extractors=["sim-good-v1"],
                     samples=3)
    assert one.completions_samples is None
    for name in ("journal.jsonl", "completions.jsonl", "labels.csv", "lesson_truth.csv"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "three" / name).read_bytes()
    recs = read_sample_completions(three.completions_samples)  # type: ignore[arg-type]
    assert len(recs) == 120 and recs.groupby("verdict_hash")["sample_index"].nunique().eq(3).all()
    first = [json.loads(x) for x in one.completions.read_text().splitlines()]
    assert recs[recs["sample_index"] == 0].drop(columns="sample_index").to_dict(
        "records") == first
    assert recs.loc[recs["sample_index"] == 1, "text"].tolist() != [r["text"] for r in first]
    again = simulate(tmp_path / "again", runs=40, seed=3, extractors=["sim-good-v1"], samples=3)
    assert again.truth_samples.read_bytes() == three.truth_samples.read_bytes()  # type: ignore
    truth = pd.read_csv(three.truth_samples)  # type: ignore[arg-type]
    assert set(truth["sample_index"]) == {0, 1, 2}

    store = tl.Store(tmp_path / "lab.duckdb")
    tl.import_journal(store, three.journal, keyring=three.keys)
    ext = Extractor.replay(recs, "sim-good-v1", samples=3)
    run = tl.run_extraction(store, ext, tl.MemoryConfig(lesson_extraction="on"),
                            write_memory=False, progress=False, run_id="k3")
    c = store.sql("SELECT * FROM candidates WHERE run_id = 'k3'").df()
    store.close()
    assert run.n_verdicts == 40 and set(c["sample_index"]) == {0, 1, 2}
    reps = c[c["self_consistency"].notna()]
    assert reps["self_consistency"].between(1 / 3, 1.0).all()
    assert (reps["self_consistency"] > 1 / 3).any()  # some lessons recur across samples
    assert c.loc[c["passed_gate"], "self_consistency"].notna().all()


def test_self_consistency_ap_and_ece_match_sklearn_on_simulated_samples(
        tmp_path: Path) -> None:
    from sklearn.metrics import average_precision_score

    from truss_lab.evaluate import average_precision, expected_calibration_error
    from truss_lab.simulate import simulate
    from truss_lab.simulate._simulate import read_sample_completions

    sim = simulate(tmp_path / "s", runs=120, seed=5, extractors=["sim-good-v1"], samples=4)
    recs = read_sample_completions(sim.completions_samples)  # type: ignore[arg-type]
    truth = pd.read_csv(sim.truth_samples)  # type: ignore[arg-type]
    c = extract_verdicts(Extractor.replay(recs, "sim-good-v1", samples=4),
                         [(i, h, v) for i, (h, v) in enumerate(_payloads(sim.journal))]
                         ).candidates
    c = c.assign(self_consistency=self_consistency()(c)).dropna(
        subset=["self_consistency"]).rename(columns={"extractor_id": "extractor"})
    d = c.merge(truth, on=["verdict_hash", "extractor", "sample_index", "lesson_index"])
    y, s = d["useful_true"].to_numpy(), d["self_consistency"].to_numpy()
    assert len(d) > 100 and 0 < y.mean() < 1
    assert average_precision(y, s) == pytest.approx(average_precision_score(y, s))
    # ECE by hand over the 10 uniform bins (k/4 sits on bin edges: right-closed last bin).
    bins = np.minimum((s * 10).astype(int), 9)
    ece = sum(abs(y[bins == b].mean() - s[bins == b].mean()) * (bins == b).mean()
              for b in np.unique(bins))
    assert expected_calibration_error(y, s) == pytest.approx(ece)


def _payloads(journal: Path) -> list[tuple[str, dict]]:
    lines = [json.loads(x) for x in journal.read_text().splitlines()]
    return [(e["hash"], e["payload"]) for e in lines]


def test_labels_name_sample_zero_and_sweeps_take_self_consistency(db: Path) -> None:
    with tl.Store(db, read_only=True) as s:
        c = s.sql("SELECT * FROM candidates WHERE run_id = 'live-n0' ORDER BY verdict_seq, "
                  "sample_index, lesson_index").df()
        labels = pd.DataFrame({"verdict_hash": c["verdict_hash"], "extractor": c["extractor_id"],
                               "lesson_index": c["lesson_index"], "annotator": "a",
                               "useful": (c["text"].str.startswith("Pin")).astype(int)}
                              ).drop_duplicates(["verdict_hash", "lesson_index"])
        lab = tl.labelled_candidates(s, "live-n0", labels=labels)
        assert lab.loc[lab["labelled"], "sample_index"].eq(0).all()
        assert int(lab["labelled"].sum()) == 12 * 2
        sw = tl.sweep_run(s, "live-n0", labels=labels, score="self_consistency")
    # The stable lesson (self-consistency 1.0) is the useful one: kept alone at 1.0.
    top = sw[sw["threshold"] == 1.0].iloc[0]
    assert top["precision"] == 1.0 and top["recall"] == 1.0


def test_usage_counts_an_n_call_once(db: Path) -> None:
    from truss_lab.store._usage import run_usage

    with tl.Store(db, read_only=True) as s:
        n_mode, separate = run_usage(s, "live-n1"), run_usage(s, "live-n0")
    assert (n_mode.calls, n_mode.live_calls, n_mode.calls_without_tokens) == (12, 12, 0)
    assert (separate.calls, separate.live_calls) == (36, 36)
    assert n_mode.prompt_tokens * 3 == separate.prompt_tokens


def test_a_verdict_whose_k_samples_fail_counts_once(db: Path) -> None:
    vh = "ef" * 32
    recs = pd.DataFrame({"verdict_hash": [vh] * 3, "extractor": ["x"] * 3, "model": ["m"] * 3,
                         "prompt_version": ["lesson-v1"] * 3, "request_hash": [None] * 3,
                         "text": ["not json"] * 3, "sample_index": [0, 1, 2]})
    with tl.Store(db) as s:
        [(h,)] = s.sql("SELECT hash FROM journal WHERE seq = 1").fetchall()
        recs["verdict_hash"] = h
        run = tl.run_extraction(s, Extractor.replay(recs, "x", samples=3),
                                tl.MemoryConfig(lesson_extraction="on"), verdicts="seq = 1",
                                write_memory=False, progress=False, run_id="k3-errors")
        rows = s.sql("SELECT sample_index FROM verdict_errors WHERE run_id = 'k3-errors' "
                     "ORDER BY 1").fetchall()
    assert run.n_errors == 1 and rows == [(0,), (1,), (2,)]


def _one_lesson(body: Any) -> dict[str, Any]:
    """A model stand-in that answers the same lesson in every sample."""
    out = default_completion(body)
    for choice in out["choices"]:
        choice["message"]["content"] = json.dumps({"lessons": [
            {"text": "Pin the scheduler timezone before the DST switch", "salience": 0.6,
             "evidence": []}]})
    return out


@pytest.mark.parametrize("responder", [_one_lesson, _sampled], ids=["same", "varied"])
def test_the_audit_agrees_with_the_k_sample_gate(sample_full: Path, tmp_path: Path,
                                                 responder: Callable[[Any], Any]) -> None:
    """Issue 28 item 11: after a clean k-sample run the audit passes. The gate lets one
    lesson per cluster of near-duplicates through (its representative); the audit
    expects that, and compares each sample's candidates with that sample's recording."""
    db = copy_db(sample_full, tmp_path / "lab.duckdb")
    with ScriptedServer(responder=responder) as srv:
        r = invoke("extract", "--db", str(db), "--extractor", "openai:tiny", "--base-url",
                   srv.base_url, "--samples", "3", "--seed", "10", "--policy", "on",
                   "--verdicts", "seq <= 4", "--run-id", "k3", "--quiet")
        assert r.exit_code == 0, r.output
    r = invoke("audit", "--db", str(db))
    assert r.exit_code == 0, r.output
    with tl.Store(db) as s:
        n_lessons = s.sql("SELECT count(*) FROM memory_entries WHERE run_id = 'k3'").fetchall()
        assert n_lessons == [(4 if responder is _one_lesson else 4 * 4,)]
        # A non-representative let through, or a sample's candidate edited, is still caught.
        s.sql("UPDATE candidates SET passed_gate = true WHERE run_id = 'k3' AND sample_index = 2 "
              "AND lesson_index = 0")
        s.sql("UPDATE candidates SET salience = 0.1 WHERE run_id = 'k3' AND sample_index = 1 "
              "AND lesson_index = 0")
        report = tl.audit(s, checks=["gate_respected", "candidates_match_completions"])
    assert [c.passed for c in report.checks] == [False, False]
    assert set(report["candidates_match_completions"].rows["sample_index"].dropna()) == {1}
