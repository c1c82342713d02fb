"""truss_lab: an offline laboratory for Truss lesson extraction (ADR 0011).

``__all__`` below is what a researcher types in a notebook; each stage of the data flow
is a subpackage with its own ``__all__`` for the rest (``truss_lab.journal``,
``truss_lab.extract``, ``truss_lab.evaluate``, ...), an attribute of the package
imported on first use (``tl.evaluate.sweep_run`` after ``import truss_lab as tl``).
Both are documented in docs/reference/api.md; modules whose names start with ``_`` are private.
"""

from __future__ import annotations

import typing

from .core._lazy import attach as _attach
from .core._version import __version__

if typing.TYPE_CHECKING:
    # Imported on first use (core/_lazy.py): importing the package stays cheap, so the
    # command line starts at once. These lines are the exports' one list of homes.
    from .core import (
        BadInputError,
        ChainError,
        MemoryConfig,
        MemoryQuery,
        StoreError,
        TrussLabError,
    )
    from .evaluate import (
        Objective,
        Truth,
        bootstrap_metrics,
        calibration_run,
        choose_run_threshold,
        choose_threshold,
        compare_runs,
        frontier,
        label_budget,
        label_report,
        labelled_candidates,
        scored_candidates,
        slice_run,
        sweep,
        sweep_run,
    )
    from .extract import ContractCloseLearning, Extractor, rerun, run_extraction, run_grid
    from .faces import (
        SAMPLE_DIR,
        CalibrationDisplay,
        ComparisonDisplay,
        LabellingWidget,
        LessonBrowser,
        PrecisionRecallDisplay,
        SliceDisplay,
        SweepDisplay,
        ThresholdExplorer,
        copy_store,
        load_sample,
        run_sample_extractions,
    )
    from .govern import audit, policy_history, propose_threshold
    from .ingest import ingest_completions, ingest_labels, sign_verdicts
    from .journal import SigningKey, import_journal, verdict_payloads, verify_chain
    from .score import Scorer, junk_flags, junk_rates, score_candidates
    from .store import Store, query_memory, summarize_runs

__getattr__, __dir__ = _attach(__name__, __file__)


__all__ = [
    "SAMPLE_DIR",
    "BadInputError",
    "CalibrationDisplay",
    "ChainError",
    "ComparisonDisplay",
    "ContractCloseLearning",
    "Extractor",
    "LabellingWidget",
    "LessonBrowser",
    "MemoryConfig",
    "MemoryQuery",
    "Objective",
    "PrecisionRecallDisplay",
    "Scorer",
    "SigningKey",
    "SliceDisplay",
    "Store",
    "StoreError",
    "SweepDisplay",
    "ThresholdExplorer",
    "TrussLabError",
    "Truth",
    "__version__",
    "audit",
    "bootstrap_metrics",
    "calibration_run",
    "choose_run_threshold",
    "choose_threshold",
    "compare_runs",
    "copy_store",
    "frontier",
    "import_journal",
    "ingest_completions",
    "ingest_labels",
    "junk_flags",
    "junk_rates",
    "label_budget",
    "label_report",
    "labelled_candidates",
    "load_sample",
    "policy_history",
    "propose_threshold",
    "query_memory",
    "rerun",
    "run_extraction",
    "run_grid",
    "run_sample_extractions",
    "score_candidates",
    "scored_candidates",
    "sign_verdicts",
    "slice_run",
    "summarize_runs",
    "sweep",
    "sweep_run",
    "verdict_payloads",
    "verify_chain",
]
