"""One evaluation spec (issue 34): the truth, its matcher, correction and the people's rows
travel as one frozen :class:`Truth`, resolved once per command; a run is read by one store
call; the loose keywords of before still work for one release, with a DeprecationWarning."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import truss_lab as tl
from tests.builders.stores import copy_db
from truss_lab.core._errors import BadInputError
from truss_lab.evaluate._runs import compare_runs, evaluate_run, sweep_run
from truss_lab.evaluate._truth import Truth
from truss_lab.faces._notebook import sample_run_id
from truss_lab.store._store import Store

GOOD = sample_run_id("sim-good-v1")


@pytest.fixture
def store(sample_good_run: Path, tmp_path: Path) -> Iterator[Store]:
    with Store(copy_db(sample_good_run, tmp_path / "lab.duckdb"), read_only=True) as s:
        yield s


class _Counting:
    """The store's DuckDB connection, counting every statement sent through it."""

    def __init__(self, con: Any) -> None:
        self.inner, self.calls = con, []

    def execute(self, query: str, params: Any = None) -> Any:
        self.calls.append((query, list(params or [])))
        return self.inner.execute(query, params) if params is not None else \
            self.inner.execute(query)

    def sql(self, query: str, *args: Any, **kw: Any) -> Any:
        self.calls.append((query, []))
        return self.inner.sql(query, *args, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _statements(store: Store, call: Any) -> tuple[Any, list[tuple[str, list]]]:
    con = _Counting(store.con)
    store.con = con  # type: ignore[assignment]
    try:
        out = call()
    finally:
        store.con = con.inner
    return out, con.calls


@pytest.mark.parametrize("bands", [False, True])
def test_sweep_by_corrected_references_reads_the_run_once(store: Store, bands: bool) -> None:
    # What `truss-lab sweep RUN --truth references --correct ppi` asks of the library
    # (bands with --plot). Before issue 34 it sent 9 statements, 7 of them looking the
    # same run up (counts, row x3, processed verdicts x2, candidates).
    ev, calls = _statements(store, lambda: evaluate_run(
        store, GOOD, truth=Truth.references(correct="ppi"), n_boot=20, bands=bands))
    assert ev.correction.startswith("ppi (people answered for")
    with_run = [q for q, params in calls if GOOD in params]
    assert len(with_run) == 3, with_run  # run_record: the row, its verdicts, its candidates
    assert len(calls) == 5, calls  # and the reference lessons and the match labels, once


def test_the_truth_is_one_frozen_value_with_a_readable_repr() -> None:
    t = tl.Truth.references(matcher="semantic", correct="ppi")
    assert repr(t) == ("Truth.references(matcher='semantic', correct='ppi', references=store, "
                       "match_labels=store)")
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.correct = "none"  # type: ignore[misc]
    frame = pd.DataFrame({"verdict_hash": ["v"], "extractor": ["e"], "lesson_index": [0],
                          "useful": [1]})
    assert repr(Truth.judge("sim-judge-v1@judge-v1", labels=frame)) == (
        "Truth.judge('sim-judge-v1@judge-v1', correct='auto', labels=<DataFrame 1 rows>, "
        "ties='exclude')")
    assert repr(Truth.labels("gold.csv")) == "Truth.labels(labels='gold.csv', ties='exclude')"
    assert Truth.parse("judge:x@p").source == Truth.judge("x@p").source == "judge:x@p"
    assert Truth.parse(None).source == "auto"


@pytest.mark.parametrize("bad", [{"source": "gold"}, {"correct": "maybe"},
                                 {"ties": "coin"}, {"matcher": "judge:replay:m"}])
def test_a_bad_part_is_refused_where_the_truth_is_made(bad: dict[str, Any]) -> None:
    with pytest.raises(BadInputError) as exc:
        Truth(**bad)
    assert exc.value.field == next(iter(bad)).replace("source", "truth")


def test_resolved_once_names_its_choice_and_is_reused(store: Store) -> None:
    t = Truth.resolve(store, Truth.auto(), [GOOD])
    assert (t.name, t.why) == ("labels", "every run has gold labels")
    assert repr(t).endswith("-> labels (every run has gold labels)")
    assert Truth.resolve(store, t, [GOOD]) is t  # a command passes it along, never re-read
    assert Truth.auto().store is None  # resolving made a new value; the spec is unchanged


def test_the_loose_keywords_still_work_with_a_deprecation_warning(store: Store) -> None:
    new = sweep_run(store, GOOD, truth=Truth.references(correct="none"), thresholds=[0.7])
    with pytest.warns(DeprecationWarning, match=r"sweep_run\(\.\.\., correct=\.\.\.\) is "
                      r"deprecated: the truth is one value, truth=Truth\.references\("):
        old = sweep_run(store, GOOD, truth="references", correct="none", thresholds=[0.7])
    pd.testing.assert_frame_equal(old, new)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        compare_runs(store, GOOD, GOOD, truth=Truth.labels(), n_boot=10)
    with pytest.raises(TypeError, match="unexpected keyword argument 'referencez'"):
        sweep_run(store, GOOD, referencez=None)
