"""A real, scriptable OpenAI-compatible HTTP server on 127.0.0.1 for tests and benchmarks.

Each test scripts the replies (status, headers, body, delay) in order; when
the script runs out, the default reply is a chat completion that echoes the
last message. The server records every request (path, headers, JSON body)
and the highest number of requests it saw in flight at once. A reply may drip
(one byte every so many seconds) or leave out its Content-Length: the servers
the call deadline and the answer-size cap are tested against.

:class:`CountingResponder` is the model stand-in that answers each call
differently (a sampling model): it numbers the calls it answers and hands the
number to its subclass's ``answer``.

Run as a script (``python -m tests.builders.http_server --latency 0.1``) it serves the
default reply with a fixed delay and prints its base URL on the first line of
stdout; the provider benchmark uses it that way, in its own process.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import itertools
import json
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer."""

    status: int = 200
    body: Any = None  # dict → JSON, str/bytes → raw, None → the default completion
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    # > 0: a slow drip, one byte of the answer every ``drip`` seconds (from its status
    # line on, or from its body on with ``drip_body``); the deadline tests' server.
    drip: float = 0.0
    drip_body: bool = False
    # False: no Content-Length, the body ends when the connection closes.
    length: bool = True


@dataclass
class Seen:
    """One request as the server received it."""

    path: str
    headers: dict[str, str]
    body: Any
    at: float


def default_completion(body: Any) -> dict[str, Any]:
    """A chat completion whose text is a deterministic function of the messages."""
    messages = body.get("messages", []) if isinstance(body, dict) else []
    last = messages[-1]["content"] if messages else ""
    digest = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()[:12]
    text = json.dumps({"lessons": [{"text": f"about {last[:40]}", "salience": 0.8}],
                       "id": digest})
    # ``n`` > 1 (OpenAI, vLLM): one choice per sample, choice i > 0 told apart by its id.
    n = body.get("n", 1) if isinstance(body, dict) else 1
    n = n if type(n) is int and n >= 1 else 1
    texts = [text] + [json.dumps({"lessons": [{"text": f"about {last[:40]}", "salience": 0.8}],
                                  "id": f"{digest}-{i}"}) for i in range(1, n)]
    return {
        "id": "chatcmpl-" + digest,
        "object": "chat.completion",
        "model": body.get("model", "unknown") if isinstance(body, dict) else "unknown",
        "choices": [{"index": i, "message": {"role": "assistant", "content": t},
                     "finish_reason": "stop"} for i, t in enumerate(texts)],
        "usage": {"prompt_tokens": len(last.split()), "completion_tokens": 7, "total_tokens": 0},
    }


class CountingResponder:
    """A responder that answers each call differently, like a sampling model.

    It numbers the calls it answers 1, 2, ... (under a lock: the server answers
    from many threads; a scripted :class:`Reply` takes no number) and answers the
    n-th with the default completion whose text is ``answer(body, n)`` and whose
    usage moves with n (``completion_tokens`` n, ``prompt_tokens`` from
    :meth:`prompt_tokens`). A subclass writes only its ``answer``.
    """

    def __init__(self) -> None:
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()

    def answer(self, body: Any, n: int) -> str:
        """The completion text of the n-th call, ``body`` its request."""
        raise NotImplementedError

    def prompt_tokens(self, n: int) -> int:
        """The n-th call's prompt tokens (default 100 + n, told apart from the others)."""
        return 100 + n

    def __call__(self, body: Any) -> dict[str, Any]:
        with self._lock:
            n = next(self._numbers)
        out = default_completion(body)
        out["choices"][0]["message"]["content"] = self.answer(body, n)
        out["usage"] = {"prompt_tokens": self.prompt_tokens(n), "completion_tokens": n,
                        "total_tokens": 0}
        return out


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client killed mid-run (the SIGKILL tests) resets its kept-alive connection:
        # that is the client's end, not a server error worth a traceback on stderr.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class ScriptedServer:
    """A ThreadingHTTPServer on an ephemeral port, driven by a reply script."""

    def __init__(self, *, latency: float = 0.0,
                 responder: Callable[[Any], Any] | None = None) -> None:
        self.latency = latency
        # What answers a request once the script is empty (default: default_completion);
        # a test's model stand-in, e.g. one that honours response_format.
        self.responder = responder or default_completion
        self.script: collections.deque[Reply] = collections.deque()
        self.requests: list[Seen] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Like real servers (uvicorn, llama.cpp): no Nagle, or a split
            # header/body write waits for the client's delayed ACK (~40 ms).
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                server._handle(self)

        self._httpd = _Server(("127.0.0.1", 0), Handler, bind_and_activate=False)
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self._httpd.request_queue_size = 256
        self._httpd.allow_reuse_address = True
        self._httpd.server_bind()
        self._httpd.server_activate()
        self.port = self._httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def start(self) -> ScriptedServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def add(self, *replies: Reply) -> None:
        """Queue replies, answered in order before the default."""
        with self._lock:
            self.script.extend(replies)

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length)
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = raw
        with self._lock:
            self.requests.append(
                Seen(h.path, {k.lower(): v for k, v in h.headers.items()}, body, time.monotonic())
            )
            reply = self.script.popleft() if self.script else Reply(delay=self.latency)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if reply.delay:
                time.sleep(reply.delay)
        finally:
            # Counted out before answering: the client may fire its next request
            # the moment the answer lands, and that must not look like overlap.
            with self._lock:
                self.in_flight -= 1
        payload = reply.body
        if payload is None:
            payload = self.responder(body)
        data = (
            payload if isinstance(payload, bytes)
            else payload.encode() if isinstance(payload, str)
            else json.dumps(payload).encode()
        )
        try:
            if reply.drip or not reply.length:
                _send_raw(h, reply, data)
                return
            h.send_response(reply.status)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(data)))
            for k, v in reply.headers.items():
                h.send_header(k, v)
            # Headers and body in one write (one segment for small answers).
            h._headers_buffer.append(b"\r\n")  # type: ignore[attr-defined]
            h._headers_buffer.append(data)  # type: ignore[attr-defined]
            h.flush_headers()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test); nothing to answer


def _send_raw(h: BaseHTTPRequestHandler, reply: Reply, data: bytes) -> None:
    """Answer ``reply`` byte by byte (a drip) or without Content-Length (close-delimited)."""
    head = [f"HTTP/1.1 {reply.status} X", "Content-Type: application/json",
            *(f"{k}: {v}" for k, v in reply.headers.items())]
    head.append(f"Content-Length: {len(data)}" if reply.length else "Connection: close")
    raw = ("\r\n".join(head) + "\r\n\r\n").encode() + data
    if not reply.length:
        h.close_connection = True
    if not reply.drip:
        h.wfile.write(raw)
        return
    at_once = len(raw) - len(data) if reply.drip_body else 0
    h.wfile.write(raw[:at_once])
    for i in range(at_once, len(raw)):
        h.wfile.flush()
        time.sleep(reply.drip)
        h.wfile.write(raw[i:i + 1])
    h.wfile.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency", type=float, default=0.1)
    args = parser.parse_args()
    srv = ScriptedServer(latency=args.latency).start()
    print(srv.base_url, flush=True)
    try:
        sys.stdin.read()  # run until the parent closes our stdin
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
