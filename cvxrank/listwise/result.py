"""The :class:`ListwiseResult` the listwise solvers return, with its optimality certificate."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from cvxrank.exceptions import InaccurateSolutionWarning
from cvxrank.solution import judge_status

__all__ = ["ListwiseResult", "certificate_bounds"]


def certificate_bounds(objective: float, gradient) -> dict:
    """Bounds that the gradient norm certifies for the 1-strongly convex objective (3).

    ``½‖w‖²`` makes (3) strongly convex with modulus 1 (the loss is convex), so
    at any ``w``, with ``g = ∇f(w)`` and the minimiser ``w*``:

    .. math::

        \\|w - w^*\\| \\le \\|g\\|, \\qquad 0 \\le f(w) - f(w^*) \\le \\tfrac12 \\|g\\|^2 .

    Parameters
    ----------
    objective : float
        ``f(w)`` (positive for (3)).
    gradient : array-like
        ``∇f(w)``.

    Returns
    -------
    dict
        ``grad_norm`` (``‖g‖``, also the bound on ``‖w − w*‖``), ``gap_bound``
        (``½‖g‖²``), ``relative_gap_bound`` (``gap_bound / f(w)``) and
        ``lower_bound`` (``f(w) − gap_bound ≤ f*``).

    Examples
    --------
    >>> certificate_bounds(4.0, [3.0, 4.0])
    {'grad_norm': 5.0, 'gap_bound': 12.5, 'relative_gap_bound': 3.125, 'lower_bound': -8.5}
    """
    g = float(np.linalg.norm(np.asarray(gradient, dtype=np.float64)))
    gap = 0.5 * g * g
    rel = gap / objective if objective > 0 else (0.0 if gap == 0 else np.inf)
    return {"grad_norm": g, "gap_bound": gap, "relative_gap_bound": float(rel), "lower_bound": objective - gap}


@dataclass(eq=False)
class ListwiseResult:
    """A solution of the listwise problem (3) of He et al., with a certificate.

    The certificate is the gradient: (3) is 1-strongly convex, so
    ``‖w − w*‖ ≤ ‖∇f(w)‖`` and ``f(w) − f* ≤ ½‖∇f(w)‖²``
    (:func:`certificate_bounds`). Everything is recomputed in numpy from ``w``.

    Attributes
    ----------
    w : ndarray of shape (n_features,)
        The weight vector; scores are ``X w``.
    status : str
        ``"optimal"`` iff the certified relative gap ``½‖∇f(w)‖² / f(w)`` is at
        most ``tol``; otherwise ``"user_limit"`` (Newton hit ``max_iter``) or
        ``"optimal_inaccurate"`` (the solver stopped, the certificate is weaker).
    objective : float
        ``f(w) = ½‖w‖² + (C/m) Σ (U/V) ℓ_ij(w)``.
    loss : float
        ``Σ (U/V) ℓ_ij(w)``, the data term without ``C/m``.
    grad_norm : float
        ``‖∇f(w)‖``: also the bound on ``‖w − w*‖``.
    gap_bound, relative_gap_bound, lower_bound : float
        ``½‖∇f(w)‖²``, that over ``f(w)``, and ``f(w) − gap_bound ≤ f*``.
    C : float
    pcf : float or None
        ``None`` for plain ListMLE.
    tol : float
        Tolerance the status was judged against (and, for Newton, the
        ``‖dirn‖₁`` stopping tolerance of Step 5).
    solver, solver_version, solver_status : str
        ``"newton"`` or the CVXPY solver; the backend's own verdict
        (Newton: ``"converged"`` when ``‖dirn‖₁ < tol``, else ``"user_limit"``).
    iterations : int or None
    setup_time, solve_time : float
        Seconds: preparation (sorting / CVXPY compilation) and the solve.
    history : pandas.DataFrame or None
        Newton: one row per iteration (``iteration, objective, grad_norm,
        dirn_norm1, step, time``); row 0 is the starting point.
    extras : dict
        Backend details.
    """

    w: np.ndarray
    status: str
    objective: float
    loss: float
    grad_norm: float
    gap_bound: float
    relative_gap_bound: float
    lower_bound: float
    C: float
    pcf: float | None
    tol: float
    solver: str
    solver_version: str
    solver_status: str
    iterations: int | None
    setup_time: float
    solve_time: float
    history: object = field(default=None, repr=False)
    extras: dict = field(default_factory=dict, repr=False)

    @property
    def found(self) -> bool:
        """True when the status is ``"optimal"`` (the certificate passed)."""
        return self.status == "optimal"

    @property
    def relative_gap(self) -> float:
        """``relative_gap_bound`` under :class:`~cvxrank.solvers.SolveResult`'s name: a certified bound on
        ``(f(w) - f*) / f(w)``."""
        return self.relative_gap_bound

    @property
    def certificate(self) -> str:
        """What proves the gap: ``"gradient-norm bound"`` (``½‖∇f‖²`` of a 1-strongly convex ``f``),
        not a duality gap as for the pairwise problems."""
        return "gradient-norm bound"

    @property
    def method(self) -> str:
        """``"listmle"`` (``pcf=None``) or ``"cs-rglist"``."""
        return "listmle" if self.pcf is None else "cs-rglist"

    @property
    def distance_bound(self) -> float:
        """Upper bound on ``‖w − w*‖`` (equals ``grad_norm``)."""
        return self.grad_norm

    def summary(self) -> dict:
        """Scalar diagnostics as a plain dict of str/float/int/None (JSON-friendly)."""
        def num(v):
            return None if v is None else float(v)

        return {
            "method": self.method,
            "solver": self.solver,
            "solver_version": self.solver_version,
            "status": self.status,
            "solver_status": self.solver_status,
            "C": float(self.C),
            "pcf": num(self.pcf),
            "tol": float(self.tol),
            "objective": float(self.objective),
            "loss": float(self.loss),
            "grad_norm": float(self.grad_norm),
            "gap_bound": float(self.gap_bound),
            "relative_gap_bound": float(self.relative_gap_bound),
            "relative_gap": float(self.relative_gap_bound),  # the same key as SolveResult.summary()
            "certificate": self.certificate,  # ... but a gradient-norm bound, not a duality gap
            "lower_bound": float(self.lower_bound),
            "iterations": None if self.iterations is None else int(self.iterations),
            "setup_time": float(self.setup_time),
            "solve_time": float(self.solve_time),
        }

    def __repr__(self) -> str:
        return (
            f"ListwiseResult(method={self.method!r}, status={self.status!r}, solver={self.solver!r}, "
            f"objective={self.objective:.10g}, grad_norm={self.grad_norm:.2e}, "
            f"relative_gap_bound={self.relative_gap_bound:.2e} (gradient-norm bound), "
            f"iterations={self.iterations}, time={self.setup_time + self.solve_time:.3g}s)"
        )


def make_result(layout, w, *, C, tol, solver, solver_version, solver_status, iterations, setup_time, solve_time,
                history=None, extras=None) -> ListwiseResult:
    """Certify ``w`` (objective and gradient in numpy), judge the status, warn if not optimal."""
    from cvxrank.listwise.loss import listwise_loss_derivatives

    w = np.asarray(w, dtype=np.float64).ravel()
    loss, loss_grad, _ = listwise_loss_derivatives(layout, w, hessian=False)
    scale = C / layout.n_queries
    f = 0.5 * float(w @ w) + scale * loss
    g = w + scale * loss_grad
    bounds = certificate_bounds(f, g)
    status = judge_status(bounds["relative_gap_bound"], tol, solver_status)
    if status != "optimal":
        warnings.warn(
            f"{solver} on the listwise problem: certified relative gap ½‖∇f‖²/f = "
            f"{bounds['relative_gap_bound']:.2e} > tol {tol:.0e} (solver status {solver_status!r}); "
            "raise max_iter, tighten the solver's tolerances, or use solve_newton",
            InaccurateSolutionWarning,
            stacklevel=3,
        )
    return ListwiseResult(
        w=w, status=status, objective=f, loss=loss, C=C, pcf=layout.pcf, tol=tol, solver=solver,
        solver_version=solver_version, solver_status=solver_status, iterations=iterations,
        setup_time=float(setup_time), solve_time=float(solve_time), history=history, extras=extras or {},
        **bounds,
    )
