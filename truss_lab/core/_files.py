"""The one way truss_lab reads a file a user named, and writes a file or a folder: checked
first, read within a bound, written whole.

Every input a user names (a journal, completions, labels, references, a prompt file, a key,
a keyring, a TOML file) is opened by :func:`open_input` / :func:`read_input`: a regular
file or a pipe (``<(zcat ...)``) is read, never past the bound its format sets; a folder, a
device (``/dev/zero``, ``/dev/urandom``, a terminal) or a socket is refused in one line
before a byte is read, and a named pipe with no writer is an empty input, not a hang.

Every output a user names (a sweep CSV, a plot, a labelling queue, a completions file, a
key, a keyring, a report, a simulated dataset's files, a copy of the sample) goes through
here: :func:`check_output_file` refuses a path that is not absent or a regular file (a
folder, a symbolic link, dangling or not, a device, a pipe, a socket) before any work is
done, and :func:`write_output` / :func:`write_outputs` (or the handle of
:func:`output_text`) write next to it and rename, so a failing disk leaves the old file
(or none) and is one line. :func:`check_output_folder` is the same for a folder a command
writes files into (the simulator, the sample, an export).
"""

from __future__ import annotations

import errno
import fcntl
import io
import os
import select
import stat
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, cast

from ._errors import BadInputError, ConfigError

__all__ = ["FORMULA_START", "PIPE_FIRST_WRITER_SECONDS", "PIPE_IDLE_SECONDS", "PIPE_WAIT_ENV",
           "Writer", "check_output_file", "check_output_folder", "open_input", "output_text",
           "pipe_first_writer_seconds", "read_input", "size_text", "staged_outputs",
           "write_output", "write_outputs"]

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
"""What a spreadsheet runs as a formula when a cell starts with it (CSV injection, OWASP's
list): a CSV truss_lab writes (a labelling queue's context, an export) starts such a text
cell with a ``'``."""

PIPE_FIRST_WRITER_SECONDS = 5.0
"""How long a named pipe with no writer yet is waited for before it reads as empty, unless
the environment variable :data:`PIPE_WAIT_ENV` says otherwise."""

PIPE_WAIT_ENV = "TRUSS_LAB_PIPE_WAIT"
"""The environment variable that sets the wait for a named pipe's first writer (seconds,
0 to 3600): longer for a writer slow to start, shorter where none will come."""


def pipe_first_writer_seconds() -> float:
    """The wait for a named pipe's first writer: :data:`PIPE_WAIT_ENV`, else
    :data:`PIPE_FIRST_WRITER_SECONDS`."""
    raw = os.environ.get(PIPE_WAIT_ENV, "").strip()
    if not raw:
        return PIPE_FIRST_WRITER_SECONDS
    try:
        seconds = float(raw)
    except ValueError:
        seconds = float("nan")
    if not 0 <= seconds <= 3600:  # NaN too
        raise ConfigError(f"the wait for a pipe's first writer must be seconds from 0 to "
                          f"3600, got {raw!r}", layer="environment", field=PIPE_WAIT_ENV)
    return seconds

PIPE_IDLE_SECONDS = 120.0
"""How long a pipe may send nothing before its reader gives up (a writer that holds a named
pipe open and never writes would otherwise hang the command)."""


def size_text(n: int) -> str:
    """``n`` bytes as people read it: ``4 MiB``, ``16 GiB``, ``1000 bytes``."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} bytes"


class _Pipe(io.RawIOBase):
    """A pipe's read end (non-blocking) that refuses to read past ``limit`` bytes, or to
    wait more than :data:`PIPE_IDLE_SECONDS` for the next byte of a writer that is there;
    a pipe with no writer (a named pipe no one opened) reads as empty at once."""

    def __init__(self, fd: int, limit: int, source: str, what: str,
                 field: str | None) -> None:
        self._fd, self._left, self._limit = fd, limit + 1, limit
        self._source, self._what, self._field = source, what, field
        self._waited = False

    def readable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        if self._left <= 0:
            raise _too_large(self._source, self._what, self._limit, self._field)
        while True:
            # Non-blocking: no writer is the end (0), a silent writer is waited for.
            try:
                n = os.readv(self._fd, [memoryview(buffer)[: min(len(buffer), self._left)]])
                if n == 0 and not self._waited and self._left == self._limit + 1:
                    # No writer yet: one started with the command may not have opened its
                    # end. A writer's first bytes wake the wait; none within it: empty.
                    self._waited = True
                    if select.select([self._fd], [], [], pipe_first_writer_seconds())[0]:
                        continue
                break
            except BlockingIOError:
                ready, _, _ = select.select([self._fd], [], [], PIPE_IDLE_SECONDS)
                if not ready:
                    raise BadInputError(
                        f"nothing arrived on the pipe for {PIPE_IDLE_SECONDS:g} s; expected "
                        f"{self._what}", source=self._source, field=self._field) from None
        self._left -= n
        if self._left <= 0:
            raise _too_large(self._source, self._what, self._limit, self._field)
        return n

    def close(self) -> None:
        if not self.closed:
            os.close(self._fd)
        super().close()


def _too_large(source: str, what: str, limit: int, field: str | None) -> BadInputError:
    size = size_text(limit)
    return BadInputError(f"file over {limit} bytes" + (f" ({size})" if "bytes" not in size else
                                                       "")
                         + f", the most {what} may hold; not read further", source=source,
                         field=field, reason="too_large")


@contextmanager
def open_input(path: str | os.PathLike[str], *, what: str, limit: int,
               field: str | None = None) -> Iterator[IO[bytes]]:
    """A binary handle on the input file ``path``: a regular file (seekable) or a pipe
    (read once, never past ``limit`` bytes nor waiting more than :data:`PIPE_IDLE_SECONDS`
    for a byte); anything else is a :class:`BadInputError` in one line, before a byte is
    read. ``what`` names the format in errors ("a keyring"), ``limit`` is its bound in
    bytes (a regular file larger than it is refused unread), ``field`` the option.

    A named pipe is opened without waiting for a writer (a pipe no one writes to is an
    empty input, not a hang); a folder, a device (``/dev/zero``, ``/dev/urandom``, a
    terminal) or a socket is refused.
    """
    source = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise BadInputError(f"cannot read: no such file; expected {what}", source=source,
                            field=field) from None
    except OSError as exc:
        why = ("is a socket, not a file" if exc.errno == errno.ENXIO
               else f"cannot read: {exc.strerror or exc}")
        raise BadInputError(f"{why}; expected {what}", source=source, field=field) from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise BadInputError(f"is a folder; expected {what}", source=source, field=field)
        if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
            kind = "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket"
            raise BadInputError(f"is {kind}, not a file; expected {what} (a file or a pipe)",
                                source=source, field=field)
        if stat.S_ISREG(mode):
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
            if os.fstat(fd).st_size > limit:
                raise _too_large(source, what, limit, field)
            fh: IO[bytes] = os.fdopen(fd, "rb")
        else:
            fh = cast(IO[bytes], io.BufferedReader(_Pipe(fd, limit, source, what, field)))
    except BaseException:
        os.close(fd)
        raise
    with fh:
        try:
            yield fh
        except OSError as exc:
            raise BadInputError(f"cannot read: {exc.strerror or exc}; expected {what}",
                                source=source, field=field) from None


def read_input(path: str | os.PathLike[str], *, what: str, limit: int,
               field: str | None = None) -> bytes:
    """The bytes of the input file ``path`` (:func:`open_input`), at most ``limit`` of them
    (a file that grows while read, a ``/proc`` file, is cut off there and refused)."""
    with open_input(path, what=what, limit=limit, field=field) as fh:
        # A megabyte-bounded read at a time: read(limit + 1) allocates its whole size at
        # once (MemoryError for a journal's 64 GiB bound, whatever the file's size).
        parts, left = [], limit + 1
        while left > 0 and (part := fh.read(min(left, 1 << 20))):
            parts.append(part)
            left -= len(part)
        data = b"".join(parts)
    if len(data) > limit:
        raise _too_large(str(path), what, limit, field)
    return data

Writer = Callable[[Path], object]
"""Writes the whole file at the path it is given (a temporary file next to the target)."""


def check_output_file(path: str | os.PathLike[str], *, field: str | None = None,
                      overwrite: bool = True) -> Path:
    """``path`` if a file can be written there, else :class:`BadInputError` saying why.

    Every command that writes a file the user named (a key, a keyring, a sweep CSV,
    a plot, a labelling queue, a report) checks all of them first, so a bad second
    path never leaves the first file written.

    Its folder must exist (a mistyped folder is not created silently); the path
    must be absent or a regular file: a folder, a symbolic link (dangling or not),
    a device (``/dev/full``), a pipe or a socket is refused, since the file is
    written next to it and renamed over it (:func:`write_output`), which would
    replace the link or the device node with a regular file. With
    ``overwrite=False`` an existing file is refused too. ``field`` (the option,
    ``--out``) is named in the error.
    """
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    try:
        mode = p.lstat().st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise BadInputError(f"cannot inspect: {exc.strerror}", source=str(p),
                            field=field) from None
    if mode is not None and stat.S_ISDIR(mode):
        raise BadInputError("is a folder; expected a file name", source=str(p), field=field)
    if mode is not None and stat.S_ISLNK(mode):
        raise BadInputError(f"is a symbolic link (to {os.readlink(p)}); name the file itself",
                            source=str(p), field=field)
    if mode is not None and not stat.S_ISREG(mode):
        raise BadInputError("is not a regular file (a device, a pipe or a socket); name a "
                            "file", source=str(p), field=field)
    if not parent.exists():
        raise BadInputError(f"no such folder {parent} (create it first)", source=str(p),
                            field=field)
    if not parent.is_dir():
        raise BadInputError(f"{parent} is not a folder", source=str(p), field=field)
    if not os.access(parent, os.W_OK):
        raise BadInputError(f"folder {parent} is not writable", source=str(p), field=field)
    if not overwrite and mode is not None:
        raise BadInputError("exists; refusing to overwrite it", source=str(p), field=field)
    return p


def check_output_folder(path: str | os.PathLike[str], *, field: str | None = None,
                        what: str = "a folder") -> Path:
    """``path`` if files can be written into it: absent or a folder, never a symbolic link
    (dangling or not: what is written would land wherever it points) nor a file.

    ``what`` says what to name instead (``"a new folder"``). What the folder may already
    hold is the caller's rule (an export wants it empty; the simulator its own files).
    """
    p = Path(path)
    try:
        mode = p.lstat().st_mode
    except FileNotFoundError:
        return p
    except OSError as exc:
        raise BadInputError(f"cannot inspect: {exc.strerror}", source=str(p),
                            field=field) from None
    if stat.S_ISLNK(mode):
        raise BadInputError(f"is a symbolic link (to {os.readlink(p)}); name {what}",
                            source=str(p), field=field)
    if not stat.S_ISDIR(mode):
        raise BadInputError(f"exists and is not a folder; name {what}", source=str(p),
                            field=field)
    return p


def write_output(path: str | os.PathLike[str], write: Writer, *,
                 field: str | None = None, mode: int | None = None) -> Path:
    """Write the file ``path`` (checked by :func:`check_output_file`) whole or not at all.

    ``write`` writes a temporary file next to ``path`` (same suffix, so a plot's
    format still follows the name); it is flushed to disk and renamed over
    ``path`` only when that worked. A failure of the disk (full, read-only,
    quota) is one line naming the file and the option, and leaves no file behind.
    ``mode`` (default: what a plain ``open`` gives) is set before the rename; the
    temporary file is created 0600, so a private key is never readable by others.
    """
    return write_outputs([(path, write)], field=field, mode=mode)[0]


def write_outputs(files: Sequence[tuple[str | os.PathLike[str], Writer]], *,
                  field: str | None = None, mode: int | None = None) -> list[Path]:
    """Write several files (each checked by :func:`check_output_file`) all or none.

    Each is written by its writer to a temporary file next to it (created without
    following any link) and flushed; only when every one is written are they renamed
    over their paths, in order. A failure while writing (a full disk) leaves every
    old file as it was and no temporary behind, in one line; a rename needs no
    space, and were one to fail the line says how many files were already replaced.
    """
    with _staged([Path(p) for p, _ in files], field=field, mode=mode) as tmps:
        for (_, write), tmp in zip(files, tmps, strict=True):
            write(tmp)
    return [Path(p) for p, _ in files]


@contextmanager
def staged_outputs(paths: Sequence[str | os.PathLike[str]], *,
                   field: str | None = None) -> Iterator[list[Path]]:
    """Temporary files (next to ``paths``, each checked by :func:`check_output_file`) that
    the block writes in any order, a piece at a time; when it ends without error they
    replace ``paths``, all or none, as :func:`write_outputs` does. For files written
    together as a stream (a simulation's, block by block), which no one writer holds."""
    checked = [check_output_file(p, field=field) for p in paths]
    with _staged(checked, field=field) as tmps:
        yield tmps


@contextmanager
def output_text(path: str | os.PathLike[str], *,
                field: str | None = None) -> Iterator[IO[str]]:
    """A UTF-8 text handle (``newline=""``: the writer chooses line ends) whose content
    replaces ``path`` (checked by :func:`check_output_file`) only when the block ends
    without error: a reader never sees half a file, and a failure leaves none."""
    p = check_output_file(path, field=field)
    with _staged([p], field=field) as (tmp,), open(tmp, "w", encoding="utf-8",
                                                     newline="") as fh:
        yield fh


@contextmanager
def _staged(paths: Sequence[Path], *, field: str | None,
            mode: int | None = None) -> Iterator[list[Path]]:
    """Temporary files next to ``paths`` for the block to write; flushed, given ``mode``
    (default what a plain ``open`` gives) and renamed over ``paths`` when it ends
    without error, removed whatever happens. An OSError is one BadInputError."""
    if mode is None:
        umask = os.umask(0)  # the mode a plain open() would give (mkstemp's is 0600)
        os.umask(umask)
        mode = 0o666 & ~umask
    staged: list[tuple[Path, Path]] = []
    current = paths[0] if paths else Path(".")
    renamed = 0
    try:
        for p in paths:
            current = p
            fd, name = tempfile.mkstemp(prefix=f".{p.name}.", suffix=p.suffix or ".tmp",
                                        dir=p.parent if str(p.parent) else ".")
            os.close(fd)
            staged.append((Path(name), p))
        yield [tmp for tmp, _ in staged]
        for tmp, p in staged:
            current = p
            with open(tmp, "rb+") as fh:  # a full disk can surface only when data is flushed
                os.fsync(fh.fileno())
            tmp.chmod(mode)
        for tmp, p in staged:
            current = p
            os.replace(tmp, p)
            renamed += 1
    except OSError as exc:
        done = ("nothing written" if not renamed else
                f"{renamed} of {len(paths)} files replaced")
        raise BadInputError(f"cannot write: {exc.strerror or exc}; {done}",
                            source=str(current), field=field) from None
    finally:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
