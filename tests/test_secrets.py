"""Issue #15 item 1: no secret reaches the database, a recording, a log or an error.

Each test is one reproduction from the issue, run against the real local HTTP
server (tests/builders/http_server.py) and the real CLI.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.builders.cli import invoke
from tests.builders.http_server import Reply, ScriptedServer
from truss_lab.core._errors import ProviderError
from truss_lab.core._secrets import MASK, redact, redact_many
from truss_lab.journal._crypto import SigningKey
from truss_lab.journal._ledger import append_entries
from truss_lab.store._store import Store

KEY = "sk-S3cr3t-h10-do-not-store-9f8e7d"


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as srv:
        yield srv


@pytest.fixture
def db(tmp_path: Path, key: SigningKey, verdict: dict) -> Path:
    path = tmp_path / "lab.duckdb"
    with Store(path) as s:
        append_entries(s, "contract_verdict",
                       [{**verdict, "run_id": f"r-{i}"} for i in range(3)], key)
    return path


def _everything(path: Path) -> str:
    """Every value of every table, as text."""
    with Store(path, read_only=True) as s:
        return "\n".join(repr(s.sql(f'SELECT * FROM "{t}"').fetchall()) for t in s.counts())


def _extract(db: Path, url: str, *extra: str) -> object:
    return invoke("extract", "--db", str(db), "--extractor", "openai:m",
                  "--base-url", url, "--policy", "on", "--quiet",
                  "--verdicts", "seq<=2", *extra)


def test_key_with_a_carriage_return_is_refused_before_any_request(
        db: Path, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    # The reproduction: OPENAI_API_KEY=$'sk-S\r' (a key read from a CRLF file).
    monkeypatch.setenv("OPENAI_API_KEY", KEY + "\r")
    r = _extract(db, server.base_url)
    assert r.exit_code == 2, r.output
    assert r.output.startswith("error: ") and len(r.output.strip().splitlines()) == 1
    assert "OPENAI_API_KEY" in r.output and "control character" in r.output
    assert KEY not in r.output and KEY[:8] not in r.output
    assert server.count == 0
    assert KEY not in _everything(db)


def test_key_echoed_in_a_401_body_is_not_stored(
        db: Path, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    body = {"error": {"message": f"Incorrect API key provided: {KEY}. Authorization: Bearer "
                                 f"{KEY}"}}
    server.add(Reply(status=401, body=body), Reply(status=401, body=body))
    r = _extract(db, server.base_url, "--max-error-share", "1")
    assert r.exit_code == 0, r.output
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"  # it was sent
    text = _everything(db)
    assert "Incorrect API key provided: " + MASK in text  # the error row is there, masked
    assert KEY not in text and KEY not in r.output


def test_credentials_in_base_url_are_not_stored(
        db: Path, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    url = server.base_url.replace("http://", f"http://user:{KEY}@")
    r = _extract(db, url, "--json")
    assert r.exit_code == 0, r.output
    assert server.count == 2 and "authorization" in server.requests[0].headers
    with Store(db, read_only=True) as s:
        config = json.loads(s.sql("SELECT config FROM extraction_runs").fetchall()[0][0])
    assert config["base_url"] == server.base_url.replace("http://", f"http://{MASK}@")
    assert KEY not in _everything(db) and KEY not in r.output


def test_provider_errors_and_recordings_are_redacted(
        server: ScriptedServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from tests.test_openai import request
    from truss_lab.extract._providers import CompletionRecorder, OpenAICompatibleProvider

    monkeypatch.setenv("H10_TEST_API_KEY", KEY)
    rec = CompletionRecorder()
    p = OpenAICompatibleProvider(server.base_url, "m-small", api_key_env="H10_TEST_API_KEY",
                                 max_retries=0, recorder=rec)
    server.add(Reply(status=403, body=f"no: {KEY}"),
               Reply(body={"choices": [{"message": {"content": f"echo {KEY}"}}]}))
    with pytest.raises(ProviderError) as info:
        p.complete(request(1))
    assert KEY not in str(info.value) and MASK in str(info.value)
    assert p.complete(request(2)).text == f"echo {KEY}"  # the caller sees the reply ...
    rec.write(tmp_path / "rec.jsonl")
    assert KEY not in (tmp_path / "rec.jsonl").read_text()  # ... the recording does not
    p.close()


@pytest.mark.parametrize("text", [
    "Illegal header value b'Bearer sk-abcdefgh1234\\r'",
    "headers={'Authorization': 'Bearer sk-abcdefgh1234'}",
    '{"authorization": "token sk-abcdefgh1234"}',
    "GET https://me:sk-abcdefgh1234@example.test/v1 failed",
])
def test_redact_patterns(text: str) -> None:
    assert "sk-abcdefgh1234" not in redact(text)
    assert redact_many([text, None]) == [redact(text), None]
