"""Junk-lesson detectors on hand-made cases, against a brute-force reference."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import precision_score, recall_score

from tests.builders.profiles import examples
from truss_lab.core._errors import BadInputError
from truss_lab.score._junk import DETECTORS, junk_flags, junk_rates
from truss_lab.score._similarity import token_sets

VERDICTS = pd.DataFrame(
    {
        "verdict_hash": ["v1", "v2"],
        "payload": [
            json.dumps({"summary": "Job migrated but timezone handling regressed",
                        "checks": [{"name": "tz_regression", "passed": False},
                                   {"name": "job_registered", "passed": True}]}),
            {"summary": "Done: all 2 checks passed",
             "checks": [{"name": "dedup", "passed": True}, {"name": "late_data",
                                                            "passed": True}]},
        ],
    }
)

# (first lesson, second lesson, is the second a duplicate of the first)
DUP_CASES = [
    ("Pin the scheduler timezone to UTC.", "Pin the scheduler timezone to UTC", True),
    ("Pin the scheduler timezone to UTC", "Always pin the scheduler's timezone to UTC", True),
    ("Run the tests.", "Run the tests. (important)", True),
    ("Keep the code clean and readable.", "Remember: keep the code clean and readable", True),
    ("Test DST transitions for every scheduled job.",
     "For every scheduled job, test the DST transitions.", True),
    ("Verify the rollback path in staging before deploying",
     "Before deploying, verify the rollback path in staging", True),
    ("The tz_regression check caught the bug; keep it in the suite.",
     "Keep the tz_regression check in the suite: it caught the bug.", True),
    ("Ask for a review before merging.", "Get a code review before you merge.", True),  # missed
    ("The dedup check is cheap and caught nothing this time",
     "The late_data check is cheap and caught nothing this time", False),
    ("Run the tests", "Run the tests before deploying to production", False),
    ("Check the DST handling of the scheduler", "Check the retry handling of the scheduler",
     False),
    ("Pin the scheduler timezone to UTC", "Monitor the system after making changes", False),
    ("Increase the rate limit backoff", "Decrease the rate limit backoff", False),
    ("Run schema migration 0042 before the backfill",
     "Run schema migration 0043 before the backfill", False),
]


def _pairs_frame(cases: list[tuple[str, str, bool]]) -> pd.DataFrame:
    rows = []
    for k, (a, b, _) in enumerate(cases):
        rows += [(f"r{k}", "v1", 0, a, ["check:tz_regression"]),
                 (f"r{k}", "v1", 1, b, ["check:tz_regression"])]
    return pd.DataFrame(rows, columns=["run_id", "verdict_hash", "lesson_index", "text",
                                       "evidence"])


@pytest.mark.parametrize("method", ["all", "lsh"])
def test_hand_made_duplicates_precision_recall(method: str) -> None:
    flags = junk_flags(_pairs_frame(DUP_CASES), VERDICTS, method=method)
    first = flags["duplicate_in_verdict"].to_numpy()[0::2]
    second = flags["duplicate_in_verdict"].to_numpy()[1::2]
    truth = np.array([d for _, _, d in DUP_CASES])
    assert not first.any()  # the first of a pair is never the duplicate
    p = precision_score(truth, second)
    r = recall_score(truth, second)
    # All rewordings found; only the paraphrase with other words is missed.
    assert p == 1.0
    assert r == pytest.approx(7 / 8)
    assert (flags["duplicate_in_run"] >= flags["duplicate_in_verdict"]).all()


def test_exact_duplicates_and_order() -> None:
    c = pd.DataFrame({
        "run_id": "r", "verdict_hash": ["v1", "v1", "v1", "v2"],
        "verdict_seq": [1, 1, 1, 2], "lesson_index": [2, 0, 1, 0],
        "text": ["Run the tests", "Run the tests", "Something else entirely", "run the TESTS!"],
        "evidence": [["check:tz_regression"]] * 4,
    })
    f = junk_flags(c, VERDICTS)
    # lesson_index 0 is the earliest, so row 0 (index 2) is the duplicate.
    assert f["duplicate_in_verdict"].tolist() == [True, False, False, False]
    assert f["duplicate_in_run"].tolist() == [True, False, False, True]


def test_flags_follow_the_candidates_index() -> None:
    c = _pairs_frame(DUP_CASES)
    shuffled = c.sample(frac=1.0, random_state=3)
    shuffled.index = [f"row{i}" for i in shuffled.index]
    f = junk_flags(shuffled, VERDICTS)
    assert list(f.index) == list(shuffled.index)
    assert list(f.columns) == [*DETECTORS, "junk"]
    ref = junk_flags(c, VERDICTS)
    ref.index = [f"row{i}" for i in ref.index]
    pd.testing.assert_frame_equal(f, ref.loc[f.index])
    joined = shuffled.join(f)
    assert len(joined) == len(shuffled)


def test_grounding_flags() -> None:
    c = pd.DataFrame({
        "run_id": "r", "verdict_hash": ["v1", "v1", "v1", "v1", "v1", "v2", "v1"],
        "lesson_index": range(7),
        "text": ["a1 lesson", "b2 lesson", "c3 lesson", "d4 lesson", "e5 lesson", "f6 lesson",
                 "g7 lesson"],
        "evidence": [["check:tz_regression"], ["check:dedup"], [], None,
                     ["tz_regression"], ["check:dedup", "check:tz_regression"],
                     ["log line 42 shows the retry"]],
    })
    f = junk_flags(c, VERDICTS)
    assert f["ungrounded"].tolist() == [False, True, False, False, False, True, False]
    assert f["no_evidence"].tolist() == [False, False, True, True, False, False, False]


def test_unknown_verdict_warns() -> None:
    c = pd.DataFrame({"run_id": "r", "verdict_hash": ["v9"], "lesson_index": [0],
                      "text": ["x"], "evidence": [["check:nope"]]})
    with pytest.warns(UserWarning, match="not in `verdicts`"):
        f = junk_flags(c, VERDICTS)
    assert not f["ungrounded"].iat[0] and not f["restates_summary"].iat[0]


def test_restates_summary() -> None:
    texts = [
        ("Job migrated but timezone handling regressed.", True),
        ("Timezone handling regressed after the migration", True),
        ("The job migrated, but timezone handling regressed", True),
        ("Pin the scheduler timezone to UTC and test the DST transition", False),
        ("Add a regression test for timezone handling in the scheduler", False),
        ("Regressed", False),  # one word is not a restatement
    ]
    c = pd.DataFrame({"run_id": "r", "verdict_hash": "v1", "lesson_index": range(len(texts)),
                      "text": [t for t, _ in texts], "evidence": [["check:tz_regression"]] *
                      len(texts)})
    f = junk_flags(c, VERDICTS, threshold=1.0)
    assert f["restates_summary"].tolist() == [d for _, d in texts]


def test_duplicate_of_memory_skips_own_entry_and_run() -> None:
    c = pd.DataFrame({
        "run_id": ["new", "new", "new"], "verdict_hash": "v1", "lesson_index": [0, 1, 2],
        "entry_id": ["e-own", None, None],
        "text": ["Pin the scheduler timezone to UTC", "Always run the tests",
                 "Something unrelated happens"],
        "evidence": [["check:tz_regression"]] * 3,
    })
    memory = pd.DataFrame({
        "entry_id": ["e-own", "e-same-run", "e-old"],
        "run_id": ["new", "new", "old"],
        "text": ["Pin the scheduler timezone to UTC", "Something unrelated happens",
                 "Run the tests always."],
    })
    f = junk_flags(c, VERDICTS, memory=memory)
    assert f["duplicate_of_memory"].tolist() == [False, True, False]
    f2 = junk_flags(c, VERDICTS)
    assert not f2["duplicate_of_memory"].any()
    # From another run, the same lesson in memory is a duplicate.
    f3 = junk_flags(c.assign(run_id="newer", entry_id=None), VERDICTS, memory=memory)
    assert f3["duplicate_of_memory"].tolist() == [True, True, True]


def test_junk_is_any_flag() -> None:
    f = junk_flags(_pairs_frame(DUP_CASES), VERDICTS)
    assert (f["junk"] == f[list(DETECTORS)].any(axis=1)).all()


def test_junk_rates_matches_groupby() -> None:
    c = _pairs_frame(DUP_CASES)
    c["extractor_id"] = np.where(np.arange(len(c)) % 3 == 0, "x", "y")
    f = junk_flags(c, VERDICTS)
    rates = junk_rates(f, by=["extractor_id"], candidates=c)
    ref = c.join(f).groupby("extractor_id")[["junk", "duplicate_in_verdict"]].mean()
    assert rates["n"].tolist() == c.groupby("extractor_id").size().tolist()
    np.testing.assert_allclose(rates["junk"], ref["junk"])
    np.testing.assert_allclose(rates["duplicate_in_verdict"], ref["duplicate_in_verdict"])
    assert junk_rates(c.join(f), by=["run_id"])["n"].sum() == len(c)
    with pytest.raises(BadInputError, match="candidates="):
        junk_rates(f, by=["run_id"])


def test_bad_input() -> None:
    with pytest.raises(BadInputError, match="text"):
        junk_flags(pd.DataFrame({"verdict_hash": ["v1"]}), VERDICTS)
    with pytest.raises(BadInputError, match="threshold"):
        junk_flags(_pairs_frame(DUP_CASES[:1]), VERDICTS, threshold=0)
    with pytest.raises(BadInputError, match="payload"):
        junk_flags(_pairs_frame(DUP_CASES[:1]), pd.DataFrame({"verdict_hash": ["v1"]}))


def test_empty_and_null_texts() -> None:
    empty = _pairs_frame([]).astype({"lesson_index": "int64"})
    f = junk_flags(empty, VERDICTS)
    assert len(f) == 0 and list(f.columns) == [*DETECTORS, "junk"]
    c = pd.DataFrame({"run_id": "r", "verdict_hash": "v1", "lesson_index": [0, 1, 2],
                      "text": [None, "", "the of and"], "evidence": [[], [], []]})
    f = junk_flags(c, VERDICTS)
    assert not f["duplicate_in_verdict"].any()  # no words, nothing to compare
    assert f["no_evidence"].all()


# -- reference implementation ------------------------------------------------------


def _reference(c: pd.DataFrame, threshold: float) -> tuple[list[bool], list[bool]]:
    sets = token_sets(c["text"].tolist())
    idents = [frozenset(t for t in s if "_" in t or any(ch.isdigit() for ch in t))
              for s in sets]

    def sim(i: int, j: int) -> bool:
        a, b = sets[i], sets[j]
        return bool(a and b) and idents[i] == idents[j] and len(a & b) / len(a | b) >= threshold

    order = sorted(range(len(c)), key=lambda k: (c["verdict_seq"].iat[k],
                                                 c["lesson_index"].iat[k], k))
    rank = {k: r for r, k in enumerate(order)}
    in_v, in_r = [], []
    for i in range(len(c)):
        earlier = [j for j in range(len(c)) if rank[j] < rank[i]
                   and c["run_id"].iat[j] == c["run_id"].iat[i]]
        in_r.append(any(sim(i, j) for j in earlier))
        in_v.append(any(sim(i, j) for j in earlier
                        if c["verdict_hash"].iat[j] == c["verdict_hash"].iat[i]))
    return in_v, in_r


WORDS = ["run", "the", "tests", "test", "pin", "utc", "timezone", "scheduler", "dst",
         "tz_check", "retry", "3", "deploy", "canary", "always", "review", "merge"]


@settings(max_examples=examples(60), deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["r1", "r2"]), st.sampled_from(["v1", "v2"]),
                  st.lists(st.sampled_from(WORDS), min_size=0, max_size=6)),
        min_size=1, max_size=25,
    ),
    st.sampled_from([0.5, 0.7, 1.0]),
)
def test_duplicates_match_brute_force(rows: list, threshold: float) -> None:
    c = pd.DataFrame({
        "run_id": [r for r, _, _ in rows],
        "verdict_hash": [v for _, v, _ in rows],
        "verdict_seq": [int(v[1]) for _, v, _ in rows],
        "lesson_index": np.arange(len(rows)) % 4,
        "text": [" ".join(w) for _, _, w in rows],
        "evidence": [[]] * len(rows),
    })
    in_v, in_r = _reference(c, threshold)
    for method in ("all", "lsh"):
        f = junk_flags(c, VERDICTS, threshold=threshold, method=method)
        got_v = f["duplicate_in_verdict"].tolist()
        got_r = f["duplicate_in_run"].tolist()
        if method == "all":
            assert got_v == in_v and got_r == in_r
        else:  # LSH may miss a pair (probabilistic) but never invents one
            assert all(r or not g for g, r in zip(got_r, in_r, strict=True))


def test_lsh_finds_the_same_pairs_on_a_larger_set() -> None:
    rng = np.random.default_rng(1)
    vocab = [f"w{i}" for i in range(300)]
    base = [" ".join(rng.choice(vocab, size=8)) for _ in range(300)]
    texts = [b if rng.random() < 0.5 else b + " extra" for b in base for _ in range(2)]
    c = pd.DataFrame({"run_id": "r", "verdict_hash": "v1", "lesson_index": range(len(texts)),
                      "text": texts, "evidence": [[]] * len(texts)})
    a = junk_flags(c, VERDICTS, method="all")["duplicate_in_run"]
    b = junk_flags(c, VERDICTS, method="lsh")["duplicate_in_run"]
    assert a.sum() > 250
    assert (a == b).mean() > 0.99


def test_works_on_store_rows() -> None:
    # Verdicts straight from SQL (payload as JSON text), candidates as stored.
    from truss_lab.journal._crypto import SigningKey
    from truss_lab.journal._ledger import append_entry
    from truss_lab.store._store import Store

    key = SigningKey.from_seed("k", bytes(range(32)))
    with Store() as store:
        payload = json.loads(VERDICTS["payload"].iat[0])
        ref = append_entry(store, "contract_verdict", payload, key)
        verdicts = store.sql("SELECT hash AS verdict_hash, payload FROM journal").df()
        c = pd.DataFrame({"run_id": "r", "verdict_hash": ref.hash, "verdict_seq": ref.seq,
                          "lesson_index": [0, 1],
                          "text": ["Pin the scheduler timezone to UTC", "Pin scheduler TZ"],
                          "evidence": [np.array(["check:tz_regression"]), np.array([])]})
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            f = junk_flags(c, verdicts)
    assert f["no_evidence"].tolist() == [False, True]
    assert not f["ungrounded"].any()


def test_token_sets() -> None:
    assert token_sets(["Always pin the scheduler's timezones to UTC!"]) == [
        frozenset({"pin", "scheduler", "timezone", "utc"})
    ]
    assert all(isinstance(s, frozenset) for s in token_sets(["", None]))  # type: ignore[list-item]

