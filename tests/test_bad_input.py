"""Issue #15 items 2, 3 and 5: bad input is refused in one line, never lost in silence.

Each test is a reproduction from the issue, through the real CLI.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from truss_lab.core._errors import StoreError
from truss_lab.faces._cli import cli
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
    r = CliRunner().invoke(cli, ["ingest", "journal", str(SAMPLE / "journal.jsonl"), "--keys",
                                 str(SAMPLE / "keys.json"), "--db", str(target)])
    assert "not a database" in _one_line_error(r)
    assert (target.read_bytes() if target.exists() else None) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ([name] if before else [])
    with pytest.raises(StoreError, match="not a database"):
        open_store(target)


def test_db_whose_bytes_are_not_duckdb_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "lab.duckdb"
    fake.write_text("seq,hash\n1,abc\n")
    r = CliRunner().invoke(cli, ["init", "--db", str(fake)])
    assert "not a DuckDB database" in _one_line_error(r)
    assert fake.read_text() == "seq,hash\n1,abc\n"
    real = tmp_path / "real.duckdb"
    Store(real).close()
    Store(real, read_only=True).close()  # a real one still opens
