"""A circuit breaker around a provider: a run stops when the endpoint is down.

A live provider already retries each call (:mod:`truss_lab.extract._openai`);
when the retries run out it raises :class:`ProviderUnavailableError` and the
batch records a per-verdict error and goes on. Against a dead endpoint that
means every verdict of the batch waits through its retries and the run ends
"finished" with nothing but errors. :class:`CircuitBreaker` counts such
failures in a row and, at ``limit``, raises :class:`CircuitOpenError`, which
the batch does not swallow: the run is marked failed, the chunk in flight is
not written, and ``--resume RUN`` redoes it once the endpoint answers.

Only transport failures count (connection refused, timeouts, 429/5xx after
every retry); a 4xx, a garbage body or a missing recording is the verdict's
own error and resets nothing.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Sequence
from typing import Any

from ..core._errors import BadInputError, ProviderError, ProviderUnavailableError
from ._providers import Completion, CompletionRequest, supports_n

__all__ = ["DEFAULT_MAX_CONSECUTIVE_FAILURES", "CircuitBreaker", "CircuitOpenError",
           "with_breaker"]

#: Transport failures in a row that stop a run: enough to ride out a blip (each
#: failure is already a call retried with backoff), few enough to stop in
#: seconds to a minute when the endpoint is gone.
DEFAULT_MAX_CONSECUTIVE_FAILURES = 5


class CircuitOpenError(ProviderError):
    """The provider failed ``limit`` times in a row; the run stops (resumable)."""


class CircuitBreaker:
    """A provider that forwards to ``inner`` and opens after ``limit`` consecutive
    :class:`ProviderUnavailableError`; once open, every call raises
    :class:`CircuitOpenError` at once. Thread-safe (one count for every thread);
    in worker processes each worker counts its own calls."""

    def __init__(self, inner: Any, limit: int) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise BadInputError(f"must be a positive integer (or None), got {limit!r}",
                                field="max_consecutive_failures")
        self.inner = inner
        self.limit = limit
        self._lock = threading.Lock()
        self._failures = 0
        self._open: str | None = None

    @property
    def provider_id(self) -> str:
        return str(getattr(self.inner, "provider_id", type(self.inner).__name__))

    @property
    def live(self) -> bool:
        return bool(getattr(self.inner, "live", True))

    @property
    def supports_n(self) -> bool:
        return supports_n(self.inner)

    def complete(self, request: CompletionRequest) -> Completion:
        """Forward ``request``; count transport failures; raise once open."""
        return self._guard(self.inner.complete, request)  # type: ignore[no-any-return]

    def complete_samples(self, requests: Sequence[CompletionRequest]) -> list[Completion]:
        """Forward one verdict's sample requests (one ``n=k`` call), guarded alike."""
        return self._guard(self.inner.complete_samples, requests)  # type: ignore[no-any-return]

    def _guard(self, call: Callable[[Any], Any], arg: Any) -> Any:
        with self._lock:
            if self._open is not None:
                raise CircuitOpenError(self._open)
        try:
            completion = call(arg)
        except ProviderUnavailableError as exc:
            with self._lock:
                self._failures += 1
                if self._failures >= self.limit and self._open is None:
                    self._open = (
                        f"the provider failed {self._failures} verdicts in a row (limit "
                        f"{self.limit}, --max-consecutive-failures); the last: {exc}")
                if self._open is not None:
                    raise CircuitOpenError(self._open) from exc
            raise
        with self._lock:
            self._failures = 0
        return completion


def with_breaker(extractor: Any, limit: int | None) -> Any:
    """``extractor`` whose provider is wrapped in a :class:`CircuitBreaker` (itself when
    ``limit`` is None, or when the provider calls no model)."""
    if limit is None or not getattr(extractor.provider, "live", True):
        return extractor
    return dataclasses.replace(extractor, provider=CircuitBreaker(extractor.provider, limit))
