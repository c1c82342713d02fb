"""What every command of the command line shares: the one-line error handler, the output
(text or JSON), the store a reading command opens, the files it writes, and the options
several commands take.

Every command module imports this one to build its options, ``--help`` included: it
imports click and the standard library only (the store, hence DuckDB, when a command
opens one), so a command's ``--help`` costs no more than click (issue 38)."""

from __future__ import annotations

import functools
import json
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ...core._errors import WARNING_PREFIX, ChainError, TrussLabError, TrussLabWarning
from ...core._files import check_output_file, write_output, write_outputs
from .oneline import EXIT_USER_ERROR, did_you_mean

if TYPE_CHECKING:
    from ...store._store import Store

__all__ = [
    "EXIT_BAD_LINES",
    "JUDGE_SPEC_HELP",
    "MATCHER_HELP",
    "MATCH_SPEC_HELP",
    "check_output_file",
    "db_option",
    "emit",
    "friendly",
    "int_counts",
    "json_option",
    "labels_option",
    "matcher_calls_model",
    "matcher_options",
    "n_boot_option",
    "objective_option",
    "option",
    "option_given",
    "random_state_option",
    "read_store",
    "run_argument",
    "write_output",
    "write_outputs",
]

# Keys of a metrics mapping that count things (tp, kept, n_verdicts, ...).
_COUNT_KEYS = frozenset({"tp", "fp", "fn", "tn", "kept"})

F = TypeVar("F", bound=Callable[..., Any])

EXIT_BAD_LINES = 3
"""An ingest rejected lines (without --allow-bad-lines), or every line, or the header."""


def friendly(fn: F) -> F:
    """``fn`` with a user error (any :class:`TrussLabError`) printed as one line on stderr
    and exit 1 (a broken chain) or 2 (anything else): never a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except TrussLabError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(1 if isinstance(exc, ChainError) else EXIT_USER_ERROR)

    return wrapper  # type: ignore[return-value]


def emit(obj: Any, as_json: bool, text: str) -> None:
    """Print ``obj`` as sorted, indented JSON when ``as_json``, else ``text``.

    A ``warning:`` line of ``text`` (a result's small-sample warning, which its repr, the
    report and the notebook's text show in place) is given as a
    :class:`~truss_lab.core._errors.TrussLabWarning` instead, with or without ``--json``:
    the group shows it as every warning, one line on stderr
    (:func:`~truss_lab.faces.cli.oneline.one_line_warnings`), and stdout holds the rest."""
    lines = text.splitlines()
    said = [ln.strip() for ln in lines if ln.lstrip().startswith(WARNING_PREFIX)]
    for line in said:
        warnings.warn(line.removeprefix(WARNING_PREFIX), TrussLabWarning, stacklevel=2)
    if said:
        text = "\n".join(ln for ln in lines if not ln.lstrip().startswith(WARNING_PREFIX))
    if as_json:
        click.echo(json.dumps(obj, indent=2, default=str, sort_keys=True))
    else:
        click.echo(text)


def read_store(db: str, *, must_exist: bool = False) -> Store:
    """The store a read-only command reads: the file itself, or -- when another process
    (a notebook) holds it for writing -- a checked snapshot of it, said in one line on
    stderr (:mod:`~truss_lab.store._snapshot`). Writing commands never get a snapshot."""
    from ...store._store import open_store

    store = open_store(db, read_only=True, must_exist=must_exist, snapshot=True)
    if store.snapshot is not None:
        click.echo(store.snapshot.note, err=True)
    return store


def option(*decls: str, old: Sequence[str] = (), **attrs: Any) -> Callable[[F], F]:
    """``click.option(*decls, **attrs)`` whose ``old`` spellings (a renamed option's former
    names, /work/wt/CLI_NAMES.md) still work, hidden from ``--help``: scripts written
    against the old name do not break. The old and the new name given with different
    values is a usage error. ``required=True`` is checked after the merge (either
    spelling satisfies it). :func:`option_given` says which spelling the user typed, so an
    error names the option the user gave."""
    if not old:
        return click.option(*decls, **attrs)
    dest = next((d for d in decls if not d.startswith("-")), None) or \
        decls[0].lstrip("-").replace("-", "_")
    longs = [d for d in decls if d.startswith("-")]
    required = attrs.pop("required", False)
    keys = {o: f"_old_{dest}_{o.lstrip('-').replace('-', '_')}" for o in old}
    default = attrs.get("default")
    old_type = attrs.get("type") or (type(default) if isinstance(default, int | float)
                                     and not isinstance(default, bool) else None)

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            ctx = click.get_current_context()
            typed = ctx.get_parameter_source(dest) not in (
                None, click.core.ParameterSource.DEFAULT, click.core.ParameterSource.DEFAULT_MAP)
            given = longs[0] if typed else None
            for o, key in keys.items():
                value = kwargs.pop(key)
                if value is None:
                    continue
                if given is not None and kwargs[dest] != value:
                    raise click.UsageError(
                        f"{given} {kwargs[dest]} and {o} {value} disagree: give {longs[0]} "
                        f"only ({o} is its old name)", ctx=ctx)
                kwargs[dest], given = value, o
            if given is not None:
                ctx.meta[f"truss_lab.given.{dest}"] = given
            if required and kwargs[dest] is None:
                raise click.UsageError(f"Missing option '{longs[0]}'.", ctx=ctx)
            return fn(*args, **kwargs)

        for o, key in keys.items():
            wrapper = click.option(o, key, default=None, hidden=True, type=old_type,
                                   metavar=attrs.get("metavar"),
                                   help=f"Old name of {longs[0]}.")(wrapper)
        return click.option(*decls, **attrs)(wrapper)  # type: ignore[return-value]

    return decorate


def option_given(dest: str, default: str) -> str:
    """The spelling of option ``dest`` the user typed (an old name of a renamed
    :func:`option`), else ``default``: what an error about it should name."""
    ctx = click.get_current_context(silent=True)
    return (ctx.meta.get(f"truss_lab.given.{dest}") if ctx else None) or default


JUDGE_SPEC_HELP = ("openai:MODEL | replay:MODEL | replay:PATH.jsonl#MODEL | "
                   "simulated[:LESSON_TRUTH.csv] (synthetic, for the sample)")
MATCH_SPEC_HELP = (JUDGE_SPEC_HELP + "; simulated reads references.jsonl beside the "
                   "lesson truth. See docs/how-to/score-without-labels.md.")
MATCHER_HELP = ("auto (the default: semantic), semantic (sentence embeddings, offline, "
                "bundled), lexical (word overlap: cheaper, misses rewordings) or judge:SPEC, "
                "a model matcher, SPEC one of " + MATCH_SPEC_HELP)
_MATCHERS = ("auto", "lexical", "semantic", "judge:SPEC")


def matcher_said(name: str | None, spec: str) -> str:
    """How a header names the matcher of a reference truth: ``, matcher semantic (the
    default; --matcher lexical for word overlap)`` when ``--matcher`` was left at
    ``auto``, ``, matcher lexical`` when named, ``""`` without one (``name`` None)."""
    if not name:
        return ""
    return (f", matcher {name} (the default; --matcher lexical for word overlap)"
            if spec == "auto" else f", matcher {name}")


def matcher_options(fn: F) -> F:
    """``--matcher auto|lexical|semantic|judge:SPEC`` and ``--base-url`` (the judge
    matcher's endpoint), with their old spellings hidden: ``--matcher judge --match-judge
    SPEC`` (or ``--match-judge SPEC`` alone) is ``--matcher judge:SPEC``,
    ``--match-base-url`` is ``--base-url``. The command receives ``matcher`` (``auto``,
    ``lexical``, ``semantic`` or ``judge:SPEC``) and
    ``base_url``; an error about the matcher names the spelling the user gave
    (:func:`option_given`)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, matcher: str, match_judge: str | None, **kwargs: Any) -> Any:
        ctx = click.get_current_context()
        typed = ctx.get_parameter_source("matcher") is click.core.ParameterSource.COMMANDLINE
        if match_judge is not None:
            if typed and matcher not in ("judge", f"judge:{match_judge}"):
                raise click.UsageError(
                    f"--matcher {matcher} and --match-judge {match_judge} disagree: give "
                    f"--matcher judge:{match_judge} only (--match-judge is its old name)",
                    ctx=ctx)
            matcher = f"judge:{match_judge}"
            ctx.meta["truss_lab.given.matcher"] = "--match-judge"
        elif matcher == "judge":
            raise click.BadParameter("judge needs its model: --matcher judge:SPEC, SPEC "
                                     f"one of {JUDGE_SPEC_HELP}", ctx=ctx,
                                     param_hint="'--matcher'")
        kind, _, spec = matcher.partition(":")
        if not (matcher in ("auto", "lexical", "semantic") or (kind == "judge" and spec)):
            hint = did_you_mean(kind, ("auto", "lexical", "semantic", "judge"))
            if spec and "judge" in hint:
                hint = hint.replace("'judge'", repr(f"judge:{spec}"))
            raise click.BadParameter(
                f"{matcher!r} is not one of {', '.join(_MATCHERS)}{hint}", ctx=ctx,
                param_hint=f"'{option_given('matcher', '--matcher')}'")
        return fn(*args, matcher=matcher, **kwargs)

    wrapper = click.option("--match-judge", default=None, hidden=True,
                           help="Old spelling: --match-judge SPEC is --matcher judge:SPEC."
                           )(wrapper)
    wrapper = click.option(
        "--matcher", default="auto", show_default=True,
        metavar="auto|lexical|semantic|judge:SPEC",
        help="How lessons are matched to references: " + MATCHER_HELP)(wrapper)
    wrapper = option("--base-url", default=None, old=("--match-base-url",),
                     help="OpenAI-compatible endpoint of a judge matcher "
                          "(--matcher judge:openai:MODEL).")(wrapper)
    return wrapper  # type: ignore[return-value]


def matcher_calls_model(matcher: str) -> bool:
    """Whether ``--matcher`` asks a model whose calls are recorded (a judge that is not a
    replay), so the command opens the store for writing."""
    kind, _, spec = matcher.partition(":")
    return kind == "judge" and not spec.startswith("replay:")


db_option = click.option(
    "--db", default="truss_lab.duckdb", show_default=True, type=click.Path(dir_okay=False),
    help="DuckDB database file.",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON.")


def labels_option(help: str) -> Callable[[F], F]:
    """``--labels PATH``: a labels CSV read instead of the database's labels table."""
    return click.option("--labels", "labels_path", type=click.Path(dir_okay=False), help=help)


def objective_option(default: str, help: str) -> Callable[[F], F]:
    """``--objective``: what a threshold choice maximises (``default`` and ``help`` from
    :mod:`truss_lab.evaluate._objective`, which the caller imports: this module is
    imported by every command and stays free of numpy)."""
    return click.option("--objective", default=default, show_default=True, help=help)


def n_boot_option(default: int, help: str) -> Callable[[F], F]:
    """``--n-boot``: replicates of a verdict bootstrap."""
    return click.option("--n-boot", default=default, show_default=True,
                        type=click.IntRange(1), help=help)


def random_state_option(help: str) -> Callable[[F], F]:
    """``--random-state``, with help naming what the seed drives in this command."""
    return click.option("--random-state", default=0, show_default=True, type=int, help=help)


def run_argument(fn: F) -> F:
    """The one way a command names a run: its id as the argument ``RUN``. ``--run RUN``
    (the older spelling of sweep and propose) is still accepted, hidden. The command
    receives ``run_id``."""

    @functools.wraps(fn)
    def wrapper(*args: Any, run_id: str | None = None, run_flag: str | None = None,
                **kwargs: Any) -> Any:
        if run_id is not None and run_flag is not None and run_id != run_flag:
            raise click.UsageError(f"two runs given ({run_id} and --run {run_flag}); give one")
        rid = run_id if run_id is not None else run_flag
        if rid is None:
            raise click.UsageError("missing the run: give its id as RUN (`truss-lab runs` "
                                   "lists them)")
        return fn(*args, run_id=rid, **kwargs)

    wrapper = click.argument("run_id", metavar="RUN", required=False)(wrapper)
    wrapper = click.option("--run", "run_flag", default=None, hidden=True,
                           help="Same as RUN (the older spelling).")(wrapper)
    return wrapper  # type: ignore[return-value]


def int_counts(metrics: Any) -> Any:
    """``metrics`` (a mapping) with its counts (tp, fp, fn, tn, kept, n_*) as ints when
    they hold whole numbers: a row taken from a frame of mixed columns turns every
    number into a float, and JSON readers should see ``"fn": 17``, not ``17.0``."""
    if not isinstance(metrics, dict):
        return metrics
    out = dict(metrics)
    for k, v in out.items():
        if (k in _COUNT_KEYS or k.startswith("n_")) and isinstance(v, float) and v.is_integer():
            out[k] = int(v)
    return out
