"""The OpenAI Batch file format (Formats §2, OpenAI Batch files): the models of an input
line, as ``truss-lab batch prepare`` writes it, and of an output line, as ``truss-lab ingest
completions --format openai-batch`` reads it (:mod:`truss_lab.extract._batch_api`). Their
JSON Schemas are ``truss-lab schema batch-input`` and ``batch-output``."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

__all__ = ["BATCH_URL", "BatchError", "BatchOutputModel", "BatchRequestModel",
           "BatchResponse"]

BATCH_URL = "/v1/chat/completions"
"""The endpoint every line of a Batch input file names."""
_CUSTOM_ID = r"^[0-9a-f]{16}-[0-9a-f]{64}$"


class BatchRequestModel(BaseModel):
    """One line of a Batch input file, as
    :func:`~truss_lab.extract._batch_api.prepare_batch` writes it."""

    model_config = ConfigDict(extra="forbid", strict=True, use_attribute_docstrings=True)

    custom_id: Annotated[StrictStr, Field(pattern=_CUSTOM_ID)]
    """16 hex digits of the extractor configuration's hash, ``-``, the verdict's hash
    (:func:`~truss_lab.extract._batch_api.batch_custom_id`)."""
    method: Literal["POST"]
    """Always ``POST``."""
    url: Literal["/v1/chat/completions"]
    """Always the chat completions endpoint (:data:`BATCH_URL`)."""
    body: dict[str, Any]
    """The chat completions request the live extractor sends for this verdict (``model``,
    ``messages`` and the configuration's set knobs under their OpenAI names)."""


class BatchError(BaseModel):
    """A Batch output line's ``error``: why the request got no response."""

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)

    code: StrictStr | None = None
    """``batch_expired`` for a request not run within the completion window; any other
    code is a failed request."""
    message: StrictStr | None = None
    """The provider's words (shown, cut to 80 characters, in the bad line's error)."""


class BatchResponse(BaseModel):
    """A Batch output line's ``response``: the HTTP answer to one request."""

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)

    status_code: StrictInt
    """HTTP status; any but 200 makes the line a failed request."""
    request_id: StrictStr | None = None
    """The provider's id of the request (kept in the completion's ``source``)."""
    body: dict[str, Any] | None = None
    """The chat completion: ``choices[0].message.content`` (the answer, at most 1048576
    characters as a §2 ``text``), ``model`` (at most 1024 characters; absent: the
    configuration's model), ``usage.prompt_tokens`` and ``usage.completion_tokens``
    (integers >= 0, when given); nothing else of it is read."""


class BatchOutputModel(BaseModel):
    """One line of a Batch output file, as
    :func:`~truss_lab.extract._batch_api.ingest_batch` reads it: fields it does not name
    (``id``, and any the provider adds) are allowed and not read."""

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)

    custom_id: StrictStr
    """The ``custom_id`` of the input line it answers: one this database prepared, at
    most once in a file."""
    response: BatchResponse | None = None
    """The answer; null when ``error`` says why there is none."""
    error: BatchError | None = None
    """Null on an answered request; else a failed or expired (``batch_expired``) one."""
