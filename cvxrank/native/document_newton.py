"""Smoothed Newton phase for preference groups (costs per document), pair-free and certified.

The graded solver's phase (:mod:`cvxrank.native.newton`) enumerates the band of pairs near the
margin and forms the ``n x n`` Hessian from their rows; it reads the grade-based oracle's internals.
This one works on :class:`~cvxrank.native.document_oracle.DocumentOracle` and forms no pair but the
band's: the Huber-smoothed hinge of width ``δ`` (Chapelle 2007),

.. math:: F_\\delta(w) = \\lambda\\|w\\|^2 + \\sum_{ij} a_i\\, h_\\delta(s_i - s_j), \\qquad
          h_\\delta(m) = 1 - m - \\delta/2 \\ (m < 1 - \\delta), \\quad \\frac{(1 - m)^2}{2\\delta}
          \\ (1 - \\delta \\le m < 1), \\quad 0 \\ (m \\ge 1),

its gradient and the products with its Hessian ``2λI + Xᵀ H_s X`` all come from prefix sums over each
group's sorted scores (:meth:`~cvxrank.native.document_oracle.DocumentOracle.smoothed_scores`). The band
``B = {1 - δ <= m < 1}`` is enumerable cheaply: for a member it is the run of sorted positions between its
boundaries at margins ``1 - δ`` and 1, which the evaluation found already
(:meth:`~cvxrank.native.document_oracle.SmoothedResult.band_pairs`). When it holds at most
:func:`band_budget` pairs the Newton step is exact (the ``n x n`` Hessian ``2λI + Dᵀ diag(a/δ) D`` from the band's
rows ``D``), otherwise conjugate gradients with pair-free Hessian products; the line search interpolates (12
trials) on ``F_δ``.

The first width is ``√gap`` (at most 1/2), halved while its band holds more than the budget (counted from
boundary searches alone, :meth:`~cvxrank.native.document_oracle.DocumentOracle.band_sizes`), as the graded phase
does: the first steps are exact Newton steps rather than conjugate gradients on a band of many thousand pairs.

Certificate. At every evaluation ``α_ij = a_i min(1, max(0, (1 - m_ij)/δ))`` lies in the box ``[0, c]``
of the hinge's dual, so ``L(α) = Σ α - ‖Σ α_ij d_ij‖² / (4λ)`` is a lower bound on ``min F``
(weak duality; identical pairs of two groups take the sum of their ``α``, still in the merged
pair's box), and ``F(w)`` is the exact objective: the gap ``F(w_best) - max L`` certifies, whatever
``δ``. The bound kept is summed from the band's ``α`` formed pair by pair (:meth:`_Point.bound`): the oracle's
pair-free sums of ``α`` divide differences of prefix sums by ``δ``, and at a narrow width their rounding made them
the sums of no one ``α``. ``δ`` shrinks when the smoothed problem's own gap ``F_δ - L(α) + (δ/2) Σ α²/c`` is below a tenth
of the true one, by the factor that would bring the true gap (which falls like ``δ²``) to 0.3 x the
target, within ``[1/15, 1/2]``, and no further than would leave about ``2n`` pairs in the band; the next
steps start on the tangent of the path of minimisers ``w(δ)`` (``H dw/dδ = -(1/δ) Σ_B α d``).

Exact finish on the band. Where the pairs on the margin of the optimum are many (click weights make the
hinge nearly hard-margin), the gap falls only like ``δ``. At the end of each width whose band holds at
most :data:`BAND_FEATURES` pairs per feature, the hinge's dual is maximised over the band's variables and
those of the pairs just above the margin (``1 <= m < 1 + δ``), the pairs of ``V`` held at ``α = a`` and the
rest at 0: a box QP in ``k`` variables, solved by the projected Newton method of :mod:`cvxrank.native.box_qp`
(its Gram matrix is singular; every iterate is in the box). Every point of that box is a dual point, so its value
is a lower bound whatever the sets; when they are those of the optimum, ``w = Σ α d / (2λ)`` is the minimiser and
one oracle call certifies it. While a finish closes half the gap or more, the next one starts from the band at
its ``w`` (at most ``finish_rounds``): a working-set iteration.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from cvxrank.native.box_qp import box_qp
from cvxrank.native.document_oracle import DocumentOracle

__all__ = ["BAND_FEATURES", "DENSE_ENTRIES", "band_budget", "document_newton"]

#: Most entries of a dense matrix the phase forms (the ``n x n`` Hessian, the band's ``k x k`` Gram matrix): 32 MB.
DENSE_ENTRIES = 4_000_000

#: Most band pairs per feature for the exact finish on the band: at the optimum the pairs on the margin are generically
#: at most as many as the features, so a wider band is not that set yet (and its box QP costs ``k³``).
BAND_FEATURES = 1.5


def band_budget(n_documents: int, n_features: int) -> int:
    """Most band pairs (group form) whose rows the phase forms for an exact Newton step: ``10 m / n``, at least
    ``40 n``, at most 20,000 (forming ``Dᵀ D`` costs ``k n²``, about one pass over ``X`` at ``10 m / n``); a wider
    band takes conjugate gradients with pair-free Hessian products instead.

    Examples
    --------
    >>> band_budget(100_000, 136), band_budget(1_951, 300), band_budget(300, 10)
    (7352, 12000, 400)
    """
    return int(min(20_000, max(40 * n_features, 10 * n_documents // max(n_features, 1))))


def _fit_band(oracle: DocumentOracle, s: np.ndarray, delta: float, budget: int) -> float:
    """``δ`` halved (eight widths counted per sort) until the band ``[1 - δ, 1)`` at the scores ``s`` holds at most
    ``budget`` pairs, or ``δ`` reaches ``1e-12``."""
    while True:
        widths = [delta * 0.5 ** j for j in range(8)]
        for width, count in zip(widths, oracle.band_sizes(s, widths)):
            if not (width > 1e-12 and count > budget):
                return width
        delta = widths[-1] / 2.0


class _Point:
    """One evaluation at ``w`` and width ``δ``: exact ``F``, smoothed ``F_δ``, its gradient, the bound ``L(α)``
    with ``u = Σ α d``, the smoothed problem's own gap, and the band's rows when a step asks for them."""

    def __init__(self, oracle: DocumentOracle, lam: float, w: np.ndarray, delta: float):
        self.oracle, self.lam, self.w, self.delta = oracle, lam, w, delta
        self.s = oracle.scores(w)
        r = self.r = oracle.smoothed_scores(self.s, delta)
        self.u = oracle.gradient(r.score_alpha)  # Σ α_ij d_ij
        ww = lam * float(w @ w)
        self.F, self.Fd = ww + r.loss, ww + r.smoothed
        self.L = r.alpha_sum - float(self.u @ self.u) / (4.0 * lam)
        self.sg = self.Fd - self.L + 0.5 * delta * r.alpha_square
        self.g = 2.0 * lam * w - self.u
        self._pairs = self._rows = None

    @property
    def k(self) -> int:
        return self.r.band

    def pairs(self):
        """``(better, worse, a)``: the band's pairs (:meth:`SmoothedResult.band_pairs`), listed once."""
        if self._pairs is None:
            self._pairs = self.r.band_pairs()
        return self._pairs

    def rows(self):
        """``(better, worse, a, D)``: the band's pairs and their differences ``D = X_better - X_worse`` (float64;
        CSR for a sparse ``X``)."""
        if self._rows is None:
            ib, iw, a = self.pairs()
            self._rows = ib, iw, a, _differences(self.oracle.X, ib, iw)
        return self._rows

    def bound(self):
        """``(L(α), u)``: the lower bound at this evaluation's ``α``, summed from one ``α``.

        :attr:`L` reads the oracle's ``alpha_sum`` and ``score_alpha``, each a difference of prefix sums over the
        sorted scores divided by ``δ``: their rounding grows like ``1/δ`` and differs between the two, so at a narrow
        width they are not the sums of one ``α`` of the box and ``L`` may exceed the optimum (9 documents in 3 groups
        at λ = 0.5: 3e-8 above it). Here the band's ``α_ij = a_i min(1, max(0, (1 - m_ij)/δ))`` is formed pair by
        pair and its sum and its per-document sums come from the same values (:func:`_dual_value`), as for any
        ``ν`` of the band finish: a dual point of (9), its value a lower bound up to the rounding of the sums."""
        ib, iw, a = self.pairs()
        alpha = np.clip(a * (1.0 - (self.s[ib] - self.s[iw])) / self.delta, 0.0, a)
        return _dual_value(self.oracle, self.lam, self.r, ib, iw, alpha)

    def hessian(self) -> np.ndarray:
        """``2λI + Dᵀ diag(a/δ) D``, the smoothed objective's Hessian in ``w`` (dense ``n x n``)."""
        _, _, a, D = self.rows()
        if sp.issparse(D):  # rows scaled by sqrt(a/δ), then one sparse product
            scale = np.repeat(np.sqrt(a / self.delta), np.diff(D.indptr))
            Ds = sp.csr_matrix((D.data * scale, D.indices, D.indptr), shape=D.shape)
            H = (Ds.T @ Ds).toarray()
        else:
            H = (D * (a / self.delta)[:, None]).T @ D
        H[np.diag_indices_from(H)] += 2.0 * self.lam
        return H

    def band_alpha(self) -> np.ndarray:
        """``α`` on the band's pairs: ``a (1 - m)/δ`` clipped to ``[0, a]``."""
        ib, iw, a, _ = self.rows()
        return np.clip(a * (1.0 - (self.s[ib] - self.s[iw])) / self.delta, 0.0, a)


def _differences(X, better, worse):
    """``X_better - X_worse``, float64 (CSR for a sparse ``X``)."""
    D = X[better] - X[worse]
    return D.tocsr().astype(np.float64) if sp.issparse(D) else np.asarray(D, dtype=np.float64)


def _band_qp(D, g_V, a, lam, start, max_iter: int = 30):
    """``max_{0 ≤ ν ≤ a} Σ ν - ‖g_V + Dᵀ ν‖² / (4λ)`` by :func:`~cvxrank.native.box_qp.box_qp` on
    ``min ½ νᵀ Q ν + cᵀ ν`` with ``Q = D Dᵀ / (2λ)`` (singular: a pair of two groups comes twice, ``d_ik = d_ij + d_jk``)
    and ``c = D g_V / (2λ) - 1`` (``c + Q ν`` is the margins minus 1), from ``start`` (in the box). Every iterate is in
    the box (a dual point); ``start`` is kept when the solve does no better. ``max_iter`` caps the projected Newton
    polish after the interior point (LETOR sample, 1M sessions: 100 steps 0.63 s and 113 calls, 30 steps 0.50 s and
    137 calls, 10 steps 0.52 s and 199 calls)."""
    Dd = D.toarray() if sp.issparse(D) else np.asarray(D)
    Q = Dd @ (Dd.T / (2.0 * lam))
    c = Dd @ (g_V / (2.0 * lam)) - 1.0
    nu = box_qp(Q, c, a, start, tol=1e-9, max_iter=max_iter).x
    if not np.all(np.isfinite(nu)):
        return start

    def value(x):
        z = g_V + Dd.T @ x
        return float(x.sum()) - float(z @ z) / (4.0 * lam)

    return nu if value(nu) >= value(start) else start


def _band_finish(oracle: DocumentOracle, lam: float, p: _Point):
    """The hinge problem's best dual point over the band's variables, the others held (``α = a`` below the band,
    0 above): ``max_{0 ≤ ν ≤ a_B} W_V + Σ ν - ‖g_V + D_Bᵀ ν‖² / (4λ)`` with ``g_V = Σ_V a d``, a box QP in ``k``
    variables (its Gram matrix ``D_B D_Bᵀ``) from the evaluation's own ``α_B``. Every ``ν`` of the box is a dual
    point of the hinge's dual (a pair of two groups takes the sum of its copies, within its merged box), so its value
    is a lower bound whatever the sets; when the band is the set of pairs on the margin at the optimum,
    ``w = (g_V + D_Bᵀ ν) / (2λ)`` is the minimiser. Returns ``(w, L, u)``."""
    ib, iw, a = p.r.band_pairs(above=p.delta)
    D = _differences(oracle.X, ib, iw)
    s_V = p.r.inner_scores()  # Pᵀ α_V
    g_V = oracle.gradient(s_V)
    nu = _band_qp(D, g_V, a, lam, np.clip(a * (1.0 - (p.s[ib] - p.s[iw])) / p.delta, 0.0, a))
    L, u = _dual_value(oracle, lam, p.r, ib, iw, nu, s_V)
    return u / (2.0 * lam), L, u


def _dual_value(oracle: DocumentOracle, lam: float, r, better, worse, nu, s_V=None):
    """``(W_V + Σ ν - ‖u‖² / (4λ), u)`` with ``u = Σ α d`` for ``α = a`` on the pairs below the band of the
    evaluation ``r`` (its :meth:`~SmoothedResult.inner_scores` ``s_V`` and ``inner_weight`` ``W_V``: sums of weights,
    no division by ``δ``), ``ν`` on the listed pairs and 0 elsewhere: the dual of (9) at one point of its box, every
    sum over ``ν`` from the same values."""
    m = oracle.n_documents
    s_V = r.inner_scores() if s_V is None else s_V
    scores = s_V + np.bincount(better, weights=nu, minlength=m) - np.bincount(worse, weights=nu, minlength=m)
    u = oracle.gradient(scores)
    return r.inner_weight + float(nu.sum()) - float(u @ u) / (4.0 * lam), u


def document_newton(oracle: DocumentOracle, lam: float, w, *, upper: float, lower: float, target: float,
                    max_calls: int, deadline: float | None = None, shrink: float = 15.0, stall_after: int = 20,
                    max_backtrack: int = 12, cg_max_iter: int = 100, budget: int | None = None, finish: bool = True, finish_rounds: int = 4,
                    verbose: bool = False, start=None):
    """Newton steps on ``F_δ`` with decreasing ``δ`` from ``w`` until the certified relative gap is ``<= target``.

    Parameters
    ----------
    oracle : DocumentOracle
    lam : float
    w : ndarray
        Start (e.g. the best point of the cutting planes).
    upper, lower : float
        Best ``F`` and best lower bound so far.
    target : float
        Relative gap to stop at.
    max_calls : int
        Cap on evaluations (each one exact objective, the smoothed one and a lower bound; an exact finish on the band
        is one more).
    deadline : float, optional
        Seconds since ``start``.
    shrink : float, default 15
        Largest reduction of ``δ`` at a time.
    stall_after : int, default 20
        Stop when neither the gap nor the best ``F`` has shrunk by 0.1 % in this many evaluations.
    max_backtrack : int, default 12
        Trials of the line search (each the minimiser of the quadratic through ``F_δ`` at the start, its slope and
        the last trial, within ``[t/50, t/2]``) before the phase gives up (the caller's planes go on).
    cg_max_iter : int, default 100
        Conjugate-gradient steps per Newton step when the band is wider than ``budget`` or ``n x n`` is too large to
        form (one Hessian product, ``X u`` and ``Xᵀ v``, each).
    budget : int, optional
        Most band pairs whose rows are formed for an exact Newton step (default :func:`band_budget`).
    finish : bool, default True
        The exact finish on the band at the end of each width (module docstring).
    finish_rounds : int, default 4
        Most finishes in a row at one width: each on the band at the previous one's ``w`` (one evaluation each), while
        each closes at least half the gap.

    Returns
    -------
    (w_best, F_best, lower, w_lower, evaluations, hessian_products, rows)
        ``w_lower = Σ α d / (2λ)`` at the best lower bound of this phase (None if none beat ``lower``);
        ``rows``: one history row per evaluation.
    """
    start = time.perf_counter() if start is None else start
    w = np.asarray(w, dtype=np.float64)
    n = w.shape[0]
    budget = band_budget(oracle.n_documents, n) if budget is None else int(budget)
    dense = n * n <= DENSE_ENTRIES
    w_best, F_best, w_lower = w, upper, None
    rel = (F_best - lower) / F_best if F_best > 0 else 0.0
    delta = float(min(0.5, max(np.sqrt(rel), 1e-8)))
    if dense:  # the first width halved until its band fits the budget: exact steps from the start
        delta = _fit_band(oracle, oracle.scores(w), delta, budget)
    rows, calls, products = [], 1, 0
    best_rel, since, F_seen = np.inf, 0, np.inf
    finished = None  # the band (its size) of the last exact finish: one per band
    p = _Point(oracle, lam, w, delta)

    def record(point):
        nonlocal lower, w_lower, F_best, w_best
        if point.L > lower:  # (point.L steers the widths; the bound kept is summed from one α)
            L, u = point.bound()
            if L > lower:
                lower, w_lower = L, u / (2.0 * lam)  # Σ α d / (2λ)
        if point.F < F_best:
            F_best, w_best = point.F, point.w

    while True:
        record(p)
        rel = (F_best - lower) / F_best if F_best > 0 else 0.0
        elapsed = time.perf_counter() - start
        rows.append({"evaluations": calls, "objective": F_best, "dual_objective": lower, "relative_gap": rel,
                     "delta": delta, "band": p.k, "smoothed_gap": p.sg, "time": elapsed})
        if verbose:
            print(f"groups newton  eval {calls:4d}  objective {F_best:.12g}  lower {lower:.12g}  rel gap {rel:.2e}  "
                  f"delta {delta:.1e}  band {p.k}  smoothed gap {p.sg:.2e}  {elapsed:.2f}s", flush=True)
        if rel < best_rel * (1.0 - 1e-3) or F_best < F_seen * (1.0 - 1e-3):
            best_rel, since, F_seen = min(rel, best_rel), 0, F_best
        else:
            since += 1
        if rel <= target or calls >= max_calls or since >= stall_after or (deadline is not None and elapsed >= deadline):
            break
        exact = dense and p.k <= budget
        if p.sg <= 0.1 * (F_best - lower) and delta > 1e-12:
            k = p.k
            if finish and finished != k and 0 < k <= BAND_FEATURES * n and k * k <= DENSE_ENTRIES:
                finished = k
                # the finish on the band of p, then again on the band at its w while that closes half the gap or more:
                # a working-set iteration (its w holds the free variables on the margin, the rest say where they go)
                q, gap_before = p, F_best - lower
                for _ in range(finish_rounds):
                    w_j, L_j, u_j = _band_finish(oracle, lam, q)
                    if L_j > lower:
                        lower, w_lower = L_j, u_j / (2.0 * lam)
                    q = _Point(oracle, lam, w_j, delta)  # F(w_j) exactly, and the band at w_j for the next round
                    calls += 1
                    record(q)
                    rel = (F_best - lower) / F_best if F_best > 0 else 0.0
                    rows.append({"evaluations": calls, "objective": F_best, "dual_objective": lower,
                                 "relative_gap": rel, "delta": np.nan, "band": q.k, "smoothed_gap": np.nan,
                                 "time": time.perf_counter() - start})
                    if verbose:
                        print(f"groups newton  band finish {calls:4d}  objective {F_best:.12g}  lower {lower:.12g}  "
                              f"rel gap {rel:.2e}  band {q.k}  {time.perf_counter() - start:.2f}s", flush=True)
                    gap = F_best - lower
                    if rel <= target or calls >= max_calls or gap > 0.5 * gap_before \
                            or not 0 < q.k <= BAND_FEATURES * n or q.k * q.k > DENSE_ENTRIES:
                        break
                    gap_before = gap
                if rel <= target or calls >= max_calls:
                    break
            # the gap falls like δ²: aim at 0.3 x the target, by a factor in [1/shrink, 1/2], keeping about 2n pairs in
            # the band (it holds about δ times the pairs' density at the margin): an emptier band leaves Newton no model
            factor = np.sqrt(0.3 * target * F_best / max(F_best - lower, 1e-300))
            smaller = delta * min(0.5, max(1.0 / shrink, factor, 2.0 * n / max(k, 1)))
            if exact and k > 0:
                # the tangent of the path of minimisers w(δ) (V and B held): H dw/dδ = -(1/δ) Σ_B α d
                _, _, _, D = p.rows()
                tangent = np.linalg.solve(p.hessian(), np.asarray(D.T @ p.band_alpha()).ravel())
                w = p.w + (delta - smaller) / delta * tangent
            delta, since = smaller, 0  # a new width: its own steps
            p = _Point(oracle, lam, p.w if not (exact and k > 0) else w, delta)
            calls += 1
            continue
        g = p.g
        if exact:
            step = -np.linalg.solve(p.hessian(), g)
        else:
            hess = p.r.hessian_product
            count = [0]

            def matvec(v, hess=hess):
                count[0] += 1
                return 2.0 * lam * v + oracle.gradient(hess(oracle.scores(v)))

            op = spla.LinearOperator((n, n), dtype=np.float64, matvec=matvec)
            step, _ = spla.cg(op, -g, rtol=min(0.1, np.sqrt(max(p.sg, 0.0) / max(F_best, 1e-300))), atol=0.0,
                              maxiter=cg_max_iter)
            products += count[0]
        decrement = -float(g @ step)
        if not decrement > 0:
            step, decrement = -g, float(g @ g)
        t, accepted = 1.0, False
        for _ in range(max_backtrack + 1):
            x = _Point(oracle, lam, p.w + t * step, delta)
            calls += 1
            record(x)
            if x.Fd <= p.Fd - 1e-4 * t * decrement:
                accepted = True
                break
            if calls >= max_calls:
                break
            # the minimiser of the quadratic through F_δ(w), its slope and F_δ(x), within [t/50, t/2]: a step too long
            # by orders of magnitude (a thin band, curvature 2λ elsewhere) comes back in a few trials
            curv = x.Fd - p.Fd + t * decrement
            t = min(0.5 * t, max(0.02 * t, 0.5 * decrement * t * t / curv if curv > 0 else 0.5 * t))
        if not accepted:
            break
        p = x
    return w_best, F_best, lower, w_lower, calls, products, rows
