"""``truss-lab queue RUN --out queue.csv``: the lessons to label next, as a CSV to fill in.

Registered from :mod:`truss_lab.faces._cli` with :func:`register`. No logic here:
:func:`truss_lab.evaluate._queue.labelling_queue` picks the lessons and
:func:`truss_lab.ingest._labels.write_label_queue` writes the file that
``truss-lab ingest labels`` reads back.
"""

from __future__ import annotations

import click

from ..evaluate._objective import DEFAULT_OBJECTIVE, OBJECTIVE_HELP
from ._cli_common import _emit, _friendly, db_option, json_option, run_argument

__all__ = ["register"]


def register(cli: click.Group) -> None:
    """Add ``queue`` to ``cli``."""

    @cli.command("queue")
    @db_option
    @run_argument
    @click.option("--out", required=True, type=click.Path(dir_okay=False),
                  help="CSV file to write (`truss-lab schema label-queue`); fill in `useful` "
                       "(1 or 0) and load it with `truss-lab ingest labels`.")
    @click.option("--n", "n", default=200, show_default=True, type=click.IntRange(1),
                  help="At most this many lessons.")
    @click.option("--per-verdict", default=2, show_default=True, type=click.IntRange(1),
                  help="At most this many lessons of one verdict.")
    @click.option("--annotator", default=None,
                  help="Written into the annotator column; lessons this annotator already "
                       "labelled are left out.")
    @click.option("--interval", nargs=2, type=float, default=None, metavar="LOW HIGH",
                  help="Salience interval to draw from, in [0, 1] (default: the bootstrap "
                       "interval of the chosen threshold, or 0.70 ± 0.10 with too few labels).")
    @click.option("--objective", default=DEFAULT_OBJECTIVE, show_default=True,
                  help=f"Of the threshold choice whose interval is used. {OBJECTIVE_HELP}")
    @click.option("--n-boot", default=200, show_default=True, type=click.IntRange(1),
                  help="Verdict-bootstrap replicates of the choice's interval.")
    @click.option("--random-state", default=0, show_default=True, type=int,
                  help="Seed of the choice's folds and bootstrap and of the verdict order: "
                       "the same seed writes the same queue.")
    @json_option
    @_friendly
    def queue(db: str, run_id: str, out: str, n: int, per_verdict: int,
              annotator: str | None, interval: tuple[float, float] | None, objective: str,
              n_boot: int, random_state: int, as_json: bool) -> None:
        """List unlabelled lessons whose labels would most move the threshold choice.

        Lessons without a label (or with tied labels) whose salience lies where the
        threshold is being chosen, spread over verdicts, each with its verdict's goal,
        summary and checks. See the README ("A labelling queue").
        """
        from ..core._paths import check_output_file
        from ..evaluate._queue import labelling_queue
        from ..ingest._labels import write_label_queue
        from ..store._store import open_store

        check_output_file(out, field="--out")
        with open_store(db, read_only=True, must_exist=True) as store:
            frame = labelling_queue(store, run_id, n=n, per_verdict=per_verdict,
                                    annotator=annotator, interval=interval or None,
                                    objective=objective, n_boot=n_boot,
                                    random_state=random_state)
        write_label_queue(frame, out)
        info = {**frame.attrs["queue"], "out": out}
        lo, hi = info["interval"]
        text = (f"{out}: {info['n_rows']} lesson(s) of run {run_id} on "
                f"{info['n_rows_verdicts']} verdict(s), at most {per_verdict} per verdict\n"
                f"interval [{lo:.4g}, {hi:.4g}] ({info['source']}): {info['why']}\n"
                f"{info['n_candidates']} lesson(s) without a label in it, on "
                f"{info['n_verdicts']} verdict(s)\n"
                f"next: fill in `useful` (1 or 0) and `annotator`, then "
                f"`truss-lab ingest labels {out} --db {db}` (empty rows are skipped)")
        _emit(info, as_json, text)
