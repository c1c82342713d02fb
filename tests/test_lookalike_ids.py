"""Issue 39 item 8: look-alike ids (Cyrillic letters, U+2010 hyphens, a NUL).

An id holding a control character is refused, naming file, row or line and field; one
that reads as another id (mixed scripts, a hyphen that is not ``-``) is stored with one
warning line naming where; and a run id that is not found says which stored id looks
the same and which characters differ (a skeleton comparison after Unicode TR39).
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest
from click.testing import Result

from tests.builders.cli import invoke
from tests.builders.stores import copy_db
from truss_lab.core._confusables import (
    id_refusal,
    lookalike_note,
    lookalike_problem,
    lookalikes,
    skeleton,
)
from truss_lab.store._store import Store

CYRILLIC_GOOD = "g\u043e\u043ed"  # 'gооd': two CYRILLIC SMALL LETTER O
HYPHEN_GOOD = "good\u2010subset"  # U+2010 HYPHEN where 'good-subset' has '-'


def _extract(db: Path, run_id: str) -> Result:
    return invoke("extract", "--db", db, "--extractor", "replay:sim-good-v1", "--policy", "on",
                  "--verdicts", "seq <= 5", "--run-id", run_id, "--quiet",
                  "--max-error-share", "1")


@pytest.fixture(scope="module")
def named(sample_good_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample with two runs named as the attacker's were: 'good', 'good-subset'."""
    db = copy_db(sample_good_run, tmp_path_factory.mktemp("lookalike") / "named.duckdb")
    for run_id in ("good", "good-subset"):
        r = _extract(db, run_id)
        assert r.exit_code == 0, r.output
    return db


@pytest.fixture
def lab(named: Path, tmp_path: Path) -> Path:
    return copy_db(named, tmp_path / "lab.duckdb")


def _first_candidate(db: Path) -> tuple[str, str]:
    with Store(db, read_only=True) as s:
        return s.sql("SELECT verdict_hash, extractor_id FROM candidates "
                     "ORDER BY candidate_id LIMIT 1").fetchall()[0]


def test_skeletons_read_as_people_read() -> None:
    assert skeleton(CYRILLIC_GOOD) == "good" and skeleton(HYPHEN_GOOD) == "good-subset"
    assert skeleton("\uff47ood") == "good"  # FULLWIDTH g: NFKC
    assert skeleton("go\u200bod") == "good"  # a zero-width space is dropped
    assert lookalikes(CYRILLIC_GOOD, ["good", "bad", CYRILLIC_GOOD]) == ["good"]
    assert lookalike_problem(CYRILLIC_GOOD) == "mixes scripts (Latin, Cyrillic)"
    assert "U+2010 HYPHEN" in (lookalike_problem(HYPHEN_GOOD) or "")
    for plain in ("good", "gpt-4o-mini@lesson-v1", "annotator_7", "ann\u00e9e", "\u6f22\u5b57"):
        assert lookalike_problem(plain) is None, plain
    assert id_refusal("ann\x00") is not None and id_refusal("ann") is None
    note = lookalike_note(CYRILLIC_GOOD, ["good"], "run id")
    assert "'good' looks the same but is another run id" in note
    assert unicodedata.name("\u043e") in note and "at 2" in note and "at 3" in note


@pytest.mark.parametrize("asked", [CYRILLIC_GOOD, HYPHEN_GOOD])
def test_sweep_of_a_lookalike_run_says_why_it_did_not_match(lab: Path, asked: str) -> None:
    r = invoke("sweep", asked, "--db", lab)
    assert r.exit_code == 2, r.output
    line = r.output.strip()
    assert len(line.splitlines()) == 1 and "no extraction run" in line
    meant = skeleton(asked)
    assert f"{meant!r} looks the same but is another run id" in line
    assert "U+" in line  # the character that differs, by name


def test_a_labels_file_with_lookalike_and_nul_ids(lab: Path, tmp_path: Path) -> None:
    vh, ex = _first_candidate(lab)
    path = tmp_path / "labels.csv"
    path.write_text("verdict_hash,extractor,lesson_index,useful,annotator\n"
                    f"{vh},{ex},0,1,alice\n"
                    f"{vh},{ex},0,1,{CYRILLIC_GOOD}\n"
                    f"{vh},{ex},0,0,bob\x00\n"
                    f"{vh},{ex.replace('-', chr(0x2010))},0,1,carol\n", encoding="utf-8")
    with Store(lab, read_only=True) as s:
        before = s.sql("SELECT count(*) FROM labels").fetchall()[0][0]
    r = invoke("ingest", "labels", path, "--db", lab)
    assert r.exit_code == 3, r.output  # a bad row: reported, the good ones landed
    err = [x for x in r.output.splitlines() if "U+0000" in x]  # the bad row, by number
    warn = [x for x in r.stderr.splitlines() if x.startswith("warning")]
    assert len(err) == 1 and "row 4" in err[0] and "'annotator'" in err[0]
    assert "U+0000" in err[0] and "\x00" not in r.output
    assert any("row 3" in w and "'annotator'" in w and "mixes scripts (Latin, Cyrillic)" in w
               for w in warn), warn
    if "-" in ex:
        assert any("row 5" in w and "'extractor'" in w and "U+2010 HYPHEN" in w
                   for w in warn), warn
    with Store(lab, read_only=True) as s:
        got = {a for (a,) in s.sql("SELECT annotator FROM labels").fetchall()}
        after = s.sql("SELECT count(*) FROM labels").fetchall()[0][0]
    assert CYRILLIC_GOOD in got and not any("\x00" in a for a in got)
    assert after - before == (3 if "-" in ex else 2)


def test_a_references_file_with_lookalike_and_nul_ids(lab: Path, tmp_path: Path) -> None:
    vh, _ = _first_candidate(lab)
    good = {"verdict_hash": vh, "reference_id": "r-39a", "text": "a lesson", "annotator": "a"}
    lines = [good,
             {**good, "reference_id": "r\u201039b"},
             {**good, "reference_id": "r-39c", "annotator": "\u0430nna"},
             {**good, "reference_id": "r-39d", "annotator": "x\x00y"}]
    path = tmp_path / "refs.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    r = invoke("ingest", "references", path, "--db", lab)
    assert r.exit_code == 3, r.output
    err = [x for x in r.output.splitlines() if "U+0000" in x]
    warn = [x for x in r.stderr.splitlines() if x.startswith("warning")]
    assert len(err) == 1 and "line 4" in err[0] and "annotator" in err[0] and "U+0000" in err[0]
    assert any("line 2" in w and "'reference_id'" in w and "U+2010" in w for w in warn), warn
    assert any("line 3" in w and "'annotator'" in w and "Cyrillic" in w for w in warn), warn


def test_a_new_run_with_a_lookalike_id_warns_and_a_nul_is_refused(lab: Path) -> None:
    r = _extract(lab, CYRILLIC_GOOD)
    assert r.exit_code == 0, r.output
    warn = [x for x in r.stderr.splitlines() if x.startswith("warning")]
    assert any("mixes scripts (Latin, Cyrillic)" in w and "looks like run 'good'" in w
               for w in warn), r.output
    with Store(lab, read_only=True) as s:
        before = s.counts()
    r = _extract(lab, "bad\x00run")
    assert r.exit_code == 2 and "U+0000" in r.output and "\x00" not in r.output, r.output
    with Store(lab, read_only=True) as s:
        assert s.counts() == before
