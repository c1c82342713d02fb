"""The one way truss_lab writes a file or a folder a user named: checked first, written whole.

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

import os
import stat
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from ._errors import BadInputError

__all__ = ["Writer", "check_output_file", "check_output_folder", "output_text", "staged_outputs",
           "write_output", "write_outputs"]

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
