"""The signed journal: canonical hashing and Ed25519 signing (_crypto), the one entry and
verdict spec with the journal as columns and its strict reader (_spec), verification
(_verify; signature-checking worker processes run _sigworker), the journal table and its one
read path (_table), import and append (_ledger)."""

from __future__ import annotations

import typing

from ..core._lazy import attach as _attach

if typing.TYPE_CHECKING:
    # Imported on first use (core/_lazy.py): importing the package stays cheap, so the
    # command line starts at once. These lines are the exports' one list of homes.
    from ._crypto import SigningKey, load_keyring, save_keyring
    from ._ledger import ImportReport, append_entry, import_journal, verify_chain
    from ._spec import read_journal
    from ._table import get_entry, verdict_payloads
    from ._verify import REASONS, VerifyReport, verify_journal

__getattr__, __dir__ = _attach(__name__, __file__)

__all__ = [
    "REASONS",
    "ImportReport",
    "SigningKey",
    "VerifyReport",
    "append_entry",
    "get_entry",
    "import_journal",
    "load_keyring",
    "read_journal",
    "save_keyring",
    "verdict_payloads",
    "verify_chain",
    "verify_journal",
]
