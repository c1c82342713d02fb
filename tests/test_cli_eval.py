"""``truss-lab sweep | compare | calibrate | propose`` (faces.cli.evaluate) on the sample."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pandas as pd
import pytest

from tests.builders.cli import invoke
from tests.builders.stores import SAMPLE, copy_db
from truss_lab.core._config import MemoryConfig
from truss_lab.evaluate._defaults import DEFAULT_N_BOOT
from truss_lab.extract._batch import run_extraction
from truss_lab.extract._extractor import Extractor
from truss_lab.faces._display import SweepDisplay
from truss_lab.faces._report import report_html
from truss_lab.faces.cli import cli as main_cli
from truss_lab.govern._policies import policy_history
from truss_lab.journal._ledger import verify_chain
from truss_lab.store._store import Store

GOOD, OVER = "sim-good-v1", "sim-overconfident-v1"
COMMANDS = ("sweep", "compare", "calibrate", "propose")


@pytest.fixture(scope="module")
def cli() -> click.Group:
    """A fresh group with the evaluation commands (and the lead's `keys` group)."""
    group = click.Group("truss-lab", help="test group")
    for name in ("sweep", "choose", "compare", "frontier", "usage", "calibrate", "propose",
                 "report", "keys"):
        group.add_command(main_cli.commands[name])
    return group


@pytest.fixture(scope="module")
def db(sample_labelled: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = copy_db(sample_labelled, tmp_path_factory.mktemp("eval") / "sample.duckdb")
    with Store(path) as s:
        for ext in (GOOD, OVER):
            run_extraction(s, Extractor.replay(s, ext),
                           MemoryConfig(lesson_extraction="model-scored"), progress=False,
                           write_memory=False, run_id=ext)
    return path


def test_every_command_has_help(cli):
    for name in COMMANDS:
        cmd = cli.commands[name]
        assert cmd.help and cmd.help.strip(), name
        for p in cmd.params:
            if isinstance(p, click.Option):
                assert p.help, f"{name} {p.opts}"
        res = invoke(name, "--help", cli=cli, catch_exceptions=False)
        assert res.exit_code == 0 and "Usage" in res.output


def test_sweep_text_csv_plot_json(cli, db, tmp_path):
    csv, png = tmp_path / "s.csv", tmp_path / "s.png"
    res = invoke("sweep", "--db", str(db), "--run", GOOD, "--csv", str(csv),
                 "--plot", str(png), "--n-boot", "200", cli=cli, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert "chosen threshold" in res.output and "held-out" in res.output
    assert "bootstrap interval of the choice" in res.output
    full = pd.read_csv(csv)
    assert {"threshold", "precision", "recall", "f1", "kept_per_verdict"} <= set(full.columns)
    assert full["threshold"].is_monotonic_decreasing
    # Every metric's interval at every threshold (issue 36 item 4), holding its value.
    for m in ("precision", "recall", "f1", "kept_per_verdict", "write_rate"):
        lo, hi = full[f"{m}_low"], full[f"{m}_high"]
        assert lo.notna().all() and ((lo <= full[m] + 1e-12) & (full[m] <= hi + 1e-12)).all()
    assert (full["precision_high"] - full["precision_low"]).max() > 0.05
    for m in ("precision", "recall", "f1"):  # the simultaneous band: never narrower
        on = full[f"{m}_band_low"].notna()  # its domain: enough labelled lessons
        assert on.sum() >= 10 and (on == full[f"{m}_band_high"].notna()).all()
        assert (full.loc[on, f"{m}_band_low"] <= full.loc[on, f"{m}_low"] + 1e-12).all()
        assert (full.loc[on, f"{m}_band_high"] >= full.loc[on, f"{m}_high"] - 1e-12).all()
    assert (full["f1_band_high"] - full["f1_band_low"]
            > full["f1_high"] - full["f1_low"] + 1e-6).any()
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert f"plot: wrote {png}" in res.output  # says where
    res = invoke("sweep", "--db", str(db), "--run", GOOD, "--json",
                 "--objective", "precision:0.8", "--n-boot", "100", cli=cli, catch_exceptions=False)
    out = json.loads(res.output)
    assert out["choice"]["objective"] == "max recall s.t. precision >= 0.8"
    assert out["choice"]["train"]["precision"] >= 0.8
    assert len(out["sweep"]) == 6 and out["choice"]["test_intervals"]["f1"]
    assert all(r["recall_low"] <= r["recall"] <= r["recall_high"]
               and "write_rate_high" in r for r in out["sweep"])


def test_sweep_with_a_labels_file(cli, db):
    res = invoke("sweep", "--db", str(db), "--run", GOOD, "--labels",
                 str(SAMPLE / "labels.csv"), "--n-boot", "50", "--json",
                 cli=cli, catch_exceptions=False)
    assert res.exit_code == 0
    assert json.loads(res.output)["run_id"] == GOOD


def test_compare(cli, db, tmp_path):
    png = tmp_path / "c.png"
    res = invoke("compare", GOOD, OVER, "--db", str(db), "--threshold", "0.8",
                 "--n-boot", "200", "--plot", str(png), cli=cli, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert "common verdicts" in res.output and "McNemar" in res.output
    assert png.exists() and f"plot: wrote {png}" in res.output
    out = json.loads(invoke("compare", GOOD, OVER, "--db", str(db), "--json",
                            "--n-boot", "100", cli=cli, catch_exceptions=False).output)
    assert out["names"] == [GOOD, OVER] and out["only_in_a"] == out["only_in_b"] == []
    assert out["table"][0]["threshold_a"] == 0.7


@pytest.mark.parametrize("method", ["isotonic", "platt", "none"])
def test_calibrate(cli, db, tmp_path, method):
    png = tmp_path / "cal.png"
    res = invoke("calibrate", OVER, "--db", str(db), "--method", method,
                 "--plot", str(png), cli=cli, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert "ECE" in res.output and png.exists() and f"plot: wrote {png}" in res.output
    out = json.loads(invoke("calibrate", OVER, "--db", str(db), "--method", method,
                            "--json", cli=cli, catch_exceptions=False).output)
    rows = [r["scores"] for r in out["summary"]]
    assert rows == (["before"] if method == "none" else ["before", "after"])


def test_propose_twice(cli, db, tmp_path):
    work = tmp_path / "w.duckdb"
    copy_db(db, work)
    key = tmp_path / "op.key"
    res = invoke("keys", "generate", "--key-id", "lab-op", "--out", str(key),
                 cli=cli, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    res = invoke("propose", "--db", str(work), "--run", GOOD, "--key", str(key),
                 "--n-boot", "100", cli=cli, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert "extraction_min_salience" in res.output and "not applied" in res.output
    res = invoke("propose", "--db", str(work), "--run", OVER, "--key", str(key),
                 "--objective", "fbeta:0.5", "--n-boot", "100", "--json",
                 cli=cli, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    rec = json.loads(res.output)
    assert rec["trust"] == "unverified" and rec["policy"]["target"] == "salience"
    with Store(work, read_only=True) as s:
        hist = policy_history(s, "extraction_min_salience")
        assert len(hist) == 2 and rec["supersedes"] == hist["record_id"].iloc[0]
        assert verify_chain(s).ok


@pytest.mark.parametrize(
    "args",
    [
        ["sweep", "--run", "no-such-run"],
        ["compare", GOOD, "no-such-run"],
        ["calibrate", "no-such-run"],
        ["sweep", "--run", GOOD, "--objective", "magic"],
        ["propose", "--run", "no-such-run", "--key", "/nonexistent.key"],
    ],
)
def test_user_errors_are_one_line_exit_2(cli, db, args):
    res = invoke(*args, "--db", str(db), cli=cli)
    assert res.exit_code == 2, res.output
    err = res.stderr.strip()
    assert err.startswith("error:") and "\n" not in err
    assert "Traceback" not in res.output


def test_missing_database_is_a_user_error(cli, tmp_path):
    res = invoke("sweep", "--db", str(tmp_path / "x.duckdb"), "--run", GOOD, cli=cli)
    assert res.exit_code == 2 and "no such database" in res.stderr
    assert not (tmp_path / "x.duckdb").exists()


def test_one_replicate_count_default_in_every_face():
    """Issue 36 item 7: the report and the displays bootstrap as many replicates as the
    CLI by default, so one run and seed show one interval everywhere (the labelling
    queue's choice interval is the one exception, said in its help)."""
    import inspect

    defaults = {}
    for name, cmd in main_cli.commands.items():
        for sub in getattr(cmd, "commands", {"": cmd}).values():
            for p in sub.params:
                if "--n-boot" in getattr(p, "opts", ()):
                    defaults[f"{name} {sub.name}"] = p.default
    assert len(defaults) >= 8
    assert {k: v for k, v in defaults.items() if v != DEFAULT_N_BOOT} == {
        k: 200 for k in defaults if k.startswith("queue")}
    for fn in (report_html, SweepDisplay.from_run):  # write_report passes to report_html
        assert inspect.signature(fn).parameters["n_boot"].default == DEFAULT_N_BOOT
