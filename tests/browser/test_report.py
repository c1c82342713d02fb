"""The standalone HTML report in a real browser (Debian's chromium, Playwright), offline.

The report of two sample runs, one lesson of which holds ``<script>``, is opened from
``file://`` in a context with the network switched off and every non-file request
aborted. Checked: the first screen holds the summary (each run's chosen threshold,
the comparison's verdict) above any table, the plots render, the header names the
truth, the text box filters
the list down to one verdict, the verdict, error and reference filters and the pager
work, a verdict shows its reference lessons with the lesson each run matched to them,
the ``<script>`` lesson and reference show as text and never run, and the console stays
free of errors. Screenshots of the first screen, the sweep, the list filtered to one
verdict, a verdict with its references and the escaped lesson go to
``browser_artifacts/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.builders.cli import invoke
from tests.builders.report import HOSTILE_ANNOTATOR, hostile_sample
from truss_lab.faces import write_report

pytestmark = pytest.mark.browser

# Enough verdicts that one holds a reference both runs' lessons matched: on the sample,
# whose wording does not flatter the lexical matcher, the first 80 hold none, 400 hold 3.
N_VERDICTS = 400


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """``(path, verdict_hash)``: a report of the two recorded sample runs and the
    verdict whose lesson holds ``<script>`` (its database is ``lab.duckdb`` beside it)."""
    tmp = tmp_path_factory.mktemp("report")
    store, run_ids, target = hostile_sample(tmp)
    with store:
        path = write_report(store, run_ids, tmp / "report.html", n_boot=50,
                            max_verdicts=N_VERDICTS)
    return path, target


@pytest.fixture
def offline_page(guarded_page: Any) -> Any:
    """A page with the network off that opens file: URLs only (the shared guarded page)."""
    return guarded_page("file:", offline=True)


def _visible(page: Any) -> list[dict[str, str]]:
    return page.evaluate(
        "() => [...document.querySelectorAll('details.verdict')].filter(e => !e.hidden)"
        ".map(e => ({outcome: e.dataset.outcome, errors: e.dataset.errors, "
        "refs: e.dataset.refs}))")


def test_report_offline_filter_escape_and_screenshots(
    report: tuple[Path, str], offline_page: Any, artifacts_dir: Path
) -> None:
    path, target = report
    page = offline_page
    page.goto(path.as_uri())
    status = page.locator("#filter-status")
    status.wait_for()
    assert status.inner_text().startswith(f"{N_VERDICTS} of {N_VERDICTS} verdicts match")
    assert len(_visible(page)) == 25  # first page
    assert page.locator("#truth").inner_text() == (
        "truth: lessons judged by labels (every run has gold labels) · correction none")

    # the first screen answers (issue 37): each run's chosen threshold against 0.70 and
    # the comparison's verdict are in view before any table or scrolling
    answers = page.locator("#summary li")
    assert answers.count() >= 3
    for i in range(3):
        box = answers.nth(i).bounding_box()
        assert box is not None and box["y"] + box["height"] <= 950, box
    assert "chosen threshold" in answers.first.inner_text()
    assert " vs " in answers.nth(2).inner_text() and "McNemar" in answers.nth(2).inner_text()
    first_table = page.locator("table").first.bounding_box()
    assert first_table is not None and first_table["y"] > answers.nth(2).bounding_box()["y"]
    page.screenshot(path=str(artifacts_dir / "report_first_screen.png"), full_page=False)

    # every plot decoded from its data: URI
    widths = page.evaluate(
        "() => [...document.querySelectorAll('img.plot')].map(i => i.naturalWidth)")
    assert len(widths) >= 5 and min(widths) > 100
    sweep = page.locator("#sweep img.plot").first
    sweep.scroll_into_view_if_needed()
    sweep.screenshot(path=str(artifacts_dir / "report_sweep.png"))

    # the pager and the verdict / error filters
    page.click("#page-next")
    assert "page 2 of" in status.inner_text()
    page.select_option("#outcome-filter", "fail")
    shown = _visible(page)
    assert shown and {v["outcome"] for v in shown} == {"fail"}
    page.check("#errors-only")
    shown = _visible(page)
    assert shown and all(v["errors"] != "0" for v in shown)
    page.uncheck("#errors-only")
    page.select_option("#outcome-filter", "")
    page.check("#refs-only")
    shown = _visible(page)
    assert shown and all(v["refs"] != "0" for v in shown)
    page.uncheck("#refs-only")

    # a verdict whose references both runs matched: the table says which lesson
    with_refs = page.evaluate(
        "() => [...document.querySelectorAll('details.verdict')].find(e => "
        "[...e.querySelectorAll('table.references td:last-child')].some(td => "
        "(td.textContent.match(/lesson #/g) || []).length == 2)).dataset.hash")
    page.fill("#verdict-filter", with_refs)
    assert status.inner_text().startswith(f"1 of {N_VERDICTS} verdicts match")
    verdict = page.locator("details.verdict:not([hidden])")
    verdict.locator("> summary").click()
    refs = verdict.locator("table.references")
    assert refs.is_visible() and "reference lesson" in verdict.locator("> summary").inner_text()
    claimed = refs.locator("td:last-child", has_text="lesson #").first.inner_text()
    assert claimed.count("lesson #") == 2 and " · " in claimed  # one per run
    matched = verdict.locator("table.lessons td", has_text="(0.")
    assert matched.count() >= 2  # the lessons' side of the same pairs
    verdict.screenshot(path=str(artifacts_dir / "report_verdict_references.png"))
    verdict.locator("> summary").click()

    # the text box: one verdict by its hash
    page.fill("#verdict-filter", target[:16])
    assert status.inner_text().startswith(f"1 of {N_VERDICTS} verdicts match")
    assert len(_visible(page)) == 1
    verdict = page.locator("details.verdict:not([hidden])")
    verdict.locator("> summary").click()
    assert target in verdict.inner_text()
    # the section: its filter bar and the one verdict left (the others are hidden)
    page.locator("section#verdicts").screenshot(
        path=str(artifacts_dir / "report_filtered_verdict.png"))

    # the hostile lesson is text: its markup shows, nothing ran, no element was made
    cell = verdict.locator("td.lesson-text", has_text="<script>window.__pwned = 1</script>")
    assert cell.count() == 1 and cell.is_visible()
    assert "& keep the <b>text</b>" in cell.inner_text()
    assert cell.locator("script, b").count() == 0
    assert page.locator("#verdicts script").count() == 0
    assert page.evaluate("() => window.__pwned") is None
    # so are its hostile reference lesson and annotator (no script, no img made)
    ref = verdict.locator("table.references td.lesson-text",
                          has_text="<script>window.__pwnedRef = 1</script>")
    assert ref.count() == 1 and "<img src=x onerror=alert(1)>" in ref.inner_text()
    assert verdict.locator("table.references td", has_text=HOSTILE_ANNOTATOR).count() == 1
    assert page.locator("#verdicts img, #verdicts i").count() == 0
    assert page.evaluate("() => window.__pwnedRef") is None
    cell.locator("xpath=ancestor::table[1]").screenshot(
        path=str(artifacts_dir / "report_escaped_lesson.png"))

    assert page.seen["pageerror"] == []
    assert page.seen["console"] == []
    assert page.seen["blocked"] == []
    for name in ("report_first_screen.png", "report_sweep.png", "report_filtered_verdict.png",
                 "report_verdict_references.png", "report_escaped_lesson.png"):
        assert (artifacts_dir / name).stat().st_size > 1000


def test_report_tables_and_saved_plots_screenshots(
    report: tuple[Path, str], offline_page: Any, artifacts_dir: Path
) -> None:
    """Issue 29: the report's runs table, sweep table (chosen row named and marked),
    choice and comparison as a reader sees them, and the plots the CLI saves (each
    titled with run, truth and correction), all in ``browser_artifacts/``."""
    path, _ = report
    db = path.parent / "lab.duckdb"
    page = offline_page
    page.goto(path.as_uri())
    page.locator("#filter-status").wait_for()
    shots = {"report_runs.png": "section#runs",
             "report_sweep_table.png": "div.sweep-rows >> nth=0",
             "report_choice.png": "div.choice >> nth=0",
             "report_comparison.png": "section#comparison"}
    for name, where in shots.items():
        el = page.locator(where)
        el.scroll_into_view_if_needed()
        el.screenshot(path=str(artifacts_dir / name))
        assert (artifacts_dir / name).stat().st_size > 1000
    # the tables fit the page: nothing wider than the window
    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")
    assert page.locator("div.sweep-rows tr.mark").first.inner_text().startswith("chosen")
    a, b = (h.inner_text() for h in page.locator("section#sweep h3").all()[:2])
    saved = {"saved_sweep.png": ["sweep", a, "--n-boot", "100"],
             "saved_compare.png": ["compare", a, b, "--n-boot", "100"],
             "saved_calibration.png": ["calibrate", a]}
    for name, args in saved.items():
        out = artifacts_dir / name
        r = invoke(*args, "--db", db, "--plot", out)
        assert r.exit_code == 0, r.output
        assert f"plot: wrote {out}" in r.output and out.stat().st_size > 1000
