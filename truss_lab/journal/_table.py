"""Reading the stored journal table: the one read path for journal rows.

Every module that needs journal rows calls a function here instead of writing
its own SQL: the head, entries by ``seq`` as :class:`JournalColumns`, payloads
by ``seq`` or by hash, the refs of stored verdicts, and the verdict-ref check
(:func:`check_verdict_refs`, :func:`verified_verdict`) that extraction runs
before it reads a verdict. Writing (append, import) is
:mod:`truss_lab.journal._ledger`'s. The audit's checks
(:mod:`truss_lab.govern._audit`) join the journal with the memory tables in
SQL: those are set queries over several tables and stay there.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Sequence
from typing import Any

import duckdb
import pandas as pd

from ..core._canonical import loads_strict
from ..core._errors import BadInputError, ChainError
from ..core._models import LedgerRef
from ..store._store import Store, quote_ident
from ._spec import ENTRY_FIELDS, VERDICT_KIND, JournalColumns
from ._verify import verify_columns

__all__ = [
    "JOURNAL_TABLES",
    "check_verdict_refs",
    "drop_entries_after",
    "entry_hashes",
    "entry_payloads",
    "get_entry",
    "journal_batches",
    "journal_columns",
    "journal_head",
    "new_key_ids",
    "payload_by_hash",
    "signers_text",
    "stored_among",
    "stored_keyring",
    "verdict_payloads",
    "verdict_refs",
    "verdict_signers",
    "verified_verdict",
]

_SELECT = "SELECT seq, kind, ts, key_id, payload::VARCHAR AS payload, prev_hash, hash, signature"


JOURNAL_TABLES = ("journal", "lab_journal")
"""The verdict journal (upstream's) and the lab's own: docs/explanation/two-chains.md."""


def _table(name: str) -> str:
    if name not in JOURNAL_TABLES:
        raise ValueError(f"not a journal table: {name!r}")
    return quote_ident(name)


def stored_keyring(store: Store) -> dict[str, bytes]:
    """The public keys in signing_keys."""
    rows = store.con.execute("SELECT key_id, public_key FROM signing_keys").fetchall()
    return {k: base64.b64decode(v) for k, v in rows}


def verdict_signers(store: Store) -> dict[str, int]:
    """Key id -> how many stored ``contract_verdict`` entries it signed, by key id: whose
    verdicts the journal holds (a researcher's own key beside an operator's)."""
    rows = store.con.execute(
        "SELECT key_id, count(*) FROM journal WHERE kind = ? GROUP BY key_id ORDER BY key_id",
        [VERDICT_KIND]).fetchall()
    return {str(k): int(n) for k, n in rows}


def signers_text(signers: dict[str, int]) -> str:
    """``verdicts signed by a (3), b (2)`` (or ``no verdicts``), for one line of output."""
    if not signers:
        return "no verdicts"
    return "verdicts signed by " + ", ".join(f"{k} ({n})" for k, n in signers.items())


def journal_head(store: Store, *, table: str = "journal") -> LedgerRef | None:
    """The last entry's ref, or ``None`` for an empty journal (``table``: one of
    :data:`JOURNAL_TABLES`)."""
    rows = store.con.execute(
        f"SELECT seq, hash FROM {_table(table)} ORDER BY seq DESC LIMIT 1").fetchall()
    return LedgerRef(seq=int(rows[0][0]), hash=rows[0][1]) if rows else None


def journal_columns(
    store: Store, *, after_seq: int = 0, upto_seq: int | None = None, table: str = "journal"
) -> JournalColumns:
    """Stored entries with ``after_seq < seq <= upto_seq`` (no upper bound when None),
    in ``seq`` order, as verification columns (``table``: one of :data:`JOURNAL_TABLES`)."""
    sql = f"{_SELECT} FROM {_table(table)} WHERE seq > ?"
    params: list[Any] = [after_seq]
    if upto_seq is not None:
        sql += " AND seq <= ?"
        params.append(upto_seq)
    t = store.con.sql(sql + " ORDER BY seq", params=params).to_arrow_table()
    return JournalColumns(**{c: t.column(c).to_pylist() for c in ENTRY_FIELDS})


def journal_batches(
    store: Store, *, upto_seq: int | None = None, table: str = "journal",
    rows: int = 16_384,
) -> Iterator[JournalColumns]:
    """:func:`journal_columns` in batches of at most ``rows`` entries, each read when it is
    consumed by its own query, ``a < seq <= a + rows``: a stored journal's seq is dense
    from 1, so a batch is that many entries and DuckDB reads only the row groups that
    hold them (one ``ORDER BY seq`` over the table would sort it whole before the first
    batch, holding it all). Past a gap in seq (a range with no entry) the next batch
    starts at the next stored seq, so any seq order reads in ``rows``-wide ranges."""
    top = store.con.execute(f"SELECT max(seq) FROM {_table(table)}").fetchall()[0][0]
    last = top if upto_seq is None or top is None else min(top, upto_seq)
    a = 0
    while last is not None and a < last:
        b = min(a + rows, last)
        t = store.con.sql(f"{_SELECT} FROM {_table(table)} WHERE seq > ? AND seq <= ? "
                          "ORDER BY seq",
                          params=[a, b]).to_arrow_table()
        if t.num_rows:
            yield JournalColumns(**{c: t.column(c).to_pylist() for c in ENTRY_FIELDS})
            a = b
        else:  # a gap: go on from the next stored entry
            nxt = store.con.execute(f"SELECT min(seq) FROM {_table(table)} WHERE seq > ?",
                                    [b]).fetchall()[0][0]
            if nxt is None:
                return
            a = max(b, int(nxt) - 1)


def get_entry(store: Store, seq: int, *, table: str = "journal") -> dict[str, Any] | None:
    """One entry as a journal-format dict (payload parsed).

    Parameters
    ----------
    store : Store
        The database.
    seq : int
        The entry's sequence number.
    table : {"journal", "lab_journal"}, default "journal"
        The verdict journal or the lab's own.

    Returns
    -------
    dict or None
        The entry, or None when there is none at ``seq``.
    """
    rows = store.con.execute(f"{_SELECT} FROM {_table(table)} WHERE seq = ?", [seq]).fetchall()
    if not rows:
        return None
    entry = dict(zip(ENTRY_FIELDS, rows[0], strict=True))
    entry["payload"] = loads_strict(entry["payload"])
    return entry


def entry_hashes(store: Store, first_seq: int, last_seq: int) -> dict[int, str]:
    """``seq`` → ``hash`` of the stored entries with ``first_seq <= seq <= last_seq``."""
    return {int(s): h for s, h in store.con.execute(
        "SELECT seq, hash FROM journal WHERE seq BETWEEN ? AND ?", [first_seq, last_seq],
    ).fetchall()}  # fmt: skip


def stored_among(store: Store, hashes: Sequence[str]) -> set[str]:
    """Which of ``hashes`` the journal holds (uncommitted rows of this connection's
    transaction included)."""
    if not len(hashes):
        return set()
    import pyarrow as pa  # here, not at the top: light commands start without it

    store.con.register("_hashes_asked", pa.table({"hash": pa.array(list(hashes), pa.string())}))
    try:
        return {h for (h,) in store.con.execute(
            "SELECT j.hash FROM journal j SEMI JOIN _hashes_asked a ON j.hash = a.hash"
        ).fetchall()}  # fmt: skip
    finally:
        store.con.unregister("_hashes_asked")


def drop_entries_after(store: Store, seq: int) -> int:
    """Delete the journal's entries after ``seq``: what an import wrote, uncommitted,
    beyond the prefix that verified (inside its transaction only). Returns how many."""
    return int(store.con.execute("DELETE FROM journal WHERE seq > ?", [seq]).fetchall()[0][0])


def new_key_ids(store: Store, after_seq: int) -> set[str]:
    """The ``key_id`` of every journal entry after ``after_seq``."""
    return {k for (k,) in store.con.execute(
        "SELECT DISTINCT key_id FROM journal WHERE seq > ?", [after_seq]).fetchall()}


def entry_payloads(store: Store, seqs: Sequence[int]) -> list[tuple[int, str, str]]:
    """``(seq, hash, canonical payload text)`` of the stored entries at ``seqs``
    (sorted ascending), in ``seq`` order; a ``seq`` not stored is left out."""
    if not len(seqs):
        return []
    # One range scan: batches are runs of consecutive verdicts, so the range is
    # what is wanted, and a sparse batch filters it here.
    rows = store.con.execute(
        "SELECT seq, hash, payload::VARCHAR FROM journal WHERE seq BETWEEN ? AND ? ORDER BY seq",
        [int(seqs[0]), int(seqs[-1])],
    ).fetchall()
    if len(rows) != len(seqs):
        want = {int(s) for s in seqs}
        rows = [r for r in rows if r[0] in want]
    return rows


def payload_by_hash(store: Store, entry_hash: str) -> dict[str, Any] | None:
    """The parsed payload of the entry whose ``hash`` is ``entry_hash``, or ``None``."""
    rows = store.con.execute(
        "SELECT payload::VARCHAR FROM journal WHERE hash = ?", [entry_hash]).fetchall()
    return json.loads(rows[0][0]) if rows else None


def verdict_refs(store: Store, where: str | None = None,
                 params: Sequence[Any] | None = None) -> pd.DataFrame:
    """``seq`` and ``hash`` of the stored ``contract_verdict`` entries, in ``seq`` order.

    ``where`` is an optional SQL condition over the journal table's columns
    (with ``?`` ``params``), e.g. ``"seq BETWEEN ? AND ?"``; a bad one raises
    :class:`BadInputError` naming it. It runs where it can read nothing but
    those rows: no file (``read_text``), no other table, no Python variable.
    """
    sql = "SELECT seq, hash FROM journal WHERE kind = ?"
    if where is None:
        return store.con.sql(sql + " ORDER BY seq", params=[VERDICT_KIND]).df()
    # ``where`` is SQL from the user (``--verdicts``): it runs in a sandbox, an
    # in-memory DuckDB that sees only the verdicts' journal rows and has
    # external access off (no read_text, read_csv, ATTACH, COPY: the setting
    # cannot be turned back on) and no Python replacement scans (no variable
    # of this process is a table there).
    rows = store.con.sql(
        "SELECT seq, kind, ts, key_id, payload::VARCHAR AS payload, prev_hash, hash, "
        "signature, recorded_at FROM journal WHERE kind = $kind ORDER BY seq",
        params={"kind": VERDICT_KIND},
    ).to_arrow_table()
    sandbox = duckdb.connect(":memory:", config={"enable_external_access": False,
                                                 "python_enable_replacements": False})
    try:
        sandbox.register("journal", rows)
        return sandbox.sql(
            f"{sql} AND ({where}) ORDER BY seq", params=[VERDICT_KIND, *(params or [])]
        ).df()
    except Exception as exc:  # duckdb raises many error classes for a bad filter
        raise BadInputError(
            f"bad verdict filter {where!r}: {str(exc).splitlines()[0]}", field="verdicts",
        ) from None
    finally:
        sandbox.close()


def verdict_payloads(store: Store) -> pd.DataFrame:
    """Every stored verdict: ``verdict_seq``, ``verdict_hash`` and its ``payload`` (JSON text).

    The ``verdicts`` argument of :func:`truss_lab.score._junk.junk_flags`.

    Parameters
    ----------
    store : Store
        The database.

    Returns
    -------
    pandas.DataFrame
        One row per ``contract_verdict`` entry of the verdict journal, in ``seq``
        order: ``verdict_seq``, ``verdict_hash``, ``payload`` (canonical JSON text).

    See Also
    --------
    junk_flags : takes this frame as its ``verdicts``.

    Examples
    --------
    >>> import json
    >>> verdicts = tl.verdict_payloads(store)
    >>> len(verdicts), sorted(json.loads(verdicts["payload"][0]))[:3]
    (1200, ['checks', 'contract_id', 'goal'])
    """
    return store.sql(
        "SELECT seq AS verdict_seq, hash AS verdict_hash, payload::VARCHAR AS payload "
        "FROM journal WHERE kind = ? ORDER BY seq", [VERDICT_KIND]
    ).df()


def check_verdict_refs(store: Store, seqs: Sequence[int], hashes: Sequence[str], *,
                       source: str | None = None) -> None:
    """Check that every ref (``seqs[i]``, ``hashes[i]``) names a stored ``contract_verdict``.

    The first failing ref, by ``seq``, raises: :class:`ChainError` ``missing``
    when no entry has that ``seq``, ``bad_hash`` when the stored entry has
    another hash; :class:`BadInputError` when it is another kind. Signatures
    are not checked here (:func:`verified_verdict` does, for one verdict).
    """
    if not len(seqs):
        return
    rows = store.con.execute(
        "SELECT r.seq, r.hash, j.hash, j.kind "
        "FROM (SELECT unnest(?::BIGINT[]) AS seq, unnest(?::VARCHAR[]) AS hash) r "
        "LEFT JOIN journal j ON j.seq = r.seq "
        "WHERE j.hash IS DISTINCT FROM r.hash OR j.kind <> ? ORDER BY r.seq LIMIT 1",
        [[int(s) for s in seqs], [str(h) for h in hashes], VERDICT_KIND],
    ).fetchall()
    if not rows:
        return
    seq, want, have, kind = rows[0]
    where = f"{source}: " if source else ""
    if have is None:
        raise ChainError(
            f"{where}verdict seq {seq} is not in the journal; extraction runs only after a "
            "verdict's journal entry has landed", seq=int(seq), reason="missing")
    if have != want:
        raise ChainError(
            f"{where}journal entry {seq} has hash {have[:16]}…, expected {want[:16]}… "
            "(the ref's)", seq=int(seq), reason="bad_hash")
    raise BadInputError(f"journal entry {seq} is a {kind!r}, expected {VERDICT_KIND!r}",
                        source=source, field="kind")


def verified_verdict(store: Store, ref: LedgerRef) -> dict[str, Any]:
    """The payload of verdict ``ref`` after checking it is in the journal and verifies.

    Checks: :func:`check_verdict_refs` (the entry at ``ref.seq`` exists, has
    ``ref.hash`` and is a ``contract_verdict``), then its hash, signature and
    link to its predecessor (:func:`verify_columns`).
    """
    check_verdict_refs(store, [ref.seq], [ref.hash])
    cols = journal_columns(store, after_seq=ref.seq - 2, upto_seq=ref.seq)
    # the verdict alone, linked to the entry before it (genesis when there is none)
    entry = JournalColumns(*(getattr(cols, c)[-1:] for c in ENTRY_FIELDS))
    prev = LedgerRef(seq=cols.seq[0], hash=cols.hash[0]) if len(cols) == 2 else None
    report = verify_columns(entry, stored_keyring(store), prev=prev, workers=1)
    if not report.ok:
        raise ChainError(
            f"verdict seq {ref.seq} does not verify ({report.reason}: {report.message})",
            seq=ref.seq, reason=report.reason or "malformed",
        )
    return json.loads(entry.payload[0])
