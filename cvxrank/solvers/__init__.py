"""Interchangeable solvers: every CVXPY solver installed, plus native numpy solvers.

=================  ==========  ==================================================
name               kind        method
=================  ==========  ==================================================
``clarabel``       CVXPY       interior point (QP/SOCP), the reference
``ecos``           CVXPY       interior point (SOCP)
``osqp``           CVXPY       ADMM (QP) with polishing
``scs``            CVXPY       ADMM (conic), low accuracy per iteration
``subgradient``    native      projected subgradient + dual polish, certified stop
``gd``             native      fixed-step gradient descent of Fig. 3/SIGIR, as published
``cutting_plane``  native      pair-free stabilised 1-slack cutting planes
                               (:mod:`cvxrank.native`), certified stop; weights
                               must be one value per (query, grade pair)
=================  ==========  ==================================================

Any other QP-capable solver CVXPY has installed (``piqp``, ``proxqp``,
``gurobi``, ``mosek``, ...) works too; :func:`available_solvers` lists them.
"""

from __future__ import annotations

from cvxrank.exceptions import SolverNotAvailableError, ValidationError
from cvxrank.formulations import Formulation
from cvxrank.native.cutting_plane import solve_cutting_plane
from cvxrank.solvers.certificate import Certificate, certify, reduced_dual
from cvxrank.solvers.cvxpy_backend import CVXPY_SOLVERS, DEFAULT_OPTIONS, installed_cvxpy_solvers, solve_cvxpy
from cvxrank.solvers.fallback import FALLBACK_CHAIN, solve_with_fallback
from cvxrank.solvers.gd import solve_gd
from cvxrank.solvers.result import SolveResult
from cvxrank.solvers.subgradient import solve_subgradient

__all__ = [
    "Certificate",
    "CVXPY_SOLVERS",
    "DEFAULT_OPTIONS",
    "FALLBACK_CHAIN",
    "NATIVE_SOLVERS",
    "SolveResult",
    "available_solvers",
    "certify",
    "reduced_dual",
    "solve",
    "solve_with_fallback",
]

#: Native solvers: name -> function(formulation, *, tol, verbose, **options).
NATIVE_SOLVERS = {"subgradient": solve_subgradient, "gd": solve_gd, "cutting_plane": solve_cutting_plane}


def available_solvers() -> list[str]:
    """Names ``solve`` accepts on this machine: installed CVXPY solvers, then native ones."""
    return installed_cvxpy_solvers() + list(NATIVE_SOLVERS)


def solve(formulation: Formulation, solver: str = "clarabel", *, tol: float = 1e-6, warm_start: bool = False,
          verbose: bool = False, **options) -> SolveResult:
    """Solve a formulation and certify the solution.

    Parameters
    ----------
    formulation : Formulation
        From :func:`cvxrank.formulations.build` or one of the builders.
    solver : str, default "clarabel"
        A name from :func:`available_solvers` (case-insensitive).
    tol : float, default 1e-6
        Relative duality-gap tolerance: a solution is reported ``"optimal"``
        only if its certified relative gap is at most ``tol``; native solvers
        stop there.
    warm_start : bool, default False
        Passed to CVXPY (re-solves after a parameter change start from the
        previous solution where the solver supports it).
    verbose : bool, default False
    **options
        Passed to the solver untouched (CVXPY solvers: the solver's own option
        names, over :data:`DEFAULT_OPTIONS`; native solvers: ``max_iter`` and
        the others their docstrings list).

    Returns
    -------
    SolveResult

    Raises
    ------
    SolverNotAvailableError
        For an unknown or uninstalled solver; the message lists the installed ones.
    SolverError
        When the solver fails; the message suggests another.
    """
    if not isinstance(formulation, Formulation):
        raise ValidationError(f"solve takes a Formulation, got {type(formulation).__name__}")
    if not isinstance(tol, (int, float)) or not (0 < tol < 1):
        raise ValidationError(f"tol must be a number in (0, 1), got {tol!r}")
    name = str(solver).lower()
    if name in NATIVE_SOLVERS:
        return NATIVE_SOLVERS[name](formulation, tol=tol, verbose=verbose, **options)
    if name in installed_cvxpy_solvers():
        return solve_cvxpy(formulation, name, tol=tol, warm_start=warm_start, verbose=verbose, **options)
    hint = ""
    if name in CVXPY_SOLVERS:
        hint = f" ({name} is supported but not installed: pip install {CVXPY_SOLVERS[name][1]})"
    raise SolverNotAvailableError(
        f"unknown solver {solver!r}{hint}; installed: {', '.join(available_solvers())}"
    )
