"""Reduced-dual step: the exact pairwise dual on the pairs near the margin, the others summed by the oracle.

At the optimum ``w*`` of ``F(w) = λ‖w‖² + Σ_i c_i [1 - <w, d_i>]_+`` (9)/SIGIR,
the dual variables of the pairs (``0 ≤ α_i ≤ c_i``, hinge scale) are fixed by
the margins ``m_i = <w*, d_i>``: ``α_i = c_i`` when ``m_i < 1``, ``α_i = 0``
when ``m_i > 1``; only the pairs exactly on the margin are free, and there are
about ``n`` of them. Near ``w*`` the split is known up to a band: for a point
``w`` and a width ``ε``,

* ``V = {i : m_i(w) < 1 - ε}`` (fixed at ``α_i = c_i``): summed pair-free by
  the oracle at the scores ``s / (1 - ε)``: ``W_V = Σ_V c_i`` and
  ``u_V = Σ_V c_i d_i = -Xᵀ v_V``;
* ``F = {i : 1 - ε ≤ m_i(w) < 1 + ε}`` (free): enumerated, a few hundred to a
  few thousand pairs, rows ``d_i = x_better - x_worse``;
* the rest at ``α_i = 0``.

The restricted dual (the dual of (9) on the hinge scale with ``α`` fixed
outside ``F``)

.. math:: \\max_{0 \\le \\alpha_F \\le c_F} \\; W_V + \\mathbf{1}^\\top \\alpha_F
          - \\frac{1}{4\\lambda} \\big\\| u_V + D_F^\\top \\alpha_F \\big\\|^2,
          \\qquad w(\\alpha) = \\frac{1}{2\\lambda}\\big(u_V + D_F^\\top \\alpha_F\\big),

is a QP in ``|F|`` variables, solved by Clarabel in the lifted form
``z = u_V + D_Fᵀ α_F``. Any ``α`` in the box gives a lower bound on ``min F``
(weak duality), so the value at the (clipped) solution is a certificate
whatever ``ε``; when ``ε ≥ ‖w - w*‖ max_i ‖d_i‖`` the split is that of the
optimum, the restricted dual equals the full dual and ``w(α) = w*``. With
``‖w - w*‖² ≤ gap / λ`` (strong convexity), a point with a small certified
gap gives a small band, which is why this step finishes what the cutting
planes start.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["ReducedDual", "margin_band", "reduced_dual"]


class ReducedDual:
    """Result of :func:`reduced_dual`: ``lower_bound``, ``w`` (= ``w(α)``), ``eps``, ``n_free`` and ``status``."""

    def __init__(self, lower_bound, w, eps, n_free, status):
        self.lower_bound = lower_bound
        self.w = w
        self.eps = eps
        self.n_free = n_free
        self.status = status


def _band_bounds(oracle, s_o, eps, lower_only):
    p_in, _ = oracle._bounds(s_o / (1.0 - eps))   # [p_in, end): margin < 1 - eps
    p_out, _ = oracle._bounds(s_o if lower_only else s_o / (1.0 + eps))  # [p_out, end): margin < 1 (+ eps)
    return np.minimum(p_out, p_in), p_in


def margin_band(oracle, s_o, order, eps: float, *, lower_only: bool = False):
    """The pairs with ``1 - ε ≤ m_i < 1 + ε`` at the sorted scores ``s_o``, as (better, worse, weight).

    ``lower_only=True``: the pairs with ``1 - ε ≤ m_i < 1`` (the band of the Huber loss).

    Positions come from the oracle's exact boundary search on the scores
    scaled by ``1/(1 - ε)`` and ``1/(1 + ε)``, so the band is disjoint from the
    pairs the oracle counts as violated at ``s / (1 - ε)``. Returns document
    indices (in the data's order) and pair weights ``c_i > 0``.
    """
    p_out, p_in = _band_bounds(oracle, s_o, eps, lower_only)
    lengths = p_in - p_out
    total = int(lengths.sum())
    better = np.repeat(np.arange(s_o.shape[0], dtype=np.int64), lengths)
    first = np.repeat(np.cumsum(lengths) - lengths, lengths)
    worse = p_out[better] + (np.arange(total, dtype=np.int64) - first)
    G = oracle._G
    g_o = oracle._gc[order]
    keep = g_o[worse] < g_o[better]
    better, worse = better[keep], worse[keep]
    weight = oracle._flat[(oracle._q_sorted[better] * G + g_o[better]) * G + g_o[worse]]
    keep = weight > 0
    return order[better[keep]], order[worse[keep]], weight[keep]


def band_size(oracle, s_o, eps: float, *, lower_only: bool = False) -> int:
    """Upper bound on the pairs in the band of width ``eps`` (range lengths, grades not checked)."""
    p_out, p_in = _band_bounds(oracle, s_o, eps, lower_only)
    return int((p_in - p_out).sum())


def reduced_dual(oracle, lam: float, w: np.ndarray, eps: float, *, budget: int = 20_000) -> ReducedDual:
    """One reduced-dual step at ``w`` with band width ``eps`` (shrunk until the band holds ≤ ``budget`` pairs).

    Returns the certified lower bound of the restricted dual at its solution
    and ``w(α)``; ``status`` is ``"solved"``, ``"empty"`` (no pair in the
    band) or the QP solver's status when it failed (then ``lower_bound`` is
    ``-inf``).
    """
    import clarabel

    s = oracle.scores(w)
    order = oracle._order(s)
    s_o = s[order]
    eps = float(min(eps, 0.5))
    while band_size(oracle, s_o, eps) > budget and eps > 1e-12:
        eps /= 4.0
    ib, iw, c = margin_band(oracle, s_o, order, eps)
    k = c.shape[0]
    r = oracle.evaluate_scores(s / (1.0 - eps), counts=False)
    W_V = r.violated_weight
    u_V = -oracle.gradient(r.score_gradient)
    n = u_V.shape[0]
    if k == 0:
        return ReducedDual(W_V - float(u_V @ u_V) / (4.0 * lam), u_V / (2.0 * lam), eps, 0, "empty")
    X = oracle.X
    D = X[ib] - X[iw]
    D = D.toarray() if sp.issparse(D) and D.shape[1] <= 2000 else D
    # minimise (1/(4λ))‖z‖² - 1ᵀα  s.t.  z - Dᵀα = u_V,  0 ≤ α ≤ c   (x = (α, z))
    P = sp.block_diag((sp.csc_matrix((k, k)), sp.identity(n, format="csc") / (2.0 * lam)), format="csc")
    q = np.concatenate([-np.ones(k), np.zeros(n)])
    Dt = sp.csc_matrix(D.T) if not sp.issparse(D) else D.T.tocsc()
    A = sp.vstack([sp.hstack([-Dt, sp.identity(n)]),
                   sp.hstack([-sp.identity(k), sp.csc_matrix((k, n))]),
                   sp.hstack([sp.identity(k), sp.csc_matrix((k, n))])], format="csc")
    b = np.concatenate([u_V, np.zeros(k), c])
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = 1e-10
    sol = clarabel.DefaultSolver(P, q, A, b, [clarabel.ZeroConeT(n), clarabel.NonnegativeConeT(2 * k)], settings).solve()
    status = str(sol.status)
    if "Solved" not in status:
        return ReducedDual(-np.inf, None, eps, k, status)
    alpha = np.clip(np.asarray(sol.x[:k]), 0.0, c)
    z = u_V + np.asarray(D.T @ alpha).ravel()
    lower = W_V + float(alpha.sum()) - float(z @ z) / (4.0 * lam)
    return ReducedDual(lower, z / (2.0 * lam), eps, k, "solved")
