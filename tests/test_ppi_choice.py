"""The threshold choice, the comparison, the calibration and the proposal on
prediction-powered counts (issue 26 item 3): equal to the uncorrected ones where the
people agree with the automated truth, different on the sample (whose simulated
people's match labels disagree with the lexical matcher), and every output names the
correction."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.builders.cli import invoke, invoke_json
from tests.builders.stores import copy_db
from truss_lab.evaluate._calibration import calibration_run
from truss_lab.evaluate._choose import choose_threshold, choose_threshold_ppi
from truss_lab.evaluate._compare import compare_extractors, compare_extractors_ppi
from truss_lab.evaluate._frontier import frontier
from truss_lab.evaluate._objective import parse_objective
from truss_lab.evaluate._ppi import ppi_data
from truss_lab.evaluate._runs import (
    choose_run_threshold,
    compare_runs,
    evaluate_run,
    rank_runs,
    sweep_run,
)
from truss_lab.evaluate._sweep import UndefinedMetricWarning
from truss_lab.evaluate._truth import Truth
from truss_lab.faces._notebook import SAMPLE, run_sample_extractions, sample_run_id
from truss_lab.faces._report import report_html
from truss_lab.govern._decision import propose_threshold
from truss_lab.ingest._ingest import ingest_match_labels
from truss_lab.journal import get_entry, verify_chain
from truss_lab.journal._crypto import SigningKey
from truss_lab.score._matching import LexicalMatcher
from truss_lab.store._store import Store

GOOD, OVER = sample_run_id("sim-good-v1"), sample_run_id("sim-overconfident-v1")

#: A matcher the people visibly correct: word overlap at 0.22 (its threshold before issue 36
#: re-tuned it), which misses about half the sample's pairs. These tests are of the
#: correction, so they need a biased matcher, not the best one.
STRICT = LexicalMatcher()
STRICT.match_threshold = 0.22


def _rows(seed: int, n_verdicts: int = 120, per: int = 4):
    """``per`` scored lessons and one miss (positive or not, NaN score) per verdict."""
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(n_verdicts), per + 1).astype(str).astype(object)
    s = np.round(rng.random(len(g)) * 20) / 20
    s[per::per + 1] = np.nan
    y = (rng.random(len(g)) < 0.2 + 0.6 * np.nan_to_num(s, nan=0.5)).astype(np.uint8)
    return y, s, g


def _numbers(c) -> dict[str, float]:
    out = {"threshold": c.threshold, **{f"train.{k}": v for k, v in c.train.items()},
           **{f"test.{k}": v for k, v in c.test.items()}}
    if c.threshold_interval is not None:
        out["threshold_low"], out["threshold_high"] = c.threshold_interval
        for name, table in (("fixed", c.test_intervals), ("procedure", c.procedure_intervals)):
            out.update({f"{name}.{k}": float(v) for k, v in table.iloc[0].items()})
    if c.folds is not None:
        out.update({f"fold{i}": t for i, t in enumerate(c.fold_thresholds)})
    return out


@pytest.mark.parametrize("options", [{"cv": 5}, {"cv": None, "test_size": 0.25},
                                     {"cv": 4, "objective": parse_objective("precision:0.55")}])
def test_people_on_every_verdict_agreeing_give_the_uncorrected_choice(options):
    """pi = 1 on every verdict and the people's rows = the automated ones: the corrected
    choice, its held-out metrics, the folds and every interval are the plain ones."""
    y, s, g = _rows(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        plain = choose_threshold(y, s, g, n_boot=60, random_state=4, **options)
        data = ppi_data(y, s, g, y, s, g, inclusion_probability=np.ones(len(pd.unique(g))))
        fixed = choose_threshold_ppi(data, n_boot=60, random_state=4, **options)
    want, got = _numbers(plain), _numbers(fixed)
    assert got.keys() == want.keys()
    for k in want:
        assert got[k] == pytest.approx(want[k], rel=1e-9, abs=1e-12, nan_ok=True), k


def test_people_agreeing_on_a_sample_give_the_uncorrected_point_numbers():
    """A quarter of the verdicts answered, the people saying what the automated truth
    says: every correction term is 0, so threshold, train, held-out and per-fold numbers
    are the plain ones (the intervals resample the two sets apart, so they differ)."""
    y, s, g = _rows(2)
    picked = pd.unique(g)[::4]
    on = np.isin(g, picked)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        data = ppi_data(y, s, g, y[on], s[on], g[on])
        for options in ({"cv": 5}, {"cv": None}):
            plain = _numbers(choose_threshold(y, s, g, **options))
            got = _numbers(choose_threshold_ppi(data, **options))
            assert got == pytest.approx(plain, rel=1e-9, abs=1e-9, nan_ok=True)


def test_people_who_disagree_move_the_choice_to_their_truth():
    """People answer on every verdict (pi = 1) with a different truth: the corrected
    choice is the plain choice on the people's truth."""
    y, s, g = _rows(3)
    people = np.where(s > 0.5, 1, 0).astype(np.uint8)  # a sharper truth than the automated
    data = ppi_data(y, s, g, people, s, g, inclusion_probability=np.ones(len(pd.unique(g))))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        want = _numbers(choose_threshold(people, s, g, cv=5))
        got = _numbers(choose_threshold_ppi(data, cv=5))
        assert got == pytest.approx(want, rel=1e-9, abs=1e-9, nan_ok=True)
        assert got["threshold"] != _numbers(choose_threshold(y, s, g, cv=5))["threshold"]



@pytest.mark.parametrize("options", [{"cv": 5}, {"cv": None}])
def test_the_corrected_threshold_interval_alone_is_the_full_bootstraps(options):
    """intervals="threshold" on corrected counts: the interval of the choice the full
    bootstrap gives (the same stream), without the held-out intervals."""
    y, s, g = _rows(4)
    picked = pd.unique(g)[::3]
    on = np.isin(g, picked)
    people = np.where(s > 0.5, 1, 0).astype(np.uint8)[on]
    data = ppi_data(y, s, g, people, s[on], g[on])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        full = choose_threshold_ppi(data, n_boot=60, random_state=2, **options)
        alone = choose_threshold_ppi(data, n_boot=60, random_state=2, intervals="threshold",
                                     **options)
    assert alone.threshold_interval == full.threshold_interval
    assert alone.threshold == full.threshold
    assert alone.test_intervals is None and full.test_intervals is not None

# --------------------------------------------------------------------------- the sample


@pytest.fixture(scope="module")
def db(sample_full: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = copy_db(sample_full, tmp_path_factory.mktemp("ppichoice") / "t.duckdb")
    with Store(path) as s:
        run_sample_extractions(s, extractors=["sim-good-v1", "sim-overconfident-v1"],
                               write_memory=False)
        assert ingest_match_labels(s, SAMPLE / "match_labels.csv").errors == []
    return path


@pytest.fixture
def store(db: Path) -> Iterator[Store]:
    with Store(db, read_only=True) as s:
        yield s


def _own_matches(store: Store, run_id: str, matcher: object = None) -> pd.DataFrame:
    """§5 match labels saying, for every lesson of the run, what ``matcher`` (default the
    default one) said (inclusion probability 1): people equal to the automated truth."""
    les = Truth.resolve(store, Truth.references(matcher=matcher), [run_id]).judged(
        run_id).lessons
    return pd.DataFrame({"verdict_hash": les["verdict_hash"].astype(str),
                         "extractor": les["extractor_id"].astype(str),
                         "lesson_index": les["lesson_index"].astype(int),
                         "reference_id": les["reference_id"].fillna("").astype(str),
                         "annotator": "p", "inclusion_probability": 1.0})


def test_a_people_matcher_equal_to_the_automated_one_gives_the_uncorrected_choice(store):
    kw = {"truth": "references", "n_boot": 0, "random_state": 1}
    own = _own_matches(store, GOOD)
    for cv in ("auto", None):
        plain = choose_run_threshold(store, GOOD, correct="none", cv=cv, **kw)
        same = choose_run_threshold(store, GOOD, correct="ppi", match_labels=own, cv=cv, **kw)
        assert same.split["correction"].startswith("ppi (people answered for ")
        assert plain.split["correction"] == "none"
        assert _numbers(same) == pytest.approx(_numbers(plain), rel=1e-9, abs=1e-9,
                                               nan_ok=True)


def test_the_sample_choice_is_corrected_and_says_so(store):
    kw = {"truth": "references", "n_boot": 50, "random_state": 0, "matcher": STRICT}
    plain = choose_run_threshold(store, GOOD, correct="none", **kw)
    fixed = choose_run_threshold(store, GOOD, **kw)  # auto: people matched some verdicts
    assert fixed.split["correction"] == "ppi (people answered for 48 of 402 verdicts)"
    # The strict lexical matcher halves precision on the sample's wording; people restore it.
    assert fixed.test["precision"] > plain.test["precision"] + 0.2
    assert _numbers(fixed) != _numbers(plain)
    ev = evaluate_run(store, GOOD, n_boot=50, random_state=0, bands=False,
                      truth=Truth.references(matcher=STRICT))
    assert _numbers(ev.choice) == pytest.approx(_numbers(fixed), nan_ok=True)
    assert ev.correction == fixed.split["correction"]


@pytest.mark.parametrize("extractor", ["sim-good-v1", "sim-overconfident-v1"])
def test_the_corrected_choice_lies_in_its_own_bootstrap_interval(store, extractor):
    """The bootstrap re-makes the choice with the estimator that made it (classic PPI):
    with ppi_bootstrap's tuned default instead, sim-good-v1's choice 0.51 had the
    interval [0.19, 0.48]."""
    c = choose_run_threshold(store, sample_run_id(extractor), truth="references",
                             n_boot=200, random_state=0, correct="ppi")
    lo, hi = c.threshold_interval
    assert lo <= c.threshold <= hi, (c.threshold, lo, hi)


def test_cli_sweep_choice_corrected_names_the_correction(db: Path):
    args = ("sweep", GOOD, "--db", str(db), "--truth", "references", "--n-boot", "30")
    none = invoke_json(*args, "--correct", "none")
    ppi = invoke_json(*args, "--correct", "ppi")
    assert ppi["correction"] == "ppi" and none["correction"] == "none"
    assert ppi["choice"]["split"]["correction"].startswith("ppi (people answered for 48 ")
    assert ppi["choice"]["threshold"] != none["choice"]["threshold"]
    text = invoke(*args).output
    assert "correction: ppi (people answered for 48 of 402 verdicts)" in text
    assert "uncorrected" not in text
    bad = invoke("sweep", GOOD, "--db", str(db), "--truth", "labels", "--correct", "ppi")
    assert bad.exit_code != 0 and "Traceback" not in bad.output
    assert len(bad.output.strip().splitlines()) == 1 and "people's own" in bad.output


# --------------------------------------------------------------------------- comparison


def _frame(y, s, g) -> pd.DataFrame:
    return pd.DataFrame({"verdict_hash": g, "salience": s, "label": y})


def test_compare_with_people_on_every_verdict_agreeing_is_the_uncorrected_one():
    ya, sa, ga = _rows(5)
    yb, sb, gb = _rows(6)
    full = np.ones(len(pd.unique(ga)))
    kw = {"threshold": [0.3, 0.6, 0.8], "n_boot": 80, "random_state": 2}
    plain = compare_extractors(_frame(ya, sa, ga), _frame(yb, sb, gb), **kw)
    fixed = compare_extractors_ppi(ppi_data(ya, sa, ga, ya, sa, ga, inclusion_probability=full),
                                   ppi_data(yb, sb, gb, yb, sb, gb, inclusion_probability=full),
                                   **kw)
    assert list(fixed.table.columns) == list(plain.table.columns)
    np.testing.assert_allclose(fixed.table.to_numpy(float), plain.table.to_numpy(float),
                               rtol=1e-9, atol=1e-12)
    assert fixed.n_common == plain.n_common


def test_compare_by_people_on_every_verdict_is_the_plain_compare_on_their_truth():
    ya, sa, ga = _rows(7)
    yb, sb, gb = _rows(8)
    ha, hb = (np.where(s > 0.4, 1, 0).astype(np.uint8) for s in (sa, sb))
    full = np.ones(len(pd.unique(ga)))
    kw = {"threshold": [0.5, 0.7], "n_boot": 40, "random_state": 0}
    want = compare_extractors(_frame(ha, sa, ga), _frame(hb, sb, gb), **kw).table
    got = compare_extractors_ppi(ppi_data(ya, sa, ga, ha, sa, ga, inclusion_probability=full),
                                 ppi_data(yb, sb, gb, hb, sb, gb, inclusion_probability=full),
                                 **kw).table
    np.testing.assert_allclose(got.to_numpy(float), want.to_numpy(float), rtol=1e-9,
                               atol=1e-12)


def test_compare_runs_corrects_both_runs_on_the_sample(store):
    kw = {"truth": "references", "n_boot": 50, "threshold": 0.7, "matcher": STRICT}
    plain = compare_runs(store, GOOD, OVER, correct="none", **kw)
    fixed = compare_runs(store, GOOD, OVER, **kw)
    assert plain.correction == "none" and plain.people_verdicts == (0, 0)
    assert fixed.correction == (f"ppi (people answered for 48 of 402 verdicts of {GOOD}, "
                                f"69 of 402 of {OVER})")
    assert fixed.people_verdicts == (48, 69)
    assert list(fixed.table.columns) == list(plain.table.columns)
    r, p = fixed.table.iloc[0], plain.table.iloc[0]
    assert r["precision_a"] > p["precision_a"] + 0.2  # the strict matcher's bias undone
    assert r["delta_f1_low"] <= r["delta_f1"] <= r["delta_f1_high"]
    own = pd.concat([_own_matches(store, GOOD, STRICT), _own_matches(store, OVER, STRICT)])
    same = compare_runs(store, GOOD, OVER, correct="ppi", match_labels=own, **kw).table
    for c in ("precision_a", "recall_b", "f1_a", "delta_f1", "success_a", "success_b"):
        assert same[c].iloc[0] == pytest.approx(p[c], rel=1e-9), c


# --------------------------------------------------------------------------- calibration


def test_calibration_by_people_equal_to_the_matcher_is_the_uncorrected_one(store):
    kw = {"truth": "references", "random_state": 3, "n_boot": 100}
    plain = calibration_run(store, GOOD, correct="none", **kw)
    same = calibration_run(store, GOOD, correct="ppi", match_labels=_own_matches(store, GOOD),
                           **kw)
    assert plain.correction == "none" and same.correction.startswith("ppi (people answered")
    np.testing.assert_allclose(same.summary.to_numpy(float), plain.summary.to_numpy(float),
                               rtol=1e-9, atol=1e-12)
    for name, t in plain.tables.items():
        got = same.tables[name]
        assert list(got.columns) == list(t.columns)
        cols = ["count", "n_positive", "mean_predicted", "observed_frequency"]
        np.testing.assert_allclose(got[cols].to_numpy(float), t[cols].to_numpy(float),
                                   rtol=1e-9, atol=1e-12, equal_nan=True)
        full = got["count"] > 0
        assert (got["frequency_low"][full] <= got["observed_frequency"][full] + 1e-12).all()


def test_calibration_on_the_sample_is_corrected_and_says_so(store):
    plain = calibration_run(store, GOOD, truth="references", correct="none", matcher=STRICT)
    fixed = calibration_run(store, GOOD, truth="references", n_boot=200, matcher=STRICT)
    assert fixed.correction.startswith("ppi (people answered for 48 of 402")
    assert "correction 'ppi (people" in repr(fixed)
    before = fixed.tables["before"]
    # The strict matcher calls half the useful lessons useless: people lift the bins.
    assert (before["observed_frequency"] > plain.tables["before"]["observed_frequency"]
            ).sum() >= 4
    assert fixed.summary.loc["before", "ece"] != plain.summary.loc["before", "ece"]


# --------------------------------------------------------------------------- the CLI


def test_cli_compare_and_calibrate_name_truth_matcher_and_correction(db: Path):
    base = ("--db", str(db), "--truth", "references")
    cmp_none = invoke_json("compare", GOOD, OVER, *base, "--n-boot", "30", "--correct", "none")
    cmp_ppi = invoke_json("compare", GOOD, OVER, *base, "--n-boot", "30")
    assert cmp_none["correction"] == "none" and cmp_ppi["correction"] == "ppi"
    assert cmp_ppi["people_verdicts"] == {GOOD: 48, OVER: 69}
    assert cmp_ppi["matcher"] == "semantic" and cmp_ppi["truth"] == "references"
    assert list(cmp_ppi["table"][0]) == list(cmp_none["table"][0])  # the same columns
    with Store(db, read_only=True) as s:
        direct = compare_runs(s, GOOD, OVER, truth="references", n_boot=30)
    assert cmp_ppi["table"][0]["delta_f1"] == pytest.approx(direct.table["delta_f1"].iloc[0],
                                                            rel=1e-5)
    text = invoke("compare", GOOD, OVER, *base, "--n-boot", "30").output
    assert f"correction: ppi (people answered for 48 of 402 verdicts of {GOOD}" in text
    cal = invoke_json("calibrate", GOOD, *base, "--n-boot", "50")
    assert cal["correction"] == "ppi" and cal["people_verdicts"] == 48
    assert cal["matcher"] == "semantic"
    plain = invoke_json("calibrate", GOOD, *base, "--correct", "none")
    assert plain["correction"] == "none" and plain["people_verdicts"] == 0
    assert list(plain["tables"]["before"][0]) == list(cal["tables"]["before"][0])
    for cmd in (("compare", GOOD, OVER), ("calibrate", GOOD)):
        bad = invoke(*cmd, "--db", str(db), "--truth", "labels", "--correct", "ppi")
        assert bad.exit_code != 0 and "Traceback" not in bad.output, cmd
        assert len(bad.output.strip().splitlines()) == 1 and "people's own" in bad.output


def test_propose_records_the_correction_its_choice_used(db: Path, tmp_path: Path):
    key = SigningKey.generate("researcher-c")
    key.save(tmp_path / "me.key")
    with Store(db) as s:
        want = choose_run_threshold(s, GOOD, truth="references", n_boot=30)
        rec = propose_threshold(s, GOOD, key, truth="references", n_boot=30)
        ev = get_entry(s, rec.provenance.produced_by.seq, table="lab_journal")[
            "payload"]["evidence"]
        assert ev["correction"] == "ppi (people answered for 48 of 402 verdicts)"
        assert ev["people_verdicts"] == 48 and ev["threshold"] == want.threshold
        plain = propose_threshold(s, GOOD, key, truth="references", n_boot=30, correct="none")
        ev2 = get_entry(s, plain.provenance.produced_by.seq, table="lab_journal")[
            "payload"]["evidence"]
        assert ev2["correction"] == "none" and ev2["people_verdicts"] == 0
        assert verify_chain(s).ok
    run = invoke("propose", GOOD, "--db", str(db), "--key", str(tmp_path / "me.key"),
                 "--truth", "references", "--n-boot", "30")
    assert run.exit_code == 0, run.output
    assert "correction: ppi (people answered for 48 of 402 verdicts)" in run.output


def test_the_report_says_the_correction_without_qualifying_it(db: Path):
    with Store(db, read_only=True) as s:
        html = report_html(s, [GOOD, OVER], truth="references", n_boot=20, max_verdicts=2)
    assert f"{GOOD}: ppi (people answered for 48 of 402 verdicts)" in html
    assert "uncorrected" not in html
    assert "correction ppi (people answered for 48 of 402 verdicts of" in html


# --------------------------------------------------------------------------- several runs


def test_rank_runs_and_frontier_correct_every_run_or_none(store, db: Path):
    kw = {"truth": "references", "n_boot": 40, "threshold": 0.7}
    plain = rank_runs(store, [GOOD, OVER], correct="none", **kw)
    fixed = rank_runs(store, [GOOD, OVER], baseline=OVER, **kw)
    assert plain.attrs["correction"] == "none"
    assert fixed.attrs["correction"] == (f"ppi (people answered for 48 of 402 verdicts of "
                                         f"{GOOD}, 69 of 402 of {OVER})")
    assert list(fixed.columns) == list(rank_runs(store, [GOOD, OVER], baseline=OVER,
                                                 correct="none", **kw).columns)
    good = fixed.set_index("run_id").loc[GOOD]
    at = sweep_run(store, GOOD, truth="references", thresholds=[0.7], correct="ppi").iloc[0]
    assert good["precision"] == pytest.approx(at["precision"])
    cmp = compare_runs(store, OVER, GOOD, truth="references", threshold=0.7, n_boot=40)
    assert good["delta_f1"] == pytest.approx(cmp.table["delta_f1"].iloc[0])
    # The same people, told to say what the matcher said: the uncorrected ranking.
    own = pd.concat([_own_matches(store, GOOD), _own_matches(store, OVER)])
    same = rank_runs(store, [GOOD, OVER], correct="ppi", match_labels=own, **kw)
    np.testing.assert_allclose(same[["precision", "recall", "f1"]].to_numpy(float),
                               plain[["precision", "recall", "f1"]].to_numpy(float))
    f = frontier(store, [GOOD, OVER], truth="references", n_boot=40, threshold=0.7)
    assert f.correction == fixed.attrs["correction"]
    assert f.people_verdicts == {GOOD: 48, OVER: 69}
    assert "correction ppi (people answered for 48" in repr(f)
    row = f.table.set_index("run_id").loc[GOOD]
    assert row["f1"] == pytest.approx(at["f1"]) and row["f1_low"] <= row["f1"] <= row["f1_high"]
    none = frontier(store, [GOOD, OVER], truth="references", n_boot=40, threshold=0.7,
                    correct="none")
    assert none.correction == "none" and list(none.table.columns) == list(f.table.columns)
    got = invoke_json("frontier", GOOD, OVER, "--db", str(db), "--truth", "references",
                      "--n-boot", "40", "--threshold", "0.7")
    assert got["correction"] == "ppi" and got["people_verdicts"] == {GOOD: 48, OVER: 69}


def test_cli_choose_is_sweeps_choice_corrected_or_not(db: Path):
    args = ("--db", str(db), "--truth", "references", "--n-boot", "30")
    none = invoke_json("choose", GOOD, *args, "--correct", "none")
    ppi = invoke_json("choose", GOOD, *args, "--correct", "ppi")
    assert (none["correction"], ppi["correction"]) == ("none", "ppi")
    assert (none["people_verdicts"], ppi["people_verdicts"]) == (0, 48)
    assert ppi["matcher"] == "semantic" and ppi["truth"] == "references"
    assert ppi["choice"]["threshold"] != none["choice"]["threshold"]
    assert ppi["choice"] == invoke_json("sweep", GOOD, *args)["choice"]  # auto: the same
    text = invoke("choose", GOOD, *args).output
    assert "correction: ppi (people answered for 48 of 402 verdicts)" in text
    assert "chosen threshold: " in text
    bad = invoke("choose", GOOD, "--db", str(db), "--truth", "labels", "--correct", "ppi")
    assert bad.exit_code != 0 and len(bad.output.strip().splitlines()) == 1
    assert "people's own" in bad.output and "Traceback" not in bad.output
