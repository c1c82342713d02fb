"""A researcher's own verdicts: records of ``contract_verdict`` payloads (JSONL, CSV,
Parquet, a DataFrame or a list of dicts) signed into a journal export (Formats §1).

A record is a verdict's payload fields (``contract_id``, ``run_id``, ``goal``,
``verdict``, ``summary``, ``checks``, ``tags``, and any further field, kept as the
journal keeps it) and an optional ``ts`` (RFC 3339 UTC; default: the time of signing).
In CSV, ``checks`` and ``tags`` are JSON text and an empty optional cell is absent.
:func:`read_verdict_records` checks every record first with the payload's one
definition (:func:`~truss_lab.journal._spec.validate_verdict_payload`) and reports each
bad one as the ingest does (file, line or row, field); :func:`sign_verdicts` signs
nothing unless all are good, then writes the journal and the keyring whole, or continues
an existing journal after verifying it, so ``ingest journal`` imports only what is new.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ..core._canonical import MalformedJSON, canonical, loads_strict
from ..core._clock import utcnow
from ..core._errors import BadInputError
from ..core._files import check_output_file, read_input, write_outputs
from ..journal._crypto import (
    GENESIS_HASH,
    SigningKey,
    build_entry,
    format_ts,
    keyring_text,
    load_keyring,
)
from ..journal._spec import (
    ENTRY_FIELDS,
    MAX_JOURNAL_FILE,
    VERDICT_KIND,
    JournalColumns,
    read_journal,
    ts_problem,
    validate_verdict_payload,
)
from ..journal._verify import verify_journal
from ._strict import input_error, short, split_lines
from ._tables_in import input_bytes, is_table, table_records

__all__ = [
    "JSON_TEXT_FIELDS",
    "BadRecordsError",
    "VerdictRecords",
    "read_verdict_records",
    "sign_verdicts",
]

JSON_TEXT_FIELDS = ("checks", "tags")
"""The payload fields a CSV cell (or a frame's string) holds as JSON text."""
_OPTIONAL = ("contract_id", "run_id", "tags", "ts")
_ENTRY_ONLY = frozenset(ENTRY_FIELDS) - {"ts"}


class BadRecordsError(BadInputError):
    """Verdict records of which some are bad: the first one's place and message, and
    ``errors``, one per bad record (nothing was signed).

    Parameters
    ----------
    errors : list of BadInputError
        One per bad record; the first gives the message.
    """

    def __init__(self, errors: list[BadInputError]) -> None:
        e = errors[0]
        more = f" ({len(errors)} bad records in all)" if len(errors) > 1 else ""
        super().__init__(f"{e.message}{more}; nothing was signed", source=e.source,
                         line=e.line, row=e.row, field=e.field, reason=e.reason)
        self.errors = list(errors)


@dataclass
class VerdictRecords:
    """What :func:`read_verdict_records` read: the good records and an error per bad one."""

    source: str
    """What was read (files, or ``<records>``)."""
    payloads: list[dict[str, Any]] = field(default_factory=list)
    """The good records' payloads, in input order."""
    ts: list[str | None] = field(default_factory=list)
    """Each record's ``ts`` as given (None: the time of signing)."""
    where: list[str] = field(default_factory=list)
    """Each record's place (``line 3 of FILE``, ``row 4 of FILE``, ``record 0``)."""
    errors: list[BadInputError] = field(default_factory=list)
    """One per bad record, naming its place and field."""

    @property
    def ok(self) -> bool:
        return not self.errors

    def raise_for_errors(self) -> None:
        """:class:`BadRecordsError` when any record is bad."""
        if self.errors:
            raise BadRecordsError(self.errors)


def _raw_records(records: Any) -> tuple[str, str, list[tuple[int, Any]], list[BadInputError]]:
    """``(source, unit, [(number, record)], errors)``: ``unit`` is ``line`` (JSONL),
    ``row`` (a table: a CSV or Parquet file's row as a spreadsheet numbers it, a
    DataFrame's 0-based position; read by :func:`~truss_lab.ingest._tables_in.table_records`
    as every table the ingest reads) or ``record`` (a list of dicts, 0-based)."""
    if is_table(records):
        rows = table_records(records, nullable=_OPTIONAL)
        return (rows.source, "row", list(zip(rows.numbers, rows.records, strict=True)),
                rows.errors)
    if isinstance(records, str | os.PathLike):
        path = Path(records)
        return str(path), "line", *_jsonl_records(path, str(path))
    if isinstance(records, Iterable) and not isinstance(records, str | bytes | Mapping):
        return "<records>", "record", list(enumerate(records)), []
    raise BadInputError("expected a file (.jsonl, .csv, .parquet), a DataFrame or a list of "
                        f"dicts, got {type(records).__name__}", field="records")


def _jsonl_records(path: Path, source: str) -> tuple[list[tuple[int, Any]], list[BadInputError]]:
    lines, errors = split_lines(input_bytes(path, "verdict records"), source)
    out = []
    for number, text in lines:
        try:
            out.append((number, loads_strict(text)))
        except MalformedJSON as exc:
            errors.append(input_error(str(exc), source, number, exc.field, exc.reason))
    return out, errors


def _check_record(rec: Any, in_csv: bool) -> tuple[dict[str, Any], str | None]:
    """``(payload, ts)`` of one record, or :class:`BadInputError` (field, message)."""
    if not isinstance(rec, Mapping):
        raise BadInputError(f"expected an object of verdict fields, got "
                            f"{type(rec).__name__}", reason="not_object")
    rec = dict(rec)
    entry = sorted(_ENTRY_ONLY & set(rec))
    if entry:
        raise BadInputError(
            "is a journal entry's field; a record holds a verdict's payload fields (and "
            "ts): is this file a journal already? (`truss-lab ingest journal` imports one)",
            field=entry[0], reason="unexpected_field")
    ts = rec.pop("ts", None)
    if isinstance(ts, datetime):
        if ts.tzinfo is None:
            raise BadInputError("a time without a zone; give it in UTC (in pandas: "
                                ".dt.tz_localize('UTC'))", field="ts", reason="bad_value")
        ts = format_ts(ts)
    elif ts is not None:
        problem = ts_problem(ts) if isinstance(ts, str) else \
            f"expected RFC 3339 UTC text, got {type(ts).__name__}"
        if problem is not None:
            raise BadInputError(problem, field="ts", reason="bad_value")
    for name in JSON_TEXT_FIELDS:
        v = rec.get(name)
        if isinstance(v, str) and (in_csv or v.lstrip().startswith(("[", "{"))):
            try:
                rec[name] = loads_strict(v)
            except MalformedJSON as exc:
                raise BadInputError(f"expected JSON text (a list), got {short(v)}: {exc}",
                                    field=name, reason="bad_json") from None
    try:
        payload = validate_verdict_payload(rec)
    except BadInputError as exc:
        raise BadInputError(exc.message, field=(exc.field or "").removeprefix("payload."),
                            reason=exc.reason) from None
    try:
        canonical(payload)
    except ValueError as exc:
        raise BadInputError(str(exc), reason="bad_value") from None
    return payload, ts


def _identity(payload: Mapping[str, Any]) -> tuple[str, str, str]:
    """What makes two records the same verdict: ``(field, value, key)``. A run is judged
    once, so a ``run_id`` names its verdict; without one, the whole payload does."""
    if "run_id" in payload:
        rid = str(payload["run_id"])
        return "run_id", rid, "run_id:" + canonical([payload.get("contract_id"), rid])
    text = canonical(payload)
    return "goal", str(payload.get("goal", "")), "payload:" + text


def _is_paths(records: Any) -> bool:
    return isinstance(records, list | tuple) and bool(records) and all(
        isinstance(r, str | os.PathLike) for r in records)


def read_verdict_records(
    records: Any, *, signed: Mapping[str, int] | None = None,
) -> VerdictRecords:
    """Read and check verdict records; every bad one is an error, none is dropped silently.

    ``records`` is a path (``.jsonl``, ``.csv`` with ``checks``/``tags`` as JSON text,
    ``.parquet``), a list of paths (read in order as one input), a DataFrame or a list of
    dicts. Each record must be a valid ``contract_verdict`` payload (``truss-lab schema
    verdict``) with an optional ``ts``; a second record of the same verdict (the same
    ``run_id``, or without one the same payload) is an error naming the first, as is one
    already in ``signed`` (identity -> seq of a journal being continued). Errors name the
    file, the line (JSONL) or the row (CSV, Parquet: the header is row 1) or the record
    (a list of dicts, 0-based; a DataFrame names its 0-based row), and the field.

    Parameters
    ----------
    records : path, list of paths, pandas.DataFrame or list of dict
        The verdict records.
    signed : mapping of str to int, optional
        Identity -> seq of the verdicts of a journal being continued.

    Returns
    -------
    VerdictRecords
        The good payloads (with their ``ts``) and one error per bad record.
    """
    parts = list(records) if _is_paths(records) else [records]
    out = VerdictRecords(", ".join(str(p) for p in parts) if _is_paths(parts)
                         else "<records>")
    seen: dict[str, str] = {}
    for part in parts:
        _read_part(out, part, seen, signed or {})
    return out


def _read_part(out: VerdictRecords, records: Any, seen: dict[str, str],
               signed: Mapping[str, int]) -> None:
    source, unit, raw, errors = _raw_records(records)
    out.errors.extend(errors)
    in_csv = source.lower().endswith(".csv")
    for number, rec in raw:
        where = {"line": number} if unit == "line" else {"row": number} if unit == "row" \
            else {}
        here = f"{unit} {number}" + (f" of {source}" if source != "<records>" else "")
        prefix = f"record {number}: " if unit == "record" else ""
        try:
            payload, ts = _check_record(rec, in_csv=in_csv)
            name, value, key = _identity(payload)
            if key in seen:
                raise BadInputError(f"{name} {short(value)} is also in {seen[key]}: "
                                    "one verdict is signed once", field=name,
                                    reason="duplicate")
            if key in signed:
                raise BadInputError(f"{name} {short(value)} is signed already (the journal's "
                                    f"seq {signed[key]})", field=name, reason="duplicate")
        except BadInputError as exc:
            out.errors.append(BadInputError(prefix + exc.message, source=source,
                                            field=exc.field or None, reason=exc.reason,
                                            **where))
            continue
        seen[key] = here
        out.payloads.append(payload)
        out.ts.append(ts)
        out.where.append(here)


def _key(key: SigningKey | str | os.PathLike[str]) -> SigningKey:
    return key if isinstance(key, SigningKey) else SigningKey.load(key)


def _continued(path: Path, ring: Mapping[str, bytes]) -> tuple[JournalColumns, dict[str, int]]:
    """The journal at ``path``, verified whole against ``ring``, and the identity of each
    verdict it holds -> its seq."""
    parsed = read_journal(path)
    rep = verify_journal(parsed, ring)
    if not rep.ok:
        line = f", line {rep.first_bad_line}" if rep.first_bad_line else ""
        raise BadInputError(f"the journal to continue does not verify{line}: {rep.reason}: "
                            f"{rep.message}; nothing was signed", source=str(path),
                            reason=rep.reason)
    cols = parsed.columns
    signed = {}
    for seq, kind, payload in zip(cols.seq, cols.kind, cols.payload, strict=True):
        if kind == VERDICT_KIND:
            signed.setdefault(_identity(json.loads(payload))[2], seq)
    return cols, signed


def sign_verdicts(
    records: Any,
    key: SigningKey | str | os.PathLike[str],
    *,
    append_to: str | os.PathLike[str] | None = None,
    out: str | os.PathLike[str] | None = None,
    keyring: str | os.PathLike[str] | None = None,
) -> list[dict[str, Any]]:
    """Sign verdict records into a journal (Formats §1), or continue one.

    Parameters
    ----------
    records : path, DataFrame or list of dict
        Verdict records (see :func:`read_verdict_records`): the ``contract_verdict``
        payload fields and an optional ``ts`` (RFC 3339 UTC; default now).
    key : SigningKey or path
        The signing key, or its key file (``truss-lab keys generate``).
    append_to : path, optional
        An existing journal file to continue: it is verified whole first (its keys
        must be in ``keyring``), the new entries follow its head, and the file is
        rewritten whole with them appended. A record of a verdict it holds is an error.
    out : path, optional
        A new journal file to write (an existing file is refused: continue it with
        ``append_to``). Without ``append_to`` or ``out`` nothing is written.
    keyring : path, optional
        The keyring file that gains ``key``'s public key (created if missing); default
        ``keys.json`` beside the journal written. A key id it binds to another key is
        refused.

    Returns
    -------
    list of dict
        The signed entries, in order (``hash`` is each verdict's ``verdict_hash``).

    Raises
    ------
    BadRecordsError
        Bad records (the first named by file, line or row, and field, with how many are
        bad; ``errors`` holds each; nothing is written).
    BadInputError
        No records, a journal to continue that does not verify, a key id bound to
        another key, an unwritable path.

    See Also
    --------
    truss_lab.import_journal : import the journal written.

    Examples
    --------
    >>> import pandas as pd, truss_lab as tl
    >>> key = tl.SigningKey.generate("me")
    >>> entries = tl.sign_verdicts(pd.DataFrame([{"goal": "g", "verdict": "pass",
    ...     "summary": "s", "checks": "[]"}]), key)
    >>> entries[0]["seq"], entries[0]["key_id"]
    (1, 'me')
    """
    signer = _key(key)
    journal, ring_path, ring = _targets(signer, append_to, out, keyring)
    prev_cols, signed = (_continued(journal, ring) if append_to is not None and
                         journal is not None else (JournalColumns(), {}))
    read = read_verdict_records(records, signed=signed)
    read.raise_for_errors()
    if not read.payloads:
        raise BadInputError("no verdict records to sign (a header row alone, or an empty "
                            "file?)", source=read.source)
    seq, prev = (prev_cols.seq[-1], prev_cols.hash[-1]) if len(prev_cols) else (0, GENESIS_HASH)
    now = utcnow()
    entries = []
    for payload, ts in zip(read.payloads, read.ts, strict=True):
        seq += 1
        entry = build_entry(seq, VERDICT_KIND, payload, signer, prev, ts or now)
        entries.append(entry)
        prev = entry["hash"]
    if journal is not None:
        _write(journal, prev_cols, entries, ring_path, ring)
    return entries


def _targets(
    signer: SigningKey, append_to: str | os.PathLike[str] | None,
    out: str | os.PathLike[str] | None, keyring: str | os.PathLike[str] | None,
) -> tuple[Path | None, Path | None, dict[str, bytes]]:
    """The journal and keyring paths :func:`sign_verdicts` writes, both checked before
    anything is signed, and the keyring with ``signer``'s public key in it."""
    if append_to is not None and out is not None:
        raise BadInputError("give append_to (continue a journal) or out (a new one), not "
                            "both", field="out")
    target = append_to if append_to is not None else out
    journal = Path(target) if target is not None else None
    ring_path = Path(keyring) if keyring is not None else \
        (journal.parent / "keys.json" if journal is not None else None)
    if journal is not None:
        check_output_file(journal, field="--out", overwrite=append_to is not None)
        if append_to is not None and not journal.is_file():
            raise BadInputError("no such journal to continue (leave out --append to start "
                                "one)", source=str(journal))
    ring: dict[str, bytes] = {}
    if ring_path is not None:
        check_output_file(ring_path, field="--keyring")
        ring = load_keyring(ring_path) if ring_path.exists() else {}
        if ring.get(signer.key_id, signer.public_key) != signer.public_key:
            raise BadInputError(f"key id {signer.key_id!r} is bound to another public key "
                                "here; sign with that key, or choose another --key-id",
                                source=str(ring_path), field=signer.key_id)
    ring[signer.key_id] = signer.public_key
    return journal, ring_path, ring


def _write(journal: Path, before: JournalColumns, entries: Sequence[dict[str, Any]],
           ring_path: Path | None, ring: Mapping[str, bytes]) -> None:
    """The journal (the continued one's lines, then the new entries) and the keyring,
    all or none."""
    # The continued journal's own bytes stay as they were (verified just before).
    head = (read_input(journal, what="a journal file", limit=MAX_JOURNAL_FILE)
            .decode("utf-8").rstrip("\r\n \t") if len(before) else "")
    new = "".join(line + "\n" for line in JournalColumns.from_entries(entries).iter_jsonl())
    text = (head + "\n" if head else "") + new
    files: list[tuple[Path, Any]] = [
        (journal, lambda tmp: tmp.write_text(text, encoding="utf-8"))]
    if ring_path is not None:
        ring_text = keyring_text(ring)
        files.append((ring_path, lambda tmp: tmp.write_text(ring_text, encoding="utf-8")))
    write_outputs(files)
