"""Kill `truss-lab extract` with SIGKILL at random points, resume, compare.

Every kill is followed by `--resume RUN`; at the end the run's rows must have
the same content hashes as an uninterrupted run, no duplicate row anywhere,
and the journal must still verify.

    .venv/bin/python -m benchmarks.resume_torture            # 50 kills
    .venv/bin/python -m benchmarks.resume_torture --kills 10 --seed 3
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from tests.builders.stores import sample_template
from truss_lab.core._config import MemoryConfig
from truss_lab.extract._batch import run_extraction
from truss_lab.extract._extractor import Extractor
from truss_lab.journal._ledger import verify_chain
from truss_lab.store._runs import run_content_hashes
from truss_lab.store._store import Store

ROOT = Path(__file__).resolve().parents[1]
RUN_ID = "torture"
_PROGRESS = re.compile(rb"(\d+)/\d+ \[")

_DUPLICATES = {
    "candidates": "SELECT count(*) - count(DISTINCT (run_id, candidate_id)) FROM candidates",
    "memory_entries": "SELECT count(*) - count(DISTINCT entry_id) FROM memory_entries",
    "events": "SELECT count(*) - count(DISTINCT event_id) FROM events",
    "verdict_errors": "SELECT count(*) - count(DISTINCT (run_id, verdict_hash, stage)) "
                      "FROM verdict_errors",
    "run_chunks": "SELECT count(*) - count(DISTINCT (run_id, chunk_index)) FROM run_chunks",
}


def _run_state(db: Path) -> tuple[bool, int]:
    """(run exists, chunks done), read after the killed process is gone."""
    with Store(db) as s:
        rows = s.sql("SELECT count(*) FROM extraction_runs WHERE run_id = ?", [RUN_ID]).fetchall()
        done = s.sql("SELECT count(*) FROM run_chunks WHERE run_id = ?", [RUN_ID]).fetchall()
        return bool(rows[0][0]), int(done[0][0])


def _watch(proc: subprocess.Popen[bytes]) -> list[Any]:
    """[verdicts done per the progress bar, stderr tail], updated by a reader thread."""
    state: list[Any] = [0, ""]

    def read() -> None:
        assert proc.stderr is not None
        buf = b""
        while chunk := proc.stderr.read1(4096):
            buf = (buf + chunk)[-4096:]
            found = _PROGRESS.findall(buf)
            if found:
                state[0] = int(found[-1])
            state[1] = buf[-300:].decode("utf-8", "replace")
        proc.stderr.close()

    threading.Thread(target=read, daemon=True).start()
    return state


def torture(template: Path, workdir: Path, *, kills: int, seed: int,
            verdicts: str = "seq <= 600", chunk_size: int = 2,
            delay: tuple[float, float] = (0.2, 3.5)) -> dict[str, Any]:
    """Kill/resume ``kills`` times; return the comparison (``ok`` True when all held).

    Chunks of 2 verdicts by default: on a quiet machine a replay run of 500 verdicts in
    chunks of 10 finished between two updates of its progress bar (tqdm's 0.1 s), so
    every kill landed after the run's end and none tested a resume."""
    config = MemoryConfig(lesson_extraction="model-scored")
    ref_db = workdir / "reference.duckdb"
    shutil.copy(template, ref_db)
    with Store(ref_db) as s:
        ref = run_extraction(s, Extractor.replay(s, "sim-good-v1"), config, verdicts=verdicts,
                             chunk_size=chunk_size, run_id=RUN_ID, progress=False)
        want = run_content_hashes(s, RUN_ID)
        want_counts = (ref.n_verdicts, ref.n_candidates, ref.n_lessons, ref.n_errors)
    n_chunks = -(-ref.n_verdicts // chunk_size)

    db = workdir / "killed.duckdb"
    shutil.copy(template, db)
    # No --quiet: the progress bar on stderr tells us how far the run is.
    base = [sys.executable, "-m", "truss_lab.faces.cli", "extract", "--db", str(db)]
    first = ["--extractor", "replay:sim-good-v1", "--policy", "model-scored",
             "--verdicts", verdicts, "--chunk-size", str(chunk_size), "--run-id", RUN_ID]
    rng = random.Random(seed)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    points: list[tuple[str, int, str]] = []
    for k in range(kills):
        exists, done = _run_state(db)
        args = base + (["--resume", RUN_ID] if exists else first)
        proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        seen = _watch(proc)
        per_kill = max(1, (n_chunks - done) // max(1, kills - k))
        by_time = rng.random() < 0.3
        # By time: a random moment, in start-up, verification or the first chunks (never
        # more than 2 * per_kill chunks in, so later kills still find work to interrupt).
        # By progress: a random chunk boundary ahead, then a random few ms into the next
        # chunk (its extraction, its transaction or its commit).
        wait = rng.uniform(0.05, delay[1]) if by_time else 60.0
        target = min(n_chunks, done + (2 * per_kill if by_time else
                                       rng.randint(0, 2 * per_kill))) * chunk_size
        t0 = time.monotonic()
        while seen[0] < target and proc.poll() is None and time.monotonic() - t0 < wait:
            time.sleep(0.005)
        extra = 0.0 if by_time and seen[0] < target else rng.uniform(0.0, 0.05)
        time.sleep(extra)
        where = (f"t={time.monotonic() - t0:.2f}s" if by_time else
                 f"{target // chunk_size} chunks+{extra * 1000:.0f}ms")
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            outcome = "killed"
        else:
            outcome = "finished" if proc.returncode == 0 else f"rc={proc.returncode}: {seen[1]}"
        points.append((where, _run_state(db)[1], outcome))
    exists, _ = _run_state(db)
    final = subprocess.run(base + (["--resume", RUN_ID] if exists else first), cwd=ROOT,
                           env=env, capture_output=True, text=True, check=False)
    with Store(db) as s:
        got = run_content_hashes(s, RUN_ID)
        row = s.sql("SELECT status, n_verdicts, n_candidates, n_lessons, n_errors FROM "
                    "extraction_runs WHERE run_id = ?", [RUN_ID]).fetchall()[0]
        dups = {k: int(s.sql(q).fetchall()[0][0]) for k, q in _DUPLICATES.items()}
        chunks = int(s.sql("SELECT count(*) FROM run_chunks WHERE run_id = ?",
                           [RUN_ID]).fetchall()[0][0])
        verified = verify_chain(s).ok
    bad_outcomes = [p for p in points if p[2] not in ("killed", "finished")]
    return {
        "ok": (final.returncode == 0 and got == want and not any(dups.values()) and verified
               and row[0] == "finished" and tuple(row[1:]) == want_counts
               and chunks == n_chunks and not bad_outcomes),
        "final_rc": final.returncode, "final_stderr": final.stderr[-500:],
        "same_hashes": got == want, "duplicates": dups, "journal_verifies": verified,
        "run_row": row, "reference_counts": want_counts, "chunks": (chunks, n_chunks),
        "kill_points": points,
        "mid_run_kills": sum(1 for p in points if p[2] == "killed" and p[1] < n_chunks),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=50)
    ap.add_argument("--seed", type=int, default=2026)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        t0 = time.perf_counter()
        res = torture(sample_template(work / "template.duckdb"), work, kills=args.kills,
                      seed=args.seed)
    for where, done, outcome in res["kill_points"]:
        print(f"  kill at {where:>22}: {done:3d}/{res['chunks'][1]} chunks done ({outcome})")
    print(f"kills: {args.kills} (seed {args.seed}), landed mid-run: {res['mid_run_kills']}")
    print(f"same content hashes as an uninterrupted run: {res['same_hashes']}")
    print(f"duplicates: {res['duplicates']}")
    print(f"journal verifies: {res['journal_verifies']}; run row: {res['run_row']}")
    print(f"RESULT: {'PASS' if res['ok'] else 'FAIL'} in {time.perf_counter() - t0:.0f}s")
    return 0 if res["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
