"""The :class:`SolveResult` every solver returns."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["SolveResult"]


@dataclass(eq=False)
class SolveResult:
    """A solution with the diagnostics that prove (or disprove) it.

    Objective values are on the scale of the hinge problem (9) of Cao et al.
    (SIGIR 2006) with the formulation's own ``(weights, λ)``; a QP-form
    formulation with costs ``C`` counts as ``weights = C``, ``λ = 1/2``, so
    there the objective equals the QP objective ``M(w)`` of (14).

    Attributes
    ----------
    w : ndarray of shape (n_features,)
        The weight vector; the ranking function is ``f(x) = <w, x>``.
    status : str
        CVXPY's vocabulary: ``"optimal"`` only when the backend says so *and*
        the certified relative gap is within ``tol``; ``"optimal_inaccurate"``
        when the certificate is weaker; ``"user_limit"`` when a native solver
        hit its iteration cap first.
    objective : float
        ``L(w)`` of (9), recomputed from ``w`` in numpy (not the backend's number).
    dual_objective : float
        ``2λ L_D(α)`` at the certificate's dual point: a lower bound on the optimum.
    duality_gap : float
        ``objective - dual_objective``: an upper bound on ``L(w) - L(w*)``.
    relative_gap : float
        ``duality_gap / objective``.
    alpha : ndarray of shape (n_pairs,)
        The certificate's dual point, ``0 ≤ α ≤ C``.
    solver, solver_version, formulation : str
    solver_status : str
        The backend's own status string.
    solver_objective : float
        The backend's own optimal value for its formulation (nan for native solvers).
    iterations : int or None
    setup_time, solve_time : float
        Seconds: CVXPY compilation (0 for native solvers) and the solver run.
    primal_residual : float
        Largest violation of the backend's own constraints (0 for native
        solvers, whose ``w`` is feasible by construction).
    dual_residual : float
        ``‖w - Dᵀα‖ / max(1, ‖w‖)``, the stationarity residual of (16).
    lam : float
        ``λ`` of the hinge scale the objectives are reported in.
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
    objective: float
    dual_objective: float
    duality_gap: float
    relative_gap: float
    alpha: np.ndarray | None
    solver: str
    solver_version: str
    formulation: str
    solver_status: str
    solver_objective: float
    iterations: int | None
    setup_time: float
    solve_time: float
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
    def qp_objective(self) -> float:
        """``M(w) = L(w) / (2λ)``, the objective of the QP (14) with Theorem 1's ``C``."""
        return self.objective / (2.0 * self.lam)

    def summary(self) -> dict:
        """Scalar diagnostics as a plain dict (JSON-friendly)."""
        return {
            "formulation": self.formulation,
            "solver": self.solver,
            "solver_version": self.solver_version,
            "status": self.status,
            "solver_status": self.solver_status,
            "objective": self.objective,
            "dual_objective": self.dual_objective,
            "duality_gap": self.duality_gap,
            "relative_gap": self.relative_gap,
            "primal_residual": self.primal_residual,
            "dual_residual": self.dual_residual,
            "iterations": self.iterations,
            "setup_time": self.setup_time,
            "solve_time": self.solve_time,
        }

    def __repr__(self) -> str:
        return (
            f"SolveResult(status={self.status!r}, solver={self.solver!r}, formulation={self.formulation!r}, "
            f"objective={self.objective:.10g}, relative_gap={self.relative_gap:.2e}, "
            f"iterations={self.iterations}, time={self.setup_time + self.solve_time:.3g}s)"
        )
