"""The labelling commands: ``judge`` labels a run's lessons with a model,
``judge-agreement`` checks the judge against people before relying on it,
``match-agreement`` checks a matcher against people's match labels, ``match``
matches a run's lessons to reference lessons with a model (the judge matcher), and
``queue`` lists the lessons people should label (or match to references) next.

No logic here: :func:`truss_lab.evaluate._judges.run_judge`,
:func:`truss_lab.evaluate._judges.judge_agreement`,
:func:`truss_lab.evaluate._judges.match_run` and
:func:`truss_lab.evaluate._queue.labelling_queue` and
:func:`truss_lab.evaluate._queue.match_queue` do the work.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from ...core._errors import BadInputError
from ...core._threshold import DEFAULT_MIN_SALIENCE
from ...evaluate._defaults import DEFAULT_BAND, DEFAULT_N_BOOT, DEFAULT_OBJECTIVE, OBJECTIVE_HELP
from ...extract._limits import DEFAULT_DEADLINE, DEFAULT_MAX_CONSECUTIVE_FAILURES
from .common import (
    JUDGE_SPEC_HELP,
    MATCH_SPEC_HELP,
    check_output_file,
    db_option,
    emit,
    friendly,
    json_option,
    labels_option,
    matcher_calls_model,
    matcher_options,
    n_boot_option,
    objective_option,
    option,
    option_given,
    random_state_option,
    read_store,
    run_argument,
    write_output,
    write_outputs,
)

__all__ = ["judge", "judge_agreement", "make_judge", "make_matcher", "match",
           "match_agreement_cmd", "matcher_from_spec", "queue", "say_replayed"]


def _judge_from(spec: str, store: Any, cls: Any, simulated: Any, *,
                base_url: str | None, template: str, field: str,
                live: Mapping[str, Any] | None = None) -> Any:
    """``cls`` (a Judge or a JudgeMatcher) from a CLI spec; ``simulated(truth_csv)``
    returns the (provider, model) of the simulated one; ``live``: options of
    :meth:`~truss_lab.evaluate._judges.ModelJudge.openai` (``deadline``,
    ``max_consecutive_failures``) for ``openai:MODEL``. An error about the spec names
    ``field``, the option the user gave it with. A live one's HTTP client is closed when
    the command ends, however it ends (:func:`_close_with_command`)."""
    try:
        return _close_with_command(_judge_of(spec, store, cls, simulated, base_url=base_url,
                                             template=template, field=field, live=live))
    except BadInputError as exc:
        if exc.field not in (None, "--extractor") or exc.source is not None:
            raise
        # The library says --extractor (or nothing): name what the user typed.
        raise BadInputError(exc.message, field=field, reason=exc.reason) from None


def _close_with_command(made: Any) -> Any:
    """``made`` (a judge or matcher), its provider's connections closed when the running
    command ends, however it ends: else its sockets stay open until the garbage collector
    finds them (a ResourceWarning then, wherever the program is)."""
    close = getattr(getattr(made, "provider", None), "close", None)
    ctx = click.get_current_context(silent=True)
    if callable(close) and ctx is not None:
        ctx.call_on_close(close)
    return made


def _judge_of(spec: str, store: Any, cls: Any, simulated: Any, *,
              base_url: str | None, template: str, field: str,
              live: Mapping[str, Any] | None) -> Any:
    kind, _, arg = spec.partition(":")
    if kind == "openai" and arg:
        if not base_url:
            raise BadInputError("openai:MODEL needs --base-url",
                                field=option_given("base_url", "--base-url"))
        return cls.openai(base_url, arg, template=template, store=store, **(live or {}))
    if kind == "replay" and arg:
        path, _, model = arg.partition("#")
        if model:
            from ...ingest._completions import read_completions

            df, errors = read_completions(path)
            if errors:
                raise BadInputError(f"{len(errors)} bad line(s); the first: {errors[0]}",
                                    source=path)
            return cls.replay(df, model, template=template, store=store)
        return cls.replay(store, arg, template=template)
    if kind == "simulated":
        from .._notebook import SAMPLE

        provider, model = simulated(arg or str(SAMPLE / "lesson_truth.csv"))
        return cls(provider, model, cls.prompt(template, store), {"temperature": 0})
    raise BadInputError(f"unknown judge {spec!r}; expected openai:MODEL, replay:MODEL, "
                        "replay:PATH.jsonl#MODEL or simulated[:LESSON_TRUTH.csv]",
                        field=field)


def _simulated(make: Any, *paths: str | Path) -> Any:
    """``make()``, the simulated judge or matcher reading ``paths`` (the simulator's
    lesson_truth.csv, and references.jsonl beside it), with a missing or foreign file
    said in one line instead of pandas' traceback."""
    for path in paths:
        if not Path(path).is_file():
            raise BadInputError("no such file; simulated:PATH reads the simulator's "
                                "lesson_truth.csv (and references.jsonl beside it), as "
                                "`truss-lab sample` or `simulate` writes them", source=str(path))
    try:
        return make()
    except KeyError as exc:  # pandas: a column the simulator writes is missing
        raise BadInputError(f"missing column {exc.args[0]!r}: not the simulator's "
                            f"{Path(paths[0]).name} / references.jsonl",
                            source=str(paths[0])) from None
    except (ValueError, TypeError) as exc:  # unreadable CSV/JSON, a non-number index
        raise BadInputError(f"not the simulator's lesson truth / references: "
                            f"{' '.join(str(exc).split())[:200]}",
                            source=str(paths[0])) from None


def make_judge(spec: str, store: Any, *, base_url: str | None = None,
               template: str = "judge-v1", live: Mapping[str, Any] | None = None) -> Any:
    """A :class:`~truss_lab.evaluate._judges.Judge` from a CLI spec: ``openai:MODEL``
    (live, with ``base_url``), ``replay:MODEL`` (the store's recordings),
    ``replay:PATH.jsonl#MODEL`` or ``simulated[:LESSON_TRUTH.csv]`` (the
    simulator's synthetic judge, model ``sim-judge-v1``; its calls are recorded)."""
    from ...evaluate._judges import Judge
    from ...simulate._providers import SIMULATED_JUDGE_MODEL, SimulatedJudgeProvider

    def simulated(truth: str) -> tuple[Any, str]:
        return _simulated(lambda: SimulatedJudgeProvider(truth), truth), SIMULATED_JUDGE_MODEL

    return _judge_from(spec, store, Judge, simulated, base_url=base_url, template=template,
                       field=option_given("spec", "--judge"), live=live)


def make_matcher(spec: str, store: Any, *, base_url: str | None = None,
                 template: str = "match-v1", field: str | None = None,
                 live: Mapping[str, Any] | None = None) -> Any:
    """A :class:`~truss_lab.evaluate._judges.JudgeMatcher` from a CLI spec, spelled
    as for :func:`make_judge`; ``simulated[:LESSON_TRUTH.csv]`` is the simulator's
    synthetic matcher (model ``sim-match-v1``, references.jsonl beside the truth)."""
    from ...evaluate._judges import JudgeMatcher
    from ...simulate._providers import SIMULATED_MATCH_MODEL, SimulatedMatchProvider

    def simulated(truth: str) -> tuple[Any, str]:
        refs = Path(truth).with_name("references.jsonl")
        return (_simulated(lambda: SimulatedMatchProvider(truth, refs), truth, refs),
                SIMULATED_MATCH_MODEL)

    return _judge_from(spec, store, JudgeMatcher, simulated, base_url=base_url,
                       template=template, field=field or option_given("spec", "--judge"),
                       live=live)


def _model_options(what: str, spec_help: str, prompt: str) -> Any:
    """RUN, --db, --judge SPEC, --base-url, --prompt, --deadline and
    --max-consecutive-failures of a command that asks a model (the last two reach the
    command as one ``live`` mapping)."""

    def wrap(fn: Any) -> Any:
        @functools.wraps(fn)
        def command(*args: Any, deadline: float | None, max_consecutive_failures: int,
                    **kwargs: Any) -> Any:
            live = {"max_consecutive_failures": max_consecutive_failures,
                    **({} if deadline is None else {"deadline": deadline})}
            return fn(*args, live=live, **kwargs)

        for opt in reversed((
                click.argument("run_id", metavar="RUN"), db_option,
                option("--judge", "spec", required=True, old=("--extractor",),
                       help=f"The {what}: {spec_help}"),
                click.option("--base-url", default=None,
                             help="OpenAI-compatible endpoint (openai:MODEL)."),
                click.option("--prompt", "template", default=prompt, show_default=True,
                             metavar="NAME",
                             help=f"Prompt version: a built-in {what} prompt or one "
                                  "registered with `truss-lab prompts add FILE`."),
                click.option("--deadline", default=None,
                             type=click.FloatRange(0, min_open=True), metavar="SECONDS",
                             help="Most seconds one live call may take, its retries "
                                  f"included (openai:MODEL; default {DEFAULT_DEADLINE:g})."),
                click.option("--max-consecutive-failures",
                             default=DEFAULT_MAX_CONSECUTIVE_FAILURES, show_default=True,
                             type=click.IntRange(1),
                             help="Stop (exit 2, no label written; the calls answered "
                                  "are recorded) after this many live calls in a row "
                                  "failed after their retries."))):
            command = opt(command)
        return command

    return wrap



@click.command()
@_model_options("judge", JUDGE_SPEC_HELP + ".", "judge-v1")
@json_option
@friendly
def judge(run_id: str, db: str, spec: str, base_url: str | None, template: str,
          live: dict[str, Any], as_json: bool) -> None:
    """Label a run's lessons with a model, stored as judge:<model>@<prompt> labels.

    A run judged before answers from its own recorded answers, calling nothing (it says
    so; to ask the model again, judge a rerun: truss-lab rerun RUN --run-id NEW). Exits 1
    with one line when no call or answer gave a label."""
    from ...evaluate._judges import run_judge
    from ...store._store import open_store

    with open_store(db, must_exist=True) as store:
        made = make_judge(spec, store, base_url=base_url, template=template, live=live)
        res = run_judge(store, run_id, made)
    if (res.provider_calls or res.resumed) and not res.n_labels and res.errors:
        said = (f"every one of the {res.provider_calls} calls failed" if not res.resumed
                else f"none of the {res.provider_calls + res.resumed} answers gave a label"
                     f"{_replayed_unusable(res.resumed_unusable, run_id, 'judge')}")
        _every_call_failed(res.to_dict(), as_json,
                           f"{res.annotator}: {said}, no label written; the first: "
                           f"{res.errors[0]}")
    text = (f"{res.annotator}: {res.n_labels} labels for {res.n_lessons} lessons of run "
            f"{run_id} on {res.n_verdicts} verdicts ({res.labels_added} new); "
            f"{res.provider_calls} requests, {res.recorded} live calls recorded for replay")
    if res.resumed:
        text += "\n" + _replayed_line(res.resumed, res.resumed_unusable, run_id, "judge")
    if res.labels_kept:
        text += (f"\n{res.labels_kept} label(s) differ from the ones stored for the same "
                 "lessons (same extractor, verdict and index; another run judged first): "
                 "kept as stored")
    if res.errors:
        text += f"\n{len(res.errors)} answer(s) not fully usable; the first: {res.errors[0]}"
    emit(res.to_dict(), as_json, text)


def _ask_again(run_id: str, command: str) -> str:
    """How to have the model asked again about ``run_id``'s lessons: a live judge answers
    from the run's own recordings, so a rerun (a new run, none of its own) is asked."""
    return (f"to ask the model again, {command} a rerun of it: truss-lab rerun {run_id} "
            f"--run-id NEW, then truss-lab {command} NEW")


def say_replayed(matcher: Any) -> None:
    """A ``note:`` line on stderr when a live judge matcher (``--matcher judge:SPEC`` of an
    evaluating command) answered from the matched runs' recordings instead of calling:
    the command's own output does not say where its similarities came from."""
    n = getattr(matcher, "resumed", 0)
    if not n:
        return
    bad = len(matcher.resumed_errors)
    click.echo(f"note: {matcher.name}: {n} answer(s) replayed from the matched run's "
               f"recordings (no call made{f', {bad} of them not usable' if bad else ''}); "
               "to ask the model again, evaluate a rerun of the run: truss-lab rerun RUN "
               "--run-id NEW", err=True)


def _replayed_line(n: int, unusable: int, run_id: str, command: str) -> str:
    """The line saying ``n`` answers came from ``run_id``'s recordings, not the model."""
    bad = f", {unusable} of them not usable" if unusable else ""
    return (f"{n} answer(s) replayed from this run's recordings (no call made{bad}); "
            f"{_ask_again(run_id, command)}")


def _replayed_unusable(unusable: int, run_id: str, command: str) -> str:
    """What an every-answer-failed line adds when some answers were recordings."""
    if not unusable:
        return ""
    return (f" ({unusable} of them recorded answers replayed from this run's recordings, "
            f"no call made; {_ask_again(run_id, command)})")


def _every_call_failed(result: dict[str, Any], as_json: bool, line: str) -> None:
    """Exit 1 saying ``line`` (one ``error:`` line on stderr); with ``--json`` the result
    is printed first, as on success."""
    if as_json:
        emit(result, as_json, "")
    click.echo(f"error: {line}", err=True)
    sys.exit(1)


@click.command("judge-agreement")
@click.argument("run_id", metavar="RUN", required=False)
@db_option
@click.option("--judge", "name", required=True,
              help="The judge annotator (judge:MODEL@PROMPT; the judge: prefix optional).")
@labels_option("Labels CSV (truss-lab schema labels) instead of the labels table.")
@n_boot_option(DEFAULT_N_BOOT, "Verdict-bootstrap replicates.")
@random_state_option("Seed of the verdict bootstrap behind the agreement intervals.")
@json_option
@friendly
def judge_agreement(run_id: str | None, db: str, name: str, labels_path: str | None,
                    n_boot: int, random_state: int, as_json: bool) -> None:
    """A judge's Cohen kappa, precision and recall against human labels (RUN optional)."""
    from ...evaluate._judges import judge_agreement as agreement_of

    with read_store(db, must_exist=True) as store:
        res = agreement_of(store, name, run_id, labels=labels_path, n_boot=n_boot,
                           random_state=random_state)
    emit(res.to_dict(), as_json, repr(res))



def matcher_from_spec(spec: str, store: Any, *, base_url: str | None = None,
                      field: str | None = None) -> Any:
    """The matcher a ``--matcher`` value names (:func:`~.common.matcher_options`):
    ``auto`` (None: the default, the semantic matcher), ``lexical`` or ``semantic`` (the
    name, which :func:`~truss_lab.score._matching.matcher_named` builds when a reference
    truth first matches, so a command judged by labels never loads a model) or
    ``judge:SPEC`` (a :class:`~truss_lab.evaluate._judges.JudgeMatcher` from SPEC, as
    :func:`make_matcher` reads it; ``openai:MODEL`` needs ``base_url``). A judge one
    records each live call in ``store`` as it is answered (a kill keeps what was paid
    for; the same command then replays them). An error names ``field``, by default the
    spelling of ``--matcher`` the user gave."""
    field = field or option_given("matcher", "--matcher")
    if spec == "auto":
        return None
    if spec in ("lexical", "semantic"):
        return spec
    if spec.startswith("judge:") and len(spec) > len("judge:"):
        m = make_matcher(spec[len("judge:"):], store, base_url=base_url, field=field)
        m.record_to(store)
        return m
    raise BadInputError(f"unknown matcher {spec!r}; expected auto, lexical, semantic or "
                        "judge:SPEC "
                        "(judge:replay:MODEL, judge:openai:MODEL ...)", field=field)


@click.command("match-agreement")
@click.argument("run_id", metavar="RUN")
@db_option
@matcher_options
@click.option("--match-threshold", default=None, type=click.FloatRange(0, 1),
              help="Similarity a lesson needs to claim a reference (default: the matcher's "
                   "own).")
@click.option("--match-labels", "match_labels_path", type=click.Path(dir_okay=False),
              help="Match labels CSV (`truss-lab schema match-labels`) instead of the "
                   "database's match_labels table.")
@click.option("--references", "references_path", type=click.Path(dir_okay=False),
              help="Reference lessons JSONL instead of the database's reference_lessons.")
@click.option("--score", default="salience", show_default=True,
              help="Score ordering the one-to-one assignment (a candidates column).")
@click.option("--between-people", is_flag=True,
              help="People against people instead of a matcher: Cohen's kappa (Fleiss' for "
                   "three or more people) and raw agreement of the match labels and of the "
                   "gold labels on the run's lessons two or more people answered, with "
                   "verdict-bootstrap intervals.")
@labels_option("Gold labels CSV instead of the labels table (with --between-people).")
@n_boot_option(DEFAULT_N_BOOT, "Verdict-bootstrap replicates.")
@random_state_option("Seed of the verdict bootstrap behind the intervals.")
@json_option
@friendly
def match_agreement_cmd(run_id: str, db: str, matcher: str, base_url: str | None,
                        match_threshold: float | None, match_labels_path: str | None,
                        references_path: str | None, score: str, between_people: bool,
                        labels_path: str | None, n_boot: int, random_state: int,
                        as_json: bool) -> None:
    """A matcher's pair precision, pair recall and matched-flag kappa against people's
    match labels, on the lessons people matched; with --between-people, how far the
    people agree with each other (docs/how-to/correct-with-people.md).

    \f
    Many parameters because each is one of the command's options (click passes them
    one by one); the two modes share the run, store and bootstrap ones."""
    from ...evaluate._matches import match_agreement
    from ...store._store import open_store

    if between_people:
        from ...evaluate._people import people_agreement

        with read_store(db, must_exist=True) as store:
            agree = people_agreement(store, run_id, match_labels=match_labels_path,
                                     labels=labels_path, n_boot=n_boot,
                                     random_state=random_state)
        if not agree.checked("match labels"):
            raise BadInputError(
                f"no lesson of run {run_id!r} was matched by two people, so people cannot "
                "be checked against people: have a second person answer a share of the matched "
                "verdicts (a copy of the match queue, their name in `annotator`), then "
                "`truss-lab ingest match-labels` it", field="--between-people")
        emit(agree.to_dict(), as_json, repr(agree))
        return

    with (open_store(db, must_exist=True) if matcher_calls_model(matcher)
          else read_store(db, must_exist=True)) as store:
        m = matcher_from_spec(matcher, store, base_url=base_url)
        res = match_agreement(store, run_id, matcher=m, match_labels=match_labels_path,
                              references=references_path, match_threshold=match_threshold,
                              score=score, n_boot=n_boot, random_state=random_state)
    say_replayed(m)
    emit(res.to_dict(), as_json, repr(res))


@click.command()
@_model_options("judge matcher", MATCH_SPEC_HELP, "match-v1")
@click.option("--references", "references_path", type=click.Path(dir_okay=False),
              help="Reference lessons JSONL (`truss-lab schema references`) instead of "
                   "the database's reference_lessons table.")
@json_option
@friendly
def match(run_id: str, db: str, spec: str, base_url: str | None, template: str,
          live: dict[str, Any], references_path: str | None, as_json: bool) -> None:
    """Match a run's lessons to reference lessons with a model; record its calls.

    A run matched before answers from its own recorded answers, calling nothing (it says
    so; to ask the model again, match a rerun: truss-lab rerun RUN --run-id NEW). Exits 1
    with one line when no answer could be used."""
    from ...evaluate._judges import match_run
    from ...store._store import open_store

    with open_store(db, must_exist=True) as store:
        made = make_matcher(spec, store, base_url=base_url, template=template, live=live)
        res = match_run(store, run_id, made, references=references_path)
    if res["requests"] and len(res["errors"]) >= res["requests"]:
        first = next(iter(res["errors"].items()))
        replayed = _replayed_unusable(res["resumed_unusable"], run_id, "match")
        _every_call_failed(res, as_json,
                           f"{res['matcher']}: none of the {res['requests']} answers could be "
                           f"used{replayed}, no verdict matched; the first: {first[0]}: "
                           f"{first[1]}")
    text = (f"{res['matcher']}: {res['matched']} of {res['lessons']} lessons of run "
            f"{run_id} matched {res['references']} references on {res['verdicts']} "
            f"annotated verdicts (match threshold {res['match_threshold']:g}); "
            f"{res['provider_calls']} requests, {res['recorded']} live calls recorded for "
            "replay")
    if res["resumed"]:
        text += "\n" + _replayed_line(res["resumed"], res["resumed_unusable"], run_id, "match")
    if res["errors"]:
        first = next(iter(res["errors"].items()))
        text += (f"\n{len(res['errors'])} verdict(s) left out, answer not usable; the "
                 f"first: {first[0]}: {first[1]}")
    emit(res, as_json, text)


_LABEL_ONLY = ("n", "per_verdict", "interval", "objective", "n_boot")


@click.command("queue")
@db_option
@run_argument
@click.option("--out", required=True, type=click.Path(dir_okay=False),
              help="CSV file to write. label: `truss-lab schema label-queue`, fill in `useful` "
                   "(1 or 0) and load it with `truss-lab ingest labels`. match: `truss-lab "
                   "schema match-queue`, replace each `?` with a reference id (or empty: "
                   "none) and load it with `truss-lab ingest match-labels`; the draw is "
                   "recorded beside it in OUT.json.")
@click.option("--kind", type=click.Choice(["label", "match"]), default="label",
              show_default=True,
              help="label: lessons to label useful or not, where the threshold is chosen. "
                   "match: every lesson of --n-verdicts annotated verdicts drawn at random, "
                   "to match to the verdict's references (docs/how-to/correct-with-people.md).")
@click.option("--whole-verdicts", is_flag=True, default=False,
              help="--kind label: every candidate of --n-verdicts verdicts drawn at random "
                   "(any salience, the parser's dropped ones too), to label whole: the labels "
                   "a prediction-powered correction of a judge (--correct ppi) can use; the "
                   "draw is recorded beside the CSV in OUT.json.")
@click.option("--n-verdicts", "n_verdicts", default=None, type=click.IntRange(1),
              help="--kind match and --whole-verdicts: how many verdicts to draw (required "
                   "there).")
@option("--n-lessons", "n", default=200, show_default=True, type=click.IntRange(1),
        old=("--n",), help="--kind label: at most this many lessons.")
@click.option("--per-verdict", default=2, show_default=True, type=click.IntRange(1),
              help="--kind label: at most this many lessons of one verdict.")
@click.option("--annotator", default=None,
              help="Written into the annotator column; with --kind label, lessons this "
                   "annotator already labelled are left out.")
@click.option("--interval", nargs=2, type=float, default=None, metavar="LOW HIGH",
              help="--kind label: salience interval to draw from, in [0, 1] (default: the "
                   "bootstrap interval of the chosen threshold, or "
                   f"{DEFAULT_MIN_SALIENCE:.2f} ± {DEFAULT_BAND:.2f} with too few labels).")
@objective_option(DEFAULT_OBJECTIVE, "--kind label: of the threshold choice whose interval is "
                  f"used. {OBJECTIVE_HELP}")
@n_boot_option(200, "--kind label: verdict-bootstrap replicates of the choice's interval.")
@random_state_option("Seed of the draw (match: which verdicts; label: the choice's folds "
                     "and bootstrap and the verdict order): the same seed writes the same "
                     "queue.")
@json_option
@friendly
def queue(db: str, run_id: str, out: str, kind: str, whole_verdicts: bool,
          n_verdicts: int | None, n: int, per_verdict: int, annotator: str | None,
          interval: tuple[float, float] | None, objective: str, n_boot: int,
          random_state: int, as_json: bool) -> None:
    """List lessons for people: to label (--kind label) or to match (--kind match).

    label: lessons without a label (or with tied labels) whose salience lies where the
    threshold is being chosen, spread over verdicts, each with its verdict's goal,
    summary and checks. See docs/how-to/correct-with-people.md.
    label --whole-verdicts: every candidate of --n-verdicts verdicts drawn at random,
    the labels that correct a judge (--correct ppi).
    match: every valid lesson of --n-verdicts annotated verdicts drawn at random, with
    the verdict's references to choose from. See docs/how-to/correct-with-people.md.
    \f

    Many parameters because click passes one per command-line option: the options are the
    command's interface (unchanged), and the body parses them, makes one library call and
    formats its result.
    """
    from ...evaluate._queue import labelling_queue
    from ...ingest._labels import write_label_queue
    from ...store._store import open_store

    if kind == "match" or whole_verdicts:
        if kind == "match" and whole_verdicts:
            raise BadInputError("--whole-verdicts is for --kind label (a match queue lists "
                                "whole verdicts already)", field="--whole-verdicts")
        _drawn_queue(db, run_id, out, kind, n_verdicts, annotator, random_state, as_json)
        return
    if n_verdicts is not None:
        raise BadInputError("--n-verdicts is for --kind match; --kind label takes --n-lessons",
                            field="--n-verdicts")
    check_output_file(out, field="--out")
    with open_store(db, read_only=True, must_exist=True) as store:
        frame = labelling_queue(store, run_id, n=n, per_verdict=per_verdict,
                                annotator=annotator, interval=interval or None,
                                objective=objective, n_boot=n_boot,
                                random_state=random_state)
    write_output(out, lambda tmp: write_label_queue(frame, tmp), field="--out")
    info = {**frame.attrs["queue"], "out": out}
    lo, hi = info["interval"]
    text = (f"{out}: {info['n_rows']} lesson(s) of run {run_id} on "
            f"{info['n_rows_verdicts']} verdict(s), at most {per_verdict} per verdict\n"
            f"interval [{lo:.4g}, {hi:.4g}] ({info['source']}): {info['why']}\n"
            f"{info['n_candidates']} lesson(s) without a label in it, on "
            f"{info['n_verdicts']} verdict(s)\n"
            f"next: fill in `useful` (1 or 0) and `annotator`, then "
            f"`truss-lab ingest labels {out} --db {db}` (empty rows are skipped)")
    emit(info, as_json, text)


def _drawn_queue(db: str, run_id: str, out: str, kind: str, n_verdicts: int | None,
                 annotator: str | None, random_state: int, as_json: bool) -> None:
    """``queue --kind match`` and ``queue --whole-verdicts``: every lesson of verdicts drawn
    at random; the CSV and, beside it, ``OUT.json`` recording the draw."""
    what = "--kind match" if kind == "match" else "--whole-verdicts"
    from ...evaluate._queue import match_queue, whole_verdict_queue
    from ...ingest._labels import write_label_queue
    from ...ingest._match_labels import write_match_queue
    from ...store._store import open_store

    ctx = click.get_current_context()
    given = [option_given(p, f"--{p.replace('_', '-')}") for p in _LABEL_ONLY
             if ctx.get_parameter_source(p) is not click.core.ParameterSource.DEFAULT
             or f"truss_lab.given.{p}" in ctx.meta]  # --n-lessons, or its old --n
    if given:
        raise BadInputError(f"{', '.join(given)} is for --kind label, not {what}",
                            field=given[0])
    if n_verdicts is None:
        raise BadInputError(f"{what} needs --n-verdicts N (how many verdicts to draw)",
                            field="--n-verdicts")
    meta = f"{out}.json"
    check_output_file(out, field="--out")
    check_output_file(meta, field="--out")
    with open_store(db, read_only=True, must_exist=True) as store:
        if kind == "match":
            frame = match_queue(store, run_id, n_verdicts=n_verdicts, annotator=annotator,
                                random_state=random_state)
        else:
            frame = whole_verdict_queue(store, run_id, n_verdicts=n_verdicts,
                                        annotator=annotator, random_state=random_state)
    info = {**frame.attrs["queue"], "out": out, "sidecar": meta}
    writer = write_match_queue if kind == "match" else write_label_queue
    # The queue and its sidecar together or neither: a queue without its draw's record
    # could not be weighted.
    write_outputs([(out, lambda tmp: writer(frame, tmp)),
                   (meta, lambda tmp: tmp.write_text(json.dumps(info, indent=2) + "\n",
                                                     encoding="utf-8"))], field="--out")
    if kind == "match":
        text = (f"{out}: {info['n_rows']} lesson(s) of run {run_id} on {info['n_verdicts']} "
                f"verdict(s) drawn at random (seed {random_state}) from {info['population']} "
                f"annotated verdict(s) with lessons; the draw is recorded in {meta}\n"
                f"next: replace each `?` in reference_id with a reference id from "
                f"`references` (or leave it empty: none of them), fill in `annotator`, then "
                f"`truss-lab ingest match-labels {out} --db {db}`")
    else:
        text = (f"{out}: {info['n_rows']} lesson(s) of run {run_id}, every one without a "
                f"label on {info['n_verdicts']} verdict(s) drawn at random (seed "
                f"{random_state}) from the {info['population']} with a candidate; the draw "
                f"is recorded in {meta}\n"
                f"next: fill in `useful` (1 or 0) on every row and `annotator`, then "
                f"`truss-lab ingest labels {out} --db {db}`: whole verdicts, which "
                f"--correct ppi can use")
    if info["n_verdicts"] < n_verdicts:
        kinds = "matchable" if kind == "match" else "candidate-holding"
        text += (f"\nonly {info['n_verdicts']} {kinds} verdict(s), fewer than the "
                 f"{n_verdicts} asked: all listed")
    emit(info, as_json, text)

