"""Per-slice error analysis (issue 40): ``slice_run``, its store reads, its faces, and the
bundled sample's planted slice effect (sim-good-v1 ranks its lessons upside down on
deployment verdicts)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import f1_score, precision_score, recall_score
from statsmodels.stats.multitest import multipletests

from tests.builders.cli import invoke
from tests.builders.stores import copy_db
from truss_lab.core._errors import BadInputError
from truss_lab.evaluate._slices import (
    ALL,
    bh_qvalues,
    permutation_pvalues,
    slice_run,
)
from truss_lab.evaluate._truth import Truth
from truss_lab.faces._display import SliceDisplay, format_slices
from truss_lab.faces._notebook import sample_run_id
from truss_lab.faces._report import _slices_section
from truss_lab.journal._table import verdict_payloads
from truss_lab.store._slices import parse_predicate, predicate_verdicts, verdict_slices
from truss_lab.store._store import Store

GOOD = sample_run_id("sim-good-v1")
FAST = {"n_boot": 100, "n_perm": 400}


@pytest.fixture(scope="module")
def lab(sample_good_run: Path, tmp_path_factory: pytest.TempPathFactory):
    path = copy_db(sample_good_run, tmp_path_factory.mktemp("slices") / "lab.duckdb")
    with Store(path, read_only=True) as store:
        yield store


@pytest.fixture(scope="module")
def by_tag(lab: Store):
    return slice_run(lab, GOOD, by="tag", **FAST)


# -- the statistics ------------------------------------------------------------------------


def test_bh_qvalues_are_statsmodels_fdr_bh() -> None:
    rng = np.random.default_rng(4)
    for n in (1, 2, 7, 40):
        p = np.concatenate([rng.random(n) ** 3, [0.001, 0.001, 1.0]])  # ties and a 1
        want = multipletests(p, method="fdr_bh")[1]
        np.testing.assert_allclose(bh_qvalues(p), want, rtol=0, atol=1e-12)
    # untested slices (NaN) stay NaN and do not count in m
    p = np.array([0.01, np.nan, 0.04, 0.03])
    q = bh_qvalues(p)
    assert np.isnan(q[1])
    np.testing.assert_allclose(q[[0, 2, 3]], multipletests(p[[0, 2, 3]], method="fdr_bh")[1])


def test_permutation_pvalue_bounds() -> None:
    # every verdict alike: every re-draw is as far as the observed slice, p = 1
    counts = np.tile([2.0, 1.0, 2.0, 1.0], (60, 1))
    mask = np.zeros(60, dtype=bool)
    mask[:20] = True
    d, p = permutation_pvalues(counts, [mask], "f1", n_perm=99)
    assert d[0] == 0 and p[0] == 1.0
    # the slice holds every useful lesson: nothing re-drawn is as far, p = 1 / (n + 1)
    counts = np.tile([2.0, 0.0, 2.0, 0.0], (60, 1))
    counts[:20] = [2.0, 2.0, 2.0, 2.0]
    d, p = permutation_pvalues(counts, [mask], "precision", n_perm=99)
    assert d[0] == pytest.approx(1.0) and p[0] == pytest.approx(1 / 100)


def test_null_pvalues_are_not_small() -> None:
    """Under the null (membership says nothing) the permutation p-values are uniform:
    at most about 5 % of them below 0.05."""
    rng = np.random.default_rng(11)
    ps = []
    for _ in range(60):
        n_pos = rng.poisson(2, 200).astype(float)
        kept = n_pos + rng.poisson(1, 200)
        tp = np.minimum(n_pos, rng.binomial(kept.astype(int), 0.6))
        counts = np.stack([kept, tp, kept, n_pos], axis=1)
        mask = rng.random(200) < 0.2
        ps.append(permutation_pvalues(counts, [mask], "f1", n_perm=199,
                                      random_state=int(rng.integers(1 << 30)))[1][0])
    assert np.mean(np.array(ps) < 0.05) <= 0.12


# -- the store: slices and predicates ------------------------------------------------------


def test_slicings_partition_or_cover(lab: Store) -> None:
    hashes = verdict_payloads(lab)["verdict_hash"].tolist()
    outcome = verdict_slices(lab, hashes, "outcome")
    assert len(outcome) == 1200 and sorted(outcome["slice"].unique()) == [
        "fail", "partial", "pass"]
    assert (outcome["slice"] == "fail").sum() == 276
    tags = verdict_slices(lab, hashes, "tag")
    payloads = [json.loads(p) for p in verdict_payloads(lab)["payload"]]
    assert len(tags) == sum(len(set(p["tags"])) for p in payloads)
    assert (tags["slice"] == "deployment").sum() == 175
    missing = verdict_slices(lab, hashes, "no_such.field")
    assert set(missing["slice"]) == {"(missing)"}


def test_predicates_are_bound_never_pasted(lab: Store) -> None:
    hashes = verdict_payloads(lab)["verdict_hash"].tolist()
    fail = predicate_verdicts(lab, hashes, parse_predicate("verdict = fail"))
    assert len(fail) == 276
    both = predicate_verdicts(lab, hashes, parse_predicate("verdict = fail and tag = retry"))
    assert 0 < len(both) < len(fail)
    # a quoted value is one bound string: an injection attempt matches nothing
    assert predicate_verdicts(lab, hashes, parse_predicate(
        "goal = \"x' OR '1'='1\"")) == []
    for bad in ("verdict", "verdict = fail; DROP TABLE journal", "verdict == fail",
                "1 = 1", "tag < deployment", "verdict = fail or verdict = pass"):
        with pytest.raises(BadInputError, match="where"):
            parse_predicate(bad)
    assert len(verdict_payloads(lab)) == 1200  # the journal is untouched


# -- slice_run on the bundled sample ---------------------------------------------------------


def test_the_planted_slice_is_found(by_tag) -> None:
    """The sample's planted effect (sim-good-v1 upside down on deployment verdicts) is a
    discovery at q < 0.05, with its own threshold far below the whole run's."""
    assert "deployment" in by_tag.discoveries
    row = by_tag.slices.set_index("slice").loc["deployment"]
    whole = by_tag.table.iloc[0]
    assert row["q_value"] < 0.05 and row["difference"] < -0.2
    assert row["f1_high"] < whole["f1_low"]
    assert row["own_threshold_high"] < whole["own_threshold"]
    # the other domains are not discoveries: the effect is where it was planted
    for domain in ("scheduler", "api-integration", "data-pipeline", "refactor", "docs",
                   "dependency-upgrade"):
        assert domain not in by_tag.discoveries


def test_slice_metrics_match_sklearn(lab: Store, by_tag) -> None:
    t = Truth.resolve(lab, "labels", [GOOD])
    c = t.judged(GOOD).candidates
    tags = verdict_slices(lab, list(c["verdict_hash"].unique()), "tag")
    for name in ("deployment", "retry", ALL):
        rows = c if name == ALL else c[c["verdict_hash"].isin(
            tags.loc[tags["slice"] == name, "verdict_hash"])]
        rows = rows[rows["judged"].to_numpy(dtype=bool)]
        y, pred = rows["y"].to_numpy(), (rows["s"].to_numpy() >= 0.7).astype(int)
        got = by_tag.table.set_index("slice").loc[name]
        assert got["precision"] == pytest.approx(precision_score(y, pred))
        assert got["recall"] == pytest.approx(recall_score(y, pred))
        assert got["f1"] == pytest.approx(f1_score(y, pred))
        for m in ("precision", "recall", "f1"):
            assert got[f"{m}_low"] <= got[m] <= got[f"{m}_high"]


def test_small_slices_are_listed_not_tested(lab: Store) -> None:
    res = slice_run(lab, GOOD, by="contract", **FAST)
    s = res.slices
    assert len(s) == 941 and not s["tested"].any()
    assert s["why"].str.contains("fewer than 30").all()
    assert s["q_value"].isna().all() and s["own_threshold"].isna().all()
    assert res.discoveries == []


def test_bad_arguments_name_the_field(lab: Store) -> None:
    for kw, field in (({"by": "no good"}, "by"), ({"test": "auc"}, "test"),
                      ({"where": "verdict"}, "where"), ({"n_perm": 0}, "n_perm")):
        with pytest.raises(BadInputError, match=field):
            slice_run(lab, GOOD, **kw)


def test_a_corrected_truth_gives_every_slice_its_correction(lab: Store) -> None:
    res = slice_run(lab, GOOD, by="outcome", truth=Truth.references(correct="ppi"),
                    n_boot=50, n_perm=200)
    assert res.truth == "references" and res.correction.startswith("ppi")
    tested = res.slices[res.slices["tested"]]
    assert len(tested) and tested["correction"].str.startswith("ppi").all()


# -- the faces --------------------------------------------------------------------------------


def test_display_draws_slices_as_rows(by_tag) -> None:
    d = SliceDisplay(by_tag, max_rows=8).plot()
    assert set(d.axes_) == {"precision", "recall", "f1", "own_threshold"}
    assert "deployment" in d.discoveries_
    labels = [t.get_text() for t in d.axes_["precision"].get_yticklabels()]
    assert labels[0] == ALL and "* deployment" in labels  # the whole run on top
    # Each interval is drawn from its low to its high end, apart from its point: a
    # slice's own threshold can lie outside the interval of the replicates' choices.
    rows = d.rows()
    spans = {tuple(np.round(line.get_xdata(), 9)) for line in d.axes_["own_threshold"].lines
             if len(line.get_xdata()) == 2}
    drawn = rows[np.isfinite(rows["own_threshold_low"])]
    assert len(drawn) and all((round(lo, 9), round(hi, 9)) in spans for lo, hi in
                              zip(drawn["own_threshold_low"], drawn["own_threshold_high"],
                                  strict=True))
    text = repr(d)
    assert text.splitlines()[0].startswith(f"run {GOOD}: 39 slices by tag")
    assert any(line.startswith("* deployment") for line in format_slices(by_tag))


def test_report_section_marks_discoveries(lab: Store) -> None:
    html = _slices_section(lab, [GOOD], Truth.parse("labels"), by="tag", n_boot=50,
                           random_state=0)
    assert "* deployment" in html and 'class="mark"' in html and "<img" in html


def test_cli_slices(sample_good_run: Path, tmp_path: Path) -> None:
    db = copy_db(sample_good_run, tmp_path / "lab.duckdb")
    csv = tmp_path / "slices.csv"
    r = invoke("slices", GOOD, "--db", db, "--n-boot", "100", "--permutations", "400",
               "--csv", csv, "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert "deployment" in out["discoveries"] and out["by"] == "tag"
    assert len(out["slices"]) == 40 and csv.read_text().count("\n") == 41
    r = invoke("slices", GOOD, "--db", db, "--where", "tag = deployment", "--n-boot", "100",
               "--permutations", "400")
    assert r.exit_code == 0, r.output
    assert "* tag = deployment" in r.output and "discoveries: tag = deployment" in r.output
    r = invoke("slices", GOOD, "--db", db, "--where", "verdict = fail; DROP TABLE journal")
    assert r.exit_code == 2 and "where" in r.output

