"""A chain of solvers: when one fails or its certificate does not pass, try the next.

A solver can return a wrong answer that looks right: ADMM solvers lose
accuracy, or report a wrong objective or status, when the objective is
scaled by a large factor (CVXPY issue #1489), which is exactly what the
``C = 1/(2λ)`` of a small ``λ`` does (OSQP then calls the primal QP
"unbounded" at ``λ ≤ 1e-4``, docs/reliability.md). cvxrank's certificate catches this
(:func:`cvxrank.solvers.certify`: the duality gap recomputed from ``w``), and
``cvxrank.solve(problem, "fallback")`` acts on it (:func:`run_chain`): it tries the solvers of a chain in
order and returns the first solution whose status is ``"optimal"``, that is,
whose certified relative gap is within ``tol``.

The default chain, :data:`FALLBACK_CHAIN`, orders the solvers by how
reliably they certify these problems: the interior-point solvers first
(``clarabel``, ``ecos``), then the first-order ones (``scs``, ``osqp``),
then the native pair-free ``cutting_plane`` solver, which needs no CVXPY
compilation and stops on its own certificate (it refuses explicit pairs and
per-pair weights, and the chain moves on). Solvers that are not installed are
skipped.
"""

from __future__ import annotations

import math
import time
import warnings

from cvxrank.exceptions import (
    CvxrankError,
    InaccurateSolutionWarning,
    SolverError,
    SolverNotAvailableError,
)
from cvxrank.solution import SolveResult
from cvxrank.solvers.registry import SOLVERS, fallback_chain

__all__ = ["FALLBACK_CHAIN", "run_chain", "solve_with_fallback"]

#: The documented default order of ``solve(problem, "fallback")``, read off the solver registry
#: (:data:`cvxrank.solvers.registry.SOLVERS`, field ``fallback``).
FALLBACK_CHAIN = fallback_chain()


def _name(problem) -> str:
    name = getattr(problem, "name", None)
    return f"{name} formulation" if name else "ranking problem"


def _chain(solvers) -> list[str]:
    if solvers is None:
        return list(FALLBACK_CHAIN)
    if isinstance(solvers, str):  # one solver first, then the default chain
        names = [solvers] + list(FALLBACK_CHAIN)
    else:
        names = list(solvers)
    if not names:
        raise SolverNotAvailableError("a chain of solvers needs at least one solver")
    out = []
    for name in (str(s).lower() for s in names):
        if name not in out:
            out.append(name)
    return out


def solve_with_fallback(problem, solvers=FALLBACK_CHAIN, *, tol: float = 1e-6,
                        options: dict | None = None, warm_start: bool = False,
                        verbose: bool = False) -> SolveResult:
    """Deprecated: ``cvxrank.solve(problem, "fallback")`` or ``cvxrank.solve(problem, [name, ...])``."""
    warnings.warn("solve_with_fallback is deprecated: use cvxrank.solve(problem, 'fallback') or "
                  "cvxrank.solve(problem, [solver, ...]), the one door to every solver", DeprecationWarning,
                  stacklevel=2)
    return run_chain(problem, solvers, tol=tol, options=options, warm_start=warm_start, verbose=verbose)


def run_chain(problem, solvers=FALLBACK_CHAIN, *, tol: float | None = None, options: dict | None = None,
              warm_start: bool = False, verbose: bool = False, formulation: str = "auto") -> SolveResult:
    """Solve with the first solver of a chain whose solution passes the certificate.

    What ``cvxrank.solve(problem, "fallback")`` (the default chain) and
    ``cvxrank.solve(problem, [name, ...])`` run.

    Each solver runs through :func:`cvxrank.solve`. A solver that raises a
    cvxrank error (:class:`~cvxrank.exceptions.SolverError`, or a
    :class:`~cvxrank.exceptions.ValidationError` such as the pair-free
    solver refusing per-pair weights), or whose status is not
    ``"optimal"``, hands over to the next one. Solvers of the chain that are
    not installed are skipped.

    Parameters
    ----------
    problem : RankingProblem or Formulation
        As for :func:`cvxrank.solve`.
    solvers : sequence of str or str, default :data:`FALLBACK_CHAIN`
        The chain, in order. A single name means that solver first, then
        :data:`FALLBACK_CHAIN`.
    tol : float, optional
        Certified relative duality gap required for ``"optimal"``; default: each solver's own
        (:attr:`~cvxrank.solvers.registry.SolverSpec.default_tol`).
    options : dict of str to dict, optional
        Options per solver, e.g. ``{"osqp": {"max_iter": 1000}}``.
    warm_start, verbose : bool
        Passed to :func:`cvxrank.solve`.
    formulation : str, default "auto"
        The formulation a CVXPY solver compiles a RankingProblem into; native solvers read the
        problem itself (pair-free where they can).

    Returns
    -------
    SolveResult
        The first ``"optimal"`` result; if no solver certifies, the one with
        the smallest certified relative gap, with its honest status and an
        :class:`~cvxrank.exceptions.InaccurateSolutionWarning`.
        ``extras["attempts"]`` lists every attempt in order as dicts with
        ``solver``, ``status`` (``"error"`` or ``"not installed"`` when it did
        not run), ``relative_gap``, ``time`` and ``message``.

    Raises
    ------
    SolverNotAvailableError
        For a name that is no solver at all, or when no solver of the chain is installed.
    SolverError
        When every installed solver of the chain failed; the message lists the attempts.

    Examples
    --------
    >>> from cvxrank import RankingProblem, make_ranking, solve
    >>> problem = RankingProblem(make_ranking(n_queries=3, random_state=0))
    >>> result = solve(problem, ["osqp", "clarabel"])
    >>> result.status, [a["solver"] for a in result.extras["attempts"]][0]
    ('optimal', 'osqp')
    """
    from cvxrank.solvers import available_solvers, solve
    from cvxrank.solvers.cvxpy_backend import installed_cvxpy_solvers

    names = _chain(solvers)
    known = {*SOLVERS, *installed_cvxpy_solvers()}  # the registry's and any other CVXPY solver installed
    unknown = [s for s in names if s not in known]
    if unknown:
        raise SolverNotAvailableError(f"unknown solver(s) {unknown} in the fallback chain; installed: "
                                      f"{', '.join(available_solvers())}")
    options = dict(options or {})
    installed = set(available_solvers())
    attempts, results = [], []
    for name in names:
        if name not in installed:
            attempts.append({"solver": name, "status": "not installed", "relative_gap": math.nan, "time": 0.0,
                             "message": f"pip install {SOLVERS[name].package}"})
            continue
        start = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", InaccurateSolutionWarning)  # judged below, warned once
                result = solve(problem, name, tol=tol, formulation=formulation, warm_start=warm_start,
                               verbose=verbose, **options.get(name, {}))
        except CvxrankError as exc:
            attempts.append({"solver": name, "status": "error", "relative_gap": math.nan,
                             "time": time.perf_counter() - start, "message": " ".join(str(exc).split())})
            continue
        attempts.append({"solver": name, "status": result.status, "relative_gap": float(result.relative_gap),
                         "time": time.perf_counter() - start, "message": ""})
        results.append(result)
        if result.status == "optimal":
            result.extras["attempts"] = attempts
            return result
    tried = "; ".join(f"{a['solver']}: {a['status']}" + (f" ({a['message']})" if a["message"] else "")
                      + (f", relative gap {a['relative_gap']:.1e}" if not math.isnan(a["relative_gap"]) else "")
                      for a in attempts)
    if not results:
        if all(a["status"] == "not installed" for a in attempts):
            raise SolverNotAvailableError(f"no solver of the fallback chain is installed ({tried}); installed: "
                                          f"{', '.join(available_solvers())}")
        raise SolverError(f"every solver of the fallback chain failed on the {_name(problem)}: {tried}")
    best = min(results, key=lambda r: r.relative_gap if not math.isnan(r.relative_gap) else math.inf)
    best.extras["attempts"] = attempts
    wanted = "its own tolerance" if tol is None else f"a relative gap <= {tol:.0e}"
    warnings.warn(
        f"no solver of the fallback chain certified {wanted} on the {_name(problem)}; returning "
        f"{best.solver}'s solution (status {best.status!r}). Attempts: {tried}",
        InaccurateSolutionWarning, stacklevel=2,
    )
    return best
