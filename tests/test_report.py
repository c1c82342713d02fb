"""The standalone HTML report: self-contained, escaped, every section present."""

from __future__ import annotations

import html
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.builders.cli import invoke
from tests.builders.report import HOSTILE, HOSTILE_ANNOTATOR, HOSTILE_REF, hostile_sample
from truss_lab.core._errors import BadInputError
from truss_lab.evaluate import (
    Truth,
    labelled_candidates,
    reference_truth,
    run_references,
    sweep,
    sweep_run,
)
from truss_lab.evaluate._runs import evaluate_run
from truss_lab.evaluate._truth import check_truth_spec
from truss_lab.faces import write_report
from truss_lab.faces._report import judged_arrays, reference_matches
from truss_lab.ingest._ingest import append_labels
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
    # auto: every run has gold labels, so labels, and the header says so
    assert "<b>truth</b>: lessons judged by labels (every run has gold labels)" in text


def test_report_escapes_every_lesson(sample) -> None:
    _, _, target, path = sample
    text = path.read_text(encoding="utf-8")
    assert HOSTILE not in text  # never raw
    assert "Escape me &lt;script&gt;window.__pwned = 1&lt;/script&gt; &amp; keep the " \
           "&lt;b&gt;text&lt;/b&gt;" in text
    assert target in text  # the hostile verdict is in the list (half the list: the first by seq)
    # its reference lesson and annotator are text too
    assert HOSTILE_REF not in text and HOSTILE_ANNOTATOR not in text
    assert html.escape(HOSTILE_REF) in text and html.escape(HOSTILE_ANNOTATOR) in text
    # the only script element is the report's own filter
    assert text.count("<script>") == 1


def test_report_cuts_long_text(sample) -> None:
    """Issue 28 item 13: a reference lesson of 20 MB that reached the table (written
    before its bound, or by SQL) is cut in the report, which says how long it was."""
    from truss_lab.faces._report import TEXT_CHARS, table, verdict_list

    store, run_ids, _, _ = sample
    big = "y" * 20_000_000
    store.sql("INSERT INTO reference_lessons SELECT hash, 'r-huge', ?, [], 'ann-a', 'test', "
              "now() FROM journal WHERE seq = 1", [big])
    try:
        text = verdict_list(store, run_ids[:1], flags=None, max_verdicts=1)
    finally:
        store.sql("DELETE FROM reference_lessons WHERE reference_id = 'r-huge'")
    note = f"… (first {TEXT_CHARS} of 20000000 characters)"
    assert len(text) < 100_000 and f"{'y' * TEXT_CHARS}{note}" in text
    assert note in table(pd.DataFrame({"text": [big]}))  # any table cell too


def _verdict_block(text: str, verdict_hash: str) -> str:
    start = text.index(f'data-hash="{verdict_hash}"')
    return text[start:text.index("</details><details", start)]


def test_report_verdicts_show_references_and_the_matchers_assignment(sample) -> None:
    store, run_ids, _, path = sample
    text = path.read_text(encoding="utf-8")
    shown = re.findall(r'data-refs="(\d+)" data-hash="([0-9a-f]{64})"', text)
    refs = run_references(store)
    annotated = set(refs["verdict_hash"])
    # every listed verdict says whether it has reference lessons (any annotator's line)
    for n, h in shown:
        assert (int(n) > 0) == (h in annotated)
        assert int(n) == int((refs["verdict_hash"] == h).sum())
    truths = {rid: reference_truth(store, rid).lessons for rid in run_ids}
    checked = 0
    for _, h in shown:
        real = refs[(refs["verdict_hash"] == h) & (refs["reference_id"] != "none")]
        if real.empty:
            continue
        block = _verdict_block(text, h)
        for r in real.itertuples(index=False):  # each wording with its annotator
            assert (f"<td>{html.escape(r.reference_id)}</td><td>{html.escape(r.annotator)}"
                    f"</td><td class=\"lesson-text\">{html.escape(r.text)}</td>") in block
        for rid, les in truths.items():
            mine = les[les["verdict_hash"] == h]
            for ref_id in sorted(set(real["reference_id"])):
                hit = mine[(mine["y"] == 1) & (mine["reference_id"] == ref_id)]
                claim = (f"lesson #{int(hit['lesson_index'].iloc[0])} "
                         f"({hit['similarity'].iloc[0]:.2f})" if len(hit) else "missed")
                assert f"{rid}: {claim}" in block, (h, rid, ref_id)
            for m in mine.itertuples(index=False):  # the lesson's own column
                want = (f"{m.reference_id} ({m.similarity:.2f})" if m.y
                        else f"no match (best {m.similarity:.2f})")
                assert f"<td>{html.escape(want)}</td>" in block
            checked += int(mine["y"].sum())
    assert checked >= 2  # matched lessons were seen, not only misses
    # the reading helper agrees with the evaluation on every listed verdict
    _, matches = reference_matches(store, run_ids, [h for _, h in shown])
    for rid, m in matches.items():
        want = truths[rid][truths[rid]["verdict_hash"].isin([h for _, h in shown])]
        assert m["candidate_id"].tolist() == want["candidate_id"].tolist()


@pytest.fixture(scope="module")
def by_references(sample, tmp_path_factory: pytest.TempPathFactory) -> str:
    store, run_ids, _, _ = sample
    out = tmp_path_factory.mktemp("refs") / "refs.html"
    return write_report(store, run_ids, out, n_boot=30, max_verdicts=10,
                        truth="references").read_text(encoding="utf-8")


def test_report_by_references(sample, by_references: str) -> None:
    store, run_ids, _, _ = sample
    text = by_references
    assert "<b>truth</b>: lessons judged by references (as asked)" in text
    for rid in run_ids:
        at = sweep_run(store, rid, truth="references", thresholds=[0.7]).iloc[0]
        # the sweep's summary table holds the reference numbers, not the labels' ones
        # (the ADR default's row, named; every number to 3 decimals)
        row = (f"<tr><td>ADR default</td><td>0.700</td><td>{int(at['kept'])}</td>"
               f"<td>{int(at['tp'])}</td><td>{int(at['fp'])}</td><td>{int(at['fn'])}</td>"
               f"<td>{at['precision']:.3f}</td><td>{at['recall']:.3f}</td>")
        assert row in text, rid
    assert "not drawn for references: a calibration judges scored lessons only" in text
    assert "at the default 0.700, by references</h3>" in text
    assert text.count('src="data:image/png;base64,') >= 5  # 2 sweeps, 2 PR, 1 comparison


def test_report_truth_is_the_one_truth(sample) -> None:
    store, run_ids, _, _ = sample
    auto = Truth.resolve(store, "auto", run_ids)
    assert (auto.name, auto.why) == ("labels", "every run has gold labels")
    assert Truth.resolve(store, "references", run_ids).kind == "references"
    for bad in ("gold", "judge:", "Labels", ""):
        with pytest.raises(BadInputError, match="truth must be auto, labels, references or "
                                                "judge:NAME"):
            check_truth_spec(bad)
    with pytest.raises(BadInputError, match=r"judge:NAME; no judge has labels.*judge:nobody@v1"):
        Truth.resolve(store, "judge:nobody@v1", run_ids)


@pytest.mark.parametrize("truth", ["labels", "references"])
def test_bands_and_ap_count_what_the_sweep_counts(sample, truth: str) -> None:
    """The rows behind the AP and the bands give the sweep's own precision and recall
    (misses included: a dropped useful lesson, an unmatched reference)."""
    store, run_ids, _, _ = sample
    rt = Truth.resolve(store, truth, run_ids)
    for rid in run_ids:
        ev = evaluate_run(store, rid, truth=rt, n_boot=20)
        y, s = judged_arrays(ev)
        at = [0.3, 0.5, 0.7, 0.9]
        mine = sweep(y, s, thresholds=at)
        full = sweep_run(store, rid, thresholds=at, truth=rt)
        for c in ("tp", "fp", "fn", "precision", "recall"):
            np.testing.assert_allclose(mine[c].to_numpy(float), full[c].to_numpy(float))
        assert np.isnan(s).any()  # the misses are there, never kept
        assert ev.bands is not None
        bands = ev.bands.table.set_index("threshold").loc[at]
        for c in ("precision", "recall", "kept_per_verdict"):
            np.testing.assert_allclose(bands[c].to_numpy(float), full[c].to_numpy(float))


def test_report_by_a_judge(sample, tmp_path: Path) -> None:
    """judge:NAME judges by that judge's labels: a judge that copies the human
    majority gives the labels' numbers (but on ties, which the copy cannot hold and
    label transfer then fills from the other run's equal lesson), one that flips
    every label swaps tp and fp."""
    store, run_ids, _, _ = sample
    rows = []
    for rid in run_ids:
        maj = labelled_candidates(store, rid, transfer=None)
        maj = maj[maj["labelled"]]
        rows.append(pd.DataFrame({
            "verdict_hash": maj["verdict_hash"], "extractor": maj["extractor_id"],
            "lesson_index": maj["lesson_index"], "useful": maj["label"].astype(int)}))
    copy = pd.concat(rows, ignore_index=True)
    flip = copy.assign(useful=1 - copy["useful"])
    append_labels(store, copy.assign(annotator="judge:copy@v1"), source="test")
    append_labels(store, flip.assign(annotator="judge:flip@v1"), source="test")
    rid = run_ids[0]
    labels = sweep_run(store, rid, thresholds=[0.5, 0.7])
    # The judges' own counts (correct="none"; by default the gold labels correct them).
    copied = sweep_run(store, rid, thresholds=[0.5, 0.7], correct="none",
                       truth=Truth.resolve(store, "judge:copy@v1", run_ids))
    flipped = sweep_run(store, rid, thresholds=[0.5, 0.7], correct="none",
                        truth=Truth.resolve(store, "judge:flip@v1", run_ids))
    ties = int(labelled_candidates(store, rid)["tie"].sum())
    assert ties > 0
    assert (copied["kept"] == labels["kept"]).all()
    assert ((copied["tp"] - labels["tp"]).abs() + (copied["fp"] - labels["fp"]).abs()
            <= ties).all()
    assert (flipped["tp"] == copied["fp"]).all() and (flipped["fp"] == copied["tp"]).all()
    text = write_report(store, [rid], tmp_path / "judge.html", n_boot=20, max_verdicts=5,
                        truth="judge:flip@v1").read_text(encoding="utf-8")
    assert "<b>truth</b>: lessons judged by judge:flip@v1 (as asked) · correction " in text
    assert f"{rid}: ppi (people answered for" in text  # the gold labels correct the judge
    # ... and how far the people behind that correction agree (match-agreement
    # --between-people's line, the gold labels' here).
    assert "<p>People against people (95% intervals, 20 verdict resamples): gold labels: " in text
    assert "Judged by the labels of judge:flip@v1." in text
    assert "<h4>calibration, by judge:flip@v1</h4>" in text


def test_report_reads_as_people_read_it(sample) -> None:
    """Issue 29: each run's own lesson count per verdict, a verdict whose annotators
    say it teaches nothing says so, the chosen row of the sweep table is named and
    marked, the choice has no NaN cell nor a raw dict, numbers have one format."""
    _, run_ids, _, path = sample
    text = path.read_text(encoding="utf-8")
    a, b = run_ids
    assert re.search(rf"· {re.escape(a)}: \d+ lesson\(s\), \d+ written · "
                     rf"{re.escape(b)}: \d+ lesson\(s\), \d+ written", text)
    assert "teaches nothing (" in text and "0 reference(s)" not in text
    assert re.search(r'<tr class="mark"><td>chosen', text)
    assert "{&#x27;" not in text and "{'" not in text  # no raw dict
    assert not re.search(r">\s*nan\s*<", text.lower())  # no NaN cell
    assert "e-" not in re.sub(r"(data:image/png;base64,[^\"]+|[a-z]e-[a-z])", "", text)
    # One format: seconds to 2 decimals (their row of the runs table), others to 3.
    seconds = re.search(r"<tr><td>seconds</td>(.*?)</tr>", text)
    assert seconds and re.fullmatch(r"(<td>\d+\.\d\d</td>)+", seconds.group(1))
    for cell in re.findall(r"<td>(-?\d+\.\d+)</td>", text.replace(seconds.group(0), "")):
        assert len(cell.split(".")[1]) == 3, cell
    assert text.count("table-box") >= 3  # wide tables scroll inside the page


def test_report_leads_with_the_answer(sample) -> None:
    """Issue 37: a summary before any table (each run's choice and its interval against
    0.70, precision/recall/F1 there, the truth and correction, the comparison's verdict),
    and every column of every table explained in the legend under it."""
    _, run_ids, _, path = sample
    text = path.read_text(encoding="utf-8")
    summary = text[text.index('<section id="summary">'):text.index("</section>")]
    assert text.index('<section id="summary">') < text.index("<table")
    for rid in run_ids:
        assert re.search(rf"<b>{re.escape(rid)}</b>: chosen threshold <b>\d\.\d{{3}}</b> "
                         r"\[\d\.\d{3}, \d\.\d{3}\], (below|above|at) the ADR default 0\.700",
                         summary)
    assert summary.count("precision ") >= 2 and summary.count("F1 <b>") == 2
    assert "Lessons judged by <b>labels (every run has gold labels)</b>" in summary
    assert "correction <b>none</b>" in summary
    a, b = run_ids
    assert re.search(rf"{re.escape(b)} vs {re.escape(a)} at 0\.700: F1 .* = -?\d\.\d{{3}} "
                     r"\[.*\] \(95% paired interval\): (.* is better on F1|no clear "
                     r"difference in F1.*); McNemar p", html.unescape(summary))
    # every header of every table (but the verdict list's own) is in its legend
    body = text[:text.index('<section id="verdicts">')]
    tables = re.findall(r"<table[^>]*><thead><tr>(.*?)</tr></thead><tbody>(.*?)</tbody>"
                        r"</table></div>(<p class=\"legend\">.*?</p>)?", body)
    assert len(tables) >= 10
    for head, rows, notes in tables:
        names = re.findall(r"<th>(.*?)</th>", head)
        if names[:1] == ["field"]:  # a run's fields are its rows
            names += re.findall(r"<tr><td>(.*?)</td>", rows)
        explained = re.findall(r"<b>(.*?)</b>:", notes)
        assert not [n for n in names if n not in explained], (names, explained)
    # the comparison names its runs, in the plot's legend and the table
    assert f"<th>{a} (A)</th><th>{b} (B)</th>" in text


def test_a_calibration_that_worsens_a_score_says_so(sample) -> None:
    """The sample's good run: isotonic calibration raises ECE on the held-out verdicts
    (0.068 -> 0.079 in the issue); the report, the summary and the result say so."""
    store, run_ids, _, path = sample
    text = html.unescape(path.read_text(encoding="utf-8"))
    from truss_lab.evaluate import calibration_run

    for rid in run_ids:
        cal = calibration_run(store, rid, method="isotonic", random_state=0)
        s = cal.summary
        worse = s.loc["after", "ece"] > s.loc["before", "ece"]
        note = cal.worsened()
        assert (note is not None and "ECE" in note) == bool(worse), (rid, s)
        if note:
            assert f"{note}" in text and f"note: {note}" in repr(cal)
            assert f"{rid}: {note}." in text  # in the summary too
    assert any(calibration_run(store, r, method="isotonic", random_state=0).worsened()
               for r in run_ids)


def test_report_cli_and_errors(sample, tmp_path: Path) -> None:
    # last in the module: it closes the shared store
    store, run_ids, _, _ = sample
    db = store.path
    store.close()
    out = tmp_path / "r.html"
    res = invoke("report", run_ids[0], "--db", db, "--out", str(out),
                 "--n-boot", "20", "--n-verdicts", "5")
    assert res.exit_code == 0, res.output
    assert "report of 1 run(s)" in res.output
    text = out.read_text(encoding="utf-8")
    assert '<section id="comparison">' not in text  # one run: nothing to compare
    assert text.count('<details class="verdict"') == 5
    res = invoke("report", "no-such-run", "--db", db, "--out", str(out))
    assert res.exit_code == 2 and res.output.startswith("error:")
    with Store(db, read_only=True) as ro, pytest.raises(BadInputError):
        write_report(ro, [], tmp_path / "x.html")
    res = invoke("report", run_ids[0], "--db", db, "--out", str(out),
                 "--truth", "gold")
    assert res.exit_code == 2 and "truth must be auto, labels, references or judge:NAME" \
        in res.output and "Traceback" not in res.output
    res = invoke("report", run_ids[0], "--db", db, "--out", str(out),
                 "--truth", "references", "--n-boot", "20",
                 "--n-verdicts", "5")
    assert res.exit_code == 0, res.output
    assert "lessons judged by references (as asked)" in out.read_text(encoding="utf-8")
