"""What every backend does after it has a ``w``: certify it and judge its status."""

from __future__ import annotations

import warnings

import numpy as np

from cvxrank.exceptions import InaccurateSolutionWarning
from cvxrank.formulations import Formulation
from cvxrank.objectives import hinge_objective
from cvxrank.solvers.certificate import certify
from cvxrank.solvers.result import SolveResult

__all__ = ["CERTIFY_HEADROOM", "finish"]

#: The certificate of every solve stops refining its dual point once it proves a relative gap of
#: ``tol x CERTIFY_HEADROOM`` (three digits below the tolerance): a solver's own constraint duals
#: usually do, and the reduced-dual refinement (L-BFGS-B over bands of pairs) then costs more than
#: an interior-point solve of the lifted form. :func:`~cvxrank.solvers.certify` without ``target``
#: gives the tightest gap it can prove.
CERTIFY_HEADROOM = 1e-3


def finish(formulation: Formulation, w, *, alphas=(), backend_status: str, solver: str, version: str,
           tol: float, iterations=None, setup_time=0.0, solve_time=0.0, solver_objective=float("nan"),
           primal_residual=0.0, extras=None, history=None, certificate=None) -> SolveResult:
    """Certify ``w`` and build the :class:`SolveResult`.

    The status is the certificate's verdict: ``"optimal"`` when the backend
    reached optimality (``backend_status`` is ``"optimal"`` or
    ``"optimal_inaccurate"``) and the certified relative gap is at most
    ``tol``; ``"optimal_inaccurate"`` when the gap is larger; ``"user_limit"``
    when the backend stopped at a cap (``backend_status == "user_limit"``)
    without meeting ``tol``. Anything short of ``"optimal"`` warns with
    :class:`~cvxrank.exceptions.InaccurateSolutionWarning`. The certificate
    stops refining at a relative gap of ``tol x`` :data:`CERTIFY_HEADROOM`.
    """
    w = np.asarray(w, dtype=np.float64).ravel()
    weights, lam = formulation.hinge_costs()
    C = weights / (2.0 * lam)
    pairs = formulation.pairs
    cert = certificate if certificate is not None else certify(pairs, C, w, alphas, target=tol * CERTIFY_HEADROOM)
    scale = 2.0 * lam  # hinge value = 2λ x QP value (Theorem 1)
    objective = hinge_objective(pairs, w, weights, lam)
    dual = scale * cert.dual
    gap = objective - dual
    rel = gap / objective if objective > 0 else cert.relative_gap
    if rel <= tol and backend_status in ("optimal", "optimal_inaccurate", "user_limit"):
        status = "optimal"
    elif backend_status == "user_limit":
        status = "user_limit"
    else:
        status = "optimal_inaccurate"
    if status != "optimal":
        warnings.warn(
            f"{solver} on the {formulation.name} formulation: certified relative gap {rel:.2e} > tol {tol:.0e} "
            f"(solver status {backend_status!r}); tighten the solver's tolerances, raise max_iter, "
            "or try another solver (cvxrank.available_solvers())",
            InaccurateSolutionWarning,
            stacklevel=3,
        )
    return SolveResult(
        w=w, status=status, objective=objective, dual_objective=dual, duality_gap=gap, relative_gap=rel,
        alpha=cert.alpha, solver=solver, solver_version=version, formulation=formulation.name,
        solver_status=backend_status, solver_objective=float(solver_objective), iterations=iterations,
        setup_time=float(setup_time), solve_time=float(solve_time), primal_residual=float(primal_residual),
        dual_residual=cert.dual_residual, lam=lam, tol=tol, extras=extras or {}, history=history,
    )
