"""A small dense box-constrained convex QP whose Hessian may be singular: the exact finish on the band of
:mod:`cvxrank.native.newton` and :mod:`cvxrank.native.document_newton`.

.. math:: \\min_{0 \\le x \\le u} f(x) = \\tfrac12 x^\\top Q x + c^\\top x, \\qquad Q \\succeq 0 \\ (k \\times k),

solved in two stages:

1. **A primal-dual interior-point method** (Mehrotra's predictor-corrector) on the KKT conditions
   ``Q x + c = z_l - z_u``, ``x z_l = μ``, ``(u - x) z_u = μ``: each iteration one Cholesky factorisation of
   ``Q + Z_l X^{-1} + Z_u (U - X)^{-1}``, positive definite however singular ``Q`` is (a Gram matrix ``D Dᵀ`` of pair
   differences with more pairs than features, a pair twice, or a difference the sum of others). Ten to fifteen
   iterations reach a relative accuracy near ``1e-12`` whatever the active set, where an active-set method can
   wander through hundreds of faces of a degenerate box (measured: ``docs/native-measurements.md``).
2. **A projected Newton polish** (Bertsekas 1982, with a Levenberg regularisation) from the interior point: at
   ``x`` with gradient ``g = Q x + c``, the ε-active set ``A = {x_i <= ε_i, g_i > 0} ∪ {x_i >= u_i - ε_i, g_i < 0}``
   is held (a diagonally scaled gradient step there), the free set ``F`` takes the step
   ``d_F = -(Q_FF + ρ I)^{-1} g_F`` (``ρ`` a tiny multiple of the largest diagonal entry, so the step is defined on a
   singular ``Q_FF``; its Cholesky factor is kept while ``F`` stays the same from one step to the next), and the
   step searches the projected arc ``P[x + t d]`` exactly. From the interior point the
   active set is already right and a step or two puts the bound variables on their bounds.

Every iterate of the polish lies in the box (it is a projection), and ``f`` never increases along it; the
returned point is the best in the box seen (the start ``x0`` included). Optimality is read from the projected
gradient ``x - P[x - g]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla

from cvxrank.exceptions import ValidationError

__all__ = ["BoxQPResult", "box_qp"]

#: With ``warm=True`` (:func:`box_qp`) the interior-point method starts this share of its bound inside the box from
#: ``x0`` (its multipliers come from the gradient there, as from ``u/2``): on the bands of the real sample's first
#: jumps (228-290 pairs, λ = 0.05-500) the smoothed Newton phase's ``α`` took 9-10 iterations to ``1e-11`` where
#: ``u/2`` took 12-16 (docs/native-measurements.md, "Measurements (2026-11-27, 14:45)"); 0.1 took 10-12 and 0.3 11-15.
WARM_PUSH = 0.02


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


def _interior_point(Q, c, u, *, tol: float, max_iter: int, x0=None):
    """Mehrotra's predictor-corrector on ``min ½ xᵀQx + cᵀx``, ``0 ≤ x ≤ u`` (every ``u_i > 0``): returns the last
    iterate (strictly inside the box) and the iterations taken. Starts at ``u/2``, or at ``x0`` moved
    :data:`WARM_PUSH` ``u`` inside the box when given. Stops when the complementarity ``xᵀz_l + (u-x)ᵀz_u``
    is at most ``tol · max(1, |f|)`` and the stationarity residual at most ``tol`` times the gradient's scale, when a
    factorisation fails (rounding at the end of the path) or after ``max_iter`` iterations."""
    k = c.shape[0]
    x = 0.5 * u if x0 is None else np.clip(x0, WARM_PUSH * u, (1.0 - WARM_PUSH) * u)
    s = u - x
    g = Q @ x + c
    scale = max(1.0, float(np.abs(g).max()))
    tau = 0.1 * scale
    zl = np.maximum(g, 0.0) + tau  # multipliers of x ≥ 0 and of u - x ≥ 0: Q x + c = z_l - z_u at the optimum
    zu = np.maximum(-g, 0.0) + tau
    M = np.empty_like(Q)  # the system's matrix, factored in place: symmetric, so its transpose is Fortran-ordered
    diagonal = M.reshape(-1)[:: k + 1]
    it = 0
    for it in range(1, max_iter + 1):
        r = g - zl + zu
        gap = float(x @ zl + s @ zu)
        f = float(x @ (0.5 * (g - c) + c))
        if gap <= tol * max(1.0, abs(f)) and float(np.abs(r).max()) <= tol * scale:
            return x, it - 1
        np.copyto(M, Q)
        diagonal += zl / x + zu / s
        factor, info = sla.lapack.dpotrf(M.T, lower=1, overwrite_a=1, clean=0)  # LAPACK directly: no copies
        if info != 0:  # not positive definite to rounding (the end of the path)
            return x, it - 1

        def direction(target_l, target_u):
            dx = sla.lapack.dpotrs(factor, -r + (target_l - x * zl) / x - (target_u - s * zu) / s, lower=1)[0]
            return dx, (target_l - x * zl - zl * dx) / x, (target_u - s * zu + zu * dx) / s

        def longest(dx, dzl, dzu):  # the largest step in [0, 1] keeping x, u - x, z_l, z_u nonnegative
            v, dv = np.concatenate((x, s, zl, zu)), np.concatenate((dx, -dx, dzl, dzu))
            down = dv < 0
            return min(1.0, float(np.min(-v[down] / dv[down]))) if down.any() else 1.0

        zero = np.zeros(k)
        dx, dzl, dzu = direction(zero, zero)  # predictor: the affine-scaling direction
        a = longest(dx, dzl, dzu)
        mu = gap / (2 * k)
        mu_affine = float((x + a * dx) @ (zl + a * dzl) + (s - a * dx) @ (zu + a * dzu)) / (2 * k)
        sigma = (mu_affine / mu) ** 3 if mu > 0 else 0.0
        dx, dzl, dzu = direction(sigma * mu - dx * dzl, sigma * mu + dx * dzu)  # corrector (Mehrotra)
        a = 0.99 * longest(dx, dzl, dzu)
        x = np.clip(x + a * dx, 0.0, u)
        s = u - x
        zl = zl + a * dzl
        zu = zu + a * dzu
        if not (np.all(x > 0) and np.all(s > 0) and np.all(zl > 0) and np.all(zu > 0)):
            break  # rounding at the boundary: the iterate is still in the box
        g = Q @ x + c
    return x, it


def _projected_newton(Q, c, u, x, g, diag, reg, tol, max_iter):
    """The polish: Bertsekas' projected Newton from ``x`` in the box, with its gradient ``g`` (module docstring).
    Returns ``(x, g, change of f, kkt, steps)``; the objective never rises."""
    scale = max(1.0, float(np.abs(g).max()))
    kkt = float(np.abs(x - np.clip(x - g, 0.0, u)).max())
    k, it, total = c.shape[0], 0, 0.0
    held, factor = None, None  # the free set of the last factorisation and its Cholesky factor (None: not PD)
    while kkt > tol * scale and it < max_iter:
        it += 1
        eps = np.minimum(kkt, 0.5 * u)  # Bertsekas' ε-active set: within the projected-gradient size of a bound
        active = ((x <= eps) & (g > 0)) | ((x >= u - eps) & (g < 0))
        free = ~active
        d = np.zeros(k)
        d[active] = -g[active] / np.maximum(diag[active], reg)
        if free.any():
            if held is None or not np.array_equal(free, held):  # the same free set: the same matrix, its factor
                H = Q[np.ix_(free, free)]
                H[np.diag_indices_from(H)] += reg
                try:
                    factor = sla.cho_factor(H, lower=True, check_finite=False)
                except (np.linalg.LinAlgError, sla.LinAlgError):
                    factor = None
                held = free
            if factor is not None:
                d[free] = -sla.cho_solve(factor, g[free], check_finite=False)
            else:
                d[free] = -g[free] / np.maximum(diag[free], reg)
        step = _arc_search(Q, x, g, d, u)
        if step is None:  # no descent along the Newton arc: the projected gradient's arc
            step = _arc_search(Q, x, g, -g, u)
            if step is None:
                break
        y, gy = step
        change = float((y - x) @ (0.5 * (g + gy)))  # f(y) - f(x) exactly for a quadratic, without f's cancellation
        if not change < 0:
            break
        x, g, total = y, gy, total + change
        kkt = float(np.abs(x - np.clip(x - g, 0.0, u)).max())
    return x, g, total, kkt, it


def box_qp(Q, c, upper, x0=None, *, tol: float = 1e-12, max_iter: int = 200, rho: float = 1e-10,
           interior_iterations: int = 50, warm: bool = False) -> BoxQPResult:
    """Minimise ``½ xᵀ Q x + cᵀ x`` over ``0 <= x <= upper``: an interior-point method, then a projected Newton
    polish (module docstring).

    Parameters
    ----------
    Q : ndarray of shape (k, k)
        Symmetric positive semidefinite (singular allowed).
    c : ndarray of shape (k,)
    upper : ndarray of shape (k,)
        Upper bounds, ``>= 0`` (a variable with bound 0 is fixed there).
    x0 : ndarray of shape (k,), optional
        A known point (clipped into the box; default 0): the result is never worse than it. With
        ``interior_iterations=0`` the polish starts there.
    tol : float, default 1e-12
        The polish stops when ``max_i |x_i - P[x - g]_i| <= tol · max(1, |g|_∞)``; the interior-point method when
        its complementarity and stationarity are within ``1e-11`` (relative).
    max_iter : int, default 200
        Newton steps of the polish.
    rho : float, default 1e-10
        Levenberg term ``ρ max_i Q_ii`` added to ``Q_FF`` in the polish.
    warm : bool, default False
        Start the interior-point method near ``x0`` (:data:`WARM_PUSH` of its bound inside the box) rather than at
        ``upper/2``: for an ``x0`` near the optimum, such as the smoothed Newton phase's ``α`` for its band.
    interior_iterations : int, default 50
        Iterations of the interior-point method (0: the polish alone, from ``x0``).

    Returns
    -------
    BoxQPResult
        ``iterations`` counts both stages.

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
    k = c.shape[0] if c.ndim == 1 else -1
    if k < 0 or Q.shape != (k, k) or u.shape != (k,) or (x0 is not None and np.shape(x0) != (k,)):
        raise ValidationError(f"box_qp needs Q of shape (k, k) and c, upper (and x0) of shape (k,); got Q {Q.shape}, "
                              f"c {c.shape}, upper {u.shape}" + ("" if x0 is None else f", x0 {np.shape(x0)}"))
    if not (np.all(np.isfinite(Q)) and np.all(np.isfinite(c)) and np.all(np.isfinite(u)) and np.all(u >= 0)):
        raise ValidationError("box_qp needs finite Q and c and finite upper bounds >= 0")
    start = np.zeros(k) if x0 is None else np.clip(np.asarray(x0, dtype=np.float64), 0.0, u)
    if k == 0:
        return BoxQPResult(start, 0.0, 0.0, 0, True)
    diag = np.maximum(np.diag(Q).copy(), 0.0)
    reg = rho * float(diag.max()) if diag.max() > 0 else 1.0  # Q = 0: a gradient arc to the bounds

    def value(x):
        return float(x @ (0.5 * (Q @ x) + c))

    x, it = start, 0
    if interior_iterations > 0:
        open_ = np.flatnonzero(u > 0)  # a bound of 0 fixes its variable at 0
        if open_.size:
            inner, it = _interior_point(Q[np.ix_(open_, open_)], c[open_], u[open_], tol=1e-11,
                                        max_iter=interior_iterations,
                                        x0=start[open_] if warm and x0 is not None else None)
            x = np.zeros(k)
            x[open_] = inner
            g = Q @ x + c
            # the interior point stops a hair inside its bounds: put there those the gradient pushes against
            near = 1e-7 * u
            snapped = np.where((x <= near) & (g > 0), 0.0, np.where((x >= u - near) & (g < 0), u, x))
            if value(snapped) <= value(x):
                x = snapped
            if not (np.all(np.isfinite(x)) and value(x) <= value(start)):
                x = start
    g = Q @ x + c
    f = value(x)
    x, g, change, kkt, steps = _projected_newton(Q, c, u, x.copy(), g, diag, reg, tol, max_iter)
    f += change
    scale = max(1.0, float(np.abs(g).max()))
    return BoxQPResult(x, f, kkt, it + steps, kkt <= tol * scale)
