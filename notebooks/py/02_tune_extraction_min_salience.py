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
# # Tuning `extraction_min_salience`
#
# ADR 0011 ships `model-scored` extraction with `extraction_min_salience = 0.70`: a
# lesson is written when the model's salience is ≥ the threshold. Is 0.70 right for
# this extractor? The lab answers from evidence, without calling a model again: the
# extractor ran once per verdict, every candidate and its salience is stored, and any
# threshold is a filter over that table, scored against gold labels.
#
# Steps: label coverage → sweep with bootstrap intervals → calibration → choose on
# training verdicts, report on held-out ones → explore interactively → record the
# decision as a signed, unverified policy record.

# %% tags=["parameters"]
# Parameters: point this notebook at your own data (papermill: `-p DB lab.duckdb`).
# DB = None loads the bundled synthetic sample into a temporary database.
DB = None      # a truss_lab database file, e.g. "lab.duckdb" (it must exist)
RUNS = None    # [run_id] to tune; None: the sample's sim-good-v1 run (with DB: its first run)
TRUTH = "labels"  # what every figure is judged by: "labels" (gold labels), "references"
                  # (reference lessons) or "judge:NAME" (one judge's labels)
LABELS = None  # gold labels: None = the database's labels table; or a labels CSV path

# %%
import matplotlib.pyplot as plt
import pandas as pd

from truss_lab import (
    CalibrationDisplay,
    SigningKey,
    SweepDisplay,
    ThresholdExplorer,
    Truth,
    calibration_run,
    choose_run_threshold,
    label_report,
    policy_history,
    propose_threshold,
    summarize_runs,
    sweep_run,
    verify_chain,
)
from truss_lab.evaluate import bootstrap_run
from truss_lab.faces import notebook_store  # the parameters cell's data

store, run_ids = notebook_store(DB, RUNS, extractors=["sim-good-v1"])
run_id = run_ids[0]
truth = Truth.parse(TRUTH, labels=LABELS)  # how every figure below judges the run: one value
summarize_runs(store, [run_id])[["run_id", "extractor_id", "extraction_min_salience",
                                 "n_verdicts", "n_candidates", "n_lessons", "n_errors",
                                 "seconds"]].round({"seconds": 2})

# %% [markdown]
# ## Gold labels
#
# Two (simulated) annotators labelled the candidates; where both did, the label used is
# the majority and ties are reported, not guessed. Cohen's κ says how far to trust the
# labels themselves.

# %%
label_report(store, run_id, LABELS)

# %% [markdown]
# ## The sweep, with uncertainty
#
# `sweep_run` gives precision, recall, F1 and lessons kept per verdict at every distinct
# salience. Lessons of one verdict are correlated (one model call wrote them), so the
# intervals come from a bootstrap that resamples **verdicts**, not candidates.

# %%
sweep = sweep_run(store, run_id, truth=truth)
boot = bootstrap_run(store, run_id, truth=truth, n_boot=500, random_state=0)
# The dashed line is the ADR default (0.70); the chosen threshold (below) is marked
# once it is known.
SweepDisplay(sweep, intervals=boot.table,
             name=f"{run_id}: metrics vs threshold (95% verdict-bootstrap bands)").plot()
plt.show()

# %%
at = boot.table[boot.table["threshold"].isin([0.5, 0.6, 0.7, 0.8, 0.9])]
at[["threshold", "precision", "precision_low", "precision_high", "f1", "f1_low", "f1_high",
    "kept_per_verdict"]].round(3)

# %% [markdown]
# ## Is salience a probability?
#
# A threshold of 0.70 reads as "keep lessons that are useful at least 70% of the time"
# only if salience is calibrated. `calibration_run` splits verdicts, fits an isotonic
# calibrator on the training verdicts and judges both the raw and the calibrated score
# on the held-out verdicts only.

# %%
cal = calibration_run(store, run_id, method="isotonic", random_state=0, truth=truth)
fig, axes = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
CalibrationDisplay(cal.tables["before"], name="raw salience (held-out)").plot(ax=axes[0])
CalibrationDisplay(cal.tables["after"], name="isotonic (held-out)").plot(ax=axes[1])
plt.show()
cal

# %% [markdown]
# ## Choose on training verdicts, report on held-out ones
#
# A threshold tuned and scored on the same verdicts flatters itself. `choose_run_threshold`
# with `cv="auto"` cross-validates once the run has enough labelled verdicts for five
# folds: the verdicts are dealt into 5 folds, the F1 threshold is chosen 5 times, each
# time without one fold, and judged on that fold. The result shows the threshold each
# fold chose and their spread, the **out-of-fold** metrics (counts pooled over folds),
# and the threshold chosen on every verdict. Two intervals of the held-out metrics are
# labelled: one holds each fold's threshold fixed, the other re-makes the choice on every
# bootstrap replicate and so also covers the choice of threshold. A precision floor on
# one 70/30 split is shown for contrast.

# %%
choice = choose_run_threshold(store, run_id, objective="f1", cv="auto", n_boot=500,
                              random_state=0, truth=truth)
choice

# %% [markdown]
# The sweep again, with the chosen threshold (solid) beside the ADR default (dashed):

# %%
SweepDisplay(sweep, threshold=choice.threshold, intervals=boot.table,
             name=f"{run_id}: the chosen threshold (max F1) vs the default").plot()
plt.show()

# %%
# The choice as a table: each metric on the verdicts it was chosen on, held out, and
# the two held-out intervals (choice.to_frame() has every column, counts included).
choice.metrics_table()

# %%
strict = choose_run_threshold(store, run_id, objective="precision:0.85", cv=None, n_boot=0,
                              random_state=0, truth=truth)
strict

# %% [markdown]
# The objective is the decision: max F1 keeps more, borderline lessons (a threshold
# well below 0.70), a precision floor of 0.85 keeps few. Both numbers come with the
# held-out metrics that justify them; which cost matters more is the researcher's call.
#
# ## Explore a threshold by hand
#
# Move the slider: the metrics, the line on the sweep plot and the lessons just above
# and just below the cut update. Reading the borderline lessons is the quickest way to
# see what a threshold costs.

# %%
# threshold-explorer
explorer = ThresholdExplorer.from_run(store, run_id, truth=truth,
                                      initial=choice.threshold)
explorer

# %% [markdown]
# The explorer is an ordinary object too: `set_threshold` moves it from code and
# `metrics`, `above` and `below` hold what it shows.

# %%
explorer.set_threshold(0.70)
pd.DataFrame([explorer.metrics])[["threshold", "kept", "precision", "recall", "f1",
                                  "kept_per_verdict"]].round(3)

# %%
explorer.below[["text", "salience", "label"]]

# %% [markdown]
# ## Record the decision
#
# `propose_threshold` signs the evidence — dataset and label hashes, objective, split,
# train and held-out metrics with intervals — into the lab journal (the lab's own chain,
# beside the verdict journal, which stays upstream's copy) and writes a
# `salience` policy record pointing at that entry. The record is **unverified** and
# nothing applies it (ADR 0011: no optimizer, no auto-application). Here a throwaway
# key signs it; a researcher would load their own with `SigningKey.load(path)`.

# %%
key = SigningKey.generate("notebook-researcher")
record = propose_threshold(store, choice, key, run_ids=[run_id], objective="f1")
record

# %%
policy_history(store, "extraction_min_salience")[
    ["record_id", "version", "target", "settings", "trust", "produced_by_seq", "supersedes"]]

# %%
assert verify_chain(store).ok  # the decision entry is covered: it is in the lab journal
evidence = store.sql("SELECT payload->'$.evidence' FROM lab_journal WHERE seq = ?",
                     [record.provenance.produced_by.seq]).fetchall()[0][0]
print(evidence[:600], "…")
