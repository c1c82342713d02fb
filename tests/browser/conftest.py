"""Fixtures for the browser tests: a sandboxed JupyterLab server and Debian's chromium.

Run with ``make test-browser`` (or ``pytest -m browser tests/browser``). Nothing here
touches the network beyond 127.0.0.1: JupyterLab's news feed, update check, announcements
and PyPI extension manager are switched off, and the browser aborts every request that is
not for the local server. Playwright drives the chromium that Debian's package installs
(``scripts/install_browser.sh``); ``playwright install`` is never run.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path(os.environ.get("TRUSS_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",  # we run as root; chromium refuses to start sandboxed as root
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
SERVER_START_TIMEOUT_S = 90.0

# Lab plugins that would reach the internet or pop dialogs over the notebook.
DISABLED_LAB_PLUGINS = {
    "@jupyterlab/apputils-extension:announcements": True,
    "@jupyterlab/extensionmanager-extension": True,
}


def _free_port() -> int:
    """Ask the kernel for a free loopback port (bind to port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LabServer:
    """A running JupyterLab server: where it is and how to reach it."""

    port: int
    token: str
    root_dir: Path
    proc: subprocess.Popen[bytes]
    log_path: Path
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` without a trailing slash."""
        return f"http://127.0.0.1:{self.port}"

    def notebook_url(self, name: str) -> str:
        """The Lab URL that opens notebook ``name`` (relative to root_dir), with the token."""
        return f"{self.base_url}/lab/tree/{name}?token={self.token}"

    def api(self, method: str, path: str, timeout: float = 10.0) -> object:
        """Call the server's REST API with the token; returns decoded JSON (or None)."""
        req = urllib.request.Request(
            f"{self.base_url}{path}",
            method=method,
            headers={"Authorization": f"token {self.token}"},
        )
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            body = resp.read()
        return json.loads(body) if body else None

    def log_tail(self, n_chars: int = 4000) -> str:
        """The end of the server log, for failure messages."""
        try:
            return self.log_path.read_text(errors="replace")[-n_chars:]
        except OSError:
            return "<no server log>"


def _write_lab_config(home: Path, config_dir: Path, settings_dir: Path) -> None:
    """Config that keeps Lab offline, quiet, and from saving over the copied notebooks."""
    labconfig = config_dir / "labconfig"
    labconfig.mkdir(parents=True, exist_ok=True)
    (labconfig / "page_config.json").write_text(
        json.dumps({"disabledExtensions": DISABLED_LAB_PLUGINS}, indent=1)
    )
    # Settings files for the Lab front end: no autosave (the run's outputs must not be
    # written back), no "fetch news?" notification.
    docmanager = settings_dir / "@jupyterlab" / "docmanager-extension"
    docmanager.mkdir(parents=True, exist_ok=True)
    (docmanager / "plugin.jupyterlab-settings").write_text(json.dumps({"autosave": False}))
    # Start the notebook's kernel without the "Select Kernel" dialog.
    notebook = settings_dir / "@jupyterlab" / "notebook-extension"
    notebook.mkdir(parents=True, exist_ok=True)
    (notebook / "tracker.jupyterlab-settings").write_text(
        json.dumps({"autoStartDefaultKernel": True})
    )
    apputils = settings_dir / "@jupyterlab" / "apputils-extension"
    apputils.mkdir(parents=True, exist_ok=True)
    (apputils / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    (home / ".ipython").mkdir(parents=True, exist_ok=True)


def _wait_for_status(server: LabServer) -> None:
    """Poll /api/status with the token until the server answers, or fail with its log."""
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    last_err: Exception | None = None
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            raise RuntimeError(
                f"jupyter lab exited with code {server.proc.returncode} before answering "
                f"/api/status; log:\n{server.log_tail()}"
            )
        try:
            status = server.api("GET", "/api/status", timeout=2.0)
            if isinstance(status, dict) and "started" in status:
                return
        except (urllib.error.URLError, OSError, ValueError) as exc:
            last_err = exc
        time.sleep(0.25)
    raise RuntimeError(
        f"jupyter lab did not answer /api/status on port {server.port} within "
        f"{SERVER_START_TIMEOUT_S:.0f} s (last error: {last_err}); log:\n{server.log_tail()}"
    )


def _stop_server(server: LabServer) -> None:
    """Shut kernels down through the API, then end the server's whole process group."""
    if server.proc.poll() is None:
        try:
            kernels = server.api("GET", "/api/kernels", timeout=5.0)
            for k in kernels if isinstance(kernels, list) else []:
                server.api("DELETE", f"/api/kernels/{k['id']}", timeout=15.0)
        except (urllib.error.URLError, OSError, ValueError):
            pass  # the server is going down anyway; the signals below finish the job
    for sig, wait_s in ((signal.SIGTERM, 15.0), (signal.SIGKILL, 5.0)):
        if server.proc.poll() is not None:
            break
        try:
            os.killpg(server.proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            server.proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            continue


def copy_notebook_tree(dest: Path) -> Path:
    """Copy the repo's notebooks/ (and link its data siblings) under ``dest``.

    The notebooks run from a copy so that nothing Lab writes (checkpoints, outputs)
    lands in the working tree; the sibling data folders are linked, not copied, so
    relative paths like ``../datasets`` in a notebook still resolve.
    """
    nb_dest = dest / "notebooks"
    src = REPO / "notebooks"
    if src.is_dir():
        shutil.copytree(
            src, nb_dest, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__")
        )
    else:
        nb_dest.mkdir(parents=True)
    for sibling in ("datasets", "tests", "truss_lab"):
        if (REPO / sibling).exists():
            (dest / sibling).symlink_to(REPO / sibling, target_is_directory=True)
    return nb_dest


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    """Where screenshots go: $TRUSS_BROWSER_ARTIFACTS or browser_artifacts/ in the repo."""
    path = Path(os.environ.get("TRUSS_BROWSER_ARTIFACTS", REPO / "browser_artifacts"))
    path.mkdir(parents=True, exist_ok=True)
    print(f"\nbrowser test screenshots: {path}")
    return path


@pytest.fixture(scope="module")
def lab_server() -> Iterator[LabServer]:
    """A JupyterLab server on 127.0.0.1 with a random token, sandboxed dirs, torn down after."""
    pytest.importorskip("jupyterlab", reason="pip install 'truss_lab[browser]'")
    tmp = Path(tempfile.mkdtemp(prefix="truss_lab_browser_"))
    try:
        home = tmp / "home"
        dirs = {
            "JUPYTER_CONFIG_DIR": tmp / "jupyter_config",
            "JUPYTER_DATA_DIR": tmp / "jupyter_data",
            "JUPYTER_RUNTIME_DIR": tmp / "jupyter_runtime",
            "JUPYTERLAB_SETTINGS_DIR": tmp / "lab_settings",
            "JUPYTERLAB_WORKSPACES_DIR": tmp / "lab_workspaces",
            "IPYTHONDIR": home / ".ipython",
            "MPLCONFIGDIR": tmp / "mplconfig",
        }
        for d in (home, *dirs.values()):
            d.mkdir(parents=True, exist_ok=True)
        _write_lab_config(home, dirs["JUPYTER_CONFIG_DIR"], dirs["JUPYTERLAB_SETTINGS_DIR"])
        root_dir = copy_notebook_tree(tmp / "work")

        env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "JPY_"))}
        env.update({k: str(v) for k, v in dirs.items()})
        env.update(
            HOME=str(home),
            MPLBACKEND="module://matplotlib_inline.backend_inline",
            NO_PROXY="127.0.0.1,localhost",
            PYTHONDONTWRITEBYTECODE="1",
        )
        for proxy in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
            env.pop(proxy, None)

        port = _free_port()
        token = secrets.token_hex(24)
        log_path = tmp / "jupyter_lab.log"
        cmd = [
            sys.executable, "-m", "jupyterlab",
            "--ip=127.0.0.1",
            f"--port={port}",
            "--port-retries=0",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root_dir}",
            "--ServerApp.open_browser=False",
            "--ServerApp.allow_remote_access=False",
            "--LabApp.news_url=None",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.extension_manager=readonly",
            "--LabServerApp.open_browser=False",
        ]  # fmt: skip
        if os.geteuid() == 0:
            cmd.append("--allow-root")  # CI and dev machines here run everything as root
        with log_path.open("wb") as log:
            proc = subprocess.Popen(
                cmd,
                cwd=root_dir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # own process group, so teardown can end it whole
            )
        server = LabServer(port, token, root_dir, proc, log_path)
        try:
            _wait_for_status(server)
            yield server
        finally:
            _stop_server(server)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    """Debian's chromium driven by Playwright (no browser download), launched once for
    every browser test."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install 'truss_lab[browser]'")
    if not CHROMIUM.is_file():
        pytest.skip(f"{CHROMIUM} is missing; run scripts/install_browser.sh")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser: object, lab_server: LabServer) -> Iterator[object]:
    """A fresh page whose every request to anything but the local server is aborted."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})  # type: ignore[attr-defined]
    blocked: list[str] = []

    def _route(route: object) -> None:
        url = route.request.url  # type: ignore[attr-defined]
        parsed = urlparse(url)
        if parsed.scheme in ("data", "blob") or parsed.hostname in ("127.0.0.1", "localhost"):
            route.continue_()  # type: ignore[attr-defined]
        else:
            blocked.append(url)
            route.abort()  # type: ignore[attr-defined]

    context.route("**/*", _route)
    pg = context.new_page()
    pg.blocked_requests = blocked  # type: ignore[attr-defined]
    try:
        yield pg
    finally:
        context.close()


@pytest.fixture
def guarded_page(browser: Any) -> Iterator[Callable[..., Any]]:
    """Make a page that reaches only URLs starting with one of ``allowed`` (``data:``
    always): any other request is aborted and recorded in ``page.seen["blocked"]``, as
    are console errors (``"console"``) and uncaught page errors (``"pageerror"``).
    Keywords: ``viewport`` (default 1300 x 950) and ``offline``. The contexts close
    after the test."""
    contexts: list[Any] = []

    def make(*allowed: str, viewport: tuple[int, int] = (1300, 950),
             offline: bool = False) -> Any:
        context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]},
                                      offline=offline)
        contexts.append(context)
        seen: dict[str, list[str]] = {"blocked": [], "console": [], "pageerror": []}
        prefixes = (*allowed, "data:")

        def _route(route: Any) -> None:
            url = route.request.url
            if url.startswith(prefixes):
                route.continue_()
            else:
                seen["blocked"].append(url)
                route.abort()

        context.route("**/*", _route)
        page = context.new_page()
        page.on("console", lambda m: seen["console"].append(m.text)
                if m.type == "error" else None)
        page.on("pageerror", lambda e: seen["pageerror"].append(str(e)))
        page.seen = seen
        return page

    try:
        yield make
    finally:
        for context in contexts:
            context.close()


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker here too, so the module runs before pyproject lists it."""
    config.addinivalue_line(
        "markers", "browser: drives JupyterLab in headless chromium (make test-browser)"
    )
