"""``truss-lab``: a thin command line over the library. No logic lives here.

One module per group of commands (:mod:`.data`, :mod:`.extract`, :mod:`.runs`,
:mod:`.evaluate`, :mod:`.slices`, :mod:`.label`, :mod:`.prompts`), each command a click
command of its module; :mod:`.common` holds what they share. A user error (any
:class:`TrussLabError`, or a mistyped option) prints one line and exits non-zero; never a
traceback.

Loading is per command (issue 38; issue 29 made it per module): :data:`COMMANDS` maps
each name to ``"module:attribute"`` and the first sentence of its help, so
``truss-lab --help`` imports no command module, and a command's module is imported when
that command runs or its ``--help`` is asked. A command module imports at its top only
click and what its options need (:mod:`.common`, and the light modules of defaults and
help texts: ``evaluate._defaults``, ``extract._limits``, ``core._threshold``); each
command imports the library it runs inside its body. So ``truss-lab sweep --help``
loads no pandas, numpy, DuckDB or evaluation module, and ``truss-lab runs`` only the
store. tests/test_cli_start.py checks, for every command, which heavy modules its
``--help`` leaves unimported, and the list against the modules.
"""

from __future__ import annotations

import importlib
import textwrap
from collections.abc import Iterator, MutableMapping
from typing import Any

import click
from click.formatting import HelpFormatter

from .oneline import did_you_mean, one_line_usage, one_line_warnings

__all__ = ["COMMANDS", "EPILOG", "cli", "main"]

#: Every command: its name -> (``"module:attribute"``, the click command's home in this
#: package, imported on first use; the first sentence of its help, shown by
#: ``truss-lab --help`` without importing it). Adding a command is one line here: write
#: the click command in a module of this package (click and its options at the module's
#: top, the library it runs imported inside its body), then register it as
#: ``"name": ("module:function", "First sentence of its help."),``.
#: tests/test_cli_start.py checks each entry against its command, and its --help imports.
COMMANDS: dict[str, tuple[str, str]] = {
    "init": ("data:init", "Create (or migrate) a truss_lab database."),
    "simulate": ("data:simulate", "Write a synthetic dataset: signed verdicts, completions, "
                                  "labels and their truth."),
    "sample": ("data:sample", "Copy the bundled synthetic sample to a folder (made by `truss-lab "
                              "simulate`)."),
    "ingest": ("data:ingest", "Load recorded data into the database."),
    "verify": ("data:verify", "Verify the stored journal; exit 0 when clean, 1 when tampered."),
    "audit": ("data:audit", "Check a database against ADR 0011; exit 0 when clean, 1 on any "
                            "failure."),
    "export": ("data:export", "Export every table and view, with a manifest of row counts and "
                              "content hashes."),
    "schema": ("data:schema", "Print the JSON Schema of a format or record."),
    "keys": ("data:keys", "Ed25519 signing keys."),
    "journal": ("data:journal", "Journals of your own verdicts: sign records into a journal "
                                "export."),
    "extract": ("extract:extract", "Extract lessons from recorded verdicts (a resumable batch "
                                   "run)."),
    "grid": ("extract:grid", "Run a grid of extractions (extractor x prompt x model x sampling, "
                             "docs/how-to/grids-frontier.md): one named, tagged run per cell."),
    "rerun": ("extract:rerun", "Replay run RUN from its own recordings as a new run: zero live "
                               "calls, the same candidates (a live run's own answers, never "
                               "another run's)."),
    "batch": ("extract:batch", "A provider's batch interface (the OpenAI Batch file format): "
                               "prepare the input file; `ingest completions OUT --format "
                               "openai-batch` reads the output."),
    "runs": ("runs:runs", "List extraction runs with their names, tags and counts (`runs delete "
                          "RUN` deletes one)."),
    "errors": ("runs:errors", "List a run's per-verdict errors (provider, parse, prompt), by "
                              "verdict."),
    "usage": ("evaluate:usage", "A run's usage: calls, tokens in/out, latency p50/p95/p99, "
                                "errors by kind, time per verdict, and cost from --prices (never "
                                "guessed); a replay's recorded calls (tokens, latency, cost when "
                                "made) beside its own 0 live calls."),
    "sweep": ("evaluate:sweep", "Sweep a run's salience thresholds and choose one on held-out "
                                "verdicts."),
    "choose": ("evaluate:choose", "Choose a run's salience threshold on held-out verdicts (the "
                                  "choice `sweep` shows, without the sweep), on corrected counts "
                                  "when people answered (--correct)."),
    "compare": ("evaluate:compare", "Compare two runs on their common verdicts (paired "
                                    "bootstrap, McNemar)."),
    "budget": ("evaluate:budget", "How many labelled verdicts a run's intervals need to reach "
                                  "a width, and a difference from another run to be detected "
                                  "(a label budget; its model is printed)."),
    "frontier": ("evaluate:frontier_cmd", "Cost per verdict, latency p50/p95 and F1 (with its "
                                          "interval) of runs side by side; a run is dominated "
                                          "only when another is cheaper and has an F1 above its "
                                          "interval."),
    "slices": ("slices:slices", "Where a run fails: precision, recall and F1 per slice of "
                                "verdicts with intervals, each slice tested against the rest "
                                "(Benjamini-Hochberg q-values), and the threshold each slice "
                                "would choose on its own."),
    "calibrate": ("evaluate:calibrate", "Calibration before/after fitting on training verdicts, "
                                        "judged on held-out ones."),
    "propose": ("evaluate:propose", "Sign a threshold decision and record it as an unverified "
                                    "salience policy."),
    "report": ("evaluate:report", "Write an HTML report of runs: config, sweep with bands, "
                                  "calibration, comparison (first run vs each other), judged by "
                                  "one truth (--truth; the header names it), junk rates, audit "
                                  "and a filterable verdict list with labels and reference "
                                  "lessons."),
    "judge": ("label:judge", "Label a run's lessons with a model, stored as "
                             "judge:<model>@<prompt> labels."),
    "judge-agreement": ("label:judge_agreement", "A judge's Cohen kappa, precision and recall "
                                                 "against human labels (RUN optional)."),
    "match-agreement": ("label:match_agreement_cmd", "A matcher's pair precision, pair recall "
                                                     "and matched-flag kappa against people's "
                                                     "match labels, on the lessons people "
                                                     "matched; with --between-people, how far "
                                                     "the people agree with each other "
                                                     "(docs/how-to/correct-with-people.md)."),
    "match": ("label:match", "Match a run's lessons to reference lessons with a model; record "
                             "its calls."),
    "prompts": ("prompts:prompts", "Prompt templates, TOML files (`truss-lab schema prompt`): "
                                   "add, list, show."),
    "queue": ("label:queue", "List lessons for people: to label (--kind label) or to match "
                             "(--kind match)."),
}

EPILOG = ("Guide: README.md (CLI quickstart). File formats: `truss-lab schema NAME` "
          "(`truss-lab schema --help` lists the names).")


def _with_epilog(cmd: click.Command) -> click.Command:
    # Every --help ends by saying where the rest is written down.
    cmd.epilog = cmd.epilog or EPILOG
    if isinstance(cmd, click.Group):
        for sub in cmd.commands.values():
            _with_epilog(sub)
    return cmd


class LazyCommands(MutableMapping[str, click.Command]):
    """The group's commands by name, each imported from its ``"module:attribute"`` on
    first use (click's lazy-group pattern): what ``click.Group.commands`` holds, so
    everything that reads it keeps working."""

    def __init__(self, homes: dict[str, tuple[str, str]]) -> None:
        self.homes = homes
        self.loaded: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name not in self.loaded:
            if name not in self.homes:
                raise KeyError(name)
            module, _, attribute = self.homes[name][0].partition(":")
            command = getattr(importlib.import_module(f".{module}", __name__), attribute)
            self.loaded[name] = _with_epilog(command)
        return self.loaded[name]

    def __setitem__(self, name: str, cmd: click.Command) -> None:
        # A command added directly (cli.add_command, as a test may) gets the epilog too.
        self.loaded[name] = _with_epilog(cmd)

    def __delitem__(self, name: str) -> None:
        self.loaded.pop(name, None)
        self.homes.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*self.homes, *self.loaded]))

    def __len__(self) -> int:
        return len(set(self.homes) | set(self.loaded))


class TrussLabGroup(click.Group):
    """The ``truss-lab`` group: commands imported when used (:class:`LazyCommands`), the
    list in ``--help`` from :data:`COMMANDS`, a usage error anywhere below it one line
    (an unknown command with a "did you mean"), and each warning of truss_lab's one
    ``warning:`` line (:func:`~.oneline.one_line_warnings`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = LazyCommands(dict(COMMANDS))  # type: ignore[assignment]

    def make_context(self, info_name: str | None, args: list[str],
                     parent: click.Context | None = None, **extra: Any) -> click.Context:
        with one_line_usage():
            return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: click.Context) -> Any:
        # Every command, and the import of its module, runs here: its warnings are lines.
        with one_line_usage(), one_line_warnings():
            return super().invoke(ctx)

    def resolve_command(self, ctx: click.Context, args: list[str]
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        name = click.utils.make_str(args[0])
        if name not in self.commands and not name.startswith("-"):
            raise click.UsageError(f"No such command {name!r}"
                                   f"{did_you_mean(name, list(self.commands))}", ctx=ctx)
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: HelpFormatter) -> None:
        # The short help of each command from COMMANDS: listing them imports none.
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(n) for n in names)
        homes = self.commands.homes  # type: ignore[attr-defined]
        rows = [(n, textwrap.shorten(homes[n][1], limit, placeholder="...") if n in homes
                 else self.commands[n].get_short_help_str(limit)) for n in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=TrussLabGroup, context_settings={"help_option_names": ["-h", "--help"]},
             epilog=EPILOG)
@click.version_option(package_name="truss_lab")
def cli() -> None:
    """truss_lab: study Truss lesson extraction (ADR 0011) offline."""


def main() -> None:
    """Console entry point."""
    cli(prog_name="truss-lab")
