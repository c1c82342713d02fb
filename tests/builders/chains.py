"""Signed journal chains: the keys, the payload of entry ``i`` and the chain makers.

One chain, two makers: :func:`make_chain` writes entry dicts through the
library's ``build_entry`` (what a journal file holds; ``tests/data/journal/good.jsonl``
is ``make_chain(5)``), :func:`chain_columns` builds the same entries straight
into ``JournalColumns`` and signs them in threads, for chains of 100k+ entries
(the verification benchmark). ``tests/test_builders.py`` checks they agree.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from truss_lab.core._canonical import canonical
from truss_lab.journal._crypto import GENESIS_HASH, SigningKey, build_entry, entry_hash
from truss_lab.journal._spec import JournalColumns

#: Two operators (public test material, never real keys); entry ``i`` is signed by ``KEYS[i % 2]``.
KEYS = [SigningKey.from_seed(f"op-{i}", bytes([i + 1]) * 32) for i in range(2)]
#: Claims op-0's id but is not in the ring: a forger.
FOREIGN = SigningKey.from_seed("op-0", b"\x99" * 32)
RING = {k.key_id: k.public_key for k in KEYS}
BY_ID = {k.key_id: k for k in KEYS}

Payload = Callable[[int], dict[str, Any]]


def verdict_payload(i: int) -> dict[str, Any]:
    """The Formats §1 contract_verdict payload of entry ``i`` (non-ASCII on purpose)."""
    return {
        "contract_id": f"c-{i:04d}", "run_id": f"r-{i:04d}-1",
        "goal": "Migrate the billing cron job to the new scheduler — ünïcödé 🚀",
        "verdict": ("pass", "fail", "partial")[i % 3],
        "summary": "Job migrated but timezone handling regressed",
        "checks": [{"name": "tz_regression", "passed": i % 2 == 0,
                    "evidence": "02:00 UTC run fired at 03:00 after DST change"}],
        "tags": ["scheduler", "dst"],
    }  # fmt: skip


def entry_ts(i: int) -> str:
    """The timestamp of entry ``i``: one second apart from 10:00:01 on."""
    return f"2026-11-30T{(10 + i // 3600) % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z"


def make_chain(
    n: int,
    *,
    start_seq: int = 1,
    prev_hash: str = GENESIS_HASH,
    keys: Sequence[SigningKey] = KEYS,
    payload: Payload = verdict_payload,
) -> list[dict]:
    """A valid chain of ``n`` contract_verdict entries from ``start_seq``, linked to ``prev_hash``.

    Entry ``i`` holds ``payload(i)``, signed by ``keys[i % len(keys)]``.
    """
    out, prev = [], prev_hash
    for i in range(start_seq, start_seq + n):
        e = build_entry(i, "contract_verdict", payload(i), keys[i % len(keys)], prev, entry_ts(i))
        out.append(e)
        prev = e["hash"]
    return out


def chain_columns(
    n: int, *, keys: Sequence[SigningKey] = KEYS, workers: int = 1
) -> JournalColumns:
    """``make_chain(n, keys=keys)`` as columns: hashed in order, signed in ``workers`` threads."""
    cols = JournalColumns()
    prev = GENESIS_HASH
    for i in range(1, n + 1):
        key = keys[i % len(keys)]
        ts = entry_ts(i)
        pc = canonical(verdict_payload(i))
        h = entry_hash(i, "contract_verdict", ts, key.key_id, pc, prev)
        for col, v in zip(
            (cols.seq, cols.kind, cols.ts, cols.key_id, cols.payload, cols.prev_hash, cols.hash),
            (i, "contract_verdict", ts, key.key_id, pc, prev, h),
            strict=True,
        ):
            col.append(v)
        prev = h

    def sign(lo: int) -> list[str]:
        # Row r holds seq r + 1, so its key is keys[(r + 1) % len(keys)].
        return [
            keys[(r + 1) % len(keys)].sign_hash(cols.hash[r])
            for r in range(lo, min(lo + 4096, n))
        ]

    with ThreadPoolExecutor(workers) as ex:
        for part in ex.map(sign, range(0, n, 4096)):
            cols.signature.extend(part)
    return cols


def to_lines(entries: list[dict]) -> list[str]:
    """The JSONL lines of a journal file holding ``entries``."""
    return [json.dumps(e, ensure_ascii=False) + "\n" for e in entries]


def write_journal(path: Path, entries: list[dict]) -> Path:
    """Write ``entries`` as a journal file at ``path``; return ``path``."""
    path.write_text("".join(to_lines(entries)), encoding="utf-8")
    return path
