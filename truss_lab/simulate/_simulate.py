"""A seeded simulator of a recorded Truss deployment (Formats §1–§3), and its k-sample files.

A seeded simulator of a recorded Truss deployment (Formats §1–§3).

:func:`simulate` writes a SYNTHETIC dataset: a signed journal of contract
verdicts, the keyring that verifies it, recorded extractor completions (with
the defects real model output has), gold labels from two noisy annotators,
reference lessons (what an expert says a verdict should teach) for a share of
the verdicts, and the latent truth (``truth.csv`` for the labelled lessons,
``lesson_truth.csv`` for every lesson; a real dataset never has them).

Determinism: every random draw comes from ``numpy.random.Generator(PCG64)``
streams derived from ``seed`` by ``SeedSequence``, and only through
``Generator.random()`` (uniform doubles, whose stream NumPy keeps stable);
normals, counts and choices are built from those uniforms (``_words``). No clock, no
set or hash ordering. Same seed and extractors → byte-identical files.

The verdicts use one stream, each extractor a stream keyed by the SHA-256 of
its name, so adding an extractor leaves the other extractors' data unchanged.

The parts: ``vocabulary.json`` (+ ``_words``) holds the text, the uniform-only
draws and how lessons are worded; ``_verdicts`` the signed verdicts' payloads;
``_completions`` the extractor profiles, their completions and a simulated model
for the structured-output question; ``_annotations`` the annotators' labels, the
reference lessons and the truth; ``_providers`` the simulated judge and matcher;
this module writes the files, k samples per verdict among them (``--samples K``).

Run ``python -m truss_lab.simulate --out DIR --runs N --seed S``.

k samples per verdict: what a sampling extractor would have answered k times.

Sample 0 of each extractor is its completion in ``completions.jsonl``
(unchanged); sample ``s > 0`` is a fresh draw of the same profile on the same
verdicts, from the stream of the name ``<extractor>#sample<s>``, so every
sample has its own lessons, wording, defects and latent usefulness. What makes
self-consistency informative here is what makes it informative for a model: a
grounded lesson about a failed check is emitted by most samples (``emit_rate``
each), while generic, ungrounded and duplicate lessons come and go.

``completions_samples.jsonl`` holds every sample of every extractor (the §2
fields plus ``sample_index``: read it with :func:`read_sample_completions`, not
the strict §2 reader, which knows one completion per verdict);
``truth_samples.csv`` holds each candidate lesson's latent usefulness per sample.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..core._canonical import MalformedJSON, loads_strict
from ..core._errors import BadInputError, TrussLabError
from ..core._files import check_output_file, check_output_folder, staged_outputs
from ..extract._parser import parse_completion
from ..journal._crypto import GENESIS_HASH, SigningKey, build_entry, load_keyring, save_keyring
from ._annotations import (
    DEFAULT_MATCH_DISAGREEMENT,
    DEFAULT_MATCH_DOUBLE_SHARE,
    DEFAULT_MATCH_SHARE,
    LESSON_TRUTH_HEADER,
    MATCH_LABELS_HEADER,
    MATCH_PEOPLE_HEADER,
    defect_counts,
    label_rows,
    lesson_truth_rows,
    match_rows,
    reference_lines,
)
from ._completions import (
    DEFAULT_EXTRACTORS,
    EXTRACTOR_PROFILES,
    KIND_NAMES,
    UNPARSEABLE,
    Completions,
    ExtractorProfile,
    make_completions,
)
from ._verdicts import VERDICT_NAMES, Verdicts, make_verdicts
from ._words import DOMAINS, Seed

__all__ = [
    "FILES",
    "GENERATOR_VERSION",
    "SAMPLE_FILES",
    "SIM_KEY_ID",
    "TRUTH_SAMPLES_HEADER",
    "SimulatedMatching",
    "SimulationResult",
    "main",
    "read_sample_completions",
    "sample_lines",
    "simulate",
    "simulate_matching",
    "simulation_key",
    "with_slice_effect",
]


GENERATOR_VERSION = "truss_lab-sim-3"
SIM_KEY_ID = "truss-sim-operator-1"
FILES = ("journal.jsonl", "keys.json", "completions.jsonl", "labels.csv", "truth.csv",
         "references.jsonl", "lesson_truth.csv", "match_labels.csv", "match_truth.csv")
SAMPLE_FILES = ("completions_samples.jsonl", "truth_samples.csv")
TRUTH_SAMPLES_HEADER = ("verdict_hash,extractor,sample_index,lesson_index,p_useful,useful_true,"
                        "lesson_kind")


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
    """The folder written."""
    journal: Path
    """``journal.jsonl``: the signed verdicts (journal format)."""
    keys: Path
    """``keys.json``: the public test keyring."""
    completions: Path
    """``completions.jsonl``: every extractor's answer to every verdict."""
    labels: Path
    """``labels.csv``: the simulated annotators' gold labels."""
    truth: Path
    """``truth.csv``: each candidate's true usefulness (simulator only)."""
    references: Path
    """``references.jsonl``: the reference lessons of the annotated verdicts."""
    lesson_truth: Path
    """``lesson_truth.csv``: each lesson's true usefulness and reference (simulator
    only)."""
    match_labels: Path
    """``match_labels.csv`` (Formats §5): simulated people's answers on a random share of
    the annotated verdicts."""
    match_truth: Path
    """``match_truth.csv`` (§5, annotator ``simulator-truth``): the true lesson→reference
    assignment of every lesson of every annotated verdict (simulator only)."""
    key_id: str
    """The key that signed the journal."""
    n_verdicts: int
    """Verdicts written."""
    n_completions: int
    """Completions written."""
    n_unparseable: int
    """Completions no parser can read."""
    n_lessons: int
    """Lessons in the parseable completions."""
    n_candidates: int
    """Of those, the lessons with text (what the labels can name)."""
    n_labels: int
    """Label rows written."""
    n_references: int
    """Reference lesson lines written."""
    n_match_verdicts: int
    """Annotated verdicts a simulated person matched."""
    n_match_labels: int
    """People's match answers written."""
    n_match_wrong: int
    """People's answers that differ from the truth (the disagreement actually drawn)."""
    verdicts: dict[str, int] = field(default_factory=dict)
    """Verdicts by outcome (pass, fail, ...)."""
    defects: dict[str, dict[str, int]] = field(default_factory=dict)
    """Per extractor, the defects present (above)."""
    completions_samples: Path | None = None
    """``completions_samples.jsonl`` (every sample of every extractor), when samples > 1."""
    truth_samples: Path | None = None
    """``truth_samples.csv`` (each candidate's usefulness per sample), when samples > 1."""

    @property
    def files(self) -> dict[str, Path]:
        """File name → path of every data file written."""
        return {p.name: p for p in (self.journal, self.keys, self.completions, self.labels,
                                    self.truth, self.references, self.lesson_truth,
                                    self.match_labels, self.match_truth)}


def simulation_key(seed: int) -> SigningKey:
    """The PUBLIC TEST signing key of a simulated dataset (derived from ``seed``; never real)."""
    digest = hashlib.sha256(f"truss_lab.simulate/test-key/{seed}".encode()).digest()
    return SigningKey.from_seed(SIM_KEY_ID, digest)


def with_slice_effect(extractors: Sequence[str | ExtractorProfile],
                      slice_effect: str | None) -> list[ExtractorProfile]:
    """The profiles of ``extractors``, the first one with ``reversed_domain`` set to
    ``slice_effect`` (None: unchanged), or a BadInputError naming an unknown domain."""
    profiles = _resolve(extractors)
    if slice_effect is None:
        return profiles
    names = [d.name for d in DOMAINS]
    if slice_effect not in names:
        raise BadInputError(f"slice_effect must be a domain, one of {', '.join(names)}; got "
                            f"{slice_effect!r}", field="slice_effect")
    return [dataclasses.replace(profiles[0], reversed_domain=slice_effect), *profiles[1:]]


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


def _check_sizes(runs: Any, seed: Any, samples: Any) -> tuple[int, int, int]:
    """``runs``, ``seed`` and ``samples`` as ints, or a BadInputError naming the field."""
    if isinstance(samples, bool) or not isinstance(samples, int | np.integer) or samples < 1:
        raise BadInputError(f"samples must be a positive integer, got {samples!r}",
                            field="samples")
    if isinstance(runs, bool) or not isinstance(runs, int | np.integer) or runs < 1:
        raise BadInputError(f"runs must be a positive integer, got {runs!r}", field="runs")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise BadInputError(f"seed must be a non-negative integer, got {seed!r}", field="seed")
    return int(runs), int(seed), int(samples)


def _signed_journal(v: Verdicts, key: SigningKey, first_seq: int = 1,
                    prev: str = GENESIS_HASH) -> tuple[list[str], list[str]]:
    """The entry hashes and journal lines of the verdicts, chained and signed in order
    (from ``first_seq``, linked to ``prev``: a block continues the chain before it)."""
    hashes: list[str] = []
    jlines: list[str] = []
    for i in range(len(v.payloads)):
        e = build_entry(first_seq + i, "contract_verdict", v.payloads[i], key, prev, v.ts[i])
        prev = e["hash"]
        hashes.append(prev)
        jlines.append(json.dumps(e, ensure_ascii=False, separators=(",", ":")))
    return hashes, jlines


def _check_match(match_share: Any, match_verdicts: Any, disagreement: Any,
                 n_annotated: int) -> int:
    """How many annotated verdicts people match, or a BadInputError naming the field."""
    if match_verdicts is not None:
        if (isinstance(match_verdicts, bool) or not isinstance(match_verdicts, int | np.integer)
                or not 0 <= match_verdicts <= n_annotated):
            raise BadInputError(f"match_verdicts must be an integer in [0, {n_annotated}] (the "
                                f"annotated verdicts), got {match_verdicts!r}",
                                field="match_verdicts")
    elif not isinstance(match_share, int | float) or not 0.0 <= float(match_share) <= 1.0:
        raise BadInputError(f"match_share must be in [0, 1], got {match_share!r}",
                            field="match_share")
    if not isinstance(disagreement, int | float) or not 0.0 <= float(disagreement) <= 1.0:
        raise BadInputError(f"match_disagreement must be in [0, 1], got {disagreement!r}",
                            field="match_disagreement")
    if match_verdicts is not None:
        return int(match_verdicts)
    return round(float(match_share) * n_annotated)


def _check_double(share: Any) -> float:
    if (isinstance(share, bool) or not isinstance(share, int | float)
            or not 0.0 <= float(share) <= 1.0):
        raise BadInputError(f"match_double_share must be in [0, 1], got {share!r}",
                            field="match_double_share")
    return float(share)


@dataclass
class _Built:
    """Every file's text of one simulation (or one block of it), before it is written."""

    seed: Seed
    key: SigningKey
    v: Verdicts
    hashes: list[str]
    profiles: list[ExtractorProfile]
    comps: list[Completions]
    jlines: list[str]
    clines: list[str]
    lab_rows: list[str]
    truth_rows: list[str]
    ref_lines: list[str]
    match_people: list[str]
    match_truth: list[str]
    n_match_verdicts: int
    n_match_wrong: int
    first_seq: int = 1
    first_contract: int = 0


def _build(runs: int, seed: Seed, extractors: Sequence[str | ExtractorProfile],
           match_share: float, match_verdicts: int | None,
           match_disagreement: float, *,
           match_double_share: float = DEFAULT_MATCH_DOUBLE_SHARE,
           after: tuple[int, str, int, int] = (1, GENESIS_HASH, 0, 0)) -> _Built:
    """One simulation's data, or (``seed`` = ``(seed, block)``, ``after`` the
    :func:`_continuation` of the block before) the next block of a long one."""
    profiles = _resolve(extractors)
    first_seq, prev, contracts, seconds = after
    v = make_verdicts(seed, runs, first_contract=contracts, start_seconds=seconds)
    key = simulation_key(seed if isinstance(seed, int) else seed[0])
    hashes, jlines = _signed_journal(v, key, first_seq, prev)
    comps = [make_completions(seed, p, v, hashes) for p in profiles]
    clines = [comps[k].lines[i] for i in range(runs) for k in range(len(profiles))]
    names = [p.name for p in profiles]
    lab_rows, truth_rows = label_rows(seed, comps, names, hashes,
                                      [p.labelled for p in profiles])
    ref_lines = reference_lines(seed, v, hashes)
    refs: dict[str, set[str]] = {}
    for line in ref_lines:
        rec = json.loads(line)
        ids = refs.setdefault(rec["verdict_hash"], set())
        if rec["reference_id"] != "none":
            ids.add(rec["reference_id"])
    n_matched = _check_match(match_share, match_verdicts, match_disagreement, len(refs))
    people, mtruth, n_wrong = match_rows(
        seed, comps, names, hashes, {h: sorted(ids) for h, ids in refs.items()},
        n_matched=n_matched, disagreement=float(match_disagreement),
        double_share=_check_double(match_double_share))
    return _Built(seed, key, v, hashes, profiles, comps, jlines, clines, lab_rows,
                  truth_rows, ref_lines, people, mtruth, n_matched, n_wrong,
                  first_seq=first_seq, first_contract=contracts)


#: The first line of each CSV file the simulator writes (the JSONL files have none).
_HEADERS = {
    "labels.csv": "verdict_hash,extractor,lesson_index,useful,annotator",
    "truth.csv": "verdict_hash,extractor,lesson_index,p_useful,useful_true,lesson_kind",
    "lesson_truth.csv": LESSON_TRUTH_HEADER,
    "match_labels.csv": MATCH_PEOPLE_HEADER,
    "match_truth.csv": MATCH_LABELS_HEADER,
    SAMPLE_FILES[1]: TRUTH_SAMPLES_HEADER,
}


def _lines(b: _Built, samples: int) -> dict[str, list[str]]:
    """The lines (without their ends) one simulation or block adds to each text file."""
    names = [p.name for p in b.profiles]
    out = {
        "journal.jsonl": b.jlines,
        "completions.jsonl": b.clines,
        "labels.csv": b.lab_rows,
        "truth.csv": b.truth_rows,
        "references.jsonl": b.ref_lines,
        "lesson_truth.csv": lesson_truth_rows(b.comps, names, b.hashes),
        "match_labels.csv": b.match_people,
        "match_truth.csv": b.match_truth,
    }
    if samples > 1:
        out[SAMPLE_FILES[0]], out[SAMPLE_FILES[1]] = sample_lines(
            b.seed, b.profiles, b.v, b.hashes, b.comps, samples)
    return out


def _same_seed(out: Path, key: SigningKey) -> bool:
    """Whether ``out/keys.json`` is the keyring a simulation with ``key``'s seed writes."""
    ring = out / "keys.json"
    if ring.is_symlink() or not ring.is_file():
        return False
    try:
        return load_keyring(ring) == {key.key_id: key.public_key}
    except TrussLabError:
        return False


def _check_dataset_folder(out: Path, key: SigningKey, seed: int, names: Sequence[str],
                          force: bool) -> list[str]:
    """The simulator's files in ``out`` that this simulation does not write (to remove
    with ``force``), or a BadInputError when ``out`` holds another dataset's files.

    ``out`` may be absent, or a folder (never a link or a file); its files of the
    simulator's names must be those of a dataset of the same ``seed`` (its keys.json
    is this seed's test keyring), and of a draw with the same number of samples.
    """
    check_output_folder(out, what="a folder for the dataset")
    if not out.exists():
        return []
    present = [n for n in (*FILES, *SAMPLE_FILES) if os.path.lexists(out / n)]
    stale = [n for n in present if n not in names]
    if force or not present:
        return stale
    if not _same_seed(out, key):
        shown = ", ".join(present[:2]) + (f" and {len(present) - 2} more" if len(present) > 2
                                           else "")
        raise BadInputError(
            f"holds another dataset's files ({shown}; no keys.json of seed {seed}'s test "
            "key): writing would mix two datasets; choose a new folder, or --force "
            "(force=True) to replace them", source=str(out))
    if stale:
        raise BadInputError(
            f"holds {', '.join(stale)} of a draw with several samples per verdict, which "
            "this one would not rewrite: give the same number of samples, or --force "
            "(force=True) to remove them", source=str(out))
    return []


def _tally(b: _Built) -> Counter[str]:
    """What one simulation or block holds, as :class:`SimulationResult` counts it
    (``defects`` as ``extractor\0defect`` keys)."""
    t: Counter[str] = Counter()
    for p, c in zip(b.profiles, b.comps, strict=True):
        for k, n in defect_counts(c).items():
            t[f"{p.name}\0{k}"] += n
        t["n_unparseable"] += int(np.isin(c.text_kind, UNPARSEABLE).sum())
        t["n_candidates"] += int(c.candidate.sum())
    for i, name in enumerate(VERDICT_NAMES):
        t[f"verdict\0{name}"] += int((b.v.verdict == i).sum())
    t.update(n_completions=len(b.clines), n_labels=len(b.lab_rows),
             n_references=len(b.ref_lines), n_match_verdicts=b.n_match_verdicts,
             n_match_labels=len(b.match_people), n_match_wrong=b.n_match_wrong)
    return t


def _write_dataset(out: Path, names: list[str], stale: list[str], blocks: Iterator[_Built],
                   samples: int) -> Counter[str]:
    """Write the files ``names`` into ``out`` (made if missing) from ``blocks``, one
    block at a time, all or none; then remove ``stale``. Each block is written and
    dropped before the next is drawn, so memory holds one block; what is kept of each
    is what :class:`SimulationResult` counts (its completions' arrays, not its text)."""
    made = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BadInputError(f"cannot create output directory ({exc})", source=str(out)) from None
    tally: Counter[str] = Counter()
    try:
        for name in stale:
            check_output_file(out / name)
        texts = [n for n in names if n != "keys.json"]
        with staged_outputs([out / n for n in names]) as tmps, ExitStack() as stack:
            tmp = dict(zip(names, tmps, strict=True))
            fh = {n: stack.enter_context(open(tmp[n], "w", encoding="utf-8", newline="\n"))
                  for n in texts}
            for n in texts:
                if n in _HEADERS:
                    fh[n].write(_HEADERS[n] + "\n")
            for b in blocks:
                for n, lines in _lines(b, samples).items():
                    fh[n].writelines(line + "\n" for line in lines)
                save_keyring({b.key.key_id: b.key.public_key}, tmp["keys.json"])
                tally.update(_tally(b))  # update, not +=, keeps the zero counts
                del b, lines  # the next block is drawn without this one
            stack.close()  # flushed before the files are moved into place
    except BaseException:
        if made:  # the folder this call made goes too: a failure leaves nothing
            out.rmdir()
        raise
    for name in stale:
        (out / name).unlink()
    return tally


#: Verdicts drawn at a time. A dataset of at most this many is one block, drawn as it
#: always was; a longer one is written block after block, block k >= 1 drawing every
#: stream from the entropy ``[seed, k]`` (``_words.stream``) and continuing the chain,
#: the contract numbers and the clock of the block before (its first verdict is never a
#: retry). Memory holds one block (about 1.5 GB at 100k verdicts), whatever ``runs`` is.
BLOCK_VERDICTS = 100_000


def _continuation(b: _Built) -> tuple[int, str, int, int]:
    """Where the block after ``b`` starts: its first seq, the hash it links to, its
    first contract number and its clock (seconds after BASE_TS)."""
    return (b.first_seq + len(b.hashes), b.hashes[-1], b.first_contract + b.v.n_contracts,
            b.v.seconds)


def _blocks(held: list[_Built], runs: int, extractors: Sequence[str | ExtractorProfile],
            match_share: float, match_disagreement: float,
            match_double_share: float) -> Iterator[_Built]:
    """Block 0 (drawn already, handed over in ``held``, which this empties so that
    nothing else keeps it), then the blocks after it up to ``runs``; only the block
    yielded last is referenced here."""
    b = held.pop()
    seed = b.seed
    assert isinstance(seed, int)
    for k, lo in enumerate(range(BLOCK_VERDICTS, runs, BLOCK_VERDICTS), start=1):
        after = _continuation(b)
        yield b
        del b  # dropped before the next block is drawn
        b = _build(min(BLOCK_VERDICTS, runs - lo), (seed, k), extractors, match_share, None,
                   match_disagreement, match_double_share=match_double_share, after=after)
    yield b


def simulate(
    out_dir: str | os.PathLike[str],
    *,
    runs: int,
    seed: int,
    extractors: Sequence[str | ExtractorProfile] = DEFAULT_EXTRACTORS,
    samples: int = 1,
    match_share: float = DEFAULT_MATCH_SHARE,
    match_verdicts: int | None = None,
    match_disagreement: float = DEFAULT_MATCH_DISAGREEMENT,
    match_double_share: float = DEFAULT_MATCH_DOUBLE_SHARE,
    force: bool = False,
    slice_effect: str | None = None,
) -> SimulationResult:
    """Write a synthetic dataset (journal, keys, completions, labels, truth, references,
    lesson truth, people's match labels and the true match assignment) to ``out_dir``.

    ``runs`` contract verdicts are signed with the public test key
    :func:`simulation_key`; each extractor answers every verdict once. The same
    ``seed`` and extractors give byte-identical files.

    ``out_dir`` is created if missing; a symbolic link or a file there is refused. In
    a folder that holds files the simulator does not write (a datasheet) those are
    left alone; files of the simulator's names are replaced only when they are of
    the same seed (its ``keys.json`` is this seed's test keyring) and the same number
    of samples, so two datasets never mix: anything else is refused, unless
    ``force``, which replaces them and removes the k-sample files this call does not
    write. Every file is written next to its place and renamed there only when all
    are written: a full disk leaves the folder as it was, in one line.
    ``samples`` > 1 also writes ``completions_samples.jsonl`` and
    ``truth_samples.csv``: k samples per verdict (below); the other files do
    not change with it. People match the lessons of ``match_verdicts`` annotated
    verdicts (default: a share ``match_share`` of them), each answer wrong with
    probability ``match_disagreement`` (``_annotations``); a share
    ``match_double_share`` of those verdicts is matched by a second person too (people
    checked against people; the bundled sample's is 0.3); only the two match files
    change with these. ``slice_effect`` (a domain, e.g. ``"deployment"``, the bundled
    sample's) plants a slice effect: the first extractor ranks its lessons upside down
    on that domain's verdicts (``ExtractorProfile.reversed_domain``: their saliences
    reversed, from a stream of their own); only ``completions.jsonl`` changes with it.

    Parameters
    ----------
    out_dir : path
        The folder to write (created if missing).
    runs : int
        Contract verdicts to simulate.
    seed : int
        Seed of every draw: the same seed and extractors give byte-identical files.
    extractors : sequence of str or ExtractorProfile
        The simulated extractors (default the sample's three).
    samples : int, default 1
        Samples per verdict; > 1 also writes the k-sample files.
    match_share : float
        Share of the annotated verdicts a simulated person matches.
    match_verdicts : int, optional
        The number of those verdicts instead (one block of verdicts at most).
    match_disagreement : float
        Chance that a person's match answer is wrong.
    match_double_share : float, default 0.0
        Share of the matched verdicts a second person matches too (their answers from
        streams of their own: every first answer stays what it was).
    force : bool, default False
        Replace another dataset's files in ``out_dir``.
    slice_effect : str, optional
        A domain on whose verdicts the first extractor ranks its lessons upside down
        (a planted slice effect; the bundled sample's is ``"deployment"``).

    Returns
    -------
    SimulationResult
        The paths written and what they hold.

    Raises
    ------
    BadInputError
        A bad size or seed, ``match_verdicts`` with more than one block, an output
        folder holding another dataset (without ``force``), a link or a file there.
    """
    runs, seed, samples = _check_sizes(runs, seed, samples)
    extractors = with_slice_effect(extractors, slice_effect)
    if runs > BLOCK_VERDICTS and match_verdicts is not None:
        raise BadInputError(f"match_verdicts counts the annotated verdicts of one block of "
                            f"at most {BLOCK_VERDICTS:,} verdicts; for {runs:,} give "
                            "match_share instead", field="match_verdicts")
    # The first block is drawn before the folder is made: a bad argument writes nothing.
    first = _build(min(runs, BLOCK_VERDICTS), seed, extractors, match_share, match_verdicts,
                   match_disagreement, match_double_share=match_double_share)
    files = [*FILES, *(SAMPLE_FILES if samples > 1 else ())]
    out = Path(out_dir)
    key, names = first.key, [p.name for p in first.profiles]
    stale = _check_dataset_folder(out, key, seed, files, force)
    held = [first]
    del first
    t = _write_dataset(out, files, stale, _blocks(held, runs, extractors, match_share,
                                                   match_disagreement, match_double_share),
                       samples)
    return _result(out, files, runs, key.key_id, names, t)


def _result(out: Path, files: list[str], runs: int, key_id: str, names: list[str],
            t: Counter[str]) -> SimulationResult:
    """What :func:`simulate` wrote into ``out``, from the :func:`_tally` of its blocks."""
    defects = {name: {k.split("\0", 1)[1]: n for k, n in t.items()
                      if k.startswith(f"{name}\0")} for name in names}
    paths = {n: out / n for n in files}
    sample_paths = ({"completions_samples": paths[SAMPLE_FILES[0]],
                     "truth_samples": paths[SAMPLE_FILES[1]]} if SAMPLE_FILES[0] in files else {})
    return SimulationResult(
        out_dir=out,
        journal=paths["journal.jsonl"],
        keys=paths["keys.json"],
        completions=paths["completions.jsonl"],
        labels=paths["labels.csv"],
        truth=paths["truth.csv"],
        references=paths["references.jsonl"],
        lesson_truth=paths["lesson_truth.csv"],
        match_labels=paths["match_labels.csv"],
        match_truth=paths["match_truth.csv"],
        key_id=key_id,
        n_verdicts=runs,
        n_completions=t["n_completions"],
        n_unparseable=t["n_unparseable"],
        n_lessons=sum(d["lessons"] for d in defects.values()),
        n_candidates=t["n_candidates"],
        n_labels=t["n_labels"],
        n_references=t["n_references"],
        n_match_verdicts=t["n_match_verdicts"],
        n_match_labels=t["n_match_labels"],
        n_match_wrong=t["n_match_wrong"],
        verdicts={name: t[f"verdict\0{name}"] for name in VERDICT_NAMES},
        defects=defects,
        **sample_paths,  # type: ignore[arg-type]
    )


@dataclass(frozen=True)
class SimulatedMatching:
    """One simulated dataset's matching problem, in memory (:func:`simulate_matching`).

    Frames, every one ordered by verdict (journal order), extractor, lesson index:

    - ``lessons``: every lesson a reader sees (a parseable completion) on an annotated
      verdict, as the parser reads it: ``verdict_hash``, ``extractor``, ``lesson_index``,
      ``text``, ``evidence`` (list), ``salience`` (NaN when the parser drops the lesson),
      ``valid``;
    - ``references``: the reference lessons (Formats §4 columns, ``"none"`` lines kept);
    - ``match_labels``: the simulated people's answers (§5 columns; ``reference_id``
      ``""`` = none; ``inclusion_probability`` = ``n_match_verdicts`` / annotated
      verdicts), on ``n_match_verdicts`` random annotated verdicts (one drawn where no
      extractor wrote a lesson has no row: weight by the inclusion probability);
    - ``match_truth``: the true answer for every row of ``lessons`` (annotator
      ``simulator-truth``);
    - ``verdicts``: every verdict's hash (each extractor answered every one) and
      ``annotated`` (bool).
    """

    lessons: pd.DataFrame
    """The lessons (above)."""
    references: pd.DataFrame
    """The reference lessons (above)."""
    match_labels: pd.DataFrame
    """The simulated people's answers (above)."""
    match_truth: pd.DataFrame
    """The true answers (above)."""
    verdicts: pd.DataFrame
    """Every verdict (above)."""
    n_match_verdicts: int
    """Annotated verdicts people matched."""
    n_match_wrong: int
    """People's answers that differ from the truth."""
    seed: int
    """The seed drawn with."""


def _match_frame(rows: list[str], header: str) -> pd.DataFrame:
    cols = header.split(",")
    df = pd.DataFrame([r.split(",") for r in rows], columns=cols) if rows else pd.DataFrame(
        {c: pd.Series(dtype=object) for c in cols})
    df = df.astype({"lesson_index": "int64"})
    if "inclusion_probability" in df:
        df["inclusion_probability"] = df["inclusion_probability"].astype("float64")
    return df


def simulate_matching(
    n_verdicts: int = 1200,
    *,
    seed: int,
    match_share: float = DEFAULT_MATCH_SHARE,
    match_verdicts: int | None = None,
    match_disagreement: float = DEFAULT_MATCH_DISAGREEMENT,
    extractors: Sequence[str | ExtractorProfile] = DEFAULT_EXTRACTORS,
    match_double_share: float = DEFAULT_MATCH_DOUBLE_SHARE,
) -> SimulatedMatching:
    """The data :func:`simulate` would write for these arguments, as frames and without
    touching the disk: a replicate of a matcher or correction study (one per ``seed``;
    ``simulate(out, runs=n_verdicts, seed=seed, ...)`` writes the same data as files).

    ``match_verdicts`` (or ``match_share`` of the annotated verdicts) are matched by
    simulated people, each answer wrong with probability ``match_disagreement``; a share
    ``match_double_share`` of them by a second person too.

    Parameters
    ----------
    n_verdicts : int, default 1200
        Verdicts simulated.
    seed : int
        Seed of every draw.
    match_share : float
        Share of the annotated verdicts people match.
    match_verdicts : int, optional
        The number of those verdicts instead.
    match_disagreement : float
        Chance that a person's match answer is wrong.
    extractors : sequence of str or ExtractorProfile
        The simulated extractors.
    match_double_share : float, default 0.0
        Share of the matched verdicts a second person matches too.

    Returns
    -------
    SimulatedMatching
        The lessons, references, people's match labels and the true assignment.

    Raises
    ------
    BadInputError
        A bad size or seed.
    """
    runs, seed, _ = _check_sizes(n_verdicts, seed, 1)
    b = _build(runs, seed, extractors, match_share, match_verdicts, match_disagreement,
               match_double_share=match_double_share)
    refs = pd.DataFrame([json.loads(x) for x in b.ref_lines],
                        columns=["verdict_hash", "reference_id", "text", "evidence", "annotator"])
    annotated = set(refs["verdict_hash"])
    rows: list[dict[str, Any]] = []
    for line in b.clines:
        rec = json.loads(line)
        if rec["verdict_hash"] not in annotated:
            continue
        for le in parse_completion(rec["text"]).lessons:
            rows.append({"verdict_hash": rec["verdict_hash"], "extractor": rec["extractor"],
                         "lesson_index": le.lesson_index, "text": le.text,
                         "evidence": list(le.evidence),
                         "salience": float(le.salience) if le.valid else np.nan,
                         "valid": le.valid})
    lessons = pd.DataFrame(rows, columns=["verdict_hash", "extractor", "lesson_index", "text",
                                          "evidence", "salience", "valid"])
    return SimulatedMatching(
        lessons=lessons.astype({"lesson_index": "int64"}), references=refs,
        match_labels=_match_frame(b.match_people, MATCH_PEOPLE_HEADER),
        match_truth=_match_frame(b.match_truth, MATCH_LABELS_HEADER),
        verdicts=pd.DataFrame({"verdict_hash": b.hashes,
                               "annotated": [h in annotated for h in b.hashes]}),
        n_match_verdicts=b.n_match_verdicts, n_match_wrong=b.n_match_wrong, seed=seed)


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
                         "and truth_samples.csv (docs/how-to/live-or-batch.md)")
    ap.add_argument("--match-share", type=float, default=DEFAULT_MATCH_SHARE,
                    help="share of the annotated verdicts whose lessons simulated people match")
    ap.add_argument("--match-disagreement", type=float, default=DEFAULT_MATCH_DISAGREEMENT,
                    help="probability that a person's match answer is wrong")
    ap.add_argument("--match-double-share", type=float, default=DEFAULT_MATCH_DOUBLE_SHARE,
                    help="share of the matched verdicts that a second person matches too")
    ap.add_argument("--slice-effect", metavar="DOMAIN", default=None,
                    help="plant a slice effect: the first extractor ranks its lessons upside "
                         "down on this domain's verdicts (the bundled sample: deployment)")
    ap.add_argument("--force", action="store_true",
                    help="replace the files of another dataset (another seed, or more "
                         "samples) in --out instead of refusing")
    args = ap.parse_args(argv)
    try:
        res = simulate(args.out, runs=args.runs, seed=args.seed,
                       extractors=args.extractors or DEFAULT_EXTRACTORS, samples=args.samples,
                       match_share=args.match_share, match_disagreement=args.match_disagreement,
                       match_double_share=args.match_double_share, force=args.force,
                       slice_effect=args.slice_effect)
    except TrussLabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({
        "out_dir": str(res.out_dir), "verdicts": res.verdicts,
        "completions": res.n_completions, "unparseable": res.n_unparseable,
        "lessons": res.n_lessons, "candidates": res.n_candidates, "labels": res.n_labels,
        "references": res.n_references,
        "match_verdicts": res.n_match_verdicts, "match_labels": res.n_match_labels,
        "match_wrong": res.n_match_wrong,
        "defects": res.defects,
    }, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())



def sample_lines(seed: Seed, profiles: Sequence[ExtractorProfile], v: Verdicts,
                 hashes: list[str], first: Sequence[Completions],
                 samples: int) -> tuple[list[str], list[str]]:
    """Lines of ``completions_samples.jsonl`` and rows of ``truth_samples.csv``
    (without header): by verdict, extractor, sample; ``first`` are the sample-0
    completions already drawn for ``completions.jsonl``."""
    comps: list[list[Completions]] = [[c] for c in first]
    for k, prof in enumerate(profiles):
        for s in range(1, samples):
            twin = dataclasses.replace(prof, name=f"{prof.name}#sample{s}")
            comps[k].append(make_completions(seed, twin, v, hashes))
    lines: list[tuple[int, int, int, str]] = []
    truth: list[tuple[int, int, int, int, str]] = []
    for k, prof in enumerate(profiles):
        for s, c in enumerate(comps[k]):
            for i, line in enumerate(c.lines):
                rec = json.loads(line)
                rec["extractor"] = prof.name
                rec["sample_index"] = s
                lines.append((i, k, s, json.dumps(rec, ensure_ascii=False,
                                                  separators=(",", ":"))))
            for j in np.flatnonzero(c.candidate).tolist():
                vi, li = int(c.comp[j]), int(c.index[j])
                truth.append((vi, k, s, li, ",".join((
                    hashes[vi], prof.name, str(s), str(li), f"{c.p_useful[j]:.4f}",
                    str(int(c.useful[j])), KIND_NAMES[int(c.kind[j])]))))
    lines.sort(key=lambda r: r[:3])
    truth.sort(key=lambda r: r[:4])
    return [r[3] for r in lines], [r[4] for r in truth]


def read_sample_completions(path: str | Path) -> pd.DataFrame:
    """``completions_samples.jsonl`` as a frame a replay takes
    (``Extractor.replay(frame, EXTRACTOR, samples=K)``): the §2 columns and
    ``sample_index``; a line that is not such a record is an error naming it."""
    rows = []
    with open(path, "rb") as fh:
        for lineno, line in enumerate(fh, 1):
            try:
                rec = loads_strict(line)  # the one strict JSON reader: depth bounded, UTF-8
            except MalformedJSON as exc:
                raise BadInputError(f"not JSON ({exc})", source=str(path), line=lineno,
                                    field=exc.field) from None
            if not isinstance(rec, dict) or not isinstance(rec.get("sample_index"), int):
                raise BadInputError("expected a completion record with an integer "
                                    "sample_index", source=str(path), line=lineno,
                                    field="sample_index")
            rows.append(rec)
    return pd.DataFrame(rows)
