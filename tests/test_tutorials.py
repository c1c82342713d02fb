"""The tutorials under docs/tutorials run as written, from an empty folder, top to bottom: each
``python`` block is executed (one namespace per page, as a notebook would), each ``sh``
block's ``truss-lab`` lines go through the CLI and must exit 0."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from tests.builders.cli import invoke

TUTORIALS = Path(__file__).resolve().parent.parent / "docs" / "tutorials"


def _included(page: Path, m: re.Match) -> str:
    """The text a MyST ``{include}`` block stands for (its start-after/end-before part)."""
    target = (page.parent / m.group(1).strip()).resolve()
    text = target.read_text(encoding="utf-8")
    opts = dict(re.findall(r"^:([a-z-]+): (.*)$", m.group(2), flags=re.M))
    if "start-after" in opts:
        text = text.split(opts["start-after"], 1)[1]
    if "end-before" in opts:
        text = text.split(opts["end-before"], 1)[0]
    return text


def steps(page: Path) -> list[tuple[str, str]]:
    """``(language, code)`` of every fenced ``python`` or ``sh`` block, in page order
    (a block an ``{include}`` brings in from another file too)."""
    text = page.read_text(encoding="utf-8")
    text = re.sub(r"^```\{include\} (.*?)\n(.*?)^```\n",
                  lambda m: _included(page, m), text, flags=re.S | re.M)
    return re.findall(r"^```(python|sh)\n(.*?)^```", text, flags=re.S | re.M)


def run_page(page: Path) -> list[tuple[str, str]]:
    """Run ``page``'s blocks in the current folder; ``(command, output)`` of each CLI line."""
    namespace: dict = {"__name__": "__tutorial__"}
    outputs = []
    for lang, code in steps(page):
        if lang == "python":
            exec(compile(code, str(page), "exec"), namespace)
            continue
        for line in code.replace("\\\n", " ").splitlines():
            argv = shlex.split(line, comments=True)
            if not argv:
                continue
            assert argv[0] == "truss-lab", line
            r = invoke(*argv[1:])
            assert r.exit_code == 0, (line, r.output)
            outputs.append((line, r.output))
    return outputs


def test_every_tutorial_has_blocks_to_run() -> None:
    # index.md is the tutorials' table of contents and notebooks.md lists the notebooks
    # the site executes (nbmake runs them in make test): neither has blocks of its own.
    pages = sorted(p for p in TUTORIALS.glob("*.md") if p.name not in ("index.md",
                                                                       "notebooks.md"))
    assert pages and all(steps(p) for p in pages)


def test_own_data_runs_and_says_what_it_should(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    out = dict(run_page(TUTORIALS / "own-data.md"))

    def said(prefix: str) -> str:
        (text,) = [v for k, v in out.items() if k.startswith(prefix)]
        return text

    assert "5 verdicts signed by ann (seq 1..5)" in said("truss-lab journal sign")
    assert "verdicts signed by ann (5)" in said("truss-lab verify")
    assert "5 added, 0 already present, 0 bad lines" in said("truss-lab ingest completions "
                                                             "completions.csv")
    assert "5 requests for gpt-4o-mini@lesson-v1" in said("truss-lab batch prepare")
    assert "5 added, 0 already present, 0 bad lines" in said("truss-lab ingest completions "
                                                             "output.jsonl")
    assert "tokens in 2000, out 150" in said("truss-lab usage batch")
    assert "10 added" in said("truss-lab ingest labels")
    # five verdicts: two held out, and the sweep says what that is worth (on stderr)
    assert said("truss-lab sweep").count("warning: the intervals rest on 5 labelled and 2 "
                                         "held-out verdicts, fewer than 30") == 1
    runs = said("truss-lab runs")
    assert runs.count(" ann") == 2, runs
    assert "signed_by</td><td>ann</td>" in (tmp_path / "report.html").read_text(
        encoding="utf-8")
    with open(tmp_path / "batch.jsonl") as fh:
        assert len([json.loads(line) for line in fh]) == 5
