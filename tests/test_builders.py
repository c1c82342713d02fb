"""The shared builders (tests/builders/) agree with each other."""

from __future__ import annotations

from tests.builders.chains import chain_columns, make_chain
from truss_lab.journal._spec import JournalColumns


def test_both_chain_makers_build_the_same_chain() -> None:
    # chain_columns (the 200k-entry benchmark chain) must be make_chain's chain.
    fast = chain_columns(70, workers=2)
    assert fast.to_pydict() == JournalColumns.from_entries(make_chain(70)).to_pydict()
