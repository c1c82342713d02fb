"""Reference lessons in: the §4 reader, the table, `truss-lab ingest references`, agreement."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.builders.cli import invoke
from truss_lab.evaluate._agreement import reference_agreement
from truss_lab.evaluate._truth import run_references
from truss_lab.ingest._ingest import ingest_references
from truss_lab.ingest._references import REFERENCE_FIELDS, read_references
from truss_lab.ingest._schemas import json_schema

SAMPLE = Path(__file__).resolve().parents[1] / "datasets" / "sample"
H1, H2, H3 = "a" * 64, "b" * 64, "c" * 64


def _line(**kw: object) -> str:
    rec = {"verdict_hash": H1, "reference_id": "r1", "text": "Check cron jobs after DST",
           "evidence": ["check:tz_regression"], "annotator": "ann-a"}
    rec.update(kw)
    return json.dumps({k: v for k, v in rec.items() if v is not ...})


def _write(tmp_path: Path, lines: list[str]) -> Path:
    p = tmp_path / "refs.jsonl"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def test_sample_reads_clean() -> None:
    df, errors = read_references(SAMPLE / "references.jsonl")
    assert errors == []
    assert list(df.columns) == list(REFERENCE_FIELDS)
    assert len(df) == 780 and df["verdict_hash"].nunique() == 402


@pytest.mark.parametrize(("line", "field", "reason"), [
    (_line(verdict_hash="ab"), "verdict_hash", "bad_value"),
    (_line(reference_id=""), "reference_id", "bad_value"),
    (_line(reference_id="none"), "text", "bad_value"),         # "none" needs empty text
    (_line(text=""), "text", "bad_value"),                      # a real reference needs text
    (_line(evidence=[""]), "evidence.0", "bad_value"),
    (_line(evidence="check:x"), "evidence", "bad_value"),
    (_line(text=...), "text", "missing"),
    (_line(extra=1), "extra", "unexpected_field"),
    ('{"verdict_hash": "' + H1 + '", "verdict_hash": "' + H1 + '"}', "verdict_hash",
     "duplicate_key"),
    ("[1, 2]", None, "not_object"),
    ("{not json", None, "bad_json"),
])
def test_bad_lines_are_named_and_good_lines_land(tmp_path, line, field, reason) -> None:
    good = _line(verdict_hash=H2)
    df, errors = read_references(_write(tmp_path, [good, line]))
    assert len(df) == 1 and df["verdict_hash"][0] == H2
    assert len(errors) >= 1
    e = errors[0]
    assert (e.line, e.field, e.reason) == (2, field, reason), str(e)


def test_duplicates_collapse_or_conflict(tmp_path) -> None:
    lines = [_line(), _line(),                                   # identical: one row
             _line(verdict_hash=H2), _line(verdict_hash=H2, text="other"),  # conflict
             _line(verdict_hash=H3, annotator=...), _line(verdict_hash=H3, annotator="")]
    df, errors = read_references(_write(tmp_path, lines))
    assert sorted(df["verdict_hash"]) == [H1, H3]  # absent and empty annotator are one key
    assert [(e.line, e.reason) for e in errors] == [(4, "conflicting_duplicate")]
    assert "line 3" in errors[0].message


def test_none_beside_real_references_is_dropped(tmp_path) -> None:
    lines = [_line(), _line(reference_id="none", text="", evidence=[]),
             _line(annotator="ann-b", reference_id="none", text="", evidence=[])]
    df, errors = read_references(_write(tmp_path, lines))
    assert sorted(zip(df["annotator"], df["reference_id"], strict=True)) == [
        ("ann-a", "r1"), ("ann-b", "none")]
    assert [(e.line, e.field, e.reason) for e in errors] == [
        (2, "reference_id", "none_with_references")]


def test_schema_and_reader_agree() -> None:
    schema = json_schema("references")
    assert set(schema["properties"]) == set(REFERENCE_FIELDS)
    assert set(schema["required"]) == {"verdict_hash", "reference_id", "text"}
    out = invoke("schema", "references")
    assert out.exit_code == 0 and json.loads(out.output)["title"] == "ReferenceRecordModel"


def test_ingest_is_idempotent_and_reports_conflicts(store, tmp_path) -> None:
    rep = ingest_references(store, SAMPLE / "references.jsonl")
    assert (rep.rows_read, rep.rows_added, rep.errors) == (780, 780, [])
    rep = ingest_references(store, SAMPLE / "references.jsonl")
    assert (rep.rows_added, rep.rows_present) == (0, 780)
    first = run_references(store).iloc[0]
    changed = json.dumps({"verdict_hash": first["verdict_hash"],
                          "reference_id": first["reference_id"], "text": "changed",
                          "evidence": [], "annotator": first["annotator"]})
    rep = ingest_references(store, _write(tmp_path, [changed]))
    assert rep.rows_added == 0 and [e.reason for e in rep.errors] == ["conflict"]
    assert store.sql("SELECT count(*) FROM reference_lessons").fetchall()[0][0] == 780


def test_cli_ingest_references(tmp_path) -> None:
    db = str(tmp_path / "t.duckdb")
    r = invoke("init", "--db", db)
    assert r.exit_code == 0, r.output
    bad = _write(tmp_path, [_line(), _line(verdict_hash="zz")])
    r = invoke("ingest", "references", "--db", db, str(bad))
    assert r.exit_code == 3, r.output  # a rejected line: exit 3 (issue #15), the good one lands
    assert "1 added" in r.output and "1 bad lines" in r.output and "line 2" in r.output
    r = invoke("ingest", "references", "--db", db, str(bad),
               "--allow-bad-lines")
    assert r.exit_code == 0, r.output


def test_agreement_on_the_sample() -> None:
    df, _ = read_references(SAMPLE / "references.jsonl")
    ag = reference_agreement(df)
    row = ag.iloc[0]
    assert (row.annotator_a, row.annotator_b, row.n_common) == ("ann-a", "ann-b", 170)
    # ann-b only leaves references out (never adds one): every id it wrote ann-a wrote too.
    assert row.n_both == row.n_b == 130 and row.n_a == 139
    assert row.id_agreement == pytest.approx(130 / 139)
    assert row.both_none == 96


def test_agreement_counts_none_as_empty() -> None:
    df = pd.DataFrame({"verdict_hash": [H1, H1, H2, H2], "reference_id": ["none", "r1", "r1", "r1"],
                       "text": ["", "x", "y", "y"], "annotator": ["a", "b", "a", "b"]})
    row = reference_agreement(df).iloc[0]
    assert (row.n_common, row.both_none, row.n_both, row.same_set) == (2, 0, 1, 0.5)
    assert row.id_agreement == 0.5


def test_load_sample_ingests_references(tmp_path) -> None:
    from truss_lab.faces._notebook import load_sample

    with load_sample(tmp_path / "s.duckdb") as s:
        assert s.sql("SELECT count(*) FROM reference_lessons").fetchall()[0][0] == 780


def test_re_ingesting_changed_references_or_labels_is_a_conflict_not_present(
        sample_full: Path, tmp_path: Path) -> None:
    """Issue 28 item 12: the same keys with changed text (or a flipped label) keep the
    stored rows, are each reported as a conflict (one report for both formats), are not
    counted as already present, and fail the command (exit 3)."""
    from tests.builders.stores import copy_db
    from truss_lab.store._store import Store

    db = str(copy_db(sample_full, tmp_path / "lab.duckdb"))
    recs = [json.loads(x) for x in (SAMPLE / "references.jsonl").read_text().splitlines()]
    for r in recs:
        r["text"] = r["text"] and r["text"] + " (revised)"  # "none" lines stay empty
    changed = _write(tmp_path, [json.dumps(r) for r in recs])
    n_changed = sum(bool(r["text"]) for r in recs)
    r = invoke("ingest", "references", "--db", db, str(changed), "--json")
    assert r.exit_code == 3, r.output
    rep = json.loads(r.stdout)
    assert (rep["rows_added"], rep["rows_present"]) == (0, len(recs) - n_changed)
    assert len(rep["errors"]) == n_changed and "different content" in rep["errors"][0]
    with Store(db, read_only=True) as s:
        assert s.sql("SELECT count(*) FROM reference_lessons WHERE text LIKE '%(revised)'"
                     ).fetchall() == [(0,)]
    # Labels: the same report; beyond the first 1000 conflicts, one line counts the rest.
    lines = (SAMPLE / "labels.csv").read_text().splitlines()
    flipped = [lines[0]] + [",".join([*f[:3], str(1 - int(f[3])), *f[4:]])
                            for f in (x.split(",") for x in lines[1:])]
    (tmp_path / "labels.csv").write_text("\n".join(flipped) + "\n")
    r = invoke("ingest", "labels", "--db", db, str(tmp_path / "labels.csv"), "--json")
    assert r.exit_code == 3, r.output
    rep = json.loads(r.stdout)
    assert (rep["rows_added"], rep["rows_present"]) == (0, 0)
    assert len(rep["errors"]) == 1001
    assert rep["errors"][-1].endswith(f"{len(flipped) - 1 - 1000} more row(s) already stored "
                                      "with different content; kept the stored rows")


def test_references_are_bounded_and_unknown_verdicts_warned(sample_full: Path,
                                                            tmp_path: Path) -> None:
    """Issue 28 item 13: a 20 MB reference text (or an oversized id, annotator or evidence)
    is a bad line named by line and field, the good lines land; a reference to a verdict
    the journal does not hold lands with a warning, as a label does."""
    from tests.builders.stores import copy_db
    from truss_lab.ingest._references import (
        MAX_REFERENCE_EVIDENCE,
        MAX_REFERENCE_NAME,
        MAX_REFERENCE_TEXT,
    )

    db = str(copy_db(sample_full, tmp_path / "lab.duckdb"))
    known = json.loads((SAMPLE / "references.jsonl").read_text().splitlines()[0])["verdict_hash"]
    lines = [
        _line(verdict_hash=known, reference_id="r-ok", text="x" * MAX_REFERENCE_TEXT),
        _line(verdict_hash=known, reference_id="r-big", text="x" * 20_000_000),
        _line(verdict_hash=known, reference_id="r" * (MAX_REFERENCE_NAME + 1)),
        _line(verdict_hash=known, reference_id="r-ann", annotator="a" * (MAX_REFERENCE_NAME + 1)),
        _line(verdict_hash=known, reference_id="r-ev",
              evidence=["summary"] * (MAX_REFERENCE_EVIDENCE + 1)),
        _line(verdict_hash=known, reference_id="r-tok", evidence=["e" * (MAX_REFERENCE_NAME + 1)]),
        _line(verdict_hash=H1, reference_id="r-unknown"),
    ]
    r = invoke("ingest", "references", "--db", db, str(_write(tmp_path, lines)), "--json")
    assert r.exit_code == 3, r.output[:2000]
    rep = json.loads(r.stdout)
    assert rep["rows_added"] == 2
    assert [e.split(": ")[0].split(", ", 1)[1] for e in rep["errors"]] == [
        "line 2, field 'text'", "line 3, field 'reference_id'", "line 4, field 'annotator'",
        "line 5, field 'evidence'", "line 6, field 'evidence.0'"]
    assert f"at most {MAX_REFERENCE_TEXT} characters" in rep["errors"][0]
    assert rep["warnings"] == [f"{_write(tmp_path, lines)}: verdict {H1}, 1 reference(s): "
                               "unknown verdict (not in the journal)"]
    assert len(r.output) < 10_000  # the 20 MB value is never echoed
    schema = json_schema("references")["properties"]
    assert schema["text"]["maxLength"] == MAX_REFERENCE_TEXT
