"""A provider's batch interface: the OpenAI Batch file format (which vLLM's ``run-batch``
reads and writes too), for runs over many verdicts at a batch price.

:func:`prepare_batch` writes the input file: one line per request, ``{"custom_id",
"method": "POST", "url": "/v1/chat/completions", "body"}``, ``body`` exactly what the live
extractor sends (:func:`~truss_lab.extract._providers.chat_body`), so each request's hash
is the live one; the extractor configuration is kept in the database. :func:`ingest_batch`
reads the output file, whose lines (in any order) are ``{"id", "custom_id", "response":
{"status_code", "request_id", "body"}, "error"}``: each ``custom_id`` maps back to its
verdict and configuration, the request is rebuilt and hashed, and the answer (``body``'s
``choices[0].message.content``, ``model``, ``usage.prompt_tokens`` and
``usage.completion_tokens``) becomes a recorded completion whose ``source`` is
``openai-batch:FILE#REQUEST_ID`` (so ``usage`` prices it at the model's batch price). A
failed (an ``error``, a status other than 200), expired (``error.code``
``batch_expired``), unknown or repeated ``custom_id`` is a bad line, named by line
number; the good lines land. Other fields of the format are not read.
The two lines' models, :class:`~truss_lab.ingest._batch_files.BatchRequestModel` (what
:func:`prepare_batch` writes) and :class:`~truss_lab.ingest._batch_files.BatchOutputModel`
(what :func:`ingest_batch` reads), are :mod:`truss_lab.ingest._batch_files`'.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pandas as pd
from pydantic import ValidationError

from ..core._canonical import MalformedJSON, loads_strict
from ..core._errors import BadInputError
from ..core._files import output_text, read_input
from ..ingest._batch_files import BATCH_URL, BatchOutputModel, BatchRequestModel
from ..ingest._completions import MAX_COMPLETIONS_FILE, read_completions
from ..ingest._ingest import IngestReport, land_completions
from ..ingest._strict import input_error, short, split_lines
from ..journal._table import entry_payloads, payload_by_hash, verdict_refs
from ..store._runs import extractor_config_by_hash, record_extractor_config
from ..store._store import Store
from ..store._usage import BATCH_SOURCE
from ._extractor import Extractor, ExtractorConfig
from ._prompts import build_request, get_template
from ._providers import chat_body

__all__ = ["BATCH_FORMAT", "batch_custom_id", "ingest_batch", "prepare_batch"]

BATCH_FORMAT = "openai-batch"
"""The ``--format`` of ``ingest completions`` that reads a Batch output file."""
_ID_HASH = 16
def batch_custom_id(config_hash: str, verdict_hash: str) -> str:
    """A request's ``custom_id``: the configuration's hash (16 hex digits) and the
    verdict's hash, all an output line needs to find its request again."""
    return f"{config_hash[:_ID_HASH]}-{verdict_hash}"


def prepare_batch(store: Store, extractor: Extractor, out: str | os.PathLike[str], *,
                  verdicts: str | None = None) -> int:
    """Write a Batch input file for ``extractor`` (a live one, ``openai:MODEL``) over the
    stored verdicts; keep its configuration in the database.

    Parameters
    ----------
    store : Store
        The database.
    extractor : Extractor
        A live extractor (``openai:MODEL``), one sample per verdict.
    out : path
        The JSONL file to write.
    verdicts : str, optional
        A SQL condition on the verdicts, as ``extract --verdicts`` (default all).

    Returns
    -------
    int
        Requests written.

    Raises
    ------
    BadInputError
        An extractor that is not live or takes more than one sample, a bad ``out``.
    """
    config = extractor.config
    if config is None or not getattr(extractor.provider, "live", False):
        raise BadInputError("a batch is prepared for a live extractor (openai:MODEL)",
                            field="--extractor")
    if config.samples != 1:
        raise BadInputError("a batch holds one sample per verdict (--samples 1)",
                            field="--samples")
    refs = verdict_refs(store, verdicts)
    rows = entry_payloads(store, [int(s) for s in refs["seq"]])
    with store.transaction():
        record_extractor_config(store, extractor.extractor_id, config.config_hash,
                                config.model_dump(mode="json"))
    with output_text(out, field="--out") as fh:
        for _, vhash, text in rows:
            req = extractor.request(vhash, json.loads(text))
            line = BatchRequestModel(custom_id=batch_custom_id(config.config_hash, vhash),
                                     method="POST", url=BATCH_URL, body=chat_body(req))
            fh.write(json.dumps(line.model_dump(mode="json"), ensure_ascii=False) + "\n")
    return len(rows)


def _answer(line: Any) -> tuple[str, dict[str, Any], str | None]:
    """``(custom_id, response body, request_id)`` of an output line
    (:class:`BatchOutputModel`), or ValueError why not."""
    if type(line) is not dict:
        raise ValueError("expected a JSON object")
    if type(line.get("custom_id")) is not str:
        raise ValueError("custom_id: expected a string")
    cid = line["custom_id"]
    try:
        out = BatchOutputModel.model_validate(line)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"custom_id {cid}: {where}: {first['msg']}") from None
    if out.error is not None:
        what = "expired" if out.error.code == "batch_expired" else "failed"
        raise ValueError(f"custom_id {cid}: {what} ({out.error.code}: "
                         f"{short(out.error.message, 80)})")
    resp = out.response
    if resp is None:
        raise ValueError(f"custom_id {cid}: no response")
    if resp.status_code != 200:
        raise ValueError(f"custom_id {cid}: failed with status {resp.status_code} (request_id "
                         f"{resp.request_id})")
    if resp.body is None:
        raise ValueError(f"custom_id {cid}: response.body is not an object")
    return cid, resp.body, resp.request_id


def _completion(store: Store, cid: str, body: dict[str, Any], extractor_id: str,
                configs: dict[str, ExtractorConfig | None]) -> dict[str, Any]:
    """The §2 record of one answer: its request rebuilt from the verdict and the
    configuration ``cid`` names (hashed as the live request is)."""
    prefix, _, vhash = cid.partition("-")
    if prefix not in configs:
        found = extractor_config_by_hash(store, prefix)
        configs[prefix] = None if found is None else ExtractorConfig.model_validate(found)
    config = configs[prefix]
    payload = payload_by_hash(store, vhash) if config is not None else None
    if config is None or payload is None:
        raise ValueError(f"unknown custom_id {short(cid, 90)}: no prepared request of this "
                         "database has it (`truss-lab batch prepare` writes them)")
    req = build_request(get_template(config.prompt_version, store), payload,
                        verdict_hash=vhash, extractor=extractor_id, model=config.model,
                        parameters=config.request_parameters())
    req = req.model_copy(update={"config_hash": config.config_hash})
    try:
        text = body["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise ValueError(f"custom_id {cid}: response.body has no "
                         "choices[0].message.content") from None
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    return {"verdict_hash": vhash, "extractor": extractor_id,
            "model": body.get("model") or config.model,
            "prompt_version": config.prompt_version, "request_hash": req.request_hash,
            "text": text, "latency_ms": None,
            "prompt_tokens": usage.get("prompt_tokens"),
            "completion_tokens": usage.get("completion_tokens"),
            "config": json.dumps(config.model_dump(mode="json"))}


def ingest_batch(store: Store, path: str | os.PathLike[str], extractor_id: str) -> IngestReport:
    """Load a Batch output file as completions of ``extractor_id`` (the module docstring
    says which fields are read): a bad line (failed, expired, unknown or repeated
    ``custom_id``, malformed) is an error naming its line; the good lines land, each
    recorded with its request hash, model, tokens and ``source``
    ``openai-batch:FILE#REQUEST_ID``.

    Parameters
    ----------
    store : Store
        The database (it holds the batch's extractor configuration).
    path : path
        The Batch output file (JSONL).
    extractor_id : str
        Whose completions they are.

    Returns
    -------
    IngestReport
        Lines read, rows added and present, the errors (each naming its line).
    """
    source = str(path)
    data = read_input(path, what="a batch output file", limit=MAX_COMPLETIONS_FILE)
    lines, errors = split_lines(data, source)
    records: list[dict[str, Any]] = []
    request_ids: list[str] = []
    seen: dict[str, int] = {}
    configs: dict[str, ExtractorConfig | None] = {}
    for number, text in lines:
        try:
            cid, body, rid = _answer(loads_strict(text))
            if cid in seen:
                raise ValueError(f"custom_id {cid} repeats line {seen[cid]}")
            seen[cid] = number
            records.append(_completion(store, cid, body, extractor_id, configs))
        except (ValueError, MalformedJSON) as exc:
            errors.append(input_error(str(exc), source, number, "custom_id", "bad_batch_line"))
            continue
        request_ids.append(f"{BATCH_SOURCE}{source}#{rid or ''}")
    df, bad = read_completions(pd.DataFrame(records, columns=list(records[0]) if records
                                            else None))
    by_hash = {r["verdict_hash"]: s for r, s in zip(records, request_ids, strict=True)}
    row_sources = [by_hash[h] for h in df["verdict_hash"]]
    rep = land_completions(store, df, [*errors, *bad], source, row_sources=row_sources)
    rep.rows_read = len(lines)
    return rep
