"""The rules of the house (docs/explanation/layout.md), each one test that lists
its offenders. They replace a per-module line cap: a module is sized by its concept, and
what matters is the direction of imports, one home for the store's SQL, and public names
where another module needs them. ``python -m scripts.house --list`` prints the same lists."""

from __future__ import annotations

from scripts import house


def test_every_module_is_in_a_known_stage() -> None:
    stages = {house.stage_of(p) for p in house.modules()} - {None}
    assert stages == set(house.ORDER)


def test_stages_import_in_data_flow_order() -> None:
    # core < store < journal < ingest < score < extract < evaluate < govern < simulate < faces
    assert house.stage_violations() == []


def test_no_import_loops() -> None:
    assert house.import_loops() == []


def test_no_stage_imports_the_package_root() -> None:
    # The root imports every stage; the version a run row or an export records is core's.
    assert house.root_imports() == []


def test_the_command_line_imports_no_evaluation_internal() -> None:
    # A command parses options, makes one library call and formats its result (issue 34):
    # it imports the run-level API (evaluate_run, compare_runs, Truth, ...), never the
    # bootstrap, PPI, choice or comparison maths, nor a name evaluate does not export.
    assert house.cli_evaluation_internals() == []


def test_functions_with_many_parameters_say_why() -> None:
    assert house.many_parameters() == []


def test_no_underscore_name_is_imported_from_another_module() -> None:
    # A name another module needs is public in its home module.
    assert house.underscore_imports() == []


def test_no_sql_on_store_tables_outside_the_store() -> None:
    # The store (and the journal, for its own append-only tables) owns every statement on
    # its tables; the audit's statements are in store/_audit_sql.py.
    assert house.sql_outside_store() == []


def test_one_default_threshold() -> None:
    # DEFAULT_MIN_SALIENCE in core is the one default 0.70; a 0.7 may stand only as a named
    # constant of its own (score's near-duplicate similarity) or as one of the simulator's
    # parameters of its synthetic world.
    sites = [s for s in house.literal_default_threshold()
             if not s.startswith("truss_lab/simulate/")]
    assert sites == []


def test_long_functions_say_why() -> None:
    assert house.long_functions() == []


def test_the_rules_can_fail(tmp_path, monkeypatch) -> None:
    # Each rule finds what it looks for: a planted offender of every kind is listed.
    pkg = tmp_path / "truss_lab"
    for stage in house.ORDER:
        (pkg / stage).mkdir(parents=True)
        (pkg / stage / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "store" / "schema.sql").write_text("CREATE TABLE candidates (x INT);\n")
    (pkg / "core" / "_a.py").write_text("from ..faces._b import _hidden\nx = 0.7\nY = 0.7\n")
    (pkg / "store" / "_c.py").write_text("from .. import __version__\n")
    (pkg / "evaluate" / "__init__.py").write_text('__all__ = ["evaluate_run", "ppi_bootstrap"]\n')
    (pkg / "faces" / "cli").mkdir()
    (pkg / "faces" / "cli" / "__init__.py").write_text("")
    (pkg / "faces" / "cli" / "_d.py").write_text(
        "from ...evaluate._runs import evaluate_run, helper\n"
        "from ...evaluate._ppi import CORRECT_HELP, ppi_bootstrap\n"
        "def g(a, b, c, d, e, f, g, h, i, j, k, l, m):\n    pass\n")
    (pkg / "faces" / "_b.py").write_text(
        "from ..core._a import x\n_hidden = 1\nQ = 'SELECT * FROM candidates'\n"
        "def f():\n" + "    x = 1\n" * 90)
    monkeypatch.setattr(house, "ROOT", tmp_path)
    monkeypatch.setattr(house, "PKG", pkg)
    cached = (house.store_tables, house.functions)
    for f in cached:
        f.cache_clear()
    try:
        assert house.stage_violations() == ["truss_lab/core/_a.py:1 core -> faces"]
        assert house.import_loops() == [["truss_lab.core._a", "truss_lab.faces._b"]]
        assert house.root_imports() == ["truss_lab/store/_c.py:1 __version__"]
        assert house.cli_evaluation_internals() == [
            "truss_lab/faces/cli/_d.py:1 helper from truss_lab.evaluate._runs",
            "truss_lab/faces/cli/_d.py:2 ppi_bootstrap from truss_lab.evaluate._ppi"]
        assert house.many_parameters() == ["truss_lab/faces/cli/_d.py:3 g (13 parameters)"]
        assert house.underscore_imports() == ["truss_lab/core/_a.py:1 _hidden from "
                                              "truss_lab.faces._b"]
        assert house.sql_outside_store() == ["truss_lab/faces/_b.py:3 FROM candidates"]
        assert house.literal_default_threshold() == ["truss_lab/core/_a.py:2"]
        assert house.long_functions() == ["truss_lab/faces/_b.py:4 f (91 lines)"]
    finally:
        for f in cached:
            f.cache_clear()
