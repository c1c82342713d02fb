"""``truss-lab judge | judge-agreement | match``: label a run's lessons with a model,
check the judge against people before relying on it, and match a run's lessons to
reference lessons with a model (the judge matcher).

Registered from :mod:`truss_lab.faces._cli` with :func:`register`. No logic here:
:func:`truss_lab.extract._judge.run_judge`,
:func:`truss_lab.evaluate._judge_agreement.judge_agreement` and
:func:`truss_lab.extract._match_judge.match_run` do the work.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..core._errors import BadInputError
from ._cli_common import _emit, _friendly, db_option, json_option, read_store

__all__ = ["JUDGE_SPEC_HELP", "MATCH_SPEC_HELP", "make_judge", "make_matcher", "register"]

_SAMPLE_TRUTH = Path(__file__).resolve().parents[2] / "datasets" / "sample" / "lesson_truth.csv"


JUDGE_SPEC_HELP = ("openai:MODEL | replay:MODEL | replay:PATH.jsonl#MODEL | "
                   "simulated[:LESSON_TRUTH.csv] (synthetic, for the sample)")
MATCH_SPEC_HELP = (JUDGE_SPEC_HELP + "; simulated reads references.jsonl beside the "
                   "lesson truth. See README, Matchers.")


def _judge_from(spec: str, store: Any, cls: Any, simulated: Any, *,
                base_url: str | None, template: str, field: str) -> Any:
    """``cls`` (a Judge or a JudgeMatcher) from a CLI spec; ``simulated(truth_csv)``
    returns the (provider, model) of the simulated one."""
    from ..extract._prompts import get_template

    kind, _, arg = spec.partition(":")
    if kind == "openai" and arg:
        if not base_url:
            raise BadInputError("openai:MODEL needs --base-url", field="--base-url")
        return cls.openai(base_url, arg, template=template)
    if kind == "replay" and arg:
        path, _, model = arg.partition("#")
        if model:
            from ..ingest._completions import read_completions

            df, errors = read_completions(path)
            if errors:
                raise BadInputError(f"{len(errors)} bad line(s); the first: {errors[0]}",
                                    source=path)
            return cls.replay(df, model, template=template)
        return cls.replay(store, arg, template=template)
    if kind == "simulated":
        provider, model = simulated(arg or str(_SAMPLE_TRUTH))
        return cls(provider, model, get_template(template), {"temperature": 0})
    raise BadInputError(f"unknown judge {spec!r}; expected openai:MODEL, replay:MODEL, "
                        "replay:PATH.jsonl#MODEL or simulated[:LESSON_TRUTH.csv]",
                        field=field)


def make_judge(spec: str, store: Any, *, base_url: str | None = None,
               template: str = "judge-v1") -> Any:
    """A :class:`~truss_lab.extract._judge.Judge` from a CLI spec: ``openai:MODEL``
    (live, with ``base_url``), ``replay:MODEL`` (the store's recordings),
    ``replay:PATH.jsonl#MODEL`` or ``simulated[:LESSON_TRUTH.csv]`` (the
    simulator's synthetic judge, model ``sim-judge-v1``; its calls are recorded)."""
    from ..extract._judge import Judge

    def simulated(truth: str) -> tuple[Any, str]:
        from ..simulate._providers import SIMULATED_JUDGE_MODEL, SimulatedJudgeProvider

        return SimulatedJudgeProvider(truth), SIMULATED_JUDGE_MODEL

    return _judge_from(spec, store, Judge, simulated, base_url=base_url, template=template,
                       field="--extractor")


def make_matcher(spec: str, store: Any, *, base_url: str | None = None,
                 template: str = "match-v1", field: str = "--extractor") -> Any:
    """A :class:`~truss_lab.extract._match_judge.JudgeMatcher` from a CLI spec, spelled
    as for :func:`make_judge`; ``simulated[:LESSON_TRUTH.csv]`` is the simulator's
    synthetic matcher (model ``sim-match-v1``, references.jsonl beside the truth)."""
    from ..extract._match_judge import JudgeMatcher

    def simulated(truth: str) -> tuple[Any, str]:
        from ..simulate._providers import SIMULATED_MATCH_MODEL, SimulatedMatchProvider

        return (SimulatedMatchProvider(truth, Path(truth).with_name("references.jsonl")),
                SIMULATED_MATCH_MODEL)

    return _judge_from(spec, store, JudgeMatcher, simulated, base_url=base_url,
                       template=template, field=field)


def _model_options(what: str, spec_help: str, prompt: str) -> Any:
    """RUN, --db, --extractor SPEC, --base-url and --prompt of a command that asks a model."""

    def wrap(fn: Any) -> Any:
        for opt in reversed((
                click.argument("run_id", metavar="RUN"), db_option,
                click.option("--extractor", "spec", required=True,
                             help=f"The {what}: {spec_help}"),
                click.option("--base-url", default=None,
                             help="OpenAI-compatible endpoint (openai:MODEL)."),
                click.option("--prompt", "template", default=prompt, show_default=True,
                             help="Prompt version."))):
            fn = opt(fn)
        return fn

    return wrap


def register(cli: click.Group) -> None:
    """Add ``judge``, ``judge-agreement`` and ``match`` to ``cli``."""

    @cli.command()
    @_model_options("judge", JUDGE_SPEC_HELP + ".", "judge-v1")
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

    @cli.command()
    @_model_options("judge matcher", MATCH_SPEC_HELP, "match-v1")
    @click.option("--references", "references_path", type=click.Path(dir_okay=False),
                  help="Reference lessons JSONL (`truss-lab schema references`) instead of "
                       "the database's reference_lessons table.")
    @json_option
    @_friendly
    def match(run_id: str, db: str, spec: str, base_url: str | None, template: str,
              references_path: str | None, as_json: bool) -> None:
        """Match a run's lessons to reference lessons with a model; record its calls."""
        from ..extract._match_judge import match_run
        from ..store._store import open_store

        with open_store(db, must_exist=True) as store:
            res = match_run(store, run_id, make_matcher(spec, store, base_url=base_url,
                                                        template=template),
                            references=references_path)
        text = (f"{res['matcher']}: {res['matched']} of {res['lessons']} lessons of run "
                f"{run_id} matched {res['references']} references on {res['verdicts']} "
                f"annotated verdicts (match threshold {res['match_threshold']:g}); "
                f"{res['requests']} requests, {res['recorded']} live calls recorded for replay")
        if res["errors"]:
            first = next(iter(res["errors"].items()))
            text += (f"\n{len(res['errors'])} verdict(s) left out, answer not usable; the "
                     f"first: {first[0]}: {first[1]}")
        _emit(res, as_json, text)
