"""The threshold sweep of candidates stored as (partitioned) Parquet, computed in DuckDB.

For candidates too many for memory, :func:`sweep_parquet` gives the frame of
:func:`~truss_lab.evaluate._sweep.sweep` with default thresholds (every distinct
salience, descending) from SQL: one ``GROUP BY salience`` of counts and positives,
then cumulative sums over the groups in descending order. DuckDB streams the
files and spills to disk past ``memory_limit``, so the memory needed grows with
the number of distinct saliences, not of candidates. The same conventions as
:func:`sweep`: NaN (or NULL) salience is never kept but counts in ``n`` and,
when labelled 1, in the positives; -0.0 and 0.0 are one threshold.
"""

from __future__ import annotations

import os
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from ..core._errors import BadInputError
from ..store._store import quote_ident
from ._sweep import _warn_degenerate, metrics_from_counts

__all__ = ["sweep_parquet"]


def sweep_parquet(
    files: str | os.PathLike[str] | list[str],
    *,
    salience: str = "salience",
    label: str = "y_true",
    memory_limit: str | None = None,
    threads: int | None = None,
    temp_directory: str | os.PathLike[str] | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
) -> pd.DataFrame:
    """:func:`sweep` (default thresholds, no groups) of the candidates in Parquet ``files``.

    ``files``: a path, a glob (``"cands/**/*.parquet"``, hive partitions allowed) or
    a list of them; ``salience`` and ``label`` name the columns (label 0/1 or
    boolean). ``memory_limit`` (e.g. ``"1GB"``), ``threads`` and ``temp_directory``
    (where DuckDB spills) set DuckDB for this call, on a connection of its own
    unless ``con`` is given.
    """
    sources = [str(f) for f in files] if isinstance(files, list) else [str(files)]
    own = con is None
    c = duckdb.connect() if own else con
    try:
        if memory_limit is not None:
            c.execute("SET memory_limit = ?", [str(memory_limit)])
        if threads is not None:
            c.execute("SET threads = ?", [int(threads)])
        if temp_directory is not None:
            c.execute("SET temp_directory = ?", [str(temp_directory)])
        s, y = quote_ident(salience), quote_ident(label)
        src = "read_parquet(?, hive_partitioning = true)"
        try:
            n, n_pos = c.execute(
                f"SELECT count(*), coalesce(sum({y}::BIGINT), 0) FROM {src}", [sources]
            ).fetchall()[0]
            # Every distinct scored salience with its counts, then running sums from the
            # top: kept / tp at each threshold. 0.0 stands for -0.0 (one threshold).
            rows = c.execute(f"""
                WITH g AS (
                    SELECT CASE WHEN {s} = 0 THEN 0.0::DOUBLE ELSE {s}::DOUBLE END AS t,
                           count(*) AS k, sum({y}::BIGINT) AS p
                    FROM {src}
                    WHERE {s} IS NOT NULL AND NOT isnan({s}::DOUBLE)
                    GROUP BY 1)
                SELECT t, sum(k) OVER w AS kept, sum(p) OVER w AS tp FROM g
                WINDOW w AS (ORDER BY t DESC ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
                ORDER BY t DESC""", [sources]).fetchnumpy()
        except duckdb.Error as exc:
            raise BadInputError(f"cannot sweep the Parquet candidates: {exc}",
                                source=", ".join(sources), field=f"{salience}, {label}") from None
    finally:
        if own:
            c.close()
    thr = np.asarray(rows["t"], dtype=np.float64)
    kept = np.asarray(rows["kept"], dtype=np.int64)
    tp = np.asarray(rows["tp"], dtype=np.int64)
    n, n_pos = int(n), int(n_pos)
    _warn_degenerate(n, n_pos, int(kept[-1]) if len(kept) else 0)
    m = metrics_from_counts(kept, tp, n, n_pos)
    cols: dict[str, Any] = {"threshold": thr, "kept": kept, "tp": tp, "fp": kept - tp,
                            "fn": n_pos - tp, **{k: m[k] for k in ("precision", "recall", "f1",
                                                                   "write_rate")}}
    return pd.DataFrame(cols, copy=False)
