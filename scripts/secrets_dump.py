"""After the secrets scenarios of issue 39, dump everything and grep it for the secrets.

    .venv/bin/python -m scripts.secrets_dump            # prints what it found; exit 1 if any

The scenarios run through the real CLI (subprocesses, as a user runs them) against a local
server on 127.0.0.1 (tests/builders/http_server.py), with ``OPENAI_API_KEY`` set to a key
holding the characters encoders treat specially (``/``, ``+``, ``=``):

* ``extract`` against a server whose every answer is an error body echoing the key, each
  verdict's in another encoding (JSON's ``\\/``, percent-encoded in either case,
  ``\\u``-escaped, upper- and lower-cased, escaped twice); then ``errors --json``;
* ``extract`` with the key in the ``--base-url`` query and userinfo, another key (in no
  environment variable) in its path, and one after a ``#`` (a fragment: refused);
* ``prompts add`` of a prompt file holding the key, ``Authorization: Bearer ...`` and URL
  credentials; ``ingest labels`` with the key as an annotator, ``ingest references`` with
  it in a text, an annotator and an evidence token;
* ``export`` (csv and parquet) and ``report``.

Then every column of every table (``SELECT *``), the database file and its WAL, every
export file, the report and every command's stdout and stderr are searched for each
secret in every form of :func:`tests.builders.echo.encoded_forms`. ``make reliability``
runs the same scenarios as its row "secrets in every encoding: dump of everything".
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from scripts.reliability_holes import cli
from tests.builders.echo import ODD_KEY, encoded_forms, leaks_encoded
from tests.builders.http_server import Reply, ScriptedServer
from truss_lab.faces._notebook import load_sample
from truss_lab.store._store import Store

#: The secrets the scenarios plant, besides the key: a bearer token, a URL password, and
#: keys in a base URL's path and fragment that no environment variable names.
BEARER = "tok-bearer-" + "9c" * 10
PASSWORD = "pw-userinfo-" + "4e" * 10
PATH_KEY = "sk-path-" + "5d" * 12
FRAGMENT_KEY = "sk-frag-" + "6a" * 12
SECRETS = (ODD_KEY, BEARER, PASSWORD, PATH_KEY, FRAGMENT_KEY)


def _dump_tables(db: Path) -> str:
    """Every column of every row of every table, as text."""
    with Store(db, read_only=True) as s:
        return "\n".join(f"{t}: {row!r}" for t in s.counts()
                         for row in s.sql(f'SELECT * FROM "{t}"').fetchall())


def scenarios(tmp: Path) -> tuple[Path, list[Path], dict[str, str], dict[str, bool]]:
    """Run the scenarios in ``tmp``: (database, files to grep, command outputs by name,
    the checks that the scenarios did run)."""
    db = tmp / "lab.duckdb"
    load_sample(db).close()
    env = {"OPENAI_API_KEY": ODD_KEY}
    out: dict[str, str] = {}
    ran: dict[str, bool] = {}

    def run(name: str, *args: str,
            extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        p = cli(*args, env={**env, **(extra or {})})
        out[name] = f"exit {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}"
        return p

    forms = list(encoded_forms(ODD_KEY).values())
    bodies = [json.dumps({"error": {"message": "Incorrect API key provided: KEY"}}).replace(
        "KEY", f) for f in forms]
    with ScriptedServer(responder=lambda _: bodies[0]) as srv:
        srv.add(*[Reply(401 if i % 2 else 400, b) for i, b in enumerate(bodies)])
        p = run("extract (error bodies)", "extract", "--db", str(db), "--extractor", "openai:m",
                "--base-url", srv.base_url, "--policy", "on", "--verdicts",
                f"seq <= {len(forms)}", "--json")
        ran["the server answered every form"] = srv.count >= len(forms)
    with Store(db, read_only=True) as s:
        runs = [r[0] for r in s.sql("SELECT run_id FROM extraction_runs").fetchall()]
    ran["a run recorded its errors"] = bool(runs)
    for r in runs:
        run(f"errors {r}", "errors", r, "--db", str(db), "--json")
    with ScriptedServer() as srv:
        host = srv.base_url.split("://", 1)[1]
        for where, url in (("query", f"{srv.base_url}?api-key={ODD_KEY}"),
                           ("path", f"{srv.base_url}/{PATH_KEY}"),
                           ("fragment", f"{srv.base_url}#{FRAGMENT_KEY}"),
                           ("userinfo", f"http://user:{PASSWORD}@{host}")):
            p = run(f"extract (key in --base-url {where})", "extract", "--db", str(db),
                    "--extractor", "openai:m", "--base-url", url, "--policy", "on",
                    "--verdicts", "seq <= 2", "--json")
            if where == "fragment":  # never sent to a server: refused in one line
                ran["extract refused a --base-url with a fragment"] = (
                    p.returncode == 2 and "fragment" in p.stderr)
            else:
                ran[f"extract with the key in the --base-url {where}"] = p.returncode == 0
    prompt = tmp / "leaky_prompt.toml"
    prompt.write_text(
        'name = "leaky-v1"\n'
        f'system = "Use key {ODD_KEY}. Authorization: Bearer {BEARER}"\n'
        f'user = "Fetch http://u:{PASSWORD}@h.example/x then {{verdict}}"\n', encoding="utf-8")
    p = run("prompts add", "prompts", "add", str(prompt), "--db", str(db))
    ran["prompts add refused the file"] = p.returncode != 0
    with Store(db, read_only=True) as s:
        vh, ex = s.sql("SELECT verdict_hash, extractor_id FROM candidates LIMIT 1").fetchall()[0]
    labels = tmp / "labels.csv"
    labels.write_text("verdict_hash,extractor,lesson_index,useful,annotator\n"
                      f"{vh},{ex},0,1,alice\n{vh},{ex},1,1,{ODD_KEY}\n"
                      f"{vh},{ex},2,1,Bearer {BEARER}\n", encoding="utf-8")
    run("ingest labels", "ingest", "labels", str(labels), "--db", str(db))
    refs = tmp / "refs.jsonl"
    good = {"verdict_hash": vh, "reference_id": "r1", "text": "a lesson", "annotator": "a"}
    lines = [good, {**good, "reference_id": "r2", "text": f"use {ODD_KEY}"},
             {**good, "reference_id": "r3", "annotator": ODD_KEY},
             {**good, "reference_id": "r4", "evidence": [f"http://u:{PASSWORD}@h/x"]}]
    refs.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    run("ingest references", "ingest", "references", str(refs), "--db", str(db))
    for fmt in ("csv", "parquet"):
        p = run(f"export {fmt}", "export", "--db", str(db), "--format", fmt, "--out",
                str(tmp / f"export_{fmt}"))
        ran[f"export {fmt} ran"] = p.returncode == 0
    with Store(db, read_only=True) as s:  # a report shows runs that proposed lessons
        shown = [r[0] for r in s.sql("SELECT DISTINCT run_id FROM candidates").fetchall()]
    p = run("report", "report", *shown, "--db", str(db), "--out", str(tmp / "report.html"))
    ran["report ran"] = p.returncode == 0
    (tmp / "outputs").mkdir()
    for name, text in out.items():
        (tmp / "outputs" / (name.replace(" ", "_").replace("/", "_") + ".txt")).write_text(
            text, encoding="utf-8")
    files = [db, tmp / "export_csv", tmp / "export_parquet", tmp / "report.html",
             tmp / "outputs"]
    return db, files, out, ran


def find_secrets(tmp: Path) -> tuple[list[str], dict[str, bool], int]:
    """Run the scenarios; ``(where: form)`` of every secret found, the scenario checks,
    and how many (secret, form) needles were searched for."""
    db, files, out, ran = scenarios(tmp)
    texts = {**out, "every table": _dump_tables(db)}
    found: list[str] = []
    needles = 0
    for secret in SECRETS:
        needles += len(encoded_forms(secret))
        found += leaks_encoded(secret, *files, texts=texts)
    return found, ran, needles


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", type=Path, help="run in this (new) folder and keep it")
    args = ap.parse_args(argv)
    if args.keep:
        args.keep.mkdir(parents=True)
        found, ran, needles = find_secrets(args.keep)
    else:
        with tempfile.TemporaryDirectory(prefix="truss-secrets-") as t:
            found, ran, needles = find_secrets(Path(t))
    for k, v in ran.items():
        print(f"{'ok  ' if v else 'FAIL'} scenario: {k}")
    for f in found:
        print(f"FOUND {f}")
    print(f"{needles} needles ({len(SECRETS)} secrets x their encodings) in every table, "
          "file, export, "
          f"report and output: {len(found)} found")
    return 1 if found or not all(ran.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
