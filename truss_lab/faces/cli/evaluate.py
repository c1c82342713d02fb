"""The evaluation commands: ``sweep``, ``choose``, ``compare``, ``budget`` (labels needed),
``frontier`` and ``usage`` (what a run cost), ``calibrate``, ``propose`` and ``report`` (one
self-contained HTML file).

No logic lives here: each command parses its options into a
:class:`~truss_lab.evaluate._truth.Truth` and the rest, makes one library call that
returns a result (:func:`~truss_lab.evaluate._runs.evaluate_run`, ``compare_runs``,
``calibration_run``, ``frontier``, :func:`~truss_lab.govern._decision.propose_threshold`,
:func:`~truss_lab.faces._report.write_report`) and formats it; text, plots and the report
come from :mod:`truss_lab.faces._display` and :mod:`truss_lab.faces._report`
(tests/test_layers.py lists any import here of an evaluation internal).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from ...core._errors import BadInputError
from ...core._threshold import DEFAULT_MIN_SALIENCE, check_threshold
from ...evaluate._defaults import (
    CORRECT_HELP,
    CORRECTIONS,
    DEFAULT_CV,
    DEFAULT_N_BOOT,
    DEFAULT_OBJECTIVE,
    OBJECTIVE_HELP,
    TRUTH_HELP,
)
from .common import (
    check_output_file,
    db_option,
    emit,
    friendly,
    int_counts,
    json_option,
    labels_option,
    matcher_calls_model,
    matcher_options,
    matcher_said,
    n_boot_option,
    objective_option,
    option,
    random_state_option,
    read_store,
    run_argument,
    write_output,
)
from .oneline import did_you_mean

if TYPE_CHECKING:
    from ...evaluate._truth import Truth

__all__ = ["budget", "calibrate", "choose", "compare", "frontier_cmd", "propose", "report",
           "sweep", "usage"]

_objective_option = objective_option(DEFAULT_OBJECTIVE, OBJECTIVE_HELP)
_labels_option = labels_option(
    "Gold labels CSV (`truss-lab schema labels`) instead of the database's labels table.")
_score_option = click.option(
    "--score", default="salience", show_default=True,
    help="Score to threshold: a candidates column (salience, score).")


def _check_truth(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    """``--truth`` is auto, labels, references or judge:NAME (the judge is checked
    against the database's judges when the command resolves it)."""
    from ...evaluate._truth import Truth

    try:
        return Truth.parse(value).source
    except BadInputError as exc:
        hint = did_you_mean(value, ("auto", "labels", "references", "judge:"))
        raise click.BadParameter(str(exc).removeprefix("field 'truth': ") + hint) from None


_truth_option = click.option("--truth", default="auto", show_default=True, callback=_check_truth,
                             help=TRUTH_HELP)
_correct_option = click.option("--correct", type=click.Choice(CORRECTIONS), default="auto",
                               show_default=True, help=CORRECT_HELP)


def _truth(spec: str, *, labels_path: str | None = None, matcher: Any = None,
           correct: str = "auto") -> Truth:
    """The command's ``--truth``, ``--labels``, ``--matcher`` and ``--correct`` as the one
    :class:`Truth` its library call takes."""
    from ...evaluate._truth import Truth

    return Truth.parse(spec, labels=labels_path, matcher=matcher, correct=correct)


def _record(store: Any, matcher: Any) -> None:
    """Append a live judge matcher's calls, so the same command replays them next time;
    say how many of its answers were replayed from the runs' recordings instead."""
    from .label import say_replayed

    if getattr(matcher, "pending", None):
        matcher.record(store)
    say_replayed(matcher)


_plot_option = click.option("--plot", "plot_path", type=click.Path(dir_okay=False),
                            help="Write a PNG plot here.")
_boot_option = n_boot_option(DEFAULT_N_BOOT, "Verdict-bootstrap replicates.")


def _seed_option(what: str) -> Any:
    """``--random-state``, with help naming what the seed drives in this command."""
    return random_state_option(f"Seed of {what}: the same seed gives the same numbers.")


_SPLIT_AND_BOOT = "the verdict split or folds and the bootstraps"
_test_size_option = click.option("--test-size", default=0.3, show_default=True, type=float,
                                 help="Share of verdicts held out to judge the choice "
                                      "(one split: --cv 0, or too few verdicts for auto).")
_cv_option = click.option(
    "--cv", default=DEFAULT_CV, show_default=True,
    help="Folds of verdicts for a cross-validated choice: auto (5 once every fold gets at "
         "least 10 verdicts with a label, else one split), 0 for one split, or k >= 2.")
_cv_repeats_option = click.option("--cv-repeats", default=1, show_default=True,
                                  type=click.IntRange(1), help="Repeats of the k folds.")


def _cv(value: str) -> int | str | None:
    """``--cv`` as choose_run_threshold takes it: "auto", None (0: one split) or k."""
    if value == "auto":
        return "auto"
    try:
        k = int(value)
    except ValueError:
        raise click.BadParameter(f"expected auto or an int, got {value!r}",
                                 param_hint="--cv") from None
    return None if k == 0 else k


def _open(db: str, *, write: bool = False) -> Any:
    from ...store._store import open_store

    return open_store(db, must_exist=True) if write else read_store(db, must_exist=True)


def _choice_json(choice: Any) -> dict[str, Any]:
    from ...core._canonical import json_safe

    iv = {}
    if choice.test_intervals is not None:
        row = choice.test_intervals.iloc[0]
        iv = {c[:-4]: [row[c], row[f"{c[:-4]}_high"]] for c in row.index if c.endswith("_low")}
    piv = {}
    if choice.procedure_intervals is not None:
        row = choice.procedure_intervals.iloc[0]
        piv = {c[:-4]: [row[c], row[f"{c[:-4]}_high"]] for c in row.index if c.endswith("_low")}
    folds = (choice.folds.to_dict(orient="records") if choice.folds is not None else None)
    return json_safe({"threshold": choice.threshold, "objective": choice.objective,
                      "threshold_interval": choice.threshold_interval, "split": choice.split,
                      "train": int_counts(choice.train), "test": int_counts(choice.test),
                      "test_intervals": iv, "procedure_intervals": piv, "folds": folds,
                      "threshold_spread": choice.threshold_spread or None})


def _choice_options(f: Any) -> Any:
    """The options of a threshold choice, shared by `sweep` and `choose` (the same choice:
    one list, so the two cannot drift apart), in their --help order."""
    for add in reversed((db_option, run_argument, _labels_option, _objective_option,
                         _score_option, _test_size_option, _cv_option, _cv_repeats_option,
                         _seed_option(_SPLIT_AND_BOOT), _boot_option)):
        f = add(f)
    return f


@click.command()
@_choice_options
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False),
              help="Write the full sweep (every distinct threshold) as CSV, each metric "
                   "with its interval (*_low, *_high) and precision, recall and F1 with "
                   "the simultaneous band over the thresholds (*_band_low, *_band_high; "
                   "blank where fewer than 10 labelled lessons carry the metric: "
                   "docs/explanation/ppi.md).")
@_truth_option
@matcher_options
@_correct_option
@_plot_option
@json_option
@friendly
def sweep(db: str, run_id: str, labels_path: str | None, objective: str, score: str,
          test_size: float, cv: str, cv_repeats: int, random_state: int, n_boot: int,
          csv_path: str | None, truth: str, matcher: str, base_url: str | None,
          correct: str, plot_path: str | None, as_json: bool) -> None:
    """Sweep a run's salience thresholds and choose one on held-out verdicts.
    \f

    Many parameters because click passes one per command-line option: the options are the
    command's interface (unchanged), and the body parses them, makes one library call and
    formats its result.
    """
    from ...core._canonical import json_safe
    from ...evaluate._runs import evaluate_run
    from .._display import (
        SUMMARY_THRESHOLDS,
        format_choice,
        format_sweep,
        plot_title,
        save_sweep_plot,
    )
    from .label import matcher_from_spec

    for path, field in ((csv_path, "--csv"), (plot_path, "--plot")):
        if path:
            check_output_file(path, field=field)
    with _open(db, write=matcher_calls_model(matcher)) as store:
        m = matcher_from_spec(matcher, store, base_url=base_url)
        # One evaluation (evaluate_run): the truth resolved and the run judged once;
        # the choice and bands are those of every other face with these options.
        ev = evaluate_run(store, run_id, objective=objective, score=score,
                          test_size=test_size, cv=_cv(cv), cv_repeats=cv_repeats,
                          random_state=random_state, n_boot=n_boot,
                          truth=_truth(truth, labels_path=labels_path, matcher=m,
                                       correct=correct), bands=bool(plot_path))
        # Every metric's interval beside it (*_low/*_high), in the JSON and the CSV: the
        # same bootstrap, seed and correction as the bands and the choice.
        at = ev.intervals(list(SUMMARY_THRESHOLDS))
        full = ev.intervals() if csv_path else ev.sweep
        _record(store, m)
    t, choice = ev.truth, ev.choice
    truth, why = t.name, t.why
    fixed = full.attrs["correction"]
    if csv_path:
        write_output(csv_path, lambda tmp: full.to_csv(tmp, index=False), field="--csv")
    if plot_path:
        write_output(plot_path, lambda tmp: save_sweep_plot(
            full, tmp, threshold=choice.threshold,
            name=plot_title(run_id, "metrics vs threshold", truth=truth,
                            correction=ev.correction),
            intervals=ev.bands.with_band() if ev.bands is not None else None), field="--plot")
    # Corrected counts are estimates: rounded, never truncated (230.99999999999963: 231).
    judged = ("labelled candidates" if truth != "references" else
              f"lessons on annotated verdicts, "
              f"{round(float(full['tp'].iloc[0] + full['fn'].iloc[0]))} references")
    matched_by = full.attrs.get("counts", {}).get("matcher")
    text = (f"run {run_id}: {int(full['kept'].max())} {judged}, score {score}\n"
            f"truth: {truth} ({why})"
            f"{matcher_said(matched_by if truth == 'references' else None, matcher)}\n"
            f"correction: {ev.correction}\n"
            f"{format_sweep(at)}\n{format_choice(choice)}"
            + (f"\nplot: wrote {plot_path}" if plot_path else ""))
    emit({"run_id": run_id, "score": score, "truth": truth, "correction": fixed["correction"],
           "people_verdicts": fixed["people_verdicts"],
           "matcher": matched_by if truth == "references" else None, "plot": plot_path,
           "sweep": json_safe(at.to_dict(orient="records")),
           "choice": _choice_json(choice)}, as_json, text)

@click.command()
@_choice_options
@_truth_option
@matcher_options
@_correct_option
@json_option
@friendly
def choose(db: str, run_id: str, labels_path: str | None, objective: str, score: str,
           test_size: float, cv: str, cv_repeats: int, random_state: int, n_boot: int,
           truth: str, matcher: str, base_url: str | None, correct: str,
           as_json: bool) -> None:
    """Choose a run's salience threshold on held-out verdicts (the choice `sweep` shows,
    without the sweep), on corrected counts when people answered (--correct).
    \f

    Many parameters because click passes one per command-line option: the options are the
    command's interface (unchanged), and the body parses them, makes one library call and
    formats its result.
    """
    from ...evaluate._runs import evaluate_run
    from .._display import format_choice
    from .label import matcher_from_spec

    with _open(db, write=matcher_calls_model(matcher)) as store:
        m = matcher_from_spec(matcher, store, base_url=base_url)
        ev = evaluate_run(store, run_id, objective=objective, score=score,
                          test_size=test_size, cv=_cv(cv), cv_repeats=cv_repeats,
                          random_state=random_state, n_boot=n_boot,
                          truth=_truth(truth, labels_path=labels_path, matcher=m,
                                       correct=correct), bands=False)
        _record(store, m)
    by = ev.counts.get("matcher") if ev.truth.kind == "references" else None
    fixed = ev.sweep.attrs["correction"]
    emit({"run_id": run_id, "score": score, "truth": ev.truth.name, "matcher": by,
          "correction": fixed["correction"], "people_verdicts": fixed["people_verdicts"],
          "choice": _choice_json(ev.choice)}, as_json,
         f"run {run_id}, score {score}\ntruth: {ev.truth.name} ({ev.truth.why})"
         f"{matcher_said(by, matcher)}\ncorrection: {ev.correction}\n"
         f"{format_choice(ev.choice)}")


@click.command()
@click.argument("run_a")
@click.argument("run_b")
@db_option
@click.option("--threshold", default=DEFAULT_MIN_SALIENCE, show_default=True, type=float,
              help="Threshold in [0, 1] applied to both runs' scores.")
@_labels_option
@_score_option
@_boot_option
@_seed_option("the paired verdict bootstrap")
@_truth_option
@matcher_options
@_correct_option
@_plot_option
@json_option
@friendly
def compare(run_a: str, run_b: str, db: str, threshold: float, labels_path: str | None,
            score: str, n_boot: int, random_state: int, truth: str, matcher: str,
            base_url: str | None, correct: str, plot_path: str | None,
            as_json: bool) -> None:
    """Compare two runs on their common verdicts (paired bootstrap, McNemar).
    \f

    Many parameters because click passes one per command-line option: the options are the
    command's interface (unchanged), and the body parses them, makes one library call and
    formats its result.
    """
    from ...core._canonical import json_safe
    from ...evaluate._runs import compare_runs
    from ...evaluate._truth import Truth
    from ...score._matching import matcher_name
    from .._display import save_comparison_plot
    from .label import matcher_from_spec

    if plot_path:
        check_output_file(plot_path, field="--plot")
    check_threshold(threshold, "--threshold", name="threshold")
    with _open(db, write=matcher_calls_model(matcher)) as store:
        m = matcher_from_spec(matcher, store, base_url=base_url)
        t = Truth.resolve(store, _truth(truth, labels_path=labels_path, matcher=m,
                                        correct=correct), [run_a, run_b])
        truth, why = t.name, t.why
        res = compare_runs(store, run_a, run_b, threshold=threshold, score=score,
                           n_boot=n_boot, random_state=random_state, truth=t)
        _record(store, m)
    if plot_path:
        write_output(plot_path, lambda tmp: save_comparison_plot(res, tmp, truth=truth),
                     field="--plot")
    by = matcher_name(m) if truth == "references" else None
    emit({"names": list(res.names), "n_common": res.n_common, "truth": truth,
           "matcher": by, "correction": res.correction.split(" ")[0],
           "people_verdicts": dict(zip(res.names, res.people_verdicts, strict=True)),
           "only_in_a": res.only_in_a, "only_in_b": res.only_in_b,
           "outcome": res.outcome, "table": json_safe(res.table.to_dict(orient="records"))},
          as_json, f"truth: {truth} ({why}){matcher_said(by, matcher)}\n"
          f"correction: {res.correction}\n{res!r}"
          + (f"\nplot: wrote {plot_path}" if plot_path else ""))

def _budgets(_ctx: click.Context, _param: click.Parameter, value: str | None
             ) -> list[int] | None:
    """``--at 200,400,800``: whole numbers of labelled verdicts, each >= 1."""
    if value is None:
        return None
    out = []
    for part in value.split(","):
        try:
            n = int(part.strip())
        except ValueError:
            raise click.BadParameter(f"expected whole numbers separated by commas, got "
                                     f"{part.strip()!r}") from None
        if n < 1:
            raise click.BadParameter(f"a budget is at least 1 labelled verdict, got {n}")
        out.append(n)
    return out


@click.command()
@run_argument
@db_option
@click.option("--threshold", default=DEFAULT_MIN_SALIENCE, show_default=True, type=float,
              help="Threshold in [0, 1] where precision, recall and F1 are taken.")
@click.option("--width", default=0.1, show_default=True, type=float,
              help="Target width of the intervals (> 0): the labelled verdicts it needs.")
@click.option("--at", "at", default=None, callback=_budgets, metavar="N[,N...]",
              help="Predict the widths at these numbers of labelled verdicts in all "
                   "(default: now, twice and four times now).")
@click.option("--compare", "compare_run", default=None, metavar="RUN_B",
              help="Another run: labelled verdicts needed to detect the observed difference.")
@click.option("--power", default=0.8, show_default=True, type=click.FloatRange(0, 1, min_open=True,
                                                                             max_open=True),
              help="Power of the comparison's test (two-sided, alpha 0.05).")
@_labels_option
@_score_option
@_boot_option
@_seed_option("the verdict bootstrap of the widths now")
@_truth_option
@matcher_options
@_correct_option
@json_option
@friendly
def budget(run_id: str, db: str, threshold: float, width: float, at: list[int] | None,
           compare_run: str | None, power: float, labels_path: str | None, score: str,
           n_boot: int, random_state: int, truth: str, matcher: str, base_url: str | None,
           correct: str, as_json: bool) -> None:
    """How many labelled verdicts a run's intervals need to reach a width, and a
    difference from another run to be detected (a label budget; its model is printed).
    \f

    Many parameters because click passes one per command-line option: the options are the
    command's interface, and the body makes one library call and formats its result.
    """
    from ...evaluate._budget import label_budget
    from ...evaluate._truth import Truth
    from .label import matcher_from_spec

    check_threshold(threshold, "--threshold", name="threshold")
    with _open(db, write=matcher_calls_model(matcher)) as store:
        m = matcher_from_spec(matcher, store, base_url=base_url)
        t = Truth.resolve(store, _truth(truth, labels_path=labels_path, matcher=m,
                                        correct=correct),
                          [run_id] + ([compare_run] if compare_run else []))
        res = label_budget(store, run_id, truth=t, threshold=threshold, width=width, at=at,
                           compare=compare_run, power=power, score=score, n_boot=n_boot,
                           random_state=random_state)
        _record(store, m)
    emit(res.to_dict(), as_json, f"truth: {t.name} ({t.why})\n{res!r}")


@click.command("frontier")
@click.argument("run_ids", nargs=-1, metavar="RUN...")
@db_option
@click.option("--tag", "tags", multiple=True,
              help="Also every run with this tag (a grid's runs: grid:NAME); repeatable.")
@click.option("--prices", "prices_path", default=None, metavar="PRICES.toml",
              help='Price table: [models."NAME"] input_per_million, output_per_million '
                   "(optional batch_input_per_million, batch_output_per_million: the "
                   "calls a Batch output file answered) and currency; without it no cost, "
                   "and nothing is dominated.")
@click.option("--threshold", default=None, type=float,
              help="Judge every run at this threshold (default: each run's own gate "
                   f"threshold when model-scored, else {DEFAULT_MIN_SALIENCE:.2f}).")
@_labels_option
@_score_option
@_boot_option
@_seed_option("the verdict bootstrap of each run's F1 interval")
@_truth_option
@matcher_options
@_correct_option
@_plot_option
@json_option
@friendly
def frontier_cmd(run_ids: tuple[str, ...], db: str, tags: tuple[str, ...],
                 prices_path: str | None, threshold: float | None, labels_path: str | None,
                 score: str, n_boot: int, random_state: int, truth: str, matcher: str,
                 base_url: str | None, correct: str, plot_path: str | None,
                 as_json: bool) -> None:
    """Cost per verdict, latency p50/p95 and F1 (with its interval) of runs side by side;
    a run is dominated only when another is cheaper and has an F1 above its interval.
    \f

    Many parameters because click passes one per command-line option: the options are the
    command's interface (unchanged), and the body parses them, makes one library call and
    formats its result.
    """
    from ...core._canonical import json_safe
    from ...evaluate._frontier import frontier
    from ...store._runs import summarize_runs
    from ...store._usage import load_prices
    from .._display import save_frontier_plot
    from .label import matcher_from_spec

    if plot_path:
        check_output_file(plot_path, field="--plot")
    if threshold is not None:
        check_threshold(threshold, "--threshold", name="threshold")
    prices = None if prices_path is None else load_prices(prices_path)
    if plot_path and prices is None:
        raise BadInputError("the plot's x axis is the cost per verdict: give --prices",
                            field="--plot")
    with _open(db, write=matcher_calls_model(matcher)) as store:
        m = matcher_from_spec(matcher, store, base_url=base_url)
        ids = list(run_ids)
        if tags:
            runs = summarize_runs(store)
            ids += [r for r, ts in zip(runs["run_id"], runs["tags"], strict=True)
                    if set(tags) & set(ts)]
        if not ids:
            raise BadInputError("no runs: give run ids, or --tag TAG naming some",
                                field="RUN")
        f = frontier(store, ids, truth=_truth(truth, labels_path=labels_path, matcher=m,
                                              correct=correct),
                     prices=prices, threshold=threshold, score=score, n_boot=n_boot,
                     random_state=random_state)
        _record(store, m)
    if plot_path:
        write_output(plot_path, lambda tmp: save_frontier_plot(f, tmp), field="--plot")
    emit({"truth": f.truth, "why": f.why, "matcher": f.matcher,
          "correction": f.correction.split(" ")[0], "people_verdicts": f.people_verdicts,
          "currency": f.currency,
          "confidence": f.confidence, "n_boot": f.n_boot, "plot": plot_path,
          "runs": json_safe(f.table.to_dict(orient="records"))},
         as_json, repr(f) + (f"\nplot: wrote {plot_path}" if plot_path else ""))


@click.command()
@run_argument
@db_option
@click.option("--method", type=click.Choice(["isotonic", "platt", "none"]),
              default="isotonic", show_default=True, help="Calibrator to fit.")
@click.option("--n-bins", default=10, show_default=True, type=click.IntRange(1),
              help="Reliability bins.")
@click.option("--strategy", type=click.Choice(["uniform", "quantile"]), default="uniform",
              show_default=True, help="Bin edges.")
@click.option("--min-bin-count", default=10, show_default=True, type=click.IntRange(1),
              help="Bins with fewer candidates are drawn hollow and left out of MCE.")
@_labels_option
@_score_option
@click.option("--test-size", default=0.3, show_default=True, type=float,
              help="Share of verdicts held out to judge the calibrator (fitted on the rest).")
@_seed_option("the verdict split (calibrator fitted on train, judged on test) and, "
              "corrected, the bootstrap of each bin's interval")
@_truth_option
@matcher_options
@_correct_option
@n_boot_option(DEFAULT_N_BOOT,
               "Verdict-bootstrap replicates of each bin's interval when corrected.")
@_plot_option
@json_option
@friendly
def calibrate(run_id: str, db: str, method: str, n_bins: int, strategy: str,
              min_bin_count: int, labels_path: str | None, score: str, test_size: float,
              random_state: int, truth: str, matcher: str, base_url: str | None,
              correct: str, n_boot: int, plot_path: str | None, as_json: bool) -> None:
    """Calibration before/after fitting on training verdicts, judged on held-out ones.
    \f

    Many parameters because click passes one per command-line option: the options are the
    command's interface (unchanged), and the body parses them, makes one library call and
    formats its result.
    """
    from ...core._canonical import json_safe
    from ...evaluate._calibration import calibration_run
    from ...evaluate._truth import Truth
    from ...score._matching import matcher_name
    from .._display import save_calibration_plot
    from .label import matcher_from_spec

    if plot_path:
        check_output_file(plot_path, field="--plot")
    with _open(db, write=matcher_calls_model(matcher)) as store:
        m = matcher_from_spec(matcher, store, base_url=base_url)
        t = Truth.resolve(store, _truth(truth, labels_path=labels_path, matcher=m,
                                        correct=correct), [run_id])
        truth, why = t.name, t.why
        rep = calibration_run(store, run_id, method=None if method == "none" else method,
                              n_bins=n_bins, strategy=strategy, score=score,
                              test_size=test_size, random_state=random_state,
                              min_bin_count=min_bin_count, truth=t, n_boot=n_boot)
        _record(store, m)
    if plot_path:
        write_output(plot_path, lambda tmp: save_calibration_plot(rep, tmp), field="--plot")
    by = matcher_name(m) if truth == "references" else None
    emit({"run_id": run_id, "score": score, "truth": truth, "matcher": by,
           "correction": rep.correction.split(" ")[0],
           "people_verdicts": _people(rep.correction), "method": rep.method,
           "split": rep.split,
           "min_bin_count": rep.min_bin_count,
           "summary": json_safe(rep.summary.reset_index().to_dict(orient="records")),
           "tables": {k: json_safe(v.to_dict(orient="records"))
                      for k, v in rep.tables.items()}},
          as_json, f"truth: {truth} ({why}){matcher_said(by, matcher)}\n"
          f"correction: {rep.correction}\n{rep!r}"
          + (f"\nplot: wrote {plot_path}" if plot_path else ""))


def _people(label: str) -> int:
    """The verdicts people answered for, from a correction label (0: none)."""
    return int(label.split(" ")[4]) if label.startswith("ppi (") else 0

@click.command()
@db_option
@run_argument
@click.option("--key", "key_path", required=True, type=click.Path(dir_okay=False),
              help="Signing key file (from `truss-lab keys generate`).")
@_objective_option
@_labels_option
@_score_option
@_test_size_option
@_cv_option
@_cv_repeats_option
@_seed_option(_SPLIT_AND_BOOT)
@_boot_option
@click.option("--policy-id", default="extraction_min_salience", show_default=True,
              help="Policy whose current record the proposal supersedes.")
@_truth_option
@_correct_option
@json_option
@friendly
def propose(db: str, run_id: str, key_path: str, objective: str,
            labels_path: str | None, score: str, test_size: float, cv: str,
            cv_repeats: int, random_state: int, n_boot: int, policy_id: str,
            truth: str, correct: str, as_json: bool) -> None:
    """Sign a threshold decision and record it as an unverified salience policy.
    \f

    Many parameters because click passes one per command-line option: the options are the
    command's interface (unchanged), and the body parses them, makes one library call and
    formats its result.
    """
    from ...evaluate._truth import Truth
    from ...govern._decision import propose_threshold
    from ...journal._crypto import SigningKey
    from ...journal._table import get_entry

    key = SigningKey.load(key_path)
    with _open(db, write=True) as store:
        t = Truth.resolve(store, _truth(truth, labels_path=labels_path, correct=correct),
                          [run_id])
        truth, why = t.name, t.why
        rec = propose_threshold(store, run_id, key, objective=objective, score=score,
                                policy_id=policy_id, test_size=test_size, cv=_cv(cv),
                                cv_repeats=cv_repeats, random_state=random_state,
                                n_boot=n_boot, truth=t)
        ref = rec.provenance.produced_by
        entry = get_entry(store, ref.seq, table="lab_journal")
    fixed = (entry or {}).get("payload", {}).get("evidence", {}).get("correction", "none")
    text = (f"proposed {policy_id} v{rec.version}: extraction_min_salience = "
            f"{rec.policy.settings['extraction_min_salience']:.4g} (trust {rec.trust.value}"
            f"{', supersedes ' + rec.supersedes if rec.supersedes else ''})\n"
            f"truth: {truth} ({why})\n"
            f"correction: {fixed} (the choice's; in the signed evidence)\n"
            f"evidence: lab journal entry seq {ref.seq} hash {ref.hash}\n"
            "not applied: policy records never change runtime behaviour")
    emit(rec.model_dump(mode="json"), as_json, text)


@click.command("report")
@click.argument("run_ids", nargs=-1, required=True, metavar="RUN [RUN...]")
@db_option
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False),
              help="HTML file to write (self-contained: open it in any browser, offline).")
@_objective_option
@n_boot_option(DEFAULT_N_BOOT, "Verdict-bootstrap replicates for the bands and intervals.")
@random_state_option("Seed of the verdict splits and the bootstrap.")
@option("--n-verdicts", default=200, show_default=True, type=click.IntRange(0),
        old=("--max-verdicts",),
        help="Verdicts in the browsable list (up to half with errors); 0 lists all.")
@click.option("--truth", default="auto", show_default=True, metavar="SOURCE",
              callback=_check_truth, help=TRUTH_HELP)
@_test_size_option
@_cv_option
@_cv_repeats_option
@_correct_option
@friendly
def report(run_ids: tuple[str, ...], db: str, out: str, objective: str, n_boot: int,
           random_state: int, n_verdicts: int, truth: str, test_size: float, cv: str,
           cv_repeats: int, correct: str) -> None:
    """Write an HTML report of runs: config, sweep with bands, calibration, comparison
    (first run vs each other), judged by one truth (--truth; the header names it),
    junk rates, audit and a filterable verdict list with labels and reference lessons.

    The first run is A in every comparison; each run's threshold is chosen as
    `truss-lab sweep` chooses it with the same options (--cv, --test-size, --n-boot,
    --random-state give the same numbers). See docs/how-to/report.md.
    """
    from .._report import write_report

    check_output_file(out, field="--out")  # before the work: a bad path is refused at once
    with read_store(db, must_exist=True) as store:
        path = write_report(store, run_ids, out, objective=objective, n_boot=n_boot,
                            random_state=random_state, max_verdicts=n_verdicts or None,
                            truth=_truth(truth, correct=correct), cv=_cv(cv),
                            cv_repeats=cv_repeats, test_size=test_size)
    click.echo(f"{path}: report of {len(run_ids)} run(s), {path.stat().st_size:,} bytes")


@click.command()
@run_argument
@db_option
@click.option("--prices", "prices_path", default=None, metavar="PRICES.toml",
              help='Price table: [models."NAME"] input_per_million, output_per_million '
                   "(optional batch_input_per_million, batch_output_per_million: the "
                   "calls a Batch output file answered) and currency; without it no cost "
                   "is shown.")
@json_option
@friendly
def usage(run_id: str, db: str, prices_path: str | None, as_json: bool) -> None:
    """A run's usage: calls, tokens in/out, latency p50/p95/p99, errors by kind,
    time per verdict, and cost from --prices (never guessed); a replay's recorded calls
    (tokens, latency, cost when made) beside its own 0 live calls."""
    from ...store._usage import load_prices, run_usage

    prices = None if prices_path is None else load_prices(prices_path)
    with read_store(db) as store:
        u = run_usage(store, run_id, prices=prices)
    emit(u.to_dict(), as_json, str(u))

