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

Algorithm (one call, ``m`` documents, ``n`` features, ``G`` grades; the numpy
path, :mod:`cvxrank.native.kernels` has the compiled one): sort the
scores inside each query (one ``argsort`` of the scores and a stable radix
sort of the query codes); for every document find, by ``searchsorted`` on the
scores shifted by the margin (``s_i - 1`` and ``s_i + 1``) and an exact
correction at the boundary, the range of its query whose documents form a
violated pair with it; count the documents of each grade in that range from
cumulative counts per grade. Time ``O(m log m + m n + m G)``, extra memory
``O(m)`` (no pair is ever formed).

Threads. In the sorted layout every query is a contiguous block of positions,
so the sort, the boundary search and the sums split exactly at query
boundaries: with ``threads=k`` the positions are cut into ``k`` shards of whole
queries (balanced by documents) and each shard runs in a thread
(``concurrent.futures``; numpy releases the GIL in ``argsort``, ``searchsorted``,
``cumsum``, ``take`` and the ufuncs). Every per-shard temporary is the shard's
slice of the single-threaded one. The
results are those of one thread: the order (up to the order of tied scores),
``p_lo``, ``p_hi``, ``v``, ``Xᵀ v`` and the counts bit for bit; ``W`` and the
loss are summed over the full arrays after the shards join, so they are
bit-equal too when no two documents of a query tie in score (with ties, the
tied documents may sit in another order and the sums round differently, as
they may between two single-threaded sorts). ``X w`` (dense float64 ``X``)
runs as one single-threaded gemv per block of rows in the same threads (cuts at
multiples of 256 rows, so every score is bit-equal to ``X @ w``); ``Xᵀ v`` stays
on one thread. Threads pay from about :data:`AUTO_THREADS_MIN` documents on.
The default is one thread all the same: across several solves in one process
glibc's per-thread arenas keep freed temporaries, so the peak memory creeps up,
and a busy second core takes the gain away. ``threads=2`` or ``None``
(automatic) opt in. Timings and memory: ``docs/native.md``, "Threads". Not to be
confused with ``threads`` of :func:`~cvxrank.native.cutting_plane.cutting_plane`,
the BLAS threads.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from itertools import pairwise

import numpy as np
import scipy.sparse as sp

from cvxrank._float64 import dense_rows
from cvxrank._validation import POSITIVE_INT
from cvxrank.data import RankingData
from cvxrank.exceptions import ValidationError
from cvxrank.native.costs import CostTable, cost_table, grade_counts
from cvxrank.native.kernels import check_kernel, sweep
from cvxrank.native.products import products

__all__ = ["AUTO_THREADS_MIN", "OracleResult", "PairFreeOracle", "check_threads"]

_EPS = np.finfo(np.float64).eps

#: Most grades the compiled sweeps take (more: the numpy path).
MAX_COMPILED_GRADES = 64

#: Moves per document after which the compiled insertion sort from the last order gives way to one argsort
#: (:meth:`PairFreeOracle._full_sort`). A call whose scores moved far takes tens of moves per document, so the
#: cap is what such a call wastes (the caps compared: ``docs/native.md``, "Compiled sweeps").
RESORT_MOVES = 2

#: Documents from which ``threads=None`` sorts, searches and sums in two threads (on two or more cores).
AUTO_THREADS_MIN = 100_000


def check_threads(threads, name: str = "threads"):
    """``threads`` if it is None (automatic) or a positive int, else a :class:`ValidationError`."""
    if not POSITIVE_INT.or_none().admits(threads):
        raise ValidationError(f"{name} must be a positive int or None (automatic), got {threads!r}")
    return None if threads is None else int(threads)


@cache
def _pool(k: int) -> ThreadPoolExecutor:
    """One shared pool of ``k`` threads (made on first use, kept for the process)."""
    return ThreadPoolExecutor(max_workers=k, thread_name_prefix="cvxrank-oracle")


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
    threads : int or None, default 1
        Threads for the sort, the boundary search, the sums and ``X w`` (dense float64): the
        sorted layout is cut into that many shards of whole queries, balanced by documents (fewer
        when the queries do not allow it). None: automatic, 2 from :data:`AUTO_THREADS_MIN`
        documents on a machine with at least 2 cores, else 1. Results as with one thread (module
        docstring). The default is 1 because of memory: across several solves in one process,
        glibc's per-thread arenas keep freed temporaries (module docstring).
    kernel : {"auto", "compiled", "numpy"}, default "auto"
        Path of the per-query work (boundaries, weighted counts, band, re-sort):
        the compiled sweeps of :mod:`cvxrank.native.kernels` (``"auto"``: when
        built, and for at most :data:`MAX_COMPILED_GRADES` grades) or numpy.
        The same results bit for bit either way.

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

    def __init__(self, X, query_codes, grade_codes, values, *, grades=None, query_ids=None, threads=1,
                 kernel="auto"):
        threads = check_threads(threads)
        self._compiled = check_kernel(kernel)
        self.kernel = kernel
        X = stored_x(X)
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
        self._products = products(X, self._compiled)
        self.values = np.tril(values, k=-1)
        self.grades = np.arange(G) if grades is None else np.asarray(grades)
        self.query_ids = np.arange(Q) if query_ids is None else np.asarray(query_ids)
        # Per-document layout arrays in int32 where every index they form fits (positions < m, cells of
        # the (query, grade, grade) table < Q G²): half the memory of int64 on a million documents.
        idx = np.int32 if max(m, Q * G * G) < np.iinfo(np.int32).max else np.int64
        self._qc, self._gc = qc, gc.astype(idx)
        self._G = G
        if self._compiled and (G > MAX_COMPILED_GRADES or m >= np.iinfo(np.int32).max):
            if kernel == "compiled":  # its counts per query are int32
                raise ValidationError(f"kernel='compiled' takes at most {MAX_COMPILED_GRADES} grades and fewer than "
                                      f"2^31 - 1 documents, got {G} grades and {m} documents")
            self._compiled = False
        per_query = np.bincount(qc, minlength=Q)
        offsets = np.zeros(Q + 1, dtype=np.int64)
        np.cumsum(per_query, out=offsets[1:])
        self._offsets = offsets  # query q holds the sorted positions offsets[q]:offsets[q + 1]
        # In the sorted layout (by query, then score) query q holds positions offsets[q]:offsets[q+1].
        self._q_sorted = np.repeat(np.arange(Q, dtype=idx), per_query)
        self._start = offsets[:-1].astype(idx)[self._q_sorted]
        self._end = offsets[1:].astype(idx)[self._q_sorted]
        self._q16 = qc.astype(np.uint16) if Q <= np.iinfo(np.uint16).max + 1 else None
        self._new_query = np.diff(self._q_sorted) != 0  # a query starts at the next sorted position
        self._prev_order = None  # the last order made (:meth:`_order` starts from it)
        self._rows_buffer = None  # reused by :meth:`_pair_rows`
        counts = np.bincount(qc * G + gc, minlength=Q * G).reshape(Q, G)
        self._flat = self.values.ravel()
        self._n_pairs = np.tril(counts[:, :, None] * counts[:, None, :], k=-1)
        self.threads = threads
        if threads is None:
            threads = 2 if m >= AUTO_THREADS_MIN and (os.cpu_count() or 1) >= 2 else 1
        self._shards = _shards(offsets, threads)

    @classmethod
    def from_data(cls, data: RankingData, costs: CostTable | None = None, *, threads=1,
                  kernel="auto", X=None) -> PairFreeOracle:
        """The oracle of ``data`` with the weights of ``costs`` (default: all ones, Ranking SVM); ``X`` in place
        of ``data.X``: the same documents, e.g. without the features that carry no pair information
        (:mod:`cvxrank.native.features`)."""
        costs, grades, codes, _ = data_layout(data, costs)
        X = data.X if X is None else X
        if X.shape[0] != data.n_documents:
            raise ValidationError(f"X must have a row per document ({data.n_documents}), got {X.shape[0]}")
        return cls(X, data.query_index, codes, costs.values, grades=grades, query_ids=data.query_ids,
                   threads=threads, kernel=kernel)

    @property
    def n_threads(self) -> int:
        """Threads the sort, search and sums run in: the number of shards of whole queries."""
        return len(self._shards)

    def _each(self, task) -> None:
        """``task(a, b, qa, qb)`` for every shard (positions ``a:b``, queries ``qa:qb``), in threads if several."""
        if len(self._shards) == 1:
            task(*self._shards[0])
            return
        for f in [_pool(len(self._shards)).submit(task, *shard) for shard in self._shards]:
            f.result()  # re-raises a shard's exception

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
        """``s = X w`` (float64 arithmetic, also for a float32 ``X``; dense float64 in row blocks over the threads)."""
        w = np.asarray(w, dtype=np.float64).ravel()
        if w.shape != (self.n_features,):
            raise ValidationError(f"w must have {self.n_features} entries, got {w.shape[0]}")
        X = self.X
        k = len(self._shards)
        if k == 1 or sp.issparse(X) or X.dtype != np.float64:
            return self._products.matvec(w)
        # Rows in k blocks, one gemv each in a thread. OpenBLAS's gemv takes rows in groups (of 4) and the
        # left-over rows by another kernel: cuts at multiples of 256 rows keep every row's dot product
        # (its rounding) that of X @ w.
        m = X.shape[0]
        s = np.empty(m)
        cuts = sorted({0, m} | {j * m // k // 256 * 256 for j in range(1, k)})
        for f in [_pool(k).submit(np.matmul, X[a:b], w, out=s[a:b]) for a, b in pairwise(cuts)]:
            f.result()
        return s

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
        return self._products.rmatvec(v)

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
        s_o = np.empty(m)
        self._each(lambda a, b, qa, qb: np.take(s, order[a:b], out=s_o[a:b]))
        W, v_o, table, _, _ = self._violations(s_o, order, counts=counts)
        shifted = np.empty(m)  # the loss is invariant to a shift per query; smaller terms
        v = np.empty(m)

        def finish(a, b, qa, qb):
            np.subtract(s_o[a:b], s_o[self._start[a:b]], out=shifted[a:b])
            v[order[a:b]] = v_o[a:b]

        self._each(finish)
        loss = W + float(np.dot(v_o, shifted))
        rounding = _EPS * (W + float(np.dot(np.abs(v_o), np.abs(shifted))))
        return OracleResult(max(loss, 0.0), W, None, v, table, rounding, self.grades, self.query_ids)

    def live_weights(self, w, slack: float) -> np.ndarray:
        """Per document, at least the weight ``Σ c_i`` of its pairs whose computed margin ``s_b − s_w`` is below
        ``1 + slack`` (scale of (9)): the weights of the pairs violated at the scores divided by ``1 + 2 slack``,
        one sweep. The factor's extra ``slack`` covers the division's rounding when ``slack`` is at least
        ``32 u max |s|`` (:func:`cvxrank.rounding.primal_rounding`'s ``live``: twice its largest score error), and
        a factor ``1 + 4 (G + 1) ε`` the rounding of the weights' sums (``G`` products a side)."""
        s = self.scores(w)
        if not np.all(np.isfinite(s)):
            raise ValidationError("the scores have a NaN or infinite value")
        prev = self._prev_order
        order = self._order(s)
        self._prev_order = prev  # (a look aside: the solve's next evaluation starts from the order it would have)
        s_o = s[order] / (1.0 + 2.0 * float(slack))
        magnitudes = np.empty_like(s_o)
        self._violations(s_o, order, magnitudes=magnitudes)
        out = np.empty_like(magnitudes)
        out[order] = magnitudes
        return out * (1.0 + 4.0 * (self._G + 1) * np.finfo(np.float64).eps)

    def loss(self, w) -> float:
        """The loss alone at ``w``: :meth:`evaluate_scores`' value, bit for bit, without the subgradient, the counts
        or the rounding estimate, and with at most five vectors of length ``m`` alive at once (eight there): a
        look at ``F`` beside other work, as in :mod:`cvxrank.native.pair_cd`'s finish."""
        s = self.scores(w)
        if not np.all(np.isfinite(s)):
            raise ValidationError("the scores have a NaN or infinite value")
        order = self._order(s)
        s_o = s[order]
        del s
        W, v_o = self._violations(s_o, order)[:2]
        del order
        shifted = s_o[self._start]  # the loss is invariant to a shift per query; smaller terms
        np.subtract(s_o, shifted, out=shifted)
        del s_o
        return max(W + float(np.dot(v_o, shifted)), 0.0)

    def _violations(self, s_o, order, *, counts: bool = False, lo: bool = False, s_band=None, magnitudes=None):
        """``(W, v_o, counts, p_lo, p_out)`` at the sorted scores ``s_o`` (margin 1): :meth:`_sums` over the
        ranges of :meth:`_bounds`; ``p_lo`` when ``lo`` or ``s_band`` is given, else None; with ``s_band``
        (scores sorted in the same order) ``p_out = min(p_lo, p_lo at s_band)`` (:meth:`_below`), else None.
        ``magnitudes`` (an array of ``m`` floats, optional) receives the weight of each sorted position's violated
        pairs, ``Σ_{violated i ∋ d} c_i``, of which ``v_o`` is the signed sum (what a rounding bound of ``v``
        reads). The compiled path finds the ranges and sums over them in one pass per query, with the same
        results."""
        if not self._compiled:
            p_lo, p_hi = self._bounds(s_o)
            W, v_o, table = self._sums(s_o, order, p_lo, p_hi, counts=counts, magnitudes=magnitudes)
            p_out = None if s_band is None else self._below(s_band, p_lo)
            return W, v_o, table, (p_lo if lo or s_band is not None else None), p_out
        m, G = s_o.shape[0], self._G
        lower, upper = np.empty(m), np.empty(m)
        table = np.zeros((self.query_ids.shape[0], G, G), dtype=np.int64) if counts else None
        p_lo = np.empty(m, dtype=np.int64) if lo or s_band is not None else None
        p_out = None if s_band is None else np.empty(m, dtype=np.int64)
        cells = None if table is None else table.reshape(-1)
        self._each(lambda a, b, qa, qb: sweep().violations(s_o, order, self._gc, self._offsets, self._flat, G, qa, qb,
                                                            1.0, lower, upper, p_lo, cells, s_band, p_out))
        W = float(lower.sum())  # over the full array, as :meth:`_sums`
        if magnitudes is not None:
            np.add(lower, upper, out=magnitudes)
        upper -= lower
        return W, upper, table, p_lo, p_out

    def _sums(self, s_o, order, p_lo, p_hi, *, counts: bool = False, magnitudes=None):
        """``(W, v_o, counts)`` from the violated ranges ``[p_lo, end)`` and ``[start, p_hi)`` of the sorted
        positions (:meth:`_bounds`): the total weight of the violated pairs, ``v`` in the sorted order and
        (``counts=True``) the violated pairs per (query, grade, grade), else None; ``magnitudes`` as in
        :meth:`_violations`."""
        m, G = s_o.shape[0], self._G
        lower = np.zeros(m)  # weight of violated pairs where the document is the better one
        upper = np.zeros(m)  # ... where it is the worse one
        table = np.zeros((self.query_ids.shape[0], G, G), dtype=np.int64) if counts else None
        self._each(lambda a, b, qa, qb: self._sums_range(order, p_lo, p_hi, lower, upper, table, a, b, qa, qb))
        W = float(lower.sum())  # over the full array, as with one thread
        if magnitudes is not None:
            np.add(lower, upper, out=magnitudes)
        v_o = upper
        v_o -= lower
        return W, v_o, table

    def _sums_range(self, order, p_lo, p_hi, lower, upper, table, a, b, qa, qb):
        """:meth:`_sums` on the shard of positions ``a:b`` (queries ``qa:qb``): fills ``lower[a:b]``,
        ``upper[a:b]`` and ``table[qa:qb]``. Every range it reads lies in ``[a, b]``."""
        G = self._G
        q_s, start, end = self._q_sorted[a:b], self._start[a:b], self._end[a:b]
        p_lo, p_hi = p_lo[a:b], p_hi[a:b]
        lower, upper = lower[a:b], upper[a:b]
        g_o = self._gc[order[a:b]]
        qg = q_s * G + g_o           # (query, grade) cell of each sorted position
        up_base = qg + q_s * (G * G - G)  # = q G² + g: cell (q, ·, g)
        # Cumulative counts indexed by the global positions a..b: entries below a are never read, and
        # np.empty leaves their pages untouched (not resident), so a shard holds only its own part.
        cum = np.empty(b + 1, dtype=self._start.dtype)  # counts up to m fit the layout's index type
        cum[a] = 0
        n_lo = n_up = weight = None
        for g in range(G):
            np.cumsum(g_o == g, dtype=cum.dtype, out=cum[a + 1:])
            if g < G - 1:
                # grade-g documents at positions [p_lo, end): the worse partners of a better document
                n_lo = cum[end]
                n_lo -= cum[p_lo]
                weight = self._flat[qg * G + g]
                weight *= n_lo
                lower += weight
                if table is not None:
                    n_lo = np.where(g_o > g, n_lo, 0)
                    cells = np.bincount(qg, weights=n_lo, minlength=qb * G)[qa * G:]
                    table[qa:qb, :, g] = cells.reshape(-1, G)
            if g > 0:
                # grade-g documents at positions [start, p_hi): the better partners of a worse document
                n_up = cum[p_hi]
                n_up -= cum[start]
                weight = self._flat[up_base + g * G]
                weight *= n_up
                upper += weight
        del qg, up_base, cum, g_o, n_lo, n_up, weight  # peak memory: the layout is done with

    # -- internals -------------------------------------------------------
    def _order(self, s: np.ndarray) -> np.ndarray:
        """Positions sorted by query, then by score (ties in any order).

        Scores change little between an oracle's calls, so the previous call's order is tried first:
        the scores in that order are nearly sorted inside each query. The compiled sweeps sort every
        query from it by insertion (exact), and sort from scratch once that would take more than
        :data:`RESORT_MOVES` moves per document. Without them a stable (adaptive, timsort)
        ``argsort`` of ``score + query offset`` finishes in a few linear passes. The result is checked
        (every position in its query's block, scores non-decreasing inside each block) and a full sort
        is made whenever the check fails, so the order is always exact. With several shards each sorts
        its own queries (from the last order, or from the documents grouped by query) and falls back alone.
        """
        prev = self._prev_order
        adaptive = prev is not None and prev.shape == s.shape
        if not adaptive and len(self._shards) == 1:
            order = self._full_sort(s, None)
        else:
            if not adaptive:  # the documents grouped by query: each shard sorts its own
                prev = np.argsort(self._qc if self._q16 is None else self._q16, kind="stable")
            order = np.empty(s.shape[0], dtype=np.int64)
            self._each(lambda a, b, qa, qb: self._order_range(s, prev, order, a, b, qa, qb, adaptive))
        self._prev_order = order
        return order

    def _order_range(self, s, prev, order, a, b, qa, qb, adaptive):
        """:meth:`_order` on the shard of positions ``a:b``: ``prev[a:b]`` are its documents, grouped by
        query (the last order, or grouped only); writes ``order[a:b]``."""
        docs = prev[a:b]
        if adaptive and self._compiled:
            if sweep().resort(s, prev, self._offsets, qa, qb, order, RESORT_MOVES * (b - a)):
                return  # insertion sort of every query from the last order (exact; few moves when scores moved little)
            order[a:b] = self._full_sort(s, docs)  # the scores moved far: one argsort is cheaper
            return
        if adaptive:
            s_p = s[docs]
            lo, hi = float(s_p.min()), float(s_p.max())
            key = s_p - lo
            key += self._q_sorted[a:b] * ((hi - lo) + 1.0)
            out = docs[np.argsort(key, kind="stable")]
            del s_p, key
            s_o = s[out]
            if (np.all((s_o[1:] >= s_o[:-1]) | self._new_query[a:b - 1])
                    and np.array_equal(self._qc[out], self._q_sorted[a:b])):
                order[a:b] = out
                return
            del s_o, out
        order[a:b] = self._full_sort(s, docs)

    def _full_sort(self, s, docs):
        """The documents ``docs`` (all when None) sorted by query, then by score."""
        s_d = s if docs is None else s[docs]
        if self._q16 is None:
            qc = self._qc if docs is None else self._qc[docs]
            out = np.lexsort((s_d, qc))
        else:
            out = np.argsort(s_d)
            del s_d
            q16 = self._q16 if docs is None else self._q16[docs]
            out = out[np.argsort(q16[out], kind="stable")]
        return out if docs is None else docs[out]

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
        scalar = np.ndim(margin) == 0
        p_lo = np.empty(m, dtype=np.int64)
        p_hi = np.empty(m, dtype=np.int64) if hi else None
        if scalar and self._compiled and margin > 0:  # two pointers per query: the same test, the same positions
            self._each(lambda a, b, qa, qb: sweep().bounds(s_o, self._offsets, qa, qb, float(margin), p_lo, p_hi))
        else:
            self._each(lambda a, b, qa, qb: self._bounds_range(s_o, margin, scalar, p_lo, p_hi, a, b))
        return p_lo, p_hi

    def _band_counts(self, s_o, margins) -> np.ndarray:
        """Pairs of positions (one query, grades not checked) whose score difference lies in ``[margin, 1)``,
        for each of ``margins`` (each in ``(0, 1]``): ``Σ_p p_lo(margin) - p_lo(1)`` with ``p_lo`` of
        :meth:`_bounds`. Compiled sweeps only (one pass per query, a pointer per margin; at most 64)."""
        margins = np.asarray(margins, dtype=np.float64)
        counts = np.zeros((self.query_ids.shape[0], margins.shape[0]), dtype=np.int64)
        self._each(lambda a, b, qa, qb: sweep().band_counts(s_o, self._offsets, qa, qb, margins, counts))
        return counts.sum(axis=0)

    def _pair_rows(self, better, worse, scale, *, reuse: bool = True) -> np.ndarray:
        """``(x_better - x_worse) * scale`` row by row, float64 (``len(better) x n``): the Newton phase's scaled
        pair differences. Compiled for a dense float64 ``X`` (into a buffer the oracle keeps and reuses, so that
        the next call overwrites it, unless ``reuse=False``), else numpy on upcast rows
        (:func:`~cvxrank._float64.dense_rows`); the same two operations per entry either way."""
        X, k = self.X, better.shape[0]
        if (self._compiled and isinstance(X, np.ndarray) and X.dtype == np.float64 and X.flags.c_contiguous
                and X.shape[1] > 0):
            n = X.shape[1]
            if not reuse:
                out = np.empty((k, n))
                sweep().pair_rows(X, n, better, worse, scale, out)
                return out
            if self._rows_buffer is None or self._rows_buffer.size < k * n:
                self._rows_buffer = np.empty(max(k, 256) * n)
            out = self._rows_buffer[:k * n].reshape(k, n)
            sweep().pair_rows(X, n, better, worse, scale, out)
            return out
        D = dense_rows(X, better)  # float64 rows before the subtraction (X may be float32)
        D -= dense_rows(X, worse)
        D *= scale[:, None]
        return D

    def _below(self, s_o, p_in, margin=1.0):
        """``min(p_lo, p_in)`` for ``p_lo`` of :meth:`_bounds` at ``margin`` (scalar), given ``p_in``, the bound at a
        smaller margin (:func:`below_bound` walks down from it; the compiled path runs its two pointers)."""
        if not self._compiled or not margin > 0:
            return below_bound(s_o, self._start, p_in, margin)
        out = np.empty(s_o.shape[0], dtype=np.int64)
        self._each(lambda a, b, qa, qb: sweep().bounds(s_o, self._offsets, qa, qb, float(margin), out, None))
        return np.minimum(out, p_in, out=out)

    def _bounds_range(self, s_o, margin, scalar, p_lo, p_hi, a, b):
        """:meth:`_bounds` on the shard of positions ``a:b``: writes ``p_lo[a:b]`` (and ``p_hi[a:b]``).
        Positions stay global; only the ``searchsorted`` key is the shard's (its bounds are exact anyway)."""
        m = s_o.shape[0]
        x = s_o[a:b]
        mg = margin if scalar else margin[a:b]
        pos = np.arange(a, b, dtype=np.int64)
        start, end = self._start[a:b], self._end[a:b]
        lo_s, hi_s = float(x.min()), float(x.max())
        span = (hi_s - lo_s) + 2.0 * float(np.max(mg)) + 2.0
        key = (x - lo_s) + self._q_sorted[a:b] * span
        lo = np.searchsorted(key, key - mg, side="right")
        lo += a
        np.clip(lo, start, pos, out=lo)
        # Exact check: the test is monotone along a query's sorted scores, so p is right
        # iff the test fails just before it and holds at it.
        prev = np.maximum(lo - 1, 0)
        bad = ((lo > start) & (x - s_o[prev] < mg)) | ~(x - s_o[lo] < mg)
        del prev
        if bad.any():
            idx = np.flatnonzero(bad) + a
            mgi = np.broadcast_to(margin, (m,))[idx]
            lo[idx - a] = _search(s_o, idx, self._start[idx], idx.copy(), lambda k, i: s_o[idx[i]] - s_o[k] < mgi[i])
        p_lo[a:b] = lo
        if p_hi is None:
            return
        if scalar:
            lo -= a
            hi = np.cumsum(np.bincount(lo, minlength=b - a))
            hi += a  # every position before the shard has p_lo below a, every one after it p_lo ≥ b
            p_hi[a:b] = hi
            return
        del lo
        hi = np.searchsorted(key, key + mg, side="left")
        hi += a
        np.clip(hi, pos + 1, end, out=hi)
        prev = hi - 1
        nxt = np.minimum(hi, m - 1)
        bad = ((hi > pos + 1) & ~(s_o[prev] - x < mg)) | ((hi < end) & (s_o[nxt] - x < mg))
        if bad.any():
            idx = np.flatnonzero(bad) + a
            mgi = np.broadcast_to(margin, (m,))[idx]
            hi[idx - a] = _search(s_o, idx, idx + 1, self._end[idx].copy(),
                                  lambda k, i: ~(s_o[k] - s_o[idx[i]] < mgi[i]))
        p_hi[a:b] = hi


def _shards(offsets: np.ndarray, k: int) -> list:
    """``(a, b, qa, qb)`` for about ``k`` shards of whole queries: positions ``a:b`` hold queries ``qa:qb``,
    cut at the query boundaries nearest to ``j m / k`` (fewer shards when a large query spans several cuts)."""
    m, Q = int(offsets[-1]), offsets.shape[0] - 1
    cuts = [0]
    for j in range(1, k):
        target = j * m / k
        q = min(int(np.searchsorted(offsets, target)), Q)  # first boundary at or after the target
        if q > 0 and target - offsets[q - 1] < offsets[q] - target:
            q -= 1
        if offsets[cuts[-1]] < offsets[q] < m:
            cuts.append(q)
    cuts.append(Q)
    return [(int(offsets[qa]), int(offsets[qb]), qa, qb) for qa, qb in pairwise(cuts)]


#: A sparse ``X`` with at least this share of its entries stored, and between :data:`DENSE_MIN_ENTRIES` and
#: :data:`DENSE_MAX_ENTRIES` entries in all, is kept dense by the oracles (:func:`stored_x`).
DENSE_SHARE = 0.25
DENSE_MIN_ENTRIES = 1 << 16
DENSE_MAX_ENTRIES = 1 << 22


def stored_x(X):
    """``X`` as the pair-free oracles keep it (:class:`PairFreeOracle`, the click oracle's rows): CSR or dense,
    float32 and float64 as they are, anything else float64.

    A sparse ``X`` that is not very sparse (:data:`DENSE_SHARE` of its entries stored or more) and small
    (:data:`DENSE_MIN_ENTRIES` to :data:`DENSE_MAX_ENTRIES` entries, at most 32 MB dense in float64) is kept
    dense: its products are BLAS calls and the Newton phase's band rows need no conversion. On the real
    sample (3,005 x 300, 32 % stored) a certified solve took 0.77-0.85x the time (docs/native-measurements.md).
    Below the lower size both forms take microseconds and ``X`` is kept as given."""
    if sp.issparse(X):
        X = X.tocsr()
        X = X if X.dtype in (np.float32, np.float64) else X.astype(np.float64)
        entries = X.shape[0] * X.shape[1]
        if DENSE_MIN_ENTRIES <= entries <= DENSE_MAX_ENTRIES and X.nnz >= DENSE_SHARE * entries:
            return X.toarray()
        return X
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
