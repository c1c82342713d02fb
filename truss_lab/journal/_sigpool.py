"""Worker processes that check Ed25519 signatures while the driver does Python work.

Why processes and not threads: libsodium releases the GIL, but each check on a
thread must take the GIL back for its few microseconds of Python, and a driver
busy in Python (replay extraction overlapping verification) holds it for up to
the switch interval (5 ms) each time; measured on 2 cores, threads plus a busy
driver took as long as verifying first and extracting after. A worker process
(:mod:`truss_lab.journal._sigworker`) has its own GIL.

The driver cuts each batch of ``(public key, signature, message)`` records into
requests of :data:`_UNIT` records on one queue; a thread per worker sends it the
next request as it finishes one (two in flight) and files its answer (blocking
pipe calls release the GIL), so a faster worker takes more and both end within
about a request of each other. A worker that cannot start or dies hands its
requests back to the others; a batch with a request nobody answered is
unanswered (``None``) and the caller checks it itself, so the result never
depends on the workers.
"""

from __future__ import annotations

import queue
import struct
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import IO

from ._columns import JournalColumns
from ._crypto import verify_signature
from ._verify import _bad_signature, _check_range, _entry_record

__all__ = ["SigPool", "stream_to_workers"]

_WORKER = Path(__file__).with_name("_sigworker.py")


# Records per request. The workers pull requests as they finish (two in flight each), so
# they end within about one request of each other: with one batch per request they
# ended ~0.8 s apart on a 200k chain (one core idle meanwhile), as vCPUs differ in speed.
_UNIT = 1024
_IN_FLIGHT = 2
_Unit = tuple[int, int, bytes]  # ticket, offset of its first record, request bytes


class _Worker:
    thread: threading.Thread  # serving the queue (start)

    def __init__(self, todo: queue.Queue[_Unit | None],
                 answers: dict[tuple[int, int], int]) -> None:
        # -P: the worker's own directory is not put on sys.path (its neighbours are
        # package modules, not top-level ones).
        self.proc = subprocess.Popen(
            [sys.executable, "-P", str(_WORKER)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )
        self.todo = todo
        self.answers = answers
        self.broken = False
        self.start()

    def start(self) -> None:
        """Serve the queue (again) on a new thread, until a ``None`` is taken."""
        self.thread = threading.Thread(target=self._run, name="truss-sigfeed", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        """Send requests as the worker takes them and file its answers; blocking pipe
        calls release the GIL. A worker that dies hands its requests back."""
        pipe: IO[bytes] = self.proc.stdin  # type: ignore[assignment]
        out: IO[bytes] = self.proc.stdout  # type: ignore[assignment]
        flying: deque[_Unit] = deque()
        more = True
        try:
            while more or flying:
                while more and len(flying) < _IN_FLIGHT and not self.broken:
                    unit = self.todo.get()
                    if unit is None:
                        more = False
                        break
                    flying.append(unit)
                    pipe.write(unit[2])
                    pipe.flush()
                if self.broken or not flying:
                    break
                got = out.read(4)
                if len(got) != 4:
                    raise OSError("the worker ended")
                ticket, offset, _ = flying.popleft()
                self.answers[ticket, offset] = struct.unpack("<i", got)[0]
        except (OSError, ValueError):
            self.broken = True
        if self.broken:  # died, or stopped by the pool (SigPool.__exit__)
            for unit in flying:  # another worker checks them, or the caller does
                self.todo.put(unit)

    def close(self) -> None:
        self.thread.join()
        try:
            self.proc.stdin.close()  # type: ignore[union-attr]  # end of input: it exits
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


class SigPool:
    """``workers`` signature-checking processes; use as a context manager."""

    def __init__(self, workers: int) -> None:
        self._todo: queue.Queue[_Unit | None] = queue.Queue()
        self._answers: dict[tuple[int, int], int] = {}
        self._workers: list[_Worker] = []
        try:
            for _ in range(max(1, workers)):
                self._workers.append(_Worker(self._todo, self._answers))
        except OSError:
            pass  # fewer (or no) workers: their batches are checked by the caller
        self._tickets: list[list[int]] = []  # per batch, the offsets of its requests
        self._finished = False

    def __enter__(self) -> SigPool:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is not None:
            # Nobody will read the answers: stop now rather than after the workers
            # have checked everything queued (seconds for a long chain).
            for w in self._workers:
                w.broken = True
                w.proc.kill()
        self.close()

    def submit(self, records: bytes, n: int) -> int:
        """Queue ``n`` records (128 bytes each); returns the batch's ticket."""
        ticket = len(self._tickets)
        offsets: list[int] = []
        if self._workers:
            for a in range(0, n, _UNIT):
                k = min(_UNIT, n - a)
                self._todo.put((ticket, a, struct.pack("<I", k) + records[128 * a:128 * (a + k)]))
                offsets.append(a)
        self._tickets.append(offsets)
        return ticket

    def _finish(self) -> None:
        """Wait until every request is answered, or no worker is left to answer."""
        if self._finished:
            return
        self._finished = True
        while True:
            for _ in self._workers:
                self._todo.put(None)  # after every request: each worker ends once it has none
            for w in self._workers:
                w.thread.join()
            # A worker that died handed its requests back, maybe after the others took
            # their None: the live ones serve those again.
            left: list[_Unit] = []
            while True:
                try:
                    unit = self._todo.get_nowait()
                except queue.Empty:
                    break
                if unit is not None:
                    left.append(unit)
            live = [w for w in self._workers if not w.broken]
            if not left or not live:
                return
            for unit in left:
                self._todo.put(unit)
            for w in live:
                w.start()

    def results(self) -> list[int | None]:
        """Per ticket: the first failing record's index, -1 for none, None when no
        worker answered (the caller checks that batch itself)."""
        self._finish()
        answers = self._answers
        out: list[int | None] = []
        for ticket, offsets in enumerate(self._tickets):
            if not offsets or any((ticket, a) not in answers for a in offsets):
                out.append(None)
                continue
            bad = [a + answers[ticket, a] for a in offsets if answers[ticket, a] >= 0]
            out.append(min(bad) if bad else -1)
        return out

    def close(self) -> None:
        self._finish()
        for w in self._workers:
            w.close()
        self._workers = []


def _records(
    cols: JournalColumns, keyring: Mapping[str, bytes]
) -> tuple[tuple[int, str, str] | None, bytes, int]:
    """For the worker processes: the first entry failing a check the driver makes
    (key, hash, a signature of the wrong length), and the 128-byte records
    (:mod:`truss_lab.journal._sigworker`) of the ``m`` entries before it."""
    get_key = keyring.get
    out: list[bytes] = []
    for i in range(len(cols)):
        rec = _entry_record(cols, get_key, i)
        if len(rec) == 2:
            return (i, rec[0], rec[1]), b"".join(out), i
        pk, sig, digest = rec
        if len(pk) != 32 or len(sig) != 64:  # verify_signature refuses these unchecked
            return (i, *_bad_signature(cols.key_id[i], digest)), b"".join(out), i
        out += (pk, sig, digest)
    return None, b"".join(out), len(cols)


def _worker_answer(part: JournalColumns, keyring: Mapping[str, bytes], m: int,
                   answer: int | None) -> tuple[int, str, str] | None:
    """The first failing entry among a batch's first ``m`` given a worker's answer;
    the batch is checked here when no worker answered or an answer does not hold."""
    if answer is not None and answer < 0:
        return None
    if answer is not None and answer < m:
        rec = _entry_record(part, keyring.get, answer)
        if len(rec) == 3 and not verify_signature(rec[0], rec[2], rec[1]):
            return (answer, *_bad_signature(part.key_id[answer], rec[2]))
    return _check_range(part, keyring, 0, m)


def stream_to_workers(parts: Iterable[JournalColumns], keyring: Mapping[str, bytes],
                       cols: JournalColumns, workers: int) -> list[tuple[int, str, str] | None]:
    """:func:`verify_stream`'s own checks of long chains: the driver checks keys and
    hashes as each batch arrives (it has the entry text at hand) and the signatures
    go to worker processes (:class:`SigPool`), so a driver that does
    Python work meanwhile (replay extraction) and the checks do not share one GIL.
    Returns each batch's first own failure (chain positions), like the threads."""
    found: list[tuple[int, str, str] | None] = []
    sent: list[tuple[int, JournalColumns, int, int]] = []  # base, batch, records, ticket
    best = 1 << 62
    with SigPool(workers) as pool:
        for part in parts:
            base = len(cols)
            cols.extend(part)
            if base >= best:
                continue  # an earlier failure is already known
            fail, records, m = _records(part, keyring)
            if fail is not None:
                found.append((base + fail[0], fail[1], fail[2]))
                best = min(best, base + fail[0])
            sent.append((base, part, m, pool.submit(records, m)))
        answers = pool.results()
    for base, part, m, ticket in sent:
        hit = _worker_answer(part, keyring, m, answers[ticket])
        if hit is not None:
            found.append((base + hit[0], hit[1], hit[2]))
    return found
