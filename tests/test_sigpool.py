"""Signature checks in worker processes (journal/_verify.py): same reports as threads,
also when a worker cannot start, dies, or answers wrongly (the driver checks itself)."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

import truss_lab.journal._verify as sigpool
from tests.builders.chains import RING, make_chain
from tests.builders.held import watched
from tests.builders.tampers import TAMPERS
from truss_lab.journal._crypto import verify_signature
from truss_lab.journal._spec import JournalColumns, read_journal_lines
from truss_lab.journal._verify import verify_columns, verify_stream


def _columns(lines: list[str]) -> JournalColumns:
    cols = read_journal_lines(lines, source="t.jsonl").columns
    return JournalColumns.from_mapping({k: v for k, v in cols.to_pydict().items() if k != "line"})


def _parts(cols: JournalColumns, size: int) -> list[JournalColumns]:
    d = cols.to_pydict()
    return [JournalColumns.from_mapping({k: v[a:a + size] for k, v in d.items()})
            for a in range(0, len(cols), size)]


@pytest.fixture(scope="module")
def chain() -> list[dict]:
    return make_chain(60)


CASES = [("signature_bit_flip", 41), ("unknown_key", 7), ("edited_payload", 33),
         ("signatures_swapped", 12), ("signature_malleated", 59), ("signature_bit_flip", 0)]


def _cases(chain: list[dict]) -> list[tuple[str, JournalColumns]]:
    out = [("clean", _columns([f"{json.dumps(e)}\n" for e in chain]))]
    for name, p in CASES:
        got = TAMPERS[name](chain, p)
        assert got is not None
        out.append((f"{name}@{p}", _columns(got[0])))
    return out


def _script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "worker.py"
    path.write_text(body, encoding="utf-8")
    return path


def test_pool_records_verify_like_verify_signature() -> None:
    cols = _columns([f"{json.dumps(e)}\n" for e in make_chain(10)])
    fail, records, m = sigpool._records(cols, RING)
    assert fail is None and m == 10 and len(records) == 128 * 10
    bad = bytearray(records)
    bad[128 * 6 + 40] ^= 1  # a signature byte of the 7th record
    with sigpool.SigPool(2) as pool:
        tickets = [pool.submit(records, m), pool.submit(bytes(bad), m), pool.submit(b"", 0)]
        answers = pool.results()
    assert [answers[t] for t in tickets] == [-1, 6, None]
    rec = bad[128 * 6:128 * 7]
    assert not verify_signature(bytes(rec[:32]), bytes(rec[96:]), bytes(rec[32:96]))


@pytest.mark.parametrize("worker", ["missing", "exits", "dies_midway", "lies"])
def test_a_failing_worker_changes_no_report(chain: list[dict], tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch,
                                            worker: str) -> None:
    bodies = {
        "exits": "import sys\nsys.exit(0)\n",
        # answers its first request truly, then exits
        "dies_midway": ("import struct, sys\nfrom nacl.bindings import crypto_sign_open\n"
                        "h = sys.stdin.buffer.read(4)\nn = struct.unpack('<I', h)[0]\n"
                        "d = sys.stdin.buffer.read(128 * n)\nbad = -1\n"
                        "for i in range(n):\n    o = 128 * i\n    try:\n"
                        "        crypto_sign_open(d[o + 32:o + 128], d[o:o + 32])\n"
                        "    except Exception:\n        bad = i\n        break\n"
                        "sys.stdout.buffer.write(struct.pack('<i', bad))\n"
                        "sys.stdout.buffer.flush()\n"),
        # claims the first record of every batch fails
        "lies": ("import struct, sys\nwhile True:\n    h = sys.stdin.buffer.read(4)\n"
                 "    if len(h) < 4: break\n    n = struct.unpack('<I', h)[0]\n"
                 "    sys.stdin.buffer.read(128 * n)\n"
                 "    sys.stdout.buffer.write(struct.pack('<i', 0))\n"
                 "    sys.stdout.buffer.flush()\n"),
    }
    path = tmp_path / "no-such-worker.py" if worker == "missing" else _script(
        tmp_path, bodies[worker])
    monkeypatch.setattr(sigpool, "_WORKER", path)
    monkeypatch.setattr(sigpool, "_POOL_MIN", 1)
    for name, cols in _cases(chain):
        want = verify_columns(cols, RING, workers=1)
        assert verify_stream(iter(_parts(cols, 16)), RING, workers=2) == want, name


def test_a_dying_worker_hands_its_requests_to_the_other(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The first worker started answers one request and exits; the second is the real one.
    real = Path(sigpool.__file__).with_name("_sigworker.py")
    path = _script(tmp_path, (
        "import os, runpy, struct, sys\n"
        f"try:\n    os.close(os.open({str(tmp_path / 'first')!r}, os.O_CREAT | os.O_EXCL))\n"
        f"except FileExistsError:\n    runpy.run_path({str(real)!r}, run_name='__main__')\n"
        "    sys.exit(0)\n"
        "h = sys.stdin.buffer.read(4)\nn = struct.unpack('<I', h)[0]\n"
        "sys.stdin.buffer.read(128 * n)\n"
        "sys.stdout.buffer.write(struct.pack('<i', -1))\nsys.stdout.buffer.flush()\n"))
    monkeypatch.setattr(sigpool, "_WORKER", path)
    monkeypatch.setattr(sigpool, "_UNIT", 4)
    cols = _columns([f"{json.dumps(e)}\n" for e in make_chain(40)])
    _, records, m = sigpool._records(cols, RING)
    bad = bytearray(records)
    bad[128 * 37 + 40] ^= 1  # a signature byte of the 38th record
    with sigpool.SigPool(2) as pool:
        tickets = [pool.submit(records, m) for _ in range(5)] + [pool.submit(bytes(bad), m)]
        answers = pool.results()
    # every request answered (none left to the caller), the dead worker's by the other
    assert [answers[t] for t in tickets] == [-1] * 5 + [37]
    assert (tmp_path / "first").exists()


def test_worker_runs_without_the_package() -> None:
    # It is started as a script: importing truss_lab there would cost a second per run.
    text = Path(sigpool.__file__).with_name("_sigworker.py").read_text(encoding="utf-8")
    assert "truss_lab" not in text.split('"""')[2]
    assert "from ." not in text


def test_an_error_in_the_driver_stops_the_workers_at_once() -> None:
    cols = _columns([f"{json.dumps(e)}\n" for e in make_chain(10)])
    _, records, m = sigpool._records(cols, RING)
    procs = []
    with pytest.raises(KeyError), sigpool.SigPool(2) as pool:
        procs = [w.proc for w in pool._workers]
        for _ in range(2000):  # far more work than the workers finish at once
            pool.submit(records * 50, m * 50)
        raise KeyError("the driver failed")
    # killed, not left to finish the queue and exit on end of input (returncode 0)
    assert procs and all(p.returncode == -signal.SIGKILL for p in procs)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_streamed_chain_is_not_held_whole(chain: list[dict], monkeypatch: pytest.MonkeyPatch,
                                            workers: int) -> None:
    """verify_stream drops each batch once its own checks are done: when batch i is asked
    for, batches a window and more before it are gone (threads and worker processes
    alike), and the report is still verify_columns'."""
    monkeypatch.setattr(sigpool, "_POOL_MIN", 1)
    monkeypatch.setattr(sigpool, "_WINDOW", 2)
    monkeypatch.setattr(sigpool, "_WINDOW_TASKS", 2)
    monkeypatch.setattr(sigpool, "_CHUNK", 5)
    cols = _columns([f"{json.dumps(e)}\n" for e in chain])
    held: list[int] = []
    d = cols.to_pydict()
    # Each part is made here, so only verify_stream can hold it.
    parts = (JournalColumns.from_mapping({k: v[a:a + 5] for k, v in d.items()})
             for a in range(0, len(cols), 5))
    assert verify_stream(watched(parts, held), RING, workers=workers) == \
        verify_columns(cols, RING)
    assert len(held) == 12 and max(held) <= 4, held  # a window of 2, and 2 at hand
