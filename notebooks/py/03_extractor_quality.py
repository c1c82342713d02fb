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
# # Which extractor is better?
#
# The sample recorded three extractors answering the same 1200 verdicts: `sim-good-v1`
# and `sim-overconfident-v1` have gold labels, `sim-paraphrase-v1` (it rewords the good
# one's lessons) has none; the lab adds `heuristic-v1`, a deterministic, model-free
# baseline, also unlabelled. This notebook compares them on the **same verdicts**.
#
# Gold labels judge only the lessons someone labelled. **Reference lessons** (what an
# annotator says each verdict should teach, for 402 of the verdicts) judge any
# extractor, so every run, the heuristic included, is scored first by references;
# then the two labelled ones by their labels, with junk rates and calibration.

# %% tags=["parameters"]
# Parameters: point this notebook at your own data (papermill: `-p DB lab.duckdb`).
# DB = None loads the bundled synthetic sample into a temporary database.
DB = None      # a truss_lab database file, e.g. "lab.duckdb" (it must exist)
RUNS = None    # run ids; the first two (with gold labels) are compared by TRUTH, the last
               # is the baseline. None: the sample's sim-good-v1, sim-overconfident-v1,
               # sim-paraphrase-v1, heuristic-v1 runs (with DB: every run)
TRUTH = "labels"  # truth of the labelled comparison and calibration: "labels",
                  # "references" or "judge:NAME" (a judge's labels)
LABELS = None  # gold labels: None = the database's labels table; or a labels CSV path
GRID = None    # a grid file (README "Grids of runs"); None: a replay of each run's extractor
PRICES = None  # a price table (TOML, as `usage --prices`); None: illustrative prices of
               # the sample's simulated models

# %%
import matplotlib.pyplot as plt
import pandas as pd

from truss_lab import (
    CalibrationDisplay,
    ComparisonDisplay,
    PrecisionRecallDisplay,
    SliceDisplay,
    Truth,
    calibration_run,
    compare_runs,
    junk_flags,
    junk_rates,
    label_report,
    summarize_runs,
    verdict_payloads,
)
from truss_lab.evaluate import rank_runs
from truss_lab.faces import notebook_store  # the parameters cell's data

store, ids = notebook_store(DB, RUNS, extractors=(
    "sim-good-v1", "sim-overconfident-v1", "sim-paraphrase-v1", "heuristic-v1"))
good, over, baseline = ids[0], ids[1], ids[-1]
truth = Truth.parse(TRUTH, labels=LABELS)  # the labelled comparison's truth: one value
run_ids = {run_id: run_id for run_id in ids}
summarize_runs(store, ids)[
    ["extractor_id", "n_verdicts", "n_candidates", "n_lessons", "n_errors", "provider_calls"]]

# %% [markdown]
# `n_lessons` are the candidates that passed the ADR default gate (salience ≥ 0.70).
# The overconfident extractor proposes more and scores them higher, so far more pass.
# More is not better; the labels say how many are useful.

# %% [markdown]
# ## Every extractor against the reference lessons
#
# On the annotated verdicts, a kept lesson is right when it expresses a reference no
# higher-ranked lesson claimed; recall is over every reference, so a verdict where the
# extractor wrote nothing counts its references as misses. At the ADR default 0.70,
# each run against the baseline (paired verdict bootstrap of ΔF1, McNemar on the
# verdicts whose kept set is right):

# %%
ranked = rank_runs(store, ids, truth=Truth.references(), baseline=baseline, n_boot=1000)
ranked[["run_id", "kept", "precision", "recall", "f1", "delta_f1", "delta_f1_low",
        "delta_f1_high", "mcnemar_p"]].round(3)

# %%
# One curve per run on one axes: the legend names each run once (with its chance
# level) and stands beside the curves.
fig, ax = plt.subplots(figsize=(9, 5), layout="constrained")
for rid in ids:  # kept = what the gate writes; the marker is the ADR default, 0.70
    PrecisionRecallDisplay.from_run(store, rid, truth=Truth.references(), threshold=0.70,
                                    ax=ax)
ax.set_title("precision-recall against the reference lessons")
plt.show()

# %% [markdown]
# The heuristic baseline comes first: it writes one lesson per failed check, naming the
# check and its evidence, and the default matcher, the semantic one, takes most of them
# for that check's reference; the sample's people matched only the three simulated
# extractors, so nobody checked those pairs: have people match a share of the baseline's
# lessons too before ranking against it. The paraphrasing extractor, scored with none of
# its lessons labelled, comes close to the good one whose lessons it rewords: the
# semantic matcher sees most rewordings, where word overlap
# (`Truth.references(matcher="lexical")`) misses many heavy paraphrases
# (docs/how-to/score-without-labels.md, "Matchers"). Correct with people's match labels
# (`correct="ppi"`) before trusting such a ranking.
#
# ## The labelled extractors by their labels
#
# Each extractor's recall is relative to its *own* useful candidates (they propose
# different lessons), so read precision, F1 and kept-per-verdict first.

# %%
label_report(store, labels=LABELS).coverage

# %% [markdown]
# ## Paired comparison on common verdicts
#
# `compare_runs` resamples **verdicts** (the same draws for both extractors) and reports
# B - A with 95% intervals at each threshold, plus an exact McNemar test on the
# per-verdict outcome "at least one useful lesson kept and no junk kept".

# %%
cmp = compare_runs(store, good, over, threshold=[0.5, 0.7, 0.9], n_boot=1000,
                   random_state=0, truth=truth)
# The F1 of each run, B - A with its interval and McNemar's p at each threshold
# (cmp.table has every metric, each run's intervals and the verdict outcomes).
cmp.table[["threshold_a", "f1_a", "f1_b", "delta_f1", "delta_f1_low", "delta_f1_high",
           "mcnemar_p"]].round(3)

# %%
ComparisonDisplay.from_result(cmp, row=1)  # the ADR default, 0.70; A = good, B = over
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
reports = {rid: calibration_run(store, rid, method=None, random_state=0, truth=truth)
           for rid in (good, over)}
pd.concat({ex: r.summary for ex, r in reports.items()}).round(4)

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
for ax, (rid, r) in zip(axes, reports.items(), strict=True):
    CalibrationDisplay(r.tables["before"], name=rid).plot(ax=ax)
plt.show()

# %% [markdown]
# ## Where does the good extractor fail? Slices
#
# One precision hides where an extractor fails. `slice_run` cuts the run's verdicts by
# tag (the contract's domain and its checks' themes), measures each slice at the ADR
# default 0.70 with its verdict-bootstrap interval, tests each against the rest
# (verdict permutation, Benjamini-Hochberg q-values across the slices: `*` marks a
# discovery at q < 0.05) and shows the threshold each slice would choose on its own.
# On the sample, the simulator planted one effect: `sim-good-v1` ranks its lessons upside
# down on deployment verdicts (the DATASHEET's "The planted slice effect").

# %%
slices = SliceDisplay.from_run(store, good, truth=truth, by="tag", n_boot=200,
                               max_rows=10)
plt.show()
slices

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

# %% [markdown]
# ## Cost and quality: a grid of runs and its frontier
#
# A grid makes one run per cell (extractor × prompt × model × sampling settings); running
# it again adds nothing. Here, unless `GRID` names a file, the grid replays each studied
# run's extractor (no model call; dry runs, named `nb03-...`). The frontier then puts
# cost per verdict (tokens × `PRICES`), latency and F1 at each run's gate threshold side
# by side: a run is **dominated** only when another is cheaper *and* has an F1 above the
# run's whole interval.

# %%
import json
import tempfile
from pathlib import Path

from truss_lab import frontier, run_grid
from truss_lab.faces import frontier_plot

folder = Path(tempfile.mkdtemp())
if GRID is None:
    specs = ["heuristic" if x == "heuristic-v1" else f"replay:{x}"
             for x in dict.fromkeys(summarize_runs(store, ids)["extractor_id"])]
    GRID = folder / "grid.toml"
    GRID.write_text(f'name = "nb03"\n[[axes]]\nextractor = {json.dumps(specs)}\n')
if PRICES is None:  # per million tokens; illustrative, not any vendor's
    PRICES = folder / "prices.toml"
    PRICES.write_text("".join(
        f'[models."{m}"]\ninput_per_million = {p}\noutput_per_million = {p}\n'
        for m, p in (("sim-llm-70b-instruct", 0.9), ("sim-llm-34b-instruct", 0.6),
                     ("sim-llm-8b-instruct", 0.1))))
grid = run_grid(store, GRID, progress=False)
grid[["run_id", "action", "extractor_id", "n_verdicts", "n_candidates", "n_errors"]]

# %%
front = frontier(store, grid["run_id"], truth="auto", prices=PRICES, n_boot=1000)
front.table[["run_id", "cost_per_verdict", "latency_ms_p50", "threshold", "f1", "f1_low",
             "f1_high", "dominated"]].round(3)

# %%
if front.table["cost_per_verdict"].notna().any():  # a run is plotted once it has a cost
    frontier_plot(front)
    plt.show()

