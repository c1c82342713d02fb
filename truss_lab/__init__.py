"""truss_lab: an offline laboratory for Truss lesson extraction (ADR 0011).

Everything a researcher imports is listed in ``__all__`` below and documented
in the README; modules whose names start with ``_`` are private.
"""

from __future__ import annotations

from typing import Any

from .core._config import MemoryConfig
from .core._errors import (
    BadInputError,
    ChainError,
    ConfigError,
    PolicyError,
    ProviderError,
    StoreError,
    StoreLockedError,
    TrussLabError,
)
from .core._models import (
    AgentEvent,
    EntryKind,
    LedgerRef,
    LessonExtractionPolicy,
    MemoryEntry,
    MemoryQuery,
    MemoryWrite,
    Policy,
    PolicyRecord,
    PolicyTarget,
    PolicyWrite,
    Provenance,
    Trust,
)
from .evaluate._agreement import annotator_agreement, cohen_kappa, label_coverage, majority_labels
from .evaluate._bootstrap import BootstrapResult, bootstrap_metrics
from .evaluate._calibration import (
    brier_score,
    expected_calibration_error,
    max_calibration_error,
    reliability_table,
)
from .evaluate._choose import ThresholdChoice, choose_threshold, split_by_verdict, verdict_kfold
from .evaluate._compare import ComparisonResult, compare_extractors, mcnemar_exact
from .evaluate._objective import Objective
from .evaluate._runs import (
    CalibrationReport,
    LabelReport,
    calibration_run,
    choose_run_threshold,
    compare_runs,
    label_report,
    sweep_run,
)
from .evaluate._sweep import UndefinedMetricWarning, average_precision, sweep
from .evaluate._truth import labelled_candidates, scored_candidates
from .extract._batch import run_extraction
from .extract._close import CloseResult, ContractCloseLearning
from .extract._extractor import Extractor
from .extract._heuristic import HeuristicProvider
from .extract._openai import OpenAICompatibleProvider
from .extract._parser import ParseResult, parse_completion
from .extract._prompts import PromptTemplate, build_request, get_template
from .extract._providers import ChatMessage, Completion, CompletionRequest, Provider
from .extract._replay import ReplayProvider
from .extract._result import ExtractionRun
from .faces._display import (
    CalibrationDisplay,
    ComparisonDisplay,
    PrecisionRecallDisplay,
    SweepDisplay,
)
from .faces._notebook import SAMPLE as SAMPLE_DIR
from .faces._notebook import copy_store, load_sample, run_sample_extractions, verdict_payloads
from .govern._audit import AuditReport, CheckResult, audit
from .govern._decision import propose_threshold
from .govern._policies import current_policies, current_policy, policy_history, write_policy
from .ingest._completions import read_completions, write_completions
from .ingest._ingest import IngestReport, ingest_completions, ingest_labels
from .ingest._labels import read_labels
from .journal._columns import JournalColumns
from .journal._crypto import SigningKey, load_keyring, save_keyring
from .journal._ledger import ImportReport, append_entry, import_journal, verify_chain
from .journal._reader import read_journal
from .journal._table import get_entry
from .journal._verify import VerifyReport, verify_columns, verify_journal
from .score._calibrators import IsotonicCalibrator, PlattCalibrator
from .score._junk import junk_flags, junk_rates
from .score._salience import (
    Scorer,
    failed_checks,
    grounding,
    model_salience,
    novelty,
    score_candidates,
    specificity,
    verdict_outcome,
    weighted_sum,
)
from .simulate._simulate import simulate
from .store._memory import query_memory
from .store._runs import run_content_hashes, summarize_runs
from .store._store import Store

__version__ = "0.1.0"

#: Each widget and the faces module that holds it.
_WIDGETS = {
    "LabellingWidget": "_labelling",
    "LessonBrowser": "_lesson_browser",
    "ThresholdExplorer": "_threshold_explorer",
}


def __getattr__(name: str) -> Any:
    # Widgets need ipywidgets (the [notebook] extra): import them on first use.
    if name in _WIDGETS:
        import importlib

        return getattr(importlib.import_module(f".faces.{_WIDGETS[name]}", __name__), name)
    raise AttributeError(f"module 'truss_lab' has no attribute {name!r}")


__all__ = [
    "SAMPLE_DIR",
    "AgentEvent",
    "AuditReport",
    "BadInputError",
    "BootstrapResult",
    "CalibrationDisplay",
    "CalibrationReport",
    "ChainError",
    "ChatMessage",
    "CheckResult",
    "CloseResult",
    "ComparisonDisplay",
    "ComparisonResult",
    "Completion",
    "CompletionRequest",
    "ConfigError",
    "ContractCloseLearning",
    "EntryKind",
    "ExtractionRun",
    "Extractor",
    "HeuristicProvider",
    "ImportReport",
    "IngestReport",
    "IsotonicCalibrator",
    "JournalColumns",
    "LabelReport",
    "LabellingWidget",
    "LedgerRef",
    "LessonBrowser",
    "LessonExtractionPolicy",
    "MemoryConfig",
    "MemoryEntry",
    "MemoryQuery",
    "MemoryWrite",
    "Objective",
    "OpenAICompatibleProvider",
    "ParseResult",
    "PlattCalibrator",
    "Policy",
    "PolicyError",
    "PolicyRecord",
    "PolicyTarget",
    "PolicyWrite",
    "PrecisionRecallDisplay",
    "PromptTemplate",
    "Provenance",
    "Provider",
    "ProviderError",
    "ReplayProvider",
    "Scorer",
    "SigningKey",
    "Store",
    "StoreError",
    "StoreLockedError",
    "SweepDisplay",
    "ThresholdChoice",
    "ThresholdExplorer",
    "TrussLabError",
    "Trust",
    "UndefinedMetricWarning",
    "VerifyReport",
    "__version__",
    "annotator_agreement",
    "append_entry",
    "audit",
    "average_precision",
    "bootstrap_metrics",
    "brier_score",
    "build_request",
    "calibration_run",
    "choose_run_threshold",
    "choose_threshold",
    "cohen_kappa",
    "compare_extractors",
    "compare_runs",
    "copy_store",
    "current_policies",
    "current_policy",
    "expected_calibration_error",
    "failed_checks",
    "get_entry",
    "get_template",
    "grounding",
    "import_journal",
    "ingest_completions",
    "ingest_labels",
    "junk_flags",
    "junk_rates",
    "label_coverage",
    "label_report",
    "labelled_candidates",
    "load_keyring",
    "load_sample",
    "majority_labels",
    "max_calibration_error",
    "mcnemar_exact",
    "model_salience",
    "novelty",
    "parse_completion",
    "policy_history",
    "propose_threshold",
    "query_memory",
    "read_completions",
    "read_journal",
    "read_labels",
    "reliability_table",
    "run_content_hashes",
    "run_extraction",
    "run_sample_extractions",
    "save_keyring",
    "score_candidates",
    "scored_candidates",
    "simulate",
    "specificity",
    "split_by_verdict",
    "summarize_runs",
    "sweep",
    "sweep_run",
    "verdict_kfold",
    "verdict_outcome",
    "verdict_payloads",
    "verify_chain",
    "verify_columns",
    "verify_journal",
    "weighted_sum",
    "write_completions",
    "write_policy",
]
