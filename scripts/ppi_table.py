"""The README's prediction-powered table on the bundled sample (issue 26, "what must be shown").

Per simulated extractor at gate threshold 0.70: precision and recall by

- the truth: the simulator's true lesson -> reference assignment
  (``datasets/sample/match_truth.csv``) on every annotated verdict, through the
  same one-to-one rule (``PeopleMatcher``);
- the lexical and the semantic matcher, uncorrected (``correct="none"``), with
  their 95 % verdict-bootstrap intervals;
- ppi: each matcher corrected by the sample's simulated people
  (``match_labels.csv``: a random quarter of the annotated verdicts, answers wrong
  with probability 0.05), with the 95 % ppi-bootstrap interval (2000 replicates,
  seed 0), and whether the interval holds the truth;
- lexical + ppi, people without error: the same, the people's answers on the same
  verdicts replaced by the simulator's truth (what the interval estimates when the
  people are right: it is unbiased for what the people say, not for what is true).

    .venv/bin/python -m scripts.ppi_table      # needs the semantic extra for its rows
"""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

import pandas as pd

from truss_lab.core._threshold import DEFAULT_MIN_SALIENCE
from truss_lab.evaluate._matches import people_matches
from truss_lab.evaluate._ppi import PeopleMatcher
from truss_lab.evaluate._runs import bootstrap_run, sweep_run
from truss_lab.evaluate._sweep import UndefinedMetricWarning
from truss_lab.faces._notebook import SAMPLE, load_sample, run_sample_extractions, sample_run_id
from truss_lab.ingest._ingest import ingest_match_labels

EXTRACTORS = ("sim-good-v1", "sim-overconfident-v1", "sim-paraphrase-v1")
N_BOOT = 2000


def _matchers() -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = [("lexical", None)]
    try:
        from truss_lab.score._matching import SemanticMatcher  # the optional extra

        out.append(("semantic", SemanticMatcher()))
    except Exception as exc:
        print(f"semantic matcher unavailable ({exc}); its rows are left out")
    return out


def _cell(r: pd.Series, m: str) -> str:
    return f"{r[m]:.3f} [{r[f'{m}_low']:.3f}, {r[f'{m}_high']:.3f}]"


def main() -> None:
    t = float(DEFAULT_MIN_SALIENCE)
    warnings.simplefilter("ignore", UndefinedMetricWarning)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        store = load_sample(Path(tmp) / "s.duckdb")
        run_sample_extractions(store, extractors=EXTRACTORS, write_memory=False)
        ingest_match_labels(store, SAMPLE / "match_labels.csv")
        truth_rows = pd.read_csv(SAMPLE / "match_truth.csv", dtype=str, keep_default_na=False)
        truth_rows["lesson_index"] = truth_rows["lesson_index"].astype(int)
        matchers = _matchers()
        for ex in EXTRACTORS:
            rid = sample_run_id(ex)
            mine = truth_rows[truth_rows["extractor"] == ex]
            true = sweep_run(store, rid, truth="references", thresholds=[t], correct="none",
                             matcher=PeopleMatcher(mine)).iloc[0]
            people = people_matches(store, run_id=rid)
            # The same verdicts answered without error: the simulator's truth on them.
            labelled = pd.read_csv(SAMPLE / "match_labels.csv", dtype=str,
                                   keep_default_na=False)
            incl = labelled.groupby("verdict_hash")["inclusion_probability"].first()
            right = mine[mine["verdict_hash"].isin(people["verdict_hash"])].assign(
                annotator="truth")
            right = right.assign(inclusion_probability=right["verdict_hash"].map(incl)
                                 .astype(float))
            row = {"extractor": ex, "truth P": f"{true['precision']:.3f}",
                   "truth R": f"{true['recall']:.3f}",
                   "people-matched verdicts": people["verdict_hash"].nunique()}
            for name, m in matchers:
                for corr in ("none", "ppi"):
                    b = bootstrap_run(store, rid, truth="references", matcher=m,
                                      thresholds=[t], n_boot=N_BOOT, random_state=0,
                                      correct=corr).table.iloc[0]
                    tag = name if corr == "none" else f"{name} + ppi"
                    row[f"{tag} P"] = _cell(b, "precision")
                    row[f"{tag} R"] = _cell(b, "recall")
                    if corr == "ppi":
                        row[f"{tag} covers"] = (
                            "yes" if (b["precision_low"] <= true["precision"]
                                      <= b["precision_high"]
                                      and b["recall_low"] <= true["recall"] <= b["recall_high"])
                            else "NO")
            b = bootstrap_run(store, rid, truth="references", thresholds=[t], n_boot=N_BOOT,
                              random_state=0, correct="ppi", match_labels=right).table.iloc[0]
            row["lexical + ppi, people without error P"] = _cell(b, "precision")
            row["lexical + ppi, people without error R"] = _cell(b, "recall")
            row["lexical + ppi, people without error covers"] = (
                "yes" if (b["precision_low"] <= true["precision"] <= b["precision_high"]
                          and b["recall_low"] <= true["recall"] <= b["recall_high"]) else "NO")
            rows.append(row)
        store.close()
    df = pd.DataFrame(rows)
    print(f"threshold {t:.2f}; 95 % intervals, {N_BOOT} verdict-bootstrap replicates, seed 0")
    for _, r in df.iterrows():
        print()
        for k, v in r.items():
            print(f"  {k:<44} {v}")
    print()
    print(readme_table(df))


def readme_table(df: pd.DataFrame) -> str:
    """The README's table (markdown): per extractor each estimate as ``P / R``."""
    tags = [c[:-2] for c in df.columns if c.endswith(" P") and c != "truth P"]
    head = ["extractor", "truth (simulator) P / R", *(f"{t} P / R" for t in tags),
            "people-matched verdicts"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for _, r in df.iterrows():
        cells = [r["extractor"], f"{r['truth P']} / {r['truth R']}",
                 *(f"{r[f'{t} P']} / {r[f'{t} R']}" for t in tags),
                 str(r["people-matched verdicts"])]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
