"""The pair-free backends of ``solve(problem, "cutting_plane")`` and ``solve(problem, "truncated_newton")``
for a problem made from :class:`~cvxrank.preference_groups.PreferenceGroups` (click logs: costs that factor
per document).

The door (:func:`cvxrank.solve`) sends such a problem here instead of to the graded backends
(:data:`cvxrank.solvers.NATIVE_SOLVERS`): the same algorithms, :func:`~cvxrank.native.cutting_plane.cutting_plane`
and :func:`~cvxrank.native.truncated_newton.truncated_newton`, on the oracle of
:mod:`cvxrank.native.document_oracle` instead of the grade-based one. Their certificates hold as they are:

* cutting planes: every plane ``R(w) ≥ W_t + (Xᵀ v_t)ᵀ w`` is a minorant of the loss (the oracle's
  ``v`` is the subgradient of the explicit pairs' hinge at ``w_t``), so the dual value of the plane
  model is a lower bound on ``min F`` whatever the costs; the smoothed Newton phase reads the graded
  oracle's internals and is not run (planes only);
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

from cvxrank.exceptions import InaccurateSolutionWarning, ValidationError
from cvxrank.native.cutting_plane import cutting_plane
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
    check_scale(groups.data.X, largest, problem.lam)  # every merged weight is at most a document's total
    return problem, groups


def _refuse_graded_options(options: dict) -> None:
    """The graded oracle's options (Dask shards, its threads and compiled sweeps) have no meaning here."""
    given = {k: options.pop(k) for k in ("client", "n_shards", "oracle_threads", "oracle_kernel") if k in options}
    defaults = {"client": None, "n_shards": None, "oracle_threads": 1, "oracle_kernel": "auto"}
    odd = [k for k, v in given.items() if v != defaults[k]]
    if odd:
        raise ValidationError(f"{', '.join(odd)}: options of the graded pair-free oracle; a problem made from preference "
                              "groups is solved by the local oracle of cvxrank.native.document_oracle")


def solve_cutting_plane(problem, *, tol: float = 1e-6, verbose: bool = False, max_iter: int = 10_000,
                        time_limit: float | None = None, warm_start_w=None, **options):
    """``solve(problem, "cutting_plane")`` for preference groups: planes on the pair-free oracle, certified by
    the plane model's dual (module docstring). Options as for the graded backend; ``newton_gap`` is not read
    (planes only)."""
    from cvxrank import __version__

    t0 = time.perf_counter()
    problem, groups = _groups_problem(problem, "cutting_plane", "hinge")
    _refuse_graded_options(options)
    oracle = DocumentOracle.from_groups(groups)
    setup = time.perf_counter() - t0
    run = cutting_plane(oracle, problem.lam, tol=tol, max_iter=max_iter, time_limit=time_limit, verbose=verbose,
                        warm_start_w=warm_start_w, **options)
    backend = {"optimal": "optimal", "user_limit": "user_limit"}.get(run.status, "optimal_inaccurate")
    resid = np.linalg.norm(run.w - run.w_model) / max(1.0, float(np.linalg.norm(run.w)))
    context = warnings.catch_warnings() if run.status == "float_limit" else contextlib.nullcontext()
    with context:
        if run.status == "float_limit":
            warnings.simplefilter("ignore", InaccurateSolutionWarning)  # warned when the solve started
        report = BackendReport(
            solver="cutting_plane", version=__version__, formulation="pairfree", scale="L", status=backend,
            lower_bound=run.lower_bound, objective_L=run.objective, dual_residual=float(resid),
            iterations=run.iterations, setup_time=setup, solve_time=run.solve_time,
            extras={"oracle_calls": run.oracle_calls, "pairfree_relative_gap": run.relative_gap,
                    "certifiable_gap": run.floor, "solver_status": run.status, "n_pairs": oracle.n_pairs,
                    "n_documents": oracle.n_documents, "n_members": oracle.n_members, "oracle": "preference groups",
                    "planes": int(np.count_nonzero(run.beta[1:]))},
            history=run.history,
        )
        return finish(problem, run.w, report, tol)


def solve_truncated_newton(problem, *, tol: float = 1e-6, verbose: bool = False, max_iter: int = 200,
                           time_limit: float | None = None, warm_start_w=None, **options):
    """``solve(problem, "truncated_newton")`` for preference groups: the squared hinge by truncated Newton on
    the pair-free oracle, certified by its dual bound (module docstring)."""
    t0 = time.perf_counter()
    problem, groups = _groups_problem(problem, "truncated_newton", "squared_hinge")
    oracle = DocumentOracle.from_groups(groups)
    setup = time.perf_counter() - t0
    run = truncated_newton(oracle, problem.lam, tol=tol, max_iter=max_iter, time_limit=time_limit,
                           warm_start_w=warm_start_w, verbose=verbose, **options)
    with warnings.catch_warnings():
        if run.status == "float_limit":  # warned when the solve started
            warnings.simplefilter("ignore", InaccurateSolutionWarning)
        result = _finish_newton(problem, run, oracle, setup, tol)
    result.extras.update({"n_members": oracle.n_members, "oracle": "preference groups"})
    return result
