"""A judge: a model that labels a run's lessons, through the same Provider seam.

:class:`Judge` is a provider, a versioned judge prompt (``judge-v1``) and a
model. :func:`run_judge` sends it one request per verdict of a run (the
verdict and the run's valid lessons on it), parses the answer
(:func:`parse_judgement`) and appends the labels to the ``labels`` table under
the annotator ``judge:<model>@<prompt version>`` (:attr:`Judge.annotator`)
through the one writer of label rows,
:func:`~truss_lab.ingest._ingest.append_labels`.

Recorded and replayable like extraction: every live call is recorded into the
``completions`` table keyed by (verdict_hash, ``<annotator>/<judged
extractor_id>``) with its request hash; :meth:`Judge.replay` answers from those
recordings (or a FORMATS.md §2 file) and refuses a changed request. Judge labels
never join the human majority unless asked: the labels truth leaves out
annotators starting with ``judge:`` (:data:`JUDGE_PREFIX`) by default.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pandas as pd

from ..core._errors import BadInputError, ProviderError
from ..evaluate._truth import JUDGE_PREFIX
from ..ingest._ingest import append_labels
from ..journal._table import verdict_payloads
from ..store._runs import run_info
from ..store._store import Store
from ._extractor import completion_record
from ._prompts import PromptTemplate, build_judge_request, get_template
from ._providers import Provider, is_live

__all__ = ["JUDGE_PREFIX", "Judge", "JudgeRun", "parse_judgement", "run_judge"]



def replay_provider(recordings: Any, prefix: str) -> Any:
    """A :class:`~truss_lab.extract._replay.ReplayProvider` of a judge's recorded calls:
    from a Store (its ``completions`` rows whose extractor starts with ``prefix``,
    ``<kind>:<model>@<prompt>/``), a §2 JSONL path or a frame."""
    from ._extractor import ReplayProvider

    if isinstance(recordings, Store):
        recordings = recordings.sql(
            "SELECT * FROM completions WHERE starts_with(extractor_id, ?)", [prefix]).df()
        if recordings.empty:
            raise BadInputError(f"no recorded calls of judge {prefix[:-1]!r} in the store",
                                field="--extractor")
    return ReplayProvider(recordings)


def record_calls(store: Store, records: list[dict[str, Any]]) -> int:
    """Append a judge's live calls to ``completions`` (in one transaction); their count."""
    if records:
        from ._gate import record_completions

        with store.transaction():
            record_completions(store, records)
    return len(records)


class ModelJudge:
    """What a judge and a judge matcher share: built on a live OpenAI-compatible
    endpoint or on recorded calls. A subclass names its replay-key prefix
    (``_PREFIX``) and default prompt (``_TEMPLATE``) and takes (provider, model,
    template, parameters)."""

    _PREFIX: ClassVar[str]
    _TEMPLATE: ClassVar[str]

    @classmethod
    def openai(cls, base_url: str, model: str, *, template: str | None = None,
               parameters: Mapping[str, Any] | None = None,
               **provider_options: Any) -> Any:
        """A live OpenAI-compatible endpoint as the model (temperature 0 by default);
        ``template`` defaults to the class's prompt (``judge-v1``, ``match-v1``)."""
        from ._providers import OpenAICompatibleProvider

        return cls(OpenAICompatibleProvider(base_url, model, **provider_options),
                   model, get_template(template or cls._TEMPLATE),
                   dict(parameters or {"temperature": 0}))

    @classmethod
    def replay(cls, recordings: Any, model: str, *, template: str | None = None,
               parameters: Mapping[str, Any] | None = None) -> Any:
        """Replay the recorded calls: a Store (its ``completions`` table), a §2 JSONL
        path or a frame. Give the ``parameters`` the live model used (the request
        hash covers them; :meth:`openai` uses temperature 0)."""
        tpl = get_template(template or cls._TEMPLATE)
        params = dict(parameters) if parameters is not None else {"temperature": 0}
        return cls(replay_provider(recordings, f"{cls._PREFIX}{model}@{tpl.version}/"),
                   model, tpl, params)


@dataclass(frozen=True)
class Judge(ModelJudge):
    """A judge configuration: a provider, a judge prompt template and a model.

    Its labels are stored under :attr:`annotator` = ``judge:<model>@<prompt version>``.
    """

    _PREFIX: ClassVar[str] = JUDGE_PREFIX
    _TEMPLATE: ClassVar[str] = "judge-v1"

    provider: Provider
    model: str
    template: PromptTemplate = field(default_factory=lambda: get_template("judge-v1"))
    parameters: Mapping[str, Any] = field(default_factory=dict)

    @property
    def annotator(self) -> str:
        """The annotator name of this judge's label rows."""
        return f"{JUDGE_PREFIX}{self.model}@{self.template.version}"

    def replay_key(self, extractor_id: str) -> str:
        """The recordings' ``extractor`` for this judge judging ``extractor_id``'s lessons."""
        return f"{self.annotator}/{extractor_id}"


@dataclass(frozen=True)
class JudgeRun:
    """What :func:`run_judge` did: label rows written, calls made, answers it could not use."""

    run_id: str
    annotator: str
    n_verdicts: int
    n_lessons: int
    n_labels: int
    labels_added: int
    provider_calls: int
    recorded: int
    errors: list[str] = field(default_factory=list, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "annotator": self.annotator,
                "n_verdicts": self.n_verdicts, "n_lessons": self.n_lessons,
                "n_labels": self.n_labels, "labels_added": self.labels_added,
                "provider_calls": self.provider_calls, "recorded": self.recorded,
                "errors": self.errors}


def parse_judgement(text: str, lesson_indices: set[int]) -> tuple[dict[int, int], str | None]:
    """The labels in a judge's answer: ``({lesson_index: useful}, error or None)``.

    Accepts the JSON object alone or inside prose / a code fence; keeps items
    whose ``lesson`` is one of ``lesson_indices`` and whose ``useful`` is 0/1 or a
    boolean; a lesson labelled twice keeps its first label. Never raises.
    """
    decoder = json.JSONDecoder()
    root = None
    pos = text.find("{")
    while pos != -1 and root is None:
        try:
            value, end = decoder.raw_decode(text, pos)
        except ValueError:
            pos = text.find("{", pos + 1)
            continue
        if isinstance(value, dict) and isinstance(value.get("labels"), list):
            root = value
        pos = text.find("{", end)
    if root is None:
        return {}, "no JSON object with a 'labels' list"
    out: dict[int, int] = {}
    for item in root["labels"]:
        if not isinstance(item, dict):
            continue
        i, u = item.get("lesson"), item.get("useful")
        if type(i) is not int or i not in lesson_indices or i in out:
            continue
        if type(u) is bool or u in (0, 1):
            out[i] = int(u)
    missing = len(lesson_indices) - len(out)
    return out, (f"{missing} lesson(s) not labelled" if missing else None)


def run_judge(store: Store, run_id: str, judge: Judge) -> JudgeRun:
    """Label the valid lessons of ``run_id`` with ``judge``; append them as label rows.

    One request per verdict with lessons, in verdict order. A provider error or
    an unusable answer is listed in :attr:`JudgeRun.errors` and the run goes on.
    Live calls (a provider whose ``live`` is true) are recorded into the
    ``completions`` table first, so a rerun with :meth:`Judge.replay` makes zero
    live calls. Re-judging adds nothing (label rows are keyed by annotator).
    """
    extractor_id = str(run_info(store, run_id)["extractor_id"])
    cands = store.sql(
        "SELECT verdict_seq, verdict_hash, lesson_index, text, evidence FROM candidates "
        "WHERE run_id = ? AND valid ORDER BY verdict_seq, lesson_index", [run_id]).df()
    payloads = verdict_payloads(store).set_index("verdict_hash")["payload"]
    key = judge.replay_key(extractor_id)
    rows: list[dict[str, Any]] = []
    records: list[dict[str, Any]] = []
    errors: list[str] = []
    calls = 0
    live = is_live(judge.provider)
    for vhash, les in cands.groupby("verdict_hash", sort=False):
        triples = list(zip(les["lesson_index"].astype(int), les["text"], les["evidence"],
                           strict=True))
        request = build_judge_request(
            judge.template, json.loads(payloads[vhash]), triples, verdict_hash=str(vhash),
            extractor=key, model=judge.model, parameters=dict(judge.parameters))
        calls += 1
        try:
            completion = judge.provider.complete(request)
        except ProviderError as exc:
            errors.append(f"verdict {vhash}: {exc}")
            continue
        if live and not completion.replayed:
            rec = completion_record(request, completion)
            rec.pop("replayed")
            records.append(rec)
        got, err = parse_judgement(completion.text, {t[0] for t in triples})
        if err:
            errors.append(f"verdict {vhash}: {err}")
        rows.extend({"verdict_hash": str(vhash), "extractor": extractor_id, "lesson_index": i,
                     "useful": u, "annotator": judge.annotator} for i, u in got.items())
    record_calls(store, records)
    df = pd.DataFrame(rows, columns=["verdict_hash", "extractor", "lesson_index", "useful",
                                     "annotator"])
    added = append_labels(store, df, source=f"judge:{run_id}")[0] if len(df) else 0
    return JudgeRun(run_id=run_id, annotator=judge.annotator,
                    n_verdicts=int(cands["verdict_hash"].nunique()), n_lessons=len(cands),
                    n_labels=len(df), labels_added=added, provider_calls=calls,
                    recorded=len(records), errors=errors)
