"""The stored journal is read by seq range, a batch per query (issue 38, item 3): every
entry once, in seq order, whatever gaps the seq has."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.builders.stores import copy_db
from truss_lab.journal._table import journal_batches, journal_columns
from truss_lab.store._store import Store


def _seqs(batches: list) -> list[int]:
    return [s for b in batches for s in b.seq]


@pytest.mark.parametrize("gap", [None, (100, 260), (1, 5), (30, 10_000)])
def test_journal_batches_are_the_stored_entries_by_seq_range(
        sample_unlabelled: Path, tmp_path: Path, gap: tuple[int, int] | None) -> None:
    with Store(copy_db(sample_unlabelled, tmp_path / "lab.duckdb")) as s:
        if gap:  # not a stored journal: a table whose seq has a hole (or ends early)
            s.sql("DELETE FROM journal WHERE seq BETWEEN ? AND ?", gap)
        whole = journal_columns(s)
        batches = list(journal_batches(s, rows=50))
        assert _seqs(batches) == whole.seq and len(whole.seq) > 20
        assert [h for b in batches for h in b.hash] == whole.hash
        assert all(0 < len(b.seq) <= 50 and b.seq[-1] - b.seq[0] < 50 for b in batches)
        assert _seqs(list(journal_batches(s, rows=50, upto_seq=120))) == \
            journal_columns(s, upto_seq=120).seq
        s.sql("DELETE FROM journal")
        assert list(journal_batches(s, rows=50)) == []
