"""Batch APIs (issue 35 item 3): `truss-lab batch prepare` writes an OpenAI Batch input file
whose bodies are the live extractor's requests, and `ingest completions --format
openai-batch` reads the output file (in any order; failed, expired and unknown lines named
by line number), which then replays as a recorded live run does."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

import truss_lab as tl
from tests.builders.cli import invoke, invoke_json
from tests.builders.http_server import ScriptedServer, default_completion
from tests.builders.stores import copy_db

WHERE = "seq <= 20"


@pytest.fixture(scope="module")
def prepared(sample_full: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path,
                                                                                      str]:
    tmp = tmp_path_factory.mktemp("batch")
    db = copy_db(sample_full, tmp / "lab.duckdb")
    out = invoke_json("batch", "prepare", "--db", db, "--extractor", "openai:gpt-test",
                      "--response-format", "json_object", "--verdicts", WHERE,
                      "--out", tmp / "batch.jsonl")
    assert out["requests"] == 20
    return db, tmp / "batch.jsonl", out["extractor_id"]


def output_line(req: dict, i: int) -> dict:
    """What the Batch API writes for one request it answered."""
    return {"id": f"batch_req_{i}", "custom_id": req["custom_id"],
            "response": {"status_code": 200, "request_id": f"req_{i:04d}",
                         "body": default_completion(req["body"])},
            "error": None}


def test_the_input_file_holds_the_live_requests(prepared: tuple[Path, Path, str],
                                                tmp_path: Path) -> None:
    db, batch, _ = prepared
    lines = [json.loads(x) for x in batch.read_text().splitlines()]
    assert len({x["custom_id"] for x in lines}) == 20
    assert {(x["method"], x["url"]) for x in lines} == {("POST", "/v1/chat/completions")}
    # A live run of the same extractor sends exactly these bodies.
    live_db = copy_db(db, tmp_path / "live.duckdb")
    with ScriptedServer() as server:
        r = invoke("extract", "--db", live_db, "--extractor", "openai:gpt-test",
                   "--response-format", "json_object", "--verdicts", WHERE, "--base-url",
                   server.base_url, "--policy", "on", "--dry-run", "--quiet")
        assert r.exit_code == 0, r.output
        sent = sorted(json.dumps(s.body, sort_keys=True) for s in server.requests)
    assert sent == sorted(json.dumps(x["body"], sort_keys=True) for x in lines)


def test_a_batch_round_trip_lands_17_names_3_and_replays(
        prepared: tuple[Path, Path, str], tmp_path: Path) -> None:
    db0, batch, ext = prepared
    db = copy_db(db0, tmp_path / "lab.duckdb")
    reqs = [json.loads(x) for x in batch.read_text().splitlines()]
    out = [output_line(r, i) for i, r in enumerate(reqs)]
    out[3]["response"] = {"status_code": 500, "request_id": "req_fail",
                          "body": {"error": {"message": "server error", "type": "server"}}}
    out[7]["response"] = None
    out[7]["error"] = {"code": "batch_expired", "message": "This request could not be "
                       "executed before the completion window expired."}
    out[11]["custom_id"] = "0123456789abcdef-" + "e" * 64
    good = [o for i, o in enumerate(out) if i not in (3, 7, 11)]
    random.Random(3).shuffle(out)
    path = tmp_path / "output.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in out))
    bad_lines = sorted(n for n, o in enumerate(out, start=1)
                       if o["response"] is None or o["response"]["status_code"] != 200
                       or o["custom_id"].startswith("0123456789abcdef"))

    r = invoke("ingest", "completions", path, "--format", "openai-batch", "--extractor", ext,
               "--db", db, "--json")
    assert r.exit_code == 3, r.output
    rep = json.loads(r.stdout)
    assert (rep["rows_added"], len(rep["errors"])) == (17, 3)
    assert [int(e.split(", line ")[1].split(",")[0]) for e in rep["errors"]] == bad_lines
    text = " ".join(rep["errors"])
    assert "status 500" in text and "expired (batch_expired" in text and "unknown custom_id" \
        in text
    with tl.Store(db, read_only=True) as s:
        src = s.sql("SELECT source FROM completions WHERE extractor_id = ? ORDER BY source",
                    [ext]).fetchall()
    assert len(src) == 17 and all(x.startswith(f"openai-batch:{path}#req_") for (x,) in src)

    r = invoke("extract", "--db", db, "--extractor", f"replay:{ext}", "--verdicts", WHERE,
               "--policy", "on", "--dry-run", "--run-id", "batch", "--quiet",
               "--max-error-share", "1", "--json")
    assert r.exit_code == 0, r.output
    with tl.Store(db, read_only=True) as s:
        n_with = s.sql("SELECT count(DISTINCT verdict_hash) FROM candidates WHERE run_id = "
                       "'batch'").fetchall()[0][0]
        errs = s.sql("SELECT message FROM verdict_errors WHERE run_id = 'batch'").fetchall()
    assert n_with == 17
    assert len(errs) == 3 and not any("different request" in m for (m,) in errs)
    prices = tmp_path / "prices.toml"
    prices.write_text('[models."gpt-test"]\ninput_per_million = 1.0\noutput_per_million = 2.0'
                      '\nbatch_input_per_million = 0.5\nbatch_output_per_million = 1.0\n')
    usage = invoke_json("usage", "batch", "--db", db, "--prices", prices)
    want_in = sum(o["response"]["body"]["usage"]["prompt_tokens"] for o in good)
    want_out = sum(o["response"]["body"]["usage"]["completion_tokens"] for o in good)
    assert want_in > 0 and usage["live_calls"] == 0
    assert (usage["recorded_calls"], usage["recorded_prompt_tokens"],
            usage["recorded_completion_tokens"]) == (17, want_in, want_out)
    # the batch price, not the live one
    assert usage["recorded_cost"] == pytest.approx((want_in * 0.5 + want_out * 1.0) / 1e6)


def test_a_repeated_line_is_named_and_the_replay_checks_request_hashes(
        prepared: tuple[Path, Path, str], tmp_path: Path) -> None:
    db0, batch, ext = prepared
    db = copy_db(db0, tmp_path / "lab.duckdb")
    reqs = [json.loads(x) for x in batch.read_text().splitlines()]
    out = [output_line(r, i) for i, r in enumerate(reqs)]
    path = tmp_path / "output.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in [*out, out[4]]))
    rep = invoke_json("ingest", "completions", path, "--format", "openai-batch",
                      "--extractor", ext, "--db", db, "--allow-bad-lines")
    assert rep["rows_added"] == 20
    assert rep["errors"] == [f"{path}, line 21, field 'custom_id': custom_id "
                             f"{out[4]['custom_id']} repeats line 5"]
    # A recording whose request hash is not the rebuilt request's is refused on replay.
    victim = out[0]["custom_id"].split("-")[1]
    with tl.Store(db) as s:
        s.con.execute("UPDATE completions SET request_hash = ? WHERE verdict_hash = ?",
                      ["0" * 64, victim])
    r = invoke("extract", "--db", db, "--extractor", f"replay:{ext}", "--verdicts", WHERE,
               "--policy", "on", "--dry-run", "--run-id", "checked", "--quiet",
               "--max-error-share", "1")
    assert r.exit_code == 0, r.output
    with tl.Store(db, read_only=True) as s:
        errs = s.sql("SELECT verdict_hash, message FROM verdict_errors WHERE run_id = "
                     "'checked'").fetchall()
    assert [h for h, _ in errs] == [victim] and "different request" in errs[0][1]


def test_the_files_follow_their_published_schemas(prepared: tuple[Path, Path, str],
                                                  tmp_path: Path) -> None:
    """The JSON Schemas docs/reference/formats.md shows (`truss-lab schema batch-input`,
    `batch-output`) hold every line `batch prepare` writes and every line of the
    format, error and expired lines included; a line the output model refuses (a
    status code that is no integer) is a bad line naming the field."""
    jsonschema = pytest.importorskip("jsonschema")
    db0, batch, ext = prepared
    inp = json.loads(invoke("schema", "batch-input").stdout)
    outp = json.loads(invoke("schema", "batch-output").stdout)
    reqs = [json.loads(x) for x in batch.read_text().splitlines()]
    for req in reqs:
        jsonschema.validate(req, inp)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**reqs[0], "url": "/v1/embeddings"}, inp)
    expired = {"id": "batch_req_x", "custom_id": reqs[1]["custom_id"], "response": None,
               "error": {"code": "batch_expired", "message": "not run in time"}}
    for line in (output_line(reqs[0], 0), expired):
        jsonschema.validate(line, outp)
    odd = output_line(reqs[2], 2)
    odd["response"]["status_code"] = "200"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(odd, outp)
    db = copy_db(db0, tmp_path / "lab.duckdb")
    path = tmp_path / "output.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in (output_line(reqs[0], 0), odd)))
    rep = invoke_json("ingest", "completions", path, "--format", "openai-batch",
                      "--extractor", ext, "--db", db, "--allow-bad-lines")
    assert rep["rows_added"] == 1
    assert rep["errors"] == [f"{path}, line 2, field 'custom_id': custom_id "
                             f"{odd['custom_id']}: response.status_code: Input should be a "
                             "valid integer"]
