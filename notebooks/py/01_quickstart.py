# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py//py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # truss_lab quickstart
#
# Truss extracts *lessons* from a contract's signed verdict (ADR 0011). This notebook
# walks the lab's main loop on the bundled **synthetic** sample
# (`datasets/sample/`, see its DATASHEET): load the signed journal, verify it, run an
# extractor over every recorded verdict, and look at the lessons it wrote, each tied
# back to the verdict that produced it.
#
# Everything below is a library call; the database is a DuckDB file in a temporary
# folder, so re-running this notebook never touches anyone else's data.

# %% tags=["parameters"]
# Parameters: point this notebook at your own data (papermill: `-p DB lab.duckdb`).
# DB = None loads the bundled synthetic sample into a temporary database; a DB of your
# own must hold a journal and the recorded completions of EXTRACTOR.
DB = None                  # a truss_lab database file, e.g. "lab.duckdb" (it must exist)
EXTRACTOR = "sim-good-v1"  # the recorded extractor to replay (completions.extractor_id)

# %%
from truss_lab import (
    Extractor,
    MemoryConfig,
    MemoryQuery,
    SAMPLE_DIR,
    load_sample,
    query_memory,
    run_extraction,
    summarize_runs,
    verify_chain,
)
from truss_lab.store import open_store

# load_sample: Store(<tmp>/sample.duckdb) with journal, completions and labels
store = load_sample() if DB is None else open_store(DB, must_exist=True)
store

# %% [markdown]
# `load_sample` imported the journal (every entry's hash, signature and chain link is
# checked as it is read — a bad file lands not at all), the recorded extractor calls
# and the gold labels. It is idempotent: calling it again on the same file adds nothing.
# Every table is plain SQL:

# %%
store.sql(
    "SELECT kind, count(*) AS entries, min(seq) AS first, max(seq) AS last "
    "FROM journal GROUP BY kind"
).df()

# %%
store.sql(
    "SELECT extractor_id, count(*) AS completions, median(latency_ms) AS median_latency_ms "
    "FROM completions GROUP BY extractor_id ORDER BY extractor_id"
).df()

# %% [markdown]
# ## Verify the signed journal
#
# `verify_chain` recomputes every entry's RFC 8785 hash, checks the link to the previous
# entry and the Ed25519 signature, and names the first entry that fails.

# %%
report = verify_chain(store)
assert report.ok, report.message
report

# %% [markdown]
# ## Extract lessons (one replay run)
#
# `Extractor.replay` answers each verdict with the recorded completion of
# `sim-good-v1` — no model is called. The policy is `model-scored` at the ADR default
# `extraction_min_salience = 0.70`: every proposed lesson is kept as a *candidate*, and
# only those with salience ≥ 0.70 are written to memory.

# %%
config = MemoryConfig(lesson_extraction="model-scored", extraction_min_salience=0.70)
run = run_extraction(store, Extractor.replay(store, EXTRACTOR), config, progress=False)
run

# %%
summarize_runs(store)[["run_id", "extractor_id", "policy", "extraction_min_salience",
                       "n_verdicts", "n_candidates", "n_lessons", "n_errors", "provider_calls"]]

# %% [markdown]
# `n_errors` are verdicts whose recorded completion could not be parsed (the sample
# contains truncated JSON and prose on purpose); the batch went on without them.
# The candidates table keeps every proposed lesson, passed or not — a threshold sweep
# later is just a filter over it:

# %%
cands = run.candidates()
cands.groupby(["valid", "passed_gate"]).size().rename("candidates").reset_index()

# %% [markdown]
# ## Lessons and their provenance
#
# Lessons are written as `kind=lesson`, `trust=unverified`. The **default** memory query
# returns verified entries only, so it shows none of them:

# %%
default_view = query_memory(store)  # MemoryQuery() -> verified entries only
assert default_view.empty
len(default_view)

# %% [markdown]
# Asking for unverified lessons explicitly shows them, each with its governed
# provenance: `produced_by` (the seq and hash of the signed verdict), the same ref in
# `sources`, the run and the extractor.

# %%
lessons = query_memory(store, MemoryQuery.unverified_lessons(extractor_id=EXTRACTOR))
lessons[["text", "salience", "produced_by_seq", "produced_by_hash", "sources", "run_id",
         "extractor_id"]].head(8)

# %% [markdown]
# Follow one lesson back to its verdict: the journal entry at `produced_by_seq`, whose
# hash is the lesson's `produced_by_hash`.

# %%
first = lessons.sort_values("produced_by_seq").iloc[0]
store.sql(
    "SELECT seq, kind, hash, payload->>'$.verdict' AS verdict, payload->>'$.summary' AS summary "
    "FROM journal WHERE seq = ?", [int(first.produced_by_seq)],
).df().assign(lesson=first.text)

# %% [markdown]
# Next: `02_tune_extraction_min_salience` asks whether 0.70 is the right threshold,
# `03_extractor_quality` compares extractors, and `04_provenance_audit` checks that a
# database obeys ADR 0011. (Sample folder used here:)

# %%
print(SAMPLE_DIR, "->", store.path)
