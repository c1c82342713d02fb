"""Smoke test of scripts/reliability.py: a few of its checks at tiny sizes, and its table.

The whole ``--quick`` run (~40 s, SIGKILLs included) is `make reliability`'s
job; here each fast check runs once so a change that breaks the script (or one
of the builders it imports from tests/builders/) shows up in `make test`.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from scripts import bench_all as bench
from scripts import reliability as rel
from tests.builders.tampers import TAMPERS

ROOT = Path(__file__).resolve().parents[1]


def test_tamper_rows_cover_every_kind_and_find_no_false_positive() -> None:
    rows = rel.tamper_rows([1, 2, 9], 1, random.Random(1))
    names = {r.check for r in rows}
    assert {f"tamper: {k}" for k in TAMPERS} <= names
    assert all(r.good and r.tried > 0 for r in rows), [r for r in rows if not r.good]


@pytest.mark.parametrize("fn", ["journal_bad_input_row", "completions_bad_input_row",
                                "labels_bad_input_row"])
def test_bad_input_rows_pass(fn: str, tmp_path: Path) -> None:
    rng = random.Random(3)
    row = getattr(rel, fn)(tmp_path, 40, rng)
    assert row.tried >= 40 and row.good, row


def test_a_failing_row_makes_the_table_say_so(capsys: pytest.CaptureFixture[str]) -> None:
    rows = [rel.Row("good check", 3, 3, "fine"), rel.Row("bad check", 3, 2, "one missed")]
    rel.print_table(rows)
    out = capsys.readouterr().out.splitlines()
    assert out[0].split(" | ") == ["check     ", "tried", "passed", "detail"]
    assert out[2].endswith("| fine") and out[3].endswith("| FAIL: one missed")
    assert not rows[1].good and rel.Row("x", 1, 0, "", ok=True).good


def test_second_writer_and_html_rows(tmp_path: Path) -> None:
    assert rel.second_writer_row(tmp_path).good
    html = rel.html_row()
    assert html.good and html.tried >= 8, html


@pytest.mark.slow
def test_quick_run_prints_one_table() -> None:
    """The real thing: ``reliability.py --quick`` as `make reliability` runs it (~40 s)."""
    import subprocess

    r = subprocess.run([sys.executable, "-m", "scripts.reliability", "--quick"],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode in (0, 1), r.stderr[-2000:]
    lines = r.stdout.splitlines()
    assert lines[0].startswith("check ") and lines[0].endswith("| detail")
    body = [x for x in lines[2:] if " | " in x]
    assert len(body) >= 25 and not any("crashed:" in x for x in body), r.stdout
    # exit status 1 exactly when a row says FAIL
    assert (r.returncode == 1) == any("| FAIL: " in x for x in body)


def test_bench_all_reads_result_lines_and_keeps_unparsed_goals() -> None:
    out = "\n".join([
        'RESULT name=verify_chain value=27503/s baseline=36459/s ratio=0.75 goal=">= 0.8"',
        "RESULT verify_chain 27,503 entries/s: ratio 0.75 (goal >= 0.8) -> NOT MET",
        "something new  1.5  (goal <= 2)",
    ])
    figs = bench.figures_of("bench_new.py", out)
    assert (figs[0].figure, figs[0].ratio, figs[0].goal, figs[0].met) == (
        "verify_chain", "0.75", ">= 0.8", "NO")
    # Lines that name a goal but match no parser are shown, never dropped.
    assert [f.figure.startswith("unparsed (bench_new.py): ") for f in figs[1:]] == [True, True]
    assert bench.judge("1.2", "<= 1.25") == "yes" and bench.judge("x", ">= 1") == ""
    assert bench.parse_provider(bench.Lines(""))[0].value == "unparsed"
