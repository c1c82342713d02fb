"""What "the best threshold" means: objectives scored over a whole sweep at once.

An :class:`Objective` turns counts at each threshold (``kept``, ``tp``, the
number of positives and of verdicts) into a score where higher is better and
``-inf`` marks a threshold that breaks a constraint. Counts may be arrays of
any shape ending in the threshold axis, so the bootstrap re-chooses a
threshold for 1000 replicates with one call.

Ties between thresholds go to the **highest** threshold (fewest lessons
written): the conservative choice for an unverified-memory gate.

This module is the one home of the objective kinds' options and the options'
defaults (the fields of :class:`Objective`), and of their two readers: the CLI
form (``precision:0.8``, read by :func:`parse_objective`, spelled in
:mod:`._defaults` with :data:`OBJECTIVE_HELP`, which the command line's options
read without numpy) and the JSON spec recorded as evidence (written by
:func:`objective_spec`, read back by :func:`parse_objective`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from truss_lab.core._errors import BadInputError
from truss_lab.evaluate._defaults import (
    DEFAULT_OBJECTIVE,
    OBJECTIVE_EXPECTED,
    OBJECTIVE_FORMS,
    OBJECTIVE_KINDS,
    ObjectiveKind,
)

__all__ = [
    "KEEP_NOTHING",
    "OBJECTIVE_OPTIONS",
    "Objective",
    "make_objective",
    "objective_spec",
    "parse_objective",
    "ratio_at_least",
    "typed_fraction",
]

KEEP_NOTHING = float("inf")
"""The threshold that keeps nothing (above every salience): a candidate of the
``cost`` objective, whose best choice can be to write no lesson at all. It is
no valid ``extraction_min_salience`` (that lies in [0, 1]), so proposing it
as a policy is refused; it says the costs favour writing nothing."""

# The kinds' CLI spellings live in _defaults (numpy-free, for the command line's options).
_KINDS = OBJECTIVE_FORMS
_EXPECTED = OBJECTIVE_EXPECTED


@dataclass(frozen=True)
class Objective:
    """A rule for choosing a threshold.

    - ``f1`` / ``fbeta``: maximise F-beta (``beta`` > 1 favours recall);
    - ``precision_floor``: maximise recall subject to precision >= ``min_precision``;
    - ``budget``: maximise recall subject to kept lessons per verdict (on
      average) <= ``max_per_verdict``;
    - ``cost``: minimise ``cost_fp * fp + cost_fn * fn``, keeping nothing
      (:data:`KEEP_NOTHING`, cost ``cost_fn * positives``) included.

    Ties between thresholds go to the highest one (fewest lessons written). The
    CLI spells an objective ``f1``, ``fbeta:B``, ``precision:P``, ``budget:K`` or
    ``cost:FP,FN`` (:func:`parse_objective`).

    Parameters
    ----------
    kind : {"f1", "fbeta", "precision_floor", "budget", "cost"}, default "f1"
        Which rule.
    beta : float, default 1.0
        The F-beta weight of recall (``fbeta``); > 0.
    min_precision : float, optional
        The precision floor in [0, 1] (``precision_floor``, required there).
    max_per_verdict : float, optional
        The most lessons kept per verdict on average (``budget``, required there).
    cost_fp : float, default 1.0
        Cost of one kept lesson that is not useful (``cost``); finite, >= 0.
    cost_fn : float, default 1.0
        Cost of one useful lesson not kept (``cost``); finite, >= 0.

    Raises
    ------
    BadInputError
        An unknown kind, a missing or out-of-range option (naming it).

    See Also
    --------
    choose_threshold : Chooses a threshold with an objective.
    choose_run_threshold : The same for a run in the store.

    Examples
    --------
    >>> obj = tl.Objective("precision_floor", min_precision=0.85)
    >>> obj.describe()
    'max recall s.t. precision >= 0.85'
    >>> obj.scores(kept=[10, 20], tp=[9, 15], n_pos=30).tolist()  # 0.9 and 0.75 precise
    [9.0, -inf]
    >>> tl.Objective("cost", cost_fp=1, cost_fn=3).considers_nothing
    True
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

    @property
    def considers_nothing(self) -> bool:
        """Whether keeping nothing (:data:`KEEP_NOTHING`) is among the candidate thresholds.

        Only the cost can prefer it: F-beta and precision are undefined on an
        empty kept set, and with a budget the tie at zero recall goes to the
        highest *data* threshold as before."""
        return self.kind == "cost"

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

    def scores(self, kept: Any, tp: Any, n_pos: Any, n_groups: Any = None,
               judged: Any = None) -> np.ndarray:
        """Score of each threshold (higher is better, ``-inf`` = infeasible or undefined).

        The budget reads ``kept``; precision, F-beta and cost read ``judged``.

        Parameters
        ----------
        kept : array-like, shape (..., T)
            Every kept candidate at each threshold (what the gate writes).
        tp : array-like, shape (..., T)
            Kept candidates that are useful.
        n_pos : array-like
            Useful candidates in all; broadcasts against ``(..., 1)``.
        n_groups : array-like, optional
            Verdicts (the budget's denominator; required by ``budget``).
        judged : array-like, shape (..., T), optional
            Kept candidates with a truth value, ``tp + fp`` (default ``kept``).

        Returns
        -------
        numpy.ndarray
            The score of each threshold, shape of ``kept``.
        """
        budget_kept = kept
        kept = np.asarray(kept if judged is None else judged, dtype=np.float64)
        tp = np.asarray(tp, dtype=np.float64)
        n_pos = np.asarray(n_pos, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.kind in ("f1", "fbeta"):
                b2 = 1.0 if self.kind == "f1" else self.beta**2
                # F-beta = (1+b2) tp / ((1+b2) tp + b2 fn + fp) = (1+b2) tp / (kept + b2 n_pos)
                score = (1 + b2) * tp / (kept + b2 * n_pos)
            elif self.kind == "precision_floor":
                # tp / kept >= p compared exactly (p as typed), never p * kept in floats
                ok = ratio_at_least(tp, kept, self.min_precision)
                score = np.where(ok & (kept > 0), tp, -np.inf)
            elif self.kind == "budget":
                if n_groups is None:
                    raise BadInputError(
                        "objective 'budget' needs groups (verdicts)", field="groups"
                    )
                # kept / verdicts <= k, i.e. verdicts / kept >= 1 / k, exactly
                ok = ratio_at_most(budget_kept, n_groups, self.max_per_verdict)
                score = np.where(ok, tp, -np.inf)
            else:
                fp = kept - tp
                fn = n_pos - tp
                score = -(self.cost_fp * fp + self.cost_fn * fn)
        return np.where(np.isnan(score), -np.inf, score)

    def best_index(self, kept: Any, tp: Any, n_pos: Any, n_groups: Any = None,
                   judged: Any = None) -> np.ndarray:
        """Index of the best threshold along the last axis (thresholds must be descending).

        ``argmax`` returns the first maximum, i.e. the highest threshold among ties.

        Parameters
        ----------
        kept, tp, n_pos, n_groups, judged : array-like
            As in :meth:`scores`.

        Returns
        -------
        numpy.ndarray
            The index along the last axis, ``-1`` where no threshold is feasible.
        """
        score = self.scores(kept, tp, n_pos, n_groups, judged)
        if score.shape[-1] == 0:
            return np.full(score.shape[:-1], -1, dtype=np.int64)
        idx = np.argmax(score, axis=-1)
        best = np.take_along_axis(score, idx[..., None], axis=-1)[..., 0]
        return np.where(np.isneginf(best), -1, idx)


def typed_fraction(x: float) -> Fraction:
    """The decimal ``x`` was typed as, exactly: ``0.56`` is 14/25, not the binary double
    just above it. It is the shortest decimal that reads back as ``x`` (``repr``)."""
    return Fraction(repr(float(x)))


def _exact(counts: Any) -> np.ndarray:
    """Counts as exact numbers: int64 when whole (the usual case), else Fractions."""
    arr = np.asarray(counts)
    if arr.dtype.kind in "iub":
        return arr.astype(np.int64)
    f = arr.astype(np.float64)
    if np.all(np.isfinite(f)) and np.all(f == np.rint(f)):
        return np.rint(f).astype(np.int64)
    # Fractional counts (weights): each double is an exact Fraction
    return np.vectorize(Fraction, otypes=[object])(f)


def _compare(num: Any, den: Any, bound: float, sign: int) -> np.ndarray:
    """``sign * (num / den - bound) >= 0`` elementwise, exactly: ``num * q`` against
    ``p * den`` for ``bound = p / q`` as typed. Python integers take over when int64
    products could overflow."""
    b = typed_fraction(bound)
    a, d = _exact(num), _exact(den)
    p, q = b.numerator, b.denominator
    if a.dtype == np.int64 and d.dtype == np.int64:
        big = max(int(np.abs(a).max(initial=0)) * q, int(np.abs(d).max(initial=0)) * abs(p))
        if big >= 2**62:
            a, d = a.astype(object), d.astype(object)
    diff = a * q - d * p
    return np.asarray(diff * sign >= 0, dtype=bool)


def ratio_at_least(num: Any, den: Any, bound: float) -> np.ndarray:
    """``num / den >= bound`` as exact integer arithmetic (``bound`` as typed; den >= 0).

    Counts are compared as ``num * q >= p * den`` with ``bound = p / q``, so
    ``tp / kept >= 0.56`` holds at 14/25 (``0.56 * 25`` is 14.000000000000002 in
    floats). ``den == 0`` gives ``num >= 0``-style results; callers mask it."""
    return _compare(num, den, bound, 1)


def ratio_at_most(num: Any, den: Any, bound: float) -> np.ndarray:
    """``num / den <= bound`` as exact integer arithmetic (see :func:`ratio_at_least`)."""
    return _compare(num, den, bound, -1)


OBJECTIVE_OPTIONS: tuple[str, ...] = ("beta", "min_precision", "max_per_verdict",
                                       "cost_fp", "cost_fn")
"""The option fields of :class:`Objective`: the keyword options every function that
takes ``objective=`` accepts and hands to :func:`make_objective`."""


def make_objective(
    objective: str | Objective = DEFAULT_OBJECTIVE, **options: float | None
) -> Objective:
    """An :class:`Objective` from a kind name plus options (or the object itself, unchanged).

    ``options`` are fields of :class:`Objective` (:data:`OBJECTIVE_OPTIONS`:
    ``beta``, ``min_precision``, ``max_per_verdict``, ``cost_fp``, ``cost_fn``);
    one left at None takes the :class:`Objective` default.
    """
    unknown = sorted(set(options) - set(OBJECTIVE_OPTIONS))
    if unknown:
        raise BadInputError(
            f"unknown objective option(s) {', '.join(unknown)}; expected "
            f"{', '.join(OBJECTIVE_OPTIONS)}", field=unknown[0])
    if isinstance(objective, Objective):
        return objective
    return Objective(
        kind=objective,  # type: ignore[arg-type]  # validated in __post_init__
        **{k: v for k, v in options.items() if v is not None},  # type: ignore[arg-type]
    )


def parse_objective(spec: str | Mapping[str, Any] | Objective) -> Objective:
    """An :class:`Objective` from its CLI form or its JSON spec.

    CLI forms: ``f1``; ``fbeta:B``; ``precision:P`` (max recall with precision
    >= P); ``budget:K`` (max recall with at most K kept lessons per verdict);
    ``cost:FP,FN`` (min FP*fp + FN*fn). A mapping is a spec as
    :func:`objective_spec` writes it (``kind`` plus that kind's options;
    ``description`` is ignored). Objective objects pass through.
    """
    if isinstance(spec, Objective):
        return spec
    if isinstance(spec, Mapping):
        return _from_spec(spec)
    if not isinstance(spec, str):
        raise BadInputError(f"objective must be a string, got {type(spec).__name__}",
                            field="objective")
    name, _, arg = spec.strip().partition(":")
    found = next(((kind, k) for kind, k in _KINDS.items() if name in (k.cli, kind)), None)
    if found is not None:
        kind, k = found
        n = len(k.options)
        # The last option takes the rest of the text, so "fbeta:1,2" is a bad number.
        args = arg.split(",", n - 1) if n and arg else []
        if len(args) == n and (n or not arg):
            try:
                values = [float(a) for a in args]
            except ValueError:
                raise BadInputError(f"bad number in objective {spec!r}; {_EXPECTED}",
                                    field="objective") from None
            return Objective(kind=kind, **dict(zip(k.options, values, strict=True)))  # type: ignore[arg-type]
    raise BadInputError(f"unknown objective {spec!r}; {_EXPECTED}", field="objective")


def _from_spec(spec: Mapping[str, Any]) -> Objective:
    kind = spec.get("kind")
    if kind not in _KINDS:
        raise BadInputError(
            f"unknown objective kind {kind!r}; expected one of {', '.join(OBJECTIVE_KINDS)}",
            field="objective")
    extra = set(spec) - {"kind", "description", *_KINDS[kind].options}
    if extra:
        raise BadInputError(
            f"objective {kind!r} takes {', '.join(_KINDS[kind].options) or 'no options'}, "
            f"got {', '.join(sorted(extra))}", field="objective")
    options = {o: spec[o] for o in _KINDS[kind].options if o in spec}
    for o, v in options.items():
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise BadInputError(f"objective option {o} must be a number, got {v!r}", field=o)
    return Objective(kind=kind, **options)


def objective_spec(obj: Objective) -> dict[str, Any]:
    """The fields of ``obj`` that matter for its kind (JSON-ready): ``kind``,
    ``description`` and the kind's options."""
    spec: dict[str, Any] = {"kind": obj.kind, "description": obj.describe()}
    spec.update({o: getattr(obj, o) for o in _KINDS[obj.kind].options})
    return spec
