"""Calibrators: turn a salience score into a probability, fitted out of sample.

:class:`IsotonicCalibrator` (pool-adjacent-violators, as scikit-learn's
``IsotonicRegression``) and :class:`PlattCalibrator` (Platt's sigmoid: logistic
on one feature with Platt's smoothed targets) are fitted on labelled candidates and remember the
verdicts they were fitted on; :func:`calibrated` wraps a fitted one around a
:class:`~truss_lab.score._salience.Scorer` and refuses to score those verdicts
again (in-sample calibrated scores would flatter any threshold chosen on them).
Measuring calibration (reliability bins, ECE, Brier) is ``evaluate._calibration``.
"""

from __future__ import annotations

from typing import Any, Self

import numpy as np
import pandas as pd

from ..core._errors import BadInputError
from ..core._threads import blas_limited
from ._salience import Scorer, fingerprint

__all__ = ["IsotonicCalibrator", "PlattCalibrator", "calibrated"]


def _as_1d(x: Any, what: str) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 1:
        raise BadInputError(f"{what} must be one-dimensional, got shape {a.shape}", field=what)
    return a


class _Calibrator:
    kind = "calibrator"

    def __init__(self) -> None:
        self.fitted_verdicts: frozenset[str] | None = None
        self.n_fit = 0

    def _check_fit(
        self, scores: Any, labels: Any, verdict_hash: Any
    ) -> tuple[np.ndarray, np.ndarray]:
        x = _as_1d(scores, "scores")
        y = _as_1d(labels, "labels")
        vh = np.asarray(verdict_hash, dtype=object)
        if not (len(x) == len(y) == len(vh)):
            raise BadInputError(
                f"scores, labels and verdict_hash differ in length: {len(x)}, {len(y)}, "
                f"{len(vh)}",
                field="labels",
            )
        if len(x) == 0:
            raise BadInputError("cannot fit a calibrator on zero candidates", field="scores")
        if not np.isfinite(x).all():
            raise BadInputError(
                f"{int((~np.isfinite(x)).sum())} scores are NaN or infinite; drop invalid "
                "candidates before fitting",
                field="scores",
            )
        if not np.isin(y, (0.0, 1.0)).all():
            raise BadInputError("labels must be 0 or 1", field="labels")
        self.fitted_verdicts = frozenset(str(h) for h in vh)
        self.n_fit = len(x)
        return x, y

    def _check_apply(
        self, scores: Any, verdict_hash: Any, allow_in_sample: bool
    ) -> np.ndarray:
        if self.fitted_verdicts is None:
            raise BadInputError(f"the {self.kind} calibrator is not fitted; call fit() first")
        x = _as_1d(scores, "scores")
        if not allow_in_sample:
            if verdict_hash is None:
                raise BadInputError(
                    "pass verdict_hash so out-of-sample use can be checked "
                    "(or allow_in_sample=True)",
                    field="verdict_hash",
                )
            vh = pd.Series(np.asarray(verdict_hash, dtype=object)).astype("str")
            if len(vh) != len(x):
                raise BadInputError("scores and verdict_hash differ in length",
                                    field="verdict_hash")
            seen = vh[vh.isin(self.fitted_verdicts)].unique()
            if len(seen):
                raise BadInputError(
                    f"{len(seen)} verdicts were in the {self.kind} calibrator's fitting set, "
                    f"e.g. {list(seen[:3])}; calibrated scores must be out of sample "
                    "(pass allow_in_sample=True to override explicitly)",
                    field="verdict_hash",
                    reason="in_sample",
                )
        return x

    def fingerprint(self) -> str:
        """A short hash of the fitted parameters and fitting set."""
        return fingerprint([self.kind, self._params(), sorted(self.fitted_verdicts or ())])

    def _params(self) -> Any:  # pragma: no cover - overridden
        return None


class IsotonicCalibrator(_Calibrator):
    """Monotone (non-decreasing) calibration by pool-adjacent-violators.

    Matches scikit-learn's ``IsotonicRegression(out_of_bounds="clip", y_min=0,
    y_max=1)``: ties in the score are pooled (mean label), the step function
    is interpolated linearly between distinct fitted scores and clipped
    outside their range.
    """

    kind = "isotonic"

    def fit(self, scores: Any, labels: Any, *, verdict_hash: Any) -> Self:
        """Fit on labelled candidates; ``verdict_hash`` records the fitting set.

        Parameters
        ----------
        scores : array-like
            Each candidate's score.
        labels : array of 0/1
            Each candidate's label.
        verdict_hash : array-like
            Each candidate's verdict: the fitting set, which :meth:`predict` refuses.

        Returns
        -------
        Self
            The fitted calibrator.

        Raises
        ------
        BadInputError
            Arrays of different lengths, labels other than 0/1.
        """
        x, y = self._check_fit(scores, labels, verdict_hash)
        ux, inv = np.unique(x, return_inverse=True)
        w = np.bincount(inv).astype(np.float64)
        m = np.bincount(inv, weights=y) / w
        self.x_ = ux
        self.y_ = np.clip(_pav(m, w), 0.0, 1.0)
        return self

    def predict(
        self, scores: Any, *, verdict_hash: Any = None, allow_in_sample: bool = False
    ) -> np.ndarray:
        """Calibrated probabilities; NaN scores stay NaN. Refuses in-sample verdicts.

        Parameters
        ----------
        scores : array-like
            The scores to calibrate.
        verdict_hash : array-like, optional
            Their verdicts, checked against the fitting set (required unless
            ``allow_in_sample``).
        allow_in_sample : bool, default False
            Calibrate verdicts it was fitted on (an optimistic, in-sample answer).

        Returns
        -------
        numpy.ndarray
            The probabilities.

        Raises
        ------
        BadInputError
            Not fitted, no ``verdict_hash``, or a verdict of the fitting set, without
            ``allow_in_sample``.
        """
        x = self._check_apply(scores, verdict_hash, allow_in_sample)
        out = np.interp(np.clip(x, self.x_[0], self.x_[-1]), self.x_, self.y_)
        out[np.isnan(x)] = np.nan
        return out

    def _params(self) -> Any:
        return [self.x_.tolist(), self.y_.tolist()]


def _pav(m: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted isotonic (non-decreasing) fit of block means ``m`` with weights ``w``."""
    # PAV is sequential by nature (each merge depends on the previous ones), so
    # this is a loop over the *distinct* scores, with a block stack.
    n = len(m)
    vals = np.empty(n)
    wts = np.empty(n)
    ends = np.empty(n, dtype=np.int64)
    top = -1
    for i in range(n):
        top += 1
        vals[top], wts[top], ends[top] = m[i], w[i], i
        while top > 0 and vals[top - 1] >= vals[top]:
            wsum = wts[top - 1] + wts[top]
            vals[top - 1] = (vals[top - 1] * wts[top - 1] + vals[top] * wts[top]) / wsum
            wts[top - 1] = wsum
            ends[top - 1] = ends[top]
            top -= 1
    sizes = np.diff(np.concatenate(([-1], ends[: top + 1])))
    return np.repeat(vals[: top + 1], sizes)


class PlattCalibrator(_Calibrator):
    """Platt scaling: ``p = 1 / (1 + exp(-(a*score + b)))`` fitted with Platt's targets.

    Platt (1999) fits the sigmoid not to the 0/1 labels but to smoothed
    targets: ``(N+ + 1) / (N+ + 2)`` for a positive and ``1 / (N- + 2)`` for a
    negative (``N+``/``N-``: positives/negatives in the fitting set), a
    Bayesian prior that keeps the fit from promising 0 or 1 on a finite sample
    and keeps the slope finite when the score separates the labels.
    ``smoothing=False`` fits the 0/1 labels (plain logistic regression on one
    feature, as scikit-learn's ``LogisticRegression(C=C)``).

    Fitted by Newton's method (IRLS) with a step-halving line search on
    ``sum_i [log(1 + exp(z_i)) - t_i z_i] + a**2 / (2*C)`` with ``z = a*score + b``
    and ``t`` the targets (intercept not penalized). ``C`` only matters
    without smoothing on (nearly) separable labels, where it keeps the slope
    finite. ``targets_`` holds ``(positive, negative)`` targets after fitting.

    Parameters
    ----------
    smoothing : bool, default True
        Fit Platt's smoothed targets (False: the 0/1 labels).
    C : float, default 1e6
        Inverse strength of the slope's penalty (> 0).
    max_iter : int, default 100
        Newton iterations at most.
    tol : float, default 1e-10
        Convergence tolerance.

    Raises
    ------
    BadInputError
        ``C`` not > 0.
    """

    kind = "platt"

    def __init__(self, *, smoothing: bool = True, C: float = 1e6, max_iter: int = 100,
                 tol: float = 1e-10) -> None:
        super().__init__()
        if not C > 0:
            raise BadInputError(f"C must be > 0, got {C}", field="C")
        self.smoothing = bool(smoothing)
        self.C = float(C)
        self.max_iter = int(max_iter)
        self.tol = float(tol)

    @blas_limited()
    def fit(self, scores: Any, labels: Any, *, verdict_hash: Any) -> Self:
        """Fit on labelled candidates; ``verdict_hash`` records the fitting set.

        Parameters
        ----------
        scores : array-like
            Each candidate's score.
        labels : array of 0/1
            Each candidate's label.
        verdict_hash : array-like
            Each candidate's verdict: the fitting set, which :meth:`predict` refuses.

        Returns
        -------
        Self
            The fitted calibrator.

        Raises
        ------
        BadInputError
            Arrays of different lengths, labels other than 0/1.
        """
        x, y = self._check_fit(scores, labels, verdict_hash)
        n_pos = float(y.sum())
        n_neg = len(y) - n_pos
        pos_t, neg_t = (1.0, 0.0)
        if self.smoothing:
            pos_t, neg_t = (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2)
        self.targets_ = (pos_t, neg_t)
        y = np.where(y == 1, pos_t, neg_t)  # the targets replace the labels from here on
        X = np.column_stack([x, np.ones_like(x)])
        pen = np.array([1.0 / self.C, 0.0])

        def objective(t: np.ndarray) -> float:
            z = X @ t
            return float(np.sum(np.logaddexp(0.0, z) - y * z) + 0.5 * pen[0] * t[0] ** 2)

        theta = np.zeros(2)
        f = objective(theta)
        self.n_iter_ = 0
        for it in range(self.max_iter):
            p = _sigmoid(X @ theta)
            grad = X.T @ (p - y) + pen * theta
            if np.max(np.abs(grad)) <= self.tol * max(1.0, len(x)):
                break
            h = X.T @ (X * (p * (1.0 - p))[:, None]) + np.diag(pen)
            # A tiny ridge keeps the solve defined when every score is equal.
            step = np.linalg.solve(h + 1e-12 * np.eye(2), grad)
            t = 1.0
            while t > 1e-10:
                cand = theta - t * step
                fc = objective(cand)
                if fc <= f:
                    break
                t *= 0.5
            else:
                break
            self.n_iter_ = it + 1
            converged = abs(f - fc) <= 1e-15 * max(1.0, abs(f))
            theta, f = cand, fc
            if converged:
                break
        self.a_, self.b_ = float(theta[0]), float(theta[1])
        return self

    def predict(
        self, scores: Any, *, verdict_hash: Any = None, allow_in_sample: bool = False
    ) -> np.ndarray:
        """Calibrated probabilities; NaN scores stay NaN. Refuses in-sample verdicts.

        Parameters
        ----------
        scores : array-like
            The scores to calibrate.
        verdict_hash : array-like, optional
            Their verdicts, checked against the fitting set (required unless
            ``allow_in_sample``).
        allow_in_sample : bool, default False
            Calibrate verdicts it was fitted on (an optimistic, in-sample answer).

        Returns
        -------
        numpy.ndarray
            The probabilities.

        Raises
        ------
        BadInputError
            Not fitted, no ``verdict_hash``, or a verdict of the fitting set, without
            ``allow_in_sample``.
        """
        x = self._check_apply(scores, verdict_hash, allow_in_sample)
        return _sigmoid(self.a_ * x + self.b_)

    def _params(self) -> Any:
        return [self.a_, self.b_, self.C, self.smoothing]


def _sigmoid(z: np.ndarray) -> np.ndarray:
    # exp(-logaddexp(0, -z)) = 1/(1+exp(-z)) without overflow; NaN stays NaN.
    with np.errstate(invalid="ignore"):
        return np.exp(-np.logaddexp(0.0, -z))


def calibrated(
    base: Scorer,
    calibrator: IsotonicCalibrator | PlattCalibrator,
    *,
    name: str | None = None,
    allow_in_sample: bool = False,
) -> Scorer:
    """A scorer applying a fitted calibrator to ``base``'s scores.

    Named ``<base>_<kind>`` by default; its version embeds the fit's
    fingerprint. Scoring a candidate whose verdict was in the fitting set
    raises :class:`BadInputError` unless ``allow_in_sample=True``.
    """
    if calibrator.fitted_verdicts is None:
        raise BadInputError("fit the calibrator before wrapping it in a scorer")
    requires = tuple(dict.fromkeys((*base.requires, "verdict_hash")))

    def fn(c: pd.DataFrame, vt: pd.DataFrame | None) -> np.ndarray:
        return calibrator.predict(
            base(c, vt), verdict_hash=c["verdict_hash"].to_numpy(),
            allow_in_sample=allow_in_sample,
        )

    return Scorer(
        name or f"{base.name}_{calibrator.kind}",
        f"{base.version}+{calibrator.kind}-{calibrator.fingerprint()}",
        fn, requires, base.needs_verdicts,
        f"{calibrator.kind} calibration of {base.name} fitted on {calibrator.n_fit} candidates",
    )
