"""Layered configuration: defaults < TOML file < ``TRUSS_LAB_*`` environment < arguments.

A TOML file holds a ``[memory]`` table::

    [memory]
    lesson_extraction = "model-scored"   # off | on | model-scored
    extraction_min_salience = 0.70

Each layer is validated on its own, so an error names the layer a bad value
came from (``environment TRUSS_LAB_EXTRACTION_MIN_SALIENCE: ...``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

from ._errors import BadInputError, ConfigError
from ._models import LessonExtractionPolicy
from ._threshold import DEFAULT_MIN_SALIENCE, check_threshold
from ._toml import read_toml

__all__ = ["ENV_PREFIX", "MemoryConfig"]

ENV_PREFIX = "TRUSS_LAB_"
_FIELDS = ("lesson_extraction", "extraction_min_salience")


def _check(field: str, value: Any, layer: str) -> Any:
    """Validate and normalize one raw value; raise ConfigError naming ``layer``."""
    if field == "lesson_extraction":
        try:
            return LessonExtractionPolicy(str(value).strip() if isinstance(value, str) else value)
        except ValueError:
            allowed = ", ".join(p.value for p in LessonExtractionPolicy)
            raise ConfigError(
                f"lesson_extraction must be one of {allowed}, got {value!r}",
                layer=layer, field=field,
            ) from None
    if field == "extraction_min_salience":
        return check_threshold(value, layer, name=field, strings=True)
    raise ConfigError(
        f"unknown setting {field!r}; expected one of {', '.join(_FIELDS)}", layer=layer, field=field
    )


class MemoryConfig(BaseModel):
    """The memory settings that govern lesson extraction (ADR 0011).

    Frozen and validated: a threshold that is NaN or outside [0, 1] is refused when the
    configuration is made, naming the layer it came from (:meth:`load`).

    Parameters
    ----------
    lesson_extraction : {"off", "on", "model-scored"}, default "off"
        ``off`` calls no extractor and writes nothing (the default, zero-cost); ``on``
        writes every parsed lesson; ``model-scored`` writes the lessons whose salience
        is at least ``extraction_min_salience``.
    extraction_min_salience : float, default 0.70
        The gate's threshold, in [0, 1]; a salience equal to it passes.

    Raises
    ------
    truss_lab.core.ConfigError
        A value out of range or of the wrong type, or an unknown setting.

    See Also
    --------
    run_extraction : Runs an extractor under this configuration.
    ContractCloseLearning : The same gate on one verdict as it closes.

    Examples
    --------
    >>> config = tl.MemoryConfig(lesson_extraction="model-scored")
    >>> config.lesson_extraction.value, config.extraction_min_salience
    ('model-scored', 0.7)
    >>> tl.MemoryConfig().lesson_extraction.value  # off unless asked
    'off'
    """

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    lesson_extraction: LessonExtractionPolicy = LessonExtractionPolicy.off
    """``off`` (default, zero-cost), ``on`` or ``model-scored``."""
    extraction_min_salience: float = DEFAULT_MIN_SALIENCE
    """With ``model-scored``, lessons with salience >= this are written (equality passes)."""

    @model_validator(mode="before")
    @classmethod
    def _validate_arguments(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            layer = "arguments"
            out = {}
            for k, v in data.items():
                out[k] = _check(k, v, layer)
            return out
        return data

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        env: Mapping[str, str] | None = None,
        **overrides: Any,
    ) -> MemoryConfig:
        """Resolve the layers: defaults < TOML file < ``TRUSS_LAB_*`` environment <
        keyword arguments.

        Parameters
        ----------
        path : str or os.PathLike, optional
            The TOML file (default ``$TRUSS_LAB_CONFIG``, else none).
        env : mapping of str to str, optional
            The environment to read ``TRUSS_LAB_LESSON_EXTRACTION`` and
            ``TRUSS_LAB_EXTRACTION_MIN_SALIENCE`` from (default ``os.environ``).
        **overrides : Any
            Settings that win over every layer.

        Returns
        -------
        MemoryConfig
            The resolved configuration.

        Raises
        ------
        truss_lab.core.ConfigError
            A bad value, naming the layer (file, environment variable or argument).
        """
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        path = path if path is not None else env.get(ENV_PREFIX + "CONFIG")
        if path is not None:
            p = Path(path)
            layer = f"config file {p}"
            try:
                doc = read_toml(p, what="a TOML file")
            except BadInputError as exc:
                raise ConfigError(exc.message.replace("not TOML", "not valid TOML")
                                  + (f" (line {exc.line})" if exc.line else ""),
                                  layer=layer) from None
            table = doc.get("memory", {})
            if not isinstance(table, dict):
                raise ConfigError("[memory] must be a table", layer=layer, field="memory")
            for k, v in table.items():
                values[k] = _check(k, v, layer)
        for field in _FIELDS:
            name = ENV_PREFIX + field.upper()
            if name in env:
                values[field] = _check(field, env[name], f"environment {name}")
        for k, v in overrides.items():
            if v is not None:
                values[k] = _check(k, v, "arguments")
        return cls(**values)
