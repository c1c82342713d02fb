"""Rows of ``make reliability`` for issue 28's silent-loss items (11-14) and item 13's follow-up
(bounded completion text), one function each.

Each row re-runs the issue's reproduction through the real CLI (against the real local
HTTP server of the tests where a model answers) and counts what held.
``scripts/reliability.py`` calls :func:`loss_rows`; the rows use its ``Row``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scripts.reliability_holes import ENV, ROOT, SAMPLE, cli, tally


def _lab_db(tmp: Path, name: str) -> Path:
    """A database holding the sample's journal and completions."""
    from truss_lab.ingest._ingest import ingest_completions
    from truss_lab.journal._ledger import import_journal
    from truss_lab.store._store import Store

    db = tmp / name
    with Store(db) as s:
        import_journal(s, SAMPLE / "journal.jsonl", keyring=SAMPLE / "keys.json")
        ingest_completions(s, SAMPLE / "completions.jsonl")
    return db


def _same_lesson(body: Any) -> dict[str, Any]:
    from tests.builders.http_server import default_completion

    out = default_completion(body)
    for choice in out["choices"]:
        choice["message"]["content"] = json.dumps({"lessons": [
            {"text": "Pin the scheduler timezone before the DST switch", "salience": 0.6}]})
    return out


def audit_k_samples_row(row: Callable[..., Any], tmp: Path) -> Any:
    """Item 11: a clean ``extract --samples 3 --policy on`` passes the audit, whether the
    samples repeat one lesson or differ; a non-representative let through is caught."""
    from tests.builders.http_server import ScriptedServer, default_completion
    from truss_lab.store._store import Store

    checks: dict[str, bool] = {}
    for name, responder in (("same lesson", _same_lesson), ("varied", default_completion)):
        db = _lab_db(tmp, f"k3_{name.replace(' ', '_')}.duckdb")
        with ScriptedServer(responder=responder) as srv:
            p = cli("extract", "--db", str(db), "--extractor", "openai:tiny", "--base-url",
                     srv.base_url, "--samples", "3", "--seed", "3", "--policy", "on",
                     "--verdicts", "seq <= 6", "--quiet")
        checks[f"{name}: extract exit 0"] = p.returncode == 0
        checks[f"{name}: audit passes"] = cli("audit", "--db", str(db)).returncode == 0
    with Store(db) as s:
        s.sql("UPDATE candidates SET passed_gate = true WHERE sample_index = 2")
    p = cli("audit", "--db", str(db))
    checks["a non-representative passed: gate_respected fails"] = (
        p.returncode == 1 and "FAIL gate_respected" in p.stdout)
    return tally(row, "audit agrees with the k-sample gate (#28 item 11)", checks)


def reference_conflict_row(row: Callable[..., Any], tmp: Path) -> Any:
    """Item 12: references re-ingested with the same keys and changed text are conflicts
    (reported, exit 3, stored text kept, not "already present"), as labels are."""
    from truss_lab.store._store import Store

    db = _lab_db(tmp, "conflicts.duckdb")
    refs = SAMPLE / "references.jsonl"
    checks: dict[str, bool] = {}
    p = cli("ingest", "references", str(refs), "--db", str(db))
    checks["first ingest: exit 0"] = p.returncode == 0
    recs = [json.loads(x) for x in refs.read_text().splitlines()]
    for r in recs:
        r["text"] = r["text"] and r["text"] + " (revised)"
    n_changed = sum(bool(r["text"]) for r in recs)
    changed = tmp / "references_changed.jsonl"
    changed.write_text("".join(json.dumps(r) + "\n" for r in recs))
    p = cli("ingest", "references", str(changed), "--db", str(db), "--json")
    rep = json.loads(p.stdout or "{}")
    checks["changed text: exit 3"] = p.returncode == 3
    checks["every changed row a conflict"] = (
        sum("different content" in e for e in rep.get("errors", [])) == n_changed)
    checks["conflicts not counted present"] = rep.get("rows_present") == len(recs) - n_changed
    with Store(db, read_only=True) as s:
        checks["stored text kept"] = s.sql(
            "SELECT count(*) FROM reference_lessons WHERE text LIKE '%(revised)'"
        ).fetchall() == [(0,)]
    lines = (SAMPLE / "labels.csv").read_text().splitlines()
    cli("ingest", "labels", str(SAMPLE / "labels.csv"), "--db", str(db))
    f = lines[1].split(",")
    flipped = tmp / "labels_flipped.csv"
    flipped.write_text("\n".join([lines[0], ",".join([*f[:3], str(1 - int(f[3])), *f[4:]])])
                       + "\n")
    p = cli("ingest", "labels", str(flipped), "--db", str(db))
    checks["labels: same report, exit 3"] = (p.returncode == 3
                                             and "different content" in p.stdout)
    return tally(row, "re-ingest with changed content is a conflict (#28 item 12)", checks)


def reference_bounds_row(row: Callable[..., Any], tmp: Path) -> Any:
    """Item 13: a 20 MB reference text is a bad line named by line and field (the good
    ones land); a reference to an unknown verdict is warned, and the audit names it; a
    long text already in the table is cut in the report."""
    from truss_lab.ingest._fields import MAX_REFERENCE_TEXT
    from truss_lab.store._store import Store

    db = _lab_db(tmp, "bounds.duckdb")
    first = json.loads((SAMPLE / "references.jsonl").read_text().splitlines()[0])
    ok = {**first, "reference_id": "r-ok", "text": "x" * MAX_REFERENCE_TEXT}
    big = {**first, "reference_id": "r-big", "text": "x" * 20_000_000}
    unknown = {**first, "verdict_hash": "ab" * 32, "reference_id": "r-unknown", "text": "ok"}
    path = tmp / "references_big.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (ok, big, unknown)))
    p = cli("ingest", "references", str(path), "--db", str(db))
    checks = {
        "20 MB text: exit 3": p.returncode == 3,
        "named by line and field": "line 2, field 'text'" in p.stdout,
        "not echoed": len(p.stdout) + len(p.stderr) < 10_000,
        "unknown verdict warned": "unknown verdict (not in the journal)" in p.stderr,
    }
    with Store(db) as s:
        checks["good lines landed"] = s.sql(
            "SELECT count(*) FROM reference_lessons").fetchall() == [(2,)]
    p = cli("audit", "--db", str(db))
    checks["audit names the unknown verdict"] = (
        p.returncode == 1 and "FAIL references_point_at_verdicts" in p.stdout
        and "ab" * 6 in p.stdout)
    with Store(db) as s:
        s.sql("INSERT INTO reference_lessons SELECT hash, 'r-huge', ?, [], 'a', 't', now() "
              "FROM journal WHERE seq = 1", ["y" * 20_000_000])
    cli("ingest", "labels", str(SAMPLE / "labels.csv"), "--db", str(db))
    cli("extract", "--db", str(db), "--extractor", "replay:sim-good-v1", "--policy", "on",
         "--quiet", "--verdicts", "seq <= 100", "--run-id", "h")
    out = tmp / "bounds_report.html"
    p = cli("report", "--db", str(db), "h", "--out", str(out), "--n-verdicts", "3",
             "--n-boot", "10")
    checks["report written"] = p.returncode == 0 and out.exists()
    checks["report under 3 MB, text cut"] = (
        out.exists() and out.stat().st_size < 3_000_000
        and "of 20000000 characters)" in out.read_text(encoding="utf-8"))
    return tally(row, "reference text bounded, unknown verdict warned (#28 item 13)", checks)


def policy_provenance_row(row: Callable[..., Any], tmp: Path) -> Any:
    """Item 14: after ``propose``, deleting the lab journal's last entry (a valid shorter
    chain) fails ``verify`` as it fails ``audit``: a policy record points at it."""
    from truss_lab.store._store import Store

    db = _lab_db(tmp, "provenance.duckdb")
    cli("ingest", "labels", str(SAMPLE / "labels.csv"), "--db", str(db))
    cli("extract", "--db", str(db), "--extractor", "replay:sim-good-v1", "--policy",
         "model-scored", "--quiet", "--verdicts", "seq <= 200", "--run-id", "r1")
    key = tmp / "me.key"
    cli("keys", "generate", "--key-id", "me", "--out", str(key))
    checks = {"propose: exit 0": cli("propose", "--db", str(db), "--run", "r1", "--key",
                                      str(key)).returncode == 0,
              "verify clean before": cli("verify", "--db", str(db)).returncode == 0}
    with Store(db) as s:
        s.sql("DELETE FROM lab_journal WHERE seq = (SELECT max(seq) FROM lab_journal)")
    p = cli("verify", "--db", str(db))
    checks["last lab entry deleted: verify exit 1"] = (
        p.returncode == 1 and "policy record" in p.stdout and "broken_link" in p.stdout)
    p = cli("audit", "--db", str(db))
    checks["audit agrees"] = (p.returncode == 1 and "FAIL policy_provenance_signed" in p.stdout
                              and "FAIL chain_verifies" in p.stdout)
    return tally(row, "verify: every policy record's provenance resolves (#28 item 14)",
                  checks)


# A child reading a completions file and printing its own peak memory (VmHWM, MB), its
# good rows and its errors: the line bound must bound the memory, not only say no.
_READ_CHILD = """
import sys
from truss_lab.ingest._completions import read_completions
df, errors = read_completions(sys.argv[1])
with open("/proc/self/status") as f:
    hwm = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
print(hwm // 1024, len(df), len(errors))
"""


def _read_peak(path: Path) -> list[int]:
    p = subprocess.run([sys.executable, "-c", _READ_CHILD, str(path)], env=ENV, cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    return [int(x) for x in p.stdout.split()] if p.returncode == 0 else [-1, -1, -1]


def completion_bounds_row(row: Callable[..., Any], tmp: Path) -> Any:
    """Item 13's follow-up: a 50 MB completion line is a bad line named by line and field,
    refused without being read whole (the reader's peak memory grows by less than one
    line bound, against some 220 MB when it was read whole); a text just over its bound
    is named too, and the good lines land."""
    from truss_lab.ingest._completions import MAX_COMPLETION_LINE, MAX_COMPLETION_TEXT
    from truss_lab.store._store import Store

    db = _lab_db(tmp, "completion_bounds.duckdb")
    first = json.loads((SAMPLE / "completions.jsonl").read_text().splitlines()[0])
    recs = [{**first, "extractor": "ok", "text": "x" * MAX_COMPLETION_TEXT},
            {**first, "extractor": "huge", "text": "y" * 50_000_000},
            {**first, "extractor": "over", "text": "y" * (MAX_COMPLETION_TEXT + 1)}]
    big = tmp / "completions_big.jsonl"
    big.write_text("".join(json.dumps(r) + "\n" for r in recs))
    small = tmp / "completions_small.jsonl"
    small.write_text(json.dumps(recs[0]) + "\n")
    p = cli("ingest", "completions", str(big), "--db", str(db))
    checks = {
        "50 MB text: exit 3": p.returncode == 3,
        "named by line and field": ("line 2, field 'text'" in p.stdout
                                    and "line 3, field 'text'" in p.stdout),
        "not echoed": len(p.stdout) + len(p.stderr) < 10_000,
    }
    with Store(db, read_only=True) as s:
        checks["good line landed"] = s.sql(
            "SELECT extractor_id FROM completions WHERE extractor_id IN ('ok', 'huge', 'over')"
        ).fetchall() == [("ok",)]
    base, peak = _read_peak(small), _read_peak(big)
    checks["reader's memory bounded"] = (
        base[1:] == [1, 0] and peak[1:] == [1, 2]
        and peak[0] - base[0] < MAX_COMPLETION_LINE // 2**20)
    return tally(row, f"completion text bounded, 50 MB line read in +{peak[0] - base[0]} MB "
                      "(#28 item 13 follow-up)", checks)


def loss_rows(row: Callable[..., Any], tmp: Path, quick: bool) -> list[Any]:
    """Every row of this module (``row`` is reliability.py's ``Row``)."""
    sub = tmp / "loss"
    sub.mkdir(exist_ok=True)
    out = []
    for fn in (audit_k_samples_row, reference_conflict_row, reference_bounds_row,
               completion_bounds_row, policy_provenance_row):
        try:
            out.append(fn(row, sub))
        except Exception as exc:  # a crashed check is a failed row
            out.append(row(fn.__name__, 1, 0, f"crashed: {type(exc).__name__}: {exc}"[:160]))
    return out
