"""The scale rule every solver checks before it runs: numbers the QP can hold in float64.

A ranking problem is unchanged when its features are multiplied by ``t`` and ``λ`` by ``t²``, or
its pair weights by ``t`` and ``λ`` by ``t``: nothing is gained by extreme scales, but float64 is
lost. Features of ``1e200`` give pair differences whose squares ``‖d_i‖²`` overflow (LAPACK then
printed ``DLASCL`` errors and SCS failed to allocate); features of ``1e-200`` give scores ``X w``
that underflow to 0, so the model ranks nothing; weights of ``1e-320`` (subnormal) give costs
whose products lose every digit. So, before any solver runs:

* the largest feature value ``s = max |x|`` must lie in ``[MIN_FEATURE, MAX_FEATURE]``
  (``1e-50`` to ``1e50``; all-zero features are allowed, ``w = 0`` is then the solution);
* the largest per-pair cost ``C_max = max_i c_i / (2λ)`` must lie in the range of ``C``,
  ``[1/(2 MAX_C), MAX_C]`` (:data:`cvxrank.costs.MAX_C`, ``5e-101`` to ``1e100``).

Together they keep ``s²`` within ``1e±100`` and ``C s`` (the size of ``w = Dᵀα`` when ``λ`` is
large) and ``1/s`` (its size when ``λ`` is small) within about ``1e±150``, so ``‖w‖²``, ``‖d‖²``
and the objective stay normal float64 numbers. Single tiny weights among normal ones are kept:
their pairs just weigh almost nothing. Anything outside is refused with a one-line
:class:`~cvxrank.exceptions.ValidationError` that says what to rescale.
"""

from __future__ import annotations

import numpy as np

from cvxrank._float64 import abs_max
from cvxrank.costs import MAX_C
from cvxrank.exceptions import ValidationError

__all__ = ["MAX_FEATURE", "MIN_FEATURE", "check_feature_scale", "check_scale", "largest_abs"]

#: The range of the largest ``|x|``; see the module docstring.
MIN_FEATURE = 1e-50
MAX_FEATURE = 1e50


def largest_abs(X, rows=None) -> float:
    """``max |x|`` over a dense or sparse matrix (0 when empty), without an ``|X|`` temporary; ``rows``: over
    those rows only (gathered a block at a time)."""
    if rows is not None:
        return abs_max(X, rows)
    values = X.data if hasattr(X, "indptr") or hasattr(X, "row") else np.asarray(X)
    if values.size == 0:
        return 0.0
    with np.errstate(over="ignore"):
        return max(float(values.max()), -float(values.min()))


def check_feature_scale(X, rows=None) -> None:
    """Refuse features whose largest ``|x|`` lies outside ``[MIN_FEATURE, MAX_FEATURE]`` (0 is allowed):
    the features' half of :func:`check_scale`, for problems without pair costs (the listwise one).

    Raises
    ------
    ValidationError
        Naming the largest ``|x|`` and saying to rescale the features.
    """
    s = largest_abs(X, rows)
    if s > MAX_FEATURE or 0 < s < MIN_FEATURE:
        what = (f"above {MAX_FEATURE:g}: the QP's squares (||d_i||^2, the scores X w) overflow float64" if s > 1
                else f"below {MIN_FEATURE:g}: the QP's products (the scores X w, ||w||^2) underflow float64")
        raise ValidationError(f"the features reach |x| = {s:.3g}, {what}; rescale the features "
                              "(e.g. divide each column by its largest |value|)")


def check_scale(X, largest_weight: float, lam: float, rows=None) -> None:
    """Refuse a problem whose scale float64 cannot hold (module docstring).

    Parameters
    ----------
    X : array or sparse matrix
        The features (``RankingData.X``).
    largest_weight : float
        The largest per-pair weight ``c_i`` of (9) (``τ μ`` or an explicit weight).
    lam : float
        ``λ`` of (9).
    rows : array of int, optional
        The rows of ``X`` the problem reads (default all).

    Raises
    ------
    ValidationError
        Naming the largest feature or cost and what to rescale.

    Examples
    --------
    >>> check_scale(np.array([[1e200, 0.0]]), 1.0, 0.5)
    Traceback (most recent call last):
    ...
    cvxrank.exceptions.ValidationError: the features reach |x| = 1e+200, above 1e+50: the QP's squares (||d_i||^2, the scores X w) overflow float64; rescale the features (e.g. divide each column by its largest |value|)
    """
    check_feature_scale(X, rows)
    C = float(largest_weight) / (2.0 * float(lam))
    low = 1.0 / (2.0 * MAX_C)
    if not low <= C <= MAX_C:
        raise ValidationError(
            f"the largest pair cost C_i = c_i / (2 lam) is {C:.3g} (largest weight {float(largest_weight):.3g}, "
            f"lam {float(lam):g}), outside [{low:g}, {MAX_C:g}], the range of C: its products with the losses "
            f"{'underflow' if C < low else 'overflow'} float64; rescale the pair weights (tau, mu, weights) or lam")
