"""Majority labels, Cohen's kappa (scikit-learn oracle), label coverage."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score

from tests.builders.profiles import examples
from truss_lab.core._errors import BadInputError
from truss_lab.evaluate._agreement import (
    CANDIDATE_KEY,
    annotator_agreement,
    cohen_kappa,
    fleiss_agreement,
    fleiss_kappa,
    label_coverage,
    majority_labels,
)
from truss_lab.evaluate._sweep import UndefinedMetricWarning


def labels_frame(rows):
    return pd.DataFrame(
        rows, columns=["verdict_hash", "extractor", "lesson_index", "useful", "annotator"]
    )


LABELS = labels_frame(
    [
        ("h1", "x", 0, 1, "ann-a"),
        ("h1", "x", 0, 1, "ann-b"),
        ("h1", "x", 0, 0, "ann-c"),  # 2 of 3 useful -> 1
        ("h1", "x", 1, 1, "ann-a"),
        ("h1", "x", 1, 0, "ann-b"),  # tie
        ("h2", "x", 0, 0, None),  # anonymous single label -> 0
        ("h2", "x", 2, 1, "ann-a"),
        ("h2", "x", 2, 1, None),
        ("h3", "y", 0, 0, "ann-b"),
    ]
)


def test_majority_labels():
    maj = majority_labels(LABELS)
    assert maj.columns.tolist() == [
        "verdict_hash", "extractor", "lesson_index", "label", "n_annotators", "n_positive", "tie",
    ]
    got = {(r.verdict_hash, r.lesson_index): r for r in maj.itertuples()}
    assert got[("h1", 0)].label == 1 and got[("h1", 0)].n_annotators == 3
    assert pd.isna(got[("h1", 1)].label) and got[("h1", 1)].tie
    assert got[("h2", 0)].label == 0 and not got[("h2", 0)].tie
    assert got[("h2", 2)].label == 1 and got[("h2", 2)].n_positive == 2
    assert str(maj["label"].dtype) == "Int8"


def test_repeated_anonymous_rows_of_one_source_count_once():
    # ("h2", 0) is one anonymous 0; the same row twice more is still one vote
    rep = pd.concat([LABELS, LABELS.iloc[[5, 5, 7]]], ignore_index=True)
    got = majority_labels(rep).set_index(["verdict_hash", "lesson_index"])
    assert got.loc[("h2", 0), "n_annotators"] == 1
    assert got.loc[("h2", 2), "n_annotators"] == 2  # ann-a and one anonymous vote
    pd.testing.assert_frame_equal(majority_labels(rep), majority_labels(LABELS))
    # two sources are two anonymous annotators: a 0 from each is two votes
    src = pd.concat([LABELS.assign(source="a.csv"), LABELS.iloc[[5]].assign(source="b.csv")],
                    ignore_index=True)
    both = majority_labels(src).set_index(["verdict_hash", "lesson_index"])
    assert both.loc[("h2", 0), "n_annotators"] == 2
    # and the same file twice is still one vote
    twice = pd.concat([src, src[src["annotator"].isna()]], ignore_index=True)
    pd.testing.assert_frame_equal(majority_labels(twice), majority_labels(src))
    # one anonymous source saying 0 and 1 of one candidate is a conflict
    clash = LABELS.iloc[[5]].assign(useful=1)
    with pytest.raises(BadInputError, match="anonymous labels of one source") as err:
        majority_labels(pd.concat([LABELS, clash], ignore_index=True))
    assert err.value.field == "annotator"


def test_duplicate_annotator_and_bad_values_are_errors():
    dup = pd.concat([LABELS, LABELS.iloc[[0]]], ignore_index=True)
    with pytest.raises(BadInputError, match="more than once") as err:
        majority_labels(dup)
    assert err.value.field == "annotator"
    bad = LABELS.copy()
    bad.loc[3, "useful"] = 2
    with pytest.raises(BadInputError, match="row 3") as err:
        majority_labels(bad)
    assert err.value.field == "useful"
    with pytest.raises(BadInputError) as err:
        majority_labels(LABELS.drop(columns="lesson_index"))
    assert err.value.field == "lesson_index"
    bad = LABELS.copy()
    bad["lesson_index"] = bad["lesson_index"].astype(float)
    bad.loc[0, "lesson_index"] = 0.5
    with pytest.raises(BadInputError, match="lesson_index"):
        majority_labels(bad)


def test_annotator_column_is_optional():
    # without the column the frame is one anonymous source: one label per candidate
    one = LABELS.drop_duplicates(CANDIDATE_KEY).drop(columns="annotator")
    maj = majority_labels(one)
    assert (maj["n_annotators"] == 1).all() and len(maj) == len(one)
    with pytest.raises(BadInputError, match="anonymous labels of one source"):
        majority_labels(LABELS.drop(columns="annotator"))  # (h1, x, 0) said 1 and 0


@settings(max_examples=examples(100), deadline=None)
@given(
    pairs=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), min_size=1, max_size=60)
)
def test_cohen_kappa_matches_sklearn(pairs):
    a, b = np.array(pairs).T
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = cohen_kappa_score(a, b)
        got = cohen_kappa(a, b)
    if np.isnan(expected):
        assert np.isnan(got)
    else:
        assert got == pytest.approx(expected, rel=1e-9, abs=1e-12)


def test_cohen_kappa_degenerate_warns():
    with pytest.warns(UndefinedMetricWarning):
        assert np.isnan(cohen_kappa([], []))
    with pytest.warns(UndefinedMetricWarning):
        assert np.isnan(cohen_kappa([1, 1], [1, 1]))
    with pytest.raises(BadInputError):
        cohen_kappa([1, 0], [1])


def test_annotator_agreement():
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 2, 40)
    rows = []
    for i, t in enumerate(truth):
        rows.append(("h", "x", i, int(t), "a"))
        rows.append(("h", "x", i, int(t if rng.random() < 0.8 else 1 - t), "b"))
        if i < 25:
            rows.append(("h", "x", i, int(rng.integers(0, 2)), "c"))
    frame = labels_frame(rows)
    agr = annotator_agreement(frame)
    pairs = agr[["annotator_a", "annotator_b"]].values.tolist()
    assert pairs == [["a", "b"], ["a", "c"], ["b", "c"]]
    wide = frame.pivot(index="lesson_index", columns="annotator", values="useful")
    for r in agr.itertuples():
        both = wide[[r.annotator_a, r.annotator_b]].dropna()
        assert r.n_common == len(both)
        assert r.kappa == pytest.approx(cohen_kappa_score(both.iloc[:, 0], both.iloc[:, 1]))
        assert r.raw_agreement == pytest.approx((both.iloc[:, 0] == both.iloc[:, 1]).mean())


def test_annotator_agreement_without_common_items_warns():
    frame = labels_frame([("h", "x", 0, 1, "a"), ("h", "x", 1, 0, "b")])
    with pytest.warns(UndefinedMetricWarning, match="1 annotator pair"):
        agr = annotator_agreement(frame)
    assert agr["n_common"].tolist() == [0] and agr["kappa"].isna().all()


def test_label_coverage():
    candidates = pd.DataFrame(
        {
            "verdict_hash": ["h1", "h1", "h1", "h2", "h2", "h3"],
            "extractor": ["x", "x", "x", "x", "x", "y"],
            "lesson_index": [0, 1, 2, 0, 1, 5],
        }
    )
    cov = label_coverage(candidates, LABELS).set_index("extractor")
    x = cov.loc["x"]
    assert (x.n_candidates, x.n_labelled, x.n_ties, x.n_unlabelled) == (5, 2, 1, 2)
    assert x.n_orphan_labels == 1  # (h2, x, 2) labelled but not a candidate
    assert x.coverage == pytest.approx(2 / 5)
    y = cov.loc["y"]
    assert (y.n_candidates, y.n_labelled, y.n_orphan_labels) == (1, 0, 1)


@settings(max_examples=examples(100), deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from(["h1", "h2"]),
            st.sampled_from(["x", "y"]),
            st.one_of(st.integers(-1, 3), st.sampled_from([0.5, "2", None])),
            st.one_of(st.integers(-1, 2), st.sampled_from(["1", "yes", None, 1.0])),
            st.sampled_from(["a", "b", None]),
        ),
        max_size=30,
    )
)
def test_majority_labels_on_arbitrary_rows_raise_or_count_every_vote(rows):
    frame = labels_frame(rows)
    try:
        maj = majority_labels(frame)
    except BadInputError as err:
        assert err.field in {"useful", "lesson_index", "annotator"}
        return
    # every row is a vote, except a repeated anonymous row (one source: one vote)
    anon = frame[frame["annotator"].isna()]
    repeats = anon.assign(useful=pd.to_numeric(anon["useful"]),
                          lesson_index=pd.to_numeric(anon["lesson_index"])).duplicated()
    assert maj["n_annotators"].sum() == len(frame) - int(repeats.sum())
    assert ((maj["label"].isna()) == maj["tie"]).all()
    assert (maj["n_positive"] <= maj["n_annotators"]).all()


# -- Fleiss' kappa against statsmodels (a test oracle only) -------------------------------


@pytest.mark.parametrize("seed", range(20))
def test_fleiss_kappa_equals_statsmodels(seed):
    sm = pytest.importorskip("statsmodels.stats.inter_rater")
    rng = np.random.default_rng(seed)
    items, cats, raters = int(rng.integers(1, 60)), int(rng.integers(2, 5)), int(rng.integers(2, 8))
    table = rng.multinomial(raters, rng.dirichlet(np.ones(cats)), size=items)
    if (table.sum(axis=0) == items * raters).any():  # one category only: undefined
        with pytest.warns(UndefinedMetricWarning):
            assert np.isnan(fleiss_kappa(table))
        return
    assert fleiss_kappa(table) == pytest.approx(sm.fleiss_kappa(table, method="fleiss"),
                                                rel=1e-12, abs=1e-12)


def test_fleiss_kappa_of_two_raters_and_bad_tables():
    with pytest.raises(BadInputError):
        fleiss_kappa([[1, 1], [2, 1]])  # unequal raters per item
    with pytest.raises(BadInputError):
        fleiss_kappa([[1, 0]])  # one rating
    with pytest.warns(UndefinedMetricWarning):
        assert np.isnan(fleiss_kappa(np.empty((0, 2))))


def test_fleiss_agreement_uses_the_most_common_number_of_annotations():
    sm = pytest.importorskip("statsmodels.stats.inter_rater")
    rng = np.random.default_rng(7)
    rows = []
    for i in range(60):  # 40 candidates with three annotators, 20 with two
        raters = ["a", "b", "c"] if i < 40 else ["a", "b"]
        truth = rng.random() < 0.5
        rows += [(f"h{i}", "x", 0, int(truth ^ (rng.random() < 0.2)), r) for r in raters]
    rows.append(("h99", "x", 0, 1, "a"))  # one annotation: no agreement to measure
    got = fleiss_agreement(labels_frame(rows))
    maj = majority_labels(labels_frame(rows))
    three = maj[maj["n_annotators"] == 3]
    table = np.column_stack([three["n_positive"], 3 - three["n_positive"]])
    assert got == {"kappa": pytest.approx(sm.fleiss_kappa(table, method="fleiss")),
                   "n_items": 40, "raters": 3, "n_annotators": 3, "n_candidates": 61}
    assert fleiss_agreement(labels_frame([("h1", "x", 0, 1, "a"), ("h2", "x", 0, 0, "b")])) \
        is None
