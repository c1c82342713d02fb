"""Issue 27 items 1-2: prompt templates as files (Formats §6), and recordings under
any prompt version replay.

Real DuckDB files, the real CLI, and a real local HTTP server for the live run: what the
server received is the check that a registered prompt reaches the model verbatim.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

import truss_lab as tl
from tests.builders.cli import invoke, invoke_json
from tests.builders.http_server import ScriptedServer
from tests.builders.stores import copy_db
from truss_lab.core._errors import BadInputError
from truss_lab.extract._extractor import Extractor, UnregisteredPromptWarning
from truss_lab.extract._prompts import (
    BUILTIN_PROMPTS,
    get_template,
    load_prompt,
    prompt_toml,
    register_prompt,
)
from truss_lab.faces._notebook import SAMPLE
from truss_lab.ingest._prompts import PLACEHOLDERS, parse_prompt_text

SYSTEM = 'You extract lessons. Answer {"lessons": [...]} as JSON; a "$" is a dollar.'
USER = ("Goal: {goal}\nVerdict: {verdict} {{not a field}} costs $5\n"
        "Summary: {summary}\n{checks}\nfailed={n_failed}x")
# The same user template as the toolkit keeps it (string.Template): what the hash covers.
USER_DOLLAR = ("Goal: $goal\nVerdict: $verdict {not a field} costs $$5\n"
               "Summary: $summary\n$checks\nfailed=${n_failed}x")


def _file(path: Path, name: str = "mine-v1", user: str = USER, system: str = SYSTEM,
          kind: str = "lesson") -> Path:
    path.write_text(f'name = "{name}"\nkind = "{kind}"\ndescription = "a test prompt"\n'
                    f"system = '''{system}'''\nuser = '''{user}'''\n", encoding="utf-8")
    return path


def _one_line(r: Any) -> str:
    assert r.exit_code == 2, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in r.output
    return lines[0]


@pytest.fixture
def db(sample_full: Path, tmp_path: Path) -> Path:
    return copy_db(sample_full, tmp_path / "lab.duckdb")


def _payload(seq: int) -> dict[str, Any]:
    with open(SAMPLE / "journal.jsonl", encoding="utf-8") as fh:
        for line in fh:
            e = json.loads(line)
            if e["seq"] == seq:
                return e["payload"]
    raise AssertionError(seq)


# -- the file, the registry, the table ----------------------------------------------------------

def test_builtin_prompts_are_files_read_like_any_other() -> None:
    assert set(BUILTIN_PROMPTS) == {"lesson-v1", "judge-v1", "match-v1"}
    folder = Path(tl.__file__).parent / "extract" / "prompts"
    for name in BUILTIN_PROMPTS:
        t = load_prompt(folder / f"{name}.toml")
        assert t == get_template(name) and t.template_hash == get_template(name).template_hash
        # prompts show prints what reads back to the same template
        again = parse_prompt_text(prompt_toml(t))
        assert (again.name, again.kind, again.system) == (name, t.kind, t.system)
    assert get_template("judge-v1").kind == "judge" and get_template("match-v1").kind == "match"


def test_add_list_show_and_the_same_name_with_other_text(db: Path, tmp_path: Path) -> None:
    f = _file(tmp_path / "mine.toml")
    out = invoke_json("prompts", "add", str(f), "--db", str(db))
    want = hashlib.sha256(f"[system]\n{SYSTEM}\n[user]\n{USER_DOLLAR}".encode()).hexdigest()
    assert out == {"name": "mine-v1", "kind": "lesson", "template_hash": want, "added": True,
                   "source": str(f)}
    assert invoke_json("prompts", "add", str(f), "--db", str(db))["added"] is False
    rows = {r["name"]: r for r in invoke_json("prompts", "list", "--db", str(db))}
    assert rows["mine-v1"]["template_hash"] == want and rows["mine-v1"]["registered"] == str(f)
    assert rows["lesson-v1"]["registered"] == "built-in"
    shown = invoke_json("prompts", "show", "mine-v1", "--db", str(db))
    assert shown["template_hash"] == want
    (tmp_path / "shown.toml").write_text(shown["toml"], encoding="utf-8")
    assert load_prompt(tmp_path / "shown.toml") == load_prompt(f)
    # The same name with another text: refused, one line, nothing changed.
    other = _file(tmp_path / "other.toml", user=USER.replace("Goal:", "Goal :"))
    line = _one_line(invoke("prompts", "add", str(other), "--db", str(db)))
    assert "other.toml" in line and "'mine-v1' is already registered" in line
    assert "new version name" in line
    line = _one_line(invoke("prompts", "add", str(_file(tmp_path / "l1.toml", name="lesson-v1")),
                            "--db", str(db)))
    assert "built in" in line
    with tl.Store(db, read_only=True) as s:
        assert s.sql("SELECT name, template_hash FROM prompts").fetchall() == [("mine-v1", want)]


@pytest.mark.parametrize(("user", "kind", "named"), [
    ("Goal: {goall}", "lesson", "{goall}"),
    ("{lessons}", "lesson", "{lessons}"),
    ("{goal}", "match", "{goal}"),
    ("{goal!r}", "lesson", "{goal!r}"),
    ("Goal: {goal", "lesson", "expected }"),
])
def test_a_bad_placeholder_is_one_line_naming_it(db: Path, tmp_path: Path, user: str,
                                                kind: str, named: str) -> None:
    f = _file(tmp_path / "bad.toml", name="bad-v1", user=user, kind=kind)
    line = _one_line(invoke("prompts", "add", str(f), "--db", str(db)))
    assert named in line.replace("'", "") and "bad.toml" in line and "user" in line
    with tl.Store(db, read_only=True) as s:
        assert s.sql("SELECT count(*) FROM prompts").fetchall() == [(0,)]


def test_bad_files_are_one_line(db: Path, tmp_path: Path) -> None:
    (tmp_path / "x.toml").write_text('name = "x"\nsystem = """unclosed', encoding="utf-8")
    assert "not TOML" in _one_line(invoke("prompts", "add", str(tmp_path / "x.toml"),
                                          "--db", str(db)))
    (tmp_path / "y.toml").write_text('name = "y"\nsystem = "s"\nuser = "u"\nextra = 1\n',
                                     encoding="utf-8")
    assert "extra" in _one_line(invoke("prompts", "add", str(tmp_path / "y.toml"),
                                       "--db", str(db)))
    assert "unknown prompt version 'nope'" in _one_line(
        invoke("prompts", "show", "nope", "--db", str(db)))


def test_schema_prompt_lists_the_placeholders() -> None:
    r = invoke("schema", "prompt")
    assert r.exit_code == 0, r.output
    schema = json.loads(r.output)
    assert schema["x-placeholders"] == PLACEHOLDERS
    assert set(schema["x-placeholders"]["lesson"]) == {
        "contract_id", "run_id", "goal", "verdict", "summary", "checks", "n_checks",
        "n_failed", "tags"}
    assert set(schema["x-placeholders"]["match"]) == {"lessons", "references"}
    assert set(schema["properties"]) == {"name", "kind", "description", "system", "user"}


# -- a registered prompt reaches the server ------------------------------------------------------

def test_a_registered_prompt_reaches_the_server_verbatim_and_its_hash_is_on_the_run(
        db: Path, tmp_path: Path) -> None:
    f = _file(tmp_path / "mine.toml")
    assert invoke("prompts", "add", str(f), "--db", str(db)).exit_code == 0
    with ScriptedServer() as srv:
        r = invoke("extract", "--db", str(db), "--extractor", "openai:tiny", "--base-url",
                   srv.base_url, "--prompt", "mine-v1", "--policy", "on", "--verdicts",
                   "seq <= 3", "--run-id", "live", "--quiet", "--json")
        assert r.exit_code == 0, r.output
        assert srv.count == 3
        bodies = [q.body for q in srv.requests]
        for seq, body in zip((1, 2, 3), bodies, strict=True):
            p = _payload(seq)
            checks = "\n".join(
                f"- check:{c['name']} [{'PASS' if c['passed'] else 'FAIL'}]: "
                f"{c.get('evidence') or '(no evidence recorded)'}" for c in p["checks"])
            n_failed = sum(not c["passed"] for c in p["checks"])
            user = (f"Goal: {p['goal']}\nVerdict: {p['verdict']} {{not a field}} costs $5\n"
                    f"Summary: {p['summary']}\n{checks or '- (no checks)'}\n"
                    f"failed={n_failed}x")
            assert body["messages"] == [{"role": "system", "content": SYSTEM},
                                        {"role": "user", "content": user}]
        ext_id = json.loads(r.stdout)["extractor_id"]
        assert ext_id == "tiny@mine-v1"
        # Its recordings replay, each checked against the request rebuilt from the
        # registered template: zero calls, the same candidates.
        r = invoke("extract", "--db", str(db), "--extractor", f"replay:{ext_id}", "--policy",
                   "on", "--verdicts", "seq <= 3", "--run-id", "again", "--quiet", "--json")
        assert r.exit_code == 0, r.output
        assert srv.count == 3 and json.loads(r.stdout)["n_errors"] == 0
    want = hashlib.sha256(f"[system]\n{SYSTEM}\n[user]\n{USER_DOLLAR}".encode()).hexdigest()
    with tl.Store(db, read_only=True) as s:
        runs = s.sql("SELECT run_id, prompt_version, prompt_hash FROM extraction_runs "
                     "WHERE run_id IN ('live', 'again') ORDER BY run_id").fetchall()
        assert runs == [("again", "mine-v1", want), ("live", "mine-v1", want)]
        assert s.sql("SELECT DISTINCT prompt_version FROM completions WHERE run_id = 'live'"
                     ).fetchall() == [("mine-v1",)]
        a, b = (s.sql("SELECT verdict_hash, lesson_index, text FROM candidates WHERE run_id "
                      "= ? ORDER BY ALL", [run]).fetchall() for run in ("live", "again"))
        assert a == b and len(a) == 3


def test_prompt_of_the_wrong_kind_or_unknown_is_refused(db: Path) -> None:
    line = _one_line(invoke("extract", "--db", str(db), "--extractor", "openai:tiny",
                            "--base-url", "http://127.0.0.1:9/v1", "--prompt", "judge-v1",
                            "--policy", "on", "--quiet"))
    assert "judge prompt" in line and "lesson prompt" in line
    line = _one_line(invoke("extract", "--db", str(db), "--extractor", "openai:tiny",
                            "--base-url", "http://127.0.0.1:9/v1", "--prompt", "nope-v9",
                            "--policy", "on", "--quiet"))
    assert "unknown prompt version 'nope-v9'" in line
    line = _one_line(invoke("judge", "RUN", "--db", str(db), "--judge", "simulated",
                            "--prompt", "lesson-v1"))
    assert "lesson prompt" in line and "judge prompt" in line


def test_python_register_and_extract_with_a_prompt(db: Path, tmp_path: Path) -> None:
    tpl = load_prompt(_file(tmp_path / "mine.toml"))
    with tl.Store(db) as s:
        assert register_prompt(s, tpl, source="mine.toml") is True
        with pytest.raises(BadInputError, match="already registered"):
            register_prompt(s, load_prompt(_file(tmp_path / "o.toml", system="other")))
        assert get_template("mine-v1", s) == tpl
        ext = Extractor.openai("http://127.0.0.1:9/v1", "m", template="mine-v1", store=s)
    assert ext.template == tpl and ext.config is not None
    assert ext.config.prompt_version == "mine-v1" and ext.extractor_id == "m@mine-v1"
    with pytest.raises(BadInputError, match="unknown prompt version 'mine-v1'"):
        get_template("mine-v1")  # not in this process: in that store


# -- recordings under any prompt version replay ------------------------------------------------

def _rewritten(src: Path, out: Path, *, extractor: str, prompt_version: str,
               n: int | None = None, text: str | None = None,
               request_hash: str | None = None) -> list[dict[str, Any]]:
    """The sample's sim-good-v1 recordings as if recorded elsewhere under another
    extractor id and prompt version (the first ``n`` verdicts)."""
    rows = [json.loads(line) for line in open(src, encoding="utf-8")]
    rows = [r for r in rows if r["extractor"] == "sim-good-v1"][:n]
    for r in rows:
        r.update(extractor=extractor, prompt_version=prompt_version, request_hash=request_hash)
        if text is not None:
            r["text"] = text
    out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return rows


def _root(text: str) -> Any:
    """The completion's JSON object with "lessons": the whole text, else the first
    object with that key that decodes at a '{' (fences, prose around it)."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    dec = json.JSONDecoder()
    for i, ch in enumerate(text):
        if ch == "{":
            try:
                obj, _ = dec.raw_decode(text, i)
            except ValueError:
                continue
            if isinstance(obj, dict) and "lessons" in obj:
                return obj
    return None


def _independent_parse(rows: list[dict[str, Any]]) -> tuple[set[tuple[Any, ...]], int]:
    """(the valid lessons of the completions, the number of completions with no
    lessons object), parsed here with json alone."""
    lessons, other = set(), 0
    for r in rows:
        root = _root(r["text"])
        if not isinstance(root, dict) or not isinstance(root.get("lessons"), list):
            other += 1
            continue
        for i, le in enumerate(root["lessons"]):
            ok = (isinstance(le, dict) and isinstance(le.get("text"), str)
                  and le["text"].strip() and type(le.get("salience")) in (int, float)
                  and 0 <= le["salience"] <= 1
                  and all(isinstance(e, str) for e in le.get("evidence") or []))
            if ok:
                lessons.add((r["verdict_hash"], i, le["text"].strip(), float(le["salience"])))
    return lessons, other


def test_recordings_under_an_unknown_prompt_version_replay_as_an_independent_parse(
        db: Path, tmp_path: Path) -> None:
    # The reproduction: 240 verdicts recorded elsewhere under "lesson-v2",
    # request_hash null; the replay gave 0 candidates and 240 errors.
    f = tmp_path / "theirs.jsonl"
    rows = _rewritten(SAMPLE / "completions.jsonl", f, extractor="their-model@lesson-v2",
                      prompt_version="lesson-v2", n=240)
    assert invoke("ingest", "completions", str(f), "--db", str(db)).exit_code == 0
    r = invoke("extract", "--db", str(db), "--extractor", "replay:their-model@lesson-v2",
               "--policy", "on", "--verdicts", "seq <= 240", "--run-id", "theirs", "--quiet",
               "--json")
    assert r.exit_code in (0, 1), r.output  # 1: parse errors above --max-error-share
    out = json.loads(r.stdout)
    expected, not_plain = _independent_parse(rows)
    with tl.Store(db, read_only=True) as s:
        got = set(s.sql("SELECT verdict_hash, lesson_index, text, salience FROM candidates "
                        "WHERE run_id = 'theirs' AND valid").fetchall())
        errors = s.sql("SELECT stage, count(*) FROM verdict_errors WHERE run_id = 'theirs' "
                       "GROUP BY stage").fetchall()
        run = s.sql("SELECT prompt_version, prompt_hash, n_verdicts FROM extraction_runs "
                    "WHERE run_id = 'theirs'").fetchall()
    assert expected and got == expected
    assert out["n_candidates"] >= len(expected) > 0
    assert dict(errors).get("provider", 0) == 0  # every recording answered
    assert dict(errors).get("parse", 0) == not_plain  # the sample's bad JSON, no more
    assert run == [("lesson-v2", None, 240)]  # its own version; no template here to hash


def test_a_hash_under_an_unknown_version_replays_unchecked_with_a_warning(
        db: Path, tmp_path: Path) -> None:
    f = tmp_path / "hashed.jsonl"
    _rewritten(SAMPLE / "completions.jsonl", f, extractor="x@elsewhere-v3",
               prompt_version="elsewhere-v3", n=20, request_hash="ab" * 32)
    r = invoke("extract", "--db", str(db), "--extractor", f"replay:{f}", "--policy", "on",
               "--verdicts", "seq <= 20", "--run-id", "hashed", "--quiet", "--json")
    assert r.exit_code in (0, 1), r.output
    warn = [ln for ln in r.stderr.splitlines() if ln.startswith("warning: ")]
    assert len(warn) == 1 and "'elsewhere-v3' is not registered here" in warn[0]
    assert "20 recording(s)" in warn[0]
    with tl.Store(db, read_only=True) as s:
        assert s.sql("SELECT count(*) FROM verdict_errors WHERE run_id = 'hashed' AND "
                     "stage = 'provider'").fetchall() == [(0,)]
    # From Python: the same warning class, and the count of unchecked answers.
    import pandas as pd

    df = pd.read_json(f, lines=True, dtype=False)
    with pytest.warns(UnregisteredPromptWarning):
        ext = Extractor.replay(df, "x@elsewhere-v3")
    assert ext.template.version == "elsewhere-v3" and not ext.template.registered


def test_a_hash_under_a_registered_version_is_checked(db: Path, tmp_path: Path) -> None:
    # Recorded elsewhere under mine-v1 with a request_hash that does not match the
    # request rebuilt from the registered mine-v1: refused per verdict, not replayed.
    assert invoke("prompts", "add", str(_file(tmp_path / "mine.toml")), "--db",
                  str(db)).exit_code == 0
    f = tmp_path / "wrong.jsonl"
    _rewritten(SAMPLE / "completions.jsonl", f, extractor="y@mine-v1",
               prompt_version="mine-v1", n=5, request_hash="cd" * 32)
    r = invoke("extract", "--db", str(db), "--extractor", f"replay:{f}", "--policy", "on",
               "--verdicts", "seq <= 5", "--run-id", "wrong", "--quiet", "--json")
    assert r.exit_code == 1 and "warning" not in r.stderr
    with tl.Store(db, read_only=True) as s:
        msgs = [m for (m,) in s.sql("SELECT message FROM verdict_errors WHERE run_id = "
                                    "'wrong' AND stage = 'provider'").fetchall()]
    assert len(msgs) == 5 and all("answers a different request" in m for m in msgs)


# -- a run with no candidates ------------------------------------------------------------------

@pytest.mark.parametrize("command", [
    ("sweep",), ("sweep", "--truth", "references"), ("compare", "empty"),
    ("report", "--out", "{tmp}/r.html")])
def test_a_run_with_no_candidates_is_one_line_not_a_traceback(
        db: Path, tmp_path: Path, command: tuple[str, ...]) -> None:
    f = tmp_path / "empty.jsonl"
    _rewritten(SAMPLE / "completions.jsonl", f, extractor="z@lesson-v2",
               prompt_version="lesson-v2", n=30, text="not json at all")
    r = invoke("extract", "--db", str(db), "--extractor", f"replay:{f}", "--policy", "on",
               "--verdicts", "seq <= 30", "--run-id", "empty", "--quiet", "--json")
    assert json.loads(r.stdout)["n_candidates"] == 0
    r = invoke(command[0], "empty", *(a.format(tmp=tmp_path) for a in command[1:]),
               "--db", str(db))
    assert r.exit_code in (1, 2), r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.output
    assert "no candidates" in lines[0] and "Traceback" not in r.output


def test_registered_judge_and_match_prompts_reach_the_server(db: Path, tmp_path: Path) -> None:
    judge_file = _file(tmp_path / "j.toml", name="myjudge-v1", kind="judge",
                       system="Label each lesson.", user="Goal: {goal}\nLessons:\n{lessons}")
    match_file = _file(tmp_path / "m.toml", name="mymatch-v1", kind="match",
                       system="Match them.", user="L:\n{lessons}\nR:\n{references}\nend")
    for f in (judge_file, match_file):
        assert invoke("prompts", "add", str(f), "--db", str(db)).exit_code == 0
    r = invoke("extract", "--db", str(db), "--extractor", "heuristic", "--policy", "on",
               "--verdicts", "seq <= 40", "--run-id", "h", "--quiet", "--dry-run")
    assert r.exit_code == 0, r.output
    with ScriptedServer() as srv:
        # The server answers with lessons, not labels: every answer is unusable (exit 1);
        # what matters here is what it was asked.
        r = invoke("judge", "h", "--db", str(db), "--extractor", "openai:jm", "--base-url",
                   srv.base_url, "--prompt", "myjudge-v1")
        assert r.exit_code in (0, 1) and "Traceback" not in r.output, r.output
        asked = srv.requests[0].body["messages"]
        assert asked[0] == {"role": "system", "content": "Label each lesson."}
        assert asked[1]["content"].startswith("Goal: ")
        assert "\nLessons:\n[0] " in asked[1]["content"]
        n = srv.count
        r = invoke("match", "h", "--db", str(db), "--extractor", "openai:mm", "--base-url",
                   srv.base_url, "--prompt", "mymatch-v1")
        assert r.exit_code in (0, 1) and "Traceback" not in r.output, r.output
        asked = srv.requests[n].body["messages"]
        assert asked[0] == {"role": "system", "content": "Match them."}
        body = asked[1]["content"]
        assert body.startswith("L:\n[L0] ") and "\nR:\n[R1] " in body and body.endswith("\nend")
