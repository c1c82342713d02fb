"""Importing journal files into the store: all-or-nothing, idempotent, fork-refusing."""

from __future__ import annotations

import base64
import json

import pytest

from tests.builders.chains import make_chain, write_journal
from tests.builders.profiles import examples
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
    store2 = Store()
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
        store = _SHARED["store"] = Store()
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

def _tampered(how: str, at: int) -> list[str]:
    """A 30-entry chain's lines with one tamper at entry ``at`` (0-based)."""
    good = chain(30)
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


def _outcome(tmp_path, lines: list[str], stored: int, keep: bool) -> tuple:
    """What importing ``lines`` into a store holding the chain's first ``stored``
    entries does: the report or the error, and the journal's rows afterwards."""
    s = Store()
    if stored:
        import_journal(s, write(tmp_path / "prefix.jsonl", chain(30)[:stored]), keyring=str(
            save_keyring({"op": KEY.public_key}, tmp_path / "k.json")))
    f = tmp_path / "t.jsonl"
    f.write_text("\n".join(lines) + "\n")
    ring = save_keyring({"op": KEY.public_key}, tmp_path / "k.json")
    try:
        rep = import_journal(s, f, keyring=str(ring), keep_verified_prefix=keep)
        got: tuple = ("ok", rep.entries_read, rep.entries_added, rep.entries_present,
                      rep.head, rep.verify)
    except ChainError as exc:
        got = ("error", str(exc), exc.reason, exc.seq, exc.line)
    rows = s.sql("SELECT * EXCLUDE (recorded_at) FROM journal ORDER BY seq").fetchall()
    keys = s.sql("SELECT key_id FROM signing_keys").fetchall()
    return got, rows, keys


@pytest.mark.parametrize("how", ["none", "payload", "signature", "copied_hash", "fork",
                                 "deleted", "repeated", "truncated"])
@pytest.mark.parametrize("at", [1, 9, 17])
@pytest.mark.parametrize(("stored", "keep"), [(0, False), (0, True), (12, True)])
def test_a_journal_imported_in_batches_lands_as_imported_whole(
    tmp_path, monkeypatch: pytest.MonkeyPatch, how: str, at: int, stored: int, keep: bool
) -> None:
    from truss_lab.journal import _ledger, _verify

    lines = [json.dumps(e) for e in chain(30)] if how == "none" else _tampered(how, at)
    monkeypatch.setattr(_ledger, "_IMPORT_ROWS", 10**6)
    whole = _outcome(tmp_path, lines, stored, keep)
    monkeypatch.setattr(_ledger, "_IMPORT_ROWS", 4)
    monkeypatch.setattr(_verify, "_CHUNK", 3)
    assert _outcome(tmp_path, lines, stored, keep) == whole
    if at == 9 and stored == 12:  # once per tamper: the worker processes' path, window 1
        monkeypatch.setattr(_verify, "_POOL_MIN", 1)
        monkeypatch.setattr(_verify, "_WINDOW", 1)
        assert _outcome(tmp_path, lines, stored, keep) == whole
