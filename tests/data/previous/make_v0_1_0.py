"""Build tests/data/previous/v0_1_0.duckdb with truss_lab 0.1.0 (commit cdbf180).

Run with that release on the path: ``PYTHONPATH=<worktree of cdbf180> python make_v0_1_0.py OUT``.
It imports 0.1.0's flat module layout, which the current package no longer has.
"""

import shutil
import sys
from pathlib import Path

from truss_lab._simulate import simulate  # 0.1.0 layout

import truss_lab as tl

out = Path(sys.argv[1])
sim = out / "sim"
shutil.rmtree(sim, ignore_errors=True)
simulate(sim, runs=40, seed=11)
store = tl.Store(out / "v0_1_0.duckdb")
tl.import_journal(store, sim / "journal.jsonl", keyring=sim / "keys.json")
tl.ingest_completions(store, sim / "completions.jsonl")
tl.ingest_labels(store, sim / "labels.csv")
cfg = tl.MemoryConfig(lesson_extraction="model-scored", extraction_min_salience=0.70)
run = tl.run_extraction(store, tl.Extractor.replay(store, "sim-good-v1"), cfg, progress=False)
tl.run_extraction(store, tl.Extractor.heuristic(), tl.MemoryConfig(lesson_extraction="on"),
                  progress=False)
key = tl.SigningKey(key_id="researcher-1", seed=bytes(range(32)))
tl.propose_threshold(store, run.run_id, key, objective="f1")
print(store.counts())
print(tl.verify_chain(store))
store.close()
