"""Pair-free truncated Newton method for the squared-hinge Ranking SVM, certified by its dual.

Problem (the squared-hinge variant of (9)/SIGIR, :mod:`cvxrank.variants`):

.. math:: \\min_w F(w) = \\lambda \\|w\\|^2 + \\sum_i c_i\\, [m_i - \\langle w, d_i \\rangle]_+^2

with ``c_i = τ_k(i) μ_q(i)`` and margins ``m_i`` per grade pair (1 in the papers). ``F`` is
differentiable with a piecewise-constant generalised Hessian, so Newton's method with conjugate
gradients (CG) for the steps converges in a few tens of iterations (Lee and Lin 2014, "Large-scale
linear RankSVM"; Chapelle 2007 for the squared hinge SVM). Every quantity comes from the pair-free
oracle (:class:`~cvxrank.native.variant_oracle.VariantOracle`), no pair is formed:

* gradient ``∇F = 2λ w + Xᵀ g`` (``g``: the loss's score gradient);
* Hessian products ``(2λ I + Xᵀ H_s X) u`` (``H_s``: the loss's Hessian in scores), one per CG step;
* Armijo backtracking along ``d`` on the scores ``s + t X d`` (no product with ``X``).

**Certificate.** On the QP scale ``M = F / (2λ)`` with ``C_i = c_i / (2λ)`` the dual of the
variant is ``D(α) = Σ α_i m_i − Σ α_i² / (4 C_i) − ½‖Dᵀα‖²`` over ``α ≥ 0``
(:mod:`cvxrank.variants`). The optimality conditions' point ``α_i = 2 C_i [t_i]_+`` at ``w`` gives,
pair-free,

.. math::

    \\sum_i \\alpha_i m_i = \\frac{1}{\\lambda} \\sum_i c_i m_i [t_i]_+, \\qquad
    \\sum_i \\frac{\\alpha_i^2}{4 C_i} = \\frac{R_2(w)}{2\\lambda}, \\qquad
    D^\\top \\alpha = -\\frac{1}{2\\lambda} X^\\top g,

and the best multiple ``γα`` (``max_γ γA − γ²B = A² / (4B)``) is a valid lower bound on
``M(w*)``, so ``F(w) − 2λ · A²/(4B)`` bounds ``F(w) − F(w*)``. It tends to 0 as ``w → w*``.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse.linalg as spla

from cvxrank._optim import MIN_STEP, armijo_step
from cvxrank._validation import Interval, check
from cvxrank.costs import check_lam
from cvxrank.exceptions import InaccurateSolutionWarning, ValidationError
from cvxrank.native._checks import check_common, pairfree_problem, positive_int
from cvxrank.native.cutting_plane import blas_threads, certifiable_gap
from cvxrank.native.scale import check_scale
from cvxrank.native.stopping import aim
from cvxrank.native.variant_oracle import VariantOracle
from cvxrank.rounding import abs_scores, model_rounding, primal_rounding
from cvxrank.solution import BackendReport, finish

__all__ = ["NewtonRun", "squared_hinge_bound", "truncated_newton"]


@dataclass
class NewtonRun:
    """What :func:`truncated_newton` found (objectives on the scale of (9), ``F = 2λ M``).

    Attributes
    ----------
    w : ndarray
    objective : float
        ``F(w)``.
    lower_bound : float
        The best certified lower bound on ``min F``.
    status : str
        ``"optimal"``, ``"float_limit"``, ``"user_limit"`` or ``"stalled"`` (as for
        :class:`~cvxrank.native.cutting_plane.CuttingPlaneRun`).
    iterations, oracle_calls, cg_iterations : int
        Newton steps; loss evaluations (one per point and per line-search trial); Hessian products.
    solve_time, floor : float
    history : pandas.DataFrame
        One row per iteration: objective, dual_objective, relative_gap, gradient_norm, step,
        cg_iterations, violated, time; built from ``history_rows`` (one dict each) when read.
    """

    w: np.ndarray
    objective: float
    lower_bound: float
    status: str
    iterations: int
    oracle_calls: int
    cg_iterations: int
    solve_time: float
    floor: float
    history_rows: list = field(repr=False)

    @property
    def history(self):
        import pandas as pd

        return pd.DataFrame(self.history_rows)

    @property
    def relative_gap(self) -> float:
        """``(objective − lower_bound) / objective``."""
        return (self.objective - self.lower_bound) / self.objective if self.objective > 0 else 0.0


def squared_hinge_bound(result, gradient_loss, lam: float) -> float:
    """Lower bound on ``min F`` (scale of (9)) from the dual point ``α = 2C[t]_+`` of one oracle result.

    ``result`` is a :class:`~cvxrank.native.variant_oracle.SquaredHingeResult` at ``w`` and
    ``gradient_loss = Xᵀ g`` its gradient in ``w``; see the module docstring.
    """
    A = result.linear / lam
    v = gradient_loss / (2.0 * lam)
    B = result.loss / (2.0 * lam) + 0.5 * float(v @ v)
    return 2.0 * lam * (A * A / (4.0 * B)) if B > 0 else 0.0


def truncated_newton(oracle: VariantOracle, lam: float, *, tol: float = 1e-6, max_iter: int = 200,
                     time_limit: float | None = None, warm_start_w=None, cg_max_iter: int = 250,
                     forcing: float = 0.1, stall_after: int = 20, threads: int | None = 1,
                     verbose: bool = False, allowance=None) -> NewtonRun:
    """Minimise ``λ‖w‖² + Σ c_i [m_i − <w, d_i>]_+²`` with a pair-free oracle; stop at a certified gap.

    Parameters
    ----------
    oracle : VariantOracle
    lam : float
        ``λ`` of (9)/SIGIR.
    tol : float, default 1e-6
        Requested certified relative gap ``(F(w) − bound) / F(w)``.
    max_iter : int, default 200
        Cap on Newton steps; status ``"user_limit"`` when reached.
    time_limit : float, optional
        Seconds; status ``"user_limit"`` when reached.
    warm_start_w : array-like, optional
        First point (default ``w = 0``).
    cg_max_iter : int, default 250
        Cap on CG steps per Newton step.
    forcing : float, default 0.1
        CG stops at ``‖r‖ ≤ η ‖∇F‖`` with ``η = min(forcing, sqrt(‖∇F‖ / ‖∇F(w_0)‖))``
        (superlinear convergence as ``∇F → 0``).
    stall_after : int, default 20
        Stop (``"stalled"``) when the gap has not shrunk by 0.1 % in this many steps.
    threads : int or None, default 1
        BLAS threads during the solve (:func:`~cvxrank.native.cutting_plane.blas_threads`).
    verbose : bool, default False
        One line per Newton step.
    allowance : callable, optional
        ``w ↦`` the rounding allowance the certificate will add to the gap at ``w`` (scale of (9); the door passes
        it): the first time the gap reaches ``tol`` it is checked, and when gap plus allowance would be above
        ``tol`` the steps go on to ``tol`` less 1.25 times the allowance (:func:`~cvxrank.native.stopping.aim`).

    Returns
    -------
    NewtonRun
    """
    lam = check_lam(lam)
    max_iter = positive_int(max_iter, "max_iter")
    cg_max_iter = positive_int(cg_max_iter, "cg_max_iter")
    stall_after = positive_int(stall_after, "stall_after")
    check("forcing", forcing, Interval(0, 1, closed="neither"))
    w = check_common(tol, time_limit, warm_start_w, oracle.n_features)
    floor = certifiable_gap(oracle.n_documents)
    if tol < floor:
        warnings.warn(
            f"tol {tol:.1e} is below the relative gap float64 can certify on this problem (about {floor:.1e}); "
            "the solver stops there and reports the best certified gap", InaccurateSolutionWarning, stacklevel=2)
    with blas_threads(threads):
        return _run(oracle, lam, w, tol, max(tol, floor), floor, max_iter, time_limit, cg_max_iter, forcing,
                    stall_after, verbose, allowance)


class _LocalSquaredHinge:
    """The squared-hinge protocol of :func:`truncated_newton` on a local
    :class:`~cvxrank.native.variant_oracle.VariantOracle` (an oracle over shards, such as
    :class:`~cvxrank.native.dask.DaskOracle`, implements the same three methods by summing its shards):

    * ``squared_hinge_at(w)``: ``(result, Xᵀ g)`` with ``result.loss``, ``result.linear``, ``result.n_violated``;
    * ``squared_hinge_hessian_vector(u)``: ``Xᵀ H_s X u`` at the last point;
    * ``squared_hinge_line(d)``: ``t ↦ R_2(w + t d)`` from the last point (one product with ``X``).
    """

    def __init__(self, oracle):
        self.oracle = oracle
        self._s = self._r = None

    def squared_hinge_at(self, w):
        o = self.oracle
        self._s = o.scores(w)
        self._r = o.squared_hinge_scores(self._s, hessian=True)
        return self._r, o.gradient(self._r.score_gradient)

    def squared_hinge_hessian_vector(self, u):
        o = self.oracle
        return o.gradient(self._r.hessian_product(o.scores(u)))

    def squared_hinge_line(self, d):
        o, s = self.oracle, self._s
        z = o.scores(d)
        return lambda t: o.squared_hinge_scores(s + t * z).loss


def _run(oracle, lam, w, tol, target, floor, max_iter, time_limit, cg_max_iter, forcing, stall_after,
         verbose, allowance=None) -> NewtonRun:
    start = time.perf_counter()
    if not hasattr(oracle, "squared_hinge_at"):
        oracle = _LocalSquaredHinge(oracle)
    r, grad_loss = oracle.squared_hinge_at(w)
    calls, cg_total, it = 1, 0, 0
    lower, history, status = 0.0, [], "user_limit"
    g0 = None
    stall_gap, stall_count = np.inf, 0
    step = 0.0
    while True:
        F = lam * float(w @ w) + r.loss
        grad = 2.0 * lam * w + grad_loss
        # the best bound so far, never above F (a gap below 0 is rounding: F ≥ min F ≥ every bound)
        lower = min(max(lower, squared_hinge_bound(r, grad_loss, lam)), F)
        gnorm = float(np.linalg.norm(grad))
        g0 = gnorm if g0 is None else g0
        rel = (F - lower) / F if F > 0 else 0.0
        elapsed = time.perf_counter() - start
        history.append({"iteration": it, "objective": F, "dual_objective": lower, "relative_gap": rel,
                        "gradient_norm": gnorm, "step": step, "cg_iterations": cg_total,
                        "violated": r.n_violated, "oracle_calls": calls, "time": elapsed})
        if verbose:
            print(f"truncated_newton  it {it:3d}  objective {F:.12g}  lower {lower:.12g}  rel gap {rel:.2e}  "
                  f"|grad| {gnorm:.2e}  cg {cg_total:5d}  step {step:.3g}  {elapsed:.2f}s", flush=True)
        if rel <= target and allowance is not None:  # once: does the certificate's allowance leave room?
            target, allowance = aim(F, lower, tol, target, allowance(w), verbose, floor), None
        if rel <= target:
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
        eta = min(forcing, np.sqrt(gnorm / g0)) if g0 > 0 else forcing
        d, steps = _direction(oracle, lam, grad, eta, cg_max_iter)
        cg_total += steps
        slope = float(grad @ d)
        if not slope < 0:  # CG returned no descent direction (rounding at the floor): use the gradient
            d, slope = -grad, -gnorm * gnorm
        step, evaluations = _line_search(oracle, lam, w, d, F, slope)
        calls += evaluations
        if step <= MIN_STEP:
            status = "float_limit" if tol < floor else "stalled"
            break
        w = w + step * d
        r, grad_loss = oracle.squared_hinge_at(w)  # fresh X w: the certificate reads the scores of the returned w
        calls += 1
    return NewtonRun(w=w, objective=float(F), lower_bound=float(lower), status=status, iterations=it,
                     oracle_calls=calls, cg_iterations=cg_total, solve_time=time.perf_counter() - start,
                     floor=floor, history_rows=history)


def _direction(oracle, lam, grad, eta, cg_max_iter):
    """CG on ``(2λ I + Xᵀ H_s X) d = −∇F`` to ``‖residual‖ ≤ η ‖∇F‖``; returns ``(d, CG steps)``."""
    n = grad.shape[0]
    op = spla.LinearOperator((n, n), dtype=np.float64,
                             matvec=lambda u: 2.0 * lam * u + oracle.squared_hinge_hessian_vector(u))
    steps = [0]

    def count(_):
        steps[0] += 1

    d, _ = spla.cg(op, -grad, rtol=eta, atol=0.0, maxiter=cg_max_iter, callback=count)
    return d, steps[0]


def _line_search(oracle, lam, w, d, F, slope):
    """Armijo's step along ``d`` on the scores ``s + t X d`` (one product with ``X``); returns ``(t, evaluations)``."""
    loss = oracle.squared_hinge_line(d)
    ww, wd, dd = float(w @ w), float(w @ d), float(d @ d)

    def phi(t):
        return lam * (ww + 2.0 * t * wd + t * t * dd) + loss(t)

    step, _, evaluations = armijo_step(phi, F, slope)
    return step, evaluations


def solve_truncated_newton(problem, **options):
    """Deprecated: ``cvxrank.solve(problem, "truncated_newton", **options)``."""
    warnings.warn("solve_truncated_newton is deprecated: use cvxrank.solve(problem, 'truncated_newton', ...), the "
                  "one door to every solver", DeprecationWarning, stacklevel=2)
    return _solve(problem, **options)


def _solve(problem, *, tol: float = 1e-6, verbose: bool = False, max_iter: int = 200,
           time_limit: float | None = None, warm_start_w=None, client=None, n_shards=None, **options):
    """The backend of ``solve(problem, "truncated_newton")``: a squared-hinge problem solved pair-free.

    The problem's variant must have ``loss="squared_hinge"`` and margin None (1),
    ``"grade_difference"`` or ``"gain_difference"``, with no ℓ1 term, bounds or constraints;
    its costs must be one value per (query, grade pair) (as for ``"cutting_plane"``).

    Parameters
    ----------
    problem : RankingProblem
        (or a :class:`~cvxrank.formulations.Formulation`: its problem is solved).
    tol, verbose, max_iter, time_limit, warm_start_w
        As for :func:`truncated_newton`.
    client : dask.distributed.Client, optional
        Run over query shards on this cluster (:class:`~cvxrank.native.dask.DaskOracle`, ``n_shards`` of
        them): the same Newton steps, every sum over the shards.
    **options
        Passed to :func:`truncated_newton` (``cg_max_iter``, ``forcing``, ``threads``, ...).

    Returns
    -------
    SolveResult
        ``formulation="pairfree"``, objectives on the scale of (9), certified by the pair-free dual
        bound of the module docstring (by the pairwise dual too when the pairs exist and the bound
        does not prove ``tol``).
    """
    t0 = time.perf_counter()
    problem, costs = pairfree_problem(problem, "truncated_newton", "squared_hinge",
                                      "use 'cutting_plane' for the papers' hinge or a CVXPY solver")
    check_scale(problem.data.X, costs.values[costs.n_pairs > 0].max(initial=0.0), problem.lam)
    variant = problem.variant
    if client is not None:
        from cvxrank.native.dask import DaskOracle
        from cvxrank.native.variant_oracle import margin_table

        oracle = DaskOracle(client, problem.data, costs, n_shards=n_shards)
        oracle.margins = margin_table(oracle.grades, variant.margin)
    elif n_shards is not None:
        raise ValidationError("n_shards needs a dask client")
    else:
        oracle = VariantOracle.from_data(problem.data, costs, margin=variant.margin)
    setup = time.perf_counter() - t0

    def allowance(w):  # what the certificate adds at w for the objective and this bound (cvxrank.solution.finish)
        t = abs_scores(problem, w)
        return 2.0 * problem.lam * (primal_rounding(problem, w, t, pair_free=True) + model_rounding(problem, w, t))

    run = truncated_newton(oracle, problem.lam, tol=tol, max_iter=max_iter, time_limit=time_limit,
                           warm_start_w=warm_start_w, verbose=verbose, allowance=allowance, **options)
    return _finish(problem, run, oracle, setup, tol)


def _finish(problem, run, oracle, setup, tol):
    """The run as a certified solution (:func:`cvxrank.solution.finish`); a ``float_limit`` run was warned about
    when the solve started, so the door does not warn again."""
    from cvxrank import __version__

    backend = {"optimal": "optimal", "user_limit": "user_limit"}.get(run.status, "optimal_inaccurate")
    report = BackendReport(
        solver="truncated_newton", version=__version__, formulation="pairfree", scale="L", status=backend,
        lower_bound=run.lower_bound, bound_name="squared-hinge dual bound (pair-free)", objective_L=run.objective,
        iterations=run.iterations, setup_time=setup, solve_time=run.solve_time,
        extras={"oracle_calls": run.oracle_calls, "cg_iterations": run.cg_iterations,
                "pairfree_relative_gap": run.relative_gap, "certifiable_gap": run.floor,
                "solver_status": run.status, "n_pairs": oracle.n_pairs, "n_documents": oracle.n_documents},
        history=run.history,
    )
    with warnings.catch_warnings():
        if run.status == "float_limit":  # warned when the solve started
            warnings.simplefilter("ignore", InaccurateSolutionWarning)
        return finish(problem, run.w, report, tol)
