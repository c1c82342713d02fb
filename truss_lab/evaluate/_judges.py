"""Judges: models that produce truth -- labels of a run's lessons (:class:`Judge`),
similarities of lessons to reference lessons (:class:`JudgeMatcher`) -- and how far
a judge agrees with people before anyone relies on it (:func:`judge_agreement`).

Both judges go through the same Provider seam as extraction and are recorded
and replayable like it: every live call is recorded into the ``completions``
table keyed by (verdict_hash, ``<kind>:<model>@<prompt version>/<judged
extractor_id>``, the judged run) with its request hash; ``replay`` answers from
those recordings (or a Formats §2 file) and refuses a changed request. They live
in evaluate, above extract, because what they produce is truth.

**A call belongs to the judge run that paid for it**: the judge (or judge matcher)
on one extraction run (``completions.judged_run_id``, migration 013). Two runs of
one extractor judged live each keep every call they paid for, and each replays
(:class:`RecordedCalls`) and resumes (:func:`recorded_answers`) from its own: never
the other run's answers, even to the same request. Calls recorded before migration
013 name no run and answer for every run of their extractor, as before; a replay of
a run with no recording of its own for a verdict (a rerun of a judged run) takes any
run's recorded answer to that very request (same request hash).

**The label judge.** :class:`Judge` is a provider, a versioned judge prompt
(``judge-v1``) and a model. :func:`run_judge` sends it one request per verdict
of a run (the verdict and the run's valid lessons on it), parses the answer
(:func:`parse_judgement`) and appends the labels to the ``labels`` table under
the annotator ``judge:<model>@<prompt version>`` (:attr:`Judge.annotator`)
through the one writer of label rows,
:func:`~truss_lab.ingest._ingest.append_labels`. Judge labels never join the
human majority unless asked: the labels truth leaves out annotators starting
with ``judge:`` (:data:`~truss_lab.store._labels.JUDGE_PREFIX`) by default.

**The judge matcher.** :class:`JudgeMatcher` scores how far each lesson of a
verdict expresses each reference lesson (prompt ``match-v1``). It is a matcher
in the sense of :mod:`truss_lab.score._matching`: called on the lessons and the
references of ONE verdict it returns their similarity matrix, so it plugs in
wherever the semantic or lexical matcher does (``reference_truth(..., matcher=)``,
``sweep_run``, ``choose_run_threshold``, ``compare_runs``, ``--matcher judge:SPEC``
on the CLI); the greedy one-to-one assignment stays
:func:`~truss_lab.score._matching.match_lessons`. One request per verdict lists
its lessons (``[L<lesson_index>] ...``) and its reference wordings (``[R1]``,
``[R2]``, ...) and asks for ``{"pairs": [{"lesson": "L0", "reference": "R1",
"similarity": 0.9}, ...]}``. The answer is parsed strictly
(:func:`parse_similarities`): every pair exactly once, each similarity a number
in [0, 1]. Anything else leaves that verdict's pairs without a similarity (NaN:
evaluation leaves the verdict out and counts it) and the error is kept in
:attr:`JudgeMatcher.errors`; it is never 0-filled as if judged. Once given a store
(:meth:`JudgeMatcher.record_to`; :func:`match_run` does) it records each live call as
it is answered, under the run whose lessons it matched (the lessons' ``run_id``), else
they wait in memory for :meth:`JudgeMatcher.record`; answers are memoised by run and
request hash, so evaluating a run several times (a sweep, then a threshold choice)
asks the model once per verdict.

**Paid calls are kept as they are made.** A live judge and a live judge matcher
record each call the moment it is answered (one small transaction; a call takes
seconds), not at the end: a run killed after 86 calls keeps those 86. Run again, each
first answers from its recorded calls of the same request (:func:`recorded_answers`:
same judge key and request hash), so a resumed run makes no call twice. That holds for
a finished judge run too, its unusable answers (prose, malformed) included: a second
live judge of the same run replays every answer and calls nothing. Each result says so
(``resumed``: answers replayed from the run's recordings, no call made;
``resumed_unusable``: those of them that could not be used), and ``truss-lab judge``
/ ``match`` print it. To ask the model again, judge a rerun of the run (``truss-lab
rerun RUN --run-id NEW``): a new run has no recordings of its own, so its live judge
calls, and records the answers as NEW's, beside RUN's (which RUN keeps replaying).

**Agreement.** On the lessons both labelled -- the human majority label (judges
left out, ties left out) and the judge's label -- :func:`judge_agreement`
reports Cohen's kappa, the judge's precision (of the lessons it calls useful,
the share people call useful), recall (of the lessons people call useful, the
share it calls useful) and raw accuracy, with percentile intervals from a
bootstrap over verdicts (lessons of one verdict are correlated, so verdicts are
resampled whole).
"""

from __future__ import annotations

import html
import json
import math
import threading
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pyarrow as pa

from ..core._errors import BadInputError, ProviderError
from ..core._secrets import redact
from ..extract._extractor import ReplayProvider, completion_record
from ..extract._gate import record_completions
from ..extract._limits import DEFAULT_MAX_CONSECUTIVE_FAILURES
from ..extract._prompts import (
    PromptTemplate,
    build_judge_request,
    build_match_request,
    check_kind,
    get_template,
    known_templates,
)
from ..extract._providers import (
    CircuitBreaker,
    CircuitOpenError,
    Completion,
    CompletionRequest,
    OpenAICompatibleProvider,
    Provider,
    is_live,
)
from ..ingest._ingest import FILE_TO_TABLE, LABELS_KEY, append_labels
from ..journal._table import verdict_payloads
from ..store._ingested import judge_recordings, judge_run_answers, stored_conflicts
from ..store._labels import JUDGE_PREFIX, judge_annotators, lesson_keys
from ..store._runs import run_info, run_lessons
from ..store._store import Store
from ._agreement import CANDIDATE_KEY, agreement_table, kappa_counts, majority_labels
from ._bootstrap import check_boot
from ._sweep import UndefinedMetricWarning
from ._truth import MatcherLeftOutWarning, reference_truth, run_labels

__all__ = [
    "DEFAULT_JUDGE_MATCH_THRESHOLD",
    "MATCH_PREFIX",
    "Judge",
    "JudgeAgreement",
    "JudgeMatcher",
    "JudgeRun",
    "judge_agreement",
    "judge_names",
    "match_run",
    "parse_judgement",
    "parse_similarities",
    "recorded_answers",
    "run_judge",
]


# --------------------------------------------------------------------------- the label judge


def replay_provider(recordings: Any, prefix: str,
                    known_prompts: frozenset[str] | None = None) -> Any:
    """A provider of a judge's recorded calls: from a Store (its ``completions`` rows
    whose extractor starts with ``prefix``, ``<kind>:<model>@<prompt>/``), a
    :class:`RecordedCalls` answering each judged run from its own; from a §2 JSONL path
    or a frame, a :class:`~truss_lab.extract._extractor.ReplayProvider`.
    ``known_prompts``: the prompt versions whose recorded request hashes are checked
    (default: this process's registry)."""
    if isinstance(recordings, Store):
        rows = judge_recordings(recordings, prefix)
        if rows.empty:
            raise BadInputError(f"no recorded calls of judge {prefix[:-1]!r} in the store",
                                field="--extractor")
        return RecordedCalls(rows, known_prompts=known_prompts)
    return ReplayProvider(recordings, known_prompts=known_prompts)


def _completion(r: Any) -> Completion:
    """The recorded answer of ``completions`` row ``r`` (a namedtuple)."""
    return Completion(
        text=r.text, model=r.model, request_hash=r.request_hash, replayed=True,
        latency_ms=None if pd.isna(r.latency_ms) else float(r.latency_ms),
        prompt_tokens=None if pd.isna(r.prompt_tokens) else int(r.prompt_tokens),
        completion_tokens=None if pd.isna(r.completion_tokens) else int(r.completion_tokens))


class RecordedCalls:
    """A judge's (or judge matcher's) calls recorded in a store, replayed per judge run.

    :meth:`for_run` is the provider of the judge run on one extraction run: a request
    is answered by the recording that run paid for (``judged_run_id``), else by one
    recorded before migration 013 (no run named), both checked against the request as
    :class:`~truss_lab.extract._extractor.ReplayProvider` checks them; a verdict with
    neither is answered by any run's recorded answer to this very request (equal
    request hash; the earliest), as a rerun of a judged run needs. Used as a provider
    itself it answers for no run in particular (the recordings without one, then by
    request hash)."""

    provider_id: str = "replay"
    live: bool = False  # its completions are recordings already

    def __init__(self, rows: pd.DataFrame, *,
                 known_prompts: frozenset[str] | None = None) -> None:
        self._rows = rows
        self._known = known_prompts
        self._runs: dict[str | None, ReplayProvider] = {}
        self._by_hash: dict[str, Completion] = {}
        for r in rows.itertuples(index=False):  # oldest first: the earliest stays
            if isinstance(r.request_hash, str) and r.request_hash not in self._by_hash:
                self._by_hash[r.request_hash] = _completion(r)
        self._lock = threading.Lock()
        self._by_hash_calls = 0

    def __len__(self) -> int:
        return len(self._rows)

    @property
    def calls(self) -> int:
        """Requests answered so far, for every run."""
        with self._lock:
            return self._by_hash_calls + sum(p.calls for p in self._runs.values())

    @property
    def unchecked_requests(self) -> int:
        """Requests answered from a recording without a request hash to check."""
        with self._lock:
            return sum(p.unchecked_requests for p in self._runs.values())

    def __repr__(self) -> str:
        return f"RecordedCalls({len(self._rows)} recordings)"

    def for_run(self, judged_run_id: str | None) -> _RunCalls:
        """The provider of the judge run on ``judged_run_id`` (None: no run named)."""
        return _RunCalls(self, judged_run_id)

    def complete(self, request: CompletionRequest) -> Completion:
        """:meth:`answer` for no run in particular."""
        return self.answer(request, None)

    def answer(self, request: CompletionRequest, judged_run_id: str | None) -> Completion:
        """The recorded answer to ``request`` of the judge run on ``judged_run_id``;
        :class:`ProviderError` when there is none or the run's own answers a changed
        request."""
        with self._lock:
            own = self._runs.get(judged_run_id)
            if own is None:
                own = self._runs[judged_run_id] = ReplayProvider(
                    self._rows_of(judged_run_id), known_prompts=self._known)
        key = (request.verdict_hash, request.extractor, request.sample_index or 0)
        if key in own:
            return own.complete(request)
        other = self._by_hash.get(request.request_hash)
        if other is None:
            return own.complete(request)  # raises: no recording (says how many loaded)
        with self._lock:
            self._by_hash_calls += 1
        return other

    def _rows_of(self, judged_run_id: str | None) -> pd.DataFrame:
        """The run's own recordings, and per (verdict, key, sample) it lacks the earliest
        recorded before migration 013."""
        rows = self._rows
        runs = rows["judged_run_id"]
        mine = rows[(runs == judged_run_id).to_numpy(dtype=bool)]
        old = rows[runs.isna().to_numpy()]
        keys = ["verdict_hash", "extractor_id", "sample_index"]
        old = old.drop_duplicates(keys)  # oldest first
        if mine.empty:
            return old
        old = old.merge(mine[keys].drop_duplicates().assign(_mine=True), on=keys, how="left")
        return pd.concat([mine, old[old["_mine"].isna()].drop(columns="_mine")],
                         ignore_index=True)


@dataclass(frozen=True)
class _RunCalls:
    """:class:`RecordedCalls` as the provider of one judge run."""

    calls: RecordedCalls
    judged_run_id: str | None
    provider_id: ClassVar[str] = "replay"
    live: ClassVar[bool] = False

    def complete(self, request: CompletionRequest) -> Completion:
        return self.calls.answer(request, self.judged_run_id)


def run_provider(provider: Any, judged_run_id: str | None) -> Any:
    """``provider`` as the judge run on ``judged_run_id`` calls it: recorded calls
    (:class:`RecordedCalls`) answer from that run's; any other provider is itself."""
    return provider.for_run(judged_run_id) if isinstance(provider, RecordedCalls) else provider


def recorded_answers(store: Store, key: str,
                     judged_run_id: str | None = None) -> dict[str, Completion]:
    """The recorded answers of the judge run on ``judged_run_id`` under replay key
    ``key``, by request hash: the calls that run paid for, and those recorded before
    migration 013 (no run named). What a live judge or judge matcher answers from
    before calling, so a resumed run pays for no call twice, and never answers from
    another run's calls (a second run of one extractor is judged anew)."""
    return {r.request_hash: _completion(r)
            for r in judge_run_answers(store, key, judged_run_id).itertuples(index=False)}


def record_calls(store: Store, records: list[dict[str, Any]]) -> int:
    """Append a judge's live calls to ``completions`` (in one transaction; each record
    names the run it judged as ``judged_run_id``); the rows added."""
    if not records:
        return 0
    with store.transaction():
        return record_completions(store, records)


class ModelJudge:
    """What a judge and a judge matcher share: built on a live OpenAI-compatible
    endpoint or on recorded calls. A subclass names its replay-key prefix
    (``_PREFIX``) and default prompt (``_TEMPLATE``) and takes (provider, model,
    template, parameters)."""

    _PREFIX: ClassVar[str]
    _TEMPLATE: ClassVar[str]
    _KIND: ClassVar[str]

    @classmethod
    def prompt(cls, template: str | PromptTemplate | None = None,
               store: Store | None = None) -> PromptTemplate:
        """The template ``template`` names (default the class's prompt), looked up in
        the registry and ``store``'s ``prompts`` table; one of another kind is refused."""
        tpl = (get_template(template or cls._TEMPLATE, store)
               if template is None or isinstance(template, str) else template)
        return check_kind(tpl, cls._KIND)

    @classmethod
    def openai(cls, base_url: str, model: str, *, template: str | PromptTemplate | None = None,
               parameters: Mapping[str, Any] | None = None,
               max_consecutive_failures: int | None = DEFAULT_MAX_CONSECUTIVE_FAILURES,
               store: Store | None = None, **provider_options: Any) -> Any:
        """A live OpenAI-compatible endpoint as the model (temperature 0 by default);
        ``template`` defaults to the class's prompt (``judge-v1``, ``match-v1``): a
        :class:`PromptTemplate` of the class's kind or a registered version name
        (``store``'s ``prompts`` table included).

        Behind the circuit breaker extraction uses: after ``max_consecutive_failures``
        calls in a row that fail after their retries (None: never) the next call raises
        :class:`~truss_lab.extract._providers.CircuitOpenError`, which stops the judge
        run or the match before anything is written. ``provider_options`` go to
        :class:`~truss_lab.extract._providers.OpenAICompatibleProvider` (``deadline``,
        ``max_retries``, ``max_response_bytes``, ...)."""
        provider: Any = OpenAICompatibleProvider(base_url, model, **provider_options)
        if max_consecutive_failures is not None:
            provider = CircuitBreaker(provider, max_consecutive_failures)
        return cls(provider, model, cls.prompt(template, store),
                   dict(parameters or {"temperature": 0}))

    @classmethod
    def replay(cls, recordings: Any, model: str, *, template: str | PromptTemplate | None = None,
               parameters: Mapping[str, Any] | None = None,
               store: Store | None = None) -> Any:
        """Replay the recorded calls: a Store (its ``completions`` table), a §2 JSONL
        path or a frame. Give the ``parameters`` the live model used (the request
        hash covers them; :meth:`openai` uses temperature 0)."""
        tpl = cls.prompt(template, recordings if isinstance(recordings, Store) else store)
        params = dict(parameters) if parameters is not None else {"temperature": 0}
        known = frozenset(known_templates()) | {tpl.version}  # its hashes are checked
        return cls(replay_provider(recordings, f"{cls._PREFIX}{model}@{tpl.version}/", known),
                   model, tpl, params)


@dataclass(frozen=True)
class Judge(ModelJudge):
    """A judge configuration: a provider, a judge prompt template and a model.

    Its labels are stored under :attr:`annotator` = ``judge:<model>@<prompt version>``.

    Parameters
    ----------
    provider : Provider
        What answers its requests (a live client or a replay).
    model : str
        The model asked.
    template : PromptTemplate
        The judge prompt (default ``judge-v1``).
    parameters : mapping
        Sampling parameters sent with each request.
    """

    _PREFIX: ClassVar[str] = JUDGE_PREFIX
    _TEMPLATE: ClassVar[str] = "judge-v1"
    _KIND: ClassVar[str] = "judge"

    provider: Provider
    model: str
    template: PromptTemplate = field(default_factory=lambda: get_template("judge-v1"))
    parameters: Mapping[str, Any] = field(default_factory=dict)

    @property
    def annotator(self) -> str:
        """The annotator name of this judge's label rows."""
        return f"{JUDGE_PREFIX}{self.model}@{self.template.version}"

    def replay_key(self, extractor_id: str) -> str:
        """The recordings' ``extractor`` for this judge judging ``extractor_id``'s lessons.

        Parameters
        ----------
        extractor_id : str
            The judged extractor.

        Returns
        -------
        str
            ``<annotator>/<extractor_id>``.
        """
        return f"{self.annotator}/{extractor_id}"


_LABEL_COLUMNS = ("verdict_hash", "extractor", "lesson_index", "useful", "annotator")


@dataclass(frozen=True)
class JudgeRun:
    """What :func:`run_judge` did: label rows written, calls made, answers it could not use."""

    run_id: str
    """The judged run."""
    annotator: str
    """The judge's annotator name."""
    n_verdicts: int
    """Verdicts with lessons asked about."""
    n_lessons: int
    """Lessons judged."""
    n_labels: int
    """Labels the answers gave."""
    labels_added: int
    """Label rows written."""
    provider_calls: int
    """Calls sent to the provider."""
    recorded: int
    """Live calls recorded for replay."""
    errors: list[str] = field(default_factory=list, repr=False)
    """The verdicts whose answer could not be used, with why."""
    resumed: int = 0
    """Answers a live judge replayed from this judge run's recordings (made by an
    earlier judge of the same run, finished or interrupted) instead of calling: no
    call was made for them."""
    labels: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=list(
        _LABEL_COLUMNS)), repr=False, compare=False)
    """The label rows this run's answers gave (§3 columns), stored or not: label rows
    are keyed by lesson (verdict, extractor, lesson index) and annotator, not by run,
    so where another run of the same extractor was judged first its stored labels
    stand (:attr:`labels_kept`)."""
    labels_kept: int = 0
    """Label rows of this run that the ``labels`` table held already with the other
    label (kept as stored): the same judge's labels of another run of the extractor."""
    resumed_unusable: int = 0
    """Of :attr:`resumed`, the replayed answers that could not be used (wholly or in
    part; in :attr:`errors`): a recorded answer, not one the model gave to this call."""

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "annotator": self.annotator,
                "n_verdicts": self.n_verdicts, "n_lessons": self.n_lessons,
                "n_labels": self.n_labels, "labels_added": self.labels_added,
                "labels_kept": self.labels_kept,
                "provider_calls": self.provider_calls, "recorded": self.recorded,
                "resumed": self.resumed, "resumed_unusable": self.resumed_unusable,
                "errors": self.errors}


def parse_judgement(text: str, lesson_indices: set[int]) -> tuple[dict[int, int], str | None]:
    """The labels in a judge's answer: ``({lesson_index: useful}, error or None)``.

    Accepts the JSON object alone or inside prose / a code fence; keeps items
    whose ``lesson`` is one of ``lesson_indices`` and whose ``useful`` is 0/1 or a
    boolean; a lesson labelled twice keeps its first label. Never raises.

    Parameters
    ----------
    text : str
        The judge's answer.
    lesson_indices : set of int
        The lessons the request showed.

    Returns
    -------
    tuple of (dict, str or None)
        The labels by lesson index, and the error when no labels list was found.
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
    ``completions`` table as each is answered, under this judge run (the judge on
    ``run_id``), so a rerun with :meth:`Judge.replay` makes zero live calls and gives
    this run's answers, and a live run killed part way, run again, answers from the
    calls it recorded and calls only for the rest (:attr:`JudgeRun.resumed`).
    Re-judging adds nothing (label rows are keyed by annotator).

    Parameters
    ----------
    store : Store
        The database.
    run_id : str
        The run whose lessons are judged.
    judge : Judge
        The judge (a model, its prompt and provider).

    Returns
    -------
    JudgeRun
        What it did: labels written, calls, recordings, errors.
    """
    extractor_id = str(run_info(store, run_id)["extractor_id"])
    cands = run_lessons(store, run_id)
    payloads = verdict_payloads(store).set_index("verdict_hash")["payload"]
    key = judge.replay_key(extractor_id)
    rows: list[dict[str, Any]] = []
    errors: list[str] = []
    calls = recorded = resumed = resumed_unusable = 0
    live = is_live(judge.provider)
    provider = run_provider(judge.provider, run_id)
    done = recorded_answers(store, key, run_id) if live else {}
    for vhash, les in cands.groupby("verdict_hash", sort=False):
        triples = list(zip(les["lesson_index"].astype(int), les["text"], les["evidence"],
                           strict=True))
        request = build_judge_request(
            judge.template, json.loads(payloads[vhash]), triples, verdict_hash=str(vhash),
            extractor=key, model=judge.model, parameters=dict(judge.parameters))
        completion = done.get(request.request_hash)
        if completion is not None:
            resumed += 1  # paid for by an earlier, interrupted run
        else:
            calls += 1
            try:
                completion = provider.complete(request)
            except CircuitOpenError:
                raise  # the endpoint is gone: stop; the calls answered are recorded
            except ProviderError as exc:
                errors.append(f"verdict {vhash}: {exc}")
                continue
            if live and not completion.replayed:
                rec = {**completion_record(request, completion), "judged_run_id": run_id}
                rec.pop("replayed")
                recorded += record_calls(store, [rec])  # now: a kill keeps it
        got, err = parse_judgement(completion.text, {t[0] for t in triples})
        if err:
            errors.append(f"verdict {vhash}: {err}")
            resumed_unusable += request.request_hash in done
        rows.extend({"verdict_hash": str(vhash), "extractor": extractor_id, "lesson_index": i,
                     "useful": u, "annotator": judge.annotator} for i, u in got.items())
    df = pd.DataFrame(rows, columns=list(_LABEL_COLUMNS))
    kept = added = 0
    if len(df):
        kept = stored_conflicts(store, "labels", pa.Table.from_pandas(
            df.rename(columns=FILE_TO_TABLE), preserve_index=False), LABELS_KEY, ["useful"])[0]
        added = append_labels(store, df, source=f"judge:{run_id}")[0]
    return JudgeRun(run_id=run_id, annotator=judge.annotator,
                    n_verdicts=int(cands["verdict_hash"].nunique()), n_lessons=len(cands),
                    n_labels=len(df), labels_added=added, provider_calls=calls,
                    recorded=recorded, errors=errors, resumed=resumed, labels=df,
                    labels_kept=kept, resumed_unusable=resumed_unusable)

# --------------------------------------------------------------------------- the judge matcher


#: The replay keys of a judge matcher's calls start with this.
MATCH_PREFIX = "match:"

#: A judge's similarity is a degree of "says the same thing" in [0, 1]: half way.
DEFAULT_JUDGE_MATCH_THRESHOLD = 0.5


def _json_object(text: str) -> Any:
    """The one JSON object of an answer, allowing only a code fence around it."""
    body = text.strip()
    if body.startswith("```"):
        body = body.split("\n", 1)[1] if "\n" in body else ""
        body = body.rsplit("```", 1)[0].strip()
    return json.loads(body)


def parse_similarities(text: str, lessons: list[str],
                       references: list[str]) -> tuple[np.ndarray | None, str | None]:
    """The similarity matrix in a match answer, strictly: ``(matrix, None)`` or
    ``(None, error)``.

    ``lessons`` / ``references`` are the tags the request showed (``"L0"``,
    ``"R1"``), in matrix order. The answer must be one JSON object (a code fence
    around it is allowed) with a ``"pairs"`` list holding every (lesson,
    reference) pair exactly once, each with a ``"similarity"`` number (not a
    boolean) in [0, 1]. Never raises.

    Parameters
    ----------
    text : str
        The matcher's answer.
    lessons : list of str
        The lesson tags the request showed, in matrix order.
    references : list of str
        The reference tags, in matrix order.

    Returns
    -------
    tuple of (numpy.ndarray or None, str or None)
        The lessons x references matrix, or None and why.
    """
    try:
        root = _json_object(text)
    except RecursionError:  # a hostile answer nested past Python's parser
        return None, "not one JSON object (nested too deep)"
    except ValueError as exc:
        return None, f"not one JSON object ({exc})"
    if not isinstance(root, dict) or not isinstance(root.get("pairs"), list):
        return None, "no 'pairs' list in the answer"
    li = {t: k for k, t in enumerate(lessons)}
    ri = {t: k for k, t in enumerate(references)}
    mat = np.full((len(lessons), len(references)), np.nan)
    for n, item in enumerate(root["pairs"]):
        if not isinstance(item, dict):
            return None, f"pairs[{n}] is not an object"
        lesson, ref, sim = item.get("lesson"), item.get("reference"), item.get("similarity")
        if lesson not in li or ref not in ri:
            return None, f"pairs[{n}] names an unknown lesson or reference: {lesson!r}, {ref!r}"
        if (type(sim) not in (int, float) or not math.isfinite(sim)
                or not 0.0 <= sim <= 1.0):
            return None, f"pairs[{n}] similarity {sim!r} is not a number in [0, 1]"
        if not np.isnan(mat[li[lesson], ri[ref]]):
            return None, f"pairs[{n}] repeats the pair ({lesson}, {ref})"
        mat[li[lesson], ri[ref]] = float(sim)
    missing = int(np.isnan(mat).sum())
    if missing:
        return None, f"{missing} of {mat.size} pair(s) not scored"
    return mat, None


def _triples(df: pd.DataFrame) -> list[tuple[int, str, Any]]:
    """(lesson_index or position, text, evidence) of each row."""
    ev = df["evidence"] if "evidence" in df.columns else [None] * len(df)
    idx = (df["lesson_index"].astype(int).tolist() if "lesson_index" in df.columns
           else list(range(len(df))))
    return list(zip(idx, df["text"].fillna("").astype(str).tolist(), list(ev), strict=True))


@dataclass(eq=False)
class JudgeMatcher(ModelJudge):
    """A matcher that asks a model: a provider, a match prompt template and a model.

    ``match_threshold`` is the similarity a lesson needs to claim a reference
    when evaluation is not given one (:data:`DEFAULT_JUDGE_MATCH_THRESHOLD`).
    State after use: :attr:`errors` (``{"<extractor_id>/<verdict_hash>": why}``
    for verdicts left without similarities), :attr:`requests` (verdicts asked,
    memoised ones once), :attr:`pending` (live calls not yet recorded),
    :attr:`recorded` (live calls recorded), :attr:`resumed` (answers replayed from the
    judged run's recordings, an earlier matcher's on it: no call made),
    :attr:`resumed_errors` (the keys of :attr:`errors` whose answer was such a
    recording). Built
    like a :class:`Judge`: :meth:`openai` (live) or
    :meth:`replay` (its recorded calls in a Store, a completions JSONL path or a frame).

    Parameters
    ----------
    provider : Provider
        What answers its requests.
    model : str
        The model asked.
    template : PromptTemplate
        The match prompt (default ``match-v1``).
    parameters : mapping
        Sampling parameters sent with each request.
    match_threshold : float
        The similarity a lesson needs to claim a reference (above).
    """

    _PREFIX: ClassVar[str] = MATCH_PREFIX
    _TEMPLATE: ClassVar[str] = "match-v1"
    _KIND: ClassVar[str] = "match"

    provider: Provider
    model: str
    template: PromptTemplate = field(default_factory=lambda: get_template("match-v1"))
    parameters: Mapping[str, Any] = field(default_factory=dict)
    match_threshold: float = DEFAULT_JUDGE_MATCH_THRESHOLD
    errors: dict[str, str] = field(default_factory=dict, init=False, repr=False)
    pending: list[dict[str, Any]] = field(default_factory=list, init=False, repr=False)
    requests: int = field(default=0, init=False)
    recorded: int = field(default=0, init=False)
    resumed: int = field(default=0, init=False)
    resumed_errors: set[str] = field(default_factory=set, init=False, repr=False)
    _memo: dict[tuple[str | None, str], tuple[np.ndarray | None, str | None, bool]] = field(
        default_factory=dict, init=False, repr=False)
    _store: Store | None = field(default=None, init=False, repr=False)
    _answers: dict[tuple[str, str | None], dict[str, Completion]] = field(
        default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if not 0.0 <= float(self.match_threshold) <= 1.0:
            raise BadInputError(f"match_threshold must be in [0, 1], got "
                                f"{self.match_threshold}", field="match_threshold")

    @property
    def name(self) -> str:
        """``judge:<model>@<prompt version>``: what evaluation reports as the matcher."""
        return f"judge:{self.model}@{self.template.version}"

    def replay_key(self, extractor_id: str) -> str:
        """The recordings' ``extractor`` for this matcher on ``extractor_id``'s lessons.

        Parameters
        ----------
        extractor_id : str
            The matched extractor.

        Returns
        -------
        str
            ``match:<model>@<prompt version>/<extractor_id>``.
        """
        return f"{MATCH_PREFIX}{self.model}@{self.template.version}/{extractor_id}"

    def __call__(self, lessons: pd.DataFrame, references: pd.DataFrame) -> np.ndarray:
        """Similarities of one verdict's lessons (rows) to its references (columns);
        all NaN when the model's answer could not be used."""
        n, m = len(lessons), len(references)
        if n == 0 or m == 0:
            return np.zeros((n, m))
        if "verdict_hash" not in lessons.columns:
            raise BadInputError("a judge matcher needs the lessons' verdict_hash (its "
                                "recordings are keyed by it)", field="lessons")
        verdicts = pd.unique(lessons["verdict_hash"].astype(str))
        if len(verdicts) != 1:
            raise BadInputError(f"a matcher scores one verdict at a time, got {len(verdicts)}",
                                field="lessons")
        vhash = str(verdicts[0])
        extractor_id = (str(lessons["extractor_id"].iloc[0])
                        if "extractor_id" in lessons.columns else "")
        # The judge run this call belongs to: the matcher on the lessons' run.
        run = lessons["run_id"].iloc[0] if "run_id" in lessons.columns else None
        run = None if run is None or pd.isna(run) else str(run)
        triples = _triples(lessons)
        refs = [(t, e) for _, t, e in _triples(references)]
        request = build_match_request(self.template, triples, refs, verdict_hash=vhash,
                                      extractor=self.replay_key(extractor_id),
                                      model=self.model, parameters=dict(self.parameters))
        key = (run, request.request_hash)
        if key not in self._memo:
            self._memo[key] = self._ask(request, run, [f"L{t[0]}" for t in triples],
                                        [f"R{k}" for k in range(1, m + 1)])
        mat, err, resumed = self._memo[key]
        if err is not None:
            # The error may quote the server's answer (an unknown lesson tag): redacted,
            # as every text from outside is before it is kept or shown.
            self.errors[f"{extractor_id}/{vhash}"] = redact(err)
            if resumed:
                self.resumed_errors.add(f"{extractor_id}/{vhash}")
            else:
                self.resumed_errors.discard(f"{extractor_id}/{vhash}")
            return np.full((n, m), np.nan)
        assert mat is not None
        return mat.copy()

    def _ask(self, request: Any, run: str | None, ltags: list[str],
             rtags: list[str]) -> tuple[np.ndarray | None, str | None, bool]:
        """The similarities, the error and whether the answer was replayed from the
        run's recordings (no call made)."""
        self.requests += 1
        completion = self._recorded_answer(request, run)
        if completion is not None:
            self.resumed += 1  # paid for by an earlier matcher on this run
            return (*parse_similarities(completion.text, ltags, rtags), True)
        try:
            completion = run_provider(self.provider, run).complete(request)
        except CircuitOpenError:
            raise  # the endpoint is gone: stop the evaluation, nothing is memoised
        except ProviderError as exc:
            return None, f"provider: {exc}", False
        if is_live(self.provider) and not completion.replayed:
            rec = {**completion_record(request, completion), "judged_run_id": run}
            rec.pop("replayed")
            self.pending.append(rec)
            if self._store is not None:
                self.record(self._store)  # as it goes: a kill keeps what was paid for
        return (*parse_similarities(completion.text, ltags, rtags), False)

    def _recorded_answer(self, request: Any, run: str | None) -> Completion | None:
        """A recording matcher's recorded answer to this very request on ``run``'s
        lessons (an earlier, interrupted judge run on it paid for it)."""
        if self._store is None:
            return None
        key = (request.extractor, run)
        if key not in self._answers:
            self._answers[key] = recorded_answers(self._store, request.extractor, run)
        return self._answers[key].get(request.request_hash)

    def record_to(self, store: Store) -> None:
        """Record this live matcher's calls into ``store`` as they are made (those made
        so far at once), and answer a request its recordings there already answer
        instead of calling again. Nothing for a matcher that calls no model (replay).

        Parameters
        ----------
        store : Store
            The database the calls are recorded in.
        """
        if not is_live(self.provider):
            return
        self._store = store
        self._answers.clear()
        self.record(store)

    def record(self, store: Store) -> int:
        """Append the live calls made so far to ``completions``.

        Parameters
        ----------
        store : Store
            The database.

        Returns
        -------
        int
            Calls written.
        """
        n = record_calls(store, self.pending)
        self.pending.clear()
        self.recorded += n
        return n


def match_run(store: Store, run_id: str, matcher: JudgeMatcher, *,
              references: Any = None, match_threshold: float | None = None,
              score: str = "salience") -> dict[str, Any]:
    """Match the valid lessons of ``run_id`` to their verdicts' references with a judge
    matcher, record its live calls, and say what it did (integer counts); the
    verdicts it leaves out are in the result, not a warning.

    What ``truss-lab match`` runs before evaluating by replay: the returned dict
    has the matcher's name, ``requests`` (verdicts asked, replayed ones included),
    ``provider_calls`` (of them, the calls sent to the provider, as
    :attr:`JudgeRun.provider_calls`), live calls recorded, answers ``resumed``
    (replayed from the run's recordings, made by an earlier matcher on it: no call
    made) and ``resumed_unusable`` (those of them in ``errors``), verdicts and lessons
    judged, lessons matched, references, and ``errors`` (the verdicts left without
    similarities, with why).

    Parameters
    ----------
    store : Store
        The database (the live calls are recorded in it).
    run_id : str
        The run.
    matcher : JudgeMatcher
        The judge matcher.
    references : path or pandas.DataFrame, optional
        The reference lessons (default the store's).
    match_threshold : float, optional
        The similarity at which a lesson matches (default the matcher's).
    score : str, default "salience"
        The order of the one-to-one assignment.

    Returns
    -------
    dict
        The counts above.
    """
    asked, recorded, resumed = matcher.requests, matcher.recorded, matcher.resumed
    matcher.record_to(store)
    with warnings.catch_warnings():
        # The verdicts left out are in the result (``errors``, ``verdicts_unmatched``).
        warnings.simplefilter("ignore", MatcherLeftOutWarning)
        truth = reference_truth(store, run_id, references=references, score=score,
                                matcher=matcher, match_threshold=match_threshold)
    matcher.record(store)
    recorded = matcher.recorded - recorded
    prefix = f"{run_info(store, run_id)['extractor_id']}/"
    errors = {k: v for k, v in matcher.errors.items() if k.startswith(prefix)}
    c = truth.counts
    resumed = matcher.resumed - resumed
    return {"run_id": run_id, "matcher": matcher.name, "requests": matcher.requests - asked,
            "provider_calls": matcher.requests - asked - resumed,
            "recorded": recorded, "resumed": resumed,
            "resumed_unusable": sum(k in matcher.resumed_errors for k in errors),
            "verdicts": truth.n_verdicts,
            "verdicts_unmatched": int(c.get("verdicts_unmatched", 0)),
            "lessons": truth.n_lessons, "matched": int(c["matched"]),
            "references": truth.n_references, "match_threshold": truth.match_threshold,
            "errors": errors}

# --------------------------------------------------------------------------- agreement with people


_METRICS = ("kappa", "precision", "recall", "accuracy")


@dataclass(frozen=True, eq=False)
class JudgeAgreement:
    """A judge against the human majority on the lessons both labelled.

    ``table`` has one row per metric (kappa, precision, recall, accuracy) with
    ``value``, ``low`` and ``high`` (the verdict-bootstrap percentile interval at
    ``confidence``). ``counts``: ``n`` lessons both labelled, ``tp`` (both say
    useful), ``fp`` (judge useful, people not), ``fn``, ``tn``, ``verdicts``;
    ``n_judge_only`` and ``n_human_only`` lessons only one side labelled.

    Parameters
    ----------
    judge : str
        The judge annotator.
    run_id : str or None
        The run (None: every run).
    table : pandas.DataFrame
        One row per metric (above).
    counts : dict of str to int
        The counts above.
    confidence : float
        The intervals' level.
    n_boot : int
        Their replicates.
    pairs : pandas.DataFrame
        One row per lesson both labelled.
    """

    judge: str
    run_id: str | None
    table: pd.DataFrame
    counts: dict[str, int]
    confidence: float
    n_boot: int
    pairs: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)

    def __repr__(self) -> str:
        c = self.counts
        lines = [f"JudgeAgreement(judge={self.judge!r}, run={self.run_id!r}: {c['n']} lessons "
                 f"both labelled on {c['verdicts']} verdicts; tp={c['tp']} fp={c['fp']} "
                 f"fn={c['fn']} tn={c['tn']})"]
        pct = f"{self.confidence:.0%}"
        for name, r in self.table.iterrows():
            lines.append(f"  {name:<9} {r['value']:.3f}  [{r['low']:.3f}, {r['high']:.3f}] "
                         f"({pct}, {self.n_boot} verdict resamples)")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        head = html.escape(repr(self).splitlines()[0])
        return (f"<div><p><b>JudgeAgreement</b>: {head}</p>"
                f"{self.table.to_html(float_format=lambda v: f'{v:.3f}')}</div>")

    def to_dict(self) -> dict[str, Any]:
        return {"judge": self.judge, "run_id": self.run_id, "counts": self.counts,
                "confidence": self.confidence, "n_boot": self.n_boot,
                "metrics": {k: {c: float(v) for c, v in r.items()}
                            for k, r in self.table.iterrows()}}


def judge_names(store: Store) -> list[str]:
    """The judge annotators with label rows in the store.

    Parameters
    ----------
    store : Store
        The database.

    Returns
    -------
    list of str
        Their names (``judge:<model>@<prompt version>``).
    """
    return judge_annotators(store)


def _metrics(counts: np.ndarray) -> np.ndarray:
    """(4, ...) kappa, precision, recall, accuracy of 2x2 counts ``(tp, fp, fn, tn)``
    (NaN where undefined)."""
    tp, fp, fn, tn = counts
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.stack([kappa_counts(tp, fp, fn, tn), tp / (tp + fp), tp / (tp + fn),
                         (tp + tn) / (tp + fp + fn + tn)])


def judge_agreement(
    store: Store,
    judge: str,
    run_id: str | None = None,
    *,
    labels: Any = None,
    n_boot: int = 1000,
    confidence: float = 0.95,
    random_state: Any = 0,
) -> JudgeAgreement:
    """Cohen's kappa, precision and recall of ``judge`` against the human majority.

    ``judge``: the annotator name (``judge:<model>@<prompt>``; the ``judge:``
    prefix may be left out). ``run_id`` limits it to that run's extractor and
    verdicts. ``labels``: §3 rows (default: the store's labels table) holding
    both the judge's and the people's rows. Lessons with a tied or no human
    label, or no judge label, are left out (and counted).

    Parameters
    ----------
    store : Store
        The database.
    judge : str
        The judge (above).
    run_id : str, optional
        The run (above; None: every run).
    labels : pandas.DataFrame or path, optional
        The label rows (above).
    n_boot : int, default 1000
        Verdict-bootstrap replicates.
    confidence : float, default 0.95
        The intervals' level.
    random_state : int or numpy.random.Generator, default 0
        Seed of the bootstrap.

    Returns
    -------
    JudgeAgreement
        The agreement with its intervals and counts.

    Raises
    ------
    BadInputError
        An unknown run or judge, no lesson with both labels.
    """
    check_boot(n_boot, confidence)
    name = judge if judge.startswith(JUDGE_PREFIX) else JUDGE_PREFIX + judge
    lab = run_labels(store, labels, include_judges=True)
    if "annotator" not in lab.columns:
        lab = lab.assign(annotator=None)
    is_judge = lab["annotator"].astype("string").fillna("") == name
    j = lab[is_judge.to_numpy(dtype=bool)]
    humans = run_labels(store, lab)  # the same rows, judges left out
    if run_id is not None:
        run_info(store, run_id)  # an unknown run is an error naming the recent ones
        keys = lesson_keys(store, run_id)
        j = j.merge(keys, on=CANDIDATE_KEY, how="inner") if len(j) else j
        humans = humans.merge(keys, on=CANDIDATE_KEY, how="inner") if len(humans) else humans
    if j.empty:
        known = ", ".join(judge_names(store)) or "none"
        raise BadInputError(f"no label rows of judge {name!r} (judges in the store: {known}); "
                            "label a run with `truss-lab judge`", field="judge")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        hm = majority_labels(humans) if len(humans) else None
        jm = majority_labels(j)
    if hm is None:
        raise BadInputError("no human labels to compare the judge with", field="labels")
    pairs = hm[hm["label"].notna()][[*CANDIDATE_KEY, "label"]].merge(
        jm[jm["label"].notna()][[*CANDIDATE_KEY, "label"]], on=CANDIDATE_KEY,
        suffixes=("_human", "_judge"))
    if pairs.empty:
        raise BadInputError(f"no lesson has both a human majority label and a label of {name!r}",
                            field="judge")
    h = pairs["label_human"].to_numpy(dtype=np.int64)
    g = pairs["label_judge"].to_numpy(dtype=np.int64)
    cell = np.stack([(g == 1) & (h == 1), (g == 1) & (h == 0), (g == 0) & (h == 1),
                     (g == 0) & (h == 0)]).astype(np.float64)
    table, totals = agreement_table(cell, pairs["verdict_hash"].to_numpy(dtype=object),
                                    _metrics, _METRICS, n_boot=n_boot, confidence=confidence,
                                    random_state=random_state)
    n_verdicts = int(pairs["verdict_hash"].nunique())
    tp, fp, fn, tn = (int(x) for x in totals)
    counted = {
        "n": len(pairs), "tp": tp, "fp": fp, "fn": fn, "tn": tn, "verdicts": n_verdicts,
        "n_judge_only": int(len(jm) - len(pairs)), "n_human_only": int(
            hm["label"].notna().sum() - len(pairs)),
    }
    return JudgeAgreement(judge=name, run_id=run_id, table=table, counts=counted,
                          confidence=confidence, n_boot=n_boot, pairs=pairs)
