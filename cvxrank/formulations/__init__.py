"""Builders that declare the papers' problems in CVXPY.

=========  =====================================================  ==========================
name       problem                                                builder
=========  =====================================================  ==========================
primal     QP (14)/SIGIR = (9)/ECML, ``D`` materialised            :func:`build_primal`
lifted     the same QP with ``s = Xw`` and ``P s ≥ 1 − ξ``          :func:`build_lifted_primal`
dual       box-constrained dual (18)-(19)/SIGIR = (10)/ECML        :func:`build_dual`
hinge      weighted hinge loss (9)/SIGIR = (8)/ECML                :func:`build_hinge`
=========  =====================================================  ==========================

:func:`build` picks between them by name or, with ``"auto"``, by size
(:func:`choose_formulation`).
"""

from __future__ import annotations

import numpy as np

from cvxrank.exceptions import ValidationError
from cvxrank.formulations.base import COST_PARAMETRIZATIONS, Formulation, as_problem, check_costs, cost_parameters
from cvxrank.formulations.dual import build_dual
from cvxrank.formulations.hinge import build_hinge
from cvxrank.formulations.primal import build_lifted_primal, build_primal
from cvxrank.pairs import PairSet
from cvxrank.problem import RankingProblem

__all__ = [
    "COST_PARAMETRIZATIONS",
    "Formulation",
    "FORMULATIONS",
    "build",
    "build_dual",
    "build_hinge",
    "build_lifted_primal",
    "build_primal",
    "check_costs",
    "choose_formulation",
    "cost_parameters",
]

#: Formulation names accepted by :func:`build`.
FORMULATIONS = ("primal", "lifted", "dual", "hinge")


def choose_formulation(pairs) -> str:
    """Pick ``"primal"`` or ``"lifted"`` for the QP (14) by problem size.

    The rule compares the non-zeros of the two constraint matrices: the
    materialised ``D`` has ``nnz(D) ≈ n_pairs x (features per document)``
    entries, the lift ``nnz(X) + n_documents + 3 n_pairs``; the smaller one
    wins (ties go to the lift). ``cvxrank bench formulations`` measures the
    rule (``docs/formulation-choice.md``). For very short queries, where ``D`` is the
    smaller, the dual (18) can be faster with interior-point solvers
    but ADMM solvers (OSQP) stall on it, so the rule keeps the primal there.

    Only counts enter the rule: a :class:`~cvxrank.problem.RankingProblem` given as
    documents has its pairs counted from the grades, never formed (they may not fit
    in memory; :func:`build` checks the budget next, before forming them).

    Parameters
    ----------
    pairs : PairSet or RankingProblem

    Returns
    -------
    str
    """
    if isinstance(pairs, RankingProblem):
        n_pairs, data = pairs.n_pairs, pairs.data
    elif isinstance(pairs, PairSet):
        n_pairs, data = pairs.n_pairs, pairs.data
    else:
        raise ValidationError(f"choose_formulation takes a PairSet or a RankingProblem, got {type(pairs).__name__}")
    X = data.X
    per_doc = X.nnz / X.shape[0] if hasattr(X, "nnz") else X.shape[1]
    dense_nnz = n_pairs * per_doc
    lifted_nnz = (X.nnz if hasattr(X, "nnz") else X.size) + data.n_documents + 3 * n_pairs
    return "lifted" if lifted_nnz <= dense_nnz else "primal"


def build(problem, formulation: str = "auto", *, C=None, weights=None, lam=None,
          costs: str = "scale") -> Formulation:
    """Compile a ranking problem into a CVXPY formulation, by name.

    Parameters
    ----------
    problem : RankingProblem or PairSet
        The problem (pairs, costs, ``λ``). A pair set needs its costs: ``C``
        (per-pair QP costs, the problem with weights ``C`` and ``λ = 1/2``),
        or ``weights`` and ``lam`` (the problem (9) with those; Theorem 1 gives
        the QP forms ``C = weights / (2 lam)``).
    C : array-like, optional
        Per-pair QP costs, with a pair set.
    weights, lam : array-like and float, optional
        Pair weights and ``λ`` of (9), with a pair set.
    formulation : {"auto", "primal", "lifted", "dual", "hinge"}
        ``"auto"`` (default) calls :func:`choose_formulation`.
    costs : {"scale", "per_pair"}, default "scale"
        How the QP forms hold ``C`` as a ``cp.Parameter``
        (:func:`~cvxrank.formulations.base.cost_parameters`): one scale
        factor (fastest; re-solves any multiple of ``C``, such as a ``λ``
        path) or one entry per pair (re-solves any costs). The hinge form
        holds its weights the same way, and ``lam``.

    Examples
    --------
    >>> import cvxrank as cr
    >>> problem = cr.RankingProblem(cr.make_ranking(n_queries=3, random_state=0), lam=0.1)
    >>> cr.build(problem, formulation="dual")
    Formulation(name='dual', equation='(18)-(19) Cao et al. 2006 = (10) Xu et al. 2006', n_pairs=179, n_features=5, parameters=['scale'])
    """
    if not isinstance(formulation, str) or formulation not in FORMULATIONS + ("auto",):
        what = repr(formulation) if isinstance(formulation, str) else f"a {type(formulation).__name__}"
        raise ValidationError(f"unknown formulation {what}; choose one of {', '.join(FORMULATIONS + ('auto',))} "
                              "(per-pair costs of a pair set go by keyword: C=, or weights= and lam=)")
    if costs not in COST_PARAMETRIZATIONS:
        raise ValidationError(f"unknown cost parametrization {costs!r}; choose one of {', '.join(COST_PARAMETRIZATIONS)}")
    if isinstance(problem, PairSet) and (weights is not None or lam is not None):
        if weights is None or lam is None:
            raise ValidationError("give both weights and lam (or C alone)")
        ranking = RankingProblem(problem, weights=check_costs(weights, problem.n_pairs, "weights"), lam=lam)
        if C is not None and not np.allclose(check_costs(C, problem.n_pairs, "C"), ranking.C, rtol=1e-12, atol=0):
            raise ValidationError("C is not weights / (2 lam): give C alone, or weights and lam")
        problem, C = ranking, None
    elif isinstance(problem, PairSet) and C is None:
        raise ValidationError(f"the {formulation} formulation of a pair set needs C, or weights and lam")
    # the problem itself (as_problem would read its costs C, which forms its pairs), or the one of a pair set
    ranking = problem if isinstance(problem, RankingProblem) and C is None else as_problem(problem, C)[0]
    if formulation == "auto":
        formulation = choose_formulation(ranking)  # both primal forms state every variant; counts only
    ranking.check_formulation(formulation)  # from counts: before a pair, D or a CVXPY object is allocated
    if formulation == "hinge":
        return build_hinge(ranking, costs=costs)
    builder = {"primal": build_primal, "lifted": build_lifted_primal, "dual": build_dual}[formulation]
    return builder(problem, C=C, costs=costs)
