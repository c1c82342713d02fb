"""The evaluation's defaults and the command-line spellings of its choices, free of numpy
and pandas: every command builds its options (defaults, ``--help`` text) from here, so
``truss-lab sweep --help`` shows them without importing the maths (issue 38). The maths
modules import these names from here; this is their one home.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

__all__ = [
    "CORRECTIONS",
    "CORRECT_HELP",
    "DEFAULT_BAND",
    "DEFAULT_CV",
    "DEFAULT_N_BOOT",
    "DEFAULT_N_PERM",
    "DEFAULT_OBJECTIVE",
    "OBJECTIVE_EXPECTED",
    "OBJECTIVE_FORMS",
    "OBJECTIVE_HELP",
    "OBJECTIVE_KINDS",
    "SLICE_METRICS",
    "TRUTH_HELP",
    "ObjectiveForm",
    "ObjectiveKind",
]

#: Verdict-bootstrap replicates by default, in every face (CLI, report, displays): one
#: run with one seed gives one interval wherever it is shown.
DEFAULT_N_BOOT = 1000

#: Permutations of each slice's test (evaluate/_slices.py): the smallest p-value is
#: 1 / (n_perm + 1), so 2000 lets 40 slices' smallest q reach 0.02.
DEFAULT_N_PERM = 2000

#: The metrics of each slice at the threshold, each with its interval; a slice's test is
#: on one of them (``slices --test``).
SLICE_METRICS: tuple[str, ...] = ("precision", "recall", "f1", "kept_per_verdict")

#: How a run's threshold is chosen by default, in every face (the CLI, the report, the
#: demo, the notebooks): cross-validated over ``AUTO_FOLDS`` folds of verdicts when
#: ``auto_cv`` says the data allow it, else one split of ``DEFAULT_TEST_SIZE`` held out
#: (evaluate/_runs.py).
DEFAULT_CV: Literal["auto"] = "auto"

#: Half-width of the band around the ADR default used when the run has too few labels
#: (the labelling queue, evaluate/_queue.py).
DEFAULT_BAND = 0.10

Correction = Literal["ppi", "none", "auto"]
#: What ``correct=`` / ``--correct`` accepts.
CORRECTIONS: tuple[str, ...] = get_args(Correction)

CORRECT_HELP = ("Correct the automated truth (matcher or judge) with the people's answers: "
                "ppi (prediction-powered: automated count over all annotated verdicts plus "
                "the people-minus-automated correction on the verdicts people answered for), "
                "none, or auto (ppi when people answered for some of the run's verdicts). "
                "See docs/explanation/ppi.md.")

#: What ``--truth`` / ``truth=`` accepts, as the CLI's help says it.
TRUTH_HELP = ("What the lessons are judged by: labels (gold labels on them), references "
              "(reference lessons of their verdicts, `truss-lab schema references`) or "
              "judge:NAME (one judge's labels, e.g. judge:sim-judge-v1@judge-v1; see "
              "`truss-lab judge`). auto: labels when every run has some, else references "
              "(the output says which). See docs/explanation/truth-sources.md.")

ObjectiveKind = Literal["f1", "fbeta", "precision_floor", "budget", "cost"]
OBJECTIVE_KINDS: tuple[str, ...] = get_args(ObjectiveKind)
DEFAULT_OBJECTIVE = "f1"
"""The objective when none is given (library and CLI)."""


@dataclass(frozen=True)
class ObjectiveForm:
    """How one objective kind is spelled and which ``Objective`` fields it reads."""

    cli: str
    """Its name in the CLI form (the kind's own name is accepted too)."""
    options: tuple[str, ...]
    """The ``Objective`` fields it reads, in the order the CLI form gives them."""
    metavars: tuple[str, ...]
    """Placeholders of those options in the CLI help."""
    help: str = ""
    """What it means, for the CLI help (empty when the name says it)."""

    @property
    def form(self) -> str:
        """The CLI form, e.g. ``cost:FP,FN``."""
        return self.cli + (":" + ",".join(self.metavars) if self.metavars else "")


#: Every objective kind's spelling, read by ``parse_objective`` (evaluate/_objective.py).
OBJECTIVE_FORMS: dict[str, ObjectiveForm] = {
    "f1": ObjectiveForm("f1", (), ()),
    "fbeta": ObjectiveForm("fbeta", ("beta",), ("B",)),
    "precision_floor": ObjectiveForm("precision", ("min_precision",), ("P",),
                                     "max recall with precision >= P"),
    "budget": ObjectiveForm("budget", ("max_per_verdict",), ("K",),
                            "max recall with <= K lessons per verdict"),
    "cost": ObjectiveForm("cost", ("cost_fp", "cost_fn"), ("FP", "FN"), "min FP*fp + FN*fn"),
}

_FORMS = [k.form for k in OBJECTIVE_FORMS.values()]
#: What an unknown objective's error says was expected.
OBJECTIVE_EXPECTED = f"expected {', '.join(_FORMS[:-1])} or {_FORMS[-1]}"

OBJECTIVE_HELP = "How to choose the threshold: " + " | ".join(
    k.form + (f" ({k.help})" if k.help else "") for k in OBJECTIVE_FORMS.values()
) + "."
"""The ``--objective`` help of the CLI: every CLI form and what it means."""
