"""The documentation site in a real browser (Debian's chromium, Playwright), offline.

The site ``make docs`` built (built here when ``docs/_build/html`` is missing) is
served from 127.0.0.1 by a thread of this process; every other request is aborted.
Checked: the home page leads to the tutorials and the first-hour tutorial; every link
of the tutorial into the site opens a page with a title (no 404); the search finds
``extraction_min_salience`` in the glossary and the formats; the API page of
``sweep_run`` and notebook 02's threshold choice render. Screenshots of the tutorial,
the search results, ``sweep_run``'s page and notebook 02's choice cell go to
``browser_artifacts/``.
"""

from __future__ import annotations

import functools
import http.server
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlparse

import pytest

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
SITE = REPO / "docs" / "_build" / "html"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    """The base URL of the built site, served on an ephemeral loopback port."""
    if not (SITE / "index.html").exists():  # make docs' own command
        subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-n", "-q",
                        "-b", "html", "docs", str(SITE)], cwd=REPO, check=True)
    handler = functools.partial(_Quiet, directory=str(SITE))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def site_page(guarded_page: Any, site: str) -> Any:
    """A page that reaches the site's server only (the shared guarded page)."""
    return guarded_page(site)


def _internal_links(page: Any, site: str) -> list[str]:
    """Absolute URLs of the article's links into the site, anchors dropped, once each."""
    hrefs = page.evaluate(
        "() => [...document.querySelectorAll('article a[href]')].map(a => a.href)")
    out = []
    for href in hrefs:
        url = urljoin(page.url, href).split("#", 1)[0]
        if url.startswith(site) and url not in out and urlparse(url).path.endswith(".html"):
            out.append(url)
    return out


def test_tutorial_links_search_api_and_notebook(site_page: Any, site: str,
                                                artifacts_dir: Path) -> None:
    page = site_page
    page.goto(site + "index.html")
    assert page.locator("h1").first.inner_text().startswith("truss_lab")

    # home -> tutorials -> your first hour, by the links a reader clicks
    page.locator("article a", has_text="Tutorials").first.click()
    page.wait_for_url("**/tutorials/index.html")
    page.locator("article a", has_text="Your first hour").first.click()
    page.wait_for_url("**/tutorials/first-hour.html")
    assert page.locator("h1").first.inner_text().startswith("Your first hour")
    code = page.locator("article div.highlight-python pre").first.inner_text()
    assert "import truss_lab as tl" in code  # the README's quickstart, included
    page.screenshot(path=str(artifacts_dir / "docs_tutorial.png"), full_page=False)

    # every link of the tutorial into the site opens a page with a title
    links = _internal_links(page, site)
    assert len(links) >= 8, links
    broken = []
    for url in links:
        response = page.goto(url)
        if response is None or response.status != 200 or not page.locator("h1").count():
            broken.append(url)
    assert not broken, broken

    # the search box's page finds the threshold's name where it is defined
    page.goto(site + "search.html?q=extraction_min_salience")
    results = page.locator("#search-results ul.search li")
    results.first.wait_for(timeout=30_000)
    found = results.all_inner_texts()
    assert any("Glossary" in r for r in found), found
    assert any("File formats" in r for r in found), found
    page.screenshot(path=str(artifacts_dir / "docs_search.png"), full_page=False)

    # the API page of sweep_run: its signature and docstring, generated
    page.goto(site + "reference/generated/truss_lab.sweep_run.html")
    signature = page.locator("dl.py.function > dt").first
    assert "sweep_run" in signature.inner_text()
    page.screenshot(path=str(artifacts_dir / "docs_api_sweep_run.png"), full_page=False)

    # notebook 02, executed into the site: its threshold choice printed
    page.goto(site + "examples/02_tune_extraction_min_salience.html")
    # The theme's sticky header (and its skip link) would be drawn over a tall cell's
    # screenshot: hidden for the cells' pictures.
    page.add_style_tag(content=".bd-header, .skip-link { display: none !important; }")
    outputs = page.locator("div.cell_output")
    assert outputs.count() > 3
    choice = page.locator("div.cell", has=page.locator(
        "div.cell_input", has_text="choice = choose_run_threshold")).first
    out = choice.locator("div.cell_output")
    assert "chosen threshold" in out.inner_text()
    # a short table, not a wall of dict text (issue 37)
    assert out.locator("table").count() >= 1 and "{'" not in out.inner_text()
    assert "nan" not in out.locator("table").first.inner_text().lower()
    choice.scroll_into_view_if_needed()
    choice.screenshot(path=str(artifacts_dir / "docs_notebook02_choice.png"))

    # the explorer's cell: its static picture (no kernel here), not a blank cell
    explorer = page.locator("div.cell", has=page.locator(
        "div.cell_input", has_text="# threshold-explorer")).first
    assert explorer.locator("div.cell_output img").count() == 1
    assert "min salience" in explorer.locator("div.cell_output").inner_text()
    explorer.scroll_into_view_if_needed()
    explorer.screenshot(path=str(artifacts_dir / "docs_notebook02_explorer.png"))

    assert not page.seen["blocked"], page.seen["blocked"]
    assert not page.seen["pageerror"], page.seen["pageerror"]
