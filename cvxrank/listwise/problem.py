"""The listwise problem (3) of He et al. as one value that :func:`cvxrank.solve` takes.

.. math::

    \\min_w \\; f(w) = \\tfrac12\\|w\\|^2 + \\frac{C}{m} \\sum_i \\sum_j \\frac{U(i,j)}{V(i,j)}\\,\\ell_{ij}(w)

with ``pcf=None`` for L2-regularised ListMLE (``U/V ≡ 1``) and a penalty coefficient ``pCf ≥ 1``
for cs-RgList. ``cvxrank.solve(ListwiseProblem(data, C=..., pcf=...), solver)`` solves it with
Newton's method (``"newton"``, Steps 1-5) or an exponential-cone CVXPY solver, and returns a
:class:`~cvxrank.listwise.result.ListwiseResult` (a :class:`~cvxrank.solution.SolveResult`)
certified by the gradient (``f`` is 1-strongly convex: ``f(w) − f* ≤ ½‖∇f(w)‖²``), judged by the
status rule of every result (:func:`cvxrank.solution.judge_status`).
"""

from __future__ import annotations

import numpy as np

from cvxrank.listwise.cvx import solve_listwise_cvxpy
from cvxrank.listwise.loss import _as_layout, check_C, listwise_objective
from cvxrank.listwise.newton import solve_newton
from cvxrank.listwise.result import ListwiseResult
from cvxrank.native.scale import check_feature_scale

__all__ = ["ListwiseProblem"]


class ListwiseProblem:
    """Problem (3) of He et al.: graded documents, the trade-off ``C`` and ``pCf``.

    Parameters
    ----------
    data : RankingData or ListwiseLayout
        Documents (sorted once into a layout here), or a layout that carries its own ``pCf``.
    C : float, default 1.0
        Trade-off ``C > 0`` of (3) (``λ = 1/(2C)``: the default is :data:`cvxrank.costs.DEFAULT_LAM`).
    pcf : float ≥ 1 or None, default None
        ``None``: ListMLE; a number: cs-RgList's penalty coefficient.

    Examples
    --------
    >>> import cvxrank as cr
    >>> from cvxrank.listwise import ListwiseProblem
    >>> problem = ListwiseProblem(cr.make_ranking(n_queries=3, docs_per_query=5, n_features=2), pcf=3.0)
    >>> a, b = cr.solve(problem, "newton"), cr.solve(problem, "clarabel")
    >>> a.status, b.status, bool(abs(a.objective - b.objective) <= a.gap_bound + b.gap_bound)
    ('optimal', 'optimal', True)
    """

    #: Which solvers take it (:attr:`cvxrank.solvers.registry.SolverSpec.problems`).
    kind = "listwise"

    def __init__(self, data, *, C=1.0, pcf=None):
        self.layout = _as_layout(data, pcf)
        self.C = check_C(C)
        check_feature_scale(self.layout.X)  # before Newton's exp() sees them

    @property
    def pcf(self) -> float | None:
        return self.layout.pcf

    @property
    def n_features(self) -> int:
        return self.layout.n_features

    def objective(self, w) -> float:
        """``f(w)`` of (3)."""
        return listwise_objective(self.layout, np.asarray(w, dtype=np.float64), C=self.C)

    def solve_with(self, solver: str, *, tol: float, verbose: bool = False, warm_start=None,
                   **options) -> ListwiseResult:
        """The backend :func:`cvxrank.solve` calls (options already checked): Newton or CVXPY."""
        if solver == "newton":
            return solve_newton(self.layout, C=self.C, tol=tol, verbose=verbose, w0=warm_start, **options)
        return solve_listwise_cvxpy(self.layout, C=self.C, solver=solver, tol=tol, verbose=verbose,
                                    warm_start=bool(warm_start), **options)

    def __repr__(self) -> str:
        return (f"ListwiseProblem(n_queries={self.layout.n_queries}, n_features={self.n_features}, C={self.C:g}, "
                f"pcf={self.pcf})")
