"""The pairwise transform: preference pairs inside each query.

This is the one place that turns ranking data into pairs (equations (4)-(5)
of Cao et al., SIGIR 2006; (4)-(5) of Xu et al., ECML 2006). Every pair is
stored with the better document first, so ``z_i = +1`` throughout and the
pair's difference vector is ``d_i = x_better - x_worse``. The ``ℓ x m``
incidence matrix ``P`` (``+1`` at the better document, ``-1`` at the worse)
gives ``D = P X`` without materialising it: ``D w = P (X w)`` and
``Dᵀ a = Xᵀ (Pᵀ a)``. Products and differences are computed in float64, also
when ``X`` is stored in float32 (:mod:`cvxrank._float64`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from cvxrank._float64 import dense_rows, matvec, rmatvec
from cvxrank._memory import check_difference_matrix, check_pairs
from cvxrank.data import RankingData, _as_features
from cvxrank.exceptions import ValidationError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["count_pairs", "PairSet", "make_pairs", "merge_pairs", "pair_degrees", "preference_pairs"]


@dataclass(frozen=True, eq=False)
class PairSet:
    """Preference pairs of one data set, better document first.

    Built by :func:`make_pairs` (from grades) or :func:`preference_pairs`
    (explicit, click-through style pairs); not meant to be built by hand.

    **Pair order.** Every per-pair array of cvxrank (the attributes below, pair weights and
    ``C``, margins, dual variables ``α``) follows one order: :func:`make_pairs` orders pairs by
    query (ascending query id, the order of ``data.query_ids``), then by the better document
    (grade descending, ties by row of ``X``), then by the worse document (the same way);
    :func:`preference_pairs` keeps the order it was given. ``query``, ``better``, ``worse`` and
    ``pair_type`` name each pair's query and documents, so a value per query ``v`` becomes one
    per pair as ``v[pairs.query]``.

    Attributes
    ----------
    data : RankingData
        The documents the pairs index into.
    better, worse : ndarray of int64, shape (n_pairs,)
        Document indices (rows of ``data.X``) of each pair.
    query : ndarray of int64, shape (n_pairs,)
        Query of each pair, as a position in ``data.query_ids``.
    pair_type : ndarray, shape (n_pairs, 2)
        Grade pair ``(higher, lower)`` of each pair: the ``k(i)`` of the papers.
    P : scipy.sparse.csr_matrix, shape (n_pairs, n_documents)
        Incidence matrix, ``+1`` at ``better`` and ``-1`` at ``worse``.
    """

    data: RankingData
    better: np.ndarray
    worse: np.ndarray
    query: np.ndarray
    pair_type: np.ndarray
    source: str = "grades"
    P: sp.csr_matrix = field(init=False, repr=False)

    def __post_init__(self):
        n = self.better.shape[0]
        indptr = np.arange(0, 2 * n + 1, 2, dtype=np.int64)
        indices = np.empty(2 * n, dtype=np.int64)
        indices[0::2] = self.better
        indices[1::2] = self.worse
        values = np.tile(np.array([1.0, -1.0]), n)
        P = sp.csr_matrix((values, indices, indptr), shape=(n, self.data.n_documents))
        object.__setattr__(self, "P", P)

    # -- sizes -----------------------------------------------------------
    @property
    def n_pairs(self) -> int:
        """Number of pairs ``ℓ``."""
        return int(self.better.shape[0])

    @property
    def n_features(self) -> int:
        """Number of features ``n``."""
        return self.data.n_features

    @property
    def n_documents(self) -> int:
        """Number of documents ``m``."""
        return self.data.n_documents

    def __len__(self) -> int:
        return self.n_pairs

    @cached_property
    def pairs_per_query(self) -> np.ndarray:
        """Number of pairs of each query, aligned with ``data.query_ids``."""
        return np.bincount(self.query, minlength=self.data.n_queries)

    @cached_property
    def types(self) -> list[tuple]:
        """The distinct grade pairs ``(higher, lower)`` present, sorted."""
        uniq = np.unique(self.pair_type, axis=0)
        return [tuple(row.tolist()) for row in uniq]

    @cached_property
    def summary(self) -> pd.DataFrame:
        """One row per query: documents, distinct grades and pairs.

        Queries with a single grade give no pair; they show here with
        ``n_pairs == 0`` instead of raising.
        """
        import pandas as pd  # here only: the solvers' import path stays without pandas (a lean dask client)

        d = self.data
        docs = np.bincount(d.query_index, minlength=d.n_queries)
        grade_codes = np.unique(d.y, return_inverse=True)[1].ravel()
        uniq = np.unique(np.stack([d.query_index, grade_codes]), axis=1)
        n_grades = np.bincount(uniq[0], minlength=d.n_queries)
        return pd.DataFrame(
            {"n_documents": docs, "n_grades": n_grades, "n_pairs": self.pairs_per_query},
            index=pd.Index(d.query_ids, name="qid"),
        )

    @property
    def n_queries_without_pairs(self) -> int:
        """Number of queries that contribute no pair (a single grade, or no preference)."""
        return int(np.sum(self.pairs_per_query == 0))

    def __repr__(self) -> str:
        extra = ""
        if self.n_queries_without_pairs:
            extra = f", queries_without_pairs={self.n_queries_without_pairs}"
        return (
            f"PairSet(n_pairs={self.n_pairs}, n_documents={self.n_documents}, "
            f"n_features={self.n_features}, n_queries={self.data.n_queries}{extra})"
        )

    # -- linear maps -----------------------------------------------------
    def margins(self, w) -> np.ndarray:
        """Pair margins ``z_i <w, d_i> = (P X w)_i`` without forming ``D``."""
        return self.P @ matvec(self.data.X, w)

    def rmatvec(self, a) -> np.ndarray:
        """``Dᵀ a = Xᵀ (Pᵀ a)`` without forming ``D``; ``w = Dᵀ α`` is (16)/SIGIR."""
        return rmatvec(self.data.X, self.P.T @ np.asarray(a, dtype=np.float64))

    def difference_rows(self, idx) -> np.ndarray:
        """Dense difference vectors ``d_i`` of the pairs ``idx`` (``len(idx) x n_features``, float64)."""
        rows = dense_rows(self.data.X, self.better[idx])
        rows -= dense_rows(self.data.X, self.worse[idx])
        return rows

    @cached_property
    def difference_norms(self) -> np.ndarray:
        """``‖d_i‖`` of every pair, computed in chunks without keeping ``D``.

        Each row is scaled by its largest entry first, so entries beyond
        ``1e154`` (whose squares overflow) still give the right norm.
        """
        out = np.empty(self.n_pairs)
        step = max(1, 2_000_000 // self.n_features)
        for lo in range(0, self.n_pairs, step):
            idx = np.arange(lo, min(lo + step, self.n_pairs))
            rows = self.difference_rows(idx)
            scale = np.abs(rows).max(axis=1)
            scale[scale == 0] = 1.0
            out[idx] = scale * np.linalg.norm(rows / scale[:, None], axis=1)
        return out

    def difference_matrix(self):
        """Materialise ``D = P X`` (``n_pairs x n_features``).

        Sparse CSR when ``data.X`` is sparse, a dense array otherwise. This is
        the one place that builds ``D``; prefer :meth:`margins` and
        :meth:`rmatvec` where the products suffice.

        Raises
        ------
        ValidationError
            When a difference overflows float64 (features near ``1.8e308``).
        cvxrank._memory.MemoryBudgetError
            When ``D`` with the copies CVXPY makes of it would exceed the memory
            budget (:mod:`cvxrank._memory`); the message names the lifted
            formulation and the pair-free solver.
        """
        check_difference_matrix(self)
        X = self.data.X.astype(np.float64, copy=False)  # differences of float32 features in float64
        with np.errstate(over="ignore", invalid="ignore"):
            D = (self.P @ X).tocsr() if sp.issparse(X) else X[self.better] - X[self.worse]
        if not np.all(np.isfinite(D.data if sp.issparse(D) else D)):
            big = float(abs(X).max())
            raise ValidationError(
                f"pair differences x_better - x_worse overflow float64 (features reach |x| = {big:.3g}); "
                "rescale the features"
            )
        return D


def _sorted_runs(data: RankingData):
    """Documents sorted by query, then grade descending (stable), with the start and end of each one's
    (query, grade) run and of its query block, as positions in the sorted order."""
    q, y = data.query_index, data.y
    order = np.lexsort((-y, q))
    qs, ys = q[order], y[order]
    m = order.shape[0]
    new_run = np.ones(m, dtype=bool)
    new_run[1:] = (qs[1:] != qs[:-1]) | (ys[1:] != ys[:-1])
    new_block = np.ones(m, dtype=bool)
    new_block[1:] = qs[1:] != qs[:-1]
    run_start = np.flatnonzero(new_run)
    run_end = np.append(run_start[1:], m)[np.cumsum(new_run) - 1]
    block_start = np.flatnonzero(new_block)
    block_end = np.append(block_start[1:], m)[np.cumsum(new_block) - 1]
    return order, run_start[np.cumsum(new_run) - 1], run_end, block_start[np.cumsum(new_block) - 1], block_end


def count_pairs(data: RankingData) -> np.ndarray:
    """Number of within-query pairs of each query, without forming them: ``O(m log m)`` time, ``O(m)`` memory.

    Equals ``make_pairs(data).pairs_per_query`` (in the order of ``data.query_ids``).

    Examples
    --------
    >>> import numpy as np
    >>> count_pairs(RankingData(np.zeros((5, 1)), y=[2, 1, 1, 0, 3], qid=[1, 1, 1, 1, 2])).tolist()
    [5, 0]
    """
    if not isinstance(data, RankingData):
        raise ValidationError(f"count_pairs takes RankingData, got {type(data).__name__}")
    order, _, run_end, _, block_end = _sorted_runs(data)
    return np.bincount(data.query_index[order], weights=block_end - run_end,
                       minlength=data.n_queries).astype(np.int64)


def pair_degrees(data: RankingData) -> np.ndarray:
    """Number of pairs each document belongs to (as the better or the worse one), without forming them.

    A document of grade ``g`` in a query pairs with every document of that query with another
    grade; the degrees sum to twice the number of pairs. ``pair_degrees(data) @ row_nnz`` is the
    bound on ``nnz(D)`` that :func:`cvxrank._memory.difference_matrix_bytes` counts from the pairs.

    Examples
    --------
    >>> import numpy as np
    >>> pair_degrees(RankingData(np.zeros((5, 1)), y=[2, 1, 1, 0, 3], qid=[1, 1, 1, 1, 2])).tolist()
    [3, 2, 2, 3, 0]
    """
    if not isinstance(data, RankingData):
        raise ValidationError(f"pair_degrees takes RankingData, got {type(data).__name__}")
    order, run_start, run_end, block_start, block_end = _sorted_runs(data)
    degrees = np.empty(order.shape[0], dtype=np.int64)
    degrees[order] = (block_end - run_end) + (run_start - block_start)
    return degrees


def make_pairs(data: RankingData) -> PairSet:
    """All within-query pairs of documents with different grades.

    Pairs are formed only inside a query and only between different grades;
    equal grades give no pair, and a query with a single grade gives none
    (reported by :attr:`PairSet.summary`, not an error). Pairs are ordered by
    query (ascending query id, as ``data.query_ids``), then by the better document (grade
    descending, ties by row), then by the worse document (the same way): the one pair order of
    weights, costs ``C``, margins and dual variables (:class:`PairSet`).

    Parameters
    ----------
    data : RankingData

    Returns
    -------
    PairSet

    Raises
    ------
    ValidationError
        When no pair at all remains (every query has a single grade).
    cvxrank._memory.MemoryBudgetError
        When the pairs, counted from the grades before any is formed, would exceed the memory
        budget (:func:`cvxrank._memory.check_pairs`); the message names the pair-free solvers.

    Examples
    --------
    >>> import numpy as np
    >>> data = RankingData(np.arange(8.0).reshape(4, 2), y=[2, 1, 1, 0], qid=[1, 1, 1, 2])
    >>> pairs = make_pairs(data)
    >>> pairs
    PairSet(n_pairs=2, n_documents=4, n_features=2, n_queries=2, queries_without_pairs=1)
    >>> pairs.better.tolist(), pairs.worse.tolist(), pairs.types
    ([0, 0], [1, 2], [(2, 1)])
    """
    if not isinstance(data, RankingData):
        raise ValidationError(f"make_pairs takes RankingData, got {type(data).__name__}")
    order, _, run_end, _, block_end = _sorted_runs(data)
    q, y = data.query_index, data.y
    m = order.shape[0]
    # Partners of sorted position a: every later position of its query with a
    # strictly lower grade, i.e. the contiguous range [run_end[a], block_end[a]).
    count = block_end - run_end
    total = int(count.sum())
    if total == 0:
        raise ValidationError(
            f"no pairs: each of the {data.n_queries} queries has a single grade, "
            "so there is nothing to rank"
        )
    check_pairs(total, m)  # counted from the grades: refused before any pair array exists
    idx = np.arange(m)
    a = np.repeat(idx, count)
    offset = np.arange(total) - np.repeat(np.cumsum(count) - count, count)
    b = np.repeat(run_end, count) + offset
    better, worse = order[a], order[b]
    pair_type = np.stack([y[better], y[worse]], axis=1)
    return PairSet(data, better.astype(np.int64), worse.astype(np.int64), q[better], pair_type)


def merge_pairs(data, better, worse, weights):
    """Identical pairs merged into one with the sum of their weights, in the order of :func:`preference_pairs`
    (by query, then better, then worse document).

    Parameters
    ----------
    data : RankingData
    better, worse : ndarray of int
        Rows of ``data.X``, one pair per entry.
    weights : ndarray of float
        One per pair.

    Returns
    -------
    (better, worse, weights)
        The distinct pairs and their summed weights.

    Examples
    --------
    >>> from cvxrank.data import RankingData
    >>> d = RankingData(np.eye(3), [1, 0, 0], qid=[1, 1, 1])
    >>> b, w, c = merge_pairs(d, np.array([0, 0, 0]), np.array([2, 1, 2]), np.array([1.0, 2.0, 3.0]))
    >>> b.tolist(), w.tolist(), c.tolist()
    ([0, 0], [1, 2], [2.0, 4.0])
    """
    better, worse = np.asarray(better), np.asarray(worse)
    weights = np.asarray(weights, dtype=np.float64)
    srt = np.lexsort((worse, better, data.query_index[better]))
    better, worse, weights = better[srt], worse[srt], weights[srt]
    new = np.ones(better.size, dtype=bool)
    new[1:] = (better[1:] != better[:-1]) | (worse[1:] != worse[:-1])
    first = np.flatnonzero(new)
    return better[first], worse[first], np.add.reduceat(weights, first) if first.size else weights[:0]


def preference_pairs(data, better, worse, qid=None) -> PairSet:
    """Explicit preference pairs ("document ``a`` is preferred to ``b``").

    The click-through input of Joachims (2002): pairs are given directly
    instead of derived from grades. Every pair gets the type ``(1, 0)``
    ("preferred", "not preferred"), so a ``tau`` mapping for such pairs has
    the single key ``(1, 0)``.

    Parameters
    ----------
    data : RankingData or array-like of shape (n_documents, n_features)
        The documents. With a plain matrix, ``qid`` gives the query of each
        document (default: one query for all).
    better, worse : array-like of int, shape (n_pairs,)
        Row indices of the preferred and the less preferred document.
    qid : array-like, optional
        Query ids when ``data`` is a matrix; ignored otherwise.

    Raises
    ------
    ValidationError
        For indices out of range or not integers, a document preferred to
        itself, a pair across two queries, or no pair at all.
    cvxrank._memory.MemoryBudgetError
        When the pair set (its copies of the indices and ``P``) would exceed the memory budget.

    Examples
    --------
    >>> import numpy as np
    >>> pairs = preference_pairs(np.eye(3), better=[0, 2], worse=[1, 1])
    >>> pairs.n_pairs, pairs.types
    (2, [(1, 0)])
    """
    if not isinstance(data, RankingData):
        X = _as_features(data)  # validated first: its row count sizes the defaults below
        n = X.shape[0]
        data = RankingData(X, np.zeros(n), np.zeros(n, dtype=np.int64) if qid is None else qid)
    better = np.asarray(better)
    worse = np.asarray(worse)
    for name, arr in (("better", better), ("worse", worse)):
        if arr.ndim != 1:
            raise ValidationError(f"{name} must be 1-dimensional, got shape {arr.shape}")
        if arr.size and arr.dtype.kind not in "iu":
            if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
                continue
            raise ValidationError(f"{name} must hold integer document indices")
    if better.shape != worse.shape:
        raise ValidationError(
            f"better has {better.shape[0]} entries but worse has {worse.shape[0]}; they must match"
        )
    if better.size == 0:
        raise ValidationError("no pairs: better and worse are empty")
    m = data.n_documents
    check_pairs(better.shape[0], m)  # before the copies and the incidence matrix P
    for name, arr in (("better", better), ("worse", worse)):
        bad = (arr < 0) | (arr >= m)  # checked before the cast to int64, which would wrap huge values
        if bad.any():
            raise ValidationError(
                f"{name}[{int(np.flatnonzero(bad)[0])}] = {arr[bad][0]} is not a document index (0..{m - 1})"
            )
    better = better.astype(np.int64)
    worse = worse.astype(np.int64)
    same = better == worse
    if same.any():
        raise ValidationError(f"pair {int(np.flatnonzero(same)[0])} prefers document {int(better[same][0])} to itself")
    q = data.query_index
    cross = q[better] != q[worse]
    if cross.any():
        i = int(np.flatnonzero(cross)[0])
        qb, qw = data.qid[[better[i], worse[i]]].tolist()  # plain Python values for the message
        raise ValidationError(
            f"pair {i} joins documents of two queries ({qb!r} and {qw!r}); "
            "pairs must be within one query"
        )
    pair_type = np.tile(np.array([1, 0], dtype=np.int64), (better.shape[0], 1))
    return PairSet(data, better, worse, q[better], pair_type, source="preferences")
