"""Objective values of the papers' problems, evaluated from ``w`` or ``α`` in numpy.

These are the independent yardsticks every solution is measured with: they
do not depend on which formulation or solver produced ``w``.
"""

from __future__ import annotations

import numpy as np

from cvxrank.pairs import PairSet

__all__ = ["hinge_losses", "hinge_objective", "qp_objective", "dual_objective"]


def hinge_losses(pairs: PairSet, w) -> np.ndarray:
    """Per-pair hinge losses ``ξ_i = [1 - z_i <w, d_i>]_+`` (the optimal slacks of (14))."""
    return np.maximum(0.0, 1.0 - pairs.margins(w))


def hinge_objective(pairs: PairSet, w, weights, lam: float) -> float:
    """Weighted hinge objective (9) of Cao et al. (SIGIR 2006).

    .. math:: L(w) = \\sum_i \\tau_{k(i)} \\mu_{q(i)} [1 - z_i \\langle w, d_i \\rangle]_+ + \\lambda \\|w\\|^2

    ``weights`` holds ``τ_k(i) μ_q(i)``; all ones gives (7), ``μ = 1`` gives (8)/ECML.
    """
    w = np.asarray(w, dtype=np.float64)
    return float(np.dot(weights, hinge_losses(pairs, w)) + lam * np.dot(w, w))


def qp_objective(pairs: PairSet, w, C) -> float:
    """QP objective (14) of Cao et al. (SIGIR 2006) at the optimal slacks for ``w``.

    .. math:: M(w) = \\tfrac12 \\|w\\|^2 + \\sum_i C_i \\xi_i, \\quad \\xi_i = [1 - z_i \\langle w, d_i \\rangle]_+

    With ``C_i = τμ/(2λ)`` (Theorem 1), ``L(w) = 2λ M(w)`` at every ``w``.
    """
    w = np.asarray(w, dtype=np.float64)
    return float(0.5 * np.dot(w, w) + np.dot(C, hinge_losses(pairs, w)))


def dual_objective(pairs: PairSet, alpha) -> float:
    """Dual objective (18) of Cao et al. (SIGIR 2006), through ``Dᵀα`` (no Gram matrix).

    .. math:: L_D(\\alpha) = \\sum_i \\alpha_i - \\tfrac12 \\|D^\\top \\alpha\\|^2

    For any ``α`` in the box (19), ``0 ≤ α_i ≤ C_i``, it is a lower bound on
    the optimal value of (14) (weak duality).
    """
    alpha = np.asarray(alpha, dtype=np.float64)
    v = pairs.rmatvec(alpha)
    return float(alpha.sum() - 0.5 * np.dot(v, v))
