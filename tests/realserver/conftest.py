"""A LiteLLM proxy (a third-party OpenAI-compatible server from the package index) on
127.0.0.1, answering from mock responses: no network, no real key, nothing upstream.

The models (all mocks, set in the proxy's own config file):

- ``lesson-mock``: a valid lessons JSON completion;
- ``malformed-mock``: a body that is not lessons JSON;
- ``cooling-mock``: two deployments that answer LiteLLM's mock rate-limit error
  (429). With ``allowed_fails: 0`` each failure cools its deployment down for
  ``cooldown_time`` seconds; once both are cooling, the router answers 429 with
  ``Retry-After`` (the seconds left), which is how this proxy sends one.

The proxy's master key is made per session here (``sk-truss-`` + random hex).
:class:`LiteLLMProxy` starts the server in its own process group and
:meth:`~LiteLLMProxy.stop` ends that group (TERM, then KILL) and checks no member
is left; the fixture stops it even when a test fails.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

COOLDOWN_SECONDS = 2
LESSON = {"text": "After a DST change, check cron jobs that fire between 01:00 and 03:00",
          "salience": 0.8, "evidence": ["summary"]}
LESSON_TEXT = json.dumps({"lessons": [LESSON]})
MALFORMED_TEXT = 'Sure! Here are the lessons: {"lessons": [oops'
READY_TIMEOUT = 180.0  # seconds: the proxy imports a lot, and CI shares 2 cores


def _config(master_key: str) -> str:
    def model(name: str, upstream: str, mock: str) -> str:
        # json.dumps gives a YAML-safe double-quoted scalar.
        return (f"  - model_name: {name}\n    litellm_params:\n"
                f"      model: openai/{upstream}\n      api_key: not-a-real-key\n"
                f"      mock_response: {json.dumps(mock)}\n")

    return (
        "model_list:\n"
        + model("lesson-mock", "lesson-mock", LESSON_TEXT)
        + model("malformed-mock", "malformed-mock", MALFORMED_TEXT)
        + model("cooling-mock", "cooling-a", "litellm.RateLimitError")
        + model("cooling-mock", "cooling-b", "litellm.RateLimitError")
        + "router_settings:\n  num_retries: 0\n  allowed_fails: 0\n"
        + f"  cooldown_time: {COOLDOWN_SECONDS}\n"
        + f"general_settings:\n  master_key: {master_key}\n"
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _litellm_bin() -> Path:
    # TRUSS_LAB_LITELLM: a proxy installed in an environment of its own (its pins would
    # downgrade packages of the project's, e.g. huggingface_hub and python-dateutil).
    exe = Path(os.environ.get("TRUSS_LAB_LITELLM") or Path(sys.executable).parent / "litellm")
    if not exe.exists():
        pytest.fail(f"no LiteLLM proxy at {exe}: install the extra with `make test-realserver` "
                    "(pip install -e '.[dev,realserver]'), or name one with "
                    "TRUSS_LAB_LITELLM=PATH")
    return exe


class LiteLLMProxy:
    """One LiteLLM proxy process on 127.0.0.1:``port`` (restartable on the same port)."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.master_key = "sk-truss-" + secrets.token_hex(16)
        self.config = workdir / "litellm.yaml"
        self.config.write_text(_config(self.master_key), encoding="utf-8")
        self.log = workdir / "litellm.log"
        self.port = _free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def _env(self) -> dict[str, str]:
        # Only what the proxy needs: no key, proxy or base URL of the caller's.
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.workdir),
            "LANG": "C.UTF-8",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # never fetch the price map
            "LITELLM_TELEMETRY": "False",
            "HF_HUB_OFFLINE": "1",
            "NO_PROXY": "127.0.0.1,localhost",
        }

    def start(self) -> None:
        """Start the proxy and wait until it answers a chat completion."""
        assert self.proc is None, "already running"
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                [str(_litellm_bin()), "--config", str(self.config), "--host", "127.0.0.1",
                 "--port", str(self.port), "--num_workers", "1"],
                cwd=self.workdir, env=self._env(), stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True)
        self.starts += 1
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                tail = self.log.read_text(errors="replace")[-3000:]
                self.proc = None
                pytest.fail(f"the LiteLLM proxy exited while starting; its log ends:\n{tail}")
            try:
                r = httpx.post(self.base_url + "/chat/completions", timeout=5.0,
                               headers={"Authorization": f"Bearer {self.master_key}"},
                               json={"model": "lesson-mock",
                                     "messages": [{"role": "user", "content": "ready?"}]})
                if r.status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.5)
        self.stop()
        pytest.fail(f"the LiteLLM proxy did not answer within {READY_TIMEOUT:g}s; "
                    f"log: {self.log}")

    def stop(self) -> None:
        """End the process group the proxy was started in; no member may outlive it."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        pgid = proc.pid  # start_new_session: the group id is the leader's pid
        try:
            os.killpg(pgid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(pgid, signal.SIGKILL)  # workers that ignored TERM
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)
        assert not _group_alive(pgid), f"processes of group {pgid} outlived the proxy"


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - exists, not ours
        return True
    return True


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiteLLMProxy]:
    server = LiteLLMProxy(tmp_path_factory.mktemp("litellm"))
    server.start()
    try:
        yield server
    finally:
        server.stop()
