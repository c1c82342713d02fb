"""Labels follow content: transfer to equal (or matching) lessons of other extractors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from tests.builders.stores import copy_db
from truss_lab.core import BadInputError
from truss_lab.evaluate import label_report, labelled_candidates, sweep_run
from truss_lab.evaluate._truth import (
    check_transfer,
    normalise_text,
    transfer_label_rows,
    transfer_report,
)
from truss_lab.faces._notebook import run_sample_extractions
from truss_lab.store import Store


def _les(rows: list[tuple[str, str, int, str]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["verdict_hash", "extractor", "lesson_index", "text"])


def _lab(rows: list[tuple[str, str, int, int, str]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["verdict_hash", "extractor", "lesson_index", "useful",
                                       "annotator"])


def test_normalise_text() -> None:
    got = normalise_text(pd.Series(["Check DST!", "  check   dst ", "check-dst", None]))
    assert got.tolist() == ["check dst", "check dst", "check dst", ""]


def test_exact_transfer_copies_every_annotator_and_is_marked() -> None:
    src = _les([("v1", "a", 0, "Pin the timezone to UTC."), ("v1", "a", 1, "Be careful.")])
    tgt = _les([("v1", "b", 3, "pin the TIMEZONE to utc"), ("v2", "b", 0, "Be careful.")])
    lab = _lab([("v1", "a", 0, 1, "x"), ("v1", "a", 0, 0, "y"), ("v1", "a", 1, 0, "x")])
    rows = transfer_label_rows(tgt, src, lab)
    assert len(rows) == 2  # two annotators of (v1, a, 0); v2 has no source on its verdict
    assert set(rows["lesson_index"]) == {3} and set(rows["extractor"]) == {"b"}
    assert rows["transferred"].all() and (rows["similarity"] == 1.0).all()
    assert set(rows["from_extractor"]) == {"a"} and set(rows["from_lesson_index"]) == {0}
    assert sorted(rows["useful"]) == [0, 1]


def test_matched_transfer_is_opt_in_and_picks_the_best_source() -> None:
    src = _les([("v1", "a", 0, "pin the cron timezone to utc before dst"),
                ("v1", "c", 0, "pin cron timezone utc")])
    tgt = _les([("v1", "b", 0, "before dst, pin the cron timezone to utc")])
    lab = _lab([("v1", "a", 0, 1, "x"), ("v1", "c", 0, 0, "x")])
    assert transfer_label_rows(tgt, src, lab).empty  # not equal: exact transfers nothing
    rows = transfer_label_rows(tgt, src, lab, transfer=0.5)
    assert len(rows) == 1 and rows["from_extractor"].iloc[0] == "a"
    assert 0.5 <= rows["similarity"].iloc[0] <= 1.0
    assert transfer_label_rows(tgt, src, lab, transfer=None).empty


def test_never_from_the_same_extractor_and_bad_modes() -> None:
    src = _les([("v1", "a", 0, "same")])
    tgt = _les([("v1", "a", 1, "same")])
    assert transfer_label_rows(tgt, src, _lab([("v1", "a", 0, 1, "x")])).empty
    for bad in (0, 1.5, "fuzzy", True):
        with pytest.raises(BadInputError, match="transfer"):
            check_transfer(bad)


@pytest.fixture(scope="module")
def sample(sample_full: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    store = Store(copy_db(sample_full, tmp_path_factory.mktemp("transfer") / "s.duckdb"))
    run_sample_extractions(store, extractors=("sim-good-v1", "sim-overconfident-v1",
                                              "sim-paraphrase-v1"), write_memory=False)
    yield store
    store.close()


def test_on_the_sample_direct_labels_win_and_the_report_counts(sample: Store) -> None:
    runs = dict(sample.sql("SELECT extractor_id, run_id FROM extraction_runs").fetchall())
    para = labelled_candidates(sample, runs["sim-paraphrase-v1"])
    assert para["transferred"].sum() > 50  # unlabelled, but some lessons equal labelled ones
    assert (para.loc[para["transferred"], "transfer_similarity"] == 1.0).all()
    assert set(para.loc[para["transferred"], "transferred_from"]) <= {
        "sim-good-v1", "sim-overconfident-v1"}
    assert labelled_candidates(sample, runs["sim-paraphrase-v1"], transfer=None)[
        "labelled"].sum() == 0
    good = labelled_candidates(sample, runs["sim-good-v1"])
    direct = labelled_candidates(sample, runs["sim-good-v1"], transfer=None)
    # Every good lesson with a direct label keeps it, whatever an equal lesson says.
    assert good["label"].equals(direct["label"]) and not good["transferred"].any()
    rep = transfer_report(sample).set_index("extractor")
    assert rep.loc["sim-paraphrase-v1", "n_direct"] == 0
    assert rep.loc["sim-paraphrase-v1", "n_transferred"] == int(para["labelled"].sum())
    assert rep.loc["sim-good-v1", "n_both"] > 0
    assert 0.0 <= rep.loc["sim-good-v1", "agreement"] <= 1.0
    text = repr(label_report(sample))
    assert "transferred" in text and "agreeing" in text
    sw = sweep_run(sample, runs["sim-paraphrase-v1"], thresholds=[0.7])
    # The sweep counts dropped lessons too (a dropped useful lesson is a miss).
    assert sw.attrs["counts"]["transferred"] >= int(para["transferred"].sum())
