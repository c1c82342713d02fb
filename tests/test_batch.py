"""The batch runner (truss_lab.extract._batch): batches, executors, the gate, errors, the CLI."""

from __future__ import annotations

import dataclasses
import json
import pickle
from collections.abc import Iterator
from pathlib import Path

import click
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.builders.cli import invoke
from tests.builders.profiles import examples
from tests.builders.stores import SAMPLE, copy_db
from truss_lab.core._config import MemoryConfig
from truss_lab.core._errors import BadInputError, ChainError, StoreError, TrussLabError
from truss_lab.extract._batch import (
    ExtractionRun,
    _portable,
    extract_chunk,
    resolve_batch,
    run_extraction,
)
from truss_lab.extract._extractor import Extractor
from truss_lab.faces.cli import cli as main_cli
from truss_lab.journal._ledger import verify_chain
from truss_lab.store._runs import run_content_hashes, summarize_runs
from truss_lab.store._store import Store

SCORED = MemoryConfig(lesson_extraction="model-scored")
SUBSET = "seq <= 400"  # extraction runs ~300 verdicts/s inline; keep the suite fast


@pytest.fixture
def db_path(sample_unlabelled: Path, tmp_path: Path) -> Path:
    return copy_db(sample_unlabelled, tmp_path / "t.duckdb")


@pytest.fixture
def sample(db_path: Path) -> Iterator[Store]:
    s = Store(db_path)
    yield s
    s.close()


@pytest.fixture(scope="module")
def inline_hashes(sample_unlabelled: Path, tmp_path_factory: pytest.TempPathFactory
                  ) -> dict[str, str]:
    p = copy_db(sample_unlabelled, tmp_path_factory.mktemp("inline") / "i.duckdb")
    with Store(p) as s:
        run = run_extraction(s, Extractor.replay(s, "sim-good-v1"), SCORED, progress=False,
                             chunk_size=300, verdicts=SUBSET)
        return run_content_hashes(s, run.run_id)


# -- the gate, kept candidates, governance ------------------------------------------


def test_inline_run_keeps_every_candidate_and_gates_like_the_adr(sample: Store) -> None:
    ext = Extractor.replay(sample, "sim-good-v1")
    run = run_extraction(sample, ext, SCORED, progress=False, chunk_size=90, verdicts=SUBSET)
    assert run.status == "finished"
    assert run.n_verdicts == 400 and run.provider_calls == 400
    assert ext.provider.calls == 400  # type: ignore[attr-defined]
    c = run.candidates()
    assert len(c) == run.n_candidates > 0
    # Every candidate is kept, passed or not; the gate is valid & score >= 0.70.
    expect = c["valid"].to_numpy() & (c["score"].fillna(-1).to_numpy() >= 0.70)
    np.testing.assert_array_equal(c["passed_gate"].to_numpy(), expect)
    assert 0 < expect.sum() < len(c)
    assert (c["entry_id"].notna().to_numpy() == expect).all()
    lessons = run.lessons()
    assert len(lessons) == run.n_lessons == expect.sum()
    assert set(lessons["kind"]) == {"lesson"} and set(lessons["trust"]) == {"unverified"}
    for r in lessons.itertuples():
        assert {"seq": r.produced_by_seq, "hash": r.produced_by_hash} in list(r.sources)
    ev = sample.sql("SELECT count(*), count(DISTINCT subject_id) FROM events "
                    "WHERE type = 'memory_write'").fetchall()[0]
    assert ev == (run.n_lessons, run.n_lessons)
    # Parse errors are per verdict: recorded, the batch went on.
    errs = run.errors()
    assert len(errs) == run.n_errors > 0 and set(errs["stage"]) == {"parse"}
    # One progress row per chunk, and they add up to the run's counts.
    ch = sample.sql("SELECT count(*), sum(n_verdicts), sum(n_candidates) FROM run_chunks "
                    "WHERE run_id = ?", [run.run_id]).fetchall()[0]
    assert ch == (5, 400, run.n_candidates)
    row = sample.sql("SELECT dataset_hash, prompt_hash, code_version, finished_at "
                     "FROM extraction_runs WHERE run_id = ?", [run.run_id]).fetchall()[0]
    assert len(row[0]) == 64 and row[1] and row[2] and row[3] is not None


def test_policy_on_writes_every_valid_lesson(sample: Store) -> None:
    run = run_extraction(sample, Extractor.replay(sample, "sim-good-v1"),
                         MemoryConfig(lesson_extraction="on"), progress=False,
                         verdicts=SUBSET)
    c = run.candidates()
    np.testing.assert_array_equal(c["passed_gate"].to_numpy(), c["valid"].to_numpy())
    assert run.n_lessons == int(c["valid"].sum())


def test_policy_off_touches_no_provider_and_writes_only_the_run(sample: Store) -> None:
    ext = Extractor.replay(sample, "sim-good-v1")
    before = sample.counts()
    run = run_extraction(sample, ext, MemoryConfig(), progress=False)
    after = sample.counts()
    assert ext.provider.calls == 0  # type: ignore[attr-defined]
    assert run.status == "finished" and run.provider_calls == 0 and run.n_candidates == 0
    changed = {k for k in after if after[k] != before.get(k)}
    # The run's row and its integrity claim (what it wrote: nothing) are all it leaves.
    assert changed == {"extraction_runs", "content_claims"}
    assert after["extraction_runs"] == before["extraction_runs"] + 1


def test_dry_run_keeps_candidates_only(sample: Store) -> None:
    run = run_extraction(sample, Extractor.replay(sample, "sim-good-v1"), SCORED,
                         write_memory=False, progress=False, verdicts=SUBSET)
    assert run.n_candidates > 0 and run.n_lessons == 0
    c = run.candidates()
    assert c["passed_gate"].any() and c["entry_id"].isna().all()
    assert sample.counts()["memory_entries"] == 0 and sample.counts()["events"] == 0


def test_heuristic_extractor_runs(sample: Store) -> None:
    run = run_extraction(sample, Extractor.heuristic(), MemoryConfig(lesson_extraction="on"),
                         verdicts="seq <= ?", params=[200], progress=False)
    assert run.n_verdicts == 200 and run.n_candidates > 0 and run.n_errors == 0


# -- errors ------------------------------------------------------------------------------


def test_missing_recordings_are_per_verdict_errors(sample: Store) -> None:
    rec = sample.sql("SELECT * FROM completions WHERE extractor_id = 'sim-good-v1' "
                     "ORDER BY verdict_hash").df()
    sub = set(resolve_batch(sample, SUBSET)["hash"])
    dropped = set(rec["verdict_hash"].iloc[::7]) & sub
    ext = Extractor.replay(rec[~rec["verdict_hash"].isin(dropped)], "sim-good-v1")
    run = run_extraction(sample, ext, SCORED, progress=False, chunk_size=100, verdicts=SUBSET)
    assert run.status == "finished" and run.n_verdicts == 400
    e = run.errors()
    prov = e[e["stage"] == "provider"]
    assert set(prov["verdict_hash"]) == dropped
    assert prov["message"].str.contains("no recording").all()


def test_tampered_journal_refuses_and_writes_only_a_failed_run(sample: Store) -> None:
    sample.sql("UPDATE journal SET payload = json_object('tampered', true) WHERE seq = 500")
    before = sample.counts()
    ext = Extractor.replay(sample, "sim-good-v1")
    with pytest.raises(ChainError, match="seq 500"):
        run_extraction(sample, ext, SCORED, progress=False, run_id="tampered")
    after = sample.counts()
    assert ext.provider.calls == 0  # type: ignore[attr-defined]
    # The run's row and its integrity claim (what it wrote: nothing) are all it leaves.
    assert {k for k in after if after[k] != before.get(k)} == {"extraction_runs",
                                                               "content_claims"}
    status, err = sample.sql("SELECT status, error FROM extraction_runs WHERE run_id = "
                             "'tampered'").fetchall()[0]
    assert status == "failed" and "does not verify" in err and "bad_hash" in err
    # A batch that ends before the tampered entry still verifies and runs.
    ok = run_extraction(sample, ext, SCORED, verdicts="seq < 500 AND seq > 300",
                        progress=False)
    assert ok.status == "finished" and ok.n_verdicts == 199


def test_rerun_and_resume_rules(sample: Store) -> None:
    ext = Extractor.replay(sample, "sim-good-v1")
    run = run_extraction(sample, ext, SCORED, progress=False, run_id="r1", verdicts=SUBSET)
    counts = sample.counts()
    again = run_extraction(sample, ext, SCORED, progress=False, run_id="r1", resume=True,
                           verdicts=SUBSET)
    assert sample.counts()["candidates"] == counts["candidates"]
    assert {k: v for k, v in sample.counts().items() if k != "extraction_runs"} == \
        {k: v for k, v in counts.items() if k != "extraction_runs"}
    assert again.n_candidates == run.n_candidates and again.verdicts_this_call == 0
    with pytest.raises(StoreError, match="already exists"):
        run_extraction(sample, ext, SCORED, progress=False, run_id="r1")
    with pytest.raises(BadInputError, match="policy"):
        run_extraction(sample, ext, MemoryConfig(lesson_extraction="on"), progress=False,
                       run_id="r1", resume=True, verdicts=SUBSET)
    with pytest.raises(BadInputError, match="dataset_hash"):
        run_extraction(sample, ext, SCORED, verdicts="seq < 10", progress=False,
                       run_id="r1", resume=True)
    with pytest.raises(BadInputError, match="no extraction run 'nope'; recent runs: r1"):
        run_extraction(sample, ext, SCORED, progress=False, run_id="nope", resume=True)


# -- batches ------------------------------------------------------------------------------


def test_batch_forms_agree(sample: Store, tmp_path: Path) -> None:
    by_sql = resolve_batch(sample, "seq BETWEEN ? AND ?", [100, 160])
    assert by_sql["seq"].tolist() == list(range(100, 161))
    shuffled = by_sql.sample(frac=1.0, random_state=0)
    assert resolve_batch(sample, shuffled).equals(by_sql)
    jl = tmp_path / "refs.jsonl"
    jl.write_text("".join(json.dumps({"seq": int(s), "hash": h}) + "\n"
                          for s, h in shuffled.itertuples(index=False)))
    assert resolve_batch(sample, jl).equals(by_sql)
    assert resolve_batch(sample, str(jl)).equals(by_sql)
    pqf = tmp_path / "refs.parquet"
    pq.write_table(pa.Table.from_pandas(shuffled, preserve_index=False), pqf)
    assert resolve_batch(sample, pqf).equals(by_sql)
    ext = Extractor.replay(sample, "sim-good-v1")
    a = run_extraction(sample, ext, SCORED, verdicts=jl, progress=False)
    b = run_extraction(sample, ext, SCORED, verdicts="seq BETWEEN 100 AND 160",
                       progress=False)
    ha, hb = run_content_hashes(sample, a.run_id), run_content_hashes(sample, b.run_id)
    assert ha == hb and ha["n_candidates"] > 0


def test_bad_refs_are_clear_errors(sample: Store, tmp_path: Path) -> None:
    good = resolve_batch(sample, "seq <= 3")
    bad = good.copy()
    bad.loc[1, "hash"] = "0" * 64
    with pytest.raises(ChainError, match=r"seq 2|entry 2"):
        resolve_batch(sample, bad)
    with pytest.raises(ChainError, match="not in the journal"):
        resolve_batch(sample, pd.DataFrame({"seq": [99999], "hash": ["ab" * 32]}))
    with pytest.raises(BadInputError, match="missing hash"):
        resolve_batch(sample, pd.DataFrame({"seq": [1]}))
    with pytest.raises(BadInputError, match="bad verdict filter"):
        resolve_batch(sample, "no_such_column > 3")
    f = tmp_path / "bad.jsonl"
    f.write_text('{"seq": 1, "hash": "x"}\nnot json\n')
    with pytest.raises(BadInputError, match="line 2"):
        resolve_batch(sample, f)


@settings(max_examples=examples(40), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seqs=st.lists(st.integers(-5, 1300), max_size=5),
       hashes=st.lists(st.text(max_size=70), max_size=5))
def test_arbitrary_refs_resolve_or_raise_a_library_error(
    sample: Store, seqs: list[int], hashes: list[str]
) -> None:
    n = min(len(seqs), len(hashes))
    refs = pd.DataFrame({"seq": seqs[:n], "hash": hashes[:n]})
    try:
        out = resolve_batch(sample, refs)
    except TrussLabError:
        return
    assert len(out) == len(refs.drop_duplicates())


# -- executors ----------------------------------------------------------------------------


def test_extractors_pickle_for_worker_processes(sample: Store) -> None:
    heur = Extractor.heuristic()
    assert pickle.loads(pickle.dumps(heur)).extractor_id == "heuristic-v1"
    replay = Extractor.replay(sample, "sim-good-v1")
    # Plain pickle of a ReplayProvider fails today (it holds a threading.Lock);
    # _portable sends fresh locks instead, so it works either way.
    copy = pickle.loads(_portable(replay))
    assert len(copy.provider) == len(replay.provider)  # type: ignore[arg-type]
    chunk = sample.sql("SELECT seq, hash, payload::VARCHAR FROM journal WHERE seq <= 40 "
                       "ORDER BY seq").fetchall()
    a, b = extract_chunk(replay, chunk), extract_chunk(copy, chunk)
    pd.testing.assert_frame_equal(a.candidates, b.candidates)
    assert a.provider_calls == b.provider_calls == 40


@pytest.mark.parametrize("executor", ["threads:2", "processes:2"])
def test_parallel_executors_write_the_same_rows(
    db_path: Path, executor: str, inline_hashes: dict[str, str]
) -> None:
    with Store(db_path) as s:
        run = run_extraction(s, Extractor.replay(s, "sim-good-v1"), SCORED, progress=False,
                             executor=executor, chunk_size=50, verdicts=SUBSET)
        assert run.status == "finished"
        assert run_content_hashes(s, run.run_id) == inline_hashes
        assert verify_chain(s).ok


def test_dask_local_cluster_writes_the_same_rows(
    db_path: Path, inline_hashes: dict[str, str]
) -> None:
    pytest.importorskip("distributed")
    with Store(db_path) as s:
        run = run_extraction(s, Extractor.replay(s, "sim-good-v1"), SCORED, progress=False,
                             executor="dask-local", chunk_size=50, verdicts=SUBSET)
        assert run_content_hashes(s, run.run_id) == inline_hashes


@pytest.mark.slow
def test_dask_client_passed_in(db_path: Path, inline_hashes: dict[str, str]) -> None:
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client, Store(db_path) as s:
        run = run_extraction(s, Extractor.replay(s, "sim-good-v1"), SCORED, progress=False,
                             executor=client, chunk_size=50, verdicts=SUBSET)
        assert run_content_hashes(s, run.run_id) == inline_hashes
        run2 = run_extraction(s, Extractor.replay(s, "sim-good-v1"), SCORED, progress=False,
                              executor=f"dask://{cluster.scheduler_address.removeprefix('tcp://')}",
                              chunk_size=400, verdicts=SUBSET)
        assert run_content_hashes(s, run2.run_id) == inline_hashes


def test_unknown_executor(sample: Store) -> None:
    with pytest.raises(BadInputError, match="unknown executor"):
        run_extraction(sample, Extractor.heuristic(), SCORED, executor="gpu", progress=False,
                       verdicts="seq < 3")


# -- result objects -------------------------------------------------------------------------


def test_result_repr_and_escaped_html(sample: Store) -> None:
    run = run_extraction(sample, Extractor.heuristic(), MemoryConfig(lesson_extraction="on"),
                         verdicts="seq <= 50", run_id="<script>x</script>", progress=False)
    assert isinstance(run, ExtractionRun)
    assert "n_verdicts=50" in repr(run) and "<script>" in repr(run)
    h = run._repr_html_()
    assert "<script>" not in h and "&lt;script&gt;" in h
    s = summarize_runs(sample, [run.run_id])
    assert s.loc[0, "n_verdicts"] == 50 and s.loc[0, "status"] == "finished"
    assert s.loc[0, "n_lessons"] == s.loc[0, "n_lessons_new"] == run.n_lessons


# -- CLI -----------------------------------------------------------------------------------------


@pytest.fixture
def cli() -> click.Group:
    @click.group()
    def group() -> None:
        """test group"""

    for name in ("extract", "grid", "rerun", "batch", "runs", "errors"):
        group.add_command(main_cli.commands[name])
    return group


def test_cli_extract_runs_and_errors(cli: click.Group, db_path: Path, tmp_path: Path) -> None:
    r = invoke("extract", "--db", str(db_path), "--extractor",
               "replay:sim-good-v1", "--policy", "model-scored",
               "--verdicts", "seq <= 100", "--run-id", "c1", "--json", cli=cli)
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["run_id"] == "c1" and out["n_verdicts"] == 100 and out["status"] == "finished"
    r = invoke("extract", "--db", str(db_path), "--resume", "c1", "--json", cli=cli)
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["verdicts_this_call"] == 0
    sub = tmp_path / "one.jsonl"
    lines = (SAMPLE / "completions.jsonl").read_text().splitlines()
    sub.write_text("\n".join(ln for ln in lines if "sim-overconfident-v1" in ln) + "\n")
    r = invoke("extract", "--db", str(db_path), "--extractor",
               f"replay:{sub}", "--policy", "on", "--dry-run", "--quiet",
               "--verdicts", "seq <= 100", cli=cli)
    assert r.exit_code == 0 and "sim-overconfident-v1" in r.output, r.output
    r = invoke("runs", "--db", str(db_path), "--json", cli=cli)
    assert r.exit_code == 0
    assert next(x["run_id"] for x in json.loads(r.stdout)) == "c1"
    for args in (["--extractor", "replay:nope"], ["--extractor", "gpt"],
                 ["--extractor", "heuristic", "--executor", "gpu"],
                 ["--extractor", "heuristic", "--min-salience", "2"],
                 ["--extractor", "heuristic", "--run-id", "c1"],
                 ["--resume", "missing"]):
        r = invoke("extract", "--db", str(db_path), *args, cli=cli)
        assert r.exit_code == 2, (args, r.output)
        assert r.output.startswith("error: ") and len(r.output.strip().splitlines()) == 1


def test_cli_tampered_journal_exits_non_zero(cli: click.Group, db_path: Path) -> None:
    with Store(db_path) as s:
        s.sql("UPDATE journal SET signature = 'AAAA' WHERE seq = 7")
    r = invoke("extract", "--db", str(db_path), "--extractor", "heuristic",
               "--policy", "on", "--quiet", cli=cli)
    assert r.exit_code == 1 and "does not verify" in r.output and "seq 7" in r.output


def test_every_command_has_help(cli: click.Group) -> None:
    for name, cmd in cli.commands.items():
        assert cmd.help, name
        assert invoke(name, "--help", cli=cli).exit_code == 0


def test_live_provider_with_threads_records_calls_for_replay(sample: Store) -> None:
    from tests.builders.http_server import ScriptedServer

    with ScriptedServer() as srv:
        live = Extractor.openai(srv.base_url, "tiny-model", max_retries=0)
        run = run_extraction(sample, live, MemoryConfig(lesson_extraction="on"),
                             verdicts="seq <= 40", executor="threads:4", chunk_size=5,
                             progress=False)
    assert run.status == "finished" and run.provider_calls == 40 and run.n_candidates == 40
    rec = sample.sql("SELECT count(*), count(request_hash) FROM completions "
                     "WHERE extractor_id = ? AND source = 'live'", [live.extractor_id]).fetchall()
    assert rec[0] == (40, 40)
    # Same model, template and parameters, answered from the recordings.
    again = dataclasses.replace(live, provider=Extractor.replay(sample, live.extractor_id).provider)
    replay = run_extraction(sample, again, MemoryConfig(lesson_extraction="on"),
                            verdicts="seq <= 40", progress=False)
    assert replay.n_errors == 0, replay.errors()["message"].iloc[0]
    assert run_content_hashes(sample, replay.run_id) == run_content_hashes(sample, run.run_id)


def test_only_live_providers_are_recorded(sample: Store) -> None:
    # Providers say whether they call a model (``live``); replay and heuristic do
    # not, so their answers never become recordings.
    from truss_lab.extract._providers import is_live

    heur = Extractor.heuristic()
    replay = Extractor.replay(sample, "sim-good-v1")
    assert not is_live(heur.provider) and not is_live(replay.provider)
    assert is_live(object())  # a provider that does not say counts as live
    before = sample.counts()["completions"]
    for ex in (heur, replay):
        run = run_extraction(sample, ex, MemoryConfig(lesson_extraction="on"),
                             verdicts="seq <= 20", progress=False)
        assert run.status == "finished" and run.provider_calls > 0
    assert sample.counts()["completions"] == before
