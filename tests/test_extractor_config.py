"""Issue #16 item 1: the extractor configuration is one recorded, hashed object, so a
live run replays from the CLI with zero live calls and the same candidates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import truss_lab as tl
from tests.builders.cli import invoke
from tests.builders.http_server import ScriptedServer
from tests.builders.stores import copy_db
from truss_lab.core._errors import BadInputError, ProviderError
from truss_lab.extract._extractor import Extractor, ExtractorConfig
from truss_lab.extract._parser import LESSONS_JSON_SCHEMA
from truss_lab.store._runs import run_content_hashes

VERDICTS = "seq <= 30"


@pytest.fixture(scope="module")
def db(sample_full: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_db(sample_full, tmp_path_factory.mktemp("cfg") / "lab.duckdb")


def test_config_hashes_are_pinned() -> None:
    # Stored in extractor_configs, completions and run rows: a change of the hash would
    # orphan every recording made before it. Values from the code before canonical_digest.
    assert ExtractorConfig(model="m").config_hash == (
        "4bf09ebd0478fc8582f25b9dcac46046022a726c801798a8a79504b2c75e6a60")
    assert ExtractorConfig(model="m", temperature=0.7, top_p=0.9, samples=3,
                           response_format="json_schema").config_hash == (
        "0c1542b9258925fe52601c4ac9641d3d685d90d4b99489ed8f78ea13dcd23e5a")


def test_config_hash_covers_every_knob_and_parameters_follow_the_config() -> None:
    base = ExtractorConfig(model="m")
    assert base.is_default and base.default_extractor_id() == "m@lesson-v1"
    assert base.request_parameters() == {"temperature": 0.0}
    hashes = {base.config_hash}
    for change in ({"temperature": 0.7}, {"top_p": 0.9}, {"seed": 1}, {"max_tokens": 64},
                   {"response_format": "json_object"}, {"provider": "other"}):
        c = base.model_copy(update=change)
        hashes.add(c.config_hash)
    assert len(hashes) == 7
    js = ExtractorConfig(model="m", response_format="json_schema", seed=3)
    assert js.request_parameters()["response_format"]["json_schema"]["schema"] == \
        LESSONS_JSON_SCHEMA
    assert js.default_extractor_id() == f"m@lesson-v1+{js.config_hash[:8]}"
    with pytest.raises(ValueError):
        ExtractorConfig(model="m", stop=["x"])  # extra=forbid
    with pytest.raises(BadInputError, match="unknown request parameter"):
        ExtractorConfig.from_parameters("m", "lesson-v1", {"stop": ["x"]})


def test_the_config_hash_enters_the_request_hash(verdict: dict) -> None:
    plain = Extractor.openai("http://127.0.0.1:9/v1", "m")
    hot = Extractor.openai("http://127.0.0.1:9/v1", "m",
                           config=ExtractorConfig(model="m", temperature=0.0, seed=1))
    a, b = plain.request("ab" * 32, verdict), hot.request("ab" * 32, verdict)
    assert a.config_hash == plain.config.config_hash  # type: ignore[union-attr]
    assert a.request_hash != b.request_hash
    # A request without a configuration hashes as before the configuration existed.
    bare = a.model_copy(update={"config_hash": None})
    assert bare.request_hash != a.request_hash


@pytest.fixture(scope="module")
def live(db: Path) -> dict:
    """The run ``live`` (30 verdicts from a scripted server, through the CLI) and its
    replay ``replayed``, made once: the tests below read them, whatever their order."""
    with ScriptedServer() as srv:
        live = invoke("extract", "--db", str(db), "--extractor", "openai:tiny", "--base-url",
                      srv.base_url, "--response-format", "json_schema", "--temperature",
                      "0.5", "--seed", "7", "--max-tokens", "200", "--policy", "on",
                      "--verdicts", VERDICTS, "--run-id", "live", "--quiet", "--json")
        assert live.exit_code == 0, live.output
        live_calls = srv.count
        ext_id = json.loads(live.stdout)["extractor_id"]
        replay = invoke("extract", "--db", str(db), "--extractor", f"replay:{ext_id}",
                        "--policy", "on", "--verdicts", VERDICTS, "--run-id", "replayed",
                        "--quiet", "--json")
        assert replay.exit_code == 0, replay.output
        return {"ext_id": ext_id, "body": srv.requests[0].body, "replay": replay,
                "calls": (live_calls, srv.count)}


def test_live_run_replays_from_the_cli_with_zero_live_calls(db: Path, live: dict) -> None:
    body = live["body"]
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == LESSONS_JSON_SCHEMA
    assert (body["temperature"], body["seed"], body["max_tokens"]) == (0.5, 7, 200)
    assert live["ext_id"].startswith("tiny@lesson-v1+")
    assert live["calls"] == (30, 30)  # the replay called nobody
    r = live["replay"]
    out = json.loads(r.stdout)
    assert out["n_errors"] == 0 and out["n_candidates"] == 30
    with tl.Store(db, read_only=True) as s:
        assert run_content_hashes(s, "replayed") == run_content_hashes(s, "live")
        rows = s.sql("SELECT DISTINCT config_hash FROM extraction_runs "
                     "WHERE run_id IN ('live', 'replayed')").fetchall()
        assert len(rows) == 1 and rows[0][0] is not None
        assert s.sql("SELECT count(*) FROM completions WHERE run_id = 'live' AND "
                     "config_hash = ?", [rows[0][0]]).fetchall() == [(30,)]


def test_one_configuration_per_extractor_id_and_replay_refuses_another(
        db: Path, live: dict, verdict: dict) -> None:
    with tl.Store(db) as s:
        ext_id = s.sql("SELECT extractor_id FROM extraction_runs WHERE run_id = 'live'"
                       ).fetchall()[0][0]
        other = Extractor.openai("http://127.0.0.1:9/v1", "tiny", extractor_id=ext_id,
                                 config=ExtractorConfig(model="tiny", temperature=0.9))
        with pytest.raises(BadInputError, match="another extractor id"):
            tl.run_extraction(s, other, tl.MemoryConfig(lesson_extraction="on"),
                              verdicts=VERDICTS, progress=False)
        replay = Extractor.replay(s, ext_id)
        assert replay.config is not None and replay.config.temperature == 0.5
        vhash = s.sql("SELECT verdict_hash FROM completions WHERE extractor_id = ? LIMIT 1",
                      [ext_id]).fetchall()[0][0]
        payload = json.loads(s.sql("SELECT payload FROM journal WHERE hash = ?",
                                   [vhash]).fetchall()[0][0])
        changed = Extractor(ext_id, replay.provider, replay.template, replay.model,
                            replay.parameters, other.config)
        with pytest.raises(ProviderError, match="answers a different request"):
            changed.provider.complete(changed.request(vhash, payload))
        assert replay.provider.complete(replay.request(vhash, payload)).replayed


def test_replay_knobs_are_refused(db: Path) -> None:
    r = invoke("extract", "--db", str(db), "--extractor", "heuristic", "--policy", "on",
               "--temperature", "0.3")
    assert r.exit_code == 2 and "configuration it was recorded with" in r.output


# -- issue #16 item 4: usage per run ------------------------------------------------------


def test_usage_of_a_live_run_its_replay_and_a_failing_run(db: Path, live: dict,
                                                           tmp_path: Path) -> None:
    from tests.builders.http_server import Reply
    from truss_lab.store._usage import load_prices

    prices = tmp_path / "prices.toml"
    prices.write_text('currency = "EUR"\n[models."tiny"]\ninput_per_million = 1.0\n'
                      "output_per_million = 2.0\n")
    r = invoke("usage", "live", "--db", str(db), "--prices", str(prices), "--json")
    assert r.exit_code == 0, r.output
    u = json.loads(r.stdout)
    with tl.Store(db, read_only=True) as s:
        p_tok, c_tok, lat = s.sql("SELECT sum(prompt_tokens), sum(completion_tokens), "
                                  "quantile_cont(latency_ms, 0.95) FROM completions "
                                  "WHERE run_id = 'live'").fetchall()[0]
    assert (u["calls"], u["live_calls"], u["n_verdicts"]) == (30, 30, 30)
    assert (u["prompt_tokens"], u["completion_tokens"]) == (p_tok, c_tok)
    assert u["latency_ms_p95"] == pytest.approx(lat)
    assert u["cost"] == pytest.approx((p_tok * 1.0 + c_tok * 2.0) / 1e6)
    assert u["currency"] == "EUR" and u["errors"] == {}
    assert u["seconds_per_verdict"] == pytest.approx(u["seconds"] / 30)
    # A replay calls no model: no tokens, no latency; no price table, no cost.
    r = invoke("usage", "replayed", "--db", str(db), "--json")
    u = json.loads(r.stdout)
    assert (u["calls"], u["live_calls"], u["prompt_tokens"], u["latency_ms_p50"]) == \
        (30, 0, 0, None)
    assert u["cost"] is None and "no price table" in u["cost_note"]
    # Errors by kind, and a model without a price gives no cost rather than a guess.
    with ScriptedServer() as srv:
        srv.add(Reply(status=400, body={"error": "bad"}), Reply(body="not json"),
                Reply(body={"model": "x", "choices": [{"message": {"content": "prose"}}]}))
        ex = Extractor.openai(srv.base_url, "other", max_retries=0)
        with tl.Store(db) as s:
            run = tl.run_extraction(s, ex, tl.MemoryConfig(lesson_extraction="on"),
                                    verdicts="seq <= 5", progress=False, run_id="bad")
            usage = run.usage(load_prices(prices))
    assert usage.errors == {"parse/not_json": 1, "provider/provider_error": 2}
    assert usage.calls == 5 and usage.live_calls == 3
    assert usage.cost is None and "no price for model(s) other, x" in usage.cost_note
    assert "errors: 2 provider/provider_error, 1 parse/not_json" in str(usage)
    bad = tmp_path / "bad.toml"
    bad.write_text('[models."m"]\ninput_per_million = "free"\n')
    r = invoke("usage", "live", "--db", str(db), "--prices", str(bad))
    assert r.exit_code == 2 and "expected numbers >= 0" in r.output


@pytest.mark.parametrize(("kwargs", "field", "shown"), [
    ({"parameters": {"temperature": -1}}, "temperature", "value -1"),
    ({"parameters": {"top_p": 2}}, "top_p", "value 2"),
    ({"parameters": {"max_tokens": 0}}, "max_tokens", "value 0"),
    ({"timeout_seconds": 3}, "timeout_seconds", "OpenAICompatibleProvider takes"),
])
def test_openai_extractor_refuses_a_bad_knob_or_option_naming_it(
        kwargs: dict, field: str, shown: str) -> None:
    # A user's typo reaches them as one BadInputError naming the knob, never as
    # pydantic's multi-line ValidationError or a TypeError from the provider.
    with pytest.raises(BadInputError) as err:
        Extractor.openai("http://127.0.0.1:9/v1", "m", **kwargs)
    assert err.value.field == field
    assert shown in str(err.value)


def test_checked_config_names_an_unknown_field() -> None:
    with pytest.raises(BadInputError) as err:
        ExtractorConfig.checked(model="m", temprature=0.5)
    assert err.value.field == "temprature"
    assert ExtractorConfig.checked(model="m") == ExtractorConfig(model="m")
