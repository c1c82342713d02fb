"""A server that echoes the caller's API key back, and the artefacts to grep for it.

:class:`EchoServer` is the scripted server of :mod:`tests.builders.http_server`
whose default answer carries the ``Authorization`` value of the request it
answers: in the completion's ``model`` field (``mode="model"``) or in the
``evidence`` list of the one lesson it proposes (``mode="evidence"``).
:func:`leaks` lists the files (a database with its WAL, an export folder, a
report) whose bytes hold a needle. Used by tests/test_secrets_echo.py and the
``make reliability`` rows of scripts/reliability_secrets.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.builders.http_server import ScriptedServer, default_completion

__all__ = ["EchoServer", "encoded_forms", "leaks", "leaks_encoded"]

#: A key with the characters encoders treat specially ('/', '+', '=').
ODD_KEY = "sk-test-ABC123xyz/+=Q9deadbeef"


def encoded_forms(key: str) -> dict[str, str]:
    """``key`` as a server's error body, a log or a URL may carry it: JSON-escaped (the
    standard ``\\/``), percent-encoded (either case), ``\\u``-escaped (every character, or
    one), upper- and lower-cased, and JSON-escaped twice (``\\\\\\/``)."""
    from urllib.parse import quote

    pct = quote(key, safe="")
    return {
        "plain": key,
        "json_slash": key.replace("/", "\\/"),
        "percent": pct,
        "percent_lower": re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), pct),
        "u_all": "".join(f"\\u{ord(c):04x}" for c in key),
        "u_one": f"\\u{ord(key[0]):04x}" + key[1:],
        "upper": key.upper(),
        "lower": key.lower(),
        "json_slash_twice": key.replace("/", "\\\\\\/"),
    }


def leaks_encoded(key: str, *paths: Path, texts: dict[str, str] | None = None) -> list[str]:
    """``(where, form)`` of every encoded form of ``key`` (:func:`encoded_forms`) found in
    the files under ``paths`` (as :func:`leaks` lists them) or in ``texts`` (a name ->
    text: a command's stderr, a dump of every table), as ``where: form`` lines."""
    found = []
    for form, needle in encoded_forms(key).items():
        found += [f"{f}: {form}" for f in leaks(needle, *paths)]
        found += [f"{name}: {form}" for name, text in (texts or {}).items() if needle in text]
    return found


class EchoServer(ScriptedServer):
    """Answers like the default server, with the caller's key echoed where ``mode`` says."""

    def __init__(self, mode: str) -> None:
        if mode not in ("model", "evidence"):
            raise ValueError(f"mode is 'model' or 'evidence', not {mode!r}")
        self.mode = mode
        super().__init__(responder=self._answer)

    def _answer(self, body: Any) -> dict[str, Any]:
        with self._lock:  # the request being answered is the last one seen
            auth = self.requests[-1].headers.get("authorization", "")
        key = auth.removeprefix("Bearer ")
        out = default_completion(body)
        if self.mode == "model":
            out["model"] = key
        else:
            lesson = {"text": "echo lesson", "salience": 0.9, "evidence": ["check:a", key]}
            out["choices"][0]["message"]["content"] = json.dumps({"lessons": [lesson]})
        return out


def leaks(needle: str, *paths: Path) -> list[str]:
    """The files under ``paths`` (a file, a database file and its WAL, or every file
    of a folder) whose bytes hold ``needle``."""
    files: list[Path] = []
    for p in paths:
        files += sorted(p.rglob("*")) if p.is_dir() else [p, Path(str(p) + ".wal")]
    data = needle.encode()
    return [str(f) for f in files if f.is_file() and data in f.read_bytes()]
