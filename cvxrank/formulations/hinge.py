"""The weighted hinge-loss problem (9)/SIGIR = (8)/ECML = (7) for Ranking SVM."""

from __future__ import annotations

import cvxpy as cp

from cvxrank.costs import check_lam
from cvxrank.formulations.base import Formulation, check_costs
from cvxrank.pairs import PairSet

__all__ = ["build_hinge"]


def build_hinge(pairs: PairSet, weights, lam: float) -> Formulation:
    """Weighted hinge-loss minimisation with an L2 regulariser.

    Problem (9) of Cao et al. (SIGIR 2006); (8) of Xu et al. (ECML 2006)
    when the weights are ``τ_k(i)``; Ranking SVM's (7) when all are 1:

    .. math::

        \\min_w \\; \\sum_i \\tau_{k(i)} \\mu_{q(i)} [1 - \\langle w, d_i \\rangle]_+ + \\lambda \\|w\\|^2

    Parameters
    ----------
    pairs : PairSet
    weights : array-like of shape (n_pairs,) or float
        Non-negative pair weights ``τ_k(i) μ_q(i)`` (``cp.Parameter``
        ``parameters["weights"]``), e.g. from :func:`cvxrank.pair_weights`.
    lam : float
        Positive regularisation weight ``λ`` (``cp.Parameter`` ``parameters["lam"]``).
    """
    wp = cp.Parameter(pairs.n_pairs, nonneg=True, name="weights")
    wp.value = check_costs(weights, pairs.n_pairs, "weights")
    lp = cp.Parameter(nonneg=True, name="lam")
    lp.value = check_lam(lam)
    w = cp.Variable(pairs.n_features, name="w")
    t = cp.Variable(name="t")
    D = pairs.difference_matrix()
    # Epigraph of the weighted loss, as in primal.py: a parameter-times-variable
    # objective term would be densified by CVXPY into an ℓ x ℓ array.
    problem = cp.Problem(cp.Minimize(t + lp * cp.sum_squares(w)), [wp @ cp.pos(1 - D @ w) <= t])
    return Formulation(
        "hinge", problem, {"w": w, "t": t}, {"weights": wp, "lam": lp}, pairs,
        "(9) Cao et al. 2006 = (8) Xu et al. 2006",
    )
