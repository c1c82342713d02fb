"""Issue #15 item 4: no SQL built from strings a user controls.

Identifiers go through ``store._store.quote_ident``; values are bound with
``?``; the one piece of user SQL (``--verdicts``) runs in a sandbox.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.builders.cli import invoke
from truss_lab.core._errors import BadInputError
from truss_lab.faces._notebook import copy_store
from truss_lab.journal._crypto import SigningKey
from truss_lab.journal._ledger import append_entries
from truss_lab.journal._table import verdict_refs
from truss_lab.store._store import Store, quote_ident

PACKAGE = Path(__file__).resolve().parents[1] / "truss_lab"
SQL_CALLS = {"execute", "executemany", "sql", "query"}
IDENT_HELPERS = {"quote_ident", "q"}  # q = quote_ident, a local alias

# Every expression formatted into SQL, or SQL passed by name, per module. Each
# was read and is built from literals of our own SQL or from quote_ident: a new
# one fails this test until it is read and added.
REVIEWED: dict[str, set[str]] = {
    # s, y: quote_ident of the column names; src: a literal read_parquet(?) call
    "evaluate/_sweep.py": {"s", "src", "y"},
    # sql: AUDIT_SQL's literal statements, $names bound; _GOT, _COLS, _ON: joins over
    # the literal tuple REPARSED_COLUMNS
    "store/_audit_sql.py": {"sql", "_GOT", "_COLS", "_ON"},
    # cols, differ, on, keys, same_*: from quote_ident over our key and column names;
    # table, dropped: Staging's quote_ident of its own temporary tables; relation: a
    # literal name or Staging.kept(), a literal subquery over those; source: the same
    # for _label_problems (or quote_ident of one of _LABEL_RELATIONS)
    "store/_ingested.py": {"cols", "differ", "on", "keys", "same_tk", "same_cr", "table",
                           "dropped", "relation", "source", "self.kept()"},
    "journal/_ledger.py": {"LAB_JOURNAL", "VERDICT_HEAD"},  # module constants
    # where: --verdicts, run in the sandbox (no file access); _table: quote_ident of
    # one of JOURNAL_TABLES
    "journal/_table.py": {"_SELECT", "sql", "where", "_table(table)"},
    # where: a literal "run_id = ?" or "TRUE"; cols: a literal column list; verdicts: a
    # literal subquery around that where; also: literal conditions with that subquery
    "store/_labels.py": {"where", "cols", "verdicts", "also"},
    "store/_governed.py": {"sql", "cols", "order", "where"},
    # sql: the literal queries of _HASHED; where: "" or a literal IN (SELECT unnest(?))
    # t: a name from a literal tuple of table names; _CONFIG_HASHES a literal query
    # query: runs_query's literal SELECT around a literal where (as above);
    # RUN_ERRORS_SQL a literal query with a bound run_id
    # _recordings_sql: literal column lists (REPLAY_COLUMNS is a literal tuple) and a
    # literal where; run_id and some only choose its form, the values are bound; cond and
    # rows: literal conditions and that statement (recording_counts)
    "store/_runs.py": {"sql", "where", "t", "_CONFIG_HASHES", "query", "RUN_ERRORS_SQL",
                       "_recordings_sql('*', run_id, False)",
                       "_recordings_sql(', '.join(REPLAY_COLUMNS), run_id, True)",
                       "cond", "rows"},
    # the same literals, read as plain rows (t: delete_run's literal tuple of tables)
    "store/_run_list.py": {"t", "query"},
    # COPY takes no parameters: the path is a quoted literal; option one of two
    # literals; relation_sql a quote_ident result
    # select: "*" or _csv_cells, quote_ident of the columns in a literal CASE
    "store/_export.py": {"literal", "option", "relation_sql", "select"},
    # view: append's own name for the appended rows (a relation); insert: its INSERT of
    # those names (TableAppend.insert wraps it with literals of _claims)
    "store/_store.py": {"query", "sql", "keys", "name", "on", "qcols", "qtable", "source",
                        "view", "claim.insert(insert)", "insert"},
    # fields: quote_ident of the columns information_schema lists for one of our tables;
    # where, cond: a literal condition of TABLE_CLAIMS / _RUN_ROWS or "run_id = ?" (bound);
    # statement: Store.append's INSERT (reviewed there); digest: _digest_sql of the claim's
    # recorded columns (quote_ident) or a literal
    "store/_claims.py": {"fields", "where", "cond", "statement", "_digest_sql(columns)",
                         "digest"},
    # parts: Clause.sql's fixed templates (the operator looked up in the literal _SQL_OPS),
    # every path and value of a --where predicate bound as a parameter
    "store/_slices.py": {"' AND '.join(parts)"},
}


def _pieces(expr: ast.expr, out: set[str]) -> None:
    """What a SQL argument is built from, bar literals and quote_ident calls."""
    if isinstance(expr, ast.Constant):
        return
    if isinstance(expr, ast.JoinedStr):
        for v in expr.values:
            if isinstance(v, ast.FormattedValue):
                _pieces(v.value, out)
    elif isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        _pieces(expr.left, out)
        _pieces(expr.right, out)
    elif isinstance(expr, ast.IfExp) and all(
            isinstance(b, ast.Constant) for b in (expr.body, expr.orelse)):
        return  # a choice between two literals
    elif (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name)
          and expr.func.id in IDENT_HELPERS):
        return
    else:
        out.add(ast.unparse(expr))


def _sql_inputs(tree: ast.AST) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in SQL_CALLS and node.args):
            _pieces(node.args[0], out)
    return out


def test_no_sql_call_formats_an_unreviewed_value() -> None:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        inputs = _sql_inputs(ast.parse(path.read_text(encoding="utf-8")))
        if inputs:
            found[path.relative_to(PACKAGE).as_posix()] = inputs
    new = {f: sorted(v - REVIEWED.get(f, set())) for f, v in found.items()
           if v - REVIEWED.get(f, set())}
    assert not new, f"SQL built from values not reviewed (bind them, or quote_ident): {new}"


def test_quote_ident() -> None:
    assert quote_ident('a"b') == '"a""b"'
    name = 'x"; DROP TABLE labels; --'
    with Store(":memory:") as s:
        assert s.sql(f"SELECT 1 AS {quote_ident(name)}").df().columns[0] == name


def test_copy_store_of_a_hostile_file_name_drops_nothing(tmp_path: Path) -> None:
    # The reproduction: the database name comes from the file name.
    hostile = tmp_path / 'temp" TO _truss_copy; DROP TABLE labels; --.duckdb'
    with Store(hostile) as s:
        s.sql("INSERT INTO labels VALUES (?, 'x', 0, 1, '', 't', now())", ["ab" * 32])
        copy = copy_store(s, tmp_path / "c.duckdb")
        assert s.sql("SELECT count(*) FROM labels").fetchall() == [(1,)]
        assert copy.sql("SELECT count(*) FROM labels").fetchall() == [(1,)]
        copy.close()


@pytest.mark.parametrize("where", [
    "seq IN (SELECT length(content) FROM read_text('/etc/passwd'))",
    "seq IN (SELECT 1 FROM read_csv('/etc/passwd'))",
    "seq IN (SELECT seq FROM memory_entries)",
])
def test_verdict_filter_reads_nothing_but_the_verdicts(
        store: Store, key: SigningKey, verdict: dict, where: str) -> None:
    append_entries(store, "contract_verdict", [verdict], key)
    assert len(verdict_refs(store, "seq = ?", [1])) == 1
    with pytest.raises(BadInputError, match="bad verdict filter"):
        verdict_refs(store, where)


def test_cli_verdicts_cannot_read_files(tmp_path: Path, key: SigningKey, verdict: dict) -> None:
    db = tmp_path / "lab.duckdb"
    with Store(db) as s:
        append_entries(s, "contract_verdict", [verdict], key)
    r = invoke("extract", "--db", str(db), "--extractor", "heuristic",
               "--policy", "on", "--quiet", "--verdicts",
               "seq IN (SELECT 1 FROM read_text('/etc/hostname'))")
    assert r.exit_code == 2 and "Permission Error" in r.output, r.output
