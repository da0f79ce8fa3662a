"""Accelerated projected gradient on the dual of the hard-margin threshold form: sparse, separable data.

On sparse data with at least as many features as documents the data are usually separable, and for every small
``λ`` the optimum of (9) is the hard-margin solution: the least ``‖w‖`` with every pair's margin at least 1. With
the distinct grades ``g_1 < … < g_k`` of a query, every pair of that query has margin at least 1 exactly when each
*boundary* ``b`` between two consecutive grades has a threshold ``t_b`` with

.. math:: \\sigma_j\\,(\\langle x_j, w\\rangle - t_b) \\ge \\tfrac12 \\quad\\text{for every document } j
          \\text{ of grade } g_{b+1}\\ (\\sigma_j = 1) \\text{ and } g_b\\ (\\sigma_j = -1),

(a pair across several grades then has margin at least the sum of its boundaries' gaps): one constraint per
document and boundary, at most two per document, where (9) has one per pair (26,600 against 666,600 on the
20,000-feature shape of ``cvxrank bench native --instances shapes``). The dual of ``min ½‖w‖²`` under them is

.. math:: \\max_{\\nu \\ge 0}\\; g(\\nu) = \\tfrac12 \\sum_k \\nu_k - \\tfrac12 \\lVert w(\\nu) \\rVert^2,
          \\qquad w(\\nu) = \\sum_k \\nu_k \\sigma_k x_{j_k}, \\qquad \\sum_{k \\in b} \\sigma_k \\nu_k = 0
          \\text{ for every boundary } b,

(the balance is the stationarity in the free ``t_b``). Its gradient costs one product with ``Xᵀ`` and one with
``X``, and the projection onto its feasible set is one shift per boundary (``_sweep.balance``). A step is one
compiled pass besides the two products (``_sweep.threshold_step``: the gradient, the projection, the per-document
sums and the sums the step's tests read), and the oracle's product with ``Xᵀ`` skips the documents off the support
(:mod:`cvxrank.native.products`: a quarter of them on the 20,000-feature shape; the same sums as scipy's). This module
maximises it by FISTA (Beck & Teboulle 2009) with backtracking on the step and O'Donoghue & Candès' (2015)
gradient restart, and proves its points by two bounds on (9) itself:

* **Upper.** ``w(ν)`` scaled by ``1/m``, ``m`` its least gap over the boundaries (the least pair margin), has every
  pair's margin at least 1, so ``F(w/m) = λ‖w‖²/m²`` (checked by the pair-free oracle before it is used).
* **Lower (flows).** A balanced ``ν`` is the point of (9)'s dual (16)

  .. math:: \\alpha_{ij} = \\kappa_b\\, \\nu_i \\nu_j, \\qquad \\kappa_b = \\frac{2\\lambda t}{\\max(U_b, D_b)},

  on the pairs ``(i, j)`` across each boundary (``U_b``, ``D_b`` the sums of ``ν`` above and below it), for which
  ``Σ α = λ t Σ ν`` and ``w(α) = t\\,w(ν)`` when ``U_b = D_b``: the dual value is ``2λ g(tν)``. It is in the box
  ``α ≤ c`` when ``t κ_b max ν_above max ν_below ≤ c_b`` on every boundary, and ``t`` is the best multiple inside it,
  so every balanced ``ν`` gives a bound, computed from the flows themselves (``w(α)`` from per-document sums, with
  :func:`cvxrank.rounding.pair_dual_rounding`'s allowance). At the hard-margin optimum ``t = 1`` fits exactly while
  ``λ`` is small enough (up to 6.49 on the 20,000-feature shape); beyond, the flows do not fit the box and the phase
  hands over (:data:`HAND_OVER`).

**Finishes on the set** (as in Moré & Toraldo's GPCG, 1991). Every :data:`FINISH_SPACING` iterations, or sooner
once the lower bound has stopped moving, conjugate gradients maximise ``g`` on the set ``{ν_k > 0}`` with the balance
kept and ``ν ≥ 0`` dropped (the projected system is positive semidefinite; its iterates carry ``w`` and ``X w``
along, one product with each per iteration): when the set is the optimum's, its point is the optimum's ``w``. Its
points give upper bounds as above; its end, projected back, goes on as FISTA's point when it is better there, so
its work is not lost when the set was not yet right (on the 20,000-feature shape at λ = 0.5 the first finish, after
75 iterations, took the lower bound's distance to the optimum from 3.6e-4, FISTA's alone there, to 3.6e-5).

Measured on the 20,000-feature shape: docs/native.md, "Sparse separable data: the threshold form's dual".
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np

from cvxrank.native.kernels import sweep
from cvxrank.native.stopping import target_proven
from cvxrank.rounding import pair_dual_rounding

__all__ = ["Boundaries", "Flows", "boundaries", "flows", "threshold_dual"]

#: Power iterations for the first estimate of the gradient's Lipschitz constant ``‖A‖²`` (backtracking corrects it).
POWER = 8
#: Backtracking doubles ``L`` up to this many times the power iteration's estimate (``2⁴⁰``); a step that fits
#: nowhere below ends the phase. The power iteration is below ``‖A‖²`` by at most its unconverged share, so any real
#: need stops far lower; past it only rounding fails the test (on tiny data where ``ν`` grew large, ``L`` doubled
#: to float64's overflow, a product each time).
BACKTRACK_ROOM = 2.0**40
#: Look at the bounds every this many iterations (two more products each).
LOOK = 25
#: Hand over (to :func:`~cvxrank.native.pair_cd.pair_cd`) when the flows need scaling below this to fit the box:
#: the hard-margin solution is then far from (9)'s optimum (larger ``λ``, or data that are not separable); or when
#: they need any scaling below 1 in each of the last :data:`CAPPED_LOOKS` looks (then the phase cannot prove the
#: target: its upper bounds are hard-margin points, and its lower bound is capped by the box; the flows' scaling
#: falls as ``ν`` grows from 0 and settles within a few per cent on the 20,000-feature shape).
HAND_OVER = 0.5
CAPPED_LOOKS = 2
#: Hand over when the relative gap has not halved in this many looks.
STALL_LOOKS = 8
#: A finish every :data:`FINISH_SPACING` iterations, or sooner once a look's lower bound gained less than the target
#: (relative): at most :data:`FINISH_ITERATIONS` conjugate-gradient iterations, a look at its point every
#: :data:`FINISH_LOOK`, ending when a look gains less than :data:`FINISH_STALL` of the gap.
FINISH_ITERATIONS = 60
FINISH_LOOK = 10
FINISH_STALL = 0.01
FINISH_SPACING = 75


class Boundaries(NamedTuple):
    """The constraints of the threshold form: entry ``k`` is document ``doc[k]`` with side ``sig[k]`` (+1 above the
    boundary, -1 below); boundary ``b`` holds the entries ``starts[b]:starts[b+1]``, those above first, up to
    ``mid[b]``. ``cost[b]`` is the weight of its pairs (the (query, grade pair) cell's), ``n_pairs`` the pairs
    across all boundaries, ``side`` the most documents on one side of one boundary."""

    doc: np.ndarray
    sig: np.ndarray
    starts: np.ndarray
    mid: np.ndarray
    cost: np.ndarray
    n_pairs: int
    side: int

    @property
    def segments(self) -> np.ndarray:
        """``[starts[0], mid[0], starts[1], mid[1], …]``: the sides, for ``np.ufunc.reduceat``."""
        return np.column_stack((self.starts[:-1], self.mid)).ravel()

    @property
    def boundary(self) -> np.ndarray:
        """The boundary of every entry."""
        return np.repeat(np.arange(self.mid.shape[0]), np.diff(self.starts))


def boundaries(oracle) -> Boundaries | None:
    """The threshold form's constraints for the oracle's data (module docstring), or None when it does not apply:
    no pairs, or a boundary whose grade pair has no weight (its flows could not carry the bound)."""
    qc, gc = np.asarray(oracle._qc, dtype=np.int64), np.asarray(oracle._gc, dtype=np.int64)
    m = qc.shape[0]
    order = np.lexsort((gc, qc))  # by query, then grade
    q_o, g_o = qc[order], gc[order]
    new = np.ones(m, dtype=bool)
    new[1:] = (q_o[1:] != q_o[:-1]) | (g_o[1:] != g_o[:-1])
    cell_start = np.flatnonzero(new)
    cell_size = np.diff(np.append(cell_start, m))
    cell_q, cell_g = q_o[cell_start], g_o[cell_start]
    below = np.flatnonzero(cell_q[1:] == cell_q[:-1])  # a cell and the next of its query (the next grade up)
    above = below + 1
    if below.shape[0] == 0:
        return None
    cost = np.asarray(oracle.values, dtype=np.float64)[cell_q[below], cell_g[above], cell_g[below]]
    if not np.all(cost > 0):
        return None
    up, down = cell_size[above], cell_size[below]
    lengths = np.column_stack((up, down)).ravel()
    firsts = np.column_stack((cell_start[above], cell_start[below])).ravel()
    ends = np.cumsum(lengths)
    pos = np.repeat(firsts - (ends - lengths), lengths) + np.arange(int(ends[-1]))
    starts = np.concatenate(([0], np.cumsum(up + down))).astype(np.int64)
    sig = np.repeat(np.tile([1.0, -1.0], below.shape[0]), lengths)
    return Boundaries(order[pos].astype(np.int64), sig, starts, starts[:-1] + up, cost,
                      int(np.dot(up.astype(np.float64), down)), int(lengths.max()))


class Flows(NamedTuple):
    """The flows' point of (9)'s dual (16) from a balanced ``ν`` (:func:`flows`): ``α_ij = t κ_b ν_i ν_j`` on the
    pairs across each boundary. ``value`` is its dual value ``Σα − ‖u‖²/(4λ)`` (scale of (9)), ``t`` the multiple
    used, ``t_max`` the largest that keeps ``α ≤ c``, ``u = Σ α_ij (x_i − x_j)`` (so ``w(α) = u/(2λ)``), ``V`` per
    document the sum of ``α`` over its pairs, ``total`` ``Σα``."""

    value: float
    t: float
    t_max: float
    u: np.ndarray
    V: np.ndarray
    total: float

    def rounding(self, X, bd: Boundaries, lam: float) -> float:
        """:func:`cvxrank.rounding.pair_dual_rounding` of this point: a document's sum has at most two terms, each a
        product with its boundary's other side's sum (``bd.side`` terms), hence ``bd.side + 4`` as the degree."""
        return pair_dual_rounding(X, self.V, bd.side + 4, (self.total, bd.n_pairs), self.u, lam)


def flows(oracle, bd: Boundaries, lam: float, nu) -> Flows:
    """The dual point of (9) that the threshold form's ``ν`` (``ν ≥ 0``, balanced up to rounding) carries (module
    docstring): per boundary ``κ_b = 2λ / max(U_b, D_b)`` (0 when a side sums to 0), the per-document sums
    ``v_d = Σ_b σ κ_b ν_d D_b`` (``U_b`` below) and ``u = Xᵀ v`` from them (one product), and the multiple
    ``t = min(t_max, Σα / (2‖u‖²/(4λ)))`` that maximises the dual value inside the box (``t_max`` with a margin of
    ``1e-12`` for the rounding of the test ``t κ_b max ν_above max ν_below ≤ c_b``).

    Parameters
    ----------
    oracle : PairFreeOracle
    bd : Boundaries
    lam : float
    nu : ndarray of shape (K,)
        ``ν``, one entry per entry of ``bd``.
    """
    seg, bk, sig, m = bd.segments, bd.boundary, bd.sig, oracle.n_documents
    sums = np.add.reduceat(nu, seg)
    U, D = sums[0::2], sums[1::2]
    top = np.maximum.reduceat(nu, seg)
    kappa = np.divide(2.0 * lam, np.maximum(U, D), out=np.zeros_like(U), where=(U > 0) & (D > 0))
    flow = kappa[bk] * nu * np.where(sig > 0, D[bk], U[bk])  # per entry: Σ α over its pairs
    u1 = oracle.gradient(np.bincount(bd.doc, sig * flow, minlength=m))
    total1 = float(np.dot(kappa, U * D))
    quad1 = float(u1 @ u1) / (4.0 * lam)
    peak = kappa * top[0::2] * top[1::2]
    t_max = float(np.min(np.divide(bd.cost, peak, out=np.full_like(peak, np.inf), where=peak > 0))) * (1.0 - 1e-12)
    t = min(t_max, total1 / (2.0 * quad1)) if quad1 > 0 else t_max
    if not np.isfinite(t):  # ν = 0: no flow
        t = 0.0
    V = t * np.bincount(bd.doc, flow, minlength=m)
    return Flows(t * total1 - t * t * quad1, t, t_max, t * u1, V, t * total1)


def threshold_dual(oracle, lam, *, upper, lower, target, max_calls, deadline=None, verbose=False, start=None,
                   allowance=None, structure=None):
    """FISTA on the threshold form's dual with finishes on its set (module docstring), until the certified relative
    gap of (9) is ``<= target``, the phase hands over (:data:`HAND_OVER`, :data:`STALL_LOOKS`), ``max_calls`` or the
    ``deadline``.

    Parameters
    ----------
    oracle : PairFreeOracle
        With the papers' margin of 1 and the compiled sweeps.
    lam : float
    upper, lower : float
        Best ``F`` and lower bound so far.
    target : float
        The certified relative gap to stop at.
    max_calls : int
        Cap on the work: one per product with ``X`` and one with ``Xᵀ`` (a floor pass's products), plus one per
        oracle call.
    deadline : float, optional
        Seconds since ``start``: a safety net.
    allowance : callable, optional
        ``w ↦`` the certificate's rounding allowance for ``F(w)`` (scale of (9)), as for
        :func:`~cvxrank.native.pair_cd.pair_cd`.
    structure : Boundaries, optional
        :func:`boundaries` of the oracle, when the caller has it.

    Returns
    -------
    (w_best, F_best, lower, w_lower, calls, rows, lower_rounding)
        As :func:`~cvxrank.native.pair_cd.pair_cd`; ``w_best`` None when no point beat ``upper``.
    """
    start = time.perf_counter() if start is None else start
    bd = boundaries(oracle) if structure is None else structure
    if bd is None or max_calls < POWER + 4:  # (room for the power iteration and a look)
        return None, upper, lower, None, 0, [], None
    m = oracle.n_documents
    doc, sig, B = bd.doc, bd.sig, bd.cost.shape[0]
    work = {"products": 0, "calls": 0}
    F_best, w_best, w_lower, lower_rounding, rows = upper, None, None, None, []

    def spent():
        return work["calls"] + (work["products"] + 1) // 2

    transpose = oracle.gradient  # (compiled for a float64 CSR X: rows where u is 0 are not read)

    def w_of(nu):  # w(ν) = Xᵀ (per-document sums of σ ν)
        work["products"] += 1
        return transpose(np.bincount(doc, sig * nu, minlength=m))

    def scores(w):
        work["products"] += 1
        return oracle.scores(w)

    pending = None  # (F, x): the best upper point not yet summed by the oracle, when it is below F_best

    def consider(w, s):  # λ‖x‖² at x = w/m (s = X w); every margin of x is at least 1 but for rounding
        nonlocal pending
        gap = _gap(s, bd)
        if not gap > 0:
            return np.inf
        x = w * ((1.0 + 1e-12) / gap)
        F = lam * float(x @ x)
        if F < (F_best if pending is None else pending[0]):
            pending = (F, x)
        return F

    def check():  # the pending point's F by the oracle (its loss, ~0), kept when it lowers F_best
        nonlocal F_best, w_best, pending
        if pending is not None:
            F, x = pending
            F += oracle.loss(x)
            work["calls"] += 1
            pending = None
            if F < F_best:
                F_best, w_best = F, x

    lower_flows = None  # the flows of the best bound while its rounding allowance is still to be computed

    def bound(nu):  # the flows' bound; a better one replaces lower (its rounding allowance: rounding())
        nonlocal lower, w_lower, lower_flows
        work["products"] += 1
        fl = flows(oracle, bd, lam, nu)
        if fl.value > lower:
            lower, w_lower, lower_flows = fl.value, fl.u / (2.0 * lam), fl
        return fl

    def rounding():  # the rounding allowance of the best flows' bound, once a proof or the caller reads it
        nonlocal lower_rounding, lower_flows
        if lower_flows is not None:
            work["products"] += 1  # (|X|ᵀ V)
            lower_rounding, lower_flows = lower_flows.rounding(oracle.X, bd, lam), None
        return lower_rounding

    def proven():
        check()
        extra = None
        if allowance is not None and w_best is not None and F_best - lower <= target * F_best:
            extra = allowance(w_best) + 2.0 * lam * (rounding() or 0.0)
        return target_proven(F_best, lower, target, extra)

    # the gradient's Lipschitz constant ‖A‖² (A: the rows σ_k x_{j_k}), from below by power iteration, then with room
    v = np.random.default_rng(0).standard_normal(doc.shape[0])
    L = 0.0
    for _ in range(POWER):
        Av = sig * scores(w_of(v))[doc]
        L, v = float(np.linalg.norm(Av) / np.linalg.norm(v)), Av / max(float(np.linalg.norm(Av)), 1e-300)
    L = 1.1 * L if L > 0 else 1.0
    L_most = L * BACKTRACK_ROOM
    K = doc.shape[0]
    nu, w_nu, g_nu = np.zeros(K), np.zeros(oracle.n_features), 0.0
    z, w_z, t_k = nu, w_nu, 1.0
    theta, u = np.zeros(B), np.empty(m)
    step = sweep().threshold_step
    it, since_finish, best_rel, capped, reason = 0, 0, [], [], "limit"
    while spent() + 4 <= max_calls:
        s_z = scores(w_z)
        g_z = 0.5 * float(z.sum()) - 0.5 * float(w_z @ w_z)
        new = np.empty(K)
        while True:  # backtracking: the step 1/L must satisfy the quadratic model's bound
            # new = P[z + ∇g(z) / L], u its per-document sums, and <∇g(z), new - z>, |new - z|², <∇g(z), new - ν>
            total, slope, squares, along = step(z, s_z, doc, sig, bd.starts, theta, L, nu, new, u)
            work["products"] += 1
            w_new = transpose(u)
            g_new = 0.5 * total - 0.5 * float(w_new @ w_new)
            fits = g_new >= g_z + slope - 0.5 * L * squares - 1e-12 * abs(g_z)
            if fits or not np.isfinite(g_new) or spent() + 4 > max_calls or not 2.0 * L <= L_most:
                break
            L *= 2.0
        if not (fits and np.isfinite(g_new)) or spent() + 4 > max_calls:
            # (no step 1/L fits the model up to BACKTRACK_ROOM times ‖A‖²: rounding swamps the model, as where ν
            # has grown without bound on data that are not separable; pair_cd goes on from the bounds so far)
            reason = "limit" if spent() + 4 > max_calls and np.isfinite(g_new) else "overflow"
            break
        if t_k > 1.0 and along < 0:  # the step opposes the gradient: drop it, reset the momentum
            z, w_z, t_k = nu, w_nu, 1.0
            continue
        t_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t_k * t_k))
        beta = (t_k - 1.0) / t_next
        z, w_z = new + beta * (new - nu), w_new + beta * (w_new - w_nu)
        nu, w_nu, g_nu, t_k = new, w_new, g_new, t_next
        it += 1
        since_finish += 1
        if it % LOOK:
            continue
        s_nu = scores(w_nu)
        consider(w_nu, s_nu)
        before = lower
        fl = bound(nu)
        held = nu > 0
        capped.append(fl.t_max < 1.0)
        over = fl.t_max < HAND_OVER or capped[-CAPPED_LOOKS:] == [True] * CAPPED_LOOKS
        settled = lower - before <= target * abs(lower) and since_finish >= LOOK
        if (since_finish >= FINISH_SPACING or settled) and not over and not proven():
            since_finish = 0
            x = _finish(oracle, bd, nu, w_nu, s_nu, held, consider, lower, target, transpose,
                        room=lambda: max_calls - 4 - spent(), work=work)
            projected = np.empty(K)
            sweep().balance(x, sig, bd.starts, theta, projected)
            w_p = w_of(projected)
            g_p = 0.5 * float(projected.sum()) - 0.5 * float(w_p @ w_p)
            if g_p > g_nu:  # FISTA goes on from the finish's point
                nu, w_nu, g_nu = projected, w_p, g_p
                z, w_z, t_k = nu, w_nu, 1.0
                fl = bound(nu)
        check()  # (the finish's looks leave their best point pending)
        rel = (F_best - lower) / F_best if np.isfinite(F_best) and F_best > 0 else np.inf
        elapsed = time.perf_counter() - start
        rows.append({"evaluations": spent(), "objective": F_best, "dual_objective": lower, "relative_gap": rel,
                     "delta": np.nan, "band": int(np.count_nonzero(held)), "time": elapsed})
        if verbose:
            print(f"threshold  iterations {it:5d}  work {spent():5d}  objective {F_best:.12g}  lower {lower:.12g}  "
                  f"rel gap {rel:.2e}  flows x{fl.t_max:.3g}  {elapsed:.2f}s", flush=True)
        best_rel.append(rel)
        if proven():
            reason = "proven"
            break
        if over:
            reason = "flows"
            break
        if len(best_rel) > STALL_LOOKS and (rel == np.inf or rel > 0.5 * best_rel[-1 - STALL_LOOKS]):
            reason = "stalled"
            break
        if deadline is not None and elapsed >= deadline:
            break
    check()
    rounding()
    if verbose:
        print(f"threshold  ends: {reason}", flush=True)
    return w_best, F_best, lower, w_lower, spent(), rows, lower_rounding


def _finish(oracle, bd, nu, w_nu, s_nu, held, consider, lower, target, transpose, room, work):
    """Conjugate gradients on ``max g`` over the set ``held`` with each boundary balanced (``ν ≥ 0`` dropped), from
    ``ν``: at most :data:`FINISH_ITERATIONS` iterations while ``room()`` (work left) is positive, ``consider(w, X w)``
    (the upper bound at ``w``'s multiple, returned) at every :data:`FINISH_LOOK`-th point, ending when that proves the
    target against ``lower``, gains less than :data:`FINISH_STALL` of its gap, or the residual vanishes; ``work``
    counts the products. Returns the last point ``x``.

    Its own loop rather than :func:`cvxrank.native.newton._cg`: it carries ``w(x)`` and ``X w(x)`` along with ``x``
    (one update each per iteration), so a look at the upper bound costs no product, where ``_cg``'s check sees ``x``
    alone and would need both products again."""
    m, B = oracle.n_documents, bd.cost.shape[0]
    on = np.flatnonzero(held)  # the set's entries: the iterates are 0 off it
    doc, sig, bk = bd.doc[on], bd.sig[on], bd.boundary[on]
    count = np.bincount(bk, minlength=B).astype(np.float64)
    share = np.divide(1.0, count, out=np.zeros(B), where=count > 0)

    def restrict(p):  # onto {Σ_b σ p = 0}, on the set's entries
        return p - sig * (np.bincount(bk, sig * p, minlength=B) * share)[bk]

    x, w_x, s_x = nu[on], w_nu.copy(), s_nu.copy()
    r = restrict(0.5 - sig * s_x[doc])
    p, rr = r.copy(), float(r @ r)
    stop, last = 1e-24 * rr, np.inf
    for j in range(1, FINISH_ITERATIONS + 1):
        if rr <= stop or room() < 2:
            break
        work["products"] += 2
        w_p = transpose(np.bincount(doc, sig * p, minlength=m))
        s_p = oracle.scores(w_p)
        Mp = restrict(sig * s_p[doc])
        pMp = float(p @ Mp)
        if not pMp > 0:
            break
        a = rr / pMp
        x += a * p
        w_x += a * w_p
        s_x += a * s_p
        r -= a * Mp
        rr_new = float(r @ r)
        p = r + (rr_new / rr) * p
        rr = rr_new
        if j % FINISH_LOOK == 0:
            F = consider(w_x, s_x)
            if F - lower <= target * F or (np.isfinite(last) and last - F <= FINISH_STALL * (last - lower)):
                break
            last = min(last, F)
    out = np.zeros_like(nu)
    out[on] = x
    return out


def _gap(s, bd):
    """The least gap of the scores ``s`` over the boundaries: least score above minus greatest below (negative when
    some boundary is crossed)."""
    e = s[bd.doc]
    seg = bd.segments
    return float(np.min(np.minimum.reduceat(e, seg)[0::2] - np.maximum.reduceat(e, seg)[1::2]))
