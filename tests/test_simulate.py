"""The seeded simulator: determinism, format conformance, defect rates, label noise."""

from __future__ import annotations

import base64
import csv
import dataclasses
import hashlib
import itertools
import json
import re
import shlex
from pathlib import Path
from typing import Any

import nacl.signing
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from tests.builders.profiles import examples
from tests.builders.stores import SAMPLE
from truss_lab.core._canonical import canonical
from truss_lab.core._errors import BadInputError
from truss_lab.journal._crypto import GENESIS_HASH, entry_hash
from truss_lab.simulate._annotations import DEFAULT_MATCH_DISAGREEMENT
from truss_lab.simulate._completions import (
    DEFAULT_EXTRACTORS,
    EXTRACTOR_PROFILES,
    ExtractorProfile,
    make_completions,
)
from truss_lab.simulate._simulate import FILES, simulate
from truss_lab.simulate._verdicts import make_verdicts

REPO = Path(__file__).resolve().parents[1]
COMPLETION_FIELDS = {
    "verdict_hash", "extractor", "model", "prompt_version", "request_hash", "text",
    "latency_ms", "prompt_tokens", "completion_tokens",
}


def _digests(d: Path) -> dict[str, str]:
    return {n: hashlib.sha256((d / n).read_bytes()).hexdigest() for n in FILES}


def _jsonl(p: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines()]


def _parse(text: str) -> dict[str, Any] | None:
    """A lenient reference parser: the outermost {...} of the text, or None."""
    a, b = text.find("{"), text.rfind("}")
    if a < 0 or b < a:
        return None
    try:
        obj = json.loads(text[a : b + 1])
    except ValueError:
        return None
    return obj if isinstance(obj, dict) and isinstance(obj.get("lessons"), list) else None


def _lessons(completions: list[dict[str, Any]]) -> pd.DataFrame:
    rows = []
    for c in completions:
        obj = _parse(c["text"])
        if obj is None:
            continue
        for i, les in enumerate(obj["lessons"]):
            s = les.get("salience")
            ok = isinstance(s, int | float) and not isinstance(s, bool) and 0 <= s <= 1
            rows.append((c["verdict_hash"], c["extractor"], i, les.get("text"),
                         float(s) if ok else np.nan, les.get("evidence")))
    return pd.DataFrame(rows, columns=["verdict_hash", "extractor", "lesson_index", "text",
                                       "salience", "evidence"])


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("sim_small")
    simulate(d, runs=50, seed=11)
    return d


@pytest.fixture(scope="module")
def medium(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    d = tmp_path_factory.mktemp("sim_medium")
    return d, simulate(d, runs=1500, seed=3)


def test_same_seed_is_byte_identical(small: Path, tmp_path: Path) -> None:
    res = simulate(tmp_path, runs=50, seed=11)
    assert _digests(tmp_path) == _digests(small)
    assert set(res.files) == set(FILES)


def test_different_seed_changes_every_file(
    small: Path, tmp_path: Path
) -> None:
    simulate(tmp_path, runs=50, seed=12)
    a, b = _digests(small), _digests(tmp_path)
    assert all(a[n] != b[n] for n in FILES)


def test_adding_an_extractor_leaves_the_others_unchanged(small: Path, tmp_path: Path) -> None:
    simulate(tmp_path, runs=50, seed=11, extractors=["sim-good-v1"])
    only_good = [c for c in _jsonl(small / "completions.jsonl")
                 if c["extractor"] == "sim-good-v1"]
    assert _jsonl(tmp_path / "completions.jsonl") == only_good
    assert (tmp_path / "journal.jsonl").read_bytes() == (small / "journal.jsonl").read_bytes()


def test_journal_chains_hashes_and_signatures_verify(small: Path) -> None:
    entries = _jsonl(small / "journal.jsonl")
    keys = json.loads((small / "keys.json").read_text())
    prev = GENESIS_HASH
    last_ts = ""
    for i, e in enumerate(entries, start=1):
        assert list(e) == ["seq", "kind", "ts", "key_id", "payload", "prev_hash", "hash",
                           "signature"]
        assert e["seq"] == i and e["kind"] == "contract_verdict" and e["prev_hash"] == prev
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", e["ts"]) and e["ts"] > last_ts
        h = entry_hash(e["seq"], e["kind"], e["ts"], e["key_id"], canonical(e["payload"]),
                       e["prev_hash"])
        assert h == e["hash"]
        vk = nacl.signing.VerifyKey(base64.b64decode(keys[e["key_id"]]))
        vk.verify(bytes.fromhex(h), base64.b64decode(e["signature"]))  # raises if bad
        prev, last_ts = h, e["ts"]


def _verify_journal(d: Path) -> list[dict[str, Any]]:
    entries = _jsonl(d / "journal.jsonl")
    keys = json.loads((d / "keys.json").read_text())
    prev = GENESIS_HASH
    for i, e in enumerate(entries, start=1):
        assert e["seq"] == i and e["prev_hash"] == prev
        h = entry_hash(e["seq"], e["kind"], e["ts"], e["key_id"], canonical(e["payload"]),
                       e["prev_hash"])
        assert h == e["hash"]
        nacl.signing.VerifyKey(base64.b64decode(keys[e["key_id"]])).verify(
            bytes.fromhex(h), base64.b64decode(e["signature"]))
        prev = h
    return entries


@settings(max_examples=examples(12), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(runs=st.integers(1, 25), seed=st.integers(0, 2**63))
def test_any_seed_and_size_gives_a_consistent_dataset(
    tmp_path: Path, runs: int, seed: int
) -> None:
    d = tmp_path / f"{runs}-{seed}"
    res = simulate(d, runs=runs, seed=seed)
    entries = _verify_journal(d)
    assert len(entries) == runs == res.n_verdicts
    comps = _jsonl(d / "completions.jsonl")
    assert len(comps) == len(DEFAULT_EXTRACTORS) * runs
    assert all(set(c) == COMPLETION_FIELDS for c in comps)
    les = _lessons(comps)
    keys = set(zip(les.verdict_hash, les.extractor, les.lesson_index, strict=True))
    lab = pd.read_csv(d / "labels.csv")
    assert len(lab) == res.n_labels
    assert set(zip(lab.verdict_hash, lab.extractor, lab.lesson_index, strict=True)) <= keys


def test_a_long_simulation_is_written_block_by_block_as_one_dataset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Memory holds one block whatever the size (BLOCK_VERDICTS, 100k in use; 400 here):
    # block 0 is the dataset of that many verdicts byte for byte, the next blocks draw
    # their own streams and continue the chain, the contracts and the clock.
    from tests.builders.stores import fresh_store
    from truss_lab.ingest._ingest import ingest_completions, ingest_labels
    from truss_lab.journal._ledger import import_journal
    from truss_lab.simulate import _simulate

    monkeypatch.setattr(_simulate, "BLOCK_VERDICTS", 400)
    one, long = tmp_path / "one", tmp_path / "long"
    simulate(one, runs=400, seed=5)
    res = simulate(long, runs=1000, seed=5)
    entries = _verify_journal(long)  # one chain, seq 1..1000, every signature good
    assert len(entries) == res.n_verdicts == 1000
    head = (one / "journal.jsonl").read_bytes()
    assert (long / "journal.jsonl").read_bytes().startswith(head)
    ts = [e["ts"] for e in entries]
    assert ts == sorted(ts) and len(set(ts)) == len(ts)
    contracts = [int(e["payload"]["contract_id"][2:]) for e in entries]
    assert contracts[0] == 1 and all(0 <= b - a <= 1 for a, b in itertools.pairwise(contracts))
    # Blocks 1 and 2 are not copies of block 0: their own streams.
    goals = [tuple(c["name"] for c in e["payload"]["checks"]) for e in entries]
    assert goals[400:800] != goals[:400] and goals[800:] != goals[:200]
    # The counts are the files' and every file loads as one dataset.
    comps = _jsonl(long / "completions.jsonl")
    assert len(comps) == res.n_completions == 3 * 1000
    assert len(pd.read_csv(long / "labels.csv")) == res.n_labels
    assert sum(res.verdicts.values()) == 1000
    with fresh_store() as s:
        assert import_journal(s, long / "journal.jsonl", keyring=long / "keys.json").ok
        rep = ingest_completions(s, long / "completions.jsonl")
        assert not rep.errors and rep.rows_added == 3000
        rep = ingest_labels(s, long / "labels.csv")
        assert not rep.errors and rep.rows_added == res.n_labels
    with pytest.raises(BadInputError, match="match_share"):
        simulate(tmp_path / "x", runs=1000, seed=5, match_verdicts=3)
    assert not (tmp_path / "x").exists()


def test_tampered_entry_no_longer_verifies(small: Path) -> None:
    e = _jsonl(small / "journal.jsonl")[0]
    e["payload"]["verdict"] = "pass" if e["payload"]["verdict"] != "pass" else "fail"
    h = entry_hash(e["seq"], e["kind"], e["ts"], e["key_id"], canonical(e["payload"]),
                   e["prev_hash"])
    assert h != e["hash"]


def test_verdict_payloads_are_consistent(medium: tuple[Path, Any]) -> None:
    d, res = medium
    entries = _jsonl(d / "journal.jsonl")
    counts = {"pass": 0, "partial": 0, "fail": 0}
    for e in entries:
        p = e["payload"]
        assert list(p) == ["contract_id", "run_id", "goal", "verdict", "summary", "checks",
                           "tags"]
        assert p["run_id"].startswith("r-" + p["contract_id"][2:] + "-")
        failed = [c for c in p["checks"] if not c["passed"]]
        assert len(p["checks"]) >= 2 and all(c["evidence"] for c in p["checks"])
        assert len({c["name"] for c in p["checks"]}) == len(p["checks"])
        if p["verdict"] == "pass":
            assert not failed
        elif p["verdict"] == "partial":
            assert 0 < len(failed) < len(p["checks"])
        else:
            assert failed
        counts[p["verdict"]] += 1
    assert counts == res.verdicts
    share = counts["pass"] / len(entries)
    assert 0.45 < share < 0.65


def test_completion_lines_have_the_format_fields(medium: tuple[Path, Any]) -> None:
    d, res = medium
    comps = _jsonl(d / "completions.jsonl")
    hashes = [e["hash"] for e in _jsonl(d / "journal.jsonl")]
    assert len(comps) == res.n_completions == len(hashes) * len(DEFAULT_EXTRACTORS)
    pairs = set()
    for c in comps:
        assert set(c) == COMPLETION_FIELDS
        assert c["prompt_version"] == "lesson-v1" and c["request_hash"] is None
        assert isinstance(c["text"], str)
        for f in ("latency_ms", "prompt_tokens", "completion_tokens"):
            assert isinstance(c[f], int) and c[f] > 0
        assert c["model"] == EXTRACTOR_PROFILES[c["extractor"]].model
        pairs.add((c["verdict_hash"], c["extractor"]))
    assert len(pairs) == len(comps)
    assert {h for h, _ in pairs} == set(hashes)


def test_defect_rates_are_in_range(medium: tuple[Path, Any]) -> None:
    d, res = medium
    comps = _jsonl(d / "completions.jsonl")
    n = len(comps)
    unparseable = sum(_parse(c["text"]) is None for c in comps)
    assert unparseable == res.n_unparseable
    assert 0.015 < unparseable / n < 0.05
    texts = [c["text"] for c in comps]
    assert any(t == "" for t in texts)
    fenced = sum(t.startswith("```json") for t in texts) / n
    prosed = sum(t.startswith(("Here", "Sure", "After")) and "{" in t for t in texts) / n
    assert 0.03 < fenced < 0.1 and 0.02 < prosed < 0.07
    les = _lessons(comps)
    assert len(les) == res.n_lessons
    raw = [les for c in comps if (o := _parse(c["text"])) for les in o["lessons"]]
    sal = [x.get("salience", "missing") for x in raw]
    out = sum(isinstance(s, float) and not 0 <= s <= 1 for s in sal) / len(raw)
    missing = sum(s == "missing" for s in sal) / len(raw)
    strings = sum(isinstance(s, str) and s != "missing" for s in sal) / len(raw)
    assert 0.005 < out < 0.05 and 0.005 < missing < 0.04 and 0.002 < strings < 0.03
    # Duplicates within a completion, and lessons citing checks the verdict lacks.
    dups = les[les.text.apply(lambda t: isinstance(t, str))].duplicated(
        ["verdict_hash", "extractor", "text"]).sum()
    assert dups > 0
    checks = {e["hash"]: {c["name"] for c in e["payload"]["checks"]}
              for e in _jsonl(d / "journal.jsonl")}
    cited = les.dropna(subset=["evidence"])
    ungrounded = sum(any(x.removeprefix("check:") not in checks[h] for x in ev)
                     for h, ev in zip(cited.verdict_hash, cited.evidence, strict=True))
    assert 0 < ungrounded < 0.1 * len(les)


def test_pass_verdicts_yield_few_lessons(medium: tuple[Path, Any]) -> None:
    d, _ = medium
    verdict = {e["hash"]: e["payload"]["verdict"] for e in _jsonl(d / "journal.jsonl")}
    n = {}
    for c in _jsonl(d / "completions.jsonl"):
        if (o := _parse(c["text"])) is not None:
            n.setdefault((verdict[c["verdict_hash"]], c["extractor"]), []).append(
                len(o["lessons"]))
    good = {v: np.mean(n[(v, "sim-good-v1")]) for v in ("pass", "partial", "fail")}
    assert good["pass"] < 0.3 < 1.0 < good["fail"]
    assert np.mean(n[("pass", "sim-good-v1")]) < np.mean(n[("pass", "sim-overconfident-v1")])


def test_labels_reference_existing_lessons(medium: tuple[Path, Any]) -> None:
    d, res = medium
    with open(d / "labels.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == ["verdict_hash", "extractor", "lesson_index", "useful", "annotator"]
    assert len(rows) == res.n_labels
    les = _lessons(_jsonl(d / "completions.jsonl"))
    text = {(h, e, i): t for h, e, i, t in zip(les.verdict_hash, les.extractor,
                                               les.lesson_index, les.text, strict=True)}
    for r in rows:
        t = text[(r["verdict_hash"], r["extractor"], int(r["lesson_index"]))]
        assert isinstance(t, str) and t.strip()
        assert r["useful"] in ("0", "1") and r["annotator"] in ("ann-a", "ann-b")
    # ann-a labels every non-empty-text lesson of a parseable completion of every
    # labelled extractor; the paraphrasing extractor has no labels at all.
    lab = pd.read_csv(d / "labels.csv")
    a = lab[lab.annotator == "ann-a"]
    has_text = les.text.apply(lambda t: isinstance(t, str) and bool(t.strip()))
    labelled = les.extractor.map(lambda e: EXTRACTOR_PROFILES[e].labelled)
    assert len(a) == (has_text & labelled).sum()
    assert has_text.sum() == res.n_candidates
    assert set(lab.extractor) == {e for e in DEFAULT_EXTRACTORS
                                  if EXTRACTOR_PROFILES[e].labelled}
    assert "sim-paraphrase-v1" in DEFAULT_EXTRACTORS
    assert not lab.duplicated(["verdict_hash", "extractor", "lesson_index", "annotator"]).any()
    share_b = (lab.annotator == "ann-b").sum() / len(a)
    assert 0.34 < share_b < 0.46


def test_truth_matches_candidates(medium: tuple[Path, Any]) -> None:
    d, _ = medium
    truth = pd.read_csv(d / "truth.csv")
    a = pd.read_csv(d / "labels.csv").query("annotator == 'ann-a'")
    key = ["verdict_hash", "extractor", "lesson_index"]
    pd.testing.assert_frame_equal(truth[key].reset_index(drop=True),
                                  a[key].reset_index(drop=True))
    assert truth.p_useful.between(0, 1).all() and truth.useful_true.isin([0, 1]).all()
    # Labels are noisy copies of the truth: they agree mostly, not always.
    agree = (truth.useful_true.to_numpy() == a.useful.to_numpy()).mean()
    assert 0.8 < agree < 0.97
    # useful_true is drawn from p_useful.
    assert abs(truth.useful_true.mean() - truth.p_useful.mean()) < 0.03


def test_annotators_disagree_sometimes(medium: tuple[Path, Any]) -> None:
    d, _ = medium
    lab = pd.read_csv(d / "labels.csv")
    both = lab.pivot_table(index=["verdict_hash", "extractor", "lesson_index"],
                           columns="annotator", values="useful").dropna()
    agree = (both["ann-a"] == both["ann-b"]).mean()
    assert 0.7 < agree < 0.95


def test_overconfident_extractor_is_miscalibrated(medium: tuple[Path, Any]) -> None:
    d, _ = medium
    les = _lessons(_jsonl(d / "completions.jsonl"))
    a = pd.read_csv(d / "labels.csv").query("annotator == 'ann-a'")
    m = a.merge(les, on=["verdict_hash", "extractor", "lesson_index"]).dropna(
        subset=["salience"])
    g = m.groupby("extractor")[["salience", "useful"]].mean()
    good, over = g.loc["sim-good-v1"], g.loc["sim-overconfident-v1"]
    assert abs(good.salience - good.useful) < 0.08
    assert over.salience - over.useful > 0.3
    assert good.useful > over.useful


def test_bad_arguments_raise_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match="runs"):
        simulate(tmp_path, runs=0, seed=1)
    with pytest.raises(BadInputError, match="seed"):
        simulate(tmp_path, runs=5, seed=-1)
    with pytest.raises(BadInputError, match="unknown extractor"):
        simulate(tmp_path, runs=5, seed=1, extractors=["gpt-9"])
    with pytest.raises(BadInputError, match="unique"):
        simulate(tmp_path, runs=5, seed=1, extractors=["sim-good-v1", "sim-good-v1"])
    assert not any(tmp_path.iterdir())


def test_custom_profile(tmp_path: Path) -> None:
    prof = ExtractorProfile(name="sim-always-broken", model="m", unparseable_rate=1.0)
    res = simulate(tmp_path, runs=30, seed=2, extractors=[prof])
    assert res.n_unparseable == res.n_completions == 30
    assert res.n_labels == 0
    assert (tmp_path / "labels.csv").read_text().count("\n") == 1


def test_library_readers_accept_the_dataset(medium: tuple[Path, Any]) -> None:
    """The sample must load through the library's own §2/§3 readers and parser."""
    completions = pytest.importorskip("truss_lab.ingest._completions")
    label_reader = pytest.importorskip("truss_lab.ingest._labels")
    parser = pytest.importorskip("truss_lab.extract._parser")
    d, res = medium
    comps, errors = completions.read_completions(d / "completions.jsonl")
    assert errors == [] and len(comps) == res.n_completions
    labels, errors = label_reader.read_labels(d / "labels.csv")
    assert errors == [] and len(labels) == res.n_labels
    results = [parser.parse_completion(t) for t in comps["text"]]
    assert sum(not r.ok for r in results) == res.n_unparseable
    assert sum(len(r.lessons) for r in results) == res.n_lessons
    dropped = sum(1 for r in results for le in r.lessons if not le.valid)
    assert 0 < dropped < 0.1 * res.n_lessons


def test_bundled_sample_is_what_the_documented_command_regenerates(tmp_path: Path) -> None:
    sheet = (SAMPLE / "DATASHEET.md").read_text()
    m = re.search(r"^\s*\.venv/bin/python -m truss_lab\.simulate (.+)$", sheet, re.M)
    assert m, "DATASHEET.md must show the exact generating command"
    args = shlex.split(m.group(1))
    args[args.index("--out") + 1] = str(tmp_path)
    from truss_lab.simulate._simulate import main

    assert main(args) == 0
    assert _digests(tmp_path) == _digests(SAMPLE)
    size = sum(p.stat().st_size for p in SAMPLE.iterdir())
    assert size < 5.0e6  # three extractors, references and the lesson truth: ≈ 4.6 MB


def _failed_checks(d: Path) -> dict[str, list[str]]:
    return {e["hash"]: [c["name"] for c in e["payload"]["checks"] if not c["passed"]]
            for e in _jsonl(d / "journal.jsonl")}


def test_references_follow_the_format_and_the_verdicts(medium: tuple[Path, Any]) -> None:
    d, res = medium
    refs = _jsonl(d / "references.jsonl")
    assert len(refs) == res.n_references > 0
    failed = _failed_checks(d)
    by: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for r in refs:
        assert list(r) == ["verdict_hash", "reference_id", "text", "evidence", "annotator"]
        assert r["annotator"] in ("ann-a", "ann-b")
        assert r["reference_id"] not in by.setdefault((r["verdict_hash"], r["annotator"]), {})
        by[(r["verdict_hash"], r["annotator"])][r["reference_id"]] = r
    n_annotated = 0
    for h, names in failed.items():
        a, b = by.get((h, "ann-a")), by.get((h, "ann-b"))
        if a is None:
            assert b is None  # ann-b annotates only verdicts ann-a annotated
            continue
        n_annotated += 1
        if not names:  # a pass verdict teaches nothing: one "none" line, no text
            assert list(a) == ["none"] and a["none"]["text"] == "" and a["none"]["evidence"] == []
            assert b is None or list(b) == ["none"]
            continue
        # r<k> is the lesson of the k-th failed check, in the expert's own words.
        assert list(a) == [f"r{k}" for k in range(1, len(names) + 1)]
        for k, name in enumerate(names, start=1):
            assert a[f"r{k}"]["evidence"] == [f"check:{name}"] and a[f"r{k}"]["text"]
        if b is not None:
            assert "r1" in b and set(b) <= set(a)
            assert all(b[i]["evidence"] == a[i]["evidence"] for i in b)
    share = n_annotated / len(failed)
    assert 0.28 < share < 0.42  # a few hundred of the sample's verdicts; the rest not annotated
    both = sum((h, "ann-b") in by for h in failed) / n_annotated
    assert 0.3 < both < 0.5
    # Two annotators word one reference differently, and ann-b now and then leaves one out.
    pairs = [(by[(h, "ann-a")][i]["text"], by[(h, "ann-b")][i]["text"])
             for h, _ in by if (h, "ann-b") in by and _ == "ann-a"
             for i in by[(h, "ann-b")] if i != "none"]
    assert sum(x != y for x, y in pairs) > 0.9 * len(pairs)
    assert sum(len(by[(h, "ann-a")]) > len(by[(h, "ann-b")]) for h, a_ in by
               if a_ == "ann-a" and (h, "ann-b") in by) > 0


def test_lesson_truth_names_what_every_lesson_expresses(medium: tuple[Path, Any]) -> None:
    d, _ = medium
    truth = pd.read_csv(d / "lesson_truth.csv", keep_default_na=False, dtype={"duplicate_of": str})
    les = _lessons(_jsonl(d / "completions.jsonl"))
    key = ["verdict_hash", "extractor", "lesson_index"]
    assert not truth.duplicated(key).any()
    m = les.merge(truth, on=key, how="left", validate="1:1", indicator=True)
    assert (m["_merge"] == "both").all()  # every lesson a reader sees has its truth row
    has_text = m.text.apply(lambda t: isinstance(t, str) and bool(t.strip()))
    assert (m.candidate == has_text.astype(int)).all()
    # A lesson expressing reference r<k> cites the k-th failed check of its verdict; a
    # paraphrase may add the summary, and a heavy one cite the summary or goal instead.
    failed = _failed_checks(d)
    expr = m[m.reference_id != "none"].dropna(subset=["evidence"])
    assert len(expr) > 0
    for h, rid, ev, para, kind in zip(expr.verdict_hash, expr.reference_id, expr.evidence,
                                      expr.paraphrase, expr.lesson_kind, strict=True):
        check = f"check:{failed[h][int(rid[1:]) - 1]}"
        allowed = {"": [[check]], "light": [[check], [check, "summary"]],
                   "heavy": [[check], [check, "summary"], ["summary"], ["goal", "summary"]]}
        assert ev in allowed[para if kind == "grounded" else "heavy"]  # a copy: any of them
    heavy_ev = expr[expr.paraphrase == "heavy"].evidence.map(tuple).value_counts(normalize=True)
    assert heavy_ev.get(("summary",), 0) > 0.15  # heavy paraphrases often cite no check
    assert set(truth.loc[truth.reference_id != "none", "lesson_kind"]) == {
        "grounded", "duplicate", "near_duplicate"}
    assert (truth.loc[truth.lesson_kind == "grounded", "reference_id"] != "none").all()
    # Duplicates point at an earlier lesson of the same completion saying the same thing.
    dup = truth[truth.duplicate_of != ""]
    assert truth.lesson_kind.isin(["duplicate", "near_duplicate"]).sum() <= len(dup)
    src = truth.set_index(key)
    for h, e, i, j, meaning in zip(dup.verdict_hash, dup.extractor, dup.lesson_index,
                                   dup.duplicate_of, dup.meaning, strict=True):
        assert int(j) < i and src.loc[(h, e, int(j)), "meaning"] == meaning
    assert set(truth.loc[truth.generic == 1, "lesson_kind"]) <= {"generic", "duplicate",
                                                                "near_duplicate"}
    assert set(truth.loc[truth.ungrounded == 1, "lesson_kind"]) <= {
        "ungrounded", "duplicate", "near_duplicate"}
    # Only the paraphrasing extractor paraphrases, at both levels, and only grounded lessons.
    para = truth[truth.paraphrase != ""]
    assert set(para.extractor) == {"sim-paraphrase-v1"}
    assert set(para.paraphrase) == {"light", "heavy"} and set(para.lesson_kind) == {"grounded"}
    heavy = (para.paraphrase == "heavy").mean()
    assert 0.3 < heavy < 0.5


def test_paraphrases_reword_the_good_extractors_lessons(medium: tuple[Path, Any]) -> None:
    d, _ = medium
    truth = pd.read_csv(d / "lesson_truth.csv", keep_default_na=False)
    les = _lessons(_jsonl(d / "completions.jsonl")).merge(
        truth, on=["verdict_hash", "extractor", "lesson_index"])
    grounded = les[(les.lesson_kind == "grounded") & (les.candidate == 1)]
    good = grounded[grounded.extractor == "sim-good-v1"]
    para = grounded[grounded.extractor == "sim-paraphrase-v1"]
    # The same check's lesson is worded differently on different verdicts, and the
    # paraphrasing extractor words the lesson of one verdict differently again.
    assert good.text.nunique() > 0.97 * len(good)
    same = para.merge(good, on=["verdict_hash", "reference_id"], suffixes=("_p", "_g"))
    assert len(same) > 0.5 * len(para)
    assert (same.text_p == same.text_g).mean() < 0.02
    # Heavy paraphrases move the verdict's figures to the front or reorder clauses.
    heavy = para[para.paraphrase == "heavy"]
    assert (heavy.text.str.split().str[0] != heavy.text.str.split().str[0].mode()[0]).mean() > 0.5


def test_junk_detectors_match_the_truth_on_the_bundled_sample() -> None:
    """junk_flags' rates per extractor agree with the simulator's lesson truth.

    Tolerance (absolute, per extractor, on the sample's valid lessons, as in
    notebook 03): 0.02 for duplicate_in_run, whose only misses are two verdicts'
    lessons about one check that happen to quote the same figure; 0.005 for
    duplicate_in_verdict, ungrounded and no_evidence; 0.015 for restates_summary
    (the simulator writes no restatement; the detector takes the vague "Check
    links." for one). The DATASHEET gives the measured figures.
    """
    from truss_lab.extract._parser import parse_completion
    from truss_lab.score._junk import junk_flags

    journal = _jsonl(SAMPLE / "journal.jsonl")
    seq = {e["hash"]: e["seq"] for e in journal}
    rows = [(c["verdict_hash"], seq[c["verdict_hash"]], c["extractor"], le.lesson_index,
             le.text, list(le.evidence))
            for c in _jsonl(SAMPLE / "completions.jsonl")
            for le in parse_completion(c["text"]).lessons if le.valid]
    cand = pd.DataFrame(rows, columns=["verdict_hash", "verdict_seq", "run_id", "lesson_index",
                                       "text", "evidence"])
    verdicts = pd.DataFrame({"verdict_hash": [e["hash"] for e in journal],
                             "payload": [e["payload"] for e in journal]})
    flags = junk_flags(cand, verdicts)
    truth = pd.read_csv(SAMPLE / "lesson_truth.csv", keep_default_na=False).rename(
        columns={"extractor": "run_id"})
    t = cand.merge(truth, on=["verdict_hash", "run_id", "lesson_index"], how="left",
                   validate="1:1")
    # "Earlier" as junk_flags orders it; the truth's duplicates are lessons saying what
    # an earlier lesson (of the verdict, of the run) said: the same `meaning`.
    order = t.sort_values(["verdict_seq", "lesson_index"]).index
    true = pd.DataFrame({
        "duplicate_in_verdict": t.loc[order].duplicated(["run_id", "verdict_hash", "meaning"]),
        "duplicate_in_run": t.loc[order].duplicated(["run_id", "meaning"]),
    }).reindex(t.index)
    true["ungrounded"] = (t.ungrounded == 1) & (t.has_evidence == 1)
    true["no_evidence"] = t.has_evidence == 0
    true["restates_summary"] = False
    tol = {"duplicate_in_verdict": 0.005, "duplicate_in_run": 0.02, "ungrounded": 0.005,
           "no_evidence": 0.005, "restates_summary": 0.015}
    got = flags[list(tol)].groupby(t.run_id).mean()
    want = true[list(tol)].astype(float).groupby(t.run_id).mean()
    assert set(got.index) == set(DEFAULT_EXTRACTORS)
    for col, eps in tol.items():
        assert ((got[col] - want[col]).abs() <= eps).all(), (col, got[col], want[col])
    # The story notebook 03 tells: the overconfident extractor repeats itself most.
    assert got.loc["sim-overconfident-v1", "duplicate_in_run"] > 0.6
    assert got.loc["sim-good-v1", "duplicate_in_run"] < 0.35


# -- people's match labels and the true assignment (Formats §5) -------------------------------

def _csv(p: Path) -> pd.DataFrame:
    return pd.read_csv(p, keep_default_na=False, dtype={"reference_id": str})


def test_match_labels_sample_annotated_verdicts_and_disagree_as_stated(
        medium: tuple[Path, Any]) -> None:
    d, res = medium
    people, truth = _csv(d / "match_labels.csv"), _csv(d / "match_truth.csv")
    header = ["verdict_hash", "extractor", "lesson_index", "reference_id", "annotator"]
    assert list(people) == [*header, "inclusion_probability"] and list(truth) == header
    refs = _jsonl(d / "references.jsonl")
    ids: dict[str, set[str]] = {}
    for r in refs:
        ids.setdefault(r["verdict_hash"], set()).update(
            [r["reference_id"]] if r["reference_id"] != "none" else [])
    # The truth covers every lesson a reader sees on every annotated verdict, and only those.
    seen = _lessons(_jsonl(d / "completions.jsonl"))
    seen = seen[seen.verdict_hash.isin(ids)]
    key = ["verdict_hash", "extractor", "lesson_index"]
    assert sorted(map(tuple, truth[key].to_numpy().tolist())) == sorted(
        map(tuple, seen[key].to_numpy().tolist()))
    assert set(truth.annotator) == {"simulator-truth"}
    # The true answer is the lesson truth's reference (a lesson without text expresses none).
    lt = pd.read_csv(d / "lesson_truth.csv", keep_default_na=False)
    m = truth.merge(lt, on=key, suffixes=("", "_lt"), validate="1:1")
    want = m.reference_id_lt.where((m.reference_id_lt != "none") & (m.candidate == 1), "")
    assert (m.reference_id == want).all()
    assert all(r == "" or r in ids[h] for h, r in zip(truth.verdict_hash, truth.reference_id,
                                                       strict=True))
    # People: a random quarter of the annotated verdicts, every lesson of each, one person each.
    # A drawn verdict where nobody wrote a lesson has no row, so the rows carry the
    # sampling design: drawn over annotated verdicts, equal on every row.
    sampled = people.verdict_hash.unique()
    assert res.n_match_verdicts == round(0.25 * len(ids))
    assert 0.75 * res.n_match_verdicts < len(sampled) <= res.n_match_verdicts
    assert np.allclose(people.inclusion_probability, res.n_match_verdicts / len(ids))
    assert set(people.annotator) == {"person-1", "person-2"}
    assert people.groupby("verdict_hash").annotator.nunique().max() == 1
    t_s = truth[truth.verdict_hash.isin(sampled)]
    assert len(people) == len(t_s) == res.n_match_labels
    j = people.merge(t_s, on=key, suffixes=("", "_t"), validate="1:1")
    wrong = j.reference_id != j.reference_id_t
    assert int(wrong.sum()) == res.n_match_wrong
    assert all(r == "" or r in ids[h] for h, r in zip(j.verdict_hash, j.reference_id,
                                                       strict=True))
    # Stated: wrong with probability DEFAULT_MATCH_DISAGREEMENT where a wrong answer
    # exists (nearly every answer), so the count is binomial: within its 99.9 % range.
    lo, hi = binom.ppf([0.0005, 0.9995], len(j), DEFAULT_MATCH_DISAGREEMENT)
    assert lo <= int(wrong.sum()) <= hi, (int(wrong.sum()), len(j))


def test_the_double_matched_share_adds_second_answers_and_moves_nothing_else() -> None:
    """Its own random streams: the second person's rows are added, nothing else moves."""
    from truss_lab.simulate import simulate_matching

    key = ["verdict_hash", "extractor", "lesson_index"]
    one = simulate_matching(300, seed=5, match_verdicts=20)  # default: no second person
    two = simulate_matching(300, seed=5, match_verdicts=20, match_double_share=0.5)
    assert one.match_labels.groupby(key).size().max() == 1
    merged = two.match_labels.merge(one.match_labels, how="left", indicator=True)
    extra = merged[merged["_merge"] == "left_only"]
    assert len(two.match_labels) - len(extra) == len(one.match_labels)
    assert 0 < extra.verdict_hash.nunique() <= 10 and len(extra) > 0
    # Every second answer is on a lesson the first person answered, by the other person.
    first = one.match_labels.set_index(key)["annotator"]
    assert set(extra.set_index(key).index) <= set(first.index)
    assert (extra.set_index(key)["annotator"] != first.reindex(
        extra.set_index(key).index)).all()
    pd.testing.assert_frame_equal(one.match_truth, two.match_truth)
    pd.testing.assert_frame_equal(one.lessons, two.lessons)
    with pytest.raises(BadInputError, match="match_double_share"):
        simulate_matching(300, seed=5, match_double_share=1.5)


def test_match_knobs_and_the_in_memory_study(tmp_path: Path) -> None:
    from truss_lab.simulate import simulate_matching

    a = simulate_matching(300, seed=5, match_verdicts=20, match_disagreement=0.0)
    assert a.n_match_verdicts == 20 and a.match_labels.verdict_hash.nunique() <= 20
    assert np.allclose(a.match_labels.inclusion_probability, 20 / a.verdicts.annotated.sum())
    assert a.n_match_wrong == 0
    assert (a.match_labels.merge(a.match_truth, on=["verdict_hash", "extractor",
                                                    "lesson_index"], suffixes=("", "_t"))
            .pipe(lambda j: (j.reference_id == j.reference_id_t).all()))
    # The same seed writes the same data as files; a lesson's answer does not depend
    # on the share, only on whether its verdict was drawn.
    res = simulate(tmp_path, runs=300, seed=5, match_share=1.0, match_disagreement=0.3)
    b = simulate_matching(300, seed=5, match_share=1.0, match_disagreement=0.3)
    pd.testing.assert_frame_equal(_csv(res.match_labels), b.match_labels,
                                  check_dtype=False)
    pd.testing.assert_frame_equal(_csv(res.match_truth), b.match_truth, check_dtype=False)
    assert len(b.lessons) == len(b.match_truth) and b.verdicts.annotated.sum() > 50
    c = simulate_matching(300, seed=5, match_share=0.5, match_disagreement=0.3)
    key = ["verdict_hash", "extractor", "lesson_index"]
    both = c.match_labels.merge(b.match_labels, on=key, suffixes=("", "_b"))
    assert len(both) == len(c.match_labels) and (both.reference_id == both.reference_id_b).all()
    assert (b.match_labels.reference_id != b.match_truth.reference_id).mean() > 0.1
    assert len(simulate_matching(300, seed=5, match_share=0.0).match_labels) == 0
    for kw, field in (({"match_share": 1.5}, "match_share"),
                      ({"match_verdicts": 10_000}, "match_verdicts"),
                      ({"match_disagreement": -0.1}, "match_disagreement")):
        with pytest.raises(BadInputError, match=field):
            simulate(tmp_path / "bad", runs=50, seed=1, **kw)
    assert not (tmp_path / "bad").exists()


def test_the_slice_effect_moves_only_the_saliences_of_deployment_lessons(
        tmp_path: Path) -> None:
    """The bundled sample's planted slice effect (--slice-effect deployment): the first
    extractor's saliences on deployment verdicts are reversed, from a stream of their own;
    every other draw is what it is without the effect, and a bad domain writes nothing."""
    v = make_verdicts(7, 300)
    hashes = [f"h{i}" for i in range(300)]
    plain = EXTRACTOR_PROFILES["sim-good-v1"]
    good = dataclasses.replace(plain, reversed_domain="deployment")
    a, b = make_completions(7, good, v, hashes), make_completions(7, plain, v, hashes)
    for name in ("comp", "index", "kind", "p_useful", "useful", "candidate", "sal_defect",
                 "text_defect", "ref_rank", "paraphrase", "has_evidence"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert a.meaning == b.meaning
    deployment = v.domain[a.comp] == 4  # DOMAINS[4] is deployment
    assert deployment.any() and (~deployment).any()
    np.testing.assert_array_equal(a.salience[~deployment], b.salience[~deployment])
    # reversed there: the useful lessons now score below the others
    assert a.salience[deployment & a.useful].mean() < a.salience[deployment & ~a.useful].mean()
    assert b.salience[deployment & b.useful].mean() > b.salience[deployment & ~b.useful].mean()
    with pytest.raises(BadInputError, match="slice_effect"):
        simulate(tmp_path / "bad", runs=50, seed=1, slice_effect="nowhere")
    assert not (tmp_path / "bad").exists()
