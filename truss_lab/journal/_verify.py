"""Where the journal is verified: a chain of entries, in order, against a keyring.

Check order for each entry (the first failing entry by position is reported,
with the first failing check of that entry; see :func:`verify_columns`):

1. sequence: ``seq`` must be the previous ``seq`` + 1 (``seq_gap`` when it
   jumps ahead; ``duplicate_seq`` / ``fork`` when it repeats an earlier one);
2. ``unknown_key``: ``key_id`` is in the keyring;
3. ``bad_hash``: the recomputed hash equals ``hash``;
4. ``broken_link``: ``prev_hash`` equals the previous entry's ``hash``
   (64 zeros for ``seq`` 1);
5. ``bad_signature``: the Ed25519 signature over the hash verifies.

A line that cannot be parsed is ``malformed``. Reading is
:func:`truss_lab.journal._spec.read_journal`'s; :func:`verify_journal` does both. Long
chains verify their signatures on threads (libsodium releases the GIL), and long
streamed chains in worker processes (:class:`SigPool`, below).
"""

from __future__ import annotations

import binascii
import hashlib
import html
import itertools
import os
import queue
import struct
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import IO, Literal, get_args

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ..core._errors import ChainError
from ..core._models import LedgerRef
from ._crypto import GENESIS_HASH, entry_digest, verify_signature
from ._spec import JournalColumns, MalformedLine, ParsedJournal, clip, read_journal

__all__ = [
    "REASONS",
    "VERIFY_REASONS",
    "SigPool",
    "VerifyReport",
    "first_link_problem",
    "first_seq_problem",
    "stream_to_workers",
    "verify_columns",
    "verify_journal",
    "verify_stream",
    "with_malformed",
]

VerifyReason = Literal[
    "bad_hash", "bad_signature", "unknown_key", "broken_link",
    "seq_gap", "duplicate_seq", "fork", "malformed",
]  # fmt: skip
VERIFY_REASONS: tuple[str, ...] = get_args(VerifyReason)
"""Every ``reason`` a :class:`VerifyReport` can carry: the chain checks above."""

REASONS: tuple[str, ...] = (*VERIFY_REASONS, "missing")
"""Every ``reason`` a :class:`ChainError` can carry: :data:`VERIFY_REASONS`, plus
``missing``: a ref names a ``seq`` the journal does not hold (raised by the ref
checks of :mod:`truss_lab.journal._table`, never by verification, which only
sees entries that exist)."""


# --- the report ---------------------------------------------------------------------------


class VerifyReport(BaseModel):
    """The outcome of verifying a journal: ok, or the first failing entry and why."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    ok: bool
    """True when every entry passed every check."""
    entries_checked: int = Field(ge=0)
    """Entries that passed every check: the length of the verified prefix."""
    first_bad_seq: int | None = None
    """The ``seq`` the first failing entry carries (for a malformed line: the ``seq`` it
    should have carried)."""
    first_bad_line: int | None = Field(default=None, ge=1)
    """The 1-based file line of the first failing entry, when it came from a file."""
    reason: VerifyReason | None = None
    """Why it failed: one of :data:`VERIFY_REASONS`; None when ok."""
    message: str | None = None
    """What failed, where, and what was expected versus found; None when ok."""
    head_seq: int | None = None
    """``seq`` of the last verified-good entry (``prev``'s when none; None for an empty
    chain without ``prev``)."""
    head_hash: str | None = None
    """``hash`` of that same entry: the hash the next entry must link to."""

    def __str__(self) -> str:
        """One line for people (``print(verify_chain(store))``, ``truss-lab verify``):
        ``ok: N entries verified, head seq S``, or the first failure and why."""
        if self.ok:
            return f"ok: {self.entries_checked} entries verified, head seq {self.head_seq}"
        line = f" (line {self.first_bad_line})" if self.first_bad_line is not None else ""
        return f"TAMPERED: seq {self.first_bad_seq}{line}: {self.reason}: {self.message}"

    def raise_for_error(self) -> VerifyReport:
        """Raise :class:`ChainError` when not ok; return ``self`` otherwise."""
        if not self.ok:
            raise ChainError(
                self.message or "journal verification failed",
                seq=self.first_bad_seq,
                reason=self.reason or "malformed",
                line=self.first_bad_line,
            )
        return self

    @property
    def head(self) -> LedgerRef | None:
        """The head as a :class:`LedgerRef` (None for an empty chain)."""
        if self.head_seq is None or self.head_hash is None:
            return None
        return LedgerRef(seq=self.head_seq, hash=self.head_hash)

    def __repr__(self) -> str:
        if self.ok:
            return f"VerifyReport(ok=True, entries_checked={self.entries_checked})"
        where = f"seq={self.first_bad_seq}"
        if self.first_bad_line is not None:
            where += f", line={self.first_bad_line}"
        return (
            f"VerifyReport(ok=False, entries_checked={self.entries_checked}, {where}, "
            f"reason={self.reason!r}, message={self.message!r})"
        )

    def _repr_html_(self) -> str:
        e = html.escape
        if self.ok:
            status = '<b style="color:#2a7a2a">verified</b>'
        else:
            status = f'<b style="color:#b00020">failed: {e(str(self.reason))}</b>'
        rows = [
            ("entries checked", self.entries_checked),
            ("first bad seq", self.first_bad_seq),
            ("first bad line", self.first_bad_line),
            ("message", self.message),
            ("head seq", self.head_seq),
            ("head hash", self.head_hash),
        ]
        body = "".join(
            f"<tr><th style='text-align:left'>{e(k)}</th><td>{e(str(v))}</td></tr>"
            for k, v in rows
            if v is not None
        )
        return f"<div><p>Journal {status}</p><table>{body}</table></div>"


# --- verification -----------------------------------------------------------------------

_SERIAL_BELOW = 4096  # chains shorter than this verify on the calling thread
_CHUNK = 2048  # entries per parallel task; small enough to stop early, big enough to amortize
# A streamed chain whose first batch has this many entries checks its signatures in
# worker processes (stream_to_workers, below); shorter ones on threads.
_POOL_MIN = 8192
# A streamed batch is held (for its own checks) until they are done: at most this many
# batches wait for the worker processes, this many tasks for the threads, so a long
# chain's text is never held whole (the checks keep up: a full window makes the reader
# wait).
_WINDOW = 3
_WINDOW_TASKS = 16


def _usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _entry_record(
    cols: JournalColumns, get_key: Callable[[str], bytes | None], i: int
) -> tuple[str, str] | tuple[bytes, bytes, bytes]:
    """Entry ``i``'s own checks before its signature: ``(reason, message)`` of the
    first that fails (``unknown_key``, ``bad_hash``), else ``(public key, signature,
    digest)`` for the signature check."""
    key_id = cols.key_id[i]
    pk = get_key(key_id)
    if pk is None:
        return "unknown_key", (f"key_id {key_id!r} is not in the keyring; pass the keyring "
                               "that holds it (`truss-lab ingest journal FILE --keyring "
                               "keys.json`; `truss-lab journal sign` and `truss-lab keys "
                               "generate --keyring` write one)")
    digest = entry_digest(cols.seq[i], cols.kind[i], cols.ts[i], key_id, cols.payload[i],
                           cols.prev_hash[i])
    h = digest.hex()
    if h != cols.hash[i]:
        return "bad_hash", (
            f"hash does not match the entry's canonical form: expected {h}, "
            f"got {clip(str(cols.hash[i]), 64)}"
        )
    try:
        sig = binascii.a2b_base64(cols.signature[i], strict_mode=True)
    except (binascii.Error, TypeError, ValueError):
        sig = b""
    return pk, sig, digest


def _bad_signature(key_id: str, digest: bytes) -> tuple[str, str]:
    return "bad_signature", (
        f"Ed25519 signature does not verify under key {key_id!r} "
        f"(expected a signature over hash {digest.hex()})"
    )


def _check_range(
    cols: JournalColumns, keyring: Mapping[str, bytes], lo: int, hi: int,
    stop: Callable[[], int] | None = None,
) -> tuple[int, str, str] | None:  # fmt: skip
    """First entry in [lo, hi) failing its own checks: (index, reason, message).

    An entry's own checks, in order: key known, hash recomputes, signature
    verifies. (The link and sequence are positional; :func:`verify_columns`
    checks them.) ``stop()`` is polled to give up once an earlier failure is known.
    """
    get_key = keyring.get
    for i in range(lo, hi):
        if stop is not None and (i & 255) == 0 and stop() < i:
            return None
        rec = _entry_record(cols, get_key, i)
        if len(rec) == 2:
            return i, rec[0], rec[1]
        pk, sig, digest = rec
        if not verify_signature(pk, digest, sig):
            return (i, *_bad_signature(cols.key_id[i], digest))
    return None


def _check_parallel(
    cols: JournalColumns, keyring: Mapping[str, bytes], hi: int, workers: int
) -> tuple[int, str, str] | None:
    # Threads: libsodium runs with the GIL released (cffi), and the Python part
    # of a check (hashing, compares) is ~5% of it. Measured on 2 cores, threads
    # beat a process pool, which must also pickle the columns
    # (benchmarks/bench_verify.py prints both).
    best = [hi]
    lock = threading.Lock()

    def task(lo: int) -> tuple[int, str, str] | None:
        if lo >= best[0]:
            return None  # an earlier failure is already known
        found = _check_range(cols, keyring, lo, min(lo + _CHUNK, hi), stop=lambda: best[0])
        if found is not None:
            with lock:
                best[0] = min(best[0], found[0])
        return found

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="truss-verify") as ex:
        results = list(ex.map(task, range(0, hi, _CHUNK)))
    # Every chunk reports its own first failure and chunks only skip work after an
    # earlier failure, so the minimum is the first failure whatever the scheduling.
    found = [r for r in results if r is not None]
    return min(found) if found else None


def first_seq_problem(
    seq: Sequence[int], base: int
) -> int:
    """Position of the first ``seq`` that is not ``base`` + 1 + its position (``len``:
    none)."""
    n = len(seq)
    if n == 0:
        return 0
    arr = np.fromiter(seq, dtype=np.int64, count=n)
    bad = np.flatnonzero(arr != np.arange(base + 1, base + 1 + n, dtype=np.int64))
    return int(bad[0]) if bad.size else n


def first_link_problem(prev_hash: Sequence[str], hashes: Sequence[str], start: str) -> int:
    """Position of the first ``prev_hash`` that is not the hash before it (``start``
    for the first; ``len``: none)."""
    n = len(prev_hash)
    if n == 0:
        return 0
    if prev_hash[0] != start:
        return 0
    ph = np.asarray(prev_hash, dtype=object)
    hh = np.asarray(hashes, dtype=object)
    bad = np.flatnonzero(ph[1:] != hh[:-1])
    return int(bad[0]) + 1 if bad.size else n


def verify_columns(
    cols: JournalColumns,
    keyring: Mapping[str, bytes],
    *,
    prev: LedgerRef | None = None,
    workers: int | None = None,
) -> VerifyReport:
    """Verify a chain of entries in order; report the first failing one.

    ``prev`` is the entry the first column entry follows (the stored head when
    appending); without it the chain must start at ``seq`` 1 with 64 zeros as
    ``prev_hash``. ``workers`` bounds the threads that verify signatures
    (default: the usable cores; chains under 4096 entries use one thread).

    The first failing entry by position is reported with the first check it
    fails, in this order:

    1. sequence, against the expected ``seq`` e (previous + 1):
       ``seq`` > e is ``seq_gap``; ``seq`` < e repeats an earlier entry: the same
       ``hash`` is ``duplicate_seq``; a different hash with the same
       ``prev_hash`` as that earlier entry is ``fork`` when the entry is itself
       valid (known key, hash, signature: two signed siblings) and its own
       failure otherwise; anything else is ``duplicate_seq``;
    2. ``unknown_key``; 3. ``bad_hash``; 4. ``broken_link``; 5. ``bad_signature``.

    The result does not depend on ``workers``.
    """
    n = len(cols)
    base_seq = prev.seq if prev is not None else 0
    base_hash = prev.hash if prev is not None else GENESIS_HASH
    s_pos = first_seq_problem(cols.seq, base_seq)
    l_pos = first_link_problem(cols.prev_hash, cols.hash, base_hash)
    limit = min(s_pos, l_pos)
    span = min(limit + 1, n)  # the entry at `limit` needs its own checks too

    if workers is None:
        workers = _usable_cores()
    if workers <= 1 or span < _SERIAL_BELOW:
        found = _check_range(cols, keyring, 0, span)
    else:
        found = _check_parallel(cols, keyring, span, workers)
    return _report(cols, prev, base_seq, base_hash, s_pos, limit, found)


def verify_stream(
    batches: Iterable[JournalColumns],
    keyring: Mapping[str, bytes],
    *,
    prev: LedgerRef | None = None,
    workers: int | None = None,
) -> VerifyReport:
    """:func:`verify_columns` over a chain that arrives in batches (e.g. from DuckDB or a
    file): each batch's own checks (key, hash, signature) start on the thread pool as soon
    as it arrives, while the next batch is fetched, and its positional checks (sequence,
    links) run against the batch before it. The report is the one :func:`verify_columns`
    gives for the whole chain; what is kept of a batch once checked is its hashes (32
    bytes an entry) and lines (:class:`_Chain`), so memory does not grow with the
    entries' text."""
    if workers is None:
        workers = _usable_cores()
    chain = _Chain(prev)
    best = [1 << 62]
    lock = threading.Lock()

    def task(part: JournalColumns, base: int, lo: int, hi: int) -> tuple[int, str, str] | None:
        if base + lo >= best[0]:
            return None  # an earlier failure is already known
        found = _check_range(part, keyring, lo, hi, stop=lambda: best[0] - base)
        if found is None:
            return None
        hit = (found[0] + base, found[1], found[2])
        with lock:
            best[0] = min(best[0], hit[0])
        return hit

    it = iter(batches)
    first = next(it, None)
    pool = workers >= 2 and first is not None and len(first) >= _POOL_MIN
    parts = itertools.chain([first] if first is not None else [], it)
    del first  # held by ``parts`` until it is taken, and no longer
    results: list[tuple[int, str, str] | None]
    if pool:
        results = stream_to_workers(parts, keyring, chain, workers)
    else:
        futures: deque[Future[tuple[int, str, str] | None]] = deque()
        results = []
        with ThreadPoolExecutor(max_workers=max(1, workers),
                                thread_name_prefix="truss-verify") as ex:
            for part in parts:
                base = chain.n
                chain.add(part)
                futures += [ex.submit(task, part, base, lo, min(lo + _CHUNK, len(part)))
                            for lo in range(0, len(part), _CHUNK)]
                # A task holds its batch: at most a window of them waits.
                while len(futures) > _WINDOW_TASKS:
                    results.append(futures.popleft().result())
            results += [f.result() for f in futures]
    n = chain.n
    limit = n if chain.limit is None else chain.limit
    span = min(limit + 1, n)
    # Each task reports its own first failure, and skips only past a known earlier
    # one, so the least failure before ``span`` is the one verify_columns finds.
    early = [r for r in results if r is not None and r[0] < span]
    return chain.report(min(early) if early else None)


class _Chain:
    """What :func:`verify_stream` keeps of a chain that streams past it: per entry its
    line and its hash as 32 bytes, not its text (a million entries: ~40 MB, where the
    columns were gigabytes). The positional checks (sequence, links) run batch by batch
    with the last entry carried over; the entries at the first positional problem and
    before it are kept whole, so the report is :func:`verify_columns`' word for word."""

    def __init__(self, prev: LedgerRef | None) -> None:
        self.prev = prev
        self.base_seq = prev.seq if prev is not None else 0
        self.base_hash = prev.hash if prev is not None else GENESIS_HASH
        self.n = 0
        self.keys: list[bytes] = []  # per batch, its hashes as 32-byte keys, joined
        self.lines: list[np.ndarray] | None = None
        self.s_pos = 1 << 62  # the first sequence problem (when it is the first problem)
        self.limit: int | None = None  # the first positional problem
        self.at: tuple[int, str, str] = (0, "", "")  # seq, hash, prev_hash at ``limit``
        self.before: tuple[int | None, str | None] = (None, None)  # the entry before it
        self.last: tuple[int | None, str | None] = (
            (prev.seq, prev.hash) if prev is not None else (None, None))

    def add(self, part: JournalColumns) -> None:
        """Take a batch: its positional checks (until the first problem) and its keys."""
        base, m = self.n, len(part)
        self.n += m
        if not m:
            return
        if self.limit is not None:
            return  # past the first positional problem nothing is looked at again
        if part.line is not None:
            if self.lines is None:
                self.lines = []
            self.lines.append(np.asarray(part.line, dtype=np.int64))
        self.keys.append(_hash_keys(part.hash))
        s = first_seq_problem(part.seq, self.base_seq + base)
        link = self.last[1] if base else self.base_hash
        ln = first_link_problem(part.prev_hash, part.hash, link)
        i = min(s, ln)
        if i < m:
            self.limit = base + i
            if s == i:
                self.s_pos = base + i
            self.at = (int(part.seq[i]), part.hash[i], part.prev_hash[i])
            self.before = ((int(part.seq[i - 1]), part.hash[i - 1]) if i else self.last)
        self.last = (int(part.seq[-1]), part.hash[-1])

    def _hash(self, pos: int) -> str:
        """The hash of entry ``pos`` before the first problem (it passed its own checks,
        so it is the lowercase hex its key was made from)."""
        for block in self.keys:
            if pos < len(block) // 32:
                return block[32 * pos:32 * pos + 32].hex()
            pos -= len(block) // 32
        raise IndexError(pos)

    def _line(self, pos: int) -> int | None:
        if self.lines is None:
            return None
        for block in self.lines:
            if pos < len(block):
                return int(block[pos])
            pos -= len(block)
        raise IndexError(pos)

    def report(self, found: tuple[int, str, str] | None) -> VerifyReport:
        """:func:`_report` of the whole chain, from what was kept."""
        n, limit = self.n, self.n if self.limit is None else self.limit
        seq_at, _, prev_at = self.at

        def seq(pos: int) -> int:  # the prefix before ``limit`` is contiguous
            return seq_at if pos == limit else self.base_seq + pos + 1

        def report(pos: int, reason: str, message: str) -> VerifyReport:
            if pos == limit:
                head = self.before
            elif pos:
                head = (self.base_seq + pos, self._hash(pos - 1))
            else:
                head = ((self.prev.seq, self.prev.hash) if self.prev is not None
                        else (None, None))
            line = self._line(pos)
            where = f"seq {seq(pos)}" + (f" (line {line})" if line is not None else "")
            return VerifyReport(
                ok=False, entries_checked=pos, first_bad_seq=seq(pos), first_bad_line=line,
                reason=reason, message=f"{where}: {message}",
                head_seq=None if head[0] is None else int(head[0]), head_hash=head[1],
            )  # fmt: skip

        if found is not None and found[0] < limit:
            return report(*found)
        if limit < n:
            own = found if found is not None and found[0] == limit else None
            if limit == self.s_pos:
                return report(limit, *self._classify_seq(own))
            if own is not None and own[1] in ("unknown_key", "bad_hash"):
                return report(*own)
            expected = self.before[1] if limit else self.base_hash
            what = "the previous entry's hash" if limit else (
                f"the hash of seq {self.base_seq}" if self.prev is not None
                else "64 zeros (genesis)")
            got = clip(str(prev_at), 64)
            return report(
                limit, "broken_link", f"prev_hash must be {what}: expected {expected}, got {got}"
            )
        if found is not None:
            return report(*found)
        return VerifyReport(ok=True, entries_checked=n, head_seq=self.last[0],
                            head_hash=self.last[1])

    def _classify_seq(self, own: tuple[int, str, str] | None) -> tuple[str, str]:
        """:func:`_seq_problem` at the first problem, from what was kept."""
        s, hash_at, prev_at = self.at
        # The links before the problem hold, so entry j's prev_hash is the hash before it.
        return _seq_problem(s, self.limit or 0, self.base_seq, hash_at, prev_at, self._hash,
                            lambda j: self._hash(j - 1) if j else self.base_hash, own)


def _hash_keys(hashes: Sequence[str]) -> bytes:
    """The hashes as 32 bytes each (one ``fromhex`` of them all when they are all lowercase
    hex, as a verified entry's is); another string's key is its SHA-256, which only an
    entry failing its own checks has, and such a key is never read back as a hash."""
    joined = "".join(hashes)
    if len(joined) == 64 * len(hashes):
        try:
            raw = bytes.fromhex(joined)
        except ValueError:
            raw = b""
        if len(raw) == 32 * len(hashes) and raw.hex() == joined:
            return raw
    out = []
    for h in hashes:
        try:
            k = bytes.fromhex(h) if len(h) == 64 else b""
        except (TypeError, ValueError):
            k = b""
        if len(k) != 32 or k.hex() != h:
            k = hashlib.sha256(str(h).encode("utf-8", "surrogatepass")).digest()
        out.append(k)
    return b"".join(out)


# --- signatures in worker processes ---------------------------------------------------
#
# Worker processes that check Ed25519 signatures while the driver does Python work.
#
# Why processes and not threads: libsodium releases the GIL, but each check on a
# thread must take the GIL back for its few microseconds of Python, and a driver
# busy in Python (replay extraction overlapping verification) holds it for up to
# the switch interval (5 ms) each time; measured on 2 cores, threads plus a busy
# driver took as long as verifying first and extracting after. A worker process
# (:mod:`truss_lab.journal._sigworker`) has its own GIL.
#
# The driver cuts each batch of ``(public key, signature, message)`` records into
# requests of :data:`_UNIT` records on one queue; a thread per worker sends it the
# next request as it finishes one (two in flight) and files its answer (blocking
# pipe calls release the GIL), so a faster worker takes more and both end within
# about a request of each other. A worker that cannot start or dies hands its
# requests back to the others; a batch with a request nobody answered is
# unanswered (``None``) and the caller checks it itself, so the result never
# depends on the workers.

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
                 answers: dict[tuple[int, int], int], filed: threading.Condition) -> None:
        # -P: the worker's own directory is not put on sys.path (its neighbours are
        # package modules, not top-level ones).
        self.proc = subprocess.Popen(
            [sys.executable, "-P", str(_WORKER)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )
        self.todo = todo
        self.answers = answers
        self.filed = filed  # notified as each answer is filed, and when the worker breaks
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
                    # Another request is taken only if one waits: a caller may wait for
                    # the answer in flight before it queues more (SigPool.answer).
                    try:
                        unit = self.todo.get(block=not flying)
                    except queue.Empty:
                        break
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
                with self.filed:
                    self.answers[ticket, offset] = struct.unpack("<i", got)[0]
                    self.filed.notify_all()
        except (OSError, ValueError):
            self.broken = True
        if self.broken:  # died, or stopped by the pool (SigPool.__exit__)
            for unit in flying:  # another worker checks them, or the caller does
                self.todo.put(unit)
            with self.filed:
                self.filed.notify_all()

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
        self._filed = threading.Condition()
        self._workers: list[_Worker] = []
        try:
            for _ in range(max(1, workers)):
                self._workers.append(_Worker(self._todo, self._answers, self._filed))
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

    def answer(self, ticket: int) -> int | None:
        """One ticket's answer as :meth:`results` gives it, once its requests are all
        answered (waiting for them), or None when no worker is left to answer."""
        offsets = self._tickets[ticket]
        answers = self._answers
        with self._filed:
            while offsets and any((ticket, a) not in answers for a in offsets):
                if all(w.broken for w in self._workers):
                    return None
                self._filed.wait(1.0)  # a worker that dies notifies too; the timeout is a guard
        if not offsets:
            return None
        bad = [a + answers[ticket, a] for a in offsets if answers[ticket, a] >= 0]
        return min(bad) if bad else -1

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
                      chain: _Chain, workers: int) -> list[tuple[int, str, str] | None]:
    """:func:`verify_stream`'s own checks of long chains: the driver checks keys and
    hashes as each batch arrives (it has the entry text at hand) and the signatures
    go to worker processes (:class:`SigPool`), so a driver that does
    Python work meanwhile (replay extraction) and the checks do not share one GIL.
    Returns each batch's first own failure (chain positions), like the threads. A batch
    is settled (and dropped) once its answers are in; with :data:`_WINDOW` batches
    waiting, the next waits for the oldest."""
    found: list[tuple[int, str, str] | None] = []
    sent: deque[tuple[int, JournalColumns, int, int]] = deque()  # base, batch, records, ticket
    best = 1 << 62

    def settle(base: int, part: JournalColumns, m: int, answer: int | None) -> None:
        hit = _worker_answer(part, keyring, m, answer)
        if hit is not None:
            found.append((base + hit[0], hit[1], hit[2]))

    with SigPool(workers) as pool:
        for part in parts:
            base = chain.n
            chain.add(part)
            if base >= best:
                continue  # an earlier failure is already known
            fail, records, m = _records(part, keyring)
            if fail is not None:
                found.append((base + fail[0], fail[1], fail[2]))
                best = min(best, base + fail[0])
            sent.append((base, part, m, pool.submit(records, m)))
            while len(sent) > _WINDOW:
                b, p, k, ticket = sent.popleft()
                settle(b, p, k, pool.answer(ticket))
        answers = pool.results()
    for base, part, m, ticket in sent:
        settle(base, part, m, answers[ticket])
    return found


def _report(cols: JournalColumns, prev: LedgerRef | None, base_seq: int, base_hash: str,
            s_pos: int, limit: int, found: tuple[int, str, str] | None) -> VerifyReport:
    """The report of :func:`verify_columns` from its checks' outcomes: the first
    positional problem at ``limit`` (``s_pos`` for the sequence) and ``found``, the
    first entry before ``limit + 1`` failing its own checks."""
    n = len(cols)

    def report(pos: int, reason: str, message: str) -> VerifyReport:
        head = (cols.seq[pos - 1], cols.hash[pos - 1]) if pos else (
            (prev.seq, prev.hash) if prev is not None else (None, None)
        )
        line = cols.line[pos] if cols.line is not None else None
        where = f"seq {cols.seq[pos]}" + (f" (line {line})" if line is not None else "")
        return VerifyReport(
            ok=False, entries_checked=pos, first_bad_seq=int(cols.seq[pos]),
            first_bad_line=line, reason=reason, message=f"{where}: {message}",
            head_seq=None if head[0] is None else int(head[0]), head_hash=head[1],
        )  # fmt: skip

    if found is not None and found[0] < limit:
        return report(*found)
    if limit < n:
        own = found if found is not None and found[0] == limit else None
        if limit == s_pos:
            return report(limit, *_classify_seq(cols, limit, base_seq, own))
        if own is not None and own[1] in ("unknown_key", "bad_hash"):
            return report(*own)
        expected = cols.hash[limit - 1] if limit else base_hash
        what = "the previous entry's hash" if limit else (
            f"the hash of seq {base_seq}" if prev is not None else "64 zeros (genesis)"
        )
        got = clip(str(cols.prev_hash[limit]), 64)
        return report(
            limit, "broken_link", f"prev_hash must be {what}: expected {expected}, got {got}"
        )
    if found is not None:
        return report(*found)
    if n:
        head_seq, head_hash = int(cols.seq[-1]), cols.hash[-1]
    else:
        head_seq, head_hash = (prev.seq, prev.hash) if prev is not None else (None, None)
    return VerifyReport(ok=True, entries_checked=n, head_seq=head_seq, head_hash=head_hash)


def _classify_seq(
    cols: JournalColumns, pos: int, base_seq: int, own: tuple[int, str, str] | None
) -> tuple[str, str]:
    return _seq_problem(int(cols.seq[pos]), pos, base_seq, cols.hash[pos],
                        cols.prev_hash[pos], cols.hash.__getitem__,
                        cols.prev_hash.__getitem__, own)


def _seq_problem(
    s: int, pos: int, base_seq: int, hash_at: str, prev_at: str,
    hash_of: Callable[[int], str], prev_of: Callable[[int], str],
    own: tuple[int, str, str] | None,
) -> tuple[str, str]:
    """Why the entry at ``pos`` (seq ``s``, ``hash_at``, ``prev_at``) is out of sequence,
    the entries before it contiguous from ``base_seq``: a gap, a duplicate, or a fork
    (``own``: its own failure, reported instead of a fork). ``hash_of(j)`` and
    ``prev_of(j)`` read entry j before it (the whole file's columns, or what a stream
    kept)."""
    e = base_seq + pos + 1
    if s > e:
        return "seq_gap", f"expected seq {e}, got {s} ({s - e} missing)"
    if s < 1 or s <= base_seq:
        return "duplicate_seq", (
            f"expected seq {e}, got {s}: at or before the chain head seq {base_seq}"
            if s >= 1 else f"expected seq {e}, got {s}"
        )
    j = s - base_seq - 1  # where seq s already stands (the prefix before pos is contiguous)
    if hash_at == hash_of(j):
        return "duplicate_seq", f"expected seq {e}, got {s} again (an identical copy of it)"
    if prev_at == prev_of(j):
        if own is not None:
            return own[1], own[2]
        return "fork", (
            f"expected seq {e}, got a second validly signed seq {s} with the same prev_hash: "
            f"hash {hash_at} forks from {hash_of(j)}"
        )
    return "duplicate_seq", f"expected seq {e}, got {s} again (a different entry)"


def verify_journal(
    source: str | os.PathLike[str] | ParsedJournal,
    keyring: Mapping[str, bytes],
    *,
    prev: LedgerRef | None = None,
    workers: int | None = None,
) -> VerifyReport:
    """Read (strictly) and verify a journal file, or an already parsed one.

    The parse stops at the first malformed line; the entries before it are
    verified, and if they pass, the malformed line is the reported failure.

    Parameters
    ----------
    source : path or ParsedJournal
        The journal file, or what :func:`~truss_lab.journal._spec.read_journal` read.
    keyring : mapping of str to bytes
        Each key id's raw public key.
    prev : LedgerRef, optional
        The entry the journal continues (its first entry must link to it).
    workers : int, optional
        Processes that check signatures (None: as many as it pays).

    Returns
    -------
    VerifyReport
        ``ok``, the head, and the first bad entry or line with the reason.
    """
    parsed = source if isinstance(source, ParsedJournal) else read_journal(source)
    rep = verify_columns(parsed.columns, keyring, prev=prev, workers=workers)
    return with_malformed(rep, parsed.error)


def with_malformed(rep: VerifyReport, bad: MalformedLine | None) -> VerifyReport:
    """``rep`` of the entries before a malformed line ``bad``: if they verified, the
    malformed line is the reported failure (:func:`verify_journal`)."""
    if not rep.ok or bad is None:
        return rep
    expected_seq = (rep.head_seq or 0) + 1
    field_txt = f", field {bad.field!r}" if bad.field else ""
    return rep.model_copy(
        update={
            "ok": False,
            "first_bad_seq": expected_seq,
            "first_bad_line": bad.line,
            "reason": "malformed",
            "message": f"{bad.source}, line {bad.line}{field_txt}: malformed ({bad.detail}): "
            f"{bad.message}",
        }
    )
