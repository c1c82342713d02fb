"""Output paths: checked before anything is written, refused in one line.

Every face that writes a file the user named (a key, a keyring, a sweep CSV,
a plot) checks all of them with :func:`check_output_file` first, so a bad
second path never leaves the first file written. A private key is written by
:func:`write_private_file`, which never follows a symbolic link.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from ._errors import BadInputError

__all__ = ["check_output_file", "write_private_file"]


def check_output_file(path: str | os.PathLike[str], *, field: str,
                      overwrite: bool = True) -> Path:
    """``path`` if a file can be written there, else :class:`BadInputError` saying why.

    Its folder must exist (a mistyped folder is not created silently); the path
    must not be a folder, nor (with ``overwrite=False``) an existing file or link.
    """
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    if p.is_dir():
        raise BadInputError("is a folder; expected a file name", source=str(p), field=field)
    if not parent.exists():
        raise BadInputError(f"no such folder {parent} (create it first)", source=str(p),
                            field=field)
    if not parent.is_dir():
        raise BadInputError(f"{parent} is not a folder", source=str(p), field=field)
    if not os.access(parent, os.W_OK):
        raise BadInputError(f"folder {parent} is not writable", source=str(p), field=field)
    if not overwrite and (p.exists() or p.is_symlink()):
        raise BadInputError("exists; refusing to overwrite it", source=str(p), field=field)
    return p


def write_private_file(path: str | os.PathLike[str], data: str) -> Path:
    """Write ``data`` to a new or regular file with mode 0600, never through a symlink.

    ``O_NOFOLLOW`` makes the open fail on a link (dangling or not), so a link
    planted at the key's path cannot send the secret somewhere else.
    """
    p = Path(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    try:
        if p.is_symlink():  # also where O_NOFOLLOW does not exist
            raise OSError(errno.ELOOP, "is a symbolic link")
        fd = os.open(p, flags, 0o600)
    except OSError as exc:
        why = ("is a symbolic link; refusing to write a private key through it"
               if exc.errno == errno.ELOOP else f"cannot write: {exc.strerror}")
        raise BadInputError(why, source=str(p)) from None
    with os.fdopen(fd, "w") as fh:
        os.fchmod(fh.fileno(), 0o600)  # an existing file keeps its old mode through O_CREAT
        fh.write(data)
    return p
