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
# # Provenance audit
#
# Does a database obey ADR 0011? `audit(store)` runs named checks — mostly plain DuckDB
# SQL — for every invariant: the journal verifies, lessons are unverified and point at a
# stored, signed verdict, one MemoryWrite event per lesson, `off` runs are silent, the
# gate was respected, policy records are signed and form simple chains, the default
# memory query returns verified entries only, and candidates match their recorded
# completions.
#
# Here: audit a clean database, then tamper with a **copy** and watch the audit name
# the entry; finally follow a lesson back to its signed verdict.

# %% tags=["parameters"]
# Parameters: point this notebook at your own data (papermill: `-p DB lab.duckdb`).
# DB = None loads the bundled synthetic sample into a temporary database.
DB = None    # a truss_lab database file to audit, e.g. "lab.duckdb" (it must exist;
             # the tampering below happens on a copy)
RUNS = None  # not used to audit (the audit covers the whole database); None: the sample's
             # sim-good-v1 run is extracted first

# %%
import json

from truss_lab import (
    ChainError,
    Extractor,
    LessonBrowser,
    MemoryConfig,
    MemoryQuery,
    audit,
    copy_store,
    query_memory,
    run_extraction,
    verify_chain,
)
from truss_lab.faces import notebook_store  # the parameters cell's data

store, run_ids = notebook_store(DB, RUNS, extractors=["sim-good-v1"])
report = audit(store)
assert report.ok
report

# %% [markdown]
# Every check passes. Each result carries the offending rows (none here) and the
# invariant it guards:

# %%
report.to_frame()

# %% [markdown]
# ## Tamper with a copy
#
# `copy_store` copies the whole database to a new file; the original is never touched.
# In the copy, rewrite the verdict that produced the first lesson — say someone turned a
# failure into a pass after the fact. The entry's hash no longer matches its content.

# %%
tampered = copy_store(store)
lessons = query_memory(tampered, MemoryQuery.unverified_lessons())
seq = int(lessons["produced_by_seq"].min())
tampered.sql(
    "UPDATE journal SET payload = json_merge_patch(payload, ?::JSON) WHERE seq = ?",
    [json.dumps({"verdict": "pass", "summary": "All checks passed."}), seq],
)
bad = audit(tampered)
assert not bad.ok
bad

# %% [markdown]
# The audit names the entry and why. `verify_chain` says the same, and stops trusting
# everything after the first bad entry:

# %%
v = verify_chain(tampered)
print(f"first bad seq {v.first_bad_seq} (tampered seq {seq}): {v.reason}")
bad["chain_verifies"].rows

# %% [markdown]
# A journal that does not verify stops extraction before any model call or write
# (ADR 0011, invariant 3):

# %%
try:
    run_extraction(tampered, Extractor.heuristic(),
                   MemoryConfig(lesson_extraction="on"), progress=False)
except ChainError as exc:
    print("refused:", exc)

# %% [markdown]
# Governance tampering is caught too: promote one lesson to `verified` behind the
# ADR's back (no SI-2 promotion exists), and the default memory query — which must
# return verified entries only, never lessons — now leaks it.

# %%
entry_id = lessons["entry_id"].iloc[0]
tampered.sql("UPDATE memory_entries SET trust = 'verified' WHERE entry_id = ?", [entry_id])
again = audit(tampered, checks=["lessons_governed", "default_query_verified_only"])
again

# %% [markdown]
# The original database is untouched:

# %%
assert audit(store).ok
store.sql("SELECT count(*) FROM journal").fetchall()

# %% [markdown]
# ## Follow a lesson back to its signed verdict
#
# `LessonBrowser` lists the unverified lessons; picking one shows its governed
# provenance (`produced_by` seq + hash, sources, run, extractor), the verdict's journal
# entry with its checks, and whether that entry verifies now.

# %%
browser = LessonBrowser(store)
browser

# %%
print(browser.status["message"])
browser.entry.provenance

# %% [markdown]
# The same lesson in the tampered copy: its verdict no longer verifies.

# %%
tampered_browser = LessonBrowser(tampered)
tampered_browser.show(lessons.loc[lessons["produced_by_seq"] == seq, "entry_id"].iloc[0])
print(tampered_browser.status["message"][:300])
tampered_browser

# %%
tampered.close()
