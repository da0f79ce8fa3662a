"""Solving a :class:`~cvxrank.formulations.Formulation` with any installed CVXPY solver."""

from __future__ import annotations

import time
import warnings
from importlib import metadata

import cvxpy as cp
import numpy as np

from cvxrank.exceptions import SolverError
from cvxrank.formulations import Formulation
from cvxrank.solution import finish
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
    if alpha is not None and formulation.scale == "L":  # duals of the hinge form are on the scale of (9)
        alpha = alpha / (2.0 * formulation.ranking.lam)
    extras = {"solver_stats": stats, "options": merged, "wall_time": wall}
    return finish(
        formulation.ranking, w, formulation=formulation.name, scale=formulation.scale, alphas=[alpha],
        backend_status=status, solver=solver, version=_version(package),
        tol=tol, iterations=stats.num_iters, setup_time=setup, solve_time=solve_time,
        solver_objective=problem.value, primal_residual=_primal_residual(problem), extras=extras,
    )
