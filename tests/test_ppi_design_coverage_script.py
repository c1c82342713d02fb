"""scripts/ppi_design_coverage.py: its queue band is the queue's design, the band's labels
are refused, whole verdicts are corrected, and its table has a row per design."""

from __future__ import annotations

import numpy as np
import pandas as pd

from scripts import ppi_design_coverage as pdc


def test_the_band_queue_deals_at_most_two_lessons_a_verdict_inside_the_band() -> None:
    d = pdc.simulate(np.random.default_rng(1), 300)
    band = pdc.band_queue(d, np.random.default_rng(2))
    s = d["s"][band]
    assert band.any() and ((s >= 0.6) & (s <= 0.8)).all()
    assert np.bincount(d["g"][band]).max() == 2
    first = pdc.band_queue(d, np.random.default_rng(2), n=20)
    assert first.sum() == 20 and np.bincount(d["g"][first]).max() == 1  # round-robin


def test_one_replicate_refuses_the_band_and_corrects_whole_verdicts() -> None:
    truth = pdc.super_population(20_000)
    assert 0.85 < truth[0] < 0.95 and 0.4 < truth[1] < 0.6
    curve = pdc.super_curve(20_000)
    at = int(np.flatnonzero(np.isclose(pdc.GRID, pdc.THRESHOLD))[0])
    assert curve["precision"][at] == truth[0]
    df = pd.DataFrame(pdc.replicate(0, 300, 50, truth, curve))
    assert df["ppi_f1_band_covered"].notna().sum() == len(pdc.SIZES)
    whole = df[df["design"] == "whole verdicts"]
    assert whole["n"].tolist() == list(pdc.SIZES)
    assert whole["ppi_precision"].between(0, 1).all()
    band = df[df["design"] == "queue band"]
    assert band["refused"].tolist() == [True]
    table = pdc.readme_table(df)
    # header, (a), (c), (b); then the band's table: blank, header, one row per size
    assert len(table.splitlines()) == 2 + len(pdc.SIZES) + 2 + 3 + len(pdc.SIZES)
