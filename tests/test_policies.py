"""Invariants 6-8: typed policy targets, signed provenance, simple supersession chains."""

from __future__ import annotations

import pytest

from truss_lab.core import Policy, PolicyError, PolicyTarget, Trust
from truss_lab.govern import current_policy, policy_history, write_policy
from truss_lab.govern._policies import check_policy_chains, current_policies
from truss_lab.journal import verify_chain
from truss_lab.journal._table import get_entry


def _salience(t: float) -> Policy:
    return Policy(policy_id="extraction-threshold", target="salience",
                  settings={"extraction_min_salience": t})


def test_targets_are_exactly_the_six() -> None:
    assert [t.value for t in PolicyTarget] == [
        "routing", "persona_self", "tool_set", "verification", "salience", "goal_repinning"]


@pytest.mark.parametrize("bad", ["core_identity", "l0_identity", "operator_boundary",
                                 "operator_signed_boundaries", "", "SALIENCE", None, 3])
def test_non_targets_fail_clearly(bad) -> None:
    with pytest.raises(PolicyError, match=r"not tunable.*never policy targets"):
        Policy(policy_id="p", target=bad)


def test_write_points_at_a_signed_entry(store, key) -> None:
    rec = write_policy(store, _salience(0.72), key, evidence={"objective": "max_f1"})
    assert rec.trust is Trust.unverified and rec.version == 1
    entry = get_entry(store, rec.provenance.produced_by.seq, table="lab_journal")
    assert entry is not None and entry["hash"] == rec.provenance.produced_by.hash
    assert entry["kind"] == "policy_record"
    assert entry["payload"]["settings"] == {"extraction_min_salience": 0.72}
    assert entry["payload"]["evidence"] == {"objective": "max_f1"}
    assert rec.provenance.produced_by in rec.provenance.sources
    assert verify_chain(store).ok


def test_two_proposals_supersede(store, key) -> None:
    a = write_policy(store, _salience(0.72), key)
    b = write_policy(store, _salience(0.75), key)
    hist = policy_history(store, "extraction-threshold")
    assert list(hist["version"]) == [1, 2]
    assert hist["superseded_by"].iloc[0] == b.record_id and hist["superseded_by"].isna().iloc[1]
    assert b.supersedes == a.record_id
    assert current_policy(store, "extraction-threshold").record_id == b.record_id
    assert len(current_policies(store)) == 1
    report = verify_chain(store)
    assert report.ok and report.entries_checked == 2
    for rec in (a, b):
        assert get_entry(store, rec.provenance.produced_by.seq, table="lab_journal")["hash"] == \
            rec.provenance.produced_by.hash
    assert check_policy_chains(store).empty


def test_stale_supersede_is_a_fork_and_refused(store, key) -> None:
    a = write_policy(store, _salience(0.72), key)
    write_policy(store, _salience(0.75), key, supersedes=a.record_id)
    before = store.counts()
    with pytest.raises(PolicyError, match="fork"):
        write_policy(store, _salience(0.80), key, supersedes=a.record_id)
    assert store.counts() == before  # no journal entry, no record


def test_bad_settings_refused(store, key) -> None:
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        _salience(1.5)


@pytest.mark.parametrize("corruption", ["cycle", "fork", "two_heads", "bad_target", "dangling"])
def test_chain_checker_finds_corruption(store, key, corruption) -> None:
    a = write_policy(store, _salience(0.70), key)
    b = write_policy(store, _salience(0.71), key)
    c = write_policy(store, _salience(0.72), key)
    sql = {
        "cycle": ("UPDATE policy_records SET supersedes = ?, superseded_by = ? WHERE record_id = ?",
                  [c.record_id, b.record_id, a.record_id]),
        "fork": ("UPDATE policy_records SET supersedes = ? WHERE record_id = ?",
                 [a.record_id, c.record_id]),
        "two_heads": ("UPDATE policy_records SET superseded_by = NULL WHERE record_id = ?",
                      [a.record_id]),
        "bad_target": ("UPDATE policy_records SET target = 'core_identity' WHERE record_id = ?",
                       [b.record_id]),
        "dangling": ("UPDATE policy_records SET supersedes = 'policy-missing' WHERE record_id = ?",
                     [b.record_id]),
    }[corruption]
    store.sql(*sql)
    problems = check_policy_chains(store)
    assert not problems.empty
    text = " ".join(problems["problem"])
    expected = {"cycle": "cycle", "fork": "fork", "two_heads": "heads",
                "bad_target": "invalid target", "dangling": "missing"}[corruption]
    assert expected in text


def test_nothing_applies_a_policy() -> None:
    # Invariant 6: the package exposes no way to apply or promote.
    import truss_lab

    names = " ".join(dir(truss_lab)).lower()
    assert "apply_policy" not in names and "promote" not in names
