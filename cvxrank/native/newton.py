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

from cvxrank.exceptions import ValidationError
from cvxrank.native.band import band_pairs

__all__ = ["BAND_BUDGET", "band_budget", "smoothed_newton"]

#: Most pairs enumerated in the band: the cap of :func:`band_budget` (memory: the band's rows).
BAND_BUDGET = 20_000


def band_budget(n_documents: int, n_features: int) -> int:
    """The default ``budget`` of :func:`smoothed_newton`: ``10 m / n`` pairs of positions, at least ``40 n``, at most
    :data:`BAND_BUDGET`.

    An evaluation's work on the band is about ``k n²`` (the Hessian ``D_sᵀ D_s`` of ``k`` rows), one floor pass
    about ``m n`` (``X w`` and ``Xᵀ v``): ``10 m / n`` pairs of positions (grades not checked, about 3 times the
    band's pairs) keep the band's work near one floor pass. Below ``40 n`` rows the Hessian of the band says too
    little. The budgets compared: ``docs/native.md``, "Newton phase".

    Examples
    --------
    >>> band_budget(16_303, 45), band_budget(1_000_103, 136), band_budget(300, 10)
    (3622, 20000, 400)
    """
    return int(min(BAND_BUDGET, max(40 * n_features, 10 * n_documents // max(n_features, 1))))


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


def _evaluate(oracle, lam, w, delta, budget=None, fit=True):
    """Exact ``F(w)``, the smoothed ``F_δ(w)``, its gradient and Hessian, and the dual bound ``L(α)``.

    One sort and two boundary searches: at ``s`` (``m_i < 1``) and at ``s / (1 - δ)`` (``m_i < 1 - δ``,
    the set ``V``). The pairs between them are the band ``B``, and ``F(w) = λ‖w‖² + Σ_V c_i (1 - m_i)
    + Σ_B c_i (1 - m_i)`` needs no third search. With ``budget``, ``δ`` is halved until the band holds
    at most that many pairs (grades not checked), sized first by boundary searches alone (:func:`_fit_band`;
    ``fit=False`` skips them where the band is expected to fit, as after a shrink); the ``δ`` used is
    returned last. The bound comes as
    ``(L(α), Σ_i α_i d_i, Σ_{i∈B} α_i d_i)``: the last, the band's part, gives the path's tangent.
    """
    s = oracle.scores(w)
    order = oracle._order(s)  # also sorts s / (1 - δ)
    s_o = s[order]
    if budget is not None and fit:
        delta = _fit_band(oracle, s_o, delta, budget)
    while True:  # with ``budget``: a re-check on the evaluation's own band (rounding at its edges)
        # [p_in, end): margin < 1 - δ (the set V, summed); [p_out, end): margin < 1 (p_out found from p_in down)
        W_V, v_o, _, p_in, p_out = oracle._violations(s_o / (1.0 - delta), order, s_band=s_o)
        if budget is None or delta <= 1e-12 or int((p_in - p_out).sum()) <= budget:
            break
        delta /= 2.0
    # Σ_V c_i (1 - m_i) = W_V + vᵀ s; v sums to 0 over each query, so a shift per query keeps terms small
    vs = float(v_o @ (s_o - s_o[oracle._start]))
    v = np.empty_like(v_o)
    v[order] = v_o
    del v_o, s_o
    ib, iw, c = band_pairs(oracle, order, p_out, p_in)
    root = np.sqrt(c / delta)
    Ds = oracle._pair_rows(ib, iw, root)  # rows sqrt(c_i / δ) d_i, float64: H = 2λI + Dsᵀ Ds
    m = s[ib] - s[iw]
    one_minus = 1.0 - m  # > 0: every band pair has m < 1
    ww = lam * float(w @ w)
    F = ww + max(W_V + vs + float(c @ one_minus), 0.0)
    alpha = np.clip(c * one_minus / delta, 0.0, c)
    u_B = Ds.T @ (alpha / root)  # Σ_B α_i d_i
    u = -oracle.gradient(v) + u_B  # Σ α_i d_i
    lower = W_V + float(alpha.sum()) - float(u @ u) / (4.0 * lam)
    F_delta = ww + W_V * (1.0 - delta / 2.0) + vs + float(c @ one_minus ** 2) / (2.0 * delta)
    grad = 2.0 * lam * w - u
    H = Ds.T @ Ds  # numpy's symmetric rank-k product for a matrix times its own transpose
    H[np.diag_indices_from(H)] += 2.0 * lam
    # duality gap of the smoothed problem: its dual is L(α) - (δ/2) Σ α_i² / c_i
    smooth_gap = F_delta - lower + 0.5 * delta * (W_V + float(alpha @ (alpha / c)) if c.size else W_V)
    return F, F_delta, grad, H, (lower, u, u_B), c.shape[0], smooth_gap, delta


def smoothed_newton(oracle, lam, w, *, upper, lower, tol, target, max_calls, deadline=None, delta=None,
                    budget: int | None = None, shrink: float = 15.0, stall_after: int = 20, max_backtrack: int = 5,
                    verbose: bool = False,
                    start=None):
    """Newton steps on ``F_δ`` with decreasing ``δ`` from ``w`` until the certified relative gap is ``≤ target``.

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
        Stop when the gap has not shrunk by 0.1 % in this many Newton steps.
    max_backtrack : int, default 5
        Halvings of the step before the phase gives up (the Armijo test on
        ``F_δ`` failed: pairs outside the band changed side); the caller's
        cutting planes then go on.

    Returns
    -------
    (w_best, F_best, lower, w_lower, evaluations, rows)
        ``w_lower = Σ α_i d_i / (2λ)`` at the best lower bound of this phase
        (None if it found none better than ``lower``); ``rows``: one history
        row per evaluation.
    """
    start = time.perf_counter() if start is None else start
    w_best, F_best, w_lower = w, upper, None
    best_rel, since = np.inf, 0
    rel = (F_best - lower) / F_best
    if budget is None:
        budget = band_budget(oracle.n_documents, oracle.n_features)
    delta = float(min(0.5, max(np.sqrt(rel), 1e-8))) if delta is None else float(delta)
    if not 0.0 < delta <= 0.5:  # s / (1 - δ) must stay finite and above s
        raise ValidationError(f"delta must be in (0, 1/2], got {delta!r}")
    rows, calls = [], 0

    F, Fd, g, H, L, k, sg, delta = _evaluate(oracle, lam, w, delta, budget)
    calls += 1
    while True:
        if L[0] > lower:
            lower, w_lower = L[0], L[1] / (2.0 * lam)
        if F < F_best:
            F_best, w_best = F, w
        rel = (F_best - lower) / F_best if F_best > 0 else 0.0
        elapsed = time.perf_counter() - start
        rows.append({"evaluations": calls, "objective": F_best, "dual_objective": lower, "relative_gap": rel, "delta": delta,
                     "band": k, "smoothed_gap": sg, "time": elapsed})
        if verbose:
            print(f"newton  eval {calls:4d}  objective {F_best:.12g}  lower {lower:.12g}  rel gap {rel:.2e}  "
                  f"delta {delta:.1e}  band {k}  smoothed gap {sg:.2e}  {elapsed:.2f}s", flush=True)
        if rel < best_rel * (1.0 - 1e-3):
            best_rel, since = rel, 0
        else:
            since += 1
        if (rel <= target or calls >= max_calls or since >= stall_after
                or (deadline is not None and elapsed >= deadline)):
            break
        p = -np.linalg.solve(H, g)
        decrement = -float(g @ p)
        if sg <= 0.1 * (F_best - lower) and delta > 1e-12:
            # the gap at the smoothed optimum falls like δ²: aim at 0.3 x the target, by a factor in [1/shrink, 1/2],
            # and keep about 2n pairs in the band (it holds about δ times the pairs' density at the margin)
            factor = np.sqrt(0.3 * target * F_best / max(F_best - lower, 1e-300))
            smaller = delta * min(0.5, max(1.0 / shrink, factor, 2.0 * w.shape[0] / max(k, 1)))
            w = w + (delta - smaller) / delta * np.linalg.solve(H, L[2])  # along the tangent of w(δ)
            # a narrower band than the last one, which fitted: only the evaluation's own check of the budget
            F, Fd, g, H, L, k, sg, delta = _evaluate(oracle, lam, w, smaller, budget, fit=False)
            calls += 1
            continue
        t, accepted = 1.0, False
        for _ in range(max_backtrack + 1):
            x = w + t * p
            Fx, Fdx, gx, Hx, Lx, kx, sgx, _ = _evaluate(oracle, lam, x, delta)
            calls += 1
            if Lx[0] > lower:
                lower, w_lower = Lx[0], Lx[1] / (2.0 * lam)
            if Fx < F_best:
                F_best, w_best = Fx, x
            if Fdx <= Fd - 1e-4 * t * decrement:
                accepted = True
                break
            if calls >= max_calls:
                break
            t /= 2.0
        if not accepted:
            # kinks just outside the band: Newton's model is wrong here; the planes take over again
            break
        w, F, Fd, g, H, L, k, sg = x, Fx, Fdx, gx, Hx, Lx, kx, sgx
    return w_best, F_best, lower, w_lower, calls, rows
