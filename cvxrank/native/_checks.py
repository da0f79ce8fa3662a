"""Checks of the options every native pair-free solver takes (one place, one message each)."""

from __future__ import annotations

import numpy as np

from cvxrank._validation import (
    check_max_iter,
    check_time_limit,
    check_tol,
    check_vector,
)
from cvxrank.exceptions import ValidationError
from cvxrank.native.costs import cost_table, cost_table_from_pairs
from cvxrank.problem import RankingProblem

__all__ = ["check_common", "pairfree_problem", "positive_int"]


def positive_int(value, name: str) -> int:
    """``value`` as an int, refused unless a positive integer (``True`` is not one)."""
    return check_max_iter(value, name)


def check_common(tol, time_limit, warm_start_w, n_features: int) -> np.ndarray:
    """Refuse a ``tol`` outside (0, 1) and a ``time_limit`` that is not a positive number of seconds;
    return the starting point (``w = 0`` by default) as ``n_features`` finite floats."""
    check_tol(tol)
    check_time_limit(time_limit)
    w = np.zeros(n_features) if warm_start_w is None else check_vector("warm_start_w", warm_start_w, n_features)
    with np.errstate(over="ignore"):
        squares = float(w @ w)
    if not np.isfinite(squares):
        raise ValidationError(f"warm_start_w is too large: its squared norm overflows float64 (largest entry "
                              f"{float(np.max(np.abs(w))):.3g}); scale it down or start from 0")
    return w


def pairfree_problem(problem, solver: str, loss: str, instead: str, extensions=frozenset({"margin"})):
    """The :class:`~cvxrank.problem.RankingProblem` a pair-free solver reads (a Formulation states its
    problem) and its cost table, refusing a variant other than ``loss`` with margins 1 or per grade pair
    (and the other ``extensions`` of :attr:`cvxrank.variants.Variant.extensions` the solver takes).

    ``instead`` names where to go for the other problems (``"use 'truncated_newton' for ..."``). Returns
    ``(problem, costs)``: the table from the pairs and their weights when the problem is stated on them
    (:attr:`~cvxrank.problem.RankingProblem.needs_pairs`), else
    from the data and the problem's costs (no pair formed).
    """
    problem = getattr(problem, "ranking", problem)
    if not isinstance(problem, RankingProblem):
        raise ValidationError(f"{solver} takes a RankingProblem, got {type(problem).__name__}")
    if problem.groups is not None:  # costs per document: the door sends them to cvxrank.native.document_solvers
        raise ValidationError(f"this {solver} backend reads costs per query and grade pair; a problem made from "
                              "preference groups (costs per document) is solved through cvxrank.solve(problem, "
                              f"{solver!r})")
    variant = problem.variant
    if variant.loss != loss or not variant.extensions <= extensions:
        more = "".join(f", {e}" for e in sorted(extensions - {"margin"}))
        raise ValidationError(f"{solver} solves the {loss.replace('_', ' ')} with margins 1 or per grade pair{more}, "
                              f"not the variant {variant!r}; {instead}")
    if problem.needs_pairs:
        return problem, cost_table_from_pairs(problem.pairs, problem.weights)
    return problem, cost_table(problem.data, costs=problem.costs)
