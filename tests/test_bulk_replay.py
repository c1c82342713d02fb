"""The bulk replay path returns exactly the rows of the per-verdict path."""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from truss_lab.extract._extractor import (
    ExtractionRows,
    Extractor,
    ExtractorConfig,
    ReplayProvider,
    extract_verdicts,
)
from truss_lab.extract._providers import Completion, CompletionRequest
from truss_lab.journal._table import entry_payloads, verdict_refs
from truss_lab.store._store import Store


class _Forward:
    """A replay seen through another type: extract_verdicts takes the per-verdict path."""

    provider_id = "replay"
    live = False

    def __init__(self, inner: ReplayProvider) -> None:
        self.inner = inner

    def complete(self, request: CompletionRequest) -> Completion:
        return self.inner.complete(request)


def _both(ext: Extractor, verdicts: list[tuple[int, str, Mapping[str, Any]]]
          ) -> tuple[ExtractionRows, ExtractionRows, ReplayProvider, ReplayProvider]:
    fast_p: Any = ext.provider
    slow_p = ReplayProvider.__new__(ReplayProvider)
    slow_p.__dict__.update({**fast_p.__dict__, "_unchecked": 0, "_calls": 0})
    slow = Extractor(ext.extractor_id, _Forward(slow_p), ext.template, ext.model,  # type: ignore[arg-type]
                     ext.parameters, ext.config)
    return extract_verdicts(ext, verdicts), extract_verdicts(slow, verdicts), fast_p, slow_p


def _same(a: ExtractionRows, b: ExtractionRows) -> None:
    pd.testing.assert_frame_equal(a.candidates, b.candidates)
    # assert_frame_equal takes a tuple for the list it equals; the rows must not
    for col in a.candidates.select_dtypes(include="object", exclude="str").columns:
        assert list(map(type, a.candidates[col])) == list(map(type, b.candidates[col])), col
    pd.testing.assert_frame_equal(a.errors, b.errors)
    assert a.provider_calls == b.provider_calls
    assert a.completions == b.completions
    for x, y in zip(a.completions, b.completions, strict=True):
        assert [type(v) for v in x.values()] == [type(v) for v in y.values()]


@pytest.fixture(scope="module")
def sample(sample_labelled: Path) -> tuple[pd.DataFrame, list[tuple[int, str, dict[str, Any]]]]:
    with Store(sample_labelled, read_only=True) as s:
        rec = s.sql("SELECT * FROM completions").df()
        seqs = verdict_refs(s)["seq"].tolist()
        verdicts = [(q, h, json.loads(p)) for q, h, p in entry_payloads(s, seqs)]
    return rec, verdicts


@pytest.mark.parametrize("extractor", ["sim-good-v1", "sim-overconfident-v1",
                                       "sim-paraphrase-v1"])
def test_sample_rows_are_identical(sample: Any, extractor: str) -> None:
    rec, verdicts = sample
    ext = Extractor.replay(rec, extractor)
    fast, slow, fp, sp = _both(ext, verdicts)
    _same(fast, slow)
    assert fast.provider_calls == len(verdicts) and len(fast.candidates)
    assert (fp.calls, fp.unchecked_requests) == (sp.calls, sp.unchecked_requests)


def test_request_hashes_odd_recordings_and_bad_verdicts_match(sample: Any) -> None:
    rec, verdicts = sample
    config = ExtractorConfig.from_parameters("m", "lesson-v1", {"temperature": 0.7,
                                                                "top_p": 0.9})
    rec = rec[rec["extractor_id"] == "sim-good-v1"].copy().reset_index(drop=True)
    probe = Extractor("sim-good-v1", ReplayProvider(rec), model="m",
                      parameters=config.request_parameters(), config=config)
    payloads = {h: p for _, h, p in verdicts}
    # Recorded hashes as a live run would have stored them, a few of them wrong.
    hashes = [probe.request(h, payloads[h]).request_hash if h in payloads else None
              for h in rec["verdict_hash"]]
    rec["request_hash"] = [("0" * 64 if i % 7 == 3 else x) if i % 5 else None
                           for i, x in enumerate(hashes)]
    rec["prompt_version"] = ["lesson-v0" if i % 11 == 4 else v
                             for i, v in enumerate(rec["prompt_version"])]
    rec["latency_ms"] = [int(x) if i % 2 else float(x)
                         for i, x in enumerate(rec["latency_ms"].fillna(1.0))]
    rec["prompt_tokens"] = rec["prompt_tokens"].astype("float64")
    rec.loc[3, "prompt_tokens"] = np.nan
    rec = rec.drop(index=[5, 6])  # verdicts with no recording
    bad = [(10_001, "f" * 64, {"goal": "g", "verdict": "maybe", "summary": "s", "checks": []}),
           (10_002, "e" * 64, {"goal": "g", "verdict": "pass", "summary": "s",
                               "checks": [{"name": " a", "passed": True},
                                          {"name": " a", "passed": False}]}),
           (10_003, "d" * 64, {"goal": "g{x}$y", "verdict": "pass", "summary": "{}",
                               "checks": [{"name": "\u00a0n", "passed": True}]})]
    ext = Extractor("sim-good-v1", ReplayProvider(rec), model="m",
                    parameters=config.request_parameters(), config=config)
    fast, slow, fp, sp = _both(ext, verdicts[:40] + bad + verdicts[40:])
    _same(fast, slow)
    reasons = set(fast.errors["reason"])
    assert {"bad_verdict", "provider_error"} <= reasons, reasons
    assert any("different request" in m for m in fast.errors["message"])
    assert any(r is not None for r in (c["request_hash"] for c in fast.completions))
    assert (fp.calls, fp.unchecked_requests) == (sp.calls, sp.unchecked_requests)


def test_a_store_replay_reads_what_the_whole_recordings_answer(
        sample_labelled: Path, sample: Any) -> None:
    """ReplayProvider.from_store reads recordings as asked (a window held, or one verdict
    outside every window) and answers, counts and pickles as the provider built from
    every recording at once does."""
    import pickle

    from truss_lab.extract._batch import _Pickler
    from truss_lab.store._runs import recorded_completions

    _, verdicts = sample
    with Store(sample_labelled, read_only=True) as s:
        whole = ReplayProvider(recorded_completions(s, "sim-good-v1"))
        lazy = ReplayProvider.from_store(s, "sim-good-v1")
        assert (len(lazy), repr(lazy)) == (len(whole), repr(whole))
        assert lazy.prompt_version_of("sim-good-v1") == whole.prompt_version_of("sim-good-v1")
        assert lazy.hashed_recordings("sim-good-v1", "lesson-v1") == \
            whole.hashed_recordings("sim-good-v1", "lesson-v1")
        hashes = [h for _, h, _ in verdicts]
        lazy.hold("w", hashes[:100])
        assert len(lazy._table) <= 100 and lazy.covers(hashes[:100])
        assert not lazy.covers(hashes[:101])
        for h in hashes[:100] + hashes[-50:] + ["0" * 64]:  # held, read one by one, none
            key = (h, "sim-good-v1", 0)
            assert (key in lazy) == (key in whole)
            if key in whole:
                assert lazy._recording(key) == whole._table[key]
        lazy.release("w")
        assert lazy._table == {}
        buf = io.BytesIO()
        _Pickler(buf).dump(lazy)  # what a worker process gets: every recording
        assert pickle.loads(buf.getvalue())._table == whole._table
