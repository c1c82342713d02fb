"""Foundations every stage stands on: the error tree, the governed models of ADR 0011
(trust, provenance, memory entries, policy records, events) and the layered configuration."""

from __future__ import annotations

import typing

from ._lazy import attach as _attach

if typing.TYPE_CHECKING:
    # Imported on first use (core/_lazy.py): importing the package stays cheap, so the
    # command line starts at once. These lines are the exports' one list of homes.
    from ._config import MemoryConfig
    from ._errors import (
        BadInputError,
        ChainError,
        ConfigError,
        PolicyError,
        ProviderError,
        StoreError,
        StoreLockedError,
        TrussLabError,
        TrussLabWarning,
    )
    from ._models import (
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
    from ._threads import BLAS_THREADS_ENV, blas_thread_limit, blas_threads
    from ._threshold import DEFAULT_MIN_SALIENCE, check_threshold

__getattr__, __dir__ = _attach(__name__, __file__)

__all__ = [
    "BLAS_THREADS_ENV",
    "DEFAULT_MIN_SALIENCE",
    "AgentEvent",
    "BadInputError",
    "ChainError",
    "ConfigError",
    "EntryKind",
    "LedgerRef",
    "LessonExtractionPolicy",
    "MemoryConfig",
    "MemoryEntry",
    "MemoryQuery",
    "MemoryWrite",
    "Policy",
    "PolicyError",
    "PolicyRecord",
    "PolicyTarget",
    "PolicyWrite",
    "Provenance",
    "ProviderError",
    "StoreError",
    "StoreLockedError",
    "TrussLabError",
    "TrussLabWarning",
    "Trust",
    "blas_thread_limit",
    "blas_threads",
    "check_threshold",
]
