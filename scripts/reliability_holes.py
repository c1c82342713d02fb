"""Rows of ``make reliability`` for the holes of issue #15, one function per item.

Each row re-runs the issue's reproductions (through the real CLI, against the
real local HTTP server of the tests) and counts what held. ``scripts/reliability.py``
calls :func:`holes_rows`; the rows use its ``Row``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "truss_lab.faces.cli"]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
SAMPLE = ROOT / "datasets" / "sample"


def cli(*args: str, env: dict[str, str] | None = None,
        cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """``truss-lab *args`` in a subprocess, as a user runs it."""
    return subprocess.run([*CLI, *args], env={**ENV, **(env or {})}, cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def one_line(p: subprocess.CompletedProcess[str], code: int = 2) -> bool:
    """One ``error:`` line, exit ``code``, no traceback."""
    out = p.stderr + p.stdout
    return (p.returncode == code and out.startswith("error: ") and len(out.strip().splitlines())
            == 1 and "Traceback" not in out)


def tally(row: Callable[..., Any], name: str, checks: dict[str, bool]) -> Any:
    """A row: how many of ``checks`` held, naming the ones that failed."""
    bad = [k for k, v in checks.items() if not v]
    return row(name, len(checks), len(checks) - len(bad),
               ("failed: " + "; ".join(bad))[:160] if bad else ", ".join(checks)[:160])


def lab_db(tmp: Path, name: str) -> Path:
    """A database holding the sample's journal and completions."""
    from truss_lab.ingest._ingest import ingest_completions
    from truss_lab.journal._ledger import import_journal
    from truss_lab.store._store import Store

    db = tmp / name
    with Store(db) as s:
        import_journal(s, SAMPLE / "journal.jsonl", keyring=SAMPLE / "keys.json")
        ingest_completions(s, SAMPLE / "completions.jsonl")
    return db


def _table_text(db: Path) -> str:
    from truss_lab.store._store import Store

    with Store(db, read_only=True) as s:
        return "\n".join(repr(s.sql(f'SELECT * FROM "{t}"').fetchall()) for t in s.counts())


# -- 1. secrets --------------------------------------------------------------------------------


def secrets_holes_row(row: Callable[..., Any], tmp: Path) -> Any:
    import secrets

    from tests.builders.http_server import Reply, ScriptedServer

    key = "sk-h10-" + secrets.token_hex(16)
    checks: dict[str, bool] = {}
    base = ["extract", "--extractor", "openai:m", "--policy", "on", "--quiet",
            "--verdicts", "seq<=2"]
    with ScriptedServer() as srv:
        db = lab_db(tmp, "secrets_holes.duckdb")
        p = cli(*base, "--db", str(db), "--base-url", srv.base_url,
                 env={"OPENAI_API_KEY": key + "\r"})
        checks["CRLF key refused in one line, not printed, no request"] = (
            one_line(p) and key not in p.stderr and srv.count == 0)
        body = {"error": {"message": f"Incorrect API key provided: {key}"}}
        srv.add(Reply(status=401, body=body), Reply(status=401, body=body))
        p = cli(*base, "--db", str(db), "--base-url", srv.base_url, "--max-error-share", "1",
                 env={"OPENAI_API_KEY": key})
        checks["401 body echoing the key: error row kept, key masked"] = (
            p.returncode == 0 and "[REDACTED]" in _table_text(db) and key not in _table_text(db))
        url = srv.base_url.replace("http://", f"http://user:{key}@")
        p = cli(*base, "--db", str(db), "--base-url", url, "--run-id", "userinfo",
                 env={"OPENAI_API_KEY": ""})
        checks["userinfo in --base-url not in extraction_runs.config"] = (
            p.returncode == 0 and key not in _table_text(db) and key not in p.stdout + p.stderr)
    return tally(row, "secrets: CRLF key, echoed key, URL userinfo", checks)


# -- 2. the database is a DuckDB file --------------------------------------------------------------


def db_path_row(row: Callable[..., Any], tmp: Path) -> Any:
    checks: dict[str, bool] = {}
    for name in ("keys.json", "x.jsonl", "labels.csv", "x.parquet", "notes.txt"):
        target = tmp / "dbpath" / name
        target.parent.mkdir(exist_ok=True)
        if name == "keys.json":
            target.write_bytes((SAMPLE / "keys.json").read_bytes())
        before = target.read_bytes() if target.exists() else None
        p = cli("ingest", "journal", str(SAMPLE / "journal.jsonl"), "--keyring",
                 str(SAMPLE / "keys.json"), "--db", str(target))
        after = target.read_bytes() if target.exists() else None
        checks[f"--db {name}"] = one_line(p) and before == after
    fake = tmp / "dbpath" / "fake.duckdb"
    fake.write_text("seq,hash\n")
    p = cli("init", "--db", str(fake))
    checks["not DuckDB bytes"] = one_line(p) and fake.read_text() == "seq,hash\n"
    return tally(row, "--db not a DuckDB file refused, nothing written", checks)


# -- 3. strict readers -------------------------------------------------------------------------


def deep_nesting_row(row: Callable[..., Any], tmp: Path) -> Any:
    import json

    from truss_lab.journal._crypto import SigningKey, save_keyring
    from truss_lab.journal._ledger import append_entries
    from truss_lab.journal._table import journal_columns
    from truss_lab.store._store import Store

    key = SigningKey.from_seed("deep", bytes(32))
    with Store(":memory:") as s:
        append_entries(s, "contract_verdict", [{"n": i} for i in range(3)], key)
        lines = list(journal_columns(s).iter_jsonl())
    keys = tmp / "deep_keys.json"
    save_keyring({key.key_id: key.public_key}, keys)
    checks: dict[str, bool] = {}
    for depth in (100, 300, 400, 650, 900, 990, 5000):
        entry = json.loads(lines[1])
        text = json.dumps(entry).replace('"payload": {', '"payload": {"d": '
                                         + "[" * depth + "]" * depth + ", ", 1)
        path = tmp / f"deep_{depth}.jsonl"
        path.write_text("\n".join([lines[0], text, lines[2]]) + "\n")
        p = cli("ingest", "journal", str(path), "--keyring", str(keys), "--db",
                 str(tmp / f"deep_{depth}.duckdb"))
        out = p.stdout + p.stderr
        want = "malformed" if depth > 200 else "bad_hash"  # shallow: parsed, hash differs
        checks[f"depth {depth}"] = (p.returncode == 1 and "Traceback" not in out
                                    and want in out)
    return tally(row, "deep nesting is malformed, never a RecursionError", checks)


def labels_recovery_row(row: Callable[..., Any], tmp: Path) -> Any:
    from truss_lab.ingest._labels import read_labels

    good = (SAMPLE / "labels.csv").read_text().splitlines()
    h = good[1].split(",")[0]
    bad = {
        "bad quoting": f'{h},"x"y,0,1,a',
        "field over 131072 chars": f"{h},{'e' * 140_000},0,1,a",
        "quote never closed": f'{h},"open,0,1,a',
        "wrong field count": f"{h},x,0",
    }
    checks: dict[str, bool] = {}
    for name, line in bad.items():
        path = tmp / "labels_bad.csv"
        path.write_text("\n".join([good[0], good[1], line, *good[2:30]]) + "\n")
        df, errors = read_labels(path)
        checks[name] = len(df) == 29 and [e.row for e in errors] == [3]
    path = tmp / "labels_utf8.csv"
    path.write_bytes(("\n".join([good[0], good[1]]) + "\n").encode() + b"\xff\xfe,x,0,1,a\n"
                     + ("\n".join(good[2:30]) + "\n").encode())
    df, errors = read_labels(path)
    checks["invalid UTF-8 named by row"] = (
        len(df) == 29 and [(e.row, e.reason) for e in errors] == [(3, "bad_unicode")])
    return tally(row, "labels CSV: every bad row reported, every good one kept", checks)


def ingest_exit_row(row: Callable[..., Any], tmp: Path) -> Any:
    db = lab_db(tmp, "exit_codes.duckdb")
    good = (SAMPLE / "labels.csv").read_text().splitlines()
    h, ext = good[1].split(",")[:2]
    mixed = tmp / "mixed.csv"
    mixed.write_text("\n".join([good[0], good[1], f'{h},"x"y,0,1,a', good[2]]) + "\n")
    header = tmp / "header.csv"
    header.write_text("hash,who\n" + good[1] + "\n")
    allbad = tmp / "allbad.csv"
    allbad.write_text(good[0] + "\nno,good,row,here,x\n")
    orphans = tmp / "orphans.csv"
    orphans.write_text("\n".join([good[0], f"{'ab' * 32},{ext},0,1,a", f"{h},{ext},97,1,a"])
                       + "\n")
    comp = tmp / "notobjects.jsonl"
    comp.write_text('[1]\n42\n"s"\n')
    checks = {
        "a rejected line: exit 3": cli("ingest", "labels", str(mixed), "--db",
                                        str(db)).returncode == 3,
        "--allow-bad-lines: exit 0": cli("ingest", "labels", str(mixed), "--db", str(db),
                                          "--allow-bad-lines").returncode == 0,
        "wrong header: exit 3 even allowed": cli("ingest", "labels", str(header), "--db",
                                                  str(db), "--allow-bad-lines").returncode == 3,
        "every line bad: exit 3 even allowed": cli("ingest", "labels", str(allbad), "--db",
                                                    str(db), "--allow-bad-lines").returncode == 3,
    }
    p = cli("ingest", "labels", str(orphans), "--db", str(db))
    # Warnings are on stderr (every command's rule), the report alone on stdout.
    checks["unknown verdict / lesson warned"] = (
        "unknown verdict" in p.stderr and "out of range" in p.stderr)
    checks["audit flags them"] = "labels_point_at_lessons" in cli(
        "audit", "--db", str(db)).stdout
    p = cli("ingest", "completions", str(comp), "--db", str(db))
    checks["array/number/string named"] = (
        p.returncode == 3 and all(w in p.stdout for w in ("an array", "an integer", "a string")))
    return tally(row, "ingest exit codes, orphan labels, line kinds", checks)


# -- 4. SQL ----------------------------------------------------------------------------------------


def sql_row(row: Callable[..., Any], tmp: Path) -> Any:
    from truss_lab.faces._notebook import copy_store
    from truss_lab.store._store import Store

    checks: dict[str, bool] = {}
    hostile = tmp / 'temp" TO _truss_copy; DROP TABLE labels; --.duckdb'
    with Store(hostile) as s:
        s.sql("INSERT INTO labels VALUES (?, 'x', 0, 1, '', 't', now())", ["ab" * 32])
        try:
            copy_store(s, tmp / "copy_of_hostile.duckdb").close()
        except Exception:  # reported as a failed check
            pass
        checks["copy_store of a hostile name drops nothing"] = s.sql(
            "SELECT count(*) FROM labels").fetchall() == [(1,)]
    db = lab_db(tmp, "verdicts_sql.duckdb")
    for fn in ("read_text('/etc/hostname')", "read_csv('/etc/passwd')",
               "read_blob('/etc/hostname')"):
        p = cli("extract", "--db", str(db), "--extractor", "heuristic", "--policy", "on",
                 "--quiet", "--verdicts", f"seq IN (SELECT 1 FROM {fn})")
        checks[f"--verdicts {fn.split('(')[0]}"] = one_line(p) and "Permission" in p.stderr
    return tally(row, "SQL: no file name or --verdicts reads a file", checks)


# -- 5. paths ----------------------------------------------------------------------------------


def paths_row(row: Callable[..., Any], tmp: Path) -> Any:
    d = tmp / "paths"
    d.mkdir()
    key = d / "k.key"
    checks = {
        "keys --out in a missing folder": one_line(
            cli("keys", "generate", "--key-id", "me", "--out", "/nonexistent/k.key")),
        "--keyring in a missing folder, key not written": one_line(
            cli("keys", "generate", "--key-id", "me", "--out", str(key), "--keyring",
                 str(d / "missing" / "keys.json"))) and not key.exists(),
    }
    link = d / "link.key"
    link.symlink_to(d / "elsewhere")
    checks["key --out a dangling symlink"] = one_line(
        cli("keys", "generate", "--key-id", "me", "--out", str(link))) and not (
        d / "elsewhere").exists()
    ring = d / "dup.json"
    ring.write_text('{"a": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", '
                    '"a": "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}')
    checks["keyring with a duplicated key id"] = one_line(
        cli("ingest", "journal", str(SAMPLE / "journal.jsonl"), "--keyring", str(ring), "--db",
             str(d / "dup.duckdb")))
    db = lab_db(tmp, "paths.duckdb")
    for opt in ("--csv", "--plot"):
        checks[f"sweep {opt} in a missing folder"] = one_line(
            cli("sweep", "--db", str(db), "--run", "x", opt, str(d / "missing" / "o")))
    checks["TRUSS_LAB_CONFIG a folder"] = one_line(
        cli("extract", "--db", str(db), "--extractor", "heuristic", "--quiet",
             env={"TRUSS_LAB_CONFIG": str(d)}))
    return tally(row, "paths refused in one line before any write", checks)


# -- 6. the lab's own chain -------------------------------------------------------------------

def lab_chain_row(row: Callable[..., Any], tmp: Path) -> Any:
    from truss_lab.simulate._simulate import simulate

    sim = simulate(tmp / "sim3000", runs=3000, seed=5)
    first = tmp / "first1000.jsonl"
    lines = sim.journal.read_text(encoding="utf-8").splitlines(keepends=True)
    first.write_text("".join(lines[:1000]), encoding="utf-8")
    db = str(tmp / "labchain.duckdb")
    key = tmp / "lab.key"
    steps = [
        ("ingest", "journal", str(first), "--keyring", str(sim.keys), "--db", db),
        ("ingest", "completions", str(sim.completions), "--db", db),
        ("ingest", "labels", str(sim.labels), "--db", db),
        ("extract", "--db", db, "--extractor", "replay:sim-good-v1", "--policy",
         "model-scored", "--run-id", "r1", "--quiet"),
        ("keys", "generate", "--key-id", "lab", "--out", str(key)),
        ("propose", "--db", db, "--run", "r1", "--key", str(key)),
    ]
    checks: dict[str, bool] = {}
    for args in steps:
        checks[" ".join(args[:2])] = cli(*args).returncode == 0
    p = cli("ingest", "journal", str(sim.journal), "--keyring", str(sim.keys), "--db", db)
    checks["full export appends 2000 after the proposal"] = "2000 added" in p.stdout
    checks["verify clean (3000 verdicts + 1 lab entry)"] = (
        "ok: 3001 entries verified, head seq 3000" in cli("verify", "--db", db).stdout)
    checks["audit clean, proposal intact"] = "FAIL" not in cli("audit", "--db", db).stdout
    from truss_lab.store._store import Store

    with Store(db) as s:
        s.sql("UPDATE lab_journal SET payload = '{\"x\": 1}'")
    p = cli("verify", "--db", db)
    checks["a tampered lab entry is caught"] = p.returncode == 1 and "lab journal" in p.stdout
    return tally(row, "lab chain: import 1000, propose, import 3000", checks)


# -- 7. orphans --------------------------------------------------------------------------------

_DRIVER = """
import time
from truss_lab.extract._batch import make_executor
from truss_lab.extract._extractor import Extractor
ex = make_executor("processes:2", Extractor.heuristic())
for f in [ex.submit([]), ex.submit([])]:
    f.result()
print("ready", flush=True)
time.sleep(600)
"""


def orphans_row(row: Callable[..., Any], kills: int) -> Any:
    from tests.test_orphans import _alive, _children

    survivors = spawned = 0
    worst = 0.0
    for _ in range(kills):
        drv = subprocess.Popen([sys.executable, "-c", _DRIVER], stdout=subprocess.PIPE,
                               env=ENV, text=True)
        assert drv.stdout is not None
        drv.stdout.readline()
        kids = _children(drv.pid)
        spawned += len(kids)
        drv.send_signal(signal.SIGKILL)
        drv.wait()
        t0 = time.monotonic()
        while time.monotonic() - t0 < 15 and any(_alive(k) for k in kids):
            time.sleep(0.05)
        worst = max(worst, time.monotonic() - t0)
        left = [k for k in kids if _alive(k)]
        survivors += bool(left)
        for k in left:
            os.kill(k, signal.SIGKILL)
    return row("kill -9 of the driver (processes:2): no orphan", kills, kills - survivors,
               f"{spawned} workers + trackers spawned; all gone within {worst:.1f}s",
               ok=survivors == 0 and spawned >= 2 * kills)


def holes_rows(row: Callable[..., Any], tmp: Path, quick: bool) -> list[Any]:
    """Every row of this module (``row`` is reliability.py's ``Row``)."""
    sub = tmp / "holes"
    sub.mkdir(exist_ok=True)
    out = []
    for fn in (secrets_holes_row, db_path_row, deep_nesting_row, labels_recovery_row,
               ingest_exit_row, sql_row, paths_row, lab_chain_row):
        try:
            out.append(fn(row, sub))
        except Exception as exc:  # a crashed check is a failed row
            out.append(row(fn.__name__, 1, 0, f"crashed: {type(exc).__name__}: {exc}"[:160]))
    try:
        out.append(orphans_row(row, 2 if quick else 5))
    except Exception as exc:
        out.append(row("orphans", 1, 0, f"crashed: {type(exc).__name__}: {exc}"[:160]))
    return out
