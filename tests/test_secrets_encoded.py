"""Issue 39 items 1-3: a known key in any encoding, and a secret in a file the user brings.

A real local HTTP server answers every call with an error body holding the key in one of
the encodings of :func:`tests.builders.echo.encoded_forms` (JSON's ``\\/``, percent-encoded,
``\\u``-escaped, upper-cased...); the run's errors are stored, exported, listed by
``truss-lab errors --json``, and none of them holds the key in any form. Labels,
references and prompt files holding the key (or an ``Authorization`` value, or URL
credentials) are refused line by line, naming the field; the other lines land.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.builders.cli import invoke
from tests.builders.echo import ODD_KEY, encoded_forms, leaks_encoded
from tests.builders.http_server import Reply, ScriptedServer
from tests.builders.stores import copy_db
from truss_lab.core._secrets import MASK, holds_secret, redact
from truss_lab.store import Store

FORMS = encoded_forms(ODD_KEY)


@pytest.mark.parametrize("form", sorted(FORMS))
def test_redact_masks_every_encoded_form(monkeypatch: pytest.MonkeyPatch, form: str) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", ODD_KEY)
    text = f'{{"error": "invalid key {FORMS[form]} given"}}'
    out = redact(text)
    assert out == f'{{"error": "invalid key {MASK} given"}}', out
    assert not leaks_encoded(ODD_KEY, texts={"out": out})


def test_redact_leaves_text_without_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", ODD_KEY)
    for text in ("sk-test-ABC123xyz", "a/b+c=d %2F \\u0073", "SK-TEST"):
        assert redact(text) == text and not holds_secret(text)


def _all_tables(db: Path) -> str:
    with Store(db, read_only=True) as s:
        return "\n".join(repr(s.sql(f'SELECT * FROM "{t}"').fetchall()) for t in s.counts())


@pytest.mark.parametrize("form", ["json_slash", "percent", "u_all", "upper"])
def test_a_key_echoed_encoded_in_an_error_body_reaches_no_artefact(
        sample_full: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, form: str) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", ODD_KEY)
    db = copy_db(sample_full, tmp_path / "lab.duckdb")
    body = json.dumps({"error": {"message": "Incorrect API key provided: KEY"}}).replace(
        "KEY", FORMS[form])
    with ScriptedServer(responder=lambda _: body) as srv:
        srv.add(*[Reply(400, body) for _ in range(8)])
        r = invoke("extract", "--db", db, "--extractor", "openai:m", "--base-url",
                   srv.base_url, "--policy", "on", "--verdicts", "seq <= 3", "--json")
        assert srv.count >= 3
    outputs = {"extract": r.output}
    with Store(db, read_only=True) as s:
        run_id = s.sql("SELECT run_id FROM extraction_runs ORDER BY started_at DESC "
                       "LIMIT 1").fetchall()[0][0]
        assert s.sql("SELECT count(*) FROM verdict_errors WHERE run_id = ?",
                     [run_id]).fetchall()[0][0] >= 3
    r = invoke("errors", run_id, "--db", db, "--json")
    assert r.exit_code == 0, r.output
    assert MASK in r.stdout
    outputs["errors"] = r.output
    r = invoke("export", "--db", db, "--format", "csv", "--out", tmp_path / "export")
    assert r.exit_code == 0, r.output
    outputs["export"] = r.output
    assert not leaks_encoded(ODD_KEY, db, tmp_path / "export",
                             texts={**outputs, "tables": _all_tables(db)})


SECRETS = {"key": ODD_KEY, "bearer": "Authorization: Bearer abcdefgh12345678",
           "userinfo": "see http://u:hunter2pass@host.example/x"}


@pytest.mark.parametrize("what", sorted(SECRETS))
def test_a_secret_in_a_labels_or_references_file_is_refused_naming_the_field(
        sample_good_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, what: str) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", ODD_KEY)
    db = copy_db(sample_good_run, tmp_path / "lab.duckdb")
    secret = SECRETS[what]
    with Store(db, read_only=True) as s:
        vh = s.sql("SELECT verdict_hash FROM candidates LIMIT 1").fetchall()[0][0]
        ex = s.sql("SELECT extractor_id FROM candidates LIMIT 1").fetchall()[0][0]
    labels = tmp_path / "labels.csv"
    labels.write_text("verdict_hash,extractor,lesson_index,useful,annotator\n"
                      f"{vh},{ex},0,1,ann\n{vh},{ex},1,1,\"{secret}\"\n", encoding="utf-8")
    r = invoke("ingest", "labels", labels, "--db", db)
    assert "row 3" in r.output and "annotator" in r.output and "holds a secret" in r.output
    assert r.exit_code != 0, r.output
    refs = tmp_path / "refs.jsonl"
    good = {"verdict_hash": vh, "reference_id": "r1", "text": "a lesson", "annotator": "a"}
    lines = [good] + [{**good, "reference_id": f"r{i + 2}", field: value}
                      for i, (field, value) in enumerate(
                          [("text", secret), ("annotator", secret), ("evidence", [secret])])]
    refs.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    r = invoke("ingest", "references", refs, "--db", db)
    assert r.exit_code != 0, r.output
    for line, field in ((2, "text"), (3, "annotator"), (4, "evidence")):
        assert f"line {line}" in r.output and field in r.output, r.output
    with Store(db, read_only=True) as s:
        assert s.sql("SELECT count(*) FROM reference_lessons WHERE annotator = 'a'"
                     ).fetchall()[0][0] == 1
        assert s.sql("SELECT count(*) FROM labels WHERE annotator = 'ann'").fetchall()[0][0] == 1
    assert not leaks_encoded(secret, db, texts={"out": r.output, "t": _all_tables(db)})


@pytest.mark.parametrize("what", sorted(SECRETS))
def test_a_prompt_file_holding_a_secret_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, what: str) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", ODD_KEY)
    from truss_lab.core._errors import BadInputError
    from truss_lab.ingest._prompts import read_prompt_file

    p = tmp_path / "p.toml"
    secret = SECRETS[what].replace("\\", "\\\\")
    p.write_text(f'name = "p1"\nsystem = "You extract. {secret}"\nuser = "{{verdict}}"\n',
                 encoding="utf-8")
    with pytest.raises(BadInputError) as exc:
        read_prompt_file(p)
    assert exc.value.field == "system" and "holds a secret" in str(exc.value)
    assert SECRETS[what] not in str(exc.value)


