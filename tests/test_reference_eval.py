"""evaluate._truth: a run judged by reference lessons (greedy sweep, misses, exclusions)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.builders.cli import invoke
from tests.builders.grids import first
from tests.builders.stores import copy_db
from truss_lab.core._errors import BadInputError
from truss_lab.evaluate._runs import choose_run_threshold, compare_runs, sweep_run
from truss_lab.evaluate._truth import (
    ReferenceTruth,
    Truth,
    judge_lessons,
    reference_sweep,
    reference_truth,
    run_references,
)
from truss_lab.faces._notebook import run_sample_extractions, sample_run_id
from truss_lab.score._matching import LexicalMatcher, match_lessons
from truss_lab.store._store import Store

WORDS = "cron dst job key api retry cache schema index deploy quota token".split()


def _truth(les: pd.DataFrame, refs: pd.DataFrame, thr: float) -> ReferenceTruth:
    rows, n_refs = judge_lessons(les, refs, match_threshold=thr)
    annotated = set(refs["verdict_hash"])
    return ReferenceTruth(run_id="t", rows=rows, n_references=n_refs, n_verdicts=len(annotated),
                          n_lessons=len(les), match_threshold=thr, counts={})


def _random_case(seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    les, refs = [], []
    for v in range(int(rng.integers(1, 8))):
        vh = f"{v:064x}"
        for k in range(int(rng.integers(0, 4))):
            refs.append((vh, f"r{k + 1}", " ".join(rng.choice(WORDS, 3)), "ab"[k % 2]))
        for i in range(int(rng.integers(0, 6))):
            # Coarse saliences make ties; some NaN (never kept).
            s = np.nan if rng.random() < 0.1 else float(np.round(rng.random(), 1))
            les.append((vh, i, " ".join(rng.choice(WORDS, 3)), s))
    les_df = pd.DataFrame(les, columns=["verdict_hash", "lesson_index", "text", "s"])
    les_df["evidence"] = [[] for _ in range(len(les_df))]
    refs_df = pd.DataFrame(refs, columns=["verdict_hash", "reference_id", "text", "annotator"])
    refs_df["evidence"] = [[] for _ in range(len(refs_df))]
    return les_df, refs_df


# Every seed is a fresh random case of one property: 15 in make test, 60 in test-slow.
@pytest.mark.parametrize("seed", first(range(60), 15))
def test_sweep_equals_brute_force_rematch_at_every_threshold(seed: int) -> None:
    les, refs = _random_case(seed)
    if refs.empty:
        return
    thr = 0.2
    truth = _truth(les, refs, thr)
    grid = sorted(set(les["s"].dropna()) | {0.0, 0.05, 0.55, 1.0})
    fast = reference_sweep(truth, thresholds=grid)
    n_refs = refs[["verdict_hash", "reference_id"]].drop_duplicates().shape[0]
    for t, row in zip(grid, fast.itertuples(), strict=True):
        kept = les[les["s"] >= t]  # NaN >= t is False: never kept
        m = match_lessons(kept, refs, threshold=thr)  # re-match only what is kept
        tp = int(m["matched"].sum())
        assert (row.kept, row.tp, row.fp, row.fn) == (len(kept), tp, len(kept) - tp, n_refs - tp)
        with np.errstate(invalid="ignore", divide="ignore"):
            assert row.precision == pytest.approx(tp / len(kept) if len(kept) else np.nan,
                                                  nan_ok=True, rel=0, abs=0)
        assert row.recall == tp / n_refs


def test_duplicates_cost_precision() -> None:
    vh = "a" * 64
    refs = pd.DataFrame({"verdict_hash": [vh], "reference_id": ["r1"],
                         "text": ["retry the payment webhook after timeouts"], "evidence": [[]]})
    les = pd.DataFrame({"verdict_hash": [vh, vh], "lesson_index": [0, 1],
                        "text": ["Retry the payment webhook after timeouts."] * 2,
                        "s": [0.9, 0.8], "evidence": [[], []]})
    sw = reference_sweep(_truth(les, refs, 0.22), thresholds=[0.85, 0.5])
    assert sw[["kept", "tp", "fp", "fn"]].values.tolist() == [[1, 1, 0, 0], [2, 1, 1, 0]]
    assert sw["precision"].tolist() == [1.0, 0.5] and sw["recall"].tolist() == [1.0, 1.0]


@pytest.fixture(scope="module")
def sample_db(sample_full: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = copy_db(sample_full, tmp_path_factory.mktemp("refeval") / "s.duckdb")
    with Store(path) as store:
        run_sample_extractions(store, extractors=("sim-good-v1", "heuristic-v1"),
                               write_memory=False)
    return path


@pytest.fixture
def sample(sample_db: Path) -> Iterator[Store]:
    with Store(sample_db, read_only=True) as store:
        yield store


def test_unparseable_and_empty_completions_count_their_references_as_misses(sample) -> None:
    rid = sample_run_id("sim-good-v1")
    errored = {r[0] for r in sample.sql(
        "SELECT verdict_hash FROM verdict_errors WHERE run_id = ?", [rid]).fetchall()}
    with_cands = {r[0] for r in sample.sql(
        "SELECT DISTINCT verdict_hash FROM candidates WHERE run_id = ? AND valid",
        [rid]).fetchall()}
    refs = run_references(sample)
    real = refs[refs["reference_id"] != "none"]
    hit = sorted(set(real["verdict_hash"]) & errored)
    assert hit, "the sample has annotated verdicts whose completion did not parse"
    # A verdict the extractor processed but answered with no lesson: give it a reference.
    processed = {r[0] for r in sample.sql(
        "SELECT verdict_hash FROM run_verdicts WHERE run_id = ?", [rid]).fetchall()}
    empty = sorted(processed - with_cands - errored - set(refs["verdict_hash"]))[0]
    extra = pd.DataFrame({"verdict_hash": [empty], "reference_id": ["r1"],
                          "text": ["something it should have taught"], "evidence": [[]],
                          "annotator": ["x"]})
    truth = reference_truth(sample, rid, references=pd.concat([refs, extra], ignore_index=True))
    rows = truth.rows
    for vh in [*hit, empty]:
        want = set(real.loc[real["verdict_hash"] == vh, "reference_id"]) or {"r1"}
        got = rows[rows["verdict_hash"] == vh]
        assert set(got["kind"]) == {"miss"} and set(got["reference_id"]) == want
        assert got["s"].isna().all() and (got["y"] == 1).all()
    assert truth.n_references == len(real[["verdict_hash", "reference_id"]]
                                       .drop_duplicates()) + 1
    sw = reference_sweep(truth, thresholds=[0.0])
    assert sw["fn"][0] >= sum(len(set(real.loc[real.verdict_hash == v, "reference_id"]))
                              for v in hit) + 1


def test_unannotated_verdicts_are_excluded(sample) -> None:
    rid = sample_run_id("sim-good-v1")
    refs = run_references(sample)
    truth = reference_truth(sample, rid)
    assert set(truth.rows["verdict_hash"]) <= set(refs["verdict_hash"])
    assert truth.counts["verdicts_annotated"] == 402
    assert truth.counts["lessons_unannotated"] + truth.n_lessons == sample.sql(
        "SELECT count(*) FROM candidates WHERE run_id = ? AND valid", [rid]).fetchall()[0][0]
    one = refs[refs["verdict_hash"] == truth.rows["verdict_hash"].iloc[0]]
    small = reference_truth(sample, rid, references=one)
    assert small.n_verdicts == 1 and set(small.rows["verdict_hash"]) == set(one["verdict_hash"])
    with pytest.raises(BadInputError, match="no verdict with reference lessons"):
        reference_truth(sample, rid, references=one.iloc[:0])


def test_per_annotator_references(sample) -> None:
    rid = sample_run_id("sim-good-v1")
    union = reference_truth(sample, rid)
    b = reference_truth(sample, rid, annotator="ann-b")
    assert b.n_verdicts == 170 and b.n_references == 130 < union.n_references == 323


def test_quiet_annotated_verdicts_count_per_verdict(sample) -> None:
    truth = reference_truth(sample, sample_run_id("sim-good-v1"))
    assert truth.rows["verdict_hash"].nunique() == truth.n_verdicts == 402
    quiet = truth.rows[truth.rows["kind"] == "verdict"]
    assert len(quiet) and (quiet["y"] == 0).all() and quiet["s"].isna().all()


def test_one_evaluation_any_truth(sample) -> None:
    good, heur = sample_run_id("sim-good-v1"), sample_run_id("heuristic-v1")
    by_labels = sweep_run(sample, good, thresholds=[0.7])
    by_refs = sweep_run(sample, good, thresholds=[0.7], truth="references")
    assert list(by_labels.columns) == list(by_refs.columns)
    assert by_refs["precision"][0] > 0.7  # the default, semantic matcher (score without labels)
    with pytest.raises(BadInputError, match="no labelled"):
        compare_runs(sample, good, heur, n_boot=50)
    res = compare_runs(sample, good, heur, truth="references", n_boot=50)
    assert res.n_common == 402 and not res.only_in_a and not res.only_in_b
    # B - A: by the default matcher the heuristic's one lesson per failed check (naming the
    # check) is mostly taken for its reference, so it ranks above the good run
    # (docs/explanation/truth-sources.md); by word overlap at 0.22 it ranked last.
    assert res.table["delta_f1_low"][0] > 0
    strict = LexicalMatcher()
    strict.match_threshold = 0.22
    old = compare_runs(sample, good, heur, truth=Truth.references(matcher=strict), n_boot=50)
    assert old.table["delta_f1_high"][0] < 0
    choice = choose_run_threshold(sample, heur, truth="references", n_boot=20,
                                  cv=None)
    assert choice.split["n_train_verdicts"] + choice.split["n_test_verdicts"] == 402
    with pytest.raises(BadInputError, match="truth must be one of"):
        sweep_run(sample, good, truth="judge")


def test_cli_compare_model_and_heuristic_without_labels(sample_db) -> None:
    """The README's `truss-lab compare <model run> <heuristic run>` on the sample."""
    good, heur = sample_run_id("sim-good-v1"), sample_run_id("heuristic-v1")
    run = invoke("compare", good, heur, "--db", str(sample_db),
                 "--n-boot", "50")
    assert run.exit_code == 0, run.output
    assert "truth: references (run 'sample-heuristic-v1" in run.output
    assert "402 common verdicts" in run.output
    run = invoke("compare", good, heur, "--db", str(sample_db),
                 "--truth", "labels", "--n-boot", "50")
    assert run.exit_code != 0 and "no labelled" in run.output
    run = invoke("sweep", "--run", good, "--db", str(sample_db),
                 "--truth", "references", "--n-boot", "20", "--json")
    assert run.exit_code == 0, run.output
    assert '"truth": "references"' in run.output
