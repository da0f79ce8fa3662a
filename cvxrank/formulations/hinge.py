"""The weighted hinge-loss problem (9)/SIGIR = (8)/ECML = (7) for Ranking SVM."""

from __future__ import annotations

import cvxpy as cp
import numpy as np

from cvxrank.exceptions import ValidationError
from cvxrank.formulations.base import Formulation, cost_parameters
from cvxrank.pairs import PairSet
from cvxrank.problem import RankingProblem

__all__ = ["build_hinge"]


def build_hinge(problem, *, weights=None, lam: float | None = None, costs: str = "scale") -> Formulation:
    """Weighted hinge-loss minimisation with an L2 regulariser.

    Problem (9) of Cao et al. (SIGIR 2006); (8) of Xu et al. (ECML 2006)
    when the weights are ``τ_k(i)``; Ranking SVM's (7) when all are 1:

    .. math::

        \\min_w \\; \\sum_i \\tau_{k(i)} \\mu_{q(i)} [1 - \\langle w, d_i \\rangle]_+ + \\lambda \\|w\\|^2

    Parameters
    ----------
    problem : RankingProblem or PairSet
        The problem (its weights and ``λ``), or a pair set with ``weights``
        and ``lam`` given.
    weights : array-like of shape (n_pairs,) or float, optional
        With a pair set: non-negative pair weights ``τ_k(i) μ_q(i)``, e.g. from
        :func:`cvxrank.pair_weights`.
    lam : float, optional
        With a pair set: positive regularisation weight ``λ`` (``cp.Parameter`` ``parameters["lam"]``).
    costs : {"scale", "per_pair"}, default "scale"
        How the weights are held, as for the QP forms
        (:func:`~cvxrank.formulations.base.cost_parameters`): a scalar
        ``parameters["scale"]`` times the constant weights, in the objective
        (fast to compile; a ``λ`` path only moves ``lam``), or one
        ``parameters["weights"]`` entry per pair, in an epigraph row
        ``weights @ [1 − Dw]_+ ≤ t`` (any weights re-solve without recompiling,
        but CVXPY compiles it far more slowly for ECOS: ``docs/path-benchmark.md``).
    """
    if isinstance(problem, RankingProblem):
        if weights is not None or lam is not None:
            raise ValidationError("give a RankingProblem or (pairs, weights, lam), not both")
        ranking = problem
    elif isinstance(problem, PairSet):
        if weights is None or lam is None:
            raise ValidationError("the hinge formulation of a pair set needs weights and lam")
        ranking = RankingProblem(problem, weights=weights, lam=lam)
    else:
        raise ValidationError(f"build_hinge takes a RankingProblem or a PairSet, got {type(problem).__name__}")
    ranking.check_formulation("hinge")  # from counts: before a pair or D is allocated
    pairs = ranking.pairs
    params, base = cost_parameters(ranking.weights, pairs.n_pairs, costs, what="weights")
    lp = cp.Parameter(nonneg=True, name="lam")
    lp.value = ranking.lam
    params["lam"] = lp
    w = cp.Variable(pairs.n_features, name="w")
    D = pairs.difference_matrix()
    variant = ranking.variant
    margin_constraint, slack = None, []
    if variant.is_default:
        loss = cp.pos(1 - D @ w)
    else:
        # Variants hold the shortfall as a slack with its margin constraint, whose duals (divided by
        # 2λ) are the dual point of the variant's certificate (cvxrank.variants).
        xi = cp.Variable(pairs.n_pairs, name="xi")
        margin_constraint = D @ w + xi >= variant.margins(pairs)
        slack = [margin_constraint, xi >= 0]
        loss = cp.square(xi) if variant.loss == "squared_hinge" else xi
    extra = variant.l1 * cp.norm1(w) if variant.l1 > 0 else 0  # ρ_L ‖w‖₁ on the scale of (9)
    lo, hi = variant.bounds(pairs.n_features)
    bounds = [w[np.flatnonzero(np.isfinite(b))] >= b[np.isfinite(b)] for b in [lo] if np.isfinite(b).any()]
    bounds += [w[np.flatnonzero(np.isfinite(b))] <= b[np.isfinite(b)] for b in [hi] if np.isfinite(b).any()]
    from cvxrank.formulations.primal import user_constraints

    users = user_constraints(ranking, w)
    bounds += users
    if base is not None:
        cvx = cp.Problem(cp.Minimize(params["scale"] * (base @ loss) + lp * cp.sum_squares(w) + extra),
                         [*slack, *bounds])
        variables = {"w": w}
    else:
        # Epigraph of the weighted loss, as in primal.py: a per-pair parameter in the objective
        # would be densified by CVXPY into an ℓ x ℓ array.
        t = cp.Variable(name="t")
        cvx = cp.Problem(cp.Minimize(t + lp * cp.sum_squares(w) + extra),
                         [params["weights"] @ loss <= t, *slack, *bounds])
        variables = {"w": w, "t": t}
    return Formulation(
        "hinge", cvx, variables, params, pairs, "(9) Cao et al. 2006 = (8) Xu et al. 2006", margin_constraint, base,
        ranking, users, w,
    )
