"""The dual QP (18)-(19)/SIGIR = (10)/ECML with per-pair box constraints."""

from __future__ import annotations

import cvxpy as cp
import numpy as np

from cvxrank.formulations.base import Formulation, as_problem, check_states, cost_parameters

__all__ = ["build_dual"]


def build_dual(problem, *, C=None, costs: str = "scale") -> Formulation:
    """Dual of the per-pair-cost QP, with box constraints.

    Problem (18)-(19) of Cao et al. (SIGIR 2006), (10) of Xu et al. (ECML 2006):

    .. math::

        \\max_{\\alpha} \\; \\sum_i \\alpha_i - \\tfrac12 \\|D^\\top \\alpha\\|^2
        \\quad \\text{s.t.} \\quad 0 \\le \\alpha_i \\le C_i

    A variant (:mod:`cvxrank.variants`) with margins, the squared hinge or an ℓ1 term compiles
    into its dual ``max Σ m_i α_i − h(α) − φ*(Dᵀα)``: ``h(α) = Σ α_i²/(4C_i)`` over ``α ≥ 0``
    for the squared hinge (held as ``α = C ⊙ γ``, ``γ ≥ 0``), ``φ*(u) = ½‖S_ρ(u)‖²`` with the
    soft threshold ``S_ρ`` for an elastic net (then ``w = S_ρ(Dᵀα)``). Bounds on ``w`` and user
    constraints compile into the primal forms only.

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
    check_states(ranking, "dual")
    variant = ranking.variant
    ranking.check_formulation("dual")  # from counts: before a pair or D is allocated
    pairs = ranking.pairs
    params, base = cost_parameters(C, pairs.n_pairs, costs)
    margins = None if variant.margin is None else variant.margins(pairs)
    u = cp.Variable(pairs.n_features, name="u")
    Dt = pairs.difference_matrix().T
    rho = variant.l1 / (2.0 * ranking.lam)
    # -φ*(u): -½‖u‖² (16), or -½‖S_ρ(u)‖² with the ℓ1 term of an elastic net
    conj = 0.5 * cp.sum_squares(u) if rho == 0 else 0.5 * cp.sum(cp.square(cp.pos(cp.abs(u) - rho)))
    if variant.loss == "squared_hinge":
        # α = C ⊙ γ with γ ≥ 0: h(α) = Σ α²/(4C) = Σ C γ²/4 stays DPP (a parameter times a convex term)
        gamma = cp.Variable(pairs.n_pairs, name="gamma", nonneg=True)
        m = np.ones(pairs.n_pairs) if margins is None else margins
        variables = {"gamma": gamma, "u": u}
        if base is not None:
            kappa = params["scale"]
            alpha = kappa * cp.multiply(base, gamma)
            constraints = [u == kappa * (Dt @ cp.multiply(base, gamma))]
            objective = kappa * ((m * base) @ gamma) - kappa * ((base / 4.0) @ cp.square(gamma)) - conj
        else:
            alpha = cp.multiply(params["C"], gamma)
            s, t = cp.Variable(name="s"), cp.Variable(name="t")
            variables.update(s=s, t=t)
            constraints = [u == Dt @ alpha, s <= m @ alpha, params["C"] @ cp.square(gamma) / 4.0 <= t]
            objective = s - t - conj
        variables["alpha"] = alpha
    else:
        alpha = cp.Variable(pairs.n_pairs, name="alpha")
        constraints = [u == Dt @ alpha, alpha >= 0]
        variables = {"alpha": alpha, "u": u}
        gain = cp.sum(alpha) if margins is None else margins @ alpha
        if base is not None:
            constraints.append(alpha <= params["scale"] * base)
            objective = gain - conj
        else:
            # CVXPY stores the objective's coefficients densely over (parameter
            # entries x variables): with ℓ entries of C, an objective touching all ℓ
            # entries of α becomes an ℓ x ℓ array (3 GB at 20k pairs). So the
            # objective only sees u = Dᵀα (n entries) and the epigraph variable
            # s ≤ Σ m_i α_i; same problem.
            s = cp.Variable(name="s")
            variables["s"] = s
            constraints += [alpha <= params["C"], s <= gain]
            objective = s - conj
    problem = cp.Problem(cp.Maximize(objective), constraints)
    return Formulation(
        "dual", problem, variables, params, pairs,
        "(18)-(19) Cao et al. 2006 = (10) Xu et al. 2006", None, base, ranking,
    )
