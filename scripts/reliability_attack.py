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
from tests.builders.inputs import INPUTS, TOML_INPUTS, deep_toml, run_cli
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


def attack_rows(row: Callable[..., Any], tmp: Path, quick: bool) -> list[Any]:
    """The rows of issue 39's items."""
    return [secrets_dump_row(row, tmp), fifo_row(row, tmp), device_row(row, tmp),
            toml_depth_row(row, tmp), governed_row(row, tmp), weak_row(row, tmp)]
