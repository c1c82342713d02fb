"""The DuckDB store: schema, migrations, transactions and bulk appends.

One process writes a database file at a time (DuckDB's file lock); a second
one gets :class:`StoreLockedError` naming the holder. Every write is one
explicit transaction that is rolled back on any error: DuckDB silently rolls
back a COMMIT that follows a failed statement, so we never issue one.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from ..core._clock import utcnow
from ..core._errors import StoreError, StoreLockedError
from ..core._secrets import redact_arrow
from ._claims import TableAppend, backfill_claims, needs_table_claim
from ._snapshot import Snapshot, take_snapshot
from ._sql import has_table, quote_ident

if TYPE_CHECKING:  # only named in annotations: `truss-lab runs` never loads pandas
    import pandas as pd
    import pyarrow as pa

__all__ = ["FREE_TEXT_COLUMNS", "SCHEMA_VERSION", "Store", "open_store", "quote_ident"]

# Columns that hold a value from outside (a server's reply, an exception, a
# configuration): every append passes them through the one redaction point.
# A server fills a completion's text AND its model name, and a lesson's evidence
# list as well as its text: an echo of the key in any of them is masked.
FREE_TEXT_COLUMNS: dict[str, tuple[str, ...]] = {
    "verdict_errors": ("message",),
    "extraction_runs": ("config", "error"),
    "completions": ("text", "model"),
    "candidates": ("text", "evidence"),
    "memory_entries": ("text", "evidence"),
}

_MIGRATION_RE = re.compile(r"^-- migration: (\d{3})_(\w+)\s*$", re.M)


def _migrations() -> list[tuple[int, str, str]]:
    text = resources.files("truss_lab.store").joinpath("schema.sql").read_text(encoding="utf-8")
    marks = list(_MIGRATION_RE.finditer(text))
    out = []
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        out.append((int(m.group(1)), m.group(2), text[m.end() : end]))
    return out


SCHEMA_VERSION = max(v for v, _, _ in _migrations())


def _require_file(path: str) -> None:
    """The one "no such database" error, for every face that opens a store."""
    if path != ":memory:" and not Path(path).exists():
        raise StoreError(f"{path}: no such database (run `truss-lab init` first)")


# A database path is a DuckDB file or nothing: DuckDB hands a path that ends in
# a data format's extension to its replacement scans and opens an in-memory
# database instead, so `--db keys.json` "succeeded" and saved nothing.
_NOT_A_DATABASE = frozenset({
    ".json", ".jsonl", ".ndjson", ".csv", ".tsv", ".txt", ".parquet", ".arrow", ".feather",
    ".xlsx", ".xls", ".gz", ".zst", ".zip", ".md", ".py", ".ipynb", ".yaml", ".yml", ".toml",
    ".sqlite", ".sqlite3", ".key", ".pem", ".html", ".png",
})
_DUCKDB_MAGIC = b"DUCK"  # bytes 8..12 of every DuckDB database file

# DuckDB reads a path that starts with two or more letters, digits or "_" and a
# colon as "extension:rest" (md:, sqlite:, postgres:) or, with "://", as a URL
# (http, s3, gcs, az, hf): it then downloads and loads that extension, a network
# call before any error. A store is a local file: refuse these before DuckDB
# sees them ("./name:x.duckdb" still names a local file whose name has a colon).
_REMOTE_PREFIX = re.compile(r"^([A-Za-z0-9_]{2,}):")


def _check_database_path(path: str) -> None:
    """Refuse a path whose extension or first bytes say it is not a DuckDB database."""
    if path == ":memory:":
        return
    remote = _REMOTE_PREFIX.match(path)
    if remote:
        url = path[remote.end():].startswith("//")
        raise StoreError(
            f"{path}: a {remote.group(1)}:{'//' if url else ''} address, not a local file; "
            "truss_lab opens local DuckDB database files only"
            + ("" if url else f" (a local file whose name has a colon: ./{path})")
        )
    p = Path(path)
    if p.suffix.lower() in _NOT_A_DATABASE:
        raise StoreError(
            f"{path}: a {p.suffix} file is not a database; give a DuckDB file such as "
            "truss_lab.duckdb"
        )
    if p.is_dir():
        raise StoreError(f"{path}: is a folder, expected a DuckDB database file")
    try:
        with p.open("rb") as f:
            head = f.read(12)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StoreError(f"{path}: cannot read: {exc.strerror}") from None
    if head and head[8:12] != _DUCKDB_MAGIC:
        raise StoreError(f"{path}: not a DuckDB database (its first bytes say otherwise); "
                         "nothing was written")


def _lock_error(path: str, exc: Exception, read_only: bool = False) -> StoreError:
    msg = str(exc)
    m = re.search(r"Conflicting lock is held in (.+?) \(PID (\d+)\)", msg)
    if m and read_only:
        # A reader is refused too: DuckDB lets no other process open a file being written.
        err: StoreError = StoreLockedError(
            f"{path} is open for writing in another process (PID {m.group(2)}, "
            f"{m.group(1)}), and DuckDB lets no other process read it meanwhile: close the "
            "store there (a notebook: store.close()), or open it there read-only "
            "(tl.Store(path, read_only=True)) so that readers can run side by side"
        )
        err.holder = f"PID {m.group(2)}"  # type: ignore[attr-defined]
        return err
    if m:
        return StoreLockedError(
            f"{path} is locked by another process (PID {m.group(2)}, {m.group(1)}); "
            "DuckDB allows one writer per file: close that process, or work on a copy"
        )
    return StoreError(f"cannot open {path}: {msg}")


SPILL_LIMIT = "128MB"
"""DuckDB's memory while a streamed ingest writes (:meth:`Store.memory_bounded`): the
staged and appended rows beyond it spill to disk. Measured on ``ingest completions`` of
200k simulated verdicts (600k completions): peak RSS 400 MiB at this limit, 1,043 MiB
unlimited (docs/explanation/performance.md)."""

INDEX_ROW_BYTES = 256
"""DuckDB's memory, beyond :data:`SPILL_LIMIT`, per row of a table with keys (the
journal: its ``seq`` key and unique ``hash``) that a bounded writer holds
(:meth:`Store.memory_bounded`): a key's index does not spill, so a bound that did not
grow with those rows would fail the write. Measured: a million journal-like rows
written in one transaction fill 122 MiB of the two indexes (a fixed 128 MB bound fails
at 966k rows); twice that leaves room."""

_UNITS = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
          "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}


def _memory_bytes(limit: str) -> int:
    """A DuckDB memory size (``"128MB"``, ``"1.5 GiB"``) in bytes."""
    m = re.fullmatch(r"\s*([0-9.]+)\s*([A-Za-z]+)\s*", limit)
    if not m or m.group(2).upper() not in _UNITS:
        raise StoreError(f"not a memory size: {limit!r} (e.g. 128MB, 1GiB)")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


class Store:
    """A truss_lab database: an embedded DuckDB file (or ``":memory:"``).

    Opening a file for writing creates it and applies every migration it lacks; a
    second process that wants to write gets a one-line error naming the process that
    holds the lock. Every write is one explicit transaction (:meth:`transaction`),
    rolled back on any error. Use it as a context manager, or :meth:`close` it.

    Parameters
    ----------
    path : str or pathlib.Path, default ":memory:"
        The database file, or ``":memory:"`` for a scratch database.
    read_only : bool, default False
        Open an existing file for reading only; several processes may then read at once.

    Raises
    ------
    StoreError
        The file cannot be opened or migrated, or (read-only) has an older schema.
    truss_lab.core.StoreLockedError
        Another process holds the file open for writing.

    See Also
    --------
    truss_lab.store.open_store : Opens a read-only snapshot while another process writes.
    load_sample : A database holding the bundled sample.

    Examples
    --------
    >>> with tl.Store("lab.duckdb") as lab:          # creates and migrates it
    ...     lab.sql("SELECT count(*) FROM journal").fetchall()
    [(0,)]
    >>> store.sql("SELECT count(*) FROM candidates WHERE run_id = ?", ["good"]).fetchall()
    [(1134,)]
    """

    def __init__(self, path: str | Path = ":memory:", *, read_only: bool = False) -> None:
        self.path = str(path)
        self.read_only = read_only
        _check_database_path(self.path)
        if read_only:
            _require_file(self.path)
        try:
            self.con = duckdb.connect(self.path, read_only=read_only)
        except duckdb.IOException as exc:
            raise _lock_error(self.path, exc, read_only) from None
        except duckdb.Error as exc:
            raise StoreError(f"cannot open {self.path}: {exc}") from None
        #: Set by :func:`open_store` when this store reads a copy of a file another
        #: process is writing (:mod:`~truss_lab.store._snapshot`); removed on close.
        self.snapshot: Snapshot | None = None
        self._session()
        if not read_only:
            self._migrate()
        elif self.schema_version() != SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} has schema version {self.schema_version()}, this truss_lab "
                f"expects {SCHEMA_VERSION}: open it once for writing to migrate"
            )

    # -- lifecycle -----------------------------------------------------------

    def close(self) -> None:
        """Close the connection (a reopen of the same file then starts clean); a
        snapshot this store read is deleted."""
        self.con.close()
        if self.snapshot is not None:
            self.snapshot.remove()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({self.path!r}, schema_version={SCHEMA_VERSION})"

    def cursor(self) -> Store:
        """A second handle on the same database, with its own DuckDB connection (a
        cursor of this one) and so its own transaction: it can write, uncommitted,
        while this store streams a query. Close it before this store."""
        other = copy.copy(self)
        other.snapshot = None  # this store's to remove
        other.con = self.con.cursor()
        other._session()
        return other

    def _session(self) -> None:
        # Per connection: no transaction open yet, timestamps read and written in UTC.
        self._depth = 0
        self.con.execute("SET TimeZone = 'UTC'")

    def schema_version(self) -> int:
        """The highest migration applied (0 for an empty database)."""
        if not has_table(self.con, "schema_version"):
            return 0
        row = self.con.execute("SELECT max(version) FROM schema_version").fetchall()[0]
        return int(row[0]) if row[0] is not None else 0

    def _migrate(self) -> None:
        # Every migration not yet recorded runs, in order: not only those above
        # the highest applied, so one that landed after a later number (parallel
        # branches) still runs on a database that already has the later one.
        applied: set[int] = set()
        if self.schema_version():
            applied = {int(r[0]) for r in self.con.execute(
                "SELECT version FROM schema_version").fetchall()}
        for version, name, sql in _migrations():
            if version in applied:
                continue
            with self.transaction():
                self.con.execute(sql)
                self.con.execute(
                    "INSERT INTO schema_version VALUES (?, ?, ?)", [version, name, utcnow()]
                )
                if name == "content_claims":
                    # What the database holds when claims begin is claimed as it is,
                    # so from now on a missing claim is an edit too.
                    backfill_claims(self.con)

    # -- transactions and bulk writes ---------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """One explicit transaction; nested calls join the outer one.

        Any exception rolls back and re-raises: never a partial write. A read-only
        store refuses it (in :meth:`begin`: no transaction is ever open on one).

        Yields
        ------
        duckdb.DuckDBPyConnection
            The connection, inside the transaction.
        """
        if self._depth:
            self._depth += 1
            try:
                yield self.con
            finally:
                self._depth -= 1
            return
        self.begin()
        try:
            yield self.con
        except BaseException:
            self.rollback()
            raise
        self.commit()

    @contextmanager
    def memory_bounded(self, limit: str = SPILL_LIMIT) -> Iterator[Callable[[int], None]]:
        """DuckDB's memory limited to ``limit`` while the block runs (then set back), so
        that what DuckDB holds beyond it, such as an open transaction's staged and
        appended rows, spills to its temporary folder (the database's ``.tmp``) instead
        of growing with the data. A database in memory has nowhere to spill: left as it is.

        Parameters
        ----------
        limit : str, default :data:`SPILL_LIMIT`
            A DuckDB memory size (``"128MB"``).

        Yields
        ------
        callable
            ``keyed(n)``: the bound becomes ``limit`` plus :data:`INDEX_ROW_BYTES` per
            row of ``n``, the rows of a table with keys the block holds (a key's index
            stays in memory); a writer of such rows calls it as they grow.
        """
        if self.path == ":memory:":
            yield lambda n: None
            return
        base = _memory_bytes(limit)
        before = self.con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
        self.con.execute("SET memory_limit = ?", [limit])

        def keyed(n: int) -> None:
            self.con.execute("SET memory_limit = ?", [f"{base + INDEX_ROW_BYTES * n}B"])

        try:
            yield keyed
        finally:
            self.con.execute("SET memory_limit = ?", [before])

    def begin(self) -> None:
        """Open a transaction that stays open until :meth:`commit` or :meth:`rollback`
        (what :meth:`transaction` does around a block, for a writer whose commit is
        decided later, e.g. on a :meth:`cursor`); :meth:`transaction` blocks in
        between join it."""
        if self.read_only:
            raise StoreError(f"{self.path} is open read-only")
        if self._depth:
            raise StoreError("a transaction is already open on this connection")
        self.con.execute("BEGIN TRANSACTION")
        self._depth = 1

    def commit(self) -> None:
        """Commit the transaction :meth:`begin` opened; a failed commit raises
        :class:`StoreError` and writes nothing."""
        self._depth = 0
        try:
            self.con.execute("COMMIT")
        except duckdb.Error as exc:
            raise StoreError(f"commit failed, nothing was written: {exc}") from None

    def rollback(self) -> None:
        """Drop everything written since :meth:`begin`."""
        self._depth = 0
        self.con.execute("ROLLBACK")

    def append(
        self,
        table: str,
        rows: pd.DataFrame | pa.Table,
        *,
        key: Sequence[str],
    ) -> int:
        """Append rows that are not already present (by ``key``); return how many landed.

        Duplicates inside ``rows`` are dropped when identical and refused when
        they conflict (DuckDB would silently keep the first). Runs inside the
        current transaction, or its own.

        Parameters
        ----------
        table : str
            The table to append to.
        rows : pandas.DataFrame or pyarrow.Table
            Rows with a subset of the table's columns.
        key : sequence of str
            The columns that identify a row: a row whose key is stored is skipped.

        Returns
        -------
        int
            The rows that landed.

        Raises
        ------
        StoreError
            Two different rows of ``rows`` share a key.
        """
        import pyarrow as pa  # here, not at the top: light commands (`runs`) start without it

        tbl = rows if isinstance(rows, pa.Table) else pa.Table.from_pandas(
            rows, preserve_index=False
        )
        if tbl.num_rows == 0:
            return 0
        tbl = _redacted(table, tbl)
        cols = tbl.column_names
        view = f"_append_{table}"
        # The rows are read through a relation, not register(): DuckDB holds a registered
        # object until the transaction ends, so a writer appending batch after batch in
        # one transaction (a streamed ingest, an extraction) would hold every batch.
        rel = self.con.from_arrow(tbl)
        name, qtable = quote_ident(view), quote_ident(table)
        qcols = ", ".join(quote_ident(c) for c in cols)
        keys = ", ".join(quote_ident(k) for k in key)
        on = " AND ".join(f"t.{quote_ident(k)} IS NOT DISTINCT FROM n.{quote_ident(k)}"
                          for k in key)
        # Duplicate keys inside one batch: DuckDB would keep one silently.
        # The cheap key-only check usually finds none; only then is the
        # full-content comparison (identical rows collapse) worth running.
        # One row (a judge's answered call) has no duplicate: no query for it.
        source = name
        dup = tbl.num_rows > 1 and rel.query(
            view, f"SELECT 1 FROM {name} GROUP BY {keys} HAVING count(*) > 1 LIMIT 1"
        ).fetchall()
        if dup:
            conflict = rel.query(
                view, f"SELECT {keys} FROM (SELECT DISTINCT {qcols} FROM {name}) "
                f"GROUP BY {keys} HAVING count(*) > 1 LIMIT 1"
            ).fetchall()
            if conflict:
                raise StoreError(
                    f"{table}: two different rows share the key "
                    f"{dict(zip(key, conflict[0], strict=True))}"
                )
            source = f"(SELECT DISTINCT {qcols} FROM {name})"
        with self.transaction():
            # An ingested table's claim moves with every append that adds to it, in the
            # same statement as the insert (store/_claims.py: the rows it returned).
            insert = (f"INSERT INTO {qtable} ({qcols}) SELECT {qcols} FROM {source} n "
                      f"WHERE NOT EXISTS (SELECT 1 FROM {qtable} t WHERE {on})")
            if needs_table_claim(table, cols,
                                 tbl.column("run_id") if "run_id" in cols else None):
                claim = TableAppend(self.con, table)
                added = claim.done(rel.query(view, claim.insert(insert)).fetchall()[0])
            else:
                res = rel.query(view, insert).fetchall()
                added = int(res[0][0]) if res else 0
        return added

    def sql(self, query: str, params: Sequence[Any] | None = None) -> duckdb.DuckDBPyConnection:
        """Run SQL with ``?`` parameters; ``.df()``, ``.fetchall()`` read the result.

        Parameters
        ----------
        query : str
            One SQL statement; values go in ``params``, never into the text.
        params : sequence, optional
            The values of the statement's ``?`` placeholders.

        Returns
        -------
        duckdb.DuckDBPyConnection
            The executed statement.
        """
        return self.con.execute(query, list(params or []))

    def table(self, name: str) -> pd.DataFrame:
        """A whole table as a DataFrame.

        Parameters
        ----------
        name : str
            A table or view of the database.

        Returns
        -------
        pandas.DataFrame
            Every row.
        """
        return self.con.execute(f"SELECT * FROM {quote_ident(name)}").df()

    def counts(self) -> dict[str, int]:
        """Row count of every table (used to prove a failed write changed nothing)."""
        names = [
            r[0]
            for r in self.con.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = 'main' AND table_type = 'BASE TABLE' "
                "ORDER BY table_name"
            ).fetchall()
        ]
        return {
            n: int(self.con.execute(f"SELECT count(*) FROM {quote_ident(n)}").fetchall()[0][0])
            for n in names
        }

    def checkpoint(self) -> None:
        """Fold the WAL into the file (after large batches)."""
        if not self.read_only:
            self.con.execute("CHECKPOINT")


def _is_text(t: pa.DataType) -> bool:
    """A string column, or a list of strings (``evidence``)."""
    import pyarrow as pa  # see Store.append: only Arrow writers need it

    if pa.types.is_list(t) or pa.types.is_large_list(t):
        t = t.value_type
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _redacted(table: str, tbl: pa.Table) -> pa.Table:
    for col in FREE_TEXT_COLUMNS.get(table, ()):
        if col in tbl.column_names and _is_text(tbl.schema.field(col).type):
            i = tbl.column_names.index(col)
            tbl = tbl.set_column(i, tbl.schema.field(col), redact_arrow(tbl.column(col)))
    return tbl


def open_store(path: str | Path, *, read_only: bool = False, must_exist: bool = False,
               snapshot: bool = False) -> Store:
    """Open the database at ``path`` or raise :class:`StoreError` saying why.

    Every face (CLI, notebook helpers) opens stores here. A read-only open, or
    one with ``must_exist``, refuses a missing file instead of creating it;
    a locked file names the process holding it; an old schema is migrated on a
    writable open. ``snapshot=True`` (read-only opens only): when another
    process holds the file for writing, read a checked copy of it instead
    (:func:`~truss_lab.store._snapshot.take_snapshot`); the store's
    ``snapshot`` then says so (its ``note`` is one line for the user) and the
    copy is deleted when the store closes.

    Parameters
    ----------
    path : str or pathlib.Path
        The database file (``:memory:`` for a database in memory).
    read_only : bool, default False
        Open for reading only (the file must exist).
    must_exist : bool, default False
        Refuse a missing file instead of creating it.
    snapshot : bool, default False
        With ``read_only``: read a checked copy when another process writes the file.

    Returns
    -------
    Store
        The open store (close it, or use it in a ``with`` block).

    Raises
    ------
    StoreError
        A missing file (read-only or ``must_exist``), a remote address, a snapshot
        asked of a writable open.
    StoreLockedError
        Another process holds the file (naming it), without ``snapshot``.
    """
    _check_database_path(str(path))  # a remote address is refused before "no such file"
    if must_exist:
        _require_file(str(path))
    if snapshot and not read_only:
        raise StoreError("a snapshot is for reading: open it with read_only=True")
    try:
        return Store(path, read_only=read_only)
    except StoreLockedError as exc:
        if not snapshot:
            raise
        snap = take_snapshot(path, holder=getattr(exc, "holder", ""))
        try:
            store = Store(snap.copy, read_only=True)
        except BaseException:
            snap.remove()
            raise
        store.snapshot = snap
        return store


def copy_database(store: Store, dest: str | Path) -> None:
    """Copy every table of ``store`` into the new DuckDB file ``dest`` (DuckDB's
    ``COPY FROM DATABASE``, so it works for in-memory stores too)."""
    _check_database_path(str(dest))
    src = store.con.execute("SELECT current_database()").fetchall()[0][0]
    store.con.execute("ATTACH ? AS _truss_copy", [str(dest)])
    try:
        # The source database is named after its file: a name, quoted, never raw.
        store.con.execute(f"COPY FROM DATABASE {quote_ident(src)} TO _truss_copy")
    finally:
        store.con.execute("DETACH _truss_copy")
