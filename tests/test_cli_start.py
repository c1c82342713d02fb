"""The command line starts at once (issues 29, 38): ``import truss_lab`` imports no stage,
``truss-lab --help`` no command module, every command's ``--help`` only click and its
own options (no pandas, numpy, DuckDB, pydantic, nor any module of the library beyond
the light ones of defaults and help texts), ``truss-lab runs`` only the store. Timings
are benchmarks/bench_cli_start.py's; here, what is loaded."""

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
PACKAGES = ["truss_lab", *(f"truss_lab.{s}" for s in (
    "core", "store", "journal", "ingest", "score", "extract", "evaluate", "govern",
    "simulate", "faces"))]
HEAVY = ("pandas", "pyarrow", "numpy", "matplotlib", "scipy", "sklearn", "wordllama",
         "tokenizers", "truss_lab.evaluate._runs", "truss_lab.extract._batch")
#: What a command's --help may not import: the numerical, storage, validation, crypto,
#: network and embedding libraries under every command (wordllama, the default matcher,
#: and what it loads: a core dependency imported only when a matcher is built).
HEAVY_FOR_HELP = ("pandas", "pyarrow", "numpy", "duckdb", "pydantic", "nacl", "httpx",
                  "matplotlib", "scipy", "sklearn", "wordllama", "tokenizers", "safetensors",
                  "tqdm", "threadpoolctl", "rfc8785", "orjson")
#: The modules of truss_lab a command's --help may import besides its own command
#: module: the packages (lazy), the command line's shared options, and the light homes
#: of the defaults and help texts those options show.
LIGHT = {*PACKAGES, "truss_lab.faces.cli",
         *(f"truss_lab.{m}" for m in (
             "core._lazy", "core._version", "core._errors", "core._secrets", "core._threshold",
             "core._files", "evaluate._defaults", "extract._limits", "ingest._schemas",
             "simulate._defaults", "faces._text", "faces.cli.common", "faces.cli.oneline"))}


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


def _help_probe(name: str) -> list[list[str]]:
    """The argument lists of ``name --help`` and, for a group, of each subcommand's."""
    cmd = cli_package.cli.commands[name]
    subs = sorted(cmd.commands) if isinstance(cmd, click.Group) else []
    return [[name, "--help"], *([name, sub, "--help"] for sub in subs)]


@pytest.mark.parametrize("name", sorted(cli_package.COMMANDS))
def test_a_commands_help_imports_only_click_and_its_options(name: str) -> None:
    # One fresh interpreter per command: its --help (and its subcommands') must leave
    # every heavy library unimported, and load of truss_lab only its own command module
    # and the light ones (issue 38: `sweep --help` loaded pandas and the evaluation).
    runs = "\n".join(
        f"sys.argv = ['truss-lab', *{args!r}]\ntry:\n    main()\nexcept SystemExit as e:\n"
        f"    assert e.code in (0, None), e.code" for args in _help_probe(name))
    probe = ("import sys, json\nfrom truss_lab.faces.cli import main\n" + runs +
             "\nprint(json.dumps(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    loaded = set(json.loads(out.strip().splitlines()[-1]))
    assert "Usage: truss-lab " + name in out
    heavy = {m for m in loaded if m.split(".")[0] in HEAVY_FOR_HELP}
    assert heavy == set()
    module = cli_package.COMMANDS[name][0].partition(":")[0]
    ours = {m for m in loaded if m.split(".")[0] == "truss_lab"}
    assert ours - LIGHT == {f"truss_lab.faces.cli.{module}"}


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
    # Each entry names its command's home ("module:attribute") and its help's first
    # sentence; every top-level command of a command module is listed.
    listed = dict(cli_package.COMMANDS)
    found, modules = {}, {path.partition(":")[0] for path, _ in listed.values()}
    for module in modules:
        mod = importlib.import_module(f"truss_lab.faces.cli.{module}")
        commands = {a: c for a, c in vars(mod).items() if isinstance(c, click.Command)}
        subs = {id(s) for c in commands.values() if isinstance(c, click.Group)
                for s in c.commands.values()}
        for attribute, cmd in commands.items():
            if id(cmd) not in subs:
                found[cmd.name] = (f"{module}:{attribute}", cmd.get_short_help_str(limit=10_000))
    assert found == listed


def test_help_lists_every_command() -> None:
    out = invoke("--help").output
    for name in cli_package.COMMANDS:
        assert f"  {name} " in out
    assert "Usage:" in out and "README.md" in out
    assert invoke("sweep", "--help").output.rstrip().endswith("lists the names).")
    assert isinstance(cli_package.cli.commands["sweep"], click.Command)
