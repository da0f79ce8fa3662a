"""The pair-free backends of ``solve(problem, "cutting_plane")`` and ``solve(problem, "truncated_newton")``
for a problem made from :class:`~cvxrank.preference_groups.PreferenceGroups` (click logs: costs that factor
per document).

The door (:func:`cvxrank.solve`) sends such a problem here instead of to the graded backends
(:data:`cvxrank.solvers.NATIVE_SOLVERS`): the same algorithms, :func:`~cvxrank.native.cutting_plane.cutting_plane`
and :func:`~cvxrank.native.truncated_newton.truncated_newton`, on the oracle of
:mod:`cvxrank.native.document_oracle` instead of the grade-based one. Their certificates hold as they are:

* cutting planes: every plane ``R(w) ≥ W_t + (Xᵀ v_t)ᵀ w`` is a minorant of the loss (the oracle's
  ``v`` is the subgradient of the explicit pairs' hinge at ``w_t``), so the dual value of the plane
  model is a lower bound on ``min F`` whatever the costs. The graded smoothed Newton phase reads the
  grade-based oracle's internals; its pair-free counterpart :mod:`cvxrank.native.document_newton`
  takes over here at the same point (relative gap ``newton_gap``), its dual points ``α`` in the box
  of the hinge's dual;
* truncated Newton: the dual point ``α_i = 2 C_i [t_i]_+`` of the squared hinge is built from the
  loss, the linear sum ``Σ c_i [t_i]_+`` and ``Xᵀ g``, which the oracle gives for any costs
  (:func:`~cvxrank.native.truncated_newton.squared_hinge_bound`).

:func:`cvxrank.solution.finish` then certifies ``w`` with that bound and the rounding allowance of
:mod:`cvxrank.rounding` (which reads the groups' exact per-document weights).
"""

from __future__ import annotations

import contextlib
import time
import warnings

import numpy as np
import pandas as pd

from cvxrank._validation import Interval, check
from cvxrank.exceptions import InaccurateSolutionWarning, ValidationError
from cvxrank.native._checks import check_common, positive_int
from cvxrank.native.cutting_plane import certifiable_gap, cutting_plane
from cvxrank.native.document_newton import document_newton
from cvxrank.native.document_oracle import DocumentOracle
from cvxrank.native.scale import check_scale
from cvxrank.native.truncated_newton import _finish as _finish_newton
from cvxrank.native.truncated_newton import truncated_newton
from cvxrank.solution import BackendReport, finish

__all__ = ["solve_cutting_plane", "solve_truncated_newton"]


def _groups_problem(problem, solver: str, loss: str):
    """The RankingProblem (a Formulation states its problem) and its groups, refusing a variant the oracle
    does not take (margins per grade pair, ℓ1, bounds, constraints: the explicit pairs' solvers take those)."""
    problem = getattr(problem, "ranking", problem)
    groups = getattr(problem, "groups", None)
    if groups is None:
        raise ValidationError(f"{solver} on preference groups needs a problem made from PreferenceGroups")
    variant = problem.variant
    if variant.loss != loss or variant.extensions:
        raise ValidationError(f"{solver} solves preference groups (costs per document) with the {loss.replace('_', ' ')} "
                              f"and margins 1 only, not the variant {variant!r}; use a CVXPY solver (the pairs are "
                              "formed for it)")
    largest = float(np.bincount(groups.document, weights=groups.weight).max(initial=0.0))
    check_scale(groups.data.X, largest, problem.lam, groups.held_documents)  # every merged weight is at most a document's total
    return problem, groups


def _oracle_kernel(options: dict) -> str:
    """``oracle_kernel`` (the compiled or numpy boundaries of :class:`DocumentOracle`), popped from ``options``;
    the graded oracle's other options (Dask shards, its threads) have no meaning here and are refused."""
    given = {k: options.pop(k) for k in ("client", "n_shards", "oracle_threads") if k in options}
    defaults = {"client": None, "n_shards": None, "oracle_threads": 1}
    odd = [k for k, v in given.items() if v != defaults[k]]
    if odd:
        raise ValidationError(f"{', '.join(odd)}: options of the graded pair-free oracle; a problem made from preference "
                              "groups is solved by the local oracle of cvxrank.native.document_oracle")
    return options.pop("oracle_kernel", "auto")


#: What found the certified lower bound (the certificate's ``kind``): the planes' model or the Newton phase's dual points.
PLANES_BOUND, NEWTON_BOUND = "cutting-plane bound", "band dual bound"


def _planes_then_newton(oracle, lam, tol, max_iter, time_limit, warm_start_w, verbose, newton_gap, options,
                        newton_after=20):
    """Cutting planes to the relative gap ``newton_gap`` (at most ``newton_after`` calls), the smoothed Newton phase of
    :mod:`cvxrank.native.document_newton` to ``tol``, and the planes again (warm-started at the best point)
    if that phase stalls; the best point and the best lower bound of the three are kept (every bound is
    valid for the same problem), with the name of what found the bound (:data:`PLANES_BOUND`,
    :data:`NEWTON_BOUND`). ``newton_gap=None``: planes only."""
    start = time.perf_counter()
    floor = certifiable_gap(oracle.n_documents)
    if newton_gap is None:
        run = cutting_plane(oracle, lam, tol=tol, max_iter=max_iter, time_limit=time_limit, verbose=verbose,
                            warm_start_w=warm_start_w, **options)
        return run.w, run.objective, run.lower_bound, run.w_model, run.status, run.iterations, run.oracle_calls, \
            0, run.history, int(np.count_nonzero(run.beta[1:])), PLANES_BOUND
    if tol < floor:
        warnings.warn(f"tol {tol:.1e} is below the relative gap float64 can certify on this problem (about "
                      f"{floor:.1e}); the solver stops there and reports the best certified gap",
                      InaccurateSolutionWarning, stacklevel=4)
    target = max(tol, floor)
    first = cutting_plane(oracle, lam, tol=max(target, newton_gap), max_iter=min(max_iter, newton_after),
                          time_limit=time_limit,
                          verbose=verbose, warm_start_w=warm_start_w, **options)
    w, F, lower, w_model, calls = first.w, first.objective, first.lower_bound, first.w_model, first.oracle_calls
    histories, iterations, products, planes = [first.history], first.iterations, 0, int(np.count_nonzero(first.beta[1:]))
    bound_name = PLANES_BOUND
    rel = (F - lower) / F if F > 0 else 0.0
    if rel > target and calls < max_iter:
        remaining = None if time_limit is None else time_limit - (time.perf_counter() - start)
        w_n, F_n, lower_n, w_l, evals, products, rows = document_newton(
            oracle, lam, w, upper=F, lower=lower, target=target, max_calls=max_iter - calls, deadline=remaining,
            verbose=verbose)
        offset = histories[0]["time"].max() if len(histories[0]) else 0.0
        histories.append(pd.DataFrame([{**row, "oracle_calls": calls + row.pop("evaluations"),
                                        "time": offset + row["time"]} for row in rows]))
        calls += evals
        if F_n < F:
            w, F = w_n, F_n
        if lower_n > lower:
            lower, w_model, bound_name = lower_n, w_l, NEWTON_BOUND
        rel = (F - lower) / F if F > 0 else 0.0
    elapsed = time.perf_counter() - start
    if rel > target and calls < max_iter and (time_limit is None or elapsed < time_limit):
        last = cutting_plane(oracle, lam, tol=tol, max_iter=max_iter - calls, verbose=verbose, warm_start_w=w,
                             time_limit=None if time_limit is None else time_limit - elapsed, **options)
        histories.append(last.history.assign(oracle_calls=last.history["oracle_calls"] + calls,
                                             time=last.history["time"] + elapsed))
        calls += last.oracle_calls
        iterations += last.iterations
        planes = int(np.count_nonzero(last.beta[1:]))
        if last.objective < F:
            w, F = last.w, last.objective
        if last.lower_bound > lower:
            lower, w_model, bound_name = last.lower_bound, last.w_model, PLANES_BOUND
        rel = (F - lower) / F if F > 0 else 0.0
    elapsed = time.perf_counter() - start
    if rel <= target:
        status = "optimal" if rel <= tol else "float_limit"
    elif calls >= max_iter or (time_limit is not None and elapsed >= time_limit):
        status = "user_limit"
    else:
        status = "stalled"
    history = pd.concat(histories, ignore_index=True)
    history["objective"] = history["objective"].cummin()
    history["dual_objective"] = history["dual_objective"].cummax()
    history["relative_gap"] = (history["objective"] - history["dual_objective"]) / history["objective"]
    return w, F, lower, w_model, status, iterations, calls, products, history, planes, bound_name


def solve_cutting_plane(problem, *, tol: float = 1e-6, verbose: bool = False, max_iter: int = 10_000,
                        time_limit: float | None = None, warm_start_w=None, **options):
    """``solve(problem, "cutting_plane")`` for preference groups: cutting planes on the pair-free oracle to the
    relative gap ``newton_gap`` (default 0.1; at most 20 calls), then the smoothed Newton phase of
    :mod:`cvxrank.native.document_newton`, then the planes again if it stalls; certified by the best of the
    plane model's dual and the Newton phase's dual points (module docstring). Options as for the graded
    backend (``newton_gap=None``: planes only; ``oracle_kernel`` chooses the compiled or numpy boundaries of
    :class:`~cvxrank.native.document_oracle.DocumentOracle`, the same results); ``max_iter`` caps oracle calls
    of all phases."""
    from cvxrank import __version__

    t0 = time.perf_counter()
    problem, groups = _groups_problem(problem, "cutting_plane", "hinge")
    kernel = _oracle_kernel(options)
    newton_gap = check("newton_gap", options.pop("newton_gap", 0.1), Interval(0, 1, closed="right").or_none())
    check_common(tol, time_limit, warm_start_w, groups.data.n_features)
    max_iter = positive_int(max_iter, "max_iter")
    oracle = DocumentOracle.from_groups(groups, kernel=kernel)
    setup = time.perf_counter() - t0
    t1 = time.perf_counter()
    w, F, lower, w_model, status, iterations, calls, products, history, planes, bound_name = _planes_then_newton(
        oracle, problem.lam, tol, max_iter, time_limit, warm_start_w, verbose, newton_gap, options)
    solve_time = time.perf_counter() - t1
    rel = (F - lower) / F if F > 0 else 0.0
    backend = {"optimal": "optimal", "user_limit": "user_limit"}.get(status, "optimal_inaccurate")
    resid = np.linalg.norm(w - w_model) / max(1.0, float(np.linalg.norm(w)))
    context = warnings.catch_warnings() if status == "float_limit" else contextlib.nullcontext()
    with context:
        if status == "float_limit":
            warnings.simplefilter("ignore", InaccurateSolutionWarning)  # warned when the solve started
        report = BackendReport(
            solver="cutting_plane", version=__version__, formulation="pairfree", scale="L", status=backend,
            lower_bound=lower, bound_name=bound_name, objective_L=F, dual_residual=float(resid),
            iterations=iterations, setup_time=setup, solve_time=solve_time,
            extras={"oracle_calls": calls, "hessian_products": products, "pairfree_relative_gap": rel,
                    "certifiable_gap": certifiable_gap(oracle.n_documents), "solver_status": status,
                    "n_pairs": oracle.n_pairs, "n_documents": oracle.n_documents, "n_members": oracle.n_members,
                    "oracle": "preference groups", "planes": planes},
            history=history,
        )
        return finish(problem, w, report, tol)


def solve_truncated_newton(problem, *, tol: float = 1e-6, verbose: bool = False, max_iter: int = 200,
                           time_limit: float | None = None, warm_start_w=None, **options):
    """``solve(problem, "truncated_newton")`` for preference groups: the squared hinge by truncated Newton on
    the pair-free oracle, certified by its dual bound (module docstring)."""
    t0 = time.perf_counter()
    problem, groups = _groups_problem(problem, "truncated_newton", "squared_hinge")
    oracle = DocumentOracle.from_groups(groups, kernel=_oracle_kernel(options))
    setup = time.perf_counter() - t0
    run = truncated_newton(oracle, problem.lam, tol=tol, max_iter=max_iter, time_limit=time_limit,
                           warm_start_w=warm_start_w, verbose=verbose, **options)
    result = _finish_newton(problem, run, oracle, setup, tol)
    result.extras.update({"n_members": oracle.n_members, "oracle": "preference groups"})
    return result
