"""The signed journal, pure part (no database): FORMATS.md §1.

An entry's ``hash`` is the lowercase hex SHA-256 of the RFC 8785 canonical
JSON of ``{seq, kind, ts, key_id, payload, prev_hash}``; its ``signature`` is
the standard base64 Ed25519 signature over the 32 raw bytes of that hash.

Reading and verifying are separate steps so the store can reuse the second:
:func:`read_journal_lines` parses JSONL strictly into :class:`JournalColumns`
(the payload kept as canonical text), and :func:`verify_columns` checks the
columns, in order, against a keyring. :func:`verify_journal` does both.

Check order for each entry (the first failing entry by position is reported,
with the first failing check of that entry; see :func:`verify_columns`):

1. sequence: ``seq`` must be the previous ``seq`` + 1 (``seq_gap`` when it
   jumps ahead; ``duplicate_seq`` / ``fork`` when it repeats an earlier one);
2. ``unknown_key``: ``key_id`` is in the keyring;
3. ``bad_hash``: the recomputed hash equals ``hash``;
4. ``broken_link``: ``prev_hash`` equals the previous entry's ``hash``
   (64 zeros for ``seq`` 1);
5. ``bad_signature``: the Ed25519 signature over the hash verifies.

A line that cannot be parsed is ``malformed``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import html
import json
import os
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import nacl.bindings
import nacl.exceptions
import nacl.signing
import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ..core._canonical import MalformedJSON, canonical, jcs_string, loads_strict
from ..core._errors import BadInputError, ChainError
from ..core._models import LedgerRef

__all__ = [
    "GENESIS_HASH",
    "REASONS",
    "CheckModel",
    "JournalColumns",
    "JournalEntryModel",
    "MalformedLine",
    "ParsedJournal",
    "SigningKey",
    "VerdictPayloadModel",
    "VerifyReport",
    "build_entry",
    "entry_hash",
    "format_ts",
    "load_keyring",
    "read_journal",
    "read_journal_lines",
    "save_keyring",
    "sign_bytes",
    "verify_columns",
    "verify_journal",
    "verify_signature",
]

GENESIS_HASH = "0" * 64


def format_ts(dt: datetime) -> str:
    """RFC 3339 UTC with a ``Z`` suffix (microseconds only when non-zero)."""
    dt = dt.astimezone(UTC)
    fmt = "%Y-%m-%dT%H:%M:%S.%fZ" if dt.microsecond else "%Y-%m-%dT%H:%M:%SZ"
    return dt.strftime(fmt)


def _entry_digest(
    seq: int, kind: str, ts: str, key_id: str, payload_canonical: str, prev_hash: str
) -> bytes:
    # JCS sorts the six keys as key_id, kind, payload, prev_hash, seq, ts, and a
    # nested object's canonical form is its own canonical text, so the entry's
    # canonical text is a concatenation (one f-string: this runs per entry).
    j = jcs_string
    text = (
        f'{{"key_id":{j(key_id)},"kind":{j(kind)},"payload":{payload_canonical},'
        f'"prev_hash":{j(prev_hash)},"seq":{seq},"ts":{j(ts)}}}'
    )
    return hashlib.sha256(text.encode("utf-8")).digest()


def entry_hash(
    seq: int, kind: str, ts: str, key_id: str, payload_canonical: str, prev_hash: str
) -> str:
    """Hash of an entry whose payload is already in canonical form.

    Lowercase hex SHA-256 of the RFC 8785 canonical JSON of
    ``{seq, kind, ts, key_id, payload, prev_hash}``; ``payload_canonical`` is
    the payload's canonical text, as :func:`canonical` writes it.
    """
    return _entry_digest(seq, kind, ts, key_id, payload_canonical, prev_hash).hex()


REASONS: tuple[str, ...] = (
    "bad_hash",
    "bad_signature",
    "unknown_key",
    "broken_link",
    "seq_gap",
    "duplicate_seq",
    "fork",
    "malformed",
)
"""Every ``reason`` a :class:`VerifyReport` (and :class:`ChainError`) can carry."""


# --- raw Ed25519 (RFC 8032), the one layer every signature goes through -------------


def _secret_key(seed: bytes) -> bytes:
    """libsodium's 64-byte secret key (seed || public key) for a 32-byte seed."""
    if len(seed) == 64:
        return bytes(seed)
    if len(seed) != 32:
        raise BadInputError(f"an Ed25519 seed is 32 bytes, got {len(seed)}", field="seed")
    return nacl.bindings.crypto_sign_seed_keypair(bytes(seed))[1]


def sign_bytes(seed: bytes, msg: bytes) -> bytes:
    """The 64-byte Ed25519 signature of ``msg`` (RFC 8032, deterministic).

    ``seed`` is the 32-byte private key; libsodium's expanded 64-byte form
    (seed || public key) is accepted too, which saves re-deriving it per call.
    """
    return nacl.bindings.crypto_sign(bytes(msg), _secret_key(seed))[:64]


def verify_signature(public_key: bytes, msg: bytes, sig: bytes) -> bool:
    """Whether ``sig`` is a valid Ed25519 signature of ``msg`` by ``public_key``.

    libsodium's strict verifier: it rejects a non-canonical ``S`` (``S >= L``,
    so an ``S + L`` malleated signature fails), small-order keys and ``R``.
    Wrong lengths return False rather than raising.
    """
    if len(public_key) != 32 or len(sig) != 64:
        return False
    try:
        nacl.bindings.crypto_sign_open(bytes(sig) + bytes(msg), bytes(public_key))
    except (nacl.exceptions.BadSignatureError, nacl.exceptions.ValueError):
        return False
    return True


@dataclass(frozen=True)
class SigningKey:
    """An Ed25519 private key with its id. Never stored in the database."""

    key_id: str
    seed: bytes  # 32 bytes

    @classmethod
    def generate(cls, key_id: str) -> SigningKey:
        """A fresh random key."""
        return cls(key_id, bytes(nacl.signing.SigningKey.generate()))

    @classmethod
    def from_seed(cls, key_id: str, seed: bytes) -> SigningKey:
        """A key from a fixed 32-byte seed (deterministic; for tests and the simulator)."""
        if len(seed) != 32:
            raise BadInputError(f"an Ed25519 seed is 32 bytes, got {len(seed)}", field="seed")
        return cls(key_id, bytes(seed))

    @cached_property
    def _secret(self) -> bytes:
        # derived once per key object; cached_property writes __dict__ directly,
        # which a frozen dataclass allows
        return _secret_key(self.seed)

    @property
    def public_key(self) -> bytes:
        """The raw 32-byte public key."""
        return self._secret[32:]

    @property
    def public_key_b64(self) -> str:
        """The public key as standard base64 (the keyring's encoding)."""
        return base64.b64encode(self.public_key).decode("ascii")

    def sign(self, msg: bytes) -> bytes:
        """The raw 64-byte signature of ``msg``."""
        return sign_bytes(self._secret, msg)

    def sign_hash(self, hash_hex: str) -> str:
        """Standard base64 signature over the 32 raw bytes of ``hash_hex``."""
        return base64.b64encode(self.sign(bytes.fromhex(hash_hex))).decode("ascii")

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the key as JSON, readable by the owner only (mode 0600)."""
        p = Path(path)
        data = json.dumps(
            {"key_id": self.key_id, "ed25519_seed": base64.b64encode(self.seed).decode("ascii")}
        )
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(data + "\n")
        os.chmod(p, 0o600)  # an existing file keeps its old mode through O_CREAT
        return p

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> SigningKey:
        """Read a key file written by :meth:`save`."""
        p = Path(path)
        try:
            data = json.loads(p.read_text())
            seed = base64.b64decode(data["ed25519_seed"], validate=True)
            return cls.from_seed(str(data["key_id"]), seed)
        except FileNotFoundError:
            raise BadInputError("no such key file", source=str(p)) from None
        except (ValueError, KeyError, TypeError) as exc:
            raise BadInputError(f"not a truss_lab key file ({exc})", source=str(p)) from None

    def __repr__(self) -> str:  # never print the seed
        return f"SigningKey(key_id={self.key_id!r}, public_key={self.public_key_b64!r})"


def build_entry(
    seq: int,
    kind: str,
    payload: Any,
    key: SigningKey,
    prev_hash: str,
    ts: datetime | str,
) -> dict[str, Any]:
    """A signed journal entry as a FORMATS.md §1 dict."""
    ts_s = ts if isinstance(ts, str) else format_ts(ts)
    h = entry_hash(seq, kind, ts_s, key.key_id, canonical(payload), prev_hash)
    return {
        "seq": seq,
        "kind": kind,
        "ts": ts_s,
        "key_id": key.key_id,
        "payload": payload,
        "prev_hash": prev_hash,
        "hash": h,
        "signature": key.sign_hash(h),
    }


def load_keyring(path: str | os.PathLike[str]) -> dict[str, bytes]:
    """Read a keyring JSON (``key_id`` → standard base64 raw public key)."""
    p = Path(path)
    try:
        raw = json.loads(p.read_text())
    except FileNotFoundError:
        raise BadInputError("no such keyring file", source=str(p)) from None
    except ValueError as exc:
        raise BadInputError(f"keyring is not JSON ({exc})", source=str(p)) from None
    if not isinstance(raw, Mapping):
        raise BadInputError("a keyring maps key_id to a base64 public key", source=str(p))
    out: dict[str, bytes] = {}
    for kid, b64 in raw.items():
        try:
            pub = base64.b64decode(b64, validate=True)
        except (ValueError, TypeError):
            raise BadInputError("public key is not base64", source=str(p), field=kid) from None
        if len(pub) != 32:
            raise BadInputError(
                f"an Ed25519 public key is 32 bytes, got {len(pub)}", source=str(p), field=kid
            )
        out[str(kid)] = pub
    return out


def save_keyring(keys: Mapping[str, bytes], path: str | os.PathLike[str]) -> Path:
    """Write a keyring JSON of public keys, sorted by key id."""
    p = Path(path)
    data = {k: base64.b64encode(v).decode("ascii") for k, v in sorted(keys.items())}
    p.write_text(json.dumps(data, indent=2) + "\n")
    return p


# --- columns: the journal as the store keeps it --------------------------------------

_COLUMNS = ("seq", "kind", "ts", "key_id", "payload", "prev_hash", "hash", "signature")


@dataclass
class JournalColumns:
    """A journal as equal-length columns, in chain order.

    Element ``i`` of every list belongs to the ``i``-th entry. ``payload`` holds
    the canonical JSON text of each payload (as :func:`canonical` writes it), so
    verification hashes it as is and never re-canonicalizes. ``line`` holds the
    1-based file line of each entry when the columns came from a file.
    """

    seq: list[int] = field(default_factory=list)
    kind: list[str] = field(default_factory=list)
    ts: list[str] = field(default_factory=list)
    key_id: list[str] = field(default_factory=list)
    payload: list[str] = field(default_factory=list)
    prev_hash: list[str] = field(default_factory=list)
    hash: list[str] = field(default_factory=list)
    signature: list[str] = field(default_factory=list)
    line: list[int] | None = None

    def __post_init__(self) -> None:
        n = len(self.seq)
        for name in (*_COLUMNS, "line"):
            col = getattr(self, name)
            if col is None:
                continue
            if not isinstance(col, list):
                col = list(col)
                setattr(self, name, col)
            if len(col) != n:
                raise BadInputError(
                    f"journal columns differ in length: seq has {n}, {name} has {len(col)}",
                    field=name,
                )

    def __len__(self) -> int:
        return len(self.seq)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Sequence[Any]]) -> JournalColumns:
        """Columns from a mapping of sequences (e.g. ``arrow_table.to_pydict()``).

        The eight FORMATS.md §1 columns are required (``payload`` as canonical
        text); ``line`` is optional; other keys are ignored.
        """
        missing = [c for c in _COLUMNS if c not in data]
        if missing:
            raise BadInputError(f"journal columns missing: {', '.join(missing)}", field=missing[0])
        cols = {c: list(data[c]) for c in _COLUMNS}
        cols["seq"] = [int(v) for v in cols["seq"]]
        line = data.get("line")
        return cls(**cols, line=None if line is None else [int(v) for v in line])

    @classmethod
    def from_entries(cls, entries: Iterable[Mapping[str, Any]]) -> JournalColumns:
        """Columns from FORMATS.md §1 entry dicts (as :func:`build_entry` returns).

        Each payload is canonicalized here; no validation happens (use
        :func:`read_journal_lines` for untrusted input).
        """
        cols = cls()
        for e in entries:
            cols.seq.append(e["seq"])
            cols.kind.append(e["kind"])
            cols.ts.append(e["ts"])
            cols.key_id.append(e["key_id"])
            cols.payload.append(canonical(e["payload"]))
            cols.prev_hash.append(e["prev_hash"])
            cols.hash.append(e["hash"])
            cols.signature.append(e["signature"])
        return cols

    def prefix(self, n: int) -> JournalColumns:
        """The first ``n`` entries (e.g. the verified prefix of a report)."""
        return JournalColumns(
            *(getattr(self, c)[:n] for c in _COLUMNS),
            line=None if self.line is None else self.line[:n],
        )

    def to_pydict(self) -> dict[str, list[Any]]:
        """The columns as a dict of lists (``line`` included when known)."""
        out: dict[str, list[Any]] = {c: getattr(self, c) for c in _COLUMNS}
        if self.line is not None:
            out["line"] = self.line
        return out

    def iter_jsonl(self) -> Iterator[str]:
        """FORMATS.md §1 lines (no newline), fields in the documented order."""
        for i in range(len(self)):
            yield (
                '{"seq":' + str(self.seq[i])
                + ',"kind":' + jcs_string(self.kind[i])
                + ',"ts":' + jcs_string(self.ts[i])
                + ',"key_id":' + jcs_string(self.key_id[i])
                + ',"payload":' + self.payload[i]
                + ',"prev_hash":' + jcs_string(self.prev_hash[i])
                + ',"hash":' + jcs_string(self.hash[i])
                + ',"signature":' + jcs_string(self.signature[i])
                + "}"
            )


# --- strict reading -------------------------------------------------------------------

_HEX64 = re.compile(r"[0-9a-f]{64}")
_SIG_B64 = re.compile(r"[A-Za-z0-9+/]{86}==")
_TS = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|\+00:00)")


@dataclass(frozen=True)
class MalformedLine:
    """Where and why a journal line could not be read.

    ``reason`` is always ``"malformed"``; ``detail`` is a sub-reason:
    ``bad_json``, ``duplicate_key``, ``non_finite``, ``unsafe_integer``,
    ``bad_unicode``, ``not_an_object``, ``missing_field``, ``unknown_field``,
    ``wrong_type`` or ``bad_value``.
    """

    source: str
    line: int
    field: str | None
    detail: str
    message: str
    reason: str = "malformed"

    def to_error(self) -> BadInputError:
        """The same diagnosis as a :class:`BadInputError`."""
        return BadInputError(
            self.message, source=self.source, line=self.line, field=self.field, reason=self.detail
        )


@dataclass
class ParsedJournal:
    """What :func:`read_journal_lines` read: the good prefix and the first bad line."""

    source: str
    columns: JournalColumns
    error: MalformedLine | None = None

    @property
    def ok(self) -> bool:
        """True when every line parsed."""
        return self.error is None


class _Bad(Exception):
    def __init__(self, field: str | None, detail: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.detail = detail
        self.message = message


def _check_ts(v: str) -> None:
    if not _TS.fullmatch(v):
        raise _Bad("ts", "bad_value", f"expected RFC 3339 UTC like 2026-11-30T10:00:00Z, got {v!r}")
    try:  # the pattern accepts 2026-02-31; the calendar does not
        datetime.fromisoformat(v[:19])
    except ValueError:
        raise _Bad("ts", "bad_value", f"not a calendar date and time: {v!r}") from None


def _check_signature(v: str) -> None:
    if not _SIG_B64.fullmatch(v):
        raise _Bad(
            "signature",
            "bad_value",
            f"expected standard base64 of 64 bytes (88 characters), got {_clip(v)!r}",
        )
    raw = base64.b64decode(v)
    if base64.b64encode(raw).decode("ascii") != v:  # non-zero padding bits
        raise _Bad("signature", "bad_value", "base64 is not in canonical form (padding bits set)")


def _clip(v: str, n: int = 40) -> str:
    return v if len(v) <= n else v[:n] + "…"


def _parse_line(text: str | bytes) -> tuple[int, str, str, str, str, str, str, str]:
    try:
        obj = loads_strict(text)
    except MalformedJSON as exc:
        raise _Bad(exc.field, exc.reason, str(exc)) from None
    if type(obj) is not dict:
        raise _Bad(None, "not_an_object", f"expected a JSON object, got {type(obj).__name__}")
    for name in _COLUMNS:
        if name not in obj:
            raise _Bad(name, "missing_field", f"required field {name!r} is missing")
    if len(obj) != len(_COLUMNS):
        extra = sorted(set(obj) - set(_COLUMNS))
        raise _Bad(extra[0], "unknown_field", f"unknown field(s) {extra}; FORMATS.md §1 has none")
    seq = obj["seq"]
    if type(seq) is not int:  # bool is an int subclass: excluded on purpose
        raise _Bad("seq", "wrong_type", f"expected an integer, got {_json_type(seq)}")
    if seq < 1:
        raise _Bad("seq", "bad_value", f"expected seq >= 1, got {seq}")
    for name in ("kind", "ts", "key_id", "prev_hash", "hash", "signature"):
        if type(obj[name]) is not str:
            raise _Bad(name, "wrong_type", f"expected a string, got {_json_type(obj[name])}")
    for name in ("kind", "key_id"):
        if not obj[name]:
            raise _Bad(name, "bad_value", "expected a non-empty string")
    _check_ts(obj["ts"])
    payload = obj["payload"]
    if type(payload) is not dict:
        raise _Bad("payload", "wrong_type", f"expected a JSON object, got {_json_type(payload)}")
    for name in ("prev_hash", "hash"):
        if not _HEX64.fullmatch(obj[name]):
            raise _Bad(
                name, "bad_value", f"expected 64 lowercase hex digits, got {_clip(obj[name])!r}"
            )
    _check_signature(obj["signature"])
    try:
        payload_c = canonical(payload)
    except MalformedJSON as exc:  # unreachable after loads_strict, kept as a guard
        raise _Bad("payload", exc.reason, str(exc)) from None
    return (
        seq, obj["kind"], obj["ts"], obj["key_id"], payload_c,
        obj["prev_hash"], obj["hash"], obj["signature"],
    )  # fmt: skip


def _json_type(v: Any) -> str:
    if v is None:
        return "null"
    return {bool: "boolean", int: "integer", float: "number", str: "string",
            list: "array", dict: "object"}.get(type(v), type(v).__name__)  # fmt: skip


def read_journal_lines(lines: Iterable[str | bytes], *, source: str = "<memory>") -> ParsedJournal:
    """Parse FORMATS.md §1 JSONL strictly, stopping at the first malformed line.

    Each line must be a JSON object with exactly the eight fields, each of the
    documented type and shape; JSON that RFC 8785 cannot represent (duplicate
    keys, NaN/Infinity, integers beyond 2^53, lone surrogates) is malformed.
    Blank lines are allowed only at the end. Returns the entries before the
    first bad line as :class:`JournalColumns` (with 1-based line numbers) and
    that line's diagnosis, if any. Chain checks are :func:`verify_columns`'.
    """
    cols = JournalColumns(line=[])
    assert cols.line is not None
    blank_at: int | None = None
    appends = (
        cols.seq.append, cols.kind.append, cols.ts.append, cols.key_id.append,
        cols.payload.append, cols.prev_hash.append, cols.hash.append, cols.signature.append,
    )  # fmt: skip
    lineno = 0
    for lineno, raw in enumerate(lines, start=1):
        text = raw.rstrip(b"\r\n") if isinstance(raw, bytes) else raw.rstrip("\r\n")
        if not text.strip():
            if blank_at is None:
                blank_at = lineno
            continue
        if blank_at is not None:
            bad = MalformedLine(
                source, blank_at, None, "bad_json", "blank line inside the journal"
            )
            return ParsedJournal(source, cols, bad)
        try:
            values = _parse_line(text)
        except _Bad as exc:
            bad = MalformedLine(source, lineno, exc.field, exc.detail, exc.message)
            return ParsedJournal(source, cols, bad)
        for append, v in zip(appends, values, strict=True):
            append(v)
        cols.line.append(lineno)
    return ParsedJournal(source, cols)


def read_journal(path: str | os.PathLike[str]) -> ParsedJournal:
    """:func:`read_journal_lines` over a file (read as UTF-8, line by line)."""
    p = Path(path)
    try:
        with p.open("rb") as fh:
            return read_journal_lines(fh, source=str(p))
    except FileNotFoundError:
        raise BadInputError("no such journal file", source=str(p)) from None
    except IsADirectoryError:
        raise BadInputError("expected a journal file, got a directory", source=str(p)) from None


# --- the verdict -----------------------------------------------------------------------


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
    reason: Literal[
        "bad_hash", "bad_signature", "unknown_key", "broken_link",
        "seq_gap", "duplicate_seq", "fork", "malformed",
    ] | None = None  # fmt: skip
    """Why it failed: one of :data:`REASONS`; None when ok."""
    message: str | None = None
    """What failed, where, and what was expected versus found; None when ok."""
    head_seq: int | None = None
    """``seq`` of the last verified-good entry (``prev``'s when none; None for an empty
    chain without ``prev``)."""
    head_hash: str | None = None
    """``hash`` of that same entry: the hash the next entry must link to."""

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


def _usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _check_range(
    cols: JournalColumns, keyring: Mapping[str, bytes], lo: int, hi: int,
    stop: Callable[[], int] | None = None,
) -> tuple[int, str, str] | None:  # fmt: skip
    """First entry in [lo, hi) failing its own checks: (index, reason, message).

    An entry's own checks, in order: key known, hash recomputes, signature
    verifies. (The link and sequence are positional; :func:`verify_columns`
    checks them.) ``stop()`` is polled to give up once an earlier failure is known.
    """
    seq, kind, ts, key_id = cols.seq, cols.kind, cols.ts, cols.key_id
    payload, prev_hash, hashes, sigs = cols.payload, cols.prev_hash, cols.hash, cols.signature
    get_key = keyring.get
    for i in range(lo, hi):
        if stop is not None and (i & 255) == 0 and stop() < i:
            return None
        pk = get_key(key_id[i])
        if pk is None:
            return i, "unknown_key", f"key_id {key_id[i]!r} is not in the keyring"
        digest = _entry_digest(seq[i], kind[i], ts[i], key_id[i], payload[i], prev_hash[i])
        h = digest.hex()
        if h != hashes[i]:
            return i, "bad_hash", (
                f"hash does not match the entry's canonical form: expected {h}, "
                f"got {_clip(str(hashes[i]), 64)}"
            )
        try:
            sig = binascii.a2b_base64(sigs[i], strict_mode=True)
        except (binascii.Error, TypeError, ValueError):
            sig = b""
        if not verify_signature(pk, digest, sig):
            return i, "bad_signature", (
                f"Ed25519 signature does not verify under key {key_id[i]!r} "
                f"(expected a signature over hash {h})"
            )
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


def _first_seq_problem(
    seq: Sequence[int], base: int
) -> int:
    n = len(seq)
    if n == 0:
        return 0
    arr = np.fromiter(seq, dtype=np.int64, count=n)
    bad = np.flatnonzero(arr != np.arange(base + 1, base + 1 + n, dtype=np.int64))
    return int(bad[0]) if bad.size else n


def _first_link_problem(prev_hash: Sequence[str], hashes: Sequence[str], start: str) -> int:
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
    s_pos = _first_seq_problem(cols.seq, base_seq)
    l_pos = _first_link_problem(cols.prev_hash, cols.hash, base_hash)
    limit = min(s_pos, l_pos)
    span = min(limit + 1, n)  # the entry at `limit` needs its own checks too

    if workers is None:
        workers = _usable_cores()
    if workers <= 1 or span < _SERIAL_BELOW:
        found = _check_range(cols, keyring, 0, span)
    else:
        found = _check_parallel(cols, keyring, span, workers)

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
        got = _clip(str(cols.prev_hash[limit]), 64)
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
    s = int(cols.seq[pos])
    e = base_seq + pos + 1
    if s > e:
        return "seq_gap", f"expected seq {e}, got {s} ({s - e} missing)"
    if s < 1 or s <= base_seq:
        return "duplicate_seq", (
            f"expected seq {e}, got {s}: at or before the chain head seq {base_seq}"
            if s >= 1 else f"expected seq {e}, got {s}"
        )
    j = s - base_seq - 1  # where seq s already stands (the prefix before pos is contiguous)
    if cols.hash[pos] == cols.hash[j]:
        return "duplicate_seq", f"expected seq {e}, got {s} again (an identical copy of it)"
    if cols.prev_hash[pos] == cols.prev_hash[j]:
        if own is not None:
            return own[1], own[2]
        return "fork", (
            f"expected seq {e}, got a second validly signed seq {s} with the same prev_hash: "
            f"hash {cols.hash[pos]} forks from {cols.hash[j]}"
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
    """
    parsed = source if isinstance(source, ParsedJournal) else read_journal(source)
    rep = verify_columns(parsed.columns, keyring, prev=prev, workers=workers)
    if not rep.ok or parsed.error is None:
        return rep
    bad = parsed.error
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


# --- pydantic models for `truss-lab schema journal` -----------------------------------

class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


class JournalEntryModel(_Frozen):
    """One line of a journal export (FORMATS.md §1)."""

    seq: int = Field(ge=1, le=2**53 - 1, strict=True)
    """Position in the chain: 1 for the first entry, then +1 per entry."""
    kind: str = Field(min_length=1)
    """What the entry records: ``contract_verdict`` for verdicts; the library adds its own."""
    ts: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|\+00:00)$")
    """When it was written: RFC 3339 in UTC, e.g. ``2026-11-30T10:00:00Z``."""
    key_id: str = Field(min_length=1)
    """The signing key's id; the keyring maps it to the Ed25519 public key."""
    payload: dict[str, Any]
    """The recorded content, a JSON object (for ``contract_verdict`` see VerdictPayloadModel)."""
    prev_hash: str = Field(pattern=r"^[0-9a-f]{64}$")
    """The previous entry's ``hash``; 64 zeros for ``seq`` 1."""
    hash: str = Field(pattern=r"^[0-9a-f]{64}$")
    """Lowercase hex SHA-256 of the RFC 8785 canonical JSON of
    ``{seq, kind, ts, key_id, payload, prev_hash}``."""
    signature: str = Field(pattern=r"^[A-Za-z0-9+/]{86}==$")
    """Standard base64 of the Ed25519 signature over the 32 raw bytes of ``hash``."""


class CheckModel(_Frozen):
    """One check of a contract verdict."""

    name: str = Field(min_length=1)
    """The check's name, e.g. ``tz_regression``; evidence refers to it as ``check:NAME``."""
    passed: bool
    """Whether the check passed."""
    evidence: str = ""
    """What was observed, in words."""


class VerdictPayloadModel(_Frozen):
    """The payload of a ``contract_verdict`` journal entry (FORMATS.md §1)."""

    contract_id: str = Field(min_length=1)
    """The contract judged, e.g. ``c-0042``."""
    run_id: str = Field(min_length=1)
    """The run of the contract that was judged, e.g. ``r-0042-1``."""
    goal: str
    """The contract's goal, in words."""
    verdict: Literal["pass", "fail", "partial"]
    """The outcome: ``pass``, ``fail`` or ``partial``."""
    summary: str
    """A one-line account of the outcome."""
    checks: tuple[CheckModel, ...] = ()
    """The individual checks behind the verdict."""
    tags: tuple[str, ...] = ()
    """Free-form labels, e.g. ``scheduler``, ``dst``."""
