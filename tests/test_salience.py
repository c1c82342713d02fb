"""Salience scorers and calibrators (scikit-learn as the oracle for calibration)."""

from __future__ import annotations

import itertools
import json
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression

import truss_lab.score._salience as sal
from tests.builders.profiles import examples
from truss_lab.core._errors import BadInputError
from truss_lab.score._calibrators import IsotonicCalibrator, PlattCalibrator, calibrated
from truss_lab.score._salience import (
    Scorer,
    failed_checks,
    grounding,
    model_salience,
    novelty,
    score_candidates,
    scorer_records,
    specificity,
    verdict_outcome,
    verdict_table,
    weighted_sum,
)
from truss_lab.score._tokens import informative_tokens

A, B, C = "a" * 64, "b" * 64, "c" * 64


def _verdict(outcome: str, checks: list[tuple[str, bool]]) -> dict[str, Any]:
    return {
        "goal": "g", "verdict": outcome, "summary": "s", "tags": ["t"],
        "checks": [{"name": n, "passed": p, "evidence": ""} for n, p in checks],
    }


VERDICTS = {
    A: _verdict("fail", [("tz", False), ("reg", True), ("perf", False), ("docs", True)]),
    B: _verdict("pass", [("x", True)]),
    C: _verdict("partial", []),
}


def _cands(rows: list[dict[str, Any]]) -> pd.DataFrame:
    base = {"extractor": "sim-v1", "lesson_index": 0, "text": "t", "salience": 0.5,
            "evidence": [], "valid": True}
    return pd.DataFrame([{**base, **r} for r in rows])


# --- heuristic features ------------------------------------------------------


def test_grounding_hand_cases() -> None:
    c = _cands(
        [
            {"verdict_hash": A, "evidence": ["check:tz", "check:zzz"]},
            {"verdict_hash": A, "evidence": ["check:tz", " check:perf "]},
            {"verdict_hash": A, "evidence": []},
            {"verdict_hash": A, "evidence": None},
            {"verdict_hash": B, "evidence": ["check:tz"]},  # a check of another verdict
            {"verdict_hash": B, "evidence": ["x", "check:x", "CHECK:x"]},
            {"verdict_hash": A, "evidence": np.array(["check:reg"], dtype=object)},
        ]
    )
    got = grounding()(c, VERDICTS)
    np.testing.assert_allclose(got, [0.5, 1.0, 0.0, 0.0, 0.0, 1 / 3, 1.0])


def test_grounding_matches_reference_on_random_rows() -> None:
    rng = np.random.default_rng(0)
    pool = ["check:tz", "check:reg", "check:x", "check:nope", "tz", "log:1"]
    rows = []
    for _ in range(300):
        vh = [A, B, C][rng.integers(3)]
        ev = list(rng.choice(pool, size=rng.integers(0, 4)))
        rows.append({"verdict_hash": vh, "evidence": ev})
    c = _cands(rows)
    names = {h: {f"check:{k['name']}" for k in v["checks"]} for h, v in VERDICTS.items()}
    want = [
        (sum(e in names[r["verdict_hash"]] for e in r["evidence"]) / len(r["evidence"]))
        if r["evidence"] else 0.0
        for r in rows
    ]
    np.testing.assert_allclose(grounding()(c, VERDICTS), want)


def test_verdict_outcome_and_failed_checks() -> None:
    c = _cands([{"verdict_hash": h} for h in (A, B, C, A)])
    np.testing.assert_array_equal(verdict_outcome()(c, VERDICTS), [1.0, 0.0, 0.5, 1.0])
    np.testing.assert_array_equal(failed_checks()(c, VERDICTS), [0.5, 0.0, 0.0, 0.5])


def test_unknown_verdict_hash_is_named() -> None:
    c = _cands([{"verdict_hash": "f" * 64}])
    with pytest.raises(BadInputError, match=r"have no verdict.*ffff"):
        grounding()(c, VERDICTS)
    with pytest.raises(BadInputError, match="needs the verdicts"):
        verdict_outcome()(c)


def test_verdicts_as_frame_or_mapping_agree() -> None:
    c = _cands([{"verdict_hash": h, "evidence": ["check:tz"]} for h in (A, B, C)])
    frame = pd.DataFrame(
        [{"verdict_hash": h, **v} for h, v in VERDICTS.items()]
    )
    as_json = frame.assign(checks=frame["checks"].map(json.dumps))
    payload_col = pd.DataFrame({"verdict_hash": list(VERDICTS), "payload": list(VERDICTS.values())})
    # verdict_payloads() gives each payload as JSON text: it is read the same.
    payload_text = payload_col.assign(payload=payload_col["payload"].map(json.dumps))
    scorers = [grounding(), verdict_outcome(), failed_checks()]
    want = score_candidates(c, VERDICTS, scorers)
    variants = (frame, frame.set_index("verdict_hash"), as_json, payload_col, payload_text,
                verdict_table(VERDICTS))
    for v in variants:
        pd.testing.assert_frame_equal(score_candidates(c, v, scorers), want)


def test_verdict_table_rejects_bad_input() -> None:
    with pytest.raises(BadInputError, match="unknown verdict outcomes"):
        verdict_table({A: _verdict("maybe", [])})
    with pytest.raises(BadInputError, match="verdict_hash"):
        verdict_table(pd.DataFrame({"verdict": ["pass"], "checks": [[]]}))
    with pytest.raises(BadInputError, match="appears twice"):
        verdict_table(pd.DataFrame({"verdict_hash": [A, A], "verdict": ["pass"] * 2,
                                    "checks": [[], []]}))
    with pytest.raises(BadInputError, match="checks"):
        verdict_table({A: {"verdict": "fail", "checks": [{"nme": "x"}]}})
    with pytest.raises(BadInputError, match="JSON text") as err:
        verdict_table(pd.DataFrame({"verdict_hash": [A], "payload": ["{not json"]}))
    assert err.value.field == "payload" and err.value.source == A


def test_specificity_hand_cases() -> None:
    assert informative_tokens("The 02:00 UTC run at DST, the run!") == [
        "02:00", "utc", "run", "dst", "run"
    ]
    c = _cands(
        [
            {"text": "Do it."},  # no informative tokens
            # verify dst offset 02:00 utc runs -> 6 tokens
            {"text": "Verify the DST offset before 02:00 UTC runs"},
            {"text": " ".join(f"word{i}" for i in range(30))},
            {"text": None, "valid": False},
        ]
    )
    got = specificity()(c)
    np.testing.assert_allclose(got[:3], [0.0, 6 / 12, 1.0])
    assert np.isnan(got[3])
    np.testing.assert_allclose(specificity(6)(c)[:2], [0.0, 1.0])
    assert specificity(6).version != specificity().version
    with pytest.raises(BadInputError):
        specificity(0)


def test_novelty_hand_cases() -> None:
    corpus = ["alpha beta gamma", "delta epsilon"]
    c = _cands(
        [
            {"text": "Alpha beta gamma."},  # identical token set
            {"text": "alpha beta zeta"},  # J = 2/4
            {"text": "zzz qqq"},  # nothing shared
            {"text": "the a of"},  # no informative tokens
            {"text": "delta epsilon alpha"},  # vs doc 2: 2/3, vs doc 1: 1/5
        ]
    )
    np.testing.assert_allclose(novelty(corpus)(c), [0.0, 0.5, 1.0, 1.0, 1 - 2 / 3])
    np.testing.assert_allclose(novelty([])(c), 1.0)
    assert novelty(corpus).version != novelty(corpus[:1]).version
    assert novelty(corpus).version == novelty(corpus[::-1]).version


def _jaccard_reference(texts: list[str], corpus: list[str]) -> np.ndarray:
    docs = [set(informative_tokens(d)) for d in corpus]
    out = []
    for t in texts:
        s = set(informative_tokens(t))
        best = max(
            (len(s & d) / len(s | d) for d in docs if s and d), default=0.0
        )
        out.append(1.0 - best)
    return np.array(out)


@pytest.mark.parametrize("budget", [sal._JOIN_BUDGET, 7])
def test_novelty_matches_reference(monkeypatch: pytest.MonkeyPatch, budget: int) -> None:
    # A tiny join budget forces many chunks; the answer must not change.
    monkeypatch.setattr(sal, "_JOIN_BUDGET", budget)
    rng = np.random.default_rng(1)
    vocab = [f"w{i}" for i in range(25)] + ["the", "and", "x"]
    texts = [" ".join(rng.choice(vocab, size=rng.integers(0, 8))) for _ in range(200)]
    corpus = [" ".join(rng.choice(vocab, size=rng.integers(0, 8))) for _ in range(60)]
    got = novelty(corpus)(_cands([{"text": t} for t in texts]))
    np.testing.assert_allclose(got, _jaccard_reference(texts, corpus))


def test_model_salience_and_invalid_rows_are_nan() -> None:
    c = _cands(
        [{"salience": 0.3}, {"salience": np.nan, "valid": False}, {"salience": 0.9}]
    )
    got = model_salience()(c)
    np.testing.assert_array_equal(got[[0, 2]], [0.3, 0.9])
    assert np.isnan(got[1])


# --- combinations and score_candidates -------------------------------------


def test_weighted_sum_clips_and_propagates_nan() -> None:
    c = _cands(
        [
            {"verdict_hash": A, "salience": 0.8, "evidence": ["check:tz"]},
            {"verdict_hash": B, "salience": 0.2, "evidence": []},
            {"verdict_hash": A, "salience": 0.2, "valid": False},
        ]
    )
    ws = weighted_sum({model_salience(): 1.0, grounding(): 0.5})
    got = ws(c, VERDICTS)
    np.testing.assert_allclose(got[:2], [1.0, 0.2])
    assert np.isnan(got[2])
    neg = weighted_sum([(model_salience(), -1.0)], name="neg")(c, VERDICTS)
    np.testing.assert_array_equal(neg[:2], [0.0, 0.0])
    assert ws.needs_verdicts and set(ws.requires) >= {"salience", "evidence", "verdict_hash"}
    other = weighted_sum({model_salience(): 1.0, grounding(): 0.4})
    assert other.version != ws.version and other.name == ws.name
    with pytest.raises(BadInputError):
        weighted_sum({})
    with pytest.raises(BadInputError):
        weighted_sum([(model_salience(), float("nan"))])


def test_score_candidates_columns_and_record() -> None:
    c = _cands([{"verdict_hash": A, "evidence": ["check:tz"]}, {"verdict_hash": B}])
    scorers = [model_salience(), grounding(), specificity(), novelty(["t"])]
    out = score_candidates(c, VERDICTS, scorers)
    assert list(out.columns) == [*c.columns, *(f"score__{s.name}" for s in scorers)]
    assert [(r["name"], r["version"]) for r in out.attrs["scorers"]] == [
        (s.name, s.version) for s in scorers
    ]
    assert list(scorer_records(scorers)["column"]) == [s.column for s in scorers]
    assert "score__grounding" not in c.columns  # the input is not modified
    with pytest.raises(BadInputError, match="share the name"):
        score_candidates(c, VERDICTS, [model_salience(), model_salience()])
    with pytest.raises(BadInputError, match="needs candidate columns"):
        score_candidates(c.drop(columns="evidence"), VERDICTS, [grounding()])
    # Scorers that need no verdicts work without them.
    assert "score__model_salience" in score_candidates(c, None, [model_salience()])


def test_scorer_names_are_column_safe() -> None:
    with pytest.raises(BadInputError, match="must match"):
        Scorer("Bad Name", "1", lambda c, v: np.zeros(len(c)))


# --- calibration ---------------------------------------------------------------


def _labelled(n: int, seed: int, *, ties: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 1, n)
    if ties:
        x = np.round(x, 1)
    y = (rng.uniform(0, 1, n) < 0.15 + 0.7 * x).astype(float)
    vh = np.array([f"fit-{i // 3}" for i in range(n)], dtype=object)
    return x, y, vh


@pytest.mark.parametrize(("seed", "ties"), list(itertools.product(range(4), [False, True])))
def test_isotonic_equals_sklearn(seed: int, ties: bool) -> None:
    x, y, vh = _labelled(400, seed, ties=ties)
    cal = IsotonicCalibrator().fit(x, y, verdict_hash=vh)
    ref = IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1).fit(x, y)
    grid = np.linspace(-0.5, 1.5, 501)
    np.testing.assert_allclose(
        cal.predict(grid, allow_in_sample=True), ref.predict(grid), atol=1e-12
    )
    np.testing.assert_allclose(
        cal.predict(x, allow_in_sample=True), ref.predict(x), atol=1e-12
    )


@settings(max_examples=examples(100), deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 12), st.integers(0, 1)), min_size=1, max_size=40
    )
)
def test_isotonic_equals_sklearn_hypothesis(pairs: list[tuple[int, int]]) -> None:
    x = np.array([p[0] / 12 for p in pairs])
    y = np.array([p[1] for p in pairs], dtype=float)
    cal = IsotonicCalibrator().fit(x, y, verdict_hash=["v"] * len(x))
    ref = IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1).fit(x, y)
    grid = np.linspace(-0.1, 1.1, 49)
    np.testing.assert_allclose(
        cal.predict(grid, allow_in_sample=True), ref.predict(grid), atol=1e-12
    )


@pytest.mark.parametrize("seed", range(4))
def test_platt_close_to_sklearn(seed: int) -> None:
    x, y, vh = _labelled(500, seed, ties=False)
    cal = PlattCalibrator(smoothing=False, C=1e10).fit(x, y, verdict_hash=vh)
    ref = LogisticRegression(C=1e10, tol=1e-12, max_iter=10_000).fit(x[:, None], y)
    grid = np.linspace(-0.5, 1.5, 101)
    np.testing.assert_allclose(
        cal.predict(grid, allow_in_sample=True), ref.predict_proba(grid[:, None])[:, 1],
        atol=1e-4,
    )
    assert abs(cal.a_ - ref.coef_[0, 0]) < 1e-3 and abs(cal.b_ - ref.intercept_[0]) < 1e-3


def test_platt_with_default_c_on_separable_labels_stays_finite() -> None:
    x = np.array([0.1, 0.2, 0.3, 0.7, 0.8, 0.9])
    y = np.array([0, 0, 0, 1, 1, 1.0])
    cal = PlattCalibrator(smoothing=False).fit(x, y, verdict_hash=list("abcdef"))
    p = cal.predict(x, allow_in_sample=True)
    assert np.isfinite([cal.a_, cal.b_]).all()
    assert (p[:3] < 0.01).all() and (p[3:] > 0.99).all()
    ref = LogisticRegression(C=1e6, tol=1e-12, max_iter=100_000).fit(x[:, None], y)
    np.testing.assert_allclose(p, ref.predict_proba(x[:, None])[:, 1], atol=1e-4)


def _platt_reference(x: np.ndarray, y: np.ndarray, C: float) -> np.ndarray:
    """Platt (1999) written out: targets (N+ + 1)/(N+ + 2) and 1/(N- + 2), the
    cross-entropy against them (plus the slope penalty) minimised by scipy."""
    n_pos, n_neg = y.sum(), len(y) - y.sum()
    t = np.where(y == 1, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        z = theta[0] * x + theta[1]
        p = 1 / (1 + np.exp(-z))
        f = np.sum(np.logaddexp(0, z) - t * z) + theta[0] ** 2 / (2 * C)
        g = np.array([np.sum((p - t) * x) + theta[0] / C, np.sum(p - t)])
        return f, g

    res = minimize(loss, np.zeros(2), jac=True, method="BFGS", options={"gtol": 1e-12})
    return res.x


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("separable", [False, True])
def test_platt_smoothing_equals_direct_minimisation(seed: int, separable: bool) -> None:
    x, y, vh = _labelled(80 + 40 * seed, seed, ties=False)
    if separable:
        y = (x > np.median(x)).astype(float)  # a plain logistic fit would diverge here
    cal = PlattCalibrator().fit(x, y, verdict_hash=vh)
    n_pos = y.sum()
    assert cal.targets_ == ((n_pos + 1) / (n_pos + 2), 1 / (len(y) - n_pos + 2))
    a, b = _platt_reference(x, y, cal.C)
    assert cal.a_ == pytest.approx(a, abs=1e-5) and cal.b_ == pytest.approx(b, abs=1e-5)
    grid = np.linspace(-0.5, 1.5, 41)
    np.testing.assert_allclose(cal.predict(grid, allow_in_sample=True),
                               1 / (1 + np.exp(-(a * grid + b))), atol=1e-6)
    if separable:
        p = cal.predict(x, allow_in_sample=True)
        assert p.max() < 1 and p.min() > 0 and np.isfinite(cal.a_)


@pytest.mark.parametrize("make", [IsotonicCalibrator, PlattCalibrator])
def test_calibrators_refuse_in_sample(make: Any) -> None:
    x, y, vh = _labelled(60, 0, ties=False)
    cal = make().fit(x, y, verdict_hash=vh)
    with pytest.raises(BadInputError, match="out of sample") as info:
        cal.predict([0.5, 0.6], verdict_hash=["new-1", vh[0]])
    assert info.value.reason == "in_sample"
    with pytest.raises(BadInputError, match="pass verdict_hash"):
        cal.predict([0.5])
    out = cal.predict([0.5, np.nan], verdict_hash=["new-1", "new-2"])
    assert 0 <= out[0] <= 1 and np.isnan(out[1])
    assert cal.predict([0.5], verdict_hash=[vh[0]], allow_in_sample=True).shape == (1,)
    with pytest.raises(BadInputError, match="not fitted"):
        make().predict([0.5], allow_in_sample=True)


@pytest.mark.parametrize("make", [IsotonicCalibrator, PlattCalibrator])
def test_calibrators_reject_bad_fit_input(make: Any) -> None:
    with pytest.raises(BadInputError, match="NaN"):
        make().fit([0.1, np.nan], [0, 1], verdict_hash=["a", "b"])
    with pytest.raises(BadInputError, match="0 or 1"):
        make().fit([0.1, 0.2], [0, 2], verdict_hash=["a", "b"])
    with pytest.raises(BadInputError, match="length"):
        make().fit([0.1, 0.2], [0, 1], verdict_hash=["a"])
    with pytest.raises(BadInputError, match="zero"):
        make().fit([], [], verdict_hash=[])


def test_calibrated_scorer_out_of_sample_only() -> None:
    x, y, vh = _labelled(90, 2, ties=True)
    vh = np.where(np.arange(90) % 2 == 0, A, "fit-other").astype(object)
    cal = IsotonicCalibrator().fit(x, y, verdict_hash=vh)
    scorer = calibrated(model_salience(), cal)
    assert scorer.name == "model_salience_isotonic"
    assert scorer.version.startswith("1+isotonic-")
    c_out = _cands([{"verdict_hash": B, "salience": 0.45}, {"verdict_hash": C, "salience": 0.9}])
    out = score_candidates(c_out, VERDICTS, [scorer])
    np.testing.assert_allclose(
        out["score__model_salience_isotonic"], cal.predict([0.45, 0.9], allow_in_sample=True)
    )
    c_in = _cands([{"verdict_hash": A, "salience": 0.45}])
    with pytest.raises(BadInputError, match="out of sample"):
        score_candidates(c_in, VERDICTS, [scorer])
    ok = calibrated(model_salience(), cal, allow_in_sample=True, name="ms_iso_in")
    assert np.isfinite(score_candidates(c_in, VERDICTS, [ok])["score__ms_iso_in"]).all()
    # A different fit is a different version.
    cal2 = IsotonicCalibrator().fit(x[:50], y[:50], verdict_hash=vh[:50])
    assert calibrated(model_salience(), cal2).version != scorer.version
    with pytest.raises(BadInputError, match="fit the calibrator"):
        calibrated(model_salience(), PlattCalibrator())
