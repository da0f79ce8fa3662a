"""Smoothed Newton phase: Newton steps on the Huber-smoothed hinge, certified by the exact dual.

For a width ``δ ∈ (0, 1/2]`` replace every hinge ``[1 - m]_+`` of (9)/SIGIR by
the Huber function ``h_δ(m) = 1 - m - δ/2`` for ``m < 1 - δ``,
``(1 - m)² / (2δ)`` for ``1 - δ ≤ m < 1`` and 0 above (Chapelle 2007,
"Training a support vector machine in the primal"). The smoothed objective

.. math:: F_\\delta(w) = \\lambda\\|w\\|^2 + \\sum_i c_i\\, h_\\delta(\\langle w, d_i\\rangle)

is differentiable, with gradient ``2λw - Σ_i α_i d_i`` and a piecewise constant
Hessian ``2λI + Σ_{i ∈ B} (c_i/δ) d_i d_iᵀ``, where

.. math:: \\alpha_i = c_i \\min\\Big(1, \\max\\Big(0, \\frac{1 - m_i}{\\delta}\\Big)\\Big)

and ``B = {i : 1 - δ ≤ m_i < 1}`` (the band). Pair-free evaluation:

* ``V = {m_i < 1 - δ}`` (``α_i = c_i``) is summed by the oracle at the scores
  ``s / (1 - δ)``: ``W_V = Σ_V c_i``, ``Σ_V c_i d_i = -Xᵀ v_V`` and
  ``Σ_V c_i (1 - m_i) = W_V + v_Vᵀ s``;
* the band ``B`` is enumerated (:func:`~cvxrank.native.band.band_pairs`, between the
  boundary at ``s / (1 - δ)`` and the one at ``s``, found by walking down from it
  (:func:`~cvxrank.native.oracle.below_bound`; in the same pass as the sums with the
  compiled sweeps of :mod:`cvxrank.native.kernels`)):
  it holds about ``δ`` times the pair density at the margin, a few hundred to a
  few thousand pairs for the widths used, never all pairs (``δ`` is halved
  until it holds at most ``budget`` pairs, :func:`band_budget`).

Certificate. The ``α`` above lies in the box ``[0, c]`` at every ``w``, so the
dual value of the hinge problem

.. math:: L(\\alpha) = \\sum_i \\alpha_i - \\frac{1}{4\\lambda}\\Big\\|\\sum_i \\alpha_i d_i\\Big\\|^2 \\le \\min_w F(w)

is a lower bound whatever the accuracy of ``w`` (weak duality). At the minimiser
of ``F_δ``, ``w = Σ α_i d_i / (2λ)`` and ``F(w) - L(α) = Σ_{i∈B} c_i (1 - m_i)
(1 - (1 - m_i)/δ) ≤ (δ/4) Σ_B c_i``: the gap shrinks like ``δ²`` (the band holds
``O(δ)`` weight), so a few halvings of ``δ`` after a few Newton steps each reach
1e-6. ``F(w)`` is always the exact objective from the oracle.

Continuation. When ``δ`` shrinks to ``δ'``, the next Newton steps start on the
tangent of the path of minimisers ``w(δ)``, not at ``w``: with ``V`` and ``B``
held fixed, differentiating ``∇F_δ(w(δ)) = 0`` (where ``α_i = c_i (1 - m_i)/δ``
on ``B``) gives ``H dw/dδ = -(1/δ) Σ_{i∈B} α_i d_i``, so

.. math:: w(\\delta') \\approx w + \\frac{\\delta - \\delta'}{\\delta} H^{-1} \\sum_{i \\in B} \\alpha_i d_i,

one solve with the ``H`` already formed and no oracle call (its effect on the
evaluations of a solve: ``docs/native.md``, "Newton phase", "Continuation").
"""

from __future__ import annotations

import time

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from cvxrank._validation import check_max_iter
from cvxrank.exceptions import ValidationError
from cvxrank.native.band import band_pairs
from cvxrank.native.band_operator import BandOperator, band_sums
from cvxrank.native.box_qp import box_qp
from cvxrank.native.stopping import aim
from cvxrank.rounding import band_dual_rounding

__all__ = ["BAND_BUDGET", "band_budget", "point_from_parts", "smoothed_newton", "smoothed_parts"]

#: Most pairs enumerated in the band: the cap of :func:`band_budget` (memory: the band's rows).
BAND_BUDGET = 20_000
#: After a shrink (``fit=False``), how many times the budget the evaluation's re-check of its band allows before it
#: halves ``δ``: the tangent's point can hold more pairs near the margin than the band before it. On separable data
#: with more pairs on the margin than the budget (all pairs between a boundary's tied documents; the budget is at
#: most ``m``) the halvings took ``δ`` from 1.6e-2 to 3.8e-6 in one evaluation, the Newton step there failed and the
#: phase ended (make_ranking, 25 queries x 20-40 documents, 400 features, 983 pairs on the margin against a budget
#: of 705, λ = 0.05: 1.8e-2 after 828 calls; with 2, float64's floor after 651; docs/native-measurements.md,
#: "Measurements (2026-11-27, 21:00)"). Never above :data:`BAND_BUDGET`, which the memory gate counts.
BUDGET_AFTER_SHRINK = 2.0


def band_budget(n_documents: int, n_features: int) -> int:
    """The default ``budget`` of :func:`smoothed_newton`: ``10 m / n`` pairs of positions, at least ``40 n``, at most
    :data:`BAND_BUDGET` and at most ``m``.

    An evaluation's work on the band is about ``k n²`` (the Hessian ``D_sᵀ D_s`` of ``k`` rows), one floor pass
    about ``m n`` (``X w`` and ``Xᵀ v``): ``10 m / n`` pairs of positions (grades not checked, about 3 times the
    band's pairs) keep the band's work near one floor pass. Below ``40 n`` rows the Hessian of the band says too
    little, unless there are fewer documents than that: ``D_sᵀ D_s = X_Sᵀ L X_S`` (``L`` the band's weighted graph
    Laplacian on its documents) has rank below ``m`` whatever the band, and more rows than documents only add
    work (the real sample, 10 documents a feature: 1.2-1.4x faster at ``m`` than at ``40 n``). The budgets
    compared: ``docs/native.md``, "Newton phase".

    Examples
    --------
    >>> band_budget(16_303, 45), band_budget(1_000_103, 136), band_budget(3_005, 300), band_budget(300, 10)
    (3622, 20000, 3005, 300)
    """
    n = max(n_features, 1)
    return int(min(BAND_BUDGET, n_documents, max(40 * n, 10 * n_documents // n)))


def _fit_band(oracle, s_o, delta, budget):
    """``δ`` halved until ``[1 - δ, 1)`` holds at most ``budget`` pairs of positions (grades not checked).

    Counted from boundary searches alone (no sums, no band): ``p_out`` at margin 1 once, ``p_in`` at margin
    ``1 - δ`` per width (with the compiled sweeps, eight widths in one pass). The test here is
    ``s_p - s_k < 1 - δ`` on ``s``, the evaluation's is on ``s / (1 - δ)``: they can differ for pairs within
    rounding of the edge, which the caller re-checks.
    """
    if oracle._compiled:  # eight widths per pass, a pointer each: the same counts
        while True:
            widths = [delta * 0.5 ** j for j in range(8)]
            for width, count in zip(widths, oracle._band_counts(s_o, [1.0 - x for x in widths])):
                if not (width > 1e-12 and count > budget):
                    return width
            delta = widths[-1] / 2.0
    p_out = oracle._bounds(s_o, hi=False)[0]
    while delta > 1e-12 and int((oracle._bounds(s_o, 1.0 - delta, hi=False)[0] - p_out).sum()) > budget:
        delta /= 2.0
    return delta


class _Band:
    """The band's rows ``D_s`` (``sqrt(c_i/δ) d_i``: dense, or CSR for a sparse ``X``) and what solves with
    ``H = 2λI + D_sᵀ D_s`` need, formed only when a solve asks (a trial point of the line search never does).

    A solve picks the cheapest exact route for the sizes: the dense ``n x n`` Hessian (``k n²`` to form), the
    ``k x k`` system of Woodbury's identity ``H⁻¹ = (I - D_sᵀ (2λI + D_s D_sᵀ)⁻¹ D_s) / (2λ)`` (``k² n``) when
    the band holds fewer pairs than there are features, or, when neither fits :data:`DENSE_ENTRIES`,
    conjugate gradients on ``H`` with products ``2λu + D_sᵀ(D_s u)`` (``O(nnz(D_s))`` each, no ``n x n`` matrix:
    sparse high-dimensional data)."""

    def __init__(self, lam, n, Ds, gram=None):
        self.lam, self.n, self.Ds, self.k = lam, n, Ds, Ds.shape[0]
        self._H = self._small = self._factor = None
        self._gram = gram  # (GramCache, better, worse, c, δ): H updated from the last one's (dense rows only)

    @property
    def route(self) -> str:
        k, n = self.k, self.n
        if k < n and k * k <= DENSE_ENTRIES:
            return "woodbury"
        return "dense" if n * n <= DENSE_ENTRIES else "cg"

    @property
    def H(self) -> np.ndarray:
        """The dense Hessian (built once)."""
        if self._H is None:
            if self._gram is not None and not sp.issparse(self.Ds):
                cache, ib, iw, c, delta = self._gram
                H = cache.update(ib, iw, c, self.Ds, delta) / delta  # Σ_B c_i d_i d_iᵀ / δ
            else:
                G = self.Ds.T @ self.Ds  # numpy's symmetric rank-k product (or a sparse product)
                H = G.toarray() if sp.issparse(G) else np.array(G)
            H[np.diag_indices_from(H)] += 2.0 * self.lam
            self._H = H
        return self._H

    def solve(self, rhs: np.ndarray, *, tol: float = 1e-10, shift: float = 0.0) -> np.ndarray:
        """``(H + shift I)⁻¹ rhs`` (``shift ≥ 0``: a Levenberg–Marquardt damping; its factor is not kept)."""
        route, lam2 = self.route, 2.0 * self.lam + shift
        if self.k == 0:  # an empty band: H = 2λI (old LAPACK wrappers refuse 0 x 0 factors)
            return rhs / lam2
        if route == "dense":
            return _shifted_solve(self.H, shift, rhs) if shift else self._solve(self.H, rhs)
        Ds = self.Ds
        if route == "woodbury":
            if self._small is None:
                S = Ds @ Ds.T
                self._small = S.toarray() if sp.issparse(S) else np.array(S)
                self._small[np.diag_indices_from(self._small)] += 2.0 * self.lam
            y = _shifted_solve(self._small, shift, Ds @ rhs) if shift else self._solve(self._small, Ds @ rhs)
            return (rhs - Ds.T @ y) / lam2
        return _cg(lambda u: lam2 * u + Ds.T @ (Ds @ u), rhs, tol)

    def largest_diagonal(self) -> float:
        """The largest diagonal entry of ``H = 2λI + D_sᵀ D_s``: ``2λ`` plus the largest column sum of ``D_s²``."""
        if self._H is not None:
            return float(np.diag(self._H).max())
        if self.k == 0:
            return 2.0 * self.lam
        Ds = self.Ds
        squares = Ds.multiply(Ds).sum(axis=0) if sp.issparse(Ds) else np.einsum("ij,ij->j", Ds, Ds)
        return 2.0 * self.lam + float(np.max(squares))

    def _solve(self, M, rhs):
        """``M⁻¹ rhs`` for the route's matrix (``2λI`` plus a Gram matrix: positive definite) by a Cholesky factor
        kept for the next solve (the Newton step and the tangent share it); LU if rounding broke definiteness."""
        if self._factor is None:
            try:
                self._factor = sla.cho_factor(M, lower=True, check_finite=False)
            except (np.linalg.LinAlgError, sla.LinAlgError):
                return np.linalg.solve(M, rhs)
        return sla.cho_solve(self._factor, rhs, check_finite=False)


def _shifted_solve(M, shift, rhs):
    """``(M + shift I)⁻¹ rhs`` for a positive definite ``M`` (not changed): one copy, factored in place (LU on
    another copy if rounding broke definiteness); the factor is not kept."""
    A = M.copy()
    A[np.diag_indices_from(A)] += shift
    try:
        return sla.cho_solve(sla.cho_factor(A, lower=True, check_finite=False, overwrite_a=True), rhs,
                             check_finite=False)
    except (np.linalg.LinAlgError, sla.LinAlgError):
        A = M.copy()
        A[np.diag_indices_from(A)] += shift
        return np.linalg.solve(A, rhs)


#: Most entries of a dense matrix the Newton phase forms (``n x n`` Hessian or ``k x k`` Woodbury system); beyond
#: it, conjugate gradients (:class:`_Band`). 4 million entries: 32 MB.
DENSE_ENTRIES = 4_000_000


class GramCache:
    """``S = Σ_B c_i d_i d_iᵀ`` of the last band whose Hessian was formed, updated to the next band by the pairs that
    entered and left it: ``(|entered| + |left|) n²`` instead of ``k n²``. Between two Newton steps at one width the
    band changes by 5–40 % of its pairs (the real sample); a change of more than :data:`REBUILD_SHARE` of the new
    band, or :data:`REBUILD_AFTER` updates in a row (rounding), rebuilds ``S`` from the rows. ``rows(better, worse,
    scale)`` gives ``scale_i (x_better - x_worse)`` (the oracle's ``_pair_rows``, not its reused buffer)."""

    def __init__(self, n_documents, rows):
        self.m, self.rows = int(n_documents), rows
        self.S = self.keys = self.pairs = None
        self.updates = 0

    def update(self, ib, iw, c, Ds, delta):
        """``S`` for the band ``(ib, iw, c)`` whose rows are ``Ds = sqrt(c/δ) d`` (read before the next evaluation
        reuses their buffer), as a new array."""
        keys = ib * self.m + iw
        if self.S is not None and self.updates < REBUILD_AFTER:
            entered = ~np.isin(keys, self.keys, assume_unique=True)
            left = ~np.isin(self.keys, keys, assume_unique=True)
            if int(entered.sum() + left.sum()) <= REBUILD_SHARE * keys.shape[0]:
                A = Ds[entered]
                S = self.S + delta * (A.T @ A)
                if left.any():
                    b, w, c_old = self.pairs
                    R = self.rows(b[left], w[left], np.sqrt(c_old[left]))
                    S -= R.T @ R
                self.S, self.keys, self.pairs, self.updates = S, keys, (ib, iw, c), self.updates + 1
                return S.copy()
        self.S = delta * (Ds.T @ Ds)
        self.keys, self.pairs, self.updates = keys, (ib, iw, c), 0
        return self.S.copy()


#: Fewest features for :class:`GramCache`: below, forming ``D_sᵀ D_s`` costs less than finding the pairs that
#: changed (50 features: 1.07-1.11x the time with the cache; 300 features: 0.79-0.95x).
GRAM_CACHE_FEATURES = 100

#: :class:`GramCache` rebuilds when the pairs that entered and left number more than this share of the new band.
REBUILD_SHARE = 0.5
#: ... and after this many updates in a row.
REBUILD_AFTER = 20


def _cg(matvec, b, tol, max_iter=500, x0=None, check=None, every=25):
    """Conjugate gradients for ``A x = b`` (``A`` symmetric positive definite, or semidefinite with ``b`` in its range:
    the iterates stay there), from 0 or ``x0``, to ``‖r‖ ≤ tol ‖b‖``; stops early at a direction of no curvature
    (rounding). From ``x0`` the first residual costs one more product; on a semidefinite ``A`` the iterates stay in
    ``x0`` plus the range of ``A``. With ``check``, every ``every`` iterations ``check(x)`` may end the run (True)."""
    stop = tol * tol * float(b @ b)
    if x0 is None:
        x, r = np.zeros_like(b), b.copy()
    else:
        x = np.array(x0, dtype=np.float64)
        r = b - matvec(x)
    del b, x0  # (the caller's temporaries go now: a finish looks at F beside these vectors)
    p = r.copy()
    rr = float(r @ r)
    for it in range(max_iter):
        if rr <= stop or (check is not None and it and it % every == 0 and check(x)):
            break
        Ap = matvec(p)
        pAp = float(p @ Ap)
        if not pAp > 0:
            break
        a = rr / pAp
        x += a * p
        r -= a * Ap
        rr_new = float(r @ r)
        p *= rr_new / rr
        p += r
        rr = rr_new
        del Ap
    return x


def _evaluate(oracle, lam, w, delta, budget=None, fit=True):
    """Exact ``F(w)``, the smoothed ``F_δ(w)``, its gradient and Hessian, and the dual bound ``L(α)``.

    :func:`_point` with the dense Hessian formed (``H`` in the 4th place); see there.
    """
    ev = _point(oracle, lam, w, delta, budget, fit)
    return ev["F"], ev["Fd"], ev["grad"], ev["band"].H, ev["L"], ev["k"], ev["sg"], ev["delta"]


def _rows(oracle, ib, iw, root, reuse=True):
    """The band's rows ``root_i (x_better - x_worse)``: the oracle's dense rows (in its reused buffer unless
    ``reuse=False``), or CSR for a sparse ``X`` whose dense rows would exceed :data:`DENSE_ENTRIES`
    (high-dimensional data: no dense copy of a row)."""
    X = oracle.X
    if sp.issparse(X) and ib.shape[0] * X.shape[1] > DENSE_ENTRIES:
        better, worse = X[ib], X[iw]
        if X.dtype != np.float64:  # float64 before the difference, as the dense rows (float32's would round)
            better, worse = better.astype(np.float64), worse.astype(np.float64)
        D = (better - worse).tocsr()
        D = sp.csr_matrix(sp.diags(root) @ D) if D.shape[0] else D
        return D
    return oracle._pair_rows(ib, iw, root, reuse=reuse)


def _point(oracle, lam, w, delta, budget=None, fit=True, hessian_free=False, gram=None, trial=False):
    """Exact ``F(w)``, the smoothed ``F_δ(w)``, its gradient, the band (a :class:`_Band`) and the dual bound ``L(α)``.

    One sort and two boundary searches: at ``s`` (``m_i < 1``) and at ``s / (1 - δ)`` (``m_i < 1 - δ``,
    the set ``V``). The pairs between them are the band ``B``, and ``F(w) = λ‖w‖² + Σ_V c_i (1 - m_i)
    + Σ_B c_i (1 - m_i)`` needs no third search. With ``budget``, ``δ`` is halved until the band holds
    at most that many pairs (grades not checked), sized first by boundary searches alone (:func:`_fit_band`;
    ``fit=False`` skips them where the band is expected to fit, as after a shrink, and allows
    :data:`BUDGET_AFTER_SHRINK` times the budget, at most :data:`BAND_BUDGET`). The bound comes as
    ``L = (L(α), Σ_i α_i d_i, Σ_{i∈B} α_i d_i)``: the last, the band's part, gives the path's tangent.
    Also returned: ``W_V``, ``g_V = Σ_V c_i d_i`` and the band's weights ``c`` (the jump of :func:`_jump`).

    ``trial=True`` (a trial point of the line search, local dense or sparse rows): only ``F``, ``F_δ`` and ``δ``,
    and what :func:`_complete` needs to make the whole evaluation if the trial is accepted (no band rows, no
    ``Xᵀ`` product, no bound: a rejected trial costs the sort and the sweep).

    ``hessian_free=True`` (many features): no band rows; the band's sums come pair by pair in chunks and its
    Hessian as products (:class:`~cvxrank.native.band_operator.BandOperator`), ``c`` and ``α`` are not kept.

    An oracle without the local layout (``oracle.smoothed_parts``, e.g. :class:`~cvxrank.native.dask.DaskOracle`)
    gives the same numbers as additive parts (:func:`point_from_parts`).
    """
    if getattr(oracle, "smoothed_parts", None) is not None and not hasattr(oracle, "_order"):
        return point_from_parts(lam, w, oracle.smoothed_parts(w, delta, budget=budget, fit=fit))
    s = oracle.scores(w)
    order = oracle._order(s)  # also sorts s / (1 - δ)
    s_o = s[order]
    if budget is not None and fit:
        delta = _fit_band(oracle, s_o, delta, budget)
    allowed = budget  # the re-check's limit; after a shrink a wider band, up to BAND_BUDGET
    if budget is not None and not fit:
        allowed = max(budget, min(BUDGET_AFTER_SHRINK * budget, BAND_BUDGET))
    mag_o = np.empty_like(s_o)  # the weight of each document's pairs in V (the bound's rounding reads it)
    while True:  # with ``budget``: a re-check on the evaluation's own band (rounding at its edges)
        # [p_in, end): margin < 1 - δ (the set V, summed); [p_out, end): margin < 1 (p_out found from p_in down)
        W_V, v_o, _, p_in, p_out = oracle._violations(s_o / (1.0 - delta), order, s_band=s_o, magnitudes=mag_o)
        if allowed is None or delta <= 1e-12 or int((p_in - p_out).sum()) <= allowed:
            break
        delta /= 2.0
    # Σ_V c_i (1 - m_i) = W_V + vᵀ s; v sums to 0 over each query, so a shift per query keeps terms small
    vs = float(v_o @ (s_o - s_o[oracle._start]))
    v = np.empty_like(v_o)
    v[order] = v_o
    mag = np.empty_like(mag_o)
    mag[order] = mag_o
    del v_o, s_o, mag_o
    if hessian_free:
        return _point_hessian_free(oracle, lam, w, s, order, delta, W_V, v, vs, p_out, p_in)
    ib, iw, c = band_pairs(oracle, order, p_out, p_in)
    one_minus = 1.0 - (s[ib] - s[iw])  # > 0: every band pair has a margin below 1
    ww = lam * float(w @ w)
    F = ww + max(W_V + vs + float(c @ one_minus), 0.0)
    F_delta = ww + W_V * (1.0 - delta / 2.0) + vs + float(c @ one_minus ** 2) / (2.0 * delta)
    ev = {"F": F, "Fd": F_delta, "delta": delta, "k": c.shape[0], "W_V": W_V, "c": c,
          "_rest": (ib, iw, v, one_minus, gram), "mag": mag}
    return ev if trial else _complete(oracle, lam, w, ev)


def _complete(oracle, lam, w, ev):
    """The rest of :func:`_point`'s evaluation from a trial's (``ev``, in place): the band's rows, the sums
    ``g_V`` and ``u_B``, the bound, the gradient and the smoothed problem's gap."""
    ib, iw, v, one_minus, gram = ev.pop("_rest")
    delta, c, W_V = ev["delta"], ev["c"], ev["W_V"]
    root = np.sqrt(c / delta)
    Ds = _rows(oracle, ib, iw, root)  # rows sqrt(c_i / δ) d_i, float64: H = 2λI + Dsᵀ Ds
    alpha = np.clip(c * one_minus / delta, 0.0, c)
    u_B = Ds.T @ (alpha / root)  # Σ_B α_i d_i
    g_V = -oracle.gradient(v)  # Σ_V c_i d_i
    u = g_V + u_B  # Σ α_i d_i
    lower = W_V + float(alpha.sum()) - float(u @ u) / (4.0 * lam)
    # duality gap of the smoothed problem: its dual is L(α) - (δ/2) Σ α_i² / c_i
    smooth_gap = ev["Fd"] - lower + 0.5 * delta * (W_V + float(alpha @ (alpha / c)) if c.size else W_V)
    band = _Band(lam, w.shape[0], Ds, None if gram is None else (gram, ib, iw, c, delta))
    mag = ev.pop("mag")
    # what the bound's rounding allowance reads (_dual_rounding): V's weights per document, the band's pairs and α
    ev.update(grad=2.0 * lam * w - u, band=band, L=(lower, u, u_B), sg=smooth_gap, g_V=g_V, root=root, alpha=alpha,
              pairs=(mag, ib, iw, c.shape[0]), record=(mag, ib, iw, c.shape[0], alpha, W_V + float(alpha.sum()), u))
    return ev


#: The additive parts of an evaluation of the Newton phase (:func:`smoothed_parts`): sums over the pairs of ``V``
#: (margin below ``1 - δ``) and of the band ``B`` (margin in ``[1 - δ, 1)``), which a sum over query shards adds up.
PART_SCALARS = ("W_V", "vs", "first", "second", "alpha_sum", "alpha_squares", "k", "positions")
PART_VECTORS = ("g_V", "u_B")


def smoothed_parts(oracle, w, delta):
    """The additive parts of one evaluation of :func:`_point` at width ``δ`` on a local oracle, and its band.

    Returns ``(parts, band)``: ``parts`` maps :data:`PART_SCALARS` and :data:`PART_VECTORS` to ``W_V = Σ_V c_i``,
    ``vs = Σ_V c_i (−m_i) + shifts`` (so that ``Σ_V c_i (1 − m_i) = W_V + vs``), ``first = Σ_B c_i (1 − m_i)``,
    ``second = Σ_B c_i (1 − m_i)²``, ``alpha_sum = Σ_B α_i``, ``alpha_squares = Σ_B α_i² / c_i``, ``k`` (band
    pairs), ``positions`` (pairs of positions between the two boundaries, grades not checked: the budget's
    count), ``g_V = Σ_V c_i d_i`` and ``u_B = Σ_B α_i d_i``; ``band = (D_s, c, root, α)`` with the band's rows
    ``D_s = sqrt(c_i/δ) d_i`` (a copy). Over query shards every part is the sum of the shards' parts, and the
    Hessian ``D_sᵀ D_s`` too: this is what :class:`~cvxrank.native.dask.DaskOracle` sums.
    """
    s = oracle.scores(w)
    order = oracle._order(s)
    s_o = s[order]
    W_V, v_o, _, p_in, p_out = oracle._violations(s_o / (1.0 - delta), order, s_band=s_o)
    vs = float(v_o @ (s_o - s_o[oracle._start]))
    v = np.empty_like(v_o)
    v[order] = v_o
    ib, iw, c = band_pairs(oracle, order, p_out, p_in)
    root = np.sqrt(c / delta)
    Ds = _rows(oracle, ib, iw, root)
    Ds = Ds.copy() if not sp.issparse(Ds) else Ds  # the oracle reuses its row buffer
    one_minus = 1.0 - (s[ib] - s[iw])
    alpha = np.clip(c * one_minus / delta, 0.0, c)
    parts = {"W_V": W_V, "vs": vs, "first": float(c @ one_minus), "second": float(c @ one_minus ** 2),
             "alpha_sum": float(alpha.sum()), "alpha_squares": float(alpha @ (alpha / c)) if c.size else 0.0,
             "k": int(c.shape[0]), "positions": int((p_in - p_out).sum()), "g_V": -oracle.gradient(v),
             "u_B": Ds.T @ (alpha / root) if c.size else np.zeros(oracle.n_features), "delta": delta}
    return parts, (Ds, c, root, alpha)


def point_from_parts(lam, w, parts):
    """:func:`_point`'s dictionary from summed parts (:func:`smoothed_parts`); ``parts["band"]`` is the band's
    handle (``k``, ``n``, ``H``, ``solve``, and for the jump ``differences()``)."""
    delta, W_V, vs = parts["delta"], parts["W_V"], parts["vs"]
    ww = lam * float(w @ w)
    F = ww + max(W_V + vs + parts["first"], 0.0)
    u_B, g_V = parts["u_B"], parts["g_V"]
    u = g_V + u_B
    lower = W_V + parts["alpha_sum"] - float(u @ u) / (4.0 * lam)
    F_delta = ww + W_V * (1.0 - delta / 2.0) + vs + parts["second"] / (2.0 * delta)
    smooth_gap = F_delta - lower + 0.5 * delta * (W_V + parts["alpha_squares"])
    parts["band"].lam = lam
    return {"F": F, "Fd": F_delta, "grad": 2.0 * lam * w - u, "band": parts["band"], "L": (lower, u, u_B),
            "k": parts["k"], "sg": smooth_gap, "delta": delta, "W_V": W_V, "g_V": g_V, "c": None, "root": None,
            "alpha": None}


def _point_hessian_free(oracle, lam, w, s, order, delta, W_V, v, vs, p_out, p_in):
    """:func:`_point`'s numbers with the band summed in chunks (:func:`~cvxrank.native.band_operator.band_sums`) and
    its Hessian as products: ``O(nnz(X) + m G)`` memory and work beyond the chunk, whatever the band's size."""
    k, first, second, total, squares, v_B = band_sums(oracle, order, s, p_out, p_in, delta)
    ww = lam * float(w @ w)
    F = ww + max(W_V + vs + first, 0.0)
    u_B = oracle.gradient(v_B)  # Σ_B α_i d_i
    g_V = -oracle.gradient(v)  # Σ_V c_i d_i
    u = g_V + u_B
    lower = W_V + total - float(u @ u) / (4.0 * lam)
    F_delta = ww + W_V * (1.0 - delta / 2.0) + vs + second / (2.0 * delta)
    smooth_gap = F_delta - lower + 0.5 * delta * (W_V + squares)
    band = BandOperator(oracle, order, p_out, p_in, delta, lam, k)
    return {"F": F, "Fd": F_delta, "grad": 2.0 * lam * w - u, "band": band, "L": (lower, u, u_B), "k": k,
            "sg": smooth_gap, "delta": delta, "W_V": W_V, "g_V": g_V, "c": None, "root": None, "alpha": None}


def _jump(lam, ev):
    """The hinge problem's minimiser over the band's dual variables, the rest held at the evaluation's values.

    At the optimum of (9) the pairs with ``0 < α_i < c_i`` sit exactly on the margin, and near it they are in the
    band. With ``α = c`` on ``V`` and 0 above the band, the dual of (9) restricted to the band,

    .. math:: \\max_{0 \\le \\nu \\le c_B}\\; W_V + \\textstyle\\sum \\nu - \\lVert g_V + D_B^\\top \\nu\\rVert^2 / (4\\lambda),

    is a ``k``-variable box QP (:func:`_band_dual`). Any ``ν`` in the box is a feasible dual point of (9), so its
    value is a lower bound whatever the sets; when they are those of the optimum, ``w = (g_V + D_Bᵀ ν)/(2λ)`` is the
    minimiser and the gap closes to rounding. Returns ``(w, L, u, record)`` (:func:`_band_dual`), or None when the
    band is empty or its Gram matrix would not fit :data:`DENSE_ENTRIES`.
    """
    band, c, root = ev["band"], ev["c"], ev["root"]
    k = band.k
    remote = hasattr(band, "differences")  # an oracle over shards: the band's rows fetched for the jump only
    if (c is None and not remote) or k == 0 or k > JUMP_FEATURES * band.n or k * k > DENSE_ENTRIES:
        return None
    if remote:
        D, c, alpha = band.differences()
    else:
        D = band.Ds
        D = sp.csr_matrix(sp.diags(1.0 / root) @ D) if sp.issparse(D) else D / root[:, None]  # the differences d_i
        alpha = ev["alpha"]
    return _band_dual(lam, D, c, ev["g_V"], ev["W_V"], ev.get("pairs"), start=np.clip(alpha, 0.0, c))


def _band_dual(lam, D, c, g_V, W_V, pairs=None, start=None):
    """``max_{0 ≤ ν ≤ c} W_V + Σ ν - ‖g_V + Dᵀ ν‖² / (4λ)`` (rows ``D`` the pairs' differences ``d_i``) by
    :func:`~cvxrank.native.box_qp.box_qp` on ``min ½ νᵀ Q ν - bᵀ ν``, ``Q = D Dᵀ / (2λ)`` (singular when there are
    more pairs than features), ``b = 1 - D g_V / (2λ)``, never worse than ``start``. Returns
    ``(w, L, u, record)`` with ``u = g_V + Dᵀ ν``, ``L`` the value (a lower bound on (9)), ``w`` the primal point:
    ``u / (2λ)`` put on the margin of the pairs with ``ν`` off its bounds (:func:`_on_margin`), and ``record``
    what :func:`_dual_rounding` reads of ``L`` when ``pairs`` is given (else None): ``g_V``'s weights per document
    (those of the pairs of ``V``), the rows' documents (better, worse) and a bound on their count."""
    G = D @ D.T
    G = G.toarray() if sp.issparse(G) else np.array(G)
    b = 1.0 - (D @ g_V) / (2.0 * lam)
    nu = box_qp(G / (2.0 * lam), -b, c, start, max_iter=POLISH_STEPS, warm=start is not None).x
    u = g_V + D.T @ nu
    total = W_V + float(nu.sum())
    record = None if pairs is None else (*pairs, nu, total, u)
    return _on_margin(D, G, nu, c, u / (2.0 * lam)), total - float(u @ u) / (4.0 * lam), u, record


def _dual_rounding(oracle, lam, record):
    """:func:`cvxrank.rounding.band_dual_rounding` of a lower bound from its ``record`` ``(weights of V per
    document, better, worse, a bound on the pairs held one by one or moved from them to V, α of the held pairs,
    W_V + Σ α, u)`` (scale of (14)), or None when there is no record (a bound summed in chunks or over shards:
    the certificate's ``model_rounding`` then)."""
    if record is None:
        return None
    mag, ib, iw, k, alpha, total, u = record
    m = oracle.n_documents
    V = mag + np.bincount(ib, alpha, m) + np.bincount(iw, alpha, m)
    return band_dual_rounding(oracle.X, V, oracle._G, max(int(k), ib.shape[0]), total, u, lam)


#: :func:`_on_margin`: a pair is free when its ``ν`` is at least this share of its bound away from both bounds,
#: and the correction runs when a free pair's margin is off 1 by more than :data:`MARGIN_RESIDUAL`.
MARGIN_FREE = 1e-6
MARGIN_RESIDUAL = 1e-9


def _on_margin(D, G, nu, c, w):
    """The box QP's primal point with its free pairs put on the margin: ``w + D_Fᵀ y`` with
    ``(D_F D_Fᵀ) y = 1 - D_F w`` (``G = D Dᵀ``, a ridge of ``1e-10`` of its largest diagonal entry, for a singular
    ``G_FF``), ``F`` the pairs with ``ν`` strictly inside its box (:data:`MARGIN_FREE`); ``w`` itself when their
    margins are within :data:`MARGIN_RESIDUAL` of 1, the system cannot be factored, or the correction leaves them
    no nearer the margin.

    At the optimum of (9) restricted to the QP's pairs, ``w* = (g_V + Dᵀ ν*) / (2λ)`` and every pair with
    ``0 < ν*_i < c_i`` has ``⟨w*, d_i⟩ = 1``. The computed ``w`` differs from ``w*`` by ``Dᵀ (ν - ν*) / (2λ)``; where
    ``ν`` is exact on the bound pairs, that lies in the span of ``D_Fᵀ``, and the least correction there that puts
    the free pairs on the margin is ``w*`` (also when those equalities outnumber the features, as on separable data
    whose boundaries hold many pairs at once). The interior-point method ends about ``1e-11`` inside its tolerance
    in ``ν``, but ``F`` is not smooth at ``w*`` and its error follows ``‖w - w*‖``, the square root: on make_ranking
    data with 300 features at λ = 0.5 the point was 5.1e-7 above its bound where the corrected one was 5.8e-14
    (docs/native-measurements.md, "Measurements (2026-11-27, 14:45)"). Any ``w`` is an upper point, as its ``F``
    is computed exactly by the caller."""
    free = np.flatnonzero((nu > MARGIN_FREE * c) & (nu < (1.0 - MARGIN_FREE) * c))
    if free.size == 0:
        return w
    D_F = D[free]
    r = 1.0 - D_F @ w
    if not float(np.abs(r).max()) > MARGIN_RESIDUAL:
        return w
    G_F = G[np.ix_(free, free)]
    G_F[np.diag_indices_from(G_F)] += 1e-10 * float(np.max(np.diag(G_F)))
    try:
        y = sla.cho_solve(sla.cho_factor(G_F, check_finite=False), r, check_finite=False)
    except (np.linalg.LinAlgError, sla.LinAlgError):
        return w
    x = w + D_F.T @ y
    if not (np.all(np.isfinite(x)) and float(np.abs(1.0 - D_F @ x).max()) < float(np.abs(r).max())):
        return w  # (inconsistent equalities: a ν not yet exact, or pairs at the margin that should not be)
    return x


def _margin_set(oracle, lam, w, eps, limit, below=False):
    """``F(w)`` and the next jump's sets at ``w``, in one pass: the pairs with margin below ``1 - ε`` summed
    pair-free (``α = c``: ``W_V``, ``g_V``), the pairs with margin in ``[1 - ε, 1 + ε)`` listed, and of those the
    ``limit`` closest to the margin kept for the box QP (the others below the margin join ``V``, those above stay
    at 0). Unlike the smoothed evaluation's band, this one is two-sided: near the optimum a pair on the margin may
    sit just above it. ``below=True`` lists every pair with a positive margin below ``1 + ε`` instead (``V`` then
    only the pairs in the wrong order, and those not kept), unless the sorted positions between the two edges,
    which the listing walks (same-grade documents included), number more than :data:`BELOW_POSITIONS`: then the
    two-sided window. Returns ``(F, (D, c, g_V, W_V, pairs), inside, under)``: ``pairs`` what :func:`_band_dual`'s
    record reads (V's weights per document, the kept pairs' documents, ``inside``); ``inside`` the pairs listed
    (kept or not), ``under`` the weighted pairs of ``V`` before the limit."""
    s = oracle.scores(w)
    order = oracle._order(s)
    s_o = s[order]
    band_edge = s_o / (1.0 + eps)
    mag_o = np.empty_like(s_o)  # the weight of each document's pairs in V (the bound's rounding reads it)
    if below:  # V: the pairs in the wrong order only
        top = float(np.max(np.abs(s_o), initial=0.0))
        low = s_o * (min(BELOW_SCALE, 1e300 / top) if top > 0 else BELOW_SCALE)
        W_V, v_o, table, p_in, p_out = oracle._violations(low, order, counts=True, s_band=band_edge,
                                                          magnitudes=mag_o)
        below = int((p_in - p_out).sum()) <= BELOW_POSITIONS
    if not below:  # V: margin below 1 - ε
        W_V, v_o, table, p_in, p_out = oracle._violations(s_o / (1.0 - eps), order, counts=True, s_band=band_edge,
                                                          magnitudes=mag_o)
    vs = float(v_o @ (s_o - s_o[oracle._start]))
    v = np.empty_like(v_o)
    v[order] = v_o
    mag = np.empty_like(mag_o)
    mag[order] = mag_o
    ib, iw, c = band_pairs(oracle, order, p_out, p_in)
    m = s[ib] - s[iw]
    short = m < 1.0
    F = lam * float(w @ w) + max(W_V + vs + float(c[short] @ (1.0 - m[short])), 0.0)
    inside = c.shape[0]
    under = int(table[np.asarray(oracle.values) > 0].sum())  # (pairs of a grade pair without weight are not in V)
    if inside > limit:
        keep = np.zeros(c.shape[0], dtype=bool)
        keep[np.argsort(np.abs(m - 1.0), kind="stable")[:limit]] = True
        moved = ~keep & short  # now in V: their weight and their differences join the sums
        if moved.any():
            W_V += float(c[moved].sum())
            n_doc = s.shape[0]
            more_b, more_w = np.bincount(ib[moved], c[moved], n_doc), np.bincount(iw[moved], c[moved], n_doc)
            v = v - more_b + more_w
            mag += more_b + more_w
        ib, iw, c = ib[keep], iw[keep], c[keep]
    D = _rows(oracle, ib, iw, np.ones(c.shape[0]), reuse=False)  # the evaluation's band still holds the buffer
    # (the listed pairs' count bounds the per-document sums of the pairs moved to V: the rounding's band size)
    return F, (D, c, -oracle.gradient(v), W_V, (mag, ib, iw, inside)), inside, under


#: Projected Newton steps of the polish after the interior-point method in a finish (:func:`_band_dual`): the
#: interior point is accurate to about 1e-11 already; on the degenerate bands of the real sample (μ balanced) an
#: unbounded polish took up to 200 steps (64 ms) for a change near 1e-12.
POLISH_STEPS = 10

#: Newton steps at one width after which :func:`smoothed_newton` tries a wide jump (0: never; at most one a width;
#: local oracles and dense Newton only) when the band holds more than :data:`JUMP_FEATURES` ``n`` pairs (so
#: :func:`_jump` does not run), the smoothed problem's gap is within the gap and the relative gap is at most
#: :data:`WIDE_GAP`: the pairs with a positive margin below ``1 + max(δ, WIDE_WIDTH)`` at the best point
#: (:func:`_margin_set` with ``below=True``), the :data:`JUMP_WIDE` ``n`` (at most 2,000) nearest the margin kept,
#: then a chain on the sets at each jump's point (at least :data:`WIDE_LINKS` more links, then while it gains or the
#: counts of its listing change, as :data:`JUMP_CHAIN`'s after the retry). With
#: grades, a boundary's documents tie at the optimum and more pairs than features sit on the margin; the band then
#: never thins to 1.5 ``n`` and the Newton steps crawl (make_ranking, 15 queries x 50-100 documents, 300 features,
#: seed 2, λ = 0.5: 800 evaluations at δ = 7.6e-6 with a band of 649 pairs, ``optimal_inaccurate`` at 1.7e-5; with
#: the jump certified after 269 calls; docs/native-measurements.md, "Measurements (2026-11-27, 18:45)").
CRAWL = 30
#: The largest relative gap at which :data:`CRAWL`'s wide jump runs: further from the optimum its sets are not yet
#: the margin's, and at λ = 0.05 on the data above ten such jumps (about 900 pairs each, a box QP of that size) only
#: raised the lower bound, at 2.4-4.6x the time; 1e-3 left 20 queries x 50-100 documents with 200 features at
#: λ = 0.05 at 2.9e-4 (docs/native-measurements.md, "Measurements (2026-11-27, 18:45)").
WIDE_GAP = 1e-2
#: Links of the wide jump's chain that run even when the last one did not lower ``F`` by a tenth of the gap and the
#: counts of the listing at its point are those it solved on (the rule that ends the chains otherwise): a wide
#: jump's point can have ``λ‖w‖²`` at the lower bound and yet a few pairs outside its set below the margin (the data
#: above at λ = 0.05: the loss 0.065 on ``F`` = 0.745); the next link's set, read at that point, holds them (with one
#: such link the own gap of those runs went from 1e-4 to 2e-12).
WIDE_LINKS = 1

#: On a stall (:func:`smoothed_newton`'s ``stall_after``) at a width whose smoothed gap was once within the gap, go
#: on at the next width from the point where that gap was least, once a width (0: end the phase there, as before
#: 2026-11-27). On make_ranking data with 200-300 features at λ = 0.05 the steps at the first width (δ = 0.125,
#: about 600 band pairs) brought the smoothed gap to 0.045 (the gap 0.17), then a step threw it back to 15 and the
#: phase ended as stalled; the planes after it made no progress in 20 s. Going on from there, the solves end at
#: float64's floor in 1-3 s (docs/native-measurements.md, "Measurements (2026-11-27, 18:45)").
STALL_SHRINK = 1

#: Most jumps in a row (:func:`smoothed_newton`): each next one takes its sets at the last one's point
#: (:func:`_margin_set`), one pass each, while the point still gains; once it stops, one retry on the sets at the
#: best point, and after that while the counts of the listing at each new point (pairs listed, pairs left in ``V``)
#: differ from those of the sets just solved on, the later links listing theirs as the retry did; a link that did not
#: gain is followed only when a link after the next one is left (so the last link runs only after a gain). On
#: make_ranking data with 200 features at λ = 0.05 the retry's point held, in its own listing, the pair on the margin
#: still missing, and a chain that stopped after the retry took 1,314 and 1,525 calls where it now takes 49 and 143
#: (docs/native-measurements.md, "Measurements (2026-11-27, 21:00)").
JUMP_CHAIN = 4

#: Width of the chain's sets (:func:`smoothed_newton`): after the first jump (on the band), each next one takes the
#: :data:`JUMP_FEATURES` ``n`` pairs nearest the margin within this much of it, on both sides (at least the width in
#: force). The graded documents of ``cvxrank bench clicks``' hard instance (10,000 documents, 100 features) needed
#: the wider set: 682 calls and ``optimal_inaccurate`` with only the width in force. Until 2026-11-26 the chain
#: first took the ``n`` nearest within the width in force and this wider set only when that stopped gaining; on the
#: real sample (μ balanced) the narrower set never gained and cost a pass and a box QP
#: (``docs/native-measurements.md``).
WIDE_WIDTH = 0.02

#: Most pairs per feature in the jump chain's retry (:func:`smoothed_newton`; and at most ``sqrt(DENSE_ENTRIES)``,
#: 2,000, for its box QP) when its set left out pairs within the width (and, where they fit, with the pairs below
#: the width listed too rather than held at their bound): with grades, a boundary's documents tie at the optimum
#: and more pairs than features sit on the margin (make_ranking, 20 queries x 50-100 documents, 200 features,
#: λ = 5: 311 pairs on it, 193 below; with 1.5 ``n`` = 300 pairs the chain never closed the gap, 2.5e-5 and
#: ``optimal_inaccurate`` after 306 calls; docs/native-measurements.md, "Measurements (2026-11-27, 14:45)").
#: Also the cap of :data:`CRAWL`'s wide jump. On separable data all pairs between a boundary's tied documents sit on
#: the margin: 5 queries x 100-200 documents with 150 features (seed 3, λ = 0.5) has 667 there, more than 4 ``n`` =
#: 600, and every wide jump failed (1,024 calls); with 6 ``n``, 186 calls (196 with :data:`BUDGET_AFTER_SHRINK`;
#: docs/native-measurements.md, "Measurements (2026-11-27, 21:00)").
JUMP_WIDE = 6.0
#: The scores' factor that leaves in ``V`` only the pairs in the wrong order (:func:`_margin_set` ``below``: the
#: pairs with a margin below ``1 / BELOW_SCALE``, or below ``max |s| / 1e300`` where the product would overflow).
BELOW_SCALE = 1e12
#: Most sorted positions :func:`_margin_set` walks with ``below=True`` (24 bytes each while listing: 24 MB); one
#: query of 3,000 documents a grade would walk 9 million.
BELOW_POSITIONS = 1_000_000

#: Most band pairs per feature for :func:`_jump`: the pairs on the margin at the optimum are generically at most as
#: many as the features, so a wider band is not yet that set (and its box QP costs ``k³``).
JUMP_FEATURES = 1.5


#: Levenberg–Marquardt damping of the Newton steps (:func:`smoothed_newton`): a step whose line search ended below
#: :data:`DAMPING_SHORT` of its length damps the next ones by ``μ``, ``DAMPING_SCALE`` times the largest diagonal entry
#: of ``H`` at first and :data:`DAMPING_GROWTH` times more at each such step; a full step divides ``μ`` by
#: :data:`DAMPING_GROWTH` (0 below a hundredth of the first), and so does a new width ``δ`` (0 at once). Far from the
#: smoothed optimum with a small λ the band's curvature spans few directions and ``2λ`` is all ``H`` has in the
#: others: the Newton step is orders of magnitude too long there, the line search cuts it back along the same poor
#: direction, and on make_ranking data with 100-300 features at λ = 0.05-5 the phase stalled (planes for hundreds of
#: calls after it, up to 10 s); ``(H + μI)⁻¹ g`` turns the step towards the gradient in those directions
#: (docs/native-measurements.md, "Measurements (2026-11-27, 12:40)").
DAMPING_SCALE = 1e-3
DAMPING_SHORT = 0.25
DAMPING_GROWTH = 4.0


def smoothed_newton(oracle, lam, w, *, upper, lower, tol, target, max_calls, deadline=None, delta=None,
                    budget: int | None = None, shrink: float = 15.0, stall_after: int = 20, max_backtrack: int = 12,
                    verbose: bool = False, start=None, jump: bool = True, hessian_free: bool = False,
                    allowance=None, width_steps: int | None = None):
    """Newton steps on ``F_δ`` with decreasing ``δ`` from ``w`` until the certified relative gap is ``≤ target``.

    Once a width's smoothed problem is solved, the band's pairs are taken as those on the margin (:func:`_jump`,
    then a chain of jumps on the pairs near the margin at each jump's point); when the band stays too wide for that
    and the steps crawl at one width, a chain of wide jumps, at most one such chain a width (:data:`CRAWL`).

    Parameters
    ----------
    oracle : PairFreeOracle
    lam : float
    w : ndarray
        Start (the best point of the cutting planes).
    upper, lower : float
        Best ``F`` and best lower bound so far.
    tol, target : float
        Requested relative gap and the one to stop at (see :func:`~cvxrank.native.cutting_plane.cutting_plane`).
    max_calls : int
        Cap on evaluations (each one exact objective, the band and the sums over ``V``).
    delta : float, optional
        First width, in ``(0, 1/2]`` (default ``min(1/2, sqrt(relative gap))``).
    budget : int, optional
        Most pairs of positions in the band (default :func:`band_budget` of the oracle's size).
    shrink : float, default 15
        Largest reduction of ``δ`` at a time. ``δ`` shrinks once the smoothed
        problem is solved to a tenth of the true gap (its own duality gap
        ``F_δ(w) - L(α) + (δ/2) Σ α_i²/c_i``), by the factor that would bring
        the gap (which falls like ``δ²``) to 0.3 x the target, within
        ``[1/shrink, 1/2]``, and no further than would leave about ``2 n``
        pairs in the band (``k δ'/δ``, for ``n`` features): shrinking further
        than needed empties the band and Newton's model with it. The next
        steps start from the tangent predictor above.
    stall_after : int, default 20
        Stop when neither the gap, the best ``F`` nor ``F_δ`` at the width in force has shrunk by 0.1 % in this many
        evaluations, unless the width's smoothed problem was once solved to within the gap: then the next width,
        once a width (:data:`STALL_SHRINK`).
    max_backtrack : int, default 12
        Trials of the line search before the phase gives up (the Armijo test on
        ``F_δ`` failed: pairs outside the band changed side); the caller's
        cutting planes then go on.
    hessian_free : bool, default False
        Many features: no band rows, no budget and no ``n x n`` matrix; the band is summed in chunks and Newton
        directions come from preconditioned conjugate gradients with pair-free Hessian products
        (:mod:`cvxrank.native.band_operator`), solved to a relative residual that tightens with the smoothed gap.
    allowance : callable, optional
        ``(w, bound=True, terms=k) ↦`` the rounding allowance the certificate adds to the gap at ``w`` (``k`` the
        pairs its ``F`` summed one by one; scale of (9); see
        :func:`~cvxrank.native.cutting_plane.cutting_plane`): the first time the gap reaches ``target`` it is
        checked, and when gap plus allowance would be above ``tol`` the phase aims at ``tol`` less 1.25 times the
        allowance (:func:`~cvxrank.native.stopping.aim`) and goes on.
    width_steps : int, optional
        A positive integer: end the phase after this many Newton steps at one width while the band holds more pairs
        than there are documents (default: no such end). The caller passes it when it has another method to go on with
        (:data:`~cvxrank.native.cutting_plane.NEWTON_WIDTH_STEPS`): on a margin with many more pairs than documents
        (separable data, tied documents) a width can take a thousand steps.

    Returns
    -------
    (w_best, F_best, lower, w_lower, evaluations, rows, lower_rounding, terms)
        ``w_lower = Σ α_i d_i / (2λ)`` at the best lower bound of this phase
        (None if it found none better than ``lower``); ``lower_rounding`` that bound's rounding allowance on the
        scale of (14) (:func:`_dual_rounding`; None when it is not this phase's, or was summed in chunks or over
        shards); ``terms`` how many pairs ``F_best``'s evaluation summed one by one beside its per-document sums
        (its band: :func:`cvxrank.rounding.primal_rounding`'s ``terms``); ``rows``: one history row per evaluation
        and per jump (a pass that only lists a jump's sets, or evaluates the point a stalled
        width goes on from, has none).
    """
    start = time.perf_counter() if start is None else start
    w_best, F_best, w_lower = w, upper, None
    record = None  # what the best lower bound found here needs for its rounding allowance (_dual_rounding)
    F_terms = 0  # the pairs F_best's evaluation summed one by one (the band's), beside the per-document sums
    best_rel, since, F_seen = np.inf, 0, np.inf
    rel = (F_best - lower) / F_best
    if hessian_free:
        budget = None  # the band's size costs nothing but its chunked sums
    elif budget is None:
        budget = band_budget(oracle.n_documents, oracle.n_features)
    delta = float(min(0.5, max(np.sqrt(rel), 1e-8))) if delta is None else float(delta)
    if not 0.0 < delta <= 0.5:  # s / (1 - δ) must stay finite and above s
        raise ValidationError(f"delta must be in (0, 1/2], got {delta!r}")
    if width_steps is not None:
        width_steps = check_max_iter(width_steps, "width_steps")
    rows, calls = [], 0

    gram = None  # the last formed Hessian's Gram matrix, updated pair by pair (local dense rows only)
    if not hessian_free and hasattr(oracle, "_order") and oracle.n_features >= GRAM_CACHE_FEATURES:
        gram = GramCache(oracle.n_documents, lambda b, w_, scale: _rows(oracle, b, w_, scale, reuse=False))
    ev = _point(oracle, lam, w, delta, budget, hessian_free=hessian_free, gram=gram)
    delta = ev["delta"]
    calls += 1
    # the line search's trials without band rows and sums until one is accepted (local oracles, dense Newton)
    lean = not hessian_free and hasattr(oracle, "_order")
    jumped = None  # the band size of the last jump (one per band)
    settled, forced = [np.inf, w, None], None  # least smoothed gap at the width in force (sg, point, width)
    at_width, width_seen, wide_tried = 0, None, None  # Newton steps at the width in force; the last wide jump's width
    Fd_seen = [np.inf, None]  # the least F_δ seen at the width in force, and that width
    damping = 0.0  # μ of the Levenberg–Marquardt steps (DAMPING_SCALE); 0: Newton's
    aimed = allowance is None

    def reached(rel):  # rel ≤ target, once checked against the certificate's allowance (then perhaps aiming lower)
        nonlocal target, aimed
        if not rel <= target:
            return False
        if not aimed:
            aimed = True
            own = _dual_rounding(oracle, lam, record)  # the bound's own allowance where this phase found it
            target = aim(F_best, lower, tol, target,
                         allowance(w_best, bound=own is None, terms=F_terms) + 2.0 * lam * (own or 0.0), verbose)
        return rel <= target

    while True:
        L = ev["L"]
        if L[0] > lower:
            lower, w_lower, record = L[0], L[1] / (2.0 * lam), ev.get("record")
        if ev["F"] < F_best:
            F_best, w_best, F_terms = ev["F"], w, ev["k"]
        rel = (F_best - lower) / F_best if F_best > 0 else 0.0
        elapsed = time.perf_counter() - start
        rows.append({"evaluations": calls, "objective": F_best, "dual_objective": lower, "relative_gap": rel,
                     "delta": delta, "band": ev["k"], "smoothed_gap": ev["sg"], "time": elapsed})
        if verbose:
            print(f"newton  eval {calls:4d}  objective {F_best:.12g}  lower {lower:.12g}  rel gap {rel:.2e}  "
                  f"delta {delta:.1e}  band {ev['k']}  smoothed gap {ev['sg']:.2e}  {elapsed:.2f}s", flush=True)
        # progress: the gap, the best F, or F_δ at the width in force (at a wide width on data with many features
        # the steps lower F_δ for dozens of evaluations before F follows)
        smoothed = delta == Fd_seen[1] and ev["Fd"] < Fd_seen[0] - 1e-3 * abs(Fd_seen[0])
        if rel < best_rel * (1.0 - 1e-3) or F_best < F_seen * (1.0 - 1e-3) or smoothed:
            best_rel, since, F_seen = min(rel, best_rel), 0, F_best
        else:
            since += 1
        if delta != Fd_seen[1] or ev["Fd"] < Fd_seen[0]:
            Fd_seen[:] = [ev["Fd"], delta]
        if delta != settled[2] or ev["sg"] < settled[0]:  # the point nearest the smoothed optimum at this width
            settled = [ev["sg"], w, delta]
        force = False
        if (since >= stall_after and STALL_SHRINK and forced != delta and settled[0] <= F_best - lower
                and delta > 1e-12 and not reached(rel) and calls < max_calls
                and not (deadline is not None and elapsed >= deadline)):
            # a stall at a width whose smoothed problem was once solved to within the gap: the next width from there
            forced, since = delta, 0
            if settled[1] is not w:  # (else ev is its evaluation, and its band rows are still in the buffer)
                w = settled[1]
                ev = _point(oracle, lam, w, delta, hessian_free=hessian_free, gram=gram)
                calls += 1
            force, L = True, ev["L"]  # (the shrink's tangent reads this evaluation's band and its sums)
            if L[0] > lower:
                lower, w_lower, record = L[0], L[1] / (2.0 * lam), ev.get("record")
            if ev["F"] < F_best:
                F_best, w_best, F_terms = ev["F"], w, ev["k"]
        elif (reached(rel) or calls >= max_calls or since >= stall_after
                or (deadline is not None and elapsed >= deadline)):
            break
        g, band = ev["grad"], ev["band"]
        # a crawl at one width with a band too wide for the jump: at most once a width, the jump on the pairs near
        # the margin at the best point, then on those at each jump's point (F there from the same pass)
        at_width = at_width + 1 if delta == width_seen else 0
        width_seen = delta
        if width_steps is not None and at_width >= width_steps and ev["k"] > oracle.n_documents:
            break  # (more pairs near the margin than documents: the caller has another method for such a margin)
        if (jump and lean and CRAWL and at_width >= CRAWL and wide_tried != delta and rel <= WIDE_GAP
                and ev["k"] > JUMP_FEATURES * w.shape[0] and ev["sg"] <= (F_best - lower)):
            wide_tried = delta
            cap, width = min(int(JUMP_WIDE * w.shape[0]), int(np.sqrt(DENSE_ENTRIES))), max(delta, WIDE_WIDTH)
            _, sets, inside, under = _margin_set(oracle, lam, w_best, width, cap, below=True)
            calls += 1
            for link in range(JUMP_CHAIN if calls < max_calls else 0):
                solved = (inside, under)
                found = _band_dual(lam, *sets) if sets[1].shape[0] else None
                if found is None:
                    break
                w_j, L_j, u_j, found_record = found
                if L_j > lower:
                    lower, w_lower, record = L_j, u_j / (2.0 * lam), found_record
                if link + 1 < JUMP_CHAIN:
                    F_j, sets, inside, under = _margin_set(oracle, lam, w_j, width, cap, below=True)
                    terms = inside  # (its F sums the listed pairs below the margin one by one)
                else:
                    F_j, terms = lam * float(w_j @ w_j) + oracle(w_j, counts=False).loss, 0
                calls += 1
                gain = F_best - F_j
                if F_j < F_best:
                    F_best, w_best, F_terms = F_j, w_j, terms
                rel = (F_best - lower) / F_best if F_best > 0 else 0.0
                rows.append({"evaluations": calls, "objective": F_best, "dual_objective": lower, "relative_gap": rel,
                             "delta": np.nan, "band": ev["k"], "smoothed_gap": np.nan, "jump": True,
                             "time": time.perf_counter() - start})
                if verbose:
                    print(f"newton  wide jump {calls:4d}  objective {F_best:.12g}  lower {lower:.12g}  rel gap "
                          f"{rel:.2e}  band {ev['k']}", flush=True)
                if (reached(rel) or calls >= max_calls or (link >= WIDE_LINKS and not gain > 0.1 * (F_best - lower)
                                                            and (inside, under) == solved)
                        or (deadline is not None and time.perf_counter() - start >= deadline)):
                    break
            if reached(rel) or calls >= max_calls:
                break
        if (force or ev["sg"] <= 0.1 * (F_best - lower)) and delta > 1e-12:
            if jump and jumped != ev["k"]:
                # the band as the pairs on the margin: one solve, one call; its bound holds whatever the sets
                found = _jump(lam, ev)
                jumped = ev["k"]
                local = hasattr(oracle, "_order")  # the chain lists the pairs near the margin itself
                limit, width, retried = int(JUMP_FEATURES * w.shape[0]), max(delta, WIDE_WIDTH), False
                solved, below = None, False
                for link in range(JUMP_CHAIN):
                    if found is None:
                        break
                    w_j, L_j, u_j, found_record = found
                    if L_j > lower:
                        lower, w_lower, record = L_j, u_j / (2.0 * lam), found_record
                    if local and link + 1 < JUMP_CHAIN:  # F(w_j) and the next link's sets in one pass
                        F_j, sets, inside, under = _margin_set(oracle, lam, w_j, width, limit, below=below)
                        terms = inside
                    else:
                        F_j, sets, terms = lam * float(w_j @ w_j) + oracle(w_j, counts=False).loss, None, 0
                    calls += 1
                    gain = F_best - F_j
                    if F_j < F_best:
                        F_best, w_best, F_terms = F_j, w_j, terms
                    rel = (F_best - lower) / F_best if F_best > 0 else 0.0
                    rows.append({"evaluations": calls, "objective": F_best, "dual_objective": lower,
                                 "relative_gap": rel, "delta": np.nan, "band": ev["k"], "smoothed_gap": np.nan,
                                 "jump": True, "time": time.perf_counter() - start})
                    if verbose:
                        print(f"newton  jump {calls:4d}  objective {F_best:.12g}  lower {lower:.12g}  rel gap "
                              f"{rel:.2e}  band {ev['k']}", flush=True)
                    if (reached(rel) or calls >= max_calls or sets is None
                            or (deadline is not None and time.perf_counter() - start >= deadline)):
                        break
                    if not gain > 0.1 * (F_best - lower):  # the point did not gain: the sets may be wrong
                        # after the retry the chain goes on while the listing's counts at the new point differ from
                        # those of the sets just solved on (a pair on the margin at the optimum may first show up
                        # there); the last link of the chain only runs after a gain (measured: one more call on most
                        # solves where it ran, and seldom a gain)
                        if link + 2 >= JUMP_CHAIN or (retried and (inside, under) == solved):
                            break
                        if not retried:
                            retried = True
                            # once: the sets at the best point instead (one more pass), all of the pairs within
                            # the width when the last set left some out (a degenerate margin: more pairs on it than
                            # 1.5 n), and those below it too when all of them fit (a pair on the margin at the
                            # optimum may sit below the width at this point, held at its bound in V); the later
                            # links then list theirs the same way
                            cap = min(int(JUMP_WIDE * w.shape[0]), int(np.sqrt(DENSE_ENTRIES)))
                            wider = min(inside, cap)
                            if inside + under <= cap:
                                limit, below = cap, True
                                _, sets, inside, under = _margin_set(oracle, lam, w_best, width, limit, below=True)
                                calls += 1
                            elif wider > limit or w_best is not w_j:
                                limit = max(limit, wider)
                                _, sets, inside, under = _margin_set(oracle, lam, w_best, width, limit)
                                calls += 1
                    solved = (inside, under)  # the listing's counts of the sets the next link solves on
                    found = _band_dual(lam, *sets) if sets[1].shape[0] else None
                if reached(rel) or calls >= max_calls:
                    break
            # the gap at the smoothed optimum falls like δ²: aim at 0.3 x the target, by a factor in [1/shrink, 1/2],
            # and keep about 2n pairs in the band (it holds about δ times the pairs' density at the margin)
            k = ev["k"]
            factor = np.sqrt(0.3 * target * F_best / max(F_best - lower, 1e-300))
            smaller = delta * min(0.5, max(1.0 / shrink, factor, 2.0 * w.shape[0] / max(k, 1)))
            w = w + (delta - smaller) / delta * band.solve(L[2], tol=1e-4 if hessian_free else 1e-10)  # tangent
            # a narrower band than the last one, which fitted: only the evaluation's own check of the budget
            ev = _point(oracle, lam, w, smaller, budget, fit=False, hessian_free=hessian_free, gram=gram)
            delta = ev["delta"]
            calls += 1
            damping = 0.0  # a new smoothed problem from the tangent's point: Newton's steps first
            continue
        if hessian_free:  # inexact Newton: the residual tightens as the smoothed problem is solved
            p = -band.solve(g, tol=min(0.1, max(1e-8, np.sqrt(max(ev["sg"], 0.0) / max(F_best, 1e-300)))))
        else:
            p = -band.solve(g, shift=damping)
            # (read now: the trials' evaluations write their band rows over this band's buffer)
            first = DAMPING_SCALE * band.largest_diagonal()
        decrement = -float(g @ p)
        if not decrement > 0:
            p, decrement = -g, float(g @ g)  # a solve that lost descent (CG, rounding): the gradient
        Fd = ev["Fd"]
        t, accepted = 1.0, False
        for _ in range(max_backtrack + 1):
            x = w + t * p
            ex = _point(oracle, lam, x, delta, hessian_free=hessian_free, gram=gram, trial=lean)
            calls += 1
            if ex["F"] < F_best:
                F_best, w_best, F_terms = ex["F"], x, ex["k"]
            if ex["Fd"] <= Fd - 1e-4 * t * decrement:
                accepted = True
            if accepted or not lean:  # a lean trial's bound is formed once it is accepted
                if "_rest" in ex:
                    ex = _complete(oracle, lam, x, ex)
                if ex["L"][0] > lower:
                    lower, w_lower, record = ex["L"][0], ex["L"][1] / (2.0 * lam), ex.get("record")
            if accepted:
                break
            if calls >= max_calls:
                break
            # the minimiser of the quadratic through F_δ(w), its slope and F_δ(x), within [t/50, t/2]: a Newton step
            # too long by orders of magnitude (a thin band, curvature 2λ elsewhere) comes back in a few trials
            curv = ex["Fd"] - Fd + t * decrement
            t = min(0.5 * t, max(0.02 * t, 0.5 * decrement * t * t / curv if curv > 0 else 0.5 * t))
        if not hessian_free:  # Levenberg–Marquardt: damp after a step cut short, undamp after full ones
            if t < DAMPING_SHORT:
                damping = max(DAMPING_GROWTH * damping, first)
            elif t == 1.0:
                damping = damping / DAMPING_GROWTH if damping > first / 100.0 else 0.0
        if not accepted:
            # kinks just outside the band: Newton's model is wrong here; the planes take over again
            break
        w, ev = x, ex
    return w_best, F_best, lower, w_lower, calls, rows, _dual_rounding(oracle, lam, record), F_terms
