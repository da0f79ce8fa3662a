"""Pair-free oracle for the weighted pairwise hinge loss (9) of Cao et al. (SIGIR 2006).

For scores ``s = X w`` the loss is

.. math:: R(w) = \\sum_q \\sum_{a > b} c_{q,a,b} \\sum_{i \\in q_a} \\sum_{j \\in q_b} [1 - (s_i - s_j)]_+

with ``q_g`` the documents of grade ``g`` in query ``q`` and ``c`` a
:class:`~cvxrank.native.costs.CostTable` (``c_{q,a,b} = τ_(a,b) μ_q``). A
pair ``(i, j)`` is *violated* when ``s_i - s_j < 1`` (the same test, with the
same floating-point subtraction, as ``PairSet.margins(w) < 1``). Then

* ``R(w) = W + vᵀ s``, where ``W`` is the total weight of the violated pairs
  and ``v_i = Σ_{violated (k, i)} c - Σ_{violated (i, j)} c`` (weight of the
  violated pairs where ``i`` is the worse document, minus those where it is
  the better one);
* ``Xᵀ v`` is a subgradient of ``R``: it is ``-Dᵀ(c ⊙ [Dw < 1])`` of the
  explicit-pair form, and ``R(w') ≥ W + (Xᵀ v)ᵀ w'`` for every ``w'``
  (the cutting plane of :mod:`cvxrank.native.cutting_plane`).

Algorithm (one call, ``m`` documents, ``n`` features, ``G`` grades): sort the
scores inside each query (one ``argsort`` of the scores and a stable radix
sort of the query codes); for every document find, by ``searchsorted`` on the
scores shifted by the margin (``s_i - 1`` and ``s_i + 1``) and an exact
correction at the boundary, the range of its query whose documents form a
violated pair with it; count the documents of each grade in that range from
cumulative counts per grade. Time ``O(m log m + m n + m G)``, extra memory
``O(m)`` (no pair is ever formed).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from cvxrank._float64 import matvec, rmatvec
from cvxrank.data import RankingData
from cvxrank.exceptions import ValidationError
from cvxrank.native.costs import CostTable, cost_table, grade_counts

__all__ = ["OracleResult", "PairFreeOracle"]

_EPS = np.finfo(np.float64).eps


@dataclass(frozen=True, eq=False)
class OracleResult:
    """Loss, subgradient and violation counts at one ``w`` (or one score vector).

    Attributes
    ----------
    loss : float
        ``R(w) = Σ_i c_i [1 - <w, d_i>]_+``, the loss of (9)/SIGIR without ``λ‖w‖²``.
    violated_weight : float
        ``W = Σ_i c_i [<w, d_i> < 1]``: the offset of the cutting plane.
    gradient : ndarray of shape (n_features,) or None
        ``Xᵀ v``, a subgradient of ``R`` at ``w`` (None when only scores were given).
    score_gradient : ndarray of shape (n_documents,) or None
        ``v`` in the documents' order (None when the oracle did not keep it).
    counts : ndarray of int64, shape (n_queries, n_grades, n_grades) or None
        ``counts[q, a, b]``: violated pairs of grade ``a`` over grade ``b`` in
        query ``q`` (``a > b``), when requested.
    rounding : float
        ``ε (W + Σ_i |v_i s_i|)``: the scale of floating-point rounding in ``loss``.
    grades, query_ids : ndarray
        Labels of the axes of ``counts``.
    """

    loss: float
    violated_weight: float
    gradient: np.ndarray | None
    score_gradient: np.ndarray | None
    counts: np.ndarray | None
    rounding: float
    grades: np.ndarray
    query_ids: np.ndarray

    @property
    def n_violated(self) -> int:
        """Number of violated pairs (needs ``counts``)."""
        return int(self._counts().sum())

    def counts_per_query(self) -> np.ndarray:
        """Violated pairs of each query, aligned with ``query_ids``."""
        return self._counts().sum(axis=(1, 2))

    def counts_per_grade_pair(self) -> dict:
        """``{(higher grade, lower grade): violated pairs}`` over all queries, for the grade pairs present."""
        total = self._counts().sum(axis=0)
        G = self.grades.shape[0]
        return {(self.grades[a].item(), self.grades[b].item()): int(total[a, b])
                for a in range(G) for b in range(a)}

    def _counts(self) -> np.ndarray:
        if self.counts is None:
            raise ValidationError("this oracle result has no violation counts: call the oracle with counts=True")
        return self.counts


def data_layout(data: RankingData, costs: CostTable | None = None):
    """Validated ``(costs, grades, grade codes, counts per (query, grade))`` of ``data`` for an oracle."""
    if not isinstance(data, RankingData):
        raise ValidationError(f"the oracle takes RankingData, got {type(data).__name__}")
    costs = cost_table(data) if costs is None else costs
    grades, codes, counts = grade_counts(data)
    if costs.values.shape != (data.n_queries, grades.shape[0], grades.shape[0]):
        raise ValidationError("the cost table was built for other data (its shape does not match)")
    return costs, grades, codes, counts


class PairFreeOracle:
    """Loss, subgradient and violation counts of (9)/SIGIR without forming pairs.

    Build it with :meth:`from_data` from a :class:`~cvxrank.data.RankingData`,
    or from arrays as below.

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix of shape (n_documents, n_features)
        Kept as it is when float64 or float32 (CSR for sparse), else converted to
        float64. A float32 ``X`` is not copied: every product with it is computed in
        float64 arithmetic, a block of rows upcast at a time (:mod:`cvxrank._float64`),
        so losses, subgradients and certificates are exact for its float32 values.
    query_codes : array-like of int, shape (n_documents,)
        Query of each document, as codes ``0 .. n_queries - 1``.
    grade_codes : array-like of int, shape (n_documents,)
        Grade of each document, as codes ``0 .. n_grades - 1`` (larger is better).
    values : ndarray of shape (n_queries, n_grades, n_grades)
        ``values[q, a, b]``: weight of a pair "grade ``a`` over grade ``b``" in
        query ``q``; only ``a > b`` is read.
    grades, query_ids : array-like, optional
        Labels for the counts (default: the codes).

    Examples
    --------
    >>> import numpy as np
    >>> from cvxrank.data import RankingData
    >>> data = RankingData(np.array([[0.0], [1.0], [3.0]]), y=[2, 1, 0], qid=[1, 1, 1])
    >>> oracle = PairFreeOracle.from_data(data)
    >>> r = oracle(np.array([1.0]))   # scores 0, 1, 3: every pair is violated
    >>> r.loss, r.violated_weight, r.gradient.tolist(), r.counts_per_grade_pair()
    (9.0, 3.0, [6.0], {(1, 0): 1, (2, 0): 1, (2, 1): 1})
    """

    #: The smoothed Newton phase of :mod:`cvxrank.native.newton` may follow the planes (margins all 1).
    newton_phase = True

    def __init__(self, X, query_codes, grade_codes, values, *, grades=None, query_ids=None):
        X = _stored(X)
        if X.ndim != 2:
            raise ValidationError(f"X must be 2-dimensional, got shape {X.shape}")
        m = X.shape[0]
        qc = np.asarray(query_codes, dtype=np.int64).ravel()
        gc = np.asarray(grade_codes, dtype=np.int64).ravel()
        values = np.asarray(values, dtype=np.float64)
        if qc.shape != (m,) or gc.shape != (m,):
            raise ValidationError(f"query_codes and grade_codes need one entry per document ({m})")
        if values.ndim != 3 or values.shape[1] != values.shape[2]:
            raise ValidationError(f"values must have shape (n_queries, n_grades, n_grades), got {values.shape}")
        Q, G = values.shape[0], values.shape[1]
        if m and (qc.min() < 0 or qc.max() >= Q or gc.min() < 0 or gc.max() >= G):
            raise ValidationError(f"codes out of range for a table of {Q} queries and {G} grades")
        if not np.all(np.isfinite(values)) or np.any(values < 0):
            raise ValidationError("pair weights must be non-negative and finite")
        self.X = X
        self.values = np.tril(values, k=-1)
        self.grades = np.arange(G) if grades is None else np.asarray(grades)
        self.query_ids = np.arange(Q) if query_ids is None else np.asarray(query_ids)
        # Per-document layout arrays in int32 where every index they form fits (positions < m, cells of
        # the (query, grade, grade) table < Q G²): half the memory of int64 on a million documents.
        idx = np.int32 if max(m, Q * G * G) < np.iinfo(np.int32).max else np.int64
        self._qc, self._gc = qc, gc.astype(idx)
        self._G = G
        per_query = np.bincount(qc, minlength=Q)
        offsets = np.zeros(Q + 1, dtype=np.int64)
        np.cumsum(per_query, out=offsets[1:])
        # In the sorted layout (by query, then score) query q holds positions offsets[q]:offsets[q+1].
        self._q_sorted = np.repeat(np.arange(Q, dtype=idx), per_query)
        self._start = offsets[:-1].astype(idx)[self._q_sorted]
        self._end = offsets[1:].astype(idx)[self._q_sorted]
        self._q16 = qc.astype(np.uint16) if Q <= np.iinfo(np.uint16).max + 1 else None
        self._new_query = np.diff(self._q_sorted) != 0  # a query starts at the next sorted position
        self._prev_order = None  # the last order made (:meth:`_order` starts from it)
        counts = np.bincount(qc * G + gc, minlength=Q * G).reshape(Q, G)
        self._flat = self.values.ravel()
        self._n_pairs = np.tril(counts[:, :, None] * counts[:, None, :], k=-1)

    @classmethod
    def from_data(cls, data: RankingData, costs: CostTable | None = None) -> PairFreeOracle:
        """The oracle of ``data`` with the weights of ``costs`` (default: all ones, Ranking SVM)."""
        costs, grades, codes, _ = data_layout(data, costs)
        return cls(data.X, data.query_index, codes, costs.values, grades=grades, query_ids=data.query_ids)

    # -- sizes -----------------------------------------------------------
    @property
    def n_documents(self) -> int:
        """Number of documents ``m``."""
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        """Number of features ``n``."""
        return int(self.X.shape[1])

    @property
    def n_pairs(self) -> int:
        """Number of within-query pairs of different grades (never formed)."""
        return int(self._n_pairs.sum())

    @property
    def total_weight(self) -> float:
        """``Σ_i c_i``: the loss at ``w = 0``."""
        return float(np.sum(self.values * self._n_pairs))

    # -- evaluation ------------------------------------------------------
    def scores(self, w) -> np.ndarray:
        """``s = X w`` (float64 arithmetic, also for a float32 ``X``)."""
        w = np.asarray(w, dtype=np.float64).ravel()
        if w.shape != (self.n_features,):
            raise ValidationError(f"w must have {self.n_features} entries, got {w.shape[0]}")
        return matvec(self.X, w)

    def reset_order(self) -> None:
        """Forget the last order, so the next call sorts from scratch (:meth:`_order`); for timing."""
        self._prev_order = None

    def __call__(self, w, *, counts: bool = True, score_gradient: bool = False) -> OracleResult:
        """Loss, subgradient ``Xᵀ v`` and (``counts=True``) violation counts at ``w``."""
        r = self.evaluate_scores(self.scores(w), counts=counts)
        v = r.score_gradient
        gradient = self.gradient(v)
        return OracleResult(r.loss, r.violated_weight, gradient, v if score_gradient else None, r.counts,
                            r.rounding, r.grades, r.query_ids)

    def gradient(self, v) -> np.ndarray:
        """``Xᵀ v``: the subgradient of the loss from a score gradient ``v`` (float64 arithmetic)."""
        return rmatvec(self.X, v)

    def evaluate_scores(self, s, *, counts: bool = True, order=None) -> OracleResult:
        """Loss, ``v`` and counts for a score vector ``s`` (``gradient`` is None).

        ``order``: positions sorted by query, then by ``s`` (as :meth:`_order`
        gives), when the caller has it already (e.g. for ``s`` and a positive
        multiple of ``s``); not checked.
        """
        s = np.asarray(s, dtype=np.float64).ravel()
        m = self.n_documents
        if s.shape != (m,):
            raise ValidationError(f"s must have {m} entries, got {s.shape[0]}")
        if not np.all(np.isfinite(s)):
            raise ValidationError("the scores have a NaN or infinite value")
        order = self._order(s) if order is None else order
        s_o = s[order]
        W, v_o, table = self._sums(s_o, order, *self._bounds(s_o), counts=counts)
        shifted = s_o - s_o[self._start]  # the loss is invariant to a shift per query; smaller terms
        del s_o
        loss = W + float(np.dot(v_o, shifted))
        rounding = _EPS * (W + float(np.dot(np.abs(v_o), np.abs(shifted))))
        v = np.empty(m)
        v[order] = v_o
        return OracleResult(max(loss, 0.0), W, None, v, table, rounding, self.grades, self.query_ids)

    def _sums(self, s_o, order, p_lo, p_hi, *, counts: bool = False):
        """``(W, v_o, counts)`` from the violated ranges ``[p_lo, end)`` and ``[start, p_hi)`` of the sorted
        positions (:meth:`_bounds`): the total weight of the violated pairs, ``v`` in the sorted order and
        (``counts=True``) the violated pairs per (query, grade, grade), else None."""
        m, G = s_o.shape[0], self._G
        g_o = self._gc[order]
        qg = self._q_sorted * G + g_o           # (query, grade) cell of each sorted position
        up_base = qg + self._q_sorted * (G * G - G)  # = q G² + g: cell (q, ·, g)
        lower = np.zeros(m)  # weight of violated pairs where the document is the better one
        upper = np.zeros(m)  # ... where it is the worse one
        table = np.zeros((self.query_ids.shape[0], G, G), dtype=np.int64) if counts else None
        cum = np.zeros(m + 1, dtype=self._start.dtype)  # counts up to m fit the layout's index type
        n_lo = n_up = weight = None
        for b in range(G):
            np.cumsum(g_o == b, dtype=cum.dtype, out=cum[1:])
            if b < G - 1:
                # grade-b documents at positions [p_lo, end): the worse partners of a better document
                n_lo = cum[self._end]
                n_lo -= cum[p_lo]
                weight = self._flat[qg * G + b]
                weight *= n_lo
                lower += weight
                if counts:
                    n_lo = np.where(g_o > b, n_lo, 0)
                    table[:, :, b] = np.bincount(qg, weights=n_lo, minlength=table.shape[0] * G).reshape(-1, G)
            if b > 0:
                # grade-b documents at positions [start, p_hi): the better partners of a worse document
                n_up = cum[p_hi]
                n_up -= cum[self._start]
                weight = self._flat[up_base + b * G]
                weight *= n_up
                upper += weight
        del qg, up_base, cum, g_o, n_lo, n_up, weight  # peak memory: the layout is done with
        W = float(lower.sum())
        v_o = upper
        v_o -= lower
        return W, v_o, table

    # -- internals -------------------------------------------------------
    def _order(self, s: np.ndarray) -> np.ndarray:
        """Positions sorted by query, then by score (ties in any order).

        Scores change little between an oracle's calls, so the previous call's order is tried first:
        the scores in that order are nearly sorted inside each query, and a stable (adaptive, timsort)
        ``argsort`` of ``score + query offset`` finishes in a few linear passes. The result is checked
        (every position in its query's block, scores non-decreasing inside each block) and a full sort
        is made whenever the check fails, so the order is always exact.
        """
        prev = self._prev_order
        if prev is not None and prev.shape == s.shape:
            s_p = s[prev]
            lo, hi = float(s_p.min()), float(s_p.max())
            key = s_p - lo
            key += self._q_sorted * ((hi - lo) + 1.0)
            order = prev[np.argsort(key, kind="stable")]
            del s_p, key
            s_o = s[order]
            if (np.all((s_o[1:] >= s_o[:-1]) | self._new_query)
                    and np.array_equal(self._qc[order], self._q_sorted)):
                self._prev_order = order
                return order
        if self._q16 is None:
            order = np.lexsort((s, self._qc))
        else:
            order = np.argsort(s)
            order = order[np.argsort(self._q16[order], kind="stable")]
        self._prev_order = order
        return order

    def _bounds(self, s_o: np.ndarray, margin=1.0, *, hi: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        """For every sorted position ``p`` of query range ``[start, end)``, with margin ``m_p``:

        * ``p_lo``: first position ``k ≥ start`` with ``s_p - s_k < m_p``, so the
          documents at ``[p_lo, end)`` are exactly those a document at ``p``
          would not beat by the margin;
        * ``p_hi``: first position ``k > p`` with ``s_k - s_p ≥ m_p`` (or ``end``),
          so ``[start, p_hi)`` are exactly those that do not beat ``p`` by the margin
          (None with ``hi=False``).

        ``margin`` is 1 (the papers) or one positive number per sorted position
        (margins per grade pair, :class:`~cvxrank.native.variant_oracle.VariantOracle`).
        ``searchsorted`` on the scores offset by query gives them up to rounding
        near the boundary; every position whose neighbours fail the exact test
        is redone by an exact binary search. With one margin for all positions
        ``p_hi`` is read off ``p_lo`` instead: ``k > p`` (same query) fails to beat
        ``p`` exactly when ``p_lo[k] ≤ p``, and every ``k ≤ p`` has ``p_lo[k] ≤ p``
        while no later query's ``k`` has, so ``p_hi[p] = #{k : p_lo[k] ≤ p}``, a
        cumulative count (the same floating-point test, no second search).
        """
        m = s_o.shape[0]
        pos = np.arange(m, dtype=np.int64)
        start, end = self._start, self._end
        scalar = np.ndim(margin) == 0
        lo_s, hi_s = float(s_o.min()), float(s_o.max())
        span = (hi_s - lo_s) + 2.0 * float(np.max(margin)) + 2.0
        key = (s_o - lo_s) + self._q_sorted * span
        p_lo = np.clip(np.searchsorted(key, key - margin, side="right"), start, pos)
        # Exact check: the test is monotone along a query's sorted scores, so p is right
        # iff the test fails just before it and holds at it.
        prev = np.maximum(p_lo - 1, 0)
        bad = ((p_lo > start) & (s_o - s_o[prev] < margin)) | ~(s_o - s_o[p_lo] < margin)
        if bad.any():
            idx = np.flatnonzero(bad)
            mg = np.broadcast_to(margin, (m,))[idx]
            p_lo[idx] = _search(s_o, idx, start[idx], idx.copy(), lambda k, a: s_o[idx[a]] - s_o[k] < mg[a])
        if not hi:
            return p_lo, None
        if scalar:
            p_hi = np.cumsum(np.bincount(p_lo, minlength=m))
            return p_lo, p_hi
        p_hi = np.clip(np.searchsorted(key, key + margin, side="left"), pos + 1, end)
        prev = p_hi - 1
        nxt = np.minimum(p_hi, m - 1)
        bad = ((p_hi > pos + 1) & ~(s_o[prev] - s_o < margin)) | ((p_hi < end) & (s_o[nxt] - s_o < margin))
        if bad.any():
            idx = np.flatnonzero(bad)
            mg = np.broadcast_to(margin, (m,))[idx]
            p_hi[idx] = _search(s_o, idx, idx + 1, end[idx].copy(), lambda k, a: ~(s_o[k] - s_o[idx[a]] < mg[a]))
        return p_lo, p_hi


def _stored(X):
    """``X`` as the oracle keeps it: CSR or dense, float32 and float64 as they are, anything else float64."""
    if sp.issparse(X):
        X = X.tocsr()
        return X if X.dtype in (np.float32, np.float64) else X.astype(np.float64)
    X = np.asarray(X)
    return X if X.dtype == np.float32 else np.asarray(X, dtype=np.float64)


def below_bound(s_o, start, p_in, margin=1.0):
    """``min(p_lo, p_in)`` for :meth:`PairFreeOracle._bounds`'s ``p_lo`` at margin ``margin``, given an upper
    bound ``p_in`` that is usually right or a few positions off (the bound at a smaller margin).

    The test ``s_p - s_k < margin`` holds from ``p_lo`` to the end of the query, so the answer is ``p_in``
    where the test fails at ``p_in - 1`` (or ``p_in`` is the query's start) and an exact binary search in
    ``[start, p_in - 1]`` elsewhere: one comparison over all positions instead of a second full search.
    """
    out = np.array(p_in, dtype=np.int64)
    k = np.maximum(out - 1, 0)
    idx = np.flatnonzero((out > start) & (s_o - s_o[k] < margin))
    for _ in range(4):  # most positions are a step or two off: walk down before searching
        if not idx.size:
            return out
        k = out[idx] - 1
        out[idx] = k  # the test holds at k
        ok = (k > start[idx]) & (s_o[idx] - s_o[np.maximum(k - 1, 0)] < margin)
        idx = idx[ok]
    if idx.size:
        out[idx] = _search(s_o, idx, start[idx], out[idx], lambda k, a: s_o[idx[a]] - s_o[k] < margin)
    return out


def _search(s_o, idx, lo, hi, test):
    """Exact binary search: the first ``k`` in ``[lo, hi)`` where ``test(k, a)`` holds (``hi`` if none).

    ``a`` indexes the active entries of ``idx`` (so ``idx[a]`` is the position searched for);
    ``test`` must be monotone (false, then true) along each range.
    """
    lo = np.asarray(lo, dtype=np.int64).copy()
    hi = np.asarray(hi, dtype=np.int64)
    active = lo < hi
    while active.any():
        a = np.flatnonzero(active)
        mid = (lo[a] + hi[a]) // 2
        ok = test(mid, a)
        hi[a[ok]] = mid[ok]
        lo[a[~ok]] = mid[~ok] + 1
        active[a] = lo[a] < hi[a]
    return lo
