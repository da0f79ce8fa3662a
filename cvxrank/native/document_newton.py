"""Smoothed Newton phase for preference groups (costs per document), pair-free and certified.

The graded solver's phase (:mod:`cvxrank.native.newton`) enumerates the band of pairs near the
margin and forms the ``n x n`` Hessian from their rows; it reads the grade-based oracle's internals.
This one works on :class:`~cvxrank.native.document_oracle.DocumentOracle` and never forms a pair:
the Huber-smoothed hinge of width ``δ`` (Chapelle 2007),

.. math:: F_\\delta(w) = \\lambda\\|w\\|^2 + \\sum_{ij} a_i\\, h_\\delta(s_i - s_j), \\qquad
          h_\\delta(m) = 1 - m - \\delta/2 \\ (m < 1 - \\delta), \\quad \\frac{(1 - m)^2}{2\\delta}
          \\ (1 - \\delta \\le m < 1), \\quad 0 \\ (m \\ge 1),

its gradient and the products with its Hessian ``2λI + Xᵀ H_s X`` all come from prefix sums over each
group's sorted scores (:meth:`~cvxrank.native.document_oracle.DocumentOracle.smoothed_scores`), and the
Newton steps are solved by conjugate gradients (truncated Newton) with an Armijo search on ``F_δ``.

Certificate. At every evaluation ``α_ij = a_i min(1, max(0, (1 - m_ij)/δ))`` lies in the box ``[0, c]``
of the hinge's dual, so ``L(α) = Σ α - ‖Σ α_ij d_ij‖² / (4λ)`` is a lower bound on ``min F``
(weak duality; identical pairs of two groups take the sum of their ``α``, still in the merged
pair's box), and ``F(w)`` is the exact objective: the gap ``F(w_best) - max L`` certifies, whatever
``δ``. ``δ`` shrinks when the smoothed problem's own gap ``F_δ - L(α) + (δ/2) Σ α²/c`` is below a tenth
of the true one, by the factor that would bring the true gap (which falls like ``δ²``) to 0.3 x the
target, within ``[1/15, 1/2]``, and no further than would leave about ``2n`` pairs in the band (the graded
phase's rule, without its tangent predictor).
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse.linalg as spla

from cvxrank.native.document_oracle import DocumentOracle

__all__ = ["document_newton"]


def _evaluate(oracle: DocumentOracle, lam: float, w: np.ndarray, delta: float):
    """``(F, F_δ, ∇F_δ, L(α), smoothed gap, result)`` at ``w``: one sort and two boundary searches per block."""
    r = oracle.smoothed_scores(oracle.scores(w), delta)
    u = oracle.gradient(r.score_alpha)  # Σ α_ij d_ij
    ww = lam * float(w @ w)
    F, Fd = ww + r.loss, ww + r.smoothed
    lower = r.alpha_sum - float(u @ u) / (4.0 * lam)
    smooth_gap = Fd - lower + 0.5 * delta * r.alpha_square
    return F, Fd, 2.0 * lam * w - u, lower, smooth_gap, r


def document_newton(oracle: DocumentOracle, lam: float, w, *, upper: float, lower: float, target: float,
                    max_calls: int, deadline: float | None = None, shrink: float = 15.0, stall_after: int = 20,
                    max_backtrack: int = 8, cg_max_iter: int = 100, verbose: bool = False, start=None):
    """Newton steps on ``F_δ`` with decreasing ``δ`` from ``w`` until the certified relative gap is ``<= target``.

    Parameters
    ----------
    oracle : DocumentOracle
    lam : float
    w : ndarray
        Start (e.g. the best point of the cutting planes).
    upper, lower : float
        Best ``F`` and best lower bound so far.
    target : float
        Relative gap to stop at.
    max_calls : int
        Cap on evaluations (each one exact objective, the smoothed one and a lower bound).
    deadline : float, optional
        Seconds since ``start``.
    shrink : float, default 15
        Largest reduction of ``δ`` at a time.
    stall_after : int, default 20
        Stop when the gap has not shrunk by 0.1 % in this many evaluations.
    max_backtrack : int, default 8
        Halvings of a Newton step before the phase gives up (the caller's planes go on).
    cg_max_iter : int, default 100
        Conjugate-gradient steps per Newton step (one Hessian product, ``X u`` and ``Xᵀ v``, each).

    Returns
    -------
    (w_best, F_best, lower, w_lower, evaluations, hessian_products, rows)
        ``w_lower = Σ α d / (2λ)`` at the best lower bound of this phase (None if none beat ``lower``);
        ``rows``: one history row per evaluation.
    """
    start = time.perf_counter() if start is None else start
    w = np.asarray(w, dtype=np.float64)
    w_best, F_best, w_lower = w, upper, None
    rel = (F_best - lower) / F_best if F_best > 0 else 0.0
    delta = float(min(0.5, max(np.sqrt(rel), 1e-8)))
    rows, calls, products = [], 1, 0
    best_rel, since = np.inf, 0
    F, Fd, g, L, sg, r = _evaluate(oracle, lam, w, delta)
    while True:
        if L > lower:
            lower, w_lower = L, w - g / (2.0 * lam)  # Σ α d / (2λ), as ∇F_δ = 2λw - Σ α d
        if F < F_best:
            F_best, w_best = F, w
        rel = (F_best - lower) / F_best if F_best > 0 else 0.0
        elapsed = time.perf_counter() - start
        rows.append({"evaluations": calls, "objective": F_best, "dual_objective": lower, "relative_gap": rel,
                     "delta": delta, "band": r.band, "smoothed_gap": sg, "time": elapsed})
        if verbose:
            print(f"groups newton  eval {calls:4d}  objective {F_best:.12g}  lower {lower:.12g}  rel gap {rel:.2e}  "
                  f"delta {delta:.1e}  band {r.band}  smoothed gap {sg:.2e}  {elapsed:.2f}s", flush=True)
        if rel < best_rel * (1.0 - 1e-3):
            best_rel, since = rel, 0
        else:
            since += 1
        if rel <= target or calls >= max_calls or since >= stall_after or (deadline is not None and elapsed >= deadline):
            break
        if sg <= 0.1 * (F_best - lower) and delta > 1e-12:
            # the gap falls like δ²: aim at 0.3 x the target, by a factor in [1/shrink, 1/2], keeping about 2n pairs in
            # the band (it holds about δ times the pairs' density at the margin): an emptier band leaves Newton no model
            factor = np.sqrt(0.3 * target * F_best / max(F_best - lower, 1e-300))
            delta *= min(0.5, max(1.0 / shrink, factor, 2.0 * g.shape[0] / max(r.band, 1)))
            F, Fd, g, L, sg, r = _evaluate(oracle, lam, w, delta)
            calls += 1
            continue
        gnorm = float(np.linalg.norm(g))
        hess = r.hessian_product
        n = g.shape[0]
        count = [0]

        def matvec(v, hess=hess):
            count[0] += 1
            return 2.0 * lam * v + oracle.gradient(hess(oracle.scores(v)))

        op = spla.LinearOperator((n, n), dtype=np.float64, matvec=matvec)
        p, _ = spla.cg(op, -g, rtol=min(0.1, np.sqrt(max(sg, 0.0) / max(F_best, 1e-300))), atol=0.0,
                       maxiter=cg_max_iter)
        products += count[0]
        slope = float(g @ p)
        if not slope < 0:
            p, slope = -g, -gnorm * gnorm
        t, accepted = 1.0, False
        for _ in range(max_backtrack + 1):
            x = w + t * p
            Fx, Fdx, gx, Lx, sgx, rx = _evaluate(oracle, lam, x, delta)
            calls += 1
            if Lx > lower:
                lower, w_lower = Lx, x - gx / (2.0 * lam)
            if Fx < F_best:
                F_best, w_best = Fx, x
            if Fdx <= Fd + 1e-4 * t * slope:
                accepted = True
                break
            if calls >= max_calls:
                break
            t /= 2.0
        if not accepted:
            break
        w, F, Fd, g, L, sg, r = x, Fx, Fdx, gx, Lx, sgx, rx
    return w_best, F_best, lower, w_lower, calls, products, rows
