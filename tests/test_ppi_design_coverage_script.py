"""scripts/ppi_design_coverage.py: its queue band is the queue's design, the band's labels
are refused, whole verdicts are corrected, and its table has a row per design."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

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
    queued = df[df["design"] == "queue whole verdicts"]
    assert queued["n"].tolist() == [pdc.WHOLE] and queued["ppi_recall"].between(0, 1).all()
    band = df[df["design"] == "queue band"]
    assert band["refused"].tolist() == [True]
    assert (df["ppi_precision_band_domain"].dropna() <= len(pdc.GRID)).all()
    table = pdc.readme_table(df)
    # header, (a), (c), (b) whole, (b) band; the band's table: blank, header, row per size
    assert len(table.splitlines()) == 2 + len(pdc.SIZES) + 3 + 3 + len(pdc.SIZES)


def test_the_whole_verdict_queue_draws_whole_verdicts_at_random() -> None:
    d = pdc.simulate(np.random.default_rng(1), 300)
    on = pdc.whole_queue(d, np.random.default_rng(2), n=40)
    assert len(np.unique(d["g"][on])) == 40
    assert on.sum() == np.isin(d["g"], np.unique(d["g"][on])).sum()  # every candidate
    assert np.isnan(d["s"][on]).any()  # the parser's dropped ones too


PAGE = Path(__file__).resolve().parent.parent / "docs" / "explanation" / "ppi.md"
COMMAND = "nice -n 10 .venv/bin/python -m scripts.ppi_design_coverage --replicates 300"


def _page_tables() -> list[str]:
    """The design table and the band's table as the page shows them (their lines)."""
    text = PAGE.read_text(encoding="utf-8")
    lines = text[text.index("| design | people's labels |"):].splitlines()
    design = lines[:lines.index("")]
    rest = text[text.index("| whole verdicts | replicates |"):].splitlines()
    return [*design, "", *rest[:rest.index("")]]


def test_the_page_shows_the_command_and_the_script_s_table_layout() -> None:
    """The page's command is the script's, and its tables have the script's columns: a
    table of another layout (or another command) no longer shows what the script prints."""
    assert f"`{COMMAND}`" in PAGE.read_text(encoding="utf-8")
    assert COMMAND in (pdc.__doc__ or "")
    page = _page_tables()
    df = pd.DataFrame(pdc.replicate(0, 300, 20, pdc.super_population(20_000),
                                    pdc.super_curve(20_000)))
    mine = pdc.readme_table(df).splitlines()
    def first(lines: list[str]) -> list[str]:
        return [line.split("|")[1] if line else "" for line in lines]

    assert first(page) == first(mine)
    assert page[0] == mine[0] and page[-len(pdc.SIZES) - 2] == mine[-len(pdc.SIZES) - 2]


@pytest.mark.slow
def test_the_page_s_tables_are_what_its_command_prints(capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    """Numbers a page shows come from the command it shows: the site's coverage tables,
    cell for cell (about 20 minutes on one core)."""
    assert pdc.main(COMMAND.split(" -m scripts.ppi_design_coverage ")[1].split()) == 0
    printed = capsys.readouterr().out.splitlines()
    page = _page_tables()
    start = printed.index(page[0])
    assert printed[start:start + len(page)] == page
