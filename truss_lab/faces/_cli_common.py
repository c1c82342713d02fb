"""Shared pieces of the command line: the one-line error handler and common options."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from ..core._errors import ChainError, TrussLabError

__all__ = ["EXIT_BAD_LINES", "EXIT_USER_ERROR", "_emit", "_friendly", "db_option", "json_option"]

F = TypeVar("F", bound=Callable[..., Any])

EXIT_USER_ERROR = 2
EXIT_BAD_LINES = 3
"""An ingest rejected lines (without --allow-bad-lines), or every line, or the header."""


def _friendly(fn: F) -> F:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except TrussLabError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(1 if isinstance(exc, ChainError) else EXIT_USER_ERROR)

    return wrapper  # type: ignore[return-value]


def _emit(obj: Any, as_json: bool, text: str) -> None:
    if as_json:
        click.echo(json.dumps(obj, indent=2, default=str, sort_keys=True))
    else:
        click.echo(text)


db_option = click.option(
    "--db", default="truss_lab.duckdb", show_default=True, type=click.Path(dir_okay=False),
    help="DuckDB database file.",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON.")
