"""Every runnable snippet of README.md and of the site's tutorials and how-to guides runs
as written, from an empty folder.

The Python quickstart, the CLI quickstart (each line through the CLI, in a
temporary working directory), the SQL examples (on the database the CLI made)
and the local-endpoint snippets (against the suite's HTTP server instead of a
real vLLM/Ollama). Only `make` and `vllm serve` lines are not run here. A block
is runnable when its language is python, sh, shell, sql or toml; ``text`` and ``json``
blocks are outputs, synopses and data. ``test_every_runnable_block_is_run`` keeps
the list of the blocks these tests run complete.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.builders.cli import invoke
from tests.builders.http_server import ScriptedServer
from tests.builders.stores import copy_db

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
RUNNABLE = ("python", "sh", "shell", "sql", "toml")

#: The (page, section, language) whose blocks the tests below run; ``None``: the page.
RUN_HERE = {
    ("README.md", "Python quickstart", "python"),
    ("README.md", "CLI quickstart", "sh"),
    ("docs/reference/database.md", None, "sql"),
    ("docs/how-to/live-or-batch.md", "Providers and extractors", "sh"),
    ("docs/how-to/live-or-batch.md", "Providers and extractors", "python"),
    ("docs/how-to/live-or-batch.md", "Live extraction: configuration, replay, usage", "sh"),
    ("docs/how-to/live-or-batch.md", "Live extraction: configuration, replay, usage", "toml"),
    ("docs/how-to/live-or-batch.md", "Live extraction: configuration, replay, usage",
     "python"),
    ("docs/how-to/grids-frontier.md", None, "toml"),
    ("docs/how-to/grids-frontier.md", None, "sh"),
    ("docs/how-to/prompts.md", None, "toml"),
    ("docs/how-to/prompts.md", None, "sh"),
    ("docs/how-to/prompts.md", None, "python"),
    ("docs/how-to/report.md", None, "sh"),
    ("docs/how-to/label-budget.md", None, "sh"),
    ("docs/how-to/slices.md", None, "sh"),
}

#: Blocks no test here runs, and why.
NOT_RUN = {
    ("README.md", "Two commands", "sh"): "make demo and make test: CI runs both (.ci/run)",
    ("docs/tutorials/own-data.md", None, "python"): "tests/test_tutorials.py runs the page",
    ("docs/tutorials/own-data.md", None, "sh"): "tests/test_tutorials.py runs the page",
    ("docs/how-to/live-or-batch.md", "Live extraction: configuration, replay, usage",
     "shell"): "the batch round trip: own-data.md runs it (tests/test_tutorials.py)",
}


def body(page: str, section: str | None) -> str:
    """Page ``page`` (relative to the repository), or its ``## section``."""
    text = (ROOT / page).read_text()
    if section is None:
        return text
    return text.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]


def blocks(lang: str, section: str | None, page: str = "README.md") -> list[str]:
    """The ``lang`` code blocks of ``page``'s section ``## section`` (None: the page)."""
    assert (page, section, lang) in RUN_HERE, (page, section, lang)
    return re.findall(rf"```{lang}\n(.*?)```", body(page, section), flags=re.S)


def shell_lines(block: str) -> list[list[str]]:
    """The block's truss-lab commands as argv lists (continuations joined, comments gone)."""
    text = block.replace("\\\n", " ")
    return [argv for line in text.splitlines()
            if (argv := shlex.split(line, comments=True)) and argv[0] == "truss-lab"]


def run_cli(argv: list[str]) -> str:
    r = invoke(*argv[1:])
    assert r.exit_code == 0, (" ".join(argv), r.output)
    return r.output


def test_python_quickstart_runs_from_any_directory_twice(tmp_path, monkeypatch) -> None:
    # Twice in one folder, as a researcher re-runs a notebook cell: the second run signs
    # with the same key (kept in researcher-1.key), not a new one under the same id.
    monkeypatch.chdir(tmp_path)
    (code,) = blocks("python", "Python quickstart")
    keys = []
    for _ in range(2):
        namespace: dict = {}
        exec(compile(code, "README.md", "exec"), namespace)
        assert namespace["record"].policy.target == "salience"
        assert namespace["lessons"]["trust"].eq("unverified").all()
        assert str(namespace["store"].path) == "lab.duckdb"
        keys.append(namespace["key"].public_key)
        namespace["store"].close()
    assert keys[0] == keys[1] and (tmp_path / "researcher-1.key").exists()


# Slow: the whole quickstart (35 commands, two reports, bootstraps of 200) is the suite's
# longest test (about 2 minutes of CPU); make test-slow runs it and CI runs make test-slow.
@pytest.mark.slow
def test_cli_quickstart_and_sql_run_from_any_directory(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (block,) = blocks("sh", "CLI quickstart")
    commands = shell_lines(block)
    assert len(commands) >= 20
    for argv in commands:
        run_cli(argv)
    (report,) = blocks("sh", None, "docs/how-to/report.md")
    for argv in shell_lines(report):
        run_cli(argv)
    (budget,) = blocks("sh", None, "docs/how-to/label-budget.md")
    said = [run_cli(argv) for argv in shell_lines(budget)]
    assert all("predicted width at these labelled verdicts" in out for out in said)
    assert "correction='ppi'" in said[1] and "saved" in said[1]
    assert "versus 'over'" in said[2]
    (slices,) = blocks("sh", None, "docs/how-to/slices.md")
    outputs = [run_cli(argv) for argv in shell_lines(slices)]
    # the page's printed table is what its first command prints
    shown = re.findall(r"```text\n(.*?)```", body("docs/how-to/slices.md", None), re.S)[0]
    assert outputs[0].strip() == shown.strip()
    assert "* tag = deployment" in outputs[2]
    assert (tmp_path / "slices.csv").stat().st_size > 0
    assert (tmp_path / "slices.png").stat().st_size > 0
    assert (tmp_path / "report.html").stat().st_size > 0
    assert (tmp_path / "sweep.png").stat().st_size > 0
    assert (tmp_path / "export" / "manifest.json").exists()
    assert (tmp_path / "sim" / "journal.jsonl").exists()
    import truss_lab as tl

    with tl.Store("lab.duckdb", read_only=True) as store:
        assert store.sql("SELECT run_id FROM extraction_runs ORDER BY 1").fetchall() == [
            ("good",), ("over",)]  # heur was deleted
        for sql in blocks("sql", None, "docs/reference/database.md"):
            for stmt in filter(str.strip, sql.split(";")):
                assert store.sql(stmt).fetchall(), stmt


LIVE = "docs/how-to/live-or-batch.md"


@pytest.mark.parametrize("lang", ["sh", "python"])
def test_local_endpoint_snippets_run(lang, sample_store_path, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (block,) = blocks(lang, "Providers and extractors", LIVE)
    with ScriptedServer() as srv:
        if lang == "sh":
            (argv,) = shell_lines(block)
            argv = [a.replace("http://127.0.0.1:8000/v1", srv.base_url) for a in argv]
            argv += ["--db", str(sample_store_path), "--verdicts", "seq <= 20", "--quiet"]
            run_cli(argv)
        else:
            import truss_lab as tl

            code = block.replace("http://127.0.0.1:11434/v1", srv.base_url)
            with tl.Store(sample_store_path) as store:
                namespace = {"tl": tl, "store": store,
                             "config": tl.MemoryConfig(lesson_extraction="on")}
                exec(compile(code.replace("config, ", "config, verdicts='seq <= 20', "),
                             "README.md", "exec"), namespace)
                assert namespace["run"].status == "finished"
        assert srv.count == 20


@pytest.fixture
def sample_store_path(sample_full: Path, tmp_path: Path) -> Path:
    return copy_db(sample_full, tmp_path / "sample.duckdb")


def test_live_extraction_section_runs(sample_store_path, tmp_path, monkeypatch) -> None:
    # Issue #16: a live run, its replay from the CLI by extractor id alone, and usage.
    monkeypatch.chdir(tmp_path)
    section = "Live extraction: configuration, replay, usage"
    (sh,) = blocks("sh", section, LIVE)
    (toml,) = blocks("toml", section, LIVE)
    (tmp_path / "prices.toml").write_text(toml)
    with ScriptedServer() as srv:
        for argv in shell_lines(sh):
            argv = [a.replace("http://127.0.0.1:8000/v1", srv.base_url)
                    .replace("lab.duckdb", str(sample_store_path)) for a in argv]
            if argv[1] == "extract":
                argv += ["--verdicts", "seq <= 20", "--quiet"]
            out = run_cli(argv)
            if argv[1:3] == ["usage", "live"]:
                assert "(20 live)" in out and "cost 0.0" in out
            elif argv[1] == "usage":  # the rerun: its own 0 calls, and live's recorded
                assert "(0 live)" in out and "recorded: 20 calls replayed from run live" in out
        assert srv.count == 20  # the replay called nobody
    import truss_lab as tl
    from truss_lab.store._runs import run_content_hashes

    with tl.Store(sample_store_path) as store:
        assert run_content_hashes(store, "live") == run_content_hashes(store, "replayed")
        (py,) = blocks("python", section, LIVE)
        namespace = {"tl": tl, "store": store}
        exec(compile(py, "README.md", "exec"), namespace)
        assert namespace["live"].config == namespace["cfg"]


def test_grid_and_frontier_section_runs(sample_store_path, tmp_path, monkeypatch) -> None:
    # Issue 27 item 4: the grid file format parses as documented, and the sample's grid
    # and frontier run as written; the frontier table printed in the README is what
    # `frontier` prints.
    from truss_lab.extract._grid import load_grid

    monkeypatch.chdir(tmp_path)
    page = "docs/how-to/grids-frontier.md"
    example, *files = blocks("toml", None, page)
    (tmp_path / "example.toml").write_text(example)
    cells = load_grid(tmp_path / "example.toml").cells
    assert len(cells) == 2 + 2 * 2 and cells[-1].run_id == \
        "models-openai-llama3.1-8b-prompt=lesson-v1-temperature=0.7-samples=3"
    for text in files:
        (tmp_path / text.splitlines()[0].removeprefix("# ")).write_text(text)
    (sh,) = blocks("sh", None, page)
    outs = [run_cli([a.replace("lab.duckdb", str(sample_store_path)) for a in argv])
            for argv in shell_lines(sh)]
    assert "(4 started, 0 resumed, 0 skipped)" in outs[0]
    assert "(0 started, 0 resumed, 4 skipped)" in outs[1]
    assert (tmp_path / "frontier.png").stat().st_size > 0
    printed = re.findall(r"```text\n(.*?)```", body(page, None), flags=re.S)
    for block in printed:  # the frontier's table as the README shows it
        for line in block.strip().splitlines()[1:]:
            assert line in outs[2], line


def test_prompts_section_runs(sample_store_path, tmp_path, monkeypatch) -> None:
    # Issue #27 item 1: the example file, registered, listed, shown, reaching a server.
    monkeypatch.chdir(tmp_path)
    page = "docs/how-to/prompts.md"
    (toml,) = blocks("toml", None, page)
    (tmp_path / "lesson-short-v1.toml").write_text(toml)
    (sh,) = blocks("sh", None, page)
    with ScriptedServer() as srv:
        outs = [run_cli([a.replace("http://127.0.0.1:8000/v1", srv.base_url)
                         .replace("lab.duckdb", str(sample_store_path)) for a in argv])
                for argv in shell_lines(sh)]
        assert srv.count == 20
        first = srv.requests[0].body["messages"]
    assert "registered (lesson prompt, sha256" in outs[0]
    assert "lesson-short-v1" in outs[1] and outs[2].startswith("# sha256 ")
    assert "tiny-model@lesson-short-v1" in outs[4]
    assert first[0]["content"].startswith("You extract durable lessons")
    assert first[1]["content"].startswith("Goal: ") and "{goal}" not in first[1]["content"]
    import truss_lab as tl

    with tl.Store(sample_store_path) as store:
        (py,) = blocks("python", None, page)
        exec(compile(py, "README.md", "exec"), {"tl": tl, "store": store})


def test_every_runnable_block_is_run() -> None:
    # Every python/sh/sql/toml block of the README, the tutorials and the how-to guides
    # lies in a (page, section, language) the tests above run; a new block elsewhere
    # fails here until a test runs it.
    pages = ["README.md", *(str(p.relative_to(ROOT)) for d in ("tutorials", "how-to")
                            for p in sorted((ROOT / "docs" / d).glob("*.md")))]
    missed = []
    for page in pages:
        text = body(page, None)
        sections = [None, *re.findall(r"^## (.*)$", text, flags=re.M)]
        for lang in RUNNABLE:
            total = len(re.findall(rf"```{lang}\n", text))
            covered = sum(len(re.findall(rf"```{lang}\n", body(page, s)))
                          for s in sections
                          if (page, s, lang) in RUN_HERE or (page, s, lang) in NOT_RUN)
            if covered < total:
                missed.append((page, lang, total - covered))
    assert not missed, missed
