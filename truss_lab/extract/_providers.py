"""The provider seam: one method, ``complete(request) -> Completion``.

Implementations: :class:`ReplayProvider` (recorded completions, the offline
default), :class:`OpenAICompatibleProvider` (vLLM, llama.cpp server, Ollama,
OpenAI) and :class:`HeuristicProvider` (a deterministic baseline, no model).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from ..core._canonical import canonical, canonical_digest

__all__ = ["ChatMessage", "Completion", "CompletionRequest", "Provider", "is_live",
           "provider_name", "supports_n"]


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
    """The :class:`~truss_lab.extract._config.ExtractorConfig` hash of the extractor
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
