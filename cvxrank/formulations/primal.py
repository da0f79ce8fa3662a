"""The primal QP (14)/SIGIR = (6)/(9)/ECML, with ``D`` materialised or lifted."""

from __future__ import annotations

import cvxpy as cp

from cvxrank.formulations.base import Formulation, check_costs
from cvxrank.pairs import PairSet

__all__ = ["build_primal", "build_lifted_primal"]

# The cost term Σ C_i ξ_i sits in an epigraph constraint ``C @ ξ <= t`` rather
# than in the objective: CVXPY's QP coefficient extraction densifies a
# parameter-times-variable objective term into an (ℓ+1) x (ℓ+1) array (763 GiB
# at 320k pairs), while parametrised constraints stay sparse. Same problem,
# same optimum, still DPP.


def _C_parameter(pairs: PairSet, C) -> cp.Parameter:
    param = cp.Parameter(pairs.n_pairs, nonneg=True, name="C")
    param.value = check_costs(C, pairs.n_pairs, "C")
    return param


def build_primal(pairs: PairSet, C) -> Formulation:
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
    pairs : PairSet
    C : array-like of shape (n_pairs,) or float
        Non-negative costs, held in the ``cp.Parameter`` ``parameters["C"]``
        (DPP: change its value and re-solve without recompiling).

    Returns
    -------
    Formulation
        Variables ``w``, ``xi`` and ``t`` (epigraph of ``Σ C_i ξ_i``, see the
        module comment); parameter ``C``; the dual value of the margin
        constraint is ``α``.
    """
    Cp = _C_parameter(pairs, C)
    w = cp.Variable(pairs.n_features, name="w")
    xi = cp.Variable(pairs.n_pairs, name="xi")
    t = cp.Variable(name="t")
    D = pairs.difference_matrix()
    margin = D @ w + xi >= 1
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + t), [margin, xi >= 0, Cp @ xi <= t])
    return Formulation(
        "primal", problem, {"w": w, "xi": xi, "t": t}, {"C": Cp}, pairs,
        "(14) Cao et al. 2006 = (9) Xu et al. 2006", margin,
    )


def build_lifted_primal(pairs: PairSet, C) -> Formulation:
    """Primal QP (14) with ``D = P X`` kept factored through a score vector.

    .. math::

        \\min_{w, s, \\xi} \\; \\tfrac12 \\|w\\|^2 + \\sum_i C_i \\xi_i
        \\quad \\text{s.t.} \\quad s = X w, \\; P s \\ge 1 - \\xi, \\; \\xi \\ge 0

    The constraint matrix has ``nnz(X) + 3 n_pairs`` entries instead of
    ``n_pairs x n_features``: far smaller when queries are long. Same
    minimiser and objective as :func:`build_primal`.

    Parameters
    ----------
    pairs : PairSet
    C : array-like of shape (n_pairs,) or float
        Non-negative costs (``cp.Parameter`` ``parameters["C"]``).
    """
    Cp = _C_parameter(pairs, C)
    w = cp.Variable(pairs.n_features, name="w")
    s = cp.Variable(pairs.n_documents, name="s")
    xi = cp.Variable(pairs.n_pairs, name="xi")
    t = cp.Variable(name="t")
    margin = pairs.P @ s + xi >= 1
    problem = cp.Problem(
        cp.Minimize(0.5 * cp.sum_squares(w) + t),
        [margin, xi >= 0, s == pairs.data.X @ w, Cp @ xi <= t],
    )
    return Formulation(
        "lifted", problem, {"w": w, "s": s, "xi": xi, "t": t}, {"C": Cp}, pairs,
        "(14) Cao et al. 2006 with D = P X lifted", margin,
    )
