"""scripts/label_budget_check.py on one dataset: both cases, every metric, a prediction of
the right size, and the summary that docs/how-to/label-budget.md shows."""

from __future__ import annotations

import pandas as pd

from scripts import label_budget_check as check


def test_one_dataset() -> None:
    rows = pd.DataFrame(check.dataset(0, n_boot=200))
    assert sorted(rows["case"].unique()) == ["labels", "ppi"]
    assert len(rows) == 6
    ppi = rows[rows["case"] == "ppi"]
    assert (ppi["to"] == check.N_PEOPLE).all() and (ppi["from"] == check.N_PEOPLE // 4).all()
    labels = rows[rows["case"] == "labels"]
    assert (labels["to"] >= 3 * labels["from"]).all()  # a quarter predicts the whole
    ratio = rows["predicted"] / rows["actual"]
    assert ratio.between(0.5, 2.0).all(), rows
    s = check.summary(rows)
    assert list(s["case"]) == ["labels"] * 3 + ["ppi"] * 3
    assert {"median ratio", "in [0.85, 1.15]", "uncalibrated median"} <= set(s.columns)
