"""The evaluation part of ``make demo`` (:mod:`truss_lab.faces.demo`): text plus PNG plots."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core._errors import BadInputError
from ..evaluate._label_report import label_report
from ..evaluate._objective import DEFAULT_OBJECTIVE, Objective
from ..evaluate._run_calibration import calibration_run
from ..evaluate._runs import bootstrap_run, choose_run_threshold, compare_runs, rank_runs, sweep_run
from ..store._store import Store
from ._display import save_calibration_plot, save_comparison_plot, save_sweep_plot
from ._text import SUMMARY_THRESHOLDS, format_choice, format_sweep

__all__ = ["demo_evaluation", "demo_references"]


def demo_evaluation(
    store: Store,
    run_ids: Any,
    out_dir: Any,
    *,
    objective: str | Objective = DEFAULT_OBJECTIVE,
    n_boot: int = 1000,
    random_state: Any = 0,
) -> str:
    """The evaluation part of ``make demo``: a text block, plus PNG plots in ``out_dir``.

    For each run: its sweep at a few thresholds and the threshold chosen on
    training verdicts with its held-out metrics and intervals (plot
    ``sweep_<run>.png``). For the first run: calibration before / after
    isotonic calibration on held-out verdicts (``calibration_<run>.png``). For
    the first two runs: the paired comparison at the ADR default 0.7
    (``compare_<a>_vs_<b>.png``).
    """
    runs = [run_ids] if isinstance(run_ids, str) else list(run_ids)
    if not runs:
        raise BadInputError("demo_evaluation needs at least one run id", field="run_ids")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    parts: list[str] = []
    plots: list[str] = []
    for rid in runs:
        full = sweep_run(store, rid)
        at = sweep_run(store, rid, thresholds=list(SUMMARY_THRESHOLDS))
        choice = choose_run_threshold(store, rid, objective=objective, n_boot=n_boot,
                                      random_state=random_state)
        rep = label_report(store, rid)
        cov = rep.coverage.iloc[0] if len(rep.coverage) else None
        head = f"-- run {rid}"
        if cov is not None:
            head += (f": {int(cov['n_labelled'])}/{int(cov['n_candidates'])} valid candidates "
                     f"labelled, {int(cov['n_ties'])} ties")
        parts += [head, format_sweep(at), format_choice(choice)]
        bands = bootstrap_run(store, rid, n_boot=n_boot, random_state=random_state).table
        plots.append(save_sweep_plot(full, out / f"sweep_{_safe(rid)}.png",
                                     threshold=choice.threshold, name=rid, intervals=bands))
    cal = calibration_run(store, runs[0], method="isotonic", random_state=random_state)
    parts += ["-- calibration (isotonic, fitted on training verdicts, judged on held-out)",
              repr(cal)]
    plots.append(save_calibration_plot(cal, out / f"calibration_{_safe(runs[0])}.png"))
    if len(runs) >= 2:
        cmp = compare_runs(store, runs[0], runs[1], threshold=0.7, n_boot=n_boot,
                           random_state=random_state)
        parts += ["-- comparison at threshold 0.7", repr(cmp)]
        plots.append(save_comparison_plot(
            cmp, out / f"compare_{_safe(runs[0])}_vs_{_safe(runs[1])}.png"))
    parts.append("plots: " + ", ".join(plots))
    return "\n".join(parts)


def demo_references(
    store: Store,
    run_ids: Any,
    baseline: str,
    out_dir: Any,
    *,
    threshold: float = 0.7,
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
    cmp = compare_runs(store, baseline, best, truth="references", threshold=threshold,
                       n_boot=n_boot, random_state=random_state)
    plot = save_comparison_plot(
        cmp, Path(out_dir) / f"compare_{_safe(baseline)}_vs_{_safe(best)}_references.png")
    cols = ["extractor_id", "verdicts", "kept", "precision", "recall", "f1",
            "kept_per_verdict", "delta_f1", "delta_f1_low", "delta_f1_high", "success",
            "baseline_success", "mcnemar_p"]
    shown = table[cols].rename(columns={"extractor_id": "extractor", "kept_per_verdict":
                                        "kept/verdict", "delta_f1": "dF1 vs baseline",
                                        "delta_f1_low": "low", "delta_f1_high": "high",
                                        "success": "right", "baseline_success":
                                        "baseline right"})
    return "\n".join([
        f"-- every extractor against the reference lessons at {threshold:.2f} (annotated "
        f"verdicts only; dF1 = run - {baseline}, paired verdict bootstrap, 95% CI; right = "
        "verdicts whose kept set is right, McNemar on those)",
        shown.to_string(index=False, float_format=lambda v: f"{v:.3f}", na_rep="-",
                        formatters={"mcnemar_p": lambda v: "-" if v != v else f"{v:.2g}",
                                    "right": _count, "baseline right": _count}),
        f"plot: {plot}",
    ])


def _count(v: float) -> str:
    return "-" if v != v else str(int(v))


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)
