"""What "the best threshold" means: objectives scored over a whole sweep at once.

An :class:`Objective` turns counts at each threshold (``kept``, ``tp``, the
number of positives and of verdicts) into a score where higher is better and
``-inf`` marks a threshold that breaks a constraint. Counts may be arrays of
any shape ending in the threshold axis, so the bootstrap re-chooses a
threshold for 1000 replicates with one call.

Ties between thresholds go to the **highest** threshold (fewest lessons
written): the conservative choice for an unverified-memory gate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from truss_lab.core._errors import BadInputError

__all__ = ["OBJECTIVE_KINDS", "Objective", "make_objective"]

ObjectiveKind = Literal["f1", "fbeta", "precision_floor", "budget", "cost"]
OBJECTIVE_KINDS: tuple[str, ...] = ("f1", "fbeta", "precision_floor", "budget", "cost")


@dataclass(frozen=True)
class Objective:
    """A rule for choosing a threshold.

    - ``f1`` / ``fbeta``: maximise F-beta (``beta`` > 1 favours recall);
    - ``precision_floor``: maximise recall subject to precision >= ``min_precision``;
    - ``budget``: maximise recall subject to kept lessons per verdict (on
      average) <= ``max_per_verdict``;
    - ``cost``: minimise ``cost_fp * fp + cost_fn * fn``.
    """

    kind: ObjectiveKind = "f1"
    beta: float = 1.0
    min_precision: float | None = None
    max_per_verdict: float | None = None
    cost_fp: float = 1.0
    cost_fn: float = 1.0

    def __post_init__(self) -> None:
        if self.kind not in OBJECTIVE_KINDS:
            raise BadInputError(
                f"unknown objective {self.kind!r}; expected one of {', '.join(OBJECTIVE_KINDS)}",
                field="objective",
            )
        if not (np.isfinite(self.beta) and self.beta > 0):
            raise BadInputError(f"beta must be > 0, got {self.beta!r}", field="beta")
        if self.kind == "precision_floor":
            p = self.min_precision
            if p is None or not (0.0 <= p <= 1.0):
                raise BadInputError(
                    f"objective 'precision_floor' needs min_precision in [0, 1], got {p!r}",
                    field="min_precision",
                )
        if self.kind == "budget":
            k = self.max_per_verdict
            if k is None or not (np.isfinite(k) and k >= 0):
                raise BadInputError(
                    f"objective 'budget' needs max_per_verdict >= 0, got {k!r}",
                    field="max_per_verdict",
                )
        for name in ("cost_fp", "cost_fn"):
            v = getattr(self, name)
            if not (np.isfinite(v) and v >= 0):
                raise BadInputError(f"{name} must be finite and >= 0, got {v!r}", field=name)

    def describe(self) -> str:
        """One line for reports, e.g. ``"max recall s.t. precision >= 0.9"``."""
        if self.kind == "f1":
            return "max F1"
        if self.kind == "fbeta":
            return f"max F-beta (beta={self.beta:g})"
        if self.kind == "precision_floor":
            return f"max recall s.t. precision >= {self.min_precision:g}"
        if self.kind == "budget":
            return f"max recall s.t. kept per verdict <= {self.max_per_verdict:g}"
        return f"min cost (cost_fp={self.cost_fp:g}, cost_fn={self.cost_fn:g})"

    def scores(self, kept: Any, tp: Any, n_pos: Any, n_groups: Any = None) -> np.ndarray:
        """Score of each threshold (higher is better, ``-inf`` = infeasible or undefined).

        ``kept`` and ``tp`` have shape ``(..., T)``; ``n_pos`` and ``n_groups``
        broadcast against ``(..., 1)``.
        """
        kept = np.asarray(kept, dtype=np.float64)
        tp = np.asarray(tp, dtype=np.float64)
        n_pos = np.asarray(n_pos, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.kind in ("f1", "fbeta"):
                b2 = 1.0 if self.kind == "f1" else self.beta**2
                # F-beta = (1+b2) tp / ((1+b2) tp + b2 fn + fp) = (1+b2) tp / (kept + b2 n_pos)
                score = (1 + b2) * tp / (kept + b2 * n_pos)
            elif self.kind == "precision_floor":
                ok = tp >= self.min_precision * kept  # precision >= p, without dividing
                score = np.where(ok & (kept > 0), tp, -np.inf)
            elif self.kind == "budget":
                if n_groups is None:
                    raise BadInputError(
                        "objective 'budget' needs groups (verdicts)", field="groups"
                    )
                g = np.asarray(n_groups, dtype=np.float64)
                score = np.where(kept <= self.max_per_verdict * g, tp, -np.inf)
            else:
                fp = kept - tp
                fn = n_pos - tp
                score = -(self.cost_fp * fp + self.cost_fn * fn)
        return np.where(np.isnan(score), -np.inf, score)

    def best_index(self, kept: Any, tp: Any, n_pos: Any, n_groups: Any = None) -> np.ndarray:
        """Index of the best threshold along the last axis (thresholds must be descending).

        ``argmax`` returns the first maximum, i.e. the highest threshold among
        ties. ``-1`` where no threshold is feasible.
        """
        score = self.scores(kept, tp, n_pos, n_groups)
        if score.shape[-1] == 0:
            return np.full(score.shape[:-1], -1, dtype=np.int64)
        idx = np.argmax(score, axis=-1)
        best = np.take_along_axis(score, idx[..., None], axis=-1)[..., 0]
        return np.where(np.isneginf(best), -1, idx)


def make_objective(
    objective: str | Objective = "f1",
    *,
    beta: float = 1.0,
    min_precision: float | None = None,
    max_per_verdict: float | None = None,
    cost_fp: float = 1.0,
    cost_fn: float = 1.0,
) -> Objective:
    """An :class:`Objective` from a name plus options (or the object itself, unchanged)."""
    if isinstance(objective, Objective):
        return objective
    return Objective(
        kind=objective,  # type: ignore[arg-type]  # validated in __post_init__
        beta=beta,
        min_precision=min_precision,
        max_per_verdict=max_per_verdict,
        cost_fp=cost_fp,
        cost_fn=cost_fn,
    )
