"""The :class:`ListwiseResult` the listwise solvers return: a SolveResult certified by the gradient."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from cvxrank.exceptions import InaccurateSolutionWarning
from cvxrank.solution import Certificate, SolveResult, judge_status

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


@dataclass(eq=False, kw_only=True)
class ListwiseResult(SolveResult):
    """A solution of the listwise problem (3) of He et al.: a :class:`~cvxrank.solution.SolveResult`.

    What :func:`cvxrank.solve` returns for a :class:`~cvxrank.listwise.problem.ListwiseProblem`:
    the same type, status rule (:func:`~cvxrank.solution.judge_status`) and
    :class:`~cvxrank.solution.Certificate`, on the scale of (3). The certificate is the gradient:
    (3) is 1-strongly convex, so ``‖w − w*‖ ≤ ‖∇f(w)‖`` and ``f(w) − f* ≤ ½‖∇f(w)‖²``
    (:func:`certificate_bounds`). Everything is recomputed in numpy from ``w``.

    Attributes
    ----------
    objective : float
        ``f(w) = ½‖w‖² + (C/m) Σ (U/V) ℓ_ij(w)`` of (3) (``formulation_scale`` ``"f"``).
    certificate : Certificate
        Kind ``"gradient-norm bound"``: ``gap_L`` is ``½‖∇f(w)‖²`` on the scale of (3),
        ``distance_bound`` is ``‖∇f(w)‖``; ``gap_M`` is nan (there is no QP (14)).
    qp_objective : float
        nan: the listwise problem has no QP form.
    lam : float
        ``1/(2C)``: (3) divided by ``C``.
    loss : float
        ``Σ (U/V) ℓ_ij(w)``, the data term without ``C/m``.
    grad_norm : float
        ``‖∇f(w)‖``: also the bound on ``‖w − w*‖``.
    C : float
    pcf : float or None
        ``None`` for plain ListMLE.
    tol : float
        Tolerance the status was judged against (and, for Newton, the
        ``‖dirn‖₁`` stopping tolerance of Step 5).
    solver, solver_version, solver_status : str
        ``"newton"`` or the CVXPY solver; the backend's own verdict
        (Newton: ``"converged"`` when ``‖dirn‖₁ < tol``, else ``"user_limit"``).
    history : pandas.DataFrame or None
        Newton: one row per iteration (``iteration, objective, grad_norm,
        dirn_norm1, step, time``); row 0 is the starting point.

    The other attributes are those of :class:`~cvxrank.solution.SolveResult`; ``gap_bound``,
    ``relative_gap_bound`` and ``lower_bound`` read the certificate.
    """

    loss: float
    grad_norm: float
    C: float
    pcf: float | None

    @property
    def hinge_objective(self) -> float:
        """nan: the listwise problem has no hinge objective (9); ``objective`` is ``f(w)`` of (3)."""
        return math.nan

    @property
    def gap_bound(self) -> float:
        """``½‖∇f(w)‖²``, a certified bound on ``f(w) − f*``."""
        return self.certificate.gap_L

    @property
    def relative_gap_bound(self) -> float:
        """``gap_bound / f(w)`` (the same number as ``relative_gap``)."""
        return self.certificate.relative_gap

    @property
    def method(self) -> str:
        """``"listmle"`` (``pcf=None``) or ``"cs-rglist"``."""
        return "listmle" if self.pcf is None else "cs-rglist"

    def summary(self) -> dict:
        """Scalar diagnostics as a plain dict of str/float/int/None (JSON-friendly)."""
        def num(v):
            return None if v is None else float(v)

        return {
            "method": self.method,
            "formulation": self.formulation,
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
            "relative_gap": float(self.relative_gap),
            "certificate": self.certificate.kind,
            "lower_bound": float(self.lower_bound),
            "distance_bound": float(self.distance_bound),
            "iterations": None if self.iterations is None else int(self.iterations),
            "setup_time": float(self.setup_time),
            "solve_time": float(self.solve_time),
        }

    def __repr__(self) -> str:
        return (
            f"ListwiseResult(method={self.method!r}, status={self.status!r}, solver={self.solver!r}, "
            f"objective={self.objective:.10g}, grad_norm={self.grad_norm:.2e}, "
            f"relative_gap={self.relative_gap:.2e} (gradient-norm bound), "
            f"iterations={self.iterations}, time={self.setup_time + self.solve_time:.3g}s)"
        )


def make_result(layout, w, *, C, tol, solver, solver_version, solver_status, iterations, setup_time, solve_time,
                history=None, extras=None, stacklevel=3) -> ListwiseResult:
    """Certify ``w`` (objective and gradient in numpy), judge the status, warn if not optimal."""
    import time

    from cvxrank.listwise.loss import listwise_loss_derivatives

    start = time.perf_counter()
    w = np.asarray(w, dtype=np.float64).ravel()
    loss, loss_grad, _ = listwise_loss_derivatives(layout, w, hessian=False)
    return result_from_sums(w, loss, loss_grad, n_queries=layout.n_queries, pcf=layout.pcf, C=C, tol=tol,
                            solver=solver, solver_version=solver_version, solver_status=solver_status,
                            iterations=iterations, setup_time=setup_time, solve_time=solve_time, history=history,
                            extras=extras, start=start, stacklevel=stacklevel + 1)


def result_from_sums(w, loss, loss_grad, *, n_queries, pcf, C, tol, solver, solver_version, solver_status,
                     iterations, setup_time, solve_time, history=None, extras=None, start=None,
                     stacklevel=3) -> ListwiseResult:
    """Certify ``w`` from the data term's sums ``L(w)`` and ``∇L(w)`` (over all queries, ``m = n_queries``).

    ``f = ½‖w‖² + (C/m) L`` and ``∇f = w + (C/m) ∇L`` (:func:`~cvxrank.listwise.loss.objective_from_sums`) give the
    bounds of :func:`certificate_bounds`; the status follows :func:`~cvxrank.solution.judge_status`, and a
    status other than ``"optimal"`` warns. ``start`` (a ``time.perf_counter()`` reading) begins the certification
    time (default: now).
    """
    import time

    from cvxrank.listwise.loss import objective_from_sums

    start = time.perf_counter() if start is None else start
    f, g, _ = objective_from_sums(w, loss, loss_grad, C=C, n_queries=n_queries)
    bounds = certificate_bounds(f, g)
    certificate = Certificate(kind="gradient-norm bound", gap_L=bounds["gap_bound"], gap_M=math.nan,
                              relative_gap=bounds["relative_gap_bound"], distance_bound=bounds["grad_norm"])
    status = judge_status(certificate.relative_gap, tol, solver_status)
    if status != "optimal":
        warnings.warn(
            f"{solver} on the listwise problem: certified relative gap ½‖∇f‖²/f = "
            f"{certificate.relative_gap:.2e} > tol {tol:.0e} (solver status {solver_status!r}); "
            "raise max_iter, tighten the solver's tolerances, or use the solver 'newton'",
            InaccurateSolutionWarning,
            stacklevel=stacklevel,
        )
    extras = extras or {}
    return ListwiseResult(
        w=w, status=status, objective=f, qp_objective=math.nan, certificate=certificate,
        formulation="listwise" if solver == "newton" else "exponential cone", formulation_scale="f",
        stages=(solver,), solver=solver, solver_version=solver_version, solver_status=solver_status,
        solver_objective=float(extras.get("solver_objective", math.nan)), iterations=iterations,
        setup_time=float(setup_time), solve_time=float(solve_time), certify_time=time.perf_counter() - start,
        primal_residual=0.0, lam=1.0 / (2.0 * C), tol=tol, history=history, extras=extras,
        loss=loss, grad_norm=bounds["grad_norm"], C=C, pcf=pcf,
    )
