"""The label-budget planner (evaluate/_budget.py, ``truss-lab budget``): its model against
the verdict bootstrap it predicts, on arrays and on the sample; how it answers more labels,
a correction and a comparison; its errors."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest

from tests.builders.cli import invoke, invoke_json
from tests.builders.stores import SAMPLE, copy_db
from truss_lab.core._config import MemoryConfig
from truss_lab.core._errors import BadInputError
from truss_lab.evaluate._bootstrap import bootstrap_metrics
from truss_lab.evaluate._budget import (
    label_budget,
    labels_variance,
    needed_for_difference,
    ppi_variance,
)
from truss_lab.evaluate._ppi import ppi_bootstrap, ppi_data
from truss_lab.evaluate._sweep import UndefinedMetricWarning
from truss_lab.evaluate._truth import Truth
from truss_lab.extract._batch import run_extraction
from truss_lab.extract._extractor import Extractor
from truss_lab.ingest._ingest import ingest_match_labels
from truss_lab.store._store import Store

GOOD, OVER = "sim-good-v1", "sim-overconfident-v1"


def _clustered(n_verdicts: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Lessons of verdicts that differ in quality (a verdict's lessons are correlated)."""
    rng = np.random.default_rng(seed)
    k = 1 + rng.poisson(2.0, n_verdicts)
    q = rng.beta(2, 2, n_verdicts)
    g = np.repeat(np.arange(n_verdicts), k)
    y = (rng.random(len(g)) < q[g]).astype(np.uint8)
    s = np.round(np.clip(0.55 + 0.25 * y + rng.normal(0, 0.15, len(g)), 0, 1), 2)
    return y, s, g.astype(str).astype(object)


def _width(row, m: str) -> float:
    return float(row[f"{m}_high"] - row[f"{m}_low"])


def test_the_model_now_is_the_bootstraps_width() -> None:
    # The delta method on the verdicts at hand gives the percentile bootstrap's width.
    y, s, g = _clustered(400, 1)
    var = labels_variance(y, s, g, threshold=0.7)
    boot = bootstrap_metrics(y, s, g, thresholds=[0.7], n_boot=2000).table.iloc[0]
    for m in ("precision", "recall", "f1"):
        assert var[m].n_labelled == 400
        assert float(var[m].width(400)) == pytest.approx(_width(boot, m), rel=0.1)
        assert var[m].value == pytest.approx(float(boot[m]))


def test_more_labels_narrow_the_interval_and_a_narrower_one_needs_more() -> None:
    y, s, g = _clustered(200, 2)
    v = labels_variance(y, s, g, threshold=0.7)["precision"]
    w = v.width([50, 200, 800, 3200])
    assert (np.diff(w) < 0).all()
    assert w[0] / w[2] == pytest.approx(4.0)  # 1 / sqrt(n)
    n_wide, n_narrow = v.needed(0.1), v.needed(0.05)
    assert n_narrow > n_wide
    assert float(v.width(n_wide)) <= 0.1 < float(v.width(n_wide - 1))  # the fewest


def test_a_quarter_predicts_the_whole() -> None:
    # What scripts/label_budget_check.py shows over 50 datasets, here on one.
    y, s, g = _clustered(800, 3)
    quarter = np.isin(g, np.unique(g)[:200])
    v = labels_variance(y[quarter], s[quarter], g[quarter], threshold=0.7)["f1"]
    full = bootstrap_metrics(y, s, g, thresholds=[0.7], n_boot=1000).table.iloc[0]
    assert float(v.width(800)) == pytest.approx(_width(full, "f1"), rel=0.2)


def _ppi(agree: float, seed: int = 4, n: int = 60):
    """A population of 400 verdicts judged by an automated truth that agrees with the
    people on each lesson with probability ``agree``; people answered for ``n``."""
    y, s, g = _clustered(400, seed)
    rng = np.random.default_rng(seed + 100)
    flip = rng.random(len(y)) >= agree
    y_auto = np.where(flip, 1 - y, y).astype(np.uint8)
    pop = np.unique(g)
    sampled = rng.choice(pop, n, replace=False)
    mine = np.isin(g, sampled)
    return ppi_data(y_auto, s, g, y[mine], s[mine], g[mine], verdicts=pop, sampled=sampled)


def test_a_perfect_automated_truth_needs_fewer_people_labels() -> None:
    perfect, poor = ppi_variance(_ppi(1.0), threshold=0.7), ppi_variance(_ppi(0.5),
                                                                         threshold=0.7)
    for m in ("precision", "recall", "f1"):
        v = perfect[m]
        assert v.n_labelled == 60 and v.n_all == 400
        assert v.needed(0.1) < v.needed(0.1, alone=True)
        # it agrees with the people: the rectifier is 0, the people's labels barely matter
        assert float(v.width(60)) < 0.5 * float(v.width(60, alone=True))
        # one that knows nothing (a coin) saves (almost) nothing
        w = poor[m]
        assert float(w.width(60)) >= 0.85 * float(w.width(60, alone=True))


def test_the_ppi_model_follows_the_ppi_bootstrap() -> None:
    data = _ppi(0.9, n=150)
    var = ppi_variance(data, threshold=0.7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        boot = ppi_bootstrap(data, thresholds=[0.7], n_boot=1000).table.iloc[0]
    for m in ("precision", "recall", "f1"):
        assert float(var[m].width(150)) == pytest.approx(_width(boot, m), rel=0.3)
        cal = var[m].calibrated(_width(boot, m))
        assert float(cal.width(150)) == pytest.approx(_width(boot, m))
        assert float(cal.width(600)) < float(cal.width(150))


def test_the_labels_needed_to_detect_a_difference() -> None:
    # variance 1/n per verdict: n = (z_0.975 + z_0.8)^2 / d^2 = 100.1 for d = 0.28
    assert needed_for_difference(0.28, lambda n: 1.0 / np.asarray(n)) == 101
    assert needed_for_difference(-0.28, lambda n: 1.0 / np.asarray(n)) == 101
    assert needed_for_difference(0.56, lambda n: 1.0 / np.asarray(n)) == 26
    assert needed_for_difference(0.28, lambda n: 1.0 / np.asarray(n), power=0.9) > 101
    assert math.isinf(needed_for_difference(0.0, lambda n: 1.0 / np.asarray(n)))


# --------------------------------------------------------------------------- on the sample


@pytest.fixture(scope="module")
def db(sample_full: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = copy_db(sample_full, tmp_path_factory.mktemp("budget") / "sample.duckdb")
    with Store(path) as s:
        for ext in (GOOD, OVER):
            run_extraction(s, Extractor.replay(s, ext),
                           MemoryConfig(lesson_extraction="model-scored"), progress=False,
                           write_memory=False, run_id=ext)
        run_extraction(s, Extractor.heuristic(), MemoryConfig(lesson_extraction="on"),
                       progress=False, write_memory=False, run_id="heur")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the paraphrase extractor has no run here
            ingest_match_labels(s, SAMPLE / "match_labels.csv")
    return path


def test_a_runs_budget_on_the_sample(db: Path) -> None:
    with Store(db, read_only=True) as s:
        b = label_budget(s, GOOD, width=0.05, at=[100, 2000], n_boot=500)
    t = b.table.set_index("metric")
    assert list(t.index) == ["precision", "recall", "f1"]
    assert b.correction["correction"] == "none" and b.truth == "labels"
    # the delta method agrees with the bootstrap now, and the budget answers the width
    assert (t["model_width_now"] / t["width_now"]).between(0.85, 1.15).all()
    assert (t["needed"] > t["labelled"]).all()  # 0.05 is narrower than the intervals now
    assert (t["additional"] == t["needed"] - t["labelled"]).all()
    at = b.at.pivot(index="metric", columns="labelled", values="width")
    assert (at[100] > at[2000]).all()
    assert "delta method" in b.model and "labelled verdicts" in repr(b)


def test_a_corrected_budget_says_what_the_correction_saves(db: Path) -> None:
    with Store(db, read_only=True) as s:
        b = label_budget(s, GOOD, truth=Truth.references(correct="ppi"), n_boot=300)
    assert b.correction["correction"] == "ppi"
    assert b.n_labelled == b.correction["people_verdicts"]
    t = b.table
    assert {"labels_alone", "saved"} <= set(t.columns)
    assert (t["saved"] == t["labels_alone"] - t["needed"]).all()
    assert "rectifier" not in b.model and "Var(people - lam" in b.model
    assert "width_labels_alone" in b.at.columns


def test_a_comparison_is_paired_on_shared_labelled_verdicts(db: Path) -> None:
    with Store(db, read_only=True) as s:
        b = label_budget(s, GOOD, compare=OVER, n_boot=300, power=0.8)
        stronger = label_budget(s, GOOD, compare=OVER, n_boot=300, power=0.95)
    c = b.comparison.set_index("metric")
    assert c["paired"].all() and (c["labelled"] > 30).all()
    assert (c["difference"] == c["value_a"] - c["value_b"]).all()
    assert (stronger.comparison["needed"].to_numpy() >= c["needed"].to_numpy()).all()


def test_bad_input_is_one_clear_error(db: Path) -> None:
    with Store(db, read_only=True) as s:
        with pytest.raises(BadInputError, match="nope"):
            label_budget(s, "nope")
        for bad in (0, -0.1, float("nan")):
            with pytest.raises(BadInputError, match="width must be"):
                label_budget(s, GOOD, width=bad)
        with pytest.raises(BadInputError, match="power"):
            label_budget(s, GOOD, power=1.0)
        with pytest.raises(BadInputError, match="at must"):
            label_budget(s, GOOD, at=[0])
        with pytest.raises(BadInputError):  # the heuristic run has no gold labels
            label_budget(s, "heur", truth="labels")


def test_the_command(db: Path) -> None:
    out = invoke_json("budget", GOOD, "--db", db, "--width", "0.05", "--at", "100,400",
                      "--compare", OVER, "--n-boot", "200")
    assert [r["metric"] for r in out["table"]] == ["precision", "recall", "f1"]
    assert sorted({r["labelled"] for r in out["at"]}) == [100, 400]
    assert out["compare"] == OVER and len(out["comparison"]) == 3
    text = invoke("budget", GOOD, "--db", db, "--n-boot", "200")
    assert text.exit_code == 0 and "model:" in text.stdout
    assert "predicted width at" in text.stdout
    for args, says in ((("nope",), "nope"), ((GOOD, "--width", "0"), "width"),
                       ((GOOD, "--at", "0"), "--at"), ((GOOD, "--at", "x"), "--at"),
                       ((GOOD, "--power", "1.5"), "--power")):
        r = invoke("budget", *args, "--db", db)
        assert r.exit_code == 2, r.output
        assert says in r.output and "Traceback" not in r.output


def test_few_labels_say_so_once() -> None:
    # The budget rests on the labels now: under 30 verdicts the usual one line says so.
    import pandas as pd

    from truss_lab.evaluate._budget import LabelBudget

    def budget(n: int, correction: str) -> LabelBudget:
        return LabelBudget(run_id="r", truth="labels", correction={"correction": correction},
                           threshold=0.7, width=0.1, confidence=0.95,
                           table=pd.DataFrame({"metric": ["precision"], "value": [0.5],
                                               "labelled": [n], "width_now": [0.3],
                                               "model_width_now": [0.3],
                                               "needed": [100.0], "additional": [100 - n]}),
                           at=pd.DataFrame({"metric": ["precision"], "labelled": [n],
                                            "width": [0.3]}))
    assert "rest on 12 labelled verdicts" in repr(budget(12, "none"))
    assert "12 people-answered" in budget(12, "ppi").small_sample
    assert budget(30, "none").small_sample is None
    assert repr(budget(12, "none")).count("warning:") == 1
