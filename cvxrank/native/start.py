"""The first point of the cutting planes: a pairwise least-squares fit of the grades, scaled along its ray.

From ``w = 0`` the planes and the Newton phase after them spend their first calls finding the scale and the
direction of ``w``; on the small problems of cross-validation grids and λ paths that is most of the solve. A
regression of the grades is a cheap guess of the direction. With ``P_q`` the centring of query ``q``'s documents
(``P_q = I - 11ᵀ/m_q``) and ``y`` the documents' grade codes (``0 .. G - 1``, larger is better: neighbouring grades
one apart, as the margin asks, whatever the labels' scale),

.. math:: v \\approx \\arg\\min_w \\sum_q \\lVert P_q (X_q w - y_q) \\rVert^2
          = \\arg\\min_w \\sum_q \\frac{1}{2 m_q} \\sum_{i, j \\in q} \\big((s_i - s_j) - (y_i - y_j)\\big)^2 ,

the squared loss on every pair of a query (those of equal grades too), each pair weighing ``1/m_q`` whatever its
cost ``c_i``: :data:`START_ITERATIONS`
iterations of CGLS from 0 (Björck, "Numerical methods for least squares problems", 1996, §7.4: two products with
``X`` each, no pair formed). Its scale is then the minimiser along the ray of the objective (9) itself,

.. math:: \\gamma^* = \\arg\\min_{\\gamma \\ge 0} \\varphi(\\gamma), \\qquad
          \\varphi(\\gamma) = \\lambda \\gamma^2 \\lVert v \\rVert^2 + R(\\gamma X v),

convex and piecewise quadratic in ``γ``. The scores ``γ Xv`` keep one order for every ``γ > 0``, so each trial
is one sweep of the pair-free oracle at that order (no sort, no product with ``X``), and
``φ'(γ) = 2λγ‖v‖² + ⟨∂R/∂s, Xv⟩`` comes with it: a bracket ``[lo, hi]`` with ``φ'(lo) < 0 ≤ φ'(hi)`` (from
``γ = 0`` and 1, then 4 times the last, never past ``-φ'(0) / (2λ‖v‖²)``, where ``φ' ≥ 0`` by convexity), then
regula falsi in the Illinois form (Dowell and Jarratt 1971) until ``|φ'(γ)| (hi - lo)``, a bound on
``φ(γ) - min φ``, is at most :data:`START_GAIN` of ``φ(0) - φ(γ)``, in at most :data:`START_TRIALS` sweeps. The
start is the best point seen when it is below ``φ(0)`` (``F`` at ``w = 0``) and leaves a loss (some pair short of
the margin, :data:`START_MIN_LOSS`), else 0.

Work: ``2 · iterations + 2`` products with ``X`` or ``Xᵀ``, one sort of the scores and a few sweeps; measured in
docs/native.md ("A first point from the grades").
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


__all__ = ["START_ITERATIONS", "START_MAX_DOCUMENTS", "StartPoint", "regression_start"]

#: ``start="auto"`` of :func:`~cvxrank.native.cutting_plane.cutting_plane` fits the grades on problems of at most this
#: many documents. The start costs about 8 floor passes; it saved more than that on the benchmark's small shapes (all
#: but one (shape, λ) of 4,037 documents or fewer) and cost more than it saved on the OHSUMED- and web-sized instances,
#: which the planes from 0 certify in 13-15 calls (docs/native.md, "A first point from the grades").
START_MAX_DOCUMENTS = 10_000

#: CGLS iterations of the least-squares fit (work, not time). 0 (the gradient's direction, scaled) took up to 6.3x
#: the calls of ``w = 0`` on the benchmark's shapes (docs/native.md, "A first point from the grades").
START_ITERATIONS = 5

#: The ray search stops once its point ``γ`` is proved within this share of the decrease ``φ(0) - φ(γ)`` of the
#: minimum along the ray: ``|φ'(γ)| (hi - lo)`` bounds ``φ(γ) - min φ`` (convexity, the minimiser in ``[lo, hi]``).
START_GAIN = 1e-2

#: Most sweeps of the ray search (bracketing included).
START_TRIALS = 24

#: A fit whose best multiple leaves a loss of at most this share of ``F`` (every pair at or past the margin: separable
#: data that the fit ranks, the minimum on the kink where the last pair reaches the margin) is not taken. There the
#: planes' first plane is the trivial ``R ≥ 0`` and the Newton phase's band is empty: on 50 documents with 300
#: features (``make_ranking(n_queries=4, n_features=300)``) the solve took 354 calls and stopped short of ``tol``
#: at λ = 0.01, 250 at λ = 0.1, against 109 and 207 from 0.
START_MIN_LOSS = 1e-9


class StartPoint(NamedTuple):
    """``w`` (zeros when the fit does not lower ``F`` below ``F(0)`` or leaves no loss, :data:`START_MIN_LOSS`),
    its scale ``γ*`` along the fit ``v`` (0 then), ``F(w)`` at the best trial (``F(0)`` when ``w = 0``), and the
    work: products with ``X`` or ``Xᵀ`` and sweeps of the oracle."""

    w: np.ndarray
    scale: float
    objective: float
    products: int
    sweeps: int


def regression_start(oracle, lam: float, *, iterations: int = START_ITERATIONS) -> StartPoint:
    """The first point ``γ* v`` of the module docstring for a local :class:`~cvxrank.native.oracle.PairFreeOracle`.

    Parameters
    ----------
    oracle : PairFreeOracle
        Its ``X``, the documents' query and grade codes, and its sweeps (the papers' margin of 1).
    lam : float
        ``λ`` of (9).
    iterations : int, default START_ITERATIONS
        CGLS iterations of the fit.

    Returns
    -------
    StartPoint
    """
    n = oracle.n_features
    matvec, rmatvec = oracle.scores, oracle.gradient
    qc = oracle._qc
    Q = oracle.query_ids.shape[0]
    size = np.bincount(qc, minlength=Q).astype(np.float64)
    size[size == 0] = 1.0
    y = oracle._gc.astype(np.float64)  # grade codes: one step between neighbouring grades, the margin's scale

    def centred(t):  # P t: each query's mean taken out
        return t - (np.bincount(qc, t, minlength=Q) / size)[qc]

    total = oracle.total_weight  # F(0): the loss at w = 0
    zero = StartPoint(np.zeros(n), 0.0, total, 0, 0)
    # CGLS on min ‖P X w - P y‖ from 0; the residual stays centred, so Xᵀ P r = Xᵀ r
    r = centred(y)
    s = rmatvec(r)
    products = 1
    p, gamma = s.copy(), float(s @ s)
    v = np.zeros(n)
    for _ in range(iterations):
        if not gamma > 0:
            break
        q = centred(matvec(p))
        qq = float(q @ q)
        products += 1
        if not qq > 0:
            break
        a = gamma / qq
        v += a * p
        r -= a * q
        s = rmatvec(r)
        products += 1
        gamma_new = float(s @ s)
        p = s + (gamma_new / gamma) * p
        gamma = gamma_new
    vv = float(v @ v)
    if not (vv > 0 and np.isfinite(vv)):
        return zero
    sv = matvec(v)
    products += 1
    order = oracle._order(sv)
    sv_o = sv[order]  # the scores sorted by query, then score: γ sv_o for every γ > 0
    shifted = sv_o - sv_o[oracle._start]  # each query's lowest score taken out: smaller terms, the same sums
    del sv
    sweeps = 0

    def slope(g):  # (φ'(γ), φ(γ)) from one sweep at the order of Xv: R(γ Xv) = W + γ ⟨v_o, shifted⟩
        nonlocal sweeps
        sweeps += 1
        W, v_o = oracle._violations(g * sv_o, order)[:2]
        dR = float(v_o @ shifted)  # ⟨∂R/∂s, Xv⟩: the score gradient sums to 0 in each query
        return 2.0 * lam * g * vv + dR, lam * g * g * vv + max(W + g * dR, 0.0)

    lo, (d_lo, f_lo) = 0.0, slope(0.0)  # f_lo stays φ(0)
    if not d_lo < 0:  # the fit's direction does not descend from 0
        return zero._replace(sweeps=sweeps, products=products)
    # R is convex along the ray, so φ'(γ) ≥ 2λγ‖v‖² + φ'(0): φ' ≥ 0 from γ = -φ'(0) / (2λ‖v‖²) on, a bracket's end
    # whatever the scales; the search tries 1 first (the fit's own scale: grade codes one apart), then 4 times more
    cap = -d_lo / (2.0 * lam * vv)
    hi = min(1.0, cap)
    d_hi, f_hi = slope(hi)
    best = (f_hi, hi) if f_hi < f_lo else (f_lo, lo)
    while d_hi < 0 and sweeps < START_TRIALS:  # bracket the minimiser: φ' < 0 at lo, ≥ 0 at hi
        lo, d_lo = hi, d_hi
        hi = min(4.0 * hi, cap)
        d_hi, f_hi = slope(hi)
        best = min(best, (f_hi, hi))
    retained = 0
    while d_hi >= 0 and sweeps < START_TRIALS:
        g = hi - d_hi * (hi - lo) / (d_hi - d_lo) if d_hi != d_lo else 0.5 * (lo + hi)
        if not lo < g < hi:
            g = 0.5 * (lo + hi)
        d, f = slope(g)
        best = min(best, (f, g))
        if d == 0 or abs(d) * (hi - lo) <= START_GAIN * (f_lo - f):
            break
        if d < 0:  # Illinois: an end kept twice in a row counts half
            lo, d_lo = g, d
            if retained == -1:
                d_hi *= 0.5
            retained = -1
        else:
            hi, d_hi = g, d
            if retained == 1:
                d_lo *= 0.5
            retained = 1
    f, g = best
    if not (g > 0 and f < total) or f - lam * g * g * vv <= START_MIN_LOSS * f:
        return zero._replace(sweeps=sweeps, products=products)
    return StartPoint(g * v, g, f, products, sweeps)
