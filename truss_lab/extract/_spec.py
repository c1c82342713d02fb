"""An extractor named by a spec string: the CLI's ``--extractor`` and a grid's
``extractor`` axis (:mod:`truss_lab.extract._grid`) are read here, once.

``heuristic``, ``replay:EXTRACTOR_ID`` (the store's recordings, replayed with
their recorded configuration), ``replay:PATH.jsonl[#EXTRACTOR_ID]`` or
``openai:MODEL``. :func:`spec_run_config` is what a run records of its spec, so
``truss-lab extract --resume RUN`` rebuilds the same extractor from the run alone.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..core._errors import BadInputError
from ..core._secrets import register_url_secrets
from ..ingest._completions import read_completions
from ..store._ingested import recorded_extractors
from ._extractor import Extractor, ExtractorConfig

__all__ = ["make_extractor", "spec_run_config"]


def make_extractor(spec: str, store: Any, *, base_url: str | None = None,
                   max_retries: int | None = None,
                   knobs: dict[str, Any] | None = None, supports_n: bool = False,
                   deadline: float | None = None, rerun_of: str | None = None) -> Extractor:
    """An :class:`Extractor` from a spec: ``heuristic``, ``replay:EXTRACTOR_ID``
    (the store's completions, replayed with their recorded configuration),
    ``replay:PATH.jsonl[#EXTRACTOR_ID]`` or ``openai:MODEL`` (``max_retries``: of
    each live call, default the provider's; ``deadline``: seconds one live call may
    take, retries included, default the provider's; ``knobs``: :class:`ExtractorConfig`
    fields such as ``response_format`` or ``temperature``, for openai:MODEL only;
    ``supports_n``: the server draws a verdict's samples in one ``n=k`` call;
    ``rerun_of``: a ``replay:`` spec answers from that run's recordings, as the rerun
    being resumed did)."""
    kind, _, arg = spec.partition(":")
    if rerun_of is not None and kind == "replay":
        return Extractor.replay(store, arg, run_id=rerun_of)
    knobs = {k: v for k, v in (knobs or {}).items() if v is not None}
    if knobs and kind != "openai":
        first = next(iter(knobs))
        raise BadInputError(
            f"--{'prompt' if first == 'prompt_version' else first.replace('_', '-')} sets a "
            "live extractor's configuration (openai:MODEL); a replay uses the configuration "
            "it was recorded with (its prompt version too)", field="--extractor")
    if deadline is not None and kind != "openai":
        raise BadInputError("--deadline bounds a live call (openai:MODEL)", field="--deadline")
    if supports_n and kind != "openai":
        raise BadInputError("--supports-n describes a live server (openai:MODEL)",
                            field="--supports-n")
    if spec == "heuristic":
        return Extractor.heuristic()
    if kind == "replay" and arg:
        path, _, ext_id = arg.partition("#")
        if path.endswith(".jsonl") or Path(path).is_file():
            return _replay_file(path, ext_id or None, store)
        have = recorded_extractors(store)
        if arg not in have:
            raise BadInputError(
                f"no recorded completions for extractor {arg!r} in the database; recorded: "
                f"{', '.join(have) or 'none'} (load some with `truss-lab ingest completions`, "
                "or give replay:PATH.jsonl)", field="--extractor")
        return Extractor.replay(store, arg)
    if kind == "openai" and arg:
        url = base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        options: dict[str, Any] = {} if max_retries is None else {"max_retries": max_retries}
        if supports_n:
            options["supports_n"] = True
        if deadline is not None:
            options["deadline"] = deadline
        try:
            config = ExtractorConfig.checked(model=arg, **knobs)
        except BadInputError as exc:
            raise BadInputError(f"bad extractor configuration: {exc}",
                                field="--extractor") from None
        # The template is the configuration's prompt version (a knob like the others).
        return Extractor.openai(url, arg, config=config, template=config.prompt_version,
                                store=store, **options)
    raise BadInputError(
        f"unknown extractor {spec!r}; expected heuristic, replay:EXTRACTOR_ID, "
        "replay:PATH.jsonl[#EXTRACTOR_ID] or openai:MODEL", field="--extractor")


def _replay_file(path: str, ext_id: str | None, store: Any) -> Extractor:
    if not Path(path).is_file():
        raise BadInputError("no such completions file", source=path)
    df, errors = read_completions(path)
    if errors:
        raise BadInputError(f"{len(errors)} bad line(s), the first: {errors[0]}", source=path)
    names = sorted(df["extractor"].dropna().unique().tolist())
    if ext_id is None:
        if len(names) != 1:
            raise BadInputError(
                f"the file records {len(names)} extractors ({', '.join(names)}); pick one "
                f"with replay:{path}#EXTRACTOR_ID", source=path)
        ext_id = names[0]
    elif ext_id not in names:
        raise BadInputError(f"no recordings for extractor {ext_id!r}; the file has "
                            f"{', '.join(names)}", source=path)
    # The store's registered prompts check the recordings' request hashes.
    return Extractor.replay(df[df["extractor"] == ext_id], ext_id, store=store)


def spec_run_config(spec: str, *, base_url: str | None = None, max_retries: int | None = None,
                    supports_n: bool = False, deadline: float | None = None,
                    knobs: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What a run keeps of the spec it was made from (``run_extraction(run_config=)``):
    enough for ``--resume RUN`` to rebuild the extractor with nothing else given. A key
    in ``base_url`` (userinfo, query, a key-like path segment) is registered here, so
    the stored config holds it masked whoever built the provider."""
    register_url_secrets(base_url)
    return {"extractor_spec": spec, "base_url": base_url, "max_retries": max_retries,
            "supports_n": supports_n,
            # only when set: older runs' config
            **({} if deadline is None else {"deadline": deadline}),
            "extractor_knobs": {k: v for k, v in (knobs or {}).items() if v is not None}}
