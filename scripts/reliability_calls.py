"""Rows of ``make reliability`` for the live calls of issue #28 (items 9-10), one function
per item, and for issue #27's recordings (items 3 and 5: every live call billed to the run
that paid for it, reruns that replay as themselves, a killed judge that resumes).

Each row re-runs the issue's reproductions against the real local HTTP server of the
tests (tests/builders/http_server.py: a slow drip, a huge body, a 429 asking to wait 11
days, malformed answers), the commands through the real CLI in a subprocess, and counts
what held. ``scripts/reliability.py`` calls :func:`calls_rows`; the rows use its ``Row``.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scripts.reliability_holes import CLI, ENV, ROOT, SAMPLE, cli, one_line, tally
from tests.builders.http_server import CountingResponder, Reply, ScriptedServer
from tests.builders.stores import sample_template
from truss_lab.evaluate._judges import Judge, run_judge
from truss_lab.extract._batch import rerun
from truss_lab.store._runs import run_content_hashes
from truss_lab.store._store import Store
from truss_lab.store._usage import run_usage

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
            p, took = _timed(command, RUN, "--db", str(db), "--judge", "openai:m",
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
        p = cli("judge", RUN, "--db", str(db), "--judge", "openai:m", "--base-url",
                srv.base_url)
        checks["judge, every call a 400: exit 1, one line"] = (
            one_line(p, code=1) and f"every one of the {srv.count} calls failed" in p.stderr)
    prose = {**ANSWER, "choices": [{"message": {"role": "assistant",
                                                "content": "I think L0 matches R1."}}]}
    with ScriptedServer(responder=lambda body: prose) as srv:
        p = cli("match", RUN, "--db", str(db), "--judge", "openai:m", "--base-url",
                srv.base_url)
        checks["match, every answer prose: exit 1, one line, no Python warning"] = (
            one_line(p, code=1) and "Warning" not in p.stderr
            and f"none of the {srv.count} answers could be used" in p.stderr)
        prose_answers = srv.count
    # The server fixed, the run matched again: its recorded (prose) answers are replayed,
    # no call made, and the line says so and how to ask again (a rerun), which does.
    with ScriptedServer(responder=_no_match) as srv:
        p = cli("match", RUN, "--db", str(db), "--judge", "openai:m", "--base-url",
                srv.base_url)
        checks["match again, server fixed: 0 requests, says the prose was replayed"] = (
            one_line(p, code=1) and srv.count == 0
            and f"({prose_answers} of them recorded answers replayed from this run's "
                "recordings, no call made" in p.stderr)
        cli("rerun", RUN, "--db", str(db), "--run-id", f"{RUN}-again", "--quiet")
        p = cli("match", f"{RUN}-again", "--db", str(db), "--judge", "openai:m",
                "--base-url", srv.base_url)
        checks["match of a rerun, as that line says: the model asked, answers used"] = (
            p.returncode == 0 and srv.count == prose_answers and "left out" not in p.stdout)
    # A database of its own: in the one above the matcher recorded every (prose) answer
    # of this run, and a second match answers from its run's recordings, calling nothing.
    fresh = _lab_run(tmp, "outcomes_one.duckdb")
    with ScriptedServer(responder=_no_match) as srv:
        srv.add(Reply(200, prose))
        p = cli("match", RUN, "--db", str(fresh), "--judge", "openai:m", "--base-url",
                srv.base_url)
        checks["match, one answer prose: counted in its own words, no warning"] = (
            "Warning" not in p.stderr and ".py:" not in p.stderr
            and "verdict(s) left out, answer not usable" in p.stdout)
    return tally(row, "judge/match outcomes: all failed exits 1, replays said, no raw warning",
                 checks)


# -- issue 27 items 3 and 5: recordings belong to their run; a killed judge resumes ---------


class _Changing(CountingResponder):
    """A server model that answers each call differently (the n-th call's lesson names n,
    its completion tokens are n; its prompt tokens stay 100)."""

    def answer(self, body: Any, n: int) -> str:
        if "labels" in body["messages"][0]["content"]:  # a judge: every lesson useful
            shown = sorted({int(i) for i in re.findall(r"\[L?(\d+)\]",
                                                       body["messages"][-1]["content"])})
            return json.dumps({"labels": [{"lesson": i, "useful": 1} for i in shown]})
        return json.dumps({"lessons": [{"text": f"answer number {n}", "salience": 0.8}]})

    def prompt_tokens(self, n: int) -> int:
        return 100


def recordings_row(row: Callable[..., Any], tmp: Path) -> Any:
    db = sample_template(tmp / "recordings.duckdb")
    n = 40
    checks: dict[str, bool] = {}
    with ScriptedServer(responder=_Changing(), latency=0.02) as srv:
        for run in ("one", "two"):
            cli("extract", "--db", str(db), "--extractor", "openai:m", "--base-url",
                srv.base_url, "--policy", "on", "--dry-run", "--verdicts", f"seq <= {n}",
                "--run-id", run, "--quiet")
        paid = srv.count
        # The CLI runs the live runs, a rerun and the killed judge; the rest is read in
        # this process (each CLI start costs a second of CPU on a loaded machine).
        with Store(db, read_only=True) as s:
            usage = {r: run_usage(s, r).to_dict() for r in ("one", "two")}
        checks[f"2 live runs, same settings: {paid} calls, each run billed its {n}"] = (
            paid == 2 * n and all(u.get("live_calls") == n for u in usage.values())
            and usage["one"].get("completion_tokens") == sum(range(1, n + 1))
            and usage["two"].get("completion_tokens") == sum(range(n + 1, 2 * n + 1)))
        cli("rerun", "two", "--db", str(db), "--run-id", "two-again", "--quiet")
        with Store(db) as s:
            rerun(s, "one", new_run_id="one-again", progress=False)
        checks["reruns: 0 requests reach the server"] = srv.count == paid
        with Store(db, read_only=True) as s:
            h = {r: run_content_hashes(s, r) for r in ("one", "two", "one-again", "two-again")}
            again = run_usage(s, "two-again").to_dict()
        checks["each rerun gives its own run's candidates (content hashes)"] = (
            h["one-again"] == h["one"] and h["two-again"] == h["two"]
            and h["one"]["candidates"] != h["two"]["candidates"])
        checks["usage of a rerun: 0 live, the recorded calls' tokens"] = (
            again.get("live_calls") == 0 and again.get("recorded_calls") == n
            and again.get("recorded_completion_tokens") == usage["two"].get(
                "completion_tokens"))
        # A live judge killed part way keeps every answered call; run again, it asks only
        # for the rest.
        with Store(db, read_only=True) as s:
            verdicts = s.sql("SELECT count(DISTINCT verdict_hash) FROM candidates WHERE "
                             "run_id = 'one' AND valid").fetchall()[0][0]
        before = srv.count
        proc = subprocess.Popen([*CLI, "judge", "one", "--db", str(db), "--extractor",
                                 "openai:judge-m", "--base-url", srv.base_url],
                                env=ENV, cwd=ROOT, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        end = time.monotonic() + 120
        while srv.count < before + 10 and proc.poll() is None and time.monotonic() < end:
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        asked = srv.count - before
        with Store(db, read_only=True) as s:
            kept = s.sql("SELECT count(*) FROM completions WHERE starts_with(extractor_id, "
                         "'judge:judge-m@')").fetchall()[0][0]
        with Store(db) as s:
            res = run_judge(s, "one", Judge.openai(srv.base_url, "judge-m")).to_dict()
        total = srv.count - before
        checks[f"judge SIGKILLed after {asked} calls: {kept} kept, resumed, "
               f"{total} calls for {verdicts} verdicts"] = (
            proc.returncode == -signal.SIGKILL and kept >= asked - 1
            and res.get("resumed") == kept and total <= verdicts + 1
            and res.get("provider_calls") == verdicts - kept)
    return tally(row, "recordings: billed to their run, reruns, killed judge resumes", checks)


def calls_rows(row: Callable[..., Any], tmp: Path, quick: bool = False) -> list[Any]:
    """Every row of this module (``row`` is reliability.py's ``Row``); ``quick`` leaves
    out the recordings row (its tests run the same checks: tests/test_recordings_by_run.py,
    tests/test_judge_recordings_by_run.py, and the killed judge's resume in
    tests/test_judge_recording.py)."""
    sub = tmp / "calls"
    sub.mkdir(exist_ok=True)
    out = []
    for fn in (limits_row, outcomes_row, *(() if quick else (recordings_row,))):
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
