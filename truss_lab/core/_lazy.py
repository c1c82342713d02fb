"""Package namespaces that import their modules on first use.

Every ``__init__.py`` of truss_lab lists what its package exports as ordinary imports
under ``if typing.TYPE_CHECKING:`` (what type checkers, editors, readers and the layer
rules of ``scripts/house.py`` see), and ends with::

    __getattr__, __dir__ = _attach(__name__, __file__)

:func:`attach` reads those import lines once and imports a name's module when the name is
first asked for (PEP 562). So ``import truss_lab`` costs nothing, and a command that needs
the store does not pay for pandas, scipy and matplotlib (issue 29: ``truss-lab --help``
took 2.2 s, all of it imports). ``from truss_lab import sweep_run`` and
``truss_lab.sweep_run`` work as before; an export's module is imported once, then the name
is an ordinary attribute of the package.

A package's subpackages resolve the same way (SPEC 1, as SciPy's do): after
``import truss_lab as tl``, ``tl.evaluate.sweep_run`` imports ``truss_lab.evaluate`` on
first use, whatever was imported before. A subpackage is a folder with an
``__init__.py`` beside the package's own; finding them reads one folder listing, and only
when a name is not an export.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["attach", "exports", "subpackages"]


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def exports(init_file: str | Path) -> dict[str, tuple[str, str]]:
    """Name -> (relative module, attribute) of the imports under ``if TYPE_CHECKING:``
    in the package's ``__init__.py``."""
    tree = ast.parse(Path(init_file).read_text(encoding="utf-8"))
    found: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for imp in node.body:
                if isinstance(imp, ast.ImportFrom) and imp.module:
                    module = "." * imp.level + imp.module
                    for alias in imp.names:
                        found[alias.asname or alias.name] = (module, alias.name)
    return found


def subpackages(init_file: str | Path) -> tuple[str, ...]:
    """The public subpackages beside ``init_file`` (folders with an ``__init__.py``)."""
    return tuple(sorted(p.parent.name for p in Path(init_file).parent.glob("*/__init__.py")
                        if not p.parent.name.startswith("_")))


def attach(package: str, init_file: str) -> tuple[Callable[[str], Any],
                                                  Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of ``package`` (its ``__name__`` and
    ``__file__``), importing each export's module on first use."""
    homes: dict[str, tuple[str, str]] = {}

    def load() -> dict[str, tuple[str, str]]:
        if not homes:
            homes.update(exports(init_file))
        return homes

    def __getattr__(name: str) -> Any:
        home = load().get(name)
        if home is None:
            if name in subpackages(init_file):
                # Importing a subpackage sets it as an attribute of its parent.
                return importlib.import_module(f"{package}.{name}")
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home[0], package), home[1])
        setattr(sys.modules[package], name, value)  # the next lookup is a plain attribute
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(load()) | set(subpackages(init_file)))

    return __getattr__, __dir__
