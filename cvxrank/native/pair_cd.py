"""Dual coordinate descent over the pairs, with an exact finish on the margin: sparse data with many features.

The cutting planes need hundreds of planes of ``n`` floats each on sparse high-dimensional data, and the Newton
phase's Hessian (or its conjugate gradients) is too dear there. With more features than documents the data are
often separable, and the optimum of (9) for every small λ is the hard-margin solution, with a very degenerate
margin: on the 20,000 x 20,000 instance of ``cvxrank bench native --instances shapes`` about 200,000 of its
666,600 pairs lie on it. This phase works on the pairs themselves (one number each):

1. **Dual coordinate descent** (Hsieh et al. 2008, "A dual coordinate descent method for large-scale linear SVM")
   on the dual of (9),

   .. math:: \\max_{0 \\le \\alpha_i \\le c_i}\\; \\sum_i \\alpha_i - \\lambda \\lVert w(\\alpha) \\rVert^2,
             \\qquad w(\\alpha) = \\sum_i \\alpha_i d_i / (2\\lambda)\\quad (16),

   one pair at a time, exactly, in the compiled sweeps (``_sweep.pair_cd``: a random order inside each query, a
   sixteenth of a query's active pairs (8 to 64) in a row before the next query's, shrinking, carried from one
   batch of passes to the next; ``‖d_i‖²`` without the rows' dot product once they are known to meet on no
   non-zero entry: 2 bits a pair). Every ``α`` it holds is in the box, so its value is a lower bound on the optimum
   (weak duality), computed from ``w(α)`` formed again from ``α`` (not the running ``w``, which collects rounding).
2. **An exact finish on the margin.** The dual value converges much faster than ``w(α)`` (a pair violated by ``ε``
   costs ``c ε`` in ``F``). Once the dual stops improving, the pairs with ``0 < α_i < c_i`` are taken as those on the
   margin, and ``w(α)`` is moved to the nearest point that puts them exactly there,

   .. math:: w' = w(\\alpha) + D_F^\\top y, \\qquad D_F D_F^\\top y = 1 - D_F\\, w(\\alpha),

   the least-norm solution of ``D_F x = 1 - D_F w(α)``, by conjugate gradients on the normal equations from
   ``x = 0`` (products with ``X`` and per-document sums: no pair row is formed). When the sets
   are those of the optimum, ``w' = w*``: ``w* - w(α) = D_Fᵀ(α* - α)/(2λ)`` lies in the span of the rows of ``D_F``.
   ``F(w')`` is exact (the pair-free oracle), an upper bound whatever the sets. When ``w'`` does not prove the
   target, one active-set step: a second finish that also puts on the margin the pairs whose bound ``w'``
   contradicts (``α_i = 0`` and violated there, ``α_i = c_i`` and above the margin), its conjugate gradients
   started from the first finish's step. Every :data:`FINISH_CHECK` products a finish looks at ``F`` of its point
   (one oracle call) and ends once that proves the target or gained less than :data:`FINISH_STALL` of its gap.

Memory beyond ``X``: 12 bytes a pair (``α`` and the two documents as 16-bit indices inside their query, 16 bytes
when a query holds more than 65,536 documents: :class:`PairBlocks`) and 2 bits (whether its rows meet); the finish
holds no vector the length of the pairs on the margin, only a bit a pair (:func:`_finish`): :func:`pair_cd_bytes`.
On the 20,000 x 20,000 instance the peak is 1.89 times the CSR matrix (3.18 with two int32 documents a pair and
CGLS's vectors).
"""

from __future__ import annotations

import time
from itertools import pairwise
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from cvxrank.native.kernels import sweep
from cvxrank.native.newton import _cg
from cvxrank.native.stopping import target_proven
from cvxrank.rounding import pair_dual_rounding

__all__ = ["PairBlocks", "all_pairs", "pair_cd", "pair_cd_bytes"]

#: Passes of coordinate descent between two looks at the bounds.
BATCH = 10

#: Hand back (to the planes) when the relative gap has not halved in this many passes: on a tiny, low-rank instance
#: (23 documents, 3 features, λ = 0.05) the gap sat at 2.1e-5 for 2,800 passes, where the planes certify it in a
#: few calls; on the 20,000-feature shape the phase alone certifies λ ≤ 5 in about 50 passes. Over 1,500 tiny CSR
#: instances with the phase forced, 200 passes cut 4 runs that would have certified later and 500 cut 3
#: (docs/native-measurements.md, "Measurements (2026-11-28, 13:00)").
STALL_PASSES = 500

#: Most conjugate-gradient iterations of one finish (work, not time).
FINISH_ITERATIONS = 500

#: A finish's conjugate gradients look at ``F`` of their point every this many products (an oracle call each) and
#: stop once it proves the target or gained less than :data:`FINISH_STALL` of its gap since the last look.
FINISH_CHECK = 25
#: See :data:`FINISH_CHECK`.
FINISH_STALL = 0.01
#: A look tests the target with the primal rounding allowance at the finish's start plus this share (the allowance
#: moves little over a finish); the phase's loop then tests the finish's point with its own.
FINISH_ALLOWANCE = 0.05


#: Most pairs :func:`all_pairs` forms at a time (its temporaries: about 40 bytes each).
CHUNK = 1 << 17

#: Most documents of a query whose pairs :class:`PairBlocks` holds as 16-bit local indices.
LOCAL_MAX = 1 << 16


def pair_cd_bytes(n_pairs: int, n_documents: int, nnz: int, n_features: int = 0, longest: int = 0) -> int:
    """Peak bytes of :func:`pair_cd` beyond ``X``: per pair ``α`` and its local indices (12 bytes, 16 when the
    ``longest`` query has more than :data:`LOCAL_MAX` documents), whether its rows meet (2 bits: 1/4) and a finish's
    bit (1/8); the forming of the pairs, :data:`CHUNK` at a time (40 bytes each); per document its position, cells
    and sums (80); per feature the point, the finish's vectors and the pass's scratch vector (56); a copy of ``X``
    when it is float32, dense, or has repeated or unsorted indices in a row (12 per stored entry; a dense ``X``'s
    conversion peaks higher, which the caller adds)."""
    per_pair = 16 if longest > LOCAL_MAX else 12
    return int(per_pair * n_pairs + n_pairs // 4 + 1 + n_pairs // 8 + 40 * min(n_pairs, CHUNK) + 80 * n_documents
               + 56 * n_features + 12 * nnz)


class PairBlocks(NamedTuple):
    """Every pair ``(better, worse)`` of one query and different grades with a positive weight, by query: the pairs
    ``blocks[q]:blocks[q+1]`` are those of query ``q``, pair ``i`` of them the documents
    ``docs[starts[q] + lb[i]]`` and ``docs[starts[q] + lw[i]]``.

    ``docs`` (int32, ``m``) lists the documents by query, then grade; ``lb`` and ``lw`` are uint16 when every query
    has at most :data:`LOCAL_MAX` documents, else int32: 4 bytes a pair (8), where two int32 document indices take
    8. The compiled passes (``_sweep.pair_cd``, ``pair_sums``, ``pair_margin_sums``) read them in place; the
    descent permutes the pairs inside their block. ``degree`` bounds the pairs of one document."""

    docs: np.ndarray
    starts: np.ndarray
    blocks: np.ndarray
    lb: np.ndarray
    lw: np.ndarray
    degree: int

    @property
    def n_pairs(self) -> int:
        return int(self.lb.shape[0])

    @property
    def arrays(self) -> tuple:
        """``(docs, starts, blocks, lb, lw)``, as the compiled passes take them."""
        return self.docs, self.starts, self.blocks, self.lb, self.lw

    def documents(self) -> tuple[np.ndarray, np.ndarray]:
        """``(better, worse)``: the pairs' documents as int64 arrays (16 bytes a pair: for tests and small data)."""
        query = np.repeat(np.arange(self.starts.shape[0]), np.diff(self.blocks))
        first = self.starts[query]
        return self.docs[first + self.lb].astype(np.int64), self.docs[first + self.lw].astype(np.int64)


def all_pairs(oracle) -> PairBlocks:
    """The pairs of the oracle's data with a positive weight, by query (:class:`PairBlocks`), formed
    :data:`CHUNK` at a time: the peak is the result and one chunk's temporaries."""
    qc, gc = oracle._qc, np.asarray(oracle._gc, dtype=np.int64)
    G, Q, m = oracle._G, oracle.values.shape[0], qc.shape[0]
    if m >= np.iinfo(np.int32).max:
        raise ValueError("internal error: too many documents for int32 document indices")
    order = np.lexsort((gc, qc))  # by query, then grade
    q_o, g_o = qc[order], gc[order]
    size = np.bincount(qc, minlength=Q)
    starts = (np.cumsum(size) - size).astype(np.int64)
    cells = np.bincount(qc * G + gc, minlength=Q * G).reshape(Q, G)
    weighted = oracle.values > 0  # (query, better grade, worse grade): zero on and above the diagonal
    per_query = np.einsum("qa,qab,qb->q", cells, weighted.astype(np.int64), cells)
    blocks = np.concatenate(([0], np.cumsum(per_query))).astype(np.int64)
    dtype = np.uint16 if size.max(initial=0) <= LOCAL_MAX else np.int32
    P = int(blocks[-1])
    lb, lw = np.empty(P, dtype=dtype), np.empty(P, dtype=dtype)
    # per sorted position: its index in its query and its worse partners, the documents of lower grade there (the
    # first positions of the query: local indices 0 .. count - 1)
    local = np.arange(m, dtype=np.int64) - starts[q_o]
    counts = (np.cumsum(cells, axis=1) - cells)[q_o, g_o]
    ends = np.cumsum(counts)
    marks = np.arange(CHUNK, int(ends[-1]) if m else 0, CHUNK)
    cuts = np.unique(np.concatenate(([0], np.searchsorted(ends, marks, side="right"), [m])))
    filled = 0
    for a, b in pairwise(cuts.tolist()):
        cnt = counts[a:b]
        total = int(cnt.sum())
        if total == 0:
            continue
        better = np.repeat(local[a:b], cnt)
        worse = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        first = np.repeat(starts[q_o[a:b]], cnt)
        keep = weighted[np.repeat(q_o[a:b], cnt), np.repeat(g_o[a:b], cnt), g_o[first + worse]]
        del first
        k = int(keep.sum())
        lb[filled:filled + k] = better[keep]
        lw[filled:filled + k] = worse[keep]
        filled += k
    if filled != P:
        raise ValueError("internal error: the pairs formed are not those counted")
    degree = int((size[q_o] - cells[q_o, g_o]).max(initial=0))  # partners of a document: its query's other grades
    return PairBlocks(order.astype(np.int32), starts, blocks, lb, lw, degree)


def _row_norms(indptr, data, rows=1 << 14):
    """Squared norms of the rows of a CSR matrix, a block of rows at a time (bounded temporaries)."""
    m = indptr.shape[0] - 1
    sq = np.zeros(m)
    for a in range(0, m, rows):
        b = min(a + rows, m)
        block = data[indptr[a]:indptr[b]]
        row = np.repeat(np.arange(b - a), np.diff(indptr[a:b + 1]))
        sq[a:b] = np.bincount(row, block * block, minlength=b - a)
    return sq


def _csr(X):
    """``X`` as the compiled pass reads it: int64 ``indptr``, int32 sorted ``indices`` (each at most once a row: a
    repeated one, which scipy sums, would give the rows' squared norms the squares of its parts), float64 ``data``.
    A copy only when ``X`` has repeated or unsorted indices or other types."""
    X = sp.csr_matrix(X)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()  # (also sorts)
    indices = X.indices if X.indices.dtype == np.int32 else X.indices.astype(np.int32)
    data = X.data if X.data.dtype == np.float64 else X.data.astype(np.float64)
    return np.asarray(X.indptr, dtype=np.int64), indices, data


def pair_cd(oracle, lam, *, upper, lower, target, max_calls, deadline=None, verbose=False, start=None,
            seed: int = 0, allowance=None):
    """Dual coordinate descent on the pairs of a sparse ``X``, with exact finishes (module docstring), until the
    certified relative gap is ``<= target``, ``max_calls`` (passes plus oracle calls), the ``deadline``, or a gap that
    has not halved in :data:`STALL_PASSES` passes (the caller's planes go on).

    Parameters
    ----------
    oracle : PairFreeOracle
        With the compiled sweeps and a CSR ``X``, or a dense one, of which the passes read a CSR copy (after a
        Newton phase that ended short: :data:`cvxrank.native.cutting_plane.AFTER_NEWTON`).
    lam : float
    upper, lower : float
        Best ``F`` and lower bound so far.
    target : float
        The certified relative gap to stop at.
    max_calls : int
        Cap on passes over the pairs plus oracle calls (never passed: the last batch is cut to fit).
    deadline : float, optional
        Seconds since ``start``: a safety net.
    seed : int, default 0
        Seed of the order in which the pairs are visited.
    allowance : callable, optional
        ``w ↦`` the rounding allowance the certificate will add for ``F(w)`` (scale of (9),
        :func:`cvxrank.rounding.primal_rounding` times ``2λ``): the phase then stops once its gap plus that and
        its bound's allowance is within ``target``, unless the two take more than half of it (float64's floor).

    Returns
    -------
    (w_best, F_best, lower, w_lower, calls, rows, lower_rounding)
        As :func:`~cvxrank.native.newton.smoothed_newton`, a row per look at the bounds, and the rounding allowance
        of this phase's best bound on the scale of (14) (:func:`cvxrank.rounding.pair_dual_rounding`; None when the
        phase found no bound above ``lower``).
    """
    start = time.perf_counter() if start is None else start
    X = oracle.X
    m, n = X.shape
    indptr, indices, data = _csr(X)
    sq = _row_norms(indptr, data)
    pairs = all_pairs(oracle)
    gc = np.asarray(oracle._gc, dtype=np.int64)
    G = oracle._G
    cell = (oracle._qc * G + gc) * G
    table = np.ascontiguousarray(oracle.values, dtype=np.float64).ravel()
    alpha = np.zeros(pairs.n_pairs)
    v, V = np.zeros(m), np.zeros(m)  # per document: Σ α over its pairs as the better minus as the worse; and the sum
    w_run = np.zeros(n)
    state = np.array([np.uint64(seed) * np.uint64(2654435761) + np.uint64(1)], dtype=np.uint64)
    # the descent's shrinking from one batch to the next: active pairs per query (none shrunk yet) and thresholds
    active, limits = np.full(pairs.starts.shape[0], -1, dtype=np.int64), np.empty(2)
    # per pair, 2 bits: whether its two rows meet on a non-zero entry (0 not yet known); where they do not, the
    # descent takes ||d_i||² = ||x_b||² + ||x_w||² without forming their dot product (on sparse rows, most pairs)
    codes = np.zeros((pairs.n_pairs + 3) // 4, dtype=np.uint8)
    w_best, F_best, w_lower, lower_rounding = None, upper, None, None
    calls, rows, last_dual = 0, [], -np.inf

    def consider(x):  # F(x): one oracle call (the loss alone); the best point so far
        nonlocal F_best, w_best, calls
        F = lam * float(x @ x) + oracle.loss(x)
        calls += 1
        if F < F_best:
            F_best, w_best = F, x
        return F

    def proven(estimate=None):  # the target, with the certificate's allowances
        extra = None
        if allowance is not None and w_best is not None and F_best - lower <= target * F_best:
            extra = (allowance(w_best) if estimate is None else estimate) + 2.0 * lam * (lower_rounding or 0.0)
        return target_proven(F_best, lower, target, extra)

    def finish(w, reference=None):  # F at the finish's point; its CG looks at F every FINISH_CHECK products
        looked = {"F": np.inf, "ended": False}
        # the primal allowance at w (a little more), made before the finish's vectors: its temporaries beside them
        # would pass the memory of the phase's other steps; the loop checks the finish's point exactly
        estimate = None if allowance is None else (1.0 + FINISH_ALLOWANCE) * allowance(w)

        def check(x):  # stop once the point proves the target or gains too little (room left for F(result))
            F = consider(x)
            gain = looked["F"] - F
            looked["F"] = F
            looked["ended"] = (proven(estimate) or calls >= max_calls - 1
                               or 0.0 <= gain <= FINISH_STALL * (F - lower))
            return looked["ended"]

        x = _finish(oracle, w, pairs, alpha, cell, gc, table, reference=reference, check=check)
        if x is not None and not looked["ended"]:  # (a look that ended the run was at this point)
            consider(x)
        return x

    mark_rel, mark_calls = np.inf, 0  # the gap the stall rule measures from, and when
    while max_calls - calls - 2 >= 1:  # room for a pass, then up to two oracle calls
        asked = min(BATCH, max_calls - calls - 2)
        passes = sweep().pair_cd(indptr, indices, data, sq, *pairs.arrays, cell, gc, table, alpha, w_run, float(lam),
                                 asked, state, 1e-12, active, limits, codes)
        calls += passes
        sweep().pair_sums(*pairs.arrays, alpha, v, V)
        u = oracle.gradient(v)
        w = u / (2.0 * lam)  # w(α) again from α: the running w collects rounding
        w_run[:] = w
        dual = float(alpha.sum()) - lam * float(w @ w)
        if dual > lower:
            lower, w_lower = dual, w
            lower_rounding = pair_dual_rounding(X, V, pairs.degree, alpha, u, lam)
        converged = passes < asked  # fewer passes than asked: the descent has converged, the dual moves no more
        settled = dual - last_dual <= target * abs(dual) or converged
        last_dual = max(last_dual, dual)

        consider(w)
        if settled and not proven():  # the dual has stopped moving: put the pairs between the bounds on the margin
            finished = finish(w)
            if finished is not None and not proven() and calls < max_calls - 1:
                finish(w, reference=finished)  # once more with the pairs whose bound the finish's point contradicts
        rel = (F_best - lower) / F_best if F_best > 0 else 0.0
        elapsed = time.perf_counter() - start
        rows.append({"evaluations": calls, "objective": F_best, "dual_objective": lower, "relative_gap": rel,
                     "delta": np.nan, "band": int(np.count_nonzero(alpha)), "time": elapsed})
        if verbose:
            print(f"pair_cd  passes {calls:5d}  objective {F_best:.12g}  lower {lower:.12g}  rel gap {rel:.2e}  "
                  f"{elapsed:.2f}s", flush=True)
        if rel <= 0.5 * mark_rel:
            mark_rel, mark_calls = rel, calls
        if (proven() or calls >= max_calls or (deadline is not None and elapsed >= deadline) or converged
                or calls - mark_calls >= STALL_PASSES):
            break
    if w_best is None:
        w_best = np.zeros(n)
    return w_best, F_best, lower, w_lower, calls, rows, lower_rounding


def _finish(oracle, w, pairs, alpha, cell, grade, table, reference=None, check=None):
    """``w + x`` with ``x`` the least-norm solution of ``D_F x = 1 - D_F w`` (least squares when it has none), ``F``
    the pairs with ``0 < α_i < c_i`` (None when there are none): conjugate gradients on the normal equations
    ``D_Fᵀ D_F x = D_Fᵀ (1 - D_F w)`` from ``x = 0`` (CGLS's iterates, in the span of ``D_Fᵀ``), at most
    :data:`FINISH_ITERATIONS` iterations, until the normal residual ``‖D_Fᵀ (1 - D_F (w + x))‖`` is ``1e-10`` times
    the first: the point nearest ``w`` with every pair of ``F`` exactly on the margin.

    Each product ``D_Fᵀ (a + b D_F z)`` is one pass over the pairs (``_sweep.pair_margin_sums``), with ``X z`` and
    ``Xᵀ`` of the per-document sums. The first pass picks ``F`` by its ``α`` and writes it as a bit a pair; the
    others read the bits (on the sparse shape of the benchmark, a third of the time of a pass that picks ``F``
    again; a list of ``F``'s documents, 8 bytes a pair, took the peak from 1.86 to 2.15 times the CSR matrix).

    With a ``reference`` point (an earlier finish's), ``F`` also holds the pairs whose bound the margin there
    contradicts: ``α_i = 0`` below the margin and ``α_i = c_i`` above it (one active-set step: after the dual settles,
    a finish may leave a few pairs violated that coordinate descent has not yet reached; on the sparse shape at
    λ = 0.05, 33 of them held the gap at 8.9e-7 for 100 passes, and this step closed it to 1e-11). Conjugate
    gradients then start from ``reference - w``: an earlier finish's ``x`` lies in the span of its own ``D_Fᵀ``, which
    this ``F`` contains, so the iterates reach the same least-norm solution (in general, the solution nearest
    ``reference``), in 10-16 % fewer products on the sparse shape.

    ``check(point)``, when given, is called every :data:`FINISH_CHECK` iterations with the point ``w + x`` so far;
    True ends the run there (the caller's test of the target)."""
    m = oracle.n_documents
    sums = np.empty(m)
    mask = np.empty((pairs.n_pairs + 63) // 64, dtype=np.uint64)  # F, a bit a pair (written by the first pass)
    s_ref = None if reference is None else oracle.scores(reference)
    count = sweep().pair_margin_sums(*pairs.arrays, alpha, cell, grade, table, oracle.scores(w), 1.0, -1.0, sums,
                                     mask, s_ref)
    del s_ref
    if count == 0:
        return None

    def normal_product(z):  # D_Fᵀ D_F z, F read from the mask
        sweep().pair_margin_sums(*pairs.arrays, None, cell, grade, table, oracle.scores(z), 0.0, 1.0, sums, mask, None)
        return oracle.gradient(sums)

    # the normal residual at x = 0 is D_Fᵀ r, r = 1 - D_F w; conjugate gradients to 1e-10 of it
    look = None if check is None else (lambda x: check(w + x))
    return w + _cg(normal_product, oracle.gradient(sums), 1e-10, FINISH_ITERATIONS,
                   x0=None if reference is None else reference - w, check=look, every=FINISH_CHECK)
