"""The notebook helpers (truss_lab.faces._notebook) and the notebooks' hygiene.

The notebooks themselves run under nbmake (``make test``); here: the helpers
they call are idempotent and correct, and each committed ``.ipynb`` has no
outputs and the same code as its jupytext ``py:percent`` twin.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import jupytext
import pytest

from tests.builders.stores import copy_db
from truss_lab.core._errors import BadInputError, StoreError
from truss_lab.faces._notebook import (
    SAMPLE,
    SAMPLE_EXTRACTORS,
    copy_store,
    load_sample,
    notebook_store,
    run_sample_extractions,
    sample_run_id,
)
from truss_lab.journal._ledger import verify_chain
from truss_lab.journal._table import verdict_payloads
from truss_lab.store._store import Store

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
IPYNBS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def twin(path: Path) -> Path:
    """A notebook's jupytext py:percent twin: in notebooks/py/, so the folder JupyterLab
    opens lists each notebook once (the pairing, ``ipynb,py//py:percent``, is in each
    notebook's metadata)."""
    return path.parent / "py" / f"{path.stem}.py"

# Row counts of the bundled sample (datasets/sample/DATASHEET.md).
SAMPLE_ROWS = {"journal": 1200, "completions": 3600, "labels": 4385, "signing_keys": 1}


@pytest.fixture(scope="module")
def loaded(sample_full: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """The sample in a file, with the three sample runs (shared, read-mostly)."""
    s = Store(copy_db(sample_full, tmp_path_factory.mktemp("nb") / "sample.duckdb"))
    run_sample_extractions(s)
    yield s
    s.close()


# -- load_sample --------------------------------------------------------------------


def test_sample_folder_is_bundled() -> None:
    assert (SAMPLE / "journal.jsonl").is_file()
    assert (SAMPLE / "DATASHEET.md").is_file()


def test_load_sample_ingests_everything_and_verifies(loaded: Store) -> None:
    counts = loaded.counts()
    for table, n in SAMPLE_ROWS.items():
        assert counts[table] == n, table
    assert verify_chain(loaded).ok


def test_load_sample_is_idempotent(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    first = load_sample(db)
    before = first.counts()
    first.close()
    second = load_sample(db)
    try:
        assert second.counts() == before
        assert second.path == str(db)
    finally:
        second.close()


def test_load_sample_default_paths_do_not_collide() -> None:
    a, b = load_sample(), load_sample()
    try:
        assert a.path != b.path
        assert Path(a.path).is_file() and Path(b.path).is_file()
    finally:
        a.close()
        b.close()


def test_load_sample_rejects_a_folder_that_is_not_a_sample(tmp_path: Path) -> None:
    (tmp_path / "journal.jsonl").write_text("")
    with pytest.raises(BadInputError, match=r"missing keys\.json, completions\.jsonl"):
        load_sample(tmp_path / "db.duckdb", sample=tmp_path)


# -- run_sample_extractions --------------------------------------------------------


def test_run_sample_extractions_runs_all_three(loaded: Store) -> None:
    runs = loaded.sql(
        "SELECT run_id, extractor_id, status, policy, extraction_min_salience FROM extraction_runs "
        "ORDER BY run_id").df()
    assert sorted(runs["extractor_id"]) == sorted(SAMPLE_EXTRACTORS)
    assert set(runs["status"]) == {"finished"}
    assert set(runs["policy"]) == {"model-scored"}
    assert set(runs["extraction_min_salience"]) == {0.70}
    assert set(runs["run_id"]) == {sample_run_id(e) for e in SAMPLE_EXTRACTORS}


def test_run_sample_extractions_is_idempotent(loaded: Store) -> None:
    before = loaded.counts()
    again = run_sample_extractions(loaded)
    after = loaded.counts()
    for table in ("candidates", "memory_entries", "events", "verdict_errors", "extraction_runs"):
        assert after[table] == before[table], table
    assert again["sim-good-v1"].n_lessons == 414  # the DATASHEET's good extractor at 0.70
    assert again["sim-good-v1"].status == "finished"


def test_run_sample_extractions_unknown_extractor(loaded: Store) -> None:
    with pytest.raises(BadInputError, match="no recorded completions for extractor 'nope'"):
        run_sample_extractions(loaded, extractors=["nope"])


def test_sample_run_id_names_policy_and_threshold() -> None:
    assert sample_run_id("sim-good-v1", "on", 0.5) == "sample-sim-good-v1-on-0.50"


def test_verdict_payloads(loaded: Store) -> None:
    v = verdict_payloads(loaded)
    assert len(v) == 1200
    assert list(v.columns) == ["verdict_seq", "verdict_hash", "payload"]
    assert v["verdict_seq"].is_monotonic_increasing
    assert {"goal", "verdict", "checks"} <= set(json.loads(v["payload"].iat[0]))


# -- copy_store ---------------------------------------------------------------------


def test_copy_store_is_independent(loaded: Store, tmp_path: Path) -> None:
    copy = copy_store(loaded, tmp_path / "copy.duckdb")
    try:
        assert copy.counts() == loaded.counts()
        copy.sql("UPDATE journal SET payload = json_merge_patch(payload, ?::JSON) WHERE seq = 3",
                 ['{"summary": "rewritten"}'])
        bad = verify_chain(copy)
        assert not bad.ok and bad.first_bad_seq == 3
        assert verify_chain(loaded).ok  # the original is untouched
    finally:
        copy.close()


def test_copy_store_refuses_an_existing_file(loaded: Store, tmp_path: Path) -> None:
    (tmp_path / "there.duckdb").write_bytes(b"")
    with pytest.raises(StoreError, match="already exists"):
        copy_store(loaded, tmp_path / "there.duckdb")
    link = tmp_path / "link.duckdb"
    link.symlink_to(tmp_path / "elsewhere.duckdb")  # dangling: exists() is False
    with pytest.raises(BadInputError, match="is a symbolic link"):
        copy_store(loaded, link)
    assert not (tmp_path / "elsewhere.duckdb").exists()


def test_copy_store_of_an_in_memory_store() -> None:
    with Store(":memory:") as store:
        store.sql("INSERT INTO labels VALUES ('h', 'e', 0, 1, 'a', 's', now())")
        copy = copy_store(store)
        try:
            assert copy.counts() == store.counts()
            assert copy.path != ":memory:"
        finally:
            copy.close()


# -- the notebooks ------------------------------------------------------------------


def test_the_four_notebooks_exist() -> None:
    names = [p.stem for p in IPYNBS]
    assert names == ["01_quickstart", "02_tune_extraction_min_salience",
                     "03_extractor_quality", "04_provenance_audit"]
    # The folder JupyterLab opens lists each notebook once; the twins are in py/ and
    # jupytext pairs them there (`jupytext --sync` keeps both).
    assert not list(NOTEBOOKS.glob("*.py"))
    for path in IPYNBS:
        formats = json.loads(path.read_text(encoding="utf-8"))["metadata"]["jupytext"]
        assert formats["formats"] == "ipynb,py//py:percent", path.name


@pytest.mark.parametrize("path", IPYNBS, ids=lambda p: p.stem)
def test_notebook_is_committed_without_outputs(path: Path) -> None:
    nb = json.loads(path.read_text(encoding="utf-8"))
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "code":
            assert cell.get("outputs") == [], f"cell {i} has outputs"
            assert cell.get("execution_count") is None, f"cell {i} has an execution count"


@pytest.mark.parametrize("path", IPYNBS, ids=lambda p: p.stem)
def test_notebook_matches_its_py_percent_twin(path: Path) -> None:
    py_path = twin(path)
    assert py_path.is_file(), f"py/{py_path.name} is missing: jupytext --sync {path.name}"
    nb = jupytext.read(path)
    py = jupytext.read(py_path, fmt="py:percent")

    def cells(book: object, kind: str) -> list[str]:
        return [c.source.strip() for c in book.cells if c.cell_type == kind]  # type: ignore[attr-defined]

    assert cells(nb, "code") == cells(py, "code"), (
        f"{path.name} and py/{py_path.name} differ: run jupytext --sync {path.name}")
    assert cells(nb, "markdown") == cells(py, "markdown")


@pytest.mark.parametrize("path", IPYNBS, ids=lambda p: p.stem)
def test_notebook_is_short_and_explained(path: Path) -> None:
    nb = jupytext.read(path)
    code = [c for c in nb.cells if c.cell_type == "code"]
    markdown = [c for c in nb.cells if c.cell_type == "markdown"]
    assert 6 <= len(code) <= 20
    assert len(markdown) >= len(code) // 2
    # Notebooks find the sample through the package, never through the working directory.
    for c in code:
        assert "datasets/" not in c.source and "../" not in c.source


@pytest.mark.parametrize("path", IPYNBS, ids=lambda p: p.stem)
def test_notebook_starts_with_a_tagged_parameters_cell(path: Path) -> None:
    # papermill injects its values after the cell tagged "parameters"; jupytext keeps
    # the tag in the .py twin (`# %% tags=["parameters"]`).
    for book in (json.loads(path.read_text(encoding="utf-8")),
                 jupytext.reads(twin(path).read_text(encoding="utf-8"),
                                fmt="py:percent")):
        cells = book["cells"] if isinstance(book, dict) else book.cells
        code = [c for c in cells if (c["cell_type"] if isinstance(c, dict) else c.cell_type)
                == "code"]
        first = code[0]
        meta = first["metadata"] if isinstance(first, dict) else first.metadata
        source = first["source"] if isinstance(first, dict) else first.source
        source = "".join(source)
        assert meta.get("tags") == ["parameters"], f"{path.name}: first code cell untagged"
        assert "DB = None" in source
        assert all("tags" not in (c["metadata"] if isinstance(c, dict) else c.metadata)
                   for c in code[1:])
    # the sample is loaded only when no database is given
    nb = jupytext.read(path)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert "notebook_store(DB" in code or "if DB is None" in code


def test_notebook_store_sample_and_own_database(loaded: Store, tmp_path: Path) -> None:
    store, ids = notebook_store(extractors=["sim-good-v1"])
    with store:
        assert ids == [sample_run_id("sim-good-v1")]
    db = tmp_path / "own.duckdb"
    copy_store(loaded, db).close()
    store, ids = notebook_store(db)
    with store:
        assert ids == [sample_run_id(e) for e in SAMPLE_EXTRACTORS]
        assert store.sql("SELECT count(*) FROM journal").fetchall()[0][0] == 1200
    store, ids = notebook_store(db, ids[1])
    with store:
        assert ids == [sample_run_id(SAMPLE_EXTRACTORS[1])]
    with pytest.raises(BadInputError):
        notebook_store(db, ["no-such-run"])
    with pytest.raises(StoreError):
        notebook_store(tmp_path / "missing.duckdb")


def test_threshold_explorer_cell_is_marked() -> None:
    nb = jupytext.read(NOTEBOOKS / "02_tune_extraction_min_salience.ipynb")
    marked = [c.source for c in nb.cells
              if c.cell_type == "code" and c.source.startswith("# threshold-explorer")]
    assert len(marked) == 1
    assert "ThresholdExplorer" in marked[0]
