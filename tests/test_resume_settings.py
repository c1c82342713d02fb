"""Issue 27 item 5: a resume runs on the run's stored executor and chunk size unless told
otherwise, and records a moved endpoint, so the next resume goes where the last one did
(a real local server, a dead one, and the CLI)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

import truss_lab as tl
from tests.builders.cli import invoke
from tests.builders.http_server import Reply, ScriptedServer
from tests.builders.stores import copy_db
from truss_lab.extract._batch import _run_settings


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def extract(db: Path, *args: str):
    return invoke("extract", "--db", str(db), "--quiet", *args)


def config_of(db: Path, run_id: str) -> dict:
    with tl.Store(db, read_only=True) as s:
        return json.loads(s.sql("SELECT config FROM extraction_runs WHERE run_id = ?",
                                [run_id]).fetchall()[0][0])


def test_resume_keeps_executor_chunks_and_the_moved_endpoint(sample_full: Path,
                                                             tmp_path: Path) -> None:
    db = copy_db(sample_full, tmp_path / "lab.duckdb")
    dead = f"http://127.0.0.1:{closed_port()}/v1"
    r = extract(db, "--extractor", "openai:tiny", "--base-url", dead, "--policy", "on",
                "--verdicts", "seq <= 20", "--chunk-size", "4", "--executor", "threads:2",
                "--run-id", "r", "--max-retries", "0", "--max-consecutive-failures", "2")
    assert r.exit_code == 2, r.output
    with tl.Store(db, read_only=True) as s:
        # What a resume runs on when told nothing: the run's executor and chunk size.
        assert _run_settings(s, "r", None, None) == ("threads:2", 4)
        assert _run_settings(s, "r", "inline", None) == ("inline", 4)
        assert _run_settings(s, None, None, None) == ("auto", 1000)  # chosen per batch
    r = extract(db, "--resume", "r", "--chunk-size", "5")
    assert r.exit_code == 2 and "chunks of 4 verdicts" in r.output, r.output
    with ScriptedServer() as srv:
        # The endpoint moved, and the resume is told to run inline: two chunks answer,
        # then the endpoint fails again.
        srv.add(*[Reply()] * 8, *[Reply(status=500)] * 10)
        r = extract(db, "--resume", "r", "--base-url", srv.base_url, "--executor", "inline",
                    "--max-consecutive-failures", "1")
        assert r.exit_code == 2, r.output
        cfg = config_of(db, "r")
        assert (cfg["base_url"], cfg["executor"], cfg["chunk_size"]) == (srv.base_url,
                                                                          "inline", 4)
        srv.script.clear()
        # The next resume, told nothing, goes to the new endpoint (the dead one would
        # open the breaker again) and finishes the run.
        r = extract(db, "--resume", "r", "--json")
        assert r.exit_code == 0, r.output
        assert srv.count == 9 + 12  # 8 answers and a failure, then the 12 left
    out = json.loads(r.stdout)
    assert out["status"] == "finished" and out["n_verdicts"] == 20 and out["n_errors"] == 0
    with tl.Store(db, read_only=True) as s:
        assert s.sql("SELECT count(*) FROM completions WHERE run_id = 'r'").fetchall() == \
            [(20,)]


def test_a_resume_told_another_executor_records_it(sample_full: Path, tmp_path: Path) -> None:
    db = copy_db(sample_full, tmp_path / "lab.duckdb")
    with tl.Store(db) as s:
        ex = tl.Extractor.replay(s, "sim-good-v1")
        cfg = tl.MemoryConfig(lesson_extraction="on")
        tl.run_extraction(s, ex, cfg, verdicts="seq <= 30", chunk_size=10, run_id="p",
                          write_memory=False, progress=False, executor="threads:2")
        run = tl.run_extraction(s, ex, cfg, verdicts="seq <= 30", run_id="p",
                                write_memory=False, progress=False, resume=True,
                                executor="inline")
        assert run.chunks_total == 3 and run.chunks_skipped == 3
    assert config_of(db, "p")["executor"] == "inline"
    with pytest.raises(tl.BadInputError, match="chunks of 10"):
        with tl.Store(db) as s:
            tl.run_extraction(s, tl.Extractor.replay(s, "sim-good-v1"),
                              tl.MemoryConfig(lesson_extraction="on"), verdicts="seq <= 30",
                              run_id="p", write_memory=False, progress=False, resume=True,
                              chunk_size=3)
