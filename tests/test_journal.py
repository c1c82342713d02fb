"""The signed journal, pure part: Formats §1 reading and chain verification.

Golden data: tests/data/rfc8032_ed25519.json (RFC 8032 §7.1 vectors) and
tests/data/journal/ (a small signed journal with its keyring, and a tampered
twin). The chains and the tamper matrix come from tests/builders/.
"""

from __future__ import annotations

import ast
import base64
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

import nacl.bindings
import pytest
import rfc8785
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from tests.builders.chains import RING, make_chain, to_lines, verdict_payload
from tests.builders.grids import covering
from tests.builders.profiles import examples
from tests.builders.tampers import TAMPERS, L, other_verdict, rehash
from truss_lab.core._errors import BadInputError, ChainError
from truss_lab.core._models import LedgerRef
from truss_lab.journal import _verify
from truss_lab.journal._crypto import (
    SigningKey,
    load_keyring,
    save_keyring,
    sign_bytes,
    verify_signature,
)
from truss_lab.journal._spec import (
    ENTRY_FIELDS,
    CheckModel,
    JournalColumns,
    JournalEntryModel,
    VerdictPayloadModel,
    read_journal,
    read_journal_lines,
)
from truss_lab.journal._verify import (
    REASONS,
    VERIFY_REASONS,
    VerifyReason,
    VerifyReport,
    verify_columns,
    verify_journal,
)

DATA = Path(__file__).parent / "data"


# --- RFC 8032 ----------------------------------------------------------------------


def _vectors() -> list[dict[str, str]]:
    return json.loads((DATA / "rfc8032_ed25519.json").read_text())["vectors"]


def test_vector_file_is_what_rfc_8032_lists() -> None:
    vs = {v["name"]: v for v in _vectors()}
    assert sorted(vs) == ["TEST 1", "TEST 1024", "TEST 2", "TEST 3"]
    assert [len(bytes.fromhex(vs[n]["message"])) for n in ("TEST 1", "TEST 2", "TEST 3")] == [
        0, 1, 2,
    ]  # fmt: skip
    assert len(bytes.fromhex(vs["TEST 1024"]["message"])) == 1023


@pytest.mark.parametrize("vec", _vectors(), ids=lambda v: v["name"])
def test_rfc8032_vectors(vec: dict[str, str]) -> None:
    seed, pub = bytes.fromhex(vec["secret_key"]), bytes.fromhex(vec["public_key"])
    msg, sig = bytes.fromhex(vec["message"]), bytes.fromhex(vec["signature"])
    assert sign_bytes(seed, msg) == sig
    key = SigningKey.from_seed("v", seed)
    assert key.public_key == pub
    assert key.sign(msg) == sig
    assert verify_signature(pub, msg, sig)
    assert not verify_signature(pub, msg + b"\x00", sig)
    flipped = bytearray(sig)
    flipped[37] ^= 0x10
    assert not verify_signature(pub, msg, bytes(flipped))
    # S + L: the same signature mod L, which a strict verifier must reject
    s = int.from_bytes(sig[32:], "little") + L
    assert not verify_signature(pub, msg, sig[:32] + s.to_bytes(32, "little"))
    assert not verify_signature(pub[:31], msg, sig)
    assert not verify_signature(pub, msg, sig[:63])


# --- chains -------------------------------------------------------------------------


SIZES = [0, 1, 2, 3, 7, 8, 9, 1000]


@pytest.fixture(scope="module")
def chains() -> dict[int, list[dict]]:
    """Clean chains, built once per module (the 1000-chain takes a moment)."""
    big = make_chain(1000)
    return {n: big[:n] for n in SIZES}  # every prefix of a valid chain is valid


@pytest.mark.parametrize("n", SIZES)
def test_clean_chain_verifies(chains: dict[int, list[dict]], n: int) -> None:
    parsed = read_journal_lines(to_lines(chains[n]), source="clean.jsonl")
    assert parsed.ok
    rep = verify_columns(parsed.columns, RING)
    assert rep.ok and rep.entries_checked == n
    assert rep.reason is None and rep.message is None and rep.first_bad_seq is None
    if n:
        assert (rep.head_seq, rep.head_hash) == (n, chains[n][-1]["hash"])
        assert rep.head == LedgerRef(seq=n, hash=chains[n][-1]["hash"])
    else:
        assert rep.head is None
    assert rep.raise_for_error() is rep


# --- the tamper matrix ----------------------------------------------------------------
# The tampers are tests/builders/tampers.py's, shared with scripts/reliability.py.

POSITIONS = {"first": lambda n: 0, "middle": lambda n: n // 2, "last": lambda n: n - 1}


def _applicable() -> list[tuple[int, str, str]]:
    # Only real cases: an empty chain has nothing to tamper with, and some
    # tampers need a neighbour (no swap at the last entry, no relink of seq 1).
    # Deciding needs a real chain; the small sizes stand in for the 1000-chain,
    # whose first, middle and last positions behave like those of size 9.
    probe = make_chain(9)
    cases = []
    for n in SIZES:
        if n == 0:
            continue
        es = probe[: min(n, 9)]
        for where, pos in POSITIONS.items():
            p = pos(len(es))
            for name in sorted(TAMPERS):
                if TAMPERS[name](es, p) is not None:
                    cases.append((n, where, name))
    return cases


# Every tamper at every position of the 9- and 1000-entry chains in make test; of the
# other sizes a covering share (tests/builders/grids.py), every size in make test-slow.
_WHOLE_SIZES = (9, 1000)


@pytest.mark.parametrize(("n", "where", "tamper"), covering(
    sorted(_applicable(), key=lambda c: c[0] not in _WHOLE_SIZES),
    always=lambda n, where, tamper: n in _WHOLE_SIZES))
def test_tamper_is_detected(
    chains: dict[int, list[dict]], monkeypatch: pytest.MonkeyPatch, n: int, where: str,
    tamper: str,
) -> None:
    made = TAMPERS[tamper](chains[n], POSITIONS[where](n))
    assert made is not None, "applicability must not depend on the chain's length past 9"
    lines, reason, seq, line = made
    parsed = read_journal_lines(lines, source="t.jsonl")
    rep = verify_journal(parsed, RING)
    assert (rep.ok, rep.reason, rep.first_bad_seq, rep.first_bad_line) == (
        False, reason, seq, line,
    ), rep.message  # fmt: skip
    assert rep.entries_checked == line - 1  # everything before the bad line is good
    assert rep.message and f"line {line}" in rep.message
    if line > 1:  # the head is the last good entry, the one on the line before
        assert (rep.head_seq, rep.head_hash) == (
            parsed.columns.seq[line - 2], parsed.columns.hash[line - 2],
        )  # fmt: skip
    else:
        assert rep.head is None
    with pytest.raises(ChainError) as info:
        rep.raise_for_error()
    assert (info.value.seq, info.value.reason, info.value.line) == (seq, reason, line)
    # Streamed in batches of uneven sizes, checked in tiny tasks on threads: a failure
    # in any batch, found in any order, gives the report verify_columns gives.
    monkeypatch.setattr(_verify, "_CHUNK", 5)
    cols, parts = _in_batches(lines, n, tamper)
    want = verify_columns(cols, RING, workers=1)
    for workers in (1, 2):
        assert _verify.verify_stream(iter(parts), RING, workers=workers) == want


def _in_batches(lines: list[str], n: int, tamper: str) -> tuple[JournalColumns,
                                                                list[JournalColumns]]:
    """The chain's columns, and the same columns cut into up to four uneven batches."""
    cols = read_journal_lines(lines, source="t.jsonl").columns
    cols = JournalColumns.from_mapping({k: v for k, v in cols.to_pydict().items() if k != "line"})
    rng = random.Random(n * 31 + len(tamper))
    cuts = sorted({0, len(cols), *rng.sample(range(len(cols) + 1), min(3, len(cols)))})
    batches = [cols.prefix(b).to_pydict() for b in cuts[1:]]
    parts = [JournalColumns.from_mapping({k: v[a:] for k, v in batches[i].items()})
             for i, a in enumerate(cuts[:-1])]
    return cols, parts


def test_every_reason_is_exercised() -> None:
    expected = {
        "edited_payload": "bad_hash", "unknown_key": "unknown_key", "fork": "fork",
        "entry_deleted": "seq_gap", "line_repeated": "duplicate_seq",
        "altered_genesis": "broken_link", "truncated_line": "malformed",
        "signature_bit_flip": "bad_signature",
    }  # fmt: skip
    assert set(expected.values()) == set(VERIFY_REASONS) == set(get_args(VerifyReason))
    assert set(expected) <= set(TAMPERS)
    # "missing" is a ChainError reason (a ref names a seq the journal lacks; see
    # tests/test_ledger.py) that verification itself never reports.
    assert REASONS == (*VERIFY_REASONS, "missing")


def test_every_chain_error_reason_in_the_package_is_in_reasons() -> None:
    # core/_errors.py says a ChainError's reason is one of REASONS: check every
    # literal reason= passed to ChainError(...) anywhere in truss_lab.
    import truss_lab

    found = set()
    for path in Path(truss_lab.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "ChainError":
                for kw in node.keywords:
                    if kw.arg == "reason" and isinstance(kw.value, ast.Constant):
                        assert kw.value.value in REASONS, (path, kw.value.value)
                        found.add(kw.value.value)
    assert {"missing", "bad_hash", "fork"} <= found


@pytest.mark.parametrize("workers", [1, 2, 3])
@pytest.mark.parametrize("seed", range(6))
def test_parallel_verification_reports_the_same_first_failure(
    chains: dict[int, list[dict]], monkeypatch: pytest.MonkeyPatch, workers: int, seed: int
) -> None:
    # tiny chunks force the threaded path on a 1000-chain; several tampers at
    # once: only the earliest may be reported, whatever finishes first
    monkeypatch.setattr(_verify, "_SERIAL_BELOW", 0)
    monkeypatch.setattr(_verify, "_CHUNK", 7)
    rng = random.Random(seed)
    es = list(chains[1000])
    positions = sorted(rng.sample(range(1000), 4))
    for p in reversed(positions):
        kind = rng.choice(["sig", "payload", "key"])
        if kind == "sig":
            es[p] = rehash(es[p], payload=other_verdict(es[p]))
        elif kind == "payload":
            es[p] = {**es[p], "payload": other_verdict(es[p])}
        else:
            es[p] = {**es[p], "key_id": "nobody"}
    cols = JournalColumns.from_entries(es)
    serial = verify_columns(cols, RING, workers=1)
    parallel = verify_columns(cols, RING, workers=workers)
    assert parallel == serial
    assert serial.first_bad_seq == positions[0] + 1


def test_parallel_path_verifies_a_clean_chain(
    chains: dict[int, list[dict]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_verify, "_SERIAL_BELOW", 0)
    monkeypatch.setattr(_verify, "_CHUNK", 64)
    rep = verify_columns(JournalColumns.from_entries(chains[1000]), RING, workers=2)
    assert rep.ok and rep.entries_checked == 1000


# --- continuing a stored chain --------------------------------------------------------


def test_prev_continues_a_stored_chain(chains: dict[int, list[dict]]) -> None:
    es = chains[9]
    head = LedgerRef(seq=5, hash=es[4]["hash"])
    tail = JournalColumns.from_entries(es[5:])
    rep = verify_columns(tail, RING, prev=head)
    assert rep.ok and rep.entries_checked == 4 and rep.head_seq == 9
    assert verify_columns(JournalColumns(), RING, prev=head).head == head
    # without prev the tail does not start a chain
    assert verify_columns(tail, RING).reason == "seq_gap"
    wrong = LedgerRef(seq=5, hash=es[3]["hash"])
    rep = verify_columns(tail, RING, prev=wrong)
    assert rep.reason == "broken_link" and rep.first_bad_seq == 6
    assert rep.head == wrong
    # an entry already at or before the head
    rep = verify_columns(JournalColumns.from_entries(es[4:]), RING, prev=head)
    assert (rep.reason, rep.first_bad_seq) == ("duplicate_seq", 5)


def test_columns_round_trip(chains: dict[int, list[dict]]) -> None:
    cols = JournalColumns.from_entries(chains[9])
    again = read_journal_lines(list(cols.iter_jsonl())).columns
    assert again.to_pydict() == {**cols.to_pydict(), "line": list(range(1, 10))}
    assert JournalColumns.from_mapping(again.to_pydict()) == again
    assert len(again.prefix(4)) == 4 and again.prefix(4).line == [1, 2, 3, 4]
    with pytest.raises(BadInputError, match="differ in length"):
        JournalColumns(seq=[1], kind=[])
    with pytest.raises(BadInputError, match="missing: signature"):
        JournalColumns.from_mapping({c: [] for c in ENTRY_FIELDS[:-1]})


# --- an independent writer -------------------------------------------------------------


def test_reader_accepts_an_independent_writer(tmp_path: Path) -> None:
    """A journal written without truss_lab: raw libsodium + the rfc8785 package,
    keys shuffled on every line, non-ASCII raw on some lines and escaped on others."""
    rng = random.Random(7)
    seeds = {"writer-a": b"\x11" * 32, "writer-b": b"\x22" * 32}
    pairs = {k: nacl.bindings.crypto_sign_seed_keypair(s) for k, s in seeds.items()}
    ring = {k: pk for k, (pk, _) in pairs.items()}
    lines, prev = [], "0" * 64
    for seq in range(1, 41):
        kid = rng.choice(sorted(pairs))
        payload = {"contract_id": f"c-{seq}", "goal": "Zeitzone prüfen ☃ 𝄞 \u2028 \"q\"",
                   "score": rng.random(), "n": rng.randint(-(2**53) + 1, 2**53 - 1),
                   "big": 1e21, "nested": {"ключ": [1, None, True, "ok"]}}  # fmt: skip
        body = {"seq": seq, "kind": "contract_verdict", "ts": f"2026-12-01T08:00:{seq:02d}.5Z",
                "key_id": kid, "payload": payload, "prev_hash": prev}  # fmt: skip
        h = __import__("hashlib").sha256(rfc8785.dumps(body)).hexdigest()
        sig = nacl.bindings.crypto_sign(bytes.fromhex(h), pairs[kid][1])[:64]
        entry = {**body, "hash": h, "signature": base64.b64encode(sig).decode()}
        items = list(entry.items())
        rng.shuffle(items)
        lines.append(json.dumps(dict(items), ensure_ascii=seq % 2 == 0) + "\n")
        prev = h
    assert any("\\u" in x for x in lines) and any("ü" in x for x in lines)
    path = tmp_path / "independent.jsonl"
    path.write_text("".join(lines) + "\n", encoding="utf-8")  # one trailing blank line
    keyring_path = tmp_path / "keys.json"
    keyring_path.write_text(json.dumps({k: base64.b64encode(v).decode() for k, v in ring.items()}))
    rep = verify_journal(path, load_keyring(keyring_path))
    assert rep.ok and rep.entries_checked == 40 and rep.head_hash == prev


# --- golden files ------------------------------------------------------------------------


def test_golden_journal_verifies_and_its_tampered_twin_does_not() -> None:
    ring = load_keyring(DATA / "journal" / "keys.json")
    rep = verify_journal(DATA / "journal" / "good.jsonl", ring)
    assert rep.ok and rep.entries_checked == 5
    bad = verify_journal(DATA / "journal" / "tampered_payload.jsonl", ring)
    assert (bad.reason, bad.first_bad_seq, bad.first_bad_line) == ("bad_hash", 3, 3)


def test_golden_journal_is_reproducible() -> None:
    # the golden file is exactly what build_entry writes for its fixed inputs
    written = (DATA / "journal" / "good.jsonl").read_text().splitlines()
    assert [json.loads(x) for x in written] == make_chain(5)


# --- strict reading: examples ----------------------------------------------------------


@pytest.fixture(scope="module")
def good3() -> list[str]:
    return to_lines(make_chain(3))


@pytest.mark.parametrize(
    ("mutate", "field", "detail"),
    [
        (lambda e: e.pop("hash"), "hash", "missing_field"),
        (lambda e: e.update(extra=1), "extra", "unknown_field"),
        (lambda e: e.update(seq=True), "seq", "wrong_type"),
        (lambda e: e.update(seq=3.0), "seq", "wrong_type"),
        (lambda e: e.update(seq=0), "seq", "bad_value"),
        (lambda e: e.update(kind=""), "kind", "bad_value"),
        (lambda e: e.update(key_id=None), "key_id", "wrong_type"),
        (lambda e: e.update(ts="2026-11-30 10:00:00"), "ts", "bad_value"),
        (lambda e: e.update(ts="2026-11-30T10:00:00+01:00"), "ts", "bad_value"),
        (lambda e: e.update(ts="2026-02-30T10:00:00Z"), "ts", "bad_value"),
        (lambda e: e.update(payload=[1]), "payload", "wrong_type"),
        (lambda e: e.update(prev_hash="A" * 64), "prev_hash", "bad_value"),
        (lambda e: e.update(hash="0" * 63), "hash", "bad_value"),
        (lambda e: e.update(signature="not base64"), "signature", "bad_value"),
        (lambda e: e.update(signature=base64.b64encode(b"x" * 63).decode()), "signature",
         "bad_value"),
        (lambda e: e.update(signature=e["signature"][:85] + "B=="), "signature", "bad_value"),
    ],
)
def test_bad_field_is_named(good3: list[str], mutate: Callable, field: str, detail: str) -> None:
    e = json.loads(good3[1])
    mutate(e)
    parsed = read_journal_lines([good3[0], json.dumps(e), good3[2]], source="x.jsonl")
    bad = parsed.error
    assert bad is not None and (bad.line, bad.field, bad.detail) == (2, field, detail)
    assert bad.reason == "malformed" and len(parsed.columns) == 1
    err = bad.to_error()
    assert isinstance(err, BadInputError) and "x.jsonl, line 2" in str(err)


def test_blank_lines(good3: list[str]) -> None:
    assert read_journal_lines([*good3, "\n", "  \n"]).ok
    parsed = read_journal_lines([good3[0], "\n", good3[1]])
    assert parsed.error is not None and parsed.error.line == 2
    assert len(parsed.columns) == 1


def test_last_line_without_newline_is_fine_but_cut_short_is_not(good3: list[str]) -> None:
    assert read_journal_lines([*good3[:2], good3[2].rstrip("\n")]).ok
    parsed = read_journal_lines([*good3[:2], good3[2][:-10]])
    assert parsed.error is not None and (parsed.error.line, parsed.error.detail) == (3, "bad_json")


def test_read_journal_files(tmp_path: Path, good3: list[str]) -> None:
    p = tmp_path / "j.jsonl"
    p.write_bytes("".join(good3).replace("\n", "\r\n").encode())
    assert read_journal(p).ok and len(read_journal(p).columns) == 3
    with pytest.raises(BadInputError, match="no such file; expected a journal file"):
        read_journal(tmp_path / "missing.jsonl")
    p.write_bytes(good3[0].encode() + b'{"seq": "\xff"}\n')
    bad = read_journal(p).error
    assert bad is not None and (bad.line, bad.detail) == (2, "bad_unicode")


# --- strict reading: Hypothesis ----------------------------------------------------------

_WRONG_FOR_STR = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.just([]), st.just({}))
_WRONG_FOR_SEQ = st.one_of(st.none(), st.booleans(), st.floats(allow_nan=False,
                           allow_infinity=False), st.text(max_size=3), st.just([1]))  # fmt: skip
_NEEDS_TEXT = {"bad_json", "duplicate_key", "non_finite", "unsafe_integer"}


@st.composite
def bad_lines(draw: st.DrawFn, good: list[str]) -> tuple[str, str | None, str]:
    """A bad line plus the top-level field it names (None when none) and its detail."""
    base = json.loads(draw(st.sampled_from(good)))
    family = draw(st.sampled_from(
        ["truncated", "missing", "mistyped", "extra", "duplicate", "nan", "bigint",
         "not_object"]
    ))  # fmt: skip
    name = draw(st.sampled_from(list(ENTRY_FIELDS)))
    if family == "truncated":
        text = json.dumps(base)
        return text[: draw(st.integers(1, len(text) - 1))], None, "bad_json"
    if family == "missing":
        del base[name]
        return json.dumps(base), name, "missing_field"
    if family == "mistyped":
        if name == "seq":
            base[name] = draw(_WRONG_FOR_SEQ)
        elif name == "payload":
            base[name] = draw(st.one_of(st.none(), st.text(max_size=3), st.just([])))
        else:
            base[name] = draw(_WRONG_FOR_STR)
        return json.dumps(base), name, "wrong_type"
    if family == "extra":
        extra = draw(st.text(min_size=1, max_size=5).filter(lambda k: k not in base))
        base[extra] = draw(st.integers(0, 3))
        return json.dumps(base), extra, "unknown_field"
    if family == "duplicate":
        text = json.dumps(base)
        dup = f'"{name}": {json.dumps(base[name])}, '
        return "{" + dup + text[1:], name, "duplicate_key"
    if family == "nan":
        token = draw(st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400"]))
        text = json.dumps(base).replace('"payload": {', '"payload": {"x": ' + token + ", ", 1)
        return text, "payload", "non_finite"
    if family == "bigint":
        big = draw(st.integers(2**53, 2**70) | st.integers(-(2**70), -(2**53)))
        if name == "seq":
            base["seq"] = big
            return json.dumps(base), "seq", "unsafe_integer"
        text = json.dumps(base).replace('"payload": {', f'"payload": {{"n": {big}, ', 1)
        return text, "payload", "unsafe_integer"
    return json.dumps(draw(st.sampled_from([[base], "x", 3, None]))), None, "not_an_object"


@settings(max_examples=examples(1000), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_bad_line_is_reported_with_line_and_field(good3: list[str], data: st.DataObject) -> None:
    k = data.draw(st.integers(0, 3), label="good lines before")
    line, field, detail = data.draw(bad_lines(good3), label="bad line")
    after = data.draw(st.lists(st.sampled_from(good3), max_size=2), label="lines after")
    parsed = read_journal_lines([*good3[:k], line, *after], source="h.jsonl")
    bad = parsed.error
    assert bad is not None, line
    assert bad.line == k + 1 and bad.reason == "malformed" and bad.detail == detail, bad
    # nested offenders are named by dotted path under the top-level field
    assert bad.field == field or (field and (bad.field or "").startswith(field + ".")), bad
    # the good prefix is intact, line numbers included
    assert parsed.columns.to_pydict() == read_journal_lines(good3[:k]).columns.to_pydict()
    rep = verify_journal(parsed, RING)
    assert (rep.reason, rep.first_bad_line, rep.entries_checked) == ("malformed", k + 1, k)


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.sampled_from(range(3)), max_size=3))
def test_model_and_reader_agree_on_good_lines(good3: list[str], picks: list[int]) -> None:
    for i in picks:
        obj = json.loads(good3[i])
        assert JournalEntryModel.model_validate(obj).model_dump() == obj
        VerdictPayloadModel.model_validate(obj["payload"])


def _flip_padding(sig: str) -> str:
    # the 86th base64 character carries 4 padding bits: flip the lowest one
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    return sig[:85] + alphabet[alphabet.index(sig[85]) ^ 1] + sig[86:]


_FIELD_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "seq": st.sampled_from([1, 0, -1, 2**53 - 1, 2**53, 1.0, True, "1", None]),
    "kind": st.sampled_from(["contract_verdict", "note", "", 3, None, []]),
    "ts": st.sampled_from([
        "2026-11-30T10:00:00Z", "2026-11-30T10:00:00.123456789Z", "2026-11-30T10:00:00+00:00",
        "2026-02-31T10:00:00Z", "2026-11-30 10:00:00Z", "2026-11-30T10:00:00+01:00",
        "2026-11-30T10:00:00.1234567890Z", "", 0,
    ]),
    "key_id": st.sampled_from(["op-1", "", 1, None]),
    "payload": st.sampled_from([{}, {"a": [1, {"b": None}]}, [], "x", None, 1]),
    "prev_hash": st.sampled_from(["0" * 64, "A" * 64, "0" * 63, "g" * 64, "0" * 65, None]),
    "hash": st.sampled_from(["ab" * 32, "AB" * 32, "ab" * 31, "", 7]),
}


@settings(max_examples=examples(500), deadline=None)
@given(data=st.data())
def test_reader_fast_check_and_entry_model_agree(good3: list[str], data: st.DataObject) -> None:
    # The reader's hand-written check must accept exactly what JournalEntryModel (the
    # one entry spec, also the JSON Schema) accepts.
    obj = json.loads(data.draw(st.sampled_from(good3)))
    sig = obj["signature"]
    values = {**_FIELD_VALUES, "signature": st.sampled_from(
        [sig, _flip_padding(sig), sig[:-2] + "AA", sig[:-1], "", 5])}  # fmt: skip
    for name in data.draw(st.lists(st.sampled_from(ENTRY_FIELDS), max_size=3, unique=True)):
        if data.draw(st.booleans(), label=f"drop {name}"):
            del obj[name]
        else:
            obj[name] = data.draw(values[name], label=name)
    if data.draw(st.integers(0, 9), label="extra field") == 0:
        obj["extra"] = 1
    reader_ok = read_journal_lines([json.dumps(obj)]).ok
    try:
        JournalEntryModel.model_validate(obj)
        model_ok = True
    except ValidationError:
        model_ok = False
    assert reader_ok == model_ok, obj


def test_reader_takes_its_fields_from_the_entry_model() -> None:
    assert ENTRY_FIELDS == tuple(JournalEntryModel.model_fields) == (
        "seq", "kind", "ts", "key_id", "payload", "prev_hash", "hash", "signature",
    )  # fmt: skip
    assert JournalColumns.__dataclass_fields__.keys() >= set(ENTRY_FIELDS)


# --- reports, models, keys ---------------------------------------------------------------


def test_report_repr_and_html_escape() -> None:
    rep = VerifyReport(
        ok=False, entries_checked=2, first_bad_seq=3, first_bad_line=4, reason="bad_hash",
        message="seq 3: <script>alert('x')</script>", head_seq=2, head_hash="a" * 64,
    )  # fmt: skip
    assert "<script>" not in rep._repr_html_() and "&lt;script&gt;" in rep._repr_html_()
    assert repr(rep).startswith("VerifyReport(ok=False, entries_checked=2, seq=3, line=4")
    with pytest.raises(Exception, match="frozen"):
        rep.ok = True  # type: ignore[misc]
    with pytest.raises(Exception, match="extra"):
        VerifyReport(ok=True, entries_checked=0, surprise=1)  # type: ignore[call-arg]
    with pytest.raises(Exception, match="reason"):
        VerifyReport(ok=False, entries_checked=0, reason="made_up")  # type: ignore[arg-type]


def test_schemas_are_documented() -> None:
    for model in (JournalEntryModel, VerdictPayloadModel, CheckModel, VerifyReport):
        schema = model.model_json_schema()
        props = schema["properties"]
        assert all(p.get("description") for p in props.values()), model
    entry = JournalEntryModel.model_json_schema()
    assert entry["additionalProperties"] is False and len(entry["required"]) == 8
    verdict = VerdictPayloadModel.model_json_schema()
    assert verdict["properties"]["verdict"]["enum"] == ["pass", "fail", "partial"]
    # one verdict spec (journal/_spec.py): what extraction requires, fields beyond kept
    assert verdict["required"] == ["goal", "verdict", "summary", "checks"]
    assert verdict["additionalProperties"] is True
    extra = {**verdict_payload(1), "x": 1}
    assert VerdictPayloadModel.model_validate(extra).model_extra == {"x": 1}


def test_keys_and_keyring_round_trip(tmp_path: Path) -> None:
    k = SigningKey.generate("fresh")
    assert SigningKey.load(k.save(tmp_path / "k.json")) == k
    assert (tmp_path / "k.json").stat().st_mode & 0o777 == 0o600
    assert "seed" not in repr(k)
    assert load_keyring(save_keyring(RING, tmp_path / "keys.json")) == RING
    (tmp_path / "bad.json").write_text(json.dumps({"x": base64.b64encode(b"1" * 31).decode()}))
    with pytest.raises(BadInputError, match="32 bytes"):
        load_keyring(tmp_path / "bad.json")
    with pytest.raises(BadInputError, match="32 bytes"):
        sign_bytes(b"short", b"m")


# The worker processes' path (long chains), taken here by short ones too. It costs two
# process start-ups per chain (a quarter of a second): make test takes it for every
# tamper at every position of the 1000-entry chain and a covering share of the other
# sizes (tests/builders/grids.py), make test-slow for every size. The threads' path
# runs on the grid in test_tamper_is_detected.
@pytest.mark.parametrize(("n", "where", "tamper"), covering(
    sorted(_applicable(), key=lambda c: c[0] != 1000),
    always=lambda n, where, tamper: n == 1000))
def test_worker_processes_report_what_verify_columns_reports(
    chains: dict[int, list[dict]], monkeypatch: pytest.MonkeyPatch, n: int, where: str,
    tamper: str,
) -> None:
    monkeypatch.setattr(_verify, "_CHUNK", 5)
    monkeypatch.setattr(_verify, "_POOL_MIN", 1)
    lines, *_ = TAMPERS[tamper](chains[n], POSITIONS[where](n))
    cols, parts = _in_batches(lines, n, tamper)
    want = verify_columns(cols, RING, workers=1)
    assert _verify.verify_stream(iter(parts), RING, workers=2) == want


def test_load_or_create_keeps_one_key_per_file(tmp_path: Path) -> None:
    path = tmp_path / "me.key"
    first = SigningKey.load_or_create(path, "me")
    assert path.stat().st_mode & 0o777 == 0o600
    again = SigningKey.load_or_create(path, "me")
    assert (again.key_id, again.public_key) == ("me", first.public_key)
    with pytest.raises(BadInputError, match="holds key 'me', not 'you'"):
        SigningKey.load_or_create(path, "you")
