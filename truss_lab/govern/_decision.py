"""The governed threshold decision: evidence in a signed journal entry, then a policy record.

:func:`propose_threshold` turns a :class:`~truss_lab.evaluate._choose.ThresholdChoice`
(or a run id, from which one is chosen) into a ``PolicyRecord(target=salience,
settings={"extraction_min_salience": t}, trust=unverified)``. The evidence —
which data (dataset hash, runs, the truth the lessons were judged by -- gold
labels, reference lessons or a judge -- and a hash of its rows), which objective,
which verdict split, the metrics on train and held-out verdicts with their
bootstrap intervals, and the interval of the threshold itself — goes into the
``evidence`` of :func:`~truss_lab.govern._policies.write_policy`, so the record's
provenance points at the one signed ``policy_record`` entry that holds it and
``verify_chain`` covers it (ADR 0011, invariant 8). The new record supersedes
the current salience record. Nothing applies it (invariant 6).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..core._canonical import json_safe
from ..core._errors import BadInputError, ConfigError, PolicyError
from ..core._models import Policy, PolicyRecord, PolicyTarget, Trust
from ..core._threshold import check_threshold
from ..evaluate._choose import ThresholdChoice
from ..evaluate._defaults import DEFAULT_OBJECTIVE
from ..evaluate._objective import Objective, objective_spec, parse_objective
from ..evaluate._runs import choose_run_threshold
from ..evaluate._truth import LOOSE_KEYWORDS, Truth, run_labels, scored_candidates, truth_of
from ..journal._crypto import SigningKey
from ..store._runs import run_info
from ..store._store import Store
from ._policies import write_policy

__all__ = [
    "EVIDENCE_KIND",
    "labels_hash",
    "propose_threshold",
    "references_hash",
    "threshold_evidence",
]

#: ``evidence["kind"]`` of a threshold decision.
EVIDENCE_KIND = "salience_threshold_decision"

def labels_hash(
    store: Store, run_ids: Sequence[str], *, labels: Any = None, score: str = "salience"
) -> tuple[str, int]:
    """``(sha256 hex, n_rows)`` over the label rows a decision on ``run_ids`` used.

    The rows are those of the labelled, untied valid candidates of the runs,
    written as Formats §3 CSV lines ``verdict_hash,extractor,lesson_index,useful,
    annotator`` (empty annotator when none), sorted, joined by ``\\n``.
    """
    keys = pd.concat(
        [scored_candidates(store, r, labels=labels, score=score)[
            ["verdict_hash", "extractor_id", "lesson_index"]] for r in run_ids],
        ignore_index=True,
    ).drop_duplicates()
    keys = keys.rename(columns={"extractor_id": "extractor"})
    lab = run_labels(store, labels)
    lab = lab.assign(
        verdict_hash=lab["verdict_hash"].astype(str),
        extractor=lab["extractor"].astype(str),
        lesson_index=pd.to_numeric(lab["lesson_index"]).astype("int64"),
    )
    keys["verdict_hash"] = keys["verdict_hash"].astype(str)
    keys["extractor"] = keys["extractor"].astype(str)
    keys["lesson_index"] = keys["lesson_index"].astype("int64")
    used = lab.merge(keys, on=["verdict_hash", "extractor", "lesson_index"], how="inner")
    ann = used["annotator"].astype("string").fillna("") if "annotator" in used else ""
    lines = (used["verdict_hash"] + "," + used["extractor"] + ","
             + used["lesson_index"].astype(str) + ","
             + pd.to_numeric(used["useful"]).astype("int64").astype(str) + "," + ann)
    text = "\n".join(sorted(lines.astype(str).tolist()))
    return hashlib.sha256(text.encode("utf-8")).hexdigest(), len(used)


def references_hash(
    store: Store, run_ids: Sequence[str], *, references: Any = None, score: str = "salience",
    truth: Truth | None = None,
) -> tuple[str, int]:
    """``(sha256 hex, n_rows)`` over the reference lessons a decision on ``run_ids``
    used: the rows (Formats §4) of the annotated verdicts the runs processed,
    each written as the JSON array ``[verdict_hash, reference_id, annotator, text,
    evidence]``, sorted, joined by ``\\n``. ``truth``: the references truth the
    decision was judged by (its rows and matches are reused; else ``references``
    is read and matched here)."""
    t = truth if truth is not None else Truth.resolve(store, "references", run_ids,
                                                       references=references)
    judged: set[str] = set()
    for r in run_ids:
        jr = t.judged(r, score=score)
        judged |= set(jr.verdicts)
    assert t.reference_rows is not None  # a references truth holds its rows
    refs = t.reference_rows
    used = refs[refs["verdict_hash"].astype(str).isin(judged)]
    # evidence is a list, or a numpy array when read from the table
    lines = sorted(json.dumps([str(v), str(i), str(a), str(x),
                               [str(e) for e in (ev if ev is not None else [])]],
                              ensure_ascii=False)
                   for v, i, a, x, ev in zip(used["verdict_hash"], used["reference_id"],
                                             used["annotator"], used["text"].fillna(""),
                                             used["evidence"], strict=True))
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest(), len(lines)


def _truth_evidence(store: Store, truth: Truth, run_ids: Sequence[str], *,
                    score: str) -> dict[str, Any]:
    """``truth``, ``truth_hash``, ``n_truth_rows`` and the labels keys of the evidence."""
    if truth.kind == "references":
        h, n = references_hash(store, run_ids, score=score, truth=truth)
        return {"truth": truth.name, "truth_hash": h, "n_truth_rows": n,
                "labels_hash": None, "n_label_rows": 0}
    h, n = labels_hash(store, run_ids, labels=truth.label_rows, score=score)
    return {"truth": truth.name, "truth_hash": h, "n_truth_rows": n,
            "labels_hash": h, "n_label_rows": n}


def _interval_map(table: pd.DataFrame | None, at: float | None = None) -> dict[str, Any]:
    """``{metric: [low, high]}`` from a bootstrap table row (the one at ``at`` if given)."""
    if table is None or table.empty:
        return {}
    if at is None:
        row = table.iloc[0]
    else:
        hit = np.flatnonzero(np.isclose(table["threshold"].to_numpy(), at, rtol=0, atol=1e-12))
        if not len(hit):
            return {}
        row = table.iloc[int(hit[0])]
    out = {}
    for col in table.columns:
        if col.endswith("_low"):
            m = col[: -len("_low")]
            out[m] = [row[col], row.get(f"{m}_high", np.nan)]
    return out


def threshold_evidence(
    store: Store,
    choice: ThresholdChoice,
    *,
    run_ids: Sequence[str],
    objective: Objective | None = None,
    score: str = "salience",
    truth: str | Truth = "labels",
    **deprecated: Any,
) -> dict[str, Any]:
    """The JSON-safe evidence of a threshold decision (what :func:`propose_threshold` signs).

    Keys: ``kind``, ``setting``, ``threshold``, ``threshold_interval``,
    ``objective`` (spec), ``score``, ``run_ids``, ``runs`` (id, extractor,
    dataset hash, status), ``dataset_hash`` (the runs' common dataset hash, or
    the sorted distinct hashes when they differ), ``truth`` (``labels``,
    ``references`` or the judge ``judge:<model>@<prompt>``), ``truth_hash`` and
    ``n_truth_rows`` (:func:`labels_hash` of the label rows used -- the judge's
    for a judge -- or :func:`references_hash`), ``labels_hash`` and
    ``n_label_rows`` (the same for labels and a judge; None and 0 for
    references), ``split``, ``train`` / ``test`` (metrics at the
    threshold; with cross-validation ``test`` is out-of-fold), ``train_intervals`` /
    ``test_intervals`` (bootstrap ``[low, high]`` per metric, the threshold held
    fixed) / ``procedure_intervals`` (the choice re-made on every replicate),
    ``fold_thresholds`` (cross-validation, else None), ``bootstrap`` (n_boot,
    confidence), ``correction`` (the correction of the automated truth the choice was
    made on: ``none`` or ``ppi (people answered for n of N verdicts)``) and
    ``people_verdicts`` (n; 0 without a correction).
    """
    runs = []
    for rid in run_ids:
        info = run_info(store, rid)
        if info.get("status") != "finished":
            raise BadInputError(
                f"run {rid!r} is {info.get('status')!r}; a decision needs finished runs",
                field="run_ids")
        runs.append({"run_id": rid, "extractor_id": info["extractor_id"],
                     "dataset_hash": info["dataset_hash"], "status": info["status"],
                     "scorer": info.get("scorer")})
    hashes = sorted({str(r["dataset_hash"]) for r in runs})
    t = Truth.resolve(store, truth_of(truth, deprecated, where="threshold_evidence"), run_ids)
    truth_keys = _truth_evidence(store, t, run_ids, score=score)
    boot = choice.bootstrap
    spec: dict[str, Any] = (objective_spec(objective) if objective is not None
                            else {"description": choice.objective})
    evidence = {
        "kind": EVIDENCE_KIND,
        "setting": "extraction_min_salience",
        "threshold": choice.threshold,
        "threshold_interval": (list(choice.threshold_interval)
                               if choice.threshold_interval is not None else None),
        "objective": spec,
        "score": score,
        "run_ids": list(run_ids),
        "runs": runs,
        "dataset_hash": hashes[0] if len(hashes) == 1 else hashes,
        **truth_keys,
        "split": dict(choice.split),
        "train": dict(choice.train),
        "test": dict(choice.test),
        "train_intervals": _interval_map(boot.table if boot is not None else None,
                                         at=choice.threshold),
        "test_intervals": _interval_map(choice.test_intervals),
        "procedure_intervals": _interval_map(choice.procedure_intervals),
        "fold_thresholds": (list(choice.fold_thresholds) if choice.folds is not None
                            else None),
        "bootstrap": ({"n_boot": boot.n_boot, "confidence": boot.confidence,
                       "random_state": boot.random_state, "by": "verdict"}
                      if boot is not None else None),
        "correction": str(choice.split.get("correction", "none")),
        "people_verdicts": int(choice.split.get("people_verdicts", 0)),
    }
    safe = json_safe(evidence)
    # The threshold is written exactly (a finite double is RFC 8785 safe): rounding
    # it could move the gate past a candidate's salience and change what it keeps.
    safe["threshold"] = float(choice.threshold)
    return safe


def propose_threshold(
    store: Store,
    choice_or_run: ThresholdChoice | str,
    key: SigningKey,
    *,
    run_ids: Sequence[str] | None = None,
    objective: str | Objective | None = None,
    score: str = "salience",
    policy_id: str = "extraction_min_salience",
    truth: str | Truth | None = None,
    **choose_options: Any,
) -> PolicyRecord:
    """Sign the evidence of a threshold choice into the journal and record it as an
    unverified ``salience`` policy that supersedes the current one.

    ``choice_or_run`` is a :class:`ThresholdChoice` (then ``run_ids`` names the
    runs it was computed from; ``objective``, if given, must be the one it used) or
    a run id (the choice is made here with :func:`choose_run_threshold`, the
    ``objective`` — default ``"f1"`` — and ``choose_options``: its split and
    bootstrap options, ``test_size``, ``random_state``, ``n_boot``, ``confidence``).
    Returns the new :class:`PolicyRecord`; its ``provenance.produced_by`` is the signed
    ``policy_record`` entry whose ``payload["evidence"]`` is
    :func:`threshold_evidence`, which records the truth the choice was judged by:
    ``truth`` (a :class:`~truss_lab.evaluate._truth.Truth` or a spec: labels,
    references, judge:NAME; default labels) for a choice made here, its correction the
    evidence's ``correction``; a given choice's own (``split["truth"]``), which
    ``truth`` must not contradict. The loose truth keywords (``labels``,
    ``references``, ``correct``, ...) among ``choose_options`` are still taken, with a
    DeprecationWarning. The entry is signed into the lab's chain. Nothing applies it.

    Parameters
    ----------
    store : Store
        The database (opened for writing).
    choice_or_run : truss_lab.evaluate.ThresholdChoice or str
        A choice made already, or the run to choose on.
    key : SigningKey
        The key that signs the lab-journal entry.
    run_ids : sequence of str, optional
        The runs a given choice was computed from.
    objective : str or Objective, optional
        The objective (default ``"f1"``); for a given choice, the one it used.
    score : str, default "salience"
        The candidates' score column the threshold applies to.
    policy_id : str, default "extraction_min_salience"
        The policy the record is a version of.
    truth : str or truss_lab.evaluate.Truth, optional
        The truth the choice is judged by: a Truth (its correction, the people's rows)
        or a spec (``labels``, ``references``, ``judge:NAME``).
    **choose_options : Any
        Options of :func:`choose_run_threshold` (``cv``, ``test_size``,
        ``random_state``, ``n_boot``, ``confidence``, ...); the deprecated loose truth
        keywords (``labels``, ``references``, ``correct``, ...) are taken from here.

    Returns
    -------
    truss_lab.core.PolicyRecord
        The new record: target ``salience``, trust ``unverified``, its provenance the
        signed entry.

    Raises
    ------
    BadInputError
        No threshold to propose (a choice that keeps nothing), an unknown run, or a
        ``truth`` or ``objective`` that contradicts a given choice.

    See Also
    --------
    choose_run_threshold : The choice alone.
    policy_history : Every version of the policy.
    verify_chain : Covers the signed entry.

    Examples
    --------
    >>> key = tl.SigningKey.generate("researcher-1")
    >>> record = tl.propose_threshold(store, "good", key, objective="f1", n_boot=0)
    >>> record.policy.target.value, record.trust.value, record.policy.settings
    ('salience', 'unverified', {'extraction_min_salience': 0.18})
    >>> tl.verify_chain(store).ok  # the lab journal's new entry verifies
    True
    """
    loose = {k: choose_options.pop(k) for k in LOOSE_KEYWORDS if k in choose_options}
    obj = parse_objective(objective) if objective is not None else None
    if isinstance(choice_or_run, str):
        obj = obj or parse_objective(DEFAULT_OBJECTIVE)
        run_ids = list(run_ids) if run_ids is not None else [choice_or_run]
        if choice_or_run not in run_ids:
            raise BadInputError(
                f"run_ids {run_ids} must include the run the choice is made on "
                f"({choice_or_run!r})", field="run_ids")
        used = Truth.resolve(store, truth_of(truth or "labels", loose,
                                             where="propose_threshold"), run_ids)
        choice = choose_run_threshold(store, choice_or_run, objective=obj, score=score,
                                      truth=used, **choose_options)
    elif isinstance(choice_or_run, ThresholdChoice):
        if not run_ids:
            raise BadInputError("run_ids must name the run(s) the choice was computed from",
                                field="run_ids")
        if choose_options:
            raise BadInputError(
                f"{', '.join(sorted(choose_options))}: options of a choice made here; "
                "a given ThresholdChoice was already made", field=next(iter(choose_options)))
        run_ids = list(run_ids)
        choice = choice_or_run
        if obj is not None and obj.describe() != choice.objective:
            raise BadInputError(
                f"objective {obj.describe()!r} is not the one the choice used "
                f"({choice.objective!r})", field="objective")
        made = str(choice.split.get("truth", "labels"))
        used = Truth.resolve(store, truth_of(truth or made, loose,
                                             where="propose_threshold"), run_ids)
        if used.name != made:
            raise BadInputError(f"truth {used.name!r} is not the one the choice was judged by "
                                f"({made!r})", field="truth")
    else:
        raise BadInputError(
            f"expected a ThresholdChoice or a run id, got {type(choice_or_run).__name__}",
            field="choice_or_run")
    try:
        check_threshold(choice.threshold, "threshold choice", name="threshold")
    except ConfigError:
        raise PolicyError(
            f"the choice gives threshold {choice.threshold!r} ({choice.objective}); "
            "expected a number in [0, 1], so nothing is proposed") from None
    evidence = threshold_evidence(store, choice, run_ids=run_ids, objective=obj,
                                  score=score, truth=used)
    policy = Policy(policy_id=policy_id, target=PolicyTarget.salience,
                    settings={"extraction_min_salience": float(choice.threshold)})
    return write_policy(store, policy, key, evidence=evidence, trust=Trust.unverified,
                        run_id=run_ids[0] if len(run_ids) == 1 else None)
