"""Reading a database another process holds for writing: a checked snapshot, said so,
removed afterwards; writers still refused. The other process is real (a subprocess
holding DuckDB's write lock) and has committed data that is only in its WAL."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pytest
from click.testing import Result

import truss_lab as tl
from tests.builders.cli import invoke
from tests.builders.stores import copy_db
from truss_lab.core._errors import StoreError, StoreLockedError
from truss_lab.store._snapshot import take_snapshot
from truss_lab.store._store import open_store


@contextmanager
def holder(code: str) -> Iterator[subprocess.Popen[str]]:
    """A process that runs ``code`` (which ends by printing ``ready``), then holds
    everything open until its stdin closes."""
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code) + "\nsys.stdin.read()\n"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line == "ready", f"the holder failed: {line!r}"
        yield proc
    finally:
        proc.communicate(input="", timeout=60)


@pytest.fixture(scope="module")
def db(sample_full: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    # a copy of a closed file: everything checkpointed into it, with a run to report on
    path = copy_db(sample_full, tmp_path_factory.mktemp("snap") / "lab.duckdb")
    with tl.Store(path) as s:
        tl.run_extraction(s, tl.Extractor.heuristic(), tl.MemoryConfig(lesson_extraction="on"),
                          verdicts="seq <= 40", run_id="heur", write_memory=False)
    return path


# The notebook of the story: it opens the store for writing and commits a run
# record that stays in the WAL (far below DuckDB's checkpoint threshold).
_NOTEBOOK = """
    import sys
    from truss_lab.store._store import Store
    from truss_lab.store._runs import create_run
    s = Store({path!r})
    create_run(s, "held-run", extractor_id="x", provider="replay", policy="on",
               extraction_min_salience=0.7, write_memory=False, prompt_version=None,
               prompt_hash=None)
    print("ready", flush=True)
"""


def _cli(db: Path, *args: str, tmp: Path) -> Result:
    """``truss-lab ARGS --db DB`` in this process: the lock is the holder's, another
    process, which is all a snapshot needs (a CLI process would cost a Python start-up each).
    The snapshot's folder lands in ``tmp``, where the test can see that it is gone."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(tempfile, "tempdir", str(tmp))
        return invoke(*args, "--db", db, catch_exceptions=False)


def test_read_only_commands_read_a_snapshot_and_say_so(db: Path, tmp_path: Path) -> None:
    assert not Path(f"{db}.wal").exists()
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    with holder(_NOTEBOOK.format(path=str(db))) as proc:
        assert Path(f"{db}.wal").stat().st_size > 0  # the held run is in the WAL only
        for cmd in (["runs"], ["verify"], ["audit"], ["errors", "held-run"]):
            r = _cli(db, *cmd, tmp=scratch)
            assert r.exit_code == 0, (cmd, r.stderr)
            note = r.stderr.strip().splitlines()
            assert len(note) == 1 and note[0].startswith("note: "), (cmd, r.stderr)
            assert f"PID {proc.pid}" in note[0] and "snapshot" in note[0]
            assert "later writes are not seen" in note[0]
            assert list(scratch.iterdir()) == [], cmd  # the copy is removed afterwards
        r = _cli(db, "runs", tmp=scratch)
        assert "held-run" in r.stdout  # committed in the WAL, read from the copied WAL
        out = scratch.parent / "held.html"
        r = _cli(db, "report", "heur", "--out", str(out), "--n-boot", "5", tmp=scratch)
        assert r.exit_code == 0 and r.stderr.startswith("note: "), r.stderr
        assert (f"database {db} (a snapshot copied at " in out.read_text(encoding="utf-8"))
        assert list(scratch.iterdir()) == []
        # The held run has no candidates: nothing to report, one line after the note.
        r = _cli(db, "report", "held-run", "--out", str(out), tmp=scratch)
        assert r.exit_code == 2 and r.stderr.splitlines()[1:] == [
            "error: field 'run': run 'held-run' has no candidates to evaluate (it proposed "
            "no lesson; its errors: `truss-lab errors held-run`)"], r.stderr
        assert list(scratch.iterdir()) == []
        assert "ok: 1200 entries verified" in _cli(db, "verify", tmp=scratch).stdout
        # Writers are still refused, clearly, and write nothing.
        for cmd in (["init"], ["ingest", "labels", str(tl.SAMPLE_DIR / "labels.csv")]):
            w = _cli(db, *cmd, tmp=scratch)
            assert w.exit_code == 2, (cmd, w.stderr)
            assert w.stderr.startswith("error:") and "Traceback" not in w.stderr
            assert f"PID {proc.pid}" in w.stderr and "locked by another process" in w.stderr
            assert list(scratch.iterdir()) == []
    # Once the notebook has closed, the file is read directly: no note.
    r = _cli(db, "runs", tmp=scratch)
    assert r.exit_code == 0 and r.stderr == "" and "held-run" in r.stdout


def test_open_store_snapshot_in_python(db: Path) -> None:
    with holder(_NOTEBOOK.format(path=str(db))) as proc:
        with pytest.raises(StoreLockedError, match=f"PID {proc.pid}"):
            open_store(db, read_only=True)  # without snapshot=True: the clear refusal
        with pytest.raises(StoreError, match="read_only=True"):
            open_store(db, snapshot=True)
        store = open_store(db, read_only=True, snapshot=True)
        snap = store.snapshot
        assert snap is not None and snap.source == str(db) and snap.holder == f"PID {proc.pid}"
        assert snap.copy.exists() and snap.copy.parent != db.parent
        assert store.sql("SELECT count(*) FROM extraction_runs WHERE run_id = 'held-run'"
                         ).fetchall() == [(1,)]
        with pytest.raises(StoreError, match="read-only"):
            with store.transaction():
                pass
        store.close()
        assert snap.removed and not snap.copy.parent.exists()
    with open_store(db, read_only=True, snapshot=True) as store:
        assert store.snapshot is None  # nobody holds it: the file itself


_BUSY_WRITER = """
    import sys, time, duckdb
    con = duckdb.connect({path!r})
    con.execute("CREATE TABLE t (i BIGINT, batch INT)")
    con.execute("CHECKPOINT")
    print("ready", flush=True)
    n = 0
    for batch in range(1, 10_000):
        # Large batches go straight to the database file (optimistic writes),
        # every fifth is checkpointed: the file changes, not only the WAL.
        size = 150_000 if batch % 3 == 0 else 10
        con.execute("INSERT INTO t SELECT range, ? FROM range(?, ?)", [batch, n, n + size])
        n += size
        if batch % 5 == 0:
            con.execute("CHECKPOINT")
        time.sleep(0.02 * (batch % 4))
        if sys.stdin in __import__("select").select([sys.stdin], [], [], 0)[0]:
            break
"""


def test_snapshots_of_a_busy_writer_are_consistent(tmp_path: Path) -> None:
    """A writer committing and checkpointing all the time: every snapshot that is
    taken opens and holds whole transactions (rows 0..n-1, no gap, no torn batch);
    one that cannot be taken says so."""
    path = tmp_path / "busy.duckdb"
    seen, refused = [], 0
    with holder(_BUSY_WRITER.format(path=str(path))):
        for _ in range(12):
            try:
                snap = take_snapshot(path)
            except StoreLockedError as exc:
                assert "changed during each" in str(exc)
                refused += 1
                continue
            try:
                con = duckdb.connect(str(snap.copy), read_only=True)
                n, lo, hi = con.execute("SELECT count(*), min(i), max(i) FROM t").fetchall()[0]
                sizes = dict(con.execute("SELECT batch, count(*) FROM t GROUP BY 1").fetchall())
                con.close()
            finally:
                snap.remove()
            assert not snap.copy.parent.exists()
            if n:
                assert (lo, hi) == (0, n - 1), (n, lo, hi)
            # whole batches only, and every batch up to the last one seen
            assert sorted(sizes) == list(range(1, len(sizes) + 1))
            assert all(c == (150_000 if b % 3 == 0 else 10) for b, c in sizes.items()), sizes
            seen.append((n, len(sizes)))
    assert seen, f"no snapshot in 12 tries ({refused} refused)"
    assert seen == sorted(seen)  # later snapshots never see less
