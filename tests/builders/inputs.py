"""Every command-line input a user names, for issue 39's attacks on inputs that are not
files (items 4-6): a named pipe no one writes to, ``/dev/zero``, ``/dev/urandom``, a TOML
file nested 500 deep.

:data:`INPUTS` lists ``(name, argv)``: ``argv(path, db)`` is the ``truss-lab`` arguments
that read ``path`` as that input, against the database ``db`` (the sample, with a run);
:data:`TOML_INPUTS` the ones that read TOML, with an environment variable where the path
goes there. Used by tests/test_input_files.py and scripts/reliability_attack.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = ["INPUTS", "SAMPLE", "TOML_INPUTS", "deep_toml", "run_cli"]

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "datasets" / "sample"
Argv = Callable[[Path, Path], list[str]]

INPUTS: list[tuple[str, Argv]] = [
    ("ingest journal", lambda p, db: ["ingest", "journal", str(p), "--db", str(db)]),
    ("ingest journal --keyring", lambda p, db: [
        "ingest", "journal", str(SAMPLE / "journal.jsonl"), "--keyring", str(p), "--db",
        str(db)]),
    ("ingest completions", lambda p, db: ["ingest", "completions", str(p), "--db", str(db)]),
    ("ingest labels", lambda p, db: ["ingest", "labels", str(p), "--db", str(db)]),
    ("ingest references", lambda p, db: ["ingest", "references", str(p), "--db", str(db)]),
    ("ingest match-labels", lambda p, db: ["ingest", "match-labels", str(p), "--db",
                                           str(db)]),
    ("propose --key", lambda p, db: ["propose", "r", "--db", str(db), "--key", str(p)]),
    ("usage --prices", lambda p, db: ["usage", "r", "--db", str(db), "--prices", str(p)]),
    ("grid", lambda p, db: ["grid", str(p), "--db", str(db)]),
    ("prompts add", lambda p, db: ["prompts", "add", str(p), "--db", str(db)]),
]
"""Every input path a command reads (a file the user names)."""

TOML_INPUTS: list[tuple[str, Argv, str | None]] = [
    ("grid", lambda p, db: ["grid", str(p), "--db", str(db)], None),
    ("usage --prices", lambda p, db: ["usage", "r", "--db", str(db), "--prices", str(p)],
     None),
    ("prompts add", lambda p, db: ["prompts", "add", str(p), "--db", str(db)], None),
    ("TRUSS_LAB_CONFIG", lambda p, db: ["extract", "--db", str(db), "--extractor",
                                        "heuristic", "--quiet"], "TRUSS_LAB_CONFIG"),
]
"""The TOML inputs; the third item names the environment variable that takes the path."""


def deep_toml(depth: int = 500) -> str:
    """A TOML file whose one value nests ``depth`` arrays (tomllib recurses per level)."""
    return 'name = "deep"\nx = ' + "[" * depth + "]" * depth + "\n"


def run_cli(args: list[str], *, env: dict[str, str] | None = None, timeout: float = 60,
            memory: int | None = None) -> subprocess.CompletedProcess[str]:
    """``truss-lab *args`` in a subprocess (at most ``timeout`` seconds, and ``memory``
    bytes of address space when given: a reader that grows without bound ends in a
    MemoryError there instead of filling the machine)."""
    def limit() -> None:
        import resource

        if memory:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    return subprocess.run([sys.executable, "-m", "truss_lab.faces.cli", *args],
                          env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
                          cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          preexec_fn=limit if memory else None)


#: Issue 39 item 8d's edits, as SQL (tests/test_content_claims.py and `make reliability`):
#: what the attacker changed that no check covered, and two more. Each leaves the rows'
#: other checks as they were where it can (the lesson's candidate is edited alike, a
#: completion gains a trailing space that parses the same), so only the claim can tell.
CLAIM_EDITS: dict[str, list[str]] = {
    "lesson text (and its candidate's)": [
        "UPDATE memory_entries SET text = 'always deploy on Fridays' "
        "WHERE entry_id = (SELECT min(entry_id) FROM memory_entries)",
        "UPDATE candidates SET text = 'always deploy on Fridays' WHERE 'lesson-' || "
        "substr(candidate_id, 6) = (SELECT min(entry_id) FROM memory_entries)"],
    "flipped label": ["UPDATE labels SET useful = 1 - useful "
                      "WHERE rowid = (SELECT min(rowid) FROM labels)"],
    "deleted run_chunks row": ["DELETE FROM run_chunks WHERE chunk_index = 0"],
    "deleted reference": ["DELETE FROM reference_lessons "
                          "WHERE rowid = (SELECT min(rowid) FROM reference_lessons)"],
    "edited completion text": ["UPDATE completions SET text = text || ' ' "
                               "WHERE rowid = (SELECT min(rowid) FROM completions)"],
    "added label": ["INSERT INTO labels SELECT * REPLACE ('mallory' AS annotator) FROM labels "
                    "WHERE rowid = (SELECT min(rowid) FROM labels)"],
    "deleted claims": ["DELETE FROM content_claims WHERE scope = 'run'"],
}
