"""The sweep of candidates stored as partitioned Parquet, in DuckDB, out of core.

Writes N candidates (10M; ``--quick``: 1M; ``--n 100000000`` for the 100M figure)
as hive-partitioned Parquet (16 partitions; salience at 0.001 resolution, a label
drawn with that probability), then times :func:`sweep_parquet` (``GROUP BY
salience`` counts + cumulative sums) in a child process with DuckDB's
``memory_limit`` (default 1GB) and reports its peak RSS. Equality: the DuckDB
sweep of one partition equals the in-memory :func:`sweep` of the same rows,
exactly (value 1 when equal). Baseline for the time: the in-memory sweep of all N
candidates read into numpy (skipped above 20M, where it would not be fair to the
machine's memory), so the ratio shows the price of going out of core.

    .venv/bin/python -m benchmarks.bench_duckdb_sweep [--quick] [--n N] [--memory-limit 1GB]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from benchmarks._result import load_average, result
from truss_lab.evaluate._sweep import sweep, sweep_parquet

ROOT = Path(__file__).resolve().parents[1]
_CHILD = """
import json, resource, sys, time
from truss_lab.evaluate._sweep import sweep_parquet
glob, limit, tmp = sys.argv[1:4]
with open("/proc/self/statm") as f:  # resident pages after the imports
    before = int(f.read().split()[1]) * resource.getpagesize() / 2**20
t = time.perf_counter()
df = sweep_parquet(glob, memory_limit=limit, threads=2, temp_directory=tmp)
secs = time.perf_counter() - t
print(json.dumps({"seconds": secs, "rows": len(df), "kept": int(df["kept"].iloc[-1]),
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "rss_before_mib": before}))
"""


def write_candidates(folder: Path, n: int) -> float:
    t = time.perf_counter()
    con = duckdb.connect()
    con.execute("SET threads = 2")
    con.execute("SELECT setseed(0.11)")
    con.execute(f"""
        COPY (SELECT s AS salience, (random() < s)::TINYINT AS y_true, i % 16 AS part
              FROM (SELECT range AS i, round(random(), 3) AS s FROM range({int(n)})))
        TO '{folder}' (FORMAT parquet, PARTITION_BY (part))""")
    con.close()
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1M candidates instead of 10M")
    ap.add_argument("--n", type=int, default=None)
    ap.add_argument("--memory-limit", default="1GB")
    ap.add_argument("--dir", type=Path, default=None, help="where to write (default: a temp dir)")
    args = ap.parse_args()
    n = args.n or (1_000_000 if args.quick else 10_000_000)
    base = Path(tempfile.mkdtemp(dir=args.dir, prefix="bench_duckdb_sweep_"))
    try:
        data = base / "cands"
        gen = write_candidates(data, n)
        size = sum(p.stat().st_size for p in data.rglob("*.parquet"))
        print(f"{n:,} candidates as 16 Parquet partitions ({size / 2**20:,.0f} MiB) in "
              f"{gen:.1f}s; load {load_average():.2f}")
        glob = str(data / "**" / "*.parquet")
        (base / "spill").mkdir()
        child = subprocess.run([sys.executable, "-c", _CHILD, glob, args.memory_limit,
                                str(base / "spill")], capture_output=True, text=True,
                               cwd=ROOT, check=True)
        got = json.loads(child.stdout.strip().splitlines()[-1])
        assert got["kept"] == n, got
        print(f"DuckDB sweep: {got['seconds']:.2f}s, {got['rows']:,} thresholds, peak RSS "
              f"{got['peak_rss_mib']:,.0f} MiB ({got['rss_before_mib']:,.0f} MiB before it, "
              f"after the imports; memory_limit {args.memory_limit})")

        parts = sorted((data / "part=3").glob("*.parquet"))
        one = pd.concat([pq.read_table(p).to_pandas() for p in parts])
        equal = sweep_parquet([str(p) for p in parts]).equals(
            sweep(one["y_true"].to_numpy(), one["salience"].to_numpy()))
        print(f"equal to the in-memory sweep on partition 3 ({len(one):,} rows): {equal}")
        result(f"sweep_parquet == sweep on a {len(one):,}-row partition", float(equal), "bool",
               baseline=1.0, ratio=float(equal), goal=">= 1",
               baseline_name="in-memory sweep of the same rows")
        base_t = None
        if n <= 20_000_000:
            t = time.perf_counter()
            tbl = duckdb.sql(f"SELECT salience, y_true FROM read_parquet('{glob}')").fetchnumpy()
            y, s = tbl["y_true"].astype(np.int8), tbl["salience"]
            sweep(y, s)
            base_t = time.perf_counter() - t
            print(f"in-memory: read + sweep {base_t:.2f}s")
        result(f"sweep_parquet {n:,} candidates (DuckDB, out of core) / read + in-memory sweep",
               got["seconds"], "s", baseline=base_t,
               ratio=None if base_t is None else got["seconds"] / base_t,
               baseline_name="read into numpy + sweep" if base_t else "",
               note=f"peak RSS {got['peak_rss_mib']:.0f} MiB, memory_limit {args.memory_limit}")
        result(f"sweep_parquet {n:,} candidates: peak RSS", got["peak_rss_mib"], "MiB",
               baseline=got["rss_before_mib"],
               baseline_name=f"RSS after imports; DuckDB memory_limit {args.memory_limit}")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
