"""The threshold explorer, as a researcher uses it: JupyterLab in a real browser.

Opens a notebook in JupyterLab (Debian's chromium, driven by Playwright), runs it with
Run → Run All Cells, checks the ipywidgets really render (not "Loading widget..."),
moves the ``truss-threshold-slider`` with the keyboard and checks that the
``truss-metrics`` text and the plot image both change. Screenshots before and after go
to ``browser_artifacts/`` (or $TRUSS_BROWSER_ARTIFACTS).

Two notebooks are driven: the project's ``02_tune_extraction_min_salience.ipynb`` and a
tiny self-made one with the same widget contract, which checks the harness itself (if
the harness can't see a slider move there, a pass on the real notebook means nothing).
"""

from __future__ import annotations

import hashlib
import re
import time
from pathlib import Path

import pytest

from .conftest import LabServer

pytestmark = pytest.mark.browser

TARGET_NOTEBOOK = "02_tune_extraction_min_salience.ipynb"
FIXTURE_NOTEBOOK = "_browser_fixture_threshold_explorer.ipynb"
SLIDER = ".truss-threshold-slider"
METRICS = ".truss-metrics"
RUN_ALL_TIMEOUT_MS = 240_000
UPDATE_TIMEOUT_MS = 60_000
ARROW_PRESSES = 6

# A stand-in with the widget contract that truss_lab's explorer follows: a FloatSlider
# (continuous_update=False) classed truss-threshold-slider, an HTML classed truss-metrics
# and a matplotlib figure redrawn in an Output widget whenever the slider commits.
FIXTURE_SOURCE = [
    "import ipywidgets as W\n"
    "import matplotlib.pyplot as plt\n"
    "import numpy as np\n"
    "from IPython.display import display\n"
    "\n"
    "rng = np.random.default_rng(0)\n"
    "scores = rng.random(300)\n"
    "labels = rng.random(300) < scores",
    "slider = W.FloatSlider(value=0.3, min=0.0, max=1.0, step=0.05,\n"
    "                       continuous_update=False, description='min salience')\n"
    "slider.add_class('truss-threshold-slider')\n"
    "metrics = W.HTML()\n"
    "metrics.add_class('truss-metrics')\n"
    "plot = W.Output()\n"
    "\n"
    "def update(change=None):\n"
    "    t = slider.value\n"
    "    kept = scores >= t\n"
    "    tp = int((kept & labels).sum())\n"
    "    metrics.value = (f'<b>threshold {t:.2f}</b>: kept {int(kept.sum())}, '\n"
    "                     f'precision {tp / max(int(kept.sum()), 1):.3f}, '\n"
    "                     f'recall {tp / int(labels.sum()):.3f}')\n"
    "    with plot:\n"
    "        plot.clear_output(wait=True)\n"
    "        fig, ax = plt.subplots(figsize=(5, 3))\n"
    "        ax.hist(scores, bins=20)\n"
    "        ax.axvline(t, color='red')\n"
    "        ax.set_title(f'threshold {t:.2f}')\n"
    "        display(fig)\n"
    "        plt.close(fig)\n"
    "\n"
    "slider.observe(update, names='value')\n"
    "update()\n"
    "display(W.VBox([slider, metrics, plot]))",
]

# True once every code cell shows an execution count ("[3]:", not "[*]:" or "[ ]:")
# and the kernel indicator (toolbar, or status bar) says idle.
JS_ALL_CELLS_RAN = """() => {
  const nb = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook');
  if (!nb) return false;
  const prompts = [...nb.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')];
  if (prompts.length === 0) return false;
  if (!prompts.every(p => /\\[\\d+\\]/.test(p.textContent))) return false;
  const ind = document.querySelector(
    '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook-ExecutionIndicator');
  if (ind && ind.getAttribute('data-status') && ind.getAttribute('data-status') !== 'idle')
    return false;
  return true;
}"""

JS_RUN_STARTED = """() => [...document.querySelectorAll(
    '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputArea-prompt')]
  .some(p => /\\[(\\*|\\d+)\\]/.test(p.textContent))"""

JS_KERNEL_IDLE = """() => {
  const ind = document.querySelector(
    '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook-ExecutionIndicator');
  return !ind || !ind.getAttribute('data-status') || ind.getAttribute('data-status') === 'idle';
}"""


def _timeout_error() -> type[Exception]:
    """Playwright's TimeoutError, imported late so collection works without playwright."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    return PlaywrightTimeoutError


def _write_fixture_notebook(root: Path) -> None:
    """Write the stand-in explorer notebook into the server's root dir."""
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# browser-test stand-in explorer")]
    nb.cells += [nbformat.v4.new_code_cell(src) for src in FIXTURE_SOURCE]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, str(root / FIXTURE_NOTEBOOK))


def _plot_state(cell: object) -> list[str]:
    """Hashes of every <img> src in the explorer cell's outputs (the rendered plots)."""
    srcs = cell.locator(".jp-OutputArea img").evaluate_all(  # type: ignore[attr-defined]
        "imgs => imgs.map(i => i.getAttribute('src') || '')"
    )
    return [hashlib.sha256(s.encode()).hexdigest()[:16] for s in srcs]


def _run_all_cells(page: object) -> None:
    """Run → Run All Cells from the main menu bar, as a person would."""
    menubar = page.locator("#jp-MainMenu")  # type: ignore[attr-defined]
    for _attempt in range(3):
        menubar.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^\s*Run\s*$")).click()
        menu = page.locator(".lm-Menu:visible").last  # type: ignore[attr-defined]
        menu.locator(".lm-Menu-item", has_text=re.compile(r"^\s*Run All Cells")).first.click()
        try:  # the run has started once any code cell is queued ([*]) or numbered ([1])
            page.wait_for_function(JS_RUN_STARTED, timeout=20_000)  # type: ignore[attr-defined]
            return
        except _timeout_error():  # the click was lost (e.g. the menu closed under it)
            page.keyboard.press("Escape")  # type: ignore[attr-defined]
    raise AssertionError("Run → Run All Cells did not start any cell (3 tries)")


def _open_notebook(page: object, lab_server: LabServer, name: str) -> None:
    """Load the notebook in Lab and wait until its kernel is up, connected and idle."""
    page.goto(lab_server.notebook_url(name), wait_until="domcontentloaded")  # type: ignore[attr-defined]
    page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell").first.wait_for(  # type: ignore[attr-defined]
        state="visible", timeout=90_000
    )
    # A Run All issued before the page's kernel websocket is up is silently dropped, so
    # wait until the server sees this notebook's kernel with a live connection.
    deadline = time.monotonic() + 90.0
    while time.monotonic() < deadline:
        sessions = lab_server.api("GET", "/api/sessions")
        kernels = [s["kernel"] for s in sessions if s.get("path") == name]  # type: ignore[union-attr]
        if kernels and kernels[0].get("connections", 0) >= 1 and (
            kernels[0].get("execution_state") == "idle"
        ):
            break
        page.wait_for_timeout(250)  # type: ignore[attr-defined]
    else:
        raise AssertionError(f"{name}: the kernel never came up connected and idle")
    page.wait_for_function(JS_KERNEL_IDLE, timeout=30_000)  # type: ignore[attr-defined]


def _drive_explorer(page: object, lab_server: LabServer, name: str, shots: Path) -> None:
    """Open ``name``, run it, move the slider, and check metrics and plot follow."""
    stem = Path(name).stem
    _open_notebook(page, lab_server, name)
    _run_all_cells(page)
    page.wait_for_function(JS_ALL_CELLS_RAN, timeout=RUN_ALL_TIMEOUT_MS)  # type: ignore[attr-defined]

    errors = page.locator(  # type: ignore[attr-defined]
        ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.error']"
    )
    if errors.count():
        page.screenshot(path=str(shots / f"{stem}_error.png"), full_page=True)  # type: ignore[attr-defined]
        pytest.fail(f"{name}: a cell raised:\n{errors.first.inner_text()[:3000]}")

    panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)").first  # type: ignore[attr-defined]
    slider = panel.locator(SLIDER).first
    try:
        slider.wait_for(state="visible", timeout=60_000)
    except _timeout_error():
        page.screenshot(path=str(shots / f"{stem}_no_widget.png"), full_page=True)  # type: ignore[attr-defined]
        loading = panel.get_by_text("Loading widget").count()
        raise AssertionError(
            f"{name}: no visible {SLIDER} after Run All Cells "
            f"({loading} 'Loading widget...' placeholders: is the Lab widget manager, "
            "jupyterlab_widgets, installed?)"
        ) from None
    cell = panel.locator(".jp-Cell", has=page.locator(SLIDER)).first  # type: ignore[attr-defined]
    metrics = cell.locator(METRICS).first
    metrics.wait_for(state="visible", timeout=30_000)
    # Rendered widgets, not the placeholder or the text/plain fallback of a missing manager.
    outputs = cell.locator(".jp-OutputArea")
    assert outputs.get_by_text("Loading widget").count() == 0, "widget placeholder still shown"
    assert outputs.get_by_text("FloatSlider(").count() == 0, "widget shown as plain text"
    assert slider.locator(".noUi-handle").count() == 1, "slider has no draggable handle"
    assert cell.locator(".jp-OutputArea img").count() >= 1, f"{name}: explorer shows no plot"

    before_value = slider.locator(".widget-readout").inner_text()
    before = _settled_view(page, slider, metrics, cell, differs_from=None)
    _shoot(page, slider, cell, shots, stem, "before")

    # ipywidgets 8 sliders are noUiSlider: the handle takes keyboard focus, and each
    # arrow key commits a value (continuous_update=False only defers mouse drags).
    handle = slider.locator(".noUi-handle").first
    handle.focus()
    for _ in range(ARROW_PRESSES):
        handle.press("ArrowRight")
        page.wait_for_timeout(100)  # type: ignore[attr-defined]
    after_value = slider.locator(".widget-readout").inner_text()
    assert after_value != before_value, (
        f"{name}: slider readout stayed at {before_value!r} after {ARROW_PRESSES} ArrowRight"
    )
    after = _settled_view(page, slider, metrics, cell, differs_from=before)
    _shoot(page, slider, cell, shots, stem, "after")
    print(f"\n{name}: slider {before_value} -> {after_value}")
    print(f"  metrics before: {before[0]!r}\n  metrics after:  {after[0]!r}")
    print(f"  screenshots: {shots}/{stem}_{{before,after}}{{,_explorer}}.png")

    assert after[0] != before[0], f"{name}: the metrics text did not change"
    assert after[1] != before[1], f"{name}: the plot image did not change"
    # The metrics describe the value the slider now shows, not a stale one.
    assert _numbers(after_value)[0] in _numbers(after[0]), (
        f"{name}: metrics {after[0]!r} do not show the slider's value {after_value!r}"
    )
    assert not page.blocked_requests, (  # type: ignore[attr-defined]
        f"the page tried to reach outside 127.0.0.1: {page.blocked_requests[:5]}"  # type: ignore[attr-defined]
    )


def _numbers(text: str) -> list[float]:
    """Every decimal number in ``text``, as floats rounded to 6 places."""
    return [round(float(m), 6) for m in re.findall(r"-?\d+(?:\.\d+)?", text)]


def _settled_view(
    page: object,
    slider: object,
    metrics: object,
    cell: object,
    differs_from: tuple[str, list[str]] | None,
) -> tuple[str, list[str]]:
    """(metrics text, plot hashes) once they show the slider's value and stop changing.

    Each arrow press is its own commit, so the kernel redraws several times; a view
    is settled when the metrics name the readout's value, the kernel is idle, and
    two looks half a second apart agree (and, after a move, differ from ``differs_from``).
    """
    deadline = time.monotonic() + UPDATE_TIMEOUT_MS / 1000
    last: tuple[str, list[str]] | None = None
    while time.monotonic() < deadline:
        value = _numbers(slider.locator(".widget-readout").inner_text())  # type: ignore[attr-defined]
        view = (metrics.inner_text(), _plot_state(cell))  # type: ignore[attr-defined]
        ready = (
            bool(view[1])
            and bool(value)
            and value[0] in _numbers(view[0])
            and page.evaluate(JS_KERNEL_IDLE)  # type: ignore[attr-defined]
            and (differs_from is None or (view[0] != differs_from[0]
                                          and view[1] != differs_from[1]))
        )
        if ready and view == last:
            return view
        last = view if ready else None
        page.wait_for_timeout(500)  # type: ignore[attr-defined]
    view = (metrics.inner_text(), _plot_state(cell))  # type: ignore[attr-defined]
    problems = []
    if differs_from is not None and view[0] == differs_from[0]:
        problems.append("the metrics text did not change")
    if differs_from is not None and view[1] == differs_from[1]:
        problems.append("the plot image did not change")
    if not view[1]:
        problems.append("no plot image")
    problems.append(f"readout {slider.locator('.widget-readout').inner_text()!r}, "  # type: ignore[attr-defined]
                    f"metrics {view[0]!r}")
    raise AssertionError(
        f"the explorer did not settle within {UPDATE_TIMEOUT_MS / 1000:.0f} s: "
        + "; ".join(problems)
    )


def _shoot(page: object, slider: object, cell: object, shots: Path, stem: str, when: str) -> None:
    """Save the page as seen and a clip of slider + metrics + plot, as ``{stem}_{when}*.png``."""
    # Slider at the top of the notebook's scroll area, clear of the sticky toolbar.
    slider.evaluate(  # type: ignore[attr-defined]
        """el => { el.scrollIntoView({block: 'start'});
                   const sc = el.closest('.jp-WindowedPanel-outer');
                   if (sc) sc.scrollTop = Math.max(0, sc.scrollTop - 40); }"""
    )
    page.wait_for_timeout(300)  # type: ignore[attr-defined]
    page.screenshot(path=str(shots / f"{stem}_{when}.png"))  # type: ignore[attr-defined]
    boxes = [slider.bounding_box()]  # type: ignore[attr-defined]
    boxes += [cell.locator(".jp-OutputArea img").first.bounding_box()]  # type: ignore[attr-defined]
    boxes = [b for b in boxes if b]
    x0 = min(b["x"] for b in boxes) - 10
    y0 = min(b["y"] for b in boxes) - 10
    x1 = max(b["x"] + b["width"] for b in boxes) + 10
    y1 = max(b["y"] + b["height"] for b in boxes) + 10
    page.screenshot(  # type: ignore[attr-defined]
        path=str(shots / f"{stem}_{when}_explorer.png"),
        full_page=True,
        clip={"x": max(x0, 0), "y": max(y0, 0), "width": x1 - max(x0, 0),
              "height": y1 - max(y0, 0)},
    )


def test_harness_sees_slider_move_in_stand_in_notebook(
    page: object, lab_server: LabServer, artifacts_dir: Path
) -> None:
    """The harness itself: a minimal explorer must visibly react to the slider."""
    _write_fixture_notebook(lab_server.root_dir)
    _drive_explorer(page, lab_server, FIXTURE_NOTEBOOK, artifacts_dir)


def test_threshold_explorer_in_jupyterlab(
    page: object, lab_server: LabServer, artifacts_dir: Path
) -> None:
    """02_tune_extraction_min_salience.ipynb: Run All, move the slider, metrics+plot follow."""
    # A missing notebook fails rather than skips: a rename must not silently drop this test.
    assert (lab_server.root_dir / TARGET_NOTEBOOK).is_file(), f"notebooks/{TARGET_NOTEBOOK} missing"
    _drive_explorer(page, lab_server, TARGET_NOTEBOOK, artifacts_dir)
