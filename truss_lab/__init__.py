"""truss_lab: an offline laboratory for Truss lesson extraction (ADR 0011)."""

from __future__ import annotations

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
)
from ._journal import SigningKey, VerifyReport, load_keyring, save_keyring
from ._ledger import ImportReport, append_entry, import_journal, verify_chain
from ._memory import query_memory
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
from ._policies import current_policy, policy_history, write_policy
from ._store import Store

__version__ = "0.1.0"

__all__ = [
    "AgentEvent",
    "BadInputError",
    "ChainError",
    "ConfigError",
    "EntryKind",
    "ImportReport",
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
    "SigningKey",
    "Store",
    "StoreError",
    "StoreLockedError",
    "Trust",
    "TrussLabError",
    "VerifyReport",
    "__version__",
    "append_entry",
    "current_policy",
    "import_journal",
    "load_keyring",
    "policy_history",
    "query_memory",
    "save_keyring",
    "verify_chain",
    "write_policy",
]
