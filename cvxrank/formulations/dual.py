"""The dual QP (18)-(19)/SIGIR = (10)/ECML with per-pair box constraints."""

from __future__ import annotations

import cvxpy as cp

from cvxrank.formulations.base import Formulation, as_problem, cost_parameters, papers_problem_only
from cvxrank.pairs import PairSet

__all__ = ["build_dual"]


def build_dual(problem, C=None, *, costs: str = "scale") -> Formulation:
    """Dual of the per-pair-cost QP, with box constraints.

    Problem (18)-(19) of Cao et al. (SIGIR 2006), (10) of Xu et al. (ECML 2006):

    .. math::

        \\max_{\\alpha} \\; \\sum_i \\alpha_i - \\tfrac12 \\|D^\\top \\alpha\\|^2
        \\quad \\text{s.t.} \\quad 0 \\le \\alpha_i \\le C_i

    The quadratic term is written through ``Dᵀα`` (``n_features`` entries),
    never through the ``n_pairs x n_pairs`` Gram matrix. The weights are
    recovered by (16): ``w = Σ α_i z_i d_i = Dᵀα``; the problem holds it as the
    variable ``u`` with the constraint ``u = Dᵀα``.

    Parameters
    ----------
    problem : RankingProblem or PairSet
        The problem to compile (its costs are ``C = weights / (2λ)``), or a
        pair set with explicit QP costs ``C``.
    C : array-like of shape (n_pairs,) or float, optional
        With a pair set only:
        Upper bounds of the box.
    costs : {"scale", "per_pair"}, default "scale"
        How ``C`` is held as a ``cp.Parameter``, as in
        :func:`~cvxrank.formulations.build_primal`: the box is ``α ≤ κ c``
        with ``parameters["scale"]`` ``κ``, or ``α ≤ C`` with the per-pair
        ``parameters["C"]``. For ``"per_pair"`` the problem also holds
        ``Σ α_i`` as an epigraph variable ``s`` (see the comment in the code).
    """
    ranking, C = as_problem(problem, C)
    papers_problem_only(ranking, "dual")
    pairs = ranking.pairs
    params, base = cost_parameters(C, pairs.n_pairs, costs)
    alpha = cp.Variable(pairs.n_pairs, name="alpha")
    u = cp.Variable(pairs.n_features, name="u")
    Dt = pairs.difference_matrix().T
    constraints = [u == Dt @ alpha, alpha >= 0]
    variables = {"alpha": alpha, "u": u}
    if base is not None:
        constraints.append(alpha <= params["scale"] * base)
        objective = cp.sum(alpha) - 0.5 * cp.sum_squares(u)
    else:
        # CVXPY stores the objective's coefficients densely over (parameter
        # entries x variables): with ℓ entries of C, an objective touching all ℓ
        # entries of α becomes an ℓ x ℓ array (3 GB at 20k pairs). So the
        # objective only sees u = Dᵀα (n entries) and the epigraph variable
        # s ≤ Σ α_i; same problem.
        s = cp.Variable(name="s")
        variables["s"] = s
        constraints += [alpha <= params["C"], s <= cp.sum(alpha)]
        objective = s - 0.5 * cp.sum_squares(u)
    problem = cp.Problem(cp.Maximize(objective), constraints)
    return Formulation(
        "dual", problem, variables, params, pairs,
        "(18)-(19) Cao et al. 2006 = (10) Xu et al. 2006", None, base, ranking,
    )
