"""The site's prediction-powered table on the bundled sample (issue 26, "what must be shown").

Per simulated extractor at gate threshold 0.70: precision and recall by

- the truth: the simulator's true lesson -> reference assignment
  (``datasets/sample/match_truth.csv``) on every annotated verdict, through the
  same one-to-one rule (``PeopleMatcher``);
- the lexical and the semantic matcher, uncorrected (``correct="none"``), with
  their 95 % verdict-bootstrap intervals;
- the people: what the sample's simulated people would say on every annotated
  verdict (the same per-lesson draws, matched by a person everywhere: the sample's
  command with ``--match-share 1``), the quantity ppi is unbiased for;
- ppi: each matcher corrected by the sample's simulated people
  (``match_labels.csv``: a random quarter of the annotated verdicts, each answer wrong
  with the datasheet's probability), with the 95 % ppi-bootstrap interval (2000
  replicates, seed 0), and whether the interval holds the truth and the people's;
- lexical + ppi, people without error: the same, the people's answers on the same
  verdicts replaced by the simulator's truth (what the interval estimates when the
  people are right: it is unbiased for what the people say, not for what is true).

``--match-disagreement D`` redoes the table with the people wrong with probability D
instead (the sample's command with that rate; the same verdicts and draws): how far
their errors move the corrected estimates.

    .venv/bin/python -m scripts.ppi_table [--match-disagreement D]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shlex
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from truss_lab.core._threshold import DEFAULT_MIN_SALIENCE
from truss_lab.evaluate._matches import people_matches
from truss_lab.evaluate._ppi import PeopleMatcher
from truss_lab.evaluate._runs import bootstrap_run, sweep_run
from truss_lab.evaluate._sweep import UndefinedMetricWarning
from truss_lab.evaluate._truth import Truth
from truss_lab.faces._notebook import SAMPLE, load_sample, run_sample_extractions, sample_run_id
from truss_lab.simulate._simulate import main as simulate_main

EXTRACTORS = ("sim-good-v1", "sim-overconfident-v1", "sim-paraphrase-v1")
N_BOOT = 2000


def _matchers() -> list[tuple[str, object]]:
    return [("lexical", "lexical"), ("semantic", "semantic")]


def _samples(tmp: Path, disagreement: float | None) -> tuple[Path, Path]:
    """The sample folder the table loads (the bundled one, or the same sample with the
    people wrong at ``disagreement``) and the people's answers on every annotated
    verdict: the datasheet's command (the one fact of how the sample was made) rerun
    with the people's rate and share changed."""
    sheet = (SAMPLE / "DATASHEET.md").read_text()
    m = re.search(r"^\s*\.venv/bin/python -m truss_lab\.simulate (.+)$", sheet, re.M)
    if m is None:
        raise SystemExit("DATASHEET.md shows no generating command")
    args = shlex.split(m.group(1))
    rate = [] if disagreement is None else ["--match-disagreement", str(disagreement)]
    out = {"sampled": SAMPLE}
    for name, share in (("sampled", []), ("everywhere", ["--match-share", "1"])):
        if name == "sampled" and disagreement is None:
            continue
        args[args.index("--out") + 1] = str(tmp / name)
        with contextlib.redirect_stdout(io.StringIO()):  # its summary is not the table's
            rc = simulate_main([*args, *rate, *share])
        if rc != 0:
            raise SystemExit(f"the simulator failed to write {tmp / name}")
        out[name] = tmp / name
    return out["sampled"], out["everywhere"] / "match_labels.csv"


def _holds(b: pd.Series, p: float, r: float) -> str:
    ok = b["precision_low"] <= p <= b["precision_high"] and b["recall_low"] <= r <= b["recall_high"]
    return "yes" if ok else "NO"


def _cell(r: pd.Series, m: str) -> str:
    return f"{r[m]:.3f} [{r[f'{m}_low']:.3f}, {r[f'{m}_high']:.3f}]"


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m scripts.ppi_table", description=__doc__)
    ap.add_argument("--match-disagreement", type=float, default=None,
                    help="the people's error rate (default: the sample's, as bundled)")
    args = ap.parse_args(argv)
    df = ppi_table(args.match_disagreement, _matchers(), N_BOOT)
    rate = ("as bundled" if args.match_disagreement is None
            else f"wrong with probability {args.match_disagreement}")
    print(f"threshold {DEFAULT_MIN_SALIENCE:.2f}; 95 % intervals, {N_BOOT} verdict-bootstrap "
          f"replicates, seed 0; people {rate}")
    for _, r in df.iterrows():
        print()
        for k, v in r.items():
            print(f"  {k:<44} {v}")
    print()
    print(readme_table(df))


def ppi_table(disagreement: float | None, matchers: list[tuple[str, object]],
              n_boot: int) -> pd.DataFrame:
    """One row per extractor: the truths, each matcher uncorrected and corrected, and
    whether each corrected interval holds the truth (``yes``/``NO`` columns)."""
    t = float(DEFAULT_MIN_SALIENCE)
    warnings.simplefilter("ignore", UndefinedMetricWarning)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        sample, everywhere = _samples(Path(tmp), disagreement)
        store = load_sample(Path(tmp) / "s.duckdb", sample=sample)  # with its match labels
        run_sample_extractions(store, extractors=EXTRACTORS, write_memory=False)
        truth_rows = pd.read_csv(SAMPLE / "match_truth.csv", dtype=str, keep_default_na=False)
        truth_rows["lesson_index"] = truth_rows["lesson_index"].astype(int)
        said = pd.read_csv(everywhere, dtype=str, keep_default_na=False)
        said["lesson_index"] = said["lesson_index"].astype(int)
        # One answer per lesson, as the correction reads the sample's (a share of the
        # verdicts answered by both people: their majority, a disagreement a tie).
        said = people_matches(store, said)
        for ex in EXTRACTORS:
            rid = sample_run_id(ex)
            mine = truth_rows[truth_rows["extractor"] == ex]
            true = sweep_run(store, rid, thresholds=[t], truth=Truth.references(
                matcher=PeopleMatcher(mine), correct="none")).iloc[0]
            theirs = sweep_run(store, rid, thresholds=[t], truth=Truth.references(
                matcher=PeopleMatcher(said[said["extractor"] == ex]), correct="none")).iloc[0]
            people = people_matches(store, run_id=rid)
            # The same verdicts answered without error: the simulator's truth on them.
            labelled = pd.read_csv(sample / "match_labels.csv", dtype=str,
                                   keep_default_na=False)
            incl = labelled.groupby("verdict_hash")["inclusion_probability"].first()
            right = mine[mine["verdict_hash"].isin(people["verdict_hash"])].assign(
                annotator="truth")
            right = right.assign(inclusion_probability=right["verdict_hash"].map(incl)
                                 .astype(float))
            row = {"extractor": ex, "truth P": f"{true['precision']:.3f}",
                   "truth R": f"{true['recall']:.3f}",
                   "people P": f"{theirs['precision']:.3f}",
                   "people R": f"{theirs['recall']:.3f}",
                   "people-matched verdicts": people["verdict_hash"].nunique()}
            for name, m in matchers:
                for corr in ("none", "ppi"):
                    b = bootstrap_run(store, rid, thresholds=[t], n_boot=n_boot,
                                      random_state=0, truth=Truth.references(
                                          matcher=m, correct=corr)).table.iloc[0]
                    tag = name if corr == "none" else f"{name} + ppi"
                    row[f"{tag} P"] = _cell(b, "precision")
                    row[f"{tag} R"] = _cell(b, "recall")
                    if corr == "ppi":
                        row[f"{tag} holds the truth"] = _holds(b, true["precision"],
                                                               true["recall"])
                        row[f"{tag} holds the people's"] = _holds(b, theirs["precision"],
                                                                  theirs["recall"])
            b = bootstrap_run(store, rid, thresholds=[t], n_boot=n_boot, random_state=0,
                              truth=Truth.references(matcher="lexical", correct="ppi",
                                                     match_labels=right)
                              ).table.iloc[0]
            row["lexical + ppi, people without error P"] = _cell(b, "precision")
            row["lexical + ppi, people without error R"] = _cell(b, "recall")
            row["lexical + ppi, people without error holds the truth"] = _holds(
                b, true["precision"], true["recall"])
            rows.append(row)
        store.close()
    return pd.DataFrame(rows)


def readme_table(df: pd.DataFrame) -> str:
    """The site's table (markdown): per extractor each estimate as ``P / R``."""
    tags = [c[:-2] for c in df.columns if c.endswith(" P") and c not in ("truth P", "people P")]
    head = ["extractor", "truth (simulator) P / R", "people, every verdict P / R",
            *(f"{t} P / R" for t in tags),
            "people-matched verdicts"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for _, r in df.iterrows():
        cells = [r["extractor"], f"{r['truth P']} / {r['truth R']}",
                 f"{r['people P']} / {r['people R']}",
                 *(f"{r[f'{t} P']} / {r[f'{t} R']}" for t in tags),
                 str(r["people-matched verdicts"])]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
