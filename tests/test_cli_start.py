"""The command line starts at once (issue 29): ``import truss_lab`` imports no stage,
``truss-lab --help`` no command module, ``truss-lab runs`` only the store -- none of them
pandas or matplotlib. Timings are benchmarks/bench_cli_start.py's; here, what is loaded."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import click
import pytest

import truss_lab
from tests.builders.cli import invoke
from tests.builders.stores import copy_db
from truss_lab.core._lazy import exports
from truss_lab.faces import cli as cli_package

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("pandas", "pyarrow", "numpy", "matplotlib", "scipy", "sklearn", "truss_lab.evaluate._runs",
         "truss_lab.extract._batch")
PACKAGES = ["truss_lab", *(f"truss_lab.{s}" for s in (
    "core", "store", "journal", "ingest", "score", "extract", "evaluate", "govern",
    "simulate", "faces"))]


def _loaded_after(code: str) -> set[str]:
    """The modules of HEAVY (and command modules) a fresh interpreter holds after ``code``."""
    probe = (f"{code}\nimport sys, json\n"
             "print(json.dumps(sorted(m for m in sys.modules if m.startswith(("
             f"{(*HEAVY, 'truss_lab.faces.cli.')!r})))))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    return set(json.loads(out.strip().splitlines()[-1]))


def _cli(*args: str) -> str:
    return ("import sys\nfrom truss_lab.faces.cli import main\n"
            f"sys.argv = ['truss-lab', *{list(args)!r}]\n"
            "try:\n    main()\nexcept SystemExit:\n    pass")


def test_import_truss_lab_loads_no_stage() -> None:
    assert _loaded_after("import truss_lab") == set()


def test_help_loads_no_command_module() -> None:
    assert _loaded_after(_cli("--help")) == {"truss_lab.faces.cli.oneline"}


def test_runs_loads_only_the_store(sample_full: Path, tmp_path: Path) -> None:
    db = copy_db(sample_full, tmp_path / "lab.duckdb")
    r = invoke("extract", "--db", db, "--quiet", "--extractor", "heuristic", "--policy", "on",
               "--dry-run", "--run-id", "h", "--verdicts", "seq <= 5")
    assert r.exit_code == 0, r.output
    light = {"truss_lab.faces.cli.common", "truss_lab.faces.cli.oneline",
             "truss_lab.faces.cli.runs"}
    # no pandas, pyarrow or numpy: `runs` and `errors` start at Python-plus-DuckDB speed
    assert _loaded_after(_cli("runs", "--db", str(db))) == light
    assert _loaded_after(_cli("errors", "h", "--db", str(db))) == light
    rows = json.loads(invoke("runs", "--db", db, "--json").stdout)
    assert [r["run_id"] for r in rows] == ["h"] and rows[0]["started_at"].endswith("Z")
    assert rows[0]["verdicts_per_s"] > 0 and rows[0]["n_verdicts"] == 5
    text = invoke("runs", "--db", db).output
    assert text.splitlines()[0].split()[:3] == ["run_id", "name", "tags"]


def test_a_name_imports_its_stage_once() -> None:
    fresh = subprocess.run(
        [sys.executable, "-c", "import sys, truss_lab\nf = truss_lab.sweep_run\n"
         "print(f.__module__, 'truss_lab.evaluate._runs' in sys.modules, "
         "truss_lab.__dict__['sweep_run'] is f)"],
        cwd=ROOT, check=True, capture_output=True, text=True).stdout.split()
    assert fresh == ["truss_lab.evaluate._runs", "True", "True"]
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        truss_lab.nope  # noqa: B018


@pytest.mark.parametrize("name", PACKAGES)
def test_every_export_has_one_home(name: str) -> None:
    # The imports under `if TYPE_CHECKING:` are the one list of where each export lives.
    pkg = importlib.import_module(name)
    homes = exports(pkg.__file__)
    assert set(homes) == set(pkg.__all__) - {"__version__"}
    assert set(pkg.__all__) <= set(dir(pkg))


def test_every_command_is_listed_with_its_module_and_help() -> None:
    listed = dict(cli_package.COMMANDS)
    found = {}
    for module in {m for m, _ in listed.values()}:
        for cmd in importlib.import_module(f"truss_lab.faces.cli.{module}").COMMANDS:
            found[cmd.name] = (module, cmd.get_short_help_str(limit=10_000))
    assert found == listed


def test_help_lists_every_command() -> None:
    out = invoke("--help").output
    for name in cli_package.COMMANDS:
        assert f"  {name} " in out
    assert "Usage:" in out and "README.md" in out
    assert invoke("sweep", "--help").output.rstrip().endswith("lists the names).")
    assert isinstance(cli_package.cli.commands["sweep"], click.Command)
