"""Replay extraction in bulk: :func:`extract_verdicts`' rows, without per-verdict objects.

A replay answers from recordings, so per verdict the work is: check the payload,
render the user message, look the recording up (hashing the request only when
the recording carries a request hash to compare), parse the completion. This
module does exactly that, with the request hash computed from a canonical text
prepared once per run (the request body is the same for every verdict but the
user message), and returns the same :class:`ExtractionRows`, row for row, as
the per-verdict path (tests/test_bulk_replay.py compares them). A verdict whose
values fall outside the plain case (a recording with odd types, text that
cannot be UTF-8) goes through the per-verdict path itself.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from functools import partial
from typing import Any

import pandas as pd

from ..core._canonical import jcs_string
from ..core._errors import BadInputError, ProviderError
from ..journal._spec import plainly_valid_payload, validate_verdict_payload
from ._extractor import (
    ERROR_SCHEMA,
    ExtractionRows,
    Extractor,
    empty_candidates,
    error_row,
    extract_verdicts_one,
)
from ._frames import CandidateColumns
from ._parser import ParseResult, parse_fast_or_exact
from ._prompts import render_user
from ._providers import ChatMessage, Completion

__all__ = ["replay_verdicts"]

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
    return ExtractionRows(cands, pd.DataFrame(errors, columns=list(ERROR_SCHEMA.names)[1:]),
                          calls, completions, 1)

