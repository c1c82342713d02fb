"""Smoke test of scripts/reliability.py: a few of its checks at tiny sizes, and its table.

The whole ``--quick`` run (~40 s, SIGKILLs included) is `make reliability`'s
job; here each fast check runs once so a change that breaks the script (or one
of the builders it imports from tests/builders/) shows up in `make test`.
"""

from __future__ import annotations

import random
import subprocess
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
    """The real thing: ``reliability.py --quick`` as `make reliability` runs it. The
    timeout only catches a hang: the run takes minutes on a busy machine."""
    import subprocess

    r = subprocess.run([sys.executable, "-m", "scripts.reliability", "--quick"],
                       capture_output=True, text=True, timeout=1200, cwd=ROOT)
    assert r.returncode in (0, 1), r.stderr[-2000:]
    lines = r.stdout.splitlines()
    assert lines[0].startswith("check ") and lines[0].endswith("| detail")
    body = [x for x in lines[2:] if " | " in x]
    assert len(body) >= 25 and not any("crashed:" in x for x in body), r.stdout
    # exit status 1 exactly when a row says FAIL
    assert (r.returncode == 1) == any("| FAIL: " in x for x in body)


def test_bench_all_reads_only_result_lines_and_flags_failures() -> None:
    from benchmarks._result import result_line

    line = result_line("verify_chain 200,000", 27503.0, "entries/s", baseline=36459.0,
                       ratio=0.75, goal=">= 0.8", baseline_name="raw x cores")
    out = "\n".join([line, "verify_chain 27,503 entries/s: ratio 0.75 (goal >= 0.8)",
                     "RESULT name='bad' value=1 ratio=oops"])
    figs = bench.figures_of("bench_new.py", 0, out, "")
    f = figs[0]
    assert (f.bench, f.name, f.value, f.unit, f.baseline, f.ratio, f.goal, f.met) == (
        "new", "verify_chain 200,000", 27503.0, "entries/s", 36459.0, 0.75, ">= 0.8", "NO")
    assert f.load is not None and f.baseline_name == "raw x cores"
    # Every figure says which thread pools it ran with: numpy's BLAS and truss_lab's limit.
    assert f.threads.startswith("blas=") and " lib=" in f.threads
    # Only RESULT lines are read; a malformed one is an error row, never dropped.
    assert len(figs) == 2 and figs[1].error and "malformed" in figs[1].name
    assert bench.judge(1.2, "<= 1.25") == "yes" and bench.judge(None, ">= 1") == ""
    # A crash, and a benchmark that reported nothing, are rows too.
    assert [x.name for x in bench.figures_of("bench_x.py", 1, line, "Boom")][-1] == "CRASHED"
    assert bench.figures_of("bench_x.py", 0, "no figures", "")[0].error
    with pytest.raises(ValueError, match="goal"):
        result_line("x", 1.0, "s", goal="0.8")
    # The docs' table: each figure names its baseline, says its goal met or not, its load.
    md = bench.markdown(figs).splitlines()
    assert md[0] == "| figure | value | baseline (named) | ratio | goal | load |"
    assert md[2].startswith("| `new` verify_chain 200,000 | 27,503 entries/s | 36,459 "
                            "entries/s (raw x cores) | 0.75 | ≥ 0.8, not met | ")
    assert "ERROR" in md[3] and len(md) == 4


def test_bench_all_fixes_every_benchmarks_thread_pools(monkeypatch) -> None:
    # The figures must not depend on the shell: each benchmark's process gets the same
    # BLAS/OpenMP pool (one thread unless --blas-threads), whatever the environment says,
    # and its RESULT lines record the pool numpy really has.
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "7")
    env = bench.child_env(2)
    assert all(env[k] == "2" for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                       "MKL_NUM_THREADS", "TRUSS_LAB_BLAS_THREADS"))
    r = subprocess.run([sys.executable, "-c", "from benchmarks._result import thread_counts; "
                        "print(thread_counts())"], env=env, cwd=ROOT, capture_output=True,
                       text=True, timeout=120, check=True)
    assert r.stdout.split()[:3] == ["blas=2", "lib=2", "OPENBLAS_NUM_THREADS=2"]


def test_best_times_interleaves_the_calls_and_keeps_each_ones_fastest(monkeypatch) -> None:
    # A figure and its baseline must meet the same moments of a shared machine: one
    # call of each per round, and each keeps the fastest of its own calls.
    from benchmarks import _result

    clock = iter([0.0, 5.0, 10.0, 11.0, 20.0, 21.0, 30.0, 39.0])  # a 5, b 1, a 1, b 9
    monkeypatch.setattr(_result.time, "perf_counter", lambda: next(clock))
    calls: list[str] = []
    best = _result.best_times([lambda: calls.append("a"), lambda: calls.append("b")], 2)
    assert calls == ["a", "b", "a", "b"]
    assert best == [1.0, 1.0]
