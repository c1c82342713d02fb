"""Bounds on the free text of every ingested file (issue 28 follow-up to item 13).

Reference lessons got bounds in item 13; completions (text, names, config), gold labels
and match labels (extractor, annotator) and prompt files get theirs here, reported the
same way: a bad line named by line and field, the good lines landing. A line far over
its bound is refused without being read whole, and the reader's memory shows it (a child
process reads its own VmHWM, as the 80 MB body row of ``make reliability`` does).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.builders.cli import invoke
from tests.builders.http_server import Reply, ScriptedServer
from tests.builders.stores import SAMPLE, copy_db
from truss_lab.core._errors import BadInputError, ProviderError
from truss_lab.extract._providers import ChatMessage, CompletionRequest, OpenAICompatibleProvider
from truss_lab.ingest._completions import (
    MAX_COMPLETION_CONFIG,
    MAX_COMPLETION_LINE,
    MAX_COMPLETION_NAME,
    MAX_COMPLETION_TEXT,
    read_completions,
    write_completions,
)
from truss_lab.ingest._fields import MAX_REFERENCE_TEXT
from truss_lab.ingest._labels import read_labels
from truss_lab.ingest._match_labels import read_match_labels
from truss_lab.ingest._prompts import MAX_PROMPT_FILE, MAX_PROMPT_TEXT, read_prompt_file
from truss_lab.ingest._references import MAX_REFERENCE_LINE, read_references
from truss_lab.ingest._schemas import json_schema
from truss_lab.store._store import Store

ROOT = Path(__file__).resolve().parents[1]
FIRST: dict[str, Any] = json.loads(
    (SAMPLE / "completions.jsonl").read_text(encoding="utf-8").splitlines()[0])
HUGE = 50_000_000  # the attack's 50 MB completion


def _line(**over: Any) -> str:
    return json.dumps({**FIRST, **over})


def _where(errors: list[BadInputError]) -> list[tuple[int | None, str | None, str | None]]:
    return [(e.line, e.field, e.reason) for e in errors]


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    return path


def test_completion_fields_beyond_their_bounds_are_bad_lines_and_the_good_ones_land(
        sample_unlabelled: Path, tmp_path: Path) -> None:
    lines = [
        _line(extractor="ok-at-bound", text="x" * MAX_COMPLETION_TEXT),
        _line(extractor="huge", text="y" * HUGE),
        _line(extractor="just-over", text="y" * (MAX_COMPLETION_TEXT + 1)),
        _line(extractor="e" * (MAX_COMPLETION_NAME + 1)),
        _line(extractor="long-model", model="m" * (MAX_COMPLETION_NAME + 1)),
        _line(extractor="long-config", config={"blob": "c" * MAX_COMPLETION_CONFIG}),
        _line(extractor="ok", prompt_version="p" * MAX_COMPLETION_NAME),
    ]
    path = _write(tmp_path / "c.jsonl", lines)
    df, errors = read_completions(path)
    assert df["extractor"].tolist() == ["ok-at-bound", "ok"]
    assert _where(errors) == [(2, "text", "line_too_long"), (3, "text", "bad_value"),
                              (4, "extractor", "bad_value"), (5, "model", "bad_value"),
                              (6, "config", "bad_value")]
    assert f"line over {MAX_COMPLETION_LINE} bytes, not read whole; expected at most " \
           f"{MAX_COMPLETION_TEXT} characters" in errors[0].message
    assert errors[1].message == (f"expected at most {MAX_COMPLETION_TEXT} characters, got "
                                 f"{MAX_COMPLETION_TEXT + 1}")
    db = copy_db(sample_unlabelled, tmp_path / "lab.duckdb")
    r = invoke("ingest", "completions", path, "--db", db, "--json")
    assert r.exit_code == 3, r.output[:2000]
    rep = json.loads(r.stdout)
    assert rep["rows_added"] == 2 and len(rep["errors"]) == 5
    assert "line 2, field 'text'" in rep["errors"][0]
    assert len(r.output) < 20_000  # no value echoed
    with Store(db, read_only=True) as s:
        assert s.sql("SELECT max(length(text)) FROM completions").fetchall() == [
            (MAX_COMPLETION_TEXT,)]


@pytest.mark.parametrize(("first", "field"), [
    ({"config": {"blob": "c" * (MAX_COMPLETION_LINE + 10)}}, "config"),
    ({"notes": "n" * (MAX_COMPLETION_LINE + 10)}, "notes"),
])
def test_an_over_long_line_names_the_field_that_makes_it_long(
        tmp_path: Path, first: dict[str, Any], field: str) -> None:
    # The culprit comes before the other fields: found in the line's first megabyte.
    rec = {**first, **FIRST}
    path = _write(tmp_path / "c.jsonl", [json.dumps(rec), _line(extractor="ok")])
    df, errors = read_completions(path)
    assert df["extractor"].tolist() == ["ok"]
    assert _where(errors) == [(1, field, "line_too_long")]


def test_an_over_long_line_of_padding_names_no_field(tmp_path: Path) -> None:
    pad = "{" + " " * (MAX_COMPLETION_LINE + 1) + '"text": ""}'
    df, errors = read_completions(_write(tmp_path / "c.jsonl", [_line(), pad]))
    assert len(df) == 1 and _where(errors) == [(2, None, "line_too_long")]
    assert errors[0].message == f"line over {MAX_COMPLETION_LINE} bytes, not read whole"


def test_the_bounds_are_in_the_schema_and_the_writer_keeps_them(tmp_path: Path) -> None:
    props = json_schema("completions")["properties"]
    assert props["text"]["maxLength"] == MAX_COMPLETION_TEXT
    assert props["extractor"]["maxLength"] == MAX_COMPLETION_NAME
    out = tmp_path / "out.jsonl"
    with pytest.raises(BadInputError, match="nothing written") as info:
        write_completions([{**FIRST, "text": "x" * (MAX_COMPLETION_TEXT + 1)}], out)
    assert info.value.field == "text" and not out.exists()


_CHILD = """
import sys
import threading
from truss_lab.ingest._completions import read_completions
df, errors = read_completions(sys.argv[1])
with open("/proc/self/status") as f:
    hwm = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
print(hwm // 1024, len(df), len(errors))
"""


def _peak_mb(path: Path) -> tuple[int, int, int]:
    p = subprocess.run([sys.executable, "-c", _CHILD, str(path)], cwd=ROOT, capture_output=True,
                       text=True, timeout=300, check=True)
    mb, rows, errors = map(int, p.stdout.split())
    return mb, rows, errors


def test_a_50_mb_completion_line_is_refused_without_holding_it(tmp_path: Path) -> None:
    small = _write(tmp_path / "small.jsonl", [_line(extractor="ok")])
    big = _write(tmp_path / "big.jsonl", [_line(extractor="ok"),
                                          _line(extractor="huge", text="y" * HUGE)])
    base, rows, errors = _peak_mb(small)
    assert (rows, errors) == (1, 0)
    peak, rows, errors = _peak_mb(big)
    assert (rows, errors) == (1, 1)
    # Read whole, the 50 MB line cost some 220 MB more than the small file (its bytes,
    # its text, its parsed string, ...); refused unread, a megabyte at a time (+3 MB seen).
    assert peak - base < MAX_COMPLETION_LINE // 2**20, (base, peak)


def test_a_live_answer_longer_than_a_recording_holds_is_a_failed_call() -> None:
    long_text = {"model": "m", "choices": [{"message": {
        "role": "assistant", "content": "z" * (MAX_COMPLETION_TEXT + 1)}}]}
    req = CompletionRequest(messages=(ChatMessage(role="user", content="hi"),), model="m",
                            verdict_hash="v", extractor="e", prompt_version="p")
    with ScriptedServer() as srv:
        srv.add(Reply(200, long_text))
        with OpenAICompatibleProvider(srv.base_url, "m", max_retries=0) as p, \
                pytest.raises(ProviderError, match=f"over the {MAX_COMPLETION_TEXT} a "
                                                   "recorded completion holds"):
            p.complete(req)


def test_a_reference_line_far_over_its_bound_is_refused_unread(tmp_path: Path) -> None:
    ref = next(r for r in map(json.loads, (SAMPLE / "references.jsonl").read_text(
        encoding="utf-8").splitlines()) if r["text"])
    lines = [json.dumps({**ref, "reference_id": "r-ok"}),
             json.dumps({**ref, "reference_id": "r-big", "text": "x" * (2 * MAX_REFERENCE_LINE)})]
    df, errors = read_references(_write(tmp_path / "r.jsonl", lines))
    assert df["reference_id"].tolist() == ["r-ok"]
    assert _where(errors) == [(2, "text", "line_too_long")]
    assert f"expected at most {MAX_REFERENCE_TEXT} characters" in errors[0].message


def test_label_and_match_label_names_are_bounded(tmp_path: Path) -> None:
    h = FIRST["verdict_hash"]
    labels = tmp_path / "labels.csv"
    labels.write_text("verdict_hash,extractor,lesson_index,useful,annotator\n"
                      f"{h},ok,0,1,a\n{h},{'e' * (MAX_COMPLETION_NAME + 1)},0,1,a\n"
                      f"{h},ok,1,1,{'a' * 257}\n", encoding="utf-8")
    df, errors = read_labels(labels)
    assert len(df) == 1
    assert [(e.row, e.field) for e in errors] == [(3, "extractor"), (4, "annotator")]
    match = tmp_path / "match.csv"
    match.write_text("verdict_hash,extractor,lesson_index,reference_id,annotator\n"
                     f"{h},{'e' * (MAX_COMPLETION_NAME + 1)},0,,a\n", encoding="utf-8")
    _, errors = read_match_labels(match)
    assert [(e.row, e.field) for e in errors] == [(2, "extractor")]
    assert f"at most {MAX_COMPLETION_NAME} characters" in errors[0].message


def test_prompt_files_are_bounded(tmp_path: Path) -> None:
    body = 'name = "p1"\nkind = "lesson"\nsystem = "s"\nuser = "{goal}"\n'
    ok = tmp_path / "ok.toml"
    ok.write_text(body, encoding="utf-8")
    assert read_prompt_file(ok).name == "p1"
    long_system = tmp_path / "long.toml"
    long_system.write_text(body.replace('"s"', '"' + "s" * (MAX_PROMPT_TEXT + 1) + '"'),
                           encoding="utf-8")
    with pytest.raises(BadInputError) as info:
        read_prompt_file(long_system)
    assert info.value.field == "system" and f"at most {MAX_PROMPT_TEXT}" in info.value.message
    huge = tmp_path / "huge.toml"
    huge.write_bytes(body.encode() + b"#" * MAX_PROMPT_FILE)
    with pytest.raises(BadInputError, match=f"file over {MAX_PROMPT_FILE} bytes"):
        read_prompt_file(huge)
    r = invoke("prompts", "add", huge, "--db", tmp_path / "lab.duckdb")
    assert r.exit_code == 2 and r.output.startswith("error: ") and len(r.output) < 400, r.output


def test_the_formats_page_states_every_bound() -> None:
    text = (ROOT / "docs" / "reference" / "formats.md").read_text(encoding="utf-8")
    for n in (MAX_COMPLETION_TEXT, MAX_COMPLETION_NAME, MAX_COMPLETION_CONFIG,
              MAX_COMPLETION_LINE, MAX_REFERENCE_TEXT, MAX_REFERENCE_LINE, MAX_PROMPT_TEXT):
        assert str(n) in text, n
    assert MAX_PROMPT_FILE == 4 * 2**20 and "a file over 4 MiB is refused" in text


def test_a_pipe_is_read_with_the_same_bounds(tmp_path: Path) -> None:
    # A FIFO cannot be read twice: one pass keeps the good lines, drops the long one.
    fifo = tmp_path / "c.fifo"
    os.mkfifo(fifo)
    body = "".join(x + "\n" for x in (_line(extractor="a"), _line(text="y" * (
        MAX_COMPLETION_LINE + 5)), _line(extractor="b"))).encode()

    def feed() -> None:
        with open(fifo, "wb") as fh:
            fh.write(body)

    writer = threading.Thread(target=feed)
    writer.start()
    try:
        df, errors = read_completions(fifo)
    finally:
        writer.join(timeout=60)
    assert df["extractor"].tolist() == ["a", "b"]
    assert _where(errors) == [(2, "text", "line_too_long")]
