"""Writing the journal table: append, import a JSONL export; verify the stored chain.

Verification itself is pure (:mod:`truss_lab.journal._verify`); this module feeds it
columns from files and from DuckDB (read through :mod:`truss_lab.journal._table`)
and decides what lands. A journal file is
all-or-nothing unless ``keep_verified_prefix=True``; re-importing it is a
no-op; a file that forks the stored chain is refused.
"""

from __future__ import annotations

import base64
import itertools
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

import pyarrow as pa
from pydantic import BaseModel, ConfigDict

from ..core._canonical import canonical
from ..core._clock import utcnow
from ..core._errors import BadInputError, ChainError, StoreError
from ..core._models import LedgerRef
from ..store._governed import unresolved_policy_provenance
from ..store._store import Store
from ..store._tables import JOURNAL_SCHEMA
from ._crypto import GENESIS_HASH, SigningKey, build_entry, load_keyring
from ._spec import (
    POLICY_ENTRY_KIND,
    JournalColumns,
    MalformedLine,
    ParsedJournal,
    read_journal_batches,
)
from ._table import (
    drop_entries_after,
    entry_hashes,
    journal_batches,
    journal_columns,
    journal_head,
    new_key_ids,
    stored_among,
    stored_keyring,
)
from ._verify import (
    VerifyReport,
    first_link_problem,
    first_seq_problem,
    verify_columns,
    verify_stream,
    with_malformed,
)

__all__ = [
    "LAB_JOURNAL",
    "ImportReport",
    "append_entries",
    "append_entry",
    "append_lab_entries",
    "append_lab_entry",
    "import_journal",
    "register_keys",
    "verify_chain",
]

class ImportReport(BaseModel):
    """What an import did."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    source: str
    """The file imported."""
    entries_read: int
    """Entries parsed from the file before any error."""
    entries_added: int
    """New entries written to the journal."""
    entries_present: int
    """Entries already in the journal (a re-import adds nothing)."""
    head: LedgerRef | None
    """The journal head after the import."""
    verify: VerifyReport
    """Verification of the file's entries (``ok`` False names the first bad one)."""

    @property
    def ok(self) -> bool:
        return self.verify.ok


# -- keys -------------------------------------------------------------------


def register_keys(store: Store, keyring: Mapping[str, bytes]) -> None:
    """Add public keys; a key id already bound to a different key is refused."""
    have = stored_keyring(store)
    new = {}
    for kid, pub in keyring.items():
        if kid in have:
            if have[kid] != pub:
                raise BadInputError(
                    f"key {kid!r} is already registered with a different public key",
                    source="keyring", field=kid,
                )
            continue
        new[kid] = pub
    if new:
        store.append(
            "signing_keys",
            pa.table(
                {
                    "key_id": list(new),
                    "public_key": [base64.b64encode(v).decode("ascii") for v in new.values()],
                    "added_at": pa.array([utcnow()] * len(new), pa.timestamp("us", tz="UTC")),
                }
            ),
            key=["key_id"],
        )


# -- verifying the stored chains ----------------------------------------------

LAB_JOURNAL = "lab_journal"
"""The lab's own chain (docs/explanation/two-chains.md); ``journal`` is the verdict journal."""
VERDICT_HEAD = "verdict_head"
"""The payload field of a lab entry naming the verdict-journal head it was decided on."""


def verify_chain(
    store: Store, *, upto_seq: int | None = None, workers: int | None = None
) -> VerifyReport:
    """Verify both chains: every verdict-journal entry (up to ``upto_seq`` when given),
    then (without ``upto_seq``) the lab journal: hash, chain link, sequence and
    Ed25519 signature of each entry, and each lab entry's ``verdict_head`` must be
    a stored verdict-journal entry with that hash. Last, every policy record's
    provenance must resolve (invariant 8, docs/explanation/invariants.md): its
    ``produced_by`` is a stored lab entry with that hash, so deleting the lab journal's
    last entries (which leaves a valid shorter chain) does not pass.

    The report names the first bad entry and why (a lab entry's message starts
    with ``lab journal``); ``entries_checked`` counts both chains, ``head_*`` is
    the verdict journal's head. It never raises for a bad chain (call
    ``.raise_for_error()`` for that).

    Parameters
    ----------
    store : Store
        The database whose chains are verified (read-only is enough).
    upto_seq : int, optional
        Verify the verdict journal up to this entry only, and not the lab journal.
    workers : int, optional
        Processes checking signatures (default: one per core, at most 4; 1 checks in
        this process).

    Returns
    -------
    truss_lab.journal.VerifyReport
        ``ok``, ``entries_checked``, the head, and for a bad chain ``first_bad_seq``,
        ``reason`` (``bad_hash``, ``bad_signature``, ...) and ``message``.

    See Also
    --------
    import_journal : verifies a file as it imports it.
    audit : every check of the invariants, this one included.

    Examples
    --------
    >>> report = tl.verify_chain(store)
    >>> report.ok, report.entries_checked
    (True, 1200)
    >>> report.raise_for_error()  # returns the report, or raises ChainError
    VerifyReport(ok=True, entries_checked=1200)
    """
    ring = stored_keyring(store)
    report = verify_stream(journal_batches(store, upto_seq=upto_seq), ring, workers=workers)
    if not report.ok or upto_seq is not None:
        return report
    lab = journal_columns(store, table=LAB_JOURNAL)
    if len(lab):
        bad = _verify_lab(store, lab, ring, workers)
        if bad is not None:
            return bad.model_copy(update={
                "entries_checked": report.entries_checked + bad.entries_checked,
                "message": f"lab journal: {bad.message}", "first_bad_line": None,
                "head_seq": report.head_seq, "head_hash": report.head_hash})
        report = report.model_copy(
            update={"entries_checked": report.entries_checked + len(lab)})
    return _policy_provenance(store, report)


def _policy_provenance(store: Store, report: VerifyReport) -> VerifyReport:
    """``report``, or the first policy record whose provenance does not resolve (at the
    seq it names, as a broken link of the lab journal)."""
    unresolved = unresolved_policy_provenance(store, POLICY_ENTRY_KIND)
    if not unresolved:
        return report
    record_id, policy_id, seq, want, stored = unresolved[0]
    held = ("which the lab journal does not hold" if stored is None else
            f"but the lab journal's entry {seq} has hash {str(stored)[:16]}…")
    more = f" ({len(unresolved) - 1} more record(s) alike)" if len(unresolved) > 1 else ""
    return report.model_copy(update={
        "ok": False, "first_bad_seq": int(seq), "reason": "broken_link",
        "message": f"lab journal: policy record {record_id} (policy {policy_id!r}) was "
                   f"signed as entry {seq} ({str(want)[:16]}…), {held}{more}"})


def _verify_lab(store: Store, lab: JournalColumns, ring: Mapping[str, bytes],
                workers: int | None) -> VerifyReport | None:
    # The lab chain starts at genesis, or (a database migrated from before the
    # two chains, see schema.sql 006) at entries that were appended to the
    # verdict journal: the first links to the verdict entry just before it.
    prev = None
    first = lab.seq[0]
    if first > 1:
        link = entry_hashes(store, first - 1, first - 1)
        if not link:
            return VerifyReport(
                ok=False, entries_checked=0, first_bad_seq=first, reason="broken_link",
                message=f"entry {first} links to verdict-journal entry {first - 1}, which "
                        "is not stored")
        prev = LedgerRef(seq=first - 1, hash=link[first - 1])
    rep = verify_columns(lab, ring, prev=prev, workers=workers)
    if not rep.ok:
        return rep
    heads = store.con.execute(f"""
        WITH h AS (
            SELECT seq, json_extract_string(payload, '$.{VERDICT_HEAD}.seq') AS hseq,
                   json_extract_string(payload, '$.{VERDICT_HEAD}.hash') AS hhash
            FROM {LAB_JOURNAL})
        SELECT seq, hseq, hhash FROM h WHERE hhash IS NOT NULL AND NOT EXISTS (
            SELECT 1 FROM journal j WHERE j.seq = TRY_CAST(h.hseq AS BIGINT) AND j.hash = h.hhash)
        ORDER BY seq LIMIT 1""").fetchall()
    if heads:
        seq, hseq, hhash = heads[0]
        return VerifyReport(
            ok=False, entries_checked=int(seq) - first, first_bad_seq=int(seq),
            reason="broken_link",
            message=f"entry {seq} was decided on verdict-journal entry {hseq} "
                    f"({str(hhash)[:16]}…), which the verdict journal does not hold")
    return None


# -- writing ------------------------------------------------------------------


def append_entries(
    store: Store,
    kind: str,
    payloads: Sequence[Any],
    key: SigningKey,
    *,
    ts: datetime | None = None,
) -> list[LedgerRef]:
    """Sign and append entries after the verdict journal's head, in one transaction
    (the lab's own entries go to :func:`append_lab_entries`)."""
    _check_payloads(kind, payloads)
    return _append(store, "journal", kind, payloads, key, ts)


def _check_payloads(kind: str, payloads: Sequence[Any]) -> None:
    if not kind or not isinstance(kind, str):
        raise BadInputError(f"journal kind must be a non-empty string, got {kind!r}", field="kind")
    for i, p in enumerate(payloads):
        if not isinstance(p, Mapping):
            raise BadInputError(f"payload must be a JSON object, got {type(p).__name__}",
                                field=f"payloads[{i}]")
        try:
            canonical(p)
        except ValueError as exc:
            raise BadInputError(str(exc), field=f"payloads[{i}]") from None


def _append(store: Store, table: str, kind: str, payloads: Sequence[Any], key: SigningKey,
            ts: datetime | None) -> list[LedgerRef]:
    with store.transaction():
        register_keys(store, {key.key_id: key.public_key})
        if table == LAB_JOURNAL:
            vhead = journal_head(store)
            stamp = {VERDICT_HEAD: vhead.model_dump() if vhead else None}
            payloads = [{**p, **stamp} for p in payloads]
        head = journal_head(store, table=table)
        seq, prev = (head.seq, head.hash) if head else (0, GENESIS_HASH)
        when = ts or utcnow()
        entries = []
        for p in payloads:
            seq += 1
            e = build_entry(seq, kind, p, key, prev, when)
            entries.append(e)
            prev = e["hash"]
        store.append(table, _rows_from_columns(JournalColumns.from_entries(entries)),
                     key=["seq"])
    return [LedgerRef(seq=e["seq"], hash=e["hash"]) for e in entries]


def append_lab_entries(
    store: Store, kind: str, payloads: Sequence[Any], key: SigningKey, *,
    ts: datetime | None = None,
) -> list[LedgerRef]:
    """Sign and append the lab's own entries (a proposal, a sweep result) to the lab
    journal, in one transaction. Each payload gains ``verdict_head``: the ref of the
    verdict journal's head now (None when empty), the evidence it was decided on.
    The verdict journal is not touched: the next upstream export still appends."""
    _check_payloads(kind, payloads)
    if any(VERDICT_HEAD in p for p in payloads):
        raise BadInputError(f"{VERDICT_HEAD!r} is set by the lab journal itself",
                            field=VERDICT_HEAD)
    return _append(store, LAB_JOURNAL, kind, payloads, key, ts)


def append_lab_entry(
    store: Store, kind: str, payload: Any, key: SigningKey, *, ts: datetime | None = None
) -> LedgerRef:
    """Sign and append one lab entry; return its ref (a ref into the lab journal)."""
    return append_lab_entries(store, kind, [payload], key, ts=ts)[0]


def append_entry(
    store: Store, kind: str, payload: Any, key: SigningKey, *, ts: datetime | None = None
) -> LedgerRef:
    """Sign and append one entry after the verdict journal's head (:func:`append_entries`
    of one payload; the lab's own entries go to :func:`append_lab_entries`).

    Parameters
    ----------
    store : Store
        The database.
    kind : str
        The entry's kind.
    payload : object
        The entry's payload (JSON that RFC 8785 can represent).
    key : SigningKey
        Signs it.
    ts : datetime, optional
        Its time (default now, UTC).

    Returns
    -------
    LedgerRef
        The entry's seq and hash.
    """
    return append_entries(store, kind, [payload], key, ts=ts)[0]


def _keyring_arg(keyring: Mapping[str, bytes] | str | os.PathLike[str] | None) -> dict[str, bytes]:
    if keyring is None:
        return {}
    if isinstance(keyring, Mapping):
        return dict(keyring)
    return load_keyring(keyring)


def _slice(cols: JournalColumns, a: int, b: int) -> JournalColumns:
    data: dict[str, list[Any]] = {k: v[a:b] for k, v in cols.to_pydict().items()}
    return JournalColumns.from_mapping(data)


def _import_keyring(
    store: Store, keyring: Mapping[str, bytes] | str | os.PathLike[str] | None
) -> dict[str, bytes]:
    """The stored keys plus ``keyring``'s; a key id stored with another key is refused."""
    given = _keyring_arg(keyring)
    have = stored_keyring(store)
    for kid, pub in given.items():
        if kid in have and have[kid] != pub:
            raise BadInputError(
                "key id is already registered with a different public key",
                source=str(keyring), field=kid,
            )
    return {**have, **given}


def import_journal(
    store: Store,
    path: str | os.PathLike[str],
    *,
    keyring: Mapping[str, bytes] | str | os.PathLike[str] | None = None,
    keep_verified_prefix: bool = False,
    batch_entries: int = 16_384,
) -> ImportReport:
    """Import a Formats §1 JSONL export, verifying every entry as it is read.

    Entries the journal already holds (same seq and hash) are skipped, so a
    re-import is a no-op. An entry whose seq is stored with another hash is a
    fork and is refused, always. Otherwise the file lands whole or not at all
    and a bad file raises :class:`ChainError` naming the first bad line and
    why; with ``keep_verified_prefix=True`` the entries before it land and the
    report carries the error.

    Parameters
    ----------
    store : Store
        The database to import into (opened for writing).
    path : str or os.PathLike
        The JSONL export (Formats §1).
    keyring : mapping or str or os.PathLike, optional
        ``key_id`` to raw public key, or a ``keys.json`` file; by default the keys
        the store already holds.
    keep_verified_prefix : bool, default False
        Land the entries before the first bad line instead of none.
    batch_entries : int, default 16384
        Entries read, verified and written at a time, inside the import's one
        transaction (what it holds of a file is a batch and 40 bytes an entry
        before it; DuckDB's memory is bounded meanwhile, :meth:`Store.memory_bounded`,
        so the uncommitted entries spill to disk, all but their keys' index); the
        outcome does not depend on it.

    Returns
    -------
    truss_lab.journal.ImportReport
        Entries read, added and already present, the new head, and the
        verification (``verify``: its error when ``keep_verified_prefix`` kept a
        prefix).

    Raises
    ------
    ChainError
        The file does not verify (a bad hash or signature, an unknown key, a broken
        link, a gap, a fork, a malformed line), naming the first bad line and why.
    BadInputError
        The file or the keyring cannot be read.

    See Also
    --------
    verify_chain : verify what the store holds.
    truss_lab.sign_verdicts : sign your own verdict records into a journal.

    Examples
    --------
    The sample's journal is in ``store`` already, so importing it again adds nothing:

    >>> report = tl.import_journal(store, tl.SAMPLE_DIR / "journal.jsonl",
    ...                            keyring=tl.SAMPLE_DIR / "keys.json")
    >>> report.entries_read, report.entries_added, report.entries_present
    (1200, 0, 1200)
    """
    if batch_entries < 1:
        raise ValueError(f"batch_entries must be at least 1, not {batch_entries}")
    source = str(path)
    ring = _import_keyring(store, keyring)
    head = journal_head(store)
    parsed = read_journal_batches(path, rows=batch_entries)
    first = next(parsed)
    # The file follows the stored entry before its first seq (or genesis).
    start_prev: LedgerRef | None = None
    if len(first.columns) and first.columns.seq[0] > 1 and head is not None:
        prev_seq = first.columns.seq[0] - 1
        before = entry_hashes(store, prev_seq, prev_seq)
        start_prev = LedgerRef(seq=prev_seq, hash=before[prev_seq]) if before else head
    land = _Landing(store, head, start_prev, ring)
    # DuckDB keeps the transaction's uncommitted entries in memory until the commit:
    # bounded, they spill to disk, but for the keys' indexes (seq, hash), which do not
    # spill: the bound grows with the entries the journal holds.
    with store.memory_bounded() as land.keyed, store.transaction():
        # 1. Verify the whole file, the part the store already holds included (a
        #    tampered line must never pass as "already present"), batch by batch; each
        #    batch's new entries are written, uncommitted, while the next is checked.
        report = verify_stream(land.feed(itertools.chain([first], parsed)), ring,
                               prev=start_prev)
        report = with_malformed(report, land.malformed)
        if not report.ok and not keep_verified_prefix:
            raise ChainError(
                f"{report.message if report.reason == 'malformed' else _where(source, report)} "
                "(nothing was imported)",
                seq=report.first_bad_seq, reason=report.reason or "malformed",
                line=report.first_bad_line,
            )
        good = land.read if report.ok else report.entries_checked
        # 2. Of the verified entries, those the store holds must be identical (they
        #    are skipped); one with the same seq and another hash forks the chain,
        #    which is refused whatever keep_verified_prefix says.
        land.refuse_fork(good, source)
        n_present = min(land.present, good)
        # 3. What lands: the verified entries after those, and the keys they use.
        added = land.settle(report, good - n_present)
    return ImportReport(
        source=source,
        entries_read=land.read,
        entries_added=added,
        entries_present=n_present,
        head=journal_head(store),
        verify=report,
    )


class _Landing:
    """:func:`import_journal`'s writes, batch by batch inside its transaction: each
    batch's entries after the stored head are appended as long as they continue the
    chain (sequence and links, as verification checks them) and no stored hash repeats;
    the entries the store holds are compared with it (a fork is refused once it is
    known to lie within the verified prefix: :meth:`refuse_fork`); :meth:`settle` drops
    what lies past the verified prefix."""

    def __init__(self, store: Store, head: LedgerRef | None, prev: LedgerRef | None,
                 ring: Mapping[str, bytes]) -> None:
        self.store, self.head, self.ring = store, head, ring
        self.head_seq = head.seq if head is not None else 0
        self.next_seq = (prev.seq if prev is not None else 0) + 1
        self.link = prev.hash if prev is not None else GENESIS_HASH
        self.read = 0  # entries parsed
        self.present = 0  # leading entries the store holds, identical
        self.fork: tuple[int, int, int | None, str, str] | None = None  # pos, seq, line, ...
        self.writing = True  # False from the first entry that does not continue the chain
        self.appended = 0
        self.malformed: MalformedLine | None = None
        self.recorded_at = utcnow()
        # Store.memory_bounded's: the bound for the journal's keyed rows (none outside it).
        self.keyed: Callable[[int], None] = lambda n: None

    def feed(self, parsed: Iterable[ParsedJournal]) -> Iterator[JournalColumns]:
        """The columns of each parsed batch, for verification; each is taken (compared,
        written) while its signatures are checked."""
        for p in parsed:
            self.malformed = p.error
            yield p.columns
            self._take(p.columns)

    def _take(self, cols: JournalColumns) -> None:
        base, m = self.read, len(cols)
        self.read += m
        if not m or not self.writing:
            return
        # The entries that continue the chain (the rest cannot verify).
        k = min(first_seq_problem(cols.seq, self.next_seq - 1),
                first_link_problem(cols.prev_hash, cols.hash, self.link))
        if k < m:
            self.writing = False
        if k:
            self.next_seq, self.link = cols.seq[k - 1] + 1, cols.hash[k - 1]
        # Those the store holds lead (the sequence is contiguous): each must be identical.
        held = max(0, min(k, self.head_seq - cols.seq[0] + 1)) if k else 0
        if held:
            stored = entry_hashes(self.store, cols.seq[0], cols.seq[held - 1])
            for i in range(held):
                if stored.get(cols.seq[i]) != cols.hash[i]:
                    line = cols.line[i] if cols.line else None
                    self.fork = (base + i, cols.seq[i], line, str(stored.get(cols.seq[i])),
                                 cols.hash[i])
                    self.present += i
                    self.writing = False
                    return
            self.present += held
        # The new ones, up to a hash the journal holds already (only an entry failing its
        # own checks can repeat one; the unique hash would abort the transaction).
        hashes = cols.hash[held:k]
        seen = stored_among(self.store, hashes)
        stop = len(hashes)
        mine: set[str] = set()
        for i, h in enumerate(hashes):
            if h in seen or h in mine:
                stop, self.writing = i, False
                break
            mine.add(h)
        if stop:
            new = _slice(cols, held, held + stop)
            self.keyed(self.head_seq + self.appended + stop)
            self.store.append("journal", _rows_from_columns(new, self.recorded_at),
                              key=["seq"])
            self.appended += stop

    def refuse_fork(self, good: int, source: str) -> None:
        """A :class:`ChainError` when an entry of the verified prefix (the first ``good``)
        differs from the stored entry at its seq."""
        if self.fork is None or self.fork[0] >= good:
            return
        _, s, line, stored, mine = self.fork
        raise ChainError(
            f"{source}, line {line}: fork: entry {s} differs from the stored entry "
            f"(stored hash {stored[:16]}…, file {mine[:16]}…); "
            "a journal that forks the stored chain is refused (nothing was imported)",
            seq=s, reason="fork", line=line,
        )

    def settle(self, report: VerifyReport, want: int) -> int:
        """Drop the entries written past the verified prefix (a kept prefix), register
        the keys the rest use; returns how many landed (``want``, the verified new ones)."""
        added = self.appended
        if added > want:
            last = max(self.head_seq, report.head_seq or 0)
            added -= drop_entries_after(self.store, last)
        if added != want:  # only a SHA-256 collision between verified entries could
            raise StoreError(f"journal import wrote {added} entries, expected {want}; "
                             "nothing was imported")
        if added:
            register_keys(self.store, {k: self.ring[k]
                                       for k in new_key_ids(self.store, self.head_seq)})
        return added


def _where(source: str, report: VerifyReport) -> str:
    line = f", line {report.first_bad_line}" if report.first_bad_line else ""
    return f"{source}{line}: seq {report.first_bad_seq}: {report.reason}: {report.message}"


def _rows_from_columns(cols: JournalColumns, recorded_at: datetime | None = None) -> pa.Table:
    n = len(cols)
    recorded_at = recorded_at or utcnow()
    return pa.table(
        {
            "seq": cols.seq, "kind": cols.kind, "ts": cols.ts, "key_id": cols.key_id,
            "payload": cols.payload, "prev_hash": cols.prev_hash, "hash": cols.hash,
            "signature": cols.signature, "recorded_at": [recorded_at] * n,
        },
        schema=JOURNAL_SCHEMA,
    )
