"""An extractor and what it produces: a provider + prompt + model, run over verdicts.

:class:`Extractor` names the configuration every row carries (``extractor_id``);
:func:`extract_verdicts` runs it over ``(seq, hash, payload)`` verdicts and
returns plain :class:`ExtractionRows` (candidates, error rows, the completions
received), before any gate or write: workers on other processes return them to
the single writer, which gates them in :mod:`truss_lab.extract._gate`.
:func:`ensure_run` files the run record (:mod:`truss_lab.store._runs`) from an
extractor and a config, for the batch and the live learner alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pyarrow as pa

from ..core._config import MemoryConfig
from ..core._errors import BadInputError, ProviderError
from ..store._runs import (
    create_run,
    extractor_config,
    record_extractor_config,
    record_prompt_template,
)
from ..store._store import Store
from ._breaker import CircuitOpenError
from ._config import ExtractorConfig
from ._frames import CandidateColumns, candidates_frame
from ._parser import parse_completion
from ._prompts import PromptTemplate, build_request, get_template
from ._providers import Completion, CompletionRequest, Provider, provider_name, supports_n

__all__ = [
    "ERROR_SCHEMA",
    "ExtractionRows",
    "Extractor",
    "completion_record",
    "empty_candidates",
    "ensure_run",
    "error_row",
    "extract_verdicts",
]


ERROR_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("verdict_seq", pa.int64()),
        ("verdict_hash", pa.string()),
        ("stage", pa.string()),
        ("reason", pa.string()),
        ("message", pa.string()),
        ("sample_index", pa.int32()),
    ]
)


@dataclass(frozen=True)
class Extractor:
    """An extractor configuration: a provider, a prompt template and a model.

    ``extractor_id`` names it in every row it produces (and is the replay key).
    ``config``, when set, is the recorded :class:`ExtractorConfig` (a live
    extractor, or the replay of one): its hash enters every request's hash.
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
        template: str | PromptTemplate = "lesson-v1",
        model: str | None = None,
        parameters: Mapping[str, Any] | None = None,
        samples: int = 1,
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
        """
        from ._replay import ReplayProvider

        config = None
        if isinstance(recordings, Store):
            stored = extractor_config(recordings, extractor_id)
            config = None if stored is None else ExtractorConfig.model_validate(stored)
            recordings = recordings.sql(
                "SELECT * FROM completions WHERE extractor_id = ?", [extractor_id]
            ).df()
        provider = ReplayProvider(recordings)
        config = config or provider.config_of(extractor_id)
        if config is not None:
            return cls(extractor_id, provider, get_template(config.prompt_version),
                       config.model, config.request_parameters(), config)
        tpl = get_template(template) if isinstance(template, str) else template
        if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
            raise BadInputError(f"samples must be a positive integer, got {samples!r}",
                                field="samples")
        return cls(extractor_id, provider, tpl, model or extractor_id, dict(parameters or {}),
                   samples=samples)

    @classmethod
    def heuristic(cls, *, max_lessons: int = 5) -> Extractor:
        """The deterministic, model-free baseline (``heuristic-v1``)."""
        from ._heuristic import HeuristicProvider

        h = HeuristicProvider(max_lessons=max_lessons)
        return cls(h.extractor_id, h, get_template("lesson-v1"), h.model)

    @classmethod
    def openai(
        cls,
        base_url: str,
        model: str,
        *,
        extractor_id: str | None = None,
        template: str | PromptTemplate = "lesson-v1",
        parameters: Mapping[str, Any] | None = None,
        config: ExtractorConfig | None = None,
        **provider_options: Any,
    ) -> Extractor:
        """A live OpenAI-compatible endpoint (vLLM, llama.cpp server, Ollama, OpenAI).

        ``config`` sets every recorded knob (``response_format``, sampling,
        samples); without it one is made from ``model``, ``template`` and the
        sampling ``parameters`` (default ``{"temperature": 0}``). The default
        ``extractor_id`` is :meth:`ExtractorConfig.default_extractor_id`.
        """
        from ._openai import OpenAICompatibleProvider

        tpl = get_template(template) if isinstance(template, str) else template
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
            # itself (FORMATS.md §2 ``config``).
            provider_options["recorder"] = _ConfigRecorder(recorder, config)
        provider = OpenAICompatibleProvider(base_url, model, **provider_options)
        return cls(extractor_id or config.default_extractor_id(), provider, tpl, model,
                   config.request_parameters(), config)

    def request(self, verdict_hash: str, payload: Mapping[str, Any]) -> CompletionRequest:
        """The request for one verdict (carrying the config hash, when there is a config)."""
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
        (k calls with one seed would draw one sample k times)."""
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
        """The completions received (FORMATS.md §2 fields), for recording live calls."""
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
    from ._replay import ReplayProvider

    # The bulk path replays one sample per verdict; k samples take the general path.
    if type(extractor.provider) is ReplayProvider and extractor.n_samples == 1:
        from ._bulk import replay_verdicts

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
    return ExtractionRows(cands, pd.DataFrame(errors, columns=list(ERROR_SCHEMA.names)[1:]),
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
    """The FORMATS.md §2 record of completion ``c`` answering ``request`` (what a live
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
    ``counted``: the run keeps counts in its row (a batch does, a live learner not)."""
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
        write_memory=write_memory, prompt_version=tpl.version, prompt_hash=tpl.template_hash,
        scorer=scorer, config=extra, dataset_hash=dataset_hash, status=status, counted=counted,
        name=name, tags=tags, config_hash=None if ext_config is None else ext_config.config_hash,
    )
    if templates:
        record_prompt_template(store, tpl.version, tpl.template_hash, tpl.text)
