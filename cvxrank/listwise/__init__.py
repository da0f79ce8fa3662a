"""Listwise learning to rank: ListMLE and cs-RgList (He et al., equation (3)).

``cvxrank.solve(ListwiseProblem(data, C=..., pcf=...), solver)`` solves it and returns a
:class:`ListwiseResult` whose gradient certifies the solution (the problem is 1-strongly
convex), with the backends:

* :func:`solve_newton` — Newton's method with Cholesky steps (Steps 1-5 of
  the paper), vectorised over queries;
* :func:`solve_listwise_cvxpy` — the same problem declared in CVXPY with the
  exponential cone (:func:`build_listwise`), for Clarabel, ECOS, SCS, ...

and, over data sharded on a Dask cluster (files read on the workers),
:func:`cvxrank.listwise.dask.solve_newton_files`: Newton's method with its sums split over shards.

The loss, its gradient and Hessian are in :mod:`cvxrank.listwise.loss`.
"""

from cvxrank.listwise.cvx import (
    EXP_CONE_SOLVERS,
    ListwiseProgram,
    build_listwise,
    solve_listwise_cvxpy,
)
from cvxrank.listwise.loss import (
    ListwiseLayout,
    check_C,
    check_pcf,
    cs_rglist_weights,
    listwise_layout,
    listwise_loss,
    listwise_loss_derivatives,
    listwise_objective,
    objective_derivatives,
    perfect_order,
    query_losses,
)
from cvxrank.listwise.newton import solve_newton
from cvxrank.listwise.problem import ListwiseProblem
from cvxrank.listwise.result import ListwiseResult, certificate_bounds

__all__ = [
    "EXP_CONE_SOLVERS",
    "ListwiseLayout",
    "ListwiseProblem",
    "ListwiseProgram",
    "ListwiseResult",
    "build_listwise",
    "certificate_bounds",
    "check_C",
    "check_pcf",
    "cs_rglist_weights",
    "listwise_layout",
    "listwise_loss",
    "listwise_loss_derivatives",
    "listwise_objective",
    "objective_derivatives",
    "perfect_order",
    "query_losses",
    "solve_listwise_cvxpy",
    "solve_newton",
]
