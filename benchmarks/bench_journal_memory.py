"""Benchmark: peak memory of ``ingest journal`` and ``verify`` at two sizes, streamed
against the whole-file path.

Each command runs in a fresh process and its peak resident set (``ru_maxrss`` as
``wait4`` reports it: the largest of the process and the signature workers it waited
for) is read when it ends. For each size N (20k and 100k entries; ``--quick``: 2k and
10k) a journal of N signed verdicts is written by ``truss-lab simulate --n-verdicts N``,
then:

* ``truss-lab ingest journal`` into a fresh database: batches of 16,384 entries read,
  verified and written inside the import's one transaction (the figure); baseline: the
  same ``import_journal`` in one batch (``batch_entries`` above N), the whole-file path
  (parse the file, verify it, append it); floor (info): DuckDB alone reading the file
  into a table (``CREATE TABLE ... AS SELECT * FROM read_json(...)``), no verification;
* ``truss-lab verify`` of that database: ``verify_stream`` over batches, keeping 40
  bytes an entry (the figure); baseline: ``verify_columns`` of the whole journal's
  columns (the path before verification was streamed).

Figures: the streamed peak at the large size over the small ("does not grow with the
entries", goal <= 1.1), for the streamed path and, for comparison, the whole-file
baseline (info); and each path's peak at the large size against the baseline's. The
streamed paths hold a few batches at once (the one read, the one written and up to 3
waiting for the signature workers), so their peak grows until about 80k entries and
stays there: both sizes lie beyond it.

    nice -n 10 .venv/bin/python -m benchmarks.bench_journal_memory [--quick] [--simulate]
        [--sizes 100000 250000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._result import result
from benchmarks.bench_memory import child_peak

GOAL = 1.1
_WHOLE_IMPORT = """
import sys
from truss_lab import Store, import_journal
with Store(sys.argv[1]) as s:
    import_journal(s, sys.argv[2], keyring=sys.argv[3], batch_entries=10**12)
"""
_RAW_DUCKDB = """
import sys, duckdb
con = duckdb.connect(sys.argv[1])
con.execute("CREATE TABLE journal AS SELECT * FROM read_json(?, format='newline_delimited')",
            [sys.argv[2]])
"""
_WHOLE_VERIFY = """
import sys
from truss_lab import Store
from truss_lab.journal._table import journal_columns, stored_keyring
from truss_lab.journal._verify import verify_columns
with Store(sys.argv[1], read_only=True) as s:
    assert verify_columns(journal_columns(s), stored_keyring(s)).ok
"""


def write_chain(data: Path, n: int) -> None:
    """``data``/journal.jsonl and keys.json: ``n`` signed contract verdicts, as
    ``make_chain(n)`` writes them (hashed and signed by ``chain_columns``)."""
    import json

    from tests.builders.chains import RING, chain_columns
    from truss_lab.journal._crypto import save_keyring

    data.mkdir(parents=True)
    c = chain_columns(n, workers=2)
    with open(data / "journal.jsonl", "w", encoding="utf-8") as fh:
        for i in range(n):  # the payload column is canonical JSON text already
            fh.write(f'{{"seq": {c.seq[i]}, "kind": {json.dumps(c.kind[i])}, "ts": '
                     f'{json.dumps(c.ts[i])}, "key_id": {json.dumps(c.key_id[i])}, '
                     f'"payload": {c.payload[i]}, "prev_hash": "{c.prev_hash[i]}", '
                     f'"hash": "{c.hash[i]}", "signature": "{c.signature[i]}"}}\n')
    save_keyring(RING, data / "keys.json")


def measure(tmp: Path, n: int, simulate: bool) -> dict[str, tuple[float, float]]:
    """Each command's (peak MiB, seconds) for a journal of ``n`` entries."""
    py, cli = [sys.executable, "-c"], [sys.executable, "-m", "truss_lab.faces.cli"]
    data = tmp / f"data{n}"
    t0 = time.perf_counter()
    if simulate:
        child_peak([*cli, "simulate", "--out", str(data), "--n-verdicts", str(n),
                    "--random-state", "5"])
    else:
        write_chain(data, n)
    print(f"  {n:>9,} written in {time.perf_counter() - t0:.0f} s", flush=True)
    journal, keys = str(data / "journal.jsonl"), str(data / "keys.json")
    streamed, whole, raw = (str(tmp / f"{k}{n}.duckdb") for k in ("streamed", "whole", "raw"))
    steps = {
        "ingest journal": [*cli, "ingest", "journal", journal, "--keyring", keys, "--db",
                           streamed],
        "import whole file": [*py, _WHOLE_IMPORT, whole, journal, keys],
        "DuckDB read_json": [*py, _RAW_DUCKDB, raw, journal],
        "verify": [*cli, "verify", "--db", streamed],
        "verify whole columns": [*py, _WHOLE_VERIFY, streamed],
    }
    out = {}
    for name, cmd in steps.items():
        out[name] = child_peak(cmd)
        print(f"  {n:>9,} {name:22s} peak {out[name][0]:8.1f} MiB  {out[name][1]:7.1f} s",
              flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2k and 10k entries")
    ap.add_argument("--sizes", type=int, nargs=2, default=None, metavar=("SMALL", "LARGE"))
    ap.add_argument("--simulate", action="store_true", help="write the journals with "
                    "truss-lab simulate (slow) instead of the chain builder")
    ap.add_argument("--tmp", type=Path, default=None, help="folder for the data (default: "
                    "a temporary folder)")
    args = ap.parse_args()
    small, large = args.sizes or ((2_000, 10_000) if args.quick else (100_000, 250_000))
    with tempfile.TemporaryDirectory(dir=args.tmp) as d:
        peak = {n: {k: v[0] for k, v in measure(Path(d), n, args.simulate).items()}
                for n in (small, large)}
    note = "each command a fresh process; signature workers: the default (one per core, <= 4)"
    for step, base in (("ingest journal", "import whole file"), ("verify",
                                                                 "verify whole columns")):
        for n in (small, large):
            extra = (f"; floor DuckDB read_json {peak[n]['DuckDB read_json']:.0f} MiB"
                     if step == "ingest journal" else "")
            result(f"peak RSS, {step} of {n:,} entries (streamed)", peak[n][step], "MiB",
                   baseline=peak[n][base], ratio=peak[n][step] / peak[n][base],
                   baseline_name=f"{base} (the whole-file path)", note=note + extra)
        result(f"peak RSS, {step}: {large:,} / {small:,} entries (streamed)",
               peak[large][step], "MiB", baseline=peak[small][step],
               ratio=peak[large][step] / peak[small][step], goal=f"<= {GOAL:g}",
               baseline_name=f"the streamed {step} of {small:,} entries", note=note)
        result(f"peak RSS, {base}: {large:,} / {small:,} entries (baseline)",
               peak[large][base], "MiB", baseline=peak[small][base],
               ratio=peak[large][base] / peak[small][base],
               baseline_name=f"{base} of {small:,} entries", note=note)


if __name__ == "__main__":
    main()
