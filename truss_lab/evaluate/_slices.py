"""Where a run fails: per-slice metrics with intervals, tests against the rest under
false-discovery control, and the threshold each slice would choose on its own.

A slice is a set of the verdicts a run is judged on, by their journal payloads
(:mod:`truss_lab.store._slices`: outcome, tag, check, contract, any payload field, or
a predicate). For each slice, at one threshold:

- **metrics and intervals**: precision, recall, F1 and kept per verdict of the run
  judged on the slice's verdicts alone, each with its verdict-bootstrap interval
  (:func:`~truss_lab.evaluate._runs.bootstrap_judged`: the run's truth and correction,
  the same bootstrap as every other face);
- **a test against the rest**: a verdict-level *permutation* test of the difference of
  one metric (``test``, default F1) between the slice and the other verdicts. Why a
  permutation and not the bootstrap: under the null hypothesis that which verdicts are
  in the slice says nothing about how the run did on them (the slice's verdicts are
  exchangeable with the rest's), every re-draw of a slice of the same size from all the
  verdicts is as likely as the observed one, so the p-value
  ``(1 + #{|d*| >= |d|}) / (1 + n_perm)`` is valid at any slice size; a bootstrap
  p-value rests on the percentile interval's approximation, which is poor on the small
  slices an analysis of many slices has (evaluate/_bootstrap.py). A permutation whose
  metric is undefined (no lesson kept, no positive) counts as extreme: conservative.
  The test reads each verdict's counts at the threshold; under a correction, the
  classic (lambda = 1) prediction-powered counts of each verdict (the automated count,
  plus 1/inclusion probability times the people-minus-automated difference on a
  verdict people answered for), whose sums over a slice are its domain estimate;
- **q-values**: Benjamini-Hochberg over every slice tested (:func:`bh_qvalues`); a slice
  with q below ``q_level`` (0.05) is a *discovery*. BH controls the false discovery rate
  for independent or positively dependent tests; slices of one run share verdicts (a
  verdict has several tags and checks) and the rest of one slice holds the others, so
  ``scripts/slice_false_discoveries.py`` measures the rate on a simulator made for it;
- **its own threshold**: :func:`~truss_lab.evaluate._runs.choose_judged` on the slice's
  verdicts alone (the choice every face makes, with its bootstrap interval), beside the
  whole run's: whether one threshold fits every slice.

A slice of fewer than :data:`~truss_lab.evaluate._bootstrap.SMALL_SAMPLE_VERDICTS`
verdicts is listed with its counts and metrics, never tested, bootstrapped or given a
threshold of its own (``tested`` False, ``why`` says so); so is one whose tested metric
is undefined on it or on the rest.
"""

from __future__ import annotations

import html
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..core._errors import BadInputError
from ..core._threads import blas_limited
from ..core._threshold import DEFAULT_MIN_SALIENCE, check_threshold
from ..store._slices import (
    SLICE_KINDS,
    check_field,
    parse_predicate,
    predicate_verdicts,
    verdict_slices,
)
from ..store._store import Store
from ._bootstrap import (
    SMALL_SAMPLE_VERDICTS,
    bin_counts,
    check_boot,
    verdict_codes,
)
from ._correction import run_correction
from ._defaults import DEFAULT_N_BOOT, DEFAULT_N_PERM, DEFAULT_OBJECTIVE, SLICE_METRICS
from ._objective import Objective, parse_objective
from ._ppi import PPIData, correction_label, correction_of, ppi_on_verdicts
from ._runs import bootstrap_judged, choose_judged
from ._sweep import UndefinedMetricWarning, metrics_from_counts
from ._truth import ReferenceTruth, RunTruth, Truth, truth_of, whole_lessons

__all__ = [
    "ALL",
    "Q_LEVEL",
    "SliceAnalysis",
    "bh_qvalues",
    "permutation_pvalues",
    "slice_run",
]

#: The q-value under which a slice is a discovery.
Q_LEVEL = 0.05

#: The whole run's row of :attr:`SliceAnalysis.table`.
ALL = "(all verdicts)"


def bh_qvalues(p: Any) -> np.ndarray:
    """Benjamini-Hochberg q-values of the p-values ``p`` (NaN stays NaN, untested): the
    smallest false discovery rate at which each would be rejected, ``min over j >= i of
    m p_(j) / j`` on the sorted p-values, capped at 1 (as ``statsmodels``'
    ``multipletests(method="fdr_bh")`` gives them).

    Parameters
    ----------
    p : array-like of float
        The p-values, NaN for a slice not tested.

    Returns
    -------
    numpy.ndarray
        The q-values, in the order of ``p``.
    """
    p = np.asarray(p, dtype=np.float64)
    q = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    m = len(ok)
    if m == 0:
        return q
    order = ok[np.argsort(p[ok], kind="stable")]
    ranked = p[order] * m / np.arange(1, m + 1)
    q[order] = np.minimum(1.0, np.minimum.accumulate(ranked[::-1])[::-1])
    return q


def _stat(c: np.ndarray, n_verdicts: Any, metric: str) -> np.ndarray:
    """``metric`` of counts ``c`` (``..., 4``: kept, tp, judged, positives)."""
    m = metrics_from_counts(c[..., 0], c[..., 1], 1, c[..., 3], n_verdicts, c[..., 2])
    return m[metric]


@blas_limited()
def permutation_pvalues(counts: np.ndarray, masks: list[np.ndarray], metric: str, *,
                        n_perm: int = DEFAULT_N_PERM, random_state: Any = 0
                        ) -> tuple[np.ndarray, np.ndarray]:
    """``(difference, p)`` of each slice against the rest, by verdict permutation.

    ``counts``: one row per verdict (kept, tp, judged, positives at the threshold),
    ``masks``: each slice's verdicts (bool per row). The difference is ``metric`` on the
    slice minus ``metric`` on the rest; its two-sided p-value is the share of ``n_perm``
    re-draws of a slice of the same size from all the verdicts (the null: membership
    says nothing) whose difference is at least as far from 0, counted with the observed
    one. A re-draw with an undefined difference counts as extreme (conservative); an
    undefined observed difference gives NaN (not tested)."""
    rng = np.random.default_rng(random_state)
    c = np.asarray(counts, dtype=np.float64)
    g = len(c)
    total = c.sum(axis=0)
    diffs, ps = np.full(len(masks), np.nan), np.full(len(masks), np.nan)
    for i, mask in enumerate(masks):
        k = int(mask.sum())
        if k == 0 or k == g:
            continue
        with np.errstate(invalid="ignore", divide="ignore"):
            inside = c[mask].sum(axis=0)
            d = float(_stat(inside, k, metric) - _stat(total - inside, g - k, metric))
        diffs[i] = d
        if not np.isfinite(d):
            continue
        extreme = 0
        rows = max(1, min(n_perm, (1 << 22) // max(g, 1)))
        for lo in range(0, n_perm, rows):
            r = min(rows, n_perm - lo)
            # A uniformly random slice of k verdicts per row: the k smallest of r x g keys,
            # those at most the row's k-th smallest (a partition of the values: twice as
            # fast as one of their indices); a tie there (odds ~g^2 / 2^53) takes them by
            # index, so the slice is the same either way.
            keys = rng.random((r, g))
            kth = np.partition(keys, k - 1, axis=1)[:, k - 1:k]
            member = (keys <= kth).astype(np.float64)
            if (member.sum(axis=1) != k).any():
                pick = np.argpartition(keys, k - 1, axis=1)[:, :k]
                member = np.zeros((r, g), dtype=np.float64)
                np.put_along_axis(member, pick, 1.0, axis=1)
            s_in = member @ c
            with np.errstate(invalid="ignore", divide="ignore"):
                dp = _stat(s_in, k, metric) - _stat(total - s_in, g - k, metric)
            far = ~np.isfinite(dp) | (np.abs(dp) >= abs(d) * (1 - 1e-12))
            extreme += int(far.sum())
        ps[i] = (1 + extreme) / (1 + n_perm)
    return diffs, ps


def _verdict_counts(jr: RunTruth | ReferenceTruth, fix: PPIData | None, threshold: float
                    ) -> tuple[np.ndarray, np.ndarray]:
    """``(verdicts, counts)``: the verdicts the run is judged on and each one's kept, tp,
    judged and positive counts at ``threshold`` (corrected: its classic prediction-powered
    counts, :mod:`this module <truss_lab.evaluate._slices>`)."""
    thr = np.array([threshold])

    def hist(y: np.ndarray, s: np.ndarray, codes: np.ndarray, judged: np.ndarray,
             n: int) -> np.ndarray:
        h = bin_counts(y & judged, s, codes, n, thr, judged=judged).astype(np.float64)
        # kept, tp, judged kept at the threshold (bin 0); positives in every bin
        return np.stack([h[:, 0, 0], h[:, 1, 0], h[:, 2, 0], h[:, 1, :].sum(axis=1)], axis=1)

    if fix is not None:
        auto, human, inv = fix.codes
        n = fix.n_verdicts
        a = hist(fix.y_auto, fix.s_auto, auto, fix.judged_auto.astype(np.uint8), n)
        h = hist(fix.y_human, fix.s_human, human, fix.judged_human.astype(np.uint8), n)
        out = a + inv[:, None] * (h - a)
        out[:, 0] = a[:, 0]  # what the gate writes is seen, not estimated
        return np.asarray(fix.verdicts, dtype=object), out
    if isinstance(jr, ReferenceTruth):
        y, s, g = jr.arrays()
        judged = np.ones(len(y), dtype=np.uint8)
    else:
        inputs = jr.sweep_inputs()
        y, s, g = inputs["y_true"].astype(np.uint8), inputs["salience"], inputs["groups"]
        judged = inputs["judged"].astype(np.uint8)
    codes, verdicts = verdict_codes(g, jr.verdicts)
    out = hist(y, s.astype(np.float64), codes, judged, len(verdicts))
    if isinstance(jr, RunTruth) and jr.count_scale != 1:
        out = out / jr.count_scale
    return verdicts, out


def _slices(store: Store, verdicts: np.ndarray, by: str | None, where: Any
            ) -> tuple[str, list[tuple[str, np.ndarray]]]:
    """``(by, [(slice name, mask over verdicts)])`` from ``by`` or the predicates."""
    hashes = [str(v) for v in verdicts]
    index = pd.Index(hashes)
    if where is not None:
        preds = [where] if isinstance(where, str) else list(where)
        if not preds:
            raise BadInputError("where needs at least one predicate", field="where")
        out = []
        for i, text in enumerate(preds):
            hit = predicate_verdicts(store, hashes, parse_predicate(text, field=f"where[{i}]"))
            out.append((str(text).strip(), index.isin(hit)))
        return "where", out
    if by is None:
        by = "tag"
    if by not in SLICE_KINDS:
        check_field(by)
    pairs = verdict_slices(store, hashes, by)
    out = []
    for name, grp in pairs.groupby("slice", sort=True):
        out.append((str(name), index.isin(grp["verdict_hash"].astype(str))))
    return by, out


@dataclass(frozen=True, eq=False)
class SliceAnalysis:
    """One run's verdicts by slice at one threshold (:func:`slice_run`).

    ``table``: one row per slice, the whole run first (``slice`` :data:`ALL`), then by
    slice name: ``slice``, ``verdicts``, ``kept``, each metric of :data:`SLICE_METRICS`
    with ``_low``/``_high`` (its verdict-bootstrap interval; NaN for a slice listed, not
    tested), ``rest`` (the tested metric on the other verdicts), ``difference`` (slice
    minus rest), ``p_value`` (verdict permutation), ``q_value`` (Benjamini-Hochberg over
    the slices tested), ``discovery`` (q below :attr:`q_level`), ``own_threshold`` with
    ``own_threshold_low``/``own_threshold_high`` (the threshold the slice would choose on
    its own and its interval), ``correction`` (the slice's: ``none`` where people answered
    for none of its verdicts), ``tested`` and ``why`` (why not).

    Parameters
    ----------
    run_id : str
        The run analysed.
    by : str
        How its verdicts were cut (``tag``, ``outcome``, ``check``, ``contract``, a
        payload field, or ``where``).
    threshold : float
        The gate threshold the slices are compared at.
    test : str
        The metric each slice is tested on against the rest (one of ``SLICE_METRICS``).
    table : pandas.DataFrame
        One row per slice (above).
    truth : str
        What the lessons were judged by.
    correction : str
        The whole run's correction (``ppi`` or ``none``).
    objective : str
        What each slice's own threshold was chosen for.
    n_boot : int
        Verdict-bootstrap replicates of each interval.
    n_perm : int
        Verdict permutations of each test.
    confidence : float
        The intervals' level.
    q_level : float
        The q-value under which a slice is a discovery.
    min_verdicts : int
        The fewest verdicts a slice is tested with.
    random_state : int or numpy.random.Generator
        Seed of the bootstraps and permutations.
    """

    run_id: str
    by: str
    threshold: float
    test: str
    table: pd.DataFrame = field(repr=False)
    truth: str = "labels"
    correction: str = "none"
    objective: str = ""
    n_boot: int = DEFAULT_N_BOOT
    n_perm: int = DEFAULT_N_PERM
    confidence: float = 0.95
    q_level: float = Q_LEVEL
    min_verdicts: int = SMALL_SAMPLE_VERDICTS
    random_state: Any = 0

    @property
    def slices(self) -> pd.DataFrame:
        """The slices' rows (the table without the whole run's)."""
        return self.table[self.table["slice"] != ALL].reset_index(drop=True)

    @property
    def discoveries(self) -> list[str]:
        """The slices whose q-value is below :attr:`q_level`, smallest q first."""
        d = self.slices
        d = d[d["discovery"].to_numpy(dtype=bool)].sort_values("q_value", kind="stable")
        return d["slice"].tolist()

    def header(self) -> str:
        """What was tested, how, and what was found, in two lines."""
        s = self.slices
        n_tested = int(s["tested"].sum())
        found = ", ".join(self.discoveries) or "none"
        return (f"run {self.run_id}: {len(s)} slices by {self.by} at threshold "
                f"{self.threshold:.2f}; truth {self.truth}, correction {self.correction}\n"
                f"{n_tested} tested ({self.test}, slice vs rest, verdict permutation, "
                f"{self.n_perm} permutations; Benjamini-Hochberg q < {self.q_level:g}): "
                f"discoveries: {found}; {len(s) - n_tested} listed, not tested (fewer "
                f"than {self.min_verdicts} verdicts, or {self.test} undefined)")

    def to_frame(self) -> pd.DataFrame:
        """:attr:`table` with the analysis's settings in ``attrs``."""
        df = self.table.copy()
        df.attrs.update({"run_id": self.run_id, "by": self.by, "threshold": self.threshold,
                         "test": self.test, "truth": self.truth,
                         "correction": self.correction, "q_level": self.q_level,
                         "n_perm": self.n_perm, "n_boot": self.n_boot,
                         "confidence": self.confidence, "min_verdicts": self.min_verdicts})
        return df

    def __repr__(self) -> str:
        cols = ["slice", "verdicts", "precision", "recall", "f1", "q_value", "discovery",
                "own_threshold"]
        return (self.header() + "\n"
                + self.table[cols].to_string(index=False, max_rows=12,
                                             float_format=lambda v: f"{v:.3f}"))

    def _repr_html_(self) -> str:
        return (f"<pre>{html.escape(self.header())}</pre>"
                + self.table.to_html(index=False, float_format=lambda v: f"{v:.3f}"))


def _empty_row(name: str, k: int) -> dict[str, Any]:
    row: dict[str, Any] = {"slice": name, "verdicts": k, "kept": np.nan}
    for m in SLICE_METRICS:
        row.update({m: np.nan, f"{m}_low": np.nan, f"{m}_high": np.nan})
    row.update({"rest": np.nan, "difference": np.nan, "p_value": np.nan, "q_value": np.nan,
                "discovery": False, "own_threshold": np.nan, "own_threshold_low": np.nan,
                "own_threshold_high": np.nan, "correction": "none", "tested": False,
                "why": ""})
    return row


def slice_run(
    store: Store,
    run_id: str,
    *,
    by: str | None = "tag",
    where: str | list[str] | None = None,
    truth: str | Truth = "labels",
    threshold: float = DEFAULT_MIN_SALIENCE,
    test: str = "f1",
    objective: str | Objective = DEFAULT_OBJECTIVE,
    score: str = "salience",
    n_boot: int = DEFAULT_N_BOOT,
    n_perm: int = DEFAULT_N_PERM,
    confidence: float = 0.95,
    q_level: float = Q_LEVEL,
    random_state: int = 0,
) -> SliceAnalysis:
    """Where a run fails: its verdicts by slice, each against the rest, at one threshold.

    For each slice of the verdicts the run is judged on: precision, recall, F1 and kept
    per verdict at ``threshold`` with their verdict-bootstrap intervals under the run's
    truth (its correction included), a verdict-permutation test of the slice against the
    other verdicts on ``test`` with Benjamini-Hochberg q-values across every slice tested,
    and the threshold the slice would choose on its own, with its interval. Why a
    permutation test: the module docstring (:mod:`truss_lab.evaluate._slices`) and
    docs/how-to/slices.md. Slices of fewer than ``SMALL_SAMPLE_VERDICTS`` (30) verdicts
    are listed, not tested.

    Parameters
    ----------
    store : Store
        The database the run is in.
    run_id : str
        The run.
    by : str
        How verdicts are sliced: ``tag`` (each tag; the default: the contract's domain
        and its checks' themes), ``outcome`` (the payload's ``verdict``), ``check`` (each
        check the verdict has, passed or failed), ``contract`` (the ``contract_id``) or a
        payload field (dotted names, e.g. ``goal``). Ignored with ``where``.
    where : str or list of str, optional
        Predicates, each one slice (the verdicts it holds for; ``"verdict = fail and tag
        = retry"``): clauses ``PATH OP VALUE`` joined by ``and``, read and bound by the
        store, never pasted into SQL (``truss_lab.store._slices.PREDICATE_HELP``).
    truth : Truth or str
        How the run is judged (:class:`~truss_lab.evaluate._truth.Truth`), as
        :func:`~truss_lab.evaluate._runs.sweep_run` takes it.
    threshold : float
        The gate threshold the slices are compared at.
    test : str
        The metric tested: ``precision``, ``recall``, ``f1`` or ``kept_per_verdict``.
    objective : Objective or str
        What each slice's own threshold is chosen for (as every choice of the toolkit).
    score : str
        The candidates column to threshold.
    n_boot, n_perm, confidence, q_level, random_state
        Bootstrap replicates, permutations, interval level, the q-value of a discovery
        and the seed (the same seed gives the same numbers).

    Returns
    -------
    SliceAnalysis
        The table (one row per slice, the whole run first), the discoveries, and the
        settings; its repr is a short table.

    Raises
    ------
    BadInputError
        An unknown run, truth, slicing, metric or a malformed predicate.

    See Also
    --------
    truss_lab.SliceDisplay : draws it.

    Notes
    -----
    Many parameters because it is one call of the slicing (by, where), the truth and
    threshold, the test (test, n_perm, q_level), each slice's own choice (objective,
    score) and the bootstrap (n_boot, confidence, random_state), as
    :func:`~truss_lab.evaluate._runs.evaluate_run` takes them. Long because it is one pass:
    the counts, the slices, the tests and q-values, then each tested slice's intervals and
    own threshold, in the order every row needs them.

    Examples
    --------
    >>> res = tl.slice_run(store, "good", by="outcome", n_boot=50, n_perm=200)
    >>> res.by, res.slices["slice"].tolist()
    ('outcome', ['fail', 'partial', 'pass'])
    """
    if test not in SLICE_METRICS:
        raise BadInputError(f"test must be one of {', '.join(SLICE_METRICS)}, got {test!r}",
                            field="test")
    thr = check_threshold(threshold, "slice_run", name="threshold")
    check_boot(n_boot, confidence)
    if isinstance(n_perm, bool) or not isinstance(n_perm, int | np.integer) or n_perm < 1:
        raise BadInputError(f"n_perm must be an int >= 1, got {n_perm!r}", field="n_perm")
    if not isinstance(q_level, int | float) or not 0.0 < q_level < 1.0:
        raise BadInputError(f"q_level must be in (0, 1), got {q_level!r}", field="q_level")
    obj = parse_objective(objective)
    t = Truth.resolve(store, truth_of(truth, None, where="slice_run"), [run_id])
    whole_lessons(t.ties, "each slice's own threshold")
    jr = t.judged(run_id, score=score)
    fix = run_correction(store, t, jr, run_id, score=score)
    verdicts, counts = _verdict_counts(jr, fix, thr)
    by_name, slices = _slices(store, verdicts, by, where)
    streams = np.random.SeedSequence(random_state).spawn(1)

    def measured(name: str, mask: np.ndarray) -> dict[str, Any]:
        k = int(mask.sum())
        row = _empty_row(name, k)
        with np.errstate(invalid="ignore", divide="ignore"):
            c = counts[mask].sum(axis=0)
            m = metrics_from_counts(c[0], c[1], 1, c[3], max(k, 1), c[2])
        row["kept"] = float(c[0])
        for name_m in SLICE_METRICS:
            row[name_m] = float(m[name_m])
        return row

    rows = [measured(ALL, np.ones(len(verdicts), dtype=bool))]
    masks = [mask for _, mask in slices]
    tested = []
    for (name, mask) in slices:
        row = measured(name, mask)
        k = row["verdicts"]
        if k < SMALL_SAMPLE_VERDICTS:
            row["why"] = f"{k} verdict{'' if k == 1 else 's'}, fewer than {SMALL_SAMPLE_VERDICTS}"
        elif k == len(verdicts):
            row["why"] = "every verdict: no rest to test against"
        else:
            row["tested"] = True
        rows.append(row)
        tested.append(row["tested"])
    idx = [i for i, ok in enumerate(tested) if ok]
    diffs, ps = permutation_pvalues(counts, [masks[i] for i in idx], test, n_perm=n_perm,
                                    random_state=streams[0])
    for j, i in enumerate(idx):
        row = rows[i + 1]
        row["difference"] = diffs[j]
        row["rest"] = row[test] - diffs[j] if np.isfinite(diffs[j]) else np.nan
        if not np.isfinite(ps[j]):
            row["tested"], row["why"] = False, f"{test} undefined on the slice or the rest"
        row["p_value"] = ps[j]
    q = bh_qvalues([r["p_value"] if r["tested"] else np.nan for r in rows[1:]])
    for r, qv in zip(rows[1:], q, strict=True):
        r["q_value"] = qv
        r["discovery"] = bool(np.isfinite(qv) and qv < q_level)
    # Intervals and the slice's own threshold: the whole run and every tested slice.
    opts = {"n_boot": n_boot, "confidence": confidence, "random_state": random_state}
    for row, mask in [(rows[0], np.ones(len(verdicts), dtype=bool)), *zip(rows[1:], masks,
                                                                           strict=True)]:
        if row["slice"] != ALL and not row["tested"]:
            continue
        vs = verdicts[mask]
        sub = jr if row["slice"] == ALL else jr.on_verdicts(vs)
        sub_fix = fix if (fix is None or row["slice"] == ALL) else ppi_on_verdicts(fix, vs)
        row["correction"] = correction_label(correction_of(sub_fix))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            boot = bootstrap_judged(sub, sub_fix, thresholds=[thr], objective=obj, **opts)
            # Its threshold and interval alone: the held-out intervals a choice carries
            # beside them are not shown (the same numbers in a fraction of the time).
            choice = choose_judged(t, sub, sub_fix, objective=obj, intervals="threshold",
                                   **opts)
        b = boot.table.iloc[0]
        for m in SLICE_METRICS:
            # The bootstrap's point is the sweep's (under a correction: power-tuned, where
            # the test's counts are classic), so a row's value sits in its interval.
            row[m] = float(b[m])
            row[f"{m}_low"], row[f"{m}_high"] = float(b[f"{m}_low"]), float(b[f"{m}_high"])
        row["own_threshold"] = float(choice.threshold)
        lo, hi = choice.threshold_interval or (np.nan, np.nan)
        row["own_threshold_low"], row["own_threshold_high"] = float(lo), float(hi)
    return SliceAnalysis(
        run_id=run_id, by=by_name, threshold=thr, test=test, table=pd.DataFrame(rows),
        truth=t.name, correction=correction_label(correction_of(fix)),
        objective=obj.describe(), n_boot=int(n_boot), n_perm=int(n_perm),
        confidence=float(confidence), q_level=float(q_level),
        min_verdicts=SMALL_SAMPLE_VERDICTS, random_state=random_state)
