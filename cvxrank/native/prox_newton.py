"""Pair-free projected Newton method for the squared hinge with an ℓ1 term and bounds on ``w``, certified.

Problem (the squared-hinge variant of (9)/SIGIR with the elastic net and box bounds,
:mod:`cvxrank.variants`):

.. math::

    \\min_{l \\le w \\le u} F(w) = \\underbrace{\\lambda \\|w\\|^2 + \\sum_i c_i\\, [m_i - \\langle w, d_i \\rangle]_+^2}_{f(w)}
        + \\rho_L \\|w\\|_1

with ``c_i = τ_k(i) μ_q(i)`` and margins ``m_i`` per grade pair. ``f`` is the smooth part
:mod:`.truncated_newton` minimises; the rest is separable, so the method is an orthant-wise
projected Newton method (Andrew and Gao 2007 for the ℓ1 part, Bertsekas 1982 for the bounds),
with truncated-Newton (CG) steps on the free variables. At every iterate:

* the *minimum-norm subgradient* ``p`` of ``F`` plus the box indicator (per feature: the one-sided
  derivatives ``∇f_j ± ρ_L`` at ``w_j = 0``, ``∇f_j + ρ_L sign(w_j)`` elsewhere, 0 where every
  feasible direction goes up; ``p = 0`` exactly at the minimiser);
* the *fixed* features: at a kink (``w_j = 0`` with ``ρ_L > 0``) or a bound with ``p_j = 0``; the
  others are *free*, each in its orthant (``sign(w_j)``, or ``−sign(p_j)`` at 0), where ``F`` is
  smooth;
* a Newton direction on the free features, CG on ``(2λ I + Xᵀ H_s X)_{FF} d_F = −p_F`` (Hessian
  products from the pair-free oracle), its entries of the wrong sign (``d_j p_j > 0``) set to 0;
* a backtracking search along the projected path ``w(t) = π(w + t d)``, ``π`` clipping to the box
  and setting to 0 any feature that leaves its orthant, until
  ``F(w(t)) ≤ F(w) + 10⁻⁴ pᵀ(w(t) − w)``; when it fails, the same search along ``−p``.

Projection keeps every iterate in the box, and a feature whose Newton step crosses 0 lands on 0
exactly: the sparsity pattern and the active bounds are found in a few steps, after which the
steps are Newton steps on the smooth problem in the free features.

**Certificate.** On the QP scale ``M = F / (2λ)`` (``C_i = c_i/(2λ)``, ``ρ = ρ_L/(2λ)``) the
variant's dual (:mod:`cvxrank.variants`) at the optimality conditions' point ``α_i = 2 C_i [t_i]_+``
of ``w`` is, pair-free (:mod:`.truncated_newton`),

.. math::

    D(\\gamma\\alpha) = \\gamma A - \\gamma^2 H - \\varphi^*(\\gamma v), \\qquad
    A = \\frac{1}{\\lambda} \\sum_i c_i m_i [t_i]_+, \\quad H = \\frac{R_2(w)}{2\\lambda}, \\quad
    v = D^\\top \\alpha = -\\frac{1}{2\\lambda} X^\\top g,

with ``φ*(v) = Σ_j (v_j û_j − ½ û_j² − ρ |û_j|)``, ``û = clip(S_ρ(v), l, u)``. Every ``γ ≥ 0`` gives
a lower bound on ``M(w*)`` (weak duality); ``D(γα)`` is concave in ``γ`` with the decreasing
derivative ``A − 2γH − vᵀû(γ)``, so its maximiser is found by bisection (``O(n)`` a step). At
``w*`` the bound at ``γ = 1`` is ``M(w*)``: the gap tends to 0.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse.linalg as spla

from cvxrank._optim import ARMIJO, MIN_STEP
from cvxrank._validation import Interval, check
from cvxrank.costs import check_lam
from cvxrank.exceptions import InaccurateSolutionWarning, ValidationError
from cvxrank.native._checks import check_common, pairfree_problem, positive_int
from cvxrank.native.cutting_plane import blas_threads, certifiable_gap
from cvxrank.native.scale import check_scale
from cvxrank.native.truncated_newton import NewtonRun
from cvxrank.native.variant_oracle import VariantOracle
from cvxrank.solution import BackendReport, finish

__all__ = ["ProxNewtonRun", "composite_bound", "min_norm_subgradient", "prox_newton"]

#: Bisection steps for the best multiple ``γ`` of the dual point (each halves the bracket).
_GAMMA_STEPS = 60


@dataclass
class ProxNewtonRun(NewtonRun):
    """What :func:`prox_newton` found: a :class:`~cvxrank.native.truncated_newton.NewtonRun` (objectives on
    the scale of (9), with the ℓ1 term) and, for the rounding allowance of its bound, ``conjugate``:
    ``‖û‖`` and the magnitudes of ``φ*``'s terms where the best bound was found (:func:`composite_bound`)."""

    conjugate: tuple = (0.0, 0.0)


def _soft_clip(v, rho, lower, upper):
    """``clip(S_ρ(v), l, u)``: the maximiser of ``vᵀu − ½‖u‖² − ρ‖u‖₁`` over the box."""
    return np.clip(np.sign(v) * np.maximum(np.abs(v) - rho, 0.0), lower, upper)


def _conjugate(v, rho, lower, upper):
    """``(φ*(v), û)`` of ``φ = ½‖·‖² + ρ‖·‖₁ + I_[l,u]``."""
    u = _soft_clip(v, rho, lower, upper)
    return float(np.sum(v * u - 0.5 * u * u - rho * np.abs(u))), u


def composite_bound(result, gradient_loss, lam: float, rho_L: float, lower, upper) -> tuple[float, float, float]:
    """Lower bound on ``min F`` (scale of (9)) from the dual point ``α = 2C[t]_+`` of one oracle result.

    Parameters
    ----------
    result : SquaredHingeResult
        The oracle's squared hinge at ``w``.
    gradient_loss : ndarray of shape (n_features,)
        ``Xᵀ g``, the loss's gradient in ``w``.
    lam, rho_L : float
        ``λ`` and the ℓ1 weight ``ρ_L`` of (9).
    lower, upper : ndarray of shape (n_features,)
        The bounds on ``w`` (``±inf`` where none).

    Returns
    -------
    bound, gamma, norm_u, magnitude : float
        ``2λ max_γ D(γα)`` (module docstring), the ``γ`` that attains it, and for the rounding allowance
        of the conjugate there: ``‖û‖`` and ``Σ_j |γ v_j û_j| + ½ û_j² + ρ |û_j|``.
    """
    A = result.linear / lam
    H = result.loss / (2.0 * lam)
    v = -gradient_loss / (2.0 * lam)
    rho = rho_L / (2.0 * lam)

    def value(gamma):
        conj, u = _conjugate(gamma * v, rho, lower, upper)
        return gamma * A - gamma * gamma * H - conj, u

    def slope(gamma):
        return A - 2.0 * gamma * H - float(v @ _soft_clip(gamma * v, rho, lower, upper))

    candidates = [1.0]
    if H > 0 and A > 0:
        lo, hi = 0.0, 1.0
        while slope(hi) > 0 and hi < 1e300:
            lo, hi = hi, 2.0 * hi
        for _ in range(_GAMMA_STEPS):
            mid = 0.5 * (lo + hi)
            if slope(mid) > 0:
                lo = mid
            else:
                hi = mid
        candidates.append(0.5 * (lo + hi))
    (dual, u), gamma = max(((value(g), g) for g in candidates), key=lambda c: c[0][0])
    magnitude = float(np.sum(np.abs(gamma * v * u) + 0.5 * u * u + rho * np.abs(u)))
    return 2.0 * lam * dual, gamma, float(np.linalg.norm(u)), magnitude


def min_norm_subgradient(w, grad, rho_L: float, lower, upper) -> np.ndarray:
    """The minimum-norm element ``p`` of ``∇f(w) + ρ_L ∂‖w‖₁ + N_[l,u](w)`` (``p = 0`` iff ``w`` is optimal).

    Per feature, with the one-sided derivatives of ``f + ρ_L |·|`` up (``r``) and down (``−s``): ``p_j = r``
    when ``r < 0`` and ``w_j < u_j`` (going up descends), ``p_j = s`` when ``s > 0`` and ``w_j > l_j``
    (going down descends), else 0.

    Examples
    --------
    >>> min_norm_subgradient(np.zeros(3), np.array([-2.0, 0.5, 3.0]), 1.0, np.full(3, -np.inf),
    ...                      np.array([np.inf, np.inf, 0.0])).tolist()
    [-1.0, 0.0, 2.0]
    """
    sign = np.sign(w)
    up = grad + rho_L * np.where(sign != 0, sign, 1.0)
    down = grad + rho_L * np.where(sign != 0, sign, -1.0)
    p = np.where((up < 0) & (w < upper), up, 0.0)
    return np.where((down > 0) & (w > lower), down, p)


def prox_newton(oracle: VariantOracle, lam: float, l1: float = 0.0, lower=None, upper=None, *, tol: float = 1e-6,
                max_iter: int = 200, time_limit: float | None = None, warm_start_w=None, cg_max_iter: int = 250,
                forcing: float = 0.1, stall_after: int = 20, threads: int | None = 1,
                verbose: bool = False) -> ProxNewtonRun:
    """Minimise ``λ‖w‖² + Σ c_i [m_i − <w, d_i>]_+² + ρ_L‖w‖₁`` over ``l ≤ w ≤ u`` pair-free; stop at a certified gap.

    Parameters
    ----------
    oracle : VariantOracle
    lam : float
        ``λ`` of (9)/SIGIR.
    l1 : float, default 0
        ``ρ_L``, the ℓ1 weight on the scale of (9) (``Variant.l1``).
    lower, upper : None, float or array of shape (n_features,)
        Bounds on ``w`` (None: none); they must admit ``w = 0``.
    tol : float, default 1e-6
        Requested certified relative gap ``(F(w) − bound) / F(w)``.
    max_iter : int, default 200
        Cap on Newton steps; status ``"user_limit"`` when reached.
    time_limit : float, optional
        Seconds; status ``"user_limit"`` when reached.
    warm_start_w : array-like, optional
        First point (default ``w = 0``), clipped into the bounds.
    cg_max_iter : int, default 250
        Cap on CG steps per Newton step.
    forcing : float, default 0.1
        CG stops at ``‖r‖ ≤ η ‖p_F‖`` with ``η = min(forcing, sqrt(‖p‖ / ‖p_0‖))``.
    stall_after : int, default 20
        Stop (``"stalled"``) when the gap has not shrunk by 0.1 % in this many steps.
    threads : int or None, default 1
        BLAS threads during the solve.
    verbose : bool, default False
        One line per Newton step.

    Returns
    -------
    ProxNewtonRun
        Its ``history`` has the columns of :func:`~cvxrank.native.truncated_newton.truncated_newton`'s
        and ``free`` (free features), ``zeros`` (zero weights) and ``gamma`` (the bound's multiple).
    """
    lam = check_lam(lam)
    if isinstance(l1, bool) or not isinstance(l1, (int, float, np.integer, np.floating)) or not math.isfinite(l1) \
            or l1 < 0:
        raise ValidationError(f"l1 must be a non-negative finite number, got {l1!r}")
    max_iter = positive_int(max_iter, "max_iter")
    cg_max_iter = positive_int(cg_max_iter, "cg_max_iter")
    stall_after = positive_int(stall_after, "stall_after")
    check("forcing", forcing, Interval(0, 1, closed="neither"))
    n = oracle.n_features
    lo, hi = _bounds(lower, n, -np.inf), _bounds(upper, n, np.inf)
    if np.any(lo > 0) or np.any(hi < 0):
        raise ValidationError("the bounds must allow w = 0 (lower <= 0 <= upper)")
    w = np.clip(check_common(tol, time_limit, warm_start_w, n), lo, hi)
    floor = certifiable_gap(oracle.n_documents)
    if tol < floor:
        warnings.warn(
            f"tol {tol:.1e} is below the relative gap float64 can certify on this problem (about {floor:.1e}); "
            "the solver stops there and reports the best certified gap", InaccurateSolutionWarning, stacklevel=2)
    with blas_threads(threads):
        return _run(oracle, lam, float(l1), lo, hi, w, tol, max(tol, floor), floor, max_iter, time_limit,
                    cg_max_iter, forcing, stall_after, verbose)


def _bounds(value, n, default):
    if value is None:
        return np.full(n, default)
    arr = np.broadcast_to(np.asarray(value, dtype=np.float64), (n,)).copy()
    if np.isnan(arr).any():
        raise ValidationError("the bounds have a NaN")
    return arr


def _run(oracle, lam, rho_L, lo, hi, w, tol, target, floor, max_iter, time_limit, cg_max_iter, forcing,
         stall_after, verbose) -> ProxNewtonRun:
    start = time.perf_counter()
    s = oracle.scores(w)
    r = oracle.squared_hinge_scores(s, hessian=True)
    calls, cg_total, it = 1, 0, 0
    lower, best_u, history, status = 0.0, (0.0, 0.0), [], "user_limit"
    p0 = None
    stall_gap, stall_count = np.inf, 0
    step, gamma = 0.0, 1.0
    while True:
        F = lam * float(w @ w) + r.loss + rho_L * float(np.abs(w).sum())
        grad_loss = oracle.gradient(r.score_gradient)
        grad = 2.0 * lam * w + grad_loss
        bound, g, norm_u, magnitude = composite_bound(r, grad_loss, lam, rho_L, lo, hi)
        if bound > lower:
            lower, gamma, best_u = bound, g, (norm_u, magnitude)
        lower = min(lower, F)  # a gap below 0 is rounding: F ≥ min F ≥ every bound
        p = min_norm_subgradient(w, grad, rho_L, lo, hi)
        pnorm = float(np.linalg.norm(p))
        p0 = pnorm if p0 is None else p0
        rel = (F - lower) / F if F > 0 else 0.0
        kink = (w == lo) | (w == hi) | ((w == 0) & (rho_L > 0))
        free = ~(kink & (p == 0))
        elapsed = time.perf_counter() - start
        history.append({"iteration": it, "objective": F, "dual_objective": lower, "relative_gap": rel,
                        "gradient_norm": pnorm, "step": step, "cg_iterations": cg_total,
                        "violated": r.n_violated, "oracle_calls": calls, "free": int(free.sum()),
                        "zeros": int(np.sum(w == 0)), "gamma": gamma, "time": elapsed})
        if verbose:
            print(f"prox_newton  it {it:3d}  objective {F:.12g}  lower {lower:.12g}  rel gap {rel:.2e}  "
                  f"|p| {pnorm:.2e}  free {int(free.sum())}  cg {cg_total:5d}  step {step:.3g}  {elapsed:.2f}s",
                  flush=True)
        if rel <= target or pnorm == 0.0 and F - lower <= floor * F:
            status = "optimal" if rel <= tol else "float_limit"
            break
        if it >= max_iter or (time_limit is not None and elapsed >= time_limit):
            break
        gap = F - lower
        if gap < stall_gap * (1.0 - 1e-3):
            stall_gap, stall_count = gap, 0
        else:
            stall_count += 1
            if stall_count >= stall_after:
                status = "float_limit" if tol < floor else "stalled"
                break
        it += 1
        orthant = np.where(w != 0, np.sign(w), -np.sign(p))
        eta = min(forcing, np.sqrt(pnorm / p0)) if p0 > 0 else forcing
        d, steps = _direction(oracle, lam, r, p, free, eta, cg_max_iter)
        cg_total += steps
        d[kink & (d * p > 0)] = 0.0  # a feature at 0 or a bound leaves it only the way it descends
        if not float(p @ d) < 0:
            d = -p
        step, w_new, evaluations = _line_search(oracle, lam, rho_L, lo, hi, w, s, d, p, orthant, F)
        calls += evaluations
        if step <= MIN_STEP and not np.array_equal(d, -p):  # the Newton direction failed: steepest descent
            step, w_new, evaluations = _line_search(oracle, lam, rho_L, lo, hi, w, s, -p, p, orthant, F)
            calls += evaluations
        if step <= MIN_STEP:
            status = "float_limit" if tol < floor else "stalled"
            break
        w = w_new
        s = oracle.scores(w)  # fresh X w: the certificate reads the scores of the returned w
        r = oracle.squared_hinge_scores(s, hessian=True)
        calls += 1
    return ProxNewtonRun(w=w, objective=float(F), lower_bound=float(lower), status=status, iterations=it,
                         oracle_calls=calls, cg_iterations=cg_total, solve_time=time.perf_counter() - start,
                         floor=floor, history_rows=history, conjugate=best_u)


def _direction(oracle, lam, r, p, free, eta, cg_max_iter):
    """CG on ``(2λ I + Xᵀ H_s X)_{FF} d_F = −p_F`` (``d`` 0 off the free set); returns ``(d, CG steps)``."""
    n = p.shape[0]
    d = np.zeros(n)
    if not free.any():
        return d, 0
    hess = r.hessian_product
    index = np.flatnonzero(free)
    k = index.size
    full = np.zeros(n)

    def matvec(u):
        full[index] = u
        return 2.0 * lam * u + oracle.gradient(hess(oracle.scores(full)))[index]

    op = spla.LinearOperator((k, k), dtype=np.float64, matvec=matvec)
    steps = [0]

    def count(_):
        steps[0] += 1

    d_free, _ = spla.cg(op, -p[index], rtol=eta, atol=0.0, maxiter=cg_max_iter, callback=count)
    d[index] = d_free
    return d, steps[0]


def _line_search(oracle, lam, rho_L, lo, hi, w, s, d, p, orthant, F):
    """Backtracking along ``π(w + t d)`` until ``F(w(t)) ≤ F(w) + 10⁻⁴ pᵀ(w(t) − w)``; returns
    ``(t, w(t), evaluations)`` (``t = 0``: no step found)."""
    z = oracle.scores(d)
    slack = 4.0 * np.finfo(float).eps * abs(F)
    t, evaluations = 1.0, 0
    while True:
        x = np.clip(w + t * d, lo, hi)
        if rho_L > 0:
            x[x * orthant < 0] = 0.0
            x[orthant == 0] = w[orthant == 0]
        moved = x - (w + t * d)
        s_t = s + t * z
        if np.any(moved != 0):
            s_t = s_t + oracle.scores(moved)
        evaluations += 1
        value = lam * float(x @ x) + oracle.squared_hinge_scores(s_t).loss + rho_L * float(np.abs(x).sum())
        if value <= F + ARMIJO * float(p @ (x - w)) + slack and value <= F + slack:
            return t, x, evaluations
        if t <= MIN_STEP:
            return 0.0, w, evaluations
        t *= 0.5


def _solve(problem, *, tol: float = 1e-6, verbose: bool = False, max_iter: int = 200,
           time_limit: float | None = None, warm_start_w=None, **options):
    """The backend of ``solve(problem, "prox_newton")``: a squared-hinge problem with an ℓ1 term and bounds on
    ``w``, solved pair-free.

    The problem's variant must have ``loss="squared_hinge"``, margin None (1), ``"grade_difference"`` or
    ``"gain_difference"``, any ``l1``, ``lower`` and ``upper``, and no constraints; its costs must be one
    value per (query, grade pair) (as for ``"cutting_plane"``).

    Parameters
    ----------
    problem : RankingProblem
        (or a :class:`~cvxrank.formulations.Formulation`: its problem is solved).
    tol, verbose, max_iter, time_limit, warm_start_w
        As for :func:`prox_newton`.
    **options
        Passed to :func:`prox_newton` (``cg_max_iter``, ``forcing``, ``threads``, ...).

    Returns
    -------
    SolveResult
        ``formulation="pairfree"``, objectives on the scale of (9), certified by the pair-free dual bound
        of the module docstring less its own rounding allowance (the conjugate's sums and the error of
        ``Xᵀ g``), to which :func:`cvxrank.solution.finish` adds the allowance of the objective and the model.
    """
    t0 = time.perf_counter()
    problem, costs = pairfree_problem(problem, "prox_newton", "squared_hinge",
                                      "use 'cutting_plane' for the hinge or a CVXPY solver",
                                      extensions=frozenset({"margin", "l1", "bounds"}))
    check_scale(problem.data.X, costs.values[costs.n_pairs > 0].max(initial=0.0), problem.lam)
    variant = problem.variant
    lo, hi = variant.bounds(problem.n_features)
    oracle = VariantOracle.from_data(problem.data, costs, margin=variant.margin)
    setup = time.perf_counter() - t0
    run = prox_newton(oracle, problem.lam, variant.l1, lo, hi, tol=tol, max_iter=max_iter, time_limit=time_limit,
                      warm_start_w=warm_start_w, verbose=verbose, **options)
    allowance = _conjugate_rounding(problem, run)
    with warnings.catch_warnings():
        if run.status == "float_limit":  # warned when the solve started
            warnings.simplefilter("ignore", InaccurateSolutionWarning)
        return _finish(problem, run, oracle, setup, tol, allowance)


def _conjugate_rounding(problem, run) -> float:
    """On the scale of (9): a bound on the rounding of ``φ*(γv)`` in the lower bound, beyond what
    :func:`~cvxrank.rounding.model_rounding` covers.

    ``φ*`` is 1-smooth with gradient ``û``: an error ``ε`` in ``v = Dᵀα`` moves it by at most
    ``‖û‖‖ε‖ + ½‖ε‖²``, with ``‖ε‖ ≤ γ_K ‖|X|ᵀ W‖ (2 reach + 2 max|X||w| + 1)`` as in ``model_rounding``
    (``W_d`` the weight of document ``d``'s pairs); its own sum of ``n`` terms is off by ``γ_{n+16}`` times
    the magnitudes of the terms.
    """
    from cvxrank._float64 import abs_matvec, abs_rmatvec
    from cvxrank.rounding import SLACK, _document_weights, _shape, gamma

    n, m, m_max, _ = _shape(problem)
    if problem.has_pairs:
        pairs, C = problem.pairs, problem.C
        W = np.bincount(pairs.better, C, minlength=m) + np.bincount(pairs.worse, C, minlength=m)
        reach = float(np.max(np.abs(problem.variant.margins(pairs)), initial=1.0))
    else:
        W, reach = _document_weights(problem)
    t = abs_matvec(problem.data.X, run.w)
    per_doc = 2.0 * reach + 2.0 * float(t.max(initial=0.0)) + 1.0
    eps = gamma(m + m_max + n + SLACK) * float(np.linalg.norm(abs_rmatvec(problem.data.X, W))) * per_doc
    norm_u, magnitude = run.conjugate
    return 2.0 * problem.lam * (norm_u * eps + 0.5 * eps * eps + gamma(n + SLACK) * 2.0 * magnitude) * (1.0 + 1e-12)


def _finish(problem, run, oracle, setup, tol, allowance):
    from cvxrank import __version__

    backend = {"optimal": "optimal", "user_limit": "user_limit"}.get(run.status, "optimal_inaccurate")
    report = BackendReport(
        solver="prox_newton", version=__version__, formulation="pairfree", scale="L", status=backend,
        lower_bound=run.lower_bound - allowance, bound_name="squared-hinge elastic-net dual bound (pair-free)",
        objective_L=run.objective, iterations=run.iterations, setup_time=setup, solve_time=run.solve_time,
        extras={"oracle_calls": run.oracle_calls, "cg_iterations": run.cg_iterations,
                "pairfree_relative_gap": run.relative_gap, "certifiable_gap": run.floor,
                "solver_status": run.status, "n_pairs": oracle.n_pairs, "n_documents": oracle.n_documents,
                "conjugate_rounding": allowance},
        history=run.history,
    )
    return finish(problem, run.w, report, tol)
