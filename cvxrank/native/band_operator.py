"""The band of the Newton phase without its rows: streamed sums and pair-free Hessian products.

For many features (sparse high-dimensional data) the Newton phase of :mod:`cvxrank.native.newton` neither forms
the band's rows ``sqrt(c_i/δ) d_i`` nor any ``n x n`` matrix. Its Hessian

.. math:: H = 2\\lambda I + X^\\top \\Big(\\sum_{i \\in B} \\frac{c_i}{\\delta}
          (e_{b(i)} - e_{w(i)})(e_{b(i)} - e_{w(i)})^\\top\\Big) X = 2\\lambda I + X^\\top \\mathcal{L}_B X

is applied as ``u ↦ 2λu + Xᵀ(𝓛_B (X u))``: two ``O(nnz(X))`` products with ``X`` kept as it is (CSR), and
``𝓛_B t`` without a pair. In the sorted layout the band partners of the document at position ``p`` (as the better
one) are the positions ``[p_out[p], p_in[p])`` of lower grade, and the better partners of ``p`` (as the worse one)
the positions ``[a_p, b_p)`` with ``a_p`` the first ``k`` with ``p_in[k] > p`` and ``b_p`` the first with
``p_out[k] > p`` (both boundaries are non-decreasing along the sorted positions). With prefix sums of ``t`` and of
counts per grade,

.. math:: (\\mathcal{L}_B t)_p = \\frac{1}{\\delta}\\Big(A_p t_p - \\sum_g C_{p,g} \\sum_{j \\in [p_{out}, p_{in}),\\,
          g_j = g} t_j - \\sum_g C'_{p,g} \\sum_{k \\in [a_p, b_p),\\, g_k = g} t_k\\Big),

``A_p`` the band weight of ``p``: ``O(m G)`` for ``m`` documents and ``G`` grades, whatever the band's size
(:class:`BandOperator`). Conjugate gradients with these products (preconditioned by the diagonal
``2λ + (X∘X)ᵀ diag(𝓛_B)``, exact but for the products of two documents sharing a feature) give Newton
directions; their rounding only perturbs a direction, never a bound.

The certificate's numbers (the band's weight, ``Σ_B c_i (1 - m_i)``, its square, ``α_i = c_i clip((1 - m_i)/δ, 0,
1)`` and ``P_Bᵀα``) are summed pair by pair from the enumerated band (:func:`band_sums`), streamed over chunks
of whole queries: exact ``α`` in the box, memory bounded by the chunk, not by the band.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from cvxrank._float64 import matvec, rmatvec
from cvxrank.native.kernels import sweep

__all__ = ["BandOperator", "band_sums", "hessian_free_bytes"]

#: Most band pairs enumerated at a time by :func:`band_sums` (24 bytes each; a longer query is one chunk).
CHUNK_PAIRS = 1 << 16


def hessian_free_bytes(n_documents: int, n_features: int, n_grades: int, nnz: int) -> int:
    """Peak bytes of the Hessian-free Newton phase beyond ``X``: per document and grade the weights, prefix sums and
    their gathers (about 57 bytes), per document the ranges, ``P_Bᵀα`` and score vectors (120), the squared values
    of ``X`` for the preconditioner (8 per stored entry), the vectors of conjugate gradients (64 per feature) and
    one chunk of band pairs (64 bytes each)."""
    return int(57 * n_documents * n_grades + 120 * n_documents + 8 * nnz + 64 * n_features + 64 * CHUNK_PAIRS)


def _chunks(oracle, p_out, p_in):
    """``(qa, qb, a, b, pairs)``: runs of whole queries (positions ``a:b``) of at most :data:`CHUNK_PAIRS` pairs of
    positions in the band (one query when it alone holds more)."""
    offsets = oracle._offsets
    Q = offsets.shape[0] - 1
    per_position = np.cumsum(p_in - p_out)
    per_query = np.diff(np.concatenate([[0], per_position[offsets[1:] - 1]])) if Q else np.zeros(0, np.int64)
    qa, acc = 0, 0
    for q in range(Q):
        if acc and acc + per_query[q] > CHUNK_PAIRS:
            yield qa, q, int(offsets[qa]), int(offsets[q]), acc
            qa, acc = q, 0
        acc += int(per_query[q])
    if Q:
        yield qa, Q, int(offsets[qa]), int(offsets[Q]), acc


def _pairs(oracle, order, p_out, p_in, qa, qb, a, b, total):
    """The band pairs of queries ``qa:qb`` (positions ``a:b``): (better, worse, weight), as :func:`band_pairs`."""
    if oracle._compiled:
        better, worse, weight = np.empty(total, dtype=np.int64), np.empty(total, dtype=np.int64), np.empty(total)
        k = sweep().band(order, oracle._gc, oracle._offsets, p_out, p_in, oracle._flat, oracle._G, qa, qb, 0,
                         better, worse, weight)
        return better[:k], worse[:k], weight[:k]
    lengths = p_in[a:b] - p_out[a:b]
    pos = np.repeat(np.arange(a, b, dtype=np.int64), lengths)
    first = np.repeat(np.cumsum(lengths) - lengths, lengths)
    other = p_out[pos] + (np.arange(total, dtype=np.int64) - first)
    G = oracle._G
    g_o = oracle._gc[order]
    keep = g_o[other] < g_o[pos]
    pos, other = pos[keep], other[keep]
    weight = oracle._flat[(oracle._q_sorted[pos] * G + g_o[pos]) * G + g_o[other]]
    keep = weight > 0
    return order[pos[keep]], order[other[keep]], weight[keep]


def band_sums(oracle, order, s, p_out, p_in, delta):
    """The band's numbers for the Newton phase and its certificate, pair by pair in chunks of queries.

    Returns ``k`` (pairs), ``Σ c_i (1 - m_i)``, ``Σ c_i (1 - m_i)²``, ``Σ α_i``, ``Σ α_i² / c_i`` and ``P_Bᵀ α``
    (per document, in the data's order: ``+α_i`` on the better document, ``-α_i`` on the worse), with
    ``α_i = c_i clip((1 - m_i)/δ, 0, 1)`` and ``m_i`` the margin at the scores ``s`` (data order).
    """
    k, first, second, total, squares = 0, 0.0, 0.0, 0.0, 0.0
    v_B = np.zeros(s.shape[0])
    for qa, qb, a, b, pairs in _chunks(oracle, p_out, p_in):
        if pairs == 0:
            continue
        ib, iw, c = _pairs(oracle, order, p_out, p_in, qa, qb, a, b, pairs)
        one_minus = 1.0 - (s[ib] - s[iw])
        alpha = np.clip(c * one_minus / delta, 0.0, c)
        k += c.shape[0]
        first += float(c @ one_minus)
        second += float(c @ one_minus ** 2)
        total += float(alpha.sum())
        squares += float(alpha @ (alpha / c))
        v_B += np.bincount(ib, alpha, minlength=s.shape[0])
        v_B -= np.bincount(iw, alpha, minlength=s.shape[0])
    return k, first, second, total, squares, v_B


class BandOperator:
    """``H = 2λI + Xᵀ 𝓛_B X`` of the band between the sorted boundaries ``p_out ≤ p_in`` (module docstring): products
    in ``O(nnz(X) + m G)`` and conjugate-gradient solves, no pair and no ``n x n`` matrix."""

    route = "hessian-free"

    def __init__(self, oracle, order, p_out, p_in, delta, lam, k):
        self.oracle, self.order, self.lam, self.k = oracle, order, lam, k
        self.n = oracle.n_features
        self._args = (p_out, p_in, delta)
        self._diag = None

    def _setup(self):
        """The per-position weights and ranges, made on the first product (a trial point of the line search
        never asks)."""
        if self._diag is not None:
            return
        oracle, order = self.oracle, self.order
        p_out, p_in, delta = self._args
        m, G = order.shape[0], oracle._G
        g_o = np.asarray(oracle._gc[order], dtype=np.int64)
        q = np.asarray(oracle._q_sorted, dtype=np.int64)
        values = oracle.values  # [q, better grade, worse grade], zero unless better > worse
        self._onehot = g_o[:, None] == np.arange(G)[None, :]
        positions = np.arange(m)
        a = np.searchsorted(p_in, positions, side="right")  # first k with p_in[k] > p
        b = np.maximum(np.searchsorted(p_out, positions, side="right"), a)  # first k with p_out[k] > p
        self._ranges = (np.asarray(p_out, dtype=np.int64), np.asarray(p_in, dtype=np.int64), a, b)
        scale = 1.0 / delta
        self._Cb = values[q, g_o, :] * scale  # weight of p over a worse document of grade g
        self._Cw = values[q, :, g_o] * scale  # weight of a better document of grade g over p
        N = self._prefix(np.ones(m))
        self._diag = self._apply(np.zeros(m), N, diag_only=True)  # 𝓛_B's diagonal: the band weight of p / δ

    def _prefix(self, t):
        """Prefix sums per grade of ``t`` (sorted order): row ``p`` sums positions ``< p``."""
        T = np.zeros((t.shape[0] + 1, self._onehot.shape[1]))
        np.cumsum(self._onehot * t[:, None], axis=0, out=T[1:])
        return T

    def _apply(self, t, T, *, diag_only=False):
        p_out, p_in, a, b = self._ranges
        if diag_only:  # T holds the counts
            return (self._Cb * (T[p_in] - T[p_out])).sum(axis=1) + (self._Cw * (T[b] - T[a])).sum(axis=1)
        out = self._diag * t
        out -= (self._Cb * (T[p_in] - T[p_out])).sum(axis=1)
        out -= (self._Cw * (T[b] - T[a])).sum(axis=1)
        return out

    def laplacian(self, t_o):
        """``𝓛_B t`` for ``t`` in the sorted order."""
        self._setup()
        return self._apply(t_o, self._prefix(t_o))

    def matvec(self, u):
        """``H u``."""
        self._setup()
        X, order = self.oracle.X, self.order
        t = matvec(X, u)
        y_o = self.laplacian(t[order])
        y = np.empty_like(y_o)
        y[order] = y_o
        return 2.0 * self.lam * u + rmatvec(X, y)

    def preconditioner(self):
        """``1 / (2λ + (X∘X)ᵀ diag(𝓛_B))``: ``H``'s diagonal but for the products of two documents sharing a
        feature (one pass over ``X``'s values, no copy of its structure)."""
        self._setup()
        X = self.oracle.X
        d = np.empty(self._diag.shape[0])
        d[self.order] = self._diag
        if sp.issparse(X):
            X = X.tocsr()
            squared = sp.csr_matrix((np.square(X.data, dtype=np.float64), X.indices, X.indptr), shape=X.shape)
            col = squared.T @ d
        else:
            col = rmatvec(np.square(X), d) if X.size else np.zeros(X.shape[1])
        return 1.0 / (2.0 * self.lam + col)

    def solve(self, rhs, *, tol: float = 1e-10, max_iter: int = 500):
        """``H⁻¹ rhs`` by preconditioned conjugate gradients to ``‖r‖ ≤ tol ‖rhs‖``."""
        return pcg(self.matvec, rhs, self.preconditioner(), tol, max_iter)[0]


def pcg(matvec, b, inverse_diagonal, tol, max_iter):
    """Preconditioned conjugate gradients for ``A x = b`` from 0: ``(x, iterations)``."""
    x = np.zeros_like(b)
    r = b.copy()
    z = inverse_diagonal * r
    p = z.copy()
    rz = float(r @ z)
    stop = tol * tol * float(b @ b)
    it = 0
    while it < max_iter and float(r @ r) > stop:
        Ap = matvec(p)
        curv = float(p @ Ap)
        if not curv > 0:
            break
        step = rz / curv
        x += step * p
        r -= step * Ap
        z = inverse_diagonal * r
        rz_new = float(r @ z)
        p *= rz_new / rz
        p += z
        rz = rz_new
        it += 1
    return x, it
