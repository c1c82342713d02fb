"""Rows of ``make reliability`` for issue 28's secret items (1-4), one function per item.

Each row re-runs the issue's reproduction through the real CLI (in a subprocess, as a
user would) against a local server that echoes the caller's API key back
(tests/builders/echo.py), then greps every artefact for the key: the database file
and its WAL, the CSV export, the HTML report, a Python recording.
``scripts/reliability.py`` calls :func:`secrets_echo_rows`; the rows use its ``Row``.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scripts.reliability_holes import cli, one_line, tally
from tests.builders.echo import EchoServer, leaks
from tests.builders.http_server import ScriptedServer
from tests.test_openai import request
from truss_lab.extract._providers import CompletionRecorder, OpenAICompatibleProvider
from truss_lab.faces._notebook import load_sample
from truss_lab.store._store import Store

# Verdicts of the sample that have reference lessons (so `match` calls the model).
_VERDICTS = "seq IN (13, 14, 17)"


def _sample_db(path: Path) -> Path:
    load_sample(path).close()
    return path


def _echo_run(tmp: Path, mode: str, key: str) -> tuple[dict[str, bool], list[str]]:
    """extract, judge, match, export and report with the key echoed in ``mode``; the
    checks that the commands ran, and the artefacts that hold the key."""
    d = tmp / f"echo_{mode}"
    d.mkdir()
    db = _sample_db(d / "lab.duckdb")
    env = {"OPENAI_API_KEY": key}
    checks: dict[str, bool] = {}
    with EchoServer(mode) as srv:
        p = cli("extract", "--db", str(db), "--extractor", "openai:m", "--base-url",
                srv.base_url, "--policy", "on", "--verdicts", _VERDICTS, "--json", env=env)
        checks["extract ran"] = p.returncode == 0
        run_id = json.loads(p.stdout)["run_id"] if p.returncode == 0 else "none"
        for cmd in ("judge", "match"):
            p = cli(cmd, run_id, "--db", str(db), "--judge", "openai:j", "--base-url",
                    srv.base_url, env=env)
            checks[f"{cmd} ran, no traceback"] = "Traceback" not in p.stdout + p.stderr
        checks["the key went out on every call"] = srv.count >= 9 and all(
            r.headers.get("authorization") == f"Bearer {key}" for r in srv.requests)
    p = cli("export", "--db", str(db), "--format", "csv", "--out", str(d / "export"))
    checks["export ran"] = p.returncode == 0
    p = cli("report", run_id, "--db", str(db), "--out", str(d / "report.html"))
    checks["report ran"] = p.returncode == 0
    return checks, leaks(key, db, d / "export", d / "report.html")


def _echo_row(row: Callable[..., Any], tmp: Path, mode: str, name: str) -> Any:
    key = "sk-rel28-" + secrets.token_hex(16)
    checks, found = _echo_run(tmp, mode, key)
    checks["no key in DB, WAL, CSV export, report"] = not found
    if mode == "model":
        checks["no key in a Python recording's model"] = _recorder_clean(key)
    return tally(row, name, checks)


def _recorder_clean(key: str) -> bool:
    """A Python recorder of a live provider keeps no key the server put in ``model``."""
    env = "TRUSS_LAB_RELIABILITY_ECHO_KEY"
    os.environ[env] = key
    try:
        rec = CompletionRecorder()
        with EchoServer("model") as srv:
            p = OpenAICompatibleProvider(srv.base_url, "m-small", api_key_env=env, max_retries=0,
                                         recorder=rec)
            echoed = p.complete(request(1)).model == key
            p.close()
    finally:
        os.environ.pop(env, None)
    return echoed and key not in json.dumps(rec.records)


def query_key_row(row: Callable[..., Any], tmp: Path) -> Any:
    """Item 3: the key in the --base-url query is sent there, and stored masked."""
    key = "sk-rel28q-" + secrets.token_hex(16)
    d = tmp / "query_key"
    d.mkdir()
    db = _sample_db(d / "lab.duckdb")
    with ScriptedServer() as srv:
        p = cli("extract", "--db", str(db), "--extractor", "openai:m", "--base-url",
                f"{srv.base_url}?api-key={key}", "--policy", "on", "--verdicts", "seq<=2",
                "--json", env={"OPENAI_API_KEY": ""})
        paths = {r.path for r in srv.requests}
        run_id = json.loads(p.stdout)["run_id"] if p.returncode == 0 else "none"
        resumed = cli("extract", "--db", str(db), "--resume", run_id,
                      env={"OPENAI_API_KEY": ""})
    checks = {
        "extract ran": p.returncode == 0,
        "the key was sent in the query": paths == {f"/v1/chat/completions?api-key={key}"},
        "no key in the output": key not in p.stdout + p.stderr,
        "no key in DB, WAL": not leaks(key, db),
        "--resume asks for the masked --base-url": (
            one_line(resumed) and "--base-url" in resumed.stderr),
    }
    return tally(row, "key in --base-url query not stored", checks)


def non_ascii_key_row(row: Callable[..., Any], tmp: Path) -> Any:
    """Item 4: a non-ASCII key is one line, exit 2, before any request, nothing written."""
    d = tmp / "non_ascii_key"
    d.mkdir()
    db = _sample_db(d / "lab.duckdb")
    with Store(db, read_only=True) as s:
        before = s.counts()
    checks: dict[str, bool] = {}
    with ScriptedServer() as srv:
        for cmd in (["extract", "--db", str(db), "--extractor", "openai:m", "--policy", "on"],
                    ["judge", "r0", "--db", str(db), "--judge", "openai:j"],
                    ["match", "r0", "--db", str(db), "--judge", "openai:j"]):
            p = cli(*cmd, "--base-url", srv.base_url,
                    env={"OPENAI_API_KEY": "sk-caf\u00e9-" + "7e" * 12})
            checks[f"{cmd[0]}: one line naming OPENAI_API_KEY"] = (
                one_line(p) and "OPENAI_API_KEY" in p.stderr and "7e7e" not in p.stderr)
        checks["no request"] = srv.count == 0
    with Store(db, read_only=True) as s:
        checks["nothing written"] = s.counts() == before
    return tally(row, "non-ASCII API key refused", checks)


def secrets_echo_rows(row: Callable[..., Any], tmp: Path) -> list[Any]:
    """The rows of items 1-4."""
    return [
        _echo_row(row, tmp, "model", "key echoed in model: in no artefact"),
        _echo_row(row, tmp, "evidence", "key echoed in evidence: in no artefact"),
        query_key_row(row, tmp),
        non_ascii_key_row(row, tmp),
    ]
