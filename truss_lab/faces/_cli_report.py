"""``truss-lab report RUN [RUN...] --out report.html``: one self-contained HTML file.

Wire it in with ``register(cli)``. The work is :func:`truss_lab.faces._report.write_report`.
"""

from __future__ import annotations

import click

from ..core._errors import BadInputError
from ..evaluate._objective import DEFAULT_OBJECTIVE, OBJECTIVE_HELP
from ._cli_common import _friendly, db_option, read_store
from ._report_truth import TRUTH_HELP, check_report_truth

__all__ = ["register"]


def _truth(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    try:
        return check_report_truth(value)
    except BadInputError as exc:
        raise click.BadParameter(str(exc).removeprefix("field 'truth': ")) from None


def _report_command() -> click.Command:
    @click.command("report")
    @click.argument("run_ids", nargs=-1, required=True, metavar="RUN [RUN...]")
    @db_option
    @click.option("--out", "out", required=True, type=click.Path(dir_okay=False),
                  help="HTML file to write (self-contained: open it in any browser, offline).")
    @click.option("--objective", default=DEFAULT_OBJECTIVE, show_default=True,
                  help=OBJECTIVE_HELP)
    @click.option("--n-boot", default=200, show_default=True, type=click.IntRange(1),
                  help="Verdict-bootstrap replicates for the bands and intervals.")
    @click.option("--random-state", default=0, show_default=True, type=int,
                  help="Seed of the verdict splits and the bootstrap.")
    @click.option("--max-verdicts", default=200, show_default=True, type=click.IntRange(0),
                  help="Verdicts in the browsable list (up to half with errors); 0 lists all.")
    @click.option("--truth", default="auto", show_default=True, metavar="SOURCE",
                  callback=_truth, help=TRUTH_HELP)
    @_friendly
    def report_cmd(run_ids: tuple[str, ...], db: str, out: str, objective: str, n_boot: int,
                   random_state: int, max_verdicts: int, truth: str) -> None:
        """Write an HTML report of runs: config, sweep with bands, calibration, comparison
        (first run vs each other), judged by one truth (--truth; the header names it),
        junk rates, audit and a filterable verdict list with labels and reference lessons.

        The first run is A in every comparison. See the README ("A report to share").
        """
        from ._report import write_report

        with read_store(db, must_exist=True) as store:
            path = write_report(store, run_ids, out, objective=objective, n_boot=n_boot,
                                random_state=random_state, max_verdicts=max_verdicts or None,
                                truth=truth)
        click.echo(f"{path}: report of {len(run_ids)} run(s), {path.stat().st_size:,} bytes")

    return report_cmd


def register(cli: click.Group) -> None:
    """Add the ``report`` command to ``cli`` (a no-op when it is already there)."""
    if "report" not in cli.commands:
        cli.add_command(_report_command())
