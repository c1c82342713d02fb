"""Extracting while the journal verifies, and writing in groups, change no row."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.builders.stores import copy_db
from truss_lab.core._config import MemoryConfig
from truss_lab.core._errors import ChainError
from truss_lab.extract import _batch, _gate
from truss_lab.extract._batch import run_extraction
from truss_lab.extract._extractor import Extractor
from truss_lab.store._runs import run_content_hashes
from truss_lab.store._store import Store

SCORED = MemoryConfig(lesson_extraction="model-scored")
CHUNKS = "SELECT chunk_index, first_seq, last_seq, n_verdicts, n_candidates, n_lessons, " \
         "n_lessons_new, n_errors, provider_calls FROM run_chunks ORDER BY ALL"


@contextmanager
def gc_paused() -> Iterator[None]:
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _run(sample_unlabelled: Path, tmp: Path, name: str, executor: str, **kw: object) -> tuple:
    p = tmp / f"{name}.duckdb"
    copy_db(sample_unlabelled, p)
    with Store(p) as s:
        ext = Extractor.replay(s, "sim-good-v1")
        run_extraction(s, ext, SCORED, run_id="r", progress=False, executor=executor,
                       chunk_size=25, **kw)  # type: ignore[arg-type]
        counts = s.sql("SELECT n_verdicts, n_candidates, n_lessons, n_errors, provider_calls "
                       "FROM extraction_runs").fetchall()
        return (run_content_hashes(s, "r"), s.sql(CHUNKS).fetchall(), counts,
                ext.provider.calls)  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def plain(sample_unlabelled: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple:
    """The run written chunk by chunk after verification, what every other way must
    give: threads:1 extracts nothing early, and groups of one chunk write chunk by chunk.
    Once per module (the tests compared against it each ran it)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_batch, "_GROUP_VERDICTS", 1)
        return _run(sample_unlabelled, tmp_path_factory.mktemp("plain"), "plain", "threads:1")


def test_early_extraction_and_grouped_writes_match_the_chunk_by_chunk_run(
    sample_unlabelled: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plain: tuple
) -> None:
    want = plain
    monkeypatch.setattr(_batch, "_GROUP_VERDICTS", 110)  # groups of 4 chunks
    monkeypatch.setattr(_batch, "_EARLY_VERDICTS", 260)  # 10 chunks early, 38 after
    got = _run(sample_unlabelled, tmp_path, "overlap", "inline")
    assert got == want
    assert want[2][0][0] == 1200 and len(want[1]) == 48


def _spy_held(monkeypatch: pytest.MonkeyPatch) -> dict[str, list]:
    """Record each held write (the chunks it wrote, uncommitted) and each commit."""
    seen: dict[str, list] = {"writes": [], "commits": []}
    flush, commit = _gate.HeldWrites.flush, _gate.HeldWrites.commit

    def spy_flush(self: _gate.HeldWrites) -> None:
        seen["writes"].append([g.index for g in self._group])
        flush(self)

    def spy_commit(self: _gate.HeldWrites) -> set[int]:
        got = commit(self)
        seen["commits"].append(got)
        return got

    monkeypatch.setattr(_gate.HeldWrites, "flush", spy_flush)
    monkeypatch.setattr(_gate.HeldWrites, "commit", spy_commit)
    return seen


def _held_in_groups(monkeypatch: pytest.MonkeyPatch) -> dict[str, list]:
    """Set up 10 chunks extracted early and written in groups of 4, with the held
    writes spied."""
    seen = _spy_held(monkeypatch)
    monkeypatch.setattr(_batch, "_GROUP_VERDICTS", 110)  # groups of 4 chunks
    monkeypatch.setattr(_batch, "_EARLY_VERDICTS", 260)  # 10 chunks early
    return seen


def test_the_early_chunks_are_written_during_verification_and_committed_after(
    sample_unlabelled: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plain: tuple
) -> None:
    seen = _held_in_groups(monkeypatch)
    assert _run(sample_unlabelled, tmp_path, "held", "inline") == plain
    # 4 + 4 while the journal was read, the last 2 once it was; all committed
    assert [w for w in seen["writes"] if w] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert seen["commits"] == [set(range(10))]


def test_a_bad_chain_after_the_early_chunks_writes_nothing(
    sample_unlabelled: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _spy_held(monkeypatch)
    monkeypatch.setattr(_batch, "_EARLY_VERDICTS", 100)  # 4 chunks extracted early
    monkeypatch.setattr(_batch, "_GROUP_VERDICTS", 50)  # and written in groups of 2
    p = tmp_path / "bad.duckdb"
    copy_db(sample_unlabelled, p)
    with Store(p) as s:
        s.sql("UPDATE journal SET payload = json_object('tampered', true) WHERE seq = 900")
        before = s.counts()
        ext = Extractor.replay(s, "sim-good-v1")
        with pytest.raises(ChainError, match="seq 900"):
            run_extraction(s, ext, SCORED, run_id="r", progress=False, chunk_size=25)
        assert [w for w in seen["writes"] if w] == [[0, 1], [2, 3]]  # then rolled back
        assert seen["commits"] == []
        after = s.counts()
        # The run's row and its integrity claim (what it wrote: nothing) are all it leaves.
        assert {k for k in after if after[k] != before.get(k)} == {"extraction_runs",
                                                                   "content_claims"}
        assert ext.provider.calls == 0  # type: ignore[attr-defined]
        assert s.sql("SELECT status, n_verdicts FROM extraction_runs").fetchall() == [
            ("failed", 0)]


def test_a_failed_held_write_falls_back_to_writing_after_verification(
    sample_unlabelled: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plain: tuple
) -> None:
    seen = _held_in_groups(monkeypatch)
    real = _gate.write_group
    calls = {"n": 0}

    def second_fails(store: Store, run_id: str, group: list) -> None:
        calls["n"] += 1
        real(store, run_id, group)
        if calls["n"] == 2:  # after its rows went in: the rollback must take them out
            raise OSError("disk full")

    monkeypatch.setattr(_gate, "write_group", second_fails)
    assert _run(sample_unlabelled, tmp_path, "fallback", "inline") == plain
    assert seen["commits"] == [set()]


def test_an_error_during_verification_rolls_back_the_held_writes(
    sample_unlabelled: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plain: tuple
) -> None:
    monkeypatch.setattr(_batch, "_GROUP_VERDICTS", 50)
    real = _batch.extract_chunk
    calls = {"n": 0}

    def fails_late(runner: object, chunk: list) -> object:
        calls["n"] += 1
        if calls["n"] == 7:  # three groups of 2 chunks are written by then
            raise RuntimeError("worker lost")
        return real(runner, chunk)

    monkeypatch.setattr(_batch, "extract_chunk", fails_late)
    p = tmp_path / "err.duckdb"
    copy_db(sample_unlabelled, p)
    with Store(p) as s:
        before = s.counts()
        ext = Extractor.replay(s, "sim-good-v1")
        with pytest.raises(RuntimeError, match="worker lost"):
            run_extraction(s, ext, SCORED, run_id="r", progress=False, chunk_size=25)
        after = s.counts()
        # The run's row and its integrity claim (what it wrote: nothing) are all it leaves.
        assert {k for k in after if after[k] != before.get(k)} == {"extraction_runs",
                                                                   "content_claims"}
        assert s.sql("SELECT status FROM extraction_runs").fetchall() == [("failed",)]
        # the store is whole: the same run resumes and ends as an uninterrupted one
        monkeypatch.setattr(_batch, "extract_chunk", real)
        run_extraction(s, ext, SCORED, run_id="r", progress=False, chunk_size=25,
                       resume=True)
        got = run_content_hashes(s, "r")
    assert got == plain[0]


def test_a_replay_holds_a_few_windows_of_recordings_and_no_written_rows(
    sample_unlabelled: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plain: tuple
) -> None:
    """Memory bounded independently of the verdicts: the replay reads its recordings a
    window at a time and drops them, and a chunk's gated rows are let go once written
    (before, the replay held every recording and the run every chunk extracted while
    the journal verified). Each is counted while a run of 48 chunks of 25 runs, all
    of them extracted during verification, in groups of 4."""
    from truss_lab.extract._extractor import ReplayProvider

    monkeypatch.setattr(_batch, "_GROUP_VERDICTS", 110)  # groups of 4 chunks
    monkeypatch.setattr(_batch, "_EARLY_VERDICTS", 10_000)  # every chunk early
    monkeypatch.setattr(_batch, "_RECORDING_VERDICTS", 100)  # windows of 4 chunks
    most = {"recordings": 0, "gated": 0}
    refs: list[weakref.ref] = []
    hold, gate_chunk = ReplayProvider.hold, _batch.gate_chunk

    def counted_hold(self: ReplayProvider, key: object, hashes: list) -> None:
        hold(self, key, hashes)
        most["recordings"] = max(most["recordings"], len(self._table))

    def counted_gate(*args: object, **kw: object) -> object:
        g = gate_chunk(*args, **kw)
        refs.append(weakref.ref(g))
        most["gated"] = max(most["gated"], sum(r() is not None for r in refs))
        return g

    monkeypatch.setattr(ReplayProvider, "hold", counted_hold)
    monkeypatch.setattr(_batch, "gate_chunk", counted_gate)
    with gc_paused():  # rows are let go when unreferenced, not by a collection
        assert _run(sample_unlabelled, tmp_path, "bounded", "inline") == plain
    assert 0 < most["recordings"] <= 2 * 100  # two windows of 100 verdicts, of 1,200
    assert 0 < most["gated"] <= 4 + 1  # a group of 4 and the chunk just gated, of 48


def test_the_run_writes_with_duckdb_memory_bounded(
    sample_unlabelled: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plain: tuple
) -> None:
    """DuckDB keeps the held write's uncommitted rows, and the pages a run reads and
    writes, in memory up to its limit: every group written, held while the journal
    verifies or after it, is written under :data:`SPILL_LIMIT` (the rest spills to
    disk), and the rows are the same."""
    from truss_lab.store._store import SPILL_LIMIT

    def limit(s: Store) -> str:
        return s.sql("SELECT current_setting('memory_limit')").fetchall()[0][0]

    seen: list[str] = []
    write = _gate.write_group

    def watching(store: Store, run_id: str, group: list) -> None:
        seen.append(limit(store))
        write(store, run_id, group)

    monkeypatch.setattr(_gate, "write_group", watching)
    monkeypatch.setattr(_batch, "write_group", watching)
    _held_in_groups(monkeypatch)  # 10 chunks held while the journal verifies, then 38
    with Store(tmp_path / "bound.duckdb") as s:
        s.con.execute("SET memory_limit = ?", [SPILL_LIMIT])
        bound = limit(s)
    got = _run(sample_unlabelled, tmp_path, "bounded", "inline")
    assert got == plain
    assert len(seen) > 3 and set(seen) == {bound}
