"""The labelling queue (issue 11, item 4): which lessons, spread how, and the round trip.

Real DuckDB files throughout: the sample is loaded once into a template file with
two replay runs (``sim-good-v1``, whose lessons are labelled, and
``sim-paraphrase-v1``, whose lessons are not), copied per test that writes.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.builders.cli import invoke
from tests.builders.profiles import examples
from tests.builders.stores import copy_db
from truss_lab.core._errors import BadInputError
from truss_lab.evaluate._defaults import DEFAULT_BAND
from truss_lab.evaluate._queue import (
    MIN_LABELLED_VERDICTS,
    labelling_queue,
    whole_verdict_queue,
)
from truss_lab.evaluate._runs import choose_run_threshold
from truss_lab.evaluate._truth import labelled_candidates
from truss_lab.faces._notebook import run_sample_extractions, sample_run_id
from truss_lab.ingest._ingest import ingest_labels
from truss_lab.ingest._labels import QUEUE_FIELDS, read_labels, write_label_queue
from truss_lab.store._store import Store

GOOD = sample_run_id("sim-good-v1")
PARA = sample_run_id("sim-paraphrase-v1")


@pytest.fixture(scope="module")
def template(sample_full: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = copy_db(sample_full, tmp_path_factory.mktemp("queue") / "template.duckdb")
    s = Store(path)
    run_sample_extractions(s, extractors=["sim-good-v1", "sim-paraphrase-v1"],
                           write_memory=False)
    s.close()
    return path


@pytest.fixture
def db(template: Path, tmp_path: Path) -> Path:
    """A writable copy of the template database file."""
    return copy_db(template, tmp_path / "lab.duckdb")


@pytest.fixture(scope="module")
def store(template: Path) -> Iterator[Store]:
    s = Store(template, read_only=True)
    yield s
    s.close()


def _cli(*argv: str) -> tuple[int, str]:
    r = invoke(*argv)
    return r.exit_code, r.output


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _key(r: dict[str, str]) -> tuple[str, str, int]:
    return r["verdict_hash"], r["extractor"], int(r["lesson_index"])


# -- which lessons ------------------------------------------------------------------


def test_enough_labels_use_the_bootstrap_interval_of_the_choice(store: Store) -> None:
    q = labelling_queue(store, GOOD, n=200, n_boot=50, random_state=3)
    info = q.attrs["queue"]
    choice = choose_run_threshold(store, GOOD, cv="auto", n_boot=50, random_state=3)
    assert info["source"] == "bootstrap"
    assert tuple(info["interval"]) == choice.threshold_interval
    assert info["threshold"] == choice.threshold
    assert info["n_labelled_verdicts"] >= MIN_LABELLED_VERDICTS
    # Exactly the lessons with no truth inside the interval (sim-good-v1's are all
    # labelled, so only ties qualify), at most two per verdict.
    lc = labelled_candidates(store, GOOD)
    lo, hi = info["interval"]
    inside = lc[~lc["labelled"] & lc["salience"].between(lo, hi)]
    assert info["n_candidates"] == len(inside)
    keys = set(zip(q["verdict_hash"], q["lesson_index"], strict=True))
    assert keys <= set(zip(inside["verdict_hash"], inside["lesson_index"], strict=True))
    assert (q["n_annotators"] >= 2).all()  # ties


def test_too_few_labels_fall_back_to_a_band_around_the_default(store: Store) -> None:
    q = labelling_queue(store, PARA, n=50)
    info = q.attrs["queue"]
    assert info["source"] == "default-band"
    assert info["interval"] == pytest.approx([0.70 - DEFAULT_BAND, 0.70 + DEFAULT_BAND])
    assert info["interval"] == [0.6, 0.8]  # rounded: 0.8 reads 0.8
    assert info["n_labelled_verdicts"] < MIN_LABELLED_VERDICTS
    assert "too few labels" in info["why"] and "0.70" in info["why"]
    assert len(q) == 50 and q["salience"].between(0.6, 0.8).all()
    lc = labelled_candidates(store, PARA).set_index(["verdict_hash", "lesson_index"])
    assert not lc.loc[list(zip(q["verdict_hash"], q["lesson_index"], strict=True)),
                      "labelled"].any()


def test_spread_round_robin_over_verdicts(store: Store) -> None:
    q = labelling_queue(store, PARA, n=10_000, per_verdict=2, interval=(0.3, 0.9))
    info = q.attrs["queue"]
    counts = q.groupby("verdict_hash").size()
    assert counts.max() == 2 and len(counts) == info["n_verdicts"]
    # The first pass gives every verdict its lesson nearest the centre; the second its next.
    n_v = info["n_verdicts"]
    assert q["verdict_hash"].iloc[:n_v].is_unique
    centre = 0.6
    first = q.iloc[:n_v].set_index("verdict_hash")
    second = q.iloc[n_v:].set_index("verdict_hash")
    d1 = (first.loc[second.index, "salience"] - centre).abs()
    d2 = (second["salience"] - centre).abs()
    assert (d1.to_numpy() <= d2.to_numpy() + 1e-12).all()
    # Every qualifying lesson of a verdict with at most two is taken.
    lc = labelled_candidates(store, PARA)
    pool = lc[~lc["labelled"] & lc["salience"].between(0.3, 0.9)]
    assert len(q) == int(np.minimum(pool.groupby("verdict_hash").size(), 2).sum())
    capped = labelling_queue(store, PARA, n=7, interval=(0.3, 0.9))
    pd.testing.assert_frame_equal(capped, q.head(7))


def test_the_seed_fixes_the_queue(store: Store) -> None:
    a = labelling_queue(store, PARA, n=40, random_state=1)
    b = labelling_queue(store, PARA, n=40, random_state=1)
    c = labelling_queue(store, PARA, n=40, random_state=2)
    pd.testing.assert_frame_equal(a, b)
    assert list(a["verdict_hash"]) != list(c["verdict_hash"])


def test_rows_carry_the_verdict_context(store: Store) -> None:
    q = labelling_queue(store, PARA, n=20)
    assert list(q.columns) == list(QUEUE_FIELDS)
    assert q["useful"].isna().all() and (q["annotator"] == "").all()
    assert (q["run_id"] == PARA).all() and (q["extractor"] == "sim-paraphrase-v1").all()
    for r in q.itertuples():
        (payload,) = store.sql("SELECT payload::VARCHAR FROM journal WHERE hash = ?",
                               [r.verdict_hash]).fetchall()[0]
        p = json.loads(payload)
        assert (r.goal, r.summary, r.verdict) == (p["goal"], p["summary"], p["verdict"])
        assert r.checks.count("\n") == len(p["checks"]) - 1
        for c in p["checks"]:
            assert f"{'pass' if c['passed'] else 'FAIL'} {c['name']}: {c['evidence']}" \
                in r.checks
        (text,) = store.sql("SELECT text FROM candidates WHERE run_id = ? AND verdict_hash = ? "
                            "AND lesson_index = ?",
                            [PARA, r.verdict_hash, r.lesson_index]).fetchall()[0]
        assert r.text == text


def test_an_annotator_is_not_asked_again(store: Store) -> None:
    ties = labelled_candidates(store, GOOD)
    ties = ties[ties["tie"]]
    everyone = labelling_queue(store, GOOD, n=1000, interval=(0.0, 1.0))
    assert len(everyone) == int(np.minimum(ties.groupby("verdict_hash").size(), 2).sum()) > 0
    labelled_by_a = store.sql("SELECT verdict_hash, lesson_index FROM labels "
                              "WHERE annotator = 'ann-a' AND extractor_id = 'sim-good-v1'").df()
    mine = labelling_queue(store, GOOD, n=1000, interval=(0.0, 1.0), annotator="ann-a")
    assert (mine["annotator"] == "ann-a").all()
    done = set(zip(labelled_by_a["verdict_hash"], labelled_by_a["lesson_index"], strict=True))
    assert not done & set(zip(mine["verdict_hash"], mine["lesson_index"], strict=True))
    assert len(mine) < len(everyone)


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"n": 0}, "n"), ({"per_verdict": 0}, "per_verdict"), ({"n": True}, "n"),
    ({"interval": (0.8, 0.2)}, "interval"), ({"interval": (0.2, 1.5)}, "interval"),
    ({"annotator": " "}, "annotator"), ({"n_boot": 0}, "n_boot"),
    ({"objective": "nonsense"}, "objective"),
])
def test_bad_options_are_named(store: Store, kwargs: dict, field: str) -> None:
    with pytest.raises(BadInputError) as err:
        labelling_queue(store, PARA, **kwargs)
    assert err.value.field == field


def test_unknown_run_is_named(store: Store) -> None:
    with pytest.raises(BadInputError, match="no extraction run 'nope'"):
        labelling_queue(store, "nope")


# -- the file and the round trip ---------------------------------------------------------


def test_round_trip_queue_fill_ingest_requeue(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "queue.csv"
    code, text = _cli("queue", PARA, "--db", str(db), "--n-lessons", "30", "--out", str(out))
    assert code == 0, text
    assert "default-band" in text and "30 lesson(s)" in text
    rows = _rows(out)
    assert len(rows) == 30 and list(rows[0]) == list(QUEUE_FIELDS)
    # The annotator labels eight lessons (five useful, three not) and leaves the rest empty.
    for i, r in enumerate(rows[:8]):
        r["useful"], r["annotator"] = ("1" if i < 5 else "0"), "ann-q"
    filled = tmp_path / "filled.csv"
    with open(filled, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=QUEUE_FIELDS)
        w.writeheader()
        w.writerows(rows)
    code, text = _cli("ingest", "labels", str(filled), "--db", str(db), "--json")
    assert code == 0, text
    rep = json.loads(text)
    assert (rep["rows_added"], rep["rows_blank"], rep["rows_read"], rep["errors"]) == \
        (8, 22, 30, [])
    with Store(db, read_only=True) as s:
        lc = labelled_candidates(s, PARA).set_index(["verdict_hash", "lesson_index"])
        got = lc.loc[[(r["verdict_hash"], int(r["lesson_index"])) for r in rows[:8]]]
        assert got["labelled"].all() and list(got["label"]) == [1] * 5 + [0] * 3
        stored = s.sql("SELECT count(*) FROM labels WHERE annotator = 'ann-q'").fetchall()
        assert stored == [(8,)]
    again = tmp_path / "again.csv"
    code, text = _cli("queue", PARA, "--db", str(db), "--n-lessons", "30", "--out", str(again))
    assert code == 0, text
    nxt = {_key(r) for r in _rows(again)}
    assert len(nxt) == 30 and not nxt & {_key(r) for r in rows[:8]}
    # The unlabelled ones may come back; a second ingest of the same file adds nothing.
    code, text = _cli("ingest", "labels", str(filled), "--db", str(db), "--json")
    assert code == 0 and json.loads(text)["rows_present"] == 8


def test_the_same_seed_writes_the_same_file(db: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    for out in (a, b):
        code, text = _cli("queue", GOOD, "--db", str(db), "--out", str(out), "--n-boot", "30",
                          "--random-state", "5", "--json")
        assert code == 0, text
    assert a.read_bytes() == b.read_bytes()
    info = json.loads(text)
    assert info["source"] == "bootstrap" and info["n_boot"] == 30


def test_queue_file_with_bad_rows_keeps_the_good_ones(store: Store, tmp_path: Path) -> None:
    q = labelling_queue(store, PARA, n=6)
    q["useful"] = pd.array([1, 0, pd.NA, pd.NA, 1, 1], dtype="Int8")
    path = tmp_path / "q.csv"
    write_label_queue(q, path)
    # Break the fifth row's label and the sixth row's hash.
    rows = _rows(path)
    rows[4]["useful"] = "yes"
    rows[5]["verdict_hash"] = "xyz"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=QUEUE_FIELDS)
        w.writeheader()
        w.writerows(rows)
    df, errors = read_labels(path)
    assert len(df) == 2 and list(df["useful"]) == [1, 0]
    assert df.attrs["blank_rows"] == 2
    assert sorted((e.field, e.reason) for e in errors) == [("useful", "bad_value"),
                                                           ("verdict_hash", "bad_value")]
    # Named by the row a spreadsheet shows (header = row 1), not the physical line: the
    # queue's checks column holds newlines, so the two differ here.
    starts = _record_lines(path)
    assert {e.row for e in errors} == {6, 7} and {e.line for e in errors} == {None}
    assert starts[4] > 6
    assert all(f"row {e.row}," in str(e) and "line" not in str(e) for e in errors)


def _record_lines(path: Path) -> list[int]:
    """The first line of each data record (records may span lines)."""
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        next(reader)
        out, start = [], reader.line_num + 1
        for _ in reader:
            out.append(start)
            start = reader.line_num + 1
    return out


def test_context_cells_round_trip_and_never_run_as_formulas(store: Store, tmp_path: Path
                                                            ) -> None:
    q = labelling_queue(store, PARA, n=3)
    q.loc[0, "text"] = '=HYPERLINK("http://x","y"), with "quotes"\nand a newline'
    q.loc[1, "goal"] = "@SUM(A1)"
    path = tmp_path / "q.csv"
    assert write_label_queue(q, path) == 3
    rows = _rows(path)
    assert rows[0]["text"] == "'" + q.loc[0, "text"]
    assert rows[1]["goal"] == "'@SUM(A1)"
    assert [_key(r) for r in rows] == list(zip(q["verdict_hash"], q["extractor"],
                                               q["lesson_index"], strict=True))
    df, errors = read_labels(path)
    assert (len(df), errors, df.attrs["blank_rows"]) == (0, [], 3)


@pytest.fixture(scope="module")
def eight(store: Store) -> pd.DataFrame:
    return labelling_queue(store, PARA, n=8, random_state=9)


_USEFUL_CELLS = st.one_of(
    st.sampled_from(["", " ", "0", "1", "1 ", "01", "yes", "-1", "0.0", "'1", "1\n"]),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
            max_size=5),
)


@settings(max_examples=examples(60), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cells=st.lists(_USEFUL_CELLS, min_size=1, max_size=8))
def test_any_useful_cell_is_a_label_a_blank_or_an_error_on_its_row(
        eight: pd.DataFrame, tmp_path_factory: pytest.TempPathFactory, cells: list[str]) -> None:
    q = eight.head(len(cells))
    path = tmp_path_factory.mktemp("h") / "q.csv"
    write_label_queue(q, path)
    rows = _rows(path)
    for r, v in zip(rows, cells, strict=True):
        r["useful"] = v
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=QUEUE_FIELDS)
        w.writeheader()
        w.writerows(rows)
    df, errors = read_labels(path)
    good = [i for i, v in enumerate(cells) if v in ("0", "1")]
    blank = [i for i, v in enumerate(cells) if not v.strip()]
    bad = sorted(set(range(len(cells))) - set(good) - set(blank))
    assert list(df["useful"]) == [int(cells[i]) for i in good]
    assert list(df["lesson_index"]) == [int(rows[i]["lesson_index"]) for i in good]
    assert df.attrs["blank_rows"] == len(blank)
    assert [(e.row, e.field) for e in errors] == [(i + 2, "useful") for i in bad]


def test_a_file_with_other_columns_is_refused_by_header(tmp_path: Path) -> None:
    path = tmp_path / "q.csv"
    path.write_text(",".join([*QUEUE_FIELDS, "note"]) + "\n", encoding="utf-8")
    df, errors = read_labels(path)
    assert df.empty and [e.reason for e in errors] == ["bad_header"]
    assert "label-queue" in str(errors[0])


def test_ingest_labels_counts_blank_rows_in_python(db: Path, tmp_path: Path) -> None:
    with Store(db) as s:
        q = labelling_queue(s, PARA, n=4)
        q["useful"] = pd.array([1, pd.NA, pd.NA, 0], dtype="Int8")
        write_label_queue(q, tmp_path / "q.csv")
        rep = ingest_labels(s, tmp_path / "q.csv")
    assert (rep.rows_added, rep.rows_blank, rep.rows_read, rep.errors) == (2, 2, 4, [])


# -- the command line ---------------------------------------------------------------------


# -- whole verdicts (issue 36 item 1: the labels a correction of a judge can use) ----------


def test_whole_verdicts_list_every_candidate_of_verdicts_drawn_at_random(store: Store) -> None:
    q = whole_verdict_queue(store, PARA, n_verdicts=25, random_state=4)
    info = q.attrs["queue"]
    lc = labelled_candidates(store, PARA, valid_only=False)
    population = lc["verdict_hash"].nunique()
    assert (info["n_verdicts"], info["population"]) == (25, population)
    assert info["inclusion_probability"] == 25 / population
    assert set(q["verdict_hash"]) == set(info["verdicts"]) and len(info["verdicts"]) == 25
    # Every candidate of each drawn verdict without a truth yet (the paraphraser's only
    # labels are those lent by equal texts), any salience, the parser's dropped ones too;
    # none of another verdict.
    mine = lc[lc["verdict_hash"].isin(info["verdicts"]) & ~lc["labelled"].astype(bool)]
    assert len(q) == len(mine) and list(q.columns) == list(QUEUE_FIELDS)
    assert q["salience"].isna().sum() == (~mine["valid"].astype(bool)).sum()
    assert q["salience"].min() < 0.6 or q["salience"].max() > 0.8
    again = whole_verdict_queue(store, PARA, n_verdicts=25, random_state=4)
    assert again.equals(q)
    other = whole_verdict_queue(store, PARA, n_verdicts=25, random_state=5)
    assert set(other["verdict_hash"]) != set(q["verdict_hash"])
    # The good run is labelled whole already: nothing left to ask.
    assert whole_verdict_queue(store, GOOD, n_verdicts=25).empty


def test_cli_whole_verdicts_write_the_queue_and_its_draw(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "whole.csv"
    code, text = _cli("queue", PARA, "--db", str(db), "--out", str(out), "--whole-verdicts",
                      "--n-verdicts", "12")
    assert code == 0, text
    assert "on 12 verdict(s) drawn at random" in text and "--correct ppi" in text
    rows = _rows(out)
    draw = json.loads(Path(f"{out}.json").read_text(encoding="utf-8"))
    assert {r["verdict_hash"] for r in rows} == set(draw["verdicts"])
    assert draw["kind"] == "whole-verdicts" and draw["n_rows"] == len(rows)


@pytest.mark.parametrize(("args", "message"), [
    (["--whole-verdicts"], "--whole-verdicts needs --n-verdicts"),
    (["--whole-verdicts", "--n-verdicts", "5", "--per-verdict", "1"],
     "--per-verdict is for --kind label, not --whole-verdicts"),
    (["--whole-verdicts", "--n-verdicts", "5", "--kind", "match"],
     "--whole-verdicts is for --kind label"),
])
def test_cli_whole_verdicts_refuse_what_does_not_apply(db: Path, tmp_path: Path,
                                                       args: list[str], message: str) -> None:
    out = tmp_path / "q.csv"
    code, text = _cli("queue", PARA, "--db", str(db), "--out", str(out), *args)
    assert code == 2 and message in text and "Traceback" not in text
    assert not out.exists()


@pytest.mark.parametrize(("args", "message"), [
    (["nope"], "no extraction run 'nope'"),
    ([PARA, "--n-lessons", "0"], "--n-lessons"),
    ([PARA, "--per-verdict", "0"], "--per-verdict"),
    ([PARA, "--interval", "0.9", "0.1"], "interval"),
    ([PARA, "--interval", "0.1", "2"], "interval"),
])
def test_cli_errors_are_one_line_and_write_nothing(db: Path, tmp_path: Path, args: list[str],
                                                   message: str) -> None:
    out = tmp_path / "q.csv"
    code, text = _cli("queue", *args, "--db", str(db), "--out", str(out))
    assert code == 2 and message in text and "Traceback" not in text
    assert not out.exists()


def test_cli_checks_the_output_path_first(db: Path, tmp_path: Path) -> None:
    code, text = _cli("queue", PARA, "--db", str(db), "--out", str(tmp_path / "no" / "q.csv"))
    assert code == 2 and "no such folder" in text


def test_schema_lists_the_queue_format() -> None:
    code, text = _cli("schema", "label-queue")
    assert code == 0
    props = json.loads(text)["properties"]
    assert list(props) == list(QUEUE_FIELDS)


# -- the widget ---------------------------------------------------------------------------


def test_widget_labels_the_queue_and_the_next_queue_skips_them(db: Path) -> None:
    from truss_lab.faces._widgets import LabellingWidget

    with Store(db) as s:
        w = LabellingWidget.from_queue(s, PARA, annotator="ann-w", n=5, random_state=4)
        assert w.queue is not None and w.queue["source"] == "default-band"
        assert "[0.6, 0.8]" in w.progress.value and "default-band" in w.progress.value
        first = w.current
        assert first is not None
        queued = labelling_queue(s, PARA, n=5, random_state=4)
        assert (first["verdict_hash"], first["lesson_index"]) == \
            (queued["verdict_hash"].iat[0], queued["lesson_index"].iat[0])
        w.useful_button.click()
        w.not_useful_button.click()
        assert w.written == 2
        nxt = labelling_queue(s, PARA, n=5, random_state=4)
        done = set(zip(queued["verdict_hash"].iloc[:2], queued["lesson_index"].iloc[:2],
                       strict=True))
        assert not done & set(zip(nxt["verdict_hash"], nxt["lesson_index"], strict=True))
