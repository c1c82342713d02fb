"""The public surface is exactly what ``__all__`` claims (httpx-style)."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import click

import truss_lab
from truss_lab.faces._cli import cli

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def test_all_is_unique_and_importable() -> None:
    # Its order is ruff's (RUF022, checked by `make test`); here: no duplicates.
    assert len(truss_lab.__all__) == len(set(truss_lab.__all__))
    for name in truss_lab.__all__:
        assert getattr(truss_lab, name) is not None, name


def test_every_public_name_is_defined_in_a_private_module() -> None:
    # Defined in a private module of a stage subpackage: truss_lab.<stage>._<module>.
    for name in truss_lab.__all__:
        obj = getattr(truss_lab, name)
        mod = getattr(obj, "__module__", None)
        if mod is None or not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        assert re.fullmatch(r"truss_lab\.[a-z]+\._[a-z_]+", mod), (name, mod)


def test_nothing_public_leaks() -> None:
    public = {n for n in dir(truss_lab) if not n.startswith("_")}
    modules = {n for n in public if inspect.ismodule(getattr(truss_lab, n))}
    assert public - modules - {"annotations", "Any"} <= set(truss_lab.__all__)


def test_every_public_name_is_in_the_readme() -> None:
    missing = [n for n in truss_lab.__all__ if n != "__version__" and
               not re.search(rf"\b{re.escape(n)}\b", README)]
    assert not missing, f"undocumented in README.md: {missing}"


def test_widgets_load_lazily() -> None:
    explorer = truss_lab.ThresholdExplorer
    assert explorer.__module__ == "truss_lab.faces._threshold_explorer"
    assert importlib.import_module("truss_lab.faces._threshold_explorer").ThresholdExplorer \
        is explorer
    assert truss_lab.LabellingWidget.__module__ == "truss_lab.faces._labelling"
    assert truss_lab.LessonBrowser.__module__ == "truss_lab.faces._lesson_browser"


def _commands(group: click.Group, prefix: str = "") -> list[tuple[str, click.Command]]:
    out = []
    for name, cmd in group.commands.items():
        out.append((prefix + name, cmd))
        if isinstance(cmd, click.Group):
            out += _commands(cmd, prefix + name + " ")
    return out


def test_every_cli_command_has_help() -> None:
    for name, cmd in _commands(cli):
        assert cmd.help and cmd.help.strip(), f"`truss-lab {name}` has no help text"
        for p in cmd.params:
            if isinstance(p, click.Option):
                assert p.help, f"`truss-lab {name}` option {p.opts} has no help"


def test_readme_python_quickstart_runs(tmp_path, monkeypatch) -> None:
    block = README.split("## Python quickstart", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    root = Path(__file__).resolve().parent.parent
    monkeypatch.chdir(root)
    code = block.replace('"lab.duckdb"', repr(str(tmp_path / "lab.duckdb")))
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)
    assert namespace["record"].policy.target == "salience"
    assert namespace["lessons"]["trust"].eq("unverified").all()
    namespace["store"].close()
