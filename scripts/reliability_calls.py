"""Rows of ``make reliability`` for the live calls of issue #28 (items 9-10), one function
per item.

Each row re-runs the issue's reproductions against the real local HTTP server of the
tests (tests/builders/http_server.py: a slow drip, a huge body, a 429 asking to wait 11
days, malformed answers), the commands through the real CLI in a subprocess, and counts
what held. ``scripts/reliability.py`` calls :func:`calls_rows`; the rows use its ``Row``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scripts.reliability_holes import ENV, ROOT, SAMPLE, cli, one_line, tally
from tests.builders.http_server import Reply, ScriptedServer
from tests.builders.stores import sample_template

ANSWER = {"model": "m", "choices": [{"message": {"role": "assistant", "content": "ok"}}]}
RUN = "calls"

# A child process making one call (the server's URL and the cap in argv) and printing its
# peak RSS in MB and the error: the answer-size cap must bound the memory, not only say no.
# VmHWM is the peak of this process's own memory since exec; ru_maxrss is not: after the
# parent's vfork + exec it carries the parent's peak (the whole reliability run's).
_CHILD = """
import sys
from truss_lab.extract._providers import (ChatMessage, CompletionRequest,
                                          OpenAICompatibleProvider)
from truss_lab.core._errors import ProviderError
req = CompletionRequest(messages=(ChatMessage(role="user", content="hi"),), model="m",
                        verdict_hash="v", extractor="e", prompt_version="p")
p = OpenAICompatibleProvider(sys.argv[1], "m", max_retries=0)
try:
    p.complete(req)
    err = "none"
except ProviderError as exc:
    err = str(exc)
with open("/proc/self/status") as f:
    hwm = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
print(hwm // 1024, err)
"""


def _lab_run(tmp: Path, name: str) -> Path:
    """A sample database with a replayed run ``calls`` of 40 verdicts and the references."""
    db = sample_template(tmp / name)
    for args in (("extract", "--db", str(db), "--extractor", "replay:sim-good-v1", "--policy",
                  "on", "--verdicts", "seq <= 40", "--run-id", RUN, "--quiet"),
                 ("ingest", "references", str(SAMPLE / "references.jsonl"), "--db", str(db))):
        p = cli(*args)
        if p.returncode != 0:
            raise RuntimeError(f"{args[0]}: {p.stderr.strip()[:120]}")
    return db


def _timed(*args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    t0 = time.monotonic()
    p = cli(*args)
    return p, time.monotonic() - t0


def _big_body_child(url: str) -> tuple[int, str]:
    p = subprocess.run([sys.executable, "-c", _CHILD, url], env=ENV, cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    rss, _, err = p.stdout.strip().partition(" ")
    return int(rss or 0), err or p.stderr[-160:]


# -- 9. a deadline on the whole call, the breaker on match, a cap on the answer ---------------


def limits_row(row: Callable[..., Any], tmp: Path) -> Any:
    db = _lab_run(tmp, "limits.duckdb")
    checks: dict[str, bool] = {}
    drip = Reply(200, ANSWER, drip=2.0)  # one byte every 2 s, as in the issue
    with ScriptedServer() as srv:
        srv.add(*[drip] * 2)
        p, took = _timed("extract", "--db", str(db), "--extractor", "openai:m", "--policy", "on",
                         "--verdicts", "seq <= 5", "--base-url", srv.base_url, "--quiet",
                         "--deadline", "3", "--max-retries", "0",
                         "--max-consecutive-failures", "2")
        checks["extract vs a 2 s drip: breaker after 2 deadlines"] = (
            p.returncode == 2 and "deadline of 3s" in p.stderr and took < 30)
    for command in ("match", "judge"):
        with ScriptedServer() as srv:
            srv.add(*[Reply(429, "busy", headers={"Retry-After": "999999"})] * 5)
            p, took = _timed(command, RUN, "--db", str(db), "--extractor", "openai:m",
                             "--base-url", srv.base_url)
            checks[f"{command} vs 429 Retry-After 999999: breaker, exit 2 in {took:.0f}s"] = (
                one_line(p) and "5 verdicts in a row" in p.stderr and took < 30
                and srv.count == 5)
    with ScriptedServer() as srv:
        body = b'{"pad": "' + b"x" * (80 * 1024 * 1024) + b'"}'
        for length in (True, False):
            srv.add(Reply(200, body, length=length))
            rss, err = _big_body_child(srv.base_url)
            said = "Content-Length" if length else "no length"
            checks[f"80 MB body ({said}): refused at 8 MiB, peak RSS {rss} MB"] = (
                "larger than 8388608 bytes" in err and rss < 400)
    return tally(row, "live calls: deadline, breaker on match/judge, body cap", checks)


# -- 10. judge when every call failed, match with unusable answers --------------------------


def _no_match(body: Any) -> dict[str, Any]:
    """A usable match answer: every (lesson, reference) pair of the request, similarity 0."""
    text = body["messages"][-1]["content"]
    tags = [sorted(set(re.findall(rf"^\[({k}\d+)\]", text, re.M))) for k in "LR"]
    pairs = [{"lesson": a, "reference": b, "similarity": 0.0} for a in tags[0] for b in tags[1]]
    content = json.dumps({"pairs": pairs})
    return {**ANSWER, "choices": [{"message": {"role": "assistant", "content": content}}]}


def outcomes_row(row: Callable[..., Any], tmp: Path) -> Any:
    db = _lab_run(tmp, "outcomes.duckdb")
    checks: dict[str, bool] = {}
    with ScriptedServer(responder=lambda body: "bad request") as srv:
        srv.add(Reply(400, "no such model"))
        p = cli("judge", RUN, "--db", str(db), "--extractor", "openai:m", "--base-url",
                srv.base_url)
        checks["judge, every call a 400: exit 1, one line"] = (
            one_line(p, code=1) and f"every one of the {srv.count} calls failed" in p.stderr)
    prose = {**ANSWER, "choices": [{"message": {"role": "assistant",
                                                "content": "I think L0 matches R1."}}]}
    with ScriptedServer(responder=lambda body: prose) as srv:
        p = cli("match", RUN, "--db", str(db), "--extractor", "openai:m", "--base-url",
                srv.base_url)
        checks["match, every answer prose: exit 1, one line, no Python warning"] = (
            one_line(p, code=1) and "Warning" not in p.stderr
            and f"none of the {srv.count} answers could be used" in p.stderr)
    with ScriptedServer(responder=_no_match) as srv:
        srv.add(Reply(200, prose))
        p = cli("match", RUN, "--db", str(db), "--extractor", "openai:m", "--base-url",
                srv.base_url)
        checks["match, one answer prose: counted in its own words, no warning"] = (
            "Warning" not in p.stderr and ".py:" not in p.stderr
            and "verdict(s) left out, answer not usable" in p.stdout)
    return tally(row, "judge/match outcomes: all failed exits 1, no raw warning", checks)


def calls_rows(row: Callable[..., Any], tmp: Path) -> list[Any]:
    """Every row of this module (``row`` is reliability.py's ``Row``)."""
    sub = tmp / "calls"
    sub.mkdir(exist_ok=True)
    out = []
    for fn in (limits_row, outcomes_row):
        try:
            out.append(fn(row, sub))
        except Exception as exc:  # a crashed check is a failed row
            out.append(row(fn.__name__, 1, 0, f"crashed: {type(exc).__name__}: {exc}"[:160]))
    return out


if __name__ == "__main__":  # this module's rows alone
    import tempfile

    from scripts.reliability import Row, print_table

    with tempfile.TemporaryDirectory() as d:
        print_table(calls_rows(Row, Path(d)))
