"""Threshold choice: verdict splits, objectives, held-out metrics."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.builders.profiles import examples
from truss_lab.core._errors import BadInputError
from truss_lab.evaluate._bootstrap import seed_streams
from truss_lab.evaluate._choose import (
    ThresholdChoice,
    choose_threshold,
    split_by_verdict,
    verdict_kfold,
)
from truss_lab.evaluate._objective import Objective
from truss_lab.evaluate._sweep import UndefinedMetricWarning, sweep


def make_data(seed, n_verdicts=80):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 7, n_verdicts)
    groups = rng.permutation(np.repeat([f"v{i}" for i in range(n_verdicts)], sizes))
    s = np.round(rng.random(len(groups)), 2)
    y = (rng.random(len(groups)) < s).astype(int)
    return y, s, groups


@settings(max_examples=examples(150), deadline=None)
@given(
    groups=st.lists(st.integers(0, 30), min_size=2, max_size=200),
    frac=st.floats(0.01, 0.99),
    seed=st.integers(0, 2**32 - 1),
)
def test_split_never_puts_a_verdict_on_both_sides(groups, frac, seed):
    groups = np.array(groups)
    n_verdicts = len(np.unique(groups))
    n_test = math.ceil(frac * n_verdicts)
    if not 1 <= n_test <= n_verdicts - 1:
        with pytest.raises(BadInputError):
            split_by_verdict(groups, test_size=frac, random_state=seed)
        return
    train, test = split_by_verdict(groups, test_size=frac, random_state=seed)
    assert set(groups[train]).isdisjoint(groups[test])
    assert np.array_equal(np.sort(np.r_[train, test]), np.arange(len(groups)))
    assert len(set(groups[test])) == n_test


def test_split_is_seeded():
    g = np.repeat(np.arange(50), 3)
    a = split_by_verdict(g, test_size=0.3, random_state=1)
    b = split_by_verdict(g, test_size=0.3, random_state=1)
    c = split_by_verdict(g, test_size=0.3, random_state=2)
    assert np.array_equal(a[1], b[1]) and not np.array_equal(a[1], c[1])
    assert len(set(g[split_by_verdict(g, test_size=7)[1]])) == 7


@settings(max_examples=examples(60), deadline=None)
@given(
    groups=st.lists(st.sampled_from("abcdefghij"), min_size=10, max_size=100),
    k=st.integers(2, 5),
    seed=st.integers(0, 1000),
)
def test_kfold_tests_each_verdict_once(groups, k, seed):
    groups = np.array(groups)
    n_verdicts = len(set(groups))
    if k > n_verdicts:
        with pytest.raises(BadInputError):
            verdict_kfold(groups, n_splits=k, random_state=seed)
        return
    folds = verdict_kfold(groups, n_splits=k, random_state=seed)
    assert len(folds) == k
    tested = np.concatenate([test for _, test in folds])
    assert np.array_equal(np.sort(tested), np.arange(len(groups)))
    for train, test in folds:
        assert set(groups[train]).isdisjoint(groups[test])
    sizes = [len(set(groups[test])) for _, test in folds]
    assert max(sizes) - min(sizes) <= 1


def _train_sweep(y, s, g, seed, test_size=0.3):
    train, test = split_by_verdict(g, test_size=test_size, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return sweep(y[train], s[train], groups=g[train]), (train, test)


def test_f1_choice_is_the_training_argmax_and_test_metrics_are_held_out():
    y, s, g = make_data(0)
    choice = choose_threshold(y, s, g, random_state=4)
    tr, (_, test) = _train_sweep(y, s, g, 4)
    best = tr["f1"].max()
    assert choice.threshold == tr.loc[tr["f1"] == best, "threshold"].max()
    assert choice.train["f1"] == pytest.approx(best)
    te = sweep(y[test], s[test], groups=g[test], thresholds=[choice.threshold]).iloc[0]
    for m in ("precision", "recall", "f1", "kept_per_verdict", "kept"):
        assert choice.test[m] == pytest.approx(te[m])
    assert choice.split["n_train_verdicts"] + choice.split["n_test_verdicts"] == len(set(g))
    assert choice.split["n_test_candidates"] == len(test)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"objective": "precision_floor", "min_precision": 0.8},
        {"objective": "budget", "max_per_verdict": 1.0},
        {"objective": "cost", "cost_fp": 1.0, "cost_fn": 3.0},
        {"objective": "fbeta", "beta": 2.0},
    ],
)
def test_objectives_match_brute_force_over_the_training_sweep(kwargs):
    y, s, g = make_data(1)
    choice = choose_threshold(y, s, g, random_state=0, **kwargs)
    tr, _ = _train_sweep(y, s, g, 0)
    kind = kwargs["objective"]
    if kind == "precision_floor":
        ok = tr[tr["precision"] >= kwargs["min_precision"]]
        expected = ok.loc[ok["tp"] == ok["tp"].max(), "threshold"].max()
    elif kind == "budget":
        ok = tr[tr["kept_per_verdict"] <= kwargs["max_per_verdict"]]
        expected = ok.loc[ok["tp"] == ok["tp"].max(), "threshold"].max()
    elif kind == "cost":
        cost = kwargs["cost_fp"] * tr["fp"] + kwargs["cost_fn"] * tr["fn"]
        expected = tr.loc[cost == cost.min(), "threshold"].max()
        # keeping nothing costs cost_fn per positive; it wins ties (highest threshold)
        if kwargs["cost_fn"] * (tr["tp"] + tr["fn"]).iloc[0] <= cost.min():
            expected = math.inf
    else:
        b2 = kwargs["beta"] ** 2
        fb = (1 + b2) * tr["tp"] / ((1 + b2) * tr["tp"] + b2 * tr["fn"] + tr["fp"])
        expected = tr.loc[np.isclose(fb, fb.max(), rtol=1e-14), "threshold"].max()
    assert choice.threshold == expected


def test_ties_go_to_the_highest_threshold():
    obj = Objective(kind="cost", cost_fp=0.0, cost_fn=1.0)
    # thresholds descending; tp saturates at index 1
    assert obj.best_index([1, 2, 3, 4], [1, 2, 2, 2], 2) == 1
    assert Objective().best_index(np.empty((3, 0)), np.empty((3, 0)), 1).tolist() == [-1] * 3


def test_cost_considers_keeping_nothing():
    g = np.repeat([f"v{i}" for i in range(40)], 3)
    rng = np.random.default_rng(3)
    s = np.round(rng.random(len(g)), 2)
    y = (rng.random(len(g)) < 0.1).astype(int)  # mostly junk, whatever the salience
    tr, (_, test) = _train_sweep(y, s, g, 0)
    nothing = 5.0 * (tr["tp"] + tr["fn"]).iloc[0]  # cost_fn * positives
    assert (10.0 * tr["fp"] + 5.0 * tr["fn"] > nothing).all()  # every data threshold costs more
    with warnings.catch_warnings():
        warnings.simplefilter("error", UndefinedMetricWarning)  # a choice, not a failure
        choice = choose_threshold(y, s, g, objective="cost", cost_fp=10.0, cost_fn=5.0,
                                  random_state=0)
    assert choice.threshold == math.inf
    assert choice.test["kept"] == 0 and choice.test["tp"] == 0
    assert choice.test["fn"] == y[test].sum() and choice.test["kept_per_verdict"] == 0
    # the objective as before: keeping nothing is never a candidate of F1
    assert math.isfinite(choose_threshold(y, s, g, random_state=0).threshold)
    # cross-validated, with both intervals: every fold keeps nothing
    cv = choose_threshold(y, s, g, objective="cost", cost_fp=10.0, cost_fn=5.0, cv=4,
                          n_boot=50, random_state=0)
    assert cv.threshold == math.inf and (cv.fold_thresholds == math.inf).all()
    assert cv.threshold_interval == (math.inf, math.inf)  # not NaN: every replicate agrees
    assert cv.test["kept"] == 0 and cv.procedure_intervals is not None
    assert cv.procedure_intervals["kept_per_verdict_high"].iloc[0] >= 0


def test_infeasible_objective_warns_and_gives_nan():
    g = np.repeat([f"v{i}" for i in range(20)], 2)
    y = np.tile([0, 1], 20)
    s = np.tile([0.9, 0.1], 20)  # the top lesson of every verdict is junk
    with pytest.warns(UndefinedMetricWarning, match="no training threshold"):
        choice = choose_threshold(y, s, g, objective="precision_floor", min_precision=0.6)
    assert math.isnan(choice.threshold) and math.isnan(choice.test["f1"])


def test_bootstrap_intervals_and_repr():
    y, s, g = make_data(2)
    choice = choose_threshold(
        y, s, g, objective="precision_floor", min_precision=0.7, n_boot=100, random_state=3
    )
    assert isinstance(choice, ThresholdChoice)
    lo, hi = choice.threshold_interval
    assert lo <= hi
    frame = choice.to_frame()
    assert {"train", "test", "test_low", "test_high"} <= set(frame.columns)
    assert frame.loc["f1", "test_low"] <= frame.loc["f1", "test_high"]
    text = repr(choice)
    assert "ThresholdChoice(threshold=" in text and "test (" in text
    page = choice._repr_html_()
    assert "&gt;= 0.7" in page and ">= 0.7" not in page.replace("&gt;", "")


@pytest.mark.parametrize("test_size", [0.0, 1.0, 0, 1000, "0.3", True])
def test_bad_test_size(test_size):
    y, s, g = make_data(4, 10)
    with pytest.raises(BadInputError) as err:
        choose_threshold(y, s, g, test_size=test_size)
    assert err.value.field == "test_size"


# -- counts as sweep counts them, cross-validation, random streams ------------------------


def test_choice_counts_unjudged_candidates_and_empty_verdicts_like_sweep():
    y, s, g = make_data(5)
    rng = np.random.default_rng(5)
    judged = rng.random(len(y)) < 0.7
    verdicts = [*dict.fromkeys(g), "empty-1", "empty-2", "empty-3"]
    choice = choose_threshold(y, s, g, judged=judged, verdicts=verdicts, random_state=1)
    train, test = split_by_verdict(g, random_state=1, verdicts=verdicts)
    sp = choice.split
    assert sp["n_train_verdicts"] + sp["n_test_verdicts"] == len(verdicts)
    for side, idx, n_v in (("train", train, sp["n_train_verdicts"]),
                           ("test", test, sp["n_test_verdicts"])):
        want = sweep(y[idx], s[idx], judged=judged[idx], n_verdicts=n_v,
                     thresholds=[choice.threshold]).iloc[0]
        for m in ("kept", "tp", "fp", "precision", "recall", "kept_per_verdict", "write_rate"):
            assert getattr(choice, side)[m] == pytest.approx(want[m], rel=1e-12)
    with pytest.raises(BadInputError, match="not among verdicts"):
        choose_threshold(y, s, g, verdicts=verdicts[1:])


def test_cross_validated_choice_is_each_folds_training_argmax():
    y, s, g = make_data(6, 120)
    choice = choose_threshold(y, s, g, cv=5, cv_repeats=2, random_state=2)
    assert choice.split["cv"] == 5 and len(choice.folds) == 10
    rng = seed_streams(2)["folds"]
    k = 0
    for _ in range(2):
        for train, test in verdict_kfold(g, n_splits=5, random_state=rng):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UndefinedMetricWarning)
                tr = sweep(y[train], s[train], groups=g[train])
            want = tr.loc[np.isclose(tr["f1"], tr["f1"].max(), rtol=1e-14), "threshold"].max()
            row = choice.folds.iloc[k]
            assert row["threshold"] == want
            te = sweep(y[test], s[test], groups=g[test], thresholds=[want]).iloc[0]
            for m in ("kept", "tp", "fp", "f1", "kept_per_verdict"):
                assert row[m] == pytest.approx(te[m])
            k += 1
    f = choice.folds
    assert choice.test["precision"] == pytest.approx(f["tp"].sum() / (f["tp"] + f["fp"]).sum())
    assert choice.test["recall"] == pytest.approx(f["tp"].sum() / (f["tp"] + f["fn"]).sum())
    whole = sweep(y, s, groups=g)
    assert choice.threshold == whole.loc[whole["f1"] == whole["f1"].max(), "threshold"].max()
    assert choice.threshold_spread["max"] >= choice.threshold_spread["min"]


def test_random_streams_are_independent():
    y, s, g = make_data(7)
    a = choose_threshold(y, s, g, random_state=4, n_boot=50)
    b = choose_threshold(y, s, g, random_state=4, n_boot=200)
    assert a.split == b.split and a.test == b.test  # replicates never move the split
    streams = seed_streams(4)
    assert set(streams) == {"split", "folds", "bootstrap", "choice"}
    draws = {k: v.integers(0, 2**32, 4).tolist() for k, v in streams.items()}
    assert len({tuple(d) for d in draws.values()}) == 4
    assert seed_streams(4)["split"].integers(0, 2**32, 4).tolist() == draws["split"]


def test_two_labelled_intervals_fixed_and_procedure():
    y, s, g = make_data(8, 150)
    choice = choose_threshold(y, s, g, n_boot=300, random_state=0)
    fixed, proc = choice.test_intervals.iloc[0], choice.procedure_intervals.iloc[0]
    for m in ("precision", "recall", "f1"):
        assert fixed[f"{m}_low"] <= choice.test[m] <= fixed[f"{m}_high"]
        assert proc[f"{m}_low"] <= proc[f"{m}_high"]
    frame = choice.to_frame()
    assert {"test_low", "procedure_low", "procedure_high"} <= set(frame.columns)
    text = repr(choice)
    assert "threshold held fixed" in text and "covers the choice of threshold" in text
    cv = choose_threshold(y, s, g, cv=5, n_boot=300, random_state=0)
    assert cv.procedure_intervals is not None and "thresholds per fold" in repr(cv)


@pytest.mark.parametrize("kwargs", [{"cv": 1}, {"cv": 1000}, {"cv": 5, "cv_repeats": 0}])
def test_bad_cv(kwargs):
    y, s, g = make_data(9, 20)
    with pytest.raises(BadInputError):
        choose_threshold(y, s, g, **kwargs)


@pytest.mark.parametrize("kwargs", [{"cv": 5}, {"cv": None, "test_size": 0.3},
                                    {"objective": "precision_floor", "min_precision": 0.7},
                                    {"objective": "cost", "cost_fp": 1.0, "cost_fn": 3.0}])
def test_the_threshold_interval_alone_is_the_full_bootstraps(kwargs):
    """intervals="threshold" (what a slice's own threshold shows) gives the interval of
    the choice the full bootstrap gives, bit for bit, and nothing it did not compute."""
    y, s, g = make_data(10, 120)
    judged = np.arange(len(y)) % 7 != 0
    opts = {"n_boot": 150, "random_state": 5, "judged": judged, **kwargs}
    full = choose_threshold(y, s, g, **opts)
    alone = choose_threshold(y, s, g, intervals="threshold", **opts)
    assert alone.threshold_interval == full.threshold_interval
    assert alone.threshold == full.threshold and alone.test == full.test
    assert alone.test_intervals is None and alone.procedure_intervals is None
    assert alone.bootstrap is None and full.bootstrap is not None
    with pytest.raises(BadInputError, match="intervals"):
        choose_threshold(y, s, g, intervals="some", **opts)
