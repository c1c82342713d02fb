"""``make demo``: the main job on the bundled sample, end to end.

Ingest the synthetic sample into an embedded DuckDB file, verify the signed
journal, extract lessons with the three recorded extractors and the heuristic
baseline (policy model-scored at the default 0.70, every candidate kept), print a
per-run summary, evaluate the two labelled extractors against the gold labels
(:func:`demo_evaluation`: text plus PNG plots), and compare every extractor, the
unlabelled ones too, by the reference lessons (:func:`demo_references`).
Every step is a library call a researcher can make in a notebook; re-running
is idempotent.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core._config import MemoryConfig
from ..core._errors import BadInputError, TrussLabError
from ..core._files import check_output_file, check_output_folder, write_output
from ..core._threshold import DEFAULT_MIN_SALIENCE
from ..evaluate._calibration import calibration_run
from ..evaluate._defaults import DEFAULT_CV, DEFAULT_OBJECTIVE
from ..evaluate._label_report import label_report
from ..evaluate._objective import Objective
from ..evaluate._runs import (
    DEFAULT_TEST_SIZE,
    compare_runs,
    evaluate_run,
    rank_runs,
)
from ..evaluate._truth import Truth
from ..extract._batch import run_extraction
from ..extract._extractor import Extractor
from ..ingest._ingest import (
    ingest_completions,
    ingest_labels,
    ingest_match_labels,
    ingest_references,
)
from ..journal._ledger import import_journal, verify_chain
from ..score._matching import matcher_name
from ..store._runs import get_run, summarize_runs
from ..store._store import Store, open_store
from ._display import (
    SUMMARY_THRESHOLDS,
    format_choice,
    format_sweep,
    plot_title,
    save_calibration_plot,
    save_comparison_plot,
    save_sweep_plot,
)
from ._notebook import SAMPLE
from ._text import runs_text

__all__ = ["demo_evaluation", "demo_references", "main", "run"]


def _step(title: str) -> float:
    print(f"\n== {title}")
    return time.perf_counter()


def run(db: str, sample: Path = SAMPLE, out: Path = Path("demo_out")) -> int:
    """Run the demo; return a process exit code."""
    t0 = time.perf_counter()
    with open_store(db) as store:
        t = _step(f"ingest {sample} into {db}")
        rep = import_journal(store, sample / "journal.jsonl", keyring=sample / "keys.json")
        print(f"journal:     {rep.entries_added} added, {rep.entries_present} already present")
        c = ingest_completions(store, sample / "completions.jsonl")
        print(f"completions: {c.rows_added} added, {c.rows_present} already present, "
              f"{len(c.errors)} bad lines")
        lab = ingest_labels(store, sample / "labels.csv")
        print(f"labels:      {lab.rows_added} added, {lab.rows_present} already present, "
              f"{len(lab.errors)} bad lines")
        ref = ingest_references(store, sample / "references.jsonl")
        print(f"references:  {ref.rows_added} added, {ref.rows_present} already present, "
              f"{len(ref.errors)} bad lines")
        mat = ingest_match_labels(store, sample / "match_labels.csv")
        print(f"match labels: {mat.rows_added} added, {mat.rows_present} already present, "
              f"{len(mat.errors)} bad lines (SIMULATED people)   "
              f"({time.perf_counter() - t:.2f}s)")

        t = _step("verify the signed journal")
        v = verify_chain(store)
        print(f"{'ok' if v.ok else 'TAMPERED'}: {v.entries_checked} entries, head seq "
              f"{v.head_seq}   ({time.perf_counter() - t:.2f}s)")
        if not v.ok:
            print(f"first bad seq {v.first_bad_seq}: {v.reason}: {v.message}")
            return 1

        t = _step(f"extract (model-scored, extraction_min_salience {DEFAULT_MIN_SALIENCE:.2f})")
        config = MemoryConfig(lesson_extraction="model-scored",
                              extraction_min_salience=DEFAULT_MIN_SALIENCE)
        extractors = [
            Extractor.replay(store, "sim-good-v1"),
            Extractor.replay(store, "sim-overconfident-v1"),
            Extractor.replay(store, "sim-paraphrase-v1"),  # no gold labels
            Extractor.heuristic(),  # no gold labels
        ]
        run_ids = []
        for ex in extractors:
            run_id = f"demo-{ex.extractor_id}"
            # Fixed run ids make the demo idempotent: a finished run appends nothing.
            run_extraction(store, ex, config, run_id=run_id,
                           resume=get_run(store, run_id) is not None, progress=False)
            run_ids.append(run_id)
        summary = summarize_runs(store, run_ids)
        print(runs_text(summary, ["run_id", "n_verdicts", "n_candidates", "n_lessons",
                                  "n_errors", "seconds"]))

        t = _step("evaluate against the gold labels (choose on training verdicts, "
                  "report on held-out ones)")
        out.mkdir(parents=True, exist_ok=True)
        # The gold labels cover the first two recorded extractors only.
        print(demo_evaluation(store, run_ids[:2], out))
        print(f"({time.perf_counter() - t:.1f}s)")

        t = _step("compare every extractor with the heuristic baseline by reference "
                  "lessons (no labels needed)")
        print(demo_references(store, run_ids, run_ids[-1], out))
        print(f"({time.perf_counter() - t:.1f}s)")

        counts = store.counts()
    print(f"\ndone in {time.perf_counter() - t0:.1f}s; database {db}: "
          f"{counts['journal']} verdicts, {counts['candidates']} candidates, "
          f"{counts['memory_entries']} lessons in memory (unverified)")
    print(next_steps(db, run_ids[:2]))
    return 0


def next_steps(db: str | os.PathLike[str], run_ids: list[str]) -> str:
    """The three commands to run after the demo: its report, the notebooks, your data."""
    cli = os.path.relpath(Path(sys.executable).parent / "truss-lab")
    return "\n".join([
        "\nnext:",
        f"  {cli} report {' '.join(run_ids)} --db {db} --out report.html"
        "   # the evaluation, to open in a browser",
        "  make lab   # the notebooks: 02 tunes extraction_min_salience with a slider",
        "  docs/tutorials/own-data.md   # your own verdicts, completions and labels",
    ])


def demo_evaluation(
    store: Store,
    run_ids: Any,
    out_dir: Any,
    *,
    objective: str | Objective = DEFAULT_OBJECTIVE,
    n_boot: int = 1000,
    random_state: Any = 0,
    cv: int | str | None = DEFAULT_CV,
    cv_repeats: int = 1,
    test_size: float | int = DEFAULT_TEST_SIZE,
) -> str:
    """The evaluation part of ``make demo``: a text block, plus PNG plots in ``out_dir``.

    For each run: its sweep at a few thresholds and the threshold chosen on
    training verdicts with its held-out metrics and intervals (plot
    ``sweep_<run>.png``). For the first run: calibration before / after
    isotonic calibration on held-out verdicts (``calibration_<run>.png``). For
    the first two runs: the paired comparison at the ADR default
    :data:`~truss_lab.core.DEFAULT_MIN_SALIENCE` (``compare_<a>_vs_<b>.png``).
    Each run is :func:`~truss_lab.evaluate._runs.evaluate_run` with these options
    (``cv``, ``cv_repeats``, ``test_size``: the defaults of every face), so its
    numbers are those of ``truss-lab sweep`` and the report.
    """
    runs = [run_ids] if isinstance(run_ids, str) else list(run_ids)
    if not runs:
        raise BadInputError("demo_evaluation needs at least one run id", field="run_ids")
    out = check_output_folder(out_dir, what="a folder for the plots")
    out.mkdir(parents=True, exist_ok=True)
    parts: list[str] = []
    plots: list[str] = []
    for rid in runs:
        # The one evaluation every face shows (evaluate_run): the CLI's sweep with
        # the same options gives the same choice, interval and held-out metrics.
        ev = evaluate_run(store, rid, objective=objective, n_boot=n_boot,
                          random_state=random_state, cv=cv,  # type: ignore[arg-type]
                          cv_repeats=cv_repeats, test_size=test_size)
        choice = ev.choice
        rep = label_report(store, rid)
        cov = rep.coverage.iloc[0] if len(rep.coverage) else None
        head = f"-- run {rid}"
        if cov is not None:
            head += (f": {int(cov['n_labelled'])}/{int(cov['n_candidates'])} valid candidates "
                     f"labelled, {int(cov['n_ties'])} ties")
        parts += [head, format_sweep(ev.at(list(SUMMARY_THRESHOLDS))), format_choice(choice)]
        plots.append(_plot(out / f"sweep_{_safe(rid)}.png", functools.partial(
            save_sweep_plot, ev.sweep, threshold=choice.threshold,
            name=plot_title(rid, "metrics vs threshold", truth=ev.truth.name,
                            correction=ev.correction),
            intervals=ev.bands.with_band() if ev.bands is not None else None)))
    cal = calibration_run(store, runs[0], method="isotonic", random_state=random_state)
    parts += ["-- calibration (isotonic, fitted on training verdicts, judged on held-out)",
              repr(cal)]
    plots.append(_plot(out / f"calibration_{_safe(runs[0])}.png",
                       lambda tmp: save_calibration_plot(cal, tmp)))
    if len(runs) >= 2:
        cmp = compare_runs(store, runs[0], runs[1], threshold=DEFAULT_MIN_SALIENCE,
                           n_boot=n_boot, random_state=random_state)
        parts += [f"-- comparison at threshold {DEFAULT_MIN_SALIENCE:g}", repr(cmp)]
        plots.append(_plot(out / f"compare_{_safe(runs[0])}_vs_{_safe(runs[1])}.png",
                           lambda tmp: save_comparison_plot(cmp, tmp, truth="labels")))
    parts.append("plots: " + ", ".join(plots))
    return "\n".join(parts)


def demo_references(
    store: Store,
    run_ids: Any,
    baseline: str,
    out_dir: Any,
    *,
    threshold: float = DEFAULT_MIN_SALIENCE,
    n_boot: int = 1000,
    random_state: Any = 0,
) -> str:
    """Every run judged by the reference lessons, so the unlabelled ones too: the
    :func:`~truss_lab.evaluate._runs.rank_runs` table against ``baseline`` (the
    heuristic) at ``threshold``, and the paired comparison of the baseline with
    the best run as a plot (``compare_<baseline>_vs_<best>_references.png``)."""
    table = rank_runs(store, run_ids, truth="references", threshold=threshold,
                      baseline=baseline, n_boot=n_boot, random_state=random_state)
    best = next(r for r in table["run_id"] if r != baseline)
    # Uncorrected, as rank_runs' table it illustrates (the baseline has no people's answers).
    cmp = compare_runs(store, baseline, best, truth=Truth.references(correct="none"),
                       threshold=threshold, n_boot=n_boot, random_state=random_state)
    plot = _plot(check_output_folder(out_dir, what="a folder for the plots")
                 / f"compare_{_safe(baseline)}_vs_{_safe(best)}_references.png",
                 lambda tmp: save_comparison_plot(cmp, tmp, truth="references"))
    cols = ["extractor_id", "verdicts", "kept", "precision", "recall", "f1",
            "kept_per_verdict", "delta_f1", "delta_f1_low", "delta_f1_high", "success",
            "baseline_success", "mcnemar_p"]
    shown = table[cols].rename(columns={"extractor_id": "extractor", "kept_per_verdict":
                                        "kept/verdict", "delta_f1": "dF1 vs baseline",
                                        "delta_f1_low": "low", "delta_f1_high": "high",
                                        "success": "right", "baseline_success":
                                        "baseline right"})
    correction = str(table.attrs.get("correction", "none"))
    # The baseline has no people's answers, so this table is uncorrected: say what that
    # costs (the matcher's misses and false pairs pass into it).
    caveat = ("" if correction != "none" else
              "\n   uncorrected: these are the matcher's own pairs, its misses and false pairs "
              "included; `truss-lab sweep RUN --truth references --correct ppi`"
              "\n   corrects a run by the people's match labels (docs/explanation/ppi.md)")
    return "\n".join([
        f"-- every extractor against the reference lessons at {threshold:.2f} (annotated "
        f"verdicts only; matcher {matcher_name(None)} (the default), correction "
        f"{correction}; dF1 = run - {baseline}, "
        "paired verdict bootstrap, 95% CI; right = verdicts whose kept set is right, McNemar "
        f"on those){caveat}",
        shown.to_string(index=False, float_format=lambda v: f"{v:.3f}", na_rep="-",
                        formatters={"mcnemar_p": lambda v: "-" if v != v else f"{v:.2g}",
                                    "right": _count, "baseline right": _count}),
        f"plot: {plot}",
    ])


def _plot(path: Path, save: Callable[..., object]) -> str:
    """Save a plot at ``path`` as every output is written (checked, whole or not at all):
    ``save(tmp)`` draws it into the temporary file."""
    return str(write_output(check_output_file(path), save))


def _count(v: float) -> str:
    return "-" if v != v else str(int(v))


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m truss_lab.faces.demo", description=__doc__)
    ap.add_argument("--db", default="truss_lab.duckdb")
    ap.add_argument("--sample", default=str(SAMPLE), type=Path)
    ap.add_argument("--out", default="demo_out", type=Path, help="folder for plots")
    args = ap.parse_args(argv)
    try:
        return run(args.db, args.sample, args.out)
    except TrussLabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
