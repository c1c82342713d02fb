"""The governed threshold decision (truss_lab.govern._decision): signed evidence + policy record."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.builders.profiles import examples
from tests.builders.stores import SAMPLE, copy_db
from truss_lab.core._canonical import canonical, json_safe, loads_strict
from truss_lab.core._config import MemoryConfig
from truss_lab.core._errors import BadInputError, PolicyError
from truss_lab.core._models import PolicyTarget, Trust
from truss_lab.evaluate._runs import choose_run_threshold
from truss_lab.evaluate._truth import scored_candidates
from truss_lab.extract._batch import run_extraction
from truss_lab.extract._extractor import Extractor
from truss_lab.govern._decision import EVIDENCE_KIND, labels_hash, propose_threshold
from truss_lab.govern._policies import check_policy_chains, current_policy, policy_history
from truss_lab.journal._crypto import SigningKey
from truss_lab.journal._ledger import verify_chain
from truss_lab.journal._table import get_entry
from truss_lab.store._store import Store

GOOD, OVER = "sim-good-v1", "sim-overconfident-v1"
KEY = SigningKey.from_seed("lab-operator", bytes(range(32)))  # public test material


@pytest.fixture(scope="module")
def dec(sample_labelled: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """The sample with labels and dry runs of both extractors (proposals accumulate here)."""
    s = Store(copy_db(sample_labelled, tmp_path_factory.mktemp("dec") / "dec.duckdb"))
    cfg = MemoryConfig(lesson_extraction="on")
    for ext in (GOOD, OVER):
        run_extraction(s, Extractor.replay(s, ext), cfg, progress=False, write_memory=False,
                       run_id=ext)
    yield s
    s.close()


@pytest.fixture(scope="module")
def two_proposals(dec: Store) -> tuple:
    first = propose_threshold(dec, GOOD, KEY, objective="f1", n_boot=200)
    choice = choose_run_threshold(dec, OVER, objective="precision:0.5", test_size=0.25, cv=None,
                                  random_state=5, n_boot=200)
    second = propose_threshold(dec, choice, KEY, run_ids=[OVER], objective="precision:0.5")
    return first, second, choice


def test_second_proposal_supersedes_the_first(dec, two_proposals):
    first, second, choice = two_proposals
    hist = policy_history(dec, "extraction_min_salience")
    assert hist["record_id"].tolist() == [first.record_id, second.record_id]
    assert second.supersedes == first.record_id and second.version == first.version + 1
    assert hist.set_index("record_id").loc[first.record_id, "superseded_by"] == second.record_id
    head = current_policy(dec, "extraction_min_salience")
    assert head is not None and head.record_id == second.record_id
    for rec in (first, second):
        assert rec.policy.target == PolicyTarget.salience
        assert rec.trust == Trust.unverified
    assert second.policy.settings == {"extraction_min_salience": choice.threshold}
    assert check_policy_chains(dec).empty


def test_provenance_entries_exist_and_verify(dec, two_proposals):
    for rec in two_proposals[:2]:
        ref = rec.provenance.produced_by
        entry = get_entry(dec, ref.seq, table="lab_journal")  # the lab's own chain
        assert entry is not None and entry["hash"] == ref.hash
        assert entry["kind"] == "policy_record"
        assert entry["key_id"] == KEY.key_id
        assert ref in rec.provenance.sources
        stored = dec.sql("SELECT produced_by_seq, produced_by_hash FROM policy_records "
                         "WHERE record_id = ?", [rec.record_id]).fetchall()
        assert stored == [(ref.seq, ref.hash)]
    report = verify_chain(dec)
    assert report.ok, report
    # The verdict journal is untouched: its head is still upstream's last verdict.
    (n_verdicts,) = dec.sql("SELECT count(*) FROM journal").fetchall()[0]
    assert report.head_seq == n_verdicts
    assert report.entries_checked == n_verdicts + 2
    assert [r.provenance.produced_by.seq for r in two_proposals[:2]] == [1, 2]


def test_evidence_holds_the_decision(dec, two_proposals):
    _, second, choice = two_proposals
    payload = get_entry(dec, second.provenance.produced_by.seq, table="lab_journal")["payload"]
    assert payload["settings"] == {"extraction_min_salience": choice.threshold}
    ev = payload["evidence"]
    assert ev["kind"] == EVIDENCE_KIND
    (ds_hash,) = dec.sql("SELECT dataset_hash FROM extraction_runs WHERE run_id = ?",
                         [OVER]).fetchall()[0]
    assert ev["dataset_hash"] == ds_hash
    assert ev["run_ids"] == [OVER] and ev["runs"][0]["extractor_id"] == OVER
    assert ev["objective"]["kind"] == "precision_floor"
    assert ev["objective"]["min_precision"] == 0.5
    assert ev["threshold"] == choice.threshold
    lo, hi = ev["threshold_interval"]
    assert lo <= hi
    sp = ev["split"]
    assert (sp["test_size"], sp["random_state"]) == (0.25, 5)
    assert sp["n_train_verdicts"] == choice.split["n_train_verdicts"] > 0
    assert sp["n_test_verdicts"] == choice.split["n_test_verdicts"] > 0
    for side in ("train", "test"):
        assert ev[side]["threshold"] == pytest.approx(choice.threshold)
        assert ev[side]["precision"] == pytest.approx(getattr(choice, side)["precision"],
                                                      abs=1e-6)
    for side in ("train_intervals", "test_intervals"):
        for m in ("precision", "recall", "f1", "kept_per_verdict"):
            low, high = ev[side][m]
            assert low <= high
    assert ev["test_intervals"]["f1"][0] <= ev["test"]["f1"] <= ev["test_intervals"]["f1"][1]
    assert ev["bootstrap"]["n_boot"] == 200
    # labels_hash: sha256 over the sorted Formats §3 rows of the labels actually used.
    raw = pd.read_csv(SAMPLE / "labels.csv", dtype=str, keep_default_na=False)
    used = scored_candidates(dec, OVER)
    keys = set(zip(used["verdict_hash"], used["extractor_id"], used["lesson_index"].astype(str),
                   strict=True))
    rows = sorted(",".join(r) for r in raw.itertuples(index=False) if tuple(r[:3]) in keys)
    assert ev["labels_hash"] == hashlib.sha256("\n".join(rows).encode()).hexdigest()
    assert ev["n_label_rows"] == len(rows)
    # The whole payload is canonical JSON without NaN and reads back strictly.
    assert loads_strict(canonical(payload)) == payload


def test_the_split_never_puts_a_verdict_on_both_sides(dec):
    from truss_lab.evaluate._choose import split_by_verdict

    g = scored_candidates(dec, GOOD)["verdict_hash"].to_numpy()
    for seed in range(5):
        tr, te = split_by_verdict(g, test_size=0.3, random_state=seed)
        assert not set(g[tr]) & set(g[te])
        assert len(tr) + len(te) == len(g)


def test_labels_hash_tracks_the_labels_not_their_order(dec):
    raw = pd.read_csv(SAMPLE / "labels.csv", dtype={"annotator": "string"})
    h0, n0 = labels_hash(dec, [GOOD])
    shuffled = raw.sample(frac=1.0, random_state=1)
    assert labels_hash(dec, [GOOD], labels=shuffled) == (h0, n0)
    flipped = raw.copy()
    i = int(np.flatnonzero(raw["extractor"] == GOOD)[0])
    flipped.loc[i, "useful"] = 1 - flipped.loc[i, "useful"]
    assert labels_hash(dec, [GOOD], labels=flipped)[0] != h0


def test_refusals_write_nothing(dec, two_proposals):
    before = dec.sql("SELECT count(*) FROM journal").fetchall()
    # A budget of zero lessons per verdict is infeasible: NaN threshold, nothing proposed.
    with pytest.warns(UserWarning), pytest.raises(PolicyError, match="nothing is proposed"):
        propose_threshold(dec, GOOD, KEY, objective="budget:0", n_boot=50)
    choice = two_proposals[2]
    with pytest.raises(BadInputError, match="run_ids"):
        propose_threshold(dec, choice, KEY)
    with pytest.raises(BadInputError, match="not the one the choice used"):
        propose_threshold(dec, choice, KEY, run_ids=[OVER], objective="f1")
    with pytest.raises(BadInputError, match="no extraction run"):
        propose_threshold(dec, "nope", KEY)
    assert dec.sql("SELECT count(*) FROM journal").fetchall() == before


finite = st.floats(allow_nan=False, allow_infinity=False, width=64)


@given(st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats()
    | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner,
                                                                 max_size=4),
    max_leaves=12,
))
@settings(max_examples=examples(200), deadline=None)
def test_json_safe_output_is_canonical_json(value):
    safe = json_safe(value)
    assert loads_strict(canonical(safe)) == safe


@given(finite)
def test_json_safe_rounds_floats(x):
    y = json_safe(np.float64(x))
    if y is None:  # only floats JCS would write as integers beyond 2^53
        assert 2**53 - 1 < abs(float(f"{x:.6g}")) < 1e21
        return
    assert isinstance(y, float) and math.isfinite(y)
    assert y == pytest.approx(x, rel=1e-5, abs=0)
    assert json_safe(float("nan")) is None and json_safe([np.inf]) == [None]
