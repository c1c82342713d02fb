"""sweep_parquet (DuckDB over partitioned Parquet) equals the in-memory sweep exactly."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from truss_lab.core._errors import BadInputError
from truss_lab.evaluate._sweep import sweep, sweep_parquet


def _write(folder: Path, y: np.ndarray, s: np.ndarray, parts: int) -> str:
    part = np.arange(len(y)) % parts
    for k in range(parts):
        d = folder / f"part={k}"
        d.mkdir(parents=True)
        pq.write_table(pa.table({"salience": s[part == k], "y_true": y[part == k]}),
                       d / "c.parquet")
    return str(folder / "**" / "*.parquet")


@pytest.mark.parametrize("rounding", [None, 2, 3])
def test_equals_the_in_memory_sweep(tmp_path: Path, rounding: int | None) -> None:
    rng = np.random.default_rng(7)
    n = 50_000
    s = rng.random(n) * 2 - 0.5  # negatives too
    if rounding is not None:
        s = np.round(s, rounding)  # ties
    s[rng.random(n) < 0.01] = np.nan
    s[:3] = [-0.0, 0.0, -0.0]
    y = (rng.random(n) < np.nan_to_num(s, nan=0.3)).astype(np.int8)
    got = sweep_parquet(_write(tmp_path, y, s, 5), memory_limit="200MB", threads=2)
    want = sweep(y, s)
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert (got["threshold"] == 0).sum() == 1


def test_degenerate_input_warns_as_sweep_does(tmp_path: Path) -> None:
    y = np.zeros(10, dtype=np.int8)
    s = np.linspace(0, 1, 10)
    with warnings.catch_warnings(record=True) as got_w:
        warnings.simplefilter("always")
        got = sweep_parquet(_write(tmp_path, y, s, 2))
        want = sweep(y, s)
    assert [str(w.message) for w in got_w].count(
        "y_true has no positive labels: recall is undefined (NaN)") == 2
    pd.testing.assert_frame_equal(got, want, check_exact=True)


def test_a_missing_column_is_a_clear_error(tmp_path: Path) -> None:
    path = _write(tmp_path, np.ones(4, np.int8), np.ones(4), 1)
    with pytest.raises(BadInputError, match="cannot sweep the Parquet candidates"):
        sweep_parquet(path, salience="score")
