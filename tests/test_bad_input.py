"""Issue #15 items 2, 3 and 5: bad input is refused in one line, never lost in silence.

Each test is a reproduction from the issue, through the real CLI.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.builders.cli import invoke
from tests.builders.stores import copy_db
from truss_lab.core._errors import StoreError
from truss_lab.store._store import Store, open_store

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "datasets" / "sample"


def _one_line_error(r: object, code: int = 2) -> str:
    out = r.output  # type: ignore[attr-defined]
    assert r.exit_code == code, out  # type: ignore[attr-defined]
    assert out.startswith("error: ") and len(out.strip().splitlines()) == 1, out
    return out


# -- item 2: the database is a DuckDB file or nothing -------------------------------------------


@pytest.mark.parametrize("name", ["keys.json", "lab.jsonl", "labels.csv", "x.parquet"])
def test_db_naming_a_data_file_is_refused(tmp_path: Path, name: str) -> None:
    # The reproduction: --db datasets/sample/keys.json reported "1200 added".
    target = tmp_path / name
    if name == "keys.json":
        target.write_bytes((SAMPLE / "keys.json").read_bytes())
    before = target.read_bytes() if target.exists() else None
    r = invoke("ingest", "journal", str(SAMPLE / "journal.jsonl"), "--keyring",
               str(SAMPLE / "keys.json"), "--db", str(target))
    assert "not a database" in _one_line_error(r)
    assert (target.read_bytes() if target.exists() else None) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ([name] if before else [])
    with pytest.raises(StoreError, match="not a database"):
        open_store(target)


def test_db_whose_bytes_are_not_duckdb_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "lab.duckdb"
    fake.write_text("seq,hash\n1,abc\n")
    r = invoke("init", "--db", str(fake))
    assert "not a DuckDB database" in _one_line_error(r)
    assert fake.read_text() == "seq,hash\n1,abc\n"
    real = tmp_path / "real.duckdb"
    Store(real).close()
    Store(real, read_only=True).close()  # a real one still opens


# -- item 3: strict readers without silent loss ----------------------------------------------------


@pytest.mark.parametrize("depth", [400, 650, 900])
def test_deeply_nested_journal_line_is_malformed_not_a_traceback(tmp_path: Path,
                                                                 depth: int) -> None:
    import json

    from tests.builders.chains import RING, make_chain
    from truss_lab.journal._crypto import save_keyring

    entries = make_chain(3)
    lines = [json.dumps(e) for e in entries]
    deep = "[" * depth + "]" * depth
    lines[1] = lines[1].replace('"payload": {', f'"payload": {{"deep": {deep}, ', 1)
    path, keys = tmp_path / "j.jsonl", tmp_path / "keys.json"
    path.write_text("\n".join(lines) + "\n")
    save_keyring(RING, keys)
    r = invoke("ingest", "journal", str(path), "--keyring", str(keys), "--db",
               str(tmp_path / "lab.duckdb"))
    assert r.exit_code == 1, r.output
    assert "line 2: malformed" in r.output and "200 levels" in r.output, r.output
    assert "Traceback" not in r.output and isinstance(r.exception, SystemExit)


@pytest.fixture
def db(sample_unlabelled: Path, tmp_path: Path) -> Path:
    return copy_db(sample_unlabelled, tmp_path / "lab.duckdb")


GOOD = (SAMPLE / "labels.csv").read_text().splitlines()


def _labels(tmp_path: Path, body: bytes) -> Path:
    p = tmp_path / "labels.csv"
    p.write_bytes(GOOD[0].encode() + b"\n" + body)
    return p


def test_labels_reader_reports_every_bad_row_and_keeps_every_good_one(tmp_path: Path) -> None:
    from truss_lab.ingest._labels import read_labels

    h = GOOD[1].split(",")[0]
    rows = [GOOD[1], f'{h},"x"y,0,1,a', GOOD[2], f"{h},{'e' * 140_000},0,1,a", GOOD[3],
            f'{h},"never closed,0,1,a', GOOD[4]]
    body = "\n".join(rows).encode() + b"\n" + f"{h},caf\xe9,0,1,a\n".encode("latin-1") \
        + GOOD[5].encode() + b"\n"
    df, errors = read_labels(_labels(tmp_path, body))
    assert len(df) == 5  # GOOD[1..5], every good row after each bad one
    assert [(e.row, e.reason) for e in errors] == [
        (3, "bad_csv"), (5, "bad_csv"), (7, "bad_csv"), (9, "bad_unicode")]
    assert "field larger than field limit" in str(errors[1])
    assert "not UTF-8" in str(errors[3]) and "row 9" in str(errors[3])


def test_ingest_exit_codes(db: Path, tmp_path: Path) -> None:
    h = GOOD[1].split(",")[0]
    bad = _labels(tmp_path, (f'{GOOD[1]}\n{h},"x"y,0,1,a\n{GOOD[2]}\n').encode())
    r = invoke("ingest", "labels", str(bad), "--db", str(db))
    assert r.exit_code == 3 and "2 added" in r.output and "row 3" in r.output, r.output
    r = invoke("ingest", "labels", str(bad), "--db", str(db), "--allow-bad-lines")
    assert r.exit_code == 0, r.output
    wrong = tmp_path / "wrong.csv"
    wrong.write_text("hash,who\n" + GOOD[1] + "\n")
    allbad = _labels(tmp_path, b"nothing,good,here,at,all\n")
    for path in (wrong, allbad):
        r = invoke("ingest", "labels", str(path), "--db", str(db), "--allow-bad-lines")
        assert r.exit_code == 3, r.output
    comp = tmp_path / "c.jsonl"
    comp.write_text('[1, 2]\n42\n"text"\n')
    r = invoke("ingest", "completions", str(comp), "--db", str(db), "--allow-bad-lines")
    assert r.exit_code == 3, r.output
    assert "got an array" in r.output and "got an integer" in r.output
    assert "got a string" in r.output and "got null" not in r.output


def test_labels_for_unknown_verdicts_or_lessons_are_reported_and_audited(
        db: Path, tmp_path: Path) -> None:
    from truss_lab.govern._audit import audit

    h, ext = GOOD[1].split(",")[:2]
    body = (f"{GOOD[1]}\n{'ab' * 32},{ext},0,1,a\n{h},{ext},97,1,a\n").encode()
    r = invoke("ingest", "labels", str(_labels(tmp_path, body)), "--db",
               str(db))
    assert r.exit_code == 0, r.output  # they land: a warning, not a rejected line
    assert "unknown verdict" in r.output and "lesson_index out of range" in r.output
    with Store(db) as s:
        check = {c.name: c for c in audit(s).checks}["labels_point_at_lessons"]
    assert not check.passed and len(check.rows) == 2


# -- item 5: output paths --------------------------------------------------------------------


def test_keys_generate_refuses_bad_paths_before_writing_anything(tmp_path: Path) -> None:
    r = invoke("keys", "generate", "--key-id", "me", "--out", "/nonexistent/k.key")
    assert "no such folder /nonexistent" in _one_line_error(r)
    key = tmp_path / "k.key"
    r = invoke("keys", "generate", "--key-id", "me", "--out", str(key), "--keyring",
               str(tmp_path / "missing" / "keys.json"))
    assert "no such folder" in _one_line_error(r)
    assert not key.exists()  # the key is not written when the keyring cannot be
    r = invoke("keys", "generate", "--key-id", "me", "--out", str(tmp_path), "--keyring",
               str(tmp_path / "keys.json"))
    assert r.exit_code == 2 and "is a directory" in r.output  # click's own usage error
    assert list(tmp_path.iterdir()) == []


def test_private_key_never_written_through_a_symlink(tmp_path: Path) -> None:
    from truss_lab.core._errors import BadInputError
    from truss_lab.journal._crypto import SigningKey

    target = tmp_path / "elsewhere.txt"
    link = tmp_path / "k.key"
    link.symlink_to(target)  # dangling
    r = invoke("keys", "generate", "--key-id", "me", "--out", str(link))
    _one_line_error(r)
    with pytest.raises(BadInputError, match="symbolic link"):
        SigningKey.generate("me").save(link)
    assert not target.exists()
    target.write_text("x")
    with pytest.raises(BadInputError, match="symbolic link"):
        SigningKey.generate("me").save(link)
    assert target.read_text() == "x"
    ok = SigningKey.generate("me").save(tmp_path / "real.key")
    assert ok.stat().st_mode & 0o777 == 0o600


def test_keyring_with_a_duplicated_key_id_is_refused(tmp_path: Path) -> None:
    from truss_lab.core._errors import BadInputError
    from truss_lab.journal._crypto import SigningKey, load_keyring

    a, b = SigningKey.generate("op"), SigningKey.generate("op")
    ring = tmp_path / "keys.json"
    ring.write_text(f'{{"op": "{a.public_key_b64}", "op": "{b.public_key_b64}"}}')
    with pytest.raises(BadInputError, match="appears twice"):
        load_keyring(ring)


def test_config_naming_a_folder_is_one_line(db: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRUSS_LAB_CONFIG", str(tmp_path))
    r = invoke("extract", "--db", str(db), "--extractor", "heuristic",
               "--quiet")
    assert "is a folder" in _one_line_error(r)


@pytest.mark.parametrize("option", ["--csv", "--plot"])
def test_sweep_output_in_a_missing_folder_is_refused_first(db: Path, tmp_path: Path,
                                                           option: str) -> None:
    other = "--plot" if option == "--csv" else "--csv"
    good = tmp_path / ("ok.png" if other == "--plot" else "ok.csv")
    r = invoke("sweep", "--db", str(db), "--run", "nope", option,
               str(tmp_path / "missing" / "out"), other, str(good))
    assert "no such folder" in _one_line_error(r) and option in r.output
    assert not good.exists()
