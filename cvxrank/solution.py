"""The solution every solver returns: ``w``, its certificate, on stated scales.

A :class:`SolveResult` states the objective on both scales of Theorem 1 (SIGIR
2006): ``L(w)`` of the hinge problem (9) and ``M(w)`` of the QP (14), with
``L = 2λ M``; the duality gap on each; and the distance bound the gap proves,

.. math:: \\|w - w^*\\| \\le \\sqrt{2\\, G_M},

because ``M`` is 1-strongly convex in ``w`` (``½‖w − w*‖² ≤ M(w) − M(w*) ≤ G_M``).
:func:`finish` is what every backend calls once it has a ``w``: it certifies
``w`` and judges the status from the certificate, never from the backend's word.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np

from cvxrank.certificate import certify
from cvxrank.exceptions import InaccurateSolutionWarning, ValidationError
from cvxrank.problem import RankingProblem

__all__ = ["CERTIFY_HEADROOM", "SCALES", "SolveResult", "finish", "infeasible"]

#: The certificate of every solve stops refining its dual point once it proves a relative gap of
#: ``tol x CERTIFY_HEADROOM``, that is, once it proves the status. A solver's own constraint duals
#: usually do at once; when they do not, the reduced-dual refinement (L-BFGS-B over bands of pairs)
#: runs, and refining beyond ``tol`` cost more than the solve itself (ECOS on the dual form of the
#: LightGBM training file: 10.1 s of certificate after an 8.7 s solve, for a gap of 3.4e-9 where
#: 1e-6 was asked). :func:`~cvxrank.certificate.certify` without ``target`` gives the tightest gap
#: it can prove.
CERTIFY_HEADROOM = 1.0

#: The two objective scales: the formulation's own objective is on one of them.
SCALES = {"L": "hinge problem (9)", "M": "QP (14)"}


@dataclass(eq=False)
class SolveResult:
    """A solution with the certificate that proves (or disproves) it.

    Attributes
    ----------
    w : ndarray of shape (n_features,)
        The weight vector; the ranking function is ``f(x) = <w, x>``.
    status : str
        CVXPY's vocabulary: ``"optimal"`` only when the certificate proves a
        relative gap within ``tol``; ``"optimal_inaccurate"`` when it proves
        less; ``"user_limit"`` when the solver hit an iteration or time cap first.
    scale : {"M", "L"}
        The scale of the formulation that was solved: ``"M"`` for the QP forms
        (``primal``, ``lifted``, ``dual``), ``"L"`` for the hinge form and the
        native solvers. ``objective``, ``dual_objective`` and ``duality_gap``
        are on this scale; the attributes below state both.
    objective, dual_objective, duality_gap : float
        On ``scale``: the objective at ``w`` (recomputed in numpy, not the
        backend's number), a certified lower bound on the optimum, and their difference.
    relative_gap : float
        ``duality_gap / objective``; the same on both scales.
    hinge_objective, qp_objective : float
        ``L(w)`` of (9) and ``M(w)`` of (14); ``L = 2λ M``.
    gap_L, gap_M : float
        The certified duality gap on each scale (``gap_L = 2λ gap_M``): upper
        bounds on ``L(w) − L(w*)`` and ``M(w) − M(w*)``.
    distance_bound : float
        ``sqrt(2 (gap_M + r))``: a proved bound on ``‖w − w*‖``, with ``r`` the float64
        rounding of ``M`` and the dual value (``64 ε`` times their magnitudes).
    certificate : str
        What proves the gap: ``"duality gap"`` (a feasible point of the dual
        (18)-(19)) or ``"cutting-plane bound"`` (the dual of the native
        solver's plane model, a lower bound on ``L(w*)``).
    stages : tuple of str
        The algorithms that produced ``w``, in order (e.g. ``("subgradient",)``
        or ``("subgradient", "polish")``).
    alpha : ndarray of shape (n_pairs,) or None
        The certificate's dual point, ``0 ≤ α ≤ C`` (None when the solver
        certified without forming pairs).
    solver, solver_version, formulation : str
    solver_status : str
        The backend's own status string.
    solver_objective : float
        The backend's own optimal value for its formulation (nan for native solvers).
    iterations : int or None
    setup_time, solve_time, certify_time : float
        Seconds: CVXPY compilation (0 for native solvers), the solver run, and
        the certificate computed afterwards (0 when the solver's own bound proved ``tol``).
    primal_residual : float
        Largest violation of the backend's own constraints (0 for native solvers).
    dual_residual : float
        ``‖w - Dᵀα‖ / max(1, ‖w‖)``, the stationarity residual of (16).
    lam : float
        ``λ`` of the problem.
    tol : float
        The relative-gap tolerance the status was judged against.
    extras : dict
        Raw backend statistics.
    history : pandas.DataFrame or None
        Native solvers: iteration, objective, dual objective and relative gap
        at each certificate check.
    """

    w: np.ndarray
    status: str
    scale: str
    objective: float
    dual_objective: float
    duality_gap: float
    relative_gap: float
    hinge_objective: float
    qp_objective: float
    gap_L: float
    gap_M: float
    distance_bound: float
    certificate: str
    stages: tuple
    alpha: np.ndarray | None
    solver: str
    solver_version: str
    formulation: str
    solver_status: str
    solver_objective: float
    iterations: int | None
    setup_time: float
    solve_time: float
    certify_time: float
    primal_residual: float
    dual_residual: float
    lam: float
    tol: float
    extras: dict = field(default_factory=dict, repr=False)
    history: object = field(default=None, repr=False)

    @property
    def found(self) -> bool:
        """True when the status is ``"optimal"`` (the certificate passed)."""
        return self.status == "optimal"

    @property
    def time(self) -> float:
        """Total seconds: setup, solve and certificate."""
        return self.setup_time + self.solve_time + self.certify_time

    def summary(self) -> dict:
        """Scalar diagnostics as a plain dict (JSON-friendly)."""
        return {
            "formulation": self.formulation,
            "solver": self.solver,
            "solver_version": self.solver_version,
            "status": self.status,
            "solver_status": self.solver_status,
            "scale": self.scale,
            "objective": self.objective,
            "dual_objective": self.dual_objective,
            "duality_gap": self.duality_gap,
            "relative_gap": self.relative_gap,
            "hinge_objective": self.hinge_objective,
            "qp_objective": self.qp_objective,
            "gap_L": self.gap_L,
            "gap_M": self.gap_M,
            "distance_bound": self.distance_bound,
            "certificate": self.certificate,
            "stages": "+".join(self.stages),
            "primal_residual": self.primal_residual,
            "dual_residual": self.dual_residual,
            "iterations": self.iterations,
            "setup_time": self.setup_time,
            "solve_time": self.solve_time,
            "certify_time": self.certify_time,
        }

    def __repr__(self) -> str:
        return (
            f"SolveResult(status={self.status!r}, solver={self.solver!r}, formulation={self.formulation!r}, "
            f"objective={self.objective:.10g} ({self.scale}), relative_gap={self.relative_gap:.2e}, "
            f"distance_bound={self.distance_bound:.2e}, iterations={self.iterations}, time={self.time:.3g}s)"
        )


def _distance_bound(M: float, gap_M: float) -> float:
    """``sqrt(2 (gap_M + r))``: ``r = 64 ε (|M| + |M − gap_M|)`` covers the float64 rounding of the two sums,
    so a gap computed as 0 (or a hair below) still proves only what rounding allows."""
    if not math.isfinite(gap_M):
        return math.inf
    rounding = 64.0 * np.finfo(np.float64).eps * (abs(M) + abs(M - gap_M))
    return math.sqrt(2.0 * (max(gap_M, 0.0) + rounding))


def finish(problem: RankingProblem, w, *, formulation: str, scale: str, backend_status: str, solver: str,
           version: str, tol: float, alphas=(), lower_bound: float | None = None, objective_L: float | None = None,
           iterations=None, setup_time=0.0, solve_time=0.0, solver_objective=float("nan"), primal_residual=0.0,
           extras=None, history=None, stages=None, bound_name: str = "cutting-plane bound",
           affine=()) -> SolveResult:
    """Certify ``w`` for ``problem`` and build the :class:`SolveResult`.

    Parameters
    ----------
    problem : RankingProblem
        Fixes both scales: ``L`` with the problem's weights and ``λ``, ``M``
        with ``C = weights / (2λ)``.
    w : array-like of shape (n_features,)
    formulation : str
        Name of what was solved (``"primal"``, ``"lifted"``, ``"dual"``,
        ``"hinge"``, ``"pairfree"``).
    scale : {"M", "L"}
        The scale of that formulation's objective.
    backend_status : str
        ``"optimal"``, ``"optimal_inaccurate"`` or ``"user_limit"`` (the
        solver's own verdict; the certificate decides the status).
    alphas : iterable of ndarray
        Dual candidates for the certificate (a solver's constraint duals).
    lower_bound : float, optional
        A lower bound on ``L(w*)`` that the solver proved itself (the native
        cutting plane's model dual). When ``L(w) − lower_bound`` proves
        ``tol``, no other certificate is computed; otherwise the pairwise
        certificate (:func:`~cvxrank.certificate.certify`) is tried too, if
        the pairs exist, and the better bound is kept.
    objective_L : float, optional
        ``L(w)`` as the solver computed it without pairs (pair-free solvers);
        default: recomputed from the pairs.

    Notes
    -----
    The status is ``"optimal"`` when the backend reached optimality or a cap
    and the certified relative gap is at most ``tol``; ``"user_limit"`` when
    the backend stopped at a cap without meeting ``tol``; otherwise
    ``"optimal_inaccurate"``. Anything short of ``"optimal"`` warns with
    :class:`~cvxrank.exceptions.InaccurateSolutionWarning`. The pairwise
    certificate stops refining once it proves ``tol`` (:data:`CERTIFY_HEADROOM`).
    """
    import time

    start = time.perf_counter()
    if scale not in SCALES:
        raise ValidationError(f"scale must be one of {sorted(SCALES)}, got {scale!r}")
    w = np.asarray(w, dtype=np.float64).ravel()
    lam = problem.lam
    if not problem.variant.is_default:  # a solver's w may sit a rounding error outside the bounds
        w = np.clip(w, *problem.variant.bounds(w.size))
    L = float(objective_L) if objective_L is not None else problem.hinge_objective(w)
    M = problem.qp_objective(w) if problem.has_pairs else L / (2.0 * lam)
    gap_L, kind, alpha, dual_residual = math.inf, "none", None, math.nan
    if lower_bound is not None:
        gap_L, kind = L - float(lower_bound), bound_name
        if extras is not None and "dual_residual" in extras:
            dual_residual = float(extras["dual_residual"])
    if not problem.variant.is_default and (lower_bound is None or (problem.has_pairs and not gap_L <= tol * L)):
        # A variant's own dual (cvxrank.variants): the solver's duals and the optimality conditions' point
        # (a pair-free solver's own bound is kept when it proves tol or the pairs do not exist).
        from cvxrank.variants import variant_certificate

        M_v, dual_M, alpha_v = variant_certificate(problem.variant, problem.pairs, problem.C, lam, w, alphas,
                                                   affine)
        if 2.0 * lam * (M_v - dual_M) < gap_L:
            M, L, alpha = M_v, 2.0 * lam * M_v, alpha_v
            gap_L = 2.0 * lam * (M_v - dual_M)
            kind = ("Lagrangian dual (user constraints; for points as feasible as w)" if problem.variant.constraints
                    else "duality gap (variant's dual)")
            w_dual = problem.variant.primal_from_dual(problem.pairs, alpha, lam)
            dual_residual = float(np.linalg.norm(w - w_dual) / max(1.0, float(np.linalg.norm(w))))
    elif not gap_L <= tol * L and problem.has_pairs:
        cert = certify(problem.pairs, problem.C, w, alphas, target=tol * CERTIFY_HEADROOM)
        if 2.0 * lam * cert.gap < gap_L:
            gap_L, kind, alpha, dual_residual = 2.0 * lam * cert.gap, "duality gap", cert.alpha, cert.dual_residual
    gap_M = gap_L / (2.0 * lam)
    rel = gap_L / L if L > 0 else (0.0 if gap_L == 0 else math.inf)
    if rel <= tol and backend_status in ("optimal", "optimal_inaccurate", "user_limit"):
        status = "optimal"
    elif backend_status == "user_limit":
        status = "user_limit"
    else:
        status = "optimal_inaccurate"
    if status != "optimal":
        warnings.warn(
            f"{solver} on the {formulation} formulation: certified relative gap {rel:.2e} > tol {tol:.0e} "
            f"(solver status {backend_status!r}); tighten the solver's tolerances, raise max_iter, "
            "or try another solver (cvxrank.available_solvers())",
            InaccurateSolutionWarning,
            stacklevel=3,
        )
    objective, gap = (M, gap_M) if scale == "M" else (L, gap_L)
    return SolveResult(
        w=w, status=status, scale=scale, objective=objective, dual_objective=objective - gap, duality_gap=gap,
        relative_gap=rel, hinge_objective=L, qp_objective=M, gap_L=gap_L, gap_M=gap_M,
        distance_bound=_distance_bound(M, gap_M), certificate=kind,
        stages=tuple(stages) if stages else (solver,), alpha=alpha, solver=solver, solver_version=version,
        formulation=formulation, solver_status=backend_status, solver_objective=float(solver_objective),
        iterations=iterations, setup_time=float(setup_time), solve_time=float(solve_time),
        certify_time=time.perf_counter() - start, primal_residual=float(primal_residual),
        dual_residual=dual_residual, lam=lam, tol=tol, extras=extras or {}, history=history,
    )


def infeasible(problem: RankingProblem, *, formulation: str, scale: str, solver: str, version: str, tol: float,
               solver_status: str, setup_time=0.0, solve_time=0.0, extras=None) -> SolveResult:
    """The result of a problem whose own constraints admit no ``w``: status ``"infeasible"``, no ``w``.

    Only a variant's user constraints can make the problem infeasible (the papers' problem always
    has solutions); ``w`` and every objective are NaN, so nothing downstream mistakes it for a solution.
    """
    nan = math.nan
    return SolveResult(
        w=np.full(problem.n_features, nan), status="infeasible", scale=scale, objective=nan, dual_objective=nan,
        duality_gap=nan, relative_gap=nan, hinge_objective=nan, qp_objective=nan, gap_L=nan, gap_M=nan,
        distance_bound=math.inf, certificate="none", stages=(solver,), alpha=None, solver=solver,
        solver_version=version, formulation=formulation, solver_status=solver_status, solver_objective=nan,
        iterations=None, setup_time=float(setup_time), solve_time=float(solve_time), certify_time=0.0,
        primal_residual=nan, dual_residual=nan, lam=problem.lam, tol=tol, extras=extras or {},
    )
