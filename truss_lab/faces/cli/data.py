"""The data commands: ``init``, ``simulate``, ``sample``, ``ingest``, ``verify``, ``audit``,
``export``, ``schema`` and ``keys``. Getting recorded data in, checking it, getting it out.

No logic lives here: each command is a call into the library and a line of text.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ...core._errors import TrussLabError
from ...ingest._schemas import SCHEMA_NAMES
from ...simulate._defaults import (
    DEFAULT_MATCH_DISAGREEMENT,
    DEFAULT_MATCH_DOUBLE_SHARE,
    DEFAULT_MATCH_SHARE,
)
from .common import (
    EXIT_BAD_LINES,
    check_output_file,
    db_option,
    emit,
    friendly,
    json_option,
    option,
    read_store,
)

__all__ = ["audit", "export", "ingest", "init", "journal", "keys", "sample", "schema",
           "simulate", "verify"]


@click.command()
@db_option
@friendly
def init(db: str) -> None:
    """Create (or migrate) a truss_lab database."""
    from ...store._store import SCHEMA_VERSION, open_store

    with open_store(db):
        pass
    click.echo(f"{db}: schema version {SCHEMA_VERSION}")


@click.command()
@click.option("--out", required=True, type=click.Path(file_okay=False),
              help="Folder to write the dataset into (created if missing). A folder "
                   "holding another dataset's files (another seed) is refused.")
@option("--n-verdicts", default=2000, show_default=True, type=click.IntRange(1),
        old=("--verdicts", "--runs"), help="Number of signed verdicts to simulate.")
@option("--random-state", default=7, show_default=True, type=int, old=("--seed",),
        help="Seed of every random draw: the same seed writes the same files.")
@click.option("--match-share", default=DEFAULT_MATCH_SHARE, show_default=True,
              type=click.FloatRange(0, 1),
              help="Share of the annotated verdicts whose lessons simulated people match "
                   "(match_labels.csv).")
@click.option("--match-disagreement", default=DEFAULT_MATCH_DISAGREEMENT, show_default=True,
              type=click.FloatRange(0, 1),
              help="Probability that a simulated person's match answer is wrong (when a "
                   "wrong one exists).")
@click.option("--match-double-share", default=DEFAULT_MATCH_DOUBLE_SHARE, show_default=True,
              type=click.FloatRange(0, 1),
              help="Share of the matched verdicts that a second simulated person matches "
                   "too, so people can be checked against people (the bundled sample: 0.3).")
@click.option("--slice-effect", metavar="DOMAIN", default=None,
              help="Plant a slice effect: the first extractor ranks its lessons upside down "
                   "on this domain's verdicts (the bundled sample: deployment).")
@click.option("--force", is_flag=True,
              help="Replace another dataset's files in --out instead of refusing.")
@friendly
def simulate(out: str, n_verdicts: int, random_state: int, match_share: float,
             match_disagreement: float, match_double_share: float, slice_effect: str | None,
             force: bool) -> None:
    """Write a synthetic dataset: signed verdicts, completions, labels and their truth.

    Files: journal.jsonl (signed verdicts), keys.json (its keyring), completions.jsonl
    (the extractors' recorded completions), labels.csv (gold labels), references.jsonl
    (reference lessons), match_labels.csv (people's match labels), truth.csv,
    lesson_truth.csv and match_truth.csv (what is true of each candidate, lesson and
    match). `truss-lab schema NAME` describes the formats. Other files in --out are left
    alone; the same seed rewrites its own files (the same bytes)."""
    from ...simulate import simulate as run_simulation

    r = run_simulation(out, runs=n_verdicts, seed=random_state, match_share=match_share,
                       match_disagreement=match_disagreement,
                       match_double_share=match_double_share, force=force,
                       slice_effect=slice_effect)
    click.echo(f"{out}: {r.n_verdicts} verdicts, {r.n_completions} completions of "
               f"{len(r.defects)} extractors ({r.n_unparseable} unparseable), "
               f"{r.n_candidates} candidates, {r.n_labels} labels, {r.n_references} "
               f"reference lessons\nfiles: {', '.join(sorted(r.files))}")


@click.command()
@click.option("--out", required=True, type=click.Path(file_okay=False),
              help="Folder to copy the sample into (created if missing).")
@friendly
def sample(out: str) -> None:
    """Copy the bundled synthetic sample to a folder (made by `truss-lab simulate`).

    Files: the ones `truss-lab simulate` writes (journal.jsonl, keys.json,
    completions.jsonl, labels.csv, references.jsonl, match_labels.csv, truth.csv,
    lesson_truth.csv, match_truth.csv) and its DATASHEET.md."""
    from .._notebook import copy_sample

    files = copy_sample(out)
    click.echo(f"{out}: {len(files)} files ({', '.join(f.name for f in files)})")


@click.group()
def ingest() -> None:
    """Load recorded data into the database."""


@ingest.command("journal")
@db_option
@click.argument("path", type=click.Path(dir_okay=False))
@option("--keyring", "keys_path", type=click.Path(dir_okay=False), old=("--keys",),
        help="Keyring JSON (key_id -> base64 public key).")
@click.option("--keep-verified-prefix", is_flag=True,
              help="On a bad line, keep the entries verified before it.")
@json_option
@friendly
def ingest_journal(db: str, path: str, keys_path: str | None, keep_verified_prefix: bool,
                   as_json: bool) -> None:
    """Import a journal export (all-or-nothing unless --keep-verified-prefix)."""
    from ...journal._crypto import load_keyring
    from ...journal._ledger import import_journal
    from ...store._store import open_store

    if keys_path is not None:
        load_keyring(keys_path)  # a bad keyring is refused before the database is created
    with open_store(db) as store:
        rep = import_journal(store, path, keyring=keys_path,
                             keep_verified_prefix=keep_verified_prefix)
    text = (f"{path}: {rep.entries_added} added, {rep.entries_present} already present, "
            f"head seq {rep.head.seq if rep.head else 0}")
    if not rep.ok:
        text += (f"\nstopped at line {rep.verify.first_bad_line}: {rep.verify.reason}: "
                 f"{rep.verify.message}")
    emit(rep.model_dump(mode="json"), as_json, text)
    if not rep.ok:
        sys.exit(1)


allow_bad_lines_option = click.option(
    "--allow-bad-lines", is_flag=True,
    help=f"Exit 0 when some lines were rejected (default: exit {EXIT_BAD_LINES}).")


def _ingest_table(kind: str, db: str, path: str, as_json: bool,
                  allow_bad_lines: bool = False, batch_extractor: str | None = None) -> None:
    from ...ingest._ingest import (
        ingest_completions,
        ingest_labels,
        ingest_match_labels,
        ingest_references,
    )
    from ...store._store import open_store

    ingesters = {"completions": ingest_completions, "labels": ingest_labels,
                 "references": ingest_references, "match-labels": ingest_match_labels}

    with open_store(db) as store:
        if batch_extractor is not None:
            from ...extract._batch_api import ingest_batch  # only this form needs extract

            rep = ingest_batch(store, path, batch_extractor)
        else:
            rep = ingesters[kind](store, path)
    text = f"{path}: {rep.rows_added} added, {rep.rows_present} already present, " \
           f"{len(rep.errors)} bad lines"
    if rep.rows_blank:
        text += (f", {rep.rows_blank} left unanswered ('?', skipped)" if kind == "match-labels"
                 else f", {rep.rows_blank} left without a label (skipped)")
    for e in rep.errors[:10]:
        text += f"\n  {e}"
    if len(rep.errors) > 10:
        text += f"\n  … and {len(rep.errors) - 10} more"
    emit(rep.to_dict(), as_json, text)
    # A warning is a line on stderr, as every command's is: stdout stays the report.
    for w in rep.warnings[:10]:
        click.echo(f"warning: {w}", err=True)
    if len(rep.warnings) > 10:
        click.echo(f"warning: … and {len(rep.warnings) - 10} more (--json lists them all)",
                   err=True)
    # No silent loss: a rejected line fails the command unless asked not to; a
    # file of which nothing was usable (wrong header, every line bad) always does.
    nothing_usable = not rep.header_ok or (rep.errors and rep.rows_added + rep.rows_present == 0)
    if nothing_usable or (rep.errors and not allow_bad_lines):
        sys.exit(EXIT_BAD_LINES)




def _ingest_table_command(kind: str, what: str) -> click.Command:
    """``ingest KIND``: the non-chained inputs share one command shape; only the
    kind and the help differ."""

    def command(db: str, path: str, allow_bad_lines: bool, as_json: bool) -> None:
        _ingest_table(kind, db, path, as_json, allow_bad_lines)

    command.__doc__ = f"Load {what} (bad lines reported, good ones land; exit 3 if any)."
    command.__name__ = f"ingest_{kind.replace('-', '_')}_cmd"
    for decorate in (friendly, json_option, allow_bad_lines_option,
                     click.argument("path", type=click.Path(dir_okay=False)), db_option,
                     ingest.command(kind)):
        command = decorate(command)
    return command  # type: ignore[return-value]


@ingest.command("completions")
@db_option
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["completions", "openai-batch"]),
              default="completions", show_default=True,
              help="completions: JSONL, CSV or Parquet of the completions format (`truss-lab "
                   "schema completions`); openai-batch: an OpenAI Batch output file of "
                   "requests `truss-lab batch prepare` wrote.")
@click.option("--extractor", "extractor_id", default=None,
              help="With --format openai-batch: the extractor id the answers are recorded "
                   "under (`batch prepare` prints it).")
@allow_bad_lines_option
@json_option
@friendly
def ingest_completions_cmd(db: str, path: str, fmt: str, extractor_id: str | None,
                           allow_bad_lines: bool, as_json: bool) -> None:
    """Load recorded completions (bad lines reported, good ones land; exit 3 if any)."""
    if fmt == "openai-batch" and not extractor_id:
        raise TrussLabError("--format openai-batch needs --extractor (the id `truss-lab "
                            "batch prepare` printed)")
    if fmt != "openai-batch" and extractor_id:
        raise TrussLabError("--extractor names a Batch output's extractor (--format "
                            "openai-batch); a completions file names its own")
    _ingest_table("completions", db, path, as_json, allow_bad_lines,
                  batch_extractor=extractor_id)
ingest_labels_cmd = _ingest_table_command("labels", "gold labels")
ingest_references_cmd = _ingest_table_command("references", "reference lessons")
ingest_match_labels_cmd = _ingest_table_command(
    "match-labels", "match labels (a person's reference for each lesson; or a match queue)")


@click.command()
@db_option
@json_option
@friendly
def verify(db: str, as_json: bool) -> None:
    """Verify the stored journal; exit 0 when clean, 1 when tampered."""
    from ...journal._ledger import verify_chain
    from ...journal._table import signers_text, verdict_signers

    with read_store(db) as store:
        rep = verify_chain(store)
        signers = verdict_signers(store)
    emit({**rep.model_dump(mode="json"), "verdict_signers": signers}, as_json,
         f"{rep}; {signers_text(signers)}")
    sys.exit(0 if rep.ok else 1)


@click.command("audit")
@db_option
@json_option
@friendly
def audit(db: str, as_json: bool) -> None:
    """Check a database against ADR 0011; exit 0 when clean, 1 on any failure."""
    from ...govern._audit import audit as audit_store

    with read_store(db) as store:
        report = audit_store(store)
    lines = [f"{'PASS' if c.passed else 'FAIL'} {c.name}: {c.detail}" for c in report.checks]
    n_bad = len(report.failed())
    lines.append("ok: all checks passed" if report.ok
                 else f"FAILED: {n_bad} of {len(report.checks)} checks")
    emit(report.to_dict(), as_json, "\n".join(lines))
    sys.exit(0 if report.ok else 1)


@click.command()
@db_option
@click.option("--format", "fmt", type=click.Choice(["parquet", "csv"]), default="parquet",
              show_default=True, help="File format of the exported tables and views.")
@click.option("--out", required=True, type=click.Path(file_okay=False),
              help="New folder for one file per table and view, plus manifest.json.")
@json_option
@friendly
def export(db: str, fmt: str, out: str, as_json: bool) -> None:
    """Export every table and view, with a manifest of row counts and content hashes."""
    from ...store._export import export_store

    with read_store(db) as store:
        manifest = export_store(store, out, format=fmt)
    rels = manifest["relations"]
    text = f"{out}: {len(rels)} files ({sum(r['rows'] for r in rels)} rows), manifest.json"
    emit(manifest, as_json, text)


@click.command()
@click.argument("name", type=click.Choice(SCHEMA_NAMES))
@friendly
def schema(name: str) -> None:
    """Print the JSON Schema of a format or record."""
    from ...ingest._schemas import json_schema

    click.echo(json.dumps(json_schema(name), indent=2))


@click.group()
def keys() -> None:
    """Ed25519 signing keys."""


@keys.command("generate")
@click.option("--key-id", required=True, help="Name of the key (goes into every entry).")
@click.option("--out", required=True, type=click.Path(dir_okay=False),
              help="Private key file (written with mode 0600).")
@click.option("--keyring", type=click.Path(dir_okay=False),
              help="Add the public key to this keyring JSON (created if missing).")
@friendly
def keys_generate(key_id: str, out: str, keyring: str | None) -> None:
    """Generate a signing key; print its public key."""
    from ...journal._crypto import SigningKey, load_keyring, save_keyring

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
        try:
            save_keyring(ring, keyring)
        except TrussLabError:
            Path(out).unlink()  # new (checked above): no key left that no keyring names
            raise
    click.echo(f"{key_id} {key.public_key_b64}")


@click.group("journal")
def journal() -> None:
    """Journals of your own verdicts: sign records into a journal export."""


@journal.command("sign")
@click.argument("records", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--key", "key_path", required=True, type=click.Path(dir_okay=False),
              help="Private key file that signs (`truss-lab keys generate`).")
@click.option("--out", required=True, type=click.Path(dir_okay=False),
              help="Journal file to write (JSONL); with --append, the journal to continue.")
@click.option("--append", is_flag=True,
              help="Continue the journal --out (verified first) instead of starting one.")
@click.option("--keyring", type=click.Path(dir_okay=False),
              help="Keyring JSON that gains the key's public key (created if missing; "
                   "default: keys.json beside --out).")
@json_option
@friendly
def journal_sign(records: tuple[str, ...], key_path: str, out: str, append: bool,
                 keyring: str | None, as_json: bool) -> None:
    """Sign verdict records (JSONL; CSV with checks/tags as JSON text; Parquet) into a
    journal: each record holds a verdict's payload fields (`truss-lab schema verdict`)
    and an optional ts (RFC 3339 UTC; default now). Every record is checked first; one
    bad record writes nothing (exit 3, each bad one named by file, line or row, field)."""
    from ...ingest._verdict_records import BadRecordsError, sign_verdicts

    ring = keyring or str(Path(out).parent / "keys.json")
    try:
        entries = sign_verdicts(list(records), key_path, keyring=ring,
                                **({"append_to": out} if append else {"out": out}))
    except BadRecordsError as exc:
        lines = [f"error: {len(exc.errors)} bad record(s); nothing was signed"]
        lines += [f"  {e}" for e in exc.errors[:10]]
        if len(exc.errors) > 10:
            lines.append(f"  … and {len(exc.errors) - 10} more")
        click.echo("\n".join(lines), err=True)
        sys.exit(EXIT_BAD_LINES)
    first, head, key_id = entries[0]["seq"], entries[-1]["seq"], entries[0]["key_id"]
    text = (f"{out}: {len(entries)} verdicts signed by {key_id} (seq {first}..{head}); "
            f"keyring {ring}")
    emit({"journal": out, "keyring": ring, "key_id": key_id, "entries_added": len(entries),
          "first_seq": first, "head_seq": head}, as_json, text)

