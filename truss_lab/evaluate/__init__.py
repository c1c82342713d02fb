"""Evaluation: the maths over arrays and frames (sweep, threshold choice, calibration,
bootstrap, comparison, agreement), the truth a run is judged by (_truth: gold labels,
reference lessons or a judge's labels, resolved once by ``Truth.resolve``), the judges
that produce truth (_judges), and the same maths over a run in the store (_runs)."""

from __future__ import annotations

import typing

from ..core._lazy import attach as _attach

if typing.TYPE_CHECKING:
    # Imported on first use (core/_lazy.py): importing the package stays cheap, so the
    # command line starts at once. These lines are the exports' one list of homes.
    from ._agreement import (
        agreement_table,
        annotator_agreement,
        cohen_kappa,
        label_coverage,
        majority_labels,
        reference_agreement,
    )
    from ._bootstrap import BootstrapResult, bootstrap_metrics
    from ._budget import LabelBudget, label_budget
    from ._calibration import (
        CalibrationReport,
        brier_score,
        calibration_run,
        expected_calibration_error,
        max_calibration_error,
        reliability_table,
    )
    from ._choose import (
        ThresholdChoice,
        choose_threshold,
        choose_threshold_ppi,
        split_by_verdict,
        verdict_kfold,
    )
    from ._compare import (
        ComparisonResult,
        compare_extractors,
        compare_extractors_ppi,
        mcnemar_exact,
    )
    from ._frontier import Frontier, dominance, frontier
    from ._judges import (
        Judge,
        JudgeAgreement,
        JudgeMatcher,
        JudgeRun,
        judge_agreement,
        judge_names,
        match_run,
        parse_judgement,
        parse_similarities,
        run_judge,
    )
    from ._label_report import LabelReport, label_report
    from ._matches import (
        MatchAgreement,
        match_agreement,
        people_matches,
        people_truth,
        run_match_labels,
    )
    from ._objective import Objective
    from ._people import PeopleAgreement, PeopleUncheckedWarning, people_agreement
    from ._ppi import PeopleMatcher, PPIData, ppi_bootstrap, ppi_data, ppi_sweep
    from ._queue import labelling_queue, match_queue, whole_verdict_queue
    from ._runs import (
        RunEvaluation,
        bootstrap_run,
        choose_run_threshold,
        compare_runs,
        evaluate_run,
        rank_runs,
        sweep_run,
    )
    from ._slices import SliceAnalysis, bh_qvalues, slice_run
    from ._sweep import UndefinedMetricWarning, average_precision, sweep
    from ._truth import (
        ReferenceTruth,
        Truth,
        judge_lessons,
        labelled_candidates,
        reference_sweep,
        reference_truth,
        run_references,
        scored_candidates,
        transfer_report,
    )

__getattr__, __dir__ = _attach(__name__, __file__)

__all__ = [
    "BootstrapResult",
    "CalibrationReport",
    "ComparisonResult",
    "Frontier",
    "Judge",
    "JudgeAgreement",
    "JudgeMatcher",
    "JudgeRun",
    "LabelBudget",
    "LabelReport",
    "MatchAgreement",
    "Objective",
    "PPIData",
    "PeopleAgreement",
    "PeopleMatcher",
    "PeopleUncheckedWarning",
    "ReferenceTruth",
    "RunEvaluation",
    "SliceAnalysis",
    "ThresholdChoice",
    "Truth",
    "UndefinedMetricWarning",
    "agreement_table",
    "annotator_agreement",
    "average_precision",
    "bh_qvalues",
    "bootstrap_metrics",
    "bootstrap_run",
    "brier_score",
    "calibration_run",
    "choose_run_threshold",
    "choose_threshold",
    "choose_threshold_ppi",
    "cohen_kappa",
    "compare_extractors",
    "compare_extractors_ppi",
    "compare_runs",
    "dominance",
    "evaluate_run",
    "expected_calibration_error",
    "frontier",
    "judge_agreement",
    "judge_lessons",
    "judge_names",
    "label_budget",
    "label_coverage",
    "label_report",
    "labelled_candidates",
    "labelling_queue",
    "majority_labels",
    "match_agreement",
    "match_queue",
    "match_run",
    "max_calibration_error",
    "mcnemar_exact",
    "parse_judgement",
    "parse_similarities",
    "people_agreement",
    "people_matches",
    "people_truth",
    "ppi_bootstrap",
    "ppi_data",
    "ppi_sweep",
    "rank_runs",
    "reference_agreement",
    "reference_sweep",
    "reference_truth",
    "reliability_table",
    "run_judge",
    "run_match_labels",
    "run_references",
    "scored_candidates",
    "slice_run",
    "split_by_verdict",
    "sweep",
    "sweep_run",
    "transfer_report",
    "verdict_kfold",
    "whole_verdict_queue",
]
