"""Issue 27 item 4 against a real third-party server: a small grid through the LiteLLM
proxy (conftest.py, mock responses on 127.0.0.1) beside the model-free baseline, run
again without a call, and the cost-quality frontier over it. Run by
``make test-realserver``, never by ``make test``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import truss_lab as tl
from tests.builders.cli import invoke, invoke_json
from tests.realserver.conftest import LiteLLMProxy

pytestmark = pytest.mark.realserver

VERDICTS = "seq <= 20"
PRICES = '[models."lesson-mock"]\ninput_per_million = 0.50\noutput_per_million = 1.50\n'


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "lab.duckdb"
    tl.load_sample(path).close()
    return path


def test_a_grid_through_the_proxy_and_its_frontier(proxy: LiteLLMProxy, db: Path,
                                                    tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", proxy.master_key)
    grid = tmp_path / "grid.toml"
    grid.write_text(f'''name = "proxy"
verdicts = "{VERDICTS}"
base_url = "{proxy.base_url}"
[[axes]]
extractor = "heuristic"
[[axes]]
extractor = "openai"
model = "lesson-mock"
temperature = [0.0, 0.7]
''')
    runs = invoke_json("grid", grid, "--db", db, "--quiet")
    ids = [r["run_id"] for r in runs]
    assert ids == ["proxy-heuristic", "proxy-openai-lesson-mock-temperature=0.0",
                   "proxy-openai-lesson-mock-temperature=0.7"]
    assert [(r["action"], r["status"], r["n_verdicts"], r["n_errors"]) for r in runs] == \
        [("started", "finished", 20, 0)] * 3
    with tl.Store(db, read_only=True) as s:
        calls = s.sql("SELECT run_id, count(*), sum(prompt_tokens), sum(completion_tokens) "
                      "FROM completions WHERE run_id LIKE 'proxy-%' GROUP BY 1 "
                      "ORDER BY 1").fetchall()
    assert [(c[0], c[1]) for c in calls] == [(ids[1], 20), (ids[2], 20)]
    assert all(c[2] > 0 and c[3] > 0 for c in calls)  # LiteLLM counts tokens itself
    again = invoke_json("grid", grid, "--db", db, "--quiet")
    assert [r["action"] for r in again] == ["skipped"] * 3
    with tl.Store(db, read_only=True) as s:  # no new run, no new call
        assert s.sql("SELECT count(*) FROM extraction_runs").fetchall() == [(3,)]
        assert s.sql("SELECT count(*) FROM completions WHERE run_id LIKE 'proxy-%'"
                     ).fetchall() == [(40,)]
        lat = s.sql("SELECT latency_ms FROM completions WHERE run_id = ?", [ids[1]]).df()
    prices = tmp_path / "prices.toml"
    prices.write_text(PRICES)
    png = tmp_path / "frontier.png"
    out = invoke_json("frontier", "--tag", "grid:proxy", "--db", db, "--prices", prices,
                      "--truth", "references", "--n-boot", "200", "--plot", png)
    rows = {r["run_id"]: r for r in out["runs"]}
    assert list(rows) == ids and png.stat().st_size > 0
    for run_id, _, p_tok, c_tok in calls:
        assert rows[run_id]["cost_per_verdict"] == pytest.approx(
            (p_tok * 0.50 + c_tok * 1.50) / 1e6 / 20, rel=1e-5)
    assert rows[ids[1]]["latency_ms_p50"] == pytest.approx(  # JSON keeps 6 digits
        np.percentile(lat["latency_ms"], 50), rel=1e-5)
    assert rows[ids[1]]["latency_ms_p95"] == pytest.approx(
        np.percentile(lat["latency_ms"], 95), rel=1e-5)
    heur = rows["proxy-heuristic"]
    assert heur["cost_per_verdict"] == 0.0 and heur["latency_ms_p50"] is None
    # The proxy's one canned lesson expresses no reference of these verdicts: the free
    # heuristic is cheaper and its F1 is above the mock's whole interval.
    for rid in ids[1:]:
        assert rows[rid]["f1_high"] < heur["f1"]
        assert rows[rid]["dominated"] and rows[rid]["dominated_by"] == "proxy-heuristic"
    assert not heur["dominated"]
    text = invoke("frontier", "--tag", "grid:proxy", "--db", db, "--prices", prices,
                  "--truth", "references", "--n-boot", "200")
    assert text.exit_code == 0, text.output
    print(text.output)  # the table, for the record (pytest -s)
    assert out["currency"] == "USD"
