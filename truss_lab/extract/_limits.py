"""The limits of one live call: a whole-call deadline and a cap on the answer's size;
and the run's own limits a command's options name (samples per verdict, failures in a
row), here because this module imports neither pandas nor pydantic (issue 38).

httpx's timeouts bound each socket operation (a connect, one read, one write),
never a call: a server that sends one byte every two seconds keeps a call alive
for ever, and one that answers 80 MB makes the client hold (and parse) 80 MB.
:class:`~truss_lab.extract._providers.OpenAICompatibleProvider` bounds both.

**The deadline.** A :class:`CallClock` is the deadline of one call: it starts
when the call's first attempt gets its turn (not while it waits for a free
connection) and covers every attempt and every backoff wait between them.
While a thread runs an attempt inside :meth:`CallClock.bounding`, every socket
operation it makes waits at most what is left of the deadline: :func:`bound_client`
wraps the network backend of the client's connection pools so that each
connect, read and write gets ``min(its timeout, time left)`` and fails as a
timeout once none is left. A drip therefore ends at the deadline whether it
drips the headers or the body.

**The cap.** :func:`read_capped` reads a streamed answer and stops with
:class:`ResponseTooLarge` as soon as it holds more than the cap (at once when
the ``Content-Length`` already says so), so memory stays bounded by the cap.

httpx and httpcore are imported only by the functions that need them (an
optional extra: ``pip install 'truss_lab[openai]'``).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..core._errors import ConfigError

__all__ = [
    "DEFAULT_DEADLINE",
    "DEFAULT_MAX_CONSECUTIVE_FAILURES",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "MAX_SAMPLES",
    "CallClock",
    "ResponseTooLarge",
    "bound_client",
    "check_limits",
    "read_capped",
]

#: Seconds one live call may take, its retries and backoff waits included. Well above
#: what a healthy call needs (each read already times out after the provider's
#: ``timeout``, 30 s by default, and a non-streamed answer sends nothing until it is
#: done), so it only ends calls that a server keeps alive without answering.
DEFAULT_DEADLINE = 300.0

#: Bytes of one answer at most: a chat completion of thousands of tokens, several
#: samples included, is well under a megabyte.
DEFAULT_MAX_RESPONSE_BYTES = 8 * 1024 * 1024

#: Transport failures in a row that stop a run: enough to ride out a blip (each
#: failure is already a call retried with backoff), few enough to stop in
#: seconds to a minute when the endpoint is gone.
DEFAULT_MAX_CONSECUTIVE_FAILURES = 5

#: Most samples per verdict: k calls per verdict is the cost; beyond this it is a typo.
MAX_SAMPLES = 64


def check_limits(deadline: float | None, max_response_bytes: int, *, layer: str) -> None:
    """:class:`ConfigError` unless ``deadline`` is None or a finite number > 0 and
    ``max_response_bytes`` a positive integer."""
    if deadline is not None and not (isinstance(deadline, int | float)
                                     and math.isfinite(deadline) and deadline > 0):
        raise ConfigError(f"must be a finite number > 0 (or None), got {deadline!r}",
                          layer=layer, field="deadline")
    if (isinstance(max_response_bytes, bool) or not isinstance(max_response_bytes, int)
            or max_response_bytes < 1):
        raise ConfigError(f"must be a positive integer, got {max_response_bytes!r}",
                          layer=layer, field="max_response_bytes")


# The end (time.monotonic) of the call the current thread is running, if bounded.
_call_end = threading.local()


class CallClock:
    """The deadline of one call: ``seconds`` from :meth:`start` (None: no deadline)."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self._end: float | None = None

    def start(self) -> None:
        """Start the clock (again is a no-op: one deadline for every attempt)."""
        if self.seconds is not None and self._end is None:
            self._end = time.monotonic() + self.seconds

    def left(self) -> float | None:
        """Seconds left (negative once passed); None without a deadline or before start."""
        return None if self._end is None else self._end - time.monotonic()

    def passed(self) -> bool:
        """Whether the deadline has passed."""
        left = self.left()
        return left is not None and left <= 0

    @contextmanager
    def bounding(self) -> Iterator[None]:
        """Started; the socket operations of this thread wait at most the time left."""
        self.start()
        before = getattr(_call_end, "at", None)
        _call_end.at = self._end
        try:
            yield
        finally:
            _call_end.at = before


def _bounded(timeout: float | None, error: Any) -> float | None:
    """``timeout`` cut to the time left of this thread's call; ``error`` once none is left."""
    end = getattr(_call_end, "at", None)
    if end is None:
        return timeout
    left = end - time.monotonic()
    if left <= 0:
        raise error("the call's deadline has passed")
    return left if timeout is None else min(timeout, left)


class _BoundedStream:
    """An httpcore network stream whose every operation is bounded by the call's deadline."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        import httpcore

        return self._inner.read(max_bytes, _bounded(timeout, httpcore.ReadTimeout))  # type: ignore[no-any-return]

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        import httpcore

        self._inner.write(buffer, _bounded(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> _BoundedStream:
        import httpcore

        return _BoundedStream(self._inner.start_tls(
            ssl_context, server_hostname, _bounded(timeout, httpcore.ConnectTimeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _BoundedBackend:
    """An httpcore network backend whose streams are :class:`_BoundedStream`."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                    local_address: str | None = None, socket_options: Any = None) -> Any:
        import httpcore

        return _BoundedStream(self._inner.connect_tcp(
            host, port, _bounded(timeout, httpcore.ConnectTimeout), local_address,
            socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Any = None) -> Any:
        import httpcore

        return _BoundedStream(self._inner.connect_unix_socket(
            path, _bounded(timeout, httpcore.ConnectTimeout), socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def bound_client(client: Any) -> bool:
    """Make the connection pools of ``client`` (an ``httpx.Client``: its transport and its
    proxy mounts) honour :meth:`CallClock.bounding`; whether every pool could be.

    httpx has no public hook for the network backend of the pools it builds, so this
    reaches the pools' ``_network_backend`` (httpcore 1.x); the provider's tests prove
    it works on the pinned versions (a drip of the headers ends at the deadline).
    """
    ok = True
    for transport in (client._transport, *client._mounts.values()):
        if transport is None:
            continue
        pool = getattr(transport, "_pool", None)
        backend = getattr(pool, "_network_backend", None)
        if backend is None:
            ok = False
        elif not isinstance(backend, _BoundedBackend):
            pool._network_backend = _BoundedBackend(backend)  # type: ignore[union-attr]
    return ok


class ResponseTooLarge(Exception):
    """An answer longer than the cap; ``declared``: its Content-Length when that said so."""

    def __init__(self, cap: int, declared: int | None) -> None:
        super().__init__(f"the answer is larger than {cap} bytes")
        self.cap = cap
        self.declared = declared


def read_capped(response: Any, cap: int) -> bytes:
    """The body of a streamed httpx ``response``; :class:`ResponseTooLarge` once it holds
    more than ``cap`` bytes (decoded: a compressed bomb counts at its real size)."""
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > cap:
        raise ResponseTooLarge(cap, int(declared))
    body = bytearray()
    for chunk in response.iter_bytes():
        body += chunk
        if len(body) > cap:
            raise ResponseTooLarge(cap, None)
    return bytes(body)
