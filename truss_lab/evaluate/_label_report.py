"""Gold-label coverage of a run and annotator agreement: :func:`label_report`."""

from __future__ import annotations

import html
import warnings
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..store._labels import lesson_keys
from ..store._runs import run_info
from ..store._store import Store
from ._agreement import annotator_agreement, fleiss_agreement, label_coverage
from ._sweep import UndefinedMetricWarning
from ._truth import DEFAULT_TRANSFER, run_labels, transfer_report

__all__ = ["LabelReport", "fmt_number", "label_report"]

@dataclass(frozen=True, eq=False)
class LabelReport:
    """Gold-label coverage of a run's candidates and annotator agreement.

    ``coverage`` is :func:`~truss_lab.evaluate._agreement.label_coverage` (one row per
    extractor: n_candidates, n_labelled, n_ties, n_unlabelled, n_orphan_labels,
    coverage); ``agreement`` is :func:`~truss_lab.evaluate._agreement.annotator_agreement`
    (one row per annotator pair: n_common, raw_agreement, kappa); ``transfer`` is
    :func:`~truss_lab.evaluate._truth.transfer_report` (per extractor: direct
    and transferred labels, and how often they agree where both exist); ``fleiss``
    is :func:`~truss_lab.evaluate._agreement.fleiss_agreement` (kappa over
    every annotator at once, on the candidates labelled by the most common
    number of annotators), None when no candidate has two annotations.

    Parameters
    ----------
    run_id : str or None
        The run (None: every run).
    coverage, agreement, transfer : pandas.DataFrame
        The tables above.
    n_label_rows : int
        Label rows read.
    fleiss : dict, optional
        Fleiss' kappa (above).
    """

    run_id: str | None
    coverage: pd.DataFrame
    agreement: pd.DataFrame
    n_label_rows: int
    transfer: pd.DataFrame = field(default_factory=pd.DataFrame)
    fleiss: dict[str, Any] | None = None

    @property
    def n_ties(self) -> int:
        """Candidates annotated but tied (no majority label)."""
        return int(self.coverage["n_ties"].sum()) if len(self.coverage) else 0

    def __repr__(self) -> str:
        lines = [f"LabelReport(run={self.run_id!r}, {self.n_label_rows} label rows, "
                 f"{self.n_ties} ties)"]
        for r in self.coverage.itertuples():
            lines.append(f"  {r.extractor}: {r.n_labelled}/{r.n_candidates} labelled "
                         f"({r.coverage:.1%}), {r.n_ties} ties, {r.n_unlabelled} unlabelled, "
                         f"{r.n_orphan_labels} orphan labels")
        for r in self.agreement.itertuples():
            lines.append(f"  kappa({r.annotator_a}, {r.annotator_b}) = {r.kappa:.3f} "
                         f"on {r.n_common} candidates (raw agreement {r.raw_agreement:.3f})")
        for r in self.transfer.itertuples():
            if r.n_transferred or r.n_both:
                both = (f"; {r.n_both} with both, agreeing {r.agreement:.1%}" if r.n_both
                        else "")
                lines.append(f"  {r.extractor}: {r.n_direct} direct labels, {r.n_transferred} "
                             f"transferred{both}")
        if self.fleiss is not None:
            lines.append(self._fleiss_line())
        return "\n".join(lines)

    def _fleiss_line(self) -> str:
        f = self.fleiss or {}
        return (f"  Fleiss' kappa = {f['kappa']:.3f} on {f['n_items']} of {f['n_candidates']} "
                f"labelled candidates ({f['raters']} annotations each)")

    def _repr_html_(self) -> str:
        head = html.escape(f"run {self.run_id}: {self.n_label_rows} label rows, "
                           f"{self.n_ties} ties"
                           + (f"; {self._fleiss_line().strip()}" if self.fleiss else ""))
        return (f"<div><p><b>LabelReport</b>: {head}</p>"
                f"{self.coverage.to_html(index=False, float_format=fmt_number)}"
                f"{self.agreement.to_html(index=False, float_format=fmt_number)}"
                f"{self.transfer.to_html(index=False, float_format=fmt_number)}</div>")


def fmt_number(v: float) -> str:
    """A float in the HTML tables of the evaluation reports: four significant digits."""
    return f"{v:.4g}"


def label_report(
    store: Store, run_id: str | None = None, labels: Any = None, *, valid_only: bool = True,
    transfer: str | float | None = DEFAULT_TRANSFER,
) -> LabelReport:
    """Coverage of a run's candidates by gold labels, and how far the annotators agree.

    Parameters
    ----------
    store : Store
        The database.
    run_id : str, optional
        The run (None: every candidate of every run, all labels).
    labels : path or DataFrame, optional
        Gold labels (the labels format's rows; default the store's ``labels`` table).
    valid_only : bool, default True
        Count valid candidates only (those the parser kept).
    transfer : {"exact"}, float or None, default "exact"
        How labels follow content to other extractors' lessons, as in
        :func:`~truss_lab.evaluate._truth.labelled_candidates`.

    Returns
    -------
    LabelReport
        ``coverage`` (per extractor: n_candidates, n_labelled, n_ties, n_unlabelled,
        n_orphan_labels, coverage), ``agreement`` (Cohen's kappa per annotator
        pair), ``fleiss`` (Fleiss' kappa over all annotators, when a candidate has
        two annotations or more) and ``transfer`` (direct vs transferred labels).

    Raises
    ------
    BadInputError
        An unknown run, a labels file that does not read.

    See Also
    --------
    labelled_candidates : Each candidate with its majority label.
    truss_lab.evaluate.annotator_agreement : The agreement table alone.

    Examples
    --------
    >>> rep = tl.label_report(store, "good")
    >>> rep.n_label_rows, rep.n_ties
    (1574, 79)
    >>> rep.coverage[["n_candidates", "n_labelled", "n_ties", "n_orphan_labels"]]
       n_candidates  n_labelled  n_ties  n_orphan_labels
    0          1105        1026      79               25
    >>> round(float(rep.agreement["kappa"].iloc[0]), 3)
    0.638
    """
    lab = run_labels(store, labels)
    if run_id is not None:
        run_info(store, run_id)
    cands = lesson_keys(store, run_id, valid_only=valid_only)
    if run_id is not None and len(lab):
        extractors = set(cands["extractor"]) or {
            str(run_info(store, run_id)["extractor_id"])}
        lab = lab[lab["extractor"].astype(str).isin(extractors)]
    if len(lab):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            coverage = label_coverage(cands, lab)
            agreement = annotator_agreement(lab)
            fleiss = fleiss_agreement(lab)
    else:
        fleiss = None
        coverage = pd.DataFrame(
            {"extractor": sorted(set(cands["extractor"]))}
        )
        coverage["n_candidates"] = [int((cands["extractor"] == e).sum())
                                    for e in coverage["extractor"]]
        for c in ("n_labelled", "n_ties", "n_orphan_labels"):
            coverage[c] = 0
        coverage["n_unlabelled"] = coverage["n_candidates"]
        coverage["coverage"] = 0.0
        agreement = pd.DataFrame(columns=["annotator_a", "annotator_b", "n_common",
                                          "raw_agreement", "kappa"])
    moved = transfer_report(store, run_id, run_labels(store, labels), transfer=transfer,
                            valid_only=valid_only)
    return LabelReport(run_id=run_id, coverage=coverage, agreement=agreement,
                       n_label_rows=len(lab), transfer=moved, fleiss=fleiss)
