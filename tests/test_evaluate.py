"""Store-level evaluation (truss_lab.evaluate._truth, ._runs) on the bundled sample."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.isotonic import IsotonicRegression
from sklearn.metrics import brier_score_loss, cohen_kappa_score

from tests.builders.cli import invoke
from tests.builders.profiles import examples
from tests.builders.stores import SAMPLE, copy_db
from truss_lab.core._config import MemoryConfig
from truss_lab.core._errors import BadInputError
from truss_lab.evaluate._choose import choose_threshold, split_by_verdict
from truss_lab.evaluate._defaults import OBJECTIVE_HELP, OBJECTIVE_KINDS
from truss_lab.evaluate._objective import (
    Objective,
    make_objective,
    objective_spec,
    parse_objective,
)
from truss_lab.evaluate._runs import (
    CalibrationReport,
    LabelReport,
    auto_cv,
    calibration_run,
    choose_run_threshold,
    compare_runs,
    label_report,
    sweep_run,
)
from truss_lab.evaluate._sweep import sweep
from truss_lab.evaluate._truth import labelled_candidates, labels_truth, scored_candidates
from truss_lab.extract._batch import run_extraction
from truss_lab.extract._extractor import Extractor
from truss_lab.faces.demo import demo_evaluation
from truss_lab.store._store import Store

GOOD, OVER, SUB = "sim-good-v1", "sim-overconfident-v1", "good-subset"


@pytest.fixture(scope="module")
def ev(sample_labelled: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """The sample with labels and three dry runs: good, overconfident, good on seq <= 400."""
    s = Store(copy_db(sample_labelled, tmp_path_factory.mktemp("ev") / "ev.duckdb"))
    cfg = MemoryConfig(lesson_extraction="model-scored")
    for run_id, ext, verdicts in ((GOOD, GOOD, None), (OVER, OVER, None),
                                  (SUB, GOOD, "seq <= 400")):
        run_extraction(s, Extractor.replay(s, ext), cfg, progress=False, write_memory=False,
                       run_id=run_id, verdicts=verdicts)
    yield s
    s.close()


@pytest.fixture(scope="module")
def raw_labels() -> pd.DataFrame:
    return pd.read_csv(SAMPLE / "labels.csv", dtype={"annotator": "string"})


# -- labels -------------------------------------------------------------------------------


def test_label_report_counts_and_kappa(ev, raw_labels):
    rep = label_report(ev, GOOD)
    assert isinstance(rep, LabelReport)
    cands = ev.sql("SELECT verdict_hash, lesson_index FROM candidates "
                   "WHERE run_id = ? AND valid", [GOOD]).df()
    lab = raw_labels[raw_labels["extractor"] == GOOD]
    votes = lab.groupby(["verdict_hash", "lesson_index"])["useful"].agg(["size", "sum"])
    m = cands.merge(votes.reset_index(), on=["verdict_hash", "lesson_index"], how="left")
    ties = int((2 * m["sum"] == m["size"]).sum())
    row = rep.coverage.set_index("extractor").loc[GOOD]
    assert row["n_candidates"] == len(cands)
    assert row["n_ties"] == ties == rep.n_ties > 0
    assert row["n_labelled"] == int(m["size"].notna().sum()) - ties
    assert row["n_unlabelled"] == int(m["size"].isna().sum())
    # Cohen's kappa per annotator pair, with scikit-learn as the oracle.
    wide = lab.pivot_table(index=["verdict_hash", "lesson_index"], columns="annotator",
                           values="useful").dropna()
    (pair,) = rep.agreement.itertuples()
    assert pair.n_common == len(wide)
    assert pair.kappa == pytest.approx(cohen_kappa_score(wide[pair.annotator_a],
                                                         wide[pair.annotator_b]))
    assert "kappa" in repr(rep) and "<table" in rep._repr_html_()
    # Fleiss' kappa over the candidates with two annotations, statsmodels as the oracle
    sm = pytest.importorskip("statsmodels.stats.inter_rater")
    two = votes[votes["size"] == 2]
    table = np.column_stack([two["sum"], 2 - two["sum"]])
    assert rep.fleiss is not None and rep.fleiss["raters"] == 2
    assert rep.fleiss["n_items"] == len(two) and rep.fleiss["n_annotators"] == 2
    assert rep.fleiss["kappa"] == pytest.approx(sm.fleiss_kappa(table, method="fleiss"))
    assert "Fleiss' kappa" in repr(rep) and "Fleiss" in rep._repr_html_()


def test_label_report_all_runs_and_bad_run(ev):
    rep = label_report(ev)
    assert set(rep.coverage["extractor"]) == {GOOD, OVER}
    with pytest.raises(BadInputError, match=r"no extraction run 'nope'.*good-subset"):
        label_report(ev, "nope")


# -- sweep and choice ----------------------------------------------------------------------


def test_sweep_run_counts_what_the_gate_writes(ev):
    # Issue #12: kept = every valid candidate the gate would write (ties too),
    # tp/fp over judged ones, per verdict over every processed verdict.
    lc = labelled_candidates(ev, GOOD, valid_only=False)
    valid = lc[lc["valid"]]
    used = lc[lc["labelled"]]
    n_verdicts = ev.sql("SELECT count(*) FROM run_verdicts WHERE run_id = ?", [GOOD]).fetchone()[0]
    df = sweep_run(ev, GOOD)
    s = np.where(lc["valid"], lc["salience"], np.nan)
    expected = sweep(lc["label"].fillna(0).astype(int), s, groups=lc["verdict_hash"],
                     judged=lc["labelled"], n_verdicts=n_verdicts)
    pd.testing.assert_frame_equal(df, expected)
    assert df["kept"].iloc[-1] == len(valid) > int(used["valid"].sum())  # ties are written
    assert df.attrs["counts"]["ties"] == "exclude"
    at = sweep_run(ev, GOOD, thresholds=[0.7])
    assert at["kept"].iloc[0] == int((valid["salience"] >= 0.7).sum())
    assert at["kept_per_verdict"].iloc[0] == at["kept"].iloc[0] / n_verdicts


def test_ties_half_counts_a_tie_as_half_a_useful_lesson(ev):
    # Hand-made labels on a few of GOOD's candidates: two useful, two not, three
    # tied (one of them dropped by the parser), one with a single vote.
    c = ev.sql("SELECT verdict_hash, extractor_id AS extractor, lesson_index, valid, salience "
               "FROM candidates WHERE run_id = ? ORDER BY verdict_hash, lesson_index",
               [GOOD]).df()
    picked = pd.concat([c[c["valid"]].head(7), c[~c["valid"]].head(1)]).reset_index(drop=True)
    votes = [[1, 1], [1], [0, 0], [0], [1, 0], [0, 1, 1, 0], [1, 0], [1, 0]]
    labels = pd.DataFrame([
        {"verdict_hash": r.verdict_hash, "extractor": r.extractor,
         "lesson_index": r.lesson_index, "useful": v, "annotator": f"a{j}"}
        for r, vs in zip(picked.itertuples(), votes, strict=True) for j, v in enumerate(vs)])
    # The hand count: a tie weighs 1/2 useful and 1/2 not; a dropped lesson is a miss.
    useful = [Fraction(sum(v), len(v)) if 2 * sum(v) == len(v) else Fraction(2 * sum(v) > len(v))
              for v in votes]
    t = float(picked.loc[picked["valid"], "salience"].median())
    kept = [bool(r.valid) and r.salience >= t for r in picked.itertuples()]
    tp = sum((u for u, k in zip(useful, kept, strict=True) if k), Fraction(0))
    fp = sum((1 - u for u, k in zip(useful, kept, strict=True) if k), Fraction(0))
    n_pos = sum(useful, Fraction(0))
    # ... with every other candidate of the run unlabelled: kept counts them all.
    n_kept = int((c["valid"] & (c["salience"] >= t)).sum())
    half = sweep_run(ev, GOOD, labels=labels, ties="half", thresholds=[t]).iloc[0]
    assert half["tp"] == tp and half["fp"] == fp and half["fn"] == n_pos - tp
    assert half["precision"] == pytest.approx(float(tp / (tp + fp)), rel=1e-12)
    assert half["recall"] == pytest.approx(float(tp / n_pos), rel=1e-12)
    assert half["kept"] == n_kept
    n_verdicts = labels_truth(ev, GOOD, labels=labels).n_verdicts
    assert half["kept_per_verdict"] == pytest.approx(n_kept / n_verdicts, rel=1e-12)
    truth = labels_truth(ev, GOOD, labels=labels, ties="half")
    assert truth.count_scale == 2 and len(truth.candidates) == 2 * len(c)
    assert truth.counts["ties"] == "half" and truth.counts["candidates"] == len(c)
    # "half" lies between leaving ties out and calling them useful; exactly, its
    # counts are the mean of calling every tie useful and calling it not useful,
    # so its precision and recall lie between theirs (a mediant).
    grid = np.unique(picked.loc[picked["valid"], "salience"])
    ex = sweep_run(ev, GOOD, labels=labels, ties="exclude", thresholds=grid)
    hv = sweep_run(ev, GOOD, labels=labels, ties="half", thresholds=grid)
    key = ["verdict_hash", "lesson_index"]
    tied = labels.groupby(key)["useful"].transform(lambda u: 2 * u.sum() == len(u))
    up, down = (sweep_run(ev, GOOD, labels=labels.assign(useful=labels["useful"].where(
        ~tied, v)), thresholds=grid) for v in (1, 0))
    assert ((ex["tp"] <= hv["tp"]) & (hv["tp"] <= up["tp"])).all()
    assert (ex["tp"] < hv["tp"]).any() and (hv["tp"] < up["tp"]).any()
    for m in ("kept", "tp", "fp", "fn"):
        assert (hv[m] == (up[m] + down[m]) / 2).all()
    for m in ("precision", "recall"):
        lo, hi = np.minimum(up[m], down[m]), np.maximum(up[m], down[m])
        assert ((lo - 1e-12 <= hv[m]) & (hv[m] <= hi + 1e-12)).all()
    # Where whole lessons are needed, "half" is refused with the reason.
    for call in (lambda: choose_run_threshold(ev, GOOD, labels=labels, ties="half"),
                 lambda: calibration_run(ev, GOOD, labels=labels, ties="half"),
                 lambda: compare_runs(ev, GOOD, OVER, labels=labels, ties="half")):
        with pytest.raises(BadInputError, match="whole lessons"):
            call()
    with pytest.raises(BadInputError, match="ties must be one of exclude, half, adjudicate"):
        sweep_run(ev, GOOD, ties="third")


def test_sweep_run_on_another_score(ev):
    # The gate's own score column ...
    by_col = sweep_run(ev, GOOD, score="score", thresholds=[0.5, 0.7])
    assert by_col["kept"].tolist() == sweep_run(ev, GOOD, thresholds=[0.5, 0.7])["kept"].tolist()
    # Anything else is refused with the columns it could be (there is no scores table).
    with pytest.raises(BadInputError, match=r"no score 'nope'.*\(salience, score\)"):
        sweep_run(ev, GOOD, score="nope")
    with pytest.raises(BadInputError, match="no score 'text'"):
        sweep_run(ev, GOOD, score="text")


def test_choose_run_threshold_splits_by_verdict(ev):
    # Every processed verdict is split (also those without a labelled candidate) and
    # the choice counts as sweep_run does (judged, n_verdicts).
    choice = choose_run_threshold(ev, GOOD, objective="precision:0.75", n_boot=200,
                                  random_state=3, cv=None)
    truth = labels_truth(ev, GOOD)
    inputs = truth.sweep_inputs()
    g = inputs["groups"]
    tr, te = split_by_verdict(g, test_size=0.3, random_state=3, verdicts=truth.verdicts)
    assert not set(g[tr]) & set(g[te])  # no verdict on both sides
    sp = choice.split
    assert sp["n_train_verdicts"] + sp["n_test_verdicts"] == truth.n_verdicts
    assert sp["n_test_verdicts"] == math.ceil(0.3 * truth.n_verdicts)
    assert sp["n_test_candidates"] == len(te) and sp["counts"]["ties"] == "exclude"
    direct = choose_threshold(inputs["y_true"], inputs["salience"], g,
                              judged=inputs["judged"], verdicts=truth.verdicts,
                              objective="precision_floor", min_precision=0.75,
                              random_state=3, n_boot=200)
    assert choice.threshold == direct.threshold
    assert choice.test == direct.test
    assert choice.threshold_interval == direct.threshold_interval
    assert choice.train["precision"] >= 0.75
    # The two sides' kept add up to the sweep's kept at the chosen threshold.
    at = sweep_run(ev, GOOD, thresholds=[choice.threshold]).iloc[0]
    assert choice.train["kept"] + choice.test["kept"] == at["kept"]
    assert choice.train["tp"] + choice.test["tp"] == at["tp"]


def test_choose_run_threshold_cross_validates(ev):
    choice = choose_run_threshold(ev, GOOD, cv="auto", n_boot=100, random_state=0)
    assert choice.cv and choice.split["cv"] == 5 and len(choice.folds) == 5
    truth = labels_truth(ev, GOOD)
    assert auto_cv(truth) == 5
    assert choice.folds["n_test_verdicts"].sum() == truth.n_verdicts
    # in-sample metrics are the sweep's at the choice on every verdict
    at = sweep_run(ev, GOOD, thresholds=[choice.threshold]).iloc[0]
    for m in ("kept", "tp", "fp", "precision", "recall", "kept_per_verdict"):
        assert choice.train[m] == pytest.approx(at[m], rel=1e-12)
    # out-of-fold counts are the folds' sums
    for m in ("kept", "tp", "fp", "fn"):
        assert choice.test[m] == choice.folds[m].sum()
    assert choice.test["kept_per_verdict"] == pytest.approx(
        choice.folds["kept"].sum() / truth.n_verdicts)
    sp = choice.threshold_spread
    assert sp["min"] <= choice.threshold_spread["mean"] <= sp["max"]
    text = repr(choice)
    assert "thresholds per fold" in text and "out-of-fold" in text
    assert "threshold held fixed" in text and "covers the choice" in text
    one = choose_run_threshold(ev, SUB, cv="auto", n_boot=0)
    assert one.cv == (auto_cv(labels_truth(ev, SUB)) is not None)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [("f1", Objective("f1")), ("fbeta:2", Objective("fbeta", beta=2.0)),
     ("precision:0.9", Objective("precision_floor", min_precision=0.9)),
     ("budget:1.5", Objective("budget", max_per_verdict=1.5)),
     ("cost:1,5", Objective("cost", cost_fp=1.0, cost_fn=5.0))],
)
def test_parse_objective(spec, expected):
    assert parse_objective(spec) == expected
    assert parse_objective(expected) is expected


@pytest.mark.parametrize("spec", ["f1", "fbeta:2", "precision:0.9", "budget:1.5", "cost:1,5"])
def test_objective_json_spec_round_trips(spec):
    obj = parse_objective(spec)
    assert parse_objective(objective_spec(obj)) == obj
    assert spec.partition(":")[0] in OBJECTIVE_HELP


def test_objective_kinds_options_and_defaults_have_one_home():
    assert {parse_objective(objective_spec(Objective(k, min_precision=0.5, max_per_verdict=1.0))
                            ).kind for k in OBJECTIVE_KINDS} == set(OBJECTIVE_KINDS)
    # An option left at None takes the Objective default.
    assert make_objective("cost", cost_fp=2.0) == Objective("cost", cost_fp=2.0, cost_fn=1.0)
    assert OBJECTIVE_HELP == (
        "How to choose the threshold: f1 | fbeta:B | precision:P (max recall with "
        "precision >= P) | budget:K (max recall with <= K lessons per verdict) | "
        "cost:FP,FN (min FP*fp + FN*fn).")
    for bad in ({"kind": "magic"}, {"kind": "f1", "beta": 2.0}, {"kind": "fbeta", "beta": "2"}):
        with pytest.raises(BadInputError, match="objective"):
            parse_objective(bad)


@given(st.text(max_size=20))
@settings(max_examples=examples(200), deadline=None)
def test_parse_objective_never_crashes(spec):
    try:
        obj = parse_objective(spec)
    except BadInputError as exc:
        assert "objective" in str(exc)
    else:
        assert isinstance(obj, Objective)


# -- calibration ----------------------------------------------------------------------------


def test_calibration_is_fitted_and_judged_on_disjoint_verdicts(ev):
    rep = calibration_run(ev, OVER, method="isotonic", random_state=1)
    assert isinstance(rep, CalibrationReport)
    assert rep.fit_verdicts and rep.eval_verdicts
    assert not rep.fit_verdicts & rep.eval_verdicts
    assert rep.calibrator.fitted_verdicts == rep.fit_verdicts
    assert list(rep.summary.index) == ["before", "after"]  # no in-sample row without opt-in
    # The calibrator itself refuses to score its fitting verdicts.
    d = scored_candidates(ev, OVER)
    fit = d[d["verdict_hash"].isin(rep.fit_verdicts)]
    with pytest.raises(BadInputError, match="out of sample") as err:
        rep.calibrator.predict(fit["s"], verdict_hash=fit["verdict_hash"])
    assert err.value.reason == "in_sample"
    # Oracle: scikit-learn's isotonic regression fitted on the same training verdicts.
    held = d[d["verdict_hash"].isin(rep.eval_verdicts)]
    iso = IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1).fit(fit["s"], fit["y"])
    p = iso.predict(held["s"])
    assert rep.summary.loc["after", "brier"] == pytest.approx(brier_score_loss(held["y"], p))
    assert rep.summary.loc["before", "brier"] == pytest.approx(
        brier_score_loss(held["y"], held["s"]))
    assert rep.summary.loc["after", "candidates"] == len(held)
    # The overconfident extractor is badly calibrated; isotonic fixes most of it.
    assert rep.summary.loc["after", "ece"] < rep.summary.loc["before", "ece"]


def test_calibration_in_sample_only_with_opt_in(ev):
    rep = calibration_run(ev, GOOD, method="platt", allow_in_sample=True)
    assert list(rep.summary.index) == ["before", "after", "after_in_sample"]
    assert rep.summary.loc["after_in_sample", "verdicts"] == len(rep.fit_verdicts)
    none = calibration_run(ev, GOOD, method=None)
    assert list(none.summary.index) == ["before"] and none.calibrator is None
    with pytest.raises(BadInputError, match="method"):
        calibration_run(ev, GOOD, method="magic")  # type: ignore[arg-type]


def test_result_reprs_are_plain_and_html_escaped(ev):
    rep = calibration_run(ev, GOOD)
    nasty = dataclasses.replace(rep, run_id="<script>alert(1)</script>")
    assert "<script>" in repr(nasty)
    assert "<script>" not in nasty._repr_html_() and "&lt;script&gt;" in nasty._repr_html_()
    lab = dataclasses.replace(label_report(ev, GOOD), run_id="<b>x</b>")
    assert "&lt;b&gt;" in lab._repr_html_()


# -- comparison -----------------------------------------------------------------------------


def test_compare_runs_reports_verdicts_in_one_run_only(ev):
    res = compare_runs(ev, SUB, GOOD, threshold=0.7, n_boot=200)

    def processed(run: str) -> set[str]:
        return {r[0] for r in ev.sql(
            "SELECT verdict_hash FROM run_verdicts WHERE run_id = ?", [run]).fetchall()}

    a, b = processed(SUB), processed(GOOD)
    assert res.n_common == len(a & b) == len(a)  # the subset's verdicts are all in the full run
    assert set(res.only_in_b) == b - a and len(res.only_in_b) > 0
    assert res.only_in_a == []
    seqs = ev.sql("SELECT verdict_hash, verdict_seq FROM run_verdicts WHERE run_id = ?",
                  [GOOD]).df().set_index("verdict_hash")["verdict_seq"]
    assert (seqs.loc[res.only_in_b] > 400).all()
    # A verdict with no labelled candidate in the subset still counts as common.
    assert len(a - set(scored_candidates(ev, SUB)["verdict_hash"])) > 0
    # Same extractor on the common verdicts: no difference at all.
    assert res.table["delta_f1"].iloc[0] == 0.0 and res.table["mcnemar_p"].iloc[0] == 1.0
    two = compare_runs(ev, GOOD, OVER, threshold=0.7, n_boot=200)
    # Both runs processed the same verdicts: nothing is one-sided.
    assert two.names == (GOOD, OVER) and not two.only_in_a and not two.only_in_b
    assert two.table["delta_precision"].iloc[0] < 0  # overconfident keeps more junk
    with pytest.raises(BadInputError, match="no extraction run"):
        compare_runs(ev, GOOD, "missing-run")


# -- the demo ----------------------------------------------------------------------------------


def test_demo_evaluation_writes_plots(ev, tmp_path):
    text = demo_evaluation(ev, [GOOD, OVER], tmp_path / "out", n_boot=100)
    assert "chosen threshold" in text and "held-out" in text and "ECE" in text
    pngs = sorted(p.name for p in (tmp_path / "out").glob("*.png"))
    assert pngs == sorted([f"sweep_{GOOD}.png", f"sweep_{OVER}.png", f"calibration_{GOOD}.png",
                           f"compare_{GOOD}_vs_{OVER}.png"])
    for p in (tmp_path / "out").glob("*.png"):
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # A plot's name taken by a link: refused, nothing written through it; a linked folder too.
    mine = tmp_path / "mine.png"
    mine.write_bytes(b"mine")
    (tmp_path / "out" / f"sweep_{GOOD}.png").unlink()
    (tmp_path / "out" / f"sweep_{GOOD}.png").symlink_to(mine)
    with pytest.raises(BadInputError, match="is a symbolic link"):
        demo_evaluation(ev, [GOOD], tmp_path / "out", n_boot=20)
    assert mine.read_bytes() == b"mine"
    (tmp_path / "linked").symlink_to(tmp_path / "nowhere")
    with pytest.raises(BadInputError, match="is a symbolic link"):
        demo_evaluation(ev, [GOOD], tmp_path / "linked", n_boot=20)
    assert not (tmp_path / "nowhere").exists()


def test_labels_from_a_frame_override_the_table(ev, raw_labels):
    flipped = raw_labels.assign(useful=1 - raw_labels["useful"])
    a = sweep_run(ev, GOOD, thresholds=[0.0])
    b = sweep_run(ev, GOOD, labels=flipped, thresholds=[0.0])
    assert a["kept"].iloc[0] == b["kept"].iloc[0]
    assert a["tp"].iloc[0] + b["tp"].iloc[0] == a["tp"].iloc[0] + a["fp"].iloc[0]
    assert np.isfinite(a["precision"]).all()


def test_without_labels(ev, raw_labels):
    none = raw_labels.iloc[:0]
    rep = label_report(ev, GOOD, labels=none)
    row = rep.coverage.iloc[0]
    assert (row["n_labelled"], row["coverage"], rep.n_label_rows) == (0, 0.0, 0)
    assert row["n_unlabelled"] == row["n_candidates"] > 0
    assert rep.agreement.empty and "LabelReport" in repr(rep)
    with pytest.raises(BadInputError, match="no labelled"):
        sweep_run(ev, GOOD, labels=none)


def test_kept_per_verdict_is_what_the_gate_wrote_per_processed_verdict(sample_labelled, tmp_path):
    # Issue #12: sweep_run, compare_runs and the CLI report agree with the lessons a
    # model-scored run at 0.70 actually wrote, per verdict it processed.
    db = copy_db(sample_labelled, tmp_path / "w.duckdb")
    s = Store(db)
    cfg = MemoryConfig(lesson_extraction="model-scored", extraction_min_salience=0.7)
    for rid in (GOOD, OVER):
        run_extraction(s, Extractor.replay(s, rid), cfg, progress=False, run_id=rid)
    for rid in (GOOD, OVER):
        written = s.sql("SELECT count(*) FROM memory_entries WHERE run_id = ?",
                        [rid]).fetchone()[0]
        processed = s.sql("SELECT count(*) FROM run_verdicts WHERE run_id = ?",
                          [rid]).fetchone()[0]
        assert written > 0
        want = written / processed
        at = sweep_run(s, rid, thresholds=[0.7])
        assert at["kept"].iloc[0] == written
        assert at["kept_per_verdict"].iloc[0] == want
        c = compare_runs(s, rid, GOOD if rid == OVER else OVER, threshold=0.7, n_boot=10)
        assert c.table["kept_per_verdict_a"].iloc[0] == want
        # choose_run_threshold counts alike: a budget of exactly that rate chooses 0.70
        # (on every verdict, cross-validated) and reports it; one split splits them all.
        budget = f"budget:{want + 1e-9!r}"
        ch = choose_run_threshold(s, rid, objective=budget, cv=5, n_boot=0)
        assert (ch.threshold, ch.train["kept"]) == (0.7, written)
        assert ch.train["kept_per_verdict"] == want
        sp = choose_run_threshold(s, rid, objective=budget, cv=None, n_boot=0).split
        assert sp["n_train_verdicts"] + sp["n_test_verdicts"] == processed
    s.close()
    out = invoke("sweep", "--db", str(db), "--run", GOOD, "--n-boot", "10", "--json")
    assert out.exit_code == 0, out.output
    import json

    rows = {r["threshold"]: r for r in json.loads(out.output)["sweep"]}
    ref = Store(str(db), read_only=True)
    try:
        written = ref.sql("SELECT count(*) FROM memory_entries WHERE run_id = ?",
                          [GOOD]).fetchone()[0]
        processed = ref.sql("SELECT count(*) FROM run_verdicts WHERE run_id = ?",
                            [GOOD]).fetchone()[0]
    finally:
        ref.close()
    assert rows[0.7]["kept_per_verdict"] == pytest.approx(written / processed, rel=1e-6)

