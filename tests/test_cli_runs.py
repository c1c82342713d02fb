"""The command line a researcher meets in the first hour: runs named, tagged, deleted;
policy off refused; one way to name a run; validated options; help that points
somewhere real; read-only commands next to a writer."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest

import truss_lab as tl
from tests.builders.cli import invoke
from tests.builders.stores import copy_db
from truss_lab.faces.cli import cli


@pytest.fixture(scope="module")
def db(sample_full: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = copy_db(sample_full, tmp_path_factory.mktemp("cli") / "lab.duckdb")
    for args in (["--extractor", "replay:sim-good-v1", "--policy", "model-scored",
                  "--run-id", "good", "--name", "good at 0.70", "--tag", "a", "--tag", "b"],
                 ["--extractor", "replay:sim-overconfident-v1", "--policy", "model-scored",
                  "--run-id", "over"],
                 ["--extractor", "heuristic", "--policy", "on", "--dry-run",
                  "--run-id", "dry"]):
        r = invoke("extract", "--db", str(path), "--quiet", *args)
        assert r.exit_code == 0, r.output
    return path


def one_line_error(r: click.testing.Result, code: int = 2) -> str:
    assert r.exit_code == code, r.output
    assert r.output.startswith("error: ") and len(r.output.strip().splitlines()) == 1, r.output
    return r.output


def test_policy_off_is_refused_unless_allowed(db: Path) -> None:
    before = tl.Store(db, read_only=True)
    n = before.sql("SELECT count(*) FROM extraction_runs").fetchall()[0][0]
    before.close()
    out = one_line_error(invoke("extract", "--db", str(db), "--extractor", "heuristic"))
    assert "policy is off" in out and "--allow-off" in out
    with tl.Store(db, read_only=True) as s:
        assert s.sql("SELECT count(*) FROM extraction_runs").fetchall()[0][0] == n
    r = invoke("extract", "--db", str(db), "--extractor", "heuristic", "--allow-off",
               "--run-id", "off", "--json", "--quiet")
    assert r.exit_code == 0 and json.loads(r.stdout)["policy"] == "off"
    assert invoke("runs", "delete", "off", "--db", str(db)).exit_code == 0


def test_runs_show_names_and_tags(db: Path) -> None:
    rows = {r["run_id"]: r for r in json.loads(invoke("runs", "--db", str(db), "--json").stdout)}
    assert rows["good"]["name"] == "good at 0.70" and rows["good"]["tags"] == ["a", "b"]
    assert rows["over"]["name"] is None and rows["over"]["tags"] == []
    text = invoke("runs", "--db", str(db)).output
    assert "good at 0.70" in text and "a,b" in text


def test_delete_a_run_without_memory_and_refuse_one_with(db: Path) -> None:
    out = one_line_error(invoke("runs", "delete", "good", "--db", str(db)))
    assert "wrote governed records" in out and "memory_entries" in out
    r = invoke("extract", "--db", str(db), "--extractor", "heuristic", "--policy", "on",
               "--dry-run", "--run-id", "gone", "--quiet", "--verdicts", "seq <= 50")
    assert r.exit_code == 0
    r = invoke("runs", "delete", "gone", "--db", str(db), "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["deleted"]["extraction_runs"] == 1
    with tl.Store(db, read_only=True) as s:
        for t in ("extraction_runs", "candidates", "run_verdicts", "run_chunks"):
            assert s.sql(f"SELECT count(*) FROM {t} WHERE run_id = 'gone'").fetchall() == [(0,)]
    one_line_error(invoke("runs", "delete", "gone", "--db", str(db)))  # no such run now


def test_errors_lists_a_runs_parse_errors(db: Path) -> None:
    r = invoke("errors", "good", "--db", str(db), "--n-errors", "3")
    assert r.exit_code == 0
    assert r.output.startswith("run good: 32 errors (31 parse/not_json, 1 parse/no_lessons_key)")
    assert "... and 29 more" in r.output
    assert invoke("errors", "dry", "--db", str(db)).output == "run dry: no errors\n"
    one_line_error(invoke("errors", "nope", "--db", str(db)))


def test_a_run_is_named_the_same_way_everywhere(db: Path) -> None:
    base = ["--db", str(db), "--n-boot", "20", "--json"]
    positional = json.loads(invoke("sweep", "good", *base).stdout)
    flag = json.loads(invoke("sweep", "--run", "good", *base).stdout)
    assert positional == flag
    r = invoke("sweep", "good", "--run", "over", *base)
    assert r.exit_code == 2 and "two runs given" in r.output
    r = invoke("calibrate", "--db", str(db))
    assert r.exit_code == 2 and "missing the run" in r.output
    assert invoke("calibrate", "--run", "good", "--db", str(db)).exit_code == 0


def test_counts_are_integers_in_json(db: Path) -> None:
    out = json.loads(invoke("sweep", "good", "--db", str(db), "--n-boot", "20", "--json").stdout)
    for side in ("train", "test"):
        for k in ("tp", "fp", "fn", "kept"):
            assert type(out["choice"][side][k]) is int, (side, k)
    for row in out["sweep"]:
        assert all(type(row[k]) is int for k in ("tp", "fp", "fn", "kept"))


@pytest.mark.parametrize("value", ["1.5", "-0.1", "nan"])
def test_thresholds_are_checked(db: Path, value: str) -> None:
    out = one_line_error(invoke("compare", "good", "over", "--db", str(db), "--threshold", value))
    assert "threshold" in out and "[0, 1]" in out


def test_simulate_counts_verdicts(tmp_path: Path) -> None:
    r = invoke("simulate", "--out", str(tmp_path / "a"), "--n-verdicts", "30",
               "--random-state", "1")
    assert r.exit_code == 0, r.output
    for i, old in enumerate((["--runs", "30", "--seed", "1"], ["--verdicts", "30", "--seed", "1"])):
        r = invoke("simulate", "--out", str(tmp_path / f"b{i}"), *old)
        assert r.exit_code == 0, r.output  # the old names still work
        assert (tmp_path / "a" / "journal.jsonl").read_bytes() == \
            (tmp_path / f"b{i}" / "journal.jsonl").read_bytes()
    shown = invoke("simulate", "--help").output
    assert "--n-verdicts" in shown and "--runs" not in shown and "--seed" not in shown


def test_simulate_takes_the_people_knobs(tmp_path: Path) -> None:
    r = invoke("simulate", "--out", str(tmp_path / "c"), "--n-verdicts", "60",
               "--random-state", "1", "--match-share", "1", "--match-disagreement", "0")
    assert r.exit_code == 0, r.output
    people = (tmp_path / "c" / "match_labels.csv").read_text().splitlines()
    truth = (tmp_path / "c" / "match_truth.csv").read_text().splitlines()
    # Every annotated verdict matched, without error: the people's rows are the truth's.
    assert len(people) == len(truth) > 1
    assert [x.rsplit(",", 2)[0] for x in people[1:]] == [x.rsplit(",", 1)[0]
                                                          for x in truth[1:]]
    r = invoke("simulate", "--out", str(tmp_path / "d"), "--match-share", "1.5")
    assert r.exit_code == 2 and "--match-share" in r.output


def _all_commands(group: click.Group, prefix: tuple[str, ...] = ()):
    for name, cmd in group.commands.items():
        yield (*prefix, name), cmd
        if isinstance(cmd, click.Group):
            yield from _all_commands(cmd, (*prefix, name))


def test_every_help_points_at_the_readme_and_schema_not_missing_files() -> None:
    seeds = set()
    for path, cmd in [((), cli), *_all_commands(cli)]:
        text = invoke(*path, "--help").output
        assert "FORMATS" not in text, path
        assert "README.md" in text and "truss-lab schema NAME" in text, path
        for p in cmd.params:
            if isinstance(p, click.Option) and p.name == "random_state":
                seeds.add(p.help)
    assert len(seeds) >= 3  # written per command, not one copy-pasted sentence
    compare_seed = next(p.help for p in cli.commands["compare"].params
                        if p.name == "random_state")
    assert "split" not in compare_seed


def test_sample_copies_the_bundled_sample(tmp_path: Path) -> None:
    r = invoke("sample", "--out", str(tmp_path / "s"))
    assert r.exit_code == 0, r.output
    assert (tmp_path / "s" / "journal.jsonl").read_bytes() == \
        (tl.SAMPLE_DIR / "journal.jsonl").read_bytes()
    out = one_line_error(invoke("sample", "--out", str(tmp_path / "s")))
    assert "refusing to overwrite" in out


def test_verify_report_prints_one_readable_line(db: Path) -> None:
    with tl.Store(db, read_only=True) as s:
        assert str(tl.verify_chain(s)) == "ok: 1200 entries verified, head seq 1200"
    bad = tl.journal.VerifyReport(ok=False, entries_checked=6, first_bad_seq=7,
                                  first_bad_line=7, reason="bad_signature", message="x")
    assert str(bad) == "TAMPERED: seq 7 (line 7): bad_signature: x"
