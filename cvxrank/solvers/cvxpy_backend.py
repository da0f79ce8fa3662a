"""Solving a :class:`~cvxrank.formulations.Formulation` with any installed CVXPY solver."""

from __future__ import annotations

import math
import time
import warnings
from contextlib import contextmanager
from importlib import metadata

import cvxpy as cp
import numpy as np

from cvxrank.exceptions import SolverError
from cvxrank.formulations import Formulation
from cvxrank.native.scale import check_scale, largest_abs
from cvxrank.rounding import TINY, gamma
from cvxrank.solution import BackendReport, finish, infeasible
from cvxrank.solvers.registry import SOLVERS, get_spec

__all__ = ["installed_cvxpy_names", "installed_cvxpy_solvers", "l1_zero_threshold", "solve_cvxpy"]

_INSTALLED: frozenset | None = None


def installed_cvxpy_names() -> frozenset:
    """CVXPY's constants of the installed solvers (asked once per process)."""
    global _INSTALLED
    if _INSTALLED is None:
        _INSTALLED = frozenset(cp.installed_solvers())
    return _INSTALLED


def installed_cvxpy_solvers() -> list[str]:
    """cvxrank names of the CVXPY solvers that are installed and take a ranking problem: the registry's, in
    its order, then the others CVXPY has installed (their generic specs,
    :func:`~cvxrank.solvers.registry.generic_spec`; LP- and MILP-only solvers left out)."""
    from cvxrank.solvers.registry import unlisted_cvxpy_solvers

    listed = [s.name for s in SOLVERS.values() if s.kind == "cvxpy" and s.cvxpy_name in installed_cvxpy_names()]
    return listed + unlisted_cvxpy_solvers()


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "unknown"


def _measured(con) -> np.ndarray:
    """CVXPY's violation of ``con`` at the variables' values (CVXPY 1.9 fails on a scalar ``NonNeg``: its
    violation is then ``[−expr]_+``; a constraint CVXPY cannot measure counts as violated, ``inf``)."""
    try:
        v = con.violation()
    except (ValueError, TypeError):
        expr = getattr(con, "expr", None)
        if type(con).__name__ == "NonNeg" and expr is not None and expr.value is not None:
            return np.maximum(-np.asarray(expr.value, dtype=np.float64), 0.0).ravel()
        return np.array([np.inf])
    return np.zeros(0) if v is None else np.asarray(v, dtype=np.float64).ravel()


def _primal_residual(problem: cp.Problem) -> float:
    return max((float(np.max(_measured(con), initial=0.0)) for con in problem.constraints), default=0.0)


#: Constraint types read as ``A w + c ≤ 0`` (sign +1) or ``A w + c ≥ 0`` (sign −1, CVXPY's ``NonNeg``)
#: or ``= 0``; any other type (``PSD``, ``SOC``, ``ExpCone``, ...) is measured, not dualised.
_AFFINE_KINDS = {"Inequality": ("<=", 1.0), "NonPos": ("<=", 1.0), "NonNeg": ("<=", -1.0),
                 "Equality": ("==", 1.0), "Zero": ("==", 1.0)}


def _affine_duals(constraints, w, to_M: float) -> list:
    """``(A, c, ν, kind)`` of each affine user constraint ``A w + c ≤ 0`` / ``= 0`` with its solver dual.

    ``A`` and ``c`` are read by evaluating the constraint's expression at ``w = 0`` and at the unit
    vectors (it is affine in ``w``); CVXPY's ``NonNeg`` (``expr ≥ 0``) is turned round. A constraint
    without a dual value gets ``ν = 0`` (still a valid bound, and its violation is still measured).
    Constraints that are not affine in ``w`` are :func:`_linearised`.
    """
    out = []
    if w is None or not constraints:
        return out
    saved = w.value
    try:
        for con in constraints:
            if not _is_affine(con, w):
                continue
            kind, sign = _AFFINE_KINDS[type(con).__name__]
            expr = con.expr
            n = w.shape[0]
            w.value = np.zeros(n)
            c = np.asarray(expr.value, dtype=np.float64).ravel()
            A = np.empty((c.size, n))
            for j in range(n):
                e = np.zeros(n)
                e[j] = 1.0
                w.value = e
                A[:, j] = np.asarray(expr.value, dtype=np.float64).ravel() - c
            out.append((sign * A, sign * c, _dual(con, c.size) * to_M, kind))
    finally:
        w.value = saved
    return out


def _dual(con, size: int) -> np.ndarray:
    """The solver's dual of ``con`` as a vector (zeros when it has none)."""
    value = con.dual_value
    return np.zeros(size) if value is None else np.broadcast_to(np.asarray(value, dtype=np.float64).ravel(), size)


def _is_affine(con, w) -> bool:
    """Whether ``con`` is one of :data:`_AFFINE_KINDS` with an expression affine in ``w`` alone."""
    expr = getattr(con, "expr", None)
    return (type(con).__name__ in _AFFINE_KINDS and expr is not None and expr.is_affine()
            and all(v is w for v in expr.variables()))


def _minorant(expr, w, at: np.ndarray):
    """``(A, c)`` with ``A v + c ≤ expr(v)`` row by row for every ``v``: the linearisation of the convex
    ``expr`` (in ``w`` alone) at ``at``, ``expr(at) + J (v − at)``, with ``c`` lowered by the float64
    rounding of evaluating it (``γ_{n+8} (|expr(at)| + |J||at|)``); None without a gradient there."""
    n = w.shape[0]
    saved = w.value
    try:
        w.value = at
        value = np.asarray(expr.value, dtype=np.float64).ravel()
        grad = expr.grad.get(w)
    except (NotImplementedError, ValueError, TypeError, ZeroDivisionError, FloatingPointError):
        return None
    finally:
        w.value = saved
    if grad is None or not np.all(np.isfinite(value)):
        return None
    J = (grad.toarray() if hasattr(grad, "toarray") else np.asarray(grad, dtype=np.float64)).reshape(n, value.size).T
    if not np.all(np.isfinite(J)):
        return None
    c = value - J @ at
    slack = gamma(n + 8) * (np.abs(value) + np.abs(J) @ np.abs(at)) + 8.0 * TINY * (n + 1)
    return J, c - slack


#: Non-affine constraints read as ``g(w) ≤ 0`` with ``g`` convex: ``expr ≤ 0`` (sign +1) or ``expr ≥ 0``
#: with ``expr`` concave (sign −1).
_CONVEX_KINDS = {"Inequality": 1.0, "NonPos": 1.0, "NonNeg": -1.0}


def _linearised(constraints, w, at: np.ndarray, to_M: float) -> tuple[list, int]:
    """``(relaxed, dropped)``: each convex user constraint ``g(w) ≤ 0`` that is not affine, as the
    halfspaces of its linearisation at ``at`` (:func:`_minorant`) with the solver's dual, in the
    ``(A, c, ν, "<=")`` form of :func:`cvxrank.variants.variant_certificate`; ``dropped`` counts those
    without a gradient there (or of another kind: a cone), left out of the dual (a relaxation)."""
    relaxed, dropped = [], 0
    for con in constraints:
        if w is None or _is_affine(con, w):
            continue
        sign = _CONVEX_KINDS.get(type(con).__name__)
        expr = getattr(con, "expr", None)
        made = None if sign is None or expr is None else _minorant(sign * expr, w, at)
        if made is None:
            dropped += 1
            continue
        A, c = made
        relaxed.append((A, c, _dual(con, c.size) * to_M, "<="))
    return relaxed, dropped


def _added_terms(terms, w, at: np.ndarray, to_M: float) -> tuple[list, float]:
    """``(relaxed, value)`` of the terms the user added to the objective: each convex ``r(w)`` as its
    linearisation at ``at`` with multiplier ``to_M`` (the term on the QP scale ``M``), and ``value``,
    ``Σ r(at)`` on that scale rounded up. A term without a gradient at ``at`` cannot be bounded
    below: the certificate is then refused (``None``)."""
    relaxed, value = [], 0.0
    saved = w.value
    for term in terms:
        made = _minorant(term, w, at)
        if made is None:
            return None, math.inf
        try:
            w.value = at
            r = float(np.asarray(term.value, dtype=np.float64).ravel()[0])
        finally:
            w.value = saved
        A, c = made
        relaxed.append((A, c, np.array([to_M]), "<="))
        value += to_M * (r + gamma(w.shape[0] + 8) * abs(r))
    return relaxed, value


def _other_violation(constraints, var, w) -> float:
    """The largest violation at ``w`` of the user constraints that are not affine (a norm ball, a cone),
    as CVXPY measures it, plus a float64 margin of ``64 ε (1 + |v|)``; 0 when there are none."""
    others = [c for c in constraints if var is None or not _is_affine(c, var)]
    if not others or var is None:
        return 0.0
    saved = var.value
    try:
        var.value = np.asarray(w, dtype=np.float64)
        v = max(float(np.max(_measured(c), initial=0.0)) for c in others)
    finally:
        var.value = saved
    return v + 64.0 * np.finfo(np.float64).eps * (1.0 + abs(v)) if np.isfinite(v) else math.inf


def _user_parts(formulation: Formulation, w, to_M: float) -> dict:
    """What the certificate needs of the user's constraints and terms (the variant's and those added to
    :attr:`Formulation.problem`, :meth:`Formulation.edits`) at the solution ``w``: the fields
    ``affine``, ``relaxed``, ``added_objective``, ``dropped``, ``violation`` and ``user_parts`` of
    :class:`~cvxrank.solution.BackendReport`."""
    added, terms = formulation.edits()
    constraints = [*formulation.user_constraints, *added]
    var = formulation.w_variable
    at = np.clip(np.asarray(w, dtype=np.float64), *formulation.ranking.variant.bounds(np.size(w)))
    affine = _affine_duals(constraints, var, to_M)
    relaxed, dropped = _linearised(constraints, var, at, to_M)
    term_parts, value = _added_terms(terms, var, at, to_M) if terms else ([], 0.0)
    described = ["user constraints" if constraints else "",
                 "convex ones linearised at w" if relaxed else "",
                 f"{dropped} without a gradient at w left out: a relaxation's bound" if dropped else "",
                 ("added terms linearised at w" if term_parts is not None else "an added term has no gradient at w")
                 if terms else ""]
    return {"affine": tuple(affine), "relaxed": None if term_parts is None else tuple(relaxed + term_parts),
            "added_objective": value, "dropped": dropped, "violation": _other_violation(constraints, var, w),
            "user_parts": "; ".join(d for d in described if d)}


def l1_zero_threshold(ranking) -> float | None:
    """The ℓ1 weight from which ``w = 0`` is the exact solution of ``ranking``'s variant, or None.

    At ``w = 0`` every pair of margin ``m_i > 0`` falls short by ``m_i``, so the loss is differentiable
    there in those pairs, with gradient ``−Dᵀ g``, ``g_i = c_i ℓ'(m_i)`` (``c_i`` for the hinge,
    ``2 c_i m_i`` for the squared hinge); pairs of margin 0 may take the subgradient 0. ``w = 0``
    minimises ``L`` when ``ρ_L ≥ ‖Dᵀ g‖_∞``, whatever the bounds (they admit 0, and their normal cone
    there contains 0). None without an ℓ1 term or with user constraints (which may exclude 0).
    """
    variant = ranking.variant
    if variant.l1 == 0 or variant.constraints is not None:
        return None
    pairs = ranking.pairs
    m = variant.margins(pairs)
    g = np.where(m > 0, ranking.weights * (1.0 if variant.loss == "hinge" else 2.0 * m), 0.0)
    return float(np.max(np.abs(pairs.rmatvec(g)), initial=0.0))


def _scale_hint(ranking) -> str:
    """A hint to rescale when the numbers the solver sees are far from 1 (solvers' tolerances assume
    unit scale), for the message of a failed solve; empty otherwise."""
    s = largest_abs(ranking.data.X)
    C = float(ranking.weights.max(initial=0.0)) / (2.0 * ranking.lam)
    rho = ranking.variant.l1 / (2.0 * ranking.lam)
    if 1e-4 <= s <= 1e4 and 1e-8 <= C <= 1e8 and rho <= 1e8:
        return ""
    return (f"; its numbers are far from 1 (features up to |x| = {s:.3g}, pair costs C_i up to {C:.3g}"
            + (f", l1 / (2 lam) = {rho:.3g}" if rho > 1e8 else "")
            + "): rescale the features to about 1 and choose lam (and l1) on that scale, or try another solver")


#: ECOS's exit flag for a Ctrl-C it caught itself (``ECOS_SIGINT``).
_ECOS_SIGINT = -4


def _interrupted(solution) -> bool:
    """Whether a solver's raw result says it stopped on a Ctrl-C it caught itself: SCS and OSQP report
    the status ``"interrupted"``, ECOS the exit flag ``ECOS_SIGINT``."""
    info = solution.get("info") if isinstance(solution, dict) else getattr(solution, "info", None)
    status = info.get("status") if isinstance(info, dict) else getattr(info, "status", None)
    if isinstance(status, str) and "interrupt" in status.lower():
        return True
    return isinstance(info, dict) and info.get("exitFlag") == _ECOS_SIGINT and "infostring" in info


@contextmanager
def _watch_interrupts(const: str):
    """Record, in the list it yields, whether the CVXPY solver ``const`` was interrupted by Ctrl-C.

    SCS, OSQP and ECOS install their own SIGINT handler while they run: Python never sees the
    signal, the solver returns an "interrupted" status and CVXPY reports a solver failure. The raw
    result passes through the solver interface's ``invert`` (CVXPY keeps one instance per solver),
    which is wrapped here for the length of one solve.
    """
    from cvxpy.reductions.solvers import defines

    seen: list = []
    instances = [m[const] for m in (defines.SOLVER_MAP_CONIC, defines.SOLVER_MAP_QP) if const in m]
    for inst in instances:
        original = type(inst).invert.__get__(inst)

        def invert(solution, inverse_data, _original=original):
            if _interrupted(solution):
                seen.append(True)
            return _original(solution, inverse_data)

        inst.invert = invert
    try:
        yield seen
    finally:
        for inst in instances:
            inst.__dict__.pop("invert", None)


def solve_cvxpy(formulation: Formulation, solver: str, *, tol: float, warm_start: bool = False,
                verbose: bool = False, **options):
    """Solve with the CVXPY solver ``solver`` (a CVXPY entry of the registry) and certify.

    A problem whose scale float64 cannot hold is refused first (:mod:`cvxrank.native.scale`). A
    variant whose ℓ1 weight makes ``w = 0`` the exact solution (:func:`l1_zero_threshold`) is not
    handed to the solver (whose interior point or splitting fails on the huge weight): ``w = 0`` is
    certified instead, ``iterations`` 0 and ``extras["solver_skipped"]`` saying why.
    """
    spec = get_spec(solver)
    const, package = spec.cvxpy_name, spec.package
    merged = {**spec.defaults, **options}
    ranking = formulation.ranking
    check_scale(ranking.data.X, ranking.weights.max(initial=0.0), ranking.lam)  # before the solver sees inf/NaN
    edited = any(formulation.edits())  # checked before the solver runs: a refused edit costs no solve
    threshold = None if edited else l1_zero_threshold(ranking)
    if threshold is not None and ranking.variant.l1 >= threshold:
        report = BackendReport(
            solver=solver, version=_version(package), formulation=formulation.name, scale=formulation.scale,
            status="optimal", iterations=0, extras={"options": merged, "solver_skipped": (
                f"l1 = {ranking.variant.l1:g} >= {threshold:.6g} = ||D^T g||_inf, the gradient of the loss at "
                "w = 0: w = 0 is the exact solution")})
        return finish(ranking, np.zeros(ranking.n_features), report, tol)
    problem = formulation.problem
    start = time.perf_counter()
    try:
        with warnings.catch_warnings(), _watch_interrupts(const) as interrupted:
            # CVXPY's generic "may be inaccurate" warning; cvxrank's certificate
            # warns instead, with the certified gap (see cvxrank.solution.finish).
            warnings.filterwarnings("ignore", message="Solution may be inaccurate", category=UserWarning)
            # SCS 3.2.4 announces a format conversion CVXPY's data need ("Converting A to a CSC ... matrix")
            warnings.filterwarnings("ignore", message="Converting .* to a CSC", category=UserWarning)
            try:
                problem.solve(solver=const, warm_start=warm_start, verbose=verbose, **merged)
            finally:
                if interrupted:  # the user's Ctrl-C, caught by the solver: an interrupt, not a failure
                    raise KeyboardInterrupt
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
            f"try another solver: {', '.join(others)}{_scale_hint(ranking)}"
        ) from None
    wall = time.perf_counter() - start
    status = problem.status
    if status in (cp.INFEASIBLE, cp.INFEASIBLE_INACCURATE) and (formulation.user_constraints or edited):
        report = BackendReport(solver=solver, version=_version(package), formulation=formulation.name,
                               scale=formulation.scale, status=status, setup_time=problem.compilation_time or 0.0,
                               solve_time=wall)
        return infeasible(formulation.ranking, report, tol)
    if status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE, cp.USER_LIMIT):
        others = [s for s in installed_cvxpy_solvers() if s != solver]
        raise SolverError(
            f"{solver} returned status {status!r} on the {formulation.name} formulation, which is always "
            f"feasible and bounded; try another solver: {', '.join(others)}{_scale_hint(ranking)}"
        )
    stats = problem.solver_stats
    setup = problem.compilation_time or 0.0
    # A solver's own time when it gives a positive, finite one (PIQP reports 0); else cvxrank's wall clock.
    own = stats.solve_time is not None and np.isfinite(stats.solve_time) and stats.solve_time > 0
    solve_time = float(stats.solve_time) if own else (max(wall - setup, 0.0) or wall)
    w = formulation.recover_w()
    alpha = formulation.recover_alpha()
    to_M = 1.0 / (2.0 * formulation.ranking.lam) if formulation.scale == "L" else 1.0
    if alpha is not None:  # duals of the hinge form are on the scale of (9)
        alpha = alpha * to_M
    extras = {"solver_stats": stats, "options": merged, "wall_time": wall,
              "solve_time_source": "solver" if own else "cvxrank"}
    report = BackendReport(
        solver=solver, version=_version(package), formulation=formulation.name, scale=formulation.scale,
        status=status, alphas=(alpha,), iterations=stats.num_iters, setup_time=setup,
        solve_time=solve_time, solver_objective=problem.value, primal_residual=_primal_residual(problem),
        extras=extras, **_user_parts(formulation, w, to_M),
    )
    return finish(formulation.ranking, w, report, tol)
