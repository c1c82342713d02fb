"""Issue #16: does schema-constrained decoding cut parse failures? A simulated model on
a real local server answers malformed free text on a share of prompts; the same
prompts under ``response_format: json_schema`` parse."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

import truss_lab as tl
from tests.builders.http_server import ScriptedServer
from tests.builders.stores import copy_db
from truss_lab.extract._extractor import Extractor, ExtractorConfig
from truss_lab.simulate._completions import structured_output_reply


@pytest.fixture(scope="module")
def failures(sample_full: Path, tmp_path_factory: pytest.TempPathFactory
             ) -> dict[str, dict[str, str]]:
    """Per response_format arm: verdict_hash -> parse-failure reason."""
    path = copy_db(sample_full, tmp_path_factory.mktemp("rf") / "lab.duckdb")
    reply = functools.partial(structured_output_reply, malformed_rate=0.3)
    out: dict[str, dict[str, str]] = {}
    with ScriptedServer(responder=reply) as srv, tl.Store(path) as store:
        for arm in ("none", "json_object", "json_schema"):
            config = ExtractorConfig(model="sim", response_format=arm)
            ext = Extractor.openai(srv.base_url, "sim", config=config, max_retries=0)
            run = tl.run_extraction(store, ext, tl.MemoryConfig(lesson_extraction="on"),
                                    verdicts="seq <= 60", write_memory=False,
                                    progress=False, run_id=arm)
            assert run.n_verdicts == 60
            out[arm] = dict(store.sql(
                "SELECT verdict_hash, reason FROM verdict_errors WHERE run_id = ? AND "
                "stage = 'parse'", [arm]).fetchall())
        sent = {s.body.get("response_format", {}).get("type") for s in srv.requests}
    assert sent == {None, "json_object", "json_schema"}
    return out


def test_free_text_fails_to_parse_and_the_schema_arm_never_does(
        failures: dict[str, dict[str, str]]) -> None:
    assert 6 <= len(failures["none"]) <= 30  # about 30% of 60 prompts
    assert set(failures["none"].values()) <= {"not_json", "no_lessons_key"}
    assert failures["json_schema"] == {}


def test_json_object_fixes_the_syntax_not_the_shape(
        failures: dict[str, dict[str, str]]) -> None:
    # The same prompts misbehave; constrained to JSON they give the wrong shape instead.
    assert set(failures["json_object"]) == set(failures["none"])
    assert set(failures["json_object"].values()) == {"no_lessons_key"}


def test_the_reply_is_a_function_of_the_prompt() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
    assert structured_output_reply(body) == structured_output_reply(dict(body))
    assert structured_output_reply(body, malformed_rate=0.0)["choices"][0]["message"][
        "content"].startswith('{"lessons"')
    bad = structured_output_reply(body, malformed_rate=1.0)["choices"][0]["message"]["content"]
    assert tl.extract.parse_completion(bad).error is not None
