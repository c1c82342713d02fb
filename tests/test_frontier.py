"""Issue 27 item 4: `truss-lab frontier RUN...` puts cost per verdict (tokens x prices),
latency p50/p95 and F1 with its interval side by side, and marks a run dominated only
when another is cheaper AND has an F1 above the run's whole interval."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import truss_lab as tl
from tests.builders.cli import invoke, invoke_json
from tests.builders.http_server import ScriptedServer
from tests.builders.stores import copy_db
from truss_lab.evaluate import bootstrap_run, dominance, sweep_run
from truss_lab.faces._display import save_frontier_plot
from truss_lab.store._usage import run_usage

VERDICTS = "seq <= 200"
PRICES = '''currency = "EUR"
[models."tiny"]
input_per_million = 2.0
output_per_million = 8.0
'''


def table(**cols: list) -> pd.DataFrame:
    return pd.DataFrame({"run_id": [f"r{i}" for i in range(len(cols["cost"]))],
                         "cost_per_verdict": cols["cost"], "f1": cols["f1"],
                         "f1_high": cols["high"]})


# -- the rule --------------------------------------------------------------------------


def test_a_cheaper_run_within_the_f1_interval_does_not_dominate() -> None:
    # r1 is cheaper and its F1 is higher, but inside r0's interval: nothing is dominated.
    d = dominance(table(cost=[2.0, 1.0], f1=[0.60, 0.64], high=[0.65, 0.70]))
    assert d["dominated"].tolist() == [False, False]
    assert d["dominated_by"].tolist() == ["", ""]


def test_cheaper_and_above_the_interval_dominates() -> None:
    d = dominance(table(cost=[2.0, 1.0, 0.5], f1=[0.60, 0.66, 0.70], high=[0.65, 0.72, 0.75]))
    assert d["dominated"].tolist() == [True, False, False]
    assert d["dominated_by"].tolist() == ["r2, r1", "", ""]  # cheapest first


@pytest.mark.parametrize(("cost", "f1", "high"), [
    ([1.0, 1.0], [0.2, 0.9], [0.3, 0.95]),  # as cheap is not cheaper
    ([1.0, 0.5], [0.6, 0.4], [0.7, 0.5]),   # cheaper but worse
    ([1.0, np.nan], [0.2, 0.9], [0.3, 0.95]),  # no cost: no verdict either way
    ([1.0, 0.5], [0.2, np.nan], [0.3, np.nan]),  # no F1
])
def test_nothing_is_dominated_without_both_a_lower_cost_and_a_clear_f1(
        cost: list, f1: list, high: list) -> None:
    assert not dominance(table(cost=cost, f1=f1, high=high))["dominated"].any()


# -- over the store --------------------------------------------------------------------


@pytest.fixture(scope="module")
def db(sample_full: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample with a grid of two replayed extractors and one live run (local server)."""
    folder = tmp_path_factory.mktemp("frontier")
    path = copy_db(sample_full, folder / "lab.duckdb")
    grid = folder / "grid.toml"
    grid.write_text(f'name = "f"\nverdicts = "{VERDICTS}"\n[[axes]]\n'
                    'extractor = ["replay:sim-good-v1", "replay:sim-overconfident-v1"]\n')
    assert invoke("grid", grid, "--db", path, "--quiet").exit_code == 0
    mp = pytest.MonkeyPatch()
    mp.setenv("OPENAI_API_KEY", "sk-test-frontier")
    try:
        with ScriptedServer(latency=0.002) as srv:
            r = invoke("extract", "--db", path, "--extractor", "openai:tiny", "--base-url",
                       srv.base_url, "--policy", "model-scored", "--min-salience", "0.75",
                       "--verdicts", VERDICTS, "--run-id", "live", "--dry-run", "--quiet")
            assert r.exit_code == 0, r.output
    finally:
        mp.undo()
    (folder / "prices.toml").write_text(PRICES)
    return path


def test_cost_latency_and_f1_are_the_runs_own(db: Path) -> None:
    ids = ["f-replay-sim-good-v1", "f-replay-sim-overconfident-v1", "live"]
    with tl.Store(db, read_only=True) as s:
        f = tl.frontier(s, ids, truth="references", prices=db.parent / "prices.toml",
                        n_boot=200)
        tokens, lat = s.sql("SELECT sum(prompt_tokens), sum(completion_tokens) FROM "
                            "completions WHERE run_id = 'live'").fetchall()[0], \
            s.sql("SELECT latency_ms FROM completions WHERE run_id = 'live'").df()
        t = f.table.set_index("run_id")
        assert f.truth == "references" and f.currency == "EUR"
        live = t.loc["live"]
        assert live["cost"] == pytest.approx((tokens[0] * 2.0 + tokens[1] * 8.0) / 1e6)
        assert live["cost_per_verdict"] == pytest.approx(live["cost"] / 200)
        assert live["latency_ms_p50"] == pytest.approx(np.percentile(lat["latency_ms"], 50))
        assert live["latency_ms_p95"] == pytest.approx(np.percentile(lat["latency_ms"], 95))
        # Each run at its own gate threshold: 0.75 for the live run, 0.70 for the grid's.
        assert t["threshold"].tolist() == [0.7, 0.7, 0.75]
        for rid in ids:
            boot = bootstrap_run(s, rid, thresholds=[t.loc[rid, "threshold"]], n_boot=200,
                                 truth="references", correct="none").table.iloc[0]
            assert (t.loc[rid, "f1_low"], t.loc[rid, "f1_high"]) == \
                (boot["f1_low"], boot["f1_high"])
            sw = sweep_run(s, rid, truth="references", thresholds=[t.loc[rid, "threshold"]],
                           correct="none")
            assert t.loc[rid, "f1"] == pytest.approx(sw["f1"].iloc[0])
            assert t.loc[rid, "f1_low"] <= t.loc[rid, "f1"] <= t.loc[rid, "f1_high"]
        assert t.loc["f-replay-sim-good-v1", "name"] == "extractor=replay:sim-good-v1"
        # A replay is read from the recorded calls it answered from; their model has no
        # price in this table, so no cost, and the note says so.
        good = t.loc["f-replay-sim-good-v1"]
        u = run_usage(s, "f-replay-sim-good-v1")
        assert (live["calls"], good["calls"]) == ("live", "recorded")
        assert (good["prompt_tokens"], good["latency_ms_p95"]) == \
            (u.recorded_prompt_tokens, u.recorded_latency_ms_p95) and u.recorded_calls > 0
        assert math.isnan(good["cost"]) and "replayed from extractor sim-good-v1" in \
            good["cost_note"]


def test_without_prices_there_is_no_cost_and_nothing_is_dominated(db: Path) -> None:
    with tl.Store(db, read_only=True) as s:
        f = tl.frontier(s, ["f-replay-sim-good-v1", "live"], truth="references", n_boot=50)
    assert f.table["cost"].isna().all() and not f.table["dominated"].any()
    assert "no price table" in f.table["cost_note"].iloc[0]
    assert "cost: no price table" in repr(f)


def test_cli_frontier_by_tag_with_a_plot(db: Path, tmp_path: Path) -> None:
    png = tmp_path / "frontier.png"
    out = invoke_json("frontier", "live", "--tag", "grid:f", "--db", db, "--prices",
                      db.parent / "prices.toml", "--truth", "references", "--n-boot", "100",
                      "--plot", png)
    assert [r["run_id"] for r in out["runs"]] == ["live", "f-replay-sim-good-v1",
                                                  "f-replay-sim-overconfident-v1"]
    assert out["truth"] == "references" and out["currency"] == "EUR"
    assert out["plot"] == str(png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    r = invoke("frontier", "live", "--tag", "grid:f", "--db", db, "--prices",
               db.parent / "prices.toml", "--n-boot", "100")
    assert r.exit_code == 0, r.output
    assert "truth: references" in r.output and "F1 [interval]" in r.output
    assert "f-replay-sim-overconfident-v1" in r.output


def test_a_plot_needs_costs(db: Path, tmp_path: Path) -> None:
    r = invoke("frontier", "live", "--db", db, "--plot", tmp_path / "x.png")
    assert r.exit_code == 2 and "give --prices" in r.output
    with tl.Store(db, read_only=True) as s:
        f = tl.frontier(s, ["live"], truth="references", n_boot=20)
    with pytest.raises(tl.BadInputError, match="no run has a cost"):
        save_frontier_plot(f, tmp_path / "y.png")


def test_unknown_runs_and_no_runs_are_one_line(db: Path) -> None:
    r = invoke("frontier", "nope", "--db", db)
    assert r.exit_code == 2 and "no extraction run 'nope'" in r.output
    r = invoke("frontier", "--tag", "no-such-tag", "--db", db)
    assert r.exit_code == 2 and "no runs" in r.output


# -- the price table --------------------------------------------------------------------


@pytest.mark.parametrize(("text", "where", "what"), [
    ('[models."tiny"\ninput_per_million = 1\n', ", line 1", "not TOML"),
    ('currency = "EUR"\n', ", field 'models'", 'expected [models."NAME"]'),
    ('[models."tiny"]\ninput_per_million = "free"\noutput_per_million = 1\n',
     ", field 'models.tiny'", "expected numbers >= 0"),
    ('[models."tiny"]\ninput_per_million = -1\noutput_per_million = 1\n',
     ", field 'models.tiny'", "expected numbers >= 0"),
    ('[models."tiny"]\ninput_per_million = 1\n', ", field 'models.tiny'", "output_per_million"),
    ('currency = ""\n[models."tiny"]\ninput_per_million = 1\noutput_per_million = 1\n',
     ", field 'currency'", "non-empty"),
    (b'[models."\xff"]\n', "", "not UTF-8"),
])
def test_a_bad_price_table_is_one_line_naming_file_and_line_or_key(
        db: Path, tmp_path: Path, text: str | bytes, where: str, what: str) -> None:
    prices = tmp_path / "prices.toml"
    if isinstance(text, bytes):
        prices.write_bytes(text)
    else:
        prices.write_text(text)
    r = invoke("frontier", "live", "--db", db, "--prices", prices)
    assert r.exit_code == 2, r.output
    line = r.output.strip()
    assert len(line.splitlines()) == 1 and line.startswith(f"error: {prices}{where}"), line
    assert what in line
    r = invoke("frontier", "live", "--db", db, "--prices", tmp_path / "missing.toml")
    assert r.exit_code == 2 and "cannot read the price table" in r.output


def test_a_model_without_a_price_leaves_that_run_without_a_cost(db: Path,
                                                                 tmp_path: Path) -> None:
    prices = tmp_path / "other.toml"
    prices.write_text('[models."other"]\ninput_per_million = 1\noutput_per_million = 1\n')
    with tl.Store(db, read_only=True) as s:
        f = tl.frontier(s, ["live"], truth="references", prices=prices, n_boot=20)
    row = f.table.iloc[0]
    assert math.isnan(row["cost"]) and "no price for model(s) tiny" in row["cost_note"]


def test_judged_by_references_with_another_matcher(db: Path) -> None:
    from truss_lab.score import SemanticMatcher

    out = invoke_json("frontier", "f-replay-sim-good-v1", "--db", db, "--truth", "references",
                      "--matcher", "semantic", "--n-boot", "100")
    assert out["matcher"] == "semantic"
    # The sample's people matched some of its verdicts: auto corrects the semantic matcher.
    assert out["correction"] == "ppi" and out["people_verdicts"]["f-replay-sim-good-v1"] > 0
    with tl.Store(db, read_only=True) as s:
        boot = bootstrap_run(s, "f-replay-sim-good-v1", thresholds=[0.7], n_boot=100,
                             truth="references", matcher=SemanticMatcher(),
                             correct="ppi").table.iloc[0]
        default = tl.frontier(s, ["f-replay-sim-good-v1"], truth="references", n_boot=100)
        lexical = tl.frontier(s, ["f-replay-sim-good-v1"], n_boot=100,
                              truth=tl.Truth.references(matcher="lexical"))
    row = out["runs"][0]
    assert (row["f1"], row["f1_low"], row["f1_high"]) == pytest.approx(
        (boot["f1"], boot["f1_low"], boot["f1_high"]), rel=1e-5)
    assert default.matcher == "semantic" and lexical.matcher == "lexical"
