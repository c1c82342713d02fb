"""Rows of ``make reliability`` for issue 39 (the attacker's fourth pass), one per item.

Each row re-runs the issue's reproduction (through the real CLI where a user would meet
it, against a local server on 127.0.0.1) and counts the checks that held.
``scripts/reliability.py`` calls :func:`attack_rows`; the rows use its ``Row``.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scripts.reliability_holes import tally
from scripts.secrets_dump import find_secrets
from tests.builders.inputs import CLAIM_EDITS, INPUTS, TOML_INPUTS, deep_toml, run_cli
from truss_lab.faces._notebook import load_sample


def secrets_dump_row(row: Callable[..., Any], tmp: Path) -> Any:
    """Items 1-3: a key echoed encoded in error bodies, in --base-url, in a prompt file, a
    labels and a references file; every table, file, export, report and output dumped and
    searched for every secret in every encoding."""
    d = tmp / "secrets_dump"
    d.mkdir()
    found, ran, needles = find_secrets(d)
    checks = {f"scenario: {k}": v for k, v in ran.items()}
    checks[f"{needles} needles: none in any table, file, export, report, output"] = not found
    r = tally(row, "secrets in every encoding and user file: dump of everything", checks)
    if found:
        r.detail = f"found {len(found)}: " + "; ".join(found)[:140]
    return r


def _ended(args: list[str], *, env: dict[str, str] | None = None,
           memory: int | None = None) -> tuple[bool, str]:
    """Whether ``truss-lab *args`` ended within 60 s without a traceback, and its output."""
    try:
        p = run_cli(args, env=env, timeout=60, memory=memory)
    except subprocess.TimeoutExpired:
        return False, "hung (60 s)"
    out = (p.stderr + p.stdout).strip()
    return "Traceback" not in out and "MemoryError" not in out, out


def _one_error(ok: bool, out: str, must: str) -> bool:
    errors = [x for x in out.splitlines() if x.startswith("error: ")]
    return ok and len(errors) == 1 and must in errors[0]


def _inputs_db(tmp: Path) -> Path:
    d = tmp / "inputs"
    d.mkdir(exist_ok=True)
    db = d / "lab.duckdb"
    if not db.exists():
        load_sample(db).close()
    return db


def fifo_row(row: Callable[..., Any], tmp: Path) -> Any:
    """Item 4: a named pipe no one writes to, as every input: each command ends at once
    (the pipe read as the empty input it is), no traceback."""
    db = _inputs_db(tmp)
    checks = {}
    for name, argv in INPUTS:
        fifo = tmp / "inputs" / f"{name.replace(' ', '_')}.fifo"
        os.mkfifo(fifo)
        ok, _ = _ended(argv(fifo, db))
        checks[f"{name}: ended, no traceback"] = ok
    return tally(row, "a named pipe as every input: no hang", checks)


def device_row(row: Callable[..., Any], tmp: Path) -> Any:
    """Items 4-5: /dev/zero and /dev/urandom as every input, under a 2 GiB address-space
    limit: one error line saying it is a device, no MemoryError, no traceback."""
    db = _inputs_db(tmp)
    checks = {}
    for device in ("/dev/zero", "/dev/urandom"):
        for name, argv in INPUTS:
            ok, out = _ended(argv(Path(device), db), memory=2 << 30)
            checks[f"{name} {device}: one line"] = _one_error(ok, out, "is a device")
    return tally(row, "/dev/zero, /dev/urandom as every input: one line", checks)


def toml_depth_row(row: Callable[..., Any], tmp: Path) -> Any:
    """Item 6: a TOML file nested 500 deep as a grid, a price table, a prompt file and the
    configuration: one error line naming the file, no RecursionError."""
    db = _inputs_db(tmp)
    deep = tmp / "inputs" / "deep.toml"
    deep.write_text(deep_toml(500), encoding="utf-8")
    checks = {}
    for name, argv, env in TOML_INPUTS:
        ok, out = _ended(argv(deep, db), env={env: str(deep)} if env else None)
        checks[f"{name}: one line"] = _one_error(ok, out, str(deep)) and "nests" in out
    return tally(row, "TOML nested 500 deep: one line", checks)


#: Item 7's direct edits of governed rows, and the audit check each must fail.
GOVERNED_EDITS: dict[str, tuple[str, str]] = {
    "policy settings 0.41 -> 0.05": (
        "UPDATE policy_records SET settings = '{\"extraction_min_salience\": 0.05}' "
        "WHERE superseded_by IS NULL", "policy_records_match_entries"),
    "DELETE FROM policy_records": ("DELETE FROM policy_records",
                                   "policy_records_match_entries"),
    "policy trust -> verified": ("UPDATE policy_records SET trust = 'verified'",
                                 "policy_records_match_entries"),
    "policy version edited": ("UPDATE policy_records SET version = version + 5",
                              "policy_records_match_entries"),
    "policy supersedes dropped": (
        "UPDATE policy_records SET supersedes = NULL WHERE superseded_by IS NULL",
        "policy_records_match_entries"),
    "lesson salience -> 0.99": (
        "UPDATE memory_entries SET salience = 0.99 WHERE entry_id = (SELECT min(entry_id) "
        "FROM memory_entries)", "lessons_match_candidates"),
    "lesson text edited": (
        "UPDATE memory_entries SET text = 'always deploy on Fridays' WHERE entry_id = "
        "(SELECT min(entry_id) FROM memory_entries)", "lessons_match_candidates"),
}


def governed_db(tmp: Path) -> Path:
    """The sample with a replayed extraction's lessons (policy on) and a policy signed
    twice (0.41, then 0.45 superseding it)."""
    from truss_lab.core._models import Policy
    from truss_lab.govern._policies import write_policy
    from truss_lab.journal._crypto import SigningKey
    from truss_lab.store._store import Store

    db = tmp / "governed.duckdb"
    load_sample(db).close()
    p = run_cli(["extract", "--db", str(db), "--extractor", "replay:sim-good-v1", "--policy", "on",
                 "--verdicts", "seq <= 200", "--quiet"], timeout=300)
    if p.returncode != 0:
        raise RuntimeError(f"extract failed: {p.stderr[-300:]}")
    key = SigningKey.from_seed("lab-op", bytes(range(32)))
    with Store(db) as s:
        r1 = write_policy(s, Policy(policy_id="min-salience", target="salience",
                                    settings={"extraction_min_salience": 0.41}), key)
        write_policy(s, Policy(policy_id="min-salience", target="salience",
                               settings={"extraction_min_salience": 0.45}), key,
                     supersedes=r1.record_id)
    return db


def governed_row(row: Callable[..., Any], tmp: Path) -> Any:
    """Item 7: each direct edit of a governed row fails `truss-lab audit` (exit 1) on the
    check that compares it with what was signed or what wrote it; the clean copy passes."""
    import json
    import shutil

    from truss_lab.store._store import Store

    d = tmp / "governed"
    d.mkdir()
    db = governed_db(d)
    p = run_cli(["audit", "--db", str(db), "--json"], timeout=300)
    checks = {"clean database: audit passes": p.returncode == 0}
    for name, (sql, check) in GOVERNED_EDITS.items():
        copy = d / "edited.duckdb"
        shutil.copy(db, copy)
        with Store(copy) as s:
            s.sql(sql)
        p = run_cli(["audit", "--db", str(copy), "--json"], timeout=300)
        try:
            failed = {c["name"] for c in json.loads(p.stdout)["checks"] if not c["passed"]}
        except (ValueError, KeyError):
            failed = set()
        checks[f"{name}: audit fails {check}"] = p.returncode == 1 and check in failed
        copy.unlink()
    return tally(row, "direct edits of governed rows: audit fails", checks)


FORMULAS = ('=HYPERLINK("http://evil.example","x")', "@SUM(A1:A9)", "+1+1", "-2-2",
            "\tTAB", "\rCR")


def weak_row(row: Callable[..., Any], tmp: Path) -> Any:
    """Item 8 (weak), the parts done: reference texts a spreadsheet would run come out of
    a CSV export with a leading ', and a grid of 1,000,000 cells is one line with its
    count, at once."""
    import csv
    import json
    import time

    from truss_lab.store._store import Store

    db = _inputs_db(tmp)
    with Store(db, read_only=True) as s:
        vh = s.sql("SELECT hash FROM journal WHERE kind = 'contract_verdict' LIMIT 1"
                   ).fetchall()[0][0]
    refs = tmp / "inputs" / "formula_refs.jsonl"
    refs.write_text("".join(json.dumps({"verdict_hash": vh, "reference_id": f"f{i}",
                                        "text": t, "annotator": "attacker"}) + "\n"
                            for i, t in enumerate(FORMULAS)), encoding="utf-8")
    checks = {"formula references ingested": run_cli(
        ["ingest", "references", str(refs), "--db", str(db)]).returncode == 0}
    out = tmp / "inputs" / "export_csv"
    checks["export csv ran"] = run_cli(["export", "--db", str(db), "--format", "csv",
                                        "--out", str(out)]).returncode == 0
    with open(out / "reference_lessons.csv", encoding="utf-8", newline="") as fh:
        texts = {r["text"] for r in csv.DictReader(fh) if r["annotator"] == "attacker"}
    for t in FORMULAS:
        checks[f"{t[:12]!r}: exported with a leading '"] = ("'" + t) in texts
    grid = tmp / "inputs" / "huge.toml"
    ten = ", ".join(str(i) for i in range(1, 11))
    grid.write_text('name = "huge"\n[[axes]]\nextractor = "heuristic"\n'
                    f"seed = [{', '.join(str(i) for i in range(100))}]\n"
                    f"temperature = [{ten}]\ntop_p = [{ten}]\nmax_tokens = [{ten}]\n"
                    f"samples = [{ten}]\n", encoding="utf-8")
    t0 = time.perf_counter()
    ok, text = _ended(["grid", str(grid), "--db", str(tmp / "inputs" / "grid.duckdb")])
    checks["1,000,000-cell grid: one line with its count within 30 s"] = (
        _one_error(ok, text, "makes 1,000,000 cells") and time.perf_counter() - t0 < 30)
    return tally(row, "weak: CSV formulas escaped, grid size bounded", checks)


# -- item 8, the weak points (a-e of the follow-up) -------------------------------------

#: A key in no environment variable: only the base URL's own registration can mask it.
PATH_KEY = "sk-rel39p-" + "3e" * 12
FRAGMENT_KEY = "sk-rel39f-" + "7b" * 12


def base_url_row(row: Callable[..., Any], tmp: Path) -> Any:
    """Item 8a: a key in --base-url's path is sent where the user said but stored,
    exported and printed masked; one after '#' (never sent) is refused in one line."""
    import json

    from scripts.reliability_holes import cli, one_line
    from tests.builders.echo import leaks
    from tests.builders.http_server import ScriptedServer
    from truss_lab.store._store import Store

    d = tmp / "base_url"
    d.mkdir()
    db = d / "lab.duckdb"
    load_sample(db).close()
    env = {"OPENAI_API_KEY": "sk-rel39-env-" + "1f" * 8}
    with ScriptedServer() as srv:
        p = cli("extract", "--db", str(db), "--extractor", "openai:m", "--base-url",
                f"{srv.base_url}/{PATH_KEY}/proxy", "--policy", "on", "--verdicts", "seq <= 2",
                "--json", env=env)
        paths = {r.path for r in srv.requests}
        before = srv.count
        f = cli("extract", "--db", str(db), "--extractor", "openai:m", "--base-url",
                f"{srv.base_url}#{FRAGMENT_KEY}", "--policy", "on", "--verdicts", "seq <= 2",
                env=env)
        fragment_calls = srv.count - before
    run_id = json.loads(p.stdout)["run_id"] if p.returncode == 0 else "none"
    with Store(db, read_only=True) as s:
        cfg = s.sql("SELECT config FROM extraction_runs WHERE run_id = ?", [run_id]).fetchall()
    e = cli("export", "--db", str(db), "--format", "csv", "--out", str(d / "export"))
    checks = {
        "path: extract ran": p.returncode == 0,
        "path: the key was sent in the path": paths == {f"/v1/{PATH_KEY}/proxy/chat/completions"},
        "path: config stores it masked": bool(cfg) and "[REDACTED]" in cfg[0][0],
        "path: not in output, DB, WAL, CSV export": (
            e.returncode == 0 and PATH_KEY not in p.stdout + p.stderr
            and not leaks(PATH_KEY, db, d / "export")),
        "fragment: refused in one line, exit 2": one_line(f) and "fragment" in f.stderr,
        "fragment: no request, key not printed": (
            fragment_calls == 0 and FRAGMENT_KEY not in f.stdout + f.stderr
            and not leaks(FRAGMENT_KEY, db)),
    }
    return tally(row, "key in --base-url path or fragment", checks)


def retry_row(row: Callable[..., Any], tmp: Path) -> Any:
    """Item 8b: a live run whose every call timed out (or failed with a 500) is finished
    by --resume: each failed verdict asked again once, said, counted, nothing duplicated,
    a second resume asks nothing, the audit passes."""
    import json

    from scripts.reliability_holes import cli
    from tests.builders.http_server import Reply, ScriptedServer
    from truss_lab.store._store import Store

    n = 4
    checks: dict[str, bool] = {}
    for failure, bad in (("timeout", Reply(delay=3.0)), ("500", Reply(500, {"error": "x"}))):
        d = tmp / f"retry_{failure}"
        d.mkdir()
        db = d / "lab.duckdb"
        load_sample(db).close()
        env = {"OPENAI_API_KEY": "sk-rel39-retry-" + "2c" * 8}
        with ScriptedServer() as srv:
            srv.add(*[bad] * n)
            p = cli("extract", "--db", str(db), "--extractor", "openai:m", "--base-url",
                    srv.base_url, "--policy", "on", "--verdicts", f"seq <= {n}",
                    "--max-retries", "0", "--deadline", "1", "--max-consecutive-failures",
                    "10", "--json", env=env)
            run_id = json.loads(p.stdout)["run_id"] if p.stdout.strip() else "none"
            first = srv.count
            r1 = cli("extract", "--db", str(db), "--resume", run_id, env=env)
            second = srv.count - first
            r2 = cli("extract", "--db", str(db), "--resume", run_id, env=env)
            third = srv.count - first - second
        with Store(db, read_only=True) as s:
            errors, cands, recs, n_err = s.sql(
                "SELECT (SELECT count(*) FROM verdict_errors WHERE run_id = ?), "
                "(SELECT count(*) FROM candidates WHERE run_id = ?), "
                "(SELECT count(*) FROM completions WHERE run_id = ?), "
                "(SELECT n_errors FROM extraction_runs WHERE run_id = ?)",
                [run_id] * 4).fetchall()[0]
        audit = cli("audit", "--db", str(db))
        checks[f"{failure}: every call failed first ({first} calls)"] = first == n
        checks[f"{failure}: resume asked each again once, said {n}"] = (
            second == n and f"asked again for {n} verdict(s)" in r1.stderr)
        checks[f"{failure}: errors replaced, counts agree"] = (
            errors == 0 and n_err == 0 and cands == n and recs == n)
        checks[f"{failure}: second resume asks nothing"] = (
            third == 0 and "asked again for 0 verdict(s)" in r2.stderr)
        checks[f"{failure}: audit passes"] = audit.returncode == 0
    return tally(row, "resume retries calls that failed", checks)


CYRILLIC_GOOD = "g\u043e\u043ed"


def lookalike_row(row: Callable[..., Any], tmp: Path) -> Any:
    """Item 8c: look-alike ids warned about at ingest (file, row/line, field), NUL refused,
    and 'sweep gооd' explaining why it is not 'good'."""
    import json

    from scripts.reliability_holes import cli
    from truss_lab.store._store import Store

    d = tmp / "lookalike"
    d.mkdir()
    db = d / "lab.duckdb"
    load_sample(db).close()
    base = ["--extractor", "replay:sim-good-v1", "--policy", "on", "--verdicts", "seq <= 5",
            "--quiet", "--max-error-share", "1"]
    good = cli("extract", "--db", str(db), *base, "--run-id", "good")
    sweep = cli("sweep", CYRILLIC_GOOD, "--db", str(db))  # before a run of that id exists
    look = cli("extract", "--db", str(db), *base, "--run-id", CYRILLIC_GOOD)
    nul = cli("extract", "--db", str(db), *base, "--run-id", "bad\x01run")
    with Store(db, read_only=True) as s:
        vh, ex = s.sql("SELECT verdict_hash, extractor_id FROM candidates LIMIT 1").fetchall()[0]
    labels = d / "labels.csv"
    labels.write_text("verdict_hash,extractor,lesson_index,useful,annotator\n"
                      f"{vh},{ex},0,1,{CYRILLIC_GOOD}\n{vh},{ex},0,0,bob\x00\n"
                      f"{vh},{ex.replace('-', chr(0x2010))},0,1,carol\n", encoding="utf-8")
    lab = cli("ingest", "labels", str(labels), "--db", str(db))
    refs = d / "refs.jsonl"
    ref = {"verdict_hash": vh, "reference_id": "r\u20101", "text": "a lesson", "annotator": "a"}
    refs.write_text(json.dumps(ref) + "\n" + json.dumps(
        {**ref, "reference_id": "r2", "annotator": "x\x00y"}) + "\n", encoding="utf-8")
    rf = cli("ingest", "references", str(refs), "--db", str(db))
    warned = lambda p, *words: any(all(w in x for w in words)  # noqa: E731
                                   for x in p.stderr.splitlines() if x.startswith("warning"))
    checks = {
        "run 'good' made": good.returncode == 0,
        "new run 'gооd': warned, mixes scripts, looks like 'good'": (
            look.returncode == 0 and warned(look, "mixes scripts (Latin, Cyrillic)",
                                            "looks like run 'good'")),
        "run id with a control character refused": (
            nul.returncode == 2 and "U+0001" in nul.stderr),
        "sweep 'gооd': not found, names 'good' and the Cyrillic letters": (
            sweep.returncode == 2 and "'good' looks the same but is another run id"
            in sweep.stderr and "CYRILLIC SMALL LETTER O" in sweep.stderr),
        "labels: Cyrillic annotator warned (row 2, annotator)": warned(
            lab, "row 2", "'annotator'", "Cyrillic"),
        "labels: U+2010 in extractor warned (row 4, extractor)": "-" not in ex or warned(
            lab, "row 4", "'extractor'", "U+2010"),
        "labels: NUL annotator refused (row 3)": "row 3" in lab.stdout and "U+0000" in lab.stdout,
        "references: U+2010 reference id warned (line 1)": warned(
            rf, "line 1", "'reference_id'", "U+2010"),
        "references: NUL annotator refused (line 2)": (
            "line 2" in rf.stdout and "U+0000" in rf.stdout),
    }
    return tally(row, "look-alike ids warned, explained, NUL refused", checks)


def claims_row(row: Callable[..., Any], tmp: Path) -> Any:
    """Item 8d: each edit of rows no signature covers fails `truss-lab audit` on
    content_claims_hold; the unedited database passes."""
    import json
    import shutil

    from truss_lab.store._store import Store

    d = tmp / "claims"
    d.mkdir()
    db = governed_db(d)
    p = run_cli(["audit", "--db", str(db), "--json"], timeout=300)
    checks = {"clean database: audit passes": p.returncode == 0}
    for name, sqls in CLAIM_EDITS.items():
        copy = d / "edited.duckdb"
        shutil.copy(db, copy)
        with Store(copy) as s:
            for sql in sqls:
                s.sql(sql)
        p = run_cli(["audit", "--db", str(copy), "--json"], timeout=300)
        try:
            failed = {c["name"] for c in json.loads(p.stdout)["checks"] if not c["passed"]}
        except (ValueError, KeyError):
            failed = set()
        checks[f"{name}: audit fails content_claims_hold"] = (
            p.returncode == 1 and "content_claims_hold" in failed)
        copy.unlink()
    return tally(row, "integrity claims: edits fail the audit", checks)


ATTACK_ROWS: tuple[Callable[[Callable[..., Any], Path], Any], ...] = (
    secrets_dump_row, fifo_row, device_row, toml_depth_row, governed_row, weak_row,
    base_url_row, retry_row, lookalike_row, claims_row)
"""Issue 39's rows, in the order of its items."""


def attack_rows(row: Callable[..., Any], tmp: Path, quick: bool) -> list[Any]:
    """The rows of issue 39's items; a row that crashes is a failed row of its own."""
    out = []
    for fn in ATTACK_ROWS:
        try:
            out.append(fn(row, tmp))
        except Exception as exc:
            out.append(row(f"{fn.__name__}: crashed", 1, 0,
                           f"{type(exc).__name__}: {exc}"[:160]))
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the rows named on the command line (function names; default all) and print
    them as ``make reliability`` does: ``python -m scripts.reliability_attack retry_row``."""
    import sys
    import tempfile

    from scripts.reliability import Row, print_table

    names = list(sys.argv[1:] if argv is None else argv)
    fns = [f for f in ATTACK_ROWS if not names or f.__name__ in names]
    with tempfile.TemporaryDirectory(prefix="truss-attack-") as t:
        rows = []
        for fn in fns:
            try:
                rows.append(fn(Row, Path(t)))
            except Exception as exc:
                rows.append(Row(f"{fn.__name__}: crashed", 1, 0, f"{exc}"[:160]))
    print_table(rows)
    return 0 if all(r.good for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
