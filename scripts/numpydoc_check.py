"""numpydoc's validation of every public name: ``truss_lab.__all__`` and each stage's ``__all__``.

``python -m scripts.numpydoc_check`` runs ``numpydoc.validate`` (what ``python -m numpydoc
validate NAME`` prints for one name) on each name and each public method of each class,
and prints the errors of the checks the documentation holds itself to:

- every name of ``truss_lab.__all__`` (what a notebook imports, the API reference's
  pages): no undocumented or unknown parameter (PR01, PR02, PR10), every returned value
  described (RT03), a See Also (SA01) and an Examples section (EX01), whose examples
  ``tests/test_docstrings.py`` runs;
- every public name of a stage (the ``__all__`` of ``truss_lab.core``, ``.store``,
  ``.journal``, ``.ingest``, ``.score``, ``.extract``, ``.evaluate``, ``.govern``,
  ``.simulate``, ``.faces``) and every public method: no undocumented or unknown
  parameter and every returned value described (PR01, PR02, PR10, RT03). A model class
  (pydantic, dataclass) documents its constructor's parameters on its fields, each with
  its own docstring (pydantic gives them to the JSON schemas): those count as documented.

Exit 1 when a name fails.
"""

from __future__ import annotations

import ast
import enum
import importlib
import inspect
import itertools
import sys
import textwrap
from collections import Counter

from numpydoc.validate import validate

import truss_lab

CHECKS = ("PR01", "PR02", "PR10", "RT03", "SA01", "EX01")
PARAMETER_CHECKS = ("PR01", "PR02", "PR10", "RT03")
STAGES = ("core", "store", "journal", "ingest", "score", "extract", "evaluate", "govern",
          "simulate", "faces")
# Values, not documented objects: a version string and a folder.
NOT_DOCSTRINGS = ("__version__", "SAMPLE_DIR")


def objects(module: str, name: str) -> list[str]:
    """``module.NAME`` and, for a class, its public methods defined in truss_lab."""
    obj = getattr(importlib.import_module(module), name)
    out = [f"{module}.{name}"]
    if inspect.isclass(obj):
        for attr, value in vars(obj).items():
            if attr.startswith("_") or not callable(getattr(obj, attr, None)):
                continue
            if isinstance(value, staticmethod | classmethod) or inspect.isfunction(value):
                out.append(f"{module}.{name}.{attr}")
    return out


def documented(module: str, name: str) -> bool:
    """Whether ``module.name`` is an object with a docstring of its own to validate
    (a class or a function defined in truss_lab), not a constant. An enum or an
    exception that keeps its base's constructor has no parameters of its own (numpydoc
    would ask for ``Enum``'s functional API or ``*args``), nor has a Protocol."""
    obj = getattr(importlib.import_module(module), name)
    if inspect.isclass(obj) and getattr(obj, "_is_protocol", False):
        return False  # a typing.Protocol: an interface, constructed by nobody
    if inspect.isclass(obj) and issubclass(obj, enum.Enum | BaseException):
        init = getattr(obj, "__init__", None)
        return str(getattr(init, "__module__", "")).startswith("truss_lab")
    return (inspect.isclass(obj) or inspect.isfunction(obj)) and str(
        getattr(obj, "__module__", "")).startswith("truss_lab")


def field_docstrings(cls: type) -> set[str]:
    """The fields of a model class (pydantic, dataclass) that carry their own attribute
    docstring: what its constructor's parameters are, documented once, on the field
    (pydantic also gives them to the JSON schemas), so a Parameters section would only
    repeat them."""
    names: set[str] = set()
    for klass in cls.__mro__:
        if not str(getattr(klass, "__module__", "")).startswith("truss_lab"):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for node, after in itertools.pairwise(body):
            if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                    and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)):
                names.add(node.target.id)
    return names


def undocumented(qualified: str, code: str, message: str) -> bool:
    """Whether an error stands: a PR01 of a model class whose missing parameters are
    all fields with their own docstrings does not."""
    if code != "PR01":
        return True
    module, _, name = qualified.rpartition(".")
    try:
        obj = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return True
    if not inspect.isclass(obj):
        return True
    missing = ast.literal_eval(message[message.index("{"):message.rindex("}") + 1])
    return not set(missing) <= field_docstrings(obj)


def main() -> int:
    failed: list[tuple[str, str, str]] = []
    checked = 0
    top = [n for n in truss_lab.__all__ if n not in NOT_DOCSTRINGS]
    plan = [("truss_lab", n, CHECKS) for n in top]
    for stage in STAGES:
        module = f"truss_lab.{stage}"
        plan += [(module, n, PARAMETER_CHECKS)
                 for n in importlib.import_module(module).__all__
                 if n not in top and documented(module, n)]
    for module, name, wanted in plan:
        for qualified in objects(module, name):
            # Methods without Examples are fine: the class's examples show them.
            checks = wanted if qualified.count(".") == module.count(".") + 1 \
                else PARAMETER_CHECKS
            checked += 1
            for code, message in validate(qualified)["errors"]:
                if code in checks and undocumented(qualified, code, message):
                    failed.append((qualified, code, message))
    for qualified, code, message in failed:
        print(f"{qualified}: {code} {message}")
    n_stage = len(plan) - len(top)
    in_top = [f for f in failed if f[0].split(".")[1] not in STAGES]
    for what, errors in ((f"{len(top)} names of truss_lab.__all__", in_top),
                         (f"{n_stage} more public names of the stages",
                          [f for f in failed if f not in in_top])):
        by_code = Counter(code for _, code, _ in errors)
        print(f"{what} and their methods: {len(errors)} errors"
              + (f" {dict(by_code)}" if by_code else ""))
    print(f"{checked} docstrings checked, {len(failed)} errors")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
