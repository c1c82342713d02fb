"""Reading a database another process is writing: a copy of its files, checked.

DuckDB lets no second process open a file that one process holds for writing,
not even read-only (its concurrency page: one read-write process, or many
read-only ones). A reader that must not wait -- ``truss-lab runs`` while a
notebook holds the store -- can still read a *snapshot*: a copy of the
database file and its write-ahead log, opened read-only. Why that copy is a
committed state, and what we check ourselves:

1. DuckDB writes a transaction to the WAL when it commits, never before; a
   copy of file + WAL therefore holds committed transactions only.
2. A WAL copied while a commit is being appended ends in a torn entry; every
   entry is sized and checksummed (duckdb/duckdb#10126) and replay stops at
   the last whole one (a torn tail is discarded, a checksum failure is an
   error: duckdb/duckdb#13758). Checked here with DuckDB 2.0: cutting bytes
   off a copied WAL gives the state before that commit.
3. The database file itself changes between checkpoints too: a large insert
   writes its row groups straight into the file before the commit that the
   WAL then points at, and a checkpoint rewrites blocks and the header. A copy
   that overlaps such a write could pair a WAL with blocks it does not
   describe. So the file must not change while it and the WAL are copied:
   its size, modification time and inode are compared before and after, a
   file modified less than :data:`QUIET` seconds ago is waited for (the
   kernel's modification time is coarse), and a checkpoint in progress (the
   ``.wal.checkpoint`` file exists) is waited out. A copy that changed is
   thrown away and taken again, up to :data:`ATTEMPTS` times; then the open
   fails, saying so.

The snapshot lives in a private temporary folder that the store removes when
it closes (or, failing that, when the Python process exits).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import weakref
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from ..core._clock import utcnow
from ..core._errors import StoreLockedError

__all__ = ["ATTEMPTS", "QUIET", "Snapshot", "take_snapshot"]

#: Copies tried before giving up on a file that keeps changing.
ATTEMPTS = 5
#: Seconds the database file must have been left alone before it is copied.
QUIET = 0.05

_Sig = tuple[int, int, int]


def _sig(path: Path) -> _Sig | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


@dataclass(eq=False)
class Snapshot:
    """A copy of a database (and its WAL) taken while another process wrote it."""

    source: str
    """The database file that was copied."""
    copy: Path
    """The copy, in a private temporary folder (what the store opens)."""
    taken_at: datetime
    """When the copy was taken (UTC)."""
    holder: str
    """Who held the file, as DuckDB named it (``PID 123``), or ``""``."""
    _cleanup: weakref.finalize = field(init=False, repr=False)

    def __post_init__(self) -> None:
        # Removed on close, or when the snapshot is collected or the process exits.
        self._cleanup = weakref.finalize(self, shutil.rmtree, str(self.copy.parent),
                                         ignore_errors=True)

    @property
    def note(self) -> str:
        """One line for a reader's stderr: what was read and what is not seen."""
        who = f" ({self.holder})" if self.holder else ""
        return (f"note: {self.source} is open for writing in another process{who}; "
                f"reading a snapshot copied at {self.taken_at:%H:%M:%S} UTC (what it had "
                "committed then: the database file and its WAL); later writes are not seen")

    @property
    def removed(self) -> bool:
        """Whether the copy is gone."""
        return not self._cleanup.alive

    def remove(self) -> None:
        """Delete the copy and its folder (idempotent)."""
        self._cleanup()


def _copy_once(src: Path, dest: Path) -> bool:
    """Copy ``src`` and its WAL into ``dest``; True when ``src`` did not change meanwhile."""
    wal, ckpt = Path(f"{src}.wal"), Path(f"{src}.wal.checkpoint")
    before = _sig(src)
    if before is None or ckpt.exists():
        return False
    if time.time_ns() - before[2] < QUIET * 1e9:
        return False  # written a moment ago: a write in the same clock tick would go unseen
    shutil.copyfile(src, dest / src.name)
    target_wal = dest / wal.name
    try:
        shutil.copyfile(wal, target_wal)
    except FileNotFoundError:  # checkpointed and closed: the file alone is the state
        target_wal.unlink(missing_ok=True)
    return _sig(src) == before and not ckpt.exists()


def take_snapshot(path: str | os.PathLike[str], *, holder: str = "") -> Snapshot:
    """Copy the database at ``path`` and its WAL to a private temporary folder.

    Raises :class:`StoreLockedError` when every one of :data:`ATTEMPTS` copies
    overlapped a write to the file (see the module docstring).
    """
    src = Path(path)
    folder = Path(tempfile.mkdtemp(prefix="truss_lab_snapshot_"))
    try:
        for attempt in range(ATTEMPTS):
            if _copy_once(src, folder):
                return Snapshot(source=str(path), copy=folder / src.name, taken_at=utcnow(),
                                holder=holder)
            time.sleep(QUIET * (attempt + 1))
    except OSError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        raise StoreLockedError(
            f"{path} is open for writing in another process and could not be copied to "
            f"read a snapshot: {exc.strerror}") from None
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    shutil.rmtree(folder, ignore_errors=True)
    raise StoreLockedError(
        f"{path} is open for writing in another process ({holder or 'unknown'}) and changed "
        f"during each of {ATTEMPTS} attempts to copy it: close the store there, or retry "
        "when it is idle")
