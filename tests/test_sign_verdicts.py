"""Your own verdicts signed into a journal (issue 35 item 1): `truss-lab journal sign` and
`tl.sign_verdicts`. Every entry is checked with an implementation of its own (rfc8785 and
hashlib for the hash, PyNaCl's VerifyKey for the signature), then ingested and verified;
a bad record writes nothing and names its row and field."""

from __future__ import annotations

import base64
import csv
import hashlib
import json
from pathlib import Path

import nacl.signing
import pandas as pd
import pytest
import rfc8785

import truss_lab as tl
from tests.builders.cli import invoke, invoke_json
from truss_lab.core import BadInputError


def records(n: int, start: int = 0) -> list[dict]:
    return [{"contract_id": f"c-{i}", "run_id": f"r-{i}", "goal": f"Goal {i}",
             "verdict": ("pass", "fail", "partial")[i % 3], "summary": f"Summary {i}",
             "checks": [{"name": "tz", "passed": i % 2 == 0, "evidence": f"seen {i}"}],
             "tags": ["t", f"n{i}"]} for i in range(start, start + n)]


def write_csv(path: Path, recs: list[dict], ts: bool = False) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["contract_id", "run_id", "goal", "verdict", "summary", "checks", "tags",
                    "ts"])
        for i, r in enumerate(recs):
            w.writerow([r["contract_id"], r["run_id"], r["goal"], r["verdict"], r["summary"],
                        json.dumps(r["checks"]), json.dumps(r["tags"]),
                        f"2026-11-30T10:00:{i:02d}Z" if ts else ""])
    return path


def check_independently(journal: Path, keyring: Path) -> list[dict]:
    """Every entry's hash (RFC 8785 + SHA-256), link and Ed25519 signature, without
    truss_lab."""
    ring = {k: nacl.signing.VerifyKey(base64.b64decode(v))
            for k, v in json.loads(keyring.read_text()).items()}
    entries = [json.loads(line) for line in journal.read_text().splitlines()]
    prev = "0" * 64
    for i, e in enumerate(entries, start=1):
        assert e["seq"] == i and e["prev_hash"] == prev and e["kind"] == "contract_verdict"
        body = {k: e[k] for k in ("seq", "kind", "ts", "key_id", "payload", "prev_hash")}
        assert e["hash"] == hashlib.sha256(rfc8785.dumps(body)).hexdigest()
        ring[e["key_id"]].verify(bytes.fromhex(e["hash"]), base64.b64decode(e["signature"]))
        prev = e["hash"]
    return entries


def test_cli_signs_records_that_verify_independently_and_ingest(tmp_path: Path) -> None:
    key = tmp_path / "ann.key"
    assert invoke("keys", "generate", "--key-id", "ann", "--out", key).exit_code == 0
    src = write_csv(tmp_path / "verdicts.csv", records(5), ts=True)
    out = invoke_json("journal", "sign", src, "--key", key, "--out", tmp_path / "j.jsonl")
    assert out["entries_added"] == 5 and out["key_id"] == "ann"
    entries = check_independently(tmp_path / "j.jsonl", tmp_path / "keys.json")
    assert [e["payload"] for e in entries] == records(5)
    assert entries[3]["ts"] == "2026-11-30T10:00:03Z"

    db = tmp_path / "lab.duckdb"
    r = invoke("ingest", "journal", tmp_path / "j.jsonl", "--keyring", tmp_path / "keys.json",
               "--db", db)
    assert r.exit_code == 0 and "5 added" in r.output, r.output
    r = invoke("verify", "--db", db)
    assert r.exit_code == 0 and "verdicts signed by ann (5)" in r.output, r.output

    # Five more, appended: the journal is verified, continued, and re-ingest adds five.
    more = tmp_path / "more.jsonl"
    more.write_text("".join(json.dumps(r) + "\n" for r in records(5, start=5)))
    out = invoke_json("journal", "sign", more, "--key", key, "--out", tmp_path / "j.jsonl",
                      "--append")
    assert (out["first_seq"], out["head_seq"]) == (6, 10)
    assert len(check_independently(tmp_path / "j.jsonl", tmp_path / "keys.json")) == 10
    rep = invoke_json("ingest", "journal", tmp_path / "j.jsonl", "--keyring",
                      tmp_path / "keys.json", "--db", db)
    assert (rep["entries_added"], rep["entries_present"]) == (5, 5)
    assert invoke("verify", "--db", db).exit_code == 0
    r = invoke("audit", "--db", db)
    assert "verdicts signed by ann (10)" in r.output

    # The same file again is ten duplicates: nothing is signed twice.
    r = invoke("journal", "sign", more, "--key", key, "--out", tmp_path / "j.jsonl", "--append")
    assert r.exit_code == 3 and "is signed already (the journal's seq 6)" in r.output


@pytest.mark.parametrize(("cell", "row", "field", "says"), [
    ({"verdict": "failed"}, 3, "verdict", "expected one of ['pass', 'fail', 'partial']"),
    ({"checks": "[{name: tz}"}, 4, "checks", "expected JSON text"),
    ({"contract_id": "c-0", "run_id": "r-0"}, 5, "run_id", "is also in row 2"),
    ({"checks": '[{"name": "a", "passed": "no"}]'}, 2, "checks[0].passed", "true or false"),
])
def test_a_bad_record_writes_nothing_and_names_row_and_field(
        tmp_path: Path, cell: dict, row: int, field: str, says: str) -> None:
    recs = records(5)
    src = write_csv(tmp_path / "v.csv", recs)
    rows = list(csv.DictReader(src.open(encoding="utf-8")))
    rows[row - 2].update(cell)
    with src.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    key = tl.SigningKey.generate("ann")
    key.save(tmp_path / "ann.key")
    r = invoke("journal", "sign", src, "--key", tmp_path / "ann.key", "--out",
               tmp_path / "j.jsonl")
    assert r.exit_code == 3, r.output
    assert f"v.csv, row {row}, field '{field}'" in r.output and says in r.output, r.output
    assert "nothing was signed" in r.output
    assert not (tmp_path / "j.jsonl").exists() and not (tmp_path / "keys.json").exists()
    with pytest.raises(BadInputError) as info:
        tl.sign_verdicts(src, key, out=tmp_path / "j.jsonl")
    assert (info.value.row, info.value.field) == (row, field)


def test_append_refuses_a_journal_that_does_not_verify(tmp_path: Path) -> None:
    key = tl.SigningKey.generate("ann")
    tl.sign_verdicts(records(3), key, out=tmp_path / "j.jsonl")
    lines = (tmp_path / "j.jsonl").read_text().splitlines()
    e = json.loads(lines[1])
    e["payload"]["summary"] = "changed"
    lines[1] = json.dumps(e)
    (tmp_path / "j.jsonl").write_text("\n".join(lines) + "\n")
    before = (tmp_path / "j.jsonl").read_bytes()
    with pytest.raises(BadInputError, match="does not verify, line 2: bad_hash"):
        tl.sign_verdicts(records(1, start=9), key, append_to=tmp_path / "j.jsonl")
    assert (tmp_path / "j.jsonl").read_bytes() == before


def test_python_takes_frames_lists_and_parquet(tmp_path: Path) -> None:
    key = tl.SigningKey.generate("ann")
    df = pd.DataFrame(records(4))
    df["ts"] = pd.to_datetime(["2026-11-30T10:00:00Z"] * 4, utc=True)
    entries = tl.sign_verdicts(df, key)
    assert [e["seq"] for e in entries] == [1, 2, 3, 4]
    assert entries[0]["ts"] == "2026-11-30T10:00:00Z"
    assert [e["payload"] for e in entries] == records(4)
    # The same records from Parquet (checks as a list of structs) and from a list.
    df.to_parquet(tmp_path / "v.parquet")
    from_parquet = tl.sign_verdicts(tmp_path / "v.parquet", key)
    assert [e["hash"] for e in from_parquet] == [e["hash"] for e in entries]
    assert [e["hash"] for e in tl.sign_verdicts(
        [{**r, "ts": "2026-11-30T10:00:00Z"} for r in records(4)], key)] == \
        [e["hash"] for e in entries]
    bad = df.assign(ts=df["ts"].dt.tz_localize(None))
    with pytest.raises(BadInputError, match="a time without a zone") as info:
        tl.sign_verdicts(bad, key)
    assert (info.value.source, info.value.row, info.value.field) == ("<frame>", 0, "ts")


def test_unsigned_records_and_an_unknown_key_name_the_command_that_fixes_them(
        tmp_path: Path) -> None:
    src = tmp_path / "v.jsonl"
    src.write_text(json.dumps(records(1)[0]) + "\n")
    r = invoke("ingest", "journal", src, "--db", tmp_path / "lab.duckdb")
    assert r.exit_code != 0 and "truss-lab journal sign" in r.output, r.output
    tl.sign_verdicts(src, tl.SigningKey.generate("ann"), out=tmp_path / "j.jsonl")
    r = invoke("ingest", "journal", tmp_path / "j.jsonl", "--db", tmp_path / "lab.duckdb")
    assert r.exit_code != 0 and "--keyring keys.json" in r.output, r.output


def test_a_key_id_bound_to_another_key_is_refused(tmp_path: Path) -> None:
    tl.sign_verdicts(records(1), tl.SigningKey.generate("ann"), out=tmp_path / "j.jsonl")
    ring = (tmp_path / "keys.json").read_bytes()
    with pytest.raises(BadInputError, match="bound to another public key"):
        tl.sign_verdicts(records(1, start=1), tl.SigningKey.generate("ann"),
                         out=tmp_path / "k.jsonl")
    assert (tmp_path / "keys.json").read_bytes() == ring
    assert not (tmp_path / "k.jsonl").exists()


def test_no_records_is_an_error_and_writes_nothing(tmp_path: Path) -> None:
    src = tmp_path / "v.csv"
    src.write_text("contract_id,run_id,goal,verdict,summary,checks,tags,ts\n")
    with pytest.raises(BadInputError, match="no verdict records to sign"):
        tl.sign_verdicts(src, tl.SigningKey.generate("ann"), out=tmp_path / "j.jsonl")
    assert not (tmp_path / "j.jsonl").exists()


def test_every_bad_record_is_listed(tmp_path: Path) -> None:
    recs = records(3)
    recs[0]["verdict"] = "nope"
    recs[2]["checks"] = [{"name": "", "passed": True}]
    with pytest.raises(tl.ingest.BadRecordsError) as info:
        tl.sign_verdicts(recs, tl.SigningKey.generate("ann"))
    assert [(e.field, e.message.split(":")[0]) for e in info.value.errors] == [
        ("verdict", "record 0"), ("checks[0].name", "record 2")]
