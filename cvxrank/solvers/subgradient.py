"""Native projected subgradient solver for the weighted hinge problem (9)/SIGIR.

Algorithm
---------
``F(w) = Σ c_i [1 - <w, d_i>]_+ + λ‖w‖²`` is ``2λ``-strongly convex. From
``w = 0`` the method takes subgradient steps

.. math:: w_{k+1} = \\Pi_R\\big(w_k - \\eta_k g_k\\big), \\quad
          g_k = -D^\\top (c \\odot [D w_k < 1]) + 2 \\lambda w_k, \\quad
          \\eta_k = \\frac{1}{\\lambda (k + 1)},

projected onto the ball of radius ``R = sqrt(Σ c_i / λ)``, which holds the
minimiser (``λ‖w*‖² ≤ F(w*) ≤ F(0) = Σ c_i``), and keeps the weighted average
``w̄_k ∝ Σ_t t w_t``. With step ``2/(μ(k+1))`` for modulus ``μ = 2λ`` and
this averaging, ``F(w̄_k) - F(w*) = O(G² / (λ k))`` (Lacoste-Julien, Schmidt
and Bach 2012, "A simpler approach to obtaining an O(1/t) rate for the
stochastic projected subgradient method"), so the method provably converges.

Subgradient steps alone reach a relative gap of 1e-6 only after millions of
iterations, so at each certificate check the solver also *polishes*, like
OSQP's polish step: the certificate solves the dual restricted to the pairs
near the margin of ``w̄`` (:func:`cvxrank.solvers.certificate.reduced_dual`),
and ``w = Dᵀα`` (16) at that dual point is a primal candidate. Candidates are
accepted only through their objective values and the duality gap, so
polishing can speed the method up but never make it report a wrong optimum;
``polish=False`` gives the plain method.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from cvxrank import __version__
from cvxrank.exceptions import ValidationError
from cvxrank.formulations import Formulation
from cvxrank.objectives import qp_objective
from cvxrank.solvers.certificate import certify
from cvxrank.solvers.common import finish

__all__ = ["solve_subgradient"]


def _check_iter(max_iter, name="max_iter") -> int:
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
        raise ValidationError(f"{name} must be a positive integer, got {max_iter!r}")
    return int(max_iter)


def solve_subgradient(formulation: Formulation, *, tol: float = 1e-6, max_iter: int = 20_000,
                      polish: bool = True, check_every: int | None = None, verbose: bool = False):
    """Solve by projected subgradient descent with certified stopping.

    Parameters
    ----------
    formulation : Formulation
        Any formulation: the solver reads its pairs and current costs, never
        its CVXPY problem.
    tol : float, default 1e-6
        Stop when the certified relative duality gap is at most ``tol``.
    max_iter : int, default 20000
        Iteration cap; reaching it gives status ``"user_limit"``.
    polish : bool, default True
        Try the KKT polish step at every check (see the module docstring).
    check_every : int, optional
        Iterations between certificate checks. Default: checks at
        iterations 10, 20, 40, ... (doubling) up to every 1000.
    verbose : bool, default False
        Print one line per check.
    """
    max_iter = _check_iter(max_iter)
    if check_every is not None:
        check_every = _check_iter(check_every, "check_every")
    pairs = formulation.pairs
    weights, lam = formulation.hinge_costs()
    C = weights / (2.0 * lam)
    radius = np.sqrt(weights.sum() / lam)
    n = pairs.n_features
    start = time.perf_counter()

    w = np.zeros(n)
    w_avg = np.zeros(n)
    best_w, best_primal = np.zeros(n), qp_objective(pairs, np.zeros(n), C)
    best_alpha, best_dual = np.zeros(pairs.n_pairs), 0.0
    history = []
    next_check, k, converged = 10 if check_every is None else check_every, 0, False
    while k < max_iter:
        active = pairs.margins(w) < 1
        g = 2.0 * lam * w - pairs.rmatvec(np.where(active, weights, 0.0))
        w = w - g / (lam * (k + 1))
        norm = np.linalg.norm(w)
        if norm > radius:
            w *= radius / norm
        k += 1
        w_avg += (2.0 / (k + 1)) * (w - w_avg)
        if k < next_check and k < max_iter:
            continue
        for cand in (w_avg, w):
            value = qp_objective(pairs, cand, C)
            if value < best_primal:
                best_primal, best_w = value, cand.copy()
        for _ in range(3 if polish else 1):
            cert = certify(pairs, C, best_w, [best_alpha], gap_hint=best_primal - best_dual)
            if cert.dual > best_dual:
                best_dual, best_alpha = cert.dual, cert.alpha
            if not polish:
                break
            # Polish: w = Dᵀα (16) at the best dual point is a primal candidate.
            cand = pairs.rmatvec(best_alpha)
            value = qp_objective(pairs, cand, C)
            if value >= best_primal:
                break
            best_primal, best_w = value, cand
        rel = (best_primal - best_dual) / best_primal
        history.append({"iteration": k, "objective": 2 * lam * best_primal, "dual_objective": 2 * lam * best_dual,
                        "relative_gap": rel})
        if verbose:
            print(f"subgradient  it {k:7d}  objective {2 * lam * best_primal:.10g}  rel gap {rel:.2e}")
        if rel <= tol:
            converged = True
            break
        next_check = k + (check_every if check_every is not None else min(max(k, 10), 1000))
    elapsed = time.perf_counter() - start
    return finish(
        formulation, best_w, alphas=[best_alpha], backend_status="optimal" if converged else "user_limit",
        solver="subgradient", version=__version__, tol=tol, iterations=k, solve_time=elapsed,
        history=pd.DataFrame(history), extras={"radius": radius, "polish": polish},
    )
