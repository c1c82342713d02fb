"""Batch extraction end to end (replay provider) against its floor.

Prints, from one run over N generated verdicts (100k; ``--quick``: 10k):

1. verdicts/s of ``run_extraction`` end to end (verify + extract + gate + write);
2. the floor: ``json.loads`` of every completion plus one Arrow insert of the
   same candidate rows; ratio floor_time / end_to_end_time (goal >= 0.5);
3. the store's bulk candidate write (``Store.append``) against a raw
   ``INSERT INTO candidates SELECT * FROM arrow_table`` of the same rows into an
   empty table; ratio raw_time / append_time (goal >= 0.8);
4. peak RSS.

``--profile`` adds a cProfile of the end-to-end run.

    .venv/bin/python -m benchmarks.bench_extract --quick
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import resource
import tempfile
import time
from pathlib import Path

import truss_lab.extract._batch as batch
from tests.builders.stores import simulated_db
from truss_lab.core._config import MemoryConfig
from truss_lab.extract._extractor import Extractor
from truss_lab.store._store import Store


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="10k verdicts instead of 100k")
    ap.add_argument("--n", type=int, default=None)
    ap.add_argument("--chunk-size", type=int, default=batch.DEFAULT_CHUNK_SIZE)
    ap.add_argument("--executor", default="inline")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    n = args.n or (10_000 if args.quick else 100_000)
    config = MemoryConfig(lesson_extraction="model-scored")

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        t = time.perf_counter()
        db = work / "bench.duckdb"
        simulated_db(work / "data", db, runs=n, seed=11, extractors=["sim-good-v1"])
        print(f"setup: {n:,} verdicts generated and ingested in {time.perf_counter() - t:.1f}s")

        with Store(db) as s:
            ext = Extractor.replay(s, "sim-good-v1")
            prof = cProfile.Profile() if args.profile else None
            t = time.perf_counter()
            if prof:
                prof.enable()
            run = batch.run_extraction(s, ext, config, progress=False, executor=args.executor,
                                       chunk_size=args.chunk_size)
            if prof:
                prof.disable()
            e2e = time.perf_counter() - t
            texts = [r[0] for r in s.sql("SELECT text FROM completions").fetchall()]
            cand = s.con.sql("SELECT * FROM candidates WHERE run_id = ?",
                             params=[run.run_id]).to_arrow_table()
            t_verify = time.perf_counter()
            batch._verify_prefix(s, n)
            t_verify = time.perf_counter() - t_verify
        print(f"run: {run!r}")
        print(f"end to end: {e2e:.2f}s = {n / e2e:,.0f} verdicts/s "
              f"(of which journal verification ~{t_verify:.2f}s)")

        # The floor: parse every completion, one Arrow insert of the same rows.
        t = time.perf_counter()
        for x in texts:
            try:
                json.loads(x)
            except ValueError:
                pass
        t_json = time.perf_counter() - t
        with Store(":memory:") as fresh:
            t = time.perf_counter()
            fresh.con.register("cand_arrow", cand)
            fresh.con.execute("INSERT INTO candidates SELECT * FROM cand_arrow")
            t_raw = time.perf_counter() - t
        floor = t_json + t_raw
        print(f"floor: json.loads x{len(texts):,} {t_json:.2f}s + one Arrow insert of "
              f"{cand.num_rows:,} candidates {t_raw:.3f}s = {floor:.2f}s "
              f"({n / floor:,.0f} verdicts/s)")
        print(f"  ratio floor/end-to-end = {floor / e2e:.3f}   (goal >= 0.5)")

        # Store.append vs a raw insert, both into an empty table, best of 3.
        raws, apps = [], []
        for _ in range(3):
            with Store(":memory:") as a:
                t = time.perf_counter()
                a.con.register("cand_arrow", cand)
                a.con.execute("INSERT INTO candidates SELECT * FROM cand_arrow")
                raws.append(time.perf_counter() - t)
            with Store(":memory:") as b:
                t = time.perf_counter()
                b.append("candidates", cand, key=["run_id", "candidate_id"])
                apps.append(time.perf_counter() - t)
        print(f"bulk write of {cand.num_rows:,} candidates: Store.append {min(apps):.3f}s, "
              f"raw INSERT ... SELECT * FROM arrow {min(raws):.3f}s")
        print(f"  ratio raw/append = {min(raws) / min(apps):.3f}   (goal >= 0.8)")

        print(f"peak RSS: {rss_mib():,.0f} MiB")

        if prof:
            out = io.StringIO()
            pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(18)
            print("\n".join(out.getvalue().splitlines()[:40]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
