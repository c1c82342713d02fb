"""Hashing and signing journal entries, and the keys that sign them (Formats §1).

An entry's ``hash`` is the lowercase hex SHA-256 of the RFC 8785 canonical
JSON of ``{seq, kind, ts, key_id, payload, prev_hash}``; its ``signature`` is
the standard base64 Ed25519 signature over the 32 raw bytes of that hash.
A keyring (``keys.json``) maps ``key_id`` to the standard base64 of the raw
32-byte public key; private keys never enter the database.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import Any

import nacl.bindings
import nacl.exceptions
import nacl.signing

from ..core._canonical import MalformedJSON, canonical, jcs_string, loads_strict
from ..core._errors import BadInputError
from ..core._files import read_input, write_output

__all__ = [
    "GENESIS_HASH",
    "MAX_KEYRING_FILE",
    "MAX_KEY_FILE",
    "SigningKey",
    "build_entry",
    "entry_digest",
    "entry_hash",
    "format_ts",
    "keyring_text",
    "load_keyring",
    "save_keyring",
    "sign_bytes",
    "verify_signature",
]

GENESIS_HASH = "0" * 64
MAX_KEY_FILE = 64 << 10
"""Most bytes of a key file (its JSON holds a key id and a 32-byte seed)."""
MAX_KEYRING_FILE = 16 << 20
"""Most bytes of a keyring (some 100,000 keys)."""


def format_ts(dt: datetime) -> str:
    """RFC 3339 UTC with a ``Z`` suffix (microseconds only when non-zero)."""
    dt = dt.astimezone(UTC)
    fmt = "%Y-%m-%dT%H:%M:%S.%fZ" if dt.microsecond else "%Y-%m-%dT%H:%M:%SZ"
    return dt.strftime(fmt)


def entry_digest(
    seq: int, kind: str, ts: str, key_id: str, payload_canonical: str, prev_hash: str
) -> bytes:
    """The 32 raw bytes of :func:`entry_hash` (what the signature signs)."""
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
    return entry_digest(seq, kind, ts, key_id, payload_canonical, prev_hash).hex()


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


def _write_private_file(path: str | os.PathLike[str], data: str) -> Path:
    """Write ``data`` to a new or regular file with mode 0600, never through a symlink."""
    p = Path(path)
    if p.is_symlink():  # a link planted at the key's path must not send the secret elsewhere
        raise BadInputError("is a symbolic link; refusing to write a private key through it",
                            source=str(p))
    return _write_whole(p, data, 0o600)


def _write_whole(p: Path, data: str, mode: int) -> Path:
    """Write ``data`` to ``p`` whole or not at all, with file mode ``mode``
    (:func:`~truss_lab.core._files.write_output`): a full disk leaves the old file (or
    none), never a truncated key or keyring, and is one line."""
    return write_output(p, lambda tmp: tmp.write_text(data, encoding="utf-8"), mode=mode)


@dataclass(frozen=True)
class SigningKey:
    """An Ed25519 private key with its id. Never stored in the database.

    Signs the lab's own journal entries (:func:`propose_threshold`) and, with
    :func:`truss_lab.sign_verdicts`, verdict records of your own. Its ``repr``
    shows the public key, never the seed.

    Parameters
    ----------
    key_id : str
        The id entries name (``key_id``) and the keyring maps to the public key.
    seed : bytes
        The 32-byte Ed25519 seed: the secret. Make keys with :meth:`generate`,
        :meth:`load_or_create` or :meth:`from_seed` rather than by hand.

    See Also
    --------
    propose_threshold : Signs a threshold decision with it.
    truss_lab.journal.save_keyring : Writes public keys to a keyring file.

    Examples
    --------
    >>> key = tl.SigningKey.from_seed("researcher-1", bytes(32))
    >>> key
    SigningKey(key_id='researcher-1', public_key='O2onvM62pC1io6jQKm8Nc2UyFXcd4kOmOsBIoYtZ2ik=')
    >>> len(key.sign(b"message"))
    64
    >>> kept = tl.SigningKey.load_or_create("researcher-1.key", "researcher-1")
    >>> tl.SigningKey.load("researcher-1.key").public_key == kept.public_key
    True
    """

    key_id: str
    seed: bytes  # 32 bytes

    @classmethod
    def generate(cls, key_id: str) -> SigningKey:
        """A fresh random key.

        Parameters
        ----------
        key_id : str
            The key's id.

        Returns
        -------
        SigningKey
            A key from 32 random bytes (libsodium's generator).
        """
        return cls(key_id, bytes(nacl.signing.SigningKey.generate()))

    @classmethod
    def from_seed(cls, key_id: str, seed: bytes) -> SigningKey:
        """A key from a fixed 32-byte seed (deterministic; for tests and the simulator).

        Parameters
        ----------
        key_id : str
            The key's id.
        seed : bytes
            Exactly 32 bytes.

        Returns
        -------
        SigningKey
            The key.

        Raises
        ------
        BadInputError
            ``seed`` is not 32 bytes.
        """
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
        """The raw 64-byte signature of ``msg``.

        Parameters
        ----------
        msg : bytes
            What to sign.

        Returns
        -------
        bytes
            The Ed25519 signature, 64 bytes.
        """
        return sign_bytes(self._secret, msg)

    def sign_hash(self, hash_hex: str) -> str:
        """Standard base64 signature over the 32 raw bytes of ``hash_hex``.

        Parameters
        ----------
        hash_hex : str
            An entry's ``hash``: 64 lowercase hex digits.

        Returns
        -------
        str
            The ``signature`` field of a journal entry (Formats §1).
        """
        return base64.b64encode(self.sign(bytes.fromhex(hash_hex))).decode("ascii")

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the key as JSON, readable by the owner only (mode 0600).

        Parameters
        ----------
        path : str or os.PathLike
            The key file to write (not a link, a folder, a device or a pipe).

        Returns
        -------
        pathlib.Path
            The file written.
        """
        data = json.dumps(
            {"key_id": self.key_id, "ed25519_seed": base64.b64encode(self.seed).decode("ascii")}
        )
        return _write_private_file(path, data + "\n")

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> SigningKey:
        """Read a key file written by :meth:`save`.

        Parameters
        ----------
        path : str or os.PathLike
            The key file.

        Returns
        -------
        SigningKey
            The key.

        Raises
        ------
        BadInputError
            No such file, or not a truss_lab key file.
        """
        p = Path(path)
        raw = read_input(p, what="a key file", limit=MAX_KEY_FILE)
        try:
            data = loads_strict(raw)  # the one strict JSON reader: depth bounded
            seed = base64.b64decode(data["ed25519_seed"], validate=True)
            return cls.from_seed(str(data["key_id"]), seed)
        except (ValueError, KeyError, TypeError) as exc:
            raise BadInputError(f"not a truss_lab key file ({exc})", source=str(p)) from None

    @classmethod
    def load_or_create(cls, path: str | os.PathLike[str], key_id: str) -> SigningKey:
        """The key saved at ``path``, or a new key ``key_id`` generated and saved there
        (mode 0600) when there is none: a script that signs runs the same the second
        time (a second :meth:`generate` under the same id would be a different key,
        refused once the first is registered). A key file naming another key id is
        refused.

        Parameters
        ----------
        path : str or os.PathLike
            The key file.
        key_id : str
            The key's id, checked against the file's.

        Returns
        -------
        SigningKey
            The key, loaded or new.

        Raises
        ------
        BadInputError
            The file holds another key id, or is not a key file.
        """
        p = Path(path)
        if not p.exists():
            key = cls.generate(key_id)
            key.save(p)
            return key
        key = cls.load(p)
        if key.key_id != key_id:
            raise BadInputError(f"holds key {key.key_id!r}, not {key_id!r}", source=str(p))
        return key

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
    """A signed journal entry as a Formats §1 dict."""
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
    """Read a keyring JSON (``key_id`` → standard base64 raw public key).

    Parameters
    ----------
    path : path
        The keyring file (a file or a pipe, through the one input opener).

    Returns
    -------
    dict of str to bytes
        Each key id's raw public key.

    Raises
    ------
    BadInputError
        Not JSON, not an object of key ids to base64 keys, a key id twice.
    """
    p = Path(path)
    data = read_input(p, what="a keyring", limit=MAX_KEYRING_FILE)
    try:
        # The one strict JSON reader (the journal's): nesting is bounded, a duplicated
        # key is refused (json would keep the last silently: a second entry could swap
        # the key a reviewer read for another one).
        raw = loads_strict(data)
    except MalformedJSON as exc:
        if exc.reason == "duplicate_key":
            raise BadInputError("key id appears twice; a keyring names each key once",
                                source=str(p), field=exc.field) from None
        raise BadInputError(f"keyring is not JSON ({exc})", source=str(p),
                            field=exc.field) from None
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
    """Write a keyring JSON of public keys, sorted by key id.

    Parameters
    ----------
    keys : mapping of str to bytes
        Each key id's raw public key.
    path : path
        The file to write (whole or not at all).

    Returns
    -------
    pathlib.Path
        The path written.

    Raises
    ------
    BadInputError
        ``path`` is a symbolic link.
    """
    p = Path(path)
    if p.is_symlink():  # the rename below would replace the link with a file
        raise BadInputError("is a symbolic link; name the keyring file itself", source=str(p))
    umask = os.umask(0)  # a keyring is public: the mode a plain open() would give
    os.umask(umask)
    return _write_whole(p, keyring_text(keys), 0o666 & ~umask)


def keyring_text(keys: Mapping[str, bytes]) -> str:
    """A keyring file's text: ``key_id`` -> standard base64 public key, sorted by id."""
    data = {k: base64.b64encode(v).decode("ascii") for k, v in sorted(keys.items())}
    return json.dumps(data, indent=2) + "\n"
