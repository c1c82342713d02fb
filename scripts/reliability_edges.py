"""Rows of ``make reliability`` for the edges of issue #28 (items 5-8), one function per item.

Each row re-runs the issue's reproductions through the real CLI (in a subprocess, as a
user would) and counts what held: one ``error:`` line, a non-zero exit, no traceback, no
network call and nothing written. ``scripts/reliability.py`` calls :func:`edges_rows`;
the rows use its ``Row``.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scripts.reliability_holes import cli, one_line, tally

# -- 5. a remote --db ---------------------------------------------------------------------------


def remote_db_row(row: Callable[..., Any], tmp: Path) -> Any:
    d = tmp / "remote_db"
    d.mkdir()
    checks: dict[str, bool] = {}
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.setblocking(False)
        port = listener.getsockname()[1]
        for db in (f"http://127.0.0.1:{port}/x.duckdb", f"https://127.0.0.1:{port}/x.duckdb",
                   "s3://bucket/x.duckdb", "md:lab", "sqlite:x.db"):
            p = cli("init", "--db", db, cwd=d)
            checks[f"--db {db.split(':')[0]}:"] = one_line(p) and "not a local file" in p.stderr
        try:
            listener.accept()
            checks["no connection to the address"] = False
        except BlockingIOError:
            checks["no connection to the address"] = True
    checks["nothing created locally"] = not any(d.iterdir())
    return tally(row, "--db http/s3/md: refused, no network", checks)


def edges_rows(row: Callable[..., Any], tmp: Path) -> list[Any]:
    """Every row of this module (``row`` is reliability.py's ``Row``)."""
    sub = tmp / "edges"
    sub.mkdir(exist_ok=True)
    out = []
    for fn in (remote_db_row,):
        try:
            out.append(fn(row, sub))
        except Exception as exc:  # a crashed check is a failed row
            out.append(row(fn.__name__, 1, 0, f"crashed: {type(exc).__name__}: {exc}"[:160]))
    return out
