"""A seeded simulator of a recorded Truss deployment (FORMATS.md §1–§3).

:func:`simulate` writes a SYNTHETIC dataset: a signed journal of contract
verdicts, the keyring that verifies it, recorded extractor completions (with
the defects real model output has), gold labels from two noisy annotators,
reference lessons (what an expert says a verdict should teach) for a share of
the verdicts, and the latent truth (``truth.csv`` for the labelled lessons,
``lesson_truth.csv`` for every lesson; a real dataset never has them).

Determinism: every random draw comes from ``numpy.random.Generator(PCG64)``
streams derived from ``seed`` by ``SeedSequence``, and only through
``Generator.random()`` (uniform doubles, whose stream NumPy keeps stable);
normals, counts and choices are built from those uniforms (``_random``). No clock, no
set or hash ordering. Same seed and extractors → byte-identical files.

The verdicts use one stream, each extractor a stream keyed by the SHA-256 of
its name, so adding an extractor leaves the other extractors' data unchanged.

The parts: ``vocabulary.json`` (+ ``_vocabulary``) holds the text,
``_random`` the uniform-only draws, ``_verdicts`` the signed verdicts'
payloads, ``_wording`` how lessons are worded, ``_completions`` the extractor
profiles and their completions, ``_labels`` the annotators' labels and the
truth, ``_references`` the reference lessons, ``_samples`` k samples per verdict
(``--samples K``), ``_structured`` a simulated model for the structured-output
question; this module writes the files.

Run ``python -m truss_lab.simulate --out DIR --runs N --seed S``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..core._errors import BadInputError, TrussLabError
from ..journal._crypto import GENESIS_HASH, SigningKey, build_entry, save_keyring
from ._completions import (
    DEFAULT_EXTRACTORS,
    EXTRACTOR_PROFILES,
    UNPARSEABLE,
    ExtractorProfile,
    make_completions,
)
from ._labels import LESSON_TRUTH_HEADER, defect_counts, label_rows, lesson_truth_rows
from ._references import reference_lines
from ._samples import SAMPLE_FILES, TRUTH_SAMPLES_HEADER, sample_lines
from ._verdicts import VERDICT_NAMES, make_verdicts

__all__ = [
    "FILES",
    "GENERATOR_VERSION",
    "SIM_KEY_ID",
    "SimulationResult",
    "main",
    "simulate",
    "simulation_key",
]

GENERATOR_VERSION = "truss_lab-sim-2"
SIM_KEY_ID = "truss-sim-operator-1"
FILES = ("journal.jsonl", "keys.json", "completions.jsonl", "labels.csv", "truth.csv",
         "references.jsonl", "lesson_truth.csv")


@dataclass(frozen=True)
class SimulationResult:
    """Paths of the files :func:`simulate` wrote, and what they hold.

    ``defects`` maps each extractor to counts of what is actually present:
    ``text:<shape>`` per completion shape (plain, fenced, prose_wrapped,
    truncated, prose_only, empty), and over the lessons of parseable
    completions ``lessons``, ``salience:missing|out_of_range|not_a_number|null``,
    ``lesson_text:empty|null`` and ``kind:duplicate|near_duplicate|ungrounded|generic``.
    """

    out_dir: Path
    journal: Path
    keys: Path
    completions: Path
    labels: Path
    truth: Path
    references: Path
    lesson_truth: Path
    key_id: str
    n_verdicts: int
    n_completions: int
    n_unparseable: int
    n_lessons: int
    n_candidates: int
    n_labels: int
    n_references: int
    verdicts: dict[str, int] = field(default_factory=dict)
    defects: dict[str, dict[str, int]] = field(default_factory=dict)
    completions_samples: Path | None = None
    """``completions_samples.jsonl`` (every sample of every extractor), when samples > 1."""
    truth_samples: Path | None = None
    """``truth_samples.csv`` (each candidate's usefulness per sample), when samples > 1."""

    @property
    def files(self) -> dict[str, Path]:
        """File name → path of every data file written."""
        return {p.name: p for p in (self.journal, self.keys, self.completions, self.labels,
                                    self.truth, self.references, self.lesson_truth)}


def simulation_key(seed: int) -> SigningKey:
    """The PUBLIC TEST signing key of a simulated dataset (derived from ``seed``; never real)."""
    digest = hashlib.sha256(f"truss_lab.simulate/test-key/{seed}".encode()).digest()
    return SigningKey.from_seed(SIM_KEY_ID, digest)


def _resolve(extractors: Sequence[str | ExtractorProfile]) -> list[ExtractorProfile]:
    if isinstance(extractors, str | ExtractorProfile):
        extractors = [extractors]
    out: list[ExtractorProfile] = []
    for i, e in enumerate(extractors):
        if isinstance(e, ExtractorProfile):
            out.append(e)
        elif e in EXTRACTOR_PROFILES:
            out.append(EXTRACTOR_PROFILES[e])
        else:
            raise BadInputError(
                f"unknown extractor {e!r}; expected one of {sorted(EXTRACTOR_PROFILES)} "
                "or an ExtractorProfile", field=f"extractors[{i}]")
    names = [p.name for p in out]
    if not out:
        raise BadInputError("at least one extractor is needed", field="extractors")
    if len(set(names)) != len(names):
        raise BadInputError(f"extractor names must be unique, got {names}", field="extractors")
    return out


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
        fh.write(text)
    os.replace(tmp, path)


def simulate(
    out_dir: str | os.PathLike[str],
    *,
    runs: int,
    seed: int,
    extractors: Sequence[str | ExtractorProfile] = DEFAULT_EXTRACTORS,
    samples: int = 1,
) -> SimulationResult:
    """Write a synthetic dataset (journal, keys, completions, labels, truth, references,
    lesson truth) to ``out_dir``.

    ``runs`` contract verdicts are signed with the public test key
    :func:`simulation_key`; each extractor answers every verdict once. The same
    ``seed`` and extractors give byte-identical files. Existing files of the
    same names are replaced; other files in ``out_dir`` are left alone.
    ``samples`` > 1 also writes ``completions_samples.jsonl`` and
    ``truth_samples.csv``: k samples per verdict (``_samples``); the other files do
    not change with it.
    """
    if isinstance(samples, bool) or not isinstance(samples, int | np.integer) or samples < 1:
        raise BadInputError(f"samples must be a positive integer, got {samples!r}",
                            field="samples")
    if isinstance(runs, bool) or not isinstance(runs, int | np.integer) or runs < 1:
        raise BadInputError(f"runs must be a positive integer, got {runs!r}", field="runs")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise BadInputError(f"seed must be a non-negative integer, got {seed!r}", field="seed")
    runs, seed = int(runs), int(seed)
    profiles = _resolve(extractors)
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BadInputError(f"cannot create output directory ({exc})", source=str(out)) from None

    v = make_verdicts(seed, runs)
    key = simulation_key(seed)
    prev = GENESIS_HASH
    hashes: list[str] = []
    jlines: list[str] = []
    for i in range(runs):
        e = build_entry(i + 1, "contract_verdict", v.payloads[i], key, prev, v.ts[i])
        prev = e["hash"]
        hashes.append(prev)
        jlines.append(json.dumps(e, ensure_ascii=False, separators=(",", ":")))

    comps = [make_completions(seed, p, v, hashes) for p in profiles]
    n_ext = len(profiles)
    clines = [comps[k].lines[i] for i in range(runs) for k in range(n_ext)]

    names = [p.name for p in profiles]
    lab_rows, truth_rows = label_rows(seed, comps, names, hashes,
                                      [p.labelled for p in profiles])
    ref_lines = reference_lines(seed, v, hashes)
    defects = {name: defect_counts(c) for name, c in zip(names, comps, strict=True)}

    paths = {n: out / n for n in FILES}
    _write(paths["journal.jsonl"], "\n".join(jlines) + "\n")
    save_keyring({key.key_id: key.public_key}, paths["keys.json"])
    _write(paths["completions.jsonl"], "\n".join(clines) + "\n")
    _write(paths["labels.csv"], "verdict_hash,extractor,lesson_index,useful,annotator\n"
           + "".join(r + "\n" for r in lab_rows))
    _write(paths["truth.csv"], "verdict_hash,extractor,lesson_index,p_useful,useful_true,"
           "lesson_kind\n" + "".join(r + "\n" for r in truth_rows))
    _write(paths["references.jsonl"], "".join(r + "\n" for r in ref_lines))
    _write(paths["lesson_truth.csv"], LESSON_TRUTH_HEADER + "\n" + "".join(
        r + "\n" for r in lesson_truth_rows(comps, names, hashes)))

    sample_paths: dict[str, Path | None] = {}
    if samples > 1:
        s_lines, s_truth = sample_lines(seed, profiles, v, hashes, comps, int(samples))
        sample_paths = {"completions_samples": out / SAMPLE_FILES[0],
                        "truth_samples": out / SAMPLE_FILES[1]}
        _write(out / SAMPLE_FILES[0], "\n".join(s_lines) + "\n")
        _write(out / SAMPLE_FILES[1], TRUTH_SAMPLES_HEADER + "\n"
               + "".join(r + "\n" for r in s_truth))
    n_unparseable = sum(int(np.isin(c.text_kind, UNPARSEABLE).sum()) for c in comps)
    return SimulationResult(
        out_dir=out,
        journal=paths["journal.jsonl"],
        keys=paths["keys.json"],
        completions=paths["completions.jsonl"],
        labels=paths["labels.csv"],
        truth=paths["truth.csv"],
        references=paths["references.jsonl"],
        lesson_truth=paths["lesson_truth.csv"],
        key_id=key.key_id,
        n_verdicts=runs,
        n_completions=len(clines),
        n_unparseable=n_unparseable,
        n_lessons=sum(d["lessons"] for d in defects.values()),
        n_candidates=sum(int(c.candidate.sum()) for c in comps),
        n_labels=len(lab_rows),
        n_references=len(ref_lines),
        verdicts={name: int((v.verdict == i).sum()) for i, name in enumerate(VERDICT_NAMES)},
        defects=defects,
        **sample_paths,  # type: ignore[arg-type]
    )


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m truss_lab.simulate --out DIR --runs N --seed S``."""
    ap = argparse.ArgumentParser(prog="python -m truss_lab.simulate",
                                 description="Write a seeded synthetic truss_lab dataset.")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--runs", type=int, default=2000, help="number of contract verdicts")
    ap.add_argument("--seed", type=int, default=7, help="random seed")
    ap.add_argument("--extractor", action="append", dest="extractors",
                    help=f"extractor profile (repeatable; default {' '.join(DEFAULT_EXTRACTORS)})")
    ap.add_argument("--samples", type=int, default=1,
                    help="samples per verdict; K > 1 also writes completions_samples.jsonl "
                         "and truth_samples.csv (README 'Several samples per verdict')")
    args = ap.parse_args(argv)
    try:
        res = simulate(args.out, runs=args.runs, seed=args.seed,
                       extractors=args.extractors or DEFAULT_EXTRACTORS, samples=args.samples)
    except TrussLabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({
        "out_dir": str(res.out_dir), "verdicts": res.verdicts,
        "completions": res.n_completions, "unparseable": res.n_unparseable,
        "lessons": res.n_lessons, "candidates": res.n_candidates, "labels": res.n_labels,
        "references": res.n_references,
        "defects": res.defects,
    }, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
