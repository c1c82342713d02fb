"""``truss-lab``: a thin command line over the library. No logic lives here.

A user error (any :class:`TrussLabError`) prints one line and exits non-zero;
never a traceback.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ..core._errors import BadInputError, TrussLabError
from ..ingest._schemas import SCHEMA_NAMES
from ._cli_common import EXIT_BAD_LINES, _emit, _friendly, db_option, json_option, read_store


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="truss_lab")
def cli() -> None:
    """truss_lab: study Truss lesson extraction (ADR 0011) offline."""


@cli.command()
@db_option
@_friendly
def init(db: str) -> None:
    """Create (or migrate) a truss_lab database."""
    from ..store._store import SCHEMA_VERSION, open_store

    with open_store(db):
        pass
    click.echo(f"{db}: schema version {SCHEMA_VERSION}")


@cli.command()
@click.option("--out", required=True, type=click.Path(file_okay=False),
              help="Folder to write the dataset into (created if missing).")
@click.option("--verdicts", default=None, type=click.IntRange(1),
              help="Number of signed verdicts to simulate (default 2000).")
@click.option("--runs", "runs_alias", default=None, type=click.IntRange(1), hidden=True,
              help="Old name of --verdicts.")
@click.option("--seed", default=7, show_default=True, type=int,
              help="Seed of every random draw: the same seed writes the same files.")
@_friendly
def simulate(out: str, verdicts: int | None, runs_alias: int | None, seed: int) -> None:
    """Write a synthetic dataset (journal, keyring, completions, labels, truth)."""
    from ..simulate._simulate import simulate as run_simulation

    if verdicts is not None and runs_alias is not None and verdicts != runs_alias:
        raise BadInputError("give --verdicts only (--runs is its old name)", field="--verdicts")
    n = verdicts or runs_alias or 2000
    result = run_simulation(out, runs=n, seed=seed)
    click.echo(str(result))


@cli.command()
@click.option("--out", required=True, type=click.Path(file_okay=False),
              help="Folder to copy the sample into (created if missing).")
@_friendly
def sample(out: str) -> None:
    """Copy the bundled synthetic sample (journal, keys, completions, labels) to a folder."""
    from ._notebook import copy_sample

    files = copy_sample(out)
    click.echo(f"{out}: {len(files)} files ({', '.join(f.name for f in files)})")


@cli.group()
def ingest() -> None:
    """Load recorded data into the database."""


@ingest.command("journal")
@db_option
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--keys", "keys_path", type=click.Path(dir_okay=False),
              help="Keyring JSON (key_id -> base64 public key).")
@click.option("--keep-verified-prefix", is_flag=True,
              help="On a bad line, keep the entries verified before it.")
@json_option
@_friendly
def ingest_journal(db: str, path: str, keys_path: str | None, keep_verified_prefix: bool,
                   as_json: bool) -> None:
    """Import a journal export (all-or-nothing unless --keep-verified-prefix)."""
    from ..journal._ledger import import_journal
    from ..store._store import open_store

    with open_store(db) as store:
        rep = import_journal(store, path, keyring=keys_path,
                             keep_verified_prefix=keep_verified_prefix)
    text = (f"{path}: {rep.entries_added} added, {rep.entries_present} already present, "
            f"head seq {rep.head.seq if rep.head else 0}")
    if not rep.ok:
        text += (f"\nstopped at line {rep.verify.first_bad_line}: {rep.verify.reason}: "
                 f"{rep.verify.message}")
    _emit(rep.model_dump(mode="json"), as_json, text)
    if not rep.ok:
        sys.exit(1)


def _ingest_table(kind: str, db: str, path: str, as_json: bool,
                  allow_bad_lines: bool = False) -> None:
    from ..ingest._ingest import ingest_completions, ingest_labels, ingest_references
    from ..store._store import open_store

    fn = {"completions": ingest_completions, "labels": ingest_labels,
          "references": ingest_references}[kind]
    with open_store(db) as store:
        rep = fn(store, path)
    text = f"{path}: {rep.rows_added} added, {rep.rows_present} already present, " \
           f"{len(rep.errors)} bad lines"
    if rep.rows_blank:
        text += f", {rep.rows_blank} left without a label (skipped)"
    for e in rep.errors[:10]:
        text += f"\n  {e}"
    if len(rep.errors) > 10:
        text += f"\n  … and {len(rep.errors) - 10} more"
    for w in rep.warnings[:10]:
        text += f"\n  warning: {w}"
    if len(rep.warnings) > 10:
        text += f"\n  … and {len(rep.warnings) - 10} more warnings"
    _emit(rep.to_dict(), as_json, text)
    # No silent loss: a rejected line fails the command unless asked not to; a
    # file of which nothing was usable (wrong header, every line bad) always does.
    nothing_usable = not rep.header_ok or (rep.errors and rep.rows_added + rep.rows_present == 0)
    if nothing_usable or (rep.errors and not allow_bad_lines):
        sys.exit(EXIT_BAD_LINES)


allow_bad_lines_option = click.option(
    "--allow-bad-lines", is_flag=True,
    help=f"Exit 0 when some lines were rejected (default: exit {EXIT_BAD_LINES}).")


def _register_ingest(kind: str, what: str) -> None:
    # The three non-chained inputs share one command shape; only the kind and help differ.
    def command(db: str, path: str, allow_bad_lines: bool, as_json: bool) -> None:
        _ingest_table(kind, db, path, as_json, allow_bad_lines)

    command.__doc__ = f"Load {what} (bad lines reported, good ones land; exit 3 if any)."
    command.__name__ = f"ingest_{kind}_cmd"
    for decorate in (_friendly, json_option, allow_bad_lines_option,
                     click.argument("path", type=click.Path(dir_okay=False)), db_option,
                     ingest.command(kind)):
        command = decorate(command)


for _kind, _what in (("completions", "recorded completions"), ("labels", "gold labels"),
                     ("references", "reference lessons")):
    _register_ingest(_kind, _what)


@cli.command()
@db_option
@json_option
@_friendly
def verify(db: str, as_json: bool) -> None:
    """Verify the stored journal; exit 0 when clean, 1 when tampered."""
    from ..journal._ledger import verify_chain

    with read_store(db) as store:
        rep = verify_chain(store)
    _emit(rep.model_dump(mode="json"), as_json, str(rep))
    sys.exit(0 if rep.ok else 1)


@cli.command()
@db_option
@click.option("--format", "fmt", type=click.Choice(["parquet", "csv"]), default="parquet",
              show_default=True, help="File format of the exported tables and views.")
@click.option("--out", required=True, type=click.Path(file_okay=False),
              help="New folder for one file per table and view, plus manifest.json.")
@json_option
@_friendly
def export(db: str, fmt: str, out: str, as_json: bool) -> None:
    """Export every table and view, with a manifest of row counts and content hashes."""
    from ..store._export import export_store

    with read_store(db) as store:
        manifest = export_store(store, out, format=fmt)
    rels = manifest["relations"]
    text = f"{out}: {len(rels)} files ({sum(r['rows'] for r in rels)} rows), manifest.json"
    _emit(manifest, as_json, text)


@cli.command()
@click.argument("name", type=click.Choice(SCHEMA_NAMES))
@_friendly
def schema(name: str) -> None:
    """Print the JSON Schema of a format or record."""
    from ..ingest._schemas import json_schema

    click.echo(json.dumps(json_schema(name), indent=2))


@cli.group()
def keys() -> None:
    """Ed25519 signing keys."""


@keys.command("generate")
@click.option("--key-id", required=True, help="Name of the key (goes into every entry).")
@click.option("--out", required=True, type=click.Path(dir_okay=False),
              help="Private key file (written with mode 0600).")
@click.option("--keyring", type=click.Path(dir_okay=False),
              help="Add the public key to this keyring JSON (created if missing).")
@_friendly
def keys_generate(key_id: str, out: str, keyring: str | None) -> None:
    """Generate a signing key; print its public key."""
    from ..core._paths import check_output_file
    from ..journal._crypto import SigningKey, load_keyring, save_keyring

    # Every path is checked before anything is written: a bad --keyring must
    # not leave a private key behind.
    if Path(out).exists() or Path(out).is_symlink():
        raise TrussLabError(f"{out} exists; refusing to overwrite a private key")
    check_output_file(out, field="--out", overwrite=False)
    ring: dict[str, bytes] = {}
    if keyring:
        check_output_file(keyring, field="--keyring")
        ring = load_keyring(keyring) if Path(keyring).exists() else {}
        if key_id in ring:
            raise TrussLabError(f"{keyring} already has a key {key_id!r}; choose another "
                                "--key-id")
    key = SigningKey.generate(key_id)
    key.save(out)
    if keyring:
        ring[key_id] = key.public_key
        save_keyring(ring, keyring)
    click.echo(f"{key_id} {key.public_key_b64}")


def _register_extensions() -> None:
    # Each stage keeps its commands beside its code; they register here, after
    # _friendly and _emit exist, because they import them from this module.
    from . import _cli_audit, _cli_eval, _cli_extract, _cli_judge, _cli_queue, _cli_report

    _cli_extract.register(cli)
    _cli_eval.register(cli)
    _cli_audit.register(cli)
    _cli_report.register(cli)
    _cli_judge.register(cli)
    _cli_queue.register(cli)


_register_extensions()

EPILOG = ("Guide: README.md (CLI quickstart). File formats: `truss-lab schema NAME` "
          f"({', '.join(SCHEMA_NAMES)}).")


def _add_epilog(group: click.Group) -> None:
    # Every --help ends by saying where the rest is written down.
    for cmd in group.commands.values():
        cmd.epilog = cmd.epilog or EPILOG
        if isinstance(cmd, click.Group):
            _add_epilog(cmd)


cli.epilog = EPILOG
_add_epilog(cli)


def main() -> None:
    """Console entry point."""
    cli(prog_name="truss-lab")


if __name__ == "__main__":
    main()
