"""The examples of the public docstrings run as doctests, and every docstring is whole.

Every name of ``truss_lab.__all__`` has a numpydoc docstring with Parameters (when it
takes any), See Also and Examples sections, and its examples run here as written. The examples'
convention, stated in the API reference: ``tl`` is ``import truss_lab as tl`` and
``store`` the bundled sample (``tl.load_sample()``) with the replay run ``good`` of
``sim-good-v1`` at the default gate (lessons written); the working folder is empty.
"""

from __future__ import annotations

import doctest
import inspect
from pathlib import Path

import pytest

import truss_lab as tl
from tests.builders.stores import copy_db

DOCUMENTED = [n for n in tl.__all__ if n not in ("__version__", "SAMPLE_DIR")]


def _takes_parameters(obj: object) -> bool:
    try:
        params = inspect.signature(obj).parameters
    except (TypeError, ValueError):
        return False
    return any(p.name not in ("self", "cls") for p in params.values())


@pytest.fixture(scope="module")
def good_store(sample_full: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = copy_db(sample_full, tmp_path_factory.mktemp("doc") / "good.duckdb")
    with tl.Store(path) as store:
        tl.run_extraction(store, tl.Extractor.replay(store, "sim-good-v1"),
                          tl.MemoryConfig(lesson_extraction="model-scored"),
                          run_id="good", progress=False)
    return path


@pytest.mark.parametrize("name", DOCUMENTED)
def test_docstring_has_its_sections(name: str) -> None:
    doc = inspect.getdoc(getattr(tl, name)) or ""
    wanted = ["See Also", "Examples"]
    if _takes_parameters(getattr(tl, name)):
        wanted.append("Parameters")
    missing = [s for s in wanted if f"\n{s}\n{'-' * len(s)}\n" not in f"\n{doc}\n"]
    assert not missing, (name, missing)


@pytest.mark.parametrize("name", DOCUMENTED)
def test_examples_run(name: str, good_store: Path, tmp_path: Path,
                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    obj = getattr(tl, name)
    tests = [t for t in doctest.DocTestFinder(recurse=False).find(obj, name) if t.examples]
    assert tests, f"{name} has no example"
    with tl.Store(copy_db(good_store, tmp_path / "store.duckdb")) as store:
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS
                                       | doctest.NORMALIZE_WHITESPACE)
        for test in tests:
            test.globs = {"tl": tl, "store": store}
            runner.run(test)
        assert runner.failures == 0, f"{name}: {runner.failures} example(s) failed (above)"
