"""Duality-gap certificates: a feasible dual point for any ``w``, and the gap it proves.

Weak duality between the QP (14) and its dual (18)-(19) of Cao et al. (SIGIR
2006) says: for every ``w`` and every ``α`` in the box ``0 ≤ α ≤ C``,

.. math:: M(w) \\ge M(w^*) = L_D(\\alpha^*) \\ge L_D(\\alpha),

so ``M(w) - L_D(α)`` bounds the suboptimality of ``w``, whatever produced
it. This module finds good feasible ``α`` for a given ``w``:

* a solver's own constraint duals, clipped into the box, when it has them;
* the *reduced dual*: complementary slackness fixes ``α_i = C_i`` for pairs
  clearly below the margin and ``α_i = 0`` for pairs clearly above it; the
  dual (18) over the remaining band of pairs near the margin is a small
  box-constrained QP, solved here to machine precision (L-BFGS-B, then an
  exact least-squares step on the free variables).

The band is tried at several fixed widths and at the *gap-safe* width: since
``M`` is 1-strongly convex, ``‖w - w*‖ ≤ sqrt(2 G)`` for a gap ``G``, so a
pair with ``|<w, d_i> - 1| > ‖d_i‖ sqrt(2 G)`` is provably on the same side
of the margin at ``w*`` (gap-safe screening, Ndiaye, Fercoq, Gramfort and
Salmon 2017). On the safe band the reduced dual *is* the full dual, so its
solution is ``α*`` and ``Dᵀα*`` is ``w*`` (16).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

from cvxrank._memory import fits_memory
from cvxrank.objectives import dual_objective, qp_objective
from cvxrank.pairs import PairSet

__all__ = ["Certificate", "certify", "reduced_dual"]

#: Fixed widths of the band ``|margin - 1| ≤ eps`` tried besides the gap-safe one.
MARGIN_BANDS = (1e-8, 1e-5, 1e-3, 1e-2, 1e-1)


@dataclass(frozen=True)
class Certificate:
    """A primal value, a feasible dual point and the gap between them (QP scale).

    Attributes
    ----------
    primal : float
        ``M(w)`` of (14) at the optimal slacks.
    dual : float
        ``L_D(α)`` of (18) at a point of the box (19); a lower bound on the optimum.
    gap : float
        ``primal - dual``, an upper bound on ``M(w) - M(w*)``.
    relative_gap : float
        ``gap / primal`` (``primal > 0`` whenever a pair has ``C_i > 0``).
    alpha : ndarray of shape (n_pairs,)
        The dual point, inside the box.
    dual_residual : float
        ``‖w - Dᵀα‖ / max(1, ‖w‖)``: distance from the stationarity condition (16).
    """

    primal: float
    dual: float
    gap: float
    relative_gap: float
    alpha: np.ndarray
    dual_residual: float


def reduced_dual(pairs: PairSet, C: np.ndarray, margins: np.ndarray, width, max_band: int,
                 shift=None) -> np.ndarray | None:
    """Maximise the dual (18) over the pairs within ``width`` of the margin.

    Pairs with ``margin < 1 - width`` get ``α_i = C_i``, pairs with
    ``margin > 1 + width`` get ``α_i = 0``; the band ``E`` solves

    .. math:: \\min_{0 \\le \\alpha_E \\le C_E} \\tfrac12 \\|b + D_E^\\top \\alpha_E\\|^2 - 1^\\top \\alpha_E,
              \\quad b = D^\\top \\alpha_{\\text{fixed}} - s.

    ``s`` (``shift``, default 0) is ``Σ Aᵀν`` of user constraints with fixed multipliers: the band
    then maximises their Lagrangian dual (:func:`cvxrank.variants.Variant.dual_objective`).

    Parameters
    ----------
    width : float or ndarray of shape (n_pairs,)
        Band half-width, scalar or per pair.
    max_band : int
        Give up (return None) when the band holds more pairs than this, or
        when its dense ``|E| x n_features`` block would exceed the memory
        budget (:mod:`cvxrank._memory`).

    Returns
    -------
    ndarray of shape (n_pairs,) or None
        A point of the box (19).
    """
    live = C > 0
    on = np.flatnonzero((np.abs(margins - 1) <= width) & live)
    if on.size > max_band or not fits_memory(8.0 * on.size * pairs.n_features):  # the dense block D_E
        return None
    alpha = np.where((margins < 1) & live, C, 0.0)
    alpha[on] = 0.0
    if on.size == 0:
        return alpha
    b = pairs.rmatvec(alpha) if shift is None else pairs.rmatvec(alpha) - shift
    A = pairs.difference_rows(on).T  # n x |E|
    hi = C[on]

    def fun(a):
        r = b + A @ a
        return 0.5 * r @ r - a.sum(), A.T @ r - 1.0

    start = np.clip(np.where(margins[on] < 1, hi, 0.0), 0.0, hi)
    # L-BFGS-B makes thousands of tiny BLAS calls; threaded BLAS only adds contention there
    # (docs/solvers.md, Measurements), so it runs single-threaded.
    from scipy.optimize import minimize  # here only: its import is heavy and most solves never come here

    with threadpool_limits(limits=1, user_api="blas"):
        res = minimize(fun, start, jac=True, method="L-BFGS-B", bounds=list(zip(np.zeros(on.size), hi)),
                       options={"ftol": 1e-16, "gtol": 1e-13, "maxiter": 20_000, "maxcor": 30})
    a = np.clip(res.x, 0.0, hi)
    # Exact step on the free variables: A_Fᵀ (b + A a) = 1 with the bound ones held.
    tol = 1e-9 * np.maximum(hi, 1.0)
    free = (a > tol) & (a < hi - tol)
    if free.any():
        fixed = a.copy()
        fixed[free] = 0.0
        rhs = np.ones(free.sum()) - A[:, free].T @ (b + A @ fixed)
        step = np.linalg.lstsq(A[:, free].T @ A[:, free], rhs, rcond=None)[0]
        exact = fixed.copy()
        exact[free] = np.clip(step, 0.0, hi[free])
        if fun(exact)[0] < fun(a)[0]:
            a = exact
    alpha[on] = a
    return alpha


def certify(pairs: PairSet, C, w, alphas=(), *, bands=MARGIN_BANDS, max_band: int | None = None,
            gap_hint: float | None = None, target: float | None = None) -> Certificate:
    """Certify ``w`` with the best feasible dual point found.

    Candidates: the ``alphas`` given (e.g. a solver's constraint duals),
    clipped into the box; the subgradient point ``α_i = C_i [margin_i < 1]``;
    and :func:`reduced_dual` on every band width in ``bands`` and on the
    gap-safe band. The candidate with the largest dual objective wins; every
    candidate is feasible, so the gap is a valid bound whichever it is.

    Parameters
    ----------
    pairs : PairSet
    C : ndarray of shape (n_pairs,)
        Per-pair QP costs.
    w : ndarray of shape (n_features,)
    alphas : iterable of ndarray or None
        Extra dual candidates.
    bands : sequence of float
        Fixed band widths.
    max_band : int, optional
        Largest band solved. Default ``max(2000, 20 n_features)``.
    gap_hint : float, optional
        A known gap (QP scale) for ``w``; the gap-safe band uses the smaller
        of it and the best gap found from the other candidates.
    target : float, optional
        Stop refining once a candidate proves a relative gap of at most
        ``target``: the cheap candidates (the ``alphas`` given and the
        subgradient point) come first, then the bands from narrow to wide, then
        the gap-safe band. The bound is as valid either way, only possibly less
        tight. Default None: try every candidate (the tightest gap this module
        can prove).
    """
    C = np.asarray(C, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    if max_band is None:
        max_band = max(2000, 20 * pairs.n_features)
    margins = pairs.margins(w)
    primal = qp_objective(pairs, w, C)
    candidates = [np.clip(np.asarray(a, dtype=np.float64), 0.0, C) for a in alphas if a is not None]
    candidates.append(np.where(margins < 1, C, 0.0))
    values = [dual_objective(pairs, a) for a in candidates]

    def done() -> bool:
        return target is not None and primal - max(values) <= target * abs(primal)

    for eps in bands:
        if done():
            break
        alpha = reduced_dual(pairs, C, margins, eps, max_band)
        if alpha is not None:
            candidates.append(alpha)
            values.append(dual_objective(pairs, alpha))
    gap = primal - max(values)
    if gap_hint is not None:
        gap = min(gap, gap_hint)
    if gap > 0 and not done():
        safe = reduced_dual(pairs, C, margins, pairs.difference_norms * np.sqrt(2.0 * gap), max_band)
        if safe is not None:
            candidates.append(safe)
            values.append(dual_objective(pairs, safe))
    best = int(np.argmax(values))
    alpha, dual = candidates[best], values[best]
    gap = primal - dual
    resid = np.linalg.norm(w - pairs.rmatvec(alpha)) / max(1.0, np.linalg.norm(w))
    rel = gap / abs(primal) if primal != 0 else (0.0 if gap == 0 else np.inf)
    return Certificate(primal, dual, gap, rel, alpha, float(resid))
