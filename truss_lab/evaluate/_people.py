"""People against people: how far the people whose answers correct an automated truth
agree with each other (:func:`people_agreement`, ``truss-lab match-agreement RUN
--between-people``), and the one line a correction resting on people never checked
against each other carries (:func:`unchecked_people`).

A prediction-powered correction is unbiased for what the people say, so their own
errors pass into it; with one person per verdict those errors cannot be seen. When a
share of the verdicts is answered by two or more people, their agreement on it is
measured as a judge's agreement with people is (:func:`~._agreement.agreement_table`):

- **match labels** (§5): the answer of each lesson answered by two or more people
  (a reference id, or none), a category per answer;
- **gold labels** (§3, judges left out): useful or not, on each candidate labelled by
  two or more people.

Two people: **Cohen's kappa** on the items both answered (equal to
``sklearn.metrics.cohen_kappa_score`` of their answers); three or more: **Fleiss'
kappa** on the items answered by the most common number m >= 2 of people (equal to
``statsmodels.stats.inter_rater.fleiss_kappa``; the raters need not be the same people
across items). Both are functions of counts added up over items, so the interval is a
percentile interval from a bootstrap over verdicts (the items of one verdict are
resampled together), with the raw agreement beside the kappa.
"""

from __future__ import annotations

import html
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..core._errors import BadInputError, TrussLabWarning
from ..store._runs import run_record
from ..store._store import Store
from ._agreement import CANDIDATE_KEY, agreement_table, cohen_cells, fleiss_cells
from ._defaults import DEFAULT_N_BOOT
from ._matches import run_match_labels
from ._truth import run_labels

__all__ = ["PEOPLE_METRICS", "PeopleAgreement", "PeopleUncheckedWarning", "people_agreement",
           "people_items", "unchecked_people", "warn_unchecked"]

#: The metrics of every row of :attr:`PeopleAgreement.table`, each with ``_low``/``_high``.
PEOPLE_METRICS = ("kappa", "agreement")
_KINDS = ("match labels", "gold labels")


class PeopleUncheckedWarning(TrussLabWarning):
    """A correction rests on people's answers no two people gave on the same lesson:
    their own error is not measured (:func:`unchecked_people` says so in one line)."""


def _answers(store: Store, kind: str, rows: Any, extractor: str | None,
             verdicts: set[str] | None) -> pd.DataFrame:
    """``(verdict_hash, extractor, lesson_index, annotator, answer)``: one row per answer
    of one person on one lesson (an anonymous person is one voice, ``""``)."""
    if kind == "match labels":
        df = run_match_labels(store, rows)
        answer = df["reference_id"].astype(str)
    else:
        df = run_labels(store, rows)  # judges left out: people only
        if df.empty:
            return pd.DataFrame(columns=[*CANDIDATE_KEY, "annotator", "answer"])
        answer = pd.to_numeric(df["useful"], errors="coerce").astype("Int64").astype(str)
    out = pd.DataFrame({"verdict_hash": df["verdict_hash"].astype(str).to_numpy(),
                        "extractor": df["extractor"].astype(str).to_numpy(),
                        "lesson_index": pd.to_numeric(df["lesson_index"]).astype(np.int64)
                        .to_numpy(),
                        "annotator": (df["annotator"].astype(object).where(
                            df["annotator"].notna(), "").astype(str).to_numpy()
                            if "annotator" in df.columns else ""),
                        "answer": answer.to_numpy(dtype=object)})
    if extractor is not None:
        out = out[out["extractor"] == extractor]
    if verdicts is not None:
        out = out[out["verdict_hash"].isin(verdicts)]
    return out.drop_duplicates([*CANDIDATE_KEY, "annotator"]).reset_index(drop=True)


def people_items(answers: pd.DataFrame) -> pd.DataFrame:
    """The items (lessons) of ``answers`` (columns of :func:`_answers`) answered by two
    or more people: one row per item with ``n_people``."""
    n = answers.groupby(CANDIDATE_KEY, sort=True)["annotator"].nunique().rename("n_people")
    return n[n >= 2].reset_index()


def _cohen(answers: pd.DataFrame, a: str, b: str) -> tuple[np.ndarray, np.ndarray, Any]:
    """Cells, verdicts and metrics of Cohen's kappa between ``a`` and ``b`` on the items
    both answered (:func:`~truss_lab.evaluate._agreement.cohen_cells`)."""
    wide = answers[answers["annotator"].isin([a, b])].pivot(
        index=CANDIDATE_KEY, columns="annotator", values="answer").dropna()
    cats = sorted(set(wide[a]) | set(wide[b]))
    cells, metrics = cohen_cells(pd.Categorical(wide[a], categories=cats).codes,
                                 pd.Categorical(wide[b], categories=cats).codes, len(cats))
    return cells, wide.index.get_level_values("verdict_hash").to_numpy(dtype=object), metrics


def _fleiss(answers: pd.DataFrame, m: int) -> tuple[np.ndarray, np.ndarray, Any]:
    """Cells, verdicts and metrics of Fleiss' kappa on the items answered by ``m`` people
    (:func:`~truss_lab.evaluate._agreement.fleiss_cells`)."""
    counts = answers.groupby([*CANDIDATE_KEY, "answer"]).size().unstack(fill_value=0)
    counts = counts[counts.sum(axis=1) == m]
    cells, metrics = fleiss_cells(counts.to_numpy(dtype=np.float64), m)
    return cells, counts.index.get_level_values("verdict_hash").to_numpy(dtype=object), metrics


def _row(kind: str, answers: pd.DataFrame, n_boot: int, confidence: float,
         random_state: Any) -> dict[str, Any]:
    """One row of :attr:`PeopleAgreement.table`: ``kind``'s agreement between people."""
    items = people_items(answers)
    multi = answers.merge(items[CANDIDATE_KEY], on=CANDIDATE_KEY)
    people = sorted(multi["annotator"].unique())
    row: dict[str, Any] = {"labels": kind, "statistic": None, "people": ", ".join(people),
                           "n_people": len(people), "items": 0, "verdicts": 0,
                           **{f"{m}{s}": np.nan for m in PEOPLE_METRICS
                              for s in ("", "_low", "_high")}}
    if items.empty:
        return row
    if len(people) == 2:
        cells, verdicts, metrics = _cohen(multi, people[0], people[1])
        row["statistic"] = "Cohen's kappa"
    else:
        sizes = items["n_people"].value_counts()
        m = int(max(sizes.index[sizes == sizes.max()]))
        cells, verdicts, metrics = _fleiss(multi, m)
        row["statistic"] = f"Fleiss' kappa ({m} people an item)"
    table, _ = agreement_table(cells, verdicts, metrics, PEOPLE_METRICS, n_boot=n_boot,
                               confidence=confidence, random_state=random_state)
    row.update(items=int(cells.shape[1]), verdicts=int(pd.unique(verdicts).size))
    for name, r in table.iterrows():
        row.update({name: float(r["value"]), f"{name}_low": float(r["low"]),
                    f"{name}_high": float(r["high"])})
    return row


@dataclass(frozen=True, eq=False)
class PeopleAgreement:
    """How far people agree with people on the answers they gave twice or more.

    Parameters
    ----------
    run_id : str or None
        The run whose lessons were compared (None: every lesson of the store).
    table : DataFrame
        One row per kind of answer (``match labels``, ``gold labels``): ``statistic``
        (Cohen's kappa for two people, Fleiss' for more; None when no item was
        answered by two people), ``people`` (their names), ``n_people``, ``items``
        (lessons compared), ``verdicts``, then ``kappa`` and ``agreement`` (the raw
        share agreeing, Fleiss' mean pairwise agreement) each with ``_low``/``_high``.
    confidence : float
        Of the intervals.
    n_boot : int
        Verdict-bootstrap replicates behind the intervals.
    """

    run_id: str | None
    table: pd.DataFrame
    confidence: float
    n_boot: int

    def checked(self, kind: str = "match labels") -> bool:
        """Whether some item of ``kind`` was answered by two or more people.

        Parameters
        ----------
        kind : {"match labels", "gold labels"}
            Which answers.

        Returns
        -------
        bool
            True when at least one lesson was compared.
        """
        return bool(self.table.set_index("labels").at[kind, "items"] > 0)

    def __repr__(self) -> str:
        where = f"run {self.run_id!r}" if self.run_id else "every run"
        lines = [f"PeopleAgreement({where}: people against people, {self.confidence:.0%} "
                 f"intervals, {self.n_boot} verdict resamples)"]
        for r in self.table.itertuples(index=False):
            if not r.items:
                lines.append(f"  {r.labels}: no lesson answered by two people, so their own "
                             "error is not measured")
                continue
            lines.append(f"  {r.labels}: {r.statistic} {r.kappa:.3f} [{r.kappa_low:.3f}, "
                         f"{r.kappa_high:.3f}], agreement {r.agreement:.3f} "
                         f"[{r.agreement_low:.3f}, {r.agreement_high:.3f}] on {r.items} "
                         f"lessons of {r.verdicts} verdicts ({r.people})")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        head = html.escape(repr(self).splitlines()[0])
        return (f"<div><p><b>PeopleAgreement</b>: {head}</p>"
                f"{self.table.to_html(index=False, float_format=lambda v: f'{v:.3f}')}</div>")

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON-ready values (NaN as None)."""
        rows = [{k: (None if isinstance(v, float) and np.isnan(v) else v)
                 for k, v in r.items()} for r in self.table.to_dict(orient="records")]
        return {"run_id": self.run_id, "between": "people", "confidence": self.confidence,
                "n_boot": self.n_boot, "agreement": rows}


def people_agreement(
    store: Store,
    run_id: str | None = None,
    *,
    match_labels: Any = None,
    labels: Any = None,
    n_boot: int = DEFAULT_N_BOOT,
    confidence: float = 0.95,
    random_state: Any = 0,
) -> PeopleAgreement:
    """How far people agree with each other on the lessons two or more of them answered.

    Parameters
    ----------
    store : Store
        The open store.
    run_id : str, optional
        Keep the answers on this run's lessons (its extractor, the verdicts it
        processed); None: every answer in the store.
    match_labels : None, path or DataFrame
        People's match labels (Formats §5); None reads the store's table.
    labels : None, path or DataFrame
        Gold labels (Formats §3; judges are left out); None reads the store's table.
    n_boot : int
        Verdict-bootstrap replicates behind the intervals.
    confidence : float
        Of the percentile intervals.
    random_state : int or None
        Seed of the bootstrap (the same seed draws the same replicates).

    Returns
    -------
    PeopleAgreement
        One row for the match labels and one for the gold labels: Cohen's kappa for two
        people (Fleiss' for more) and the raw agreement, each with its interval; a row
        with no item answered twice has ``items`` 0 and NaN figures.

    See Also
    --------
    truss_lab.evaluate.match_agreement : a matcher against the people.
    truss_lab.evaluate.judge_agreement : a judge against the people.

    Examples
    --------
    >>> from truss_lab.evaluate import people_agreement
    >>> agree = people_agreement(store, "good", n_boot=200)
    >>> agree.table[["labels", "statistic", "items", "verdicts", "kappa"]].round(3)
             labels      statistic  items  verdicts  kappa
    0  match labels  Cohen's kappa     25        14  0.940
    1   gold labels  Cohen's kappa    444       328  0.638
    """
    extractor = verdicts = None
    if run_id is not None:
        rec = run_record(store, run_id)
        extractor = rec.extractor_id
        verdicts = set(rec.verdicts["verdict_hash"].astype(str))
    rows = [_row(kind, _answers(store, kind, src, extractor, verdicts), n_boot, confidence,
                 random_state) for kind, src in zip(_KINDS, (match_labels, labels),
                                                    strict=True)]
    return PeopleAgreement(run_id=run_id, table=pd.DataFrame(rows), confidence=confidence,
                           n_boot=n_boot)


def unchecked_people(store: Store, kind: str, rows: Any, run_id: str,
                     extractor: str | None = None) -> str | None:
    """The one line of a correction of ``run_id`` resting on people never checked against
    each other: no lesson of the run's extractor was given ``kind`` (``match labels`` or
    ``gold labels``, in ``rows`` as :func:`people_agreement` reads them) by two people,
    or None when some was. Another extractor's lessons answered twice do not count: the
    people's agreement on them says nothing of the answers this correction rests on.
    ``extractor``: the run's, when the caller holds it (else read from the run's row)."""
    if kind not in _KINDS:
        raise BadInputError(f"kind must be one of {', '.join(_KINDS)}, got {kind!r}",
                            field="kind")
    if extractor is None:
        extractor = run_record(store, run_id).extractor_id
    if not people_items(_answers(store, kind, rows, extractor, None)).empty:
        return None
    return (f"the correction of run {run_id!r} rests on people never checked against each "
            f"other: no lesson was given {kind} by two people, so their own error passes "
            f"unseen into the estimate (have a share of the verdicts answered twice, then "
            f"`truss-lab match-agreement {run_id} --between-people`)")


def warn_unchecked(line: str | None) -> None:
    """Say :func:`unchecked_people`'s line, once, as a :class:`PeopleUncheckedWarning`."""
    if line is not None:
        warnings.warn(line, PeopleUncheckedWarning, stacklevel=3)
