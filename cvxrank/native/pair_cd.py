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

   one pair at a time, exactly, in the compiled sweeps (``_sweep.pair_cd``: random order, shrinking). Every ``α`` it
   holds is in the box, so its value is a lower bound on the optimum (weak duality), computed from ``w(α)`` formed
   again from ``α`` (not the running ``w``, which collects rounding).
2. **An exact finish on the margin.** The dual value converges much faster than ``w(α)`` (a pair violated by ``ε``
   costs ``c ε`` in ``F``). Once the dual stops improving, the pairs with ``0 < α_i < c_i`` are taken as those on the
   margin, and ``w(α)`` is moved to the nearest point that puts them exactly there,

   .. math:: w' = w(\\alpha) + D_F^\\top y, \\qquad D_F D_F^\\top y = 1 - D_F\\, w(\\alpha),

   the least-norm solution of ``D_F x = 1 - D_F w(α)``, by CGLS from ``x = 0`` (products with ``X`` and
   per-document sums: no pair row is formed). When the sets
   are those of the optimum, ``w' = w*``: ``w* - w(α) = D_Fᵀ(α* - α)/(2λ)`` lies in the span of the rows of ``D_F``.
   ``F(w')`` is exact (the pair-free oracle), an upper bound whatever the sets.

Memory beyond ``X``: 16 bytes a pair (two int32 documents and ``α``); in a finish, per pair on the margin its
documents (8 bytes), its index while the set is formed (8) and two CGLS vectors and a temporary (24):
:func:`pair_cd_bytes`.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from cvxrank.native.kernels import sweep
from cvxrank.rounding import pair_dual_rounding

__all__ = ["all_pairs", "pair_cd", "pair_cd_bytes"]

#: Passes of coordinate descent between two looks at the bounds.
BATCH = 10

#: Most conjugate-gradient iterations of one finish (work, not time).
FINISH_ITERATIONS = 500


def pair_cd_bytes(n_pairs: int, n_documents: int, nnz: int) -> int:
    """Peak bytes of :func:`pair_cd` beyond ``X``: per pair its documents and ``α`` (16) and, in a finish, a copy of
    the documents of the pairs on the margin, their index while the set is formed and two CGLS vectors and a
    temporary (40), counted for every pair; per document the cost cells and sums (40); a float64 copy of a float32
    ``X`` (8 per stored entry)."""
    return int(56 * n_pairs + 40 * n_documents + 8 * nnz)


def all_pairs(oracle):
    """Every pair ``(better, worse)`` of one query and different grades with a positive weight, as two int32
    arrays, grouped by query (16 bytes a pair at the peak of their making; :func:`cvxrank.pairs.make_pairs` holds
    40 bytes a pair: int64 documents, their query and their grade pair)."""
    qc, gc = oracle._qc, np.asarray(oracle._gc, dtype=np.int64)
    G = oracle._G
    m = qc.shape[0]
    order = np.lexsort((gc, qc))  # by query, then grade
    keys = qc[order] * G + gc[order]
    first_of_query = np.searchsorted(keys, qc[order] * G, side="left")  # the query's first position
    first_of_grade = np.searchsorted(keys, keys, side="left")  # the first position of this grade
    counts = first_of_grade - first_of_query  # the documents of lower grade of the same query
    total = int(counts.sum())
    if total >= np.iinfo(np.int32).max or m >= np.iinfo(np.int32).max:
        raise ValueError("internal error: too many pairs or documents for int32 pair indices")
    order32 = order.astype(np.int32)
    better = np.repeat(order32, counts)
    worse = np.arange(total, dtype=np.int32)  # pair t of sorted position p: position first_of_query + t - offset
    worse += np.repeat((first_of_query - (np.cumsum(counts) - counts)).astype(np.int32), counts)
    np.take(order32, worse, out=worse)
    weighted = oracle.values > 0
    if np.any((oracle._n_pairs > 0) & ~weighted):  # a (query, grade pair) cell of weight 0: not a pair here
        keep = np.concatenate([weighted[qc[b], gc[b], gc[w]] for b, w in _chunks(better, worse)])
        better, worse = better[keep], worse[keep]
    return better, worse


def _chunks(*arrays, size=1 << 16):
    """The arrays in slices of ``size`` (bounded temporaries over all pairs)."""
    total = arrays[0].shape[0]
    for a in range(0, total, size):
        yield tuple(x[a:a + size] for x in arrays)


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


def _on_margin(alpha, better, worse, table, cell, grade):
    """Indices of the pairs with ``0 < α_i < c_i``, in chunks."""
    found, offset = [], 0
    for al, b, w in _chunks(alpha, better, worse):
        c = table[cell[b] + grade[w]]
        found.append(offset + np.flatnonzero((al > 0) & (al < c)))
        offset += al.shape[0]
    return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)


def _csr(X):
    """``X`` as the compiled pass reads it: int64 ``indptr``, int32 sorted ``indices``, float64 ``data``."""
    X = sp.csr_matrix(X)
    if not X.has_sorted_indices:
        X = X.sorted_indices()
    indices = X.indices if X.indices.dtype == np.int32 else X.indices.astype(np.int32)
    data = X.data if X.data.dtype == np.float64 else X.data.astype(np.float64)
    return np.asarray(X.indptr, dtype=np.int64), indices, data


def pair_cd(oracle, lam, *, upper, lower, target, max_calls, deadline=None, verbose=False, start=None,
            seed: int = 0):
    """Dual coordinate descent on the pairs of a sparse ``X``, with exact finishes (module docstring), until the
    certified relative gap is ``<= target``, ``max_calls`` (passes plus oracle calls) or the ``deadline``.

    Parameters
    ----------
    oracle : PairFreeOracle
        With a CSR ``X`` and the compiled sweeps.
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
    better, worse = all_pairs(oracle)
    gc = np.asarray(oracle._gc, dtype=np.int64)
    G = oracle._G
    cell = (oracle._qc * G + gc) * G
    table = np.ascontiguousarray(oracle.values, dtype=np.float64).ravel()
    alpha = np.zeros(better.shape[0])
    v, V = np.zeros(m), np.zeros(m)  # per document: Σ α over its pairs as the better minus as the worse; and the sum
    degree = 0  # the most pairs of one document
    for b, w_ in _chunks(better, worse):
        degree = max(degree, int((np.bincount(b, minlength=m) + np.bincount(w_, minlength=m)).max(initial=0)))
    w_run = np.zeros(n)
    state = np.array([np.uint64(seed) * np.uint64(2654435761) + np.uint64(1)], dtype=np.uint64)
    w_best, F_best, w_lower, lower_rounding = None, upper, None, None
    calls, rows, last_dual = 0, [], -np.inf
    while max_calls - calls - 2 >= 1:  # room for a pass, then up to two oracle calls
        asked = min(BATCH, max_calls - calls - 2)
        passes = sweep().pair_cd(indptr, indices, data, sq, better, worse, cell, gc, table, alpha, w_run, float(lam),
                                 asked, state, 1e-12)
        calls += passes
        sweep().pair_sums(better, worse, alpha, v, V)
        u = oracle.gradient(v)
        w = u / (2.0 * lam)  # w(α) again from α: the running w collects rounding
        w_run[:] = w
        dual = float(alpha.sum()) - lam * float(w @ w)
        if dual > lower:
            lower, w_lower = dual, w
            lower_rounding = pair_dual_rounding(X, V, degree, alpha, u, lam)
        candidates = [w]
        converged = passes < asked  # fewer passes than asked: the descent has converged, the dual moves no more
        settled = dual - last_dual <= target * abs(dual) or converged
        last_dual = max(last_dual, dual)
        if settled:  # the dual has stopped moving: put the pairs between the bounds on the margin
            on = _on_margin(alpha, better, worse, table, cell, gc)
            if on.shape[0]:
                fb, fw = better[on], worse[on]
                del on
                candidates.append(_finish(oracle, w, fb, fw))
                del fb, fw
        for x in candidates:
            F = lam * float(x @ x) + oracle(x, counts=False).loss
            calls += 1
            if F < F_best:
                F_best, w_best = F, x
        rel = (F_best - lower) / F_best if F_best > 0 else 0.0
        elapsed = time.perf_counter() - start
        rows.append({"evaluations": calls, "objective": F_best, "dual_objective": lower, "relative_gap": rel,
                     "delta": np.nan, "band": int(np.count_nonzero(alpha)), "time": elapsed})
        if verbose:
            print(f"pair_cd  passes {calls:5d}  objective {F_best:.12g}  lower {lower:.12g}  rel gap {rel:.2e}  "
                  f"{elapsed:.2f}s", flush=True)
        if rel <= target or calls >= max_calls or (deadline is not None and elapsed >= deadline) or converged:
            break
    if w_best is None:
        w_best = np.zeros(n)
    return w_best, F_best, lower, w_lower, calls, rows, lower_rounding


def _finish(oracle, w, better, worse):
    """``w + x`` with ``x`` the least-norm solution of ``D_F x = 1 - D_F w`` (the pairs ``F`` given by their
    documents, int32; ``x = D_Fᵀ y`` with ``D_F D_Fᵀ y = 1 - D_F w``), by CGLS from ``x = 0`` (Hestenes-Stiefel's
    conjugate gradients on the least-squares problem: its iterates stay in the span of ``D_Fᵀ``), at most
    :data:`FINISH_ITERATIONS` iterations, to a residual of ``1e-10`` times the first: the point nearest ``w`` with
    every pair of ``F`` exactly on the margin."""
    m = oracle.n_documents

    def rows_times(z):  # D_F z
        s = oracle.scores(z)
        out = np.take(s, better)
        out -= np.take(s, worse)
        return out

    sums, unused = np.zeros(m), np.zeros(m)

    def rows_transposed(y):  # D_Fᵀ y (per-document sums without numpy's widened copy of the indices)
        sweep().pair_sums(better, worse, y, sums, unused)
        return oracle.gradient(sums)

    # CGLS on min ||D_F x - r|| from x = 0: the least-norm x, with two vectors the length of F (conjugate gradients
    # on D_F D_Fᵀ y = r would hold five)
    r = 1.0 - rows_times(w)
    stop = 1e-20 * float(r @ r)
    x = np.zeros_like(w)
    s = rows_transposed(r)
    p = s.copy()
    gamma = float(s @ s)
    for _ in range(FINISH_ITERATIONS):
        q = rows_times(p)
        delta = float(q @ q)
        if not (delta > 0 and float(r @ r) > stop):
            break
        a = gamma / delta
        x += a * p
        r -= a * q
        del q
        s = rows_transposed(r)
        gamma_next = float(s @ s)
        p *= gamma_next / gamma
        p += s
        gamma = gamma_next
    return w + x
