"""``truss-lab``: a thin command line over the library. No logic lives here.

One module per group of commands (:mod:`.data`, :mod:`.extract`, :mod:`.evaluate`,
:mod:`.label`, :mod:`.prompts`), each command a function of its module; :mod:`.common`
holds what they share. A user error (any :class:`TrussLabError`) prints one line and exits non-zero;
never a traceback.
"""

from __future__ import annotations

from typing import Any

import click

from ...ingest._schemas import SCHEMA_NAMES
from . import data, evaluate, extract, label, prompts
from .common import one_line_usage

__all__ = ["EPILOG", "cli", "main"]


class TrussLabGroup(click.Group):
    """The ``truss-lab`` group: a usage error anywhere below it is one line."""

    def make_context(self, info_name: str | None, args: list[str],
                     parent: click.Context | None = None, **extra: Any) -> click.Context:
        with one_line_usage():
            return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: click.Context) -> Any:
        with one_line_usage():
            return super().invoke(ctx)


@click.group(cls=TrussLabGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="truss_lab")
def cli() -> None:
    """truss_lab: study Truss lesson extraction (ADR 0011) offline."""


for _module in (data, extract, evaluate, label, prompts):
    _module.register(cli)

EPILOG = ("Guide: README.md (CLI quickstart). File formats: `truss-lab schema NAME` "
          f"({', '.join(SCHEMA_NAMES)}).")


def _add_epilog(group: click.Group) -> None:
    # Every --help ends by saying where the rest is written down.
    for cmd in group.commands.values():
        cmd.epilog = cmd.epilog or EPILOG
        if isinstance(cmd, click.Group):
            _add_epilog(cmd)


cli.epilog = EPILOG
_add_epilog(cli)


def main() -> None:
    """Console entry point."""
    cli(prog_name="truss-lab")
