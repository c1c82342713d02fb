"""Full GC collections are deferred during bulk work, and only during it (core/_gc.py)."""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.builders.stores import copy_db
from truss_lab.core import _gc
from truss_lab.core._config import MemoryConfig
from truss_lab.core._gc import full_collections_deferred
from truss_lab.extract._batch import run_extraction
from truss_lab.extract._extractor import Extractor
from truss_lab.store._store import Store

SAMPLE = Path(__file__).resolve().parents[1] / "datasets" / "sample"


@pytest.fixture(autouse=True)
def _thresholds() -> Iterator[tuple[int, int, int]]:
    before = gc.get_threshold()
    yield before
    gc.set_threshold(*before)  # a failing test must not leave the process without full GCs


def _full_collections_while(fn: object) -> int:
    """How many generation-2 collections run while ``fn()`` runs."""
    seen = []

    def cb(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and info["generation"] == 2:
            seen.append(1)

    gc.callbacks.append(cb)
    try:
        fn()  # type: ignore[operator]
    finally:
        gc.callbacks.remove(cb)
    return len(seen)


def _hold_many_containers() -> list[list[int]]:
    # Survivors of the young collections: what makes CPython start full ones.
    held = [[i] for i in range(600_000)]
    return held


def test_full_collections_do_not_run_inside_but_do_outside() -> None:
    gc.collect()
    outside = _full_collections_while(_hold_many_containers)
    gc.collect()

    def inside() -> None:
        with full_collections_deferred():
            _hold_many_containers()

    assert outside >= 1  # the control: this allocation pattern does trigger them
    assert _full_collections_while(inside) == 0


def test_young_collections_still_free_cycles_inside() -> None:
    class Node:
        pass

    freed: list[int] = []
    with full_collections_deferred():
        gc.collect(0)
        a = Node()
        a.self = a  # type: ignore[attr-defined]
        ref = weakref.ref(a, lambda _: freed.append(1))
        del a
        churn = [[] for _ in range(5_000)]  # young allocations: gen-0 collections run
        del churn
        assert ref() is None and freed == [1]


def test_thresholds_are_restored_on_exit_and_on_error(
        _thresholds: tuple[int, int, int]) -> None:
    with full_collections_deferred():
        assert gc.get_threshold()[2] == _gc._DEFERRED
        assert gc.get_threshold()[:2] == _thresholds[:2]
    assert gc.get_threshold() == _thresholds
    with pytest.raises(KeyError), full_collections_deferred():
        raise KeyError("x")
    assert gc.get_threshold() == _thresholds


def test_overlapping_uses_restore_when_the_last_one_ends(
        _thresholds: tuple[int, int, int]) -> None:
    entered, release, done = threading.Event(), threading.Event(), threading.Event()

    def other() -> None:
        with full_collections_deferred():
            entered.set()
            release.wait(10)
        done.set()

    with full_collections_deferred():
        t = threading.Thread(target=other)
        t.start()
        assert entered.wait(10)
    # This use ended first; the other thread's is still running.
    assert gc.get_threshold()[2] == _gc._DEFERRED
    release.set()
    t.join(10)
    assert done.is_set()
    assert gc.get_threshold() == _thresholds


def test_nested_uses_restore_once(_thresholds: tuple[int, int, int]) -> None:
    with full_collections_deferred():
        with full_collections_deferred():
            pass
        assert gc.get_threshold()[2] == _gc._DEFERRED
    assert gc.get_threshold() == _thresholds


def test_a_threshold_changed_inside_is_kept(_thresholds: tuple[int, int, int]) -> None:
    with full_collections_deferred():
        gc.set_threshold(1000, 20, 5)  # someone else's choice, made meanwhile
    assert gc.get_threshold() == (1000, 20, 5)


def test_run_extraction_runs_with_full_collections_deferred(
        sample_unlabelled: Path, tmp_path: Path, _thresholds: tuple[int, int, int]) -> None:
    db = copy_db(sample_unlabelled, tmp_path / "s.duckdb")
    during = []

    def score(c: pd.DataFrame) -> np.ndarray:
        during.append(gc.get_threshold()[2])
        return c["salience"].to_numpy(dtype=np.float64)

    with Store(db) as s:
        run = run_extraction(s, Extractor.replay(s, "sim-good-v1"),
                             MemoryConfig(lesson_extraction="model-scored"),
                             verdicts="seq <= 60", chunk_size=25, progress=False, score=score)
    assert run.status == "finished"
    assert during and set(during) == {_gc._DEFERRED}
    assert gc.get_threshold() == _thresholds


@pytest.mark.parametrize(("name", "reader", "file", "deferred"), [
    # A batch at a time: its frames die in cycles that full collections free.
    ("ingest_completions", "completion_batches", "completions.jsonl", False),
    ("ingest_labels", "label_batches", "labels.csv", False),
    ("ingest_references", "read_references", "references.jsonl", True),
])
def test_ingest_reads_with_full_collections_deferred_while_it_holds_the_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, _thresholds: tuple[int, int, int],
        name: str, reader: str, file: str, deferred: bool) -> None:
    from truss_lab.ingest import _ingest

    during = []
    real = getattr(_ingest, reader)

    def spy(*args: object, **kw: object) -> object:
        during.append(gc.get_threshold()[2])
        return real(*args, **kw)

    monkeypatch.setattr(_ingest, reader, spy)
    with Store(tmp_path / "s.duckdb") as s:
        report = getattr(_ingest, name)(s, SAMPLE / file)
    assert report.rows_added > 0
    assert during == [_gc._DEFERRED if deferred else _thresholds[2]]
    assert gc.get_threshold() == _thresholds
