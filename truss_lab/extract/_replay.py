"""The replay provider: recorded completions, the offline default.

A replay answers a :class:`CompletionRequest` from a recording keyed by
(``verdict_hash``, ``extractor``, ``sample_index``; a recording without a
sample index is sample 0, as is a request of a one-sample extractor). It never
answers a changed prompt with an old recording: when the recording carries a
``request_hash`` it must equal the
request's. Recordings made elsewhere may lack one; those are answered (their
prompt version must still match) and counted in :attr:`ReplayProvider.unchecked_requests`.
Recordings that carry their extractor configuration (FORMATS.md §2 ``config``) give
it back through :meth:`ReplayProvider.config_of`, so a file replays by itself.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

import pandas as pd

from ..core._errors import BadInputError, ProviderError
from ..ingest._completions import read_completions
from ..ingest._ingest import FILE_TO_TABLE
from ._config import ExtractorConfig
from ._providers import Completion, CompletionRequest

__all__ = ["ReplayProvider"]

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


class ReplayProvider:
    """Answer requests from recorded completions (FORMATS.md §2).

    ``recordings`` is a frame with the completions columns (from
    :func:`read_completions` or the store's ``completions`` table; extra
    columns are ignored) or the path of a §2 JSONL file (which must read
    without a single bad line). Lookups are O(1) and thread-safe.
    """

    provider_id: str = "replay"
    live: bool = False  # its completions are recordings already

    def __init__(self, recordings: pd.DataFrame | str | os.PathLike[str]) -> None:
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
        self._table: dict[tuple[str, str, int], tuple[Any, ...]] = dict(
            zip(keys, values, strict=True))
        if len(self._table) != len(keys):
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
        self._configs: dict[str, set[str]] = {}
        for ext, config in zip(cols["extractor"], _column(df, "config"), strict=True):
            if config is not None:
                self._configs.setdefault(ext, set()).add(config)
        self._source = source
        self._lock = threading.Lock()
        self._unchecked = 0
        self._calls = 0

    def __len__(self) -> int:
        return len(self._table)

    def __repr__(self) -> str:
        return f"ReplayProvider({len(self._table)} recordings)"

    def config_of(self, extractor_id: str) -> ExtractorConfig | None:
        """The configuration ``extractor_id``'s recordings were made under, when they
        carry one (None otherwise); two different ones are refused."""
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

    def _tally(self) -> tuple[int, int]:
        # (calls, unchecked): the batch puts them back when it drops answers it
        # took early for a journal that then failed to verify (extract/_overlap.py)
        with self._lock:
            return self._calls, self._unchecked

    def _set_tally(self, tally: tuple[int, int]) -> None:
        with self._lock:
            self._calls, self._unchecked = tally

    def complete(self, request: CompletionRequest) -> Completion:
        """The recorded completion for ``request``; :class:`ProviderError` when there
        is none or when it was recorded for a different request."""
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
        requests). ``request_hash()`` is called only when the recording has one.
        ``sample_index`` names one of a k-sample extractor's samples (None: sample 0)."""
        key = (verdict_hash, extractor, sample_index or 0)
        rec = self._table.get(key)
        if rec is None:
            sample = f" sample {key[2]}" if sample_index is not None else ""
            raise ProviderError(
                f"no recording for verdict {verdict_hash}{sample} with extractor "
                f"{extractor!r} ({len(self._table)} recordings loaded)"
            )
        model, recorded_prompt, recorded_hash, text, latency, p_tokens, c_tokens = rec
        if recorded_hash is None:
            # Nothing to check the messages against; a different prompt version
            # is still a changed prompt.
            if recorded_prompt != prompt_version:
                raise ProviderError(
                    f"recording for verdict {verdict_hash}, extractor "
                    f"{extractor!r} was made with prompt_version {recorded_prompt!r}; "
                    f"the request uses {prompt_version!r}"
                )
            with self._lock:
                self._unchecked += 1
                self._calls += 1
        else:
            got = request_hash()
            if got != recorded_hash:
                raise ProviderError(
                    f"recording for verdict {verdict_hash}, extractor "
                    f"{extractor!r} answers a different request: expected "
                    f"request_hash {recorded_hash}, got {got} (the prompt, model or "
                    "parameters changed; record a new run)"
                )
            with self._lock:
                self._calls += 1
        return text, model, recorded_hash, latency, p_tokens, c_tokens
