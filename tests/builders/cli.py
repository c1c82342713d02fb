"""The command line in-process: ``invoke("sweep", RUN, "--db", db)`` is ``truss-lab sweep ...``.

One helper instead of a ``CliRunner().invoke(cli, [...])`` (or a local ``invoke``)
in every test file. Click's runner calls the command in this process, so a
command costs what its library calls cost, not a Python start-up.
"""

from __future__ import annotations

import json
import os
from typing import Any

import click
from click.testing import CliRunner, Result

from truss_lab.faces.cli import cli as CLI

__all__ = ["CLI", "invoke", "invoke_json"]

Arg = str | os.PathLike[str]


def invoke(*args: Arg, cli: click.Command = CLI, **kw: Any) -> Result:
    """Run ``cli`` (``truss-lab`` by default) with ``args``; the result, whatever the exit code.

    ``r.stdout`` and ``r.stderr`` are apart (JSON is read from ``r.stdout``); ``r.output``
    is both, in the order they were written, as a terminal shows them.

    ``kw`` go to :meth:`click.testing.CliRunner.invoke` (``input``,
    ``catch_exceptions``, ``env``). Paths may be passed as they are.
    """
    return CliRunner().invoke(cli, [os.fspath(a) for a in args], **kw)


def invoke_json(*args: Arg, cli: click.Command = CLI, **kw: Any) -> Any:
    """``invoke(*args, "--json")``, which must exit 0; its stdout parsed as JSON (a
    ``warning:`` or ``note:`` line goes to stderr, which ``r.output`` mixes in)."""
    r = invoke(*args, "--json", cli=cli, **kw)
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)
