"""Interchangeable solvers: every CVXPY solver installed, plus native numpy solvers.

Every solver takes a :class:`~cvxrank.problem.RankingProblem` (or a compiled
:class:`~cvxrank.formulations.Formulation` of one) and returns a
:class:`~cvxrank.solution.SolveResult` that carries its certificate. What
cvxrank knows about each solver lives in one table,
:data:`cvxrank.solvers.registry.SOLVERS`:

=================  ==========  ==================================================
name               kind        method
=================  ==========  ==================================================
``clarabel``       CVXPY       interior point (QP/SOCP), the reference
``ecos``           CVXPY       interior point (SOCP)
``osqp``           CVXPY       ADMM (QP) with polishing
``scs``            CVXPY       ADMM (conic), low accuracy per iteration
``subgradient``    native      projected subgradient steps only, certified stop
                               (default ``tol`` 1e-4)
``gd``             native      fixed-step gradient descent of Fig. 3/SIGIR, as published
``cutting_plane``  native      pair-free cutting planes, then smoothed Newton
                               (:mod:`cvxrank.native`), certified by its own
                               bound; weights must be one value per (query,
                               grade pair)
``truncated_``     native      pair-free truncated Newton (CG) for the squared
``newton``                     hinge variant, certified by its dual
                               (:mod:`cvxrank.native.truncated_newton`)
=================  ==========  ==================================================

Any other QP-capable solver CVXPY has installed (``piqp``, ``proxqp``,
``gurobi``, ``mosek``, ...) works too; :func:`available_solvers` lists them.
"""

from __future__ import annotations

from cvxrank.certificate import Certificate, certify, reduced_dual
from cvxrank.exceptions import SolverNotAvailableError, ValidationError
from cvxrank.formulations import Formulation, build
from cvxrank.native.cutting_plane import solve_cutting_plane
from cvxrank.native.truncated_newton import solve_truncated_newton
from cvxrank.problem import RankingProblem
from cvxrank.solution import SolveResult
from cvxrank.solvers.cvxpy_backend import installed_cvxpy_solvers, solve_cvxpy
from cvxrank.solvers.fallback import FALLBACK_CHAIN, solve_with_fallback
from cvxrank.solvers.gd import solve_gd
from cvxrank.solvers.registry import SOLVERS, SolverSpec, get_spec
from cvxrank.solvers.subgradient import solve_subgradient

__all__ = [
    "FALLBACK_CHAIN",
    "NATIVE_SOLVERS",
    "SOLVERS",
    "Certificate",
    "SolveResult",
    "SolverSpec",
    "available_solvers",
    "certify",
    "get_spec",
    "reduced_dual",
    "solve",
    "solve_with_fallback",
]

#: Native solvers: name -> function(problem, *, tol, verbose, **options).
NATIVE_SOLVERS = {"subgradient": solve_subgradient, "gd": solve_gd, "cutting_plane": solve_cutting_plane,
                  "truncated_newton": solve_truncated_newton}


def available_solvers() -> list[str]:
    """Names ``solve`` accepts on this machine: installed CVXPY solvers, then native ones."""
    return installed_cvxpy_solvers() + list(NATIVE_SOLVERS)


def solve(problem, solver: str = "clarabel", *, tol: float | None = None, formulation: str = "auto",
          warm_start: bool = False, verbose: bool = False, **options) -> SolveResult:
    """Solve a ranking problem and certify the solution.

    Parameters
    ----------
    problem : RankingProblem or Formulation
        The problem (pairs, costs, ``λ``), or a formulation compiled from one
        (:func:`cvxrank.build`). A CVXPY solver given a problem compiles it
        with ``formulation``; a native solver reads the problem directly.
    solver : str, default "clarabel"
        A name from :func:`available_solvers` (case-insensitive).
    tol : float, optional
        Relative duality-gap tolerance: a solution is reported ``"optimal"``
        only if its certified relative gap is at most ``tol``; native solvers
        stop there. Default: the solver's own (:attr:`SolverSpec.default_tol`:
        1e-6, and 1e-4 for the pure ``subgradient`` method).
    formulation : str, default "auto"
        With a problem and a CVXPY solver: which formulation to compile
        (:func:`cvxrank.build`). Ignored for a Formulation and native solvers.
    warm_start : bool, default False
        Passed to CVXPY (re-solves after a parameter change start from the
        previous solution where the solver supports it).
    verbose : bool, default False
    **options
        Passed to the solver untouched (CVXPY solvers: the solver's own option
        names, over the registry's defaults; native solvers: ``max_iter`` and
        the others their docstrings list).

    Returns
    -------
    SolveResult
        With ``L`` and ``M``, the certified gap on each scale and the distance
        bound ``‖w − w*‖ ≤ sqrt(2 gap_M)``.

    Raises
    ------
    SolverNotAvailableError
        For an unknown or uninstalled solver; the message lists the installed ones.
    SolverError
        When the solver fails; the message suggests another.

    Examples
    --------
    >>> import cvxrank as cr
    >>> problem = cr.RankingProblem(cr.make_ranking(n_queries=4, random_state=0), mu="balanced", lam=0.1)
    >>> a, b = cr.solve(problem, "clarabel"), cr.solve(problem, "cutting_plane")
    >>> a.status, b.status, bool(abs(a.w - b.w).max() <= a.distance_bound + b.distance_bound)
    ('optimal', 'optimal', True)
    """
    if isinstance(problem, Formulation):
        form, ranking = problem, problem.ranking
    elif isinstance(problem, RankingProblem):
        form, ranking = None, problem
    else:
        raise ValidationError(f"solve takes a RankingProblem or a Formulation, got {type(problem).__name__}")
    spec = get_spec(solver)
    if tol is None:
        tol = spec.default_tol
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not (0 < tol < 1):
        raise ValidationError(f"tol must be a number in (0, 1), got {tol!r}")
    if not spec.accepts(ranking.variant):
        able = [name for name in available_solvers() if get_spec(name).accepts(ranking.variant)]
        what = "the papers' problem (hinge loss)" if ranking.variant.is_default else f"the variant {ranking.variant!r}"
        raise SolverNotAvailableError(f"the solver {spec.name!r} does not solve {what}; solvers that can: "
                                      f"{', '.join(able)}")
    if spec.kind == "native":  # before the solver allocates (a CVXPY formulation is checked when built)
        ranking.check_size("pairfree" if spec.pairfree else "native")
    else:
        ranking.check_size("lifted" if (form.name if form is not None else formulation) == "lifted" else "cvxpy")
    if spec.kind == "native":
        name = form.name if form is not None else ("pairfree" if spec.pairfree else "hinge")
        if spec.pairfree:
            return NATIVE_SOLVERS[spec.name](ranking, tol=tol, verbose=verbose, **options)
        return NATIVE_SOLVERS[spec.name](ranking, tol=tol, verbose=verbose, formulation=name, **options)
    if not spec.installed():
        raise SolverNotAvailableError(
            f"{spec.name} is supported but not installed (pip install {spec.package}); "
            f"installed: {', '.join(available_solvers())}"
        )
    if form is None:
        form = build(ranking, formulation=formulation)
    return solve_cvxpy(form, spec.name, tol=tol, warm_start=warm_start, verbose=verbose, **options)
