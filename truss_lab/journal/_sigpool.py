"""Worker processes that check Ed25519 signatures while the driver does Python work.

Why processes and not threads: libsodium releases the GIL, but each check on a
thread must take the GIL back for its few microseconds of Python, and a driver
busy in Python (replay extraction overlapping verification) holds it for up to
the switch interval (5 ms) each time; measured on 2 cores, threads plus a busy
driver took as long as verifying first and extracting after. A worker process
(:mod:`truss_lab.journal._sigworker`) has its own GIL.

The driver sends each batch of ``(public key, signature, message)`` records to
one worker (round robin) through a feeder thread (a blocking pipe write releases
the GIL), and reads the replies, in order, once it has sent everything. A
worker that cannot start or dies leaves its batches unanswered (``None``); the
caller then checks them itself, so the result never depends on the workers.
"""

from __future__ import annotations

import queue
import struct
import subprocess
import sys
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import IO

from ._columns import JournalColumns
from ._crypto import verify_signature
from ._verify import _bad_signature, _check_range, _entry_record

__all__ = ["SigPool", "stream_to_workers"]

_WORKER = Path(__file__).with_name("_sigworker.py")


class _Worker:
    def __init__(self) -> None:
        # -P: the worker's own directory is not put on sys.path (its neighbours are
        # package modules, not top-level ones).
        self.proc = subprocess.Popen(
            [sys.executable, "-P", str(_WORKER)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )
        self.todo: queue.Queue[bytes | None] = queue.Queue()
        self.broken = False
        self.feeder = threading.Thread(target=self._feed, name="truss-sigfeed", daemon=True)
        self.feeder.start()

    def _feed(self) -> None:
        pipe: IO[bytes] = self.proc.stdin  # type: ignore[assignment]
        try:
            while (item := self.todo.get()) is not None:
                if not self.broken:
                    pipe.write(item)
                    pipe.flush()
        except OSError:  # the worker died: its batches stay unanswered
            self.broken = True
        finally:
            try:
                pipe.close()
            except OSError:
                pass

    def reply(self) -> int | None:
        out: IO[bytes] = self.proc.stdout  # type: ignore[assignment]
        try:
            got = out.read(4)
        except OSError:
            return None
        return struct.unpack("<i", got)[0] if len(got) == 4 else None

    def close(self) -> None:
        self.todo.put(None)
        self.feeder.join()
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
        self._workers: list[_Worker] = []
        try:
            for _ in range(max(1, workers)):
                self._workers.append(_Worker())
        except OSError:
            pass  # fewer (or no) workers: their batches are checked by the caller
        self._sent: list[int] = []  # per batch, the worker it went to (-1: none)

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
        if not self._workers or n == 0:
            self._sent.append(-1)
        else:
            w = len(self._sent) % len(self._workers)
            self._workers[w].todo.put(struct.pack("<I", n) + records)
            self._sent.append(w)
        return len(self._sent) - 1

    def results(self) -> list[int | None]:
        """Per ticket: the first failing record's index, -1 for none, None when no
        worker answered (the caller checks that batch itself)."""
        out: list[int | None] = []
        for w in self._sent:
            out.append(None if w < 0 else self._workers[w].reply())
        return out

    def close(self) -> None:
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
