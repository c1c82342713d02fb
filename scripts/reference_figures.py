"""Figures of reference-based evaluation on the bundled sample
(docs/how-to/score-without-labels.md).

    .venv/bin/python scripts/reference_figures.py            # matcher + agreement figures
    .venv/bin/python scripts/reference_figures.py --grid     # also the match-threshold grid
    .venv/bin/python scripts/reference_figures.py --judge    # the judge matcher vs lexical
    .venv/bin/python scripts/reference_figures.py --semantic # the semantic matcher vs lexical
    .venv/bin/python scripts/reference_figures.py --semantic --sample DIR  # another dataset

With ``--semantic``, the semantic matcher (``SemanticMatcher``, the default) is
measured like the lexical one in 1., at its threshold and over a grid of match
thresholds against the simulator's truth (its threshold is tuned against the people's
match labels instead: ``scripts/tune_match_thresholds.py``); ``--semantic`` alone
skips 2.

With ``--judge``, the simulated judge matcher (``SimulatedMatchProvider``,
noise ``--noise``, default 0.05) is recorded on the three simulated extractors'
runs, then replayed from the store (zero live calls) and measured like the
lexical matcher in 1.; ``--judge`` alone skips 2.

1. The lexical matcher against the simulator's lesson-level truth
   (``datasets/sample/lesson_truth.csv``): a lesson should match the
   reference it expresses, unless it repeats an earlier lesson of its
   completion (``duplicate_of``): of a lesson and its repeats only the first
   in greedy order (score descending, lesson index) should match. Precision =
   correct matches / matches; recall = correct matches / lessons that should
   match; split by paraphrase level (the paraphrasing extractor's light and
   heavy rewordings) and extractor.
2. Reference-based (the default matcher, semantic) vs label-based precision and
   recall at gate threshold 0.70
   for the labelled extractors, with 95 % verdict-bootstrap intervals
   (``bootstrap_run``, the sweep's definitions, 2000 replicates, seed 0), and the unlabelled
   paraphrasing extractor and the heuristic scored by references.
"""

from __future__ import annotations

import argparse
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from truss_lab.evaluate._runs import bootstrap_run
from truss_lab.evaluate._sweep import UndefinedMetricWarning
from truss_lab.evaluate._truth import Truth, reference_truth, scored_candidates
from truss_lab.faces._notebook import SAMPLE, load_sample, run_sample_extractions, sample_run_id

EXTRACTORS = ("sim-good-v1", "sim-overconfident-v1", "sim-paraphrase-v1", "heuristic-v1")
LABELLED = ("sim-good-v1", "sim-overconfident-v1")
#: The dataset measured: the bundled sample, or another simulated folder (--sample DIR,
#: e.g. another seed to check a threshold chosen on the sample).
DATA = SAMPLE


def matcher_accuracy(store, threshold: float | None = None,
                     matcher="lexical") -> pd.DataFrame:
    """Lesson-level precision/recall of the matcher (here lexical unless given; the
    toolkit's default is the semantic one) against lesson_truth.csv."""
    truth = pd.read_csv(DATA / "lesson_truth.csv", dtype={"paraphrase": str})
    rows = []
    for ex in EXTRACTORS[:3]:
        kw = {} if threshold is None else {"match_threshold": threshold}
        kw["matcher"] = matcher
        les = reference_truth(store, sample_run_id(ex), **kw).lessons
        d = les.merge(truth.rename(columns={"extractor": "extractor_id",
                                            "reference_id": "true_ref"}),
                      on=["verdict_hash", "extractor_id", "lesson_index"], how="left")
        d["lesson_index"] = d["lesson_index"].astype("int64")
        # Only lessons that can be written take part (NaN salience claims nothing).
        d = d[~d["s"].isna()].reset_index(drop=True)
        # Lessons saying one thing (a lesson and its duplicates) should match once: the
        # first of them in greedy order (score descending, then lesson index).
        meaning = d["duplicate_of"].fillna(d["lesson_index"]).astype("int64")
        first = (d.assign(_m=meaning, _neg=-d["s"])
                 .sort_values(["_neg", "lesson_index"], kind="stable")
                 .duplicated(["verdict_hash", "_m"], keep="first").sort_index())
        target = d["true_ref"].where(~first.to_numpy(), "none").fillna("none")
        pred = d["reference_id"].astype(object).where(d["y"] == 1, "none")
        for part, sel in (("all", np.ones(len(d), bool)),
                          ("light", (d["paraphrase"] == "light").to_numpy()),
                          ("heavy", (d["paraphrase"] == "heavy").to_numpy()),
                          ("repeats", first.to_numpy())):
            if not sel.any():
                continue
            m, t, p = (pred[sel] != "none"), (target[sel] != "none"), pred[sel]
            correct = int((m & (p == target[sel])).sum())
            rows.append({"extractor": ex, "part": part, "lessons": int(sel.sum()),
                         "should_match": int(t.sum()), "matched": int(m.sum()),
                         "correct": correct,
                         "precision": correct / m.sum() if m.sum() else np.nan,
                         "recall": correct / t.sum() if t.sum() else np.nan})
    return pd.DataFrame(rows)


def agreement_at(store, threshold: float = 0.70, n_boot: int = 2000) -> pd.DataFrame:
    """Precision, recall and F1 at ``threshold`` by references and by labels, with the
    sweep's own definitions (:func:`~truss_lab.evaluate._runs.bootstrap_run`: kept is
    what the gate writes, a dropped useful lesson is a miss, every processed verdict
    counts)."""
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        for ex in EXTRACTORS:
            rid = sample_run_id(ex)
            truths = ["references", *(["labels"] if ex in LABELLED else [])]
            for name in truths:
                # The matcher's own numbers (the site's ppi table corrects them).
                b = bootstrap_run(store, rid, truth=Truth.parse(name, correct="none"),
                                  thresholds=[threshold], n_boot=n_boot, random_state=0)
                row = {"extractor": ex, "truth": name, "verdicts": b.n_verdicts}
                for m in ("precision", "recall", "f1", "kept_per_verdict"):
                    row[m] = float(b.table[m].iloc[0])
                    row[m + "_lo"] = float(b.table[m + "_low"].iloc[0])
                    row[m + "_hi"] = float(b.table[m + "_high"].iloc[0])
                rows.append(row)
    return pd.DataFrame(rows)


def label_vs_match(store) -> pd.DataFrame:
    """Labelled lessons of annotated verdicts: majority label against the matched flag
    (the default matcher's)."""
    rows = []
    for ex in LABELLED:
        rid = sample_run_id(ex)
        les = reference_truth(store, rid).lessons
        lab = scored_candidates(store, rid)[["candidate_id", "y"]].rename(columns={"y": "label"})
        d = les.merge(lab, on="candidate_id")
        kept = d["s"] >= 0.70
        ct = pd.crosstab(d["label"], d["y"])
        rows.append({"extractor": ex, "lessons": len(d),
                     "useful&matched": int(ct.loc[1, 1]), "useful&unmatched": int(ct.loc[1, 0]),
                     "not_useful&matched": int(ct.loc[0, 1]),
                     "not_useful&unmatched": int(ct.loc[0, 0]),
                     "kept": int(kept.sum()),
                     "label_precision_annotated": float(d.loc[kept, "label"].mean()),
                     "label_recall_annotated": float(
                         (d["label"][kept]).sum() / d["label"].sum())})
    return pd.DataFrame(rows)


def judge_figures(store, noise: float) -> None:
    """Record the simulated judge matcher on the simulated runs, replay it, measure it."""
    from truss_lab.evaluate import JudgeMatcher, match_run
    from truss_lab.simulate import SimulatedMatchProvider
    from truss_lab.simulate._providers import SIMULATED_MATCH_MODEL

    live = JudgeMatcher(SimulatedMatchProvider(DATA / "lesson_truth.csv",
                                               DATA / "references.jsonl", noise=noise),
                        SIMULATED_MATCH_MODEL, parameters={"temperature": 0})
    for ex in EXTRACTORS[:3]:
        got = match_run(store, sample_run_id(ex), live)
        print(f"recorded {ex}: {got['requests']} requests, {got['recorded']} recorded, "
              f"{len(got['errors'])} errors")
    replay = JudgeMatcher.replay(store, SIMULATED_MATCH_MODEL)
    print(f"== judge matcher (simulated, noise {noise}) vs lesson_truth.csv, replayed, "
          f"match threshold {replay.match_threshold}")
    acc = matcher_accuracy(store, matcher=replay)
    print(acc.round(3).to_string(index=False))
    tot = acc[acc["part"] == "all"][["matched", "correct", "should_match"]].sum()
    print(f"all three: P={tot.correct / tot.matched:.3f} R={tot.correct / tot.should_match:.3f}"
          f"; replay answered {replay.provider.calls} requests, errors {len(replay.errors)}")
    lex = matcher_accuracy(store)
    tot = lex[lex["part"] == "all"][["matched", "correct", "should_match"]].sum()
    print(f"lexical, all three: P={tot.correct / tot.matched:.3f} "
          f"R={tot.correct / tot.should_match:.3f}")


def _totals(acc: pd.DataFrame) -> str:
    """Pair precision/recall of the light and heavy paraphrases and of all three extractors."""
    tot = acc[acc["part"] == "all"][["matched", "correct", "should_match"]].sum()
    lh = {r.part: f"{r.precision:.3f}/{r.recall:.3f}"
          for r in acc[acc["part"].isin(["light", "heavy"])].itertuples()}
    f1 = 2 * tot.correct / (tot.matched + tot.should_match)
    return (f"all P={tot.correct / tot.matched:.3f} R={tot.correct / tot.should_match:.3f} "
            f"F1={f1:.3f}  light P/R={lh.get('light', '-')}  heavy P/R={lh.get('heavy', '-')}")


def semantic_figures(store) -> None:
    """The semantic matcher against the simulator's truth: default threshold, then a grid."""
    from truss_lab.score._matching import SemanticMatcher

    sem = SemanticMatcher()
    print(f"== semantic matcher vs lesson_truth.csv, match threshold {sem.match_threshold}")
    acc = matcher_accuracy(store, matcher=sem)
    print(acc.round(3).to_string(index=False))
    print("semantic:", _totals(acc))
    print("lexical: ", _totals(matcher_accuracy(store)))
    print("== semantic match-threshold grid")
    for t in (0.20, 0.25, 0.30, 0.35, 0.40, 0.45, 0.50, 0.55, 0.60, 0.65, 0.70):
        print(f"  t={t:.2f}: {_totals(matcher_accuracy(store, t, matcher=sem))}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", action="store_true", help="also the match-threshold grid")
    ap.add_argument("--judge", action="store_true",
                    help="the simulated judge matcher (recorded, then replayed) vs lexical")
    ap.add_argument("--noise", type=float, default=0.05,
                    help="the simulated judge matcher's chance of flipping a pair's call")
    ap.add_argument("--semantic", action="store_true",
                    help="the semantic matcher (the default) vs lexical, and its grid")
    ap.add_argument("--sample", type=Path, default=SAMPLE,
                    help="a simulated folder instead of the bundled sample (python -m "
                         "truss_lab.simulate --out DIR --runs 1200 --seed 8)")
    args = ap.parse_args()
    global DATA
    DATA = args.sample
    with tempfile.TemporaryDirectory() as tmp:
        store = load_sample(Path(tmp) / "s.duckdb", sample=DATA)
        run_sample_extractions(store, extractors=EXTRACTORS, write_memory=False)
        pd.set_option("display.width", 200)
        print("== lexical matcher vs lesson_truth.csv (its threshold)")
        print(matcher_accuracy(store).round(3).to_string(index=False))
        if args.judge:
            judge_figures(store, args.noise)
            store.close()
            return
        if args.semantic:
            semantic_figures(store)
            store.close()
            return
        if args.grid:
            print("== match-threshold grid (paraphrasing extractor + all three)")
            for t in (0.10, 0.15, 0.20, 0.22, 0.25, 0.30, 0.35, 0.40):
                a = matcher_accuracy(store, t)
                a = a[a["part"].isin(["light", "heavy", "all"])]
                tot = a[a["part"] == "all"][["matched", "correct", "should_match"]].sum()
                lh = {r.part: f"{r.precision:.3f}/{r.recall:.3f}"
                      for r in a[a["part"].isin(["light", "heavy"])].itertuples()}
                print(f"  t={t:.2f}: all P={tot.correct / tot.matched:.3f} "
                      f"R={tot.correct / tot.should_match:.3f}  light P/R={lh['light']}  "
                      f"heavy P/R={lh['heavy']}")
        print("== reference- vs label-based metrics at 0.70 (95% verdict bootstrap)")
        print(agreement_at(store).round(3).to_string(index=False))
        print("== labelled lessons of annotated verdicts: label vs matched")
        print(label_vs_match(store).round(3).to_string(index=False))
        store.close()


if __name__ == "__main__":
    main()
