"""The labelling queue: the lessons of a run whose labels would most move the decision.

The threshold is chosen from labelled lessons; a lesson far above or below every
threshold still in play is kept (or dropped) whatever its label says, so its
label cannot move the choice. The queue therefore takes the run's lessons
without a truth (never labelled, or tied) whose salience lies inside the
*interval where the threshold is being chosen*:

- ``bootstrap``: the interval of the choice itself,
  :attr:`~truss_lab.evaluate._choose.ThresholdChoice.threshold_interval`, from
  :func:`~truss_lab.evaluate._runs.choose_run_threshold` as ``truss-lab
  sweep`` and ``propose`` make it (``cv="auto"``), once the run has labelled
  lessons on at least ``AUTO_FOLDS * MIN_FOLD_VERDICTS`` (50) verdicts, both
  useful and not;
- ``default-band``: otherwise (too few labels to choose), the ADR default
  ``extraction_min_salience`` (0.70) ± :data:`DEFAULT_BAND` (0.10);
- ``given``: an interval the caller states.

Inside it the queue is spread over verdicts: verdicts in a seeded random order,
dealt round-robin (each verdict's lesson nearest the centre first, then its
second...), at most ``per_verdict`` per verdict, so the first rows cover as many
verdicts as possible. Each row carries the verdict's goal, summary and checks.

Such labels check a judge and feed the labels truth, but they label verdicts in part
(a band, at most ``per_verdict`` of each), so a prediction-powered correction of a
judge refuses them (:func:`~truss_lab.evaluate._ppi.partial_labels`). **Whole
verdicts** (:func:`whole_verdict_queue`, ``truss-lab queue --whole-verdicts``) are
what it needs: ``n_verdicts`` verdicts drawn by simple random sampling without
replacement (seeded) from the run's verdicts with a candidate, and every candidate
of each listed together, the valid ones the judge labels and those the parser
dropped (a useful one is a miss, counted in recall's denominator), whatever their
salience. ``attrs["queue"]`` records the population and each verdict's inclusion
probability, as the match queue does.

**The match queue** (:func:`match_queue`, Formats §5) asks people which reference
each lesson expresses, to check a matcher and to correct reference-based estimates.
It draws ``n_verdicts`` verdicts by simple random sampling without replacement
(seeded) from the run's *matchable* verdicts -- annotated (with reference lessons)
and holding at least one valid lesson of the run: a verdict without lessons has
nothing to match, and its misses are the same for people and any matcher -- and
lists every valid lesson of each, with the verdict's references to choose from.
Each verdict is drawn with probability ``n_verdicts / population``; the frame's
``attrs["queue"]`` records the seed, the population, that probability and the
verdicts drawn (``truss-lab queue --kind match`` writes it beside the CSV).
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd

from ..core._errors import BadInputError
from ..core._threshold import DEFAULT_MIN_SALIENCE, check_threshold
from ..ingest._labels import QUEUE_FIELDS
from ..ingest._match_labels import MATCH_QUEUE_FIELDS
from ..journal._table import verdict_payloads
from ..store._labels import reference_rows
from ..store._runs import run_candidates, run_info, run_processed_verdicts
from ..store._store import Store
from ._bootstrap import as_rng
from ._defaults import DEFAULT_BAND, DEFAULT_OBJECTIVE
from ._objective import Objective, parse_objective
from ._runs import AUTO_FOLDS, MIN_FOLD_VERDICTS, choose_run_threshold
from ._truth import labelled_candidates, run_labels

__all__ = ["labelling_queue", "match_queue", "whole_verdict_queue"]

#: Verdicts with a labelled lesson needed before the choice's interval is used: the
#: number ``cv="auto"`` needs to cross-validate the choice.
MIN_LABELLED_VERDICTS = AUTO_FOLDS * MIN_FOLD_VERDICTS


def _count(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise BadInputError(f"{name} must be an int >= 1, got {value!r}", field=name)
    return int(value)


def _band(centre: float) -> tuple[float, float]:
    # Rounded so that 0.70 ± 0.10 reads [0.6, 0.8], not 0.7999999999999999.
    return max(0.0, round(centre - DEFAULT_BAND, 12)), min(1.0, round(centre + DEFAULT_BAND, 12))


def _decision_interval(store: Store, run_id: str, lc: pd.DataFrame, *,
                       interval: tuple[float, float] | None, objective: str | Objective,
                       n_boot: int, random_state: Any) -> dict[str, Any]:
    """Where the threshold is being chosen: low, high, the centre and how it was found."""
    lab = lc[lc["labelled"].to_numpy(dtype=bool)]
    n_verdicts = int(lab["verdict_hash"].nunique())
    info: dict[str, Any] = {"n_labelled": len(lab), "n_labelled_verdicts": n_verdicts}
    if interval is not None:
        lo, hi = (check_threshold(v, "labelling_queue", name="interval") for v in interval)
        if lo > hi:
            raise BadInputError(f"interval low {lo} is above high {hi}", field="interval")
        return {**info, "source": "given", "low": lo, "high": hi, "threshold": None,
                "centre": (lo + hi) / 2, "objective": None, "why": "the interval given"}
    values = set(lab["label"].astype("int64").tolist())
    if n_verdicts < MIN_LABELLED_VERDICTS or values != {0, 1}:
        lo, hi = _band(DEFAULT_MIN_SALIENCE)
        why = (f"too few labels to choose: {n_verdicts} verdict(s) with a labelled lesson "
               f"(at least {MIN_LABELLED_VERDICTS} needed)" if n_verdicts < MIN_LABELLED_VERDICTS
               else "too few labels to choose: every labelled lesson has the same label")
        return {**info, "source": "default-band", "low": lo, "high": hi,
                "threshold": DEFAULT_MIN_SALIENCE, "centre": DEFAULT_MIN_SALIENCE,
                "objective": None,
                "why": f"{why}; the ADR default {DEFAULT_MIN_SALIENCE:.2f} ± {DEFAULT_BAND:.2f}"}
    choice = choose_run_threshold(store, run_id, objective=objective, cv="auto",
                                  n_boot=n_boot, random_state=random_state)
    t = choice.threshold
    if choice.threshold_interval is None or not math.isfinite(t):
        lo, hi = _band(DEFAULT_MIN_SALIENCE)
        return {**info, "source": "default-band", "low": lo, "high": hi,
                "threshold": DEFAULT_MIN_SALIENCE, "centre": DEFAULT_MIN_SALIENCE,
                "objective": choice.objective,
                "why": f"no threshold satisfies {choice.objective} (choice {t}); the ADR "
                       f"default {DEFAULT_MIN_SALIENCE:.2f} ± {DEFAULT_BAND:.2f}"}
    lo, hi = (float(v) for v in choice.threshold_interval)
    conf = f"{choice.confidence:.0%}" if choice.confidence is not None else ""
    return {**info, "source": "bootstrap", "low": lo, "high": hi, "threshold": float(t),
            "centre": float(t), "objective": choice.objective,
            "why": f"the {conf} bootstrap interval of the chosen threshold {t:.4g} "
                   f"({choice.objective}, {n_boot} replicates)"}


def _checks_text(checks: Any) -> str:
    """A verdict's checks, one per line: ``FAIL name: evidence`` / ``pass name: evidence``."""
    if not isinstance(checks, list):
        return ""
    lines = []
    for c in checks:
        if isinstance(c, dict):
            mark = "pass" if c.get("passed") is True else "FAIL"
            ev = c.get("evidence")
            lines.append(f"{mark} {c.get('name', '?')}" + (f": {ev}" if ev not in (None, "")
                                                            else ""))
    return "\n".join(lines)


def _verdict_context(store: Store, hashes: pd.Series) -> pd.DataFrame:
    """``verdict``, ``goal``, ``summary`` and ``checks`` of the verdicts ``hashes``."""
    v = verdict_payloads(store)
    v = v[v["verdict_hash"].isin(set(hashes))]
    payloads = [json.loads(p) for p in v["payload"]]
    return pd.DataFrame({
        "verdict_hash": v["verdict_hash"].to_numpy(),
        "verdict": [str(p.get("verdict", "")) for p in payloads],
        "goal": [str(p.get("goal", "")) for p in payloads],
        "summary": [str(p.get("summary", "")) for p in payloads],
        "checks": [_checks_text(p.get("checks")) for p in payloads],
    })


def _check_annotator(annotator: Any) -> None:
    if annotator is not None and (not isinstance(annotator, str) or not annotator.strip()):
        raise BadInputError(f"annotator must be a non-empty name, got {annotator!r}",
                            field="annotator")


def _queue_frame(store: Store, chosen: pd.DataFrame, run_id: str,
                 annotator: str | None) -> pd.DataFrame:
    """The queue file's rows (:data:`QUEUE_FIELDS`) for the ``chosen`` candidates, in their
    order: each with its verdict's context, ``useful`` empty, ``annotator`` as given."""
    ctx = _verdict_context(store, chosen["verdict_hash"])
    out = chosen.merge(ctx, on="verdict_hash", how="left", validate="many_to_one")
    out = out.assign(
        extractor=out["extractor_id"],
        useful=pd.array([pd.NA] * len(out), dtype="Int8"),
        annotator=annotator.strip() if annotator is not None else "",
        run_id=run_id,
    )
    for c in ("verdict", "goal", "summary", "checks", "text"):
        out[c] = out[c].fillna("").astype(str)
    out = out[list(QUEUE_FIELDS)].reset_index(drop=True)
    for c in ("lesson_index", "verdict_seq", "n_annotators"):
        out[c] = out[c].astype("int64")
    return out


def labelling_queue(
    store: Store,
    run_id: str,
    *,
    n: int = 200,
    per_verdict: int = 2,
    annotator: str | None = None,
    interval: tuple[float, float] | None = None,
    objective: str | Objective = DEFAULT_OBJECTIVE,
    n_boot: int = 200,
    random_state: Any = 0,
) -> pd.DataFrame:
    """Up to ``n`` lessons of ``run_id`` to label next: those whose labels would most
    move the threshold decision (module docstring: which interval, and how it is spread).

    A lesson qualifies when it is valid, has no truth in the labels-truth evaluation
    (no human label, direct or transferred, or an even split: a tie), its salience
    lies in ``[low, high]``, and ``annotator`` (if given) has not labelled it.
    Verdicts are shuffled by ``random_state`` (which also seeds the choice's
    bootstrap) and dealt round-robin, at most ``per_verdict`` lessons each,
    nearest the centre (the chosen threshold, the default, or the middle of a
    given interval) first.

    ``truss_lab.ingest._labels.write_label_queue`` writes it as the CSV that
    ``truss-lab ingest labels`` reads back.

    Parameters
    ----------
    store : Store
        The database.
    run_id : str
        The run.
    n : int, default 200
        Lessons at most.
    per_verdict : int, default 2
        Lessons of one verdict at most.
    annotator : str, optional
        Leave out what this annotator labelled; the queue's ``annotator`` column.
    interval : tuple of (float, float), optional
        The salience interval to draw from (default: the chosen threshold's
        interval, module docstring).
    objective : str or Objective, default "f1"
        The objective of the choice whose interval is used.
    n_boot : int, default 200
        Replicates of that choice's bootstrap.
    random_state : int or numpy.random.Generator, default 0
        Seed of the shuffle and the bootstrap.

    Returns
    -------
    pandas.DataFrame
        The columns of :data:`~truss_lab.ingest._labels.QUEUE_FIELDS` (``useful``
        empty, ``annotator`` the one given or empty), in queue order;
        ``frame.attrs["queue"]`` says which interval was used and why, and how many
        lessons and verdicts qualified.

    Raises
    ------
    BadInputError
        An unknown run or objective, a bad count or annotator.
    """
    n = _count(n, "n")
    per_verdict = _count(per_verdict, "per_verdict")
    n_boot = _count(n_boot, "n_boot")
    objective = parse_objective(objective)  # a bad one is refused whichever interval is used
    _check_annotator(annotator)
    rng = as_rng(random_state)
    run_info(store, run_id)  # an unknown run is an error naming the recent ones
    lc = labelled_candidates(store, run_id)
    info = _decision_interval(store, run_id, lc, interval=interval, objective=objective,
                              n_boot=n_boot, random_state=random_state)
    s = lc["salience"].to_numpy(dtype=np.float64, na_value=np.nan)
    todo = ~lc["labelled"].to_numpy(dtype=bool) & (s >= info["low"]) & (s <= info["high"])
    if annotator is not None:
        todo &= ~_labelled_by(store, lc, annotator.strip())
    chosen, verdicts = _deal(lc[todo].copy(), info["centre"], rng, per_verdict=per_verdict,
                             n=n)
    out = _queue_frame(store, chosen, run_id, annotator)
    out.attrs["queue"] = {
        "run_id": run_id, "source": info["source"], "interval": [info["low"], info["high"]],
        "threshold": info["threshold"], "why": info["why"],
        "n_labelled": int(info["n_labelled"]),
        "n_labelled_verdicts": int(info["n_labelled_verdicts"]),
        "n_candidates": int(todo.sum()), "n_verdicts": len(verdicts),
        "n_rows": len(out), "n_rows_verdicts": int(out["verdict_hash"].nunique()),
        "per_verdict": per_verdict, "annotator": annotator,
        "objective": info["objective"],
        "n_boot": n_boot if info["source"] == "bootstrap" else None,
        "random_state": random_state if not isinstance(random_state, np.random.Generator)
        else None,
    }
    return out


def whole_verdict_queue(store: Store, run_id: str, *, n_verdicts: int,
                        annotator: str | None = None, random_state: Any = 0) -> pd.DataFrame:
    """Every candidate of ``n_verdicts`` verdicts of ``run_id`` drawn at random, to label
    whole: the labels a prediction-powered correction of a judge can use (module
    docstring).

    The population is the run's verdicts with a candidate (those a correction's
    inclusion probability counts); ``n_verdicts`` of them are drawn without replacement
    (seeded by ``random_state``), each with probability ``n_verdicts / population``, and
    every candidate of each is listed (valid or dropped by the parser, any salience),
    by verdict seq and lesson index, but those already labelled (a direct label or an
    even split: the verdict is then whole once the rest is) and, with ``annotator``,
    those that annotator labelled. Fewer verdicts than ``n_verdicts``: all of them.

    Parameters
    ----------
    store : Store
        The database the run is in.
    run_id : str
        The run whose verdicts are drawn.
    n_verdicts : int
        How many verdicts to draw (at least 1).
    annotator : str, optional
        Written into the annotator column; lessons this annotator labelled are left out.
    random_state : int or numpy.random.Generator, default 0
        Seed of the draw: the same seed lists the same verdicts.

    Returns
    -------
    pandas.DataFrame
        The columns of :data:`~truss_lab.ingest._labels.QUEUE_FIELDS` (``useful``
        empty), by verdict seq and lesson index; ``frame.attrs["queue"]`` records the
        run, the seed, the population, the verdicts drawn and their
        ``inclusion_probability``.

    Raises
    ------
    BadInputError
        An unknown run, a run without candidates, ``n_verdicts`` below 1 or an empty
        annotator.
    """
    n_verdicts = _count(n_verdicts, "n_verdicts")
    _check_annotator(annotator)
    rng = as_rng(random_state)
    run_info(store, run_id)  # an unknown run is an error naming the recent ones
    lc = labelled_candidates(store, run_id, valid_only=False)
    if lc.empty:
        raise BadInputError(f"run {run_id!r} has no candidate to label", field="run_id")
    population = lc.drop_duplicates("verdict_hash").sort_values("verdict_seq", kind="stable")
    hashes = population["verdict_hash"].astype(str).to_numpy(dtype=object)
    take = min(n_verdicts, len(hashes))
    drawn = set(rng.choice(hashes, size=take, replace=False).tolist())
    # A tie is answered (people split evenly): the verdict is whole without it.
    todo = lc["verdict_hash"].astype(str).isin(drawn).to_numpy() & ~(
        lc["labelled"].to_numpy(dtype=bool) | lc["tie"].to_numpy(dtype=bool))
    if annotator is not None:
        todo &= ~_labelled_by(store, lc, annotator.strip())
    chosen = lc[todo].sort_values(["verdict_seq", "lesson_index"], kind="stable")
    out = _queue_frame(store, chosen, run_id, annotator)
    order = population[population["verdict_hash"].astype(str).isin(drawn)]
    out.attrs["queue"] = {
        "kind": "whole-verdicts", "run_id": run_id, "n_verdicts": take,
        "n_verdicts_asked": n_verdicts, "population": len(hashes),
        "inclusion_probability": take / len(hashes), "n_rows": len(out),
        "n_rows_verdicts": int(out["verdict_hash"].nunique()), "annotator": annotator,
        "random_state": random_state if not isinstance(random_state, np.random.Generator)
        else None,
        "verdicts": order["verdict_hash"].astype(str).tolist(),
    }
    return out


def _labelled_by(store: Store, lc: pd.DataFrame, annotator: str) -> np.ndarray:
    """Which rows of ``lc`` (labelled candidates) ``annotator`` has labelled already."""
    lab = run_labels(store)
    mine = lab[(lab["annotator"] == annotator).fillna(False).to_numpy(dtype=bool)]
    key = ["verdict_hash", "extractor_id", "lesson_index"]
    return lc[key].merge(
        mine.rename(columns={"extractor": "extractor_id"})[key].astype(
            {"lesson_index": "int64"}).drop_duplicates(),
        on=key, how="left", indicator=True)["_merge"].eq("both").to_numpy()


def _deal(pool: pd.DataFrame, centre: float, rng: np.random.Generator, *, per_verdict: int,
          n: int) -> tuple[pd.DataFrame, pd.Series]:
    """``(queue, verdicts)``: the qualifying lessons ``pool`` dealt round-robin over
    shuffled verdicts, at most ``per_verdict`` each, nearest ``centre`` first, the
    first ``n``; and the verdicts that had one, in journal order."""
    pool["_dist"] = (pool["salience"] - centre).abs()
    # Verdicts in journal order, then shuffled: the same seed deals the same queue.
    verdicts = pool.drop_duplicates("verdict_hash").sort_values("verdict_seq")["verdict_hash"]
    order = pd.Series(rng.permutation(len(verdicts)), index=verdicts.to_numpy())
    pool["_order"] = pool["verdict_hash"].map(order).to_numpy()
    pool = pool.sort_values(["_order", "_dist", "lesson_index"], kind="stable")
    pool["_rank"] = pool.groupby("_order", sort=False).cumcount()
    chosen = pool[pool["_rank"] < per_verdict].sort_values(["_rank", "_order"], kind="stable")
    return chosen.head(n).reset_index(drop=True), verdicts


def _reference_choices(refs: pd.DataFrame) -> dict[str, str]:
    """Per verdict, its references one per line (``r1: text``), in id order; a reference
    worded by several annotators is shown once, in its first annotator's words."""
    real = refs[refs["reference_id"].astype(str) != "none"]
    real = real.drop_duplicates(["verdict_hash", "reference_id"]).sort_values(
        ["verdict_hash", "reference_id"], kind="stable")
    out: dict[str, list[str]] = {}
    for h, r, t in zip(real["verdict_hash"].astype(str), real["reference_id"].astype(str),
                       real["text"].astype(str), strict=True):
        out.setdefault(h, []).append(f"{r}: {t}")
    return {h: "\n".join(lines) for h, lines in out.items()}


def match_queue(store: Store, run_id: str, *, n_verdicts: int, annotator: str | None = None,
                random_state: Any = 0) -> pd.DataFrame:
    """Every valid lesson of ``n_verdicts`` matchable verdicts of ``run_id``, drawn at
    random, for people to match to the verdict's references (module docstring).

    ``truss_lab.ingest.write_match_queue`` writes the CSV that ``truss-lab ingest
    match-labels`` reads back once ``reference_id`` is filled in.

    Parameters
    ----------
    store : Store
        The database.
    run_id : str
        The run.
    n_verdicts : int
        Verdicts to draw (fewer matchable verdicts: all of them are listed).
    annotator : str, optional
        The queue's ``annotator`` column.
    random_state : int or numpy.random.Generator, default 0
        Seed of the draw.

    Returns
    -------
    pandas.DataFrame
        The columns of :data:`~truss_lab.ingest._match_labels.MATCH_QUEUE_FIELDS`
        (``reference_id`` missing: written as ``?``), by verdict seq and lesson index;
        ``frame.attrs["queue"]`` records the run, the seed, the population of
        matchable verdicts, ``n_verdicts`` drawn, each one's
        ``inclusion_probability`` and the verdicts drawn.

    Raises
    ------
    BadInputError
        An unknown run, no annotated verdict with a valid lesson, a bad count or
        annotator.
    """
    n_verdicts = _count(n_verdicts, "n_verdicts")
    _check_annotator(annotator)
    rng = as_rng(random_state)
    info = run_info(store, run_id)  # an unknown run is an error naming the recent ones
    refs = reference_rows(store)
    annotated = set(refs["verdict_hash"].astype(str))
    processed = run_processed_verdicts(store, run_id)
    lessons = run_candidates(store, run_id, valid_only=True)
    with_lessons = set(lessons["verdict_hash"].astype(str))
    population = processed[processed["verdict_hash"].astype(str).isin(annotated & with_lessons)]
    if population.empty:
        raise BadInputError(
            f"run {run_id!r} has no annotated verdict with a valid lesson to match (load "
            "reference lessons with `truss-lab ingest references`)", field="references")
    population = population.sort_values("verdict_seq", kind="stable")
    hashes = population["verdict_hash"].astype(str).to_numpy(dtype=object)
    take = min(n_verdicts, len(hashes))
    drawn = set(rng.choice(hashes, size=take, replace=False).tolist())
    chosen = lessons[lessons["verdict_hash"].astype(str).isin(drawn)]
    chosen = chosen.drop_duplicates(["verdict_hash", "lesson_index"]).sort_values(
        ["verdict_seq", "lesson_index"], kind="stable")
    ctx = _verdict_context(store, chosen["verdict_hash"])
    out = chosen.merge(ctx, on="verdict_hash", how="left", validate="many_to_one")
    choices = _reference_choices(refs[refs["verdict_hash"].astype(str).isin(drawn)])
    out = out.assign(
        extractor=out["extractor_id"],
        reference_id=pd.array([pd.NA] * len(out), dtype="string"),
        annotator=annotator.strip() if annotator is not None else "",
        run_id=run_id,
        references=out["verdict_hash"].astype(str).map(choices).fillna(""),
    )
    for c in ("verdict", "goal", "summary", "checks", "text"):
        out[c] = out[c].fillna("").astype(str)
    out = out[list(MATCH_QUEUE_FIELDS)].reset_index(drop=True)
    out["lesson_index"] = out["lesson_index"].astype("int64")
    out["verdict_seq"] = out["verdict_seq"].astype("int64")
    order = population[population["verdict_hash"].astype(str).isin(drawn)]
    out.attrs["queue"] = {
        "kind": "match", "run_id": run_id, "extractor": str(info["extractor_id"]),
        "n_verdicts": take, "n_verdicts_asked": n_verdicts, "population": len(hashes),
        "inclusion_probability": take / len(hashes), "n_rows": len(out),
        "annotator": annotator,
        "random_state": random_state if not isinstance(random_state, np.random.Generator)
        else None,
        "verdicts": order["verdict_hash"].astype(str).tolist(),
    }
    return out
