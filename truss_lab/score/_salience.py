"""Salience-scoring functions: vectorized scores over candidate lessons.

A :class:`Scorer` has a ``name`` and a ``version`` that are stored with its
scores; :func:`score_candidates` adds one ``score__<name>`` column per scorer.

Inputs
------
*candidates*: a DataFrame with (as needed by the scorers) ``verdict_hash``,
``extractor``, ``lesson_index``, ``text``, ``salience``, ``evidence``
(list of strings per row) and ``valid``. Rows whose ``valid`` is False get NaN
from every scorer.

*verdicts*: the verdicts the candidates came from, either a DataFrame keyed
by ``verdict_hash`` (a column or the index) with ``verdict``, ``checks``
(list of ``{name, passed, evidence}`` dicts, or its JSON text) and optionally
``tags``, ``goal``, ``summary``; or a mapping ``verdict_hash -> payload dict``
(Formats §1). Only scorers marked ``needs_verdicts`` read it.

Scorers (each returns float64 in [0, 1], NaN for invalid rows)
---------------------------------------------------------------
- ``model_salience``: the model's own salience.
- ``verdict_outcome``: fail 1.0, partial 0.5, pass 0.0.
- ``failed_checks``: share of the verdict's checks that failed (0 with no checks).
- ``grounding``: share of the lesson's evidence items that are ``check:<name>``
  for a check present in its verdict (items stripped, exact match); 0 when the
  lesson has no evidence.
- ``specificity``: distinct informative tokens / ``target`` (default 12), capped
  at 1 (informative tokens are defined in ``score._tokens``).
- ``novelty(corpus)``: 1 - the largest Jaccard similarity between the lesson's
  informative-token set and that of any earlier lesson text in ``corpus``
  (1 with an empty corpus or a lesson without informative tokens).
- ``calibrated(base, calibrator)`` (in ``score._calibrators``): a fitted
  ``IsotonicCalibrator`` or ``PlattCalibrator`` applied to ``base``'s scores,
  out of sample only.
- ``weighted_sum({scorer: weight, ...})``: the weighted sum, clipped to [0, 1].
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..core._canonical import MalformedJSON, loads_strict
from ..core._errors import BadInputError
from ._tokens import informative_token_pairs

__all__ = [
    "FAILED_CHECKS",
    "GROUNDING",
    "MODEL_SALIENCE",
    "SPECIFICITY",
    "VERDICT_OUTCOME",
    "Scorer",
    "failed_checks",
    "fingerprint",
    "grounding",
    "model_salience",
    "novelty",
    "score_candidates",
    "scorer_records",
    "specificity",
    "verdict_outcome",
    "verdict_table",
    "weighted_sum",
]

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_OUTCOME = {"fail": 1.0, "partial": 0.5, "pass": 0.0}


# ---------------------------------------------------------------------------
# Verdicts


def verdict_table(verdicts: pd.DataFrame | Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """Normalize verdicts to a frame indexed by ``verdict_hash`` with columns
    verdict, n_checks, n_failed, check_names (tuple), tags (tuple)."""
    if isinstance(verdicts, pd.DataFrame):
        df = verdicts
        if "verdict_hash" in df.columns:
            df = df.set_index("verdict_hash")
        elif df.index.name != "verdict_hash":
            raise BadInputError(
                "verdicts need a 'verdict_hash' column or index", field="verdict_hash"
            )
        if "verdict" not in df.columns and "payload" in df.columns:
            # verdict_payloads() gives the payload as canonical JSON text.
            return verdict_table({h: _payload_of(h, p) for h, p in
                                  zip(df.index, df["payload"], strict=True)})
        missing = {"verdict", "checks"} - set(df.columns)
        if missing:
            raise BadInputError(
                f"verdicts frame lacks columns {sorted(missing)}; expected verdict, checks",
                field=sorted(missing)[0],
            )
        hashes = list(df.index)
        outcomes = list(df["verdict"])
        checks = list(df["checks"])
        tags = list(df["tags"]) if "tags" in df.columns else [()] * len(df)
    elif isinstance(verdicts, Mapping):
        hashes = list(verdicts)
        payloads = [verdicts[h] for h in hashes]
        for h, p in zip(hashes, payloads, strict=True):
            if not isinstance(p, Mapping) or "verdict" not in p or "checks" not in p:
                raise BadInputError(
                    "expected a verdict payload with 'verdict' and 'checks'",
                    source=str(h),
                    field="payload",
                )
        outcomes = [p["verdict"] for p in payloads]
        checks = [p["checks"] for p in payloads]
        tags = [p.get("tags", ()) for p in payloads]
    else:
        raise BadInputError(
            f"verdicts must be a DataFrame or a mapping of payloads, got {type(verdicts).__name__}",
            field="verdicts",
        )
    names, failed = _check_lists(hashes, checks)
    bad = sorted({str(o) for o in outcomes if o not in _OUTCOME})
    if bad:
        raise BadInputError(
            f"unknown verdict outcomes {bad}; expected pass, fail or partial", field="verdict"
        )
    out = pd.DataFrame(
        {
            "verdict": pd.array(outcomes, dtype="str"),
            "n_checks": np.fromiter((len(n) for n in names), np.int64, len(names)),
            "n_failed": np.asarray(failed, dtype=np.int64),
            "check_names": pd.Series(names, dtype=object).to_numpy(),
            "tags": pd.Series([tuple(t) if t is not None else () for t in tags],
                              dtype=object).to_numpy(),
        },
        index=pd.Index(hashes, name="verdict_hash", dtype="str"),
    )
    if out.index.has_duplicates:
        dup = out.index[out.index.duplicated()][0]
        raise BadInputError(f"verdict_hash {dup!r} appears twice", field="verdict_hash")
    return out


def _check_lists(hashes: Sequence[Any], checks: Sequence[Any]) -> tuple[
        list[tuple[str, ...]], list[int]]:
    """Per verdict, its check names and how many failed; ``checks`` are lists of
    ``{name, passed, evidence}`` or their JSON text."""
    # Nested per-verdict check lists: one pass over verdicts (far fewer than candidates).
    names: list[tuple[str, ...]] = []
    failed: list[int] = []
    for h, cs in zip(hashes, checks, strict=True):
        if isinstance(cs, str | bytes):
            try:
                cs = loads_strict(cs)
            except MalformedJSON as exc:
                raise BadInputError(f"checks are not valid JSON: {exc}", source=str(h),
                                    field="checks") from None
        if cs is None:
            cs = []
        try:
            names.append(tuple(str(c["name"]) for c in cs))
            failed.append(sum(not bool(c["passed"]) for c in cs))
        except (TypeError, KeyError) as exc:
            raise BadInputError(
                f"expected checks as a list of {{name, passed, evidence}} objects ({exc!r})",
                source=str(h),
                field="checks",
            ) from None
    return names, failed


def _per_candidate(cands: pd.DataFrame, vt: pd.DataFrame, column: str) -> np.ndarray:
    idx = vt.index.get_indexer(cands["verdict_hash"].astype("str"))
    if (idx < 0).any():
        missing = pd.unique(cands["verdict_hash"].to_numpy()[idx < 0])
        raise BadInputError(
            f"{len(missing)} candidate verdict_hash(es) have no verdict, e.g. "
            f"{[str(m) for m in missing[:3]]}",
            field="verdict_hash",
        )
    return vt[column].to_numpy()[idx]


# ---------------------------------------------------------------------------
# Scorers


ScoreFn = Callable[[pd.DataFrame, pd.DataFrame | None], np.ndarray]


@dataclass(frozen=True)
class Scorer:
    """A named, versioned salience-scoring function over candidate rows.

    ``fn(candidates, verdict_table_or_None)`` returns one float per row.
    ``requires`` lists the candidate columns it reads; ``needs_verdicts``
    says whether it reads the verdicts.

    Parameters
    ----------
    name : str
        The score's name, ``[a-z][a-z0-9_]*``: it names the column ``score__<name>``.
    version : str
        Its version, stored with every score so a changed function is never taken for
        the old one.
    fn : callable
        ``fn(candidates, verdict_table_or_None)`` returning one float per row,
        vectorised over the frame.
    requires : tuple of str, default ()
        The candidate columns ``fn`` reads.
    needs_verdicts : bool, default False
        Whether ``fn`` reads the verdicts.
    description : str, default ""
        One line for people.

    Raises
    ------
    BadInputError
        A name that cannot name a column.

    See Also
    --------
    score_candidates : Applies scorers to candidates.
    run_extraction : Gates on a scorer given as ``score``.

    Examples
    --------
    >>> short = tl.Scorer("short", "1", lambda c, v: 1 / (1 + c["text"].str.len() / 100),
    ...                   requires=("text",), description="Shorter lessons score higher")
    >>> candidates = store.table("candidates").query("run_id == 'good'")
    >>> scored = tl.score_candidates(candidates, None, [short])
    >>> short.column, bool(scored[short.column].dropna().between(0, 1).all())
    ('score__short', True)
    """

    name: str
    version: str
    fn: ScoreFn = field(compare=False, repr=False)
    requires: tuple[str, ...] = ()
    needs_verdicts: bool = False
    description: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise BadInputError(
                f"scorer name {self.name!r} must match [a-z][a-z0-9_]* (it names a column)",
                field="name",
            )

    @property
    def column(self) -> str:
        """The column :func:`score_candidates` writes: ``score__<name>``."""
        return f"score__{self.name}"

    def __call__(
        self,
        candidates: pd.DataFrame,
        verdicts: pd.DataFrame | Mapping[str, Mapping[str, Any]] | None = None,
    ) -> np.ndarray:
        """Scores for every row of ``candidates`` (NaN where ``valid`` is False).

        Parameters
        ----------
        candidates : pandas.DataFrame
            Candidate rows with the ``requires`` columns.
        verdicts : pandas.DataFrame or mapping, optional
            The verdicts, when the scorer needs them.

        Returns
        -------
        numpy.ndarray
            One float per row.
        """
        missing = [c for c in self.requires if c not in candidates.columns]
        if missing:
            raise BadInputError(
                f"scorer {self.name!r} needs candidate columns {missing}", field=missing[0]
            )
        vt = None
        if self.needs_verdicts:
            if verdicts is None:
                raise BadInputError(f"scorer {self.name!r} needs the verdicts", field="verdicts")
            vt = verdicts if _is_verdict_table(verdicts) else verdict_table(verdicts)
        out = np.asarray(self.fn(candidates, vt), dtype=np.float64).copy()
        if out.shape != (len(candidates),):
            raise BadInputError(
                f"scorer {self.name!r} returned shape {out.shape}, expected ({len(candidates)},)"
            )
        if "valid" in candidates.columns:
            out[~candidates["valid"].to_numpy(dtype=bool)] = np.nan
        return out


def _payload_of(verdict_hash: Any, payload: Any) -> Any:
    if not isinstance(payload, str):
        return payload
    try:
        return json.loads(payload)
    except ValueError:
        raise BadInputError("expected a verdict payload as a mapping or JSON text",
                            source=str(verdict_hash), field="payload",
                            reason="malformed") from None


def _is_verdict_table(v: Any) -> bool:
    return (
        isinstance(v, pd.DataFrame)
        and v.index.name == "verdict_hash"
        and {"n_checks", "n_failed", "check_names"} <= set(v.columns)
    )


def _model_salience(c: pd.DataFrame, _: pd.DataFrame | None) -> np.ndarray:
    return pd.to_numeric(c["salience"], errors="coerce").to_numpy(np.float64, na_value=np.nan)


def _verdict_outcome(c: pd.DataFrame, vt: pd.DataFrame | None) -> np.ndarray:
    assert vt is not None
    vals = vt["verdict"].map(_OUTCOME).to_numpy(np.float64)
    vt2 = vt.assign(_outcome=vals)
    return _per_candidate(c, vt2, "_outcome").astype(np.float64)


def _failed_checks(c: pd.DataFrame, vt: pd.DataFrame | None) -> np.ndarray:
    assert vt is not None
    n = vt["n_checks"].to_numpy(np.float64)
    share = np.divide(vt["n_failed"].to_numpy(np.float64), n, out=np.zeros_like(n), where=n > 0)
    return _per_candidate(c, vt.assign(_share=share), "_share").astype(np.float64)


def _grounding(c: pd.DataFrame, vt: pd.DataFrame | None) -> np.ndarray:
    assert vt is not None
    n = len(c)
    _per_candidate(c, vt, "n_checks")  # fail early on unknown verdicts
    ev = pd.Series(c["evidence"].to_numpy(dtype=object), dtype=object)
    # A scalar (e.g. NaN/None) is "no evidence"; explode turns [] into a NaN row too.
    ev = ev.map(lambda v: v if isinstance(v, list | tuple | np.ndarray) else [])
    items = ev.explode().dropna()
    if items.empty:
        return np.zeros(n)
    rows = items.index.to_numpy(np.int64)
    items = items.astype("str").str.strip()
    vh = c["verdict_hash"].astype("str").to_numpy()[rows]
    cited = pd.Series(vh, dtype="str") + "\x1f" + items.reset_index(drop=True)
    known_checks = vt["check_names"].explode().dropna()
    known = (
        pd.Series(known_checks.index.to_numpy(), dtype="str")
        + "\x1fcheck:"
        + known_checks.astype("str").reset_index(drop=True)
    )
    hit = cited.isin(known).to_numpy(np.float64)
    total = np.bincount(rows, minlength=n).astype(np.float64)
    hits = np.bincount(rows, weights=hit, minlength=n)
    return np.divide(hits, total, out=np.zeros(n), where=total > 0)


def _specificity_fn(target: float) -> ScoreFn:
    def fn(c: pd.DataFrame, _: pd.DataFrame | None) -> np.ndarray:
        pairs = informative_token_pairs(c["text"].reset_index(drop=True))
        counts = np.bincount(pairs["row"].to_numpy(np.int64), minlength=len(c))
        return np.minimum(counts / target, 1.0)

    return fn


MODEL_SALIENCE = Scorer(
    "model_salience", "1", _model_salience, ("salience",),
    description="The extractor's own salience.",
)
VERDICT_OUTCOME = Scorer(
    "verdict_outcome", "1", _verdict_outcome, ("verdict_hash",), True,
    "fail 1.0, partial 0.5, pass 0.0.",
)
FAILED_CHECKS = Scorer(
    "failed_checks", "1", _failed_checks, ("verdict_hash",), True,
    "Share of the verdict's checks that failed.",
)
GROUNDING = Scorer(
    "grounding", "1", _grounding, ("verdict_hash", "evidence"), True,
    "Share of evidence items citing a check:<name> of the verdict.",
)
SPECIFICITY = Scorer(
    "specificity", "1+t12", _specificity_fn(12.0), ("text",),
    description="Distinct informative tokens / 12, capped at 1.",
)


def model_salience() -> Scorer:
    """The model's own salience (``salience`` column)."""
    return MODEL_SALIENCE


def verdict_outcome() -> Scorer:
    """fail 1.0, partial 0.5, pass 0.0, from the candidate's verdict."""
    return VERDICT_OUTCOME


def failed_checks() -> Scorer:
    """Share of the candidate's verdict checks that failed (0 when it has none)."""
    return FAILED_CHECKS


def grounding() -> Scorer:
    """Share of the lesson's evidence items that cite a check of its verdict."""
    return GROUNDING


def specificity(target: int = 12) -> Scorer:
    """Distinct informative tokens / ``target``, capped at 1.

    Parameters
    ----------
    target : int, default 12
        The token count that scores 1.

    Returns
    -------
    Scorer
        The scorer.
    """
    if target == 12:
        return SPECIFICITY
    if not target > 0:
        raise BadInputError(f"target must be > 0, got {target}", field="target")
    return Scorer(
        "specificity", f"1+t{target}", _specificity_fn(float(target)), ("text",),
        description=f"Distinct informative tokens / {target}, capped at 1.",
    )


def fingerprint(obj: Any) -> str:
    """12 hex digits naming ``obj`` (its sorted JSON): the version of a scorer built from
    data (a novelty corpus, a weighted sum's spec, a fitted calibrator)."""
    blob = json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()[:12]


# Bound on the rows materialized by one token join in novelty().
_JOIN_BUDGET = 4_000_000


def novelty(corpus: Iterable[str], *, name: str = "novelty") -> Scorer:
    """1 - max token-Jaccard against ``corpus`` (earlier lesson texts).

    The version embeds a fingerprint of the corpus, so scores computed
    against different corpora never share a version.

    Parameters
    ----------
    corpus : iterable of str
        The earlier lesson texts.
    name : str, default "novelty"
        The scorer's name.

    Returns
    -------
    Scorer
        The scorer.
    """
    docs = pd.Series([str(t) for t in corpus], dtype=object)
    cpairs = informative_token_pairs(docs)
    doc_size = np.bincount(cpairs["row"].to_numpy(np.int64), minlength=len(docs))
    cpairs = cpairs.rename(columns={"row": "doc"})
    doc_freq = cpairs["tok"].value_counts()

    def fn(c: pd.DataFrame, _: pd.DataFrame | None) -> np.ndarray:
        n = len(c)
        best = np.zeros(n)
        pairs = informative_token_pairs(c["text"].reset_index(drop=True))
        if pairs.empty or cpairs.empty:
            return 1.0 - best
        row_size = np.bincount(pairs["row"].to_numpy(np.int64), minlength=n)
        # Cost of each candidate row's join = sum of its tokens' document
        # frequencies; chunk rows so one join stays within the budget.
        cost = pairs["tok"].map(doc_freq).fillna(0).to_numpy(np.float64)
        pairs = pairs[cost > 0].reset_index(drop=True)
        cost = cost[cost > 0]
        if pairs.empty:
            return 1.0 - best
        rows = pairs["row"].to_numpy(np.int64)
        row_cost = np.bincount(rows, weights=cost, minlength=n)
        # A whole row goes to one chunk, so its max is taken in one join.
        row_chunk = ((np.cumsum(row_cost) - row_cost) // _JOIN_BUDGET).astype(np.int64)
        chunk = row_chunk[rows]
        for k in np.unique(chunk):
            part = pairs[chunk == k]
            m = part.merge(cpairs, on="tok", how="inner")
            r = m["row"].to_numpy(np.int64)
            d = m["doc"].to_numpy(np.int64)
            key = r * len(docs) + d
            uk, inter = np.unique(key, return_counts=True)
            ur, ud = np.divmod(uk, len(docs))
            jac = inter / (row_size[ur] + doc_size[ud] - inter)
            np.maximum.at(best, ur, jac)
        return 1.0 - best

    fp = fingerprint(sorted(docs.tolist()))
    return Scorer(
        name, f"1+corpus-{fp}", fn, ("text",),
        description=f"1 - max token-Jaccard against {len(docs)} earlier lessons.",
    )


def weighted_sum(
    components: Mapping[Scorer, float] | Sequence[tuple[Scorer, float]],
    *,
    name: str = "weighted_sum",
) -> Scorer:
    """The weighted sum of other scorers, clipped to [0, 1] (NaN if any part is NaN).

    Parameters
    ----------
    components : mapping or sequence of (Scorer, float)
        Each scorer and its weight.
    name : str, default "weighted_sum"
        The scorer's name.

    Returns
    -------
    Scorer
        The scorer.
    """
    items = list(components.items()) if isinstance(components, Mapping) else list(components)
    if not items:
        raise BadInputError("weighted_sum needs at least one scorer", field="components")
    for s, w in items:
        if not isinstance(s, Scorer) or not np.isfinite(w):
            raise BadInputError(
                f"expected (Scorer, finite weight) pairs, got ({s!r}, {w!r})", field="components"
            )
    requires = tuple(dict.fromkeys(c for s, _ in items for c in s.requires))
    needs = any(s.needs_verdicts for s, _ in items)

    def fn(c: pd.DataFrame, vt: pd.DataFrame | None) -> np.ndarray:
        total = np.zeros(len(c))
        for s, w in items:
            total += float(w) * s(c, vt)
        return np.clip(total, 0.0, 1.0)

    spec = [[s.name, s.version, float(w)] for s, w in items]
    return Scorer(
        name, f"1+{fingerprint(spec)}", fn, requires, needs,
        " + ".join(f"{float(w):g}*{s.name}" for s, w in items) + ", clipped to [0, 1]",
    )


# ---------------------------------------------------------------------------
# Applying scorers


def scorer_records(scorers: Iterable[Scorer]) -> pd.DataFrame:
    """One row per scorer: name, version, column, description."""
    ss = list(scorers)
    return pd.DataFrame(
        {
            "name": pd.array([s.name for s in ss], dtype="str"),
            "version": pd.array([s.version for s in ss], dtype="str"),
            "column": pd.array([s.column for s in ss], dtype="str"),
            "description": pd.array([s.description for s in ss], dtype="str"),
        }
    )


def score_candidates(
    candidates: pd.DataFrame,
    verdicts: pd.DataFrame | Mapping[str, Mapping[str, Any]] | None,
    scorers: Iterable[Scorer],
) -> pd.DataFrame:
    """A copy of ``candidates`` with one ``score__<name>`` column per scorer.

    The (name, version) of every scorer is recorded in ``result.attrs["scorers"]``
    (a list of dicts, as :func:`scorer_records`); keep it with the scores.
    Verdicts are normalized once and shared by all scorers.

    Parameters
    ----------
    candidates : pandas.DataFrame
        Candidate lessons with the columns the scorers require.
    verdicts : pandas.DataFrame or mapping or None
        The verdicts, by verdict hash, for scorers that read them: the frame
        :func:`truss_lab.verdict_payloads` returns (payloads as JSON text), a mapping of
        hash to payload dict, or a verdict table; ``None`` when no scorer needs them.
    scorers : iterable of Scorer
        The scoring functions, e.g. those of ``truss_lab.score``.

    Returns
    -------
    pandas.DataFrame
        A copy of ``candidates`` with a ``score__<name>`` column per scorer.

    Raises
    ------
    BadInputError
        A scorer's required column is missing, or it needs verdicts and none are given.

    See Also
    --------
    Scorer : A scoring function with its name and version.

    Examples
    --------
    >>> from truss_lab.score import grounding, model_salience
    >>> candidates = store.table("candidates").query("run_id == 'good'")
    >>> verdicts = tl.verdict_payloads(store)
    >>> scored = tl.score_candidates(candidates, verdicts, [model_salience(), grounding()])
    >>> [c for c in scored.columns if c.startswith("score__")]
    ['score__model_salience', 'score__grounding']
    >>> [s["version"] for s in scored.attrs["scorers"]]
    ['1', '1']
    """
    ss = list(scorers)
    names = [s.name for s in ss]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise BadInputError(f"two scorers share the name(s) {dup}", field="scorers")
    vt = None
    if any(s.needs_verdicts for s in ss):
        if verdicts is None:
            raise BadInputError("these scorers need the verdicts", field="verdicts")
        vt = verdicts if _is_verdict_table(verdicts) else verdict_table(verdicts)
    out = candidates.copy()
    for s in ss:
        out[s.column] = s(candidates, vt)
    out.attrs["scorers"] = scorer_records(ss).to_dict("records")
    return out
