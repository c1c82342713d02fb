"""Usage errors and warnings in one line: a mistyped option, value or command is the one
``error:`` line every other user error gets (with a "did you mean" where one is close),
not click's usage block; a warning of truss_lab's is one ``warning:`` line, not Python's
file, line number and source line. Its own module, light enough for ``truss-lab --help``
to import nothing else (issue 29: the command line starts at once)."""

from __future__ import annotations

import contextlib
import difflib
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import click

from ...core._errors import WARNING_PREFIX, TrussLabWarning

__all__ = ["EXIT_USER_ERROR", "OneLineUsageError", "did_you_mean", "one_line_usage",
           "one_line_warnings"]

EXIT_USER_ERROR = 2
"""A user error (a bad option, value, file or field): exit 2, as click exits on one."""


class OneLineUsageError(click.ClickException):
    """A usage error (a mistyped option or value, a missing argument) shown as the one
    ``error:`` line every other user error gets, naming where the help is, instead of
    click's usage block."""

    exit_code = EXIT_USER_ERROR

    def __init__(self, exc: click.UsageError) -> None:
        where = exc.ctx.command_path if exc.ctx is not None else "truss-lab"
        message = " ".join(exc.format_message().split())
        super().__init__(f"{message} (see `{where} --help`)")

    def show(self, file: Any = None) -> None:
        click.echo(f"error: {self.message}", err=True)


@contextlib.contextmanager
def one_line_usage() -> Iterator[None]:
    """Turn a click usage error raised inside into a :class:`OneLineUsageError`."""
    try:
        yield
    except OneLineUsageError:
        raise
    except click.UsageError as exc:
        raise OneLineUsageError(exc) from None


@contextlib.contextmanager
def one_line_warnings() -> Iterator[None]:
    """Show each warning of truss_lab's (a :class:`TrussLabWarning`) given inside as one
    ``warning: <message>`` line on stderr, a message once however often it is given: a
    user reads what happened, not Python's file, line number and source line. The
    filters decide what is shown, as before (``-W ignore``, a test's ``"error"``); a
    warning of another package is shown as Python shows it. What every command runs
    under (the ``truss-lab`` group), so stdout (``--json``) stays the command's own."""
    shown: set[str] = set()
    with warnings.catch_warnings():
        python_shows = warnings.showwarning

        def show(message: Warning | str, category: type[Warning], filename: str,
                 lineno: int, file: Any = None, line: str | None = None) -> None:
            if not issubclass(category, TrussLabWarning):
                python_shows(message, category, filename, lineno, file, line)
                return
            text = " ".join(str(message).split())
            if text not in shown:
                shown.add(text)
                click.echo(f"{WARNING_PREFIX}{text}", err=True)

        warnings.showwarning = show
        yield


def did_you_mean(value: str, choices: Sequence[str]) -> str:
    """``"; did you mean 'X'?"`` for the closest of ``choices`` to a mistyped ``value``,
    else ``""``."""
    close = difflib.get_close_matches(value, list(choices), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""
