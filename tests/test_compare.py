"""Paired comparison of two extractors: bootstrap deltas and exact McNemar."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import binomtest

from truss_lab.core._errors import BadInputError
from truss_lab.evaluate._compare import ComparisonResult, compare_extractors, mcnemar_exact
from truss_lab.evaluate._sweep import UndefinedMetricWarning, sweep

DELTAS = ("precision", "recall", "f1", "kept_per_verdict")


@given(b=st.integers(0, 80), c=st.integers(0, 80))
def test_mcnemar_matches_scipy_binomtest(b, c):
    if b + c == 0:
        assert mcnemar_exact(b, c) == 1.0
        return
    expected = binomtest(b, b + c, 0.5, alternative="two-sided").pvalue
    assert mcnemar_exact(b, c) == pytest.approx(expected, rel=1e-12)


def test_mcnemar_large_counts_and_bad_input():
    expected = binomtest(2400, 5000, 0.5).pvalue
    assert mcnemar_exact(2400, 2600) == pytest.approx(expected, rel=1e-9)
    with pytest.raises(BadInputError):
        mcnemar_exact(-1, 3)


def run(seed, verdicts, quality):
    rng = np.random.default_rng(seed)
    rows = []
    for v in verdicts:
        for _ in range(rng.integers(1, 5)):
            label = int(rng.random() < 0.5)
            sal = np.clip(0.5 + quality * (label - 0.5) + rng.normal(0, 0.2), 0, 1)
            rows.append((v, round(float(sal), 2), label))
    return pd.DataFrame(rows, columns=["verdict_hash", "salience", "label"])


VERDICTS = [f"h{i:03d}" for i in range(40)]


def per_verdict_success(df, t, verdicts):
    """By hand, verdict by verdict: the kept set is right (no junk kept, and a useful
    lesson kept or, correct silence, nothing kept and nothing useful)."""
    out = set()
    for v in verdicts:
        rows = df[df["verdict_hash"] == v]
        kept = rows[rows["salience"] >= t]
        n_useful_kept = int(kept["label"].sum())
        junk_kept = len(kept) - n_useful_kept
        silence = len(kept) == 0 and int(rows["label"].sum()) == 0
        if junk_kept == 0 and (n_useful_kept >= 1 or silence):
            out.add(v)
    return out


def reference_paired(a, b, common, t_a, t_b, *, n_boot, seed, confidence):
    """Slow reference: loop over replicates, rebuild both resampled runs."""
    rng = np.random.default_rng(seed)
    ga = {v: a[a["verdict_hash"] == v] for v in common}
    gb = {v: b[b["verdict_hash"] == v] for v in common}

    def metrics(df, t):
        kept = int((df["salience"] >= t).sum())
        tp = int(((df["salience"] >= t) & (df["label"] == 1)).sum())
        n_pos = int(df["label"].sum())
        fp, fn = kept - tp, n_pos - tp
        return {
            "precision": tp / kept if kept else np.nan,
            "recall": tp / n_pos if n_pos else np.nan,
            "f1": 2 * tp / (2 * tp + fp + fn) if 2 * tp + fp + fn else np.nan,
            "kept_per_verdict": kept / len(common),
        }

    deltas = {m: np.empty(n_boot) for m in DELTAS}
    for r in range(n_boot):
        idx = rng.integers(0, len(common), size=len(common))
        ra = pd.concat([ga[common[i]] for i in idx])
        rb = pd.concat([gb[common[i]] for i in idx])
        ma, mb = metrics(ra, t_a), metrics(rb, t_b)
        for m in DELTAS:
            deltas[m][r] = mb[m] - ma[m]
    alpha = 1 - confidence
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return {m: np.nanquantile(deltas[m], [alpha / 2, 1 - alpha / 2]) for m in DELTAS}


def test_paired_bootstrap_equals_reference_and_point_estimates_equal_sweep():
    a = run(0, VERDICTS[:35], quality=0.3)
    b = run(1, VERDICTS[5:], quality=0.6)
    res = compare_extractors(
        a, b, threshold=[0.5, 0.7], threshold_b=[0.6, 0.4], n_boot=150, random_state=9,
        names=("old", "new"),
    )
    assert isinstance(res, ComparisonResult)
    assert res.only_in_a == VERDICTS[:5] and res.only_in_b == VERDICTS[35:]
    common = VERDICTS[5:35]
    assert res.n_common == len(common)
    ca = a[a["verdict_hash"].isin(common)]
    cb = b[b["verdict_hash"].isin(common)]
    for i, (t_a, t_b) in enumerate([(0.5, 0.6), (0.7, 0.4)]):
        row = res.table.iloc[i]
        assert (row["threshold_a"], row["threshold_b"]) == (t_a, t_b)
        sa = sweep(ca["label"], ca["salience"], groups=ca["verdict_hash"], thresholds=[t_a])
        sb = sweep(cb["label"], cb["salience"], groups=cb["verdict_hash"], thresholds=[t_b])
        for m in DELTAS:
            assert row[f"{m}_a"] == pytest.approx(sa[m].iloc[0])
            assert row[f"delta_{m}"] == pytest.approx(sb[m].iloc[0] - sa[m].iloc[0])
        ref = reference_paired(a, b, common, t_a, t_b, n_boot=150, seed=9, confidence=0.95)
        for m in DELTAS:
            np.testing.assert_allclose(
                [row[f"delta_{m}_low"], row[f"delta_{m}_high"]], ref[m], rtol=0, atol=1e-15
            )
        succ_a = per_verdict_success(ca, t_a, common)
        succ_b = per_verdict_success(cb, t_b, common)
        assert row["success_a"] == len(succ_a) and row["success_b"] == len(succ_b)
        assert row["a_only"] == len(succ_a - succ_b) and row["b_only"] == len(succ_b - succ_a)
        assert row["mcnemar_p"] == pytest.approx(mcnemar_exact(row["a_only"], row["b_only"]))


def test_identical_runs_have_zero_deltas():
    a = run(2, VERDICTS, quality=0.5)
    res = compare_extractors(a, a.copy(), threshold=0.5, n_boot=50)
    row = res.table.iloc[0]
    for m in ("precision", "f1", "kept_per_verdict"):
        assert row[f"delta_{m}"] == 0 and row[f"delta_{m}_low"] == 0 == row[f"delta_{m}_high"]
    assert row["mcnemar_p"] == 1.0 and res.only_in_a == [] == res.only_in_b


def test_repr_and_escaped_html():
    a = run(3, [*VERDICTS[:10], "<script>alert(1)</script>"], quality=0.5)
    b = run(4, VERDICTS[:10], quality=0.5)
    res = compare_extractors(a, b, threshold=0.5, n_boot=20, names=("a&b", "c"))
    text = repr(res)
    assert "1 only in 'a&b'" in text and "McNemar p=" in text
    page = res._repr_html_()
    assert "<script>" not in page and "&lt;script&gt;" in page and "a&amp;b" in page


def test_no_common_verdicts_gives_nan_intervals():
    a = run(5, VERDICTS[:5], quality=0.5)
    b = run(6, VERDICTS[5:10], quality=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        res = compare_extractors(a, b, threshold=0.5, n_boot=10)
    assert res.n_common == 0 and len(res.only_in_a) == 5
    assert np.isnan(res.table["delta_f1_low"].iloc[0])


@pytest.mark.parametrize(
    "change,kwargs,field",
    [
        ("drop_label", {}, "label"),
        (None, {"threshold": [0.5, np.nan]}, "threshold"),
        (None, {"threshold": [0.5], "threshold_b": [0.5, 0.6]}, "threshold_b"),
        (None, {"n_boot": 0}, "n_boot"),
        (None, {"threshold": "high"}, "threshold"),
        ("bad_label", {}, "a.label"),
    ],
)
def test_bad_input(change, kwargs, field):
    a = run(7, VERDICTS[:5], quality=0.5)
    if change == "drop_label":
        a = a.drop(columns="label")
    if change == "bad_label":
        a.loc[0, "label"] = 3
    args = {"threshold": 0.5, **kwargs}
    with pytest.raises(BadInputError) as err:
        compare_extractors(a, run(8, VERDICTS[:5], quality=0.5), **args)
    assert err.value.field == field


def test_processed_verdicts_without_candidates_are_common() -> None:
    # Run B processed verdict "v2" but proposed nothing there: it is a common
    # verdict where B kept nothing, not a verdict missing from B.
    a = pd.DataFrame({"verdict_hash": ["v1", "v2"], "salience": [0.9, 0.9], "label": [1, 1]})
    b = pd.DataFrame({"verdict_hash": ["v1"], "salience": [0.9], "label": [1]})
    without = compare_extractors(a, b, threshold=0.5, n_boot=10)
    assert without.n_common == 1 and without.only_in_a == ["v2"]
    res = compare_extractors(a, b, threshold=0.5, n_boot=10, verdicts_a=["v1", "v2"],
                             verdicts_b=["v1", "v2"])
    assert res.n_common == 2 and res.only_in_a == [] and res.only_in_b == []
    row = res.table.iloc[0]
    # B kept nothing on v2 and had nothing useful there (gold labels judge only
    # what an extractor proposed): correct silence, a success like A's.
    assert (row["success_a"], row["success_b"], row["a_only"]) == (2, 2, 0)
    assert row["kept_per_verdict_b"] == 0.5


def test_correct_silence_is_a_success_and_mcnemar_counts_it():
    # v1: A keeps a useful lesson, B stays quiet although it had one (a miss);
    # v2: nothing useful anywhere, A keeps junk, B stays quiet (correct silence);
    # v3: both quiet, nothing useful (both succeed: concordant);
    # v4: a useful lesson the parser dropped (NaN) -- silence is a miss for both;
    # v5: B keeps only an unlabelled lesson: not a success by itself.
    a = pd.DataFrame({
        "verdict_hash": ["v1", "v2", "v3", "v4", "v5"],
        "salience": [0.9, 0.8, 0.2, np.nan, 0.9],
        "label": [1, 0, 0, 1, 1],
    })
    b = pd.DataFrame({
        "verdict_hash": ["v1", "v2", "v3", "v4", "v5"],
        "salience": [0.3, 0.1, 0.2, np.nan, 0.9],
        "label": [1, 0, 0, 1, 0],
        "judged": [1, 1, 1, 1, 0],
    })
    res = compare_extractors(a, b, threshold=0.5, n_boot=10)
    row = res.table.iloc[0]
    # successes by hand: A on v1, v3, v5; B on v2, v3
    assert (row["success_a"], row["success_b"]) == (3, 2)
    assert (row["a_only"], row["b_only"]) == (2, 1)
    assert row["mcnemar_p"] == pytest.approx(binomtest(1, 3, 0.5).pvalue)
    assert "correct silence" in res.outcome
