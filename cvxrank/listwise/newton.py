"""Newton's method for cs-RgList / ListMLE: Steps 1-5 of He et al., section 3.

Step 1  start at ``w = (1/m, ..., 1/m)`` (``m`` = number of queries), given
        the tolerance ``ε``, the iteration cap ``T``, ``pCf`` and ``C``.
Step 2  gradient (4) and Hessian (5) of the objective (3).
Step 3  Newton direction by a Cholesky solve: ``∇²f(w) · dirn = −∇f(w)``.
Step 4  ``w ← w + dirn``.
Step 5  stop when ``‖dirn‖₁ < ε`` or after ``T`` steps; else go to Step 2.

Our addition: a backtracking (Armijo) line search in Step 4,
``w ← w + t · dirn`` with ``t`` halved from 1 until
``f(w + t·dirn) ≤ f(w) + 10⁻⁴ t ∇f(w)ᵀdirn``. The pure step of the paper
(``line_search=False``) can diverge: the loss is log-sum-exp, whose Hessian
vanishes far from the data, so with a large ``C`` a full Newton step from
``w = 1/m`` may overshoot and the iterates oscillate with growing objective
(``tests/test_listwise.py::test_pure_newton_can_diverge`` shows one case).
Near the optimum the unit step is always accepted, so the quadratic
convergence of the paper's method is kept.
"""

from __future__ import annotations

import time
from importlib import metadata

import numpy as np
import pandas as pd
import scipy.linalg

from cvxrank._optim import armijo_step
from cvxrank.exceptions import SolverError
from cvxrank._validation import check_max_iter, check_tol
from cvxrank.listwise.loss import (
    _as_layout,
    _as_w,
    check_C,
    listwise_objective,
    objective_derivatives,
)
from cvxrank.listwise.result import ListwiseResult, make_result

__all__ = ["solve_newton"]


def _version() -> str:
    try:
        return metadata.version("cvxrank")
    except metadata.PackageNotFoundError:
        return "unknown"


def _check_max_iter(max_iter) -> int:
    return check_max_iter(max_iter, "max_iter (T of Step 1)")


def _line_search(objective, w, d, f, g):
    """Largest ``t = 2^-k`` meeting Armijo's condition (with rounding slack); returns (t, evaluations)."""
    t, _, evaluations = armijo_step(lambda t: objective(w + t * d), f, float(g @ d))
    return t, evaluations


def solve_newton(data, *, C=1.0, pcf=None, tol: float = 1e-8, max_iter: int = 50, w0=None,
                 line_search: bool = True, verbose: bool = False) -> ListwiseResult:
    """Minimise (3) of He et al. by Newton's method with Cholesky steps (Steps 1-5).

    .. math::

        \\min_w \\; \\tfrac12\\|w\\|^2 + \\frac{C}{m} \\sum_i \\sum_j \\frac{U(i,j)}{V(i,j)}\\,\\ell_{ij}(w)

    Parameters
    ----------
    data : RankingData or ListwiseLayout
        A layout (:func:`~cvxrank.listwise.listwise_layout`) carries its own
        ``pCf`` and saves the sort when solving a grid of ``C``.
    C : float, default 1.0
        Trade-off ``C > 0`` of (3).
    pcf : float ≥ 1 or None, default None
        ``None``: plain L2-regularised ListMLE (``U/V ≡ 1``); a number: the
        penalty coefficient ``pCf`` of cs-RgList (``pcf=1`` is cs-RgList with
        only the division by ``V``).
    tol : float, default 1e-8
        ``ε`` of Step 5: stop when ``‖dirn‖₁ < tol``. Also the status test:
        ``"optimal"`` iff ``½‖∇f(w)‖² / f(w) ≤ tol``.
    max_iter : int, default 50
        ``T`` of Step 5.
    w0 : array-like of shape (n_features,), optional
        Starting point; default ``1/m`` in every coordinate (Step 1).
    line_search : bool, default True
        Backtracking on the Newton step (our addition, see the module notes);
        ``False`` is the paper's pure step ``w ← w + dirn``.
    verbose : bool, default False
        Print one line per iteration.

    Returns
    -------
    ListwiseResult
        ``history`` has one row per iterate (row 0 is the start).

    Raises
    ------
    ValidationError
        For ``C ≤ 0``, ``pCf < 1``, a bad ``tol``/``max_iter``/``w0``, or data
        without a query of two or more documents.
    SolverError
        If the Cholesky factorisation fails (a non-finite Hessian).

    Examples
    --------
    >>> from cvxrank.datasets import make_ranking
    >>> data = make_ranking(n_queries=5, docs_per_query=6, n_features=3, random_state=0)
    >>> res = solve_newton(data, C=10.0, pcf=2.0)
    >>> res.status, res.iterations <= 10, res.grad_norm < 1e-8
    ('optimal', True, True)
    """
    start = time.perf_counter()
    C = check_C(C)
    tol = check_tol(tol)
    max_iter = _check_max_iter(max_iter)
    layout = _as_layout(data, pcf)
    n = layout.n_features
    w = np.full(n, 1.0 / layout.n_queries) if w0 is None else _as_w(w0, n).copy()
    setup_time = time.perf_counter() - start

    w, k, converged, rows, last = newton_iterations(
        lambda v, hessian: objective_derivatives(layout, v, C=C, hessian=hessian),
        lambda v: listwise_objective(layout, v, C=C), w, tol=tol, max_iter=max_iter, line_search=line_search,
        verbose=verbose)
    solve_time = time.perf_counter() - last[3]

    result = make_result(layout, w, C=C, tol=tol, solver="newton", solver_version=_version(),
                         solver_status="converged" if converged else "user_limit", iterations=k,
                         setup_time=setup_time, solve_time=solve_time,
                         extras={"line_search": line_search, "n_lists": layout.n_lists, "n_terms": layout.n_terms})
    return finish_history(result, rows, k, converged, last)


def newton_iterations(derivatives, objective, w, *, tol: float, max_iter: int, line_search: bool = True,
                      verbose: bool = False):
    """Steps 2-5 from ``w`` on any evaluation of (3): the loop of :func:`solve_newton` and of
    :func:`cvxrank.listwise.dask.solve_newton_files`.

    Parameters
    ----------
    derivatives : callable
        ``(w, hessian) -> (f(w), ∇f(w), ∇²f(w) or None)``: objective (3), gradient (4), Hessian (5).
    objective : callable
        ``w -> f(w)``: the line search's trial values.
    w : ndarray of shape (n_features,)
        The start (Step 1).
    tol, max_iter, line_search, verbose
        As for :func:`solve_newton`.

    Returns
    -------
    w : ndarray
        The last iterate (finite).
    iterations : int
    converged : bool
        Whether ``‖dirn‖₁ < tol`` was met.
    rows : list of dict
        One history row per iterate; a converged run's last row is added by :func:`finish_history`
        from the certificate.
    last : tuple
        ``(dirn_norm1, step, evaluations, start)`` of the last step; ``start`` is the loop's ``perf_counter``.

    Raises
    ------
    SolverError
        If the Cholesky factorisation fails, or the iterates leave the finite numbers.
    """
    start = time.perf_counter()
    rows = []

    def record(k, f, grad_norm, dnorm, step, evaluations):
        rows.append({"iteration": k, "objective": f, "grad_norm": grad_norm, "dirn_norm1": dnorm,
                     "step": step, "evaluations": evaluations, "time": time.perf_counter() - start})
        if verbose:
            print(f"newton {k:3d}  f={f:.12g}  |grad|={grad_norm:.3e}  |dirn|_1={dnorm:.3e}  "
                  f"step={step:g}")

    f, g, H = derivatives(w, True)  # Step 2
    record(0, f, float(np.linalg.norm(g)), np.nan, np.nan, 1)
    k, converged = 0, False
    dnorm, step, evaluations = np.nan, np.nan, 0
    while k < max_iter:
        try:  # Step 3
            d = scipy.linalg.cho_solve(scipy.linalg.cho_factor(H, check_finite=False), -g, check_finite=False)
        except (np.linalg.LinAlgError, ValueError) as exc:
            raise SolverError(f"newton: Cholesky factorisation of the Hessian failed at iteration {k} ({exc}); "
                              "try a smaller C or the CVXPY form (solve_listwise_cvxpy)") from None
        step, evaluations = _line_search(objective, w, d, f, g) if line_search else (1.0, 0)
        w = w + step * d  # Step 4
        k += 1
        dnorm = float(np.abs(d).sum())
        if not np.all(np.isfinite(w)):
            break
        if dnorm < tol:  # Step 5
            converged = True
            break
        f, g, H = derivatives(w, k < max_iter)
        record(k, f, float(np.linalg.norm(g)), dnorm, step, evaluations)
    if not np.all(np.isfinite(w)):
        raise SolverError(f"newton: the iterates diverged to a non-finite w at iteration {k}; "
                          "use line_search=True or a smaller C")
    return w, k, converged, rows, (dnorm, step, evaluations, start)


def finish_history(result, rows, iterations, converged, last):
    """Add a converged run's last row (its certified objective and gradient norm); ``result.history`` from the rows."""
    dnorm, step, evaluations, start = last
    if converged:
        rows.append({"iteration": iterations, "objective": result.objective, "grad_norm": result.grad_norm,
                     "dirn_norm1": dnorm, "step": step, "evaluations": evaluations,
                     "time": time.perf_counter() - start})
    result.history = pd.DataFrame(rows)
    return result


