"""Issue #15 item 6: the lab's own chain. The verdict journal stays a faithful copy
of upstream and keeps accepting its exports after the lab has decided something."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.builders.cli import invoke
from truss_lab.journal._ledger import verify_chain
from truss_lab.journal._table import get_entry, journal_head
from truss_lab.simulate._simulate import simulate
from truss_lab.store._store import Store


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path, Path]:
    out = tmp_path_factory.mktemp("sim3000")
    res = simulate(out, runs=3000, seed=5)
    first = out / "journal_first_1000.jsonl"
    lines = res.journal.read_text(encoding="utf-8").splitlines(keepends=True)
    assert len(lines) == 3000
    first.write_text("".join(lines[:1000]), encoding="utf-8")
    return res.journal, first, res.keys, out


def test_import_extract_propose_then_the_full_export_still_appends(
        sim: tuple[Path, Path, Path, Path], tmp_path: Path) -> None:
    full, first, keys, out = sim
    db = str(tmp_path / "lab.duckdb")

    def ok(*args: str) -> str:
        r = invoke(*args)
        assert r.exit_code == 0, (args, r.output)
        return r.output

    ok("ingest", "journal", str(first), "--keyring", str(keys), "--db", db)
    ok("ingest", "completions", str(out / "completions.jsonl"), "--db", db)
    ok("ingest", "labels", str(out / "labels.csv"), "--db", db)  # later verdicts: warnings
    ok("extract", "--db", db, "--extractor", "replay:sim-good-v1", "--policy", "model-scored",
       "--run-id", "r1", "--quiet")
    key = tmp_path / "me.key"
    ok("keys", "generate", "--key-id", "me", "--out", str(key))
    proposal = json.loads(ok("propose", "--db", db, "--run", "r1", "--key", str(key),
                             "--json"))
    ref = proposal["provenance"]["produced_by"]
    with Store(db, read_only=True) as s:
        assert journal_head(s).seq == 1000  # the verdict journal did not move
        lab = get_entry(s, ref["seq"], table="lab_journal")
    assert lab["hash"] == ref["hash"] and lab["payload"]["verdict_head"]["seq"] == 1000

    # The next upstream export: 3000 entries, the first 1000 already stored.
    text = ok("ingest", "journal", str(full), "--keyring", str(keys), "--db", db)
    assert "2000 added, 1000 already present, head seq 3000" in text
    assert "ok: 3001 entries verified, head seq 3000" in ok("verify", "--db", db)
    with Store(db, read_only=True) as s:
        assert verify_chain(s).ok
        again = get_entry(s, ref["seq"], table="lab_journal")
        (prov,) = s.sql("SELECT produced_by_seq, produced_by_hash FROM policy_records"
                        ).fetchall()
    assert again == lab and prov == (ref["seq"], ref["hash"])  # the proposal intact
    assert "FAIL" not in ok("audit", "--db", db)


def test_a_lab_entry_whose_verdict_head_is_gone_fails_verification(
        sim: tuple[Path, Path, Path, Path], tmp_path: Path) -> None:
    from truss_lab.journal._crypto import SigningKey
    from truss_lab.journal._ledger import append_lab_entry, import_journal

    _, first, keys, _ = sim
    with Store(tmp_path / "t.duckdb") as s:
        import_journal(s, first, keyring=keys)
        append_lab_entry(s, "sweep_result", {"f1": 0.5}, SigningKey.from_seed("me", bytes(32)))
        assert verify_chain(s).ok
        s.sql("DELETE FROM journal WHERE seq = 1000")
        rep = verify_chain(s)
        # verdict journal 1..999 verifies; the lab entry names entry 1000, now gone
        assert not rep.ok and rep.reason == "broken_link" and "lab journal" in rep.message


def test_verify_checks_that_every_policy_record_resolves(tmp_path: Path) -> None:
    """Issue 28 item 14: deleting the lab journal's last entry leaves a valid shorter
    chain, but a policy record points at it: verify fails (library and CLI), naming the
    record and the seq, as the audit does."""
    from tests.builders.chains import RING, make_chain, write_journal
    from truss_lab.core._models import Policy
    from truss_lab.govern._audit import audit
    from truss_lab.govern._policies import write_policy
    from truss_lab.journal._crypto import SigningKey
    from truss_lab.journal._ledger import import_journal

    db = tmp_path / "t.duckdb"
    key = SigningKey.from_seed("me", bytes(32))
    with Store(db) as s:
        import_journal(s, write_journal(tmp_path / "j.jsonl", make_chain(5)), keyring=RING)
        for v in (0.6, 0.8):
            write_policy(s, Policy(policy_id=f"p{v}", target="salience",
                                   settings={"extraction_min_salience": v}), key)
        assert verify_chain(s).ok
        (last,), = s.sql("SELECT max(seq) FROM lab_journal").fetchall()
        s.sql("DELETE FROM lab_journal WHERE seq = ?", [last])
        rep = verify_chain(s)
        assert not rep.ok and (rep.reason, rep.first_bad_seq) == ("broken_link", last)
        assert "policy record" in rep.message and "does not hold" in rep.message
        assert not audit(s)["policy_provenance_signed"].passed
    r = invoke("verify", "--db", str(db))
    assert r.exit_code == 1 and f"TAMPERED: seq {last}: broken_link" in r.output, r.output
    with Store(db) as s:  # every lab entry gone: still caught
        s.sql("DELETE FROM lab_journal")
        rep = verify_chain(s)
        assert not rep.ok and "1 more record(s)" in rep.message
