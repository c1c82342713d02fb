"""The ``slices`` command: where a run fails, slice by slice (docs/how-to/slices.md).

No logic lives here: the options become one call of
:func:`~truss_lab.evaluate._slices.slice_run`, whose result is printed (its table as text,
or JSON) and written (``--csv``, ``--plot``: :class:`~truss_lab.faces._display.SliceDisplay`).
The module imports click, the command line's own helpers and the light modules of
defaults and help texts only; the evaluation stack is imported when the command runs, so
``--help`` stays instant.
"""

from __future__ import annotations

from typing import Any

import click

from ...core._threshold import DEFAULT_MIN_SALIENCE
from ...evaluate._defaults import (
    CORRECT_HELP,
    CORRECTIONS,
    DEFAULT_N_BOOT,
    DEFAULT_N_PERM,
    DEFAULT_OBJECTIVE,
    SLICE_METRICS,
    TRUTH_HELP,
)
from .common import (
    db_option,
    emit,
    friendly,
    json_option,
    labels_option,
    n_boot_option,
    random_state_option,
    read_store,
    run_argument,
)

__all__ = ["slices"]


@click.command()
@db_option
@run_argument
@click.option("--by", default="tag", show_default=True,
              help="Slice verdicts by tag (each tag: the contract's domain and its checks' "
                   "themes), outcome, check (each check a verdict has), contract, or a "
                   "payload field (dotted names, e.g. goal).")
@click.option("--where", "where", multiple=True,
              help="A predicate on the verdict's payload, one slice each (repeatable; "
                   "instead of --by): clauses PATH OP VALUE joined by 'and', e.g. "
                   "\"verdict = fail and tag = retry\"; bound as parameters, never "
                   "pasted into SQL.")
@click.option("--threshold", default=DEFAULT_MIN_SALIENCE, show_default=True, type=float,
              help="The gate threshold the slices are compared at.")
@click.option("--test", "test", type=click.Choice(SLICE_METRICS), default="f1", show_default=True,
              help="The metric each slice is tested on against the rest.")
@click.option("--truth", default="auto", show_default=True, help=TRUTH_HELP)
@click.option("--correct", type=click.Choice(CORRECTIONS), default="auto", show_default=True,
              help=CORRECT_HELP)
@labels_option("Gold labels CSV (`truss-lab schema labels`) instead of the database's "
               "labels table.")
@click.option("--objective", default=DEFAULT_OBJECTIVE, show_default=True,
              help="What each slice's own threshold is chosen for (as `sweep`).")
@n_boot_option(DEFAULT_N_BOOT, "Verdict-bootstrap replicates of each interval.")
@click.option("--permutations", "n_perm", default=DEFAULT_N_PERM, show_default=True,
              type=click.IntRange(1), help="Verdict permutations of each slice's test.")
@random_state_option("Seed of the bootstraps and the permutations: the same seed gives "
                     "the same numbers.")
@click.option("--rows", "max_rows", default=20, show_default=True, type=click.IntRange(1),
              help="Slices printed (discoveries first); --csv and --json hold every one.")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False),
              help="Write every slice's row as CSV.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False),
              help="Write a PNG: slices as rows, intervals as bars, discoveries marked.")
@json_option
@friendly
def slices(db: str, run_id: str, by: str, where: tuple[str, ...], threshold: float,
           test: str, truth: str, correct: str, labels_path: str | None, objective: str,
           n_boot: int, n_perm: int, random_state: int, max_rows: int,
           csv_path: str | None, plot_path: str | None, as_json: bool) -> None:
    """Where a run fails: precision, recall and F1 per slice of verdicts with intervals,
    each slice tested against the rest (Benjamini-Hochberg q-values), and the threshold
    each slice would choose on its own.
    \f

    Many parameters because click passes one per command-line option: the body makes one
    library call and formats its result.
    """
    from ...core._canonical import json_safe
    from ...core._files import check_output_file, write_output
    from ...evaluate._slices import slice_run
    from ...evaluate._truth import Truth
    from .._display import SliceDisplay, save_slices_plot

    for path, field in ((csv_path, "--csv"), (plot_path, "--plot")):
        if path:
            check_output_file(path, field=field)
    with read_store(db, must_exist=True) as store:
        res = slice_run(store, run_id, by=by, where=list(where) or None,
                        truth=Truth.parse(truth, labels=labels_path, correct=correct),
                        threshold=threshold, test=test, objective=objective, n_boot=n_boot,
                        n_perm=n_perm, random_state=random_state)
    frame = res.to_frame()
    if csv_path:
        write_output(csv_path, lambda tmp: frame.to_csv(tmp, index=False), field="--csv")
    if plot_path:
        write_output(plot_path, lambda tmp: save_slices_plot(res, tmp), field="--plot")
    info: dict[str, Any] = {k: v for k, v in frame.attrs.items()}
    emit({**json_safe(info), "discoveries": res.discoveries,
          "slices": json_safe(frame.to_dict(orient="records")), "plot": plot_path},
         as_json, "\n".join([res.header(), *SliceDisplay(res).lines(max_rows)])
         + (f"\nplot: wrote {plot_path}" if plot_path else "")
         + (f"\ncsv: wrote {csv_path}" if csv_path else ""))

