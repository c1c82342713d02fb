"""Stores for tests, benchmarks and scripts: fresh, or loaded with the sample or a simulation.

A dataset folder has the layout of ``datasets/sample/`` (``journal.jsonl``,
``keys.json``, ``completions.jsonl``, ``labels.csv``), which is also what
``simulate`` writes; :func:`load_dataset` imports one into a store.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from truss_lab.faces._notebook import SAMPLE
from truss_lab.ingest._ingest import ingest_completions, ingest_labels
from truss_lab.journal._ledger import import_journal
from truss_lab.simulate._simulate import DEFAULT_EXTRACTORS, SimulationResult, simulate
from truss_lab.store._store import Store

__all__ = [
    "SAMPLE", "copy_db", "drop_store", "fresh_store", "load_dataset", "lock_holder", "sample_store",
    "sample_template", "simulated_db",
]

DbPath = str | os.PathLike[str]


_EMPTY: list[Path] = []  # this process's empty, migrated database (made at first use)
_SHM = Path("/dev/shm")


def _empty_db() -> Path:
    if not _EMPTY:
        folder = Path(tempfile.mkdtemp(prefix="truss-lab-fresh-", dir=_SHM))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        Store(folder / "empty.duckdb").close()
        _EMPTY.append(folder / "empty.duckdb")
    return _EMPTY[0]


def fresh_store() -> Store:
    """A fresh, migrated store: where the machine has a memory-backed ``/dev/shm``, a copy
    there of an empty database migrated once per process (:func:`drop_store` removes it,
    the rest go when the process ends); elsewhere a store in memory.

    Migrating a new database costs about 0.3 s, nearly all of it DuckDB's 245 column
    comments (``COMMENT ON`` alters the catalog one column at a time); a copy costs a
    tenth of that, and the suite makes hundreds. Not a copy on disk: a commit there
    waits for the disk, and the journal's tests commit thousands of times (measured:
    tests/test_journal.py 434 s of wall for 65 s of CPU on disk, 59 s in /dev/shm, 64 s
    in memory)."""
    if not (_SHM.is_dir() and os.access(_SHM, os.W_OK)):
        return Store(":memory:")
    empty = _empty_db()
    fd, name = tempfile.mkstemp(suffix=".duckdb", dir=empty.parent)
    os.close(fd)
    shutil.copyfile(empty, name)
    return Store(name)


def drop_store(store: Store) -> None:
    """Close a :func:`fresh_store` and remove its file (if it has one)."""
    store.close()
    if store.path != ":memory:":
        Path(store.path).unlink(missing_ok=True)


def load_dataset(store: Store, folder: Path = SAMPLE, *, labels: bool = True) -> Store:
    """Import ``folder``'s signed journal, its completions and (unless ``labels=False``) labels."""
    import_journal(store, folder / "journal.jsonl", keyring=folder / "keys.json")
    ingest_completions(store, folder / "completions.jsonl")
    if labels:
        ingest_labels(store, folder / "labels.csv")
    return store


def sample_store(path: DbPath = ":memory:", *, labels: bool = True) -> Store:
    """An open store at ``path`` (in memory by default) holding the bundled sample."""
    store = Store(path)
    try:
        return load_dataset(store, SAMPLE, labels=labels)
    except BaseException:
        store.close()
        raise


def sample_template(path: Path, *, labels: bool = False) -> Path:
    """A database file at ``path`` holding the sample, to copy per test; returns ``path``.

    Without labels by default: the template of the extraction tests and the
    resume torture (journal and completions only).
    """
    sample_store(path, labels=labels).close()
    return path


def copy_db(template: Path, path: Path) -> Path:
    """A writable copy at ``path`` of the closed database file ``template``; returns ``path``.

    Copying a template is far cheaper than ingesting the sample again (a few
    milliseconds against half a second). ``copyfile``, not ``copy``: the copy is
    the caller's, whatever the template's mode.
    """
    shutil.copyfile(template, path)
    return path


def simulated_db(
    folder: Path, path: Path, *, runs: int, seed: int,
    extractors: Sequence[str] = DEFAULT_EXTRACTORS, labels: bool = False,
) -> SimulationResult:
    """Simulate ``runs`` verdicts into ``folder`` and load them into the database file ``path``."""
    sim = simulate(folder, runs=runs, seed=seed, extractors=extractors)
    with Store(path) as s:
        load_dataset(s, sim.out_dir, labels=labels)
    return sim


@contextmanager
def lock_holder(
    path: Path, *, env: Mapping[str, str] | None = None
) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the database ``path`` open for writing, until the block ends.

    Yields once the child has opened the store (it prints ``ready``); its PID is
    what a second writer's StoreLockedError must name.
    """
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys
            from truss_lab.store._store import Store
            s = Store({str(path)!r})
            print("ready", flush=True)
            sys.stdin.read()
        """)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
    )
    try:
        assert holder.stdout is not None
        line = holder.stdout.readline().strip()
        if line != "ready":
            raise RuntimeError(f"the lock holder did not open {path}: got {line!r}")
        yield holder
    finally:
        holder.communicate(input="", timeout=30)  # closing its stdin lets it exit
