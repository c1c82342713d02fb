"""The journal as equal-length columns: how the store keeps it and how it is verified."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core._canonical import canonical, jcs_string
from ..core._errors import BadInputError
from ._spec import ENTRY_FIELDS

__all__ = ["JournalColumns"]

_COLUMNS = ENTRY_FIELDS  # one column per FORMATS.md §1 field, in the documented order

@dataclass
class JournalColumns:
    """A journal as equal-length columns, in chain order.

    Element ``i`` of every list belongs to the ``i``-th entry. ``payload`` holds
    the canonical JSON text of each payload (as :func:`canonical` writes it), so
    verification hashes it as is and never re-canonicalizes. ``line`` holds the
    1-based file line of each entry when the columns came from a file.
    """

    seq: list[int] = field(default_factory=list)
    kind: list[str] = field(default_factory=list)
    ts: list[str] = field(default_factory=list)
    key_id: list[str] = field(default_factory=list)
    payload: list[str] = field(default_factory=list)
    prev_hash: list[str] = field(default_factory=list)
    hash: list[str] = field(default_factory=list)
    signature: list[str] = field(default_factory=list)
    line: list[int] | None = None

    def __post_init__(self) -> None:
        n = len(self.seq)
        for name in (*_COLUMNS, "line"):
            col = getattr(self, name)
            if col is None:
                continue
            if not isinstance(col, list):
                col = list(col)
                setattr(self, name, col)
            if len(col) != n:
                raise BadInputError(
                    f"journal columns differ in length: seq has {n}, {name} has {len(col)}",
                    field=name,
                )

    def __len__(self) -> int:
        return len(self.seq)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Sequence[Any]]) -> JournalColumns:
        """Columns from a mapping of sequences (e.g. ``arrow_table.to_pydict()``).

        The eight FORMATS.md §1 columns are required (``payload`` as canonical
        text); ``line`` is optional; other keys are ignored.
        """
        missing = [c for c in _COLUMNS if c not in data]
        if missing:
            raise BadInputError(f"journal columns missing: {', '.join(missing)}", field=missing[0])
        cols = {c: list(data[c]) for c in _COLUMNS}
        cols["seq"] = [int(v) for v in cols["seq"]]
        line = data.get("line")
        return cls(**cols, line=None if line is None else [int(v) for v in line])

    @classmethod
    def from_entries(cls, entries: Iterable[Mapping[str, Any]]) -> JournalColumns:
        """Columns from FORMATS.md §1 entry dicts (as :func:`build_entry` returns).

        Each payload is canonicalized here; no validation happens (use
        :func:`read_journal_lines` for untrusted input).
        """
        cols = cls()
        for e in entries:
            cols.seq.append(e["seq"])
            cols.kind.append(e["kind"])
            cols.ts.append(e["ts"])
            cols.key_id.append(e["key_id"])
            cols.payload.append(canonical(e["payload"]))
            cols.prev_hash.append(e["prev_hash"])
            cols.hash.append(e["hash"])
            cols.signature.append(e["signature"])
        return cols

    def prefix(self, n: int) -> JournalColumns:
        """The first ``n`` entries (e.g. the verified prefix of a report)."""
        return JournalColumns(
            *(getattr(self, c)[:n] for c in _COLUMNS),
            line=None if self.line is None else self.line[:n],
        )

    def extend(self, part: JournalColumns) -> None:
        """Append ``part``'s entries (a streamed batch) to these columns, in place."""
        for c in _COLUMNS:
            getattr(self, c).extend(getattr(part, c))

    def to_pydict(self) -> dict[str, list[Any]]:
        """The columns as a dict of lists (``line`` included when known)."""
        out: dict[str, list[Any]] = {c: getattr(self, c) for c in _COLUMNS}
        if self.line is not None:
            out["line"] = self.line
        return out

    def iter_jsonl(self) -> Iterator[str]:
        """FORMATS.md §1 lines (no newline), fields in the documented order."""
        for i in range(len(self)):
            yield (
                '{"seq":' + str(self.seq[i])
                + ',"kind":' + jcs_string(self.kind[i])
                + ',"ts":' + jcs_string(self.ts[i])
                + ',"key_id":' + jcs_string(self.key_id[i])
                + ',"payload":' + self.payload[i]
                + ',"prev_hash":' + jcs_string(self.prev_hash[i])
                + ',"hash":' + jcs_string(self.hash[i])
                + ',"signature":' + jcs_string(self.signature[i])
                + "}"
            )
