"""Issue 27 item 4: `truss-lab grid FILE.toml` makes a grid of normal, named, tagged runs
through the extraction path of `extract`, and running it again makes no new run: finished
runs are skipped, an unfinished one (its endpoint went down) is resumed where it stopped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import truss_lab as tl
from tests.builders.cli import invoke, invoke_json
from tests.builders.http_server import Reply, ScriptedServer
from tests.builders.stores import copy_db
from truss_lab.extract._grid import load_grid
from truss_lab.extract._prompts import get_template
from truss_lab.store._runs import run_content_hashes

VERDICTS = "seq <= 60"


@pytest.fixture
def db(sample_full: Path, tmp_path: Path) -> Path:
    return copy_db(sample_full, tmp_path / "lab.duckdb")


def write(tmp_path: Path, text: str, name: str = "grid.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def n_runs(db: Path) -> int:
    with tl.Store(db, read_only=True) as s:
        return int(s.sql("SELECT count(*) FROM extraction_runs").fetchall()[0][0])


def test_a_replayed_grid_then_again_makes_no_new_run(db: Path, tmp_path: Path) -> None:
    grid = write(tmp_path, f'''
name = "g"
verdicts = "{VERDICTS}"
tags = ["study"]
[[axes]]
extractor = ["replay:sim-good-v1", "heuristic"]
''')
    first = invoke_json("grid", grid, "--db", db, "--quiet")
    assert [r["run_id"] for r in first] == ["g-replay-sim-good-v1", "g-heuristic"]
    assert [r["action"] for r in first] == ["started", "started"]
    assert all(r["status"] == "finished" and r["n_verdicts"] == 60 for r in first)
    assert all(r["tags"] == ["grid:g", "study"] for r in first)
    assert first[0]["name"] == "extractor=replay:sim-good-v1"
    with tl.Store(db, read_only=True) as s:
        hashes = {r["run_id"]: run_content_hashes(s, r["run_id"]) for r in first}
    # Each cell is a normal run: `extract` with the same settings gives the same rows.
    r = invoke("extract", "--db", db, "--extractor", "replay:sim-good-v1", "--policy",
               "model-scored", "--verdicts", VERDICTS, "--dry-run", "--run-id", "by-hand",
               "--quiet")
    assert r.exit_code == 0, r.output
    with tl.Store(db, read_only=True) as s:
        by_hand = run_content_hashes(s, "by-hand")
    assert by_hand["candidates"] == hashes["g-replay-sim-good-v1"]["candidates"]
    before = n_runs(db)
    second = invoke("grid", grid, "--db", db, "--quiet")
    assert second.exit_code == 0, second.output
    assert "grid g: 2 runs (0 started, 0 resumed, 2 skipped)" in second.output
    assert n_runs(db) == before
    with tl.Store(db, read_only=True) as s:
        assert {rid: run_content_hashes(s, rid) for rid in hashes} == hashes


def test_an_unfinished_live_run_is_resumed_and_nothing_is_called_twice(
        db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-grid")
    with ScriptedServer() as srv:
        # 20 answers, then the endpoint fails: the breaker stops the run after 3 in a row.
        srv.add(*[Reply() for _ in range(20)], *[Reply(status=503) for _ in range(3)])
        grid = write(tmp_path, f'''
name = "live"
verdicts = "{VERDICTS}"
policy = "on"
chunk_size = 10
base_url = "{srv.base_url}"
max_retries = 0
max_consecutive_failures = 3
[[axes]]
extractor = "openai"
model = "tiny"
temperature = [0.0, 0.5]
''')
        cells = load_grid(grid).cells
        assert [c.run_id for c in cells] == ["live-openai-tiny-temperature=0.0",
                                            "live-openai-tiny-temperature=0.5"]
        r = invoke("grid", grid, "--db", db, "--quiet")
        assert r.exit_code == 2 and r.output.startswith("error: ")
        assert len(r.output.strip().splitlines()) == 1, r.output
        assert srv.count == 23
        with tl.Store(db, read_only=True) as s:
            rows = s.sql("SELECT run_id, status, n_verdicts FROM extraction_runs "
                         "ORDER BY run_id").fetchall()
        assert rows == [("live-openai-tiny-temperature=0.0", "failed", 20)]
        out = invoke_json("grid", grid, "--db", db, "--quiet")
        assert [r["action"] for r in out] == ["resumed", "started"]
        assert [(r["status"], r["n_verdicts"], r["n_errors"]) for r in out] == \
            [("finished", 60, 0), ("finished", 60, 0)]
        # The resumed run asked only for the 40 verdicts it had not written; the new one 60.
        assert srv.count == 23 + 40 + 60
        bodies = [q.body for q in srv.requests[23:]]
        assert [b["temperature"] for b in bodies] == [0.0] * 40 + [0.5] * 60
        again = invoke_json("grid", grid, "--db", db, "--quiet")
        assert [r["action"] for r in again] == ["skipped", "skipped"]
        assert srv.count == 123 and n_runs(db) == 2
        # A grid's run is a normal run: `extract --resume` knows how to rebuild it.
        r = invoke("extract", "--db", db, "--resume", "live-openai-tiny-temperature=0.5",
                   "--quiet")
        assert r.exit_code == 0, r.output
        assert srv.count == 123


def test_the_prompt_axis_sends_each_registered_prompt_and_its_hash_is_on_the_run(
        db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-grid")
    mine = write(tmp_path, """name = "terse-v1"
kind = "lesson"
description = "a terse lesson prompt"
system = '''Answer {"lessons": [...]} only.'''
user = '''Goal: {goal}
{checks}'''
""", "terse.toml")
    assert invoke("prompts", "add", mine, "--db", db).exit_code == 0
    with ScriptedServer() as srv:
        grid = write(tmp_path, f'''name = "p"
verdicts = "seq <= 3"
policy = "on"
base_url = "{srv.base_url}"
[[axes]]
extractor = "openai"
model = "tiny"
prompt = ["lesson-v1", "terse-v1"]
''')
        out = invoke_json("grid", grid, "--db", db, "--quiet")
        systems = [q.body["messages"][0]["content"] for q in srv.requests]
    assert [r["run_id"] for r in out] == ["p-openai-tiny-prompt=lesson-v1",
                                         "p-openai-tiny-prompt=terse-v1"]
    assert [r["extractor_id"] for r in out] == ["tiny@lesson-v1", "tiny@terse-v1"]
    assert systems[3:] == ['Answer {"lessons": [...]} only.'] * 3
    assert systems[:3] != systems[3:] and len(systems) == 6
    with tl.Store(db, read_only=True) as s:
        runs = dict(s.sql("SELECT run_id, prompt_hash FROM extraction_runs").fetchall())
        hashes = dict(s.sql("SELECT name, template_hash FROM prompts").fetchall())
    assert runs["p-openai-tiny-prompt=terse-v1"] == hashes["terse-v1"]
    assert runs["p-openai-tiny-prompt=lesson-v1"] == get_template("lesson-v1").template_hash


def test_a_changed_grid_under_the_same_name_is_refused_before_any_run(
        db: Path, tmp_path: Path) -> None:
    grid = write(tmp_path, f'name = "g"\nverdicts = "{VERDICTS}"\n'
                 '[[axes]]\nextractor = "heuristic"\n')
    assert invoke("grid", grid, "--db", db, "--quiet").exit_code == 0
    write(tmp_path, 'name = "g"\nverdicts = "seq <= 30"\n'
          '[[axes]]\nextractor = ["replay:sim-good-v1", "heuristic"]\n')
    r = invoke("grid", grid, "--db", db, "--quiet")
    assert r.exit_code == 2 and "run g-heuristic exists with verdicts='seq <= 60'" in r.output
    assert n_runs(db) == 1  # the new cell was not started either


@pytest.mark.parametrize(("text", "where", "what"), [
    ('name = "g"\n[[axes]\nextractor = "heuristic"\n', "line 2", "not TOML"),
    ('name = "g"\ncolour = "red"\n[[axes]]\nextractor = "heuristic"\n', "field 'colour'",
     "unknown key"),
    ('[[axes]]\nextractor = "heuristic"\n', "field 'name'", "needs a name"),
    ('name = "g"\n', "field 'axes'", "[[axes]]"),
    ('name = "g"\npolicy = "off"\n[[axes]]\nextractor = "heuristic"\n', "field 'policy'",
     "on, model-scored"),
    ('name = "g"\nmin_salience = 1.5\n[[axes]]\nextractor = "heuristic"\n',
     "field 'min_salience'", "[0, 1]"),
    ('name = "g"\nchunk_size = "big"\n[[axes]]\nextractor = "heuristic"\n',
     "field 'chunk_size'", "expected an integer"),
    ('name = "g"\n[[axes]]\nextractor = "openai"\nmodel = "m"\ntemperature = [0.0, -1]\n',
     "field 'axes[0].temperature'", "greater than or equal to 0"),
    ('name = "g"\n[[axes]]\nextractor = "replay:x"\nmodel = "m"\n', "field 'axes[0].model'",
     'extractor = "openai"'),
    ('name = "g"\n[[axes]]\nextractor = "heuristic"\nprompt = "lesson-v1"\n',
     "field 'axes[0].prompt'", "recorded with"),
    ('name = "g"\n[[axes]]\nextractor = "openai"\n', "field 'axes[0].model'", "model axis"),
    ('name = "g"\n[[axes]]\nextractor = "heuristic"\ncolour = 1\n', "field 'axes[0].colour'",
     "unknown axis"),
    ('name = "g"\n[[axes]]\nextractor = []\n', "field 'axes[0].extractor'", "empty list"),
    ('name = "g"\n[[axes]]\nextractor = "heuristic"\n[[axes]]\nextractor = "heuristic"\n',
     "field 'axes[1]'", "same run as axes[0]"),
])
def test_a_bad_grid_file_is_one_line_naming_file_and_line_or_key(
        db: Path, tmp_path: Path, text: str, where: str, what: str) -> None:
    grid = write(tmp_path, text)
    r = invoke("grid", grid, "--db", db)
    assert r.exit_code == 2, r.output
    line = r.output.strip()
    assert len(line.splitlines()) == 1 and line.startswith(f"error: {grid}, {where}"), line
    assert what in line
    assert n_runs(db) == 0


def test_a_cell_whose_extractor_cannot_be_built_stops_the_grid_before_any_run(
        db: Path, tmp_path: Path) -> None:
    grid = write(tmp_path, 'name = "g"\n[[axes]]\n'
                 'extractor = ["heuristic", "replay:no-such-recordings"]\n')
    r = invoke("grid", grid, "--db", db)
    assert r.exit_code == 2 and "run g-replay-no-such-recordings: no recorded" in r.output
    assert n_runs(db) == 0


def test_run_grid_from_python(db: Path, tmp_path: Path) -> None:
    grid = write(tmp_path, f'name = "py"\nverdicts = "{VERDICTS}"\n'
                 '[[axes]]\nextractor = "heuristic"\n')
    with tl.Store(db) as s:
        df = tl.run_grid(s, grid, progress=False)
        assert df[["run_id", "action", "status"]].values.tolist() == \
            [["py-heuristic", "started", "finished"]]
        assert tl.run_grid(s, load_grid(grid), progress=False)["action"].tolist() == \
            ["skipped"]
        assert json.loads(s.sql("SELECT config FROM extraction_runs").fetchall()[0][0]
                          )["grid"] == "py"


def test_a_grid_of_a_million_cells_is_refused_with_its_count(tmp_path: Path) -> None:
    # Issue 39 item 8: 1,000,000 cells ran for over 90 s with no output; now the count is
    # checked before one cell is built, and a grid says its size before it starts.
    from truss_lab.extract._grid import MAX_GRID_CELLS

    p = tmp_path / "huge.toml"
    seeds = ", ".join(str(i) for i in range(100))
    tens = ", ".join(str(i / 10) for i in range(10))
    p.write_text(f'name = "huge"\n[[axes]]\nextractor = "heuristic"\ntemperature = [{tens}]\n'
                 f"seed = [{seeds}]\ntop_p = [{tens}]\n"
                 f"max_tokens = [{', '.join(str(100 * i + 100) for i in range(10))}]\n"
                 f"samples = [{', '.join(str(i + 1) for i in range(10))}]\n", encoding="utf-8")
    r = invoke("grid", p, "--db", tmp_path / "lab.duckdb")
    assert r.exit_code == 2 and r.output.startswith("error: ") and len(r.output.splitlines()) == 1
    assert "makes 1,000,000 cells" in r.output and f"{MAX_GRID_CELLS:,}" in r.output
    assert not (tmp_path / "lab.duckdb").exists()


def test_a_grid_says_how_many_cells_before_it_starts(db: Path, tmp_path: Path) -> None:
    p = tmp_path / "g.toml"
    p.write_text('name = "two"\nverdicts = "seq <= 5"\n[[axes]]\n'
                 'extractor = ["heuristic", "replay:sim-good-v1"]\n', encoding="utf-8")
    r = invoke("grid", p, "--db", db)
    assert "Traceback" not in r.output and "grid two: 2 runs (2 started" in r.stdout, r.output
    assert r.stderr.splitlines()[0] == "grid two: 2 cells"
