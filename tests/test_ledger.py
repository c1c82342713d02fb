"""Importing journal files into the store: all-or-nothing, idempotent, fork-refusing."""

from __future__ import annotations

import base64
import json

import pytest

from tests.builders.chains import make_chain, write_journal
from tests.builders.grids import covering
from tests.builders.profiles import examples
from tests.builders.stores import drop_store, fresh_store
from truss_lab import ChainError, Store, TrussLabError, import_journal, verify_chain
from truss_lab.core._models import LedgerRef
from truss_lab.journal._crypto import SigningKey, build_entry, save_keyring
from truss_lab.journal._table import (
    check_verdict_refs,
    entry_hashes,
    entry_payloads,
    get_entry,
    journal_columns,
    journal_head,
    payload_by_hash,
    verdict_payloads,
    verdict_refs,
    verified_verdict,
)
from truss_lab.journal._verify import REASONS, VERIFY_REASONS

KEY = SigningKey.from_seed("op", bytes(range(32)))
OTHER = SigningKey.from_seed("op", bytes(range(1, 33)))  # same id, another key


def chain(n: int, key: SigningKey = KEY) -> list[dict]:
    """``n`` entries with payload ``{"i": i}``, all signed by ``key``."""
    return make_chain(n, keys=[key], payload=lambda i: {"i": i})


write = write_journal


@pytest.fixture
def ring(tmp_path) -> str:
    return str(save_keyring({"op": KEY.public_key}, tmp_path / "keys.json"))


def test_import_then_reimport_is_a_noop(store: Store, tmp_path, ring) -> None:
    f = write(tmp_path / "j.jsonl", chain(5))
    rep = import_journal(store, f, keyring=ring)
    assert (rep.entries_added, rep.entries_present, rep.ok) == (5, 0, True)
    before = store.counts()
    rep = import_journal(store, f, keyring=ring)
    assert (rep.entries_added, rep.entries_present) == (0, 5)
    assert store.counts() == before and verify_chain(store).ok


def test_longer_export_appends_the_rest(store: Store, tmp_path, ring) -> None:
    import_journal(store, write(tmp_path / "a.jsonl", chain(3)), keyring=ring)
    rep = import_journal(store, write(tmp_path / "b.jsonl", chain(6)), keyring=ring)
    assert (rep.entries_added, rep.entries_present, rep.head.seq) == (3, 3, 6)
    # A continuation export that starts after the head also lands.
    store2 = fresh_store()
    import_journal(store2, write(tmp_path / "c.jsonl", chain(6)[:4]), keyring=ring)
    rep = import_journal(store2, write(tmp_path / "d.jsonl", chain(6)[4:]), keyring=ring)
    assert rep.entries_added == 2 and verify_chain(store2).ok


@pytest.mark.parametrize("where", [0, 2, 4])
@pytest.mark.parametrize("tamper", ["payload", "signature", "unknown_key", "deleted"])
def test_reimport_with_a_tampered_stored_prefix_is_refused(
    store: Store, tmp_path, ring, where, tamper
) -> None:
    good = chain(5)
    import_journal(store, write(tmp_path / "j.jsonl", good), keyring=ring)
    bad = [dict(e) for e in good]
    if tamper == "payload":
        bad[where]["payload"] = {"i": 99}
    elif tamper == "signature":
        sig = bytearray(base64.b64decode(bad[where]["signature"]))
        sig[0] ^= 1
        bad[where]["signature"] = base64.b64encode(bytes(sig)).decode()
    elif tamper == "unknown_key":
        bad[where]["key_id"] = "nobody"
    else:
        if where != 2:
            # Without the first or the last entry the file is a valid partial
            # export (a continuation, or a prefix); only a hole is a tamper.
            import_journal(store, write(tmp_path / "part.jsonl", bad[:where] + bad[where + 1:]
                                        if where == 4 else bad[1:]), keyring=ring)
            return
        del bad[where]
    before = store.counts()
    with pytest.raises(ChainError):
        import_journal(store, write(tmp_path / "bad.jsonl", bad), keyring=ring)
    assert store.counts() == before


def test_fork_is_refused_even_with_keep_prefix(store: Store, tmp_path, ring) -> None:
    import_journal(store, write(tmp_path / "j.jsonl", chain(4)), keyring=ring)
    forked = chain(4)[:2]
    forked.append(build_entry(3, "contract_verdict", {"i": "other"}, KEY, forked[1]["hash"],
                              "2026-11-30T11:00:00Z"))
    before = store.counts()
    for keep in (False, True):
        with pytest.raises(ChainError) as info:
            import_journal(store, write(tmp_path / "f.jsonl", forked), keyring=ring,
                           keep_verified_prefix=keep)
        assert info.value.reason == "fork" and info.value.seq == 3
    assert store.counts() == before


def test_bad_file_is_all_or_nothing_unless_keep_prefix(store: Store, tmp_path, ring) -> None:
    lines = [json.dumps(e) for e in chain(6)]
    lines[4] = lines[4][:30]  # a truncated line 5
    f = tmp_path / "t.jsonl"
    f.write_text("\n".join(lines) + "\n")
    with pytest.raises(ChainError, match="line 5") as info:
        import_journal(store, f, keyring=ring)
    assert info.value.reason == "malformed" and store.counts()["journal"] == 0
    rep = import_journal(store, f, keyring=ring, keep_verified_prefix=True)
    assert (rep.ok, rep.entries_added, rep.verify.first_bad_line) == (False, 4, 5)
    assert verify_chain(store).ok


def test_key_conflict_is_a_user_error(store: Store, tmp_path, ring) -> None:
    import_journal(store, write(tmp_path / "j.jsonl", chain(2)), keyring=ring)
    other = save_keyring({"op": OTHER.public_key}, tmp_path / "other.json")
    with pytest.raises(Exception, match="different public key"):
        import_journal(store, write(tmp_path / "k.jsonl", chain(2, OTHER)), keyring=other)


# -- bad input never changes the database --------------------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_GOOD = chain(4)
_SHARED: dict[str, Store] = {}
_FIELDS = ["seq", "kind", "ts", "key_id", "payload", "prev_hash", "hash", "signature"]


def _corrupt(line: str, how: str, field: str, junk: object) -> str:
    obj = json.loads(line)
    body = line.rstrip("\n")
    if how == "drop":
        obj.pop(field)
    elif how == "retype":
        obj[field] = junk
    elif how == "duplicate_key":
        return body[:-1] + f', "{field}": {json.dumps(obj[field])}}}\n'
    elif how == "nan":
        return body.replace(f'"{field}": ', f'"{field}": NaN, "x{field}": ', 1) + "\n"
    elif how == "big_int":
        obj["payload"] = {"n": 2**53 + 7}
        return json.dumps(obj).replace(str(2**53 + 7), str(2**60)) + "\n"
    elif how == "truncate":
        return body[: max(1, len(body) // 3)] + "\n"
    elif how == "extra_field":
        obj["unexpected"] = 1
    return json.dumps(obj) + "\n"


@settings(max_examples=examples(1000), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    how=st.sampled_from(["drop", "retype", "duplicate_key", "nan", "big_int", "truncate",
                         "extra_field"]),
    field=st.sampled_from(_FIELDS),
    junk=st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=5),
                   st.lists(st.integers(), max_size=2)),
    line_no=st.integers(0, 3),
)
def test_bad_journal_input_leaves_the_database_unchanged(
    tmp_path_factory, how, field, junk, line_no
) -> None:
    tmp = tmp_path_factory.getbasetemp()
    ring = {"op": KEY.public_key}
    store = _SHARED.get("store")
    if store is None:  # one store for all examples: a refused import changes nothing
        store = _SHARED["store"] = fresh_store()
        import_journal(store, write(tmp / "base.jsonl", _GOOD[:2]), keyring=ring)

    def state() -> tuple:
        return (store.counts(),
                store.sql("SELECT max(seq), max_by(hash, seq) FROM journal").fetchall())

    before = state()
    lines = [json.dumps(e) + "\n" for e in _GOOD]
    lines[line_no] = _corrupt(lines[line_no], how, field, junk)
    bad = tmp / "bad.jsonl"
    bad.write_text("".join(lines))
    try:
        import_journal(store, bad, keyring=ring)
    except TrussLabError as exc:  # a user error, never a bare traceback; it names the line
        assert f"line {line_no + 1}" in str(exc), str(exc)
        assert state() == before
    else:
        # Only a corruption that leaves a valid journal lands (e.g. a retyped value
        # equal to the original); then the chain verifies. Start the next one afresh.
        assert verify_chain(store).ok
        store.close()
        _SHARED.clear()


def test_a_ref_to_a_missing_entry_is_chain_error_missing(store: Store, tmp_path, ring) -> None:
    # "missing" is the one ChainError reason verification never reports: the ref
    # checks raise it, and it is in REASONS like every other reason.
    import_journal(store, write(tmp_path / "j.jsonl", chain(3)), keyring=ring)
    good = chain(3)[1]
    assert check_verdict_refs(store, [2], [good["hash"]]) is None
    assert verified_verdict(store, LedgerRef(seq=2, hash=good["hash"])) == {"i": 2}
    for call in (lambda: check_verdict_refs(store, [1, 9], [chain(1)[0]["hash"], "a" * 64]),
                 lambda: verified_verdict(store, LedgerRef(seq=9, hash="a" * 64))):
        with pytest.raises(ChainError, match="seq 9 is not in the journal") as info:
            call()
        assert (info.value.reason, info.value.seq) == ("missing", 9)
        assert info.value.reason in REASONS and "missing" not in VERIFY_REASONS
    with pytest.raises(ChainError, match="expected") as info:
        verified_verdict(store, LedgerRef(seq=2, hash="b" * 64))
    assert info.value.reason == "bad_hash"


def test_the_journal_read_path(store: Store, tmp_path, ring) -> None:
    entries = chain(4)
    import_journal(store, write(tmp_path / "j.jsonl", entries), keyring=ring)
    assert journal_head(store) == LedgerRef(seq=4, hash=entries[3]["hash"])
    assert journal_columns(store, after_seq=1, upto_seq=3).seq == [2, 3]
    assert get_entry(store, 2) == entries[1] and get_entry(store, 7) is None
    assert entry_hashes(store, 3, 9) == {3: entries[2]["hash"], 4: entries[3]["hash"]}
    assert [r[0] for r in entry_payloads(store, [1, 3])] == [1, 3]
    assert payload_by_hash(store, entries[2]["hash"]) == {"i": 3}
    assert verdict_refs(store, "seq > ?", [2])["seq"].tolist() == [3, 4]
    assert verdict_payloads(store)["verdict_seq"].tolist() == [1, 2, 3, 4]
    with pytest.raises(TrussLabError, match="bad verdict filter"):
        verdict_refs(store, "no_such_column > 1")
    assert verify_chain(store, upto_seq=2).entries_checked == 2


# -- a journal file is imported batch by batch: the same outcome as whole ----------------

def _tampered(how: str, at: int, n: int = 30) -> list[str]:
    """An ``n``-entry chain's lines with one tamper at entry ``at`` (0-based)."""
    good = chain(n)
    lines = [json.dumps(e) for e in good]
    e = dict(good[at])
    if how == "payload":
        e["payload"] = {"i": 99}
    elif how == "signature":
        sig = bytearray(base64.b64decode(e["signature"]))
        sig[0] ^= 1
        e["signature"] = base64.b64encode(bytes(sig)).decode()
    elif how == "copied_hash":  # another entry's hash: the unique hash must not abort
        e["hash"] = good[at - 1]["hash"]
    elif how == "fork":
        e = build_entry(at + 1, "contract_verdict", {"i": "other"}, KEY, good[at]["prev_hash"],
                        "2026-11-30T11:00:00Z")
    if how == "deleted":
        del lines[at]
    elif how == "repeated":
        lines.insert(at, lines[at - 1])
    elif how == "truncated":
        lines[at] = lines[at][:30]
    else:
        lines[at] = json.dumps(e)
    return lines


def _outcome(tmp_path, lines: list[str], stored: int, keep: bool,
             batch: int = 10**6) -> tuple:
    """What importing ``lines`` into a store holding the chain's first ``stored``
    entries does: the report or the error, and the journal's rows afterwards."""
    s = fresh_store()
    if stored:
        import_journal(s, write(tmp_path / "prefix.jsonl", chain(30)[:stored]), keyring=str(
            save_keyring({"op": KEY.public_key}, tmp_path / "k.json")))
    f = tmp_path / "t.jsonl"
    f.write_text("\n".join(lines) + "\n")
    ring = save_keyring({"op": KEY.public_key}, tmp_path / "k.json")
    try:
        rep = import_journal(s, f, keyring=str(ring), keep_verified_prefix=keep,
                             batch_entries=batch)
        got: tuple = ("ok", rep.entries_read, rep.entries_added, rep.entries_present,
                      rep.head, rep.verify)
    except ChainError as exc:
        got = ("error", str(exc), exc.reason, exc.seq, exc.line)
    rows = s.sql("SELECT * EXCLUDE (recorded_at) FROM journal ORDER BY seq").fetchall()
    keys = s.sql("SELECT key_id FROM signing_keys").fetchall()
    drop_store(s)
    return got, rows, keys


# Every tamper with every stored prefix at entry 9 in make test; at entries 1 and 17 a
# covering share (tests/builders/grids.py), the whole grid in make test-slow.
@pytest.mark.parametrize(("how", "at", "stored", "keep"), covering(
    ((how, at, stored, keep) for at in (9, 1, 17)
     for how in ("none", "payload", "signature", "copied_hash", "fork", "deleted", "repeated",
                 "truncated")
     for stored, keep in ((0, False), (0, True), (12, True))),
    always=lambda how, at, stored, keep: at == 9))
def test_a_journal_imported_in_batches_lands_as_imported_whole(
    tmp_path, monkeypatch: pytest.MonkeyPatch, how: str, at: int, stored: int, keep: bool
) -> None:
    from truss_lab.journal import _verify

    lines = [json.dumps(e) for e in chain(30)] if how == "none" else _tampered(how, at)
    whole = _outcome(tmp_path, lines, stored, keep)
    monkeypatch.setattr(_verify, "_CHUNK", 3)
    assert _outcome(tmp_path, lines, stored, keep, batch=4) == whole
    if at == 9 and stored == 12:  # once per tamper: the worker processes' path, window 1
        monkeypatch.setattr(_verify, "_POOL_MIN", 1)
        monkeypatch.setattr(_verify, "_WINDOW", 1)
        assert _outcome(tmp_path, lines, stored, keep, batch=4) == whole


# -- streamed in small batches: a kill, a continued file, a tamper in a later batch --------
# A 300-entry chain in batches of 32: ten batches, the stored prefixes end inside a batch
# (70), on a boundary (64) or at its last entry (31).

N, BATCH = 300, 32
_KILLED_IMPORT = """
import sys, time
from truss_lab import Store, import_journal
from truss_lab.journal import _ledger

db, path, ring, stop = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
take, taken = _ledger._Landing._take, []

def noted(self, cols):  # say what this transaction holds after each batch; wait at `stop`
    take(self, cols)
    taken.append(self.read)
    n = self.store.sql("SELECT count(*) FROM journal").fetchall()[0][0]
    print(len(taken), self.read, n, flush=True)
    if len(taken) == stop:
        time.sleep(600)

_ledger._Landing._take = noted
with Store(db) as s:
    import_journal(s, path, keyring=ring, batch_entries=int(sys.argv[5]))
"""


def _rows(s: Store) -> list[tuple]:
    return s.sql("SELECT * FROM journal ORDER BY seq").fetchall()


def _content(s: Store) -> tuple:
    """The journal's rows but the time they were recorded, and the keys."""
    return (s.sql("SELECT * EXCLUDE (recorded_at) FROM journal ORDER BY seq").fetchall(),
            s.sql("SELECT key_id, public_key FROM signing_keys ORDER BY key_id").fetchall())


@pytest.fixture(scope="module")
def holding(tmp_path_factory):
    """``holding(stored, to)``: a copy at ``to`` of a database file holding the chain's
    first ``stored`` entries (each made once per module: a new file costs its migrations)."""
    import shutil

    home = tmp_path_factory.mktemp("holding")
    ring = str(save_keyring({"op": KEY.public_key}, home / "keys.json"))
    made: dict[int, object] = {}

    def copy(stored: int, to):
        if stored not in made:
            made[stored] = db = home / f"{stored}.duckdb"
            with Store(db) as s:
                if stored:
                    import_journal(s, write(home / f"{stored}.jsonl", chain(N)[:stored]),
                                   keyring=ring)
        shutil.copy(made[stored], to)
        return to

    return copy


@pytest.mark.parametrize(("stored", "stop"), [(0, 1), (0, 6), (70, 4)])
def test_sigkill_mid_stream_lands_nothing_and_a_rerun_lands_it_all(
        tmp_path, ring, holding, stored: int, stop: int) -> None:
    """SIGKILL while an import streams (``stop`` batches appended, uncommitted): the file
    holds the entries before and none of the new ones, and running it again gives what
    an uninterrupted import gives."""
    import signal
    import subprocess
    import sys

    f = write(tmp_path / "j.jsonl", chain(N))
    db, ref = holding(stored, tmp_path / "killed.duckdb"), holding(stored, tmp_path / "r.duckdb")
    with Store(db) as s:
        before = _rows(s)
    with Store(ref) as s:
        whole = import_journal(s, f, keyring=ring)
        want = _content(s)
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILLED_IMPORT, str(db), str(f), ring, str(stop), str(BATCH)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    seen = [proc.stdout.readline().split() for _ in range(stop)]
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read()
    # The kill met the batches written in the transaction: stored + the new entries read.
    assert [list(map(int, x)) for x in seen] == [
        [i, i * BATCH, max(stored, i * BATCH)] for i in range(1, stop + 1)]
    with Store(db) as s:
        assert _rows(s) == before  # every row as it was, recorded_at included
        again = import_journal(s, f, keyring=ring, batch_entries=BATCH)
        assert verify_chain(s).ok and _content(s) == want
    assert (again.entries_added, again.entries_present, again.head) == (
        whole.entries_added, whole.entries_present, whole.head)
    assert (whole.entries_added, whole.entries_present) == (N - stored, stored)


@pytest.mark.parametrize(("stored", "continuation"), covering(
    (stored, continuation) for continuation in (False, True)
    for stored in (0, 31, 32, 64, 70, N)))
def test_a_continued_journal_imports_only_its_new_entries(
        tmp_path, ring, holding, stored: int, continuation: bool) -> None:
    """The whole export again, or only what follows the stored head: the new entries land,
    whichever batch the stored head ends in; the stored rows are not rewritten."""
    lines = chain(N)[stored:] if continuation else chain(N)
    f = write(tmp_path / "j.jsonl", lines)
    with Store(holding(N, tmp_path / "whole.duckdb")) as s:
        want = _content(s)
    with Store(holding(stored, tmp_path / "db.duckdb")) as s:
        before = _rows(s)
        rep = import_journal(s, f, keyring=ring, batch_entries=BATCH)
        assert verify_chain(s).ok
        again = import_journal(s, f, keyring=ring, batch_entries=BATCH)
        assert _rows(s)[:stored] == before  # recorded_at included: held entries untouched
        assert _content(s) == want
    assert (rep.entries_read, rep.entries_added, rep.entries_present, rep.head.seq) == (
        len(lines), N - stored, 0 if continuation else stored, N)
    assert (again.entries_added, again.entries_present) == (0, len(lines))


@pytest.mark.parametrize(("how", "stored"), covering(
    (how, stored) for stored in (0, 70)
    for how in ("payload", "signature", "copied_hash", "deleted", "repeated", "truncated")))
def test_a_tamper_in_a_later_batch_undoes_the_earlier_ones(
        tmp_path, ring, holding, how: str, stored: int) -> None:
    """Entry 250 (the eighth batch of 32) tampered: the seven batches before it, written
    in the import's transaction, are rolled back with the whole-file import's error; with
    ``keep_verified_prefix`` the 249 entries before it land, as imported whole."""
    f = tmp_path / "t.jsonl"
    f.write_text("\n".join(_tampered(how, 249, N)) + "\n")
    for keep in (False, True):
        got = {}
        for batch in (BATCH, 10**6):
            with Store(holding(stored, tmp_path / f"{batch}{keep}.duckdb")) as s:
                before = _rows(s)
                try:
                    r = import_journal(s, f, keyring=ring, keep_verified_prefix=keep,
                                       batch_entries=batch)
                    got[batch] = ("ok", r.entries_added, r.entries_present, r.head, r.verify)
                except ChainError as exc:
                    got[batch] = ("error", str(exc), exc.reason, exc.seq, exc.line)
                    assert _rows(s) == before
                got[batch] += (_content(s),)
        assert got[BATCH] == got[10**6]
        outcome = got[BATCH]
        if keep:
            assert outcome[:3] == ("ok", 249 - stored, stored) and outcome[3].seq == 249
            assert not outcome[4].ok and outcome[4].first_bad_line == 250
        else:
            assert outcome[0] == "error" and "(nothing was imported)" in outcome[1]
            assert outcome[4] == 250 and f"{f}, line 250" in outcome[1]
            assert len(outcome[-1][0]) == stored


def test_the_import_bounds_duckdb_memory_by_the_entries_it_holds(
        tmp_path, ring, monkeypatch) -> None:
    """DuckDB keeps an open transaction's rows in memory: the import's one transaction
    runs bounded (the rows beyond the bound spill to disk), and the bound grows by
    :data:`INDEX_ROW_BYTES` per entry the journal holds (the keys' index does not
    spill: a fixed bound fails a long import), then is set back."""
    from truss_lab.journal import _ledger
    from truss_lab.store import _store

    monkeypatch.setattr(_store, "INDEX_ROW_BYTES", 2**20)  # 1 MiB an entry: visible
    seen = []
    real = _ledger.verify_stream

    def limit(s: Store) -> str:
        return s.sql("SELECT current_setting('memory_limit')").fetchall()[0][0]

    def watching(batches):
        for b in batches:  # read while the batch before has been written
            seen.append(limit(s))
            yield b

    monkeypatch.setattr(_ledger, "verify_stream",
                        lambda batches, *a, **k: real(watching(batches), *a, **k))
    with Store(tmp_path / "m.duckdb") as s:
        import_journal(s, write(tmp_path / "a.jsonl", chain(8)), keyring=ring)
        before = limit(s)
        seen.clear()
        rep = import_journal(s, write(tmp_path / "b.jsonl", chain(40)), keyring=ring,
                             batch_entries=16)
        assert rep.entries_added == 32
        after = limit(s)
    # 8 entries stored; batches of 16: the first read before any write, the second
    # after 8 present and 8 written (16 keyed rows), the third after 16 more (32)
    assert seen == ["122.0 MiB", "138.0 MiB", "154.0 MiB"]
    assert before.endswith("GiB") and after.endswith("GiB")  # set back (DuckDB rounds it)
