"""score._matching: the lexical matcher and the greedy one-to-one assignment."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.builders.stores import copy_db
from truss_lab.core._errors import BadInputError
from truss_lab.faces._notebook import run_sample_extractions
from truss_lab.score._matching import DEFAULT_MATCH_THRESHOLD, LexicalMatcher, match_lessons
from truss_lab.store._store import Store

V1, V2 = "1" * 64, "2" * 64
ROOT = Path(__file__).resolve().parents[1]


def _lessons(rows: list[tuple]) -> pd.DataFrame:
    """rows: (verdict, lesson_index, text, salience[, evidence])."""
    return pd.DataFrame({
        "verdict_hash": [r[0] for r in rows], "lesson_index": [r[1] for r in rows],
        "text": [r[2] for r in rows], "s": [r[3] for r in rows],
        "evidence": [r[4] if len(r) > 4 else [] for r in rows]})


def _refs(rows: list[tuple]) -> pd.DataFrame:
    """rows: (verdict, reference_id, text[, evidence])."""
    return pd.DataFrame({
        "verdict_hash": [r[0] for r in rows], "reference_id": [r[1] for r in rows],
        "text": [r[2] for r in rows], "evidence": [r[3] if len(r) > 3 else [] for r in rows]})


def test_lexical_matrix() -> None:
    les = _lessons([(V1, 0, "check cron jobs after DST change", 0.9),
                    (V1, 1, "rotate the API keys", 0.8, ["check:keys"])])
    refs = _refs([(V1, "r1", "After a DST change, check the cron jobs"),
                  (V1, "r2", "rotate API keys before expiry", ["check:other"])])
    m = LexicalMatcher()(les, refs)
    assert m.shape == (2, 2)
    assert m[0, 0] == pytest.approx(1.0)  # same content words ("a", "the" are stop words)
    assert m[0, 1] == 0.0
    plain = LexicalMatcher(evidence_conflict=1.0)(les, refs)
    assert m[1, 1] == pytest.approx(plain[1, 1] * 0.5) and plain[1, 1] > 0  # evidence conflict


def test_greedy_by_salience_then_lesson_index() -> None:
    refs = _refs([(V1, "r1", "check cron jobs after dst change")])
    les = _lessons([(V1, 0, "check cron jobs after dst change", 0.5),
                    (V1, 1, "check cron jobs after dst change", 0.9)])
    out = match_lessons(les, refs)
    assert out["matched"].tolist() == [False, True]  # the higher salience claims first
    tied = match_lessons(les.assign(s=0.7), refs)
    assert tied["matched"].tolist() == [True, False]  # a tie goes to the lower index
    assert tied["reference_id"].tolist()[0] == "r1"


def test_one_to_one_claims_next_best_and_nan_claims_nothing() -> None:
    refs = _refs([(V1, "r1", "alpha beta gamma delta"), (V1, "r2", "alpha beta gamma epsilon")])
    les = _lessons([(V1, 0, "alpha beta gamma delta", 0.9),
                    (V1, 1, "alpha beta gamma delta", 0.8),   # r1 taken: r2 is similar enough
                    (V1, 2, "alpha beta gamma delta", 0.7),   # both taken: a false positive
                    (V1, 3, "alpha beta gamma epsilon", np.nan)])
    out = match_lessons(les, refs, threshold=0.5)
    assert out["reference_id"].tolist()[:2] == ["r1", "r2"]
    assert out["matched"].tolist() == [True, True, False, False]
    assert out["similarity"][3] == pytest.approx(1.0)  # best similarity kept for inspection


def test_verdicts_do_not_mix_and_wordings_take_the_best() -> None:
    refs = _refs([(V1, "r1", "alpha beta"), (V1, "r1", "gamma delta"), (V2, "r1", "alpha beta"),
                  (V2, "none", "")])
    les = _lessons([(V1, 0, "gamma delta", 0.5), (V2, 0, "gamma delta", 0.5)])
    out = match_lessons(les, refs)
    assert out["matched"].tolist() == [True, False]
    assert out["similarity"].tolist() == [1.0, 0.0]


def test_plain_matcher_equals_bulk_path() -> None:
    rng = np.random.default_rng(3)
    words = "cron dst job key api retry cache schema index deploy".split()
    les = _lessons([(V1 if i % 2 else V2, i, " ".join(rng.choice(words, 4)), rng.random())
                    for i in range(20)])
    refs = _refs([(v, f"r{k}", " ".join(rng.choice(words, 4))) for v in (V1, V2)
                  for k in range(3)])
    lex = LexicalMatcher()

    def plain(a: pd.DataFrame, b: pd.DataFrame) -> np.ndarray:
        return lex(a, b)

    pd.testing.assert_frame_equal(match_lessons(les, refs, threshold=0.3),
                                  match_lessons(les, refs, matcher=plain, threshold=0.3))


def test_bad_input() -> None:
    with pytest.raises(BadInputError, match="lack column"):
        match_lessons(pd.DataFrame({"text": []}), _refs([]))
    with pytest.raises(BadInputError, match="match threshold"):
        match_lessons(_lessons([]), _refs([]), threshold=1.5)
    with pytest.raises(BadInputError):
        LexicalMatcher(evidence_conflict=2.0)


@pytest.fixture(scope="module")
def sample_store(sample_full: Path, tmp_path_factory: pytest.TempPathFactory):
    store = Store(copy_db(sample_full, tmp_path_factory.mktemp("match") / "s.duckdb"))
    run_sample_extractions(store, extractors=("sim-good-v1", "sim-overconfident-v1",
                                              "sim-paraphrase-v1"), write_memory=False)
    yield store
    store.close()


def test_matcher_against_the_simulators_truth(sample_store) -> None:
    """README figures: the lexical matcher on the bundled sample (aim >= 0.9 / 0.9 light)."""
    spec = importlib.util.spec_from_file_location("reference_figures",
                                                  ROOT / "scripts" / "reference_figures.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    acc = mod.matcher_accuracy(sample_store).set_index(["extractor", "part"])
    light = acc.loc[("sim-paraphrase-v1", "light")]
    heavy = acc.loc[("sim-paraphrase-v1", "heavy")]
    assert light.precision >= 0.99 and light.recall >= 0.98
    assert heavy.precision >= 0.99 and heavy.recall >= 0.95
    for ex in ("sim-good-v1", "sim-overconfident-v1", "sim-paraphrase-v1"):
        assert acc.loc[(ex, "all")].precision >= 0.98 and acc.loc[(ex, "all")].recall >= 0.98
        assert acc.loc[(ex, "repeats")].matched == 0  # repeats of a matched lesson: unmatched
    assert DEFAULT_MATCH_THRESHOLD == 0.22
