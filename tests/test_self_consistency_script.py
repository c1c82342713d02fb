"""Issue 27 item 5: scripts/measure_self_consistency.py gives the same figures on every
run (they no longer follow the order a query returned rows in), and the README's table
is what it prints."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from scripts import measure_self_consistency as msc

README = (Path(__file__).resolve().parent.parent / "docs" / "how-to"
          / "live-or-batch.md").read_text(encoding="utf-8")


def _representatives(n_verdicts: int = 120, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for v in range(n_verdicts):
        for s in range(3):
            for li in range(int(rng.integers(1, 4))):
                useful = int(rng.random() < 0.5)
                rows.append({"verdict_hash": f"{v:064x}", "sample_index": s, "lesson_index": li,
                             "salience": float(np.clip(rng.normal(0.4 + 0.3 * useful, 0.2),
                                                       0, 1)),
                             "self_consistency": float(rng.integers(1, 4) / 3),
                             "useful_true": useful})
    return pd.DataFrame(rows)


def test_figures_do_not_depend_on_row_order() -> None:
    d = _representatives()
    want = msc.figures(d, "x", 3)
    for seed in range(3):
        shuffled = d.sample(frac=1.0, random_state=seed).reset_index(drop=True)
        assert msc.figures(shuffled, "x", 3) == want
    assert want["test_lessons"] > 0 and want["representatives"] == len(d)


@pytest.mark.slow
def test_the_readme_table_is_what_the_script_prints() -> None:
    rows = msc.measure(5, 1200, 7, ["sim-good-v1", "sim-overconfident-v1"])
    table = msc.table(rows)
    assert table in README, table
    # The one command that prints it is the one the README names.
    assert re.search(r"measure_self_consistency\.py --samples 5 --table", README)
