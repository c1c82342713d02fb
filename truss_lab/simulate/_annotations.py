"""What people say of the simulated lessons: gold labels, reference lessons, and the latent truth.

Simulated gold labels, the latent truth they were drawn from, and defect counts.

Two noisy annotators label every candidate (a lesson a parser can read, with
text) of every labelled extractor; ``ann-a`` labels all of them, ``ann-b`` two
in five. Their draws come from one stream (``stream(seed, 3)``), extractor by
extractor in the order given (an unlabelled extractor draws nothing).

:func:`lesson_truth_rows` writes the lesson-level truth of every extractor:
which reference each lesson expresses, what it duplicates, whether it is
generic, ungrounded or a paraphrase.

Simulated reference lessons (Formats §4): what an expert says a verdict should teach.

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
depend on which extractors are simulated; how each annotator words them (its
:class:`~._words.Voice`: which of the check's wordings, synonym sets, hedges) from a
second (``stream(seed, 4, 1)``), so the wording never moves which references exist.

Simulated match labels (Formats §5): which reference a person says a lesson
expresses. A simple random sample of the annotated verdicts (``match_verdicts``
of them, or a share ``match_share``; ``stream(seed, 5)``) is matched by one of
two simulated people each (``person-1``, ``person-2``): every lesson a reader
sees of every extractor on it gets a row. A person gives the true answer,
except that with probability ``match_disagreement`` they give a wrong one when
one exists (another reference of the verdict, or none for a lesson that
expresses one; a lesson without text is always answered none). The per-lesson
draws come from a stream per extractor (``stream(seed, 5, name_key(name))``),
drawn for every lesson whatever the share, so a lesson's answer does not change
with the share, and adding an extractor leaves the others' rows unchanged. The
true assignment of every such lesson of every annotated verdict is written the
same way, annotator ``simulator-truth``.

**Double-matched share.** A share ``double_share`` of the matched verdicts (drawn from
their own stream, ``stream(seed, 5, name_key("double-matched"))``) is matched by the
other person too, so that people can be checked against people (``truss-lab
match-agreement RUN --between-people``): they answer every lesson of it as the first
person does, wrong with the same probability, each answer from a stream per extractor
(``stream(seed, 5, name_key("double-matched"), name_key(name))``). These streams are
new: every row a person gave before is unchanged, the second person's rows are added.

A drawn verdict on which no extractor wrote a lesson a reader sees has no row, yet
it was drawn: so the people's file carries §5's ``inclusion_probability`` column,
the drawn verdicts over the annotated ones, equal on every row (a simple random
sample), and an estimate weighting by it counts those verdicts too.
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
from ._defaults import (
    DEFAULT_MATCH_DISAGREEMENT,
    DEFAULT_MATCH_DOUBLE_SHARE,
    DEFAULT_MATCH_SHARE,
)
from ._verdicts import Verdicts
from ._words import (
    CHECKS,
    N_SYNONYMS,
    N_VOICE,
    PARAPHRASE_NAMES,
    Seed,
    Voice,
    name_key,
    reference_text,
    stream,
)

__all__ = [
    "ANNOTATED_SHARE",
    "BOTH_SHARE",
    "DEFAULT_MATCH_DISAGREEMENT",
    "DEFAULT_MATCH_DOUBLE_SHARE",
    "DEFAULT_MATCH_SHARE",
    "LESSON_TRUTH_HEADER",
    "MATCH_LABELS_HEADER",
    "MATCH_PEOPLE",
    "MATCH_PEOPLE_HEADER",
    "MATCH_TRUTH_ANNOTATOR",
    "REFERENCE_ANNOTATORS",
    "defect_counts",
    "label_rows",
    "lesson_truth_rows",
    "match_rows",
    "reference_lines",
]


LESSON_TRUTH_HEADER = ("verdict_hash,extractor,lesson_index,lesson_kind,reference_id,"
                       "duplicate_of,generic,ungrounded,paraphrase,has_evidence,candidate,"
                       "p_useful,useful_true,meaning")


def label_rows(
    seed: Seed, comps: Sequence[Completions], names: Sequence[str], hashes: Sequence[str],
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
# Each annotator's own voice: which wording of a check it starts from, synonym sets, hedges.
_REFERENCE_VOICES = {"ann-a": Voice(variant=0.6, sets=0.3, hedge=0.1),
                     "ann-b": Voice(variant=0.7, sets=0.35, hedge=0.15)}


def reference_lines(seed: Seed, v: Verdicts, hashes: Sequence[str]) -> list[str]:
    """The JSONL lines of references.jsonl: by verdict, annotator, reference id."""
    rng = stream(seed, 4)
    rng_w = stream(seed, 4, 1)
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
                text = reference_text(ann, c, v.obj[i], float(u[1]), u[2:], _SYN_RATE,
                                      rng_w.random(N_VOICE), _REFERENCE_VOICES[ann])
                recs.append({"verdict_hash": hashes[i], "reference_id": f"r{k}", "text": text,
                             "evidence": ["check:" + c.name], "annotator": ann})
            if not recs:  # a pass verdict: this annotator says it teaches nothing
                recs.append({"verdict_hash": hashes[i], "reference_id": "none", "text": "",
                             "evidence": [], "annotator": ann})
            lines.extend(json.dumps(r, ensure_ascii=False, separators=(",", ":"))
                         for r in recs)
    return lines



MATCH_LABELS_HEADER = "verdict_hash,extractor,lesson_index,reference_id,annotator"
MATCH_PEOPLE_HEADER = MATCH_LABELS_HEADER + ",inclusion_probability"
MATCH_PEOPLE = ("person-1", "person-2")
MATCH_TRUTH_ANNOTATOR = "simulator-truth"
_DOUBLE = name_key("double-matched")


def match_rows(
    seed: Seed, comps: Sequence[Completions], names: Sequence[str], hashes: Sequence[str],
    references: dict[str, list[str]], *, n_matched: int, disagreement: float,
    double_share: float = 0.0,
) -> tuple[list[str], list[str], int]:
    """CSV rows (without header) of match_labels.csv (:data:`MATCH_PEOPLE_HEADER`: the
    people's answers on ``n_matched`` random annotated verdicts) and match_truth.csv
    (:data:`MATCH_LABELS_HEADER`: the true answer for every annotated verdict), and the
    number of answers that are wrong. A share ``double_share`` of the matched verdicts
    (rounded) is matched by the second person too (module docstring).

    ``references`` maps each annotated verdict's hash to its reference ids (every
    annotator's, without ``none``); both files are ordered by verdict, extractor, lesson.
    """
    annotated = np.array([h in references for h in hashes], dtype=bool)
    ann_idx = np.flatnonzero(annotated)
    rng = stream(seed, 5)
    order = np.argsort(rng.random(ann_idx.shape[0]), kind="stable")
    sampled = np.zeros(len(hashes), dtype=bool)
    sampled[ann_idx[order[:n_matched]]] = True
    person = np.full(len(hashes), -1, dtype=np.int64)
    person[ann_idx] = (rng.random(ann_idx.shape[0]) < 0.5).astype(np.int64)
    incl = f"{n_matched / max(ann_idx.shape[0], 1):.10g}"
    # Which matched verdicts a second person matches: a stream of its own, so that every
    # draw above (and every row the first person gives) stays what it was.
    matched_idx = ann_idx[order[:n_matched]]
    double = np.zeros(len(hashes), dtype=bool)
    n_double = round(float(double_share) * n_matched)
    pick = np.argsort(stream(seed, 5, _DOUBLE).random(matched_idx.shape[0]), kind="stable")
    double[matched_idx[pick[:n_double]]] = True
    people: list[tuple[int, int, int, int, str]] = []
    truth: list[tuple[int, int, int, str]] = []
    n_wrong = 0
    for k, c in enumerate(comps):
        r = stream(seed, 5, name_key(names[k]))
        u_flip, u_pick = r.random(c.comp.shape[0]), r.random(c.comp.shape[0])
        r2 = stream(seed, 5, _DOUBLE, name_key(names[k]))
        u_flip2, u_pick2 = r2.random(c.comp.shape[0]), r2.random(c.comp.shape[0])
        seen = np.isin(c.text_kind, PARSEABLE)[c.comp] & annotated[c.comp]
        for i in np.flatnonzero(seen).tolist():
            vi, li = int(c.comp[i]), int(c.index[i])
            refs = references[hashes[vi]]
            rank = int(c.ref_rank[i])
            true = f"r{rank}" if rank and c.text_defect[i] == 0 and f"r{rank}" in refs else ""
            key = (vi, k, li)
            truth.append((*key, f"{hashes[vi]},{names[k]},{li},{true},{MATCH_TRUTH_ANNOTATOR}"))
            if not sampled[vi]:
                continue
            wrong = [x for x in refs if x != true] + ([""] if true else [])
            who = [(int(person[vi]), u_flip[i], u_pick[i])]
            if double[vi]:
                who.append((1 - int(person[vi]), u_flip2[i], u_pick2[i]))
            for pi, flip, pick_u in who:
                answer = true
                if c.text_defect[i] == 0 and wrong and flip < disagreement:
                    answer = wrong[int(pick_u * len(wrong))]
                    n_wrong += 1
                people.append((*key, pi, f"{hashes[vi]},{names[k]},{li},{answer},"
                                         f"{MATCH_PEOPLE[pi]},{incl}"))
    people.sort(key=lambda x: x[:4])
    truth.sort(key=lambda x: x[:3])
    return [x[4] for x in people], [x[3] for x in truth], n_wrong
