"""Usage of one extraction run: calls, tokens, latency, errors, time and cost.

:func:`run_usage` reads what a run left in the store (its run record, the live
recordings it made, its ``verdict_errors``) and never estimates: tokens are
the ones servers reported, latency the measured wall time of live calls, and
cost is computed only from a price table the researcher gives
(:func:`load_prices`, a TOML file) and only when every live call's model has a
price and reported its tokens; otherwise ``cost`` is None and ``cost_note``
says why. A replay or heuristic run makes no live call: its live tokens are 0
and its latencies None.

A replay's answers were paid for once, by the run that recorded them: the
``recorded_*`` figures are those recordings' calls (the ones the replay answered
from, on the verdicts it processed), their tokens, latencies and, with prices, what
they cost, so a configuration's cost and speed read the same from its replay as
from its live run (:func:`~truss_lab.extract._batch.rerun`). A live run's recorded
figures are 0 and None: its calls are the live ones.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..core._errors import BadInputError
from ..core._toml import read_toml
from ._runs import recorded_completions, run_info, run_verdict_hashes
from ._store import Store

__all__ = ["BATCH_SOURCE", "Prices", "RunUsage", "load_prices", "run_usage"]

_PRICE_KEYS = ("input_per_million", "output_per_million")
_BATCH_KEYS = ("batch_input_per_million", "batch_output_per_million")
BATCH_SOURCE = "openai-batch:"
"""How the ``source`` of a completion a provider's batch interface answered starts
(``openai-batch:FILE#REQUEST_ID``): its cost is the model's batch price when the table
gives one."""


@dataclass(frozen=True)
class Prices:
    """Prices per million tokens by model name, and their currency."""

    models: dict[str, tuple[float, float]]
    """model -> (input_per_million, output_per_million)."""
    currency: str = "USD"
    """The currency of every price (shown with the cost)."""
    batch: dict[str, tuple[float, float]] = field(default_factory=dict)
    """model -> (batch_input_per_million, batch_output_per_million), for the models whose
    table gives them: what a call through the batch interface costs (default: the live
    price)."""

    def per_million(self, model: str, batch: bool) -> tuple[float, float]:
        """The (input, output) price per million tokens of a call of ``model``."""
        return self.batch.get(model, self.models[model]) if batch else self.models[model]


def load_prices(path: str | os.PathLike[str]) -> Prices:
    """Read a price table::

        currency = "USD"                      # optional, default USD
        [models."gpt-4o-mini"]
        input_per_million = 0.15              # per million prompt tokens
        output_per_million = 0.60             # per million completion tokens
        batch_input_per_million = 0.075       # optional: through the batch interface
        batch_output_per_million = 0.30       # (both or neither)
    """
    source = str(path)
    data = read_toml(path, what="the price table")
    models = data.get("models")
    if not isinstance(models, dict) or not models:
        raise BadInputError('expected [models."NAME"] tables with input_per_million and '
                            "output_per_million", source=source, field="models")
    out: dict[str, tuple[float, float]] = {}
    batch: dict[str, tuple[float, float]] = {}
    for name, entry in models.items():
        vals = [entry.get(k) if isinstance(entry, dict) else None for k in _PRICE_KEYS]
        if not all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
                   and v >= 0 for v in vals):
            raise BadInputError(
                f"model {name!r}: expected numbers >= 0 for {' and '.join(_PRICE_KEYS)}",
                source=source, field=f"models.{name}")
        out[str(name)] = (float(vals[0]), float(vals[1]))  # type: ignore[arg-type]
        bvals = [entry.get(k) for k in _BATCH_KEYS]
        if any(v is not None for v in bvals):
            if not all(isinstance(v, int | float) and not isinstance(v, bool)
                       and math.isfinite(v) and v >= 0 for v in bvals):
                raise BadInputError(
                    f"model {name!r}: expected numbers >= 0 for {' and '.join(_BATCH_KEYS)} "
                    "(both or neither)", source=source, field=f"models.{name}")
            batch[str(name)] = (float(bvals[0]), float(bvals[1]))  # type: ignore[arg-type]
    currency = data.get("currency", "USD")
    if not isinstance(currency, str) or not currency:
        raise BadInputError("currency must be a non-empty string", source=source,
                            field="currency")
    return Prices(out, currency, batch)


@dataclass(frozen=True)
class RunUsage:
    """What one run used. Latencies are of live calls, in milliseconds."""

    run_id: str
    n_verdicts: int
    """Verdicts the run processed."""
    calls: int
    """Provider calls (live or replayed, answered or failed)."""
    live_calls: int
    """Live calls the run recorded (completions with this run_id; the k samples of one
    ``n=k`` call count once)."""
    prompt_tokens: int
    """Tokens in, summed over live calls that reported them."""
    completion_tokens: int
    """Tokens out, summed over live calls that reported them."""
    calls_without_tokens: int
    """Live calls whose server reported no token counts."""
    latency_ms_p50: float | None
    latency_ms_p95: float | None
    latency_ms_p99: float | None
    errors: dict[str, int] = field(default_factory=dict)
    """Verdict errors by ``stage/reason`` (see ``truss-lab errors RUN``)."""
    seconds: float = 0.0
    """Active wall time of the run, summed over resumes."""
    seconds_per_verdict: float | None = None
    cost: float | None = None
    """From the price table; None without one, or when it cannot be computed exactly."""
    currency: str | None = None
    cost_note: str = ""
    """Why ``cost`` is None, when it is."""
    recorded_calls: int = 0
    """Calls a replay answered from recordings (paid for by the run that recorded them)."""
    recorded_prompt_tokens: int = 0
    """Tokens in of those recorded calls, as their servers reported them."""
    recorded_completion_tokens: int = 0
    """Tokens out of those recorded calls."""
    recorded_latency_ms_p50: float | None = None
    recorded_latency_ms_p95: float | None = None
    recorded_latency_ms_p99: float | None = None
    recorded_cost: float | None = None
    """What the recorded calls cost when they were made (from the price table)."""
    recorded_from: str = ""
    """Whose recordings a replay answered from: ``run RUN`` (a rerun) or ``extractor
    ID`` (``replay:ID``, each verdict's earliest recording); empty for a live run."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values."""
        return asdict(self)

    def __str__(self) -> str:
        def ms(v: float | None) -> str:
            return "-" if v is None else f"{v:.1f}"

        spv = "-" if self.seconds_per_verdict is None else f"{self.seconds_per_verdict:.4f}"
        errs = ", ".join(f"{n} {k}" for k, n in self.errors.items()) or "none"
        cost = (f"{self.cost:.6f} {self.currency}" if self.cost is not None
                else f"- ({self.cost_note})")
        lines = [
            f"run {self.run_id}: {self.n_verdicts} verdicts, {self.calls} provider calls "
            f"({self.live_calls} live)",
            f"tokens in {self.prompt_tokens}, out {self.completion_tokens}"
            + (f" ({self.calls_without_tokens} live calls reported none)"
               if self.calls_without_tokens else ""),
            f"latency ms p50 {ms(self.latency_ms_p50)}, p95 {ms(self.latency_ms_p95)}, "
            f"p99 {ms(self.latency_ms_p99)}",
            f"errors: {errs}",
            f"time {self.seconds:.2f}s, {spv}s per verdict",
            f"cost {cost}",
        ]
        if self.recorded_from:
            rcost = ("" if self.recorded_cost is None
                     else f", cost {self.recorded_cost:.6f} {self.currency}")
            lines.append(
                f"recorded: {self.recorded_calls} calls replayed from {self.recorded_from}: "
                f"tokens in {self.recorded_prompt_tokens}, out "
                f"{self.recorded_completion_tokens}, latency ms p50 "
                f"{ms(self.recorded_latency_ms_p50)}, p95 {ms(self.recorded_latency_ms_p95)}, "
                f"p99 {ms(self.recorded_latency_ms_p99)}{rcost}")
        return "\n".join(lines)


def run_usage(store: Store, run_id: str, *, prices: Prices | None = None) -> RunUsage:
    """The usage of ``run_id`` (see the module docstring); an unknown run is an error."""
    row = run_info(store, run_id)
    # Samples 1..k-1 answered by one n=k call carry no latency and no tokens (sample 0
    # carries the call's): they are recordings, not calls, and are not counted as calls.
    live = store.con.execute(
        "SELECT model, latency_ms, prompt_tokens, completion_tokens FROM completions "
        "WHERE run_id = ? AND NOT (sample_index > 0 AND latency_ms IS NULL AND "
        "prompt_tokens IS NULL AND completion_tokens IS NULL)", [run_id]).fetchall()
    errors = {f"{stage}/{reason}": int(n) for stage, reason, n in store.con.execute(
        "SELECT stage, reason, count(*) FROM verdict_errors WHERE run_id = ? "
        "GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2", [run_id]).fetchall()}
    n_verdicts = int(row["n_verdicts"] or 0)
    seconds = float(row["seconds"] or 0.0)
    cost, note = _cost(live, prices)
    figures = _figures(live)
    recorded: dict[str, Any] = {}
    source = None if live else _replayed_from(row)
    if source is not None:
        calls = _replayed_calls(store, run_id, str(row["extractor_id"]), source)
        rec = _figures(calls)
        recorded = {
            "recorded_calls": len(calls), "recorded_prompt_tokens": rec["prompt_tokens"],
            "recorded_completion_tokens": rec["completion_tokens"],
            "recorded_latency_ms_p50": rec["p50"], "recorded_latency_ms_p95": rec["p95"],
            "recorded_latency_ms_p99": rec["p99"],
            "recorded_cost": _cost(calls, prices)[0] if calls else None,
            "recorded_from": (f"run {source}" if source else
                              f"extractor {row['extractor_id']}")}
    return RunUsage(
        run_id=run_id, n_verdicts=n_verdicts, calls=int(row["provider_calls"] or 0),
        live_calls=len(live), prompt_tokens=figures["prompt_tokens"],
        completion_tokens=figures["completion_tokens"],
        calls_without_tokens=figures["without_tokens"],
        latency_ms_p50=figures["p50"], latency_ms_p95=figures["p95"],
        latency_ms_p99=figures["p99"],
        errors=errors, seconds=seconds,
        seconds_per_verdict=seconds / n_verdicts if n_verdicts else None,
        cost=cost, currency=None if prices is None else prices.currency, cost_note=note,
        **recorded,
    )


def _figures(calls: list[tuple[Any, ...]]) -> dict[str, Any]:
    """Tokens and latency percentiles of (model, latency_ms, prompt_tokens,
    completion_tokens) calls."""
    lat = np.array([r[1] for r in calls if r[1] is not None], dtype=float)
    pct = (np.percentile(lat, [50, 95, 99]).tolist() if lat.size else [None] * 3)
    counted = [r for r in calls if r[2] is not None and r[3] is not None]
    return {"prompt_tokens": sum(int(r[2]) for r in counted),
            "completion_tokens": sum(int(r[3]) for r in counted),
            "without_tokens": len(calls) - len(counted),
            "p50": pct[0], "p95": pct[1], "p99": pct[2]}


def _replayed_from(row: dict[str, Any]) -> str | None:
    """Whose recordings run ``row`` replayed: the run it reran (its config's
    ``rerun_of``), ``""`` for a replay by extractor id, None when it replayed none
    from the database (a live or heuristic run, or a replay of a file)."""
    config = json.loads(row["config"] or "{}")
    if config.get("rerun_of"):
        return str(config["rerun_of"])
    spec = config.get("extractor_spec")
    if row["provider"] != "replay" or (spec is not None
                                      and spec != f"replay:{row['extractor_id']}"):
        return None
    return ""


def _replayed_calls(store: Store, run_id: str, extractor_id: str,
                    source: str) -> list[tuple[Any, ...]]:
    """The recorded calls a replay run answered from: the recordings it selects (``source``
    run's, or per verdict the earliest) on the verdicts it processed, less those it
    could not use (its provider errors), as (model, latency_ms, prompt_tokens,
    completion_tokens)."""
    rec = recorded_completions(store, extractor_id, run_id=source or None)
    if rec.empty:
        return []
    rec = rec[rec["verdict_hash"].isin(run_verdict_hashes(store, run_id))]
    failed = store.con.execute(
        "SELECT verdict_hash, sample_index FROM verdict_errors WHERE run_id = ? "
        "AND stage = 'provider'", [run_id]).fetchall()
    if failed:
        keys = pd.MultiIndex.from_frame(rec[["verdict_hash", "sample_index"]])
        rec = rec[~keys.isin(failed)]
    extra = ((rec["sample_index"] > 0) & rec["latency_ms"].isna()
             & rec["prompt_tokens"].isna() & rec["completion_tokens"].isna())
    rec = rec[~extra]
    rec = rec.assign(batch=rec["source"].astype(str).str.startswith(BATCH_SOURCE))
    return [tuple(None if pd.isna(v) else v for v in r) for r in rec[
        ["model", "latency_ms", "prompt_tokens", "completion_tokens", "batch"]].itertuples(
            index=False, name=None)]


def _cost(live: list[tuple[Any, ...]], prices: Prices | None) -> tuple[float | None, str]:
    if prices is None:
        return None, "no price table (--prices FILE)"
    unpriced = sorted({str(r[0]) for r in live if r[0] not in prices.models})
    if unpriced:
        return None, f"no price for model(s) {', '.join(unpriced)}"
    if any(r[2] is None or r[3] is None for r in live):
        return None, "some live calls reported no token counts"
    # A recorded call the batch interface answered (a 5th element True) costs the batch price.
    rates = [prices.per_million(r[0], len(r) > 4 and bool(r[4])) for r in live]
    total = sum(r[2] * a + r[3] * b for r, (a, b) in zip(live, rates, strict=True))
    return total / 1e6, ""
