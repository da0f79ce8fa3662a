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

``highs`` (HiGHS's active-set QP, CVXPY) and the other QP solvers of the registry
(``piqp``, ``proxqp``, ``qoco``, ``daqp``, ``cvxopt``, ``gurobi``, ``mosek``) work when
CVXPY has them installed, and so does any other solver CVXPY has installed that can take
a QP, through a generic spec (:func:`~cvxrank.solvers.registry.generic_spec`: options
untouched, no work limit of cvxrank's); LP- and MILP-only solvers are refused, saying
why. :func:`available_solvers` lists what this machine has. Two policies stand in
for a name: ``"auto"`` (:func:`~cvxrank.solvers.registry.choose_solver`) and
``"fallback"`` (:data:`FALLBACK_CHAIN`, the first certified solution).
"""

from __future__ import annotations

import functools
import inspect
import math

import numpy as np

from cvxrank._validation import check_names, check_tol, check_vector
from cvxrank.certificate import certify, reduced_dual
from cvxrank.exceptions import SolverNotAvailableError, ValidationError
from cvxrank.formulations import Formulation, build
from cvxrank.native.cutting_plane import _solve as _cutting_plane
from cvxrank.native.cutting_plane import cutting_plane
from cvxrank.native.document_solvers import solve_cutting_plane as _groups_cp
from cvxrank.native.document_solvers import solve_truncated_newton as _groups_tn
from cvxrank.native.prox_newton import _solve as _prox_newton
from cvxrank.native.prox_newton import prox_newton
from cvxrank.native.scale import check_feature_scale
from cvxrank.native.truncated_newton import _solve as _truncated_newton
from cvxrank.native.truncated_newton import truncated_newton
from cvxrank.problem import RankingProblem
from cvxrank.solution import Certificate, SolveResult, judge_status
from cvxrank.solvers.cvxpy_backend import installed_cvxpy_solvers, solve_cvxpy
from cvxrank.solvers.fallback import FALLBACK_CHAIN, run_chain, solve_with_fallback  # noqa: F401 (deprecated alias)
from cvxrank.solvers.gd import _solve as _gd
from cvxrank.solvers.registry import (
    POLICIES,
    SOLVERS,
    SolverSpec,
    check_option_values,
    choose_solver,
    get_spec,
)
from cvxrank.solvers.subgradient import _solve as _subgradient

__all__ = [
    "FALLBACK_CHAIN",
    "NATIVE_SOLVERS",
    "POLICIES",
    "SOLVERS",
    "Certificate",
    "SolveResult",
    "SolverSpec",
    "available_solvers",
    "certify",
    "choose_solver",
    "get_spec",
    "reduced_dual",
    "solve",
    "solver_options",
]

def _by_costs(name: str, graded, groups=None):
    """The pair-free backend of the solver ``name``: ``graded`` (costs per query and grade pair, :mod:`cvxrank.native.oracle`), or
    ``groups`` for a problem made from :class:`~cvxrank.preference_groups.PreferenceGroups` (click logs: costs
    per document, :mod:`cvxrank.native.document_solvers`); None refuses such a problem. Its signature, which
    :func:`solver_options` reads, is ``graded``'s."""

    @functools.wraps(graded)
    def backend(problem, **options):
        if getattr(getattr(problem, "ranking", problem), "groups", None) is None:
            return graded(problem, **options)
        if groups is None:
            raise SolverNotAvailableError(
                f"the solver {name!r} reads graded documents; a problem made from "
                "preference groups (costs per document, e.g. a click log) goes to 'cutting_plane' (hinge), "
                "'truncated_newton' (squared hinge) or a CVXPY solver (its pairs are formed for it)")
        return groups(problem, **options)

    return backend


#: Native solvers: name -> backend ``(problem, *, tol, verbose, **options) -> SolveResult``.
NATIVE_SOLVERS = {"subgradient": _subgradient, "gd": _gd,
                  "cutting_plane": _by_costs("cutting_plane", _cutting_plane, _groups_cp),
                  "truncated_newton": _by_costs("truncated_newton", _truncated_newton, _groups_tn),
                  "prox_newton": _by_costs("prox_newton", _prox_newton)}

#: The algorithm each pair-free backend hands its remaining options to.
_INNER = {"cutting_plane": cutting_plane, "truncated_newton": truncated_newton, "prox_newton": prox_newton}

#: Keywords ``solve`` itself fills in; never options of the user's.
_RESERVED = {"problem", "tol", "verbose", "formulation", "self", "oracle", "lam", "keep_points", "allowance"}


def available_solvers(kind: str | None = "pairwise") -> list[str]:
    """Names ``solve`` accepts on this machine for problems of ``kind``: installed CVXPY solvers (the registry's,
    then any other CVXPY has installed that can take the problem), then native ones.

    ``kind`` is ``"pairwise"`` (a :class:`~cvxrank.problem.RankingProblem`, the default),
    ``"listwise"`` (a :class:`~cvxrank.listwise.problem.ListwiseProblem`) or None (every solver).
    """
    names = installed_cvxpy_solvers() + [s.name for s in SOLVERS.values() if s.kind == "native"]
    return [n for n in names if kind is None or SOLVERS[n].solves(kind)]


def solver_options(solver: str) -> frozenset | None:
    """The option names ``solve(problem, solver, **options)`` takes (None: passed untouched).

    Native solvers: the keyword arguments of their backend (and, for the pair-free ones, of the
    algorithm it runs); CVXPY solvers: their settings as the registry lists them
    (:attr:`SolverSpec.options`), None for a solver the registry lists no settings for.
    """
    spec = get_spec(solver)
    if spec.kind != "native" or spec.name not in NATIVE_SOLVERS:
        return spec.options
    names = set()
    for fn in (NATIVE_SOLVERS[spec.name], _INNER.get(spec.name)):
        if fn is not None:
            names |= {p.name for p in inspect.signature(fn).parameters.values()
                      if p.kind is inspect.Parameter.KEYWORD_ONLY}
    if spec.name == "cutting_plane":  # read by the backend from **options
        names |= {"n_shards", "oracle_threads", "oracle_kernel"}
    return frozenset(names - _RESERVED)


def _check_call(spec: SolverSpec, tol, options: dict) -> float:
    """The tolerance (the solver's default when None), the option names and their values, checked once for
    every solver."""
    valid = solver_options(spec.name)
    if valid is not None:
        check_names(options, valid, f"the solver {spec.name!r}")
    check_option_values(spec, options)
    return spec.default_tol if tol is None else check_tol(tol)


def _work_limited(spec: SolverSpec, options: dict, kind: str = "pairwise") -> dict:
    """``options`` with the registry's work limit (:meth:`SolverSpec.work_options`) as the default of the
    solver's own iteration option: every run through the door ends. The caller's cap wins."""
    return {**spec.work_options(kind), **options}


def _report_limit(result, spec: SolverSpec, options: dict):
    """Record the cap the run had (``extras["work_limit"]``, ``extras["work_limit_option"]``) and end a
    CVXPY run that the cap stopped as ``"user_limit"``.

    SCS stopped at ``max_iters`` says ``"solved_inaccurate"`` (CVXPY: ``optimal_inaccurate``), not a
    limit; the door gave that cap, so it knows: a run that used all of its iterations without
    certifying ``tol`` was stopped by it (:func:`~cvxrank.solution.judge_status` with the backend's
    word corrected; ``solver_status`` keeps the solver's own).
    """
    cap = options.get(spec.max_iter_option) if spec.max_iter_option else None
    if cap is None:
        return result
    result.extras.setdefault("work_limit", int(cap))
    result.extras.setdefault("work_limit_option", spec.max_iter_option)
    if (spec.kind == "cvxpy" and result.status == "optimal_inaccurate" and result.iterations is not None
            and result.iterations >= cap):
        proved = result.relative_gap if result.certificate.feasible else math.inf  # finish()'s rule
        result.status = judge_status(proved, result.tol, "user_limit")
    return result


def _solve_listwise(problem, solver, tol, warm_start, verbose, options):
    """``solve`` for the listwise problem (3): Newton (the default of ``"auto"``) or an exponential-cone solver."""
    if isinstance(solver, (list, tuple)) or str(solver).lower() == "fallback":
        raise ValidationError("chains of solvers and the fallback policy are for the pairwise problems; solve the "
                              f"listwise problem with one of {', '.join(available_solvers('listwise'))}")
    name = "newton" if str(solver).lower() == "auto" else str(solver).lower()
    spec = get_spec(name)
    able = available_solvers("listwise")
    if not spec.solves("listwise"):
        raise SolverNotAvailableError(f"{spec.name} does not solve the listwise problem (3); solvers that can: "
                                      f"{', '.join(able)}")
    if not spec.installed():
        raise SolverNotAvailableError(f"{spec.name} is supported but not installed (pip install {spec.package}); "
                                      f"installed: {', '.join(able)}")
    tol = _check_call(spec, tol, options)
    options = _work_limited(spec, options, "listwise")
    if spec.kind == "native":
        if warm_start is True:
            raise ValidationError(f"warm_start for {spec.name} is a starting w (an array of n_features numbers)")
        start = None if warm_start is None or warm_start is False else np.asarray(warm_start, dtype=np.float64)
    else:
        if warm_start not in (None, False, True):
            raise ValidationError(f"warm_start for the CVXPY solver {spec.name!r} is True or False")
        start = bool(warm_start)
    return _report_limit(problem.solve_with(spec.name, tol=tol, verbose=verbose, warm_start=start, **options),
                         spec, options)


def _start_options(spec: SolverSpec, warm_start) -> tuple[bool, dict]:
    """``warm_start`` as the solver's own start: ``(CVXPY's warm_start flag, options)``."""
    if warm_start is None or warm_start is False:
        return False, {}
    if spec.kind == "cvxpy":
        if warm_start is True:
            return True, {}
        raise ValidationError(f"warm_start for the CVXPY solver {spec.name!r} is True or False (a re-solve of a "
                              "compiled Formulation starts from its last solution); a starting w is for the "
                              "native solvers that take one: " + ", ".join(
                                  s.name for s in SOLVERS.values() if s.start_option))
    if spec.start_option is None:
        raise ValidationError(f"{spec.name} takes no starting point; warm_start is for "
                              + ", ".join(s.name for s in SOLVERS.values() if s.start_option)
                              + " (a w) and the CVXPY solvers (True)")
    if warm_start is True:
        raise ValidationError(f"warm_start for {spec.name} is a starting w (an array of n_features numbers), "
                              "e.g. the solution for a nearby lambda")
    return False, {spec.start_option: check_vector("warm_start", warm_start)}


def solve(problem, solver: str = "auto", *, tol: float | None = None, formulation: str = "auto",
          warm_start=None, verbose: bool = False, **options) -> SolveResult:
    """Solve a ranking problem with any solver and certify the solution: the one door.

    Every solver of cvxrank, CVXPY's and the native ones, is reached here and nowhere else, and
    every one returns a :class:`~cvxrank.solution.SolveResult` with its objective ``L(w)`` of (9)
    (one scale whatever was solved) and its :class:`~cvxrank.solution.Certificate`.

    Parameters
    ----------
    problem : RankingProblem, Formulation or ListwiseProblem
        The problem (documents or pairs, one :class:`~cvxrank.costs.Costs`, ``λ``, a
        :class:`~cvxrank.variants.Variant`), or a formulation compiled from one
        (:func:`cvxrank.build`). A CVXPY solver given a problem compiles it with
        ``formulation``; a native solver reads the problem directly. The listwise
        problem (3) (:class:`~cvxrank.listwise.problem.ListwiseProblem`) goes to
        ``"newton"`` (the ``"auto"`` choice) or an exponential-cone solver
        (``clarabel``, ``ecos``, ``scs``), and comes back as a
        :class:`~cvxrank.listwise.result.ListwiseResult`, the SolveResult of (3) (its
        certificate: the gradient of the 1-strongly convex objective).
    solver : str or sequence of str, default "auto"
        A name from :func:`available_solvers` (case-insensitive), a chain of names (tried in
        order, the first certified solution is returned), or a policy:
        ``"auto"`` (:func:`~cvxrank.solvers.registry.choose_solver`: the pair-free native
        solver for problems of 50,000 pairs or more given as documents, else ``clarabel``) or
        ``"fallback"`` (the solvers of :data:`FALLBACK_CHAIN` in order, the first certified
        solution; ``options`` then maps solver names to their options).
    tol : float, optional
        Relative duality-gap tolerance in [1e-15, 1) (no gap below a few float64 epsilons can be certified): a solution is ``"optimal"`` only if its
        certified relative gap is at most ``tol``; native solvers stop there. Default: the
        solver's own (:attr:`SolverSpec.default_tol`: 1e-6; 1e-4 for ``subgradient``; 1e-8
        for ``newton``).
    formulation : str, default "auto"
        With a problem and a CVXPY solver: which formulation to compile (:func:`cvxrank.build`).
        Ignored for a Formulation and for native solvers.
    warm_start : bool or array-like, optional
        The solver's own start: ``True`` for a CVXPY solver re-solving a compiled Formulation
        after a parameter change; a starting ``w`` for the native solvers that take one
        (``cutting_plane``, ``truncated_newton``). Refused where the solver has no such start.
    verbose : bool, default False
        Let the solver report its progress on stdout (a CVXPY solver's own log; a line per
        certificate check of the native solvers).
    **options
        The solver's own options, checked by name (:func:`solver_options`) and, for the known
        numeric ones, by value (:data:`~cvxrank.solvers.registry.OPTION_RANGES`): CVXPY solvers'
        settings (over the registry's defaults, e.g. ``max_iter`` for OSQP, ``max_iters`` for
        ECOS), native solvers' keyword arguments (``max_iter``, ``time_limit``, ...). Without an
        iteration cap, the solver gets the registry's work limit under its own option name
        (:meth:`SolverSpec.work_options`: Clarabel and ECOS 100 iterations, OSQP 100,000, SCS
        10,000, ``cutting_plane`` 3,000 oracle calls, ...): every run ends.

    Returns
    -------
    SolveResult
        ``objective`` is ``L(w)``; ``qp_objective`` is ``M(w)``; the certificate's gap on both
        scales and the distance bound ``‖w − w*‖ ≤ sqrt(2 gap_M)``. A run its cap stopped short
        of ``tol`` has status ``"user_limit"``; ``extras["work_limit"]`` and
        ``extras["work_limit_option"]`` record the cap it had.

    Raises
    ------
    SolverNotAvailableError
        For an unknown or uninstalled solver (the message lists the installed ones), a CVXPY
        solver that cannot take a QP (LP- or MILP-only, the message says so), or one that does
        not solve the problem's variant (the message names the solvers that do).
    ValidationError
        For a ``tol`` outside [1e-15, 1), an option the solver does not take (the message lists
        the valid ones), an option value out of its range (the message names the option, the
        solver and the range) or a ``warm_start`` it cannot use.
    SolverError
        When the solver fails; the message suggests another.

    Examples
    --------
    >>> import cvxrank as cr
    >>> problem = cr.RankingProblem(cr.make_ranking(n_queries=4, random_state=0), mu="balanced", lam=0.1)
    >>> a, b = cr.solve(problem, "clarabel"), cr.solve(problem, "cutting_plane")
    >>> a.status, b.status, bool(abs(a.w - b.w).max() <= a.distance_bound + b.distance_bound)
    ('optimal', 'optimal', True)
    >>> bool(abs(a.objective - b.objective) <= max(a.gap_L, b.gap_L))  # one scale: L(w) of (9)
    True
    """
    if getattr(problem, "kind", None) == "listwise":
        return _solve_listwise(problem, solver, tol, warm_start, verbose, options)
    if isinstance(problem, Formulation):
        form, ranking = problem, problem.ranking
    elif isinstance(problem, RankingProblem):
        form, ranking = None, problem
    else:
        raise ValidationError(f"solve takes a RankingProblem, a Formulation or a ListwiseProblem, got "
                              f"{type(problem).__name__}")
    chain = (solver if isinstance(solver, (list, tuple))
             else FALLBACK_CHAIN if str(solver).lower() == "fallback" else None)
    if chain is not None:
        check_feature_scale(ranking.data.X)  # once, not once per solver of the chain
        if warm_start not in (None, False, True):
            raise ValidationError("warm_start with a chain of solvers is True or False")
        check_names(options, [*SOLVERS, *installed_cvxpy_solvers()],
                    "a chain of solvers (its options are one dict per solver name)")
        check_names(options, [str(s).lower() for s in chain], "this chain of solvers (options for a solver not in it)")
        for each, given in options.items():
            valid = solver_options(each)
            if not isinstance(given, dict):
                raise ValidationError(f"the options of {each!r} in a chain are a dict, got {type(given).__name__}")
            if valid is not None:
                check_names(given, valid, f"the solver {each!r}")
            check_option_values(get_spec(each), given)
        # The problem itself: each CVXPY attempt compiles it, a native one reads it (pair-free where it can).
        return run_chain(form if form is not None else ranking, chain, tol=None if tol is None else check_tol(tol),
                         options=options, warm_start=bool(warm_start), verbose=verbose, formulation=formulation)
    name = str(solver).lower()
    if name == "auto":
        name = "clarabel" if form is not None else choose_solver(ranking, formulation)
    spec = get_spec(name)
    if not spec.solves("pairwise"):
        raise SolverNotAvailableError(f"{spec.name} solves {' and '.join(spec.problems)} problems, not a pairwise "
                                      f"ranking problem; solvers that can: {', '.join(available_solvers())}")
    tol = _check_call(spec, tol, options)
    cvxpy_warm, start = _start_options(spec, warm_start)
    options = {**_work_limited(spec, options), **start}
    if form is not None and spec.kind == "native" and any(form.edits()):
        raise SolverNotAvailableError(
            f"the solver {spec.name!r} reads the ranking problem, not the CVXPY problem of this formulation, which "
            "carries constraints or terms added to it: solve it with a CVXPY solver "
            f"({', '.join(installed_cvxpy_solvers())})")
    if not spec.accepts(ranking.variant):
        able = [s for s in available_solvers() if get_spec(s).accepts(ranking.variant)  # (and takes groups)
                and (ranking.groups is None or not get_spec(s).pairfree or s in ranking._pairfree_solvers())]
        blocking = [] if ranking.variant.loss in spec.losses else [f"loss={ranking.variant.loss!r}"]
        if spec.extensions is not None:
            blocking += sorted(ranking.variant.extensions - spec.extensions)
        what = ("the papers' problem (hinge loss)" if ranking.variant.is_default
                else f"the variant: it does not take {', '.join(blocking)}")
        raise SolverNotAvailableError(f"the solver {spec.name!r} does not solve {what}; solvers that can: "
                                      f"{', '.join(able)}")
    if spec.kind == "native":  # before the solver allocates (a CVXPY formulation is checked when built)
        ranking.check_size("pairfree" if spec.pairfree else "native")
        if spec.pairfree:
            return _report_limit(NATIVE_SOLVERS[spec.name](ranking, tol=tol, verbose=verbose, **options), spec,
                                 options)
        # They step on the hinge form (9) whatever Formulation they were handed: that is what they solved.
        return _report_limit(NATIVE_SOLVERS[spec.name](ranking, tol=tol, verbose=verbose, formulation="hinge",
                                                       **options), spec, options)
    ranking.check_size("lifted" if (form.name if form is not None else formulation) == "lifted" else "cvxpy")
    if not spec.installed():
        raise SolverNotAvailableError(
            f"{spec.name} is supported but not installed (pip install {spec.package}); "
            f"installed: {', '.join(available_solvers())}"
        )
    if form is None:
        form = build(ranking, formulation=formulation)
    return _report_limit(solve_cvxpy(form, spec.name, tol=tol, warm_start=cvxpy_warm, verbose=verbose, **options),
                         spec, options)
