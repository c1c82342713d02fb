"""Issue #28 items 1-4: a server that echoes the API key where a secret was not looked for.

A real local HTTP server (tests/builders/http_server.py) reads the ``Authorization``
header of each request and puts its value in the answer's ``model`` field, or in
the ``evidence`` list of the lesson it proposes; ``extract``, ``judge``, ``match``,
``export`` and ``report`` then run through the real CLI, and every artefact (the
database file, its WAL, the CSV export, the report, a Python recording) is
grepped for the key.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.builders.cli import invoke
from tests.builders.echo import EchoServer, leaks
from tests.builders.http_server import Reply, ScriptedServer
from tests.builders.stores import copy_db
from truss_lab.core._secrets import MASK, redact, redact_json
from truss_lab.store._store import Store

KEY = "sk-echo-28-" + "5f1d" * 6


def _table_text(db: Path) -> str:
    with Store(db, read_only=True) as s:
        return "\n".join(repr(s.sql(f'SELECT * FROM "{t}"').fetchall()) for t in s.counts())


@pytest.fixture
def lab(sample_full: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    return copy_db(sample_full, tmp_path / "lab.duckdb")


@pytest.mark.parametrize("mode", ["model", "evidence"])
def test_a_key_echoed_in_model_or_evidence_reaches_no_artefact(
        lab: Path, tmp_path: Path, mode: str) -> None:
    with EchoServer(mode) as srv:
        r = invoke("extract", "--db", lab, "--extractor", "openai:m", "--base-url",
                   srv.base_url, "--policy", "on", "--verdicts", "seq IN (13, 14, 17)", "--json")
        assert r.exit_code == 0, r.output
        run_id = json.loads(r.output)["run_id"]
        for cmd in ("judge", "match"):
            r = invoke(cmd, run_id, "--db", lab, "--judge", "openai:j", "--base-url",
                       srv.base_url)
            assert "Traceback" not in r.output and KEY not in r.output, r.output
        sent = {s.headers.get("authorization") for s in srv.requests}
        calls = srv.count
    assert sent == {f"Bearer {KEY}"}  # the key went out on every call, and came back
    r = invoke("export", "--db", lab, "--format", "csv", "--out", tmp_path / "export")
    assert r.exit_code == 0, r.output
    r = invoke("report", run_id, "--db", lab, "--out", tmp_path / "report.html")
    assert r.exit_code == 0, r.output
    with Store(lab, read_only=True) as s:
        if mode == "model":
            # extract, judge and match each recorded their calls, the model masked
            kinds = s.sql("SELECT count(*), count(DISTINCT extractor_id) FROM completions "
                          "WHERE model = ?", [MASK]).fetchall()[0]
            assert kinds == (calls, 3)
        else:
            ev = s.sql("SELECT evidence FROM memory_entries WHERE run_id = ?",
                       [run_id]).fetchall()
            assert ev and all(e == ["check:a", MASK] for (e,) in ev)
    assert not leaks(KEY, lab, tmp_path / "export", tmp_path / "report.html")
    assert KEY not in _table_text(lab)


def test_the_python_recorder_redacts_an_echoed_model(monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    from tests.test_openai import request
    from truss_lab.extract._providers import CompletionRecorder, OpenAICompatibleProvider

    monkeypatch.setenv("ECHO28_API_KEY", KEY)
    rec = CompletionRecorder()
    with EchoServer("model") as srv:
        p = OpenAICompatibleProvider(srv.base_url, "m-small", api_key_env="ECHO28_API_KEY",
                                     max_retries=0, recorder=rec)
        assert p.complete(request(1)).model == KEY  # the caller sees the reply ...
        p.close()
    assert rec.records[0]["model"] == MASK
    rec.write(tmp_path / "rec.jsonl")
    assert KEY not in (tmp_path / "rec.jsonl").read_text()  # ... the recording does not


def test_a_key_in_the_base_url_query_is_not_stored(
        lab: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Azure-style: the key rides in the query; nothing in the environment says it is one.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with ScriptedServer() as srv:
        url = f"{srv.base_url}?api-key={KEY}"
        r = invoke("extract", "--db", lab, "--extractor", "openai:m", "--base-url", url,
                   "--policy", "on", "--verdicts", "seq<=2", "--json")
        assert r.exit_code == 0, r.output
        paths = {s.path for s in srv.requests}
    assert paths == {f"/v1/chat/completions?api-key={KEY}"}  # sent where the user said
    with Store(lab, read_only=True) as s:
        config = json.loads(s.sql("SELECT config FROM extraction_runs WHERE run_id = ?",
                                  [json.loads(r.output)["run_id"]]).fetchall()[0][0])
    assert config["base_url"] == f"{srv.base_url}?api-key={MASK}"
    assert KEY not in r.output and KEY not in _table_text(lab)
    assert not leaks(KEY, lab)


# A value no test registers as a secret: only the pattern can mask it.
QUERY_KEY = "sk-query-only-0a1b2c3d4e5f"


@pytest.mark.parametrize("text", [
    f"https://h/v1?api-key={QUERY_KEY}", f"https://h/v1?x=1&access_token={QUERY_KEY}#f",
    f'{{"base_url": "https://h/v1?key={QUERY_KEY}&api-version=2024"}}',
])
def test_secret_query_parameters_are_masked(text: str) -> None:
    assert QUERY_KEY not in redact(text) and MASK in redact(text)
    assert redact("https://h/v1?api-version=2024-02-01") == "https://h/v1?api-version=2024-02-01"
    assert redact("a monkey=business") == "a monkey=business"
    assert redact_json({"evidence": ["a", text]})["evidence"][1] == redact(text)


def test_a_non_ascii_key_is_refused_in_one_line_before_any_request(
        lab: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-caf\u00e9-" + "5f1d" * 6)
    with Store(lab, read_only=True) as s:
        before = s.counts()
    with ScriptedServer() as srv:
        for cmd in (["extract", "--db", lab, "--extractor", "openai:m", "--policy", "on",
                     "--verdicts", "seq<=2"],
                    ["judge", "r0", "--db", lab, "--judge", "openai:j"],
                    ["match", "r0", "--db", lab, "--judge", "openai:j"]):
            r = invoke(*cmd, "--base-url", srv.base_url)
            assert r.exit_code == 2, r.output
            assert r.output.startswith("error: ") and len(r.output.strip().splitlines()) == 1
            assert "OPENAI_API_KEY" in r.output and "ASCII" in r.output
            assert "5f1d" not in r.output
        assert srv.count == 0
    with Store(lab, read_only=True) as s:
        assert s.counts() == before  # no run row, no error row: nothing was written



def test_resume_asks_for_a_base_url_whose_credential_was_masked(
        lab: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The stored URL says [REDACTED] where the key was: sending that would fail every call.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with ScriptedServer() as srv:
        url = f"{srv.base_url}?api-key={KEY}"
        run_id = json.loads(invoke("extract", "--db", lab, "--extractor", "openai:m",
                                   "--base-url", url, "--policy", "on", "--verdicts", "seq<=2",
                                   "--json").output)["run_id"]
        before = srv.count
        r = invoke("extract", "--db", lab, "--resume", run_id)
        assert r.exit_code == 2, r.output
        assert r.output.startswith("error: ") and len(r.output.strip().splitlines()) == 1
        assert "--base-url" in r.output and KEY not in r.output
        r = invoke("extract", "--db", lab, "--resume", run_id, "--base-url", url, "--json")
        assert r.exit_code == 0, r.output
        assert srv.count == before  # the run was complete: nothing to ask again


def test_a_match_answer_naming_the_key_is_not_printed(lab: Path) -> None:
    # The matcher's error quotes what the server answered: that is text from outside too.
    with ScriptedServer() as srv:
        r = invoke("extract", "--db", lab, "--extractor", "openai:m", "--base-url",
                   srv.base_url, "--policy", "on", "--verdicts", "seq IN (13, 14, 17)", "--json")
        run_id = json.loads(r.output)["run_id"]
        pairs = [{"lesson": KEY, "reference": "R1", "similarity": 1}]
        answer = {"choices": [{"message": {"content": json.dumps({"pairs": pairs})}}]}
        for as_json in ([], ["--json"]):
            srv.add(*[Reply(body=answer)] * 3)
            r = invoke("match", run_id, "--db", lab, "--judge", "openai:j", "--base-url",
                       srv.base_url, *as_json)
            assert "names an unknown lesson" in r.output and MASK in r.output
            assert KEY not in r.output


# Keys no other test registers: only the base URL's own registration can mask them.
PATH_KEY = "sk-path-39-" + "7c2e" * 6
FRAGMENT_KEY = "sk-frag-39-" + "3b9a" * 6


def test_a_key_in_the_base_url_path_is_sent_but_not_stored(
        lab: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 39 item 8: a gateway that takes the key in the path (/v1/KEY/...); a key
    # holding '/' spans segments, so the path from the key on is a secret too.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with ScriptedServer() as srv:
        url = f"{srv.base_url}/{PATH_KEY}/proxy"
        r = invoke("extract", "--db", lab, "--extractor", "openai:m", "--base-url", url,
                   "--policy", "on", "--verdicts", "seq<=2", "--json")
        assert r.exit_code == 0, r.output
        paths = {s.path for s in srv.requests}
        run_id = json.loads(r.output)["run_id"]
        resumed = invoke("extract", "--db", lab, "--resume", run_id)
    assert paths == {f"/v1/{PATH_KEY}/proxy/chat/completions"}  # sent where the user said
    with Store(lab, read_only=True) as s:
        config = json.loads(s.sql("SELECT config FROM extraction_runs WHERE run_id = ?",
                                  [run_id]).fetchall()[0][0])
    assert config["base_url"] == f"{srv.base_url}/{MASK}"
    assert PATH_KEY not in r.output and PATH_KEY not in _table_text(lab)
    assert not leaks(PATH_KEY, lab)
    export = lab.parent / "export"
    assert invoke("export", "--db", lab, "--format", "csv", "--out", export).exit_code == 0
    assert not leaks(PATH_KEY, export)
    # The masked URL cannot be called: the resume asks for it (one line, no key).
    assert resumed.exit_code == 2 and "--base-url" in resumed.output
    assert PATH_KEY not in resumed.output


def test_a_base_url_with_a_fragment_is_refused_in_one_line(
        lab: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with Store(lab, read_only=True) as s:
        before = s.counts()
    with ScriptedServer() as srv:
        r = invoke("extract", "--db", lab, "--extractor", "openai:m", "--base-url",
                   f"{srv.base_url}#{FRAGMENT_KEY}", "--policy", "on", "--verdicts", "seq<=2")
        assert srv.count == 0
    assert r.exit_code == 2, r.output
    assert r.output.startswith("error: ") and len(r.output.strip().splitlines()) == 1
    assert "fragment" in r.output and FRAGMENT_KEY not in r.output
    with Store(lab, read_only=True) as s:
        assert s.counts() == before


@pytest.mark.parametrize(("url", "masked"), [
    ("https://h.example/openai/deployments/gpt-4o-mini-2024-07-18", None),
    ("https://h.example/v1/Meta-Llama-3.1-70B-Instruct", None),
    ("https://h.example/key/sk-proj-Ab12Cd34Ef56Gh78/v1", "sk-proj-Ab12Cd34Ef56Gh78"),
    ("https://h.example/v1/" + "0f" * 16 + "/gw/openai", "0f" * 16),
])
def test_only_key_like_path_segments_are_secrets(url: str, masked: str | None) -> None:
    from truss_lab.core._secrets import url_secrets

    found = url_secrets(url)
    assert (masked in found) if masked else found == []
