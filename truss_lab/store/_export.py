"""Leaving the lab: every table and view to Parquet or CSV, with a manifest.

``truss-lab export --out DIR`` writes one file per table and view
(``DIR/<name>.parquet`` or ``.csv``) and ``DIR/manifest.json``, which records,
per relation, its kind (table or view), row count, file, columns (name, DuckDB type,
nullable) and content hash. Read back with pandas as docs/reference/database.md says
(``dtype_backend="numpy_nullable"``), an integer column with nulls stays integer.

The content hash (``content_sha256``) is the SHA-256 of the relation's rows,
each rendered as text by DuckDB (``CAST(row AS VARCHAR)``, the struct of its
columns in order), sorted, and joined with a newline: it does not depend on row
order, and :func:`content_hash` computes the same value on the database and on
an exported Parquet file (``read_parquet``), so a reader can check that a file
holds exactly what the database held. A CSV file flattens lists, structs and
time zones into text, so its hash is recorded from the database only.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import duckdb

from ..core._clock import utcnow
from ..core._errors import BadInputError
from ..core._files import FORMULA_START, check_output_folder
from ..core._version import __version__
from ._store import SCHEMA_VERSION, Store, quote_ident

__all__ = ["EXPORT_FORMATS", "columns", "content_hash", "export_store", "relations"]

EXPORT_FORMATS = ("parquet", "csv")


def relations(store: Store) -> list[tuple[str, str]]:
    """``(name, kind)`` of every table and view of the store, kind ``table`` or ``view``,
    tables first, each group by name."""
    rows = store.con.execute(
        "SELECT table_name, CASE WHEN table_type = 'VIEW' THEN 'view' ELSE 'table' END "
        "FROM information_schema.tables WHERE table_schema = 'main' "
        "ORDER BY table_type = 'VIEW', table_name").fetchall()
    return [(str(n), str(k)) for n, k in rows]


def columns(store: Store, name: str) -> list[dict[str, Any]]:
    """``name``'s columns in order: each one's ``name``, DuckDB ``type`` and whether it may
    be ``null`` (what a reader of an exported file needs to type it back)."""
    rows = store.con.execute(
        "SELECT column_name, data_type, is_nullable = 'YES' FROM information_schema.columns "
        "WHERE table_schema = 'main' AND table_name = ? ORDER BY ordinal_position",
        [name]).fetchall()
    return [{"name": str(c), "type": str(t), "nullable": bool(n)} for c, t, n in rows]


def content_hash(store: Store, relation_sql: str) -> str:
    """SHA-256 (hex) of the rows of ``relation_sql`` (a quoted table or view name, or
    ``read_parquet('…')``), order-independent; see the module docstring."""
    row = store.con.execute(
        "SELECT sha256(coalesce(string_agg(r, chr(10) ORDER BY r), '')) "
        f"FROM (SELECT CAST(t AS VARCHAR) AS r FROM {relation_sql} t)").fetchall()
    return str(row[0][0])


def export_store(store: Store, out: str | os.PathLike[str], *,
                 format: str = "parquet") -> dict[str, Any]:
    """Write every table and view of ``store`` to ``out`` (``parquet`` or ``csv``) and
    ``out/manifest.json``; return the manifest.

    ``out`` is a new folder (or an empty one): a folder that already holds an export
    or other files, a file and a symbolic link are refused (an export is written
    whole, never over or among other files). The files are written into a hidden
    folder next to ``out``, renamed to ``out`` once all of them are written: a
    failure (a full disk) leaves nothing behind and is one line."""
    if format not in EXPORT_FORMATS:
        raise BadInputError(f"format must be one of {', '.join(EXPORT_FORMATS)}, got "
                            f"{format!r}", field="format")
    dest = Path(out)
    _check_new_folder(dest)
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".export",
                                     dir=dest.parent))
    except OSError as exc:
        raise BadInputError(f"cannot create the export folder: {exc.strerror}",
                            source=str(dest)) from None
    try:
        manifest = _write_export(store, work, format)
        umask = os.umask(0)  # the mode a plain mkdir would give (mkdtemp's is 0700)
        os.umask(umask)
        work.chmod(0o777 & ~umask)
        os.replace(work, dest)  # onto an absent or empty folder: the export appears whole
    except (OSError, duckdb.Error) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise BadInputError(f"cannot write the export: {why}; nothing written",
                            source=str(dest)) from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return manifest


def _csv_cells(store: Store, name: str) -> str:
    """The select list of ``name`` for a CSV file: a text cell a spreadsheet would run as a
    formula (it starts with one of :data:`~truss_lab.core._files.FORMULA_START`) gets a
    leading ``'`` (OWASP's rule for CSV injection); other columns as they are."""
    starts = "".join(f"\\x{ord(c):02x}" for c in FORMULA_START)
    out = []
    for col in columns(store, name):
        q = quote_ident(col["name"])
        out.append(f"CASE WHEN regexp_matches({q}, '^[{starts}]') THEN chr(39) || {q} "
                   f"ELSE {q} END AS {q}" if col["type"] == "VARCHAR" else q)
    return ", ".join(out)


def _check_new_folder(dest: Path) -> None:
    check_output_folder(dest, what="a new folder")
    if not dest.exists():
        return
    if (dest / "manifest.json").exists():
        raise BadInputError("already holds an export (manifest.json); choose a new folder",
                            source=str(dest))
    if any(dest.iterdir()):
        raise BadInputError("holds other files; an export goes into a new (or empty) folder",
                            source=str(dest))


def _write_export(store: Store, dest: Path, format: str) -> dict[str, Any]:
    entries = []
    for name, kind in relations(store):
        path = dest / f"{name}.{format}"
        option = "FORMAT parquet" if format == "parquet" else "FORMAT csv, HEADER true"
        # COPY takes no bound parameters: the path is a literal, quotes doubled.
        literal = "'" + str(path).replace("'", "''") + "'"
        select = "*" if format == "parquet" else _csv_cells(store, name)
        store.con.execute(f"COPY (SELECT {select} FROM {quote_ident(name)}) TO {literal} "
                          f"({option})")
        n = store.con.execute(f"SELECT count(*) FROM {quote_ident(name)}").fetchall()[0][0]
        entries.append({"name": name, "kind": kind, "file": path.name, "rows": int(n),
                        "columns": columns(store, name),
                        "content_sha256": content_hash(store, quote_ident(name))})
    manifest = {
        "format": format, "exported_at": utcnow().isoformat(), "truss_lab": __version__,
        "schema_version": SCHEMA_VERSION,
        "content_sha256": "SHA-256 of the rows rendered by DuckDB as CAST(row AS VARCHAR), "
                          "sorted, joined by newlines (truss_lab.store._export.content_hash)",
        "relations": entries,
    }
    (dest / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n",
                                        encoding="utf-8")
    return manifest
