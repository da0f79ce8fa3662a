"""The fixed-step gradient descent of Fig. 3 of Cao et al. (SIGIR 2006), as published.

.. code-block:: text

    w = 0
    while not stop:
        Δw = Σ_{i: z_i <w, d_i> < 1} z_i τ_k(i) μ_q(i) d_i  -  2λ w
        w = w + η Δw

The paper fixes the step ``η`` (instead of the line search (13)) and leaves
both ``η`` and the stop condition open. Here the stop condition is the
certified relative duality gap (checked every ``check_every`` iterations) or
``max_iter``. With a fixed step the iterates of a non-smooth problem
oscillate around the minimiser, so this solver usually ends at
``"user_limit"`` with an honest gap: it is here to reproduce the paper's
RSVM-IR-GD, not to be the fast path (use ``"subgradient"`` or a QP solver).
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from cvxrank import __version__
from cvxrank._validation import Interval, check, check_max_iter
from cvxrank.certificate import certify
from cvxrank.native.scale import check_scale
from cvxrank.objectives import qp_objective
from cvxrank.problem import RankingProblem
from cvxrank.solution import BackendReport, finish

__all__: list[str] = []  # the backend of solve(problem, "gd"); nothing public


def _solve(problem: RankingProblem, *, tol: float = 1e-6, max_iter: int = 5_000,
             learning_rate: float | None = None, check_every: int = 100, verbose: bool = False,
             formulation: str = "hinge"):
    """Run Fig. 3's gradient descent with a fixed learning rate.

    Parameters
    ----------
    problem : RankingProblem
        Its pairs, weights and ``λ`` define the problem.
    tol : float, default 1e-6
        Stop when the certified relative gap of the current ``w`` is at most ``tol``.
    max_iter : int, default 5000
    learning_rate : float, optional
        The fixed step ``η``. Default ``1 / (200 λ)``: our choice (the paper
        gives none); it shrinks ``w`` by 1% per step through the ``-2λw`` term.
        Must be below ``1/λ`` for that term to contract.
    check_every : int, default 100
        Iterations between certificate checks.
    verbose : bool, default False
    formulation : str, default "hinge"
        Name recorded in the result.
    """
    max_iter = check_max_iter(max_iter)
    check_every = check_max_iter(check_every, "check_every")
    pairs, weights, lam = problem.pairs, problem.weights, problem.lam
    check_scale(problem.data.X, weights.max(initial=0.0), lam)
    C = problem.C
    eta = check("learning_rate", learning_rate, Interval(0, 1.0 / lam, closed="neither", why="1/lam: below it the "
                                                         "step contracts").or_none())
    eta = 1.0 / (200.0 * lam) if eta is None else eta
    start = time.perf_counter()
    w = np.zeros(pairs.n_features)
    history, k, converged, cert = [], 0, False, None
    while k < max_iter:
        active = pairs.margins(w) < 1
        delta = pairs.rmatvec(np.where(active, weights, 0.0)) - 2.0 * lam * w
        w = w + eta * delta
        k += 1
        if k % check_every and k < max_iter:
            continue
        cert = certify(pairs, C, w, target=tol)
        history.append({"iteration": k, "objective": 2 * lam * qp_objective(pairs, w, C),
                        "dual_objective": 2 * lam * cert.dual, "relative_gap": cert.relative_gap})
        if verbose:
            print(f"gd  it {k:7d}  objective {history[-1]['objective']:.10g}  rel gap {cert.relative_gap:.2e}")
        if cert.relative_gap <= tol:
            converged = True
            break
    elapsed = time.perf_counter() - start
    report = BackendReport(
        solver="gd", version=__version__, formulation=formulation, scale="L",
        status="optimal" if converged else "user_limit", alphas=() if cert is None else (cert.alpha,),
        iterations=k, solve_time=elapsed, history=pd.DataFrame(history), extras={"learning_rate": eta},
    )
    return finish(problem, w, report, tol)
