"""Run every benchmark in benchmarks/ and print ONE table of their figures and goals.

    .venv/bin/python scripts/bench_all.py            # full sizes (several minutes)
    .venv/bin/python scripts/bench_all.py --quick    # small sizes, passed to each script

Each ``benchmarks/bench_*.py`` runs as its own subprocess (resume_torture.py
belongs to scripts/reliability.py). Their printed figures are parsed with
regular expressions; a line of the form

    RESULT name=NAME value=V baseline=B ratio=R goal=">= 0.8"

is read as is, which is the robust way for a benchmark to report. A line that
mentions a goal but matches nothing becomes an ``unparsed`` row, so no figure
is silently lost. Goals not met do not fail the run: the exit status is 1 only
when a benchmark crashed (or timed out).
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ORDER = ["bench_verify.py", "bench_sweep.py", "bench_provider.py", "bench_extract.py",
         "bench_junk.py"]


@dataclass
class Fig:
    """One row: a figure, its named baseline, the ratio and the goal on that ratio."""

    figure: str
    value: str = ""
    baseline: str = ""
    ratio: str = ""
    goal: str = ""
    met: str = ""


def judge(ratio: str, goal: str) -> str:
    """'yes' / 'NO' when the goal is '>= x' or '<= x' and the ratio a number; '' otherwise."""
    m = re.fullmatch(r"\s*([<>]=)\s*([\d.]+)\s*", goal or "")
    try:
        r = float(ratio.replace(",", ""))
    except ValueError:
        return ""
    if not m:
        return ""
    g = float(m.group(2))
    return "yes" if (r >= g if m.group(1) == ">=" else r <= g) else "NO"


class Lines:
    """The output of one benchmark, with the lines a parser used marked."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self.used: set[int] = set()

    def find(self, pattern: str) -> re.Match[str] | None:
        rx = re.compile(pattern)
        for i, line in enumerate(self.lines):
            m = rx.search(line)
            if m:
                self.used.add(i)
                return m
        return None

    def unused_goal_lines(self) -> list[str]:
        return [x.strip() for i, x in enumerate(self.lines)
                if i not in self.used and re.search(r"\bgoal\b", x, re.I)]


def _missing(name: str) -> Fig:
    return Fig(name, "unparsed", goal="?", met="?")


def parse_result_lines(out: Lines) -> list[Fig]:
    """``RESULT key=value ...`` lines (the machine-readable form)."""
    figs = []
    for i, line in enumerate(out.lines):
        if not line.startswith("RESULT ") or "=" not in line.split(None, 2)[1]:
            continue
        try:
            kv = dict(tok.split("=", 1) for tok in shlex.split(line[7:]) if "=" in tok)
        except ValueError:
            continue
        out.used.add(i)
        f = Fig(kv.get("name", "?"), kv.get("value", ""), kv.get("baseline", ""),
                kv.get("ratio", ""), kv.get("goal", ""))
        f.met = judge(f.ratio, f.goal)
        figs.append(f)
    return figs


def parse_verify(out: Lines) -> list[Fig]:
    base = out.find(r"baseline = raw x (\d+) usable cores:\s+([\d,]+) /s")
    fig = out.find(r"verify_chain\(store\)[^\n]*?([\d,]+) /s\s+ratio ([\d.]+)")
    res = out.find(r"RESULT verify_chain.*\(goal ([<>]=) ([\d.]+)\)")
    n = out.find(r"chain: ([\d,]+) signed")
    name = f"verify_chain {n.group(1) if n else ''} entries / (raw Ed25519 verify x cores)"
    if not (base and fig):
        return [_missing(name)]
    goal = f"{res.group(1)} {res.group(2)}" if res else ">= 0.8"
    f = Fig(name, f"{fig.group(1)}/s", f"{base.group(2)}/s ({base.group(1)} cores)",
            fig.group(2), goal)
    f.met = judge(f.ratio, f.goal)
    rows = [f]
    for label in (r"verify_columns, 1 thread", r"same checks, process pool x\d+"):
        m = out.find(label + r"\s+([\d,]+) /s\s+ratio ([\d.]+)")
        if m:
            rows.append(Fig("  " + m.group(0).split("  ")[0].strip() + " (info)",
                            f"{m.group(1)}/s", f"{base.group(2)}/s", m.group(2)))
    return rows


_NUM_LINE = r"^\s{2}%s\s{2,}(-?[\d.]+)(?:\s+goal ([<>]=) ([\d.]+))?"


def parse_sweep(out: Lines) -> list[Fig]:
    def val(name: str) -> tuple[str, str] | None:
        m = out.find(_NUM_LINE % re.escape(name))
        if not m:
            return None
        return m.group(1), (f"{m.group(2)} {m.group(3)}" if m.group(2) else "")

    rows: list[Fig] = []
    n1 = out.find(r"1\. sweep of ([\d,]+) candidates")
    n2 = out.find(r"2\. (\d+)-replicate verdict bootstrap, ([\d,]+) candidates in ([\d,]+) "
                  r"verdicts")
    n3 = out.find(r"3\. peak traced memory of a ([\d,]+)-candidate sweep(?:.*= ([\d.,]+ \w?i?B))?")
    inp = f"input {n3.group(2)}" if n3 and n3.group(2) else ""
    size = n1.group(1) if n1 else "?"
    specs = [
        (f"sweep {size} / sklearn precision_recall_curve", "sweep / precision_recall_curve",
         "sweep (s)", "sklearn precision_recall_curve (s)"),
        (f"sweep {size} / np.argsort", "sweep / np.argsort", "sweep (s)", "np.argsort (s)"),
        (f"bootstrap {n2.group(1) if n2 else '?'} reps ({n2.group(2) if n2 else '?'} cand., "
         f"{n2.group(3) if n2 else '?'} verdicts) / one sweep",
         "bootstrap / one sweep (distinct thresholds)", "bootstrap_metrics (s)",
         "one sweep, distinct thresholds, with groups (s)"),
        (f"sweep {n3.group(1) if n3 else '?'} peak memory / input (0.001 res.)",
         "saliences at 0.001 resolution, distinct thresholds: peak / input", None, None),
        (f"sweep {n3.group(1) if n3 else '?'} peak memory / input (101 grid)",
         "101-threshold grid: peak / input", None, None),
        ("  bootstrap / the part-1 sweep (info)",
         "bootstrap / the part-1 sweep (other reading of the goal)", "bootstrap_metrics (s)",
         "sweep (s)"),
    ]
    for name, ratio_line, v_line, b_line in specs:
        r = val(ratio_line)
        if r is None:
            rows.append(_missing(name))
            continue
        v = val(v_line) if v_line else None
        b = val(b_line) if b_line else None
        f = Fig(name, f"{v[0]} s" if v else "", f"{b[0]} s" if b else (inp if not b_line
                                                                         else ""), r[0], r[1])
        f.met = judge(f.ratio, f.goal)
        rows.append(f)
    return rows


def parse_provider(out: Lines) -> list[Fig]:
    req = out.find(r"requests\s+(\d+) at concurrency (\d+), server latency (\d+) ms")
    wall = out.find(r"wall time\s+([\d.]+) s")
    ideal = out.find(r"ideal \(baseline\)\s+([\d.]+) s")
    ratio = out.find(r"^ratio\s+([\d.]+)\s+\(goal ([<>]=) ([\d.]+)\)")
    name = (f"provider wall / ideal ({req.group(1)} req, conc. {req.group(2)}, "
            f"{req.group(3)} ms)" if req else "provider wall / ideal")
    if not (wall and ideal and ratio):
        return [_missing(name)]
    f = Fig(name, f"{wall.group(1)} s", f"{ideal.group(1)} s", ratio.group(1),
            f"{ratio.group(2)} {ratio.group(3)}")
    f.met = judge(f.ratio, f.goal)
    return [f]


def parse_extract(out: Lines) -> list[Fig]:
    n = out.find(r"setup: ([\d,]+) verdicts")
    e2e = out.find(r"end to end: ([\d.]+)s = ([\d,]+) verdicts/s")
    floor = out.find(r"floor: .*= ([\d.]+)s \(([\d,]+) verdicts/s\)")
    r1 = out.find(r"ratio floor/end-to-end = ([\d.]+)\s+\(goal ([<>]=) ([\d.]+)\)")
    bulk = out.find(r"Store\.append ([\d.]+)s, raw INSERT .*? ([\d.]+)s")
    r2 = out.find(r"ratio raw/append = ([\d.]+)\s+\(goal ([<>]=) ([\d.]+)\)")
    size = n.group(1) if n else "?"
    rows = []
    name = f"extract {size} verdicts: floor / end-to-end"
    if e2e and floor and r1:
        rows.append(Fig(name, f"{e2e.group(1)} s ({e2e.group(2)}/s)",
                        f"{floor.group(1)} s ({floor.group(2)}/s)", r1.group(1),
                        f"{r1.group(2)} {r1.group(3)}"))
    else:
        rows.append(_missing(name))
    name = "store bulk write: raw INSERT ... SELECT / Store.append"
    if bulk and r2:
        rows.append(Fig(name, f"{bulk.group(1)} s", f"{bulk.group(2)} s", r2.group(1),
                        f"{r2.group(2)} {r2.group(3)}"))
    else:
        rows.append(_missing(name))
    for f in rows:
        f.met = f.met or judge(f.ratio, f.goal)
    return rows


def parse_junk(out: Lines) -> list[Fig]:
    rows = []
    n = out.find(r"in-run duplicates among (\d+) lessons")
    ours = out.find(r"ours \(MinHash/LSH \+ exact Jaccard\):\s+([\d.]+) s")
    base = out.find(r"baseline rapidfuzz cdist:\s+([\d.]+) s(?: \((.*)\))?")
    r = out.find(r"ratio ours / baseline: ([\d.]+)\s+\(goal ([<>]=) ([\d.]+)\)")
    name = f"junk: in-run duplicates, {n.group(1) if n else '?'} lessons: time / rapidfuzz"
    if ours and base and r:
        extrap = " (extrapolated)" if "measured" in (base.group(2) or "") else ""
        rows.append(Fig(name, f"{ours.group(1)} s", f"{base.group(1)} s{extrap}", r.group(1),
                        f"{r.group(2)} {r.group(3)}"))
    else:
        rows.append(_missing(name))
    f1 = r"precision ([\d.]+)\s+recall ([\d.]+)\s+F1 ([\d.]+)"
    for label, a, b in (
        ("junk: duplicate F1 on the sample, ours / rapidfuzz",
         r"duplicate_in_verdict jaccard \(ours\)\s+" + f1,
         r"duplicate_in_verdict rapidfuzz \(baseline\)\s+" + f1),
        ("junk: duplicate F1 on hand-made pairs, ours / rapidfuzz",
         r"jaccard>=0\.7 \(ours\)\s+" + f1,
         r"rapidfuzz token_set_ratio>=90 \(baseline\)\s+" + f1),
    ):
        ma, mb = out.find(a), out.find(b)
        if ma and mb and float(mb.group(3)) > 0:
            rows.append(Fig(label, f"F1 {ma.group(3)}", f"F1 {mb.group(3)}",
                            f"{float(ma.group(3)) / float(mb.group(3)):.2f}"))
        else:
            rows.append(_missing(label))
    lsh = out.find(r"LSH recall vs exact all-pairs on (\d+) lessons: ([\d.]+) of (\d+) pairs "
                   r"\(goal ([<>]=) ([\d.]+)\)")
    name = "junk: LSH recall vs exact all-pairs"
    if lsh:
        f = Fig(f"{name} ({lsh.group(1)} lessons)", f"{lsh.group(2)}",
                f"{lsh.group(3)} pairs", lsh.group(2), f"{lsh.group(4)} {lsh.group(5)}")
        f.met = judge(f.ratio, f.goal)
        rows.append(f)
    for f in rows:
        f.met = f.met or judge(f.ratio, f.goal)
    return rows


PARSERS: dict[str, Callable[[Lines], list[Fig]]] = {
    "bench_verify.py": parse_verify,
    "bench_sweep.py": parse_sweep,
    "bench_provider.py": parse_provider,
    "bench_extract.py": parse_extract,
    "bench_junk.py": parse_junk,
}


def run_one(path: Path, quick: bool, timeout: float) -> tuple[int | None, str, str, float]:
    """(return code or None on timeout, stdout, stderr, seconds)."""
    t = time.perf_counter()
    try:
        # As a module, so that it imports tests.builders and benchmarks.* from the root.
        r = subprocess.run([sys.executable, "-m", f"benchmarks.{path.stem}",
                            *(["--quick"] if quick else [])],
                           cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})
        return r.returncode, r.stdout, r.stderr, time.perf_counter() - t
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return None, out, "timed out", time.perf_counter() - t


def figures_of(name: str, stdout: str) -> list[Fig]:
    """Every figure one benchmark printed: RESULT lines, its parser, then unparsed goals."""
    out = Lines(stdout)
    figs = parse_result_lines(out)
    have = {f.figure for f in figs}
    parser = PARSERS.get(name)
    if parser is not None:
        figs += [f for f in parser(out) if f.figure not in have]
    figs += [Fig(f"unparsed ({name}): {x[:70]}", goal="?", met="?")
             for x in out.unused_goal_lines()]
    return figs


def print_table(rows: list[tuple[str, Fig]]) -> None:
    head = ("benchmark", "figure", "value", "baseline", "ratio", "goal", "met?")
    cells = [(b, f.figure, f.value, f.baseline, f.ratio, f.goal or "-", f.met or "-")
             for b, f in rows]
    w = [max([len(head[i]), *(len(c[i]) for c in cells)]) for i in range(len(head))]
    fmt = " | ".join(f"{{:{'>' if i == 4 else '<'}{w[i]}}}" for i in range(len(head)))
    print(fmt.format(*head).rstrip())
    print("-+-".join("-" * x for x in w))
    for c in cells:
        print(fmt.format(*c).rstrip())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="pass --quick to every benchmark")
    ap.add_argument("--timeout", type=float, default=None,
                    help="seconds per benchmark (default 600 quick, 3600 full)")
    ap.add_argument("--only", nargs="*", default=None, help="benchmark file names to run")
    args = ap.parse_args(argv)
    timeout = args.timeout or (600.0 if args.quick else 3600.0)
    found = sorted(p.name for p in (ROOT / "benchmarks").glob("bench_*.py"))
    names = [n for n in ORDER if n in found] + [n for n in found if n not in ORDER]
    if args.only:
        names = [n for n in names if n in args.only]
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    rows: list[tuple[str, Fig]] = []
    ran: list[str] = []
    crashed = False
    for name in names:
        rc, stdout, stderr, secs = run_one(ROOT / "benchmarks" / name, args.quick, timeout)
        short = name.removeprefix("bench_").removesuffix(".py")
        ran.append(f"{short} {secs:.0f}s" + ("" if rc == 0 else f" rc={rc}"))
        if rc != 0:
            crashed = True
            tail = (stderr.strip().splitlines() or ["?"])[-1][:80]
            rows.append((short, Fig("CRASHED" if rc is not None else "TIMED OUT",
                                    f"rc={rc}", goal="-", met=tail)))
        rows += [(short, f) for f in figures_of(name, stdout)]
    load1 = os.getloadavg()[0]
    print(f"benchmarks ({'--quick' if args.quick else 'full'}) on {cores} cores; 1-min load "
          f"average {load0:.2f} at start, {load1:.2f} at end"
          + (f" (> {cores}: cores were shared, figures are noisy)"
             if max(load0, load1) > (cores or 1) else ""))
    print_table(rows)
    print(f"\nran: {', '.join(ran)}; total {time.perf_counter() - t0:.0f}s. Ratios are "
          "figure/baseline as each benchmark defines them; goals not met do not fail the run.")
    return 1 if crashed else 0


if __name__ == "__main__":
    raise SystemExit(main())
