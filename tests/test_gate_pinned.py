"""The gate's tables, pinned: ids and rows for fixed inputs, as the gate wrote them
before its fast path (a digest of every table, and the ids recomputed the slow way).

If a digest here changes, stored bytes would change: a rerun or resume of an older
run would no longer find its rows (ids) or would write different ones.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.builders.profiles import examples
from truss_lab.core._config import MemoryConfig
from truss_lab.core._ids import candidate_id, derive_id, lesson_id
from truss_lab.extract import _gate
from truss_lab.extract._extractor import ExtractionRows, empty_candidates
from truss_lab.extract._gate import gated_tables
from truss_lab.extract._parser import ParsedLesson, candidates_frame, parse_completion
from truss_lab.store._governed import MEMORY_WRITE, memory_event_rows

NOW = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
H = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(6)]


def _lessons(*items: Any) -> str:
    return json.dumps({"lessons": list(items)})


COMPLETIONS = [
    _lessons({"text": "Pin the timezone", "salience": 0.9, "evidence": ["check:tz"]},
             {"text": "low", "salience": 0.1},
             {"text": "", "salience": 0.8},
             {"text": "no salience"}),
    _lessons({"text": " exactly at the bar ", "salience": 0.7, "evidence": []},
             "not an object",
             {"text": "é unicode ✓", "salience": 1.0, "evidence": ["a", "b"]}),
    _lessons({"text": "zero", "salience": 0.0}),
    _lessons({"text": "out of range", "salience": 1.5},
             {"text": "ev bad", "salience": 0.9, "evidence": [1]}),
]


def _rows(samples: int = 1) -> ExtractionRows:
    results = []
    for v, text in enumerate(COMPLETIONS):
        for s in range(samples):
            results.append(({"verdict_seq": v + 1, "verdict_hash": H[v],
                             "extractor_id": "ext-1", "sample_index": s},
                            parse_completion(text)))
    c = candidates_frame(results)
    c["prompt_version"] = "lesson-v1"
    c["n_samples"] = samples
    errors = pd.DataFrame({"verdict_seq": [9], "verdict_hash": [H[5]], "stage": ["parse"],
                           "reason": ["not_json"], "message": ["no JSON"],
                           "sample_index": [0]})
    return ExtractionRows(c, errors, 4, [], samples)


def _missing(column: str) -> Any:
    def rows() -> ExtractionRows:
        r = _rows()
        r.candidates.loc[0, column] = np.nan  # row 0 is valid and passes
        return r
    return rows


def _odd_rows() -> ExtractionRows:
    """Object columns, missing values, float sample indexes: the generic path."""
    c = pd.DataFrame({
        "verdict_seq": [1, 2, 3, 4],
        "verdict_hash": pd.Series([H[0], H[1], H[2], H[3]], dtype=object),
        "extractor_id": pd.Series(["ext-2", "ext-2", "ext-2", "ext-2"], dtype=object),
        "sample_index": [0.0, np.nan, 2.0, 0.0],
        "lesson_index": pd.Series([0, 1, 2, 3], dtype=object),
        "text": pd.Series(["kept", None, 5, np.nan], dtype=object),
        "salience": [0.9, 0.95, 0.99, 0.8],
        "evidence": pd.Series([["x"], ("y", "z"), [], []], dtype=object),
        "valid": [True, True, True, True],
        "drop_reason": pd.Series([None, np.nan, None, "why"], dtype=object),
    })
    return ExtractionRows(c, pd.DataFrame(columns=["verdict_seq", "verdict_hash", "stage",
                                                   "reason", "message"]), 0, [], 1)


def _digest(tables: tuple[pa.Table, ...]) -> str:
    h = hashlib.sha256()
    for t in tables:
        h.update(str(t.schema).encode())
        h.update(repr(t.to_pylist()).encode())
    return h.hexdigest()[:16]


CASES: list[tuple[str, Any, dict[str, Any], str]] = [
    ("scored", _rows, {"config": MemoryConfig(lesson_extraction="model-scored")},
     "07781bdd47674bb2"),
    ("on", _rows, {"config": MemoryConfig(lesson_extraction="on")}, "2fc1dbfde386bf05"),
    ("off", _rows, {"config": MemoryConfig(lesson_extraction="off")}, "10f7d63276949aa9"),
    ("no-write", _rows, {"config": MemoryConfig(lesson_extraction="on"),
                         "write_memory": False}, "737d199e4656111d"),
    ("score-fn", _rows, {"config": MemoryConfig(lesson_extraction="model-scored"),
                         "score": lambda c: np.where(c["lesson_index"] % 2 == 0, 0.9, np.nan),
                         "scorer_name": "custom@1"}, "ae77e939dd7f91cd"),
    ("k=3", lambda: _rows(3), {"config": MemoryConfig(lesson_extraction="on")}, "f4cfe8df6b26c503"),
    ("empty", lambda: ExtractionRows(empty_candidates(), _rows().errors, 1, [], 1),
     {"config": MemoryConfig(lesson_extraction="on")}, "fc08920766363a7c"),
    ("no-text", _missing("text"), {"config": MemoryConfig(lesson_extraction="on")},
     "199b0ffa541523c6"),
    ("odd", _odd_rows, {"config": MemoryConfig(lesson_extraction="on")}, "146e1ac722a5b5d0"),
]


@pytest.mark.parametrize(("name", "rows", "kwargs", "pinned"), CASES, ids=[c[0] for c in CASES])
def test_gated_tables_pinned(monkeypatch, name, rows, kwargs, pinned) -> None:
    monkeypatch.setattr(_gate, "utcnow", lambda: NOW)
    kwargs = dict(kwargs)  # CASES is shared with the test below
    config = kwargs.pop("config")
    cand, mem, err = gated_tables(rows(), config, run_id="run-pin", **kwargs)
    events = memory_event_rows(mem)
    assert _digest((cand, mem, err, events)) == pinned, name


@pytest.mark.parametrize("samples", [1, 3])
def test_ids_are_the_slow_ids(samples: int) -> None:
    cand, mem, _ = gated_tables(_rows(samples), MemoryConfig(lesson_extraction="on"),
                                run_id="r")
    rows = cand.to_pylist()
    keys = [(r["verdict_hash"], r["extractor_id"], r["lesson_index"], r["sample_index"])
            for r in rows]
    assert [r["candidate_id"] for r in rows] == [candidate_id(*k) for k in keys]
    written = [lesson_id(*k) for r, k in zip(rows, keys, strict=True) if r["entry_id"]]
    assert [r["entry_id"] for r in rows if r["entry_id"]] == written
    assert mem.column("entry_id").to_pylist() == written
    events = memory_event_rows(mem).column("event_id").to_pylist()
    assert events == [derive_id("ev", MEMORY_WRITE, i) for i in written]
    assert len(written) and len(written) < len(rows)


_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=8)


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.tuples(_text, _text, st.integers(0, 2**31 - 1), st.integers(0, 2**31 - 1)),
                max_size=6))
def test_key_digests_match_derive_id(keys: list[tuple[str, str, int, int]]) -> None:
    from truss_lab.core._ids import key_digests

    got = key_digests([k[0] for k in keys], [k[1] for k in keys], [k[2] for k in keys],
                      [k[3] for k in keys])
    assert ["cand-" + d for d in got] == [candidate_id(*k) for k in keys]
    assert ["lesson-" + d for d in got] == [lesson_id(*k) for k in keys]


class _Str(str):
    def __str__(self) -> str:
        return "other"


@pytest.mark.parametrize("key", [
    (np.str_("ab"), "e", np.int64(3), np.int64(0)),
    ("ab", "e", 2.0, 1.0),
    ("ab", "e", True, False),
    (None, 5, 1, 0),
    (_Str("ab"), "e", 0, 0),
    ("ab", _Str("e"), 0, 2),
    ("ab", "e", -1, -2),
])
def test_key_digests_hostile_types(key: tuple[Any, Any, Any, Any]) -> None:
    from truss_lab.core._ids import key_digests

    for keys in ([key], [("cd", "e", 1, 0), key]):
        got = key_digests(*(list(col) for col in zip(*keys, strict=True)))
        assert ["cand-" + d for d in got] == [candidate_id(*k) for k in keys]


def test_a_missing_prompt_version_is_refused_as_before() -> None:
    with pytest.raises(pa.ArrowTypeError, match="Expected bytes, got a 'float' object"):
        gated_tables(_missing("prompt_version")(), MemoryConfig(lesson_extraction="on"),
                     run_id="r")


def _column_rows(samples: int = 1, lessons: Any = None) -> ExtractionRows:
    """The rows of :func:`_rows` as replay's bulk path returns them: gathered columns,
    no frame (the gate reads the columns; the frame is built only when asked for)."""
    from truss_lab.extract._parser import CandidateColumns

    cols = CandidateColumns(("verdict_seq", "verdict_hash", "extractor_id", "sample_index"),
                            {"prompt_version": "lesson-v1", "n_samples": samples})
    for v, text in enumerate(COMPLETIONS):
        for s in range(samples):
            got = parse_completion(text).lessons if lessons is None else lessons[v]
            cols.add((v + 1, H[v], "ext-1", s), got)
    return ExtractionRows(cols, _rows().errors, 4, [], samples)


@pytest.mark.parametrize(("name", "rows", "kwargs", "pinned"),
                         [c for c in CASES if c[1] is _rows],
                         ids=[c[0] for c in CASES if c[1] is _rows])
def test_the_gate_reads_gathered_columns_as_it_reads_their_frame(
        monkeypatch, name, rows, kwargs, pinned) -> None:
    monkeypatch.setattr(_gate, "utcnow", lambda: NOW)
    kwargs = dict(kwargs)
    config = kwargs.pop("config")
    rows = _column_rows()
    cand, mem, err = gated_tables(rows, config, run_id="run-pin", **kwargs)
    assert _digest((cand, mem, err, memory_event_rows(mem))) == pinned, name
    if "score" not in kwargs:  # a score function reads the frame, so one was built
        assert rows.columns is not None


_lesson = st.builds(
    lambda i, text, sal, valid, ev: ParsedLesson(
        i, text, None if sal is None else sal, tuple(ev), valid, None if valid else "why"),
    st.integers(0, 3), st.one_of(st.none(), _text, st.integers(0, 9)),
    st.one_of(st.none(), st.floats(0, 1), st.just(float("nan"))), st.booleans(),
    st.lists(_text, max_size=2))


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(st.lists(_lesson, max_size=3), min_size=len(COMPLETIONS),
                max_size=len(COMPLETIONS)),
       st.sampled_from(["on", "model-scored", "off"]), st.booleans())
def test_gathered_columns_with_any_values_gate_as_their_frame(
        lessons: list[list[Any]], policy: str, write: bool) -> None:
    """Texts that are None or not str, NaN or missing salience, any validity: where
    the columns' values are not plain the gate falls back to the frame; either way the
    tables are the frame's, byte for byte."""
    config = MemoryConfig(lesson_extraction=policy)
    rows = _column_rows(lessons=lessons)
    frame = ExtractionRows(rows.columns.frame(), rows.errors, 4, [], 1)  # type: ignore[union-attr]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_gate, "utcnow", lambda: NOW)
        try:
            want = gated_tables(frame, config, run_id="r", write_memory=write)
        except (pa.ArrowException, TypeError, ValueError) as exc:
            with pytest.raises(type(exc)):
                gated_tables(rows, config, run_id="r", write_memory=write)
            return
        got = gated_tables(rows, config, run_id="r", write_memory=write)
    for a, b in zip(got, want, strict=True):
        assert a.schema == b.schema
        assert a.to_pylist() == b.to_pylist() or repr(a.to_pylist()) == repr(b.to_pylist())
