"""Issue #12 step 1: objectives compare counts exactly, thresholds mean what they show."""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.builders.profiles import examples
from truss_lab.evaluate._bootstrap import bootstrap_metrics
from truss_lab.evaluate._objective import Objective, ratio_at_least, ratio_at_most
from truss_lab.evaluate._sweep import ThresholdGridWarning, sweep


def test_the_two_reproductions_of_the_issue() -> None:
    # 14/25 is 0.56 and 63/90 is 0.7: both thresholds are feasible exactly at the bound
    assert Objective("precision_floor", min_precision=0.56).best_index([5, 25], [5, 14], 14) == 1
    assert Objective("budget", max_per_verdict=0.7).best_index([63], [63], 63, 90) == 0


# A bound typed as a decimal with up to 4 places, and integer counts up to 200.
_bound = st.integers(0, 10_000).map(lambda i: (Fraction(i, 10_000), float(f"{i / 10_000:.4f}")))


@settings(max_examples=examples(500), deadline=None)
@given(_bound, st.integers(1, 200), st.data())
def test_feasibility_agrees_with_fractions(bound: tuple[Fraction, float], den: int,
                                           data: st.DataObject) -> None:
    exact, typed = bound
    num = data.draw(st.integers(0, den))
    assert bool(ratio_at_least([num], [den], typed)[0]) == (Fraction(num, den) >= exact)
    assert bool(ratio_at_most([num], [den], typed)[0]) == (Fraction(num, den) <= exact)


@settings(max_examples=examples(300), deadline=None)
@given(st.integers(1, 200), st.integers(1, 200), st.data())
def test_objectives_agree_with_fractions_of_the_typed_bound(kept: int, verdicts: int,
                                                           data: st.DataObject) -> None:
    # The bound typed as the float of a count ratio (what a user copies from a table):
    # feasible exactly when the counts reach the decimal that float reads as.
    tp = data.draw(st.integers(0, kept))
    p = data.draw(st.sampled_from([tp / kept, round(tp / kept, 2), round(tp / kept, 3)]))
    want = Fraction(tp, kept) >= Fraction(repr(p))
    got = Objective("precision_floor", min_precision=p).best_index([kept], [tp], tp)
    assert (got == 0) == want
    k = data.draw(st.sampled_from([kept / verdicts, round(kept / verdicts, 2)]))
    want = Fraction(kept, verdicts) <= Fraction(repr(k))
    assert (Objective("budget", max_per_verdict=k).best_index([kept], [tp], tp, verdicts) == 0
            ) == want
    if k == kept / verdicts and round(k, 6) == k:  # exactly at a short decimal: feasible
        assert want


def test_large_counts_fall_back_to_python_integers() -> None:
    big = np.array([3 * 10**15], dtype=np.int64)
    assert ratio_at_least(big, big, 0.123456789012345)[0]
    assert not ratio_at_least(big - 1, big, 1.0)[0]


def test_a_linspace_grid_point_is_rounded_with_a_warning() -> None:
    grid = np.linspace(0, 1, 101)
    assert grid[70] != 0.7
    y = np.array([1, 1, 0, 1])
    s = np.array([0.7, 0.7, 0.9, 0.2])
    with pytest.warns(ThresholdGridWarning, match=r"10 thresholds .*0.35000000000000003 -> 0.35"):
        df = sweep(y, s, thresholds=grid)
    assert df["threshold"].iloc[70] == 0.7
    assert df["kept"].iloc[70] == 3  # the two saliences at exactly 0.70 are kept
    with pytest.warns(ThresholdGridWarning):
        bootstrap_metrics(y, s, ["a", "a", "b", "b"], thresholds=grid, n_boot=5)


def test_a_rounded_grid_or_the_data_values_never_warn() -> None:
    s = np.array([0.7000000000000001, 0.3])
    with warnings.catch_warnings():
        warnings.simplefilter("error", ThresholdGridWarning)
        sweep([1, 0], s, thresholds=np.round(np.linspace(0, 1, 101), 2))
        df = sweep([1, 0], s, thresholds=s)  # the data's own saliences stay as they are
    assert df["threshold"].iloc[0] == 0.7000000000000001
