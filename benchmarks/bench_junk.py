"""Benchmark: near-duplicate detection for junk_flags, quality and speed.

Methods compared:

- ``jaccard`` (ours, truss_lab.score._junk over score._similarity): exact
  token-set Jaccard >= 0.7 on candidate pairs, same identifiers (check names)
  required; all pairs in small groups, numpy MinHash/LSH candidates in large ones;
- ``rapidfuzz`` (the BASELINE, the off-the-shelf choice):
  ``fuzz.token_set_ratio`` >= 90 via ``process.cdist``.

Prints, from one run:

1. precision / recall / F1 on hand-made labelled pairs (true duplicates,
   rewordings, paraphrases with other words, near-miss unrelated lessons);
2. precision / recall of ``duplicate_in_verdict`` on the bundled sample
   against its simulator truth (lesson_kind duplicate / near_duplicate), and
   of ``ungrounded`` (truth lesson_kind ungrounded);
3. time to flag in-run duplicates among N lessons in ONE run (default 20 000,
   mostly unique texts): ours / baseline (goal <= 0.5; the baseline is timed on
   3 000 and scaled quadratically unless --full-baseline), and our LSH recall
   against exact all-pairs Jaccard on a 3 000-lesson subset (goal >= 0.95).

Run: ``.venv/bin/python -m benchmarks.bench_junk`` (``--quick`` for 2 000 lessons,
the baseline timed on 600 and extrapolated, recall on 1 500).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import pandas as pd
from rapidfuzz import fuzz, process  # benchmark-only dependency

from benchmarks._result import result
from tests.builders.stores import SAMPLE
from truss_lab.extract._parser import parse_completion
from truss_lab.score._junk import _dup_within, junk_flags
from truss_lab.score._similarity import TokenSets, similar_pairs

RF_CUTOFF = 90

# (a, b, is_duplicate)
PAIRS: list[tuple[str, str, bool]] = [
    ("Pin the scheduler timezone to UTC.", "Pin the scheduler timezone to UTC", True),
    ("Pin the scheduler timezone to UTC", "Always pin the scheduler's timezone to UTC", True),
    ("Run the tests.", "Run the tests. (important)", True),
    ("Keep the code clean and readable.", "keep the code clean and readable", True),
    ("Double-check the work before marking the contract complete",
     "Remember: double-check the work before marking the contract complete.", True),
    ("Test DST transitions for every scheduled job.",
     "For every scheduled job, test the DST transitions.", True),
    ("Add a canary stage before full rollout",
     "Add a canary stage before the full rollout of a deploy", True),
    ("Verify the rollback path in staging before deploying",
     "Before deploying, verify the rollback path in staging", True),
    ("The tz_regression check caught the bug; keep it in the suite.",
     "Keep the tz_regression check in the suite: it caught the bug.", True),
    ("Map every provider error code to a user-facing error",
     "Map every provider error code to a user facing error message", True),
    ("The perf_budget check is cheap and caught nothing, but keep it for refactor contracts.",
     "Remember: the perf_budget check is cheap and caught nothing, but keep it for refactor "
     "contracts.", True),
    ("Refresh OAuth tokens ahead of expiry", "Refresh the OAuth tokens well ahead of expiry", True),
    # paraphrases with other words: true duplicates that word overlap cannot see
    ("Check for DST bugs in cron jobs", "Look for daylight-saving errors in scheduled jobs", True),
    ("Ask for a review before merging.", "Get a code review before you merge.", True),
    # unrelated or near-miss pairs
    ("The ci_matrix check is cheap and caught nothing this time",
     "The late_data check is cheap and caught nothing this time", False),
    ("Run the tests", "Run the tests before deploying to production", False),
    ("Check the DST handling of the scheduler", "Check the retry handling of the scheduler",
     False),
    ("Pin the scheduler timezone to UTC", "Monitor the system after making changes", False),
    ("Increase the rate limit backoff", "Decrease the rate limit backoff", False),
    ("Use pagination for list endpoints", "Use caching for list endpoints", False),
    ("Document decisions as they are made.", "Break large tasks into smaller steps.", False),
    ("Keep the changelog entry linked from the release notes",
     "Keep the release notes short", False),
    ("Retry failed webhook deliveries with backoff", "Log failed webhook deliveries", False),
    ("Run migrations before deploying the app", "Run the app before deploying migrations",
     False),  # same words, different meaning: word sets cannot tell (a known limit)
    ("Run schema migration 0042 before the backfill",
     "Run schema migration 0043 before the backfill", False),
]


def prf(pred: np.ndarray, true: np.ndarray) -> tuple[float, float, float]:
    tp = int((pred & true).sum())
    p = tp / max(int(pred.sum()), 1)
    r = tp / max(int(true.sum()), 1)
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f


def pairs_ours(threshold: float = 0.7) -> np.ndarray:
    rows = []
    for k, (a, b, _) in enumerate(PAIRS):
        rows += [(f"p{k}", 0, a), (f"p{k}", 1, b)]
    c = pd.DataFrame(rows, columns=["verdict_hash", "lesson_index", "text"])
    c["run_id"], c["evidence"] = "r", [["x"]] * len(c)
    v = pd.DataFrame({"verdict_hash": c["verdict_hash"].unique(), "summary": "",
                      "checks": [[]] * len(PAIRS)})
    f = junk_flags(c, v, threshold=threshold)
    return f["duplicate_in_verdict"].to_numpy()[1::2]


def pairs_rapidfuzz(cutoff: int = RF_CUTOFF) -> np.ndarray:
    return np.array([fuzz.token_set_ratio(a, b) >= cutoff for a, b, _ in PAIRS])


def sample_frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    s = SAMPLE
    comp = pd.read_json(s / "completions.jsonl", lines=True, dtype=False)
    rows = []
    for vh, ex, text in zip(comp["verdict_hash"], comp["extractor"], comp["text"], strict=True):
        for le in parse_completion(text).lessons:
            if le.text:
                rows.append((vh, ex, le.lesson_index, le.text, list(le.evidence)))
    cand = pd.DataFrame(rows, columns=["verdict_hash", "run_id", "lesson_index", "text",
                                       "evidence"])
    truth = pd.read_csv(s / "truth.csv").rename(columns={"extractor": "run_id"})
    cand = cand.merge(truth, on=["verdict_hash", "run_id", "lesson_index"], how="inner")
    journal = [json.loads(x) for x in (s / "journal.jsonl").read_text().splitlines()]
    verdicts = pd.DataFrame({"verdict_hash": [e["hash"] for e in journal],
                             "payload": [e["payload"] for e in journal]})
    return cand, verdicts


def sample_rapidfuzz(cand: pd.DataFrame) -> np.ndarray:
    out = np.zeros(len(cand), dtype=bool)
    for _, g in cand.groupby(["run_id", "verdict_hash"], sort=False):
        idx = g.sort_values("lesson_index").index.to_numpy()
        texts = cand.loc[idx, "text"].tolist()
        if len(texts) < 2:
            continue
        m = process.cdist(texts, texts, scorer=fuzz.token_set_ratio, dtype=np.uint8)
        earlier = np.tril(m >= RF_CUTOFF, -1).any(axis=1)
        out[cand.index.get_indexer(idx)] = earlier
    return out


def synthetic(n: int, seed: int = 0) -> list[str]:
    """n mostly unique lessons: sample lesson texts with random word edits."""
    cand, _ = sample_frames()
    base = cand["text"].drop_duplicates().tolist()
    rng = np.random.default_rng(seed)
    vocab = [f"w{i}" for i in range(5000)] + ["service", "queue", "cache", "retry", "index",
                                               "deploy", "metric", "alert", "budget", "token"]
    out = []
    for _ in range(n):
        words = base[int(rng.integers(len(base)))].split()
        for _edit in range(int(rng.integers(1, 4))):
            op = rng.random()
            pos = int(rng.integers(len(words) + 1))
            if op < 0.6:
                words.insert(pos, vocab[int(rng.integers(len(vocab)))])
            elif len(words) > 3:
                words.pop(min(pos, len(words) - 1))
        out.append(" ".join(words))
    return out


def time_ours(texts: list[str]) -> tuple[float, np.ndarray]:
    sets = TokenSets(pd.Series(texts, dtype=object))
    t = time.perf_counter()
    flags = _dup_within(sets, np.zeros(len(texts), dtype=object), np.arange(len(texts)),
                        0.7, "auto")
    return time.perf_counter() - t, flags


def time_rapidfuzz(texts: list[str]) -> tuple[float, np.ndarray]:
    t = time.perf_counter()
    uniq = pd.Series(texts).drop_duplicates()
    flags = np.ones(len(texts), dtype=bool)
    flags[uniq.index.to_numpy()] = False
    u = uniq.tolist()
    any_earlier = np.zeros(len(u), dtype=bool)
    step = 2000  # bounded memory: rows of the score matrix in blocks
    for s in range(0, len(u), step):
        m = process.cdist(u[s:s + step], u[:s + step], scorer=fuzz.token_set_ratio,
                          dtype=np.uint8, score_cutoff=RF_CUTOFF, workers=-1)
        tri = np.arange(m.shape[1])[None, :] < (s + np.arange(m.shape[0]))[:, None]
        any_earlier[s:s + step] = ((m >= RF_CUTOFF) & tri).any(axis=1)
    flags[uniq.index.to_numpy()] = any_earlier
    return time.perf_counter() - t, flags


def lsh_recall(texts: list[str]) -> tuple[float, int]:
    sets = TokenSets(pd.Series(texts, dtype=object))
    items = np.arange(len(texts))
    g = np.zeros(len(texts), dtype=np.int64)
    ei, ej = similar_pairs(sets, items, g, threshold=0.7, method="all")
    li, lj = similar_pairs(sets, items, g, threshold=0.7, method="lsh")
    exact = set(zip(ei.tolist(), ej.tolist(), strict=True))
    found = set(zip(li.tolist(), lj.tolist(), strict=True))
    return len(exact & found) / max(len(exact), 1), len(exact)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2 000 lessons instead of 20 000")
    ap.add_argument("--n", type=int, default=None, help="lessons in the speed test")
    ap.add_argument("--full-baseline", action="store_true",
                    help="time rapidfuzz on all n lessons (slow: quadratic)")
    args = ap.parse_args()
    n = args.n or (2000 if args.quick else 20000)
    m_base, m_recall = (600, 1500) if args.quick else (3000, 3000)

    truth = np.array([d for _, _, d in PAIRS])
    f1s: dict[str, float] = {}
    print(f"1. hand-made pairs ({len(PAIRS)}: {truth.sum()} duplicates, "
          f"{(~truth).sum()} not)")
    for name, pred in [("jaccard>=0.7 (ours)", pairs_ours(0.7)),
                       ("jaccard>=0.6", pairs_ours(0.6)),
                       ("jaccard>=0.8", pairs_ours(0.8)),
                       (f"rapidfuzz token_set_ratio>={RF_CUTOFF} (baseline)", pairs_rapidfuzz()),
                       ("rapidfuzz token_set_ratio>=80", pairs_rapidfuzz(80))]:
        p, r, f = prf(pred, truth)
        f1s[name] = f
        print(f"   {name:45s} precision {p:.2f}  recall {r:.2f}  F1 {f:.2f}")

    cand, verdicts = sample_frames()
    true_dup = cand["lesson_kind"].isin(["duplicate", "near_duplicate"]).to_numpy()
    flags = junk_flags(cand, verdicts)
    print(f"2. sample ({len(cand)} labelled lessons, {true_dup.sum()} true in-verdict dups)")
    for name, pred in [("jaccard (ours)", flags["duplicate_in_verdict"].to_numpy()),
                       ("rapidfuzz (baseline)", sample_rapidfuzz(cand))]:
        p, r, f = prf(pred, true_dup)
        f1s["sample " + name] = f
        print(f"   duplicate_in_verdict {name:22s} precision {p:.3f}  recall {r:.3f}  F1 {f:.3f}")
    # The simulator labels a generic platitude drawn twice for one verdict
    # "generic", not "duplicate": count exact repeats as duplicates too.
    seen = cand.sort_values("lesson_index").duplicated(["run_id", "verdict_hash", "text"])
    true_dup2 = true_dup | seen.reindex(cand.index).to_numpy()
    p, r, f = prf(flags["duplicate_in_verdict"].to_numpy(), true_dup2)
    print(f"   duplicate_in_verdict, exact repeats counted as true ({true_dup2.sum()}): "
          f"precision {p:.3f}  recall {r:.3f}")
    true_ung = (cand["lesson_kind"] == "ungrounded").to_numpy()
    p, r, f = prf(flags["ungrounded"].to_numpy(), true_ung)
    print(f"   ungrounded (truth kind ungrounded, {true_ung.sum()})   precision {p:.3f}  "
          f"recall {r:.3f}")
    p, r, f = prf((flags["ungrounded"] | flags["no_evidence"]).to_numpy(), true_ung)
    print(f"   ungrounded | no_evidence vs the same truth:  recall {r:.3f} (the rest cite "
          "no check at all)")

    restate = [
        ("Job migrated but timezone handling regressed.", True),
        ("Timezone handling regressed after the migration", True),
        ("The job migrated, but timezone handling regressed", True),
        ("Lesson: the job migrated but the timezone handling regressed", True),
        ("Timezone handling regressed", True),
        ("Pin the scheduler timezone to UTC and test the DST transition", False),
        ("Add a regression test for timezone handling in the scheduler", False),
        ("Migrate jobs one at a time and compare their next fire times", False),
        ("Regressed", False),
    ]
    rc = pd.DataFrame({"run_id": "r", "verdict_hash": "v", "lesson_index": range(len(restate)),
                       "text": [t for t, _ in restate], "evidence": [["check:x"]] * len(restate)})
    rv = pd.DataFrame({"verdict_hash": ["v"], "checks": [[{"name": "x"}]],
                       "summary": ["Job migrated but timezone handling regressed"]})
    pred = junk_flags(rc, rv)["restates_summary"].to_numpy()
    p, r, f = prf(pred, np.array([d for _, d in restate]))
    print(f"   restates_summary on {len(restate)} hand-made lessons: precision {p:.2f}  "
          f"recall {r:.2f}")

    texts = synthetic(n)
    t_ours, f_ours = time_ours(texts)
    m = n if args.full_baseline else min(n, m_base)
    t_rf, f_rf = time_rapidfuzz(texts[:m])
    t_rf_n = t_rf * (n / m) ** 2  # all-pairs: quadratic in the number of lessons
    print(f"3. in-run duplicates among {n} lessons in one run (2 cores)")
    print(f"   ours (MinHash/LSH + exact Jaccard): {t_ours:7.2f} s, {f_ours.sum()} flagged")
    note = "measured" if m == n else f"measured {t_rf:.1f} s on {m}, x (n/{m})^2"
    print(f"   baseline rapidfuzz cdist:           {t_rf_n:7.2f} s ({note})")
    print(f"   on the first {m}: ours flags {time_ours(texts[:m])[1].sum()}, "
          f"rapidfuzz {f_rf.sum()} (token_set_ratio scores a subset as 100)")
    result(f"junk: in-run duplicates, {n} lessons: time / rapidfuzz", t_ours, "s",
           baseline=t_rf_n, ratio=t_ours / t_rf_n, goal="<= 0.5",
           baseline_name="rapidfuzz cdist" + (" (extrapolated)" if m != n else ""))
    for label, ours, theirs in (
            ("hand-made pairs", "jaccard>=0.7 (ours)",
             f"rapidfuzz token_set_ratio>={RF_CUTOFF} (baseline)"),
            ("the sample", "sample jaccard (ours)", "sample rapidfuzz (baseline)")):
        a, b = f1s[ours], f1s[theirs]
        result(f"  junk: duplicate F1 on {label}, ours / rapidfuzz (info)", a, "F1",
               baseline=b, ratio=a / b if b else None, baseline_name="rapidfuzz")
    big = pd.DataFrame({"run_id": "r", "verdict_hash": cand["verdict_hash"].sample(
        n, replace=True, random_state=0).to_numpy(), "lesson_index": np.arange(n) % 5,
        "text": texts, "evidence": cand["evidence"].sample(n, replace=True,
                                                           random_state=1).to_numpy()})
    t = time.perf_counter()
    junk_flags(big, verdicts)
    print(f"   all of junk_flags (every detector) on {n} lessons: "
          f"{time.perf_counter() - t:.2f} s")
    rec, n_exact = lsh_recall(texts[:m_recall])
    print(f"   LSH recall vs exact all-pairs on {m_recall} lessons: {rec:.3f} of {n_exact} pairs")
    result(f"junk: LSH recall vs exact all-pairs ({m_recall} lessons)", rec, "recall",
           baseline=1.0, ratio=rec, goal=">= 0.95", baseline_name=f"{n_exact} exact pairs")


if __name__ == "__main__":
    main()
