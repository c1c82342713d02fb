"""A matcher against people's match labels (issue 26 item 2): pair precision, pair
recall and matched-flag kappa with verdict-bootstrap intervals, checked against
scikit-learn on pair sets and flags computed here independently; the one agreement
computation shared with ``judge-agreement``; the CLI.

The sample (with the simulator's people's ``match_labels.csv``) and one replay run of
``sim-good-v1`` are a template database file, read-only here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score, precision_score, recall_score

from tests.builders.cli import invoke
from tests.builders.stores import copy_db
from truss_lab.core._errors import BadInputError
from truss_lab.evaluate._agreement import agreement_table, kappa_counts
from truss_lab.evaluate._matches import match_agreement, people_matches, people_truth
from truss_lab.evaluate._ppi import PeopleMatcher
from truss_lab.evaluate._sweep import UndefinedMetricWarning
from truss_lab.evaluate._truth import run_references
from truss_lab.faces._notebook import SAMPLE, run_sample_extractions, sample_run_id
from truss_lab.ingest._ingest import ingest_match_labels
from truss_lab.score._matching import SEMANTIC_MATCH_THRESHOLD, SemanticMatcher, match_lessons
from truss_lab.store._store import Store

GOOD = sample_run_id("sim-good-v1")


@pytest.fixture(scope="module")
def template(sample_full: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = copy_db(sample_full, tmp_path_factory.mktemp("ma") / "template.duckdb")
    s = Store(path)
    run_sample_extractions(s, extractors=["sim-good-v1"], write_memory=False)
    rep = ingest_match_labels(s, SAMPLE / "match_labels.csv")
    assert rep.errors == []
    s.close()
    return path


@pytest.fixture(scope="module")
def store(template: Path) -> Iterator[Store]:
    s = Store(template, read_only=True)
    yield s
    s.close()


def _lessons(store: Store, verdicts: set[str]) -> pd.DataFrame:
    les = store.sql("SELECT verdict_hash, lesson_index, salience AS s, text, evidence "
                    "FROM candidates WHERE run_id = ? AND valid ORDER BY verdict_hash, "
                    "lesson_index", [GOOD]).df()
    return les[les["verdict_hash"].isin(verdicts)].reset_index(drop=True)


def _people_pairs(lessons: pd.DataFrame, answer: dict[tuple[str, int], str]
                  ) -> dict[tuple[str, int], str]:
    """The people's one-to-one assignment, by hand: lessons in descending salience (then
    lesson index) each claim their answer unless an earlier lesson of the verdict did."""
    out: dict[tuple[str, int], str] = {}
    taken: set[tuple[str, str]] = set()
    order = lessons.assign(neg=-lessons["s"]).sort_values(["verdict_hash", "neg",
                                                           "lesson_index"])
    for h, i, s in zip(order["verdict_hash"], order["lesson_index"], order["s"], strict=True):
        ref = answer.get((h, int(i)), "")
        if ref and not np.isnan(s) and (h, ref) not in taken:
            taken.add((h, ref))
            out[(h, int(i))] = ref
    return out


def _oracle(store: Store, matcher=None, threshold: float | None = None) -> dict[str, float]:
    pm = people_matches(store, run_id=GOOD)
    answered = pm[~pm["tied"]]
    verdicts = set(pm["verdict_hash"])
    les = _lessons(store, verdicts)
    refs = run_references(store)
    refs = refs[refs["verdict_hash"].isin(verdicts)]
    got = match_lessons(les, refs, matcher=matcher, threshold=threshold, score="s")
    auto = {(h, int(i)): r for h, i, r, m in zip(got["verdict_hash"], got["lesson_index"],
                                                 got["reference_id"], got["matched"],
                                                 strict=True) if m}
    people = _people_pairs(les, {(h, int(i)): r for h, i, r in zip(
        answered["verdict_hash"], answered["lesson_index"], answered["reference_id"],
        strict=True)})
    valid = set(zip(les["verdict_hash"], les["lesson_index"].astype(int), strict=True))
    keys = [(h, int(i)) for h, i in zip(answered["verdict_hash"], answered["lesson_index"],
                                         strict=True) if (h, int(i)) in valid]
    m_pairs = {(k, auto[k]) for k in keys if k in auto}
    p_pairs = {(k, people[k]) for k in keys if k in people}
    union = sorted(m_pairs | p_pairs)
    y_true = [p in p_pairs for p in union]
    y_pred = [p in m_pairs for p in union]
    return {"precision": precision_score(y_true, y_pred),
            "recall": recall_score(y_true, y_pred),
            "kappa": cohen_kappa_score([k in people for k in keys], [k in auto for k in keys]),
            "n": len(keys), "answered": len(answered)}


def test_pair_precision_recall_and_kappa_match_scikit_learn(store: Store) -> None:
    res = match_agreement(store, GOOD, n_boot=50)
    want = _oracle(store)
    got = res.table["value"]
    assert res.counts["n"] == want["n"]
    # The simulator's people also answered lessons the parser dropped: left out.
    assert res.counts["lessons_not_valid"] == want["answered"] - want["n"]
    for metric in ("precision", "recall", "kappa"):
        assert got[metric] == pytest.approx(want[metric], abs=1e-12), metric
    assert 0 < want["recall"] < 1 or 0 < want["precision"] < 1  # not a trivial case
    for metric in ("precision", "recall", "kappa"):
        lo, hi = res.table.loc[metric, ["low", "high"]]
        assert lo <= got[metric] <= hi


def test_a_stricter_matcher_is_scored_by_the_same_rule(store: Store) -> None:
    res = match_agreement(store, GOOD, match_threshold=0.5, n_boot=20)
    want = _oracle(store, threshold=0.5)
    for metric in ("precision", "recall", "kappa"):
        assert res.table.loc[metric, "value"] == pytest.approx(want[metric], abs=1e-12)
    assert res.match_threshold == 0.5


def test_the_people_themselves_agree_perfectly(store: Store) -> None:
    pm = people_matches(store, run_id=GOOD)
    res = match_agreement(store, GOOD, matcher=PeopleMatcher(pm), n_boot=20)
    assert list(res.table["value"]) == [1.0, 1.0, 1.0]
    assert res.counts["matcher_only"] == res.counts["people_only"] == 0


def test_people_truth_is_the_reference_truth_of_their_answers(store: Store) -> None:
    truth = people_truth(store, GOOD)
    pm = people_matches(store, run_id=GOOD)
    assert set(truth.verdicts) <= set(pm["verdict_hash"])
    les = _lessons(store, set(pm["verdict_hash"]))
    said = pm[~pm["tied"]]  # a lesson the people split on claims nothing
    assert len(said) == len(pm) - 1  # the sample's one on the good run
    by_hand = _people_pairs(les, {(h, int(i)): r for h, i, r in zip(
        said["verdict_hash"], said["lesson_index"], said["reference_id"], strict=True)})
    lessons = truth.lessons
    got = {(h, int(i)): r for h, i, r, y in zip(lessons["verdict_hash"],
                                                lessons["lesson_index"],
                                                lessons["reference_id"], lessons["y"],
                                                strict=True) if y}
    assert got == by_hand
    assert truth.counts["matcher"] == "people"


def test_tied_lessons_are_left_out(store: Store) -> None:
    rows = store.sql("SELECT verdict_hash, extractor_id AS extractor, lesson_index, "
                     "reference_id, annotator FROM match_labels").df()
    before = match_agreement(store, GOOD, match_labels=rows, n_boot=10)
    # A lesson one person answered (the sample has a share answered by both).
    per = rows.groupby(["verdict_hash", "extractor", "lesson_index"]).size()
    first = next(p for p in before.pairs.itertuples()
                 if per[(p.verdict_hash, "sim-good-v1", p.lesson_index)] == 1)
    mine = rows[(rows["verdict_hash"] == first.verdict_hash)
                & (rows["lesson_index"] == first.lesson_index)]
    other = "" if mine["reference_id"].iloc[0] else "r1"  # any other answer: a 1-1 tie
    tie = pd.DataFrame({"verdict_hash": [first.verdict_hash], "extractor": ["sim-good-v1"],
                        "lesson_index": [first.lesson_index], "reference_id": [other],
                        "annotator": ["someone-else"]})
    after = match_agreement(store, GOOD, match_labels=pd.concat([rows, tie]), n_boot=10)
    # The sample's own: the two people split on one lesson of the good run.
    assert before.counts["lessons_tied"] == 1
    assert (after.counts["n"], after.counts["lessons_tied"]) == (before.counts["n"] - 1, 2)


def test_the_bootstrap_is_reproducible_by_seed(store: Store) -> None:
    a = match_agreement(store, GOOD, n_boot=200, random_state=3)
    b = match_agreement(store, GOOD, n_boot=200, random_state=3)
    c = match_agreement(store, GOOD, n_boot=200, random_state=4)
    pd.testing.assert_frame_equal(a.table, b.table)
    assert not a.table[["low", "high"]].equals(c.table[["low", "high"]])
    pd.testing.assert_series_equal(a.table["value"], c.table["value"])


def test_agreement_table_against_a_loop_over_replicates() -> None:
    # The shared computation: values from the totals, intervals from whole verdicts.
    rng = np.random.default_rng(0)
    n = 300
    verdicts = rng.integers(0, 60, n).astype(str).astype(object)
    a, b = rng.integers(0, 2, n), rng.integers(0, 2, n)
    cells = np.stack([(a == 1) & (b == 1), (a == 1) & (b == 0), (a == 0) & (b == 1),
                      (a == 0) & (b == 0)]).astype(float)
    table, totals = agreement_table(cells, verdicts, lambda c: kappa_counts(*c)[None],
                                    ["kappa"], n_boot=300, random_state=1)
    assert table.loc["kappa", "value"] == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
    assert list(totals) == list(cells.sum(axis=1))
    again, _ = agreement_table(cells, verdicts, lambda c: kappa_counts(*c)[None], ["kappa"],
                               n_boot=300, random_state=1)
    pd.testing.assert_frame_equal(table, again)
    lo, hi = table.loc["kappa", ["low", "high"]]
    assert lo < table.loc["kappa", "value"] < hi


def test_kappa_counts_is_nan_where_undefined() -> None:
    assert np.isnan(kappa_counts(0, 0, 0, 0))
    assert np.isnan(kappa_counts(5, 0, 0, 0))
    assert kappa_counts(3, 1, 1, 3) == pytest.approx(cohen_kappa_score(
        [1, 1, 1, 1, 0, 0, 0, 0], [1, 1, 1, 0, 1, 0, 0, 0]))


def test_a_run_nobody_matched_is_refused(store: Store) -> None:
    empty = pd.DataFrame({"verdict_hash": [], "extractor": [], "lesson_index": [],
                          "reference_id": []})
    with pytest.raises(BadInputError, match="no match labels on the lessons of run"):
        match_agreement(store, GOOD, match_labels=empty)


def test_cli_reports_the_table_and_refuses_an_unknown_matcher(template: Path) -> None:
    r = invoke("match-agreement", GOOD, "--db", template, "--n-boot", "50", "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["matcher"] == "semantic" and set(out["metrics"]) == {"precision", "recall",
                                                                    "kappa"}
    assert out["metrics"]["recall"]["value"] == pytest.approx(_oracle_cached(template))
    r = invoke("match-agreement", GOOD, "--db", template, "--matcher", "fuzzy")
    assert r.exit_code == 2 and "'fuzzy'" in r.output and "--matcher" in r.output
    assert len(r.output.strip().splitlines()) == 1
    r = invoke("match-agreement", GOOD, "--db", template, "--matcher", "judge:replay:nobody")
    assert r.exit_code == 2 and "field '--matcher'" in r.output


def _oracle_cached(template: Path) -> float:
    with Store(template, read_only=True) as s:
        return _oracle(s)["recall"]


def test_the_semantic_matcher_is_scored_by_the_same_rule(store: Store) -> None:
    res = match_agreement(store, GOOD, matcher=SemanticMatcher(), n_boot=20)
    want = _oracle(store, matcher=SemanticMatcher(), threshold=SEMANTIC_MATCH_THRESHOLD)
    assert res.matcher == "semantic" and res.match_threshold == SEMANTIC_MATCH_THRESHOLD
    for metric in ("precision", "recall", "kappa"):
        assert res.table.loc[metric, "value"] == pytest.approx(want[metric], abs=1e-12)


def test_a_judge_matcher_records_then_replays_the_same_agreement(template: Path,
                                                                 tmp_path: Path) -> None:
    db = copy_db(template, tmp_path / "lab.duckdb")
    live = invoke("match-agreement", GOOD, "--db", db, "--matcher", "judge:simulated",
                  "--n-boot", "50", "--json")
    assert live.exit_code == 0, live.output
    with Store(db, read_only=True) as s:
        n = s.sql("SELECT count(*) FROM completions WHERE starts_with(extractor_id, "
                  "'match:sim-match-v1@')").fetchone()[0]
    # One call per compared verdict with a reference (none to ask about on the others).
    assert 0 < n <= json.loads(live.output)["counts"]["verdicts"]
    replay = invoke("match-agreement", GOOD, "--db", db, "--matcher",
                    "judge:replay:sim-match-v1", "--n-boot", "50", "--json")
    assert replay.exit_code == 0, replay.output
    assert json.loads(replay.output)["metrics"] == json.loads(live.output)["metrics"]
    assert json.loads(live.output)["matcher"] == "judge:sim-match-v1@match-v1"


def test_a_matcher_that_makes_no_pair_says_why_its_precision_is_nan(store: Store,
                                                                     template: Path) -> None:
    with pytest.warns(UndefinedMetricWarning, match="the matcher made no pair on the"):
        res = match_agreement(store, GOOD, match_threshold=1.0, n_boot=20)
    assert res.counts["pairs_matcher"] == 0 and np.isnan(res.table.loc["precision", "value"])
    r = invoke("match-agreement", GOOD, "--db", template, "--match-threshold", "1",
               "--n-boot", "20")
    assert r.exit_code == 0, r.output
    said = [ln for ln in r.stderr.splitlines() if ln.startswith("warning: ")]
    assert len(said) == 1 and "pair precision is undefined (NaN)" in said[0], r.stderr
