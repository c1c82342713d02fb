"""Issue #15 item 7: worker processes die with their driver (kill -9 of the driver)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

DRIVER = """
import sys, time
from truss_lab.extract._batch import make_executor
from truss_lab.extract._extractor import Extractor

ex = make_executor("processes:2", Extractor.heuristic())
# Two tasks at once: the pool starts both workers (and the resource tracker).
futures = [ex.submit([]), ex.submit([])]
for f in futures:
    f.result()
print("ready", flush=True)
time.sleep(600)
"""


def _children(pid: int) -> set[int]:
    """Every live descendant of ``pid`` (from /proc)."""
    parents: dict[int, int] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            parents[int(d.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    out, todo = set(), [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parents.items() if pp == p]
        out.update(kids)
        todo.extend(kids)
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc (Linux)")
def test_workers_exit_when_the_driver_is_killed() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    driver = subprocess.Popen([sys.executable, "-c", DRIVER], stdout=subprocess.PIPE,
                              env=env, text=True)
    try:
        assert driver.stdout is not None
        assert driver.stdout.readline().strip() == "ready"
        kids = _children(driver.pid)
        assert len(kids) >= 2  # two workers (+ the resource tracker)
        driver.send_signal(signal.SIGKILL)
        driver.wait()
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any(_alive(k) for k in kids):
            time.sleep(0.1)
        left = [k for k in kids if _alive(k)]
        for k in left:  # do not leave them behind even when the test fails
            os.kill(k, signal.SIGKILL)
        assert not left, f"{len(left)} of {len(kids)} child processes outlived the driver"
    finally:
        if driver.poll() is None:
            driver.kill()
