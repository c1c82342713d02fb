"""How far a judge (a model labelling lessons) agrees with people, before anyone relies on it.

On the lessons both labelled -- the human majority label (judges left out, ties
left out) and the judge's label -- :func:`judge_agreement` reports Cohen's kappa,
the judge's precision (of the lessons it calls useful, the share people call
useful), recall (of the lessons people call useful, the share it calls useful)
and raw accuracy, with percentile intervals from a bootstrap over verdicts
(lessons of one verdict are correlated, so verdicts are resampled whole).
"""

from __future__ import annotations

import html
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..core._errors import BadInputError
from ..store._runs import run_info
from ..store._store import Store
from ._agreement import CANDIDATE_KEY, majority_labels
from ._bootstrap import check_boot, percentile_interval, stream, verdict_codes, weight_chunks
from ._sweep import UndefinedMetricWarning
from ._truth import JUDGE_PREFIX, run_labels

__all__ = ["JudgeAgreement", "judge_agreement", "judge_names"]

_METRICS = ("kappa", "precision", "recall", "accuracy")


@dataclass(frozen=True, eq=False)
class JudgeAgreement:
    """A judge against the human majority on the lessons both labelled.

    ``table`` has one row per metric (kappa, precision, recall, accuracy) with
    ``value``, ``low`` and ``high`` (the verdict-bootstrap percentile interval at
    ``confidence``). ``counts``: ``n`` lessons both labelled, ``tp`` (both say
    useful), ``fp`` (judge useful, people not), ``fn``, ``tn``, ``verdicts``;
    ``n_judge_only`` and ``n_human_only`` lessons only one side labelled.
    """

    judge: str
    run_id: str | None
    table: pd.DataFrame
    counts: dict[str, int]
    confidence: float
    n_boot: int
    pairs: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)

    def __repr__(self) -> str:
        c = self.counts
        lines = [f"JudgeAgreement(judge={self.judge!r}, run={self.run_id!r}: {c['n']} lessons "
                 f"both labelled on {c['verdicts']} verdicts; tp={c['tp']} fp={c['fp']} "
                 f"fn={c['fn']} tn={c['tn']})"]
        pct = f"{self.confidence:.0%}"
        for name, r in self.table.iterrows():
            lines.append(f"  {name:<9} {r['value']:.3f}  [{r['low']:.3f}, {r['high']:.3f}] "
                         f"({pct}, {self.n_boot} verdict resamples)")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        head = html.escape(repr(self).splitlines()[0])
        return (f"<div><p><b>JudgeAgreement</b>: {head}</p>"
                f"{self.table.to_html(float_format=lambda v: f'{v:.3f}')}</div>")

    def to_dict(self) -> dict[str, Any]:
        return {"judge": self.judge, "run_id": self.run_id, "counts": self.counts,
                "confidence": self.confidence, "n_boot": self.n_boot,
                "metrics": {k: {c: float(v) for c, v in r.items()}
                            for k, r in self.table.iterrows()}}


def judge_names(store: Store) -> list[str]:
    """The judge annotators with label rows in the store."""
    return [r[0] for r in store.sql(
        "SELECT DISTINCT annotator FROM labels WHERE starts_with(annotator, ?) ORDER BY 1",
        [JUDGE_PREFIX]).fetchall()]


def _metrics(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray, tn: np.ndarray) -> np.ndarray:
    """(4, ...) kappa, precision, recall, accuracy of 2x2 counts (NaN where undefined)."""
    n = tp + fp + fn + tn
    with np.errstate(divide="ignore", invalid="ignore"):
        p_o = (tp + tn) / n
        p_e = ((tp + fp) * (tp + fn) + (fn + tn) * (fp + tn)) / (n * n)
        kappa = np.where(p_e < 1.0, (p_o - p_e) / (1.0 - p_e), np.nan)
        precision = tp / (tp + fp)
        recall = tp / (tp + fn)
    return np.stack([kappa, precision, recall, p_o])


def judge_agreement(
    store: Store,
    judge: str,
    run_id: str | None = None,
    *,
    labels: Any = None,
    n_boot: int = 1000,
    confidence: float = 0.95,
    random_state: Any = 0,
) -> JudgeAgreement:
    """Cohen's kappa, precision and recall of ``judge`` against the human majority.

    ``judge``: the annotator name (``judge:<model>@<prompt>``; the ``judge:``
    prefix may be left out). ``run_id`` limits it to that run's extractor and
    verdicts. ``labels``: §3 rows (default: the store's labels table) holding
    both the judge's and the people's rows. Lessons with a tied or no human
    label, or no judge label, are left out (and counted). Raises
    :class:`BadInputError` when no lesson has both.
    """
    check_boot(n_boot, confidence)
    name = judge if judge.startswith(JUDGE_PREFIX) else JUDGE_PREFIX + judge
    lab = run_labels(store, labels, include_judges=True)
    if "annotator" not in lab.columns:
        lab = lab.assign(annotator=None)
    is_judge = lab["annotator"].astype("string").fillna("") == name
    j = lab[is_judge.to_numpy(dtype=bool)]
    humans = run_labels(store, lab)  # the same rows, judges left out
    if run_id is not None:
        run_info(store, run_id)  # an unknown run is an error naming the recent ones
        keys = store.sql("SELECT DISTINCT verdict_hash, extractor_id AS extractor, lesson_index "
                         "FROM candidates WHERE run_id = ?", [run_id]).df()
        j = j.merge(keys, on=CANDIDATE_KEY, how="inner") if len(j) else j
        humans = humans.merge(keys, on=CANDIDATE_KEY, how="inner") if len(humans) else humans
    if j.empty:
        known = ", ".join(judge_names(store)) or "none"
        raise BadInputError(f"no label rows of judge {name!r} (judges in the store: {known}); "
                            "label a run with `truss-lab judge`", field="judge")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        hm = majority_labels(humans) if len(humans) else None
        jm = majority_labels(j)
    if hm is None:
        raise BadInputError("no human labels to compare the judge with", field="labels")
    pairs = hm[hm["label"].notna()][[*CANDIDATE_KEY, "label"]].merge(
        jm[jm["label"].notna()][[*CANDIDATE_KEY, "label"]], on=CANDIDATE_KEY,
        suffixes=("_human", "_judge"))
    if pairs.empty:
        raise BadInputError(f"no lesson has both a human majority label and a label of {name!r}",
                            field="judge")
    h = pairs["label_human"].to_numpy(dtype=np.int64)
    g = pairs["label_judge"].to_numpy(dtype=np.int64)
    cell = np.stack([(g == 1) & (h == 1), (g == 1) & (h == 0), (g == 0) & (h == 1),
                     (g == 0) & (h == 0)]).astype(np.float64)
    codes, verdicts = verdict_codes(pairs["verdict_hash"].to_numpy(dtype=object))
    per_v = np.stack([np.bincount(codes, weights=c, minlength=len(verdicts)) for c in cell])
    values = _metrics(*per_v.sum(axis=1))
    reps = []
    for w in weight_chunks(n_boot, len(verdicts), stream(random_state, "bootstrap")):
        counts = w.astype(np.float64) @ per_v.T  # (replicates, 4)
        reps.append(_metrics(*counts.T).T)
    low, high = percentile_interval(np.concatenate(reps), confidence)
    table = pd.DataFrame({"value": values, "low": low, "high": high}, index=list(_METRICS))
    table.index.name = "metric"
    tp, fp, fn, tn = (int(x) for x in per_v.sum(axis=1))
    counted = {
        "n": len(pairs), "tp": tp, "fp": fp, "fn": fn, "tn": tn, "verdicts": len(verdicts),
        "n_judge_only": int(len(jm) - len(pairs)), "n_human_only": int(
            hm["label"].notna().sum() - len(pairs)),
    }
    return JudgeAgreement(judge=name, run_id=run_id, table=table, counts=counted,
                          confidence=confidence, n_boot=n_boot, pairs=pairs)
