"""OCAS: cutting planes with an exact line search on the objective (Franc and Sonnenburg 2008, 2009).

Same problem, oracle, planes and certificate as :mod:`cvxrank.native.cutting_plane`:
``F(w) = λ‖w‖² + R(w)`` with the pair-free hinge loss ``R`` of (9)/SIGIR, the
plane ``R(w) ≥ a_t^T w + b_t`` from every oracle call and the lower bound
``D(β)`` of the plane model (:class:`~cvxrank.native.bundle.Bundle`).

One iteration (Franc and Sonnenburg, JMLR 10, 2009, Algorithm 2):

1. minimise the plane model: ``w_c = w(β)``, lower bound ``D(β)``;
2. line search on the true objective along the segment from the best point
   ``w_b`` to ``w_c``: ``t* = argmin_{t ≥ 0} f(t)``, ``f(t) = F(w_b + t δ)``,
   ``δ = w_c - w_b``. ``f`` is convex, its slope

   .. math:: f'(t) = 2\\lambda (w_b + t\\delta)^\\top\\delta + a(t)^\\top \\delta,
             \\qquad a(t) = X^\\top v(t)

   is non-decreasing (``a(t)``: the oracle's subgradient at ``w_b + tδ``), and
   the root is bracketed by ``f'(0) < 0`` and the slope at ``t = 1``; it is
   found by safeguarded secant steps (Illinois), each one oracle call.
   ``w_b ← w_b + t* δ``;
3. a new plane at ``(1 - μ) w_b + μ w_c`` (OCAS's cut near the line-search optimum).

Every oracle call of the line search is a valid plane as well and goes into the
model, so no call is wasted. The exact breakpoint search of OCAS (sorting the
``O(#pairs)`` kinks of the pairwise hinge along ``t``) is replaced by the
secant search on ``f'``: it never forms a pair. The certificate is the
bundle's ``D(β)``, exactly as for the stabilised cutting plane.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from cvxrank.native.bundle import Bundle

__all__ = ["run_ocas"]


def run_ocas(oracle, lam, w, tol, target, floor, max_iter, time_limit, prune_after, stall_after, keep_points,
             verbose, *, mu: float = 0.1, line_search_steps: int = 3, line_search_tol: float = 0.1):
    """The OCAS loop (arguments validated by :func:`~cvxrank.native.cutting_plane.cutting_plane`).

    ``max_iter`` caps oracle calls. ``line_search_steps`` caps the secant
    steps after the call at ``w_c``; the search stops when ``|f'(t)|`` is
    below ``line_search_tol`` times ``|f'(0)|``. Returns a
    :class:`~cvxrank.native.cutting_plane.CuttingPlaneRun`.
    """
    from cvxrank.native.cutting_plane import CuttingPlaneRun

    start = time.perf_counter()
    n = w.shape[0]
    bundle = Bundle(n, lam, keep_points=keep_points)
    lower, lower_beta, lower_u, lower_points = 0.0, np.array([1.0]), np.zeros(n), None
    history = []
    calls, it = 0, 0
    state = {"status": None}

    def call(x):
        nonlocal calls
        calls += 1
        r = oracle(x, counts=False)
        bundle.add(r.gradient, r.violated_weight, x if keep_points else None)
        return lam * float(x @ x) + r.loss, r.gradient

    def out_of_budget():
        elapsed = time.perf_counter() - start
        return calls >= max_iter or (time_limit is not None and elapsed >= time_limit)

    F_b, a_b = call(w)
    w_b = w
    stall_gap, stall_count = np.inf, 0
    status = "user_limit"
    while True:
        it += 1
        bundle.solve()
        D, u = bundle.dual()
        if D > lower:
            T = bundle.size
            lower, lower_beta, lower_u = D, bundle.beta[:T].copy(), u
            lower_points = bundle.points[:T].copy() if keep_points else None
        gap = F_b - lower
        rel = gap / F_b if F_b > 0 else 0.0
        elapsed = time.perf_counter() - start
        history.append({"iteration": it, "objective": F_b, "dual_objective": lower, "relative_gap": rel,
                        "planes": bundle.size - 1, "oracle_calls": calls, "time": elapsed})
        if verbose:
            print(f"ocas  it {it:5d}  objective {F_b:.12g}  lower {lower:.12g}  rel gap {rel:.2e}  "
                  f"planes {bundle.size - 1:4d}  calls {calls:5d}  {elapsed:.2f}s", flush=True)
        if rel <= target:
            status = "optimal" if rel <= tol else "float_limit"
            break
        if out_of_budget():
            status = "user_limit"
            break
        if gap < stall_gap * (1.0 - 1e-3):
            stall_gap, stall_count = gap, 0
        else:
            stall_count += 1
            if stall_count >= stall_after:
                status = "float_limit" if tol < floor else "stalled"
                break
        bundle.prune(prune_after)
        w_c = -u / (2.0 * lam)
        delta = w_c - w_b
        dd = float(delta @ delta)
        if dd == 0.0:
            status = "float_limit" if tol < floor else "stalled"
            break
        # -- line search on f(t) = F(w_b + t delta) ------------------------------------
        g0 = 2.0 * lam * float(w_b @ delta) + float(a_b @ delta)
        best = (0.0, F_b, a_b, w_b)
        if g0 < 0:
            lo_t, lo_g = 0.0, g0
            hi_t, hi_g = None, None
            t, side = 1.0, 0
            for _ in range(1 + line_search_steps):
                if out_of_budget():
                    break
                x = w_b + t * delta
                F_t, a_t = call(x)
                g_t = 2.0 * lam * float(x @ delta) + float(a_t @ delta)
                if F_t < best[1]:
                    best = (t, F_t, a_t, x)
                if abs(g_t) <= line_search_tol * abs(g0):
                    break
                if g_t < 0:
                    lo_t, lo_g = t, g_t
                    if side == -1 and hi_g is not None:
                        hi_g /= 2.0  # Illinois: keep the other end from stalling the secant
                    side = -1
                else:
                    hi_t, hi_g = t, g_t
                    if side == 1:
                        lo_g /= 2.0
                    side = 1
                if hi_t is None:
                    t = 2.0 * t  # f still decreasing at the model minimiser: look further
                else:
                    t = lo_t + (hi_t - lo_t) * (-lo_g) / (hi_g - lo_g)
        t_b, F_b, a_b, w_b = best
        # -- the OCAS cut near the new best point ------------------------------------
        if mu > 0 and not out_of_budget():
            x = (1.0 - mu) * w_b + mu * w_c
            F_x, a_x = call(x)
            if F_x < F_b:
                F_b, a_b, w_b = F_x, a_x, x
    return CuttingPlaneRun(
        w=np.array(w_b, dtype=np.float64), objective=float(F_b), lower_bound=float(lower), status=status,
        iterations=it, oracle_calls=calls, solve_time=time.perf_counter() - start, floor=floor,
        w_model=-lower_u / (2.0 * lam), beta=lower_beta, points=lower_points, history=pd.DataFrame(history),
    )
