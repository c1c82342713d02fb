"""The notebook widgets, driven headlessly (no browser, no kernel).

Each test moves a widget the way a user would (a slider value, a button
click, a dropdown choice) and checks what it shows against the library or
scikit-learn.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import f1_score, precision_score, recall_score

from tests.builders.profiles import examples
from tests.builders.stores import copy_db
from truss_lab.core._errors import BadInputError
from truss_lab.core._models import MemoryQuery
from truss_lab.evaluate._truth import labelled_candidates
from truss_lab.faces._notebook import copy_store, run_sample_extractions
from truss_lab.faces._widgets import LabellingWidget, LessonBrowser, ThresholdExplorer
from truss_lab.store._governed import query_memory
from truss_lab.store._store import Store


@pytest.fixture(scope="module")
def sample(sample_full: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """The sample with one replay run of sim-good-v1 (model-scored at 0.70)."""
    s = Store(copy_db(sample_full, tmp_path_factory.mktemp("w") / "sample.duckdb"))
    run_sample_extractions(s, extractors=["sim-good-v1"])
    yield s
    s.close()


@pytest.fixture(scope="module")
def good_run(sample: Store) -> str:
    return sample.sql("SELECT run_id FROM extraction_runs").fetchall()[0][0]


@pytest.fixture(scope="module")
def lc(sample: Store, good_run: str) -> pd.DataFrame:
    return labelled_candidates(sample, good_run)


@pytest.fixture
def scratch(sample: Store) -> Iterator[Store]:
    """A writable copy of the sample for tests that write or tamper."""
    s = copy_store(sample)
    yield s
    s.close()


def _oracle(df: pd.DataFrame, t: float) -> dict[str, float]:
    d = df[df["labelled"]]
    y = d["label"].to_numpy(dtype=int)
    pred = (d["salience"].to_numpy() >= t).astype(int)
    return {
        "precision": precision_score(y, pred, zero_division=np.nan),
        "recall": recall_score(y, pred, zero_division=np.nan),
        "f1": f1_score(y, pred, zero_division=np.nan),
        "kept": int(pred.sum()),
        "kept_per_verdict": pred.sum() / d["verdict_hash"].nunique(),
        "write_rate": pred.mean(),
    }


# -- ThresholdExplorer --------------------------------------------------------------


def test_explorer_initial_metrics_match_sklearn(lc: pd.DataFrame) -> None:
    ex = ThresholdExplorer(lc, initial=0.70)
    want = _oracle(lc, 0.70)
    assert ex.threshold == pytest.approx(0.70)
    for k, v in want.items():
        assert ex.metrics[k] == pytest.approx(v), k
    # Unlabelled and tied candidates are left out.
    assert len(ex.candidates) == int(lc["labelled"].sum()) < len(lc)


def test_moving_the_slider_updates_metrics_plot_and_tables(lc: pd.DataFrame) -> None:
    ex = ThresholdExplorer(lc, initial=0.70)
    png_before, html_before = ex.plot_image.value, ex.metrics_html.value
    above_before = ex.above.copy()
    ex.slider.value = 0.85  # what a user's drag does (continuous_update=False: on release)
    want = _oracle(lc, 0.85)
    for k, v in want.items():
        assert ex.metrics[k] == pytest.approx(v), k
    assert ex.metrics["threshold"] == pytest.approx(0.85)
    assert ex.metrics_html.value != html_before
    assert f"{want['precision']:.3f}" in ex.metrics_html.value
    assert ex.plot_image.value != png_before and ex.plot_image.value[:4] == b"\x89PNG"
    assert ex.display_.threshold_line_.get_xdata()[0] == pytest.approx(0.85)
    assert not ex.above.equals(above_before)


def test_above_and_below_are_the_lessons_nearest_the_cut(lc: pd.DataFrame) -> None:
    ex = ThresholdExplorer(lc, initial=0.5, n_rows=5, plot=False)
    for t in (0.3, 0.62, 0.9):
        ex.set_threshold(t)
        s = ex.candidates["salience"].to_numpy()
        kept, dropped = np.sort(s[s >= t]), np.sort(s[s < t])[::-1]
        assert ex.above["salience"].tolist() == kept[:5].tolist()
        assert ex.below["salience"].tolist() == dropped[:5].tolist()
        assert {"text", "salience", "label"} <= set(ex.above.columns)
        # The table the user sees is that frame: a header row plus one row per lesson.
        assert ex.above_html.value.count("</tr>") == len(ex.above) + 1


def test_set_threshold_clips_to_the_slider_range(lc: pd.DataFrame) -> None:
    ex = ThresholdExplorer(lc, plot=False)
    ex.set_threshold(5.0)
    assert ex.threshold == ex.slider.max == 1.0
    assert ex.metrics["kept"] == 0
    ex.set_threshold(-1.0)
    assert ex.threshold == 0.0
    assert ex.metrics["kept"] == len(ex.candidates)


def test_explorer_parts_have_stable_classes(lc: pd.DataFrame) -> None:
    ex = ThresholdExplorer(lc, plot=False)
    assert "truss-threshold-slider" in ex.slider._dom_classes
    assert "truss-metrics" in ex.metrics_html._dom_classes
    assert "truss-threshold-explorer" in ex.widget._dom_classes
    assert ex.slider.continuous_update is False
    assert ex.slider.description == "min salience"
    assert ex.slider in ex.widget.children
    assert repr(ex).startswith("ThresholdExplorer(threshold=0.70, candidates=")


def test_explorer_leaves_a_static_picture(lc: pd.DataFrame) -> None:
    """Issue 37: the display bundle holds the live view and, beside it, the HTML of what
    the explorer shows (metrics, the plot as an inline PNG, the lessons at the cut): an
    exported notebook without widget state renders that instead of a blank cell."""
    from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter

    ex = ThresholdExplorer(lc, initial=0.6)
    bundle = ex._repr_mimebundle_()
    view = bundle["application/vnd.jupyter.widget-view+json"]
    assert view["model_id"] == ex.widget.model_id
    static = bundle["text/html"]
    assert "min salience 0.60" in static and ex.metrics_html.value in static
    assert static.count('src="data:image/png;base64,') == 1
    assert ex.above_html.value in static and ex.below_html.value in static
    assert bundle["text/plain"] == repr(ex)
    # nbconvert's choice for an output whose widget state was not saved: the snapshot
    chosen = WidgetsDataTypeFilter(notebook_metadata={})(bundle)
    assert chosen[0] == "text/html"
    ex.set_threshold(0.8)
    assert "min salience 0.80" in ex._repr_mimebundle_()["text/html"]


def test_explorer_escapes_lesson_text() -> None:
    df = pd.DataFrame({"verdict_hash": ["a", "a", "b"], "salience": [0.9, 0.2, 0.8],
                       "label": [1, 0, 1], "text": ["<script>x</script>", "ok", "fine"]})
    ex = ThresholdExplorer(df, initial=0.5, plot=False)
    assert "<script>" not in ex.above_html.value
    assert "&lt;script&gt;" in ex.above_html.value


def test_explorer_needs_its_columns() -> None:
    with pytest.raises(BadInputError, match="candidates lack column"):
        ThresholdExplorer(pd.DataFrame({"salience": [0.5]}))


@pytest.mark.filterwarnings("ignore::truss_lab.evaluate._sweep.UndefinedMetricWarning")
# Any float is drawn as the threshold, not a grid value: the sweep says when it rounds one.
@pytest.mark.filterwarnings("ignore::truss_lab.evaluate._sweep.ThresholdGridWarning")
@settings(max_examples=examples(40), deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.integers(0, 5), st.floats(0, 1, allow_nan=False),
                  st.sampled_from([0, 1, None])),
        min_size=1, max_size=40,
    ),
    t=st.floats(0, 1, allow_nan=False),
)
def test_explorer_metrics_match_sklearn_on_any_frame(
    rows: list[tuple[int, float, int | None]], t: float
) -> None:
    df = pd.DataFrame(rows, columns=["verdict_hash", "salience", "label"])
    df["label"] = df["label"].astype("Int8")
    ex = ThresholdExplorer(df, initial=0.5, plot=False)
    ex.set_threshold(t)
    lab = df[df["label"].notna()]
    y = lab["label"].to_numpy(dtype=int)
    pred = (lab["salience"].to_numpy() >= t).astype(int)
    assert ex.metrics["kept"] == int(pred.sum())
    assert ex.metrics["tp"] == int((pred & y).sum())
    if len(y) and pred.any():
        assert ex.metrics["precision"] == pytest.approx(precision_score(y, pred))
    else:
        assert np.isnan(ex.metrics["precision"])
    if y.any():
        assert ex.metrics["recall"] == pytest.approx(recall_score(y, pred))
    assert len(ex.above) == min(5, int(pred.sum()))
    assert len(ex.below) == min(5, len(pred) - int(pred.sum()))


# -- LabellingWidget ----------------------------------------------------------------


def _unlabelled(store: Store) -> pd.DataFrame:
    run = store.sql("SELECT run_id FROM extraction_runs").fetchall()[0][0]
    df = labelled_candidates(store, run)
    # Tied candidates (the two annotators disagree) are the ones a third annotator labels.
    return df[df["tie"]].head(4).reset_index(drop=True)


def _widget_labels(store: Store) -> pd.DataFrame:
    return store.sql(
        "SELECT * FROM labels WHERE source = 'widget' ORDER BY labelled_at").df()


def test_button_click_writes_a_label_and_advances(scratch: Store) -> None:
    todo = _unlabelled(scratch)
    w = LabellingWidget(scratch, todo, annotator="ann-widget")
    first = w.current
    assert first is not None and first["verdict_hash"] == todo["verdict_hash"].iat[0]
    assert first["extractor"] == "sim-good-v1"
    w.useful_button.click()
    rows = _widget_labels(scratch)
    assert len(rows) == 1
    r = rows.iloc[0]
    assert (r["verdict_hash"], r["extractor_id"], int(r["lesson_index"]), int(r["useful"]),
            r["annotator"]) == (first["verdict_hash"], "sim-good-v1",
                                int(first["lesson_index"]), 1, "ann-widget")
    assert pd.notna(r["labelled_at"])
    assert w.position == 1 and w.written == 1
    assert w.current["verdict_hash"] == todo["verdict_hash"].iat[1]


def test_label_method_skip_and_done(scratch: Store) -> None:
    todo = _unlabelled(scratch)
    w = LabellingWidget(scratch, todo, annotator="ann-code")
    assert w.label(False) is True
    w.skip()
    w.not_useful_button.click()
    w.label(True)
    assert w.done and w.current is None
    assert all(b.disabled for b in (w.useful_button, w.not_useful_button, w.skip_button))
    assert w.label(True) is False  # nothing left: no write
    rows = _widget_labels(scratch)
    assert rows["useful"].tolist() == [0, 0, 1]
    assert set(rows["annotator"]) == {"ann-code"}
    skipped = todo.iloc[1]
    assert not ((rows["verdict_hash"] == skipped["verdict_hash"])
                & (rows["lesson_index"] == skipped["lesson_index"])).any()
    assert "Done." in w.card.value
    assert repr(w) == "LabellingWidget(annotator='ann-code', position=4/4, written=3)"


def test_widget_labels_reach_the_evaluation(scratch: Store) -> None:
    todo = _unlabelled(scratch)
    w = LabellingWidget(scratch, todo, annotator="ann-eval")
    w.label(True)
    run = scratch.sql("SELECT run_id FROM extraction_runs").fetchall()[0][0]
    lc = labelled_candidates(scratch, run)
    hit = lc[(lc["verdict_hash"] == todo["verdict_hash"].iat[0])
             & (lc["lesson_index"] == todo["lesson_index"].iat[0])]
    assert hit["label"].tolist() == [1] and hit["labelled"].all()


def test_labels_are_never_overwritten_and_sessions_resume(scratch: Store) -> None:
    todo = _unlabelled(scratch)
    LabellingWidget(scratch, todo, annotator="ann-x").label(True)
    resumed = LabellingWidget(scratch, todo, annotator="ann-x")
    assert resumed.position == 1  # starts at the first candidate ann-x has not labelled
    again = LabellingWidget(scratch, todo, annotator="ann-x", skip_labelled=False)
    assert again.label(False) is False
    assert "already labelled by ann-x" in again.message
    stored = scratch.sql("SELECT useful FROM labels WHERE annotator = 'ann-x'").fetchall()
    assert stored == [(1,)]
    other = LabellingWidget(scratch, todo, annotator="ann-y")
    assert other.position == 0 and other.label(False) is True


def test_labelling_card_shows_the_lesson_and_its_verdict(scratch: Store) -> None:
    todo = _unlabelled(scratch)
    w = LabellingWidget(scratch, todo, annotator="ann-v")
    payload = json.loads(scratch.sql("SELECT payload::VARCHAR FROM journal WHERE hash = ?",
                                     [todo["verdict_hash"].iat[0]]).fetchall()[0][0])
    from html import escape

    assert escape(todo["text"].iat[0]) in w.card.value
    assert escape(payload["summary"]) in w.card.value
    assert "truss-label-useful" in w.useful_button._dom_classes


@pytest.mark.parametrize("annotator", ["", "   ", None])
def test_labelling_needs_an_annotator(store: Store, annotator: object) -> None:
    df = pd.DataFrame({"verdict_hash": ["h"], "extractor_id": ["e"], "lesson_index": [0]})
    with pytest.raises(BadInputError, match="annotator"):
        LabellingWidget(store, df, annotator=annotator)  # type: ignore[arg-type]


def test_labelling_needs_candidate_keys(store: Store) -> None:
    with pytest.raises(BadInputError, match="lesson_index"):
        LabellingWidget(store, pd.DataFrame({"verdict_hash": ["h"], "extractor": ["e"]}),
                        annotator="a")


# -- LessonBrowser ------------------------------------------------------------------


def test_browser_shows_provenance_and_a_verified_verdict(sample: Store) -> None:
    b = LessonBrowser(sample)
    lessons = query_memory(sample, MemoryQuery.unverified_lessons())
    assert len(b.select.options) == min(len(lessons), 500)
    assert b.status["ok"] is True and b.status["message"].startswith("verified")
    e = b.entry
    html = b.details.value
    assert "truss-signature-ok" in html and "truss-signature-bad" not in html
    assert e.provenance.produced_by.hash in html
    assert b.journal_entry["hash"] == e.provenance.produced_by.hash
    assert b.journal_entry["seq"] == e.provenance.produced_by.seq
    assert e.provenance.produced_by in e.provenance.sources
    assert "Checks" in html and "truss-checks" in html
    assert "truss-lesson-select" in b.select._dom_classes
    assert repr(b).startswith(f"LessonBrowser({len(b.select.options)} lessons")


def test_browser_follows_the_dropdown(sample: Store) -> None:
    b = LessonBrowser(sample)
    _label, entry_id = b.select.options[3]
    b.select.value = entry_id  # a user's pick
    assert b.entry.entry_id == entry_id
    assert b.journal_entry["seq"] == b.entry.provenance.produced_by.seq
    b.show(b.select.options[0][1])  # from code: the dropdown follows
    assert b.select.value == b.select.options[0][1] == b.entry.entry_id


def test_browser_flags_a_tampered_verdict(scratch: Store) -> None:
    lessons = query_memory(scratch, MemoryQuery.unverified_lessons())
    seq = int(lessons["produced_by_seq"].min())
    scratch.sql("UPDATE journal SET payload = json_merge_patch(payload, ?::JSON) WHERE seq = ?",
                ['{"verdict": "pass"}', seq])
    b = LessonBrowser(scratch)
    b.show(lessons.loc[lessons["produced_by_seq"] == seq, "entry_id"].iat[0])
    assert b.status["ok"] is False
    assert b.status["reason"] == "bad_hash"
    assert b.status["message"].startswith("FAILED") and f"seq {seq}" in b.status["message"]
    assert "truss-signature-bad" in b.details.value
    # Verification is per entry: a lesson from an untouched verdict still verifies.
    other = lessons.loc[lessons["produced_by_seq"] > seq + 1, "entry_id"].iat[0]
    b.show(other)
    assert b.status["ok"] is True


def test_browser_on_a_store_without_lessons(store: Store) -> None:
    b = LessonBrowser(store)
    assert b.select.options == () and b.entry is None
    assert "No unverified lessons" in b.details.value
    assert repr(b) == "LessonBrowser(0 lessons, current=None, verified=None)"


def test_browser_unknown_entry(sample: Store) -> None:
    with pytest.raises(BadInputError, match="no memory entry"):
        LessonBrowser(sample).show("lesson-nope")
