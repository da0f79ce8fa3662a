"""The primal QP (14)/SIGIR = (6)/(9)/ECML, with ``D`` materialised or lifted."""

from __future__ import annotations

import cvxpy as cp
import numpy as np

from cvxrank.exceptions import ValidationError
from cvxrank.formulations.base import Formulation, _short, as_problem, cost_parameters
from cvxrank.pairs import PairSet

__all__ = ["build_primal", "build_lifted_primal"]


def _variant_terms(ranking, w):
    """The variant's extra objective term (ℓ1 on the QP scale) and bound constraints on ``w``."""
    v = ranking.variant
    lo, hi = v.bounds(ranking.n_features)
    constraints = []
    if np.isfinite(lo).any():
        idx = np.flatnonzero(np.isfinite(lo))
        constraints.append(w[idx] >= lo[idx])
    if np.isfinite(hi).any():
        idx = np.flatnonzero(np.isfinite(hi))
        constraints.append(w[idx] <= hi[idx])
    term = (v.l1 / (2.0 * ranking.lam)) * cp.norm1(w) if v.l1 > 0 else 0
    return term, constraints


def user_constraints(ranking, w) -> list:
    """The variant's own CVXPY constraints on ``w`` (empty for none)."""
    if ranking.variant.constraints is None:
        return []
    made = ranking.variant.constraints(w)
    made = list(made) if isinstance(made, (list, tuple)) else [made]
    if not all(isinstance(c, cp.constraints.constraint.Constraint) for c in made):
        raise ValidationError("constraints(w) must return CVXPY constraints on w")
    for c in made:
        if not c.is_dcp():
            raise ValidationError(f"the constraint {_short(c)} is not convex under CVXPY's rules (DCP): it cannot "
                                  "be solved or certified; state a convex set (e.g. cp.norm(w) <= 1, A @ w <= b)")
        if any(not np.all(np.isfinite(np.asarray(k.value, dtype=np.float64))) for k in c.constants()):
            raise ValidationError(f"the constraint {_short(c)} holds a NaN or infinite number")
    return made


def _cost_term(pairs: PairSet, C, costs: str, xi: cp.Variable, squared: bool = False):
    """``Σ C_i ξ_i`` as an objective term, with its extra variables and constraints.

    ``"scale"``: ``κ (c @ ξ)`` in the objective. ``"per_pair"``: the epigraph
    ``C @ ξ <= t`` and ``t`` in the objective, since CVXPY's QP coefficient
    extraction densifies a per-pair-parameter objective term into an
    ``(ℓ+1) x ℓ`` array (763 GiB at 320k pairs) while parametrised constraints
    stay sparse. Same problem, same optimum, both DPP.
    """
    params, base = cost_parameters(C, pairs.n_pairs, costs)
    loss = cp.square(xi) if squared else xi
    if base is not None:
        return params["scale"] * (base @ loss), {}, [], params, base
    t = cp.Variable(name="t")
    return t, {"t": t}, [params["C"] @ loss <= t], params, None


def build_primal(problem, *, C=None, costs: str = "scale") -> Formulation:
    """Primal QP with one slack per pair and per-pair costs.

    Problem (14) of Cao et al. (SIGIR 2006), (9) of Xu et al. (ECML 2006);
    with all ``C_i`` equal it is Ranking SVM's (6):

    .. math::

        \\min_{w, \\xi} \\; \\tfrac12 \\|w\\|^2 + \\sum_i C_i \\xi_i
        \\quad \\text{s.t.} \\quad \\langle w, d_i \\rangle \\ge 1 - \\xi_i, \\; \\xi_i \\ge 0

    with ``d_i = x_better - x_worse`` (so ``z_i = +1``). ``D`` is materialised
    (``n_pairs x n_features``, sparse when ``X`` is); see
    :func:`build_lifted_primal` for the variant that keeps ``D = P X`` factored.

    Parameters
    ----------
    problem : RankingProblem or PairSet
        The problem to compile (its costs are ``C = weights / (2λ)``), or a
        pair set with explicit QP costs ``C``.
    C : array-like of shape (n_pairs,) or float, optional
        With a pair set only:
        Non-negative costs.
    costs : {"scale", "per_pair"}, default "scale"
        How ``C`` is held as a ``cp.Parameter`` (DPP: new values re-solve
        without recompiling, :meth:`Formulation.set_costs`):
        ``parameters["scale"]`` times the constant ``C`` (fastest; any
        multiple of ``C``, e.g. a ``λ`` path), or ``parameters["C"]`` per pair
        (any costs); see :func:`~cvxrank.formulations.base.cost_parameters`.

    Returns
    -------
    Formulation
        Variables ``w``, ``xi`` (and ``t``, the epigraph of ``Σ C_i ξ_i``,
        for ``"per_pair"``); the dual value of the margin constraint is ``α``.
    """
    ranking, C = as_problem(problem, C)
    ranking.check_formulation("primal")  # from counts: before a pair or D is allocated
    pairs = ranking.pairs
    w = cp.Variable(pairs.n_features, name="w")
    xi = cp.Variable(pairs.n_pairs, name="xi")
    term, extra, constraints, params, base = _cost_term(pairs, C, costs, xi,
                                                        squared=ranking.variant.loss == "squared_hinge")
    l1, bounds = _variant_terms(ranking, w)
    users = user_constraints(ranking, w)
    D = pairs.difference_matrix()
    margin = D @ w + xi >= ranking.variant.margins(pairs)
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + l1 + term),
                         [margin, xi >= 0, *constraints, *bounds, *users])
    return Formulation(
        "primal", problem, {"w": w, "xi": xi, **extra}, params, pairs,
        "(14) Cao et al. 2006 = (9) Xu et al. 2006", margin, base, ranking, users, w,
    )


def build_lifted_primal(problem, *, C=None, costs: str = "scale") -> Formulation:
    """Primal QP (14) with ``D = P X`` kept factored through a score vector.

    .. math::

        \\min_{w, s, \\xi} \\; \\tfrac12 \\|w\\|^2 + \\sum_i C_i \\xi_i
        \\quad \\text{s.t.} \\quad s = X w, \\; P s \\ge 1 - \\xi, \\; \\xi \\ge 0

    The constraint matrix has ``nnz(X) + 3 n_pairs`` entries instead of
    ``n_pairs x n_features``: far smaller when queries are long. Same
    minimiser and objective as :func:`build_primal`. Every variant of
    :mod:`cvxrank.variants` compiles here as in :func:`build_primal` (loss,
    margins ``P s + ξ ≥ m``, ℓ1, bounds, user constraints).

    Parameters
    ----------
    problem : RankingProblem or PairSet
        The problem to compile (its costs are ``C = weights / (2λ)``), or a
        pair set with explicit QP costs ``C``.
    C : array-like of shape (n_pairs,) or float, optional
        With a pair set only:
        Non-negative costs.
    costs : {"scale", "per_pair"}, default "scale"
        As in :func:`build_primal`.
    """
    ranking, C = as_problem(problem, C)
    ranking.check_formulation("lifted")  # from counts: before a pair is allocated
    pairs = ranking.pairs
    w = cp.Variable(pairs.n_features, name="w")
    s = cp.Variable(pairs.n_documents, name="s")
    xi = cp.Variable(pairs.n_pairs, name="xi")
    term, extra, constraints, params, base = _cost_term(pairs, C, costs, xi,
                                                        squared=ranking.variant.loss == "squared_hinge")
    l1, bounds = _variant_terms(ranking, w)
    users = user_constraints(ranking, w)
    required = 1 if ranking.variant.margin is None else ranking.variant.margins(pairs)
    margin = pairs.P @ s + xi >= required
    problem = cp.Problem(
        cp.Minimize(0.5 * cp.sum_squares(w) + l1 + term),
        [margin, xi >= 0, s == pairs.data.X.astype(np.float64, copy=False) @ w, *constraints, *bounds, *users],
    )
    return Formulation(
        "lifted", problem, {"w": w, "s": s, "xi": xi, **extra}, params, pairs,
        "(14) Cao et al. 2006 with D = P X lifted", margin, base, ranking, users, w,
    )
