"""Small helpers the notebooks call: load the bundled sample, run its extractions.

Every helper is a short sequence of public library calls (the notebooks show
which), so a researcher can do the same with their own data. Each one is
idempotent: re-running a notebook cell adds nothing to the database.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ..core._config import MemoryConfig
from ..core._errors import BadInputError, StoreError
from ..core._files import check_output_file, check_output_folder, write_outputs
from ..core._threshold import DEFAULT_MIN_SALIENCE
from ..extract._batch import ExtractionRun, run_extraction
from ..extract._extractor import Extractor
from ..ingest._ingest import (
    ingest_completions,
    ingest_labels,
    ingest_match_labels,
    ingest_references,
)
from ..journal._ledger import import_journal
from ..store._ingested import recorded_extractors
from ..store._runs import get_run, run_info, summarize_runs
from ..store._store import Store, copy_database, open_store

__all__ = [
    "SAMPLE",
    "SAMPLE_EXTRACTORS",
    "copy_sample",
    "copy_store",
    "load_sample",
    "notebook_store",
    "run_sample_extractions",
    "sample_run_id",
]

#: The bundled synthetic sample (see ``datasets/sample/DATASHEET.md``).
SAMPLE = Path(__file__).resolve().parents[2] / "datasets" / "sample"

#: The two recorded extractors of the sample, then the model-free baseline.
SAMPLE_EXTRACTORS = ("sim-good-v1", "sim-overconfident-v1", "heuristic-v1")


def _scratch_dir(prefix: str) -> Path:
    """A new temporary folder, removed when the Python process (the kernel) exits."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def _sample_dir(sample: str | os.PathLike[str] | None) -> Path:
    path = Path(sample) if sample is not None else SAMPLE
    missing = [n for n in ("journal.jsonl", "keys.json", "completions.jsonl", "labels.csv")
               if not (path / n).is_file()]
    if missing:
        raise BadInputError(
            f"not a sample folder: missing {', '.join(missing)} (expected the layout of "
            "datasets/sample/)", source=str(path),
        )
    return path


def load_sample(
    db_path: str | os.PathLike[str] | None = None,
    *,
    sample: str | os.PathLike[str] | None = None,
) -> Store:
    """Open ``db_path`` and ingest the sample.

    Without ``db_path`` the database is a new file in a temporary folder that
    is deleted when the Python process (the notebook's kernel) exits; pass a
    path to keep it.

    Imports the signed journal (verified as it is read), the recorded
    completions, the gold labels, the reference lessons and the simulated people's
    match labels. Idempotent: calling it again on the same file adds nothing.
    Equivalent to ``Store(db)``, ``import_journal``, ``ingest_completions``,
    ``ingest_labels``, ``ingest_references`` and ``ingest_match_labels``.

    Parameters
    ----------
    db_path : str or os.PathLike, optional
        The database file to open (created when missing); default a new file in a
        temporary folder.
    sample : str or os.PathLike, optional
        A folder of the same files (``journal.jsonl``, ``keys.json``,
        ``completions.jsonl``, ``labels.csv``, ``references.jsonl``,
        ``match_labels.csv``), e.g. made by ``truss-lab simulate``; default the
        bundled sample, :data:`SAMPLE_DIR`.

    Returns
    -------
    Store
        The database, opened for writing.

    Raises
    ------
    ChainError
        The journal does not verify.
    BadInputError
        A file is missing or malformed.

    See Also
    --------
    run_sample_extractions : replay the sample's recorded extractors.

    Examples
    --------
    >>> lab = tl.load_sample("lab.duckdb")
    >>> tl.summarize_runs(lab).empty, len(tl.verdict_payloads(lab))
    (True, 1200)
    >>> lab.close()
    """
    src = _sample_dir(sample)
    if db_path is None:
        # A fresh folder per call, so notebooks run side by side never share a file.
        db_path = _scratch_dir("truss_lab_sample_") / "sample.duckdb"
    store = open_store(db_path)
    try:
        import_journal(store, src / "journal.jsonl", keyring=src / "keys.json")
        reports = [ingest_completions(store, src / "completions.jsonl"),
                   ingest_labels(store, src / "labels.csv")]
        if (src / "references.jsonl").is_file():  # older sample folders have none
            reports.append(ingest_references(store, src / "references.jsonl"))
        if (src / "match_labels.csv").is_file():  # people's match labels: after references
            reports.append(ingest_match_labels(store, src / "match_labels.csv"))
        for report in reports:
            if report.errors:
                raise BadInputError(
                    f"{len(report.errors)} bad line(s) in the sample; the first: "
                    f"{report.errors[0]}", source=report.source,
                )
    except BaseException:
        store.close()
        raise
    return store


def sample_run_id(extractor_id: str, policy: str = "model-scored",
                  extraction_min_salience: float = DEFAULT_MIN_SALIENCE) -> str:
    """The deterministic run id :func:`run_sample_extractions` gives an extractor."""
    return f"sample-{extractor_id}-{policy}-{extraction_min_salience:.2f}"


def _extractor(store: Store, extractor_id: str) -> Extractor:
    if extractor_id == "heuristic-v1":
        return Extractor.heuristic()
    if extractor_id not in recorded_extractors(store):
        raise BadInputError(
            f"no recorded completions for extractor {extractor_id!r} (the sample has "
            f"{', '.join(SAMPLE_EXTRACTORS[:2])} and sim-paraphrase-v1; heuristic-v1 "
            "needs none)",
            field="extractors",
        )
    return Extractor.replay(store, extractor_id)


def run_sample_extractions(
    store: Store,
    *,
    extractors: Sequence[str] = SAMPLE_EXTRACTORS,
    policy: str = "model-scored",
    extraction_min_salience: float = DEFAULT_MIN_SALIENCE,
    write_memory: bool = True,
) -> dict[str, ExtractionRun]:
    """One extraction run per extractor over every verdict; returns runs by extractor id.

    Recorded extractors are replayed from the store's completions (no model is
    called); ``heuristic-v1`` is the model-free baseline. Run ids come from
    :func:`sample_run_id`, and a run that already exists is resumed (a finished
    one adds nothing), so this is idempotent. Each run is
    ``run_extraction(store, extractor, MemoryConfig(...), run_id=...)``.

    Parameters
    ----------
    store : Store
        A database holding the sample (:func:`load_sample`).
    extractors : sequence of str, default all four
        ``sim-good-v1``, ``sim-overconfident-v1``, ``sim-paraphrase-v1`` (recorded)
        and ``heuristic-v1``.
    policy : str, default "model-scored"
        The gate's policy, ``on`` or ``model-scored``.
    extraction_min_salience : float, default 0.70
        The gate's threshold.
    write_memory : bool, default True
        Write the lessons to memory; ``False`` keeps candidates only (a dry run).

    Returns
    -------
    dict of str to truss_lab.extract.ExtractionRun
        The runs, by extractor id.

    See Also
    --------
    run_extraction : one run of any extractor.
    load_sample : the database these runs read.

    Examples
    --------
    >>> runs = tl.run_sample_extractions(store, extractors=["heuristic-v1"],
    ...                                  write_memory=False)
    >>> run = runs["heuristic-v1"]
    >>> run.run_id, run.n_verdicts, run.provider_calls > 0
    ('sample-heuristic-v1-model-scored-0.70', 1200, True)
    """
    config = MemoryConfig(lesson_extraction=policy,
                          extraction_min_salience=extraction_min_salience)
    out: dict[str, ExtractionRun] = {}
    for ex_id in extractors:
        run_id = sample_run_id(ex_id, config.lesson_extraction.value,
                               extraction_min_salience)
        out[ex_id] = run_extraction(
            store, _extractor(store, ex_id), config, run_id=run_id,
            resume=get_run(store, run_id) is not None,
            progress=False, write_memory=write_memory,
        )
    return out


def copy_store(store: Store, path: str | os.PathLike[str] | None = None) -> Store:
    """A writable copy of ``store`` in a new file (default: a temporary folder,
    deleted when the process exits).

    For experiments that must not touch the original, e.g. tampering with a
    journal entry to watch the audit catch it. Uses DuckDB's
    ``COPY FROM DATABASE``, so it works for in-memory stores too.

    Parameters
    ----------
    store : Store
        The database to copy (read-only is enough).
    path : str or os.PathLike, optional
        Where the copy is written: a new file. Default: a temporary folder deleted
        when the process exits.

    Returns
    -------
    Store
        The copy, opened for writing.

    Raises
    ------
    BadInputError
        ``path`` exists, or is a link, a folder, a device or a pipe.

    See Also
    --------
    load_sample : a fresh database of the sample.

    Examples
    --------
    >>> scratch = tl.copy_store(store, "scratch.duckdb")
    >>> _ = tl.run_extraction(scratch, tl.Extractor.heuristic(),
    ...                       tl.MemoryConfig(lesson_extraction="on"), verdicts="seq <= 10",
    ...                       run_id="scratch", write_memory=False, progress=False)
    >>> len(tl.summarize_runs(scratch)), len(tl.summarize_runs(store))  # the original as it was
    (2, 1)
    >>> scratch.close()
    """
    dest = Path(path) if path is not None else _scratch_dir("truss_lab_copy_") / "copy.duckdb"
    if dest.exists():
        raise StoreError(f"{dest} already exists; copy_store writes a new file")
    check_output_file(dest, overwrite=False)  # a link (dangling too) is never written through
    copy_database(store, dest)
    return open_store(dest)


def copy_sample(out: str | os.PathLike[str]) -> list[Path]:
    """Copy the bundled sample's files into ``out`` (created if missing); return the
    files written. Refuses a link or a file at ``out``, and a file (or link) of a
    sample file's name already there; copies every file or none (a full disk)."""
    src = _sample_dir(None)
    dest = check_output_folder(out, what="a folder for the sample")
    files = sorted(p for p in src.iterdir() if p.is_file())
    clash = [p.name for p in files if os.path.lexists(dest / p.name)]
    if clash:
        raise BadInputError(f"{', '.join(clash)} already there; refusing to overwrite",
                            source=str(dest))
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BadInputError(f"cannot create the folder: {exc.strerror}",
                            source=str(dest)) from None
    return write_outputs([(dest / p.name, lambda tmp, p=p: shutil.copyfile(p, tmp))
                          for p in files])


def notebook_store(
    db: str | os.PathLike[str] | None = None,
    runs: Sequence[str] | None = None,
    *,
    extractors: Sequence[str] = SAMPLE_EXTRACTORS,
) -> tuple[Store, list[str]]:
    """The store and the run ids a notebook studies, from its ``parameters`` cell.

    Parameters
    ----------
    db : path, optional
        A database, which must exist (nothing is loaded into it). None: the bundled
        sample in a temporary database (:func:`load_sample`) with one run per
        extractor of ``extractors`` (:func:`run_sample_extractions`).
    runs : sequence of str, optional
        The run ids to study (default: the sample's runs, in the order of
        ``extractors``; with ``db``, every run in it, oldest first).
    extractors : sequence of str
        The sample extractors run when ``db`` is None.

    Returns
    -------
    tuple of (Store, list of str)
        The store (the caller closes it) and the run ids.

    Raises
    ------
    BadInputError
        An unknown run id (naming the database's recent runs), a missing database.
    """
    if db is None:
        store = load_sample()
        done = run_sample_extractions(store, extractors=extractors)
        ids = [done[e].run_id for e in extractors]
    else:
        store = open_store(db, must_exist=True)
        ids = summarize_runs(store)["run_id"].tolist()
    if runs is not None:
        ids = [runs] if isinstance(runs, str) else list(runs)
    try:
        for rid in ids:
            run_info(store, rid)
    except BaseException:
        store.close()
        raise
    return store, ids
