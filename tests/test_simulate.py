"""The seeded simulator: determinism, format conformance, defect rates, label noise."""

from __future__ import annotations

import base64
import csv
import hashlib
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

from tests.builders.stores import SAMPLE
from truss_lab.core._canonical import canonical
from truss_lab.core._errors import BadInputError
from truss_lab.journal._crypto import GENESIS_HASH, entry_hash
from truss_lab.simulate._completions import (
    DEFAULT_EXTRACTORS,
    EXTRACTOR_PROFILES,
    ExtractorProfile,
)
from truss_lab.simulate._simulate import FILES, simulate

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


@settings(max_examples=12, deadline=None,
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
    assert len(comps) == 2 * runs and all(set(c) == COMPLETION_FIELDS for c in comps)
    les = _lessons(comps)
    keys = set(zip(les.verdict_hash, les.extractor, les.lesson_index, strict=True))
    lab = pd.read_csv(d / "labels.csv")
    assert len(lab) == res.n_labels
    assert set(zip(lab.verdict_hash, lab.extractor, lab.lesson_index, strict=True)) <= keys


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
    # ann-a labels every non-empty-text lesson of a parseable completion.
    lab = pd.read_csv(d / "labels.csv")
    a = lab[lab.annotator == "ann-a"]
    labelled_texts = les.text.apply(lambda t: isinstance(t, str) and bool(t.strip())).sum()
    assert len(a) == labelled_texts == res.n_candidates
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
    assert size < 3.2e6
