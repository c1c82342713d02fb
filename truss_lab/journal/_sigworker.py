"""A signature-checking worker process: Ed25519 checks off the driver's interpreter.

Started by :class:`truss_lab.journal._verify.SigPool` as ``python -P <this file>``: it imports
nothing but the standard library and libsodium's binding, so it starts in ~50 ms
(importing ``truss_lab`` would take a second), and it holds its own GIL, so the
driver's Python work (replay extraction) never waits on it and it never waits on
the driver. It decides one thing only: whether each signature verifies (the
driver checks keys, hashes, links and words every report).

Protocol on stdin/stdout, little-endian: a request is ``uint32 n`` then ``n``
records of 128 bytes (public key 32, signature 64, signed message 32); ``n = 0``
or end of input ends the worker. The reply to each request is ``int32``: the
index of the first record whose signature does not verify, or -1.
"""

from __future__ import annotations

import struct
import sys

from nacl.bindings import crypto_sign_open

RECORD = 128


def check(data: bytes, n: int) -> int:
    """Index of the first of ``n`` records in ``data`` that does not verify, or -1."""
    for i in range(n):
        o = RECORD * i
        try:
            crypto_sign_open(data[o + 32:o + RECORD], data[o:o + 32])
        except Exception:  # BadSignatureError, or anything libsodium refuses
            return i
    return -1


def main() -> None:
    rd, wr = sys.stdin.buffer, sys.stdout.buffer
    while True:
        head = rd.read(4)
        if len(head) < 4:
            return
        (n,) = struct.unpack("<I", head)
        if n == 0:
            return
        data = rd.read(RECORD * n)
        if len(data) < RECORD * n:
            return
        wr.write(struct.pack("<i", check(data, n)))
        wr.flush()


if __name__ == "__main__":
    main()
