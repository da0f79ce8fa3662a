"""A small dense box-constrained convex QP whose Hessian may be singular: the exact finish of
:mod:`cvxrank.native.document_newton`.

.. math:: \\min_{0 \\le x \\le u} f(x) = \\tfrac12 x^\\top Q x + c^\\top x, \\qquad Q \\succeq 0 \\ (k \\times k),

solved by Bertsekas' projected Newton method (1982) with a Levenberg regularisation: at ``x`` with gradient
``g = Q x + c``, the ε-active set ``A = {x_i <= ε_i, g_i > 0} ∪ {x_i >= u_i - ε_i, g_i < 0}`` is held
(a diagonally scaled gradient step there), the free set ``F`` takes the step
``d_F = -(Q_FF + ρ I)^{-1} g_F`` (Cholesky; ``ρ`` a tiny multiple of the largest diagonal entry, so the
step is defined on a singular ``Q_FF``: a Gram matrix ``D Dᵀ`` of pair differences in which a pair comes twice
or a difference is the sum of others), and the step searches the projected arc ``P[x + t d]`` by Armijo's rule
on Bertsekas' decrease. Along a null direction of ``Q_FF`` where ``f`` falls linearly the step is of
size ``1/ρ`` and the projection stops it at the box: that is how the active set grows where ``Q_FF`` is
singular.

Every iterate lies in the box (it is a projection), and ``f`` never increases: the caller may stop anywhere.
Optimality is read from the projected gradient ``x - P[x - g]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla

__all__ = ["BoxQPResult", "box_qp"]


@dataclass(frozen=True)
class BoxQPResult:
    """``x`` (in the box), its objective ``f``, the largest projected-gradient entry ``|x - P[x - g]|_∞``,
    iterations and whether that entry reached ``tol``."""

    x: np.ndarray
    f: float
    kkt: float
    iterations: int
    converged: bool


def _arc_search(Q, x, g, d, u):
    """The first minimiser of ``f`` along the projected arc ``P[x + t d]``, ``t >= 0``, exactly: ``f`` is a quadratic
    on each piece between the breakpoints where a coordinate reaches its bound, and the direction loses that
    coordinate there (``O(k)`` per breakpoint with ``Q``'s column). Returns ``(y, ∇f(y))``, or None when the arc
    does not descend from ``x``."""
    d = d.copy()
    with np.errstate(divide="ignore", invalid="ignore"):
        reach = np.where(d > 0, (u - x) / d, np.where(d < 0, -x / d, np.inf))
    d[reach <= 0] = 0.0  # at a bound and pointing out: no move
    reach[reach <= 0] = np.inf
    order = np.argsort(reach, kind="stable")
    order = order[np.isfinite(reach[order])]
    p = d
    Qp = Q @ p
    y, gy, t = x.copy(), g.copy(), 0.0
    slope0 = float(gy @ p)
    if not slope0 < 0:
        return None
    for i in (*order, None):
        slope = float(gy @ p)
        if not slope < 0:
            break
        curv = float(p @ Qp)
        end = np.inf if i is None else reach[i]
        length = end - t
        s = -slope / curv if curv > 0 else np.inf
        if s < length:
            y += s * p
            gy += s * Qp
            break
        if not np.isfinite(length):
            break  # unbounded below along the arc: impossible in a box
        y += length * p
        gy += length * Qp
        y[i] = u[i] if p[i] > 0 else 0.0  # exactly on its bound
        Qp -= Q[:, i] * p[i]
        p[i] = 0.0
        t = end
    np.clip(y, 0.0, u, out=y)
    return y, gy


def box_qp(Q, c, upper, x0=None, *, tol: float = 1e-12, max_iter: int = 200, rho: float = 1e-10) -> BoxQPResult:
    """Minimise ``½ xᵀ Q x + cᵀ x`` over ``0 <= x <= upper`` (module docstring).

    Parameters
    ----------
    Q : ndarray of shape (k, k)
        Symmetric positive semidefinite (singular allowed).
    c : ndarray of shape (k,)
    upper : ndarray of shape (k,)
        Upper bounds, ``>= 0``.
    x0 : ndarray of shape (k,), optional
        Start (clipped into the box); default 0.
    tol : float, default 1e-12
        Stop when ``max_i |x_i - P[x - g]_i| <= tol · max(1, |g|_∞ at the start)``.
    max_iter : int, default 200
        Newton steps.
    rho : float, default 1e-10
        Levenberg term ``ρ max_i Q_ii`` added to ``Q_FF``.

    Returns
    -------
    BoxQPResult

    Examples
    --------
    >>> import numpy as np
    >>> D = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])   # the first row twice: Q = D Dᵀ is singular
    >>> r = box_qp(D @ D.T, -np.ones(3), np.array([0.3, 0.4, 2.0]))
    >>> round(r.f, 12), round(float(r.x[0] + r.x[1]), 12), round(float(r.x[2]), 12)
    (-0.955, 0.7, 1.0)
    """
    Q = np.asarray(Q, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    u = np.asarray(upper, dtype=np.float64)
    k = c.shape[0]
    x = np.zeros(k) if x0 is None else np.clip(np.asarray(x0, dtype=np.float64), 0.0, u)
    if k == 0:
        return BoxQPResult(x, 0.0, 0.0, 0, True)
    diag = np.maximum(np.diag(Q).copy(), 0.0)
    reg = rho * float(diag.max()) if diag.max() > 0 else 1.0  # Q = 0: a gradient arc to the bounds
    g = Q @ x + c
    f = 0.5 * float(x @ (g - c)) + float(c @ x)
    scale = max(1.0, float(np.abs(g).max()))
    kkt = float(np.abs(x - np.clip(x - g, 0.0, u)).max())
    it = 0
    while kkt > tol * scale and it < max_iter:
        it += 1
        eps = np.minimum(kkt, 0.5 * u)  # Bertsekas' ε-active set: within the projected-gradient size of a bound
        active = ((x <= eps) & (g > 0)) | ((x >= u - eps) & (g < 0))
        free = ~active
        d = np.zeros(k)
        d[active] = -g[active] / np.maximum(diag[active], reg)
        if free.any():
            H = Q[np.ix_(free, free)]
            H[np.diag_indices_from(H)] += reg
            try:
                d[free] = -sla.cho_solve(sla.cho_factor(H, lower=True, check_finite=False), g[free],
                                         check_finite=False)
            except (np.linalg.LinAlgError, sla.LinAlgError):
                d[free] = -g[free] / np.maximum(diag[free], reg)
        step = _arc_search(Q, x, g, d, u)
        if step is None:  # no descent along the Newton arc: the projected gradient's arc
            step = _arc_search(Q, x, g, -g, u)
            if step is None:
                break
        y, gy = step
        dx = y - x
        change = float(dx @ (0.5 * (g + gy)))  # f(y) - f(x) exactly for a quadratic, without f's cancellation
        if not change < 0:
            break
        x, g, f = y, gy, f + change
        kkt = float(np.abs(x - np.clip(x - g, 0.0, u)).max())
    return BoxQPResult(x, f, kkt, it, kkt <= tol * scale)
