"""Evaluation over the store: a run's candidates joined to gold labels.

The maths lives in pure modules (:mod:`truss_lab.evaluate._sweep`, ``_choose``,
``_calibration``, ``_bootstrap``, ``_compare``); this module only reads the
store and hands arrays to them.
"""

from __future__ import annotations

import html
import os
import warnings
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..core._errors import BadInputError
from ..score._salience import IsotonicCalibrator, PlattCalibrator
from ..store._store import Store
from ._agreement import annotator_agreement, label_coverage, majority_labels
from ._calibration import (
    brier_score,
    expected_calibration_error,
    max_calibration_error,
    reliability_table,
)
from ._choose import ThresholdChoice, choose_threshold, split_by_verdict
from ._compare import ComparisonResult, compare_extractors
from ._objective import Objective, make_objective
from ._sweep import UndefinedMetricWarning, sweep

__all__ = [
    "CalibrationReport",
    "LabelReport",
    "calibration_run",
    "choose_run_threshold",
    "compare_runs",
    "demo_evaluation",
    "label_report",
    "labelled_candidates",
    "objective_spec",
    "parse_objective",
    "run_info",
    "run_labels",
    "scored_candidates",
    "sweep_run",
]


def run_labels(store: Store, labels: Any = None) -> pd.DataFrame:
    """Gold labels as a FORMATS.md §3 frame: from the store's labels table
    (default), a CSV path, or a DataFrame."""
    if labels is None:
        df = store.sql(
            "SELECT verdict_hash, extractor, lesson_index, useful, "
            "NULLIF(annotator, '') AS annotator FROM labels"
        ).df()
    elif isinstance(labels, pd.DataFrame):
        df = labels
    elif isinstance(labels, str | os.PathLike):
        from ..ingest._labels import read_labels

        df, errors = read_labels(labels)
        if errors:
            raise BadInputError(
                f"{len(errors)} bad label line(s); the first: {errors[0]}", source=str(labels)
            )
    else:
        raise BadInputError(f"labels must be None, a path or a DataFrame, got {type(labels)}")
    return df


def labelled_candidates(
    store: Store,
    run_id: str,
    *,
    labels: Any = None,
    valid_only: bool = True,
) -> pd.DataFrame:
    """The candidates of ``run_id`` with their majority gold label.

    One row per candidate (valid ones only by default), ordered by verdict
    seq and lesson_index, with the candidates columns plus ``label`` (nullable
    Int8: 1 useful, 0 not, ``<NA>`` when unlabelled or tied), ``tie``,
    ``n_annotators`` and ``labelled`` (bool). Use ``df[df.labelled]`` for the
    rows a sweep can score.
    """
    run = store.sql("SELECT run_id FROM extraction_runs WHERE run_id = ?", [run_id]).fetchall()
    if not run:
        known = [r[0] for r in store.sql(
            "SELECT run_id FROM extraction_runs ORDER BY started_at DESC LIMIT 10").fetchall()]
        raise BadInputError(
            f"no extraction run {run_id!r}; recent runs: {', '.join(known) or '(none)'}",
            field="run_id",
        )
    cands = store.sql(
        "SELECT * FROM candidates WHERE run_id = ?"
        + (" AND valid" if valid_only else "")
        + " ORDER BY verdict_seq, lesson_index",
        [run_id],
    ).df()
    lab = run_labels(store, labels)
    if len(lab):
        maj = majority_labels(lab).rename(columns={"extractor": "extractor_id"})
    else:
        maj = pd.DataFrame({
            "verdict_hash": pd.Series([], dtype=object),
            "extractor_id": pd.Series([], dtype=object),
            "lesson_index": pd.Series([], dtype="int64"),
            "label": pd.array([], dtype="Int8"), "n_annotators": pd.Series([], dtype="int64"),
            "n_positive": pd.Series([], dtype="int64"), "tie": pd.Series([], dtype=bool),
        })
    cands["lesson_index"] = cands["lesson_index"].astype("int64")
    maj["lesson_index"] = maj["lesson_index"].astype("int64")
    on = ["verdict_hash", "extractor_id", "lesson_index"]
    out = cands.merge(maj[[*on, "label", "n_annotators", "tie"]], on=on, how="left",
                      validate="one_to_one")
    out["n_annotators"] = out["n_annotators"].fillna(0).astype("int64")
    out["tie"] = out["tie"].fillna(False).astype(bool)
    out["label"] = out["label"].astype("Int8")
    out["labelled"] = out["label"].notna().to_numpy()
    return out


# --------------------------------------------------------------------------- objectives


def parse_objective(spec: str | Objective) -> Objective:
    """An :class:`Objective` from a CLI-style spec.

    ``f1``; ``fbeta:B``; ``precision:P`` (max recall with precision >= P);
    ``budget:K`` (max recall with at most K kept lessons per verdict);
    ``cost:FP,FN`` (min FP*fp + FN*fn). Objective objects pass through.
    """
    if isinstance(spec, Objective):
        return spec
    if not isinstance(spec, str):
        raise BadInputError(f"objective must be a string, got {type(spec).__name__}",
                            field="objective")
    kind, _, arg = spec.strip().partition(":")
    expected = "expected f1, fbeta:B, precision:P, budget:K or cost:FP,FN"
    try:
        if kind == "f1" and not arg:
            return make_objective("f1")
        if kind == "fbeta" and arg:
            return make_objective("fbeta", beta=float(arg))
        if kind in ("precision", "precision_floor") and arg:
            return make_objective("precision_floor", min_precision=float(arg))
        if kind == "budget" and arg:
            return make_objective("budget", max_per_verdict=float(arg))
        if kind == "cost" and arg:
            fp, sep, fn = arg.partition(",")
            if sep:
                return make_objective("cost", cost_fp=float(fp), cost_fn=float(fn))
    except ValueError:
        raise BadInputError(f"bad number in objective {spec!r}; {expected}",
                            field="objective") from None
    raise BadInputError(f"unknown objective {spec!r}; {expected}", field="objective")


def objective_spec(obj: Objective) -> dict[str, Any]:
    """The fields of ``obj`` that matter for its kind (JSON-ready)."""
    spec: dict[str, Any] = {"kind": obj.kind, "description": obj.describe()}
    if obj.kind == "fbeta":
        spec["beta"] = obj.beta
    elif obj.kind == "precision_floor":
        spec["min_precision"] = obj.min_precision
    elif obj.kind == "budget":
        spec["max_per_verdict"] = obj.max_per_verdict
    elif obj.kind == "cost":
        spec["cost_fp"], spec["cost_fn"] = obj.cost_fp, obj.cost_fn
    return spec


# --------------------------------------------------------------------------- store reads


def run_info(store: Store, run_id: str) -> dict[str, Any]:
    """The extraction_runs row of ``run_id`` as a dict (BadInputError naming recent runs)."""
    cur = store.sql("SELECT * FROM extraction_runs WHERE run_id = ?", [run_id])
    rows = cur.fetchall()
    if not rows:
        _missing_run(store, run_id)
    names = [d[0] for d in cur.description]
    return dict(zip(names, rows[0], strict=True))


def _missing_run(store: Store, run_id: str) -> None:
    known = [r[0] for r in store.sql(
        "SELECT run_id FROM extraction_runs ORDER BY started_at DESC LIMIT 10").fetchall()]
    raise BadInputError(
        f"no extraction run {run_id!r}; recent runs: {', '.join(known) or '(none)'}",
        field="run_id",
    )


def _score_values(store: Store, run_id: str, df: pd.DataFrame, score: str) -> np.ndarray:
    """The score column ``score`` of ``df``: a candidates column, or a scorer in ``scores``."""
    if not isinstance(score, str) or not score:
        raise BadInputError(f"score must be a column or scorer name, got {score!r}",
                            field="score")
    if score in df.columns and score not in _NOT_SCORES:
        try:
            return df[score].to_numpy(dtype=np.float64, na_value=np.nan)
        except (TypeError, ValueError):
            raise BadInputError(f"column {score!r} is not numeric", field="score") from None
    found = store.sql(
        "SELECT candidate_id, score, scorer FROM scores WHERE run_id = ? "
        "AND (scorer = ? OR split_part(scorer, '@', 1) = ?)",
        [run_id, score, score],
    ).df()
    if found.empty:
        have = [r[0] for r in store.sql(
            "SELECT DISTINCT scorer FROM scores WHERE run_id = ? ORDER BY 1", [run_id]).fetchall()]
        raise BadInputError(
            f"no score {score!r} for run {run_id!r}: expected a numeric candidates column "
            f"(salience, score) or a scorer in the scores table ({', '.join(have) or 'none'})",
            field="score",
        )
    if found["scorer"].nunique() > 1:
        raise BadInputError(
            f"score {score!r} matches several scorers ({', '.join(sorted(found.scorer.unique()))});"
            " give name@version", field="score")
    by_id = found.set_index("candidate_id")["score"]
    return df["candidate_id"].map(by_id).to_numpy(dtype=np.float64, na_value=np.nan)


_NOT_SCORES = frozenset({"candidate_id", "run_id", "verdict_hash", "extractor_id", "text",
                         "evidence", "drop_reason", "scorer", "entry_id", "label", "tie",
                         "labelled"})


def scored_candidates(
    store: Store, run_id: str, *, labels: Any = None, score: str = "salience"
) -> pd.DataFrame:
    """The labelled, non-tied valid candidates of ``run_id`` that a sweep scores.

    Columns: ``candidate_id, verdict_seq, verdict_hash, extractor_id,
    lesson_index, y`` (uint8 majority label) and ``s`` (the ``score`` values;
    NaN = unscored, never kept). Ordered by verdict seq and lesson index.
    """
    df = labelled_candidates(store, run_id, labels=labels)
    s = _score_values(store, run_id, df, score)
    keep = df["labelled"].to_numpy()
    out = df.loc[keep, ["candidate_id", "verdict_seq", "verdict_hash", "extractor_id",
                        "lesson_index"]].reset_index(drop=True)
    out["y"] = df.loc[keep, "label"].to_numpy(dtype=np.uint8)
    out["s"] = s[keep]
    if out.empty:
        raise BadInputError(
            f"run {run_id!r} has no labelled, untied valid candidates to evaluate "
            "(load gold labels with `truss-lab ingest labels`, or pass labels=)",
            field="labels",
        )
    return out


# --------------------------------------------------------------------------- labels


@dataclass(frozen=True, eq=False)
class LabelReport:
    """Gold-label coverage of a run's candidates and annotator agreement.

    ``coverage`` is :func:`~truss_lab.evaluate._agreement.label_coverage` (one row per
    extractor: n_candidates, n_labelled, n_ties, n_unlabelled, n_orphan_labels,
    coverage); ``agreement`` is :func:`~truss_lab.evaluate._agreement.annotator_agreement`
    (one row per annotator pair: n_common, raw_agreement, kappa).
    """

    run_id: str | None
    coverage: pd.DataFrame
    agreement: pd.DataFrame
    n_label_rows: int

    @property
    def n_ties(self) -> int:
        """Candidates annotated but tied (no majority label)."""
        return int(self.coverage["n_ties"].sum()) if len(self.coverage) else 0

    def __repr__(self) -> str:
        lines = [f"LabelReport(run={self.run_id!r}, {self.n_label_rows} label rows, "
                 f"{self.n_ties} ties)"]
        for r in self.coverage.itertuples():
            lines.append(f"  {r.extractor}: {r.n_labelled}/{r.n_candidates} labelled "
                         f"({r.coverage:.1%}), {r.n_ties} ties, {r.n_unlabelled} unlabelled, "
                         f"{r.n_orphan_labels} orphan labels")
        for r in self.agreement.itertuples():
            lines.append(f"  kappa({r.annotator_a}, {r.annotator_b}) = {r.kappa:.3f} "
                         f"on {r.n_common} candidates (raw agreement {r.raw_agreement:.3f})")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        head = html.escape(f"run {self.run_id}: {self.n_label_rows} label rows, "
                           f"{self.n_ties} ties")
        return (f"<div><p><b>LabelReport</b>: {head}</p>"
                f"{self.coverage.to_html(index=False, float_format=_fmt)}"
                f"{self.agreement.to_html(index=False, float_format=_fmt)}</div>")


def _fmt(v: float) -> str:
    return f"{v:.4g}"


def label_report(
    store: Store, run_id: str | None = None, labels: Any = None, *, valid_only: bool = True
) -> LabelReport:
    """Coverage of the run's candidates by gold labels (ties counted) and Cohen's kappa
    per annotator pair. Without ``run_id``: every candidate of every run, all labels."""
    lab = run_labels(store, labels)
    where, params = ("run_id = ?", [run_id]) if run_id is not None else ("TRUE", [])
    if run_id is not None:
        run_info(store, run_id)
    cands = store.sql(
        "SELECT DISTINCT verdict_hash, extractor_id AS extractor, lesson_index FROM candidates "
        f"WHERE {where}" + (" AND valid" if valid_only else ""), params,
    ).df()
    if run_id is not None and len(lab):
        extractors = set(cands["extractor"]) or {
            str(run_info(store, run_id)["extractor_id"])}
        lab = lab[lab["extractor"].astype(str).isin(extractors)]
    if len(lab):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            coverage = label_coverage(cands, lab)
            agreement = annotator_agreement(lab)
    else:
        coverage = pd.DataFrame(
            {"extractor": sorted(set(cands["extractor"]))}
        )
        coverage["n_candidates"] = [int((cands["extractor"] == e).sum())
                                    for e in coverage["extractor"]]
        for c in ("n_labelled", "n_ties", "n_orphan_labels"):
            coverage[c] = 0
        coverage["n_unlabelled"] = coverage["n_candidates"]
        coverage["coverage"] = 0.0
        agreement = pd.DataFrame(columns=["annotator_a", "annotator_b", "n_common",
                                          "raw_agreement", "kappa"])
    return LabelReport(run_id=run_id, coverage=coverage, agreement=agreement,
                       n_label_rows=len(lab))


# --------------------------------------------------------------------------- sweep / choice


def sweep_run(
    store: Store,
    run_id: str,
    *,
    labels: Any = None,
    score: str = "salience",
    thresholds: Any = None,
) -> pd.DataFrame:
    """:func:`~truss_lab.evaluate._sweep.sweep` of one run on its labelled, untied valid candidates,
    grouped by verdict (so ``kept_per_verdict`` is there). ``score`` names the
    candidates column (``salience``, ``score``) or a scorer in the scores table."""
    d = scored_candidates(store, run_id, labels=labels, score=score)
    return sweep(d["y"].to_numpy(), d["s"].to_numpy(), groups=d["verdict_hash"].to_numpy(),
                 thresholds=thresholds)


def choose_run_threshold(
    store: Store,
    run_id: str,
    *,
    objective: str | Objective = "f1",
    labels: Any = None,
    score: str = "salience",
    test_size: float | int = 0.3,
    random_state: Any = 0,
    n_boot: int = 1000,
    confidence: float = 0.95,
) -> ThresholdChoice:
    """:func:`~truss_lab.evaluate._choose.choose_threshold` on one run: the threshold is chosen on
    training verdicts and its metrics (with verdict-bootstrap intervals when
    ``n_boot > 0``) are reported on held-out verdicts. ``objective`` is an
    :class:`Objective` or a spec for :func:`parse_objective` (``"precision:0.8"``)."""
    obj = parse_objective(objective)
    d = scored_candidates(store, run_id, labels=labels, score=score)
    return choose_threshold(
        d["y"].to_numpy(), d["s"].to_numpy(), d["verdict_hash"].to_numpy(), objective=obj,
        test_size=test_size, random_state=random_state, n_boot=n_boot, confidence=confidence,
    )


# --------------------------------------------------------------------------- calibration


_CAL_COLUMNS = ["scores", "verdicts", "candidates", "ece", "mce", "brier"]


@dataclass(frozen=True, eq=False)
class CalibrationReport:
    """Calibration of a run's scores before and after a fitted calibrator.

    The calibrator is fitted on the *training* verdicts of a verdict split and
    applied to the held-out verdicts only; ``summary`` has one row per
    evaluated score (``before``: the raw score on the held-out verdicts;
    ``after``: the calibrated one; ``after_in_sample``: only with the explicit
    ``allow_in_sample=True``) and columns ``verdicts, candidates, ece, mce,
    brier``. ``tables`` maps the same names to reliability tables.
    ``fit_verdicts``/``eval_verdicts`` are the two disjoint verdict sets.
    """

    run_id: str
    score: str
    method: str | None
    summary: pd.DataFrame
    tables: dict[str, pd.DataFrame]
    split: dict[str, Any]
    fit_verdicts: frozenset[str]
    eval_verdicts: frozenset[str]
    calibrator: Any = field(default=None, repr=False)
    n_bins: int = 10
    strategy: str = "uniform"

    def __repr__(self) -> str:
        lines = [f"CalibrationReport(run={self.run_id!r}, score={self.score!r}, "
                 f"method={self.method!r}, fit on {len(self.fit_verdicts)} verdicts, "
                 f"evaluated on {len(self.eval_verdicts)} held-out verdicts)"]
        for name, r in self.summary.iterrows():
            lines.append(f"  {name}: ECE={r['ece']:.4f} MCE={r['mce']:.4f} "
                         f"Brier={r['brier']:.4f} ({int(r['candidates'])} candidates)")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        head = html.escape(repr(self).splitlines()[0])
        return (f"<div><p><b>CalibrationReport</b>: {head}</p>"
                f"{self.summary.to_html(float_format=_fmt)}</div>")


def _calib_row(y: np.ndarray, p: np.ndarray, verdicts: np.ndarray, n_bins: int,
               strategy: Any) -> tuple[dict[str, float], pd.DataFrame]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        table = reliability_table(y, p, n_bins=n_bins, strategy=strategy)
        row = {
            "verdicts": float(len(pd.unique(verdicts))),
            "candidates": float(len(y)),
            "ece": expected_calibration_error(y, p, n_bins=n_bins, strategy=strategy),
            "mce": max_calibration_error(y, p, n_bins=n_bins, strategy=strategy),
            "brier": brier_score(y, p),
        }
    return row, table


def calibration_run(
    store: Store,
    run_id: str,
    *,
    method: Literal["isotonic", "platt"] | None = "isotonic",
    n_bins: int = 10,
    strategy: Literal["uniform", "quantile"] = "uniform",
    test_size: float | int = 0.3,
    random_state: Any = 0,
    labels: Any = None,
    score: str = "salience",
    allow_in_sample: bool = False,
) -> CalibrationReport:
    """Reliability, ECE, MCE and Brier of a run's score before and after calibration.

    Verdicts are split with :func:`~truss_lab.evaluate._choose.split_by_verdict`; the
    ``method`` calibrator (isotonic or Platt) is fitted on the training
    verdicts and scores the held-out verdicts only. ``method=None`` reports the
    raw score on the held-out verdicts. ``allow_in_sample=True`` adds an
    ``after_in_sample`` row (the calibrator scoring its own fitting verdicts,
    optimistic by construction) — never computed without that opt-in.
    Candidates without a score (NaN) are left out.
    """
    if method not in ("isotonic", "platt", None):
        raise BadInputError(f"method must be 'isotonic', 'platt' or None, got {method!r}",
                            field="method")
    d = scored_candidates(store, run_id, labels=labels, score=score)
    d = d[~np.isnan(d["s"].to_numpy())].reset_index(drop=True)
    g = d["verdict_hash"].to_numpy(dtype=object)
    y, s = d["y"].to_numpy(), d["s"].to_numpy()
    train_idx, test_idx = split_by_verdict(g, test_size=test_size, random_state=random_state)
    fit_v = frozenset(str(v) for v in pd.unique(g[train_idx]))
    eval_v = frozenset(str(v) for v in pd.unique(g[test_idx]))
    rows: dict[str, dict[str, float]] = {}
    tables: dict[str, pd.DataFrame] = {}
    s_te = s[test_idx]
    if np.all((s_te >= 0) & (s_te <= 1)):
        rows["before"], tables["before"] = _calib_row(y[test_idx], s_te, g[test_idx], n_bins,
                                                      strategy)
    else:  # a raw score outside [0, 1] is not a probability: only its calibration is judged
        rows["before"] = dict.fromkeys(["verdicts", "candidates", "ece", "mce", "brier"], np.nan)
    cal: Any = None
    if method is not None:
        cal = (IsotonicCalibrator() if method == "isotonic" else PlattCalibrator())
        cal.fit(s[train_idx], y[train_idx], verdict_hash=g[train_idx])
        # The calibrator checks the verdicts itself: scoring a fitting verdict raises.
        p = cal.predict(s_te, verdict_hash=g[test_idx])
        rows["after"], tables["after"] = _calib_row(y[test_idx], p, g[test_idx], n_bins,
                                                    strategy)
        if allow_in_sample:
            p_in = cal.predict(s[train_idx], verdict_hash=g[train_idx], allow_in_sample=True)
            rows["after_in_sample"], tables["after_in_sample"] = _calib_row(
                y[train_idx], p_in, g[train_idx], n_bins, strategy)
    summary = pd.DataFrame.from_dict(rows, orient="index")
    summary = summary.astype({"verdicts": "Int64", "candidates": "Int64"})
    summary.index.name = "scores"
    split = {"by": "verdict", "test_size": test_size, "random_state": random_state,
             "n_train_verdicts": len(fit_v), "n_test_verdicts": len(eval_v),
             "n_train_candidates": len(train_idx), "n_test_candidates": len(test_idx)}
    return CalibrationReport(
        run_id=run_id, score=score, method=method, summary=summary, tables=tables,
        split=split, fit_verdicts=fit_v, eval_verdicts=eval_v, calibrator=cal,
        n_bins=n_bins, strategy=strategy,
    )


# --------------------------------------------------------------------------- comparison


def compare_runs(
    store: Store,
    run_a: str,
    run_b: str,
    *,
    threshold: Any = 0.7,
    threshold_b: Any = None,
    labels: Any = None,
    score: str = "salience",
    n_boot: int = 1000,
    confidence: float = 0.95,
    random_state: Any = 0,
) -> ComparisonResult:
    """:func:`~truss_lab.evaluate._compare.compare_extractors` of two runs on their labelled,
    untied valid candidates. The paired analysis uses the verdicts both runs
    processed (``run_verdicts``); verdicts present in one run only are listed
    in the result (``only_in_a`` / ``only_in_b``), never dropped silently."""
    frames, processed = [], []
    for rid in (run_a, run_b):
        d = scored_candidates(store, rid, labels=labels, score=score)
        frames.append(pd.DataFrame({"verdict_hash": d["verdict_hash"].astype(str),
                                    "salience": d["s"], "label": d["y"]}))
        # Every verdict the run processed, so one where the extractor proposed
        # nothing counts as "kept nothing" rather than "absent from the run".
        processed.append([r[0] for r in store.sql(
            "SELECT verdict_hash FROM run_verdicts WHERE run_id = ?", [rid]).fetchall()])
    return compare_extractors(
        frames[0], frames[1], threshold=threshold, threshold_b=threshold_b, n_boot=n_boot,
        confidence=confidence, random_state=random_state, names=(run_a, run_b),
        verdicts_a=processed[0], verdicts_b=processed[1],
    )


# --------------------------------------------------------------------------- text and plots

#: Thresholds at which text summaries show a sweep.
SUMMARY_THRESHOLDS = (0.3, 0.5, 0.6, 0.7, 0.8, 0.9)


def format_sweep(df: pd.DataFrame) -> str:
    """A fixed-width text table of a sweep frame (threshold, kept, precision, recall, F1,
    kept per verdict)."""
    cols = [c for c in ("threshold", "kept", "tp", "fp", "precision", "recall", "f1",
                        "kept_per_verdict") if c in df.columns]
    head = "  ".join(f"{c:>16}" if c == "kept_per_verdict" else f"{c:>9}" for c in cols)
    lines = [head]
    for r in df[cols].itertuples(index=False):
        cells = []
        for c, v in zip(cols, r, strict=True):
            width = 16 if c == "kept_per_verdict" else 9
            cells.append(f"{int(v):>{width}d}" if c in ("kept", "tp", "fp")
                         else f"{v:>{width}.3f}")
        lines.append("  ".join(cells))
    return "\n".join(lines)


def format_choice(choice: ThresholdChoice) -> str:
    """The chosen threshold, its bootstrap interval and its train / held-out metrics."""
    sp = choice.split
    ci = ""
    if choice.threshold_interval is not None:
        lo, hi = choice.threshold_interval
        ci = f"  (bootstrap interval of the choice [{lo:.3f}, {hi:.3f}])"
    lines = [f"chosen threshold: {choice.threshold:.4g}{ci}",
             f"objective: {choice.objective}; split by verdict: {sp['n_train_verdicts']} train / "
             f"{sp['n_test_verdicts']} held-out verdicts (test_size={sp['test_size']}, "
             f"random_state={sp['random_state']})"]
    iv = choice.test_intervals.iloc[0] if choice.test_intervals is not None else None
    for m in ("precision", "recall", "f1", "kept_per_verdict"):
        tr, te = choice.train.get(m, np.nan), choice.test.get(m, np.nan)
        band = ""
        if iv is not None and f"{m}_low" in iv.index:
            band = f" [{iv[f'{m}_low']:.3f}, {iv[f'{m}_high']:.3f}]"
        lines.append(f"  {m:<17} train {tr:.3f}   held-out {te:.3f}{band}")
    return "\n".join(lines)


def _figure(ncols: int = 1) -> tuple[Any, Any]:
    # A bare Figure renders through Agg without pyplot, so no display (and no
    # global backend switch) is ever needed to write a PNG.
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("plots need matplotlib: pip install 'truss_lab[notebook]'") from exc
    fig = Figure(figsize=(6.5 * ncols, 4.5), layout="constrained")
    return fig, fig.subplots(1, ncols)


def save_sweep_plot(df: pd.DataFrame, path: Any, *, threshold: float | None = None,
                    name: str | None = None) -> str:
    """Draw a :class:`~truss_lab.faces._display.SweepDisplay` of ``df`` into a PNG at ``path``."""
    from ..faces._display import SweepDisplay

    fig, ax = _figure()
    SweepDisplay(df, threshold=threshold, name=name).plot(ax=ax)
    fig.savefig(path, dpi=100)
    return str(path)


def save_calibration_plot(report: CalibrationReport, path: Any) -> str:
    """Reliability diagrams of a :class:`CalibrationReport` (before / after) into a PNG."""
    from ..faces._display import CalibrationDisplay

    names = list(report.tables)
    fig, axes = _figure(len(names) or 1)
    axes = np.atleast_1d(axes)
    for ax, name in zip(axes, names, strict=False):
        label = f"{report.score} ({name})" if name == "before" else f"{report.method} ({name})"
        CalibrationDisplay(report.tables[name], name=label).plot(ax=ax)
        ece = report.summary.loc[name, "ece"]
        ax.set_title(f"{report.run_id}: {name}, ECE {ece:.3f}")
    fig.savefig(path, dpi=100)
    return str(path)


def save_comparison_plot(result: ComparisonResult, path: Any, *, row: int = 0) -> str:
    """A :class:`~truss_lab.faces._display.ComparisonDisplay` of ``result`` into a PNG."""
    from ..faces._display import ComparisonDisplay

    fig, ax = _figure()
    ComparisonDisplay(result, row=row).plot(ax=ax)
    fig.savefig(path, dpi=100)
    return str(path)


def demo_evaluation(
    store: Store,
    run_ids: Any,
    out_dir: Any,
    *,
    objective: str | Objective = "f1",
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
    from pathlib import Path

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
        plots.append(save_sweep_plot(full, out / f"sweep_{_safe(rid)}.png",
                                     threshold=choice.threshold, name=rid))
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


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)
