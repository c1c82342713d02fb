"""The prompt commands: ``prompts add FILE`` registers a prompt template file
(Formats §6) in the database, ``prompts list`` lists the known versions (built in
and registered), ``prompts show NAME`` prints one as a file.

No logic here: :mod:`truss_lab.extract._prompts` reads, checks and registers.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from .._text import runs_text
from .common import db_option, emit, friendly, json_option, read_store

if TYPE_CHECKING:
    from ...store._store import Store

__all__ = ["prompts"]


@contextmanager
def _maybe_store(db: str) -> Iterator[Store | None]:
    """The database to read registered prompts from, or None when there is no file
    (the built-in prompts are known without one)."""
    if not Path(db).exists():
        yield None
        return
    with read_store(db) as store:
        yield store


@click.group()
def prompts() -> None:
    """Prompt templates, TOML files (`truss-lab schema prompt`): add, list, show."""


@prompts.command("add")
@click.argument("path", metavar="FILE", type=click.Path(dir_okay=False))
@db_option
@json_option
@friendly
def prompts_add(path: str, db: str, as_json: bool) -> None:
    """Register a prompt template file in the database (once per version: the same
    name with another text is refused; make a new version)."""
    from ...extract._prompts import load_prompt, register_prompt
    from ...store._store import open_store

    template = load_prompt(path)
    with open_store(db) as store:
        added = register_prompt(store, template, source=path)
    info = {"name": template.version, "kind": template.kind,
            "template_hash": template.template_hash, "added": added, "source": path}
    state = "registered" if added else "already registered, same text"
    emit(info, as_json, f"{template.version}: {state} ({template.kind} prompt, sha256 "
                        f"{template.template_hash})")


@prompts.command("list")
@db_option
@json_option
@friendly
def prompts_list(db: str, as_json: bool) -> None:
    """List the prompt versions: the built-in ones and those the database registered."""
    from ...extract._prompts import prompts_table

    with _maybe_store(db) as store:
        rows = prompts_table(store)
    if as_json:
        emit(rows, True, "")
        return
    short = [{**r, "template_hash": r["template_hash"][:12]} for r in rows]
    click.echo(runs_text(short, ["name", "kind", "registered", "template_hash", "description"]))


@prompts.command("show")
@click.argument("name", metavar="NAME")
@db_option
@json_option
@friendly
def prompts_show(name: str, db: str, as_json: bool) -> None:
    """Print prompt version NAME as a template file, its SHA-256 first."""
    from ...extract._prompts import get_template, prompt_toml

    with _maybe_store(db) as store:
        template = get_template(name, store)
    text = prompt_toml(template)
    emit({"name": template.version, "kind": template.kind,
          "description": template.description, "template_hash": template.template_hash,
          "toml": text}, as_json, f"# sha256 {template.template_hash}\n{text}")

