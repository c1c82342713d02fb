"""What people say of the simulated lessons: gold labels, reference lessons, and the latent truth.

Simulated gold labels, the latent truth they were drawn from, and defect counts.

Two noisy annotators label every candidate (a lesson a parser can read, with
text) of every labelled extractor; ``ann-a`` labels all of them, ``ann-b`` two
in five. Their draws come from one stream (``stream(seed, 3)``), extractor by
extractor in the order given (an unlabelled extractor draws nothing).

:func:`lesson_truth_rows` writes the lesson-level truth of every extractor:
which reference each lesson expresses, what it duplicates, whether it is
generic, ungrounded or a paraphrase.

Simulated reference lessons (FORMATS.md §4): what an expert says a verdict should teach.

The latent truth of a verdict is one useful lesson per failed check: its
reference ``r<k>`` is the lesson of the k-th failed check in display order, and
a pass verdict teaches nothing. Annotators write some of them down in their own
wording (``reference_text``): ``ann-a`` annotates a seeded share of
the verdicts, ``ann-b`` a share of those too and now and then leaves out a
reference after the first (so the two can disagree); the other verdicts are
not annotated. Reference ids name the latent lesson, so ``r2`` of ``ann-a``
and ``r2`` of ``ann-b`` are the same lesson worded twice, and the lesson-level
truth's ``reference_id`` says which one an extractor's lesson expresses.

All draws come from one stream (``stream(seed, 4)``), so references do not
depend on which extractors are simulated.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np

from ._completions import (
    K_EXACT_DUP,
    K_GENERIC,
    K_NEAR_DUP,
    K_UNGROUNDED,
    KIND_NAMES,
    PARSEABLE,
    TEXT_NAMES,
    Completions,
)
from ._verdicts import Verdicts
from ._words import CHECKS, N_SYNONYMS, PARAPHRASE_NAMES, reference_text, stream

__all__ = [
    "ANNOTATED_SHARE",
    "BOTH_SHARE",
    "LESSON_TRUTH_HEADER",
    "REFERENCE_ANNOTATORS",
    "defect_counts",
    "label_rows",
    "lesson_truth_rows",
    "reference_lines",
]


LESSON_TRUTH_HEADER = ("verdict_hash,extractor,lesson_index,lesson_kind,reference_id,"
                       "duplicate_of,generic,ungrounded,paraphrase,has_evidence,candidate,"
                       "p_useful,useful_true,meaning")


def label_rows(
    seed: int, comps: Sequence[Completions], names: Sequence[str], hashes: Sequence[str],
    labelled: Sequence[bool] | None = None,
) -> tuple[list[str], list[str]]:
    """CSV rows (without header) of labels.csv and truth.csv.

    ``comps[k]`` is extractor ``names[k]``'s completions of the verdicts
    ``hashes``; only extractors with ``labelled[k]`` (default all) are
    labelled. Labels are ordered by verdict, extractor, lesson index and
    annotator; truth rows by verdict, extractor and lesson index.
    """
    h_arr = np.array(hashes)
    lab_parts, truth_parts = [], []
    rng_lab = stream(seed, 3)
    for k, c in enumerate(comps):
        if labelled is not None and not labelled[k]:
            continue
        m = c.candidate
        vi, li = c.comp[m], c.index[m]
        pu, ut = c.p_useful[m], c.useful[m]
        nc = int(m.sum())
        # Annotator noise is largest where the truth is least clear-cut (p near 0.5).
        flip_a = rng_lab.random(nc) < 0.03 + 0.3 * pu * (1 - pu)
        flip_b = rng_lab.random(nc) < 0.05 + 0.4 * pu * (1 - pu)
        has_b = rng_lab.random(nc) < 0.4
        ya = (ut ^ flip_a).astype(np.int64)
        yb = (ut ^ flip_b).astype(np.int64)
        lab_parts.append((np.concatenate([vi, vi[has_b]]), np.full(nc + int(has_b.sum()), k),
                          np.concatenate([li, li[has_b]]), np.concatenate([ya, yb[has_b]]),
                          np.concatenate([np.zeros(nc, int), np.ones(int(has_b.sum()), int)])))
        truth_parts.append((vi, np.full(nc, k), li, pu, ut.astype(np.int64), c.kind[m]))

    if not lab_parts:
        return [], []
    vi, ki, li, y, ann = (np.concatenate(a) for a in zip(*lab_parts, strict=True))
    o = np.lexsort((ann, li, ki, vi))
    name_arr = np.array(list(names))
    ann_names = np.array(["ann-a", "ann-b"])
    lab_rows = [",".join(r) for r in zip(h_arr[vi[o]], name_arr[ki[o]], li[o].astype(str),
                                         y[o].astype(str), ann_names[ann[o]], strict=True)]
    tvi, tki, tli, tpu, tut, tkind = (np.concatenate(a) for a in zip(*truth_parts, strict=True))
    o = np.lexsort((tli, tki, tvi))
    kind_names = np.array(KIND_NAMES)
    truth_rows = [",".join(r) for r in zip(
        h_arr[tvi[o]], name_arr[tki[o]], tli[o].astype(str),
        np.char.mod("%.4f", tpu[o]), tut[o].astype(str), kind_names[tkind[o]], strict=True)]
    return lab_rows, truth_rows


def defect_counts(c: Completions) -> dict[str, int]:
    """What one extractor's completions actually hold (``SimulationResult.defects``)."""
    # Lesson-level counts cover only lessons a reader can see (parseable completions).
    seen = np.isin(c.text_kind, PARSEABLE)[c.comp]
    counts = {f"text:{TEXT_NAMES[t]}": int((c.text_kind == t).sum())
              for t in range(len(TEXT_NAMES))}
    counts["lessons"] = int(seen.sum())
    for name, code, arr in (("salience:missing", 1, c.sal_defect),
                            ("salience:out_of_range", 2, c.sal_defect),
                            ("salience:not_a_number", 3, c.sal_defect),
                            ("salience:null", 4, c.sal_defect),
                            ("lesson_text:empty", 1, c.text_defect),
                            ("lesson_text:null", 2, c.text_defect)):
        counts[name] = int(((arr == code) & seen).sum())
    for kk in (K_UNGROUNDED, K_EXACT_DUP, K_NEAR_DUP, K_GENERIC):
        counts[f"kind:{KIND_NAMES[kk]}"] = int(((c.kind == kk) & seen).sum())
    return dict(sorted(counts.items()))


def lesson_truth_rows(
    comps: Sequence[Completions], names: Sequence[str], hashes: Sequence[str],
) -> list[str]:
    """CSV rows (without header, :data:`LESSON_TRUTH_HEADER`) of lesson_truth.csv.

    One row per lesson of every extractor (also those a reader cannot see:
    ``candidate`` says which it can), ordered by verdict, extractor and lesson
    index. ``duplicate_of`` is the index of the first earlier lesson of the
    same completion that says the same thing (same ``meaning``).
    """
    rows: list[tuple[int, int, int, str]] = []
    for k, c in enumerate(comps):
        first: dict[tuple[int, str], int] = {}
        comp_l, idx_l, kind_l = c.comp.tolist(), c.index.tolist(), c.kind.tolist()
        for i in range(len(comp_l)):
            key = (comp_l[i], c.meaning[i])
            dup = first.setdefault(key, idx_l[i])
            m = c.meaning[i]
            rank = int(c.ref_rank[i])
            rows.append((comp_l[i], k, idx_l[i], ",".join((
                hashes[comp_l[i]], names[k], str(idx_l[i]), KIND_NAMES[kind_l[i]],
                f"r{rank}" if rank else "none", str(dup) if dup != idx_l[i] else "",
                str(int(m.startswith("generic:"))), str(int(m.startswith("ungrounded:"))),
                PARAPHRASE_NAMES[int(c.paraphrase[i])], str(int(c.has_evidence[i])),
                str(int(c.candidate[i])), f"{c.p_useful[i]:.4f}", str(int(c.useful[i])), m))))
    rows.sort(key=lambda r: r[:3])
    return [r[3] for r in rows]



ANNOTATED_SHARE = 0.35  # verdicts ann-a annotates
BOTH_SHARE = 0.4  # of those, the share ann-b annotates too
_B_OMITS = 0.1  # P(ann-b leaves out a reference after the first)
_SYN_RATE = 0.15  # share of synonyms an annotator's own wording swaps in
REFERENCE_ANNOTATORS = ("ann-a", "ann-b")


def reference_lines(seed: int, v: Verdicts, hashes: Sequence[str]) -> list[str]:
    """The JSONL lines of references.jsonl: by verdict, annotator, reference id."""
    rng = stream(seed, 4)
    runs = len(hashes)
    annotated = rng.random(runs) < ANNOTATED_SHARE
    both = annotated & (rng.random(runs) < BOTH_SHARE)
    lines: list[str] = []
    for i in np.flatnonzero(annotated).tolist():
        slots = [j for j in range(int(v.n_chk[i])) if v.failed[i, j]]
        for a, ann in enumerate(REFERENCE_ANNOTATORS[: 2 if both[i] else 1]):
            recs = []
            for k, j in enumerate(slots, start=1):
                # Drawn per written reference (in file order), not for every
                # verdict, so a large simulation does not hold them all at once.
                u = rng.random(2 + N_SYNONYMS)  # omit?, frame, synonyms
                if a == 1 and k > 1 and u[0] < _B_OMITS:
                    continue
                c = CHECKS[int(v.chk[i, j])]
                text = reference_text(ann, c, v.obj[i], float(u[1]), u[2:], _SYN_RATE)
                recs.append({"verdict_hash": hashes[i], "reference_id": f"r{k}", "text": text,
                             "evidence": ["check:" + c.name], "annotator": ann})
            if not recs:  # a pass verdict: this annotator says it teaches nothing
                recs.append({"verdict_hash": hashes[i], "reference_id": "none", "text": "",
                             "evidence": [], "annotator": ann})
            lines.extend(json.dumps(r, ensure_ascii=False, separators=(",", ":"))
                         for r in recs)
    return lines
