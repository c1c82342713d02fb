"""The extractor configuration: one frozen, hashed object a live run is recorded under.

:class:`ExtractorConfig` holds every knob that changes what a model is asked
(provider, model, prompt version, ``response_format``, sampling parameters,
samples per verdict). Its :attr:`~ExtractorConfig.config_hash` is part of each
request's hash, so a recording answers only the configuration that made it; the
store keeps the configuration beside the recordings (``extractor_configs``,
``completions.config_hash``) and on the run record, so ``replay:EXTRACTOR_ID``
rebuilds the same requests without the researcher re-typing them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..core._canonical import canonical, canonical_digest
from ..core._errors import BadInputError
from ._parser import LESSONS_JSON_SCHEMA

__all__ = ["DEFAULT_TEMPERATURE", "MAX_SAMPLES", "ExtractorConfig", "ResponseFormat"]

ResponseFormat = Literal["none", "json_object", "json_schema"]
DEFAULT_TEMPERATURE = 0.0
#: Most samples per verdict: k calls per verdict is the cost; beyond this it is a typo.
MAX_SAMPLES = 64
# The sampling knobs that travel in the request body under their own names.
_SAMPLING = ("temperature", "top_p", "seed", "max_tokens")


class ExtractorConfig(BaseModel):
    """What a live extractor asks a model, as one recorded, hashed value."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    provider: str = "openai-compatible"
    """The provider kind (``provider_id`` of the provider that made the calls)."""
    model: str = Field(min_length=1)
    """The model name sent in each request."""
    prompt_version: str = "lesson-v1"
    """The prompt template version that renders the messages."""
    response_format: ResponseFormat = "none"
    """Structured output: ``none`` (free text), ``json_object`` (any JSON object) or
    ``json_schema`` (the lessons schema, :data:`LESSONS_JSON_SCHEMA`)."""
    temperature: float | None = Field(default=DEFAULT_TEMPERATURE, ge=0, allow_inf_nan=False)
    """Sampling temperature; ``None`` leaves it to the server."""
    top_p: float | None = Field(default=None, gt=0, le=1, allow_inf_nan=False)
    """Nucleus sampling mass; ``None`` leaves it to the server."""
    seed: int | None = None
    """Sampling seed, for servers that honour it."""
    max_tokens: int | None = Field(default=None, ge=1)
    """Most tokens in one completion; ``None`` leaves it to the server."""
    samples: int = Field(default=1, ge=1, le=MAX_SAMPLES)
    """Completions (samples) per verdict. With k > 1 each sample is its own request
    (``sample_index`` in its hash; a set ``seed`` becomes ``seed + sample_index``), sent
    as one call with ``n=k`` to a provider that supports it, else as k calls; the gate
    keeps one lesson per cluster of near-duplicates across the samples, scored for
    self-consistency (README "Several samples per verdict")."""

    @property
    def config_hash(self) -> str:
        """Lowercase hex SHA-256 of the canonical JSON of every field."""
        return canonical_digest(canonical(self.model_dump(mode="json")))

    @property
    def is_default(self) -> bool:
        """Whether only provider, model and prompt version differ from the defaults:
        such an extractor keeps the plain ``MODEL@PROMPT_VERSION`` id."""
        plain = ExtractorConfig(provider=self.provider, model=self.model,
                                prompt_version=self.prompt_version)
        return self == plain

    def default_extractor_id(self) -> str:
        """``MODEL@PROMPT_VERSION``, plus ``+`` and 8 hex digits of the config hash
        when any other knob is set, so two configurations never share an id (and so
        never share recordings)."""
        base = f"{self.model}@{self.prompt_version}"
        return base if self.is_default else f"{base}+{self.config_hash[:8]}"

    def request_parameters(self) -> dict[str, Any]:
        """The request-body fields besides model and messages (OpenAI chat-completions
        names): the sampling knobs that are set, and ``response_format`` unless none."""
        out: dict[str, Any] = {k: getattr(self, k) for k in _SAMPLING
                               if getattr(self, k) is not None}
        if self.response_format == "json_object":
            out["response_format"] = {"type": "json_object"}
        elif self.response_format == "json_schema":
            out["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "lessons", "strict": True,
                                "schema": LESSONS_JSON_SCHEMA},
            }
        return out

    @classmethod
    def from_parameters(cls, model: str, prompt_version: str,
                        parameters: Mapping[str, Any] | None = None,
                        **fields: Any) -> ExtractorConfig:
        """A config from request parameters in the older ``parameters`` form
        (``{"temperature": 0}``): only the sampling knobs are accepted, so a
        parameter that would escape the recorded configuration is refused."""
        params = dict(parameters or {})
        unknown = sorted(set(params) - set(_SAMPLING))
        if unknown:
            raise BadInputError(
                f"unknown request parameter(s) {unknown}; the extractor configuration "
                f"records {', '.join(_SAMPLING)} (response_format and samples are fields "
                "of ExtractorConfig)", field="parameters", reason="unknown_parameter")
        if "temperature" not in params:
            params["temperature"] = None
        return cls(model=model, prompt_version=prompt_version, **params, **fields)
