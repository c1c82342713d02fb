"""What the two unchained formats share (FORMATS.md §2, §3).

The pydantic field types of their record models, the :class:`BadInputError`
builder both readers use, and the handling of duplicate keys: identical
copies collapse, conflicting ones are dropped with an error naming both lines.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Annotated, Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from ..core._canonical import MAX_SAFE_INT
from ..core._errors import BadInputError

HEX64 = r"^[0-9a-f]{64}$"
_HEX64_RE = re.compile(r"[0-9a-f]{64}")
# A whole column of hashes joined by newlines, checked with one match.
_HEX64_COL_RE = re.compile(r"(?:[0-9a-f]{64}\n)*[0-9a-f]{64}")

Hex64 = Annotated[StrictStr, Field(pattern=HEX64)]
NonEmpty = Annotated[StrictStr, Field(min_length=1)]
Count = Annotated[StrictInt, Field(ge=0, le=MAX_SAFE_INT)]


class _Record(BaseModel):
    model_config = ConfigDict(
        frozen=True, extra="forbid", strict=True, use_attribute_docstrings=True
    )


def _err(
    message: str, source: str, line: int | None, field: str | None, reason: str
) -> BadInputError:
    return BadInputError(message, source=source, line=line, field=field, reason=reason)


@contextmanager
def atomic_text_file(path: str | os.PathLike[str]) -> Iterator[IO[str]]:
    """A UTF-8 text handle whose content replaces ``path`` only when the block ends
    without error: a reader never sees half a file, and a failure leaves none."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=target.name + ".", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            yield fh
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _short(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _dedupe(
    df: pd.DataFrame, lines: np.ndarray, key: tuple[str, ...], source: str, where: str = "line"
) -> tuple[pd.DataFrame, list[BadInputError]]:
    """Collapse identical duplicates of ``key``; drop conflicting ones with an error each.

    Exact copies go first (vectorized); what still shares a key then differs in
    some field: every distinct row of such a key is dropped, and each one after
    the first gets an error naming the first one's line.
    """
    if df.empty or len(set(zip(*(df[k].tolist() for k in key), strict=True))) == len(df):
        return df, []
    copies = df.duplicated(keep="first").to_numpy()
    df, lines = df[~copies], lines[~copies]
    dup = df.duplicated(subset=list(key), keep=False).to_numpy()
    if not dup.any():
        return df.reset_index(drop=True), []
    errors: list[BadInputError] = []
    sub = df[dup]
    sub_lines = lines[dup]
    cols = list(df.columns)
    for members in sub.groupby(list(key), dropna=False, sort=False).indices.values():
        first = sub.iloc[members[0]]
        key_desc = ", ".join(f"{k}={_short(first[k], 24)}" for k in key)
        for m in members[1:]:
            row = sub.iloc[m]
            differ = [c for c in cols if not _same(first[c], row[c])]
            errors.append(_err(
                f"conflicts with {where} {sub_lines[members[0]]} (same {key_desc}; "
                f"differs in {', '.join(differ)}); every row with this key is dropped",
                source, int(sub_lines[m]), differ[0], "conflicting_duplicate",
            ))
    return df[~dup].reset_index(drop=True), errors


def _same(a: Any, b: Any) -> bool:
    na, nb = pd.isna(a), pd.isna(b)
    if na or nb:
        return bool(na and nb)
    return bool(a == b)
