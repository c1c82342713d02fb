"""JSON Schemas of the interchange formats and governed records (``truss-lab schema NAME``).

The names are known without the models: ``truss-lab schema --help`` lists them without
importing pydantic or the formats' readers (issue 38); :func:`json_schema` imports them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core._errors import BadInputError

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = ["SCHEMA_NAMES", "json_schema"]


def _models() -> dict[str, type[BaseModel]]:
    from ..core._config import MemoryConfig
    from ..core._models import MemoryEntry, PolicyRecord
    from ..journal._spec import JournalEntryModel, VerdictPayloadModel
    from ._batch_files import BatchOutputModel, BatchRequestModel
    from ._completions import CompletionRecordModel
    from ._labels import LabelQueueRecordModel, LabelRecordModel
    from ._match_labels import MatchLabelRecordModel, MatchQueueRecordModel
    from ._prompts import PromptFileModel
    from ._references import ReferenceRecordModel

    return {
        "journal": JournalEntryModel,
        "verdict": VerdictPayloadModel,
        "completions": CompletionRecordModel,
        "labels": LabelRecordModel,
        "label-queue": LabelQueueRecordModel,
        "references": ReferenceRecordModel,
        "match-labels": MatchLabelRecordModel,
        "match-queue": MatchQueueRecordModel,
        "policy-record": PolicyRecord,
        "memory-entry": MemoryEntry,
        "config": MemoryConfig,
        "prompt": PromptFileModel,
        "batch-input": BatchRequestModel,
        "batch-output": BatchOutputModel,
    }


SCHEMA_NAMES = ("journal", "verdict", "completions", "labels", "label-queue", "references",
                "match-labels", "match-queue", "policy-record", "memory-entry", "config",
                "prompt", "batch-input", "batch-output")


def json_schema(name: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12, from pydantic) of format or record ``name``.

    Parameters
    ----------
    name : str
        The format (what ``truss-lab schema --help`` lists).

    Returns
    -------
    dict
        The schema.
    """
    models = _models()
    if name not in models:
        raise BadInputError(f"unknown schema {name!r}; expected one of {', '.join(models)}")
    schema = models[name].model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema
