"""numpydoc's validation of every public name of ``truss_lab.__all__``.

``python -m scripts.numpydoc_check`` runs ``numpydoc.validate`` (what ``python -m numpydoc
validate NAME`` prints for one name) on each name and each public method of each class,
and prints the errors of the checks the documentation holds itself to: no undocumented
or unknown parameter (PR01, PR02, PR10), every returned value described (RT03), a See
Also (SA01) and an Examples section (EX01). Names still listed as prose in
``docs/_ext/truss_docs.py`` are counted apart. Exit 1 when a converted name fails.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
from collections import Counter
from pathlib import Path

from numpydoc.validate import validate

import truss_lab

CHECKS = ("PR01", "PR02", "PR10", "RT03", "SA01", "EX01")
ROOT = Path(__file__).resolve().parent.parent


def prose_names() -> set[str]:
    spec = importlib.util.spec_from_file_location("truss_docs",
                                                  ROOT / "docs" / "_ext" / "truss_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return set(module.PROSE_DOCSTRINGS)


def objects(name: str) -> list[str]:
    """``truss_lab.NAME`` and, for a class, its public methods defined in truss_lab."""
    obj = getattr(truss_lab, name)
    out = [f"truss_lab.{name}"]
    if inspect.isclass(obj):
        for attr, value in vars(obj).items():
            if attr.startswith("_") or not callable(getattr(obj, attr, None)):
                continue
            if isinstance(value, staticmethod | classmethod) or inspect.isfunction(value):
                out.append(f"truss_lab.{name}.{attr}")
    return out


def main() -> int:
    prose = prose_names()
    failed: list[tuple[str, str, str]] = []
    checked = 0
    for name in truss_lab.__all__:
        if name in prose or name in ("__version__", "SAMPLE_DIR"):
            continue
        for qualified in objects(name):
            # Methods without Examples are fine: the class's examples show them.
            wanted = CHECKS if qualified.count(".") == 1 else ("PR01", "PR02", "PR10", "RT03")
            checked += 1
            for code, message in validate(qualified)["errors"]:
                if code in wanted:
                    failed.append((qualified, code, message))
    for qualified, code, message in failed:
        print(f"{qualified}: {code} {message}")
    by_code = Counter(code for _, code, _ in failed)
    print(f"{checked} docstrings checked ({len(truss_lab.__all__) - 2 - len(prose)} names of "
          f"truss_lab.__all__ and their methods), {len(failed)} errors "
          f"{dict(by_code) if by_code else ''}; {len(prose)} names still prose: "
          f"{', '.join(sorted(prose))}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
