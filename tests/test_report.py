"""The standalone HTML report: self-contained, escaped, every section present."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.builders.report import HOSTILE, hostile_sample
from truss_lab.core._errors import BadInputError
from truss_lab.faces import write_report
from truss_lab.faces._cli import cli
from truss_lab.store._store import Store


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, list[str], str, Path]:
    tmp = tmp_path_factory.mktemp("report")
    store, run_ids, target = hostile_sample(tmp)
    path = write_report(store, run_ids, tmp / "report.html", n_boot=50, max_verdicts=60)
    return store, run_ids, target, path


def test_report_is_one_self_contained_file(sample) -> None:
    _, run_ids, _, path = sample
    text = path.read_text(encoding="utf-8")
    # nothing to fetch: no external src/href, a CSP that forbids requests
    assert not re.search(r'(src|href)="(?!data:|#)', text)
    assert "default-src 'none'" in text
    assert text.count('src="data:image/png;base64,') >= 5  # sweeps, PR, calibration, comparison
    assert len(text) < 2_500_000
    for anchor in ("runs", "sweep", "comparison", "junk", "audit", "verdicts"):
        assert f'<section id="{anchor}">' in text
    for rid in run_ids:
        assert rid in text
    assert "all checks passed" in text
    assert text.count('<details class="verdict"') == 60
    assert "Showing 60 of 1200 verdicts" in text


def test_report_escapes_every_lesson(sample) -> None:
    _, _, target, path = sample
    text = path.read_text(encoding="utf-8")
    assert HOSTILE not in text  # never raw
    assert "Escape me &lt;script&gt;window.__pwned = 1&lt;/script&gt; &amp; keep the " \
           "&lt;b&gt;text&lt;/b&gt;" in text
    assert target in text  # the hostile verdict is in the list (half the list: the first by seq)
    # the only script element is the report's own filter
    assert text.count("<script>") == 1


def test_report_cli_and_errors(sample, tmp_path: Path) -> None:
    store, run_ids, _, _ = sample
    db = store.path
    store.close()
    out = tmp_path / "r.html"
    res = CliRunner().invoke(cli, ["report", run_ids[0], "--db", db, "--out", str(out),
                                   "--n-boot", "20", "--max-verdicts", "5"])
    assert res.exit_code == 0, res.output
    assert "report of 1 run(s)" in res.output
    text = out.read_text(encoding="utf-8")
    assert '<section id="comparison">' not in text  # one run: nothing to compare
    assert text.count('<details class="verdict"') == 5
    res = CliRunner().invoke(cli, ["report", "no-such-run", "--db", db, "--out", str(out)])
    assert res.exit_code == 2 and res.output.startswith("error:")
    with Store(db, read_only=True) as ro, pytest.raises(BadInputError):
        write_report(ro, [], tmp_path / "x.html")
