"""score._matching: the matchers (semantic by default, lexical by name) and the greedy
one-to-one assignment."""

from __future__ import annotations

import importlib.util
import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.builders.cli import invoke, invoke_json
from tests.builders.stores import copy_db
from truss_lab.core._errors import BadInputError
from truss_lab.evaluate._runs import sweep_run
from truss_lab.evaluate._truth import Truth
from truss_lab.faces._notebook import SAMPLE, load_sample, run_sample_extractions
from truss_lab.score._matching import (
    LEXICAL_MATCH_THRESHOLD,
    SEMANTIC_MATCH_THRESHOLD,
    LexicalMatcher,
    SemanticMatcher,
    _wordllama,
    match_lessons,
    match_threshold_of,
    matcher_name,
    matcher_named,
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
    out = match_lessons(les, refs, matcher="lexical")
    assert out["matched"].tolist() == [False, True]  # the higher salience claims first
    tied = match_lessons(les.assign(s=0.7), refs, matcher="lexical")
    assert tied["matched"].tolist() == [True, False]  # a tie goes to the lower index
    assert tied["reference_id"].tolist()[0] == "r1"


def test_one_to_one_claims_next_best_and_nan_claims_nothing() -> None:
    refs = _refs([(V1, "r1", "alpha beta gamma delta"), (V1, "r2", "alpha beta gamma epsilon")])
    les = _lessons([(V1, 0, "alpha beta gamma delta", 0.9),
                    (V1, 1, "alpha beta gamma delta", 0.8),   # r1 taken: r2 is similar enough
                    (V1, 2, "alpha beta gamma delta", 0.7),   # both taken: a false positive
                    (V1, 3, "alpha beta gamma epsilon", np.nan)])
    out = match_lessons(les, refs, matcher="lexical", threshold=0.5)
    assert out["reference_id"].tolist()[:2] == ["r1", "r2"]
    assert out["matched"].tolist() == [True, True, False, False]
    assert out["similarity"][3] == pytest.approx(1.0)  # best similarity kept for inspection


def test_verdicts_do_not_mix_and_wordings_take_the_best() -> None:
    refs = _refs([(V1, "r1", "alpha beta"), (V1, "r1", "gamma delta"), (V2, "r1", "alpha beta"),
                  (V2, "none", "")])
    les = _lessons([(V1, 0, "gamma delta", 0.5), (V2, 0, "gamma delta", 0.5)])
    out = match_lessons(les, refs, matcher="lexical")
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

    pd.testing.assert_frame_equal(match_lessons(les, refs, matcher=lex, threshold=0.3),
                                  match_lessons(les, refs, matcher=plain, threshold=0.3))


def test_bad_input() -> None:
    with pytest.raises(BadInputError, match="lack column"):
        match_lessons(pd.DataFrame({"text": []}), _refs([]))
    with pytest.raises(BadInputError, match="match threshold"):
        match_lessons(_lessons([]), _refs([]), matcher="lexical", threshold=1.5)
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
    """Documented figures: the sample's wording does not flatter word overlap. At 0.22
    (the lexical threshold chosen on an earlier, templated sample) the lexical matcher is
    precise but misses half the light paraphrases and most heavy ones; at its threshold
    tuned against people it finds most of them, at a cost in precision."""
    fig = _figures()
    acc = fig.matcher_accuracy(sample_store, 0.22).set_index(["extractor", "part"])
    light = acc.loc[("sim-paraphrase-v1", "light")]
    heavy = acc.loc[("sim-paraphrase-v1", "heavy")]
    assert light.precision >= 0.99 and 0.35 < light.recall < 0.65
    assert heavy.precision >= 0.99 and heavy.recall < 0.3
    for ex in ("sim-good-v1", "sim-overconfident-v1", "sim-paraphrase-v1"):
        assert acc.loc[(ex, "all")].precision >= 0.98 and acc.loc[(ex, "all")].recall < 0.7
        assert acc.loc[(ex, "repeats")].matched == 0  # repeats of a matched lesson: unmatched
    tuned = fig.matcher_accuracy(sample_store).set_index(["extractor", "part"])
    assert tuned.loc[("sim-paraphrase-v1", "light")].recall > 0.9
    assert tuned.loc[("sim-paraphrase-v1", "heavy")].recall > heavy.recall + 0.4
    tot = tuned.xs("all", level="part")[["matched", "correct", "should_match"]].sum()
    assert 0.7 < tot.correct / tot.matched < 0.9 and tot.correct / tot.should_match > 0.85
    assert LEXICAL_MATCH_THRESHOLD == 0.06  # scripts/tune_match_thresholds.py


# -- the semantic matcher (the default; WordLlama is a core dependency) ----------------------

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
        with pytest.raises(BadInputError, match="WordLlama is a dependency of truss_lab"):
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
    strict = fig.matcher_accuracy(sample_store, 0.22).set_index(["extractor", "part"])
    for part in ("light", "heavy"):
        s, lx = sem.loc[("sim-paraphrase-v1", part)], strict.loc[("sim-paraphrase-v1", part)]
        assert s.precision >= 0.95 and s.recall > lx.recall + 0.3
    cols = ["matched", "correct", "should_match"]
    tot = sem.xs("all", level="part")[cols].sum()
    assert tot.correct / tot.matched > 0.8 and tot.correct / tot.should_match > 0.9
    # Better than word overlap at its own tuned threshold on both counts.
    lex = fig.matcher_accuracy(sample_store).set_index(["extractor", "part"]).xs(
        "all", level="part")[cols].sum()
    assert tot.correct / tot.matched > lex.correct / lex.matched
    assert tot.correct / tot.should_match > lex.correct / lex.should_match
    assert SEMANTIC_MATCH_THRESHOLD == 0.26  # scripts/tune_match_thresholds.py


def test_the_default_matcher_is_the_semantic_one(semantic: SemanticMatcher) -> None:
    les = _lessons([(V1, i, t, 0.9) for i, t in enumerate(_PARA_L)])
    refs = _refs([(V1, f"r{i + 1}", t) for i, t in enumerate(_PARA_R)])
    for named in (None, "auto", "semantic"):
        assert matcher_name(named) == "semantic"
        assert isinstance(matcher_named(named), SemanticMatcher)
        assert match_threshold_of(named) == SEMANTIC_MATCH_THRESHOLD
        pd.testing.assert_frame_equal(match_lessons(les, refs, matcher=named),
                                      match_lessons(les, refs, matcher=semantic))
    assert isinstance(matcher_named("lexical"), LexicalMatcher)
    assert match_threshold_of("lexical") == LEXICAL_MATCH_THRESHOLD
    assert matcher_name(LexicalMatcher()) == "lexical"
    with pytest.raises(BadInputError, match="auto, lexical, semantic"):
        matcher_named("fuzzy")


def _modules_after_cli(*args: str) -> list[str]:
    probe = ("import sys, json\nfrom truss_lab.faces.cli import main\n"
             f"sys.argv = ['truss-lab', *{list(args)!r}]\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\n"
             "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
             "('wordllama', 'tokenizers'))))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_the_model_is_loaded_only_when_a_matcher_is_used(sample_good_run: Path,
                                                          tmp_path: Path) -> None:
    """Start-up cost: WordLlama (and tokenizers) are imported by a command that matches
    lessons to references, never by one that does not."""
    db = str(copy_db(sample_good_run, tmp_path / "g.duckdb"))
    rid = "sample-sim-good-v1-model-scored-0.70"
    assert _modules_after_cli("sweep", rid, "--db", db, "--truth", "labels",
                              "--n-boot", "5") == []
    assert "wordllama" in _modules_after_cli("sweep", rid, "--db", db, "--truth",
                                             "references", "--n-boot", "5")


def test_sweep_of_the_paraphraser_says_its_default_matcher(tmp_path: Path) -> None:
    """What must be shown (issue 36, item 8): with no people's match labels, the reference
    sweep of the sample's paraphrasing extractor uses the semantic matcher and says so."""
    folder = tmp_path / "sample"
    shutil.copytree(SAMPLE, folder, ignore=shutil.ignore_patterns("match_labels.csv"))
    db = tmp_path / "p.duckdb"
    with load_sample(db, sample=folder) as store:
        rid = run_sample_extractions(store, extractors=("sim-paraphrase-v1",),
                                     write_memory=False)["sim-paraphrase-v1"].run_id
        want = sweep_run(store, rid, truth=Truth.references(matcher="semantic"),
                         thresholds=[0.7])
    r = invoke("sweep", rid, "--db", db, "--truth", "references", "--n-boot", "20")
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert lines[1] == ("truth: references (as asked), matcher semantic (the default; "
                        "--matcher lexical for word overlap)")
    assert lines[2] == "correction: none"
    row = next(x.split() for x in lines if x.strip().startswith("0.700"))
    assert float(row[4]) == pytest.approx(float(want["precision"].iloc[0]), abs=5e-4)
    lex = invoke("sweep", rid, "--db", db, "--truth", "references", "--matcher", "lexical",
                 "--n-boot", "20")
    assert lex.stdout.splitlines()[1] == "truth: references (as asked), matcher lexical"
    row_lex = next(x.split() for x in lex.stdout.splitlines()
                   if x.strip().startswith("0.700"))
    assert float(row_lex[4]) != float(row[4])  # the name is the matcher used
