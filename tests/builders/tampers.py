"""Tampered copies of a signed chain: the tamper matrix of the journal tests and of reliability.py.

A tamper takes the clean entries and a position p, and returns the JSONL lines
plus the expected (reason, seq, line); None when it does not apply there.
``TAMPERS`` maps each tamper's name to it (``t_edited_payload`` -> ``edited_payload``).
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Callable
from typing import Any

from tests.builders.chains import BY_ID, FOREIGN, KEYS, to_lines
from truss_lab.core._canonical import canonical
from truss_lab.journal._crypto import SigningKey, entry_hash

L = 2**252 + 27742317777372353535851937790883648493  # the Ed25519 group order

Tampered = tuple[list[str], str, int, int]


def resign(e: dict, key: SigningKey, **changes: Any) -> dict:
    """``e`` with ``changes``, hashed and signed again by ``key`` (a valid entry, if linked)."""
    e = {**e, **changes}
    e["hash"] = entry_hash(
        e["seq"], e["kind"], e["ts"], e["key_id"], canonical(e["payload"]), e["prev_hash"]
    )
    e["signature"] = key.sign_hash(e["hash"])
    return e


def rehash(e: dict, **changes: Any) -> dict:
    """``e`` with ``changes`` and a matching hash, but the old signature."""
    e = {**e, **changes}
    e["hash"] = entry_hash(
        e["seq"], e["kind"], e["ts"], e["key_id"], canonical(e["payload"]), e["prev_hash"]
    )
    return e


def _edit(es: list[dict], p: int, new: dict) -> list[dict]:
    out = list(es)
    out[p] = new
    return out


def other_verdict(e: dict) -> dict:
    """``e``'s payload with the verdict flipped."""
    p = copy.deepcopy(e["payload"])
    p["verdict"] = "pass" if p["verdict"] != "pass" else "fail"
    return p
def t_edited_payload(es: list[dict], p: int) -> Tampered | None:
    new = {**es[p], "payload": other_verdict(es[p])}
    return to_lines(_edit(es, p, new)), "bad_hash", p + 1, p + 1


def t_reserialized_payload(es: list[dict], p: int) -> Tampered | None:
    new = rehash(es[p], payload=other_verdict(es[p]))
    return to_lines(_edit(es, p, new)), "bad_signature", p + 1, p + 1


def t_signature_bit_flip(es: list[dict], p: int) -> Tampered | None:
    raw = bytearray(base64.b64decode(es[p]["signature"]))
    raw[5] ^= 0x01
    new = {**es[p], "signature": base64.b64encode(bytes(raw)).decode()}
    return to_lines(_edit(es, p, new)), "bad_signature", p + 1, p + 1


def t_signature_malleated(es: list[dict], p: int) -> Tampered | None:
    raw = base64.b64decode(es[p]["signature"])
    s = int.from_bytes(raw[32:], "little") + L
    new = {**es[p], "signature": base64.b64encode(raw[:32] + s.to_bytes(32, "little")).decode()}
    return to_lines(_edit(es, p, new)), "bad_signature", p + 1, p + 1


def t_signatures_swapped(es: list[dict], p: int) -> Tampered | None:
    if len(es) < 2:
        return None
    q = p + 1 if p + 1 < len(es) else p - 1
    out = list(es)
    out[p] = {**es[p], "signature": es[q]["signature"]}
    out[q] = {**es[q], "signature": es[p]["signature"]}
    first = min(p, q)
    return to_lines(out), "bad_signature", first + 1, first + 1


def t_wrong_known_key_id(es: list[dict], p: int) -> Tampered | None:
    other = KEYS[0].key_id if es[p]["key_id"] == KEYS[1].key_id else KEYS[1].key_id
    new = rehash(es[p], key_id=other)
    return to_lines(_edit(es, p, new)), "bad_signature", p + 1, p + 1


def t_unknown_key(es: list[dict], p: int) -> Tampered | None:
    new = {**es[p], "key_id": "nobody"}
    return to_lines(_edit(es, p, new)), "unknown_key", p + 1, p + 1


def t_forged_foreign_key(es: list[dict], p: int) -> Tampered | None:
    new = resign(es[p], FOREIGN, payload=other_verdict(es[p]), key_id=FOREIGN.key_id)
    return to_lines(_edit(es, p, new)), "bad_signature", p + 1, p + 1


def t_entry_deleted(es: list[dict], p: int) -> Tampered | None:
    if p == len(es) - 1:
        return None  # dropping the last entry leaves a valid, shorter chain
    out = es[:p] + es[p + 1 :]
    return to_lines(out), "seq_gap", p + 2, p + 1


def t_entries_swapped(es: list[dict], p: int) -> Tampered | None:
    if len(es) < 2:
        return None
    a = p if p + 1 < len(es) else p - 1
    out = list(es)
    out[a], out[a + 1] = es[a + 1], es[a]
    return to_lines(out), "seq_gap", a + 2, a + 1


def t_line_repeated(es: list[dict], p: int) -> Tampered | None:
    out = [*es[: p + 1], es[p], *es[p + 1 :]]
    return to_lines(out), "duplicate_seq", p + 1, p + 2


def t_fork(es: list[dict], p: int) -> Tampered | None:
    # a validly signed sibling
    twin = resign(es[p], BY_ID[es[p]["key_id"]], payload=other_verdict(es[p]))
    out = [*es[: p + 1], twin, *es[p + 1 :]]
    return to_lines(out), "fork", p + 1, p + 2


def t_forged_fork(es: list[dict], p: int) -> Tampered | None:
    twin = resign(es[p], FOREIGN, payload=other_verdict(es[p]), key_id=FOREIGN.key_id)
    out = [*es[: p + 1], twin, *es[p + 1 :]]
    return to_lines(out), "bad_signature", p + 1, p + 2  # a sibling, but not signed


def t_altered_genesis(es: list[dict], p: int) -> Tampered | None:
    if p != 0:
        return None
    new = resign(es[0], KEYS[1], prev_hash="1" * 64)  # re-signed by its real key
    return to_lines(_edit(es, 0, new)), "broken_link", 1, 1


def t_relinked(es: list[dict], p: int) -> Tampered | None:
    if p == 0:
        return None  # that is the altered genesis
    new = resign(es[p], BY_ID[es[p]["key_id"]], prev_hash=es[p - 1]["prev_hash"])
    return to_lines(_edit(es, p, new)), "broken_link", p + 1, p + 1


def t_truncated_line(es: list[dict], p: int) -> Tampered | None:
    lines = to_lines(es)
    lines[p] = lines[p][: len(lines[p]) // 2]  # a write cut off mid-line
    return lines, "malformed", p + 1, p + 1


TAMPERS: dict[str, Callable[[list[dict], int], Tampered | None]] = {
    name[2:]: fn for name, fn in globals().items() if name.startswith("t_") and callable(fn)
}
