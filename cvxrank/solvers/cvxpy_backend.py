"""Solving a :class:`~cvxrank.formulations.Formulation` with any installed CVXPY solver."""

from __future__ import annotations

import time
import warnings
from importlib import metadata

import cvxpy as cp
import numpy as np

from cvxrank.exceptions import SolverError
from cvxrank.formulations import Formulation
from cvxrank.solvers.common import finish

__all__ = ["CVXPY_SOLVERS", "DEFAULT_OPTIONS", "MAX_ITER_OPTION", "installed_cvxpy_solvers", "solve_cvxpy"]

#: cvxrank name -> (CVXPY solver constant, PyPI package). Solvers CVXPY can
#: hand a QP or SOCP to; only the installed ones are offered.
CVXPY_SOLVERS = {
    "clarabel": ("CLARABEL", "clarabel"),
    "osqp": ("OSQP", "osqp"),
    "ecos": ("ECOS", "ecos"),
    "scs": ("SCS", "scs"),
    "piqp": ("PIQP", "piqp"),
    "proxqp": ("PROXQP", "proxsuite"),
    "qoco": ("QOCO", "qoco"),
    "daqp": ("DAQP", "daqp"),
    "cvxopt": ("CVXOPT", "cvxopt"),
    "gurobi": ("GUROBI", "gurobipy"),
    "mosek": ("MOSEK", "Mosek"),
}

#: The iteration-cap option of each solver under its own name (native solvers: ``max_iter``).
MAX_ITER_OPTION = {"clarabel": "max_iter", "ecos": "max_iters", "osqp": "max_iter", "scs": "max_iters",
                   "piqp": "max_iter", "qoco": "max_iters", "cvxopt": "maxiters", "gurobi": "BarIterLimit",
                   "mosek": "MSK_IPAR_INTPNT_MAX_ITERATIONS"}


def _osqp_polish_option() -> str:
    try:
        major = int(metadata.version("osqp").split(".")[0])
    except (metadata.PackageNotFoundError, ValueError):
        return "polish"
    return "polishing" if major >= 1 else "polish"


_OSQP_POLISH = _osqp_polish_option()

#: The only place cvxrank changes a solver's defaults. User options override
#: these key by key; everything else passes through to the solver untouched.
DEFAULT_OPTIONS = {
    # OSQP's defaults (eps 1e-5, 10k iterations) stop short of the 1e-6
    # certified relative gap cvxrank reports as "optimal"; polishing then
    # recovers an exact active-set solution on most primal ranking QPs. On the
    # lifted and dual forms ADMM often stalls whatever the tolerance; the
    # certificate reports it (status "user_limit"/"optimal_inaccurate").
    # (OSQP 1.0 renamed the option "polish" to "polishing".)
    "osqp": {"eps_abs": 1e-7, "eps_rel": 1e-7, "max_iter": 100_000, _OSQP_POLISH: True},
    # SCS's defaults (eps 1e-4) are far too loose for a certified 1e-6 gap.
    "scs": {"eps_abs": 1e-9, "eps_rel": 1e-9, "max_iters": 200_000},
}


def installed_cvxpy_solvers() -> list[str]:
    """cvxrank names of the CVXPY solvers that are installed, in table order."""
    installed = set(cp.installed_solvers())
    return [name for name, (const, _) in CVXPY_SOLVERS.items() if const in installed]


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
    """Solve with the CVXPY solver ``solver`` (a key of :data:`CVXPY_SOLVERS`) and certify."""
    const, package = CVXPY_SOLVERS[solver]
    merged = {**DEFAULT_OPTIONS.get(solver, {}), **options}
    problem = formulation.problem
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            # CVXPY's generic "may be inaccurate" warning; cvxrank's certificate
            # warns instead, with the certified gap (see solvers.common.finish).
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
    extras = {"solver_stats": stats, "options": merged, "wall_time": wall}
    return finish(
        formulation, w, alphas=[alpha], backend_status=status, solver=solver, version=_version(package),
        tol=tol, iterations=stats.num_iters, setup_time=setup, solve_time=solve_time,
        solver_objective=problem.value, primal_residual=_primal_residual(problem), extras=extras,
    )
