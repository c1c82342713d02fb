"""The cost-quality frontier of runs: per run, what it cost per verdict, how long its calls
took, and how good its kept lessons are, side by side; which runs another one beats.

:func:`frontier` reads each run's usage (:func:`~truss_lab.store._usage.run_usage`: tokens
the server reported, priced by a price table; latency p50/p95 of its calls; for a replay,
the recorded calls it answered from, so a configuration reads the same from its replay as
from its live run) and judges it
by one truth (:meth:`~truss_lab.evaluate._truth.Truth.resolve`, any of labels,
references, judge:NAME, auto) with :func:`~truss_lab.evaluate._runs.bootstrap_run`: F1
at the run's own gate threshold (or a given one) with its verdict-bootstrap interval.
:func:`dominance` marks a run **dominated** only when another run is cheaper per verdict
and has an F1 above the dominated run's whole interval: a cheaper run whose F1 falls
inside the interval does not dominate it. The plot is the faces'
(:func:`~truss_lab.faces._display.frontier_plot`).
"""

from __future__ import annotations

import html
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..core._errors import BadInputError
from ..core._models import LessonExtractionPolicy
from ..core._threshold import DEFAULT_MIN_SALIENCE, check_threshold
from ..score._matching import matcher_name
from ..store._runs import run_info
from ..store._store import Store
from ..store._usage import Prices, RunUsage, load_prices, run_usage
from ._correction import runs_correction, runs_correction_label
from ._runs import bootstrap_run
from ._truth import Truth, truth_of

__all__ = ["Frontier", "dominance", "frontier"]

#: The columns of :attr:`Frontier.table`, in order.
FRONTIER_COLUMNS = (
    "run_id", "name", "extractor_id", "n_verdicts", "calls", "cost", "cost_per_verdict",
    "cost_note",
    "prompt_tokens", "completion_tokens", "latency_ms_p50", "latency_ms_p95", "threshold",
    "precision", "recall", "f1", "f1_low", "f1_high", "dominated", "dominated_by",
)


@dataclass(frozen=True, eq=False)
class Frontier:
    """Runs on cost and quality. ``table`` has one row per run (in the order given) with
    :data:`FRONTIER_COLUMNS`: ``calls`` (whose calls the figures are: ``live``, the run's
    own; ``recorded``, a replay's, the recorded calls it answered from; ``none``, a run
    that called no model, the heuristic), ``cost`` (total, in ``currency``; NaN without a price
    table or when some call has no price or no token counts, ``cost_note`` says why),
    ``cost_per_verdict``, tokens, latency p50/p95 (ms), the ``threshold`` the run is
    judged at, precision, recall and F1 there with the F1 interval, and ``dominated`` /
    ``dominated_by`` (:func:`dominance`).

    Parameters
    ----------
    table : pandas.DataFrame
        One row per run (above).
    truth, why : str
        The truth and why it was chosen.
    currency : str or None
        The price table's currency.
    confidence : float
        The F1 intervals' level.
    n_boot : int
        Their bootstrap replicates.
    matcher : str, optional
        How lessons were matched to references.
    correction : str
        The correction of the automated truth.
    people_verdicts : dict of str to int
        Per run, the verdicts people answered for.
    """

    table: pd.DataFrame
    truth: str
    """The resolved truth's name (``labels``, ``references``, ``judge:...``)."""
    why: str
    """Why that truth (``as asked``, or the reason of ``auto``)."""
    currency: str | None
    confidence: float
    n_boot: int
    matcher: str | None = None
    """How lessons were matched to references (a references truth only)."""
    correction: str = "none"
    """The correction of the automated truth, every run alike (``none``, ``ppi (...)``)."""
    people_verdicts: dict[str, int] = field(default_factory=dict)
    """Per run, the verdicts people answered for (corrected only)."""

    def __repr__(self) -> str:
        return format_frontier(self)

    def _repr_html_(self) -> str:
        shown = self.table.drop(columns=["name", "cost_note"])
        return (f"<p>{html.escape(self._head())}</p>"
                + shown.to_html(index=False, float_format=lambda v: f"{v:.4g}", na_rep="-"))

    def _head(self) -> str:
        by = f", matcher {self.matcher}" if self.matcher else ""
        by += f", correction {self.correction}" if self.correction != "none" else ""
        return (f"truth: {self.truth} ({self.why}){by}; F1 with {self.confidence:.0%} verdict "
                f"bootstrap interval ({self.n_boot} replicates); cost per verdict in "
                f"{self.currency or '- (no price table)'}")


def format_frontier(f: Frontier) -> str:
    """The frontier as a fixed-width text table (what ``truss-lab frontier`` prints)."""
    t = f.table

    def num(v: Any, fmt: str) -> str:
        return "-" if v is None or (isinstance(v, float) and np.isnan(v)) else format(v, fmt)

    rows = [("run", "calls", "cost/verdict", "p50 ms", "p95 ms", "threshold",
             "F1 [interval]", "dominated by")]
    for r in t.itertuples(index=False):
        rows.append((r.run_id, r.calls, num(r.cost_per_verdict, ".6f"),
                     num(r.latency_ms_p50, ".1f"),
                     num(r.latency_ms_p95, ".1f"), num(r.threshold, ".2f"),
                     f"{num(r.f1, '.3f')} [{num(r.f1_low, '.3f')}, {num(r.f1_high, '.3f')}]",
                     r.dominated_by or "-"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [f._head()] + ["  ".join(c.ljust(w) if i in (0, 1, 7) else c.rjust(w)
                                     for i, (c, w) in enumerate(zip(row, widths, strict=True)))
                           for row in rows]
    notes = sorted({n for n in t["cost_note"] if n})
    lines += [f"cost: {n}" for n in notes]
    return "\n".join(line.rstrip() for line in lines)


def dominance(table: pd.DataFrame) -> pd.DataFrame:
    """``dominated`` and ``dominated_by`` of each row of ``table`` (columns ``run_id``,
    ``cost_per_verdict``, ``f1``, ``f1_high``): run A is dominated by run B when B costs
    strictly less per verdict **and** B's F1 is above A's whole interval (``f1_high``).
    A run with no cost or no F1 (NaN) neither dominates nor is dominated.

    Parameters
    ----------
    table : pandas.DataFrame
        The runs (columns above).

    Returns
    -------
    pandas.DataFrame
        ``dominated`` (bool) and ``dominated_by`` (the dominating runs, cheapest
        first; "" when none), on ``table``'s index.
    """
    cost = table["cost_per_verdict"].to_numpy(dtype=float)
    f1 = table["f1"].to_numpy(dtype=float)
    high = table["f1_high"].to_numpy(dtype=float)
    with np.errstate(invalid="ignore"):
        # beats[b, a]: run b dominates run a (NaN compares False, so it never counts).
        beats = (cost[:, None] < cost[None, :]) & (f1[:, None] > high[None, :])
    ids = table["run_id"].astype(str).to_numpy()
    order = np.argsort(cost, kind="stable")
    by = [", ".join(ids[b] for b in order if beats[b, a]) for a in range(len(ids))]
    return pd.DataFrame({"dominated": beats.any(axis=0), "dominated_by": by},
                        index=table.index)


def frontier(
    store: Store,
    run_ids: Any,
    *,
    truth: str | Truth = "auto",
    prices: Prices | str | os.PathLike[str] | None = None,
    threshold: float | None = None,
    score: str = "salience",
    n_boot: int = 1000,
    confidence: float = 0.95,
    random_state: Any = 0,
    **deprecated: Any,
) -> Frontier:
    """Cost, latency and F1 of each run of ``run_ids``, and which ones another run beats.

    Parameters
    ----------
    store : Store
        The database the runs are in.
    run_ids : str or sequence of str
        The runs.
    truth : Truth or str
        How every run is judged (:class:`~truss_lab.evaluate._truth.Truth` or a spec),
        resolved once for all runs (``auto``: labels when every run has some, else
        references; with references, lessons matched by its matcher). Its correction:
        every run's F1 and interval corrected by the people's answers or none
        (:func:`~truss_lab.evaluate._correction.runs_correction`: ``auto`` corrects when
        people answered for each run); ``correction`` names it.
    prices : Prices or path, optional
        A price table (TOML, Formats §8); without one no cost is computed
        and nothing is dominated.
    threshold : float, optional
        The gate threshold every run is judged at; None: each run's own (its
        ``extraction_min_salience`` when its policy is model-scored, else the ADR
        default 0.70).
    score : str
        The candidates column to threshold.
    n_boot, confidence, random_state
        F1 and its interval come from :func:`~truss_lab.evaluate._runs.bootstrap_run`.
    **deprecated
        The loose truth keywords, with a DeprecationWarning.

    Returns
    -------
    Frontier
        One row per run (cost, latency, F1 with its interval, dominated and by whom),
        the truth and why, the matcher and the correction.

    See Also
    --------
    truss_lab.evaluate.bootstrap_run : each run's F1 and interval.

    Examples
    --------
    >>> f = tl.frontier(store, ["good"], truth=tl.Truth.labels(), n_boot=50)
    >>> f.table["run_id"].tolist(), f.truth
    (['good'], 'labels')
    """
    ids = [run_ids] if isinstance(run_ids, str) else list(dict.fromkeys(run_ids))
    if not ids:
        raise BadInputError("frontier needs at least one run id", field="run_ids")
    if threshold is not None:
        check_threshold(threshold, "threshold", name="threshold")
    table = prices if isinstance(prices, Prices) or prices is None else load_prices(prices)
    t = Truth.resolve(store, truth_of(truth, deprecated, where="frontier"), ids)
    fixes = runs_correction(store, t, ids, score=score)
    rows = []
    for rid in ids:
        info = run_info(store, rid)
        u = run_usage(store, rid, prices=table)
        fig = _usage_figures(u, table is not None)
        at = threshold if threshold is not None else (
            float(info["extraction_min_salience"])
            if info["policy"] == LessonExtractionPolicy.model_scored.value
            else DEFAULT_MIN_SALIENCE)
        boot = bootstrap_run(store, rid, thresholds=[at], score=score, n_boot=n_boot,
                             confidence=confidence, random_state=random_state,
                             truth=t.corrected("none" if fixes[rid] is None else "ppi")
                             ).table.iloc[0]
        cost = fig.pop("cost")
        rows.append({
            "run_id": rid, "name": info.get("name") or "",
            "extractor_id": str(info["extractor_id"]), "n_verdicts": u.n_verdicts,
            "cost": cost,
            "cost_per_verdict": cost / u.n_verdicts if u.n_verdicts else np.nan, **fig,
            "threshold": at, "precision": boot["precision"], "recall": boot["recall"],
            "f1": boot["f1"], "f1_low": boot["f1_low"], "f1_high": boot["f1_high"]})
    df = pd.DataFrame(rows)
    df = pd.concat([df, dominance(df)], axis=1)[list(FRONTIER_COLUMNS)]
    return Frontier(table=df, truth=t.name, why=t.why,
                    currency=None if table is None else table.currency,
                    confidence=confidence, n_boot=n_boot,
                    matcher=matcher_name(t.matching) if t.kind == "references"
                    else None, correction=runs_correction_label(fixes),
                    people_verdicts={r: f.n_sampled for r, f in fixes.items() if f is not None})


def _usage_figures(u: RunUsage, priced: bool) -> dict[str, Any]:
    """The calls a run's cost and latency are read from: its own live calls, or for a
    replay the recorded calls it answered from (what the configuration cost when it was
    called); a run that called no model costs 0 and has no latency."""
    def nan(v: float | None) -> float:
        return np.nan if v is None else float(v)

    if u.recorded_from:
        note = ("" if u.recorded_cost is not None else u.cost_note if not priced else
                f"replayed from {u.recorded_from}: a recorded call's model has no price, "
                "or its server reported no tokens")
        return {"calls": "recorded", "cost": nan(u.recorded_cost), "cost_note": note,
                "prompt_tokens": u.recorded_prompt_tokens,
                "completion_tokens": u.recorded_completion_tokens,
                "latency_ms_p50": nan(u.recorded_latency_ms_p50),
                "latency_ms_p95": nan(u.recorded_latency_ms_p95)}
    return {"calls": "live" if u.live_calls else "none", "cost": nan(u.cost),
            "cost_note": u.cost_note, "prompt_tokens": u.prompt_tokens,
            "completion_tokens": u.completion_tokens,
            "latency_ms_p50": nan(u.latency_ms_p50), "latency_ms_p95": nan(u.latency_ms_p95)}

