"""The float64 rounding allowance of a certificate: what makes a computed gap a true upper bound.

A certificate's gap is a difference of two computed sums, ``G̃ = M̃(w) − D̃``: the primal value
``M(w)`` of (14) (or a variant's) and a lower bound ``D`` on ``M(w*)`` (a dual value (18) at a
point ``α`` of the box (19), or a native solver's own bound). Each sum is rounded; near the
optimum the rounding is as large as the gap itself, so ``G̃`` alone may fall below the true
``M(w) − M(w*)`` (or below zero). The certified gap is therefore

.. math:: G = \\max(\\tilde G, 0) + r_P + r_D, \\qquad
          r_P \\ge |\\tilde M(w) - M(w)|, \\quad r_D \\ge |\\tilde D - D|,

with ``M`` and ``D`` the exact values on the float64 data as given (``X``, the weights ``c_i``,
``λ``), so that ``G ≥ M(w) − M(w*)`` holds in exact arithmetic.

The bounds use the standard model of floating-point arithmetic (Higham, *Accuracy and Stability
of Numerical Algorithms*, 2002, §3.1): a sum or dot product of ``k`` terms is off by at most
``γ_k Σ|terms|``, ``γ_k = k u / (1 − k u)``, ``u = 2⁻⁵³``, whatever the order of additions (BLAS,
numpy's pairwise sums, running sums over a query's documents). Every bound below is such a
``γ`` times the absolute values of the terms that entered the computed sum; with ``t = |X| |w|``
(per document) the error of a pair's computed margin ``<w, d_i>`` is at most
``e_i = γ_{n+2} (t_a + t_b)`` (pair-free: ``γ_{k_d + 16}`` per document with ``k_d`` the non-zero entries
of its row, since zero terms add nothing). Gradual underflow adds at most ``2⁻¹⁰⁷⁴`` per operation (the
absolute term), so a problem whose numbers underflow still gets a gap that is not zero.

* :func:`primal_rounding`: ``|M̃(w) − M(w)|`` of :func:`cvxrank.objectives.qp_objective` (or the
  variant's), on the pairs when the objective was summed over them, else over all pairs at once (the pair-free
  solvers' ``L(w)``, also when the problem holds its pairs: ``pair_free=True``; every pair's weight bounded by
  its query's largest, or the pairs' own where they are held).
* :func:`dual_rounding`: ``|D̃(α) − D(α)|`` of (18) (or the variant's dual), including the
  rounding of the box ``C_i = c_i/(2λ)`` itself.
* :func:`model_rounding`: a native solver's own lower bound (planes, Newton models), whose
  gradients are sums over all pairs: bounded by the magnitudes of every pair's term.
* :func:`pair_dual_rounding`: the dual value (18) at an explicit ``α`` over enumerated pairs, summed per
  document (the pair-free coordinate descent of :mod:`cvxrank.native.pair_cd`).
* :func:`band_dual_rounding`: the same value where ``α = c`` on the pairs summed pair-free and the band's pairs are
  held one by one (the lower bounds of the Newton phase, :mod:`cvxrank.native.newton`).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from cvxrank._float64 import abs_matvec, abs_rmatvec, matvec
from cvxrank.pairs import count_pairs
from cvxrank.problem import RankingProblem

__all__ = ["U", "band_dual_rounding", "dual_rounding", "gamma", "model_rounding", "pair_dual_rounding",
           "primal_rounding"]

#: The unit roundoff of float64, ``2⁻⁵³``.
U = float(np.finfo(np.float64).eps) / 2
#: The smallest subnormal float64, ``2⁻¹⁰⁷⁴``: the absolute error of one operation under gradual underflow.
TINY = 2.0 ** -1074
#: Roundings besides the long sums (products, the ``1 − m`` of a hinge, the weights' ``τ μ/(2λ)``).
SLACK = 16


def gamma(k: float) -> float:
    """``γ_k = k u / (1 − k u)``: the relative error bound of a sum of ``k`` float64 terms (``inf`` once ``k u ≥ 1``)."""
    ku = float(k) * U
    return ku / (1.0 - ku) if ku < 1.0 else math.inf


def _gammas(k: np.ndarray) -> np.ndarray:
    """:func:`gamma` of every entry of ``k``."""
    ku = np.asarray(k, dtype=np.float64) * U
    with np.errstate(divide="ignore"):
        return np.where(ku < 1.0, ku / (1.0 - ku), np.inf)


def _row_terms(X) -> np.ndarray:
    """Per row of ``X``, how many of its entries may be non-zero (a CSR row's stored entries, a dense row's non-zero
    entries): the terms of the row's dot products that can round. A zero term is exactly zero and adding it is
    exact, so ``<x_d, w>`` computed in any order (BLAS, sparse, with FMA) is off by at most ``γ_k Σ_j |x_dj w_j|``
    with ``k`` this count, however many features there are."""
    if sp.issparse(X):
        X = X if X.format == "csr" else sp.csr_matrix(X)
        return np.diff(X.indptr).astype(np.int64)
    X = np.asarray(X)
    m, n = X.shape
    if np.count_nonzero(X) == X.size:  # no zero entry (one fast pass): every row has n terms
        return np.full(m, n, dtype=np.int64)
    step = max(1, (1 << 20) // max(n, 1))  # a block of rows at a time: the test's booleans stay small
    return np.concatenate([np.count_nonzero(X[a:a + step], axis=1) for a in range(0, m, step)] or
                          [np.zeros(0, dtype=np.int64)]).astype(np.int64)


def _shape(problem: RankingProblem) -> tuple[int, int, int, int]:
    """``(n, m, m_max, P)``: features, documents, the longest query, pairs (counted, never formed)."""
    data = problem.data
    m_max = int(np.bincount(data.query_index).max(initial=0)) if data.n_documents else 0
    return data.n_features, data.n_documents, m_max, max(int(problem.n_pairs), 1)


def _absolute(problem: RankingProblem) -> float:
    """Gradual underflow: at most ``2⁻¹⁰⁷⁴`` per operation, a few operations per pair and per entry of ``X``."""
    n, m, _, P = _shape(problem)
    return 8.0 * (P + m * (n + 1) + n) * TINY


def _required_margins(problem: RankingProblem) -> np.ndarray | float:
    variant = problem.variant
    return variant.margins(problem.pairs) if variant.margin is not None else 1.0


def _member_rows(problem: RankingProblem):
    """The rows of ``X`` that are in some pair, when that is a small part of them (a problem made from
    preference groups holds every document of its log, shown or not); None: every row."""
    groups = problem.groups
    if groups is None:
        return None
    rows = groups.held_documents
    return rows if rows.size < 0.5 * problem.data.n_documents else None


def abs_scores(problem: RankingProblem, w) -> np.ndarray:
    """``|X| |w|`` per document (the magnitudes every rounding bound here starts from); 0 for documents in
    no pair of a problem made from preference groups, whose rows are not read."""
    rows = _member_rows(problem)
    if rows is None:
        return abs_matvec(problem.data.X, w)
    t = np.zeros(problem.data.n_documents)
    t[rows] = abs_matvec(problem.data.X, w, rows=rows)
    return t


def primal_rounding(problem: RankingProblem, w, t=None, live=None, terms: int = 0, pair_free: bool = False) -> float:
    """A bound on ``|M̃(w) − M(w)|``, the float64 rounding of the QP objective (14) (or the variant's) at ``w``.

    Pair-free (no pairs formed), the loss is summed per document as ``W + Σ_d v_d (s_d − s_{q0})`` (the pair-free
    oracle's sums; ``s_{q0}`` the lowest score of ``d``'s query, a shift that keeps the terms small where the
    scores share a large offset): a document's weight ``W_d`` (of its pairs) is charged its score's error and, for
    the sums, ``reach`` plus its shifted score, ``s_d − min_q s`` here plus four times the largest score error
    (both computations' scores are within it; ``t_d`` alone would miss the shift's size where a query's
    lowest-scored document has a much larger ``|x| |w|`` than the others). A problem made from preference groups
    is summed over the groups' members (shifted by the group's lowest score, inside the query's), a document once
    per group it is in: the sums' count of terms includes the members and the groups.

    Parameters
    ----------
    problem : RankingProblem
    w : ndarray of shape (n_features,)
    t : ndarray of shape (n_documents,), optional
        ``|X| |w|``, when already computed.
    live : callable, optional
        Pair-free with margins 1 only: ``E ↦`` per document, at least the weight (scale of (14)) of its pairs whose
        computed margin is below ``1 + E``. ``E`` bounds every pair's margin error, so the other pairs have a hinge
        of exactly 0, computed and exact, and only these are charged (the pair-free oracle's
        :meth:`~cvxrank.native.oracle.PairFreeOracle.live_weights`); near a hard-margin optimum they are a small
        part of all pairs.
    terms : int, default 0
        Pair-free: how many pairs the objective's evaluation summed one by one beside its per-document sums (the
        Newton phase adds its band's ``c_i (1 − m_i)`` so); each is a pair with a hinge that is not 0, so the sums'
        term charges the same weights with ``terms`` more terms.
    pair_free : bool, default False
        The objective was summed pair-free (a pair-free solver's ``L``) although the problem holds its pairs: the
        pair-free bound, with each document's weight of the pairs it is in (without pairs, every objective is).

    Returns
    -------
    float
        On the scale of (14); multiply by ``2λ`` for (9).
    """
    w = np.asarray(w, dtype=np.float64)
    n, m, m_max, P = _shape(problem)
    t = abs_scores(problem, w) if t is None else t
    variant = problem.variant
    rho = variant.l1 / (2.0 * problem.lam)
    ww = float(np.dot(w, w))
    total = gamma(n + SLACK) * (0.5 * ww + rho * float(np.abs(w).sum()))
    squared = variant.loss == "squared_hinge"
    if problem.has_pairs and not pair_free:
        pairs = problem.pairs
        C = problem.C
        need = _required_margins(problem)
        shortfall = need - pairs.P @ matvec(problem.data.X, w)
        e = gamma(n + SLACK) * (t[pairs.better] + t[pairs.worse] + np.abs(need))
        near = shortfall > -e
        loss = np.maximum(shortfall, 0.0)
        if squared:
            term = C * ((2.0 * loss + e) * e) + 4.0 * U * C * loss * loss
            total += float(np.sum(term[near])) + gamma(P + SLACK) * float(np.sum(C * loss * loss))
        else:
            term = C * e + 4.0 * U * C * loss
            total += float(np.sum(term[near])) + gamma(P + SLACK) * float(np.sum(C * loss))
        return total + _absolute(problem)
    # Pair-free: every pair at once, each with its query's largest weight (the pairs' own weights where they are
    # held); a score sums the row's non-zero terms.
    if problem.has_pairs:
        pairs, C = problem.pairs, problem.C
        W = np.bincount(pairs.better, C, m) + np.bincount(pairs.worse, C, m)
        reach = max(float(np.max(np.abs(_required_margins(problem)), initial=1.0)), 1.0)
    else:
        W, reach = _document_weights(problem)
    e = _gammas(_row_terms(problem.data.X) + SLACK) * (t + reach)
    if live is not None and variant.margin is None:  # only the pairs whose hinge may not be 0
        W = np.minimum(W, np.asarray(live(2.0 * float(e.max(initial=0.0))), dtype=np.float64))
    per_doc = (2.0 * reach + 2.0 * t.max(initial=0.0) + 1.0) if squared else 1.0
    bound = float(np.sum(W * (e * per_doc + 4.0 * U * (reach + t) * per_doc)))
    # The solver's own sums over a query's sorted documents and across queries, shifted by its lowest score.
    q = problem.data.query_index
    scores = matvec(problem.data.X, w)
    low = np.full(problem.data.n_queries, np.inf)
    np.minimum.at(low, q, scores)
    shifted = (scores - low[q]) + 4.0 * float(e.max(initial=0.0))
    # (preference groups: the oracle sums over the groups' members, a document once per group it is in)
    members = 0 if problem.groups is None else problem.groups.n_members + problem.groups.n_groups
    bound += gamma(m + m_max + members + int(terms) + SLACK) * float(np.sum(W * (reach + shifted) * per_doc))
    return total + bound + _absolute(problem)


def _document_weights(problem: RankingProblem) -> tuple[np.ndarray, float]:
    """``W_d ≥ Σ_{pairs i ∋ d} C_i`` per document without forming pairs, and the largest required margin.

    Each pair of a query weighs at most ``max τ · μ_q / (2λ)``; a document of grade ``g`` in a query of
    ``m_q`` documents is in ``m_q − N[q, g]`` pairs. A problem made from preference groups (costs per
    document, margins 1) has its ``W_d`` exactly: :meth:`~cvxrank.preference_groups.PreferenceGroups.document_weights`.
    """
    if problem.groups is not None:
        return problem.groups.document_weights() / (2.0 * problem.lam), 1.0
    data = problem.data
    costs = problem.costs
    per_query = count_pairs(data)
    mu = costs.mu_per_query(data.query_ids, per_query)
    tau = max(costs.tau.values(), default=1.0) if costs.tau is not None else 1.0
    _, codes = np.unique(data.y, return_inverse=True)
    codes = codes.ravel()
    G = int(codes.max(initial=-1)) + 1
    q = data.query_index
    cell = np.bincount(q * G + codes, minlength=data.n_queries * max(G, 1))
    size = np.bincount(q, minlength=data.n_queries)
    others = size[q] - cell[q * G + codes]
    W = tau * mu[q] * others / (2.0 * problem.lam)
    variant = problem.variant
    if variant.margin == "gain_difference":
        reach = float(2.0 ** np.max(np.abs(data.y), initial=0.0)) * 2.0
    elif variant.margin == "grade_difference":
        reach = float(np.ptp(data.y)) if data.n_documents else 1.0
    else:
        reach = 1.0
    return W.astype(np.float64), max(reach, 1.0)


def dual_rounding(problem: RankingProblem, alpha, affine=()) -> float:
    """A bound on ``|D̃(α) − D(α)|``, the float64 rounding of the dual value (18) (or the variant's dual).

    ``D(α) = Σ m_i α_i − ½‖Dᵀα‖²`` (the variant's adds ``h(α)``, the conjugate of the
    regulariser and the affine constraints' ``νᵀc``). ``Dᵀα = Xᵀ(Pᵀα)`` is off by at most
    ``ε = γ_{m + m_max} |X|ᵀ|P|ᵀα`` per feature, and the dual value, 1-smooth in ``Dᵀα``, by
    ``‖Dᵀα‖ ‖ε‖ + ½‖ε‖²``. The box ``0 ≤ α ≤ C̃`` with ``C̃`` the rounded ``c/(2λ)`` is exact's
    box up to ``4u C``; shrinking ``α`` by that factor moves the value by ``4u`` of its terms.

    Parameters
    ----------
    problem : RankingProblem
        Its pairs must exist (``α`` has one entry per pair).
    alpha : ndarray of shape (n_pairs,)
    affine : sequence of ``(A, c, ν)``
        The variant's affine user constraints with the duals the bound used (signed as used).
    """
    pairs = problem.pairs
    alpha = np.asarray(alpha, dtype=np.float64)
    n, m, m_max, P = _shape(problem)
    need = np.abs(_required_margins(problem))
    linear = float(np.sum(need * alpha))
    reach = np.bincount(pairs.better, alpha, minlength=m) + np.bincount(pairs.worse, alpha, minlength=m)
    eps = gamma(m + m_max + SLACK) * abs_rmatvec(problem.data.X, reach)
    v = pairs.rmatvec(alpha)
    shift = 0.0
    for A, c, nu in affine:
        A = np.asarray(A, dtype=np.float64)
        nu = np.asarray(nu, dtype=np.float64)
        v = v - A.T @ nu
        eps = eps + gamma(A.shape[0] + SLACK) * (np.abs(A).T @ np.abs(nu))
        shift += float(np.abs(nu) @ np.abs(np.asarray(c, dtype=np.float64)))
    # The conjugate φ*(v) = Σ_j v_j u_j − ½u_j² − ρ|u_j| at its maximiser u = clip(S_ρ(v), l, u) (u = v for
    # the papers' problem) is 1-smooth with gradient u: an error ε in v moves it by ‖u‖‖ε‖ + ½‖ε‖².
    rho = problem.variant.l1 / (2.0 * problem.lam)
    lo, hi = problem.variant.bounds(v.size)
    u = np.clip(np.sign(v) * np.maximum(np.abs(v) - rho, 0.0), lo, hi)
    vv = float(np.sum(np.abs(v * u) + 0.5 * u * u + rho * np.abs(u)))
    ve = float(np.linalg.norm(u) * np.linalg.norm(eps))
    ee = float(np.dot(eps, eps))
    h = 0.0
    if problem.variant.loss == "squared_hinge":
        C = problem.C
        with np.errstate(divide="ignore", invalid="ignore"):
            h = float(np.sum(np.where(C > 0, alpha * alpha / (4.0 * np.where(C > 0, C, 1.0)), 0.0)))
    total = (gamma(P + SLACK) * (linear + h) + gamma(n + SLACK) * 2.0 * vv
             + 2.0 * ve + ee + gamma(len(affine) + SLACK) * shift + 8.0 * U * (linear + h + vv + shift))
    return total + _absolute(problem)


def model_rounding(problem: RankingProblem, w, t=None) -> float:
    """A bound on the float64 rounding of a native solver's own lower bound on ``M(w*)`` near ``w``.

    The bound (the dual of a plane model, or of a Newton model) is a combination of the loss at
    earlier points and of gradients ``Σ_i C_i d_i`` over pairs; each gradient entry is off by at
    most ``γ_{m + m_max} (|X|ᵀ W)_j`` with ``W_d`` the total weight of the pairs of document ``d``,
    and the bound by that times ``‖w‖`` (the model's minimiser is ``w`` at the end of a run), on
    top of the rounding of the loss values (:func:`primal_rounding` over all pairs).
    """
    w = np.asarray(w, dtype=np.float64)
    n, m, m_max, _ = _shape(problem)
    t = abs_scores(problem, w) if t is None else t
    if problem.has_pairs:
        pairs = problem.pairs
        C = problem.C
        W = np.bincount(pairs.better, C, minlength=m) + np.bincount(pairs.worse, C, minlength=m)
        reach = float(np.max(np.abs(_required_margins(problem)), initial=1.0))
    else:
        W, reach = _document_weights(problem)
    rows = _member_rows(problem)  # W is 0 outside them
    grad = gamma(m + m_max + n + SLACK) * (abs_rmatvec(problem.data.X, W) if rows is None
                                           else abs_rmatvec(problem.data.X, W[rows], rows=rows))
    squared = problem.variant.loss == "squared_hinge"
    per_doc = (2.0 * reach + 2.0 * t.max(initial=0.0) + 1.0) if squared else 1.0
    values = gamma(n + m + m_max + SLACK) * float(np.sum(W * (reach + t) * per_doc))
    ww = float(np.dot(w, w))
    return (2.0 * float(np.linalg.norm(w)) * float(np.linalg.norm(grad)) * per_doc + values
            + gamma(n + SLACK) * 2.0 * ww + _absolute(problem))


def pair_dual_rounding(X, V, degree: int, alpha, u, lam: float) -> float:
    """A bound on ``|D̃ − D|`` for the dual value of (9) at an explicit ``α`` over enumerated pairs,
    ``D = Σ_i α_i − ‖u‖² / (4λ)`` with ``u = Σ_i α_i d_i = Xᵀ v``, computed as ``Σα`` minus ``λ‖ũ/(2λ)‖²`` from
    ``ũ = Xᵀ ṽ`` and the per-document sums ``ṽ_d = Σ_{i: better_i = d} α_i − Σ_{i: worse_i = d} α_i``.

    With ``V_d = Σ_{i ∋ d} α_i`` (``α ≥ 0``) and ``k`` the most pairs of one document, each ``ṽ_d`` is off by at
    most ``γ_k V_d`` and each ``ũ_j`` by at most ``δ_j = γ_{m+k} (|X|ᵀ V)_j``, so
    ``|‖ũ‖² − ‖u‖²| ≤ (2‖ũ‖ + ‖δ‖) ‖δ‖``; the sum ``Σα`` adds ``γ_P Σα`` and the squared norm ``γ_n ‖ũ‖²``.
    Much tighter than :func:`model_rounding` near a hard-margin optimum, where ``α`` is far below the weights.

    Parameters
    ----------
    X : array or sparse matrix of shape (m, n)
        The features the sums ran on.
    V : ndarray of shape (m,)
        ``V_d``, the sum of ``α`` over the pairs of each document.
    degree : int
        ``k``, the most pairs of one document.
    alpha : ndarray of shape (P,) or tuple
        The dual point, ``α_i ≥ 0``; or ``(Σα, P)``, its sum and its number of pairs, for a point that is not held
        pair by pair (the flows of :mod:`cvxrank.native.threshold_dual`).
    u : ndarray of shape (n,)
        The computed ``ũ``.
    lam : float

    Returns
    -------
    float
        On the scale of (14) (the bound on (9) divided by ``2λ``).
    """
    m, n = X.shape
    total, P = (float(alpha[0]), int(alpha[1])) if isinstance(alpha, tuple) else (float(alpha.sum()), alpha.shape[0])
    delta = float(np.linalg.norm(gamma(m + degree + SLACK) * abs_rmatvec(X, V)))
    uu = float(np.linalg.norm(u))
    r9 = (gamma(P + SLACK) * total + ((2.0 * uu + delta) * delta + gamma(n + SLACK) * uu * uu) / (4.0 * lam)
          + 8.0 * (P + m * (n + 1)) * TINY)
    return r9 / (2.0 * lam)


def band_dual_rounding(X, V, grades: int, band: int, total: float, u, lam: float) -> float:
    """A bound on ``|D̃ − D|`` for a lower bound of the Newton phase (:mod:`cvxrank.native.newton`): the dual value
    of (9), ``D = Σ_i α_i − ‖u‖² / (4λ)``, ``u = Σ_i α_i d_i``, at ``α_i = c_i`` on a set ``V`` of pairs summed
    pair-free and ``α_i ∈ [0, c_i]`` on at most ``band`` pairs held one by one (0 elsewhere).

    It is computed as ``W_V + Σ_B α_i − ‖ũ‖² / (4λ)`` with ``ũ = −Xᵀ ṽ + Σ_B α_i d̃_i``, where the oracle's sweep
    gives, per document, the weights of its pairs of ``V`` on each side (at most ``grades`` products each) and
    ``ṽ_d`` as their difference, and a band row ``d̃_i`` is ``x_better − x_worse`` with at most six roundings (the
    difference, a scaling by ``sqrt(c_i / δ)`` and back, the product with ``α_i``). A pair moved from the band to
    ``V`` enters ``ṽ`` by per-document sums of at most ``band`` weights. So with ``V_d = Σ_{i ∋ d} α_i`` every
    ``ũ_j`` is off by at most ``γ_{m + 2G + k + 10} (|X|ᵀ V)_j``, and ``W_V + Σ_B α`` (``m`` per-document sums of
    ``2G`` terms, ``k`` moved weights, ``k`` band terms) by ``γ_{m + 2G + 2k + 4} Σ α``: the terms of
    :func:`pair_dual_rounding` with ``degree = 2G + k + 10`` and, for the sums and the operations that may underflow
    (``(m + k) n`` products), ``m + 2G + k (n + 2) + 4`` terms.

    Parameters
    ----------
    X : array or sparse matrix of shape (m, n)
        The features the sums ran on (the oracle's).
    V : ndarray of shape (m,)
        ``V_d``: the weight ``c_i`` of every pair of ``V`` with document ``d`` plus ``α_i`` of its band pairs.
    grades : int
        ``G``, the most grades of the sweep's weight table.
    band : int
        ``k``: at least the pairs held one by one and those moved from them to ``V``.
    total : float
        The computed ``W_V + Σ_B α_i``.
    u : ndarray of shape (n,)
        The computed ``ũ``.
    lam : float

    Returns
    -------
    float
        On the scale of (14) (the bound on (9) divided by ``2λ``).
    """
    n = X.shape[1]
    G, k = int(grades), int(band)
    return pair_dual_rounding(X, V, 2 * G + k + 10, (float(total), X.shape[0] + 2 * G + k * (n + 2) + 4), u, lam)
