"""Sphinx configuration of the truss_lab documentation site (``make docs``).

Markdown pages and the four notebooks go through MyST (myst-parser, myst-nb), the
API reference through autodoc + numpydoc, the command line through sphinx-click.
Nothing is fetched at build time: no intersphinx, no remote images. Warnings are
errors (``make docs`` passes ``-W --keep-going``) and every cross-reference must
resolve (``nitpicky``).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS / "_ext"))

import truss_lab  # noqa: E402

project = "truss_lab"
author = "the truss_lab authors"
copyright = "2026, the truss_lab authors"
version = release = truss_lab.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "myst_nb",
    "sphinx_click",
    "truss_docs",
]

exclude_patterns = ["_build", "**.ipynb_checkpoints", "examples/README.md"]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
root_doc = "index"
templates_path = ["_templates"]

nitpicky = True


def _undocumented_names() -> str:
    """Every name a module of truss_lab defines that the reference does not document."""
    import importlib
    import pkgutil

    names: set[str] = set()
    for info in pkgutil.walk_packages(truss_lab.__path__, "truss_lab."):
        if info.name.endswith("__main__") or info.name.startswith("truss_lab.faces.demo"):
            continue
        module = importlib.import_module(info.name)
        names.update(n for n, v in vars(module).items()
                     if getattr(v, "__module__", info.name).startswith("truss_lab"))
    return "|".join(sorted(n for n in names - set(truss_lab.__all__) if n.isidentifier()))


# What nitpicky does not check: a docstring's reference to a private module or name
# (rendered as code, not a promise of the API), to a name a module of truss_lab defines
# that the reference does not document yet (the subpackages' __all__ are listed in
# api.md), and other
# packages' types named in prose (there is no intersphinx: nothing is fetched at build
# time). A reference to a name truss_lab does not define, a missing page or section of
# the site, and every MyST link still fail the build.
nitpick_ignore_regex = [
    (r"py:.*", r"(.*\.)?_[A-Za-z].*"),
    (r"py:.*", rf"(truss_lab\.[a-z]+\.)?({_undocumented_names()})(\..*)?"),
    (r"py:.*", r"(pandas|pd|np|numpy|duckdb|pyarrow|pa|datetime|pathlib|os|typing|collections"
     r"|click|matplotlib|ipywidgets|nacl|httpx|pydantic|concurrent|distributed)(\..*)?"),
    (r"py:.*", r"(str|int|float|bool|bytes|dict|list|tuple|set|None|object|callable|Any"
     r"|Iterable|Iterator|Sequence|Mapping|Callable|Path|DataFrame|Series|ndarray|array-like"
     r"|optional|default|TracebackType|Self|Literal|type)"),
]

# MyST: heading anchors for `page.md#anchor` links, definition lists for the glossary.
myst_enable_extensions = ["colon_fence", "deflist", "dollarmath"]
myst_heading_anchors = 3
suppress_warnings: list[str] = []

# The notebooks, executed at build time from a copy (conf.py copies notebooks/*.ipynb
# into examples/), each in a fresh kernel; a cell that raises fails the build.
nb_execution_mode = "force"
nb_execution_timeout = 300
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_merge_streams = True
# No script from a CDN in the pages: the site reads offline (a widget's live view needs
# a kernel anyway; its text fallback stays).
nb_ipywidgets_js: dict[str, dict[str, str]] = {}
# So a widget's cell shows the static picture its display bundle carries beside the live
# view (truss_lab.faces._widgets.widget_bundle), not the view no script here renders.
nb_mime_priority_overrides = [("html", "application/vnd.jupyter.widget-view+json", None)]

autodoc_member_order = "bysource"
autodoc_typehints = "none"  # the numpydoc Parameters section says the types
autosummary_generate = True
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
# An undocumented or unknown parameter, or a Returns section without a description,
# fails the build (tests/test_docstrings.py runs the examples; python -m
# scripts.numpydoc_check also checks the stages' names and the See Also sections).
numpydoc_validation_checks = {"PR01", "PR02", "PR10", "RT03"}

html_theme = "pydata_sphinx_theme"
html_title = f"truss_lab {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_static_path: list[str] = []
html_show_sourcelink = False


def _copy_notebooks() -> None:
    """The notebooks live in notebooks/ (nbmake runs them there); the site renders copies."""
    out = DOCS / "examples"
    out.mkdir(exist_ok=True)
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        target = out / nb.name
        if not target.exists() or target.read_bytes() != nb.read_bytes():
            shutil.copyfile(nb, target)


_copy_notebooks()
