"""Extraction: providers (replay, OpenAI-compatible, heuristic), prompts, the parser, the
ADR 0011 gate, live extraction when a contract closes, and the batch runner. The judges
(models that produce truth) are evaluate's."""

from __future__ import annotations

import typing

from ..core._lazy import attach as _attach

if typing.TYPE_CHECKING:
    # Imported on first use (core/_lazy.py): importing the package stays cheap, so the
    # command line starts at once. These lines are the exports' one list of homes.
    from ._batch import ExtractionRun, rerun, run_extraction
    from ._batch_api import ingest_batch, prepare_batch
    from ._extractor import Extractor, ReplayProvider, UnregisteredPromptWarning
    from ._gate import CloseResult, ContractCloseLearning, apply_gate
    from ._grid import Grid, GridCell, load_grid, run_grid
    from ._heuristic import HeuristicProvider
    from ._parser import ParseResult, parse_completion
    from ._prompts import (
        PromptTemplate,
        build_judge_request,
        build_match_request,
        build_request,
        get_template,
        load_prompt,
        register_prompt,
    )
    from ._providers import (
        ChatMessage,
        Completion,
        CompletionRequest,
        OpenAICompatibleProvider,
        Provider,
    )

__getattr__, __dir__ = _attach(__name__, __file__)

__all__ = [
    "ChatMessage",
    "CloseResult",
    "Completion",
    "CompletionRequest",
    "ContractCloseLearning",
    "ExtractionRun",
    "Extractor",
    "Grid",
    "GridCell",
    "HeuristicProvider",
    "OpenAICompatibleProvider",
    "ParseResult",
    "PromptTemplate",
    "Provider",
    "ReplayProvider",
    "UnregisteredPromptWarning",
    "apply_gate",
    "build_judge_request",
    "build_match_request",
    "build_request",
    "get_template",
    "ingest_batch",
    "load_grid",
    "load_prompt",
    "parse_completion",
    "prepare_batch",
    "register_prompt",
    "rerun",
    "run_extraction",
    "run_grid",
]
