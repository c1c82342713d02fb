"""The shape of the package, measured from its source: the figures the layout rules in
``tests/test_layers.py`` hold, and the ones a review of the house asks for.

    .venv/bin/python -m scripts.house            # the table
    .venv/bin/python -m scripts.house --list     # with every offender named

Everything is read as text with :mod:`ast`; nothing of ``truss_lab`` is imported.
"""

from __future__ import annotations

import argparse
import ast
import re
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "truss_lab"

#: Lowest first: a module of a stage imports from its own stage and the ones before it.
ORDER = ("core", "store", "journal", "ingest", "score", "extract", "evaluate", "govern",
         "simulate", "faces")
#: Stages allowed to hold SQL on the store's tables: the store, and the journal's own
#: append-only tables (its ledger and reader).
SQL_STAGES = ("store", "journal")
#: None excepted: the audit's statements are in store/_audit_sql.py, apart from the writers.
SQL_EXEMPT: tuple[str, ...] = ()
#: A function longer than this says why in its docstring (``long because``).
LONG_FUNCTION = 80
#: A function with more parameters than this says why in its docstring (``many
#: parameters because``; a click command after its ``\f``, so its --help is unchanged).
MANY_PARAMETERS = 12
#: The evaluation modules of maths over arrays (bootstrap, PPI, threshold choice,
#: comparison, sweep, correction): a command calls the run-level functions built on them.
EVALUATION_INTERNALS = ("_bootstrap", "_ppi", "_choose", "_compare", "_sweep", "_correction",
                        "_sort_u64")


def modules() -> list[Path]:
    """Every module of the package, sorted."""
    return sorted(PKG.rglob("*.py"))


def name_of(path: Path) -> str:
    """``truss_lab/extract/_gate.py`` -> ``truss_lab.extract._gate``."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def stage_of(path: Path) -> str | None:
    """The stage folder a module lives in (None for the package's own ``__init__``)."""
    parts = path.relative_to(PKG).parts
    return parts[0] if len(parts) > 1 else None


@cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Import:
    """One ``from X import a`` (or ``import X``) found anywhere in a module."""

    path: Path
    line: int
    target: str          # the absolute module name imported from
    names: tuple[str, ...]
    in_function: bool


@cache
def imports(path: Path) -> tuple[Import, ...]:
    """The package-internal imports of one module, relative ones resolved."""
    return tuple(_imports(path))


def _imports(path: Path) -> Iterator[Import]:
    here = name_of(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]

    def walk(node: ast.AST, in_function: bool) -> Iterator[Import]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package[: len(package) - child.level + 1]
                    target = ".".join([*base, *([child.module] if child.module else [])])
                else:
                    target = child.module or ""
                if target.split(".")[0] == "truss_lab":
                    yield Import(path, child.lineno, target,
                                 tuple(a.name for a in child.names), in_function)
            elif isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name.split(".")[0] == "truss_lab":
                        yield Import(path, child.lineno, alias.name, (), in_function)
            elif not isinstance(child, ast.expr):
                yield from walk(child, in_function or isinstance(
                    child, ast.FunctionDef | ast.AsyncFunctionDef))

    yield from walk(_tree(path), False)


def _module_paths() -> dict[str, Path]:
    return {name_of(p): p for p in modules()}


def import_graph() -> dict[str, set[str]]:
    """Module -> the modules it imports from (a ``from pkg import sub`` names ``pkg.sub``)."""
    known = _module_paths()
    graph: dict[str, set[str]] = {m: set() for m in known}
    for p in modules():
        for imp in imports(p):
            for name in imp.names or ("",):
                sub = f"{imp.target}.{name}"
                dest = sub if sub in known else imp.target
                if dest in known and dest != name_of(p):
                    graph[name_of(p)].add(dest)
    return graph


def import_loops() -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), each sorted.

    A package ``__init__`` that re-exports its modules is left out of the graph: the
    loops that matter are between modules that need each other's code."""
    packages = {n for n, p in _module_paths().items() if p.name == "__init__.py"}
    graph = {m: ds - packages for m, ds in import_graph().items() if m not in packages}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def stage_violations() -> list[str]:
    """Imports of a later stage, as ``path:line stage -> stage``."""
    out = []
    for p in modules():
        stage = stage_of(p)
        if stage not in ORDER:
            continue
        for imp in imports(p):
            parts = imp.target.split(".")
            other = parts[1] if len(parts) > 1 else None
            if other in ORDER and ORDER.index(other) > ORDER.index(stage):
                out.append(f"{_rel(p)}:{imp.line} {stage} -> {other}")
    return out


def root_imports() -> list[str]:
    """Stage modules importing the package root (an arrow up the house: the root imports
    every stage), as ``path:line names``; what they need lives in a stage (the version
    in core)."""
    return [f"{_rel(p)}:{imp.line} {', '.join(imp.names)}" for p in modules()
            if stage_of(p) in ORDER for imp in imports(p) if imp.target == "truss_lab"]


def underscore_imports() -> list[str]:
    """Underscore names imported from another module, as ``path:line name from module``."""
    out = []
    for p in modules():
        for imp in imports(p):
            for name in imp.names:
                if name.startswith("_") and not name.startswith("__"):
                    out.append(f"{_rel(p)}:{imp.line} {name} from {imp.target}")
    return out


def function_imports() -> list[str]:
    """Package imports made inside a function body."""
    return [f"{_rel(i.path)}:{i.line} {i.target}"
            for p in modules() for i in imports(p) if i.in_function]


@cache
def store_tables() -> tuple[str, ...]:
    """Every table and view that ``store/schema.sql`` creates."""
    sql = (PKG / "store" / "schema.sql").read_text(encoding="utf-8")
    found = re.findall(r"CREATE\s+(?:OR\s+REPLACE\s+)?(?:TABLE|VIEW)\s+(\w+)", sql, re.I)
    return tuple(sorted(set(found)))


def _sql_pattern() -> re.Pattern[str]:
    tables = "|".join(store_tables())
    return re.compile(rf"\b(?:FROM|JOIN|INTO|UPDATE|DELETE\s+FROM|TABLE)\s+(?:{tables})\b")


def sql_outside_store() -> list[str]:
    """Modules outside store/ and journal/ whose strings hold SQL on
    a store table, as ``path: the first such line``."""
    pattern = _sql_pattern()
    out = []
    for p in modules():
        rel = _rel(p).removeprefix("truss_lab/")
        if stage_of(p) in SQL_STAGES or rel in SQL_EXEMPT:
            continue
        for node in ast.walk(_tree(p)):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                m = pattern.search(node.value)
                if m:
                    out.append(f"{_rel(p)}:{node.lineno} {m.group(0)}")
                    break
    return out


def literal_default_threshold() -> list[str]:
    """Numeric literals 0.7 (the ADR's default threshold, or a number that reads like it),
    except as the value of a module-level named constant (``NAME = 0.7``): a constant is
    the one home of its number, which is what the rule asks for."""
    out = []
    for p in modules():
        tree = _tree(p)
        named = {id(n.value) for n in tree.body
                 if isinstance(n, ast.Assign | ast.AnnAssign) and n.value is not None
                 and all(isinstance(t, ast.Name) and t.id.isupper()
                         for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))}
        out += [f"{_rel(p)}:{n.lineno}" for n in ast.walk(tree)
                if isinstance(n, ast.Constant) and type(n.value) is float and n.value == 0.7
                and id(n) not in named]
    return out


@cache
def functions() -> list[tuple[int, str, bool]]:
    """(lines, ``path:line name``, says why it is long) for every function, longest first;
    its docstring's lines are not counted."""
    out = []
    for p in modules():
        for n in ast.walk(_tree(p)):
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef):
                # Its code: a numpydoc docstring (Parameters, Returns, ...) is not length.
                doc = ast.get_docstring(n) or ""
                skip = (n.body[0].end_lineno or 0) - n.body[0].lineno + 1 if doc else 0
                size = (n.end_lineno or n.lineno) - n.lineno + 1 - skip
                out.append((size, f"{_rel(p)}:{n.lineno} {n.name}", "long because" in doc.lower()))
    return sorted(out, key=lambda t: (-t[0], t[1]))


def long_functions() -> list[str]:
    """Functions over :data:`LONG_FUNCTION` lines whose docstring does not say why."""
    return [f"{where} ({n} lines)" for n, where, why in functions()
            if n > LONG_FUNCTION and not why]


def many_parameters() -> list[str]:
    """Functions over :data:`MANY_PARAMETERS` parameters (``*args``/``**kwargs`` count one
    each; ``self``/``cls`` none) whose docstring does not say why."""
    out = []
    for p in modules():
        for n in ast.walk(_tree(p)):
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef):
                a = n.args
                names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)
                         if x.arg not in ("self", "cls")]
                count = len(names) + (a.vararg is not None) + (a.kwarg is not None)
                doc = (ast.get_docstring(n) or "").lower()
                if count > MANY_PARAMETERS and "many parameters because" not in doc:
                    out.append(f"{_rel(p)}:{n.lineno} {n.name} ({count} parameters)")
    return out


def _public_names(init: Path) -> set[str]:
    """The ``__all__`` of a package ``__init__.py``, read without importing it."""
    for node in _tree(init).body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return {e.value for e in node.value.elts  # type: ignore[attr-defined]
                    if isinstance(e, ast.Constant)}
    return set()


def cli_evaluation_internals() -> list[str]:
    """Names a command-line module imports from the evaluation stage that are not its
    run-level API, as ``path:line name from module``: a function or class that is not in
    ``truss_lab.evaluate.__all__``, or that comes from one of
    :data:`EVALUATION_INTERNALS` (constants, UPPER_CASE, such as help texts, may come
    from anywhere)."""
    public = _public_names(PKG / "evaluate" / "__init__.py")
    out = []
    for p in modules():
        if _rel(p).split("/")[1:3] != ["faces", "cli"]:
            continue
        for imp in imports(p):
            parts = imp.target.split(".")
            if parts[:2] != ["truss_lab", "evaluate"]:
                continue
            home = parts[2] if len(parts) > 2 else ""
            for name in imp.names:
                if name.isupper():
                    continue
                if name not in public or home in EVALUATION_INTERNALS:
                    out.append(f"{_rel(p)}:{imp.line} {name} from {imp.target}")
    return out


def _rel(p: Path) -> str:
    return str(p.relative_to(ROOT))


def tree() -> list[str]:
    """One line per folder: its modules and lines."""
    out = []
    for folder in sorted({p.parent for p in modules()}):
        mods = sorted(folder.glob("*.py"))
        lines = sum(len(m.read_text(encoding="utf-8").splitlines()) for m in mods)
        names = " ".join(m.stem for m in mods)
        out.append(f"{_rel(folder)}/ ({len(mods)} modules, {lines} lines): {names}")
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--list", action="store_true", help="name every offender")
    args = ap.parse_args(argv)
    # Piped into head: stop quietly when the reader goes, as a shell tool does.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    mods = [m for m in modules() if m.name != "__init__.py"]
    lines = sum(len(m.read_text(encoding="utf-8").splitlines()) for m in modules())
    rows = {
        "stage-order violations": stage_violations(),
        "import loops": [" <-> ".join(g) for g in import_loops()],
        "underscore names imported from another module": underscore_imports(),
        "stage modules importing the package root": root_imports(),
        "evaluation internals imported by the command line": cli_evaluation_internals(),
        f"functions over {MANY_PARAMETERS} parameters not saying why": many_parameters(),
        "package imports inside functions": function_imports(),
        "files with SQL on store tables outside store/journal":
            sql_outside_store(),
        "literal 0.7 sites": literal_default_threshold(),
        f"functions over {LONG_FUNCTION} lines without a reason": long_functions(),
    }
    print(f"modules (not counting __init__): {len(mods)}; lines: {lines}")
    for label, found in rows.items():
        print(f"{label}: {len(found)}")
        if args.list:
            for f in found:
                print(f"    {f}")
    print("five longest functions:")
    for n, where, _ in functions()[:5]:
        print(f"    {n:4d}  {where}")
    print("tree:")
    for line in tree():
        print(f"    {line}")


if __name__ == "__main__":
    main()
