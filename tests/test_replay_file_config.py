"""Issue #16 item 1, the file side: a §2 recordings file carries the extractor
configuration (``config`` on each line), so ``replay:FILE`` rebuilds the recorded
requests by itself, as ``replay:EXTRACTOR_ID`` does from the database."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import truss_lab as tl
from tests.builders.cli import invoke
from tests.builders.http_server import ScriptedServer
from tests.builders.stores import copy_db
from truss_lab.core._errors import BadInputError
from truss_lab.extract._extractor import Extractor, ExtractorConfig, ReplayProvider
from truss_lab.extract._providers import CompletionRecorder
from truss_lab.ingest._completions import read_completions, write_completions
from truss_lab.store._runs import run_content_hashes

VERDICTS = "seq <= 25"
CONFIG = ExtractorConfig(model="tiny", response_format="json_schema", temperature=0.5,
                         seed=7, max_tokens=300)


@pytest.fixture(scope="module")
def recorded(sample_full: Path, tmp_path_factory: pytest.TempPathFactory
             ) -> tuple[Path, Path, str]:
    """A live run against a local server, its calls recorded to a §2 file:
    (database, recordings file, extractor id)."""
    folder = tmp_path_factory.mktemp("filecfg")
    db, path = folder / "lab.duckdb", folder / "live.jsonl"
    copy_db(sample_full, db)
    rec = CompletionRecorder()
    with ScriptedServer() as srv:
        ex = Extractor.openai(srv.base_url, "tiny", config=CONFIG, recorder=rec)
        with tl.Store(db) as s:
            tl.run_extraction(s, ex, tl.MemoryConfig(lesson_extraction="on"),
                              verdicts=VERDICTS, progress=False, run_id="live")
        assert srv.count == 25
    assert rec.write(path) == 25
    return db, path, ex.extractor_id


def test_every_recorded_line_carries_the_configuration(recorded: tuple[Path, Path, str]
                                                       ) -> None:
    _, path, ext_id = recorded
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert {ln["extractor"] for ln in lines} == {ext_id}
    assert all(ExtractorConfig.model_validate(ln["config"]) == CONFIG for ln in lines)
    df, errors = read_completions(path)
    assert not errors and ReplayProvider(df).config_of(ext_id) == CONFIG
    # Written back, the file is the same bytes (the object survives the frame's text form).
    again = path.with_name("again.jsonl")
    write_completions(df, again)
    assert again.read_bytes() == path.read_bytes()


def test_replay_from_the_file_on_the_cli_zero_live_calls_same_candidates(
        recorded: tuple[Path, Path, str], sample_full: Path, tmp_path: Path) -> None:
    db, path, _ = recorded
    with ScriptedServer() as srv:  # where a live call would go, were one made
        r = invoke("extract", "--db", str(db), "--extractor", f"replay:{path}", "--base-url",
                   srv.base_url, "--policy", "on", "--verdicts", VERDICTS, "--run-id",
                   "from-file", "--quiet", "--json")
        assert r.exit_code == 0, r.output
        assert srv.count == 0
    out = json.loads(r.stdout)
    assert (out["n_verdicts"], out["n_errors"]) == (25, 0) and out["n_candidates"] > 0
    with tl.Store(db, read_only=True) as s:
        assert run_content_hashes(s, "from-file") == run_content_hashes(s, "live")
        live_hashes = run_content_hashes(s, "live")
    # Without the configuration the same recordings answer nothing: the requests
    # rebuilt from the extractor id alone are different requests.
    bare = tmp_path / "bare.jsonl"
    bare.write_text("".join(json.dumps({k: v for k, v in json.loads(ln).items()
                                        if k != "config"}) + "\n"
                            for ln in path.read_text().splitlines()))
    r = invoke("extract", "--db", str(db), "--extractor", f"replay:{bare}", "--policy", "on",
               "--verdicts", VERDICTS, "--run-id", "bare", "--quiet", "--json")
    assert r.exit_code == 1 and "25 of 25 verdicts" in r.output
    r = invoke("errors", "bare", "--db", str(db), "--json")
    assert all("answers a different request" in e["message"] for e in json.loads(r.stdout))
    # Ingested into another database, the file replays from there by extractor id.
    other = copy_db(sample_full, tmp_path / "other.duckdb")
    r = invoke("ingest", "completions", str(path), "--db", str(other), "--json")
    assert r.exit_code == 0, r.output
    ext_id = json.loads(path.read_text().splitlines()[0])["extractor"]
    r = invoke("extract", "--db", str(other), "--extractor", f"replay:{ext_id}", "--policy",
               "on", "--verdicts", VERDICTS, "--run-id", "from-db", "--quiet", "--json")
    assert r.exit_code == 0, r.output
    with tl.Store(other, read_only=True) as s:
        assert run_content_hashes(s, "from-db") == live_hashes
        (h,), = s.sql("SELECT DISTINCT config_hash FROM completions WHERE extractor_id = ?",
                      [ext_id]).fetchall()
    assert h == CONFIG.config_hash


def test_bad_or_conflicting_configurations_are_refused(recorded: tuple[Path, Path, str],
                                                       tmp_path: Path) -> None:
    _, path, ext_id = recorded
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(json.dumps({**ln, "config": 3}) if i == 1 else json.dumps(ln)
                             for i, ln in enumerate(lines)) + "\n")
    df, errors = read_completions(bad)
    assert len(df) == 24 and len(errors) == 1
    assert (errors[0].line, errors[0].field) == (2, "config")
    assert "expected a JSON object" in errors[0].message
    other = CONFIG.model_copy(update={"seed": 8}).model_dump(mode="json")
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("\n".join(json.dumps({**ln, "config": other}) if i == 1
                               else json.dumps(ln) for i, ln in enumerate(lines)) + "\n")
    with pytest.raises(BadInputError, match="2 different configurations"):
        Extractor.replay(mixed, ext_id)
    wrong = tmp_path / "wrong.jsonl"
    wrong.write_text("".join(json.dumps({**ln, "config": {"model": ""}}) + "\n"
                             for ln in lines))
    with pytest.raises(BadInputError, match="not an extractor configuration") as info:
        Extractor.replay(wrong, ext_id)
    assert info.value.field == "config"


def test_a_configuration_cannot_smuggle_a_record_across_lines(
        recorded: tuple[Path, Path, str], tmp_path: Path) -> None:
    """One configuration object per line keeps the one-shot parse; an array inside one
    could join two lines into a record (and a line holding two objects keep the count),
    so such a file is parsed line by line and every line is refused."""
    _, path, _ = recorded
    recs = [json.loads(x) for x in path.read_text().splitlines()[:3]]
    head = json.dumps({**recs[0], "config": None})[: -len("null}")]
    smuggled = tmp_path / "smuggled.jsonl"
    smuggled.write_text(head + '{"x": [1\n{"y": 2}]}}\n'
                        + json.dumps(recs[1]) + ", " + json.dumps(recs[2]) + "\n")
    df, errors = read_completions(smuggled)
    assert df.empty and sorted({e.line for e in errors}) == [1, 2, 3]
