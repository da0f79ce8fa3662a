"""Pair weights as a table per (query, grade pair), built without forming pairs.

The weighted hinge loss (9) of Cao et al. (SIGIR 2006) weighs a pair of
grade pair ``k = (a, b)`` in query ``q`` by ``τ_k μ_q``. Every pair of one
(query, grade pair) cell has the same weight, so the weights are a table
``c[q, a, b]`` of ``n_queries x n_grades x n_grades`` numbers instead of
one number per pair: this is what lets :mod:`cvxrank.native.oracle` work
without materialising pairs.

The pair count of a cell is ``N[q, a] N[q, b]``, with ``N[q, g]`` the number
of documents of grade ``g`` in query ``q``; so the balanced ``μ`` of (10)/SIGIR
needs no pairs either.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cvxrank.costs import Costs, _plain
from cvxrank.data import RankingData
from cvxrank.exceptions import ValidationError
from cvxrank.pairs import PairSet

__all__ = ["CostTable", "cost_table", "cost_table_from_pairs", "grade_counts"]


def grade_counts(data: RankingData) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Grades, grade code of every document and documents per (query, grade).

    Returns
    -------
    grades : ndarray of shape (n_grades,)
        The distinct grades, ascending; the code of a grade is its position.
    codes : ndarray of int64, shape (n_documents,)
    counts : ndarray of int64, shape (n_queries, n_grades)
        ``counts[q, g]``: documents of grade ``grades[g]`` in query ``data.query_ids[q]``.

    Examples
    --------
    >>> import numpy as np
    >>> data = RankingData(np.zeros((5, 1)), y=[2, 1, 1, 0, 3], qid=[1, 1, 1, 1, 2])
    >>> grades, codes, counts = grade_counts(data)
    >>> grades.tolist(), counts.tolist()
    ([0, 1, 2, 3], [[1, 2, 1, 0], [0, 0, 0, 1]])
    """
    grades, codes = np.unique(data.y, return_inverse=True)
    codes = codes.ravel().astype(np.int64)
    G = grades.shape[0]
    counts = np.bincount(data.query_index * G + codes, minlength=data.n_queries * G).reshape(data.n_queries, G)
    return grades, codes, counts.astype(np.int64)


def _cell_pairs(counts: np.ndarray) -> np.ndarray:
    """``n[q, a, b] = N[q, a] N[q, b]`` for ``a > b``, else 0: the pairs of every cell."""
    counts = np.asarray(counts, dtype=np.int64)
    return np.tril(counts[:, :, None] * counts[:, None, :], k=-1)


@dataclass(frozen=True, eq=False)
class CostTable:
    """Weights ``c[q, a, b] = τ_(a,b) μ_q`` of the loss (9)/SIGIR per (query, grade pair).

    Attributes
    ----------
    grades : ndarray of shape (n_grades,)
        Grades, ascending; ``a`` and ``b`` index this array.
    query_ids : ndarray of shape (n_queries,)
        Query ids, in the order of ``RankingData.query_ids``.
    values : ndarray of shape (n_queries, n_grades, n_grades)
        ``values[q, a, b]`` is the weight of a pair "grade ``a`` over grade
        ``b``" in query ``q``; zero unless ``a > b``.
    n_pairs : ndarray of int64, same shape
        Number of pairs of each cell, ``N[q, a] N[q, b]``.
    """

    grades: np.ndarray
    query_ids: np.ndarray
    values: np.ndarray
    n_pairs: np.ndarray

    def __post_init__(self):
        Q, G = self.query_ids.shape[0], self.grades.shape[0]
        if self.values.shape != (Q, G, G) or self.n_pairs.shape != (Q, G, G):
            raise ValidationError(f"a cost table for {Q} queries and {G} grades must have shape {(Q, G, G)}, "
                                  f"got {self.values.shape} and {self.n_pairs.shape}")
        if not np.all(np.isfinite(self.values)) or np.any(self.values < 0):
            raise ValidationError("pair weights must be non-negative and finite")
        if np.any(np.triu(np.abs(self.values).sum(axis=0)) > 0):
            raise ValidationError("a cost table has weights only for (higher grade, lower grade) cells")

    @property
    def total_pairs(self) -> int:
        """Number of pairs ``ℓ`` (all within-query pairs of different grades)."""
        return int(self.n_pairs.sum())

    @property
    def total_weight(self) -> float:
        """``Σ_i c_i`` over all pairs: the loss at ``w = 0``."""
        return float(np.sum(self.values * self.n_pairs))

    def weight_of(self, query: np.ndarray, higher: np.ndarray, lower: np.ndarray) -> np.ndarray:
        """Weights of pairs given by query position and grade codes (for tests and explicit pairs)."""
        return self.values[query, higher, lower]


def _tau_matrix(costs: Costs, grades: np.ndarray, present: np.ndarray) -> np.ndarray:
    """``τ`` as a ``G x G`` matrix (``[a, b]`` for ``a > b``), checked against the grade pairs present."""
    G = grades.shape[0]
    if costs.tau is None:
        return np.tril(np.ones((G, G)), k=-1)
    costs.check_grade_pairs([(_plain(grades[a]), _plain(grades[b])) for a, b in zip(*np.nonzero(present))])
    out = np.zeros((G, G))
    for (hi, lo), value in costs.tau.items():
        out[int(np.searchsorted(grades, hi)), int(np.searchsorted(grades, lo))] = value
    return out


def cost_table(data: RankingData, tau=None, mu=None, *, costs: Costs | None = None) -> CostTable:
    """The weights ``τ_k μ_q`` of (9)/SIGIR as a :class:`CostTable`, without forming pairs.

    Parameters
    ----------
    data : RankingData
    tau, mu : optional
        As for :class:`cvxrank.costs.Costs` (``τ`` per grade pair, 0 drops
        it; ``μ`` None, ``"balanced"`` or a mapping). ``"balanced"`` is
        (10)/SIGIR, ``μ_q = max_j #pairs(q_j) / #pairs(q)``, with
        ``#pairs(q) = Σ_{a>b} N[q, a] N[q, b]``.
    costs : Costs, optional
        The costs value itself, instead of ``tau``/``mu``. Explicit per-pair
        weights have no table here: read one off pairs with
        :func:`cost_table_from_pairs`.

    Returns
    -------
    CostTable

    Raises
    ------
    ValidationError
        For bad ``tau`` or ``mu`` (same messages as ``pair_weights``), data
        without any pair, or weights that are all zero.

    Examples
    --------
    >>> import numpy as np
    >>> data = RankingData(np.eye(4), [2, 1, 0, 1], qid=[1, 1, 1, 2])
    >>> table = cost_table(data, tau={(2, 1): 3.0, (2, 0): 3.0, (1, 0): 0.5})
    >>> table.values[0][np.tril_indices(3, -1)].tolist(), table.total_pairs
    ([0.5, 3.0, 3.0], 3)
    """
    if not isinstance(data, RankingData):
        raise ValidationError(f"cost_table takes RankingData, got {type(data).__name__}")
    costs = Costs.coerce(costs, tau=tau, mu=mu)
    if costs.weights is not None:
        raise ValidationError("explicit per-pair weights have no (query, grade pair) table; "
                              "use cost_table_from_pairs(pairs, weights)")
    grades, _, counts = grade_counts(data)
    n_pairs = _cell_pairs(counts)
    per_query = n_pairs.sum(axis=(1, 2))
    if per_query.sum() == 0:
        raise ValidationError(f"no pairs: each of the {data.n_queries} queries has a single grade, "
                              "so there is nothing to rank")
    tau_m = _tau_matrix(costs, grades, n_pairs.sum(axis=0) > 0)
    mu_v = costs.mu_per_query(data.query_ids, per_query)
    values = mu_v[:, None, None] * tau_m[None, :, :] * (n_pairs > 0)
    if not np.any(values > 0):
        raise ValidationError("every pair has weight 0: nothing to learn")
    return CostTable(grades, data.query_ids, values, n_pairs)


def cost_table_from_pairs(pairs: PairSet, weights, *, rtol: float = 1e-12) -> CostTable:
    """Read a :class:`CostTable` off explicit per-pair weights.

    Works when ``pairs`` are all the within-query pairs of ``pairs.data``
    (from :func:`cvxrank.pairs.make_pairs`) and ``weights`` are constant
    within each (query, grade pair) cell, i.e. of the form ``τ_k μ_q`` or
    any other per-cell table.

    Raises
    ------
    ValidationError
        For explicit preference pairs, a pair set that is not every pair of
        the data, or weights that differ inside a cell; the message points to
        the explicit-pair solvers.
    """
    hint = "; use an explicit-pair solver instead (e.g. solve(formulation, 'clarabel') or 'subgradient')"
    if pairs.source != "grades":
        raise ValidationError(f"the pair-free solver needs pairs formed from grades, got {pairs.source} pairs{hint}")
    weights = np.asarray(weights, dtype=np.float64)
    if weights.shape != (pairs.n_pairs,):
        raise ValidationError(f"weights must have one value per pair ({pairs.n_pairs}), got shape {weights.shape}")
    data = pairs.data
    grades, _, counts = grade_counts(data)
    n_pairs = _cell_pairs(counts)
    G = grades.shape[0]
    a = np.searchsorted(grades, pairs.pair_type[:, 0])
    b = np.searchsorted(grades, pairs.pair_type[:, 1])
    cell = (pairs.query * G + a) * G + b
    seen = np.bincount(cell, minlength=n_pairs.size).reshape(n_pairs.shape)
    if pairs.n_pairs != int(n_pairs.sum()) or not np.array_equal(seen, n_pairs):
        raise ValidationError(f"the pair set holds {pairs.n_pairs} pairs, not the {int(n_pairs.sum())} "
                              f"within-query pairs of its data: the pair-free solver needs all of them{hint}")
    low = np.full(n_pairs.size, np.inf)
    high = np.full(n_pairs.size, -np.inf)
    np.minimum.at(low, cell, weights)
    np.maximum.at(high, cell, weights)
    used = seen.ravel() > 0
    spread = high[used] - low[used]
    if np.any(spread > rtol * np.maximum(np.abs(high[used]), 1e-300)):
        j = np.flatnonzero(used)[int(np.argmax(spread))]
        q, rest = divmod(j, G * G)
        ga, gb = divmod(rest, G)
        raise ValidationError(
            f"pair weights differ inside query {_plain(data.query_ids[q])!r}, grade pair "
            f"({_plain(grades[ga])}, {_plain(grades[gb])}): from {low[j]:g} to {high[j]:g}; the pair-free solver "
            f"needs one weight per (query, grade pair), of the form tau_k * mu_q{hint}")
    values = np.where(used, high, 0.0).reshape(n_pairs.shape)
    return CostTable(grades, data.query_ids, values, n_pairs)
