"""Providers: the seam (one method, ``complete(request) -> Completion``), the circuit
breaker around a live one, and the OpenAI-compatible provider.

Implementations: :class:`ReplayProvider` (recorded completions, the offline
default; :mod:`truss_lab.extract._extractor`), :class:`OpenAICompatibleProvider`
(vLLM, llama.cpp server, Ollama, OpenAI; below) and :class:`HeuristicProvider`
(a deterministic baseline, no model; :mod:`truss_lab.extract._heuristic`).

The circuit breaker
-------------------

A run stops when the endpoint is down.

A live provider already retries each call (:class:`OpenAICompatibleProvider`);
when the retries run out it raises :class:`ProviderUnavailableError` and the
batch records a per-verdict error and goes on. Against a dead endpoint that
means every verdict of the batch waits through its retries and the run ends
"finished" with nothing but errors. :class:`CircuitBreaker` counts such
failures in a row and, at ``limit``, raises :class:`CircuitOpenError`, which
the batch does not swallow: the run is marked failed, the chunk in flight is
not written, and ``--resume RUN`` redoes it once the endpoint answers.

Only transport failures count (connection refused, timeouts, 429/5xx after
every retry, a call past its deadline, an answer over the size cap); a 4xx, a
garbage body or a missing recording is the verdict's own error and resets
nothing.

The OpenAI-compatible provider
------------------------------

``POST {base_url}/chat/completions`` with ``{"model", "messages", **parameters}``.
The key is read from an environment variable at call time and never leaves
the ``Authorization`` header (not in records, not in errors). Calls are
retried with exponential backoff and full jitter on 429, 5xx, connection
errors and timeouts, honouring ``Retry-After``; concurrency is bounded by a
semaphore shared by every thread that uses the provider. A call as a whole
(its attempts and the waits between them) ends at its ``deadline`` and an
answer may hold at most ``max_response_bytes`` (:mod:`truss_lab.extract._limits`);
either is a :class:`ProviderUnavailableError`. Every successful
call is handed to ``recorder`` as a Formats §2 record, so the run can be
replayed by :class:`truss_lab.extract._extractor.ReplayProvider`.

httpx is imported lazily: ``pip install 'truss_lab[openai]'``.
"""

from __future__ import annotations

import dataclasses
import email.utils
import functools
import json
import math
import os
import random
import re
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from ..core._canonical import canonical, canonical_digest
from ..core._errors import BadInputError, ConfigError, ProviderError, ProviderUnavailableError
from ..core._secrets import (
    control_characters,
    redact,
    redact_json,
    register_secret,
    register_url_secrets,
)
from ..ingest._completions import (
    MAX_COMPLETION_NAME,
    MAX_COMPLETION_TEXT,
    completion_columns,
    completion_frame,
    validate_completion_columns,
    write_completions,
)
from ._limits import (
    DEFAULT_DEADLINE,
    DEFAULT_MAX_RESPONSE_BYTES,
    CallClock,
    ResponseTooLarge,
    bound_client,
    check_limits,
    read_capped,
)

if TYPE_CHECKING:
    import ssl

    import httpx
    import pandas as pd

__all__ = [
    "ChatMessage",
    "CircuitBreaker",
    "CircuitOpenError",
    "Completion",
    "CompletionRecorder",
    "CompletionRequest",
    "OpenAICompatibleProvider",
    "Provider",
    "is_live",
    "provider_name",
    "supports_n",
    "with_breaker",
]


# --- the provider seam ----------------------------------------------------------------------------

class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


class ChatMessage(_Frozen):
    """One chat message."""

    role: str
    """``system``, ``user`` or ``assistant``."""
    content: str
    """The message text."""


class CompletionRequest(_Frozen):
    """What is sent to a model. Its :attr:`request_hash` covers exactly what
    the model sees (messages, model, parameters), so a changed prompt is never
    answered by an old recording."""

    messages: tuple[ChatMessage, ...]
    """The chat messages."""
    model: str
    """The model name sent to the provider."""
    parameters: dict[str, Any] = Field(default_factory=dict)
    """Sampling parameters (temperature, max_tokens, ...)."""
    verdict_hash: str
    """The journal hash of the verdict the request is about (replay key)."""
    extractor: str
    """The extractor configuration id (replay key)."""
    prompt_version: str
    """The prompt template version that rendered ``messages``."""
    verdict: dict[str, Any] | None = None
    """The verdict payload, for providers that work on it directly (heuristic);
    not part of the hash (the messages already render it)."""
    config_hash: str | None = None
    """The :class:`~truss_lab.extract._extractor.ExtractorConfig` hash of the extractor
    that built the request (None for extractors without one: heuristic, replay of
    recordings made elsewhere). Part of :attr:`request_hash` when set."""
    sample_index: int | None = Field(default=None, ge=0)
    """Which of a verdict's k samples this request asks for (0..k-1), set only when
    the extractor draws k > 1: part of :attr:`request_hash` then, so each sample
    has its own hash and its own recording. None for one-sample extractors."""

    def hashed_text(self) -> str:
        """The canonical JSON text :attr:`request_hash` hashes: messages, model,
        parameters (and the config hash, when set)."""
        body: dict[str, Any] = {
            "messages": [m.model_dump() for m in self.messages],
            "model": self.model,
            "parameters": self.parameters,
        }
        # Only when set: requests without a config keep the hashes recorded before it.
        if self.config_hash is not None:
            body["config_hash"] = self.config_hash
        if self.sample_index is not None:
            body["sample_index"] = self.sample_index
        return canonical(body)

    @property
    def request_hash(self) -> str:
        return canonical_digest(self.hashed_text())


class Completion(_Frozen):
    """What a provider returned."""

    text: str
    """The raw completion text, unparsed."""
    model: str
    """The model that answered."""
    prompt_tokens: int | None = None
    """Tokens in the prompt, when reported."""
    completion_tokens: int | None = None
    """Tokens in the completion, when reported."""
    latency_ms: float | None = None
    """Wall time of the call (for a replay: the recorded latency)."""
    request_hash: str | None = None
    """Hash of the request that produced it; ``None`` when recorded elsewhere."""
    replayed: bool = False
    """True when the text came from a recording rather than a live call."""


@runtime_checkable
class Provider(Protocol):
    """Anything with ``complete(request) -> Completion``.

    ``provider_id`` is a short stable name stored with runs (e.g. ``replay``).
    ``live`` (optional, read by :func:`is_live`) is False for providers that call
    no model (replay, heuristic): only a live provider's completions are recorded.
    ``supports_n`` (optional, read by :func:`supports_n`) says the provider answers
    the k sample requests of one verdict with one call (OpenAI's ``n``) through
    ``complete_samples(requests) -> list[Completion | ProviderError]``; without it
    each sample is its own ``complete`` call.
    """

    provider_id: str

    def complete(self, request: CompletionRequest) -> Completion: ...


def chat_body(request: CompletionRequest, n: int | None = None) -> dict[str, Any]:
    """The chat-completions request body a live extractor sends for ``request`` (``n``:
    the samples of one call): the one definition, which a Batch input file's ``body``
    repeats (:mod:`truss_lab.extract._batch_api`), so its request hash is the live one."""
    return {
        **request.parameters,
        **({} if n is None else {"n": n}),
        "model": request.model,
        "messages": [m.model_dump() for m in request.messages],
    }


def provider_name(provider: Any) -> str:
    """The name a run stores for ``provider``: its ``provider_id``, else its class name."""
    return str(getattr(provider, "provider_id", type(provider).__name__))


def is_live(provider: Any) -> bool:
    """Whether ``provider`` calls a model, so its completions are worth recording.

    A provider without a ``live`` attribute counts as live: recording a call
    that needed none costs a row, losing a live call costs a rerun.
    """
    return bool(getattr(provider, "live", True))


def supports_n(provider: Any) -> bool:
    """Whether ``provider`` draws several samples of one request in one call
    (``supports_n`` true and a ``complete_samples`` method)."""
    return bool(getattr(provider, "supports_n", False)) and callable(
        getattr(provider, "complete_samples", None))


# --- the circuit breaker --------------------------------------------------------------------------



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

    def close(self) -> None:
        """Close the inner provider (its connection pool), when it has a ``close``."""
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()

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


# --- the OpenAI-compatible provider ---------------------------------------------------------------

_EXCERPT = 200
_SECRET_HEADER = re.compile(r"(?i)auth|key|token|secret|cookie")


def _import_httpx() -> Any:
    try:
        import httpx
    except ImportError as exc:  # pragma: no cover - httpx is in the dev env
        raise ProviderError(
            "OpenAICompatibleProvider needs httpx: pip install 'truss_lab[openai]'"
        ) from exc
    return httpx


def _excerpt(text: str) -> str:
    # Redacted before it is cut: a key cut in half would no longer be recognised.
    text = redact(" ".join(text.split())) or ""
    return text if len(text) <= _EXCERPT else text[:_EXCERPT] + "..."


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delay-seconds or an HTTP
    date); None when absent or unparsable."""
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        now_ts = time.time() if now is None else now
        return max(0.0, when.timestamp() - now_ts)
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)


class _Retryable(Exception):
    """One failed attempt that may succeed if tried again."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class CompletionRecorder:
    """A thread-safe ``recorder`` that keeps every §2 record it is given.

    ``records`` is the list so far; :meth:`to_frame` and :meth:`write` export
    them (the latter as Formats §2 JSONL, ready for replay).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: list[dict[str, Any]] = []

    def __call__(self, record: dict[str, Any]) -> None:
        with self._lock:
            self._records.append(dict(record))

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)

    @property
    def records(self) -> list[dict[str, Any]]:
        """A copy of the records so far, in arrival order."""
        with self._lock:
            return list(self._records)

    def to_frame(self) -> pd.DataFrame:
        """The records as a completions frame (the columns :func:`read_completions` returns)."""
        values = self.records
        cols, skip, problems = completion_columns(values)
        cols, _, more = validate_completion_columns(cols, len(values), skip=skip)
        if problems or more:
            i, field, msg, reason = sorted(problems + more, key=lambda p: p[0])[0]
            raise BadInputError(f"record {i}: {msg}", source="<recorder>", field=field,
                                reason=reason)
        return completion_frame(cols)

    def write(self, path: str | os.PathLike[str]) -> int:
        """Write the records as §2 JSONL; returns the number of lines."""
        return write_completions(self.records, path)


@functools.lru_cache(maxsize=4)
def _tls_context(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    """httpx's default TLS context (its certificates, or the environment's
    ``SSL_CERT_FILE``/``SSL_CERT_DIR``: the arguments, so a change is seen), made once
    and shared by every provider: each client made its own, loading the certificate
    bundle again (about 20 ms a provider; a grid makes one per extractor)."""
    import httpx

    return httpx.create_ssl_context()


class OpenAICompatibleProvider:
    """A live provider over ``POST {base_url}/chat/completions``.

    Thread-safe: one shared ``httpx.Client`` whose pool holds
    ``max_concurrency`` connections, and a bounded semaphore so that no more
    than ``max_concurrency`` requests are in flight, whatever the number of
    calling threads. ``recorder`` (any callable taking a dict, e.g. a
    :class:`CompletionRecorder`) receives a §2 record per successful call and
    must be thread-safe; an exception it raises propagates (a run that cannot
    be recorded must not go on silently). ``request.model`` must equal ``model`` (the request
    hash covers it). ``supports_n``: the server honours ``n``, so the k samples of a
    verdict are one call (:meth:`complete_samples`); otherwise k calls.

    Parameters
    ----------
    base_url : str
        The server (``.../v1``).
    model : str
        The model every request names.
    api_key_env : str, default "OPENAI_API_KEY"
        The environment variable holding the key (the key itself is never taken).
    timeout : float, default 30.0
        Seconds one attempt may take.
    max_retries : int, default 5
        Retries of a transient failure (connection, timeout, 429, 5xx).
    backoff_base : float, default 0.5
        Back-off scale, in seconds: a retry waits a random time up to
        ``backoff_base * 2**attempt`` (full jitter).
    backoff_max : float, default 20.0
        The cap of that bound.
    max_concurrency : int, default 8
        Requests in flight at most.
    recorder : callable, optional
        Receives the record of each successful call (above).
    extra_headers : mapping of str to str, optional
        Headers sent with every request.
    supports_n : bool, default False
        The server honours ``n`` (above).
    deadline : float, optional
        Seconds one call may take in all, retries included.
    max_response_bytes : int
        The largest response body read.

    Raises
    ------
    ConfigError
        A setting out of range, naming it.
    """

    provider_id: str = "openai-compatible"
    live: bool = True  # every call reaches a model and is recorded for replay

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str = "OPENAI_API_KEY",
        timeout: float = 30.0,
        max_retries: int = 5,
        backoff_base: float = 0.5,
        backoff_max: float = 20.0,
        max_concurrency: int = 8,
        recorder: Callable[[dict[str, Any]], Any] | None = None,
        extra_headers: Mapping[str, str] | None = None,
        supports_n: bool = False,
        deadline: float | None = DEFAULT_DEADLINE,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        """Many parameters because each is one setting of an OpenAI-compatible client
        (endpoint, key, timeout, retries, back-off, concurrency, limits, headers) that
        the provider table and the CLI set one by one. Long because it checks each
        setting where it is given (one ConfigError naming its field), registers the URL's
        secrets before anything can print it, and builds the client with its close."""
        layer = "OpenAICompatibleProvider"
        if max_concurrency < 1:
            raise ConfigError(f"must be >= 1, got {max_concurrency}", layer=layer,
                              field="max_concurrency")
        if max_retries < 0:
            raise ConfigError(f"must be >= 0, got {max_retries}", layer=layer, field="max_retries")
        if not (math.isfinite(timeout) and timeout > 0):
            raise ConfigError(f"must be a finite number > 0, got {timeout}", layer=layer,
                              field="timeout")
        check_limits(deadline, max_response_bytes, layer=layer)
        for name, value in (("backoff_base", backoff_base), ("backoff_max", backoff_max)):
            if not (math.isfinite(value) and value >= 0):
                raise ConfigError(f"must be a finite number >= 0, got {value}", layer=layer,
                                  field=name)
        httpx = _import_httpx()
        try:
            url = httpx.URL(base_url)
        except httpx.InvalidURL as exc:
            raise ConfigError(f"not a URL: {exc}", layer=layer, field="base_url") from None
        if url.scheme not in ("http", "https") or not url.host:
            raise ConfigError(
                f"expected an http(s) URL such as http://127.0.0.1:8000/v1, got {base_url!r}",
                layer=layer, field="base_url",
            )
        # Credentials in the URL are sent (httpx turns userinfo into Basic auth, a query
        # key stays after the path the provider adds, a key in the path is part of it)
        # but never shown: every message and record names the URL without them.
        register_url_secrets(base_url)
        if url.fragment:
            # Never sent to a server, so whatever it holds was put there by mistake
            # (a key pasted after '#'): refused, and not printed.
            register_secret(url.fragment)
            raise ConfigError("has a fragment ('#...'), which is never sent to a server; "
                              "remove it (a key belongs in the environment variable "
                              f"{api_key_env}, or the query's api-key=)",
                              layer=layer, field="base_url")
        self._httpx = httpx
        self.api_key_env = api_key_env
        self._api_key()  # a bad key is refused here, before any request
        self.base_url = base_url.rstrip("/")
        self.url = str(url.copy_with(path=url.path.rstrip("/") + "/chat/completions"))
        self.model = model
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.backoff_base = float(backoff_base)
        self.backoff_max = float(backoff_max)
        self.max_concurrency = int(max_concurrency)
        self.deadline = None if deadline is None else float(deadline)
        self.max_response_bytes = max_response_bytes
        self.recorder = recorder
        self.extra_headers = dict(extra_headers or {})
        # Off by default: llama.cpp server and Ollama ignore ``n`` and answer one
        # choice, OpenAI and vLLM honour it (k samples for one prompt's tokens).
        self.supports_n = bool(supports_n)
        self._semaphore = threading.BoundedSemaphore(self.max_concurrency)
        self._random = random.Random()
        # Seconds slept between attempts go through here (tests observe it).
        self._sleep: Callable[[float], None] = time.sleep
        self._client: httpx.Client = httpx.Client(
            timeout=httpx.Timeout(self.timeout),
            verify=_tls_context(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")),
            limits=httpx.Limits(
                max_connections=self.max_concurrency,
                max_keepalive_connections=self.max_concurrency,
            ),
        )
        bound_client(self._client)  # socket waits end at the call's deadline
        # A provider dropped without close() (a notebook cell, a command's error path, a
        # test) closes its pool when it is collected: its sockets then never reach the
        # garbage collector open, whose ResourceWarning would surface wherever the
        # program happens to be (under load, inside an unrelated test).
        self._finalizer = weakref.finalize(self, self._client.close)

    def __repr__(self) -> str:
        return f"OpenAICompatibleProvider({redact(self.base_url)!r}, model={self.model!r})"

    def close(self) -> None:
        """Close the connection pool (once; also done when the provider is collected)."""
        self._finalizer()

    def __enter__(self) -> OpenAICompatibleProvider:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ one call

    def _api_key(self) -> str | None:
        """The key from the environment, registered as a secret; one with a control
        character (a CRLF file's ``\r``) or a non-ASCII one (an HTTP header is ASCII:
        the HTTP stack would fail on every call) is refused without printing it."""
        key = os.environ.get(self.api_key_env)
        register_secret(key)
        if key and control_characters(key):
            raise ConfigError(
                "holds a control character (a key read from a file with CRLF line "
                "endings?); strip it and try again", layer="environment",
                field=self.api_key_env)
        if key and not key.isascii():
            at = next(i for i, c in enumerate(key) if not c.isascii())
            raise ConfigError(
                f"holds a non-ASCII character at position {at + 1} of {len(key)} (a key "
                "pasted with a typographic dash or quote?); an API key is ASCII",
                layer="environment", field=self.api_key_env)
        return key

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        headers.update(self.extra_headers)
        for name, value in self.extra_headers.items():
            if _SECRET_HEADER.search(name):
                register_secret(value)
        key = self._api_key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.backoff_max)
        # Full jitter: uniform over [0, min(cap, base * 2^attempt)].
        return self._random.uniform(0.0, min(self.backoff_max, self.backoff_base * 2**attempt))

    def _attempt(self, body: bytes, where: str,
                 clock: CallClock) -> tuple[dict[str, Any], float]:
        """One HTTP exchange within ``clock``: the decoded JSON body and its latency in ms."""
        httpx = self._httpx
        with self._semaphore:
            start = time.perf_counter()
            try:
                with clock.bounding(), self._client.stream(
                        "POST", self.url, content=body, headers=self._headers()) as resp:
                    content = read_capped(resp, self.max_response_bytes)
            except ResponseTooLarge as exc:
                said = "" if exc.declared is None else f" (Content-Length {exc.declared})"
                raise ProviderUnavailableError(
                    f"{where}: the answer of {self.url} is larger than {exc.cap} bytes{said}, "
                    "the cap (max_response_bytes)") from None
            except (httpx.UnsupportedProtocol, httpx.LocalProtocolError) as exc:
                # Our side is wrong; trying again cannot help.
                raise ProviderError(f"{where}: cannot send to {self.url}: {exc}") from exc
            except httpx.TimeoutException as exc:
                msg = (f"the call's deadline of {self.deadline:g}s passed"
                       if clock.passed() else f"timed out after {self.timeout:g}s")
                raise _Retryable(f"{msg} ({type(exc).__name__})") from exc
            except httpx.TransportError as exc:
                raise _Retryable(f"connection failed: {type(exc).__name__}: {exc}") from exc
            latency_ms = (time.perf_counter() - start) * 1000.0
        status = resp.status_code
        text = content.decode("utf-8", "replace")
        if status == 429 or status >= 500:
            raise _Retryable(
                f"HTTP {status}: {_excerpt(text)}",
                parse_retry_after(resp.headers.get("retry-after")),
            )
        if status >= 400:
            raise ProviderError(f"{where}: HTTP {status} from {self.url}: {_excerpt(text)}")
        if not 200 <= status < 300:
            raise ProviderError(f"{where}: unexpected HTTP {status} from {self.url}")
        try:
            data = json.loads(content)
        except (ValueError, RecursionError):  # not JSON, or nested past Python's parser
            raise ProviderError(
                f"{where}: expected a JSON chat-completions body from {self.url}, got "
                f"{_excerpt(content.decode('utf-8', 'replace')) or 'an empty body'!r}"
            ) from None
        return data, latency_ms

    def _parse(self, data: Any, where: str,
               choice: int = 0) -> tuple[str, str, int | None, int | None]:
        expected = 'expected {"choices": [{"message": {"content": "..."}}], ...}'
        try:
            text = data["choices"][choice]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise ProviderError(
                f"{where}: wrong response shape from {self.url}: {expected}; got "
                f"{_excerpt(json.dumps(data))}"
            ) from None
        if not isinstance(text, str):
            raise ProviderError(
                f"{where}: choices[{choice}].message.content is {type(text).__name__}, expected a "
                f"string ({expected})"
            )
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            # A JSON \ud800 escape: no UTF-8 form, so it can be neither stored nor replayed.
            raise ProviderError(
                f"{where}: choices[{choice}].message.content holds a lone surrogate (not valid "
                "Unicode)"
            ) from None
        # What a recording may hold (docs/reference/formats.md): a longer answer could be stored
        # but never written to a completions file or ingested again.
        if len(text) > MAX_COMPLETION_TEXT:
            raise ProviderError(
                f"{where}: choices[{choice}].message.content is {len(text)} characters, over "
                f"the {MAX_COMPLETION_TEXT} a recorded completion holds"
            )
        model = data.get("model") if isinstance(data.get("model"), str) else None
        if model is not None and len(model) > MAX_COMPLETION_NAME:
            raise ProviderError(
                f"{where}: the answer's model is {len(model)} characters, over the "
                f"{MAX_COMPLETION_NAME} a recorded completion holds"
            )
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}

        def count(name: str) -> int | None:
            v = usage.get(name)
            return v if type(v) is int and v >= 0 else None

        return text, model or self.model, count("prompt_tokens"), count("completion_tokens")

    def complete(self, request: CompletionRequest) -> Completion:
        """Send ``request``; retry transient failures.

        Parameters
        ----------
        request : CompletionRequest
            The request.

        Returns
        -------
        Completion
            The answer.

        Raises
        ------
        ProviderError
            It cannot succeed (a 4xx, a garbage body, or retries exhausted).
        """
        return self._complete([request], n=None)[0]

    def complete_samples(self, requests: Sequence[CompletionRequest]) -> list[Completion]:
        """The k sample requests of one verdict in one call with ``n=k`` (their
        bodies differ only in ``sample_index`` and the seed offset: request 0's
        parameters are sent). Choice ``i`` answers request ``i`` and carries its
        hash; the call's latency and token usage go on sample 0 only (None on the
        others), so usage sums count the call once.

        Parameters
        ----------
        requests : sequence of CompletionRequest
            One verdict's sample requests.

        Returns
        -------
        list of Completion
            One per request, in order.

        Raises
        ------
        ProviderError
            Fewer choices than asked (the server ignored ``n``: set
            ``supports_n=False``), or the call failed.
        """
        return self._complete(list(requests), n=len(requests))

    def _complete(self, requests: list[CompletionRequest], n: int | None) -> list[Completion]:
        first = requests[0]
        where = f"verdict {first.verdict_hash}, extractor {first.extractor!r}"
        if first.model != self.model:
            raise ProviderError(
                f"{where}: the request asks for model {first.model!r} but this provider "
                f"serves {self.model!r}"
            )
        body = json.dumps(chat_body(first, n), ensure_ascii=False).encode("utf-8")
        attempts = self.max_retries + 1
        last = ""
        clock = CallClock(self.deadline)
        for attempt in range(attempts):
            try:
                data, latency_ms = self._attempt(body, where, clock)
            except _Retryable as exc:
                last = str(exc)
                if attempt + 1 < attempts:
                    wait = self._backoff(attempt, exc.retry_after)
                    # A Retry-After past the deadline: the server says it will not
                    # answer in time, so the call ends now rather than retry in vain.
                    asked = exc.retry_after or 0.0
                    left = clock.left()
                    if left is not None and max(wait, asked) >= left:
                        raise self._out_of_time(where, attempt + 1, last, asked) from None
                    self._sleep(wait)
                continue
            got = len(data["choices"]) if isinstance(data, dict) and isinstance(
                data.get("choices"), list) else 0
            if n is not None and got < n:
                raise ProviderError(
                    f"{where}: asked {self.url} for n={n} samples, got {got} choice(s); a "
                    "server that ignores n needs supports_n=False (one call per sample)")
            out = []
            for i, request in enumerate(requests):
                text, model, p_tokens, c_tokens = self._parse(data, where, i)
                lat = latency_ms if i == 0 else None
                if i:
                    p_tokens = c_tokens = None
                out.append(Completion(text=text, model=model, prompt_tokens=p_tokens,
                                      completion_tokens=c_tokens, latency_ms=lat,
                                      request_hash=request.request_hash))
            if self.recorder is not None:
                for request, c in zip(requests, out, strict=True):
                    record = {
                        "verdict_hash": request.verdict_hash,
                        "extractor": request.extractor,
                        "model": c.model,
                        "prompt_version": request.prompt_version,
                        "request_hash": c.request_hash,
                        "text": c.text,
                        "latency_ms": c.latency_ms,
                        "prompt_tokens": c.prompt_tokens,
                        "completion_tokens": c.completion_tokens,
                    }
                    if request.sample_index is not None:
                        record["sample_index"] = request.sample_index
                    # A recording is kept: no key the server echoed (in the text, the
                    # model name or anywhere else) reaches it.
                    self.recorder(redact_json(record))
            return out
        raise ProviderUnavailableError(
            f"{where}: gave up after {attempts} attempt(s) to {self.url}; last error: {last}"
        )

    def _out_of_time(self, where: str, attempts: int, last: str,
                     asked: float) -> ProviderUnavailableError:
        """The error of a call whose deadline passes before its next attempt could end."""
        why = (f"the server asks to wait {asked:g}s (Retry-After), past " if asked
               else "no answer within ")
        return ProviderUnavailableError(
            f"{where}: {why}the call's deadline of {self.deadline:g}s after {attempts} "
            f"attempt(s) to {self.url} (deadline=, --deadline); last error: {last}")

    def complete_many(
        self, requests: Iterable[CompletionRequest], *, concurrency: int | None = None
    ) -> list[Completion | ProviderError]:
        """Complete every request on a thread pool; element ``i`` is request
        ``i``'s :class:`Completion` or the :class:`ProviderError` it raised.

        Parameters
        ----------
        requests : iterable of CompletionRequest
            The requests.
        concurrency : int, optional
            Sizes the pool (default ``max_concurrency``); in-flight requests never
            exceed ``max_concurrency`` either way.

        Returns
        -------
        list of Completion or ProviderError
            One per request, in order.
        """
        reqs = list(requests)
        if not reqs:
            return []
        workers = max(1, min(concurrency or self.max_concurrency, len(reqs)))

        def one(req: CompletionRequest) -> Completion | ProviderError:
            try:
                return self.complete(req)
            except ProviderError as exc:
                return exc

        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="truss-provider") as pool:
            return list(pool.map(one, reqs))
