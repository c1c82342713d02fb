# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
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
# # Which extractor is better?
#
# The sample recorded three extractors answering the same 1200 verdicts. Here we
# take the two with gold labels, `sim-good-v1` and `sim-overconfident-v1` (the third,
# `sim-paraphrase-v1`, rewords the good one's lessons and has no labels), and the lab
# adds `heuristic-v1`, a deterministic, model-free baseline. This notebook compares them on the **same
# verdicts**: precision/recall at the gate, paired bootstrap intervals of the
# differences, junk rates (duplicates, ungrounded lessons, …) and calibration.
#
# The heuristic baseline has no gold labels (nobody annotated its lessons), so it enters
# only the label-free comparisons: counts, junk rates and the salience distribution.

# %%
import matplotlib.pyplot as plt
import pandas as pd

from truss_lab import (
    CalibrationDisplay,
    ComparisonDisplay,
    PrecisionRecallDisplay,
    calibration_run,
    compare_runs,
    junk_flags,
    junk_rates,
    label_report,
    load_sample,
    run_sample_extractions,
    scored_candidates,
    summarize_runs,
    verdict_payloads,
)

store = load_sample()
runs = run_sample_extractions(store)  # sim-good-v1, sim-overconfident-v1, heuristic-v1
run_ids = {ex: r.run_id for ex, r in runs.items()}
good, over = run_ids["sim-good-v1"], run_ids["sim-overconfident-v1"]
summarize_runs(store, list(run_ids.values()))[
    ["extractor_id", "n_verdicts", "n_candidates", "n_lessons", "n_errors", "provider_calls"]]

# %% [markdown]
# `n_lessons` are the candidates that passed the ADR default gate (salience ≥ 0.70).
# The overconfident extractor proposes more and scores them higher, so far more pass.
# More is not better; the labels say how many are useful.

# %%
label_report(store).coverage

# %% [markdown]
# ## Precision and recall on labelled candidates
#
# Each extractor's recall is relative to its *own* useful candidates (they propose
# different lessons), so read precision, F1 and kept-per-verdict first.

# %%
fig, ax = plt.subplots(figsize=(5.5, 4.5))
for ex in ("sim-good-v1", "sim-overconfident-v1"):
    d = scored_candidates(store, run_ids[ex])
    PrecisionRecallDisplay.from_predictions(d["y"], d["s"], name=ex, ax=ax)
ax.set_title("precision-recall, labelled valid candidates")
plt.show()

# %% [markdown]
# ## Paired comparison on common verdicts
#
# `compare_runs` resamples **verdicts** (the same draws for both extractors) and reports
# B - A with 95% intervals at each threshold, plus an exact McNemar test on the
# per-verdict outcome "at least one useful lesson kept and no junk kept".

# %%
cmp = compare_runs(store, good, over, threshold=[0.5, 0.7, 0.9], n_boot=1000,
                   random_state=0)
cmp

# %%
ComparisonDisplay.from_result(cmp, row=1)  # the ADR default, 0.70
plt.show()

# %% [markdown]
# ## Junk rates (no labels needed)
#
# `junk_flags` marks duplicates (within a verdict, within a run), lessons citing a check
# the verdict does not have, lessons without evidence, and lessons that merely restate
# the verdict summary. Rates are shown for every valid candidate and for the lessons
# that passed the 0.70 gate — this is where the heuristic baseline can be judged too.

# %%
cands = store.sql(
    "SELECT * FROM candidates WHERE run_id IN (SELECT unnest(?)) AND valid",
    [list(run_ids.values())],
).df()
flags = junk_flags(cands, verdict_payloads(store))
junk_rates(flags, by=["extractor_id"], candidates=cands).round(3)

# %% [markdown]
# On this sample a grounded lesson quotes its verdict's specifics (check, figures, run),
# so `duplicate_in_run` flags what really repeats across a run: the overconfident
# extractor's platitudes and vague advice, far more than the good extractor's. The
# simulator's truth agrees within 0.02 (see the DATASHEET). Among lessons that pass the
# gate:

# %%
junk_rates(flags, by=["extractor_id", "passed_gate"], candidates=cands).round(3)

# %% [markdown]
# ## Calibration of each extractor's salience
#
# Raw salience judged on held-out verdicts (no calibrator fitted: `method=None`).
# An overconfident extractor piles its scores near 1 while its lessons are useful far
# less often: a high ECE, and a threshold of 0.70 that means something else than for
# a calibrated extractor.

# %%
reports = {ex: calibration_run(store, run_ids[ex], method=None, random_state=0)
           for ex in ("sim-good-v1", "sim-overconfident-v1")}
pd.concat({ex: r.summary for ex, r in reports.items()}).round(4)

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 4))
for ax, (ex, r) in zip(axes, reports.items(), strict=True):
    CalibrationDisplay(r.tables["before"], name=ex).plot(ax=ax)
fig.tight_layout()
plt.show()

# %% [markdown]
# The salience distributions, including the baseline's (its scores come from simple
# features of the verdict, not from a model):

# %%
store.sql(
    "SELECT extractor_id, count(*) AS candidates, round(avg(salience), 3) AS mean, "
    "round(quantile_cont(salience, 0.1), 3) AS p10, round(median(salience), 3) AS median, "
    "round(quantile_cont(salience, 0.9), 3) AS p90, "
    "round(avg((salience >= 0.7)::INT), 3) AS share_at_or_above_0_70 "
    "FROM candidates WHERE valid AND run_id IN (SELECT unnest(?)) "
    "GROUP BY extractor_id ORDER BY extractor_id",
    [list(run_ids.values())],
).df()
