"""Prediction-powered sweep (evaluate/_ppi.py) against the plain sweep, a brute force
and an independent human-only implementation (issue 26, "what must be shown")."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.builders.profiles import examples
from tests.builders.stores import copy_db
from truss_lab.core._errors import BadInputError
from truss_lab.evaluate._bootstrap import bootstrap_metrics
from truss_lab.evaluate._matches import people_matches
from truss_lab.evaluate._ppi import (
    PartialLabelsWarning,
    PeopleMatcher,
    check_correct,
    labels_ppi,
    partial_labels,
    partial_matches,
    ppi_bootstrap,
    ppi_data,
    ppi_sweep,
    ratio_interval,
    reference_ppi,
    t_quantile,
    wilson_interval,
)
from truss_lab.evaluate._runs import bootstrap_run, sweep_run
from truss_lab.evaluate._sweep import UndefinedMetricWarning, group_codes, sweep
from truss_lab.evaluate._truth import (
    ReferenceTruth,
    RunTruth,
    Truth,
    judge_lessons,
    labelled_candidates,
    run_labels,
)
from truss_lab.faces._notebook import SAMPLE, run_sample_extractions, sample_run_id
from truss_lab.ingest._ingest import ingest_match_labels
from truss_lab.store._store import Store

GRID = np.round(np.linspace(0, 1, 21), 2)


def population(seed: int, n_verdicts: int = 300, per: int = 4):
    """Verdicts of ``per`` lessons each (scores in 0.05 steps, so ties) plus a miss row
    (positive, NaN score) per verdict; ``y`` is the people's truth of every row."""
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(n_verdicts), per + 1).astype(object)
    s = np.round(rng.random(len(g)) * 20) / 20
    s[per::per + 1] = np.nan
    y = (rng.random(len(g)) < np.where(np.isnan(s), 0.3, 0.2 + 0.6 * np.nan_to_num(s)))
    y = y.astype(np.uint8)
    y[np.isnan(s)] = rng.random(n_verdicts) < 0.5
    return y, s, g


def sample_rows(y, s, g, verdicts):
    keep = np.isin(g, verdicts)
    return y[keep], s[keep], g[keep]


# --------------------------------------------------------------------------- perfect matcher


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_perfect_matcher_equals_the_uncorrected_sweep(seed):
    y, s, g = population(seed)
    rng = np.random.default_rng(seed + 10)
    picked = rng.choice(np.unique(g), size=40, replace=False)
    data = ppi_data(y, s, g, *sample_rows(y, s, g, picked), sampled=picked)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        plain = sweep(y, s, groups=g)
        plain_given = sweep(y, s, groups=g, thresholds=GRID)
    for got, want in ((ppi_sweep(data), plain), (ppi_sweep(data, thresholds=GRID), plain_given)):
        np.testing.assert_array_equal(got["threshold"], want["threshold"])
        np.testing.assert_array_equal(got["kept"], want["kept"])
        for col in ("tp", "fp", "fn", "precision", "recall", "f1", "kept_per_verdict",
                    "write_rate"):
            np.testing.assert_allclose(got[col], want[col], rtol=1e-12, atol=1e-9, err_msg=col)
    boot = ppi_bootstrap(data, thresholds=GRID, n_boot=50)
    ref = bootstrap_metrics(y, s, g, thresholds=GRID, n_boot=50)
    for col in ("precision", "recall", "f1", "kept_per_verdict"):
        np.testing.assert_allclose(boot.table[col], ref.table[col], rtol=1e-12, atol=1e-9)
    assert boot.threshold == ref.threshold


# --------------------------------------------------------------------------- always-wrong matcher


def human_only(y, s, g, picked, n_all, thresholds):
    """Independent Horvitz-Thompson estimate from the people's sample alone: per
    threshold, loop over the sampled verdicts, scale each by N / n."""
    scale = n_all / len(picked)
    out = []
    for t in thresholds:
        tp = kept = pos = 0.0
        for v in picked:
            rows = g == v
            yv, sv = y[rows], s[rows]
            kept_v = [bool(x >= t) if not np.isnan(x) else False for x in sv]
            tp += scale * sum(int(a) for a, k in zip(yv, kept_v, strict=True) if k)
            kept += scale * sum(kept_v)
            pos += scale * int(yv.sum())
        out.append((tp, kept, pos, tp / kept if kept else np.nan, tp / pos))
    return np.array(out)


def test_always_wrong_matcher_is_the_human_only_estimate_in_expectation():
    y, s, g = population(5, n_verdicts=200)
    wrong = (1 - y).astype(np.uint8)  # the matcher says the opposite of people, always
    verdicts = np.unique(g)
    thresholds = [0.3, 0.7]
    rng = np.random.default_rng(11)
    n, reps = 50, 300
    ppi, human = [], []
    for _ in range(reps):
        picked = rng.choice(verdicts, size=n, replace=False)
        data = ppi_data(wrong, s, g, *sample_rows(y, s, g, picked), sampled=picked)
        df = ppi_sweep(data, thresholds=thresholds)
        ppi.append(df[["tp", "precision", "recall"]].to_numpy())
        ho = human_only(y, s, g, picked, len(verdicts), thresholds)
        human.append(ho[:, [0, 3, 4]])
        # lam = 0 is the people's sample alone, exactly
        alone = ppi_sweep(data, thresholds=thresholds, lam=0.0)
        np.testing.assert_allclose(alone[["tp", "precision", "recall"]].to_numpy(),
                                   ho[:, [0, 3, 4]], rtol=1e-12)
    ppi_a, human_a = np.array(ppi), np.array(human)
    # The counts: both unbiased for the population's human total.
    true_tp = np.array([np.sum(y[np.nan_to_num(s, nan=-1) >= t]) for t in thresholds])
    for est in (ppi_a[:, :, 0], human_a[:, :, 0]):
        se = est.std(axis=0, ddof=1) / np.sqrt(reps)
        assert np.all(np.abs(est.mean(axis=0) - true_tp) < 4 * se + 1e-9)
    # The ratios: the two estimators agree in expectation (paired over the same samples).
    diff = ppi_a[:, :, 1:] - human_a[:, :, 1:]
    se = diff.std(axis=0, ddof=1) / np.sqrt(reps)
    assert np.all(np.abs(diff.mean(axis=0)) < 4 * se + 0.01)
    # ... and the always-wrong automated truth alone is far off.
    assert abs(ppi_a[:, 1, 1].mean() - sweep(wrong, s, thresholds=[0.7])["precision"][0]) > 0.2


# --------------------------------------------------------------------------- brute force


def brute(ya, sa, ga, ja, yh, sh, gh, jh, inv_pi, lam, thresholds):
    """Per threshold, the estimate written out row by row (module docstring's formula)."""
    out = []
    for t in thresholds:
        tp = judged = 0.0
        for yy, ss, gg, jj in zip(ya, sa, ga, ja, strict=True):
            w = lam * (1 - inv_pi.get(gg, 0.0))
            if not np.isnan(ss) and ss >= t and jj:
                judged += w
                tp += w * yy
        for yy, ss, gg, jj in zip(yh, sh, gh, jh, strict=True):
            w = inv_pi[gg]
            if not np.isnan(ss) and ss >= t and jj:
                judged += w
                tp += w * yy
        # The true kept lessons cannot outnumber the judged ones (_ppi._ratios).
        out.append((min(tp, judged) if judged >= 0 else tp, judged))
    pos = sum(lam * (1 - inv_pi.get(gg, 0.0)) * yy * jj
              for yy, gg, jj in zip(ya, ga, ja, strict=True))
    pos += sum(inv_pi[gg] * yy * jj for yy, gg, jj in zip(yh, gh, jh, strict=True))
    return np.array(out).reshape(-1, 2), pos


scores = st.one_of(st.sampled_from([0.0, 0.25, 0.5, 0.7, 1.0, float("nan")]),
                   st.floats(0, 1, allow_nan=False))
row = st.tuples(st.integers(0, 1), scores, st.integers(0, 5), st.booleans())


@settings(max_examples=examples(200), deadline=None)
@given(auto=st.lists(row, min_size=1, max_size=40), human=st.lists(row, max_size=20),
       extra=st.lists(st.integers(0, 5), min_size=1, max_size=3),
       lam=st.sampled_from([0.0, 0.5, 1.0]), unequal=st.booleans())
def test_one_sort_sweep_equals_per_threshold_brute_force(auto, human, extra, lam, unequal):
    ya, sa, ga, ja = (np.array(c) for c in zip(*auto, strict=True))
    ga = ga.astype(object)
    pop = list(dict.fromkeys(ga.tolist()))
    if human:
        yh, sh, gh, jh = (np.array(c) for c in zip(*human, strict=True))
        gh = gh.astype(object)
    else:
        yh, sh, gh, jh = (np.array([], dtype=t) for t in (int, float, object, bool))
    pop = list(dict.fromkeys(pop + gh.tolist() + list(extra)))
    sampled = list(dict.fromkeys(gh.tolist() + [e for e in extra if e in pop]))
    p = ([0.2 + 0.7 * ((i * 37) % 10) / 10 for i in range(len(sampled))] if unequal else None)
    data = ppi_data(ya, sa, ga, yh, sh, gh, judged_auto=ja, judged_human=jh, verdicts=pop,
                    sampled=sampled, inclusion_probability=p)
    inv_pi = ({v: 1 / q for v, q in zip(sampled, p, strict=True)} if unequal
              else {v: len(pop) / len(sampled) for v in sampled})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        default = ppi_sweep(data, lam=lam)
        given_t = ppi_sweep(data, thresholds=[0.7, 0.0, 0.5, 2.0], lam=lam)
    for df in (default, given_t):
        counts, pos = brute(ya, sa, ga, ja, yh, sh, gh, jh, inv_pi, lam, df["threshold"])
        np.testing.assert_allclose(df["tp"], counts[:, 0], atol=1e-9)
        np.testing.assert_allclose(df["fp"], counts[:, 1] - counts[:, 0], atol=1e-9)
        if pos > 1e-9:
            np.testing.assert_allclose(df["fn"], pos - counts[:, 0], atol=1e-9)
        kept = [np.sum(np.nan_to_num(sa, nan=-np.inf) >= t) for t in df["threshold"]]
        np.testing.assert_array_equal(df["kept"], kept)
    want = sorted({float(x) for x in sa if not np.isnan(x)}, reverse=True)
    np.testing.assert_array_equal(default["threshold"], want)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        boot = ppi_bootstrap(data, thresholds=[0.7, 0.0, 0.5], n_boot=5, lam=lam)
        at = ppi_sweep(data, thresholds=[0.7, 0.0, 0.5], lam=lam)
    for col in ("precision", "recall", "f1", "kept_per_verdict", "write_rate"):
        np.testing.assert_allclose(boot.table[col], at[col], atol=1e-9, equal_nan=True)


# --------------------------------------------------------------------------- power tuning


def tuned_by_hand(ya, s, g, yh, picked, n_all, t):
    """PPI++ weights of each ratio at threshold t, independently: per people-matched
    verdict its counts (loops), the ratio linearised at its classic-PPI value at the
    lowest score of a people-matched row at or above t (where the sample's counts
    last changed), the least-squares regression of the people's linearised count on
    the automated ones (numpy lstsq), clipped to [0, 1]; and the ratios at those."""
    scale = n_all / len(picked)
    in_sample = np.isin(g, picked)
    canon = np.min(s[in_sample & (np.nan_to_num(s, nan=-np.inf) >= t)])

    def counts(y, rows, at):
        kept = np.nan_to_num(s[rows], nan=-np.inf) >= at
        y = y[rows].astype(bool)
        return np.array([np.sum(y & kept), np.sum(kept), np.sum(y)], dtype=float)

    def parts(at):
        per_v = [(counts(ya, g == v, at), counts(yh, g == v, at)) for v in picked]
        return (counts(ya, np.ones(len(g), bool), at), per_v,
                sum(a for a, _ in per_v) * scale, sum(h for _, h in per_v) * scale)

    a_all, per_v, a_s, h_s = parts(t)
    c_all, _, c_a_s, c_h_s = parts(canon)
    ratios = {"precision": ([1, 0, 0], [0, 1, 0]), "recall": ([1, 0, 0], [0, 0, 1]),
              "f1": ([2, 0, 0], [0, 1, 1])}
    lams, values = {}, {}
    for name, (num, den) in ratios.items():
        num, den = np.array(num, float), np.array(den, float)
        c1 = c_all + c_h_s - c_a_s
        theta = (num @ c1) / (den @ c1)
        kinds = [k for k in range(3) if num[k] or den[k]]
        coef = num - theta * den
        z = np.array([coef @ h for _, h in per_v]) * scale
        x = np.array([[coef[k] * a[k] for k in kinds] for a, _ in per_v]) * scale
        beta = np.linalg.lstsq(x - x.mean(axis=0), z - z.mean(), rcond=None)[0]
        lam = np.ones(3)
        lam[kinds] = np.clip(beta, 0, 1)
        c = lam * (a_all - a_s) + h_s
        lams[name], values[name] = lam, (num @ c) / (den @ c)
    return lams, values


@pytest.mark.parametrize("seed", [0, 4])
def test_tuned_lam_equals_an_independent_regression(seed):
    y, s, g = population(seed, n_verdicts=200)
    rng = np.random.default_rng(seed)
    # A matcher that misses half the true pairs and invents a few: biased, informative.
    auto = (y.astype(bool) & (rng.random(len(y)) < 0.5)) | (rng.random(len(y)) < 0.05)
    auto = auto.astype(np.uint8)
    picked = rng.choice(np.unique(g), size=50, replace=False)
    data = ppi_data(auto, s, g, *sample_rows(y, s, g, picked), sampled=picked)
    thresholds = [0.3, 0.7, 0.72]  # 0.72: between two scores (0.05 steps)
    df = ppi_sweep(data, thresholds=thresholds, snap=False)
    assert df.attrs["ppi"]["lam"] == "tuned"
    full = ppi_sweep(data)  # every distinct score: the same weights where they meet
    for i, t in enumerate(thresholds):
        lams, values = tuned_by_hand(auto, s, g, y, picked, 200, t)
        for name in ("precision", "recall", "f1"):
            np.testing.assert_allclose(df.attrs["ppi"]["lams"][name][i], lams[name],
                                       rtol=1e-6, atol=1e-9, err_msg=f"{name} at {t}")
            np.testing.assert_allclose(df[name].iloc[i], np.clip(values[name], 0, 1),
                                       rtol=1e-9, err_msg=f"{name} at {t}")
            if t in full["threshold"].to_numpy():
                j = int(np.flatnonzero(full["threshold"].to_numpy() == t)[0])
                np.testing.assert_allclose(full.attrs["ppi"]["lams"][name][j], lams[name],
                                           rtol=1e-6, atol=1e-9)
        # recall's denominator, the positives, is the same by both truths only where the
        # matcher finds every pair; here it is not, so the tuning weighs it too
        assert 0 <= lams["recall"][0] <= 1
    # tp, fp, fn are F1's counts: f1 = 2 tp / (2 tp + fp + fn)
    np.testing.assert_allclose(df["f1"], 2 * df["tp"] / (2 * df["tp"] + df["fp"] + df["fn"]))
    # The bootstrap's point is the sweep's, its interval holds it.
    boot = ppi_bootstrap(data, thresholds=thresholds, n_boot=200, snap=False).table
    for name in ("precision", "recall", "f1"):
        np.testing.assert_allclose(boot[name], df[name])
        assert (boot[f"{name}_low"] <= boot[name]).all()
        assert (boot[name] <= boot[f"{name}_high"]).all()


def test_t_quantile_and_the_wilson_interval():
    from scipy import stats  # the oracle (a scikit-learn dependency in the dev extra)

    for df in (1, 2, 3, 10, 49, 199):
        tol = 4e-3 if df < 10 else 1e-5
        assert t_quantile(0.975, df) == pytest.approx(stats.t.ppf(0.975, df), abs=tol)
    # 15 lessons all true (every replicate agreed): the people's 15 set the size,
    # so the interval is not the percentile bootstrap's [1, 1].
    q = stats.t.ppf(0.975, 49)
    lo, hi = wilson_interval([1.0], [0.0], [15.0], 50, 0.95)
    assert hi[0] == pytest.approx(1.0) and lo[0] == pytest.approx(15 / (15 + q * q), rel=1e-4)
    # With a variance, the size is p(1-p)/var (times (n-1)/n): Wilson's own formula.
    p, var, n = 0.4, 0.003, 50
    size = p * (1 - p) / (var * n / (n - 1))
    want = [(p + q * q / (2 * size) + s * q * np.sqrt(p * (1 - p) / size
                                                      + q * q / (4 * size * size)))
            / (1 + q * q / size) for s in (-1, 1)]
    got = wilson_interval([p], [var], [10.0], n, 0.95)
    np.testing.assert_allclose([got[0][0], got[1][0]], want, rtol=1e-4)
    assert np.isnan(wilson_interval([np.nan], [0.1], [3.0], 10, 0.95)[0][0])


# --------------------------------------------------------------------------- bootstrap and input


def test_bootstrap_resamples_both_sets_and_is_seeded():
    y, s, g = population(3)
    wrong = y.copy()
    wrong[::10] ^= 1  # a good matcher: wrong on one row in ten
    picked = np.unique(g)[:60]
    data = ppi_data(wrong, s, g, *sample_rows(y, s, g, picked), sampled=picked)
    a = ppi_bootstrap(data, thresholds=[0.7], n_boot=300, random_state=4)
    b = ppi_bootstrap(data, thresholds=[0.7], n_boot=300, random_state=4)
    assert a.table.equals(b.table)
    r = a.table.iloc[0]
    assert r["precision_low"] < r["precision"] < r["precision_high"]
    assert r["recall_low"] < r["recall"] < r["recall_high"]
    # The people's sample alone (lam = 0) is noisier than the corrected estimate where
    # the matcher agrees with people (recall, F1: half the width); for precision the
    # tuning re-chosen per replicate costs a little of what it saves (within 10 %).
    alone = ppi_bootstrap(data, thresholds=[0.7], n_boot=300, random_state=4, lam=0.0)
    width = lambda t, m: float(t[f"{m}_high"].iloc[0] - t[f"{m}_low"].iloc[0])  # noqa: E731
    for m in ("recall", "f1"):
        assert width(a.table, m) < 0.7 * width(alone.table, m)
    assert width(a.table, "precision") < 1.1 * width(alone.table, "precision")
    # The percentile interval is still there on request, and lam fixes the weights.
    pct = ppi_bootstrap(data, thresholds=[0.7], n_boot=300, random_state=4, lam=1.0,
                        interval="percentile").table.iloc[0]
    assert pct["precision_low"] < pct["precision"] < pct["precision_high"]
    with pytest.raises(BadInputError, match="interval must be"):
        ppi_bootstrap(data, thresholds=[0.7], n_boot=5, interval="bca")


def test_bad_input_is_one_clear_error():
    y, s, g = population(0, n_verdicts=10)
    with pytest.raises(BadInputError, match="people answered for no verdict"):
        ppi_data(y, s, g, [], [], np.array([], dtype=object))
    with pytest.raises(BadInputError, match="not among the sampled"):
        ppi_data(y, s, g, y[:5], s[:5], g[:5], sampled=[7])
    with pytest.raises(BadInputError, match="not among the verdicts"):
        ppi_data(y, s, g, [1], [0.5], np.array(["zz"], dtype=object))
    with pytest.raises(BadInputError, match="inclusion probability of verdict"):
        ppi_data(y, s, g, y[:5], s[:5], g[:5], inclusion_probability=[0.0])
    data = ppi_data(y, s, g, y[:5], s[:5], g[:5])
    with pytest.raises(BadInputError, match="lam must be"):
        ppi_sweep(data, lam=1.5)
    assert check_correct(None) == "auto"
    with pytest.raises(BadInputError, match="correct must be one of"):
        check_correct("yes")


# --------------------------------------------------------------------------- the people's truth


def _frames():
    les = pd.DataFrame({
        "verdict_hash": ["v1", "v1", "v1", "v2", "v3"], "lesson_index": [0, 1, 2, 0, 0],
        "text": ["a", "b", "c", "d", "e"], "s": [0.9, 0.8, 0.5, 0.7, 0.75]})
    refs = pd.DataFrame({"verdict_hash": ["v1", "v1", "v2", "v3", "v4"],
                         "reference_id": ["r1", "r2", "r1", "r1", "r1"],
                         "text": ["x", "y", "z", "w", "q"]})
    people = pd.DataFrame({
        "verdict_hash": ["v1", "v1", "v1", "v2", "v3"], "extractor": "x",
        "lesson_index": [0, 1, 2, 0, 0],
        # lesson 1 names lesson 0's reference: the later one is a duplicate
        "reference_id": pd.array(["r1", "r1", "r2", "", "r1"], dtype="string")})
    return les, refs, people


def _truth(les, refs, matcher):
    rows, n_refs = judge_lessons(les, refs, matcher=matcher,
                                 match_threshold=getattr(matcher, "match_threshold", None))
    verdicts = list(pd.unique(rows["verdict_hash"]))
    return ReferenceTruth(run_id="r", rows=rows, n_references=n_refs,
                          n_verdicts=len(verdicts), n_lessons=int((rows["kind"] == "lesson").sum()),
                          match_threshold=0.5, counts={}, verdicts=verdicts)


def test_people_matcher_follows_the_matchers_one_to_one_rule():
    les, refs, people = _frames()
    truth = _truth(les, refs, PeopleMatcher(people))
    got = (truth.rows[["kind", "verdict_hash", "reference_id", "y"]].fillna("-")
           .astype(str).values.tolist())
    assert got == [["lesson", "v1", "r1", "1"], ["lesson", "v1", "-", "0"],
                   ["lesson", "v1", "r2", "1"], ["lesson", "v2", "-", "0"],
                   ["miss", "v2", "r1", "1"], ["lesson", "v3", "r1", "1"],
                   ["miss", "v4", "r1", "1"]]


def test_reference_ppi_with_the_peoples_own_pairs_is_the_uncorrected_sweep():
    les, refs, people = _frames()
    auto = _truth(les, refs, PeopleMatcher(people))
    sample = people[people["verdict_hash"].isin(["v1", "v3"])]
    data = reference_ppi(auto, refs, sample)
    assert data.n_sampled == 2 and data.n_verdicts == 4
    # v2, v3 and v1 have lessons: a simple random sample of 2 of those 3
    np.testing.assert_allclose(data.inv_pi, [1.5, 1.5])
    y, s, g = auto.arrays()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        plain = sweep(y, s, groups=g)
    np.testing.assert_allclose(ppi_sweep(data)[["tp", "precision", "recall"]],
                               plain[["tp", "precision", "recall"]])
    # A matcher that finds nothing: corrected by the sample, unbiased over samples.
    nothing = _truth(les, refs, PeopleMatcher(people.iloc[:0]))
    d2 = reference_ppi(nothing, refs, sample)
    tp = ppi_sweep(d2, thresholds=[0.0])["tp"].iloc[0]
    assert tp == pytest.approx(1.5 * 3)  # v1: 2 matched, v3: 1, each weighing 3/2
    tied = sample.assign(reference_id=pd.array([pd.NA, "r1", "r2", "r1"], dtype="string"))
    d3 = reference_ppi(auto, refs, tied)
    assert d3.judged_human.tolist() == [0, 1, 1, 1]  # lesson 0 tied: no human truth
    assert reference_ppi(auto, refs, people[people["verdict_hash"] == "zz"]) is None
    # A verdict matched in part (lesson 2 of v1 unanswered) is no sample of whole ones.
    part = sample[~((sample["verdict_hash"] == "v1") & (sample["lesson_index"] == 2))]
    why = partial_matches(auto, part)
    assert why is not None and "1 of the 2 verdicts" in why and "lesson 2" in why
    with pytest.raises(BadInputError, match="no people's answer"):
        reference_ppi(auto, refs, part)
    assert partial_matches(auto, sample) is None


# --------------------------------------------------------------------------- a run in the store

GOOD = sample_run_id("sim-good-v1")


@pytest.fixture(scope="module")
def store(sample_full: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    path = copy_db(sample_full, tmp_path_factory.mktemp("ppi") / "template.duckdb")
    s = Store(path)
    run_sample_extractions(s, extractors=["sim-good-v1"], write_memory=False)
    assert ingest_match_labels(s, SAMPLE / "match_labels.csv").errors == []
    yield s
    s.close()


def test_sweep_run_corrects_references_with_the_peoples_match_labels(store):
    plain = sweep_run(store, GOOD, truth="references", correct="none")
    auto = sweep_run(store, GOOD, truth="references")  # auto: people matched some verdicts
    ppi = sweep_run(store, GOOD, truth="references", correct="ppi")
    assert plain.attrs["correction"] == {"correction": "none", "people_verdicts": 0,
                                         "verdicts": None}
    c = ppi.attrs["correction"]
    assert c["correction"] == "ppi" and 0 < c["people_verdicts"] < c["verdicts"]
    assert auto.attrs["correction"] == c and auto.equals(ppi)
    assert list(ppi.columns) == list(plain.columns)
    np.testing.assert_array_equal(ppi["kept"], plain["kept"])  # what the gate writes: exact
    # By hand: the matcher's rows and the people's, through the pure functions.
    t = Truth.resolve(store, "references", [GOOD])
    data = reference_ppi(t.judged(GOOD), t.reference_rows, people_matches(store, run_id=GOOD))
    np.testing.assert_allclose(ppi["tp"], ppi_sweep(data)["tp"])
    boot = bootstrap_run(store, GOOD, truth="references", correct="ppi", thresholds=[0.5, 0.7],
                         n_boot=200)
    at = sweep_run(store, GOOD, truth="references", correct="ppi", thresholds=[0.5, 0.7])
    np.testing.assert_allclose(boot.table["precision"], at["precision"])
    assert (boot.table["precision_low"] <= boot.table["precision"]).all()
    assert (boot.table["recall"] <= boot.table["recall_high"]).all()


def test_correct_is_refused_where_there_is_nothing_to_correct(store):
    with pytest.raises(BadInputError, match="labels truth is the people's own"):
        sweep_run(store, GOOD, truth="labels", correct="ppi")
    assert sweep_run(store, GOOD, truth="labels").attrs["correction"]["correction"] == "none"
    nobody = people_matches(store, run_id=GOOD).iloc[:0]
    with pytest.raises(BadInputError, match="people answered for no verdict"):
        sweep_run(store, GOOD, truth="references", correct="ppi", match_labels=nobody.assign(
            annotator=""))
    with pytest.raises(BadInputError, match="correct must be one of"):
        sweep_run(store, GOOD, truth="references", correct="yes")


def _run_truth(y, s, g, judged):
    c = pd.DataFrame({"candidate_id": range(len(y)), "verdict_hash": g, "extractor_id": "x",
                      "lesson_index": range(len(y)), "valid": True, "s": s,
                      "y": np.asarray(y, dtype=np.uint8), "judged": np.asarray(judged, bool)})
    verdicts = [*pd.unique(np.asarray(g, dtype=object)), "empty"]
    return RunTruth(run_id="r", candidates=c, n_verdicts=len(verdicts), verdicts=verdicts,
                    counts={})


def test_labels_ppi_corrects_a_judge_with_the_gold_labels():
    y, s, g = population(2, n_verdicts=60, per=3)
    s = np.where(np.isnan(s), 0.5, s)
    judge = _run_truth(y, s, g, np.ones(len(y)))
    # Gold labels on 20 verdicts: the same labels (a perfect judge) or their flips.
    picked = np.unique(g)[:20]
    on = np.isin(g, picked)
    gold_same = _run_truth(y, s, g, on)
    data = labels_ppi(judge, gold_same)
    assert data.n_sampled == 20 and data.n_verdicts == 61
    np.testing.assert_allclose(data.inv_pi, 3.0)  # 20 of the 60 verdicts with a candidate
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        plain = sweep(y, s, thresholds=GRID)
    np.testing.assert_allclose(ppi_sweep(data, thresholds=GRID)["tp"], plain["tp"])
    flipped = _run_truth(np.where(on, 1 - y, y), s, g, on)
    tp = ppi_sweep(labels_ppi(judge, flipped), thresholds=[0.0], lam=1.0)["tp"].iloc[0]
    yi = y.astype(int)
    want = yi.sum() + 3.0 * ((1 - yi[on]).sum() - yi[on].sum())
    assert tp == pytest.approx(want)
    assert labels_ppi(judge, _run_truth(y, s, g, np.zeros(len(y)))) is None


def test_labels_ppi_takes_whole_verdicts_only():
    """The sampling unit is the verdict: gold labels on some of a verdict's lessons
    (a queue's band) are refused, naming them; a verdict whose labelled lesson is a
    tie (answered, no truth) is sampled whole."""
    y, s, g = population(3, n_verdicts=60, per=3)
    s = np.where(np.isnan(s), 0.5, s)
    judge = _run_truth(y, s, g, np.ones(len(y)))
    on = np.isin(g, np.unique(g)[:20])
    assert partial_labels(judge, _run_truth(y, s, g, on)) is None
    band = on & (s >= 0.3) & (s <= 0.7)
    why = partial_labels(judge, _run_truth(y, s, g, band))
    assert why is not None and "lesson(s) the judge labels there have no gold label" in why
    with pytest.raises(BadInputError, match="in part"):
        labels_ppi(judge, _run_truth(y, s, g, band))
    # Verdict 0's lessons all tied: answered, without a truth; still one of the sample.
    tied = _run_truth(y, s, g, on & (g != 0))
    tied.candidates["answered"] = on
    data = labels_ppi(judge, tied)
    assert data.n_sampled == 20 and "0" in set(data.sampled)
    assert not data.judged_human[data.groups_human == "0"].any()


def test_a_judge_is_corrected_by_whole_verdicts_never_by_a_band(store):
    """Issue 36 item 1 on the sample: gold labels of a queue's band (lessons in [0.6, 0.8],
    at most 2 per verdict) leave the judge uncorrected under auto, with one warning
    naming them, and are refused by ppi; every lesson of a random half of the verdicts
    corrects it."""
    lc = labelled_candidates(store, GOOD, transfer=None)
    lc = lc[lc["labelled"] & lc["valid"]]
    rng = np.random.default_rng(5)
    flip = rng.random(len(lc)) < 0.2
    judge = pd.DataFrame({"verdict_hash": lc["verdict_hash"], "extractor": lc["extractor_id"],
                          "lesson_index": lc["lesson_index"],
                          "useful": np.where(flip, 1 - lc["label"], lc["label"]).astype(int),
                          "annotator": "judge:noisy@judge-v1"})
    human = run_labels(store)
    human = human[human["extractor"] == "sim-good-v1"]
    key = pd.MultiIndex.from_frame(human[["verdict_hash", "lesson_index"]].astype(
        {"lesson_index": "int64"}))
    sal = lc.set_index(["verdict_hash", "lesson_index"])["salience"]
    s = sal.reindex(key).to_numpy(dtype=np.float64)
    in_band = human[(s >= 0.6) & (s <= 0.8)]
    first_two = in_band.drop_duplicates(["verdict_hash", "lesson_index"]).groupby(
        "verdict_hash").head(2)
    band = in_band.merge(first_two[["verdict_hash", "lesson_index"]])
    verdicts = pd.unique(human["verdict_hash"])
    half = rng.choice(verdicts, size=len(verdicts) // 2, replace=False)
    whole = human[human["verdict_hash"].isin(half)]
    truth = "judge:noisy@judge-v1"
    got = sweep_run(store, GOOD, truth=truth, labels=pd.concat([whole, judge]),
                    thresholds=[0.7])
    assert got.attrs["correction"]["correction"] == "ppi"
    assert got.attrs["correction"]["people_verdicts"] == len(half)
    with pytest.warns(PartialLabelsWarning, match=r"not corrected: .* in part: \d+ lesson"):
        got = sweep_run(store, GOOD, truth=truth, labels=pd.concat([band, judge]),
                        thresholds=[0.7])
    assert got.attrs["correction"]["correction"] == "none"
    with pytest.raises(BadInputError, match=r"correct='ppi' refused: .* no gold label"):
        sweep_run(store, GOOD, truth=truth, labels=pd.concat([band, judge]), correct="ppi")


def test_a_ratio_at_its_bound_takes_its_width_from_the_replicates_spread():
    """Issue 36 item 2: classic PPI clipped to 1 while its replicates spread gets the t
    interval of the unclipped replicates, not the people's-count one; replicates that
    all agreed still take the people's count."""
    p, units, n = np.array([1.0, 1.0, 0.8]), np.array([400.0, 400.0, 400.0]), 30
    raw = np.array([1.03, 1.0, 0.8])
    var_raw = np.array([0.04 ** 2, 0.0, 0.05 ** 2])
    var = np.array([0.0, 0.0, 0.05 ** 2])
    lo, hi = ratio_interval(p, raw, var, var_raw, units, n, 0.95)
    w_lo, w_hi = wilson_interval(p, var, units, n, 0.95)
    q = t_quantile(0.975, n - 1)
    assert lo[0] == pytest.approx(1.03 - q * 0.04 * np.sqrt(n / (n - 1))) and hi[0] == 1.0
    assert lo[0] < w_lo[0] - 0.03  # the people's count alone: [0.99, 1]
    assert (lo[1], hi[1]) == (w_lo[1], w_hi[1])  # every replicate agreed
    assert (lo[2], hi[2]) == (w_lo[2], w_hi[2])  # inside: Wilson's
    f_lo, f_hi = ratio_interval(p, raw, var, var_raw, units, n, 0.95, fixed=True)
    assert f_lo[2] <= w_lo[2] and f_hi[2] >= w_hi[2]
    assert f_lo[2] == pytest.approx(min(w_lo[2], 0.8 - q * 0.05 * np.sqrt(n / (n - 1))))


@pytest.mark.parametrize("values", [
    [],
    ["a"],
    ["b", "b", "a", "a", "b", "c", "c"],  # a verdict in two runs
    ["a", None, None, "b", np.nan, np.nan, None, "a"],  # missing values: one group
    [1, 1, 1.0, 2, "2", "2", 2],  # equal across types, as the hash sees them
    list("abcdefgh"),  # no runs: every row hashed
])
def test_group_codes_equal_factorize(values):
    """ppi_data's codes of the rows' verdicts hash the first row of each run only: the
    same codes and verdicts as hashing every row."""
    arr = np.array(values, dtype=object)
    rng = np.random.default_rng(len(values))
    for x in (arr, np.repeat(arr, rng.integers(1, 4, len(arr)))):
        codes, uniques = group_codes(x)
        want_codes, want_uniques = pd.factorize(x, use_na_sentinel=False)
        assert codes.dtype == np.int64
        np.testing.assert_array_equal(codes, want_codes)
        assert pd.Index(uniques, dtype=object).equals(pd.Index(want_uniques, dtype=object))
