"""The bundled sample with one lesson that holds markup, for the report tests.

The first recorded ``sim-good-v1`` completion with lessons gets :data:`HOSTILE` as
its first lesson's text, so a report must show ``<script>`` as text and never run
it (the script would set ``window.__pwned``). The same verdict gets one more
reference lesson, :data:`HOSTILE_REF` by annotator :data:`HOSTILE_ANNOTATOR`, so
reference text and annotator names are held to the same rule.
"""

from __future__ import annotations

import json
from pathlib import Path

from truss_lab.faces._notebook import SAMPLE, load_sample, run_sample_extractions
from truss_lab.store._store import Store

HOSTILE = "Escape me <script>window.__pwned = 1</script> & keep the <b>text</b>"
HOSTILE_REF = "Reference <script>window.__pwnedRef = 1</script> & <img src=x onerror=alert(1)>"
HOSTILE_ANNOTATOR = "<i>ann-x</i>"
EXTRACTORS = ("sim-good-v1", "sim-overconfident-v1")


def hostile_sample(tmp: Path) -> tuple[Store, list[str], str]:
    """``(store, run_ids, verdict_hash)``: the sample in ``tmp``, both recorded
    extractors run, and the verdict whose lesson holds :data:`HOSTILE`."""
    folder = tmp / "sample"
    folder.mkdir()
    for name in ("journal.jsonl", "keys.json", "labels.csv"):
        (folder / name).symlink_to(SAMPLE / name)
    lines, target = [], None
    for line in (SAMPLE / "completions.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if target is None and rec["extractor"] == "sim-good-v1":
            try:
                body = json.loads(rec["text"])
            except ValueError:  # the sample records malformed completions too
                body = {}
            if isinstance(body, dict) and body.get("lessons"):
                body["lessons"][0]["text"] = HOSTILE
                rec["text"] = json.dumps(body)
                target = rec["verdict_hash"]
                line = json.dumps(rec)
        lines.append(line)
    (folder / "completions.jsonl").write_text("\n".join(lines) + "\n")
    assert target is not None
    hostile_ref = {"verdict_hash": target, "reference_id": "r9", "text": HOSTILE_REF,
                   "evidence": [], "annotator": HOSTILE_ANNOTATOR}
    (folder / "references.jsonl").write_text(
        (SAMPLE / "references.jsonl").read_text() + json.dumps(hostile_ref) + "\n")
    store = load_sample(tmp / "lab.duckdb", sample=folder)
    runs = run_sample_extractions(store, extractors=EXTRACTORS)
    return store, [runs[e].run_id for e in EXTRACTORS], target
