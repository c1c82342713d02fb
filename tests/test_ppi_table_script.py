"""Issue 26, "what must be shown": on the bundled sample every ppi interval at 0.70 holds
the simulator's truth, and the README's table is what ``scripts/ppi_table.py`` prints.

Lexical rows only (the semantic rows add minutes, not checks) and 2000 replicates, the
README's: the cells are compared as printed, so a changed sample, estimator or seed
shows here as a README that no longer tells the truth."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts import ppi_table

README = (Path(__file__).resolve().parent.parent / "docs" / "explanation" / "ppi.md").read_text(
    encoding="utf-8")


def _readme_rows() -> dict[str, list[str]]:
    head = "| extractor | truth (simulator) P / R | people, every verdict P / R |"
    lines = README[README.index(head):].splitlines()
    cols = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = {}
    for line in lines[2:5]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = dict(zip(cols, cells, strict=True))
    return rows


def test_every_ppi_interval_on_the_sample_holds_the_truth_and_the_readme_says_so() -> None:
    df = ppi_table.ppi_table(None, [("lexical", "lexical")], ppi_table.N_BOOT)
    assert list(df["extractor"]) == list(ppi_table.EXTRACTORS)
    holds = [c for c in df.columns if c.startswith("lexical + ppi") and "holds" in c]
    assert len(holds) == 3
    assert (df[holds] == "yes").all().all(), df[["extractor", *holds]]
    readme = _readme_rows()
    for _, r in df.iterrows():
        want = readme[r["extractor"]]
        assert want["truth (simulator) P / R"] == f"{r['truth P']} / {r['truth R']}"
        assert want["people, every verdict P / R"] == f"{r['people P']} / {r['people R']}"
        for tag in ("lexical", "lexical + ppi", "lexical + ppi, people without error"):
            assert want[f"{tag} P / R"] == f"{r[f'{tag} P']} / {r[f'{tag} R']}", tag
        assert want["people-matched verdicts"] == str(r["people-matched verdicts"])


@pytest.mark.slow  # the script's table twice (about 20 s of CPU); make test-slow runs it
def test_people_who_err_more_move_the_correction_with_them() -> None:
    """At 0.05 the people's own precision of the good extractor falls, and the corrected
    estimate follows it: the table's second truth is what ppi estimates."""
    bundled = ppi_table.ppi_table(None, [("lexical", "lexical")], 200).set_index("extractor")
    worse = ppi_table.ppi_table(0.05, [("lexical", "lexical")], 200).set_index("extractor")
    assert (bundled["truth P"] == worse["truth P"]).all()  # the simulator's truth: unchanged
    good = "sim-good-v1"
    assert float(worse.at[good, "people P"]) < float(bundled.at[good, "people P"])
    p = {k: float(v.at[good, "lexical + ppi P"].split()[0]) for k, v in
         (("bundled", bundled), ("worse", worse))}
    assert p["worse"] < p["bundled"]
