"""The one check of a salience threshold.

``extraction_min_salience`` travels under several names — ``--min-salience``
on the command line, ``extraction_min_salience`` in the config and in a
policy's settings, ``extraction_min_salience`` in ``extraction_runs``, ``threshold`` in a
sweep or a threshold choice — but whatever it is called, a valid value is a
number in [0, 1] (not NaN), and :func:`check_threshold` is where that is decided.
It sits below both :mod:`._models` (policy settings) and :mod:`._config`
(which imports the models), so each can call it.
"""

from __future__ import annotations

import math
from typing import Any

from ._errors import ConfigError

__all__ = ["DEFAULT_MIN_SALIENCE", "check_threshold"]

#: The default salience gate: lessons scored at or above it are written. Its one home;
#: the config default, the evaluation defaults and the displays read it from here.
DEFAULT_MIN_SALIENCE = 0.70


def check_threshold(
    value: Any, where: str, *, name: str = "extraction_min_salience", strings: bool = False
) -> float:
    """``value`` as a float when it is a number in [0, 1] (not NaN); else
    :class:`ConfigError` naming ``where`` (the layer) and ``name`` (the field).

    Booleans are not numbers here.

    Parameters
    ----------
    value : object
        The value given.
    where : str
        The configuration layer it came from (named in the error).
    name : str, default "extraction_min_salience"
        The field (named in the error).
    strings : bool, default False
        A numeric string counts too, as the environment and TOML layers need.

    Returns
    -------
    float
        The threshold.

    Raises
    ------
    ConfigError
        Not a number in [0, 1], or NaN.
    """
    v = value
    if strings and isinstance(v, str):
        try:
            v = float(v)
        except ValueError:
            raise ConfigError(f"{name} must be a number in [0, 1], got {value!r}",
                              layer=where, field=name) from None
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise ConfigError(f"{name} must be a number in [0, 1], got {value!r}",
                          layer=where, field=name)
    v = float(v)
    if math.isnan(v) or not 0.0 <= v <= 1.0:
        raise ConfigError(f"{name} must be in [0, 1] (and not NaN), got {value!r}",
                          layer=where, field=name)
    return v
