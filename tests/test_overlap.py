"""Extracting while the journal verifies, and writing in groups, change no row."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.builders.stores import sample_template
from truss_lab.core._config import MemoryConfig
from truss_lab.core._errors import ChainError
from truss_lab.extract import _batch
from truss_lab.extract._batch import run_extraction
from truss_lab.extract._extractor import Extractor
from truss_lab.store._runs import run_content_hashes
from truss_lab.store._store import Store

SCORED = MemoryConfig(lesson_extraction="model-scored")
CHUNKS = "SELECT chunk_index, first_seq, last_seq, n_verdicts, n_candidates, n_lessons, " \
         "n_lessons_new, n_errors, provider_calls FROM run_chunks ORDER BY ALL"


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return sample_template(tmp_path_factory.mktemp("ov") / "t.duckdb")


def _run(template: Path, tmp: Path, name: str, executor: str, **kw: object) -> tuple:
    p = tmp / f"{name}.duckdb"
    shutil.copy(template, p)
    with Store(p) as s:
        ext = Extractor.replay(s, "sim-good-v1")
        run_extraction(s, ext, SCORED, run_id="r", progress=False, executor=executor,
                       chunk_size=25, **kw)  # type: ignore[arg-type]
        counts = s.sql("SELECT n_verdicts, n_candidates, n_lessons, n_errors, provider_calls "
                       "FROM extraction_runs").fetchall()
        return (run_content_hashes(s, "r"), s.sql(CHUNKS).fetchall(), counts,
                ext.provider.calls)  # type: ignore[attr-defined]


def test_early_extraction_and_grouped_writes_match_the_chunk_by_chunk_run(
    template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # threads:1 extracts nothing early; with groups of one chunk it writes chunk by chunk
    monkeypatch.setattr(_batch, "_GROUP_VERDICTS", 1)
    want = _run(template, tmp_path, "plain", "threads:1")
    monkeypatch.setattr(_batch, "_GROUP_VERDICTS", 110)  # groups of 4 chunks
    monkeypatch.setattr(_batch, "_EARLY_VERDICTS", 260)  # 10 chunks early, 38 after
    got = _run(template, tmp_path, "overlap", "inline")
    assert got == want
    assert want[2][0][0] == 1200 and len(want[1]) == 48


def test_a_bad_chain_after_the_early_chunks_writes_nothing(
    template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_batch, "_EARLY_VERDICTS", 100)
    p = tmp_path / "bad.duckdb"
    shutil.copy(template, p)
    with Store(p) as s:
        s.sql("UPDATE journal SET payload = json_object('tampered', true) WHERE seq = 900")
        before = s.counts()
        ext = Extractor.replay(s, "sim-good-v1")
        with pytest.raises(ChainError, match="seq 900"):
            run_extraction(s, ext, SCORED, run_id="r", progress=False, chunk_size=25)
        after = s.counts()
        assert {k for k in after if after[k] != before.get(k)} == {"extraction_runs"}
        assert ext.provider.calls == 0  # type: ignore[attr-defined]
