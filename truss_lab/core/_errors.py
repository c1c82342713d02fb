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
    "WARNING_PREFIX",
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

    Parameters
    ----------
    *args : object
        The message (a string, redacted) and any further arguments, as for
        :class:`Exception`.

    See Also
    --------
    BadInputError : input that is malformed, naming file, line and field.
    ChainError : a journal entry that failed verification.
    StoreError : the database could not be opened, migrated or written.

    Examples
    --------
    Catch every error truss_lab raises on purpose, and nothing else:

    >>> try:
    ...     tl.MemoryConfig(extraction_min_salience=1.5)
    ... except tl.TrussLabError as exc:
    ...     print(type(exc).__name__)
    ConfigError
    """

    def __init__(self, *args: object) -> None:
        super().__init__(*(redact(a) if isinstance(a, str) else a for a in args))


class TrussLabWarning(UserWarning):
    """Base class of every warning truss_lab gives on purpose: a result that stands but
    needs a reader's attention (a metric undefined, verdicts left out). The command line
    shows each as one ``warning:`` line; ``warnings.simplefilter("ignore",
    TrussLabWarning)`` silences them all."""


WARNING_PREFIX = "warning: "
"""How a warning's line starts: on stderr (the command line's) and in a result's text (a
small-sample warning in a repr, the report or a display)."""


class BadInputError(TrussLabError):
    """User-supplied input is malformed: the error says what and where.

    Its text is ``"<source>, line N, field 'x': <message>"`` (the parts that are
    known), the one line the command line prints.

    Parameters
    ----------
    message : str
        What is wrong (redacted of secrets).
    source : str, optional
        The file, or ``"<memory>"`` for a frame or a string.
    line : int, optional
        The 1-based line of a JSONL or TOML file.
    field : str, optional
        The field, as a dotted path (``axes[1].temperature``).
    reason : str, optional
        A stable machine-readable reason (``malformed``, ``unsafe_integer``, ...).
    row : int, optional
        The row of a CSV file as a spreadsheet shows it (the header is row 1), given
        instead of ``line``: a quoted field may hold a newline.

    See Also
    --------
    TrussLabError : the base class.

    Examples
    --------
    >>> err = tl.BadInputError("expected 0 or 1", source="labels.csv", row=3,
    ...                        field="useful")
    >>> print(err)
    labels.csv, row 3, field 'useful': expected 0 or 1
    >>> err.row, err.field
    (3, 'useful')
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
    """A configuration value is invalid; ``layer`` names where it came from.

    Parameters
    ----------
    message : str
        What is wrong.
    layer : str
        The configuration layer (argument, environment, file) it came from.
    field : str, optional
        The field.
    """

    def __init__(self, message: str, *, layer: str, field: str | None = None) -> None:
        self.layer = layer
        super().__init__(message, source=layer, field=field)


class ChainError(TrussLabError):
    """A journal entry failed verification.

    Parameters
    ----------
    message : str
        What failed, for people.
    seq : int or None
        The first failing entry (or line).
    reason : str
        One of ``truss_lab.journal.REASONS`` (``bad_hash``, ``bad_signature``,
        ``unknown_key``, ``broken_link``, ``seq_gap``, ``duplicate_seq``, ``fork``,
        ``malformed``; a :class:`truss_lab.journal.VerifyReport` reason), or
        ``missing`` when a reference names an entry the journal does not hold.
    line : int, optional
        The 1-based line of the file, when the entry came from one.

    See Also
    --------
    import_journal : raises it for a file that does not verify.
    verify_chain : reports the same reasons without raising.

    Examples
    --------
    >>> err = tl.ChainError("entry 7: signature does not verify", seq=7,
    ...                     reason="bad_signature", line=7)
    >>> err.seq, err.reason
    (7, 'bad_signature')
    """

    def __init__(self, message: str, *, seq: int | None, reason: str, line: int | None = None):
        self.seq = seq
        self.reason = reason
        self.line = line
        super().__init__(message)


class PolicyError(TrussLabError):
    """A governed policy write was refused.

    Parameters
    ----------
    *args : object
        The message, as for :class:`TrussLabError`.
    """


class ProviderError(TrussLabError):
    """A provider call failed, or a replay has no (or a mismatched) recording.

    Parameters
    ----------
    *args : object
        The message, as for :class:`TrussLabError`.
    """


class ProviderUnavailableError(ProviderError):
    """A live provider could not be reached: connection errors, timeouts, 429 or 5xx
    until the retries ran out. Consecutive ones open a run's circuit breaker."""


class StoreError(TrussLabError):
    """The DuckDB store could not be opened, migrated or written.

    Parameters
    ----------
    *args : object
        The message, as for :class:`TrussLabError`.

    See Also
    --------
    truss_lab.core.StoreLockedError : another process holds the file's write lock.
    Store : the store whose operations raise it.

    Examples
    --------
    >>> try:
    ...     tl.Store("no-such-folder/lab.duckdb", read_only=True)
    ... except tl.StoreError:
    ...     print("cannot open")
    cannot open
    """


class StoreLockedError(StoreError):
    """Another process holds the database file's write lock.

    Parameters
    ----------
    *args : object
        The message (naming the process), as for :class:`TrussLabError`.
    """
