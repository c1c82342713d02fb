"""scripts/ppi_coverage.py's people who err: without error their truth is the simulator's
and the two coverages agree; with errors the people's truth moves and ppi follows it."""

from __future__ import annotations

import pandas as pd

from scripts import ppi_coverage as pc


def _one(disagreement: float) -> pd.DataFrame:
    return pd.DataFrame(pc.replicate(0, 30, 0.7, pc.MATCHERS[:1], disagreement))


def test_without_error_the_peoples_truth_is_the_simulators() -> None:
    d = _one(0.0)
    assert len(d) == 9  # three extractors, three sizes
    for m in ("precision", "recall"):
        assert (d[f"said_{m}"] == d[f"true_{m}"]).all()
        assert (d[f"ppi_{m}_covered"] == d[f"ppi_{m}_covers_people"]).all()


def test_people_who_err_have_a_truth_of_their_own() -> None:
    d = _one(0.3)
    gap = (d["said_precision"] - d["true_precision"]).abs()
    assert (gap > 0.01).any()
    # The people's truth is over every annotated verdict: the same for every sample size.
    assert d.groupby("extractor")["said_precision"].nunique().eq(1).all()
    assert "| of the people's truth P / R |" in pc.people_table(d)
