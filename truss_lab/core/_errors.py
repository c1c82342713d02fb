"""The one error tree of truss_lab.

::

    TrussLabError                  anything truss_lab raises on purpose
    ├── BadInputError              a file, line or field a user supplied is wrong
    │   └── ConfigError            a configuration value is invalid (names its layer)
    ├── ChainError                 a journal entry fails verification (carries seq + reason)
    ├── PolicyError                a governed write is refused (bad target, fork, cycle)
    ├── ProviderError              a model provider failed or has no recording
    │   └── ProviderUnavailableError  the endpoint did not answer (retries exhausted)
    └── StoreError                 the database cannot be opened or written
        └── StoreLockedError       another process holds the write lock

    TrussLabWarning (a UserWarning) every warning truss_lab gives on purpose (its
                                   categories: UndefinedMetricWarning, MatcherLeftOutWarning,
                                   ThresholdGridWarning, UnregisteredPromptWarning, ...)

Messages say what went wrong, where (file, line, field) and what was expected.
The CLI prints ``str(error)`` on one line and exits non-zero, and a warning of
truss_lab's as one ``warning: <message>`` line (faces/cli/oneline.py); a warning of
another package is Python's to show.
"""

from __future__ import annotations

from ._secrets import redact

__all__ = [
    "BadInputError",
    "ChainError",
    "ConfigError",
    "PolicyError",
    "ProviderError",
    "ProviderUnavailableError",
    "StoreError",
    "StoreLockedError",
    "TrussLabError",
    "TrussLabWarning",
]


class TrussLabError(Exception):
    """Base class of every error truss_lab raises on purpose.

    Its message is redacted (:func:`truss_lab.core._secrets.redact`): an error
    quoting a server's reply or the HTTP stack cannot carry a secret into a log,
    the CLI's one line or a stored error row.
    """

    def __init__(self, *args: object) -> None:
        super().__init__(*(redact(a) if isinstance(a, str) else a for a in args))


class TrussLabWarning(UserWarning):
    """Base class of every warning truss_lab gives on purpose: a result that stands but
    needs a reader's attention (a metric undefined, verdicts left out). The command line
    shows each as one ``warning:`` line; ``warnings.simplefilter("ignore",
    TrussLabWarning)`` silences them all."""


class BadInputError(TrussLabError):
    """User-supplied input is malformed.

    ``source`` names the file (or ``"<memory>"``), ``line`` is 1-based when known,
    ``field`` is a dotted path when known. A CSV file's errors give ``row`` instead:
    the row a spreadsheet shows (the header is row 1), which is not the line when a
    quoted field holds a newline.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        line: int | None = None,
        field: str | None = None,
        reason: str | None = None,
        row: int | None = None,
    ) -> None:
        self.message = redact(message) or ""
        self.source = source
        self.line = line
        self.row = row
        self.field = field
        self.reason = reason
        where = []
        if source is not None:
            where.append(str(source))
        if line is not None:
            where.append(f"line {line}")
        if row is not None:
            where.append(f"row {row}")
        if field is not None:
            where.append(f"field {field!r}")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)


class ConfigError(BadInputError):
    """A configuration value is invalid; ``layer`` names where it came from."""

    def __init__(self, message: str, *, layer: str, field: str | None = None) -> None:
        self.layer = layer
        super().__init__(message, source=layer, field=field)


class ChainError(TrussLabError):
    """A journal entry failed verification.

    ``seq`` is the first failing entry (or line), ``reason`` one of
    ``truss_lab.journal._verify.REASONS``: a :class:`truss_lab.journal.VerifyReport`
    reason, or ``missing`` when a ref names an entry the journal does not hold.
    """

    def __init__(self, message: str, *, seq: int | None, reason: str, line: int | None = None):
        self.seq = seq
        self.reason = reason
        self.line = line
        super().__init__(message)


class PolicyError(TrussLabError):
    """A governed policy write was refused."""


class ProviderError(TrussLabError):
    """A provider call failed, or a replay has no (or a mismatched) recording."""


class ProviderUnavailableError(ProviderError):
    """A live provider could not be reached: connection errors, timeouts, 429 or 5xx
    until the retries ran out. Consecutive ones open a run's circuit breaker."""


class StoreError(TrussLabError):
    """The DuckDB store could not be opened, migrated or written."""


class StoreLockedError(StoreError):
    """Another process holds the database file's write lock."""
