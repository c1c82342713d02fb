"""Simulated reference lessons (FORMATS.md §4): what an expert says a verdict should teach.

The latent truth of a verdict is one useful lesson per failed check: its
reference ``r<k>`` is the lesson of the k-th failed check in display order, and
a pass verdict teaches nothing. Annotators write some of them down in their own
wording (``_wording.reference_text``): ``ann-a`` annotates a seeded share of
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

from ._random import stream
from ._verdicts import Verdicts
from ._vocabulary import CHECKS
from ._wording import N_SYNONYMS, reference_text

__all__ = ["ANNOTATED_SHARE", "BOTH_SHARE", "REFERENCE_ANNOTATORS", "reference_lines"]

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
