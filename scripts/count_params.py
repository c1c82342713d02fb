"""Functions with many parameters, and functions taking the truth as loose keywords.

    .venv/bin/python -m scripts.count_params            # counts, then the functions
    .venv/bin/python -m scripts.count_params --min 13 --quiet

Reads every ``.py`` file under ``truss_lab/`` with :mod:`ast` (nothing is imported,
so it measures any checkout: ``--root OTHER/truss_lab``). A function's parameters are
all of them (positional, keyword-only, ``*args`` and ``**kwargs``) except ``self``
and ``cls``; public and private functions, methods and nested functions alike.
The truth keywords are the loose spelling of "judged how" (``truth``, ``labels``,
``references``, ``matcher``, ``correct``, ``match_labels``); a function taking three
or more of them is counted, as is one taking any of the four that only say how a
truth is judged and corrected (``references``, ``matcher``, ``correct``,
``match_labels``) beside ``truth``.
"""

from __future__ import annotations

import argparse
import ast
from collections.abc import Iterator
from pathlib import Path

TRUTH_KEYWORDS = ("truth", "labels", "references", "matcher", "correct", "match_labels")
LOOSE = ("references", "matcher", "correct", "match_labels")


def functions(root: Path) -> Iterator[tuple[str, int, str, list[str]]]:
    """(file, line, qualified name, parameter names) of every function under ``root``."""
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        yield from _walk(tree, str(path), "")


def _walk(node: ast.AST, file: str, prefix: str) -> Iterator[tuple[str, int, str, list[str]]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            a = child.args
            names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
            names += [x.arg for x in (a.vararg, a.kwarg) if x is not None]
            names = [n for n in names if n not in ("self", "cls")]
            yield file, child.lineno, prefix + child.name, names
            yield from _walk(child, file, prefix + child.name + ".")
        elif isinstance(child, ast.ClassDef):
            yield from _walk(child, file, prefix + child.name + ".")
        else:
            yield from _walk(child, file, prefix)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=Path(__file__).parent.parent / "truss_lab")
    ap.add_argument("--min", type=int, default=13, help="parameters that count as many")
    ap.add_argument("--quiet", action="store_true", help="the counts only")
    args = ap.parse_args()
    many, truthy, loose = [], [], []
    for file, line, name, params in functions(args.root):
        where = f"{Path(file).relative_to(args.root.parent)}:{line} {name}"
        if len(params) >= args.min:
            many.append((len(params), where))
        if sum(p in TRUTH_KEYWORDS for p in params) >= 3:
            truthy.append(where)
        if "truth" in params and any(p in LOOSE for p in params):
            loose.append(where)
    public = [w for _, w in many if not w.split(" ")[1].split(".")[-1].startswith("_")]
    print(f"functions with >= {args.min} parameters: {len(many)} "
          f"({len(public)} public, {len(many) - len(public)} private; "
          f"{sum('faces/cli/' not in w for _, w in many)} outside the CLI)")
    print(f"functions taking >= 3 of {', '.join(TRUTH_KEYWORDS)}: {len(truthy)}")
    print(f"functions taking truth with any of {', '.join(LOOSE)}: {len(loose)}")
    if not args.quiet:
        for n, w in sorted(many, reverse=True):
            print(f"  {n:3d}  {w}")
        print("truth keywords:")
        for w in truthy:
            print(f"       {w}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
