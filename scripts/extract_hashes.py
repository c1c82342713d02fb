"""Content hashes of what a replayed extraction writes, to compare two versions of the code.

    .venv/bin/python -m scripts.extract_hashes --n 100000 --out after.json
    cd OLD_CHECKOUT && PYTHONPATH=. .venv/bin/python -m scripts.extract_hashes --out before.json
    diff before.json after.json     # identical when the fast path changed nothing

Runs ``run_extraction`` (replay, model-scored and on, fixed run ids) over the
bundled sample (every extractor in it) and over ``--n`` simulated verdicts, then
hashes every row each run wrote: candidates, memory entries (lessons), events,
verdict errors, run verdicts, run chunks and the run rows, with the wall-clock
columns (created_at, ts, finished_at, started_at, seconds) left out. Rows are
hashed in a fixed order (``ORDER BY ALL``), so the hash depends on content only.
Which ``truss_lab`` is measured is printed (``PYTHONPATH`` chooses it).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
import time
from pathlib import Path

import truss_lab
from truss_lab.core._config import MemoryConfig
from truss_lab.extract._batch import run_extraction
from truss_lab.extract._extractor import Extractor
from truss_lab.store._store import Store

# table -> wall-clock columns left out of the hash
TABLES = {
    "candidates": (),
    "memory_entries": ("created_at",),
    "events": ("ts",),
    "verdict_errors": (),
    "run_verdicts": (),
    "run_chunks": ("finished_at",),
    "extraction_runs": ("started_at", "finished_at", "seconds", "code_version"),
}


def table_hash(store: Store, table: str, skip: tuple[str, ...]) -> tuple[int, str]:
    """(rows, SHA-256 of the rows' reprs in a fixed order)."""
    exclude = f" EXCLUDE ({', '.join(skip)})" if skip else ""
    cur = store.con.execute(f"SELECT *{exclude} FROM {table} ORDER BY ALL")
    h, n = hashlib.sha256(), 0
    while rows := cur.fetchmany(50_000):
        for r in rows:
            h.update(repr(r).encode("utf-8"))
            h.update(b"\n")
        n += len(rows)
    return n, h.hexdigest()


def run_all(db: Path, extractors: list[str], chunk_size: int) -> dict[str, object]:
    out: dict[str, object] = {}
    with Store(db) as s:
        for ext in extractors:
            for policy in ("model-scored", "on"):
                t = time.perf_counter()
                run_extraction(s, Extractor.replay(s, ext), MemoryConfig(lesson_extraction=policy),
                               progress=False, run_id=f"hash-{ext}-{policy}",
                               chunk_size=chunk_size)
                out[f"seconds {ext} {policy}"] = round(time.perf_counter() - t, 2)
        for table, skip in TABLES.items():
            n, digest = table_hash(s, table, skip)
            out[table] = f"{n} rows {digest}"
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000, help="simulated verdicts (0: sample only)")
    ap.add_argument("--chunk-size", type=int, default=1000)
    ap.add_argument("--out", type=Path, default=None, help="write the hashes as JSON here")
    args = ap.parse_args()
    from tests.builders.stores import sample_template, simulated_db

    result: dict[str, object] = {"truss_lab": str(Path(truss_lab.__file__).parent)}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        sample = sample_template(work / "sample.duckdb")
        result["sample"] = run_all(sample, ["sim-good-v1", "sim-overconfident-v1",
                                            "sim-paraphrase-v1"], args.chunk_size)
        if args.n:
            db = work / "sim.duckdb"
            simulated_db(work / "data", db, runs=args.n, seed=11, extractors=["sim-good-v1"])
            result[f"simulated {args.n}"] = run_all(db, ["sim-good-v1"], args.chunk_size)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
