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


def steps(page: Path) -> list[tuple[str, str]]:
    """``(language, code)`` of every fenced ``python`` or ``sh`` block, in page order."""
    text = page.read_text(encoding="utf-8")
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
    pages = sorted(TUTORIALS.glob("*.md"))
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
    runs = said("truss-lab runs")
    assert runs.count(" ann") == 2, runs
    assert "signed_by</td><td>ann</td>" in (tmp_path / "report.html").read_text(
        encoding="utf-8")
    with open(tmp_path / "batch.jsonl") as fh:
        assert len([json.loads(line) for line in fh]) == 5
