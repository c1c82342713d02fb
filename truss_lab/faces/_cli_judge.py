"""``truss-lab judge | judge-agreement``: label a run's lessons with a model, and check
the judge against people before relying on it.

Registered from :mod:`truss_lab.faces._cli` with :func:`register`. No logic here:
:func:`truss_lab.extract._judge.run_judge` and
:func:`truss_lab.evaluate._judge_agreement.judge_agreement` do the work.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..core._errors import BadInputError
from ._cli_common import _emit, _friendly, db_option, json_option, read_store

__all__ = ["make_judge", "register"]

_SAMPLE_TRUTH = Path(__file__).resolve().parents[2] / "datasets" / "sample" / "lesson_truth.csv"


def make_judge(spec: str, store: Any, *, base_url: str | None = None,
               template: str = "judge-v1") -> Any:
    """A :class:`~truss_lab.extract._judge.Judge` from a CLI spec: ``openai:MODEL``
    (live, with ``base_url``), ``replay:MODEL`` (the store's recordings),
    ``replay:PATH.jsonl#MODEL`` or ``simulated[:LESSON_TRUTH.csv]`` (the
    simulator's synthetic judge, model ``sim-judge-v1``; its calls are recorded)."""
    from ..extract._judge import Judge
    from ..extract._prompts import get_template

    kind, _, arg = spec.partition(":")
    if kind == "openai" and arg:
        if not base_url:
            raise BadInputError("openai:MODEL needs --base-url", field="--base-url")
        return Judge.openai(base_url, arg, template=template)
    if kind == "replay" and arg:
        path, _, model = arg.partition("#")
        if model:
            from ..ingest._completions import read_completions

            df, errors = read_completions(path)
            if errors:
                raise BadInputError(f"{len(errors)} bad line(s); the first: {errors[0]}",
                                    source=path)
            return Judge.replay(df, model, template=template)
        return Judge.replay(store, arg, template=template)
    if kind == "simulated":
        from ..simulate._judge import SIMULATED_JUDGE_MODEL, SimulatedJudgeProvider

        truth = arg or str(_SAMPLE_TRUTH)
        return Judge(SimulatedJudgeProvider(truth), SIMULATED_JUDGE_MODEL,
                     get_template(template), {"temperature": 0})
    raise BadInputError(f"unknown judge {spec!r}; expected openai:MODEL, replay:MODEL, "
                        "replay:PATH.jsonl#MODEL or simulated[:LESSON_TRUTH.csv]",
                        field="--extractor")


def register(cli: click.Group) -> None:
    """Add ``judge`` and ``judge-agreement`` to ``cli``."""

    @cli.command()
    @click.argument("run_id", metavar="RUN")
    @db_option
    @click.option("--extractor", "spec", required=True,
                  help="The judge: openai:MODEL | replay:MODEL | replay:PATH.jsonl#MODEL | "
                       "simulated[:LESSON_TRUTH.csv] (synthetic, for the sample).")
    @click.option("--base-url", default=None, help="OpenAI-compatible endpoint (openai:MODEL).")
    @click.option("--prompt", "template", default="judge-v1", show_default=True,
                  help="Judge prompt version.")
    @json_option
    @_friendly
    def judge(run_id: str, db: str, spec: str, base_url: str | None, template: str,
              as_json: bool) -> None:
        """Label a run's lessons with a model, stored as judge:<model>@<prompt> labels."""
        from ..extract._judge import run_judge
        from ..store._store import open_store

        with open_store(db, must_exist=True) as store:
            res = run_judge(store, run_id, make_judge(spec, store, base_url=base_url,
                                                      template=template))
        text = (f"{res.annotator}: {res.n_labels} labels for {res.n_lessons} lessons of run "
                f"{run_id} on {res.n_verdicts} verdicts ({res.labels_added} new); "
                f"{res.provider_calls} requests, {res.recorded} live calls recorded for replay")
        if res.errors:
            text += f"\n{len(res.errors)} answer(s) not fully usable; the first: {res.errors[0]}"
        _emit(res.to_dict(), as_json, text)

    @cli.command("judge-agreement")
    @click.argument("run_id", metavar="RUN", required=False)
    @db_option
    @click.option("--judge", "name", required=True,
                  help="The judge annotator (judge:MODEL@PROMPT; the judge: prefix optional).")
    @click.option("--labels", "labels_path", type=click.Path(dir_okay=False),
                  help="Labels CSV (truss-lab schema labels) instead of the labels table.")
    @click.option("--n-boot", default=1000, show_default=True, type=click.IntRange(1),
                  help="Verdict-bootstrap replicates.")
    @click.option("--random-state", default=0, show_default=True, type=int,
                  help="Seed of the verdict bootstrap behind the agreement intervals.")
    @json_option
    @_friendly
    def judge_agreement_cmd(run_id: str | None, db: str, name: str, labels_path: str | None,
                            n_boot: int, random_state: int, as_json: bool) -> None:
        """A judge's Cohen kappa, precision and recall against human labels (RUN optional)."""
        from ..evaluate._judge_agreement import judge_agreement

        with read_store(db, must_exist=True) as store:
            res = judge_agreement(store, name, run_id, labels=labels_path, n_boot=n_boot,
                                  random_state=random_state)
        _emit(res.to_dict(), as_json, repr(res))
