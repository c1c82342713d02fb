"""score._matching: the lexical matcher and the greedy one-to-one assignment."""

from __future__ import annotations

import importlib.util
import socket
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.builders.cli import invoke, invoke_json
from tests.builders.stores import copy_db
from truss_lab.core._errors import BadInputError
from truss_lab.evaluate._runs import sweep_run
from truss_lab.faces._notebook import run_sample_extractions
from truss_lab.score._matching import (
    DEFAULT_MATCH_THRESHOLD,
    SEMANTIC_MATCH_THRESHOLD,
    LexicalMatcher,
    SemanticMatcher,
    _wordllama,
    match_lessons,
    match_threshold_of,
)
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


def _figures():
    spec = importlib.util.spec_from_file_location("reference_figures",
                                                  ROOT / "scripts" / "reference_figures.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_matcher_against_the_simulators_truth(sample_store) -> None:
    """README figures: the sample's wording does not flatter the lexical matcher. It is
    precise, but misses half the light paraphrases and most heavy ones."""
    acc = _figures().matcher_accuracy(sample_store).set_index(["extractor", "part"])
    light = acc.loc[("sim-paraphrase-v1", "light")]
    heavy = acc.loc[("sim-paraphrase-v1", "heavy")]
    assert light.precision >= 0.99 and 0.35 < light.recall < 0.65
    assert heavy.precision >= 0.99 and heavy.recall < 0.3
    for ex in ("sim-good-v1", "sim-overconfident-v1", "sim-paraphrase-v1"):
        assert acc.loc[(ex, "all")].precision >= 0.98 and acc.loc[(ex, "all")].recall < 0.7
        assert acc.loc[(ex, "repeats")].matched == 0  # repeats of a matched lesson: unmatched
    assert DEFAULT_MATCH_THRESHOLD == 0.22


# -- the semantic matcher (the optional [semantic] extra, in the dev extras) ----------------

_PARA_L = ["Make a scheduled job idempotent before enabling automatic retries",
           "Rotate the API keys every quarter",
           "Disable the legacy cron entry when the new schedule goes live"]
_PARA_R = ["Ensure that re-running a periodic task twice has no duplicate side effects "
           "before turning on retrying",
           "Rotating credentials quarterly is advisable",
           "Turn off the old crontab line in the same change that switches on the new timetable"]


@pytest.fixture
def semantic(monkeypatch: pytest.MonkeyPatch) -> SemanticMatcher:
    """A SemanticMatcher loaded with every network connection refused: a download
    attempt would fail the test."""
    def refuse(*_a: object, **_k: object) -> None:
        raise AssertionError("the semantic matcher tried to connect to the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    _wordllama.cache_clear()
    try:
        yield SemanticMatcher()
    finally:
        _wordllama.cache_clear()


def test_semantic_matcher_sees_paraphrases_offline(semantic: SemanticMatcher) -> None:
    les = _lessons([(V1, i, t, 0.9) for i, t in enumerate(_PARA_L)] + [(V1, 3, "", 0.5)])
    refs = _refs([(V1, f"r{i + 1}", t) for i, t in enumerate(_PARA_R)])
    m = semantic(les, refs)
    lex = LexicalMatcher()(les, refs)
    assert m.shape == (4, 3) and ((m >= 0) & (m <= 1)).all()
    # Each lesson is closest to its own paraphrase, which shares (almost) no content word.
    assert m[:3].argmax(axis=1).tolist() == [0, 1, 2]
    assert (np.diag(m[:3]) > np.diag(lex[:3]) + 0.1).all()
    assert (m[3] == 0).all()  # an empty text is like nothing
    # pairs() in bulk equals the per-verdict matrix, and the evidence conflict halves.
    li, ri = np.array([0, 2, 1]), np.array([0, 2, 2])
    np.testing.assert_allclose(semantic.pairs(les, refs, li, ri), m[li, ri])
    les_e = les.assign(evidence=[["check:a"], [], [], []])
    refs_e = refs.assign(evidence=[["check:b"], [], []])
    np.testing.assert_allclose(semantic(les_e, refs_e)[0, 0], 0.5 * m[0, 0])
    out = match_lessons(les, refs, matcher=semantic,
                        threshold=match_threshold_of(semantic))
    assert match_threshold_of(semantic) == SEMANTIC_MATCH_THRESHOLD
    assert out["reference_id"].dropna().tolist() == [r for r, ok in zip(
        ["r1", "r2", "r3"], np.diag(m[:3]) >= SEMANTIC_MATCH_THRESHOLD, strict=True) if ok]


def test_semantic_matcher_without_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "wordllama", None)  # import wordllama -> ImportError
    _wordllama.cache_clear()
    try:
        with pytest.raises(BadInputError, match=r"pip install 'truss_lab\[semantic\]'"):
            SemanticMatcher()
    finally:
        _wordllama.cache_clear()


def test_cli_sweep_with_the_semantic_matcher(sample_full: Path, tmp_path: Path,
                                             semantic: SemanticMatcher) -> None:
    db = copy_db(sample_full, tmp_path / "s.duckdb")
    with Store(db) as store:
        runs = run_sample_extractions(store, extractors=("sim-paraphrase-v1",),
                                      write_memory=False)
        rid = runs["sim-paraphrase-v1"].run_id
        want = sweep_run(store, rid, truth="references", matcher=semantic, thresholds=[0.7])
    out = invoke_json("sweep", rid, "--db", db, "--truth", "references", "--matcher",
                      "semantic", "--n-boot", "20")
    assert out["matcher"] == "semantic"
    row = next(r for r in out["sweep"] if r["threshold"] == pytest.approx(0.7))
    assert row["precision"] == pytest.approx(float(want["precision"].iloc[0]))
    r = invoke("sweep", rid, "--db", db, "--matcher", "semantic", "--match-judge", "replay:x")
    assert r.exit_code == 2 and "--matcher semantic and --match-judge replay:x disagree" in r.output


def test_semantic_matcher_against_the_simulators_truth(sample_store,
                                                       semantic: SemanticMatcher) -> None:
    """README figures: at its threshold the semantic matcher finds most paraphrases the
    lexical one misses, at some cost in precision (vague lessons near a reference)."""
    fig = _figures()
    sem = fig.matcher_accuracy(sample_store, matcher=semantic).set_index(["extractor", "part"])
    lex = fig.matcher_accuracy(sample_store).set_index(["extractor", "part"])
    for part in ("light", "heavy"):
        s, lx = sem.loc[("sim-paraphrase-v1", part)], lex.loc[("sim-paraphrase-v1", part)]
        assert s.precision >= 0.95 and s.recall > lx.recall + 0.3
    tot = sem.xs("all", level="part")[["matched", "correct", "should_match"]].sum()
    assert tot.correct / tot.matched > 0.85 and tot.correct / tot.should_match > 0.85
    assert SEMANTIC_MATCH_THRESHOLD == 0.3
