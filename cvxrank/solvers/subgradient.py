"""Native projected subgradient method for the weighted hinge problem (9)/SIGIR.

Algorithm
---------
``F(w) = Σ c_i [1 - <w, d_i>]_+ + λ‖w‖²`` is ``2λ``-strongly convex. From
``w = 0`` the method takes subgradient steps

.. math:: w_{k+1} = \\Pi_R\\big(w_k - \\eta_k g_k\\big), \\quad
          g_k = -D^\\top (c \\odot [D w_k < 1]) + 2 \\lambda w_k, \\quad
          \\eta_k = \\frac{1}{\\lambda (k + 1)},

projected onto the ball of radius ``R = sqrt(Σ c_i / λ)``, which holds the
minimiser (``λ‖w*‖² ≤ F(w*) ≤ F(0) = Σ c_i``), and keeps the weighted average
``w̄_k = Σ_t t w_t / Σ_t t``. With step ``2/(μ(k+1))`` for the modulus
``μ = 2λ`` and this averaging,

.. math:: F(\\bar w_k) - F(w^*) \\le \\frac{2 G^2}{\\mu (k + 1)} = \\frac{G^2}{\\lambda (k + 1)},

with ``G`` a bound on ``‖g_k‖`` (Lacoste-Julien, Schmidt and Bach 2012, "A
simpler approach to obtaining an O(1/t) rate for the stochastic projected
subgradient method"), so the method provably converges, at rate ``O(1/k)``.

Certificate
-----------
The same average over the subgradients' active sets gives a dual point:
``ᾱ_i = C_i · (weighted share of the iterations at which pair i was below the
margin)`` lies in the box (19). At every check the certificate
(:func:`cvxrank.certificate.certify`) is computed from ``ᾱ`` and from the
reduced dual near the margin of ``w̄``; it only proves a gap, it never moves
``w``. The method stops when the certified relative gap is at most ``tol``.

A rate of ``O(1/k)`` reaches a relative gap of 1e-4 in about 10^4-10^5 steps on
small problems (seconds), 1e-6 in 100 times more; the default ``tol`` of this
solver is therefore 1e-4 (:data:`DEFAULT_TOL`).

Polish (opt-in, ``polish=True``): a separate, named stage after the
subgradient steps, recorded in ``SolveResult.stages``. It takes ``w = Dᵀα``
(16) at the certificate's dual point as a primal candidate, like OSQP's
polish step, and keeps it only if its objective is lower.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from cvxrank import __version__
from cvxrank._validation import check_flag, check_max_iter, check_time_limit
from cvxrank.certificate import certify
from cvxrank.native.scale import check_scale
from cvxrank.problem import RankingProblem
from cvxrank.solution import BackendReport, finish

__all__ = ["DEFAULT_TOL"]

#: The relative gap the pure subgradient method reaches in seconds on small problems.
DEFAULT_TOL = 1e-4

#: Up to this many entries (pairs x features), the steps use a materialised ``D``.
_DENSE_STEP_ENTRIES = 2_000_000


def _solve(problem: RankingProblem, *, tol: float = DEFAULT_TOL, max_iter: int = 2_000_000,
                      time_limit: float | None = None, polish: bool = False, check_every: int | None = None,
                      verbose: bool = False, formulation: str = "hinge"):
    """Solve by projected subgradient steps, with certified stopping.

    Parameters
    ----------
    problem : RankingProblem
        The solver reads its pairs, weights and ``λ``.
    tol : float, default 1e-4
        Stop when the certified relative duality gap is at most ``tol``.
    max_iter : int, default 2000000
        Iteration cap; reaching it gives status ``"user_limit"``.
    time_limit : float, optional
        Seconds; reaching it gives status ``"user_limit"``.
    polish : bool, default False
        After the subgradient steps, run the polish stage (module docstring).
    check_every : int, optional
        Iterations between certificate checks. Default: geometric, from
        iteration 100, each check 1.25x after the previous one.
    verbose : bool, default False
        Print one line per check.
    formulation : str, default "hinge"
        Name recorded in the result.
    """
    max_iter = check_max_iter(max_iter)
    if check_every is not None:
        check_every = check_max_iter(check_every, "check_every")
    check_time_limit(time_limit)
    polish = check_flag("polish", polish)
    pairs, weights, lam = problem.pairs, problem.weights, problem.lam
    check_scale(problem.data.X, weights.max(initial=0.0), lam)
    C = problem.C
    radius = np.sqrt(weights.sum() / lam)
    n = pairs.n_features
    start = time.perf_counter()

    w = np.zeros(n)
    w_avg = np.zeros(n)
    active_avg = np.zeros(pairs.n_pairs)
    best_w, best_F = np.zeros(n), float(weights.sum())
    best_alpha, best_dual = np.zeros(pairs.n_pairs), 0.0  # QP scale
    history = []
    next_check, k, converged, certify_time = (100 if check_every is None else check_every), 0, False, 0.0
    # Small problems: one materialised D (dense or sparse) makes each step two plain products;
    # large ones go through D = P X without forming it.
    if pairs.n_pairs * pairs.n_features <= _DENSE_STEP_ENTRIES:
        D = pairs.difference_matrix()
        margins, rmatvec = (lambda v: D @ v), (lambda a: np.asarray(D.T @ a).ravel())
    else:
        margins, rmatvec = pairs.margins, pairs.rmatvec
    while k < max_iter:
        active = margins(w) < 1
        g = 2.0 * lam * w - rmatvec(np.where(active, weights, 0.0))
        k += 1
        theta = 2.0 / (k + 1)  # weight of step k in the average Σ t x_t / Σ t
        active_avg += theta * (active - active_avg)
        w = w - g / (lam * k)
        norm = np.linalg.norm(w)
        if norm > radius:
            w *= radius / norm
        w_avg += theta * (w - w_avg)
        if k < next_check and k < max_iter:
            continue
        t0 = time.perf_counter()
        for cand in (w_avg, w):  # the average carries the guarantee; the last iterate is often better
            F_cand = problem.hinge_objective(cand)
            if F_cand < best_F:
                best_F, best_w = F_cand, cand.copy()
        M = best_F / (2.0 * lam)
        cert = certify(pairs, C, best_w, [active_avg * C, best_alpha], gap_hint=M - best_dual,
                       target=tol)
        if cert.dual > best_dual:
            best_dual, best_alpha = cert.dual, cert.alpha
        rel = (M - best_dual) / M
        certify_time += time.perf_counter() - t0
        elapsed = time.perf_counter() - start
        history.append({"iteration": k, "objective": best_F, "dual_objective": 2 * lam * best_dual,
                        "relative_gap": rel, "time": elapsed})
        if verbose:
            print(f"subgradient  it {k:8d}  objective {best_F:.10g}  rel gap {rel:.2e}  {elapsed:.2f}s", flush=True)
        if rel <= tol:
            converged = True
            break
        if time_limit is not None and elapsed >= time_limit:
            break
        next_check = k + (check_every if check_every is not None else max(int(0.25 * k), 1))
    stages = ["subgradient"]
    if polish and not converged:
        stages.append("polish")
        cand = pairs.rmatvec(best_alpha)  # w = Dᵀα, (16)
        value = problem.hinge_objective(cand)
        if value < best_F:
            best_F, best_w = value, cand
    elapsed = time.perf_counter() - start
    report = BackendReport(
        solver="subgradient", version=__version__, formulation=formulation, scale="L",
        status="optimal" if converged else "user_limit", alphas=(best_alpha,), iterations=k, solve_time=elapsed,
        history=pd.DataFrame(history), stages=tuple(stages),
        extras={"radius": radius, "polish": polish, "certificate_checks_time": certify_time},
    )
    return finish(problem, best_w, report, tol)
