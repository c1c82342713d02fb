"""The house is layered (shared/DESIGN.md, Layers): a stage imports only from itself and
the stages below it, so the folders read in the order the data flows."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "truss_lab"

# Lowest first. A module of a stage may import from its own stage and any earlier one.
ORDER = ("core", "store", "journal", "ingest", "score", "extract", "evaluate", "govern",
         "simulate", "faces")


def _stage_of(module: Path) -> str:
    return module.relative_to(PKG).parts[0]


def _imported_stages(module: Path) -> set[str]:
    tree = ast.parse(module.read_text(encoding="utf-8"))
    depth = len(module.relative_to(PKG).parts) - 1  # 1 inside a stage package
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 0:
                parts = (node.module or "").split(".")
                if parts[0] == "truss_lab" and len(parts) > 1:
                    found.add(parts[1])
            elif node.level == depth + 1 and node.module:  # from ..stage._x import
                found.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "truss_lab" and len(parts) > 1:
                    found.add(parts[1])
    return {s for s in found if s in ORDER}


MODULES = sorted(p for p in PKG.glob("*/*.py"))


def test_every_module_is_in_a_known_stage() -> None:
    assert {_stage_of(p) for p in MODULES} == set(ORDER)


@pytest.mark.parametrize("module", MODULES, ids=lambda p: str(p.relative_to(PKG)))
def test_imports_only_from_its_stage_or_below(module: Path) -> None:
    stage = _stage_of(module)
    above = {s for s in _imported_stages(module) if ORDER.index(s) > ORDER.index(stage)}
    assert not above, f"{module.relative_to(PKG)} ({stage}) imports from a later stage: {above}"
