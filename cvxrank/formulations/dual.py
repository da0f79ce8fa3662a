"""The dual QP (18)-(19)/SIGIR = (10)/ECML with per-pair box constraints."""

from __future__ import annotations

import cvxpy as cp

from cvxrank.formulations.base import Formulation, check_costs
from cvxrank.pairs import PairSet

__all__ = ["build_dual"]


def build_dual(pairs: PairSet, C) -> Formulation:
    """Dual of the per-pair-cost QP, with box constraints.

    Problem (18)-(19) of Cao et al. (SIGIR 2006), (10) of Xu et al. (ECML 2006):

    .. math::

        \\max_{\\alpha} \\; \\sum_i \\alpha_i - \\tfrac12 \\|D^\\top \\alpha\\|^2
        \\quad \\text{s.t.} \\quad 0 \\le \\alpha_i \\le C_i

    The quadratic term is written through ``Dᵀα`` (``n_features`` entries),
    never through the ``n_pairs x n_pairs`` Gram matrix. The weights are
    recovered by (16): ``w = Σ α_i z_i d_i = Dᵀα``; the problem holds it as the
    variable ``u`` with the constraint ``u = Dᵀα``, and ``Σ α_i`` as the
    epigraph variable ``s`` (see the comment in the code).

    Parameters
    ----------
    pairs : PairSet
    C : array-like of shape (n_pairs,) or float
        Upper bounds of the box (``cp.Parameter`` ``parameters["C"]``).
    """
    Cp = cp.Parameter(pairs.n_pairs, nonneg=True, name="C")
    Cp.value = check_costs(C, pairs.n_pairs, "C")
    alpha = cp.Variable(pairs.n_pairs, name="alpha")
    # CVXPY stores the objective's coefficients densely over (parameters x
    # variables): with ℓ parameters C, an objective touching all ℓ entries of α
    # becomes an ℓ x ℓ array (3 GB at 20k pairs). So the objective only sees
    # u = Dᵀα (n entries) and the epigraph variable s ≤ Σ α_i; same problem.
    u = cp.Variable(pairs.n_features, name="u")
    s = cp.Variable(name="s")
    Dt = pairs.difference_matrix().T
    problem = cp.Problem(
        cp.Maximize(s - 0.5 * cp.sum_squares(u)),
        [u == Dt @ alpha, alpha >= 0, alpha <= Cp, s <= cp.sum(alpha)],
    )
    return Formulation(
        "dual", problem, {"alpha": alpha, "u": u, "s": s}, {"C": Cp}, pairs,
        "(18)-(19) Cao et al. 2006 = (10) Xu et al. 2006",
    )
