"""Extractors: a provider, a prompt and a model under one recorded configuration, run
over verdicts one by one or, for a replay of recordings, in bulk.

The configuration
-----------------

One frozen, hashed object a live run is recorded under. :class:`ExtractorConfig` holds
every knob that changes what a model is asked (provider, model, prompt version,
``response_format``, sampling parameters, samples per verdict). Its
:attr:`~ExtractorConfig.config_hash` is part of each request's hash, so a recording
answers only the configuration that made it; the store keeps the configuration beside
the recordings (``extractor_configs``, ``completions.config_hash``) and on the run
record, so ``replay:EXTRACTOR_ID`` rebuilds the same requests without the researcher
re-typing them.

The extractor
-------------

:class:`Extractor` names the configuration every row carries (``extractor_id``);
:func:`extract_verdicts` runs it over ``(seq, hash, payload)`` verdicts and
returns plain :class:`ExtractionRows` (candidates, error rows, the completions
received), before any gate or write: workers on other processes return them to
the single writer, which gates them in :mod:`truss_lab.extract._gate`.
:func:`ensure_run` files the run record (:mod:`truss_lab.store._runs`) from an
extractor and a config, for the batch and the live learner alike.

The replay provider
-------------------

Recorded completions, the offline default. A replay answers a :class:`CompletionRequest`
from a recording keyed by (``verdict_hash``, ``extractor``, ``sample_index``; a
recording without a sample index is sample 0, as is a request of a one-sample
extractor). It never answers a changed prompt with an old recording: when the recording
carries a ``request_hash`` it must equal the hash of the request rebuilt from the
recording's own prompt version (:meth:`Extractor.replay` takes that version). Recordings
made elsewhere may lack one, or name a prompt version not registered here: those are
answered unchecked, whatever their version, and counted in
:attr:`ReplayProvider.unchecked_requests` (the second kind with an
:class:`UnregisteredPromptWarning`). Recordings that carry their extractor
configuration (Formats §2 ``config``) give it back through
:meth:`ReplayProvider.config_of`, so a file replays by itself.

Replay in bulk
--------------

:func:`replay_verdicts` gives :func:`extract_verdicts`' rows without per-verdict objects.
A replay answers from recordings, so per verdict the work is: check the payload,
render the user message, look the recording up (hashing the request only when
the recording carries a request hash to compare), parse the completion. It does
exactly that, with the request hash computed from a canonical text
prepared once per run (the request body is the same for every verdict but the
user message), and returns the same :class:`ExtractionRows`, row for row, as
the per-verdict path (tests/test_bulk_replay.py compares them). A verdict whose
values fall outside the plain case (a recording with odd types, text that
cannot be UTF-8) goes through the per-verdict path itself.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import threading
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..core._canonical import canonical, canonical_digest, jcs_string
from ..core._config import MemoryConfig
from ..core._errors import BadInputError, ProviderError, TrussLabWarning
from ..ingest._completions import read_completions
from ..ingest._ingest import FILE_TO_TABLE
from ..journal._spec import plainly_valid_payload, validate_verdict_payload
from ..store._runs import (
    REPLAY_COLUMNS,
    create_run,
    extractor_config,
    record_extractor_config,
    record_prompt_template,
    recorded_completions,
    recording_counts,
    recordings_of,
    run_provider_failures,
)
from ..store._store import Store
from ..store._tables import VERDICT_ERRORS_SCHEMA
from ._heuristic import HeuristicProvider
from ._limits import MAX_SAMPLES
from ._parser import (
    LESSONS_JSON_SCHEMA,
    CandidateColumns,
    ParseResult,
    candidates_frame,
    parse_completion,
    parse_fast_or_exact,
)
from ._prompts import (
    PromptTemplate,
    build_request,
    check_kind,
    get_template,
    known_templates,
    render_user,
    unregistered_template,
)
from ._providers import (
    ChatMessage,
    CircuitOpenError,
    Completion,
    CompletionRequest,
    OpenAICompatibleProvider,
    Provider,
    provider_name,
    supports_n,
)

__all__ = [
    "DEFAULT_TEMPERATURE",
    "ExtractionRows",
    "Extractor",
    "ExtractorConfig",
    "ReplayProvider",
    "ResponseFormat",
    "UnregisteredPromptWarning",
    "completion_record",
    "empty_candidates",
    "ensure_run",
    "error_row",
    "extract_verdicts",
    "replay_verdicts",
]


# --- the extractor configuration ------------------------------------------------------------------

ResponseFormat = Literal["none", "json_object", "json_schema"]
DEFAULT_TEMPERATURE = 0.0
# The sampling knobs that travel in the request body under their own names.
_SAMPLING = ("temperature", "top_p", "seed", "max_tokens")
# The keyword options Extractor.openai passes through: read from the provider's own
# signature, so the list cannot drift from what the provider takes.
_PROVIDER_OPTIONS = frozenset(
    inspect.signature(OpenAICompatibleProvider.__init__).parameters) - {
        "self", "base_url", "model"}


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
    self-consistency (docs/how-to/live-or-batch.md)."""

    @classmethod
    def checked(cls, **fields: Any) -> ExtractorConfig:
        """The configuration of ``fields``, or a :class:`BadInputError` naming the first
        bad field (pydantic's own error would reach a user as a multi-line traceback).

        Parameters
        ----------
        **fields : Any
            The fields of :class:`ExtractorConfig` (``model``, ``temperature``, ...).

        Returns
        -------
        ExtractorConfig
            The configuration.

        Raises
        ------
        BadInputError
            A field out of range or unknown; ``field`` is its name, ``reason``
            ``bad_value``.
        """
        try:
            return cls(**fields)
        except ValidationError as exc:
            err = exc.errors()[0]
            name = str(err["loc"][0]) if err["loc"] else "config"
            value = err.get("input")
            shown = "" if isinstance(value, dict) else f" (value {json.dumps(value, default=str)})"
            raise BadInputError(f"{err['msg']}{shown}", field=name,
                                reason="bad_value") from None

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
        return cls.checked(model=model, prompt_version=prompt_version, **params, **fields)


# --- the extractor --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Extractor:
    """An extractor configuration: a provider, a prompt template and a model.

    ``extractor_id`` names it in every row it produces (and is the replay key).
    ``config``, when set, is the recorded :class:`ExtractorConfig` (a live
    extractor, or the replay of one): its hash enters every request's hash.
    Make one with :meth:`replay`, :meth:`openai` or :meth:`heuristic`.

    Parameters
    ----------
    extractor_id : str
        The id every candidate, lesson and recording of it carries.
    provider : truss_lab.extract.Provider
        What answers its requests (``complete(request) -> Completion``).
    template : truss_lab.extract.PromptTemplate, default lesson-v1
        The prompt that renders a verdict into messages.
    model : str, default "unknown"
        The model name sent in each request.
    parameters : mapping, optional
        Further request-body fields (sampling knobs).
    config : truss_lab.extract._extractor.ExtractorConfig, optional
        The recorded configuration of a live extractor, or of its replay.
    samples : int, default 1
        Samples per verdict when there is no ``config``.

    See Also
    --------
    run_extraction : Runs an extractor over a batch of verdicts.
    ContractCloseLearning : Runs it on one verdict as it closes.

    Examples
    --------
    >>> ex = tl.Extractor.replay(store, "sim-good-v1")
    >>> ex.extractor_id, ex.template.version, ex.n_samples
    ('sim-good-v1', 'lesson-v1', 1)
    >>> tl.Extractor.heuristic().extractor_id
    'heuristic-v1'
    >>> live = tl.Extractor.openai("http://127.0.0.1:8000/v1", "tiny-model",
    ...                            parameters={"temperature": 0.7})
    >>> live.extractor_id  # a knob other than the defaults: a hash in the id
    'tiny-model@lesson-v1+...'
    """

    extractor_id: str
    provider: Provider
    template: PromptTemplate = field(default_factory=lambda: get_template("lesson-v1"))
    model: str = "unknown"
    parameters: Mapping[str, Any] = field(default_factory=dict)
    config: ExtractorConfig | None = None
    samples: int = 1
    """Samples per verdict when there is no ``config`` (the replay of k-sample
    recordings made elsewhere); with a config, ``config.samples`` rules."""

    @property
    def n_samples(self) -> int:
        """Completions drawn per verdict (k)."""
        return self.config.samples if self.config is not None else int(self.samples)

    @classmethod
    def replay(
        cls,
        recordings: Any,
        extractor_id: str,
        *,
        template: str | PromptTemplate | None = None,
        model: str | None = None,
        parameters: Mapping[str, Any] | None = None,
        samples: int = 1,
        run_id: str | None = None,
        store: Store | None = None,
    ) -> Extractor:
        """Replay recorded completions (a §2 file, a DataFrame, or a Store's table).

        An extractor recorded live by truss_lab replays by itself: its
        :class:`ExtractorConfig` is kept with the recordings (in the Store, or
        on each line of a §2 file written by :class:`CompletionRecorder`), and
        the replay rebuilds the same requests from it (``template``, ``model``
        and ``parameters`` are then ignored). Otherwise give the ``model`` and
        ``parameters`` the recordings were made with: the request hash covers
        them, and a request that differs from the recorded one is refused.
        ``samples``: samples per verdict of recordings made elsewhere (their
        ``sample_index`` 0..k-1); a stored configuration brings its own.
        From a Store, each verdict is answered by its earliest recording, or with
        ``run_id`` by the recordings that run's live calls made (a run replays as
        itself: :func:`~truss_lab.extract._batch.rerun`), a call of it that failed
        failing again with the error it met. A Store's recordings are read as they are
        needed (:meth:`ReplayProvider.from_store`): keep the Store open while it replays.

        The prompt is the recordings' own ``prompt_version`` (the most frequent,
        should they name several) unless ``template`` says otherwise: a version
        registered here (built in, :func:`register_template`, or ``store``'s
        ``prompts`` table) rebuilds the requests their hashes are checked
        against; an unknown one replays unchecked, with an
        :class:`UnregisteredPromptWarning` when some recordings carry a hash.

        Parameters
        ----------
        recordings : Store or str or os.PathLike or pandas.DataFrame
            The recordings: a database's ``completions``, a completions file
            (Formats §2) or a frame of its columns.
        extractor_id : str
            The recorded extractor to replay.
        template : str or truss_lab.extract.PromptTemplate, optional
            The prompt the recordings were made with (default: theirs).
        model : str, optional
            The model the recordings were made with, when no configuration is recorded.
        parameters : mapping, optional
            The request parameters they were made with, likewise.
        samples : int, default 1
            Samples per verdict of recordings made elsewhere.
        run_id : str, optional
            Replay the recordings of this run's live calls (a Store only).
        store : Store, optional
            Where registered prompts are found, when ``recordings`` is not a Store.

        Returns
        -------
        Extractor
            An extractor answered by the recordings: no model is called.

        Raises
        ------
        BadInputError
            The recordings cannot be read, ``samples`` is not a positive integer, or
            ``run_id`` is given for a file or frame.
        """
        config = None
        failures: dict[tuple[str, str, int], str] = {}
        if isinstance(recordings, Store):
            store = recordings
            stored = extractor_config(recordings, extractor_id)
            config = None if stored is None else ExtractorConfig.model_validate(stored)
            if run_id is not None:
                failed = run_provider_failures(store, run_id)
                failures = {(v, extractor_id, int(k)): str(m) for v, k, m in zip(
                    failed["verdict_hash"], failed["sample_index"].fillna(0),
                    failed["message"].fillna(""), strict=True)}
            provider = ReplayProvider.from_store(
                store, extractor_id, run_id=run_id,
                known_prompts=frozenset(known_templates(store)), failures=failures)
        elif run_id is not None:
            raise BadInputError("run_id selects a run's recordings in a Store; a file or "
                                "frame of recordings is replayed whole", field="run_id")
        else:
            provider = ReplayProvider(recordings,
                                      known_prompts=frozenset(known_templates(store)),
                                      failures=failures)
        config = config or provider.config_of(extractor_id)
        if template is None:
            version = (config.prompt_version if config is not None
                       else provider.prompt_version_of(extractor_id) or "lesson-v1")
            tpl = _replay_template(version, store, provider, extractor_id)
        else:
            tpl = get_template(template, store) if isinstance(template, str) else template
        if config is not None:
            return cls(extractor_id, provider, tpl, config.model, config.request_parameters(),
                       config)
        if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
            raise BadInputError(f"samples must be a positive integer, got {samples!r}",
                                field="samples")
        return cls(extractor_id, provider, tpl, model or extractor_id, dict(parameters or {}),
                   samples=samples)

    @classmethod
    def heuristic(cls, *, max_lessons: int = 5) -> Extractor:
        """The deterministic, model-free baseline (``heuristic-v1``).

        Parameters
        ----------
        max_lessons : int, default 5
            The most lessons per verdict (the most salient are kept).

        Returns
        -------
        Extractor
            The heuristic extractor (its rules: docs/reference/extractors.md).
        """
        h = HeuristicProvider(max_lessons=max_lessons)
        return cls(h.extractor_id, h, get_template("lesson-v1"), h.model)

    @classmethod
    def openai(
        cls,
        base_url: str,
        model: str,
        *,
        extractor_id: str | None = None,
        template: str | PromptTemplate | None = None,
        parameters: Mapping[str, Any] | None = None,
        config: ExtractorConfig | None = None,
        store: Store | None = None,
        **provider_options: Any,
    ) -> Extractor:
        """A live OpenAI-compatible endpoint (vLLM, llama.cpp server, Ollama, OpenAI).

        ``config`` sets every recorded knob (``response_format``, sampling,
        samples); without it one is made from ``model``, ``template`` and the
        sampling ``parameters`` (default ``{"temperature": 0}``). The default
        ``extractor_id`` is :meth:`ExtractorConfig.default_extractor_id`.
        ``template``: a lesson :class:`PromptTemplate` (:func:`load_prompt` reads a
        file) or a registered version name (``store``'s ``prompts`` table included);
        default ``config.prompt_version``, else ``lesson-v1``.

        Parameters
        ----------
        base_url : str
            The endpoint, e.g. ``http://127.0.0.1:8000/v1``.
        model : str
            The model name the server serves.
        extractor_id : str, optional
            The extractor's id (default ``MODEL@PROMPT_VERSION``, plus a hash of any
            knob that differs from the defaults).
        template : str or truss_lab.extract.PromptTemplate, optional
            The lesson prompt.
        parameters : mapping, optional
            Sampling knobs (``temperature``, ``top_p``, ``seed``, ``max_tokens``).
        config : truss_lab.extract._extractor.ExtractorConfig, optional
            Every recorded knob at once, instead of ``parameters``.
        store : Store, optional
            Where a registered prompt version is found.
        **provider_options : Any
            Options of :class:`truss_lab.extract.OpenAICompatibleProvider`: ``api_key_env``,
            ``timeout``, ``max_retries``, ``max_concurrency``, ``deadline``,
            ``max_response_bytes``, ``supports_n``, ``recorder``, ...

        Returns
        -------
        Extractor
            A live extractor; every call it makes is recorded when it runs.

        Raises
        ------
        BadInputError
            A knob out of range (``temperature=-1``, the field named), an option the
            provider does not take, an unknown prompt version, or a prompt of another
            kind.
        """
        if template is None:
            template = config.prompt_version if config is not None else "lesson-v1"
        tpl = get_template(template, store) if isinstance(template, str) else template
        check_kind(tpl, "lesson", "template")
        if config is None:
            config = ExtractorConfig.from_parameters(
                model, tpl.version, parameters or {"temperature": 0})
        elif parameters or config.model != model or config.prompt_version != tpl.version:
            raise BadInputError(
                f"config says model {config.model!r}, prompt {config.prompt_version!r}; the "
                f"call says {model!r}, {tpl.version!r}{' and parameters' if parameters else ''}:"
                " give the knobs in one place, the config", field="config")
        recorder = provider_options.get("recorder")
        if recorder is not None:
            # Each record carries the configuration, so a §2 file of them replays by
            # itself (Formats §2 ``config``).
            provider_options["recorder"] = _ConfigRecorder(recorder, config)
        unknown = sorted(set(provider_options) - _PROVIDER_OPTIONS)
        if unknown:
            raise BadInputError(
                f"unknown provider option(s) {unknown}; OpenAICompatibleProvider takes "
                f"{', '.join(sorted(_PROVIDER_OPTIONS))}", field=unknown[0],
                reason="unknown_option")
        provider = OpenAICompatibleProvider(base_url, model, **provider_options)
        return cls(extractor_id or config.default_extractor_id(), provider, tpl, model,
                   config.request_parameters(), config)

    def request(self, verdict_hash: str, payload: Mapping[str, Any]) -> CompletionRequest:
        """The request for one verdict (carrying the config hash, when there is a config).

        Parameters
        ----------
        verdict_hash : str
            The verdict's journal hash.
        payload : mapping
            The verdict's payload.

        Returns
        -------
        truss_lab.extract.CompletionRequest
            The messages, model and parameters, with their ``request_hash``.
        """
        req = build_request(
            self.template, payload, verdict_hash=verdict_hash, extractor=self.extractor_id,
            model=self.model, parameters=dict(self.parameters),
        )
        if self.config is None:
            return req
        return req.model_copy(update={"config_hash": self.config.config_hash})

    def sample_requests(self, verdict_hash: str,
                        payload: Mapping[str, Any]) -> list[CompletionRequest]:
        """The k requests for one verdict: ``[request()]`` when k is 1 (no sample
        index, so one-sample hashes stay as they were); else one per sample, each
        with its ``sample_index`` and, when a seed is set, ``seed + sample_index``
        (k calls with one seed would draw one sample k times).

        Parameters
        ----------
        verdict_hash : str
            The verdict's journal hash.
        payload : mapping
            The verdict's payload.

        Returns
        -------
        list of truss_lab.extract.CompletionRequest
            One request per sample.
        """
        base = self.request(verdict_hash, payload)
        k = self.n_samples
        if k == 1:
            return [base]
        out = []
        for i in range(k):
            params = dict(base.parameters)
            if isinstance(params.get("seed"), int):
                params["seed"] = params["seed"] + i
            out.append(base.model_copy(update={"sample_index": i, "parameters": params}))
        return out


@dataclass(frozen=True)
class _ConfigRecorder:
    """A recorder that adds ``config`` (the extractor configuration) to each record
    of a call made under it before handing the record on."""

    inner: Any
    config: ExtractorConfig

    def __call__(self, record: dict[str, Any]) -> Any:
        return self.inner({**record, "config": self.config.model_dump(mode="json")})


class ExtractionRows:
    """What extraction of some verdicts produced, before any gate or write.

    Plain data (picklable), so workers on other processes or machines can
    return it to the single writer.
    """

    def __init__(self, candidates: pd.DataFrame | CandidateColumns, errors: pd.DataFrame,
                 provider_calls: int = 0, completions: list[dict[str, Any]] | None = None,
                 samples: int = 1) -> None:
        self._candidates = candidates
        self.errors = errors
        """One row per verdict whose provider call or parse failed."""
        self.provider_calls = provider_calls
        """How many times the provider was called."""
        self.completions: list[dict[str, Any]] = [] if completions is None else completions
        """The completions received (Formats §2 fields), for recording live calls."""
        self.samples = samples
        """Samples drawn per verdict (k): the denominator of self-consistency."""

    @property
    def candidates(self) -> pd.DataFrame:
        """One row per proposed lesson (valid or dropped)."""
        if isinstance(self._candidates, CandidateColumns):
            # Replay's bulk path gathers columns; the gate reads those directly
            # (:attr:`columns`) and the frame is built only for a reader that wants it.
            self._candidates = self._candidates.frame()
        return self._candidates

    @property
    def columns(self) -> CandidateColumns | None:
        """The candidates as gathered columns, while no frame of them has been built."""
        c = self._candidates
        return c if isinstance(c, CandidateColumns) else None

    def __repr__(self) -> str:
        n = len(self._candidates)
        return (f"ExtractionRows({n} candidates, {len(self.errors)} errors, "
                f"provider_calls={self.provider_calls}, samples={self.samples})")


def extract_verdicts(
    extractor: Extractor,
    verdicts: Iterable[tuple[int, str, Mapping[str, Any]]],
) -> ExtractionRows:
    """Run the extractor over ``(seq, hash, payload)`` verdicts (read once, in order);
    never raises for one bad verdict: its provider or parse failure becomes an error row."""
    # The bulk path replays one sample per verdict; k samples take the general path.
    if type(extractor.provider) is ReplayProvider and extractor.n_samples == 1:
        return replay_verdicts(extractor, verdicts)
    results: list[tuple[dict[str, Any], Any]] = []
    errors: list[dict[str, Any]] = []
    completions: list[dict[str, Any]] = []
    calls = 0
    for seq, vhash, payload in verdicts:
        c, e, done, found = extract_verdicts_one(extractor, seq, vhash, payload)
        calls += c
        errors += e
        completions += done
        results += found
    # One frame per batch, not per verdict: building frames dominated the run time.
    if results:
        cands = candidates_frame(results)
        cands["prompt_version"] = extractor.template.version
        cands["n_samples"] = extractor.n_samples  # self-consistency's denominator
    else:
        cands = empty_candidates()
    return ExtractionRows(cands, pd.DataFrame(errors, columns=VERDICT_ERRORS_SCHEMA.names[1:]),
                          calls, completions, extractor.n_samples)


def extract_verdicts_one(
    extractor: Extractor, seq: int, vhash: str, payload: Mapping[str, Any]
) -> tuple[int, list[dict[str, Any]], list[dict[str, Any]], list[tuple[dict[str, Any], Any]]]:
    """One verdict's k samples: (provider calls, error rows, completion records,
    (keys, parse result) pairs)."""
    try:
        requests = extractor.sample_requests(vhash, payload)
    except BadInputError as exc:
        return 0, [error_row(seq, vhash, "prompt", "bad_verdict", str(exc))], [], []
    answers, calls = _complete_samples(extractor.provider, requests)
    errors: list[dict[str, Any]] = []
    records: list[dict[str, Any]] = []
    found: list[tuple[dict[str, Any], Any]] = []
    for request, answer in zip(requests, answers, strict=True):
        sample = request.sample_index or 0
        if isinstance(answer, ProviderError):
            errors.append(error_row(seq, vhash, "provider", "provider_error", str(answer), sample))
            continue
        records.append(completion_record(request, answer))
        parsed = parse_completion(answer.text)
        if parsed.error is not None:
            errors.append(error_row(seq, vhash, "parse", parsed.error, parsed.detail, sample))
            continue
        if parsed.lessons:
            found.append(({"verdict_seq": seq, "verdict_hash": vhash,
                           "extractor_id": extractor.extractor_id, "sample_index": sample},
                          parsed))
    return calls, errors, records, found


def _complete_samples(provider: Provider, requests: list[CompletionRequest],
                      ) -> tuple[list[Completion | ProviderError], int]:
    """One answer per request (a completion or the verdict's provider error) and the
    number of provider calls: one ``n=k`` call where the provider supports it, else
    one call per sample. :class:`CircuitOpenError` propagates (the run stops)."""
    if len(requests) > 1 and supports_n(provider):
        try:
            return list(provider.complete_samples(requests)), 1  # type: ignore[attr-defined]
        except CircuitOpenError:
            raise
        except ProviderError as exc:
            return [exc] * len(requests), 1
    out: list[Completion | ProviderError] = []
    for request in requests:
        try:
            out.append(provider.complete(request))
        except CircuitOpenError:
            raise  # the endpoint is down: the run stops and this chunk is not written
        except ProviderError as exc:
            out.append(exc)
    return out, len(requests)


def error_row(seq: int, vhash: str, stage: str, reason: str, message: str | None,
              sample: int = 0) -> dict[str, Any]:
    """One verdict error row (the ``verdict_errors`` columns but the run id), its
    message cut to 2,000 characters."""
    return {"verdict_seq": seq, "verdict_hash": vhash, "stage": stage, "reason": reason,
            "message": (message or "")[:2000], "sample_index": sample}


def completion_record(request: CompletionRequest, c: Completion) -> dict[str, Any]:
    """The Formats §2 record of completion ``c`` answering ``request`` (what a live
    call records, for the extractor and the judges alike)."""
    return {
        "verdict_hash": request.verdict_hash, "extractor": request.extractor, "model": c.model,
        "prompt_version": request.prompt_version, "request_hash": c.request_hash,
        "text": c.text, "latency_ms": c.latency_ms, "prompt_tokens": c.prompt_tokens,
        "completion_tokens": c.completion_tokens, "replayed": c.replayed,
        "config_hash": request.config_hash, "sample_index": request.sample_index or 0,
    }


def empty_candidates() -> pd.DataFrame:
    """The candidates frame of a batch that proposed no lesson, with its dtypes."""
    return pd.DataFrame({
        "verdict_seq": pd.Series([], dtype="int64"), "verdict_hash": pd.Series([], dtype=object),
        "extractor_id": pd.Series([], dtype=object),
        "sample_index": pd.Series([], dtype="int64"),
        "lesson_index": pd.Series([], dtype="int64"), "text": pd.Series([], dtype=object),
        "salience": pd.Series([], dtype="float64"), "evidence": pd.Series([], dtype=object),
        "valid": pd.Series([], dtype=bool), "drop_reason": pd.Series([], dtype=object),
        "prompt_version": pd.Series([], dtype=object),
    })


def ensure_run(
    store: Store,
    run_id: str,
    extractor: Extractor,
    config: MemoryConfig,
    *,
    status: str,
    write_memory: bool,
    extra: Mapping[str, Any] | None = None,
    templates: bool = True,
    scorer: str = "model_salience@1",
    dataset_hash: str | None = None,
    counted: bool = False,
    name: str | None = None,
    tags: Sequence[str] = (),
) -> None:
    """Create the extraction_runs row for ``run_id`` if it does not exist
    (and, with ``templates``, record the prompt template it uses): the run
    record of :mod:`truss_lab.store._runs`, filled from ``extractor`` and ``config``.
    ``counted``: the run keeps counts in its row (a batch does, a live learner not).

    Many parameters because it fills every column of a run's record that the extractor and
    config do not hold (status, scorer, dataset hash, name, tags, counted), as create_run
    stores them.
    """
    tpl = extractor.template
    ext_config = extractor.config
    if ext_config is not None:
        # One configuration per extractor id: the id is the recordings' replay key.
        record_extractor_config(store, extractor.extractor_id, ext_config.config_hash,
                                ext_config.model_dump(mode="json"))
    create_run(
        store, run_id, extractor_id=extractor.extractor_id,
        provider=provider_name(extractor.provider),
        policy=config.lesson_extraction.value,
        extraction_min_salience=config.extraction_min_salience,
        write_memory=write_memory, prompt_version=tpl.version, prompt_hash=tpl.prompt_hash,
        scorer=scorer, config=extra, dataset_hash=dataset_hash, status=status, counted=counted,
        name=name, tags=tags, config_hash=None if ext_config is None else ext_config.config_hash,
    )
    if templates:
        record_prompt_template(store, tpl.version, tpl.prompt_hash, tpl.text)


class UnregisteredPromptWarning(TrussLabWarning):
    """Recordings carry request hashes, but the prompt version they were made with is
    not registered here: they replay unchecked (register the template to check them)."""


def _replay_template(version: str, store: Store | None, provider: ReplayProvider,
                     extractor_id: str) -> PromptTemplate:
    """The registered template of ``version``, or its stand-in (with a warning when
    some of ``extractor_id``'s recordings carry a hash that cannot be checked)."""
    try:
        return get_template(version, store)
    except BadInputError:
        pass
    hashed = provider.hashed_recordings(extractor_id, version)
    if hashed:
        warnings.warn(
            f"{hashed} recording(s) of extractor {extractor_id!r} carry a request_hash, but "
            f"their prompt version {version!r} is not registered here: they replay "
            "unchecked (register its template with `truss-lab prompts add FILE` to check "
            "them)", UnregisteredPromptWarning, stacklevel=3)
    return unregistered_template(version)


# --- the replay provider --------------------------------------------------------------------------

_REQUIRED = ("verdict_hash", "extractor", "model", "prompt_version", "request_hash", "text")
_OPTIONAL = ("latency_ms", "prompt_tokens", "completion_tokens")


def _column(df: pd.DataFrame, name: str) -> list[Any]:
    """A column as plain Python values, missing values as None."""
    if name not in df.columns:
        return [None] * len(df)
    ser = df[name]
    values = ser.astype(object).tolist()
    na = ser.isna().to_numpy()
    if na.any():
        values = [None if m else v for v, m in zip(values, na, strict=True)]
    return [v.item() if hasattr(v, "item") else v for v in values]


def _recording_table(df: pd.DataFrame, source: str,
                     ) -> tuple[dict[tuple[str, str, int], tuple[Any, ...]], dict[str, set[str]]]:
    """The recordings of frame ``df`` by (verdict_hash, extractor, sample_index), and the
    configurations they carry by extractor; a :class:`BadInputError` for a missing
    column or two different answers to one key."""
    missing = [c for c in _REQUIRED if c not in df.columns]
    if missing:
        raise BadInputError(
            f"recordings lack column(s) {', '.join(missing)}; expected the completions "
            f"columns {', '.join(_REQUIRED + _OPTIONAL)}",
            source=source,
            reason="missing_column",
        )
    cols = {name: _column(df, name) for name in _REQUIRED + _OPTIONAL}
    samples = [0 if s is None else int(s) for s in _column(df, "sample_index")]
    keys = list(zip(cols["verdict_hash"], cols["extractor"], samples, strict=True))
    values = list(
        zip(*(cols[name] for name in _REQUIRED[2:] + _OPTIONAL), strict=True)
    )
    table: dict[tuple[str, str, int], tuple[Any, ...]] = dict(zip(keys, values, strict=True))
    if len(table) != len(keys):
        # Identical rows are harmless; two different answers to one key are not.
        seen: dict[tuple[str, str, int], tuple[Any, ...]] = {}
        for k, v in zip(keys, values, strict=True):
            if k in seen and seen[k] != v:
                raise BadInputError(
                    f"two different recordings for verdict_hash={k[0]} extractor={k[1]!r}"
                    + (f" sample_index={k[2]}" if k[2] else ""),
                    source=source,
                    reason="conflicting_duplicate",
                )
            seen[k] = v
    configs: dict[str, set[str]] = {}
    for ext, config in zip(cols["extractor"], _column(df, "config"), strict=True):
        if config is not None:
            configs.setdefault(ext, set()).add(config)
    return table, configs


class _StoreRecordings:
    """One extractor's recordings in a store (those :func:`recorded_completions` gives),
    read for the verdicts asked for: the store's ``recordings_of`` on a cursor of its
    own (the store's connection may be streaming the journal meanwhile)."""

    def __init__(self, store: Store, extractor_id: str, run_id: str | None) -> None:
        self.store, self.extractor_id, self.run_id = store, extractor_id, run_id
        self.size, _, self.versions = recording_counts(store, extractor_id, run_id=run_id)
        self._lock = threading.Lock()

    def read(self, verdict_hashes: Sequence[str],
             ) -> dict[tuple[str, str, int], tuple[Any, ...]]:
        """The recordings of ``verdict_hashes`` by key, valued as a frame's would be."""
        with self._lock:
            cur = self.store.cursor()
            try:
                t = recordings_of(cur, self.extractor_id, verdict_hashes, run_id=self.run_id)
            finally:
                cur.close()
        # Arrow's Python values are a frame column's after _column (None for a null),
        # but for NaN, which a frame reads as missing.
        cols = {n: t.column(n).to_pylist() for n in REPLAY_COLUMNS}
        cols["latency_ms"] = [None if v != v else v for v in cols["latency_ms"]]
        ext = self.extractor_id
        keys = [(v, ext, 0 if s is None else int(s))
                for v, s in zip(cols["verdict_hash"], cols["sample_index"], strict=True)]
        return dict(zip(keys, zip(*(cols[n] for n in REPLAY_COLUMNS[2:]), strict=True),
                        strict=True))

    def everything(self) -> dict[tuple[str, str, int], tuple[Any, ...]]:
        """Every recording by key (for a worker process, which cannot read the store)."""
        with self._lock:
            cur = self.store.cursor()
            try:
                df = recorded_completions(cur, self.extractor_id, run_id=self.run_id)
            finally:
                cur.close()
        return _recording_table(df.rename(columns={t: f for f, t in FILE_TO_TABLE.items()}),
                                str(self.store.path))[0]


class ReplayProvider:
    """Answer requests from recorded completions (Formats §2).

    ``recordings`` is a frame with the completions columns (from
    :func:`read_completions` or the store's ``completions`` table; extra
    columns are ignored) or the path of a §2 JSONL file (which must read
    without a single bad line). Lookups are O(1) and thread-safe.

    A recording's own ``prompt_version`` is honoured: without a ``request_hash`` it
    answers unchecked (counted in :attr:`unchecked_requests`), whatever version the
    request names; with one it answers only the request whose hash it recorded,
    unless its prompt version is not among ``known_prompts`` (default: the versions
    registered in this process), when nothing can rebuild that request: then it
    answers unchecked too (counted).

    ``failures``: the calls of the run being replayed that failed live, by
    (``verdict_hash``, ``extractor``, ``sample_index``), with their error message. Such
    a call left no recording; replayed, it fails again with that message (a
    :class:`ProviderError`), so a rerun writes the error row the run wrote.

    Parameters
    ----------
    recordings : pandas.DataFrame or path
        The recorded completions (above).
    known_prompts : frozenset of str, optional
        The prompt versions whose requests can be rebuilt (default: those registered
        in this process).
    failures : mapping, optional
        The failed calls of the replayed run (above).

    Raises
    ------
    BadInputError
        A file with a bad line, recordings that conflict.
    """

    provider_id: str = "replay"
    live: bool = False  # its completions are recordings already

    def __init__(self, recordings: pd.DataFrame | str | os.PathLike[str], *,
                 known_prompts: frozenset[str] | None = None,
                 failures: Mapping[tuple[str, str, int], str] | None = None) -> None:
        if isinstance(recordings, pd.DataFrame):
            # The store's table names the extractor ``extractor_id``; §2 ``extractor``.
            df = recordings if "extractor" in recordings.columns else recordings.rename(
                columns={t: f for f, t in FILE_TO_TABLE.items()})
            source = "<frame>"
        else:
            source = str(recordings)
            df, errors = read_completions(recordings)
            if errors:
                raise BadInputError(
                    f"{len(errors)} bad line(s) in the recordings, the first: {errors[0]}; "
                    "read it with read_completions() and pass the good rows to replay them",
                    source=source,
                    reason="bad_recordings",
                )
        self._table, self._configs = _recording_table(df, source)
        self._setup(source, known_prompts, failures)

    def _setup(self, source: str, known_prompts: frozenset[str] | None,
               failures: Mapping[tuple[str, str, int], str] | None) -> None:
        self._known_prompts = (frozenset(known_templates()) if known_prompts is None
                               else known_prompts)
        self._source = source
        self._failures = dict(failures or {})
        self._lock = threading.Lock()
        self._unchecked = 0
        self._calls = 0
        # A store's recordings (from_store) are read a window of verdicts at a time:
        # the windows held now, by key, as (their verdict hashes, the keys they added).
        self._lazy: _StoreRecordings | None = None
        self._held: dict[Any, tuple[frozenset[str], tuple[tuple[str, str, int], ...]]] = {}

    @classmethod
    def from_store(cls, store: Store, extractor_id: str, *, run_id: str | None = None,
                   known_prompts: frozenset[str] | None = None,
                   failures: Mapping[tuple[str, str, int], str] | None = None,
                   ) -> ReplayProvider:
        """The recordings of ``extractor_id`` in ``store`` (each verdict's earliest, or
        with ``run_id`` that run's), read when asked for rather than at once: what
        :meth:`hold` reads for a window of verdicts, or one verdict's when a request
        falls outside every window held, so memory does not grow with the recordings.

        Parameters
        ----------
        store : Store
            The database (kept open while the replay answers).
        extractor_id : str
            The recorded extractor.
        run_id : str, optional
            Answer from this run's own recordings.
        known_prompts : frozenset of str, optional
            As for :class:`ReplayProvider`.
        failures : mapping, optional
            As for :class:`ReplayProvider`.

        Returns
        -------
        ReplayProvider
            The replay; pickled (for worker processes) it carries every recording.
        """
        self = cls.__new__(cls)
        self._table, self._configs = {}, {}
        self._setup(str(store.path), known_prompts, failures)
        self._lazy = _StoreRecordings(store, extractor_id, run_id)
        return self

    def __getstate__(self) -> dict[str, Any]:
        # A worker process cannot read the driver's store: it gets every recording.
        state = self.__dict__.copy()
        lazy = state["_lazy"]
        if lazy is not None:
            state.update(_table=lazy.everything(), _lazy=None, _held={})
        return state

    @property
    def reads_store(self) -> bool:
        """Whether recordings are read from a store as they are needed (:meth:`from_store`):
        then :meth:`hold` reads a window of them at once."""
        return self._lazy is not None

    def covers(self, verdict_hashes: Iterable[str]) -> bool:
        """Whether every one of ``verdict_hashes`` lies in a window held (or every
        recording is in memory): answering them reads nothing.

        Parameters
        ----------
        verdict_hashes : iterable of str
            The verdicts.

        Returns
        -------
        bool
            True when nothing is to be read for them.
        """
        if self._lazy is None:
            return True
        held = [h for h, _ in list(self._held.values())]
        return all(any(v in h for h in held) for v in verdict_hashes)

    def hold(self, key: Any, verdict_hashes: Sequence[str]) -> None:
        """Read the recordings of ``verdict_hashes`` at once and keep them until
        :meth:`release` of ``key`` (nothing to do when every recording is in memory).

        Parameters
        ----------
        key : hashable
            Names the window for :meth:`release`.
        verdict_hashes : sequence of str
            The verdicts whose recordings to read.
        """
        lazy = self._lazy
        if lazy is None:
            return
        got = lazy.read(verdict_hashes)
        with self._lock:
            self._table.update(got)
            self._held[key] = (frozenset(verdict_hashes), tuple(got))

    def release(self, key: Any) -> None:
        """Drop the recordings :meth:`hold` read under ``key`` (those another window
        held still covers stay).

        Parameters
        ----------
        key : hashable
            The window.
        """
        with self._lock:
            _, keys = self._held.pop(key, (frozenset(), ()))
            others = [h for h, _ in self._held.values()]
            for k in keys:
                if not any(k[0] in h for h in others):
                    self._table.pop(k, None)

    def _recording(self, key: tuple[str, str, int]) -> tuple[Any, ...] | None:
        """The recording answering ``key``: from memory, or read when no window held
        covers its verdict."""
        rec = self._table.get(key)
        if rec is None and self._lazy is not None and not self.covers((key[0],)):
            rec = self._lazy.read([key[0]]).get(key)
        return rec

    def __len__(self) -> int:
        return len(self._table) if self._lazy is None else self._lazy.size

    def __contains__(self, key: object) -> bool:
        """Whether a recording answers ``(verdict_hash, extractor, sample_index)``."""
        if self._lazy is None or not isinstance(key, tuple) or len(key) != 3:
            return key in self._table
        return self._recording(key) is not None  # type: ignore[arg-type]

    def __repr__(self) -> str:
        return f"ReplayProvider({len(self)} recordings)"

    def config_of(self, extractor_id: str) -> ExtractorConfig | None:
        """The configuration ``extractor_id``'s recordings were made under.

        Parameters
        ----------
        extractor_id : str
            The recorded extractor.

        Returns
        -------
        ExtractorConfig or None
            The configuration, when the recordings carry one.

        Raises
        ------
        BadInputError
            The recordings carry two different configurations.
        """
        texts = sorted(self._configs.get(extractor_id, ()))
        if len(texts) > 1:
            raise BadInputError(
                f"the recordings of extractor {extractor_id!r} carry {len(texts)} different "
                "configurations; a replay needs one (an extractor id names one configuration)",
                source=self._source, field="config", reason="config_conflict")
        if not texts:
            return None
        try:
            return ExtractorConfig.model_validate_json(texts[0])
        except ValueError as exc:  # pydantic's ValidationError names the field
            raise BadInputError(f"not an extractor configuration: {exc}", source=self._source,
                                field="config", reason="bad_value") from None

    def prompt_version_of(self, extractor_id: str) -> str | None:
        """The prompt version most of ``extractor_id``'s recordings were made with.

        Parameters
        ----------
        extractor_id : str
            The recorded extractor.

        Returns
        -------
        str or None
            The version (the first by name on a tie), None without recordings.
        """
        counts: dict[str, int] = {}
        if self._lazy is not None:
            if extractor_id == self._lazy.extractor_id:
                counts = {v: n for v, (n, _) in self._lazy.versions.items()
                          if isinstance(v, str)}
        else:
            for (_, ext, _), rec in self._table.items():
                if ext == extractor_id and isinstance(rec[1], str):
                    counts[rec[1]] = counts.get(rec[1], 0) + 1
        return min(counts, key=lambda v: (-counts[v], v)) if counts else None

    def hashed_recordings(self, extractor_id: str, prompt_version: str) -> int:
        """How many of ``extractor_id``'s recordings under ``prompt_version`` carry a
        ``request_hash``.

        Parameters
        ----------
        extractor_id : str
            The recorded extractor.
        prompt_version : str
            The prompt version.

        Returns
        -------
        int
            The count.
        """
        if self._lazy is not None:
            return (self._lazy.versions.get(prompt_version, (0, 0))[1]
                    if extractor_id == self._lazy.extractor_id else 0)
        return sum(1 for (_, ext, _), rec in self._table.items()
                   if ext == extractor_id and rec[1] == prompt_version and rec[2] is not None)

    @property
    def unchecked_requests(self) -> int:
        """Requests answered from a recording without a ``request_hash`` to check."""
        with self._lock:
            return self._unchecked

    @property
    def calls(self) -> int:
        """Requests answered so far."""
        with self._lock:
            return self._calls

    def call_tally(self) -> tuple[int, int]:
        """(:attr:`calls`, :attr:`unchecked_requests`), for :meth:`restore_call_tally`:
        the batch puts them back when it drops answers it took early for a journal
        that then failed to verify (:func:`truss_lab.extract._batch.verify_while_extracting`)."""
        with self._lock:
            return self._calls, self._unchecked

    def restore_call_tally(self, tally: tuple[int, int]) -> None:
        """Put back the counts :meth:`call_tally` read (the answers since were dropped).

        Parameters
        ----------
        tally : tuple of (int, int)
            What :meth:`call_tally` returned.
        """
        with self._lock:
            self._calls, self._unchecked = tally

    def complete(self, request: CompletionRequest) -> Completion:
        """The recorded completion for ``request``.

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
            No recording, or one recorded for a different request.
        """
        text, model, recorded_hash, latency, p_tokens, c_tokens = self.answer(
            request.verdict_hash, request.extractor, request.prompt_version,
            lambda: request.request_hash, sample_index=request.sample_index)
        return Completion(
            text=text,
            model=model,
            prompt_tokens=p_tokens,
            completion_tokens=c_tokens,
            latency_ms=latency,
            request_hash=recorded_hash,
            replayed=True,
        )

    def answer(self, verdict_hash: str, extractor: str, prompt_version: str,
               request_hash: Callable[[], str], *,
               sample_index: int | None = None) -> tuple[Any, ...]:
        """What :meth:`complete` answers, as ``(text, model, recorded request_hash,
        latency_ms, prompt_tokens, completion_tokens)``: the one place a recording is
        matched to a request (the batch's bulk path calls it without building
        requests).

        Parameters
        ----------
        verdict_hash : str
            The verdict.
        extractor : str
            The recorded extractor.
        prompt_version : str
            The prompt version of the request.
        request_hash : callable
            Gives the request's hash; called only when the recording has one.
        sample_index : int, optional
            One of a k-sample extractor's samples (None: sample 0).

        Returns
        -------
        tuple
            ``(text, model, recorded request_hash, latency_ms, prompt_tokens,
            completion_tokens)``.
        """
        key = (verdict_hash, extractor, sample_index or 0)
        rec = self._recording(key)
        if rec is None and key in self._failures:
            raise ProviderError(self._failures[key])  # as the live call failed
        if rec is None:
            sample = f" sample {key[2]}" if sample_index is not None else ""
            raise ProviderError(
                f"no recording for verdict {verdict_hash}{sample} with extractor "
                f"{extractor!r} ({len(self)} recordings loaded)"
            )
        model, recorded_prompt, recorded_hash, text, latency, p_tokens, c_tokens = rec
        if recorded_hash is None or recorded_prompt not in self._known_prompts:
            # Nothing to check the messages against (no hash, or no template here to
            # rebuild the request from): the recording's own prompt version stands.
            with self._lock:
                self._unchecked += 1
                self._calls += 1
        else:
            got = request_hash()
            if got != recorded_hash:
                other = ("" if recorded_prompt == prompt_version else
                         f"; it was made with prompt_version {recorded_prompt!r}, the "
                         f"request uses {prompt_version!r}")
                raise ProviderError(
                    f"recording for verdict {verdict_hash}, extractor "
                    f"{extractor!r} answers a different request: expected "
                    f"request_hash {recorded_hash}, got {got} (the prompt, model or "
                    f"parameters changed; record a new run){other}"
                )
            with self._lock:
                self._calls += 1
        return text, model, recorded_hash, latency, p_tokens, c_tokens


# --- replay in bulk -------------------------------------------------------------------------------

# Stands for the user message in the request body; private-use characters, which
# canonical JSON writes as themselves, so the body's text splits around it.
_MARK = "\ue000truss-user-message\ue000"


def _hash_parts(extractor: Extractor, payload: Mapping[str, Any],
                vhash: str) -> tuple[Any, bytes] | None:
    """The canonical request text before the user message's JSON string, already fed
    to a SHA-256 (each verdict copies it: ~1 KB less to hash per verdict), and after it."""
    req = extractor.request(vhash, payload)
    marked = req.model_copy(update={"messages": (
        req.messages[0], ChatMessage(role="user", content=_MARK))})
    text = marked.hashed_text()
    mark = jcs_string(_MARK)
    if text.count(mark) != 1 or req.messages[0].role != "system" or len(req.messages) != 2:
        return None
    before, after = text.split(mark)
    return hashlib.sha256(before.encode("utf-8")), after.encode("utf-8")


def _request_hash(parts: tuple[Any, bytes], user: str) -> str:
    # == CompletionRequest.request_hash of this verdict's request (tests compare them)
    h = parts[0].copy()
    h.update(jcs_string(user).encode("utf-8"))
    h.update(parts[1])
    return h.hexdigest()


def _plain(rec: tuple[Any, ...]) -> bool:
    """The recorded values are what :class:`Completion` would store unchanged."""
    text, model, rhash, latency, pt, ct = rec
    return (type(text) is str and type(model) is str and (rhash is None or type(rhash) is str)
            and (latency is None or type(latency) is float)
            and (pt is None or type(pt) is int) and (ct is None or type(ct) is int))


def replay_verdicts(extractor: Extractor,
                    verdicts: Iterable[tuple[int, str, Mapping[str, Any]]]) -> ExtractionRows:
    """:func:`extract_verdicts` for a :class:`ReplayProvider` extractor, in bulk."""
    provider: Any = extractor.provider
    tpl = extractor.template
    ext_id, version = extractor.extractor_id, tpl.version
    config_hash = None if extractor.config is None else extractor.config.config_hash
    parts: tuple[Any, bytes] | bool | None = False  # False: not prepared yet
    # n_samples: the bulk path replays one-sample extractors only
    cols = CandidateColumns(("verdict_seq", "verdict_hash", "extractor_id", "sample_index"),
                            {"prompt_version": version, "n_samples": 1})
    errors: list[dict[str, Any]] = []
    completions: list[dict[str, Any]] = []
    calls = 0
    for seq, vhash, payload in verdicts:
        if plainly_valid_payload(payload):
            p = payload  # rendered as it is: validation would only copy it
        else:
            try:
                p = validate_verdict_payload(payload)
            except BadInputError as exc:
                errors.append(error_row(seq, vhash, "prompt", "bad_verdict", str(exc)))
                continue
        if parts is False:
            parts = _hash_parts(extractor, p, vhash)
        user = render_user(tpl, p)
        try:
            user.encode("utf-8")
        except UnicodeEncodeError:
            parts_ok = False
        else:
            parts_ok = parts is not None
        if not parts_ok:
            # Not the plain case: the per-verdict path decides (and raises as it does).
            one = extract_verdicts_one(extractor, seq, vhash, p)
            calls += one[0]
            errors += one[1]
            completions += one[2]
            for keys, res in one[3]:
                cols.add([keys[k] for k in cols.key_names], res.lessons)
            continue
        calls += 1
        try:
            rec = provider.answer(vhash, ext_id, version, partial(_request_hash, parts, user))
        except ProviderError as exc:
            errors.append(error_row(seq, vhash, "provider", "provider_error", str(exc)))
            continue
        text, model, rhash, latency, pt, ct = rec
        if type(latency) is int:
            latency = float(latency)  # what Completion stores for a whole number
            rec = (text, model, rhash, latency, pt, ct)
        if not _plain(rec):
            c = Completion(text=text, model=model, prompt_tokens=pt, completion_tokens=ct,
                           latency_ms=latency, request_hash=rhash, replayed=True)
            text, model, rhash, latency, pt, ct = (c.text, c.model, c.request_hash,
                                                   c.latency_ms, c.prompt_tokens,
                                                   c.completion_tokens)
        completions.append({
            "verdict_hash": vhash, "extractor": ext_id, "model": model,
            "prompt_version": version, "request_hash": rhash, "text": text,
            "latency_ms": latency, "prompt_tokens": pt, "completion_tokens": ct,
            "replayed": True, "config_hash": config_hash, "sample_index": 0,
        })
        parsed = parse_fast_or_exact(text)
        if type(parsed) is not ParseResult:
            cols.add_valid((seq, vhash, ext_id, 0), parsed)
        elif parsed.error is not None:
            errors.append(error_row(seq, vhash, "parse", parsed.error, parsed.detail))
        else:
            cols.add((seq, vhash, ext_id, 0), parsed.lessons)
    # The gate reads the columns as they are; an empty frame is built its own way.
    cands = cols if len(cols) else empty_candidates()
    return ExtractionRows(cands, pd.DataFrame(errors, columns=VERDICT_ERRORS_SCHEMA.names[1:]),
                          calls, completions, 1)
