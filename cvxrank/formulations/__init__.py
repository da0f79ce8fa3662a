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

from cvxrank.exceptions import ValidationError
from cvxrank.formulations.base import COST_PARAMETRIZATIONS, Formulation, check_costs, cost_parameters
from cvxrank.formulations.dual import build_dual
from cvxrank.formulations.hinge import build_hinge
from cvxrank.formulations.primal import build_lifted_primal, build_primal
from cvxrank.pairs import PairSet

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


def choose_formulation(pairs: PairSet) -> str:
    """Pick ``"primal"`` or ``"lifted"`` for the QP (14) by problem size.

    The rule compares the non-zeros of the two constraint matrices: the
    materialised ``D`` has ``nnz(D) ≈ n_pairs x (features per document)``
    entries, the lift ``nnz(X) + n_documents + 3 n_pairs``; the smaller one
    wins (ties go to the lift). Measured with Clarabel by ``cvxrank bench
    formulations`` (``docs/formulation-choice.md``): the lift is the fastest
    form from about 6 documents a query on and 11x faster than the faster dense
    primal on OHSUMED-sized data. For very short queries, where ``D`` is the
    smaller, the dual (18) is often faster still with interior-point solvers
    but ADMM solvers (OSQP) stall on it, so the rule keeps the primal there.
    """
    X = pairs.data.X
    per_doc = X.nnz / X.shape[0] if hasattr(X, "nnz") else X.shape[1]
    dense_nnz = pairs.n_pairs * per_doc
    lifted_nnz = (X.nnz if hasattr(X, "nnz") else X.size) + pairs.n_documents + 3 * pairs.n_pairs
    return "lifted" if lifted_nnz <= dense_nnz else "primal"


def build(pairs: PairSet, C=None, *, weights=None, lam=None, formulation: str = "auto",
          costs: str = "scale") -> Formulation:
    """Build a formulation by name.

    Parameters
    ----------
    pairs : PairSet
    C : array-like, optional
        Per-pair QP costs, for ``primal``, ``lifted``, ``dual`` and ``auto``.
        Derived as ``weights / (2 lam)`` (Theorem 1) when omitted.
    weights, lam : array-like and float, optional
        Pair weights and ``λ`` of the hinge form; ``hinge`` needs them.
    formulation : {"auto", "primal", "lifted", "dual", "hinge"}
        ``"auto"`` (default) calls :func:`choose_formulation`.
    costs : {"scale", "per_pair"}, default "scale"
        How the QP forms hold ``C`` as a ``cp.Parameter``
        (:func:`~cvxrank.formulations.base.cost_parameters`): one scale
        factor (fastest; re-solves any multiple of ``C``, such as a ``λ``
        path) or one entry per pair (re-solves any costs). The hinge form
        holds its weights the same way, and ``lam``.
    """
    if formulation not in FORMULATIONS + ("auto",):
        raise ValidationError(
            f"unknown formulation {formulation!r}; choose one of {', '.join(FORMULATIONS + ('auto',))}"
        )
    if costs not in COST_PARAMETRIZATIONS:
        raise ValidationError(f"unknown cost parametrization {costs!r}; choose one of {', '.join(COST_PARAMETRIZATIONS)}")
    if formulation == "hinge":
        if weights is None or lam is None:
            raise ValidationError("the hinge formulation needs weights and lam")
        return build_hinge(pairs, weights, lam, costs=costs)
    if C is None:
        if weights is None or lam is None:
            raise ValidationError(f"the {formulation} formulation needs C, or weights and lam")
        from cvxrank.costs import theorem1_C

        C = theorem1_C(check_costs(weights, pairs.n_pairs, "weights"), lam)
    if formulation == "auto":
        formulation = choose_formulation(pairs)
    builder = {"primal": build_primal, "lifted": build_lifted_primal, "dual": build_dual}[formulation]
    return builder(pairs, C, costs=costs)
