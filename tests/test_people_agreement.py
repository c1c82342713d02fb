"""People against people (issue 36, item 6): the agreement of people who answered the same
lessons, Cohen's kappa for two (sklearn's oracle) and Fleiss' for more (statsmodels'),
with verdict-bootstrap intervals, on every face; and the one line of a correction
resting on people never checked against each other."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

import truss_lab as tl
from tests.builders.cli import invoke, invoke_json
from truss_lab.core._errors import BadInputError
from truss_lab.evaluate import PeopleUncheckedWarning, people_agreement
from truss_lab.evaluate._people import _answers, unchecked_people
from truss_lab.evaluate._truth import Truth
from truss_lab.faces._notebook import load_sample, run_sample_extractions, sample_run_id
from truss_lab.simulate import simulate

GOOD = sample_run_id("sim-good-v1")


def _labels(rng: np.random.Generator, people: list[str], n: int) -> pd.DataFrame:
    """Match labels of ``people`` on ``n`` lessons of n // 3 verdicts: a true answer
    each, changed at random now and then (references r1-r3 or none)."""
    cats = np.array(["", "r1", "r2", "r3"], dtype=object)
    truth = cats[rng.integers(0, 4, n)]
    rows = []
    for p in people:
        said = np.where(rng.random(n) < 0.25, cats[rng.integers(0, 4, n)], truth)
        rows += [{"verdict_hash": f"v{i // 3:03d}", "extractor": "x", "lesson_index": i % 3,
                  "reference_id": r, "annotator": p} for i, r in enumerate(said)]
    return pd.DataFrame(rows)


def _no_gold(df: pd.DataFrame) -> pd.DataFrame:
    return df.iloc[:0].drop(columns="reference_id").assign(useful=pd.Series([], dtype=int))


def test_two_people_give_sklearns_cohen_kappa_with_an_interval(store: tl.Store) -> None:
    df = _labels(np.random.default_rng(3), ["ann", "bob"], 300)
    res = people_agreement(store, match_labels=df, labels=_no_gold(df), n_boot=300)
    row = res.table.set_index("labels").loc["match labels"]
    wide = df.pivot(index=["verdict_hash", "lesson_index"], columns="annotator",
                    values="reference_id")
    assert row["statistic"] == "Cohen's kappa" and row["items"] == 300
    assert row["verdicts"] == 100 and row["people"] == "ann, bob"
    assert row["kappa"] == pytest.approx(cohen_kappa_score(wide["ann"], wide["bob"]))
    assert row["agreement"] == pytest.approx(float((wide["ann"] == wide["bob"]).mean()))
    assert row["kappa_low"] < row["kappa"] < row["kappa_high"]
    assert row["agreement_low"] < row["agreement"] < row["agreement_high"]
    assert res.checked("match labels") and not res.checked("gold labels")
    assert "gold labels: no lesson answered by two people" in repr(res)
    # The same seed draws the same replicates; another draws others.
    again = people_agreement(store, match_labels=df, labels=_no_gold(df), n_boot=300)
    other = people_agreement(store, match_labels=df, labels=_no_gold(df), n_boot=300,
                             random_state=1)
    pd.testing.assert_frame_equal(res.table, again.table)
    assert other.table.at[0, "kappa_low"] != row["kappa_low"]


def test_three_people_give_statsmodels_fleiss_kappa(store: tl.Store) -> None:
    df = _labels(np.random.default_rng(4), ["a", "b", "c"], 240)
    # One lesson answered by two people only: Fleiss' kappa counts the lessons of three.
    df = df[~((df["verdict_hash"] == "v000") & (df["lesson_index"] == 0)
              & (df["annotator"] == "c"))]
    res = people_agreement(store, match_labels=df, labels=_no_gold(df), n_boot=200)
    row = res.table.set_index("labels").loc["match labels"]
    full = df.groupby(["verdict_hash", "lesson_index"]).filter(lambda g: len(g) == 3)
    table = pd.crosstab([full["verdict_hash"], full["lesson_index"]], full["reference_id"])
    assert row["statistic"].startswith("Fleiss' kappa (3 people") and row["items"] == 239
    assert row["kappa"] == pytest.approx(sm_fleiss(table.to_numpy(), method="fleiss"))
    assert row["kappa_low"] < row["kappa"] < row["kappa_high"]


def test_gold_labels_of_the_sample_agree_as_sklearn_says(sample_good_run: Path) -> None:
    with tl.Store(sample_good_run, read_only=True) as store:
        res = people_agreement(store, GOOD, n_boot=100)
        gold = _answers(store, "gold labels", None, "sim-good-v1", None)
    wide = gold.pivot(index=["verdict_hash", "lesson_index"], columns="annotator",
                      values="answer").dropna()
    row = res.table.set_index("labels").loc["gold labels"]
    assert row["people"] == "ann-a, ann-b" and row["items"] == len(wide) > 100
    assert row["kappa"] == pytest.approx(cohen_kappa_score(wide["ann-a"], wide["ann-b"]))
    assert row["kappa_low"] < row["kappa"] < row["kappa_high"]


def test_match_agreement_between_people_on_the_sample(sample_good_run: Path) -> None:
    """What must be shown: people's agreement with an interval on the bundled sample,
    whose simulated people both matched 30 of their 100 verdicts; a correction by them
    says nothing of unchecked people."""
    out = invoke_json("match-agreement", GOOD, "--db", sample_good_run, "--between-people",
                      "--n-boot", "200")
    match = next(a for a in out["agreement"] if a["labels"] == "match labels")
    assert match["statistic"] == "Cohen's kappa" and match["people"] == "person-1, person-2"
    assert (match["items"], match["verdicts"]) == (25, 14)  # the datasheet's
    assert match["kappa_low"] < match["kappa"] <= match["kappa_high"] <= 1.0
    assert match["agreement"] == pytest.approx(24 / 25)  # one first answer's error
    r = invoke("sweep", GOOD, "--db", sample_good_run, "--truth", "references", "--correct",
               "ppi", "--n-boot", "20")
    assert r.exit_code == 0 and "never checked" not in r.output


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> dict[float, Path]:
    """Two small simulated studies with their good run: people matched once (share 0)
    and half the matched verdicts by both people (0.5); the same seed, so the first
    answers are the same."""
    out = {}
    for share in (0.0, 0.5):
        d = tmp_path_factory.mktemp(f"sim{share}")
        simulate(d / "data", runs=300, seed=11, match_share=0.5, match_double_share=share)
        with load_sample(d / "lab.duckdb", sample=d / "data") as store:
            run_sample_extractions(store, extractors=("sim-good-v1",), write_memory=False)
        out[share] = d / "lab.duckdb"
    return out


def test_the_cli_prints_peoples_agreement_or_refuses_in_one_line(
        simulated: dict[float, Path]) -> None:
    r = invoke("match-agreement", GOOD, "--db", simulated[0.5], "--between-people",
               "--n-boot", "200")
    assert r.exit_code == 0, r.output
    line = next(x for x in r.stdout.splitlines() if x.strip().startswith("match labels:"))
    assert "Cohen's kappa" in line and "[" in line and "(person-1, person-2)" in line
    out = invoke_json("match-agreement", GOOD, "--db", simulated[0.5], "--between-people",
                      "--n-boot", "200")
    match = next(a for a in out["agreement"] if a["labels"] == "match labels")
    assert out["between"] == "people" and out["n_boot"] == 200
    assert match["items"] > 10 and 0 < match["verdicts"] <= match["items"]
    assert match["kappa_low"] <= match["kappa"] <= match["kappa_high"]
    with tl.Store(simulated[0.5], read_only=True) as store:
        lib = people_agreement(store, GOOD, n_boot=200)
    assert match["kappa"] == pytest.approx(lib.table.at[0, "kappa"])
    # Nobody matched a lesson twice: one line, exit non-zero, nothing on stdout.
    r = invoke("match-agreement", GOOD, "--db", simulated[0.0], "--between-people")
    assert r.exit_code != 0 and r.stdout == ""
    err = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(err) == 1 and "matched by two people" in err[0] and GOOD in err[0]


def test_a_correction_on_people_never_checked_says_so_once(
        simulated: dict[float, Path]) -> None:
    with tl.Store(simulated[0.0], read_only=True) as store:
        line = unchecked_people(store, "match labels", None, GOOD)
        assert line is not None and "never checked against each other" in line
        assert f"truss-lab match-agreement {GOOD} --between-people" in line
        with pytest.warns(PeopleUncheckedWarning) as got:
            t = Truth.resolve(store, Truth.references(correct="ppi"), [GOOD])
            tl.sweep_run(store, GOOD, truth=t, thresholds=[0.7])
            tl.sweep_run(store, GOOD, truth=t, thresholds=[0.5])
        assert [str(w.message) for w in got if w.category is PeopleUncheckedWarning] == [line]
        # No correction, no line.
        with warnings.catch_warnings():
            warnings.simplefilter("error", PeopleUncheckedWarning)
            t = Truth.resolve(store, Truth.references(correct="none"), [GOOD])
            tl.sweep_run(store, GOOD, truth=t, thresholds=[0.7])
    with tl.Store(simulated[0.5], read_only=True) as store:
        assert unchecked_people(store, "match labels", None, GOOD) is None
        with pytest.raises(BadInputError, match="kind"):
            unchecked_people(store, "labels", None, GOOD)
    # The CLI: one stderr line, nothing on stdout; people checked: no line.
    for share, said in ((0.0, 1), (0.5, 0)):
        r = invoke("sweep", GOOD, "--db", simulated[share], "--truth", "references",
                   "--correct", "ppi", "--n-boot", "20")
        assert r.exit_code == 0, r.output
        lines = [x for x in r.stderr.splitlines() if "never checked against each other" in x]
        assert len(lines) == said and "never checked" not in r.stdout


def test_only_the_runs_own_extractors_lessons_answered_twice_check_its_people(
        simulated: dict[float, Path]) -> None:
    # The same answers, less every second answer on the good extractor's lessons: the
    # people's agreement on other extractors' lessons says nothing of this run's.
    from truss_lab.store._labels import match_label_rows

    with tl.Store(simulated[0.5], read_only=True) as store:
        rows = match_label_rows(store)
        firsts = rows.drop_duplicates(["verdict_hash", "extractor", "lesson_index"])
        others = rows[rows["extractor"] != "sim-good-v1"]
        # Other extractors' lessons were answered twice (else this would test nothing).
        assert others.duplicated(["verdict_hash", "extractor", "lesson_index"]).any()
        only_others = pd.concat([firsts[firsts["extractor"] == "sim-good-v1"], others])
        assert unchecked_people(store, "match labels", rows, GOOD) is None
        line = unchecked_people(store, "match labels", only_others, GOOD)
        assert line is not None and GOOD in line
