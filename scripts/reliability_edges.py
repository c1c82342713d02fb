"""Rows of ``make reliability`` for the edges of issue #28 (items 5-8), one function per item.

Each row re-runs the issue's reproductions through the real CLI (in a subprocess, as a
user would) and counts what held: one ``error:`` line, a non-zero exit, no traceback, no
network call and nothing written. ``scripts/reliability.py`` calls :func:`edges_rows`;
the rows use its ``Row``.
"""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scripts.reliability_holes import CLI, ENV, ROOT, SAMPLE, cli, lab_db, one_line, tally

# -- 5. a remote --db ---------------------------------------------------------------------------


def remote_db_row(row: Callable[..., Any], tmp: Path) -> Any:
    d = tmp / "remote_db"
    d.mkdir()
    checks: dict[str, bool] = {}
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.setblocking(False)
        port = listener.getsockname()[1]
        for db in (f"http://127.0.0.1:{port}/x.duckdb", f"https://127.0.0.1:{port}/x.duckdb",
                   "s3://bucket/x.duckdb", "md:lab", "sqlite:x.db"):
            p = cli("init", "--db", db, cwd=d)
            checks[f"--db {db.split(':')[0]}:"] = one_line(p) and "not a local file" in p.stderr
        try:
            listener.accept()
            checks["no connection to the address"] = False
        except BlockingIOError:
            checks["no connection to the address"] = True
    checks["nothing created locally"] = not any(d.iterdir())
    return tally(row, "--db http/s3/md: refused, no network", checks)


# -- 6. deep JSON in every input -------------------------------------------------------------------


def deep_inputs_row(row: Callable[..., Any], tmp: Path) -> Any:
    from truss_lab.store._store import Store

    d = tmp / "deep_inputs"
    d.mkdir()
    db = lab_db(d, "lab.duckdb")
    with Store(db, read_only=True) as s:
        seq, h = s.sql("SELECT seq, hash FROM journal ORDER BY seq LIMIT 1").fetchone()
    checks: dict[str, bool] = {}
    for depth in (1000, 3000, 100_000):
        deep = "[" * depth + "]" * depth
        ring = d / f"keys_{depth}.json"
        ring.write_text('{"a": ' + deep + "}")
        new_db = d / f"new_{depth}.duckdb"
        p = cli("ingest", "journal", str(SAMPLE / "journal.jsonl"), "--keyring", str(ring),
                "--db", str(new_db))
        checks[f"--keyring {depth} deep"] = (one_line(p) and "200 levels" in p.stderr
                                          and not new_db.exists())
        refs = d / f"refs_{depth}.jsonl"
        refs.write_text(f'{{"seq": {seq}, "hash": "{h}", "x": {deep}}}\n')
        p = cli("extract", "--db", str(db), "--extractor", "heuristic", "--policy", "on",
                "--quiet", "--verdicts", str(refs))
        checks[f"--verdicts FILE {depth} deep"] = one_line(p) and "line 1" in p.stderr
        key = d / f"deep_{depth}.key"
        key.write_text('{"key_id": "a", "ed25519_seed": ' + deep + "}")
        p = cli("propose", "--db", str(db), "--run", "x", "--key", str(key))
        # A key file past 64 KiB is refused before it is parsed (issue 39 item 5).
        checks[f"--key {depth} deep"] = one_line(p) and (
            "200 levels" in p.stderr or "the most a key file may hold" in p.stderr)
    from tests.builders.http_server import Reply, ScriptedServer

    with ScriptedServer() as srv:
        srv.add(*[Reply(body='{"x": ' + "[" * 5000 + "]" * 5000 + "}")] * 4)
        p = cli("extract", "--db", str(db), "--extractor", "openai:m", "--base-url",
                srv.base_url, "--policy", "on", "--quiet", "--verdicts", "seq<=2",
                "--max-error-share", "1", env={"OPENAI_API_KEY": "sk-deep"})
    checks["a server body 5000 deep: a failed call"] = (
        p.returncode == 0 and "Traceback" not in p.stdout + p.stderr)
    return tally(row, "deep JSON in --keys, --verdicts FILE, --key, a server body", checks)


# -- 7. a full disk, a failing device ------------------------------------------------------------

# The CLI with writes past 1000 bytes failing (EFBIG), as on a full disk: Python ignores
# SIGXFSZ, so the write itself fails.
_LIMITED = ("import resource, sys; "
            "resource.setrlimit(resource.RLIMIT_FSIZE, (1000, resource.RLIM_INFINITY)); "
            "from truss_lab.faces.cli import cli; sys.argv[0] = 'truss-lab'; cli()")


def full_disk_row(row: Callable[..., Any], tmp: Path) -> Any:
    d = tmp / "full_disk"
    d.mkdir()
    db = str(lab_db(d, "lab.duckdb"))
    cli("ingest", "labels", str(SAMPLE / "labels.csv"), "--db", db)
    for run, ext in (("a", "sim-good-v1"), ("b", "sim-overconfident-v1")):
        cli("extract", "--db", db, "--extractor", f"replay:{ext}", "--policy", "model-scored",
            "--run-id", run, "--quiet")
    checks: dict[str, bool] = {}
    commands = {"sweep --csv": ("sweep", "a", "--csv"), "sweep --plot": ("sweep", "a", "--plot"),
                "compare --plot": ("compare", "a", "b", "--plot"),
                "calibrate --plot": ("calibrate", "a", "--plot")}
    for name, args in commands.items():
        p = cli(*args, "/dev/full", "--db", db)
        checks[f"{name} /dev/full"] = one_line(p) and "not a regular file" in p.stderr
        target = d / f"{name.replace(' --', '_')}.{'csv' if 'csv' in name else 'png'}"
        p = subprocess.run([CLI[0], "-c", _LIMITED, *args, str(target), "--db", db], env=ENV,
                           cwd=ROOT, capture_output=True, text=True, timeout=300)
        checks[f"{name} on a full disk"] = (one_line(p) and "nothing written" in p.stderr
                                            and not target.exists())
    key = d / "me.key"
    p = subprocess.run([CLI[0], "-c", _LIMITED.replace("1000", "60"), "keys", "generate",
                        "--key-id", "me", "--out", str(key), "--keyring", str(d / "keys.json")],
                       env=ENV, cwd=ROOT, capture_output=True, text=True, timeout=300)
    checks["keys generate on a full disk: no truncated key"] = (
        one_line(p) and not key.exists() and not (d / "keys.json").exists())
    checks["no temporary file left"] = sorted(x.name for x in d.iterdir()) == ["lab.duckdb"]
    return tally(row, "full disk / failing device: sweep, compare, calibrate, keys", checks)


# -- 8. output paths that are not regular files ---------------------------------------------------


def output_paths_row(row: Callable[..., Any], tmp: Path) -> Any:

    d = tmp / "out_paths"
    d.mkdir()
    db = str(lab_db(d, "lab.duckdb"))
    cli("ingest", "labels", str(SAMPLE / "labels.csv"), "--db", db)
    cli("extract", "--db", db, "--extractor", "replay:sim-good-v1", "--policy", "model-scored",
        "--run-id", "r", "--quiet")
    mine = d / "mine.csv"
    mine.write_text("mine\n")
    link, dangling = d / "link.csv", d / "dangling.csv"
    link.symlink_to(mine)
    dangling.symlink_to(d / "nowhere.csv")
    checks: dict[str, bool] = {}
    for name, out in (("/dev/null", "/dev/null"), ("a symlink", str(link)),
                      ("a dangling symlink", str(dangling))):
        p = cli("queue", "r", "--db", db, "--out", out, "--n-lessons", "5", "--n-boot", "20")
        checks[f"queue --out {name}"] = one_line(p)
    checks["device and links left as they were"] = (
        Path("/dev/null").is_char_device() and os.readlink(link) == str(mine)
        and os.readlink(dangling) == str(d / "nowhere.csv") and mine.read_text() == "mine\n"
        and not (d / "nowhere.csv").exists())
    exp_link = d / "export_link"
    exp_link.symlink_to(d / "export_nowhere")
    checks["export --out a dangling symlink"] = one_line(
        cli("export", "--db", db, "--out", str(exp_link))) and not (d / "export_nowhere").exists()
    home = d / "home"
    home.mkdir()
    (home / "thesis.tex").write_text("mine")
    checks["export --out a folder holding other files"] = one_line(
        cli("export", "--db", db, "--out", str(home))) and len(list(home.iterdir())) == 1
    p = subprocess.run([CLI[0], "-c", _LIMITED, "export", "--db", db, "--format", "csv",
                        "--out", str(d / "full")], env=ENV, cwd=ROOT, capture_output=True,
                       text=True, timeout=300)
    checks["export onto a full disk: nothing left"] = one_line(p) and not any(
        x.name.startswith((".full", "full")) for x in d.iterdir())
    checks.update(_report_simulate_sample(d, db))
    return tally(row, "queue/export/report/simulate/sample onto a device, a symlink, a used "
                      "folder", checks)


def _report_simulate_sample(d: Path, db: str) -> dict[str, bool]:
    """The follow-ups: report --out like queue --out; simulate and sample --out never write
    through a link nor mix two datasets."""
    mine = d / "mine.html"
    mine.write_text("mine\n")
    link, dangling, fifo = d / "link.html", d / "dangling.html", d / "pipe.html"
    link.symlink_to(mine)
    dangling.symlink_to(d / "nowhere.html")
    os.mkfifo(fifo)
    checks: dict[str, bool] = {}
    for name, out in (("/dev/null", "/dev/null"), ("a FIFO", str(fifo)), ("a symlink", str(link)),
                      ("a dangling symlink", str(dangling)), ("a folder", str(d))):
        p = cli("report", "r", "--db", db, "--out", out, "--n-boot", "20", "--n-verdicts", "5")
        checks[f"report --out {name}"] = one_line(p)
    checks["report: device, pipe and links left as they were"] = (
        Path("/dev/null").is_char_device() and fifo.is_fifo() and mine.read_text() == "mine\n"
        and not (d / "nowhere.html").exists())
    sim = d / "sim"
    cli("simulate", "--out", str(sim), "--n-verdicts", "30", "--random-state", "1")
    before = {x.name: x.read_bytes() for x in sim.iterdir()}
    again = cli("simulate", "--out", str(sim), "--n-verdicts", "30", "--random-state", "1")
    other = cli("simulate", "--out", str(sim), "--n-verdicts", "30", "--random-state", "2")
    checks["simulate: the same seed rewrites its files, another seed is refused"] = (
        again.returncode == 0 and one_line(other) and "another dataset" in other.stderr
        and {x.name: x.read_bytes() for x in sim.iterdir()} == before)
    sim_link = d / "sim_link"
    sim_link.symlink_to(d / "sim_nowhere")
    checks["simulate --out a dangling symlink"] = one_line(
        cli("simulate", "--out", str(sim_link), "--n-verdicts", "30")) and not (
        d / "sim_nowhere").exists()
    smp = d / "smp"
    smp.mkdir()
    (smp / "journal.jsonl").symlink_to(d / "smp_nowhere.jsonl")
    checks["sample --out with a dangling link inside: nothing written through"] = one_line(
        cli("sample", "--out", str(smp))) and not (d / "smp_nowhere.jsonl").exists() and [
        x.name for x in smp.iterdir()] == ["journal.jsonl"]
    return checks


def edges_rows(row: Callable[..., Any], tmp: Path) -> list[Any]:
    """Every row of this module (``row`` is reliability.py's ``Row``)."""
    sub = tmp / "edges"
    sub.mkdir(exist_ok=True)
    out = []
    for fn in (remote_db_row, deep_inputs_row, full_disk_row, output_paths_row):
        try:
            out.append(fn(row, sub))
        except Exception as exc:  # a crashed check is a failed row
            out.append(row(fn.__name__, 1, 0, f"crashed: {type(exc).__name__}: {exc}"[:160]))
    return out
