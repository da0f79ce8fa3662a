"""Features that carry no pair information, found once and left out of a pair-free solve.

Problem (9) reads ``X`` only through the pair differences ``d_i = x_a - x_b`` of documents of one query, and
``w = Σ_i α_i d_i / (2λ)`` at the optimum (16). Two kinds of column are therefore redundant, exactly:

* a feature constant within every query (all zeros, or a query-level feature): ``d_ij = 0`` for every pair, so
  ``w_j = 0`` at the optimum and the column changes no margin;
* a feature equal to another one in every document: the two weights are equal at the optimum (only their sum
  reaches a margin, and ``w_j² + w_k²`` is least for equal parts).

With the ``r`` groups of equal live columns as the columns of ``E`` (``n x r``, ``1/√k_g`` on the ``k_g`` features
of group ``g``: orthonormal columns), ``X E`` has the column ``√k_g x_g`` per group, and

.. math::

    \\min_w\\; λ\\lVert w\\rVert^2 + \\sum_i c_i \\max(0, 1 - \\langle w, d_i\\rangle)
    \\;=\\; \\min_u\\; λ\\lVert u\\rVert^2 + \\sum_i c_i \\max(0, 1 - \\langle u, E^\\top d_i\\rangle),
    \\qquad w = E u,

the same values at ``w = Eu`` and the same duals (``‖Σ α_i Eᵀd_i‖ = ‖Σ α_i d_i‖``), so a bound of the reduced
problem bounds (9). The real sample (``train.letor``: 300 features) has 93 features constant within every query
and 7 duplicates: it is solved on 200 columns, and every Newton step's ``n x n`` algebra shrinks with them
(the times: docs/native-measurements.md, "Measurements (2026-11-26, night)").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Most entries of a dense ``X`` that :func:`feature_map` inspects (32 MB in float64): beyond, the
#: inspection and the reduced copy cost more than the Newton phase's ``n x n`` algebra saves.
MAX_ENTRIES = 1 << 22


@dataclass(frozen=True)
class FeatureMap:
    """``w = E u`` between the ``n`` features of ``X`` and the ``r`` columns of :meth:`reduce_x`.

    Attributes
    ----------
    n_features : int
        ``n``, the columns of ``X``.
    columns : ndarray of int64, shape (r,)
        One feature of each group (its first), in the order of the reduced columns.
    group : ndarray of int64, shape (n,)
        The reduced column of each feature, ``-1`` for one constant within every query.
    size : ndarray of int64, shape (r,)
        ``k_g``, the features of each group.
    """

    n_features: int
    columns: np.ndarray
    group: np.ndarray
    size: np.ndarray

    @property
    def n_reduced(self) -> int:
        """``r``, the columns left."""
        return int(self.columns.shape[0])

    def reduce_x(self, X: np.ndarray) -> np.ndarray:
        """``X E`` (``m x r``, C-contiguous float64): ``√k_g`` times a representative column per group."""
        Xr = np.take(X, self.columns, axis=1).astype(np.float64, copy=False)
        Xr *= np.sqrt(self.size)
        return Xr

    def to_reduced(self, w) -> np.ndarray:
        """``u = Eᵀ w``: ``Σ_{j∈g} w_j / √k_g`` per group (a warm start's image; ``E Eᵀ w`` scores every pair
        as ``w`` does)."""
        w = np.asarray(w, dtype=np.float64)
        live = self.group >= 0
        u = np.bincount(self.group[live], weights=w[live], minlength=self.n_reduced)
        return u / np.sqrt(self.size)

    def to_full(self, u) -> np.ndarray:
        """``w = E u``: ``u_g / √k_g`` on each feature of group ``g``, 0 on the dropped ones."""
        u = np.asarray(u, dtype=np.float64) / np.sqrt(self.size)
        w = np.zeros(self.n_features)
        live = self.group >= 0
        w[live] = u[self.group[live]]
        return w


def feature_map(X, query_codes) -> FeatureMap | None:
    """The :class:`FeatureMap` of a dense ``X`` (``m x n``) with queries ``query_codes`` (``m``), or None when
    every column carries pair information of its own, ``X`` is sparse or has more than :data:`MAX_ENTRIES`.

    A column is dropped when it is constant within every query (``d_ij = 0`` for every pair, exactly); equal live
    columns (every entry equal) form one group. One comparison of consecutive documents of a query, one product
    with ``X`` and a comparison of the columns whose products are within rounding of each other.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 2.0, 0.0, 2.0], [1.0, 3.0, 0.0, 3.0], [5.0, 1.0, 0.0, 1.0]])
    >>> fmap = feature_map(X, [0, 0, 1])      # column 0 is constant in each query, 2 is all zeros, 1 == 3
    >>> fmap.columns.tolist(), fmap.group.tolist(), fmap.size.tolist()
    ([1], [-1, 0, -1, 0], [2])
    >>> fmap.to_full(fmap.to_reduced([0.0, 1.0, 7.0, 3.0])).round(12).tolist()   # equal features share their sum
    [0.0, 2.0, 0.0, 2.0]
    """
    if not isinstance(X, np.ndarray) or X.ndim != 2 or X.size == 0 or X.size > MAX_ENTRIES:
        return None
    m, n = X.shape
    qc = np.asarray(query_codes).ravel()
    order = np.argsort(qc, kind="stable")
    A = X if np.all(order[1:] > order[:-1]) else X[order]  # rows by query (no copy when they are already)
    step = A[1:] != A[:-1]  # a value changes between consecutive documents ...
    step[qc[order][1:] != qc[order][:-1]] = False  # ... of one query
    live = np.flatnonzero(step.any(axis=0))
    if live.shape[0] == 0:  # nothing to learn: w = 0; the unreduced solve says so
        return None
    # equal columns: sorted by a random projection (equal columns project alike, up to the rounding of the
    # product), each compared exactly with its neighbour when their projections are within rounding; a pair that
    # the rounding separates stays two groups
    h = (np.random.default_rng(0).standard_normal(m) @ X)[live]
    by_h = np.argsort(h, kind="stable")
    h, cols = h[by_h], live[by_h]
    near = np.flatnonzero(np.abs(np.diff(h)) <= 1e-9 * (np.abs(h[1:]) + np.abs(h[:-1])) + 1e-300)
    same = np.zeros(max(cols.shape[0] - 1, 0), dtype=bool)
    same[near] = (X[:, cols[near + 1]] == X[:, cols[near]]).all(axis=0)
    if not same.any() and live.shape[0] == n:
        return None
    label = np.concatenate([[0], np.cumsum(~same)])  # group of each sorted column, in the sorted order
    # groups renumbered in the order of their first feature
    firsts = np.full(label[-1] + 1, n, dtype=np.int64)
    np.minimum.at(firsts, label, cols)
    rank = np.empty_like(firsts)
    rank[np.argsort(firsts, kind="stable")] = np.arange(firsts.shape[0])
    group = np.full(n, -1, dtype=np.int64)
    group[cols] = rank[label]
    columns = np.sort(firsts)
    size = np.bincount(group[group >= 0], minlength=columns.shape[0]).astype(np.int64)
    return FeatureMap(n_features=n, columns=columns, group=group, size=size)
