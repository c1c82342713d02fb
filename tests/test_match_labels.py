"""Match labels (issue 26 item 1, Formats §5): the strict reader, the table and its
ingest, the match queue and its round trip, and people's majority per lesson.

Real DuckDB files: the sample (journal, completions, labels, references) with one replay
run of ``sim-good-v1`` is a template, copied per test that writes. The simulator's
lesson truth (``lesson_truth.csv``: which reference each lesson paraphrases) plays the
person who fills the queue.
"""

from __future__ import annotations

import csv
import json
import tempfile
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.builders.cli import invoke
from tests.builders.profiles import examples
from tests.builders.stores import copy_db
from truss_lab.core._errors import BadInputError
from truss_lab.evaluate._matches import people_matches, run_match_labels
from truss_lab.evaluate._queue import match_queue
from truss_lab.faces._notebook import SAMPLE, run_sample_extractions, sample_run_id
from truss_lab.ingest._ingest import ingest_match_labels
from truss_lab.ingest._match_labels import (
    MATCH_LABEL_FIELDS,
    MATCH_QUEUE_FIELDS,
    read_match_labels,
    write_match_queue,
)
from truss_lab.ingest._schemas import json_schema
from truss_lab.store._store import Store

GOOD = sample_run_id("sim-good-v1")
H1, H2, H3 = "a" * 64, "b" * 64, "c" * 64
HEADER = ",".join(MATCH_LABEL_FIELDS)


@pytest.fixture(scope="module")
def template(sample_full: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = copy_db(sample_full, tmp_path_factory.mktemp("ml") / "template.duckdb")
    s = Store(path)
    run_sample_extractions(s, extractors=["sim-good-v1"], write_memory=False)
    s.close()
    return path


@pytest.fixture
def db(template: Path, tmp_path: Path) -> Path:
    return copy_db(template, tmp_path / "lab.duckdb")


@pytest.fixture(scope="module")
def ro(template: Path) -> Iterator[Store]:
    s = Store(template, read_only=True)
    yield s
    s.close()


@pytest.fixture(scope="module")
def truth() -> dict[tuple[str, str, int], str]:
    """The simulator's answer per lesson: the reference it paraphrases, "" for none."""
    t = pd.read_csv(SAMPLE / "lesson_truth.csv", dtype=str, keep_default_na=False)
    return {(h, e, int(i)): ("" if r == "none" else r) for h, e, i, r in zip(
        t["verdict_hash"], t["extractor"], t["lesson_index"], t["reference_id"], strict=True)}


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _write_rows(path: Path, rows: list[dict[str, str]], fields: tuple[str, ...]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(fields))
        w.writeheader()
        w.writerows(rows)
    return path


def _fill(queue: Path, out: Path, truth: dict[tuple[str, str, int], str],
          annotator: str = "ann-a") -> Path:
    rows = _rows(queue)
    for r in rows:
        r["reference_id"] = truth[(r["verdict_hash"], r["extractor"], int(r["lesson_index"]))]
        r["annotator"] = annotator
    return _write_rows(out, rows, MATCH_QUEUE_FIELDS)


# -- the reader ------------------------------------------------------------------------


@pytest.mark.parametrize(("row", "field"), [
    (f"{'A' * 64},ex,0,r1,ann", "verdict_hash"),
    (f"{H2},,0,r1,ann", "extractor"),
    (f"{H2},ex,-1,r1,ann", "lesson_index"),
    (f"{H2},ex,1.0,r1,ann", "lesson_index"),
    (f"{H2},ex,99999999999999999,r1,ann", "lesson_index"),
    (f"{H2},ex,0,none,ann", "reference_id"),
    (f"{H2},ex,0,{'r' * 300},ann", "reference_id"),
    (f"{H2},ex,0,r1,{'a' * 300}", "annotator"),
])
def test_a_bad_row_is_named_by_line_and_field_and_good_rows_land(tmp_path, row, field) -> None:
    path = _write(tmp_path / "m.csv", [HEADER, f"{H1},ex,0,r1,ann", f"{H1},ex,1,,ann", row])
    df, errors = read_match_labels(path)
    assert list(df["verdict_hash"]) == [H1, H1]
    assert list(df["reference_id"]) == ["r1", ""]  # empty: the lesson expresses none
    assert [(e.row, e.field, e.reason) for e in errors] == [(4, field, "bad_value")]


def test_headers_and_the_inclusion_column(tmp_path) -> None:
    p = _write(tmp_path / "p.csv", [HEADER + ",inclusion_probability",
                                    f"{H1},ex,0,r1,ann,0.25", f"{H1},ex,1,,ann,0.25",
                                    f"{H2},ex,0,r1,ann,0", f"{H3},ex,0,r1,ann,"])
    df, errors = read_match_labels(p)
    assert list(df["inclusion_probability"]) == [0.25, 0.25]
    assert [(e.row, e.field) for e in errors] == [(4, "inclusion_probability"),
                                                   (5, "inclusion_probability")]
    no_annotator = _write(tmp_path / "n.csv", ["verdict_hash,extractor,lesson_index,reference_id",
                                               f"{H1},ex,0,r1"])
    df, errors = read_match_labels(no_annotator)
    assert errors == [] and list(df["annotator"]) == [""]
    assert np.isnan(df["inclusion_probability"][0])
    wrong = _write(tmp_path / "w.csv", ["verdict_hash,extractor,lesson_index,useful", "x"])
    df, errors = read_match_labels(wrong)
    assert df.empty and [(e.row, e.reason) for e in errors] == [(1, "bad_header")]


def test_a_verdict_lands_whole_or_not_at_all(tmp_path) -> None:
    # Line 3 is bad: the other row of H1 by ann-a (line 2) is dropped with it, said once;
    # ann-b's answer to H1 and H2 land.
    p = _write(tmp_path / "m.csv", [HEADER, f"{H1},ex,0,r1,ann-a", f"{H1},ex,x,r1,ann-a",
                                    f"{H1},ex,0,r2,ann-b", f"{H2},ex,0,,ann-a"])
    df, errors = read_match_labels(p)
    assert sorted(zip(df["verdict_hash"], df["annotator"], strict=True)) == [
        (H1, "ann-b"), (H2, "ann-a")]
    assert [(e.row, e.reason) for e in errors] == [(2, "verdict_incomplete"),
                                                    (3, "bad_value")]


def test_duplicates_collapse_conflicts_drop_their_verdict(tmp_path) -> None:
    p = _write(tmp_path / "m.csv", [HEADER, f"{H1},ex,0,r1,a", f"{H1},ex,0,r1,a",
                                    f"{H2},ex,0,r1,a", f"{H2},ex,1,r2,a", f"{H2},ex,0,r2,a"])
    df, errors = read_match_labels(p)
    assert list(df["verdict_hash"]) == [H1]
    assert [(e.row, e.reason) for e in errors] == [(5, "verdict_incomplete"),
                                                    (6, "conflicting_duplicate")]


def test_a_verdict_drawn_with_two_probabilities_is_refused(tmp_path) -> None:
    p = _write(tmp_path / "m.csv", [HEADER + ",inclusion_probability", f"{H1},ex,0,r1,a,0.5",
                                    f"{H1},ex,1,,a,0.25", f"{H2},ex,0,r1,a,0.5"])
    df, errors = read_match_labels(p)
    assert list(df["verdict_hash"]) == [H2]
    assert [(e.row, e.field, e.reason) for e in errors] == [
        (2, "lesson_index", "verdict_incomplete"),
        (3, "inclusion_probability", "inconsistent_probability")]


_CELLS = st.one_of(
    st.sampled_from(["", "r1", "r2", "?", "none", " r1", "0", "r" * 257]),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
            max_size=4),
)
_INDEX_CELLS = st.sampled_from(["0", "1", "2", "-1", "x", "", "01", "9007199254740992"])


@settings(max_examples=examples(60), deadline=None)
@given(cells=st.lists(st.tuples(_INDEX_CELLS, _CELLS), min_size=1, max_size=6))
def test_any_cells_give_rows_blanks_or_errors_on_their_rows(cells) -> None:
    # One verdict per row (so no row takes another down with it): each row is a match
    # label, a skipped blank ('?') or an error naming its row as a spreadsheet shows it
    # (a cell may hold a newline, so not its first line). A reference id holding a control
    # character (a line break, U+001F) is an error on its row: an id has none.
    with tempfile.TemporaryDirectory() as d:
        rows = [{"verdict_hash": f"{i:064x}", "extractor": "ex", "lesson_index": li,
                 "reference_id": rid, "annotator": "a"} for i, (li, rid) in enumerate(cells)]
        path = _write_rows(Path(d) / "m.csv", rows, MATCH_LABEL_FIELDS)
        df, errors = read_match_labels(path)
    good = [i for i, (li, rid) in enumerate(cells)
            if li.isdigit() and int(li) < 2**53 and rid not in ("?", "none")
            and len(rid) <= 256 and not any(unicodedata.category(c) == "Cc" for c in rid)]
    blank = [i for i, (_, rid) in enumerate(cells) if rid == "?"]
    bad = sorted(set(range(len(cells))) - set(good) - set(blank))
    assert list(df["reference_id"]) == [cells[i][1] for i in good]
    assert df.attrs["blank_rows"] == len(blank)
    assert [e.row for e in errors] == [i + 2 for i in bad]  # spreadsheet rows
    assert all(e.field in ("lesson_index", "reference_id") for e in errors)


# -- the table and the ingest ---------------------------------------------------------------


def test_schema_names_the_fields() -> None:
    props = json_schema("match-labels")["properties"]
    assert [*MATCH_LABEL_FIELDS, "inclusion_probability"] == list(props)
    r = invoke("schema", "match-queue")
    assert r.exit_code == 0 and "references" in json.loads(r.output)["properties"]


def test_queue_fill_ingest_round_trip(db: Path, tmp_path: Path, truth) -> None:
    q, meta = tmp_path / "q.csv", tmp_path / "q.csv.json"
    r = invoke("queue", GOOD, "--db", db, "--kind", "match", "--n-verdicts", "12",
               "--random-state", "5", "--out", q)
    assert r.exit_code == 0, r.output
    drawn = json.loads(meta.read_text())
    assert (drawn["random_state"], drawn["n_verdicts"], drawn["run_id"]) == (5, 12, GOOD)
    rows = _rows(q)
    assert {x["reference_id"] for x in rows} == {"?"}
    assert {x["verdict_hash"] for x in rows} == set(drawn["verdicts"])
    # Every valid lesson of a drawn verdict is listed, with the verdict's references.
    with Store(db, read_only=True) as s:
        lessons = s.sql("SELECT verdict_hash, lesson_index FROM candidates WHERE run_id = ? "
                        "AND valid", [GOOD]).fetchall()
    want = sorted((h, i) for h, i in lessons if h in set(drawn["verdicts"]))
    assert sorted((x["verdict_hash"], int(x["lesson_index"])) for x in rows) == want
    # The references to choose from (none on a verdict its annotator said teaches nothing).
    assert all(x["references"] == "" or x["references"].startswith("r1: ") for x in rows)
    assert any(x["references"] for x in rows)
    # An untouched queue lands nothing and says so.
    r = invoke("ingest", "match-labels", q, "--db", db, "--json")
    assert r.exit_code == 0 and json.loads(r.output)["rows_blank"] == len(rows)
    filled = _fill(q, tmp_path / "filled.csv", truth)
    r = invoke("ingest", "match-labels", filled, "--db", db, "--json")
    assert r.exit_code == 0, r.output
    rep = json.loads(r.output)
    assert (rep["rows_added"], rep["errors"]) == (len(rows), [])
    # The sample's simulated people are in the table too (load_sample): the queue's own
    # answers are those of its verdicts they did not match.
    mine = set(drawn["verdicts"]) - {x["verdict_hash"] for x in _rows(SAMPLE / "match_labels.csv")}

    def own(frame: pd.DataFrame) -> pd.DataFrame:
        return frame[frame["verdict_hash"].isin(mine)].reset_index(drop=True)

    with Store(db, read_only=True) as s:
        pm = own(people_matches(s, run_id=GOOD))
        assert pm.equals(own(people_matches(s, filled, run_id=GOOD)))  # the path reads the same
    got = {(h, i): r for h, i, r in zip(pm["verdict_hash"], pm["lesson_index"],
                                         pm["reference_id"], strict=True)}
    assert len(got) and got == {(x["verdict_hash"], int(x["lesson_index"])): truth[
        (x["verdict_hash"], x["extractor"], int(x["lesson_index"]))] for x in rows
        if x["verdict_hash"] in mine}
    assert not pm["tied"].any() and (pm["n_annotators"] == 1).all()
    # Loading it again adds nothing; a changed answer is a conflict: exit 3, kept as stored.
    r = invoke("ingest", "match-labels", filled, "--db", db, "--json")
    assert r.exit_code == 0 and json.loads(r.output)["rows_present"] == len(rows)
    changed = _rows(filled)
    k = next(i for i, x in enumerate(changed) if x["reference_id"])
    changed[k]["reference_id"] = ""  # now "none of them"
    _write_rows(tmp_path / "changed.csv", changed, MATCH_QUEUE_FIELDS)
    r = invoke("ingest", "match-labels", tmp_path / "changed.csv", "--db", db)
    assert r.exit_code == 3, r.output
    assert "already stored with different content" in r.output
    with Store(db, read_only=True) as s:
        assert own(people_matches(s, run_id=GOOD)).equals(pm)


def test_the_seed_fixes_the_draw(ro: Store) -> None:
    a = match_queue(ro, GOOD, n_verdicts=10, random_state=1)
    assert a.equals(match_queue(ro, GOOD, n_verdicts=10, random_state=1))
    b = match_queue(ro, GOOD, n_verdicts=10, random_state=2)
    assert set(a["verdict_hash"]) != set(b["verdict_hash"])
    info = a.attrs["queue"]
    assert info["inclusion_probability"] == pytest.approx(10 / info["population"])
    everything = match_queue(ro, GOOD, n_verdicts=10**6)
    assert everything.attrs["queue"]["n_verdicts"] == info["population"]


def test_store_checks_name_the_line(db: Path, tmp_path: Path, truth) -> None:
    with Store(db) as s:
        q = match_queue(s, GOOD, n_verdicts=40, random_state=0)
    multi = q.groupby("verdict_hash")["lesson_index"].transform("size") > 1
    v1, v2 = q[multi]["verdict_hash"].unique()[:2]
    rows = [{c: str(r[c]) for c in MATCH_LABEL_FIELDS} for _, r in q[
        q["verdict_hash"].isin([v1, v2])].iterrows()]
    for r in rows:
        r["reference_id"] = truth[(r["verdict_hash"], r["extractor"], int(r["lesson_index"]))]
    first_v1 = next(i for i, r in enumerate(rows) if r["verdict_hash"] == v1)
    rows[first_v1]["reference_id"] = "r9"                  # no such reference
    missing = next(i for i, r in enumerate(rows) if r["verdict_hash"] == v2)
    del rows[missing]                                       # a lesson of v2 not answered
    path = _write_rows(tmp_path / "m.csv", rows, MATCH_LABEL_FIELDS)
    with Store(db) as s:
        rep = ingest_match_labels(s, path)
        assert rep.rows_added == 0
        with pytest.raises(BadInputError, match="bad match label row"):
            run_match_labels(s, path)
    reasons = sorted((e.reason, e.field) for e in rep.errors)
    assert ("unknown_reference", "reference_id") in reasons
    assert ("missing_lesson", "lesson_index") in reasons
    bad = next(e for e in rep.errors if e.reason == "unknown_reference")
    assert bad.row == first_v1 + 2 and "its references: r1" in bad.message


def test_people_majority_and_ties(store: Store) -> None:
    rows = pd.DataFrame({
        "verdict_hash": [H1] * 6 + [H2] * 2,
        "extractor": ["ex"] * 8,
        "lesson_index": [0, 0, 0, 1, 1, 2, 0, 0],
        "reference_id": ["r1", "r1", "", "r1", "r2", "", "r1", ""],
        "annotator": ["a", "b", "c", "a", "b", "a", "a", "b"],
    })
    pm = people_matches(store, rows)
    assert list(pm["reference_id"].astype(object).where(pm["reference_id"].notna(), None)) \
        == ["r1", None, "", None]
    assert list(pm["tied"]) == [False, True, False, True]
    assert list(pm["n_annotators"]) == [3, 2, 1, 2]
    assert list(pm["n_agree"]) == [2, 1, 1, 1]
    with pytest.raises(BadInputError, match="lack column"):
        people_matches(store, rows.drop(columns="reference_id"))


def test_write_match_queue_refuses_a_frame_without_its_columns(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match="lacks column"):
        write_match_queue(pd.DataFrame({"verdict_hash": [H1]}), tmp_path / "q.csv")
    assert not (tmp_path / "q.csv").exists()


def test_queue_options_of_the_other_kind_are_refused(db: Path, tmp_path: Path) -> None:
    r = invoke("queue", GOOD, "--db", db, "--kind", "match", "--out", tmp_path / "q.csv")
    assert r.exit_code == 2 and "--n-verdicts" in r.output
    r = invoke("queue", GOOD, "--db", db, "--kind", "match", "--n-verdicts", "3", "--n", "5",
               "--out", tmp_path / "q.csv")
    assert r.exit_code == 2 and "--n is for --kind label" in r.output  # the old name, named
    r = invoke("queue", GOOD, "--db", db, "--kind", "match", "--n-verdicts", "3",
               "--n-lessons", "5", "--out", tmp_path / "q.csv")
    assert r.exit_code == 2 and "--n-lessons is for --kind label" in r.output
    r = invoke("queue", GOOD, "--db", db, "--n-verdicts", "3", "--out", tmp_path / "q.csv")
    assert r.exit_code == 2 and "--n-verdicts is for --kind match" in r.output
    assert not (tmp_path / "q.csv").exists()


def test_the_bundled_sample_match_labels_land_clean(db: Path) -> None:
    df, errors = read_match_labels(SAMPLE / "match_labels.csv")
    assert errors == [] and len(df) > 0
    assert df.groupby("verdict_hash")["inclusion_probability"].nunique().eq(1).all()
    with Store(db) as s:
        rep = ingest_match_labels(s, SAMPLE / "match_labels.csv")
        # load_sample ingests them with the sample already: present, not added again
        assert (rep.errors, rep.rows_added + rep.rows_present) == ([], len(df))
        pm = people_matches(s, run_id=GOOD)
    assert len(pm) and set(pm["extractor"]) == {"sim-good-v1"}
