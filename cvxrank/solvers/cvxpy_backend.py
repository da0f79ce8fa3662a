"""Solving a :class:`~cvxrank.formulations.Formulation` with any installed CVXPY solver."""

from __future__ import annotations

import time
import warnings
from importlib import metadata

import cvxpy as cp
import numpy as np

from cvxrank.exceptions import SolverError
from cvxrank.formulations import Formulation
from cvxrank.solution import BackendReport, finish, infeasible
from cvxrank.solvers.registry import SOLVERS

__all__ = ["installed_cvxpy_names", "installed_cvxpy_solvers", "solve_cvxpy"]

_INSTALLED: frozenset | None = None


def installed_cvxpy_names() -> frozenset:
    """CVXPY's constants of the installed solvers (asked once per process)."""
    global _INSTALLED
    if _INSTALLED is None:
        _INSTALLED = frozenset(cp.installed_solvers())
    return _INSTALLED


def installed_cvxpy_solvers() -> list[str]:
    """cvxrank names of the CVXPY solvers that are installed, in registry order."""
    return [s.name for s in SOLVERS.values() if s.kind == "cvxpy" and s.cvxpy_name in installed_cvxpy_names()]


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "unknown"


def _primal_residual(problem: cp.Problem) -> float:
    worst = 0.0
    for con in problem.constraints:
        v = con.violation()
        if v is not None and np.size(v):
            worst = max(worst, float(np.max(v)))
    return worst


def _affine_duals(formulation: Formulation, to_M: float) -> list:
    """``(A, c, ν, kind)`` of each affine user constraint ``A w + c ≤ 0`` / ``= 0`` with its solver dual.

    ``A`` and ``c`` are read by evaluating the constraint's expression at ``w = 0`` and at the unit
    vectors (it is affine in ``w``). A constraint that is not affine in ``w`` alone is left out of the
    dual: the bound then belongs to a relaxation of the problem, still a valid lower bound, only weaker.
    """
    w = formulation.w_variable
    out = []
    if w is None or not formulation.user_constraints:
        return out
    saved = w.value
    try:
        for con in formulation.user_constraints:
            kind = "==" if isinstance(con, cp.constraints.Zero) or type(con).__name__ == "Equality" else "<="
            expr = getattr(con, "expr", None)
            if expr is None or not expr.is_affine() or con.dual_value is None \
                    or any(v is not w for v in expr.variables()):
                continue
            n = w.shape[0]
            w.value = np.zeros(n)
            c = np.asarray(expr.value, dtype=np.float64).ravel()
            A = np.empty((c.size, n))
            for j in range(n):
                e = np.zeros(n)
                e[j] = 1.0
                w.value = e
                A[:, j] = np.asarray(expr.value, dtype=np.float64).ravel() - c
            nu = np.asarray(con.dual_value, dtype=np.float64).ravel() * to_M
            out.append((A, c, nu, kind))
    finally:
        w.value = saved
    return out


def solve_cvxpy(formulation: Formulation, solver: str, *, tol: float, warm_start: bool = False,
                verbose: bool = False, **options):
    """Solve with the CVXPY solver ``solver`` (a CVXPY entry of the registry) and certify."""
    spec = SOLVERS[solver]
    const, package = spec.cvxpy_name, spec.package
    merged = {**spec.defaults, **options}
    problem = formulation.problem
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            # CVXPY's generic "may be inaccurate" warning; cvxrank's certificate
            # warns instead, with the certified gap (see cvxrank.solution.finish).
            warnings.filterwarnings("ignore", message="Solution may be inaccurate", category=UserWarning)
            problem.solve(solver=const, warm_start=warm_start, verbose=verbose, **merged)
    except MemoryError:
        raise SolverError(
            f"out of memory while CVXPY compiled or {solver} solved the {formulation.name} formulation "
            f"({formulation.pairs.n_pairs} pairs x {formulation.pairs.n_features} features); use the lifted "
            "formulation (cvxrank.build(..., formulation='lifted')) or a native solver ('subgradient')"
        ) from None
    except cp.error.SolverError as exc:
        others = [s for s in installed_cvxpy_solvers() if s != solver]
        raise SolverError(
            f"{solver} failed on the {formulation.name} formulation ({exc}); "
            f"try another solver: {', '.join(others)}"
        ) from None
    wall = time.perf_counter() - start
    status = problem.status
    if status in (cp.INFEASIBLE, cp.INFEASIBLE_INACCURATE) and formulation.user_constraints:
        report = BackendReport(solver=solver, version=_version(package), formulation=formulation.name,
                               scale=formulation.scale, status=status, setup_time=problem.compilation_time or 0.0,
                               solve_time=wall)
        return infeasible(formulation.ranking, report, tol)
    if status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE, cp.USER_LIMIT):
        others = [s for s in installed_cvxpy_solvers() if s != solver]
        raise SolverError(
            f"{solver} returned status {status!r} on the {formulation.name} formulation, which is always "
            f"feasible and bounded; try another solver: {', '.join(others)}"
        )
    stats = problem.solver_stats
    setup = problem.compilation_time or 0.0
    solve_time = stats.solve_time if stats.solve_time is not None else max(wall - setup, 0.0)
    w = formulation.recover_w()
    alpha = formulation.recover_alpha()
    to_M = 1.0 / (2.0 * formulation.ranking.lam) if formulation.scale == "L" else 1.0
    if alpha is not None:  # duals of the hinge form are on the scale of (9)
        alpha = alpha * to_M
    affine = _affine_duals(formulation, to_M)
    extras = {"solver_stats": stats, "options": merged, "wall_time": wall}
    report = BackendReport(
        solver=solver, version=_version(package), formulation=formulation.name, scale=formulation.scale,
        status=status, alphas=(alpha,), affine=tuple(affine), iterations=stats.num_iters, setup_time=setup,
        solve_time=solve_time, solver_objective=problem.value, primal_residual=_primal_residual(problem),
        extras=extras,
    )
    return finish(formulation.ranking, w, report, tol)
