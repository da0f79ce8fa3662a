"""Pair-free oracle of two variants: margins per grade pair and the squared hinge.

For scores ``s = X w``, pair weights ``c_{q,a,b} = τ_(a,b) μ_q`` and margins ``m_{a,b}`` that
depend on the grade pair only (1 in the papers; the grade difference ``y_a − y_b`` or the gain
difference ``2^{y_a} − 2^{y_b}``, :class:`cvxrank.variants.Variant`), the losses of
:mod:`cvxrank.variants` are

.. math::

    R_1(w) = \\sum_i c_i [t_i]_+, \\qquad R_2(w) = \\sum_i c_i [t_i]_+^2, \\qquad
    t_i = m_i - (s_{a(i)} - s_{b(i)}),

summed over the within-query pairs ``i`` = (better ``a``, worse ``b``). A pair is *violated* when
``t_i > 0``, i.e. ``s_a − s_b < m_i`` (the test of :meth:`PairFreeOracle._bounds`). For a document
``p`` and a partner grade ``g`` the violated partners of grade ``g`` form one contiguous range of
its query in score order (as for the papers' margin), so the sums over violated pairs reduce to
range sums of per-grade prefix sums:

.. math::

    \\sum_{k} t_{pk} = n\\,\\delta + E, \\qquad \\sum_{k} t_{pk}^2 = n\\,\\delta^2 + 2\\delta E + F

over the ``n`` partners ``k`` in the range, with ``δ`` the shortfall at the partners' mean score and
``E``, ``F`` the sums of the deviations from it and of their squares (Lee and Lin 2014, "Large-scale
linear RankSVM", Neural Computation 26(4), do the same with order-statistic trees). That gives,
for ``O(G)`` sorts-free passes after one sort (``G`` grades):

* ``R_1`` with its subgradient ``Xᵀ v`` and the plane offset ``W = Σ_{violated} c_i m_i``
  (``R_1(w') ≥ W + (Xᵀv)ᵀw'``: the cutting plane of :mod:`.cutting_plane` with margins);
* ``R_2`` with its gradient ``Xᵀ g``, ``g = −2 Pᵀ(c ⊙ t_+)``, the linear sum
  ``Σ c_i m_i [t_i]_+`` its certificate needs, and products with the generalised Hessian
  ``2 Xᵀ Pᵀ diag(c ⊙ [t > 0]) P X`` (Lee and Lin's truncated Newton method,
  :mod:`.newton`), each in ``O(m G)`` after the first call.

Prefix sums of score deviations from the mean of each (query, grade) cell keep the
subtractions between prefix sums on the scale of one query, whatever the number of queries.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cvxrank.data import RankingData
from cvxrank.exceptions import ValidationError
from cvxrank.native.costs import CostTable
from cvxrank.native.oracle import OracleResult, PairFreeOracle, data_layout

__all__ = ["MARGIN_TABLES", "SquaredHingeResult", "VariantOracle", "margin_table"]

_EPS = np.finfo(np.float64).eps

#: The built-in margins per grade pair (``Variant(margin=...)``), as functions of (better, worse) grade.
MARGIN_TABLES = {
    "grade_difference": lambda hi, lo: hi - lo,
    "gain_difference": lambda hi, lo: np.exp2(hi) - np.exp2(lo),
}


def margin_table(grades, margin) -> np.ndarray:
    """``m[a, b]`` for grade codes ``a > b`` of the ``grades`` (ascending): 1, or a built-in margin.

    Examples
    --------
    >>> margin_table([0, 1, 3], "grade_difference")[2].tolist()
    [3.0, 2.0, 0.0]
    """
    grades = np.asarray(grades, dtype=np.float64)
    G = grades.shape[0]
    if margin is None:
        return np.tril(np.ones((G, G)), k=-1)
    if not isinstance(margin, str) or margin not in MARGIN_TABLES:
        raise ValidationError(f"the pair-free oracle takes margin None or one of {', '.join(MARGIN_TABLES)}, "
                              f"got {margin!r}; per-pair margins need the pairs (a CVXPY solver)")
    return np.tril(MARGIN_TABLES[margin](grades[:, None], grades[None, :]), k=-1)


@dataclass(frozen=True, eq=False)
class SquaredHingeResult:
    """The squared-hinge loss ``R_2`` at one score vector, with what Newton's method needs.

    Attributes
    ----------
    loss : float
        ``R_2 = Σ_i c_i [t_i]_+²``.
    linear : float
        ``Σ_i c_i m_i [t_i]_+`` (the certificate's ``Σ α_i m_i`` is ``linear / λ``).
    score_gradient : ndarray of shape (n_documents,)
        ``g = ∂R_2/∂s`` in the documents' order; the gradient in ``w`` is ``Xᵀ g``.
    n_violated : int
        Number of violated pairs.
    rounding : float
        ``ε`` times the sum of the magnitudes of the terms of ``loss``.
    """

    loss: float
    linear: float
    score_gradient: np.ndarray
    n_violated: int
    rounding: float
    _hessian: object = None

    def hessian_product(self, u) -> np.ndarray:
        """``H u`` for the generalised Hessian ``H = ∂²R_2/∂s² = 2 Pᵀ diag(c ⊙ [t > 0]) P`` at these scores."""
        return self._hessian(np.asarray(u, dtype=np.float64))


class VariantOracle(PairFreeOracle):
    """:class:`~cvxrank.native.oracle.PairFreeOracle` with margins per grade pair and the squared hinge.

    Parameters
    ----------
    X, query_codes, grade_codes, values, grades, query_ids
        As for :class:`~cvxrank.native.oracle.PairFreeOracle`.
    margins : ndarray of shape (n_grades, n_grades), optional
        ``margins[a, b] > 0`` for ``a > b`` (default: all 1, the papers').

    Examples
    --------
    >>> import numpy as np
    >>> from cvxrank.data import RankingData
    >>> data = RankingData(np.array([[0.0], [1.0], [3.0]]), y=[2, 1, 0], qid=[1, 1, 1])
    >>> oracle = VariantOracle.from_data(data, margin="grade_difference")
    >>> r = oracle.squared_hinge(np.array([1.0]))  # scores 0, 1, 3; margins 1, 1, 2; t = 2, 3, 5
    >>> r.loss, r.linear, r.n_violated
    (38.0, 15.0, 3)
    """

    #: The Newton phase's band and Huber smoothing assume margins of 1: the planes solve margins alone.
    newton_phase = False

    def __init__(self, X, query_codes, grade_codes, values, *, margins=None, grades=None, query_ids=None):
        super().__init__(X, query_codes, grade_codes, values, grades=grades, query_ids=query_ids)
        G = self._G
        margins = np.tril(np.ones((G, G)), k=-1) if margins is None else np.asarray(margins, dtype=np.float64)
        if margins.shape != (G, G):
            raise ValidationError(f"margins must have shape ({G}, {G}), got {margins.shape}")
        below = np.tril(np.ones((G, G), dtype=bool), k=-1)
        if not np.all(np.isfinite(margins[below])) or np.any(margins[below] <= 0):
            raise ValidationError("margins must be positive and finite for every grade pair")
        self.margins = np.where(below, margins, 0.0)
        counts = np.bincount(self._qc * G + self._gc, minlength=self.query_ids.shape[0] * G)
        self._cell_counts = counts.reshape(-1, G)

    @classmethod
    def from_data(cls, data: RankingData, costs: CostTable | None = None, *, margin=None) -> VariantOracle:
        """The oracle of ``data`` with the weights of ``costs`` and a built-in ``margin`` (None: 1)."""
        costs, grades, codes, _ = data_layout(data, costs)
        return cls(data.X, data.query_index, codes, costs.values, margins=margin_table(grades, margin),
                   grades=grades, query_ids=data.query_ids)

    # -- hinge with margins ----------------------------------------------------
    def evaluate_scores(self, s, *, counts: bool = True, order=None) -> OracleResult:
        """Loss ``R_1``, ``v`` and counts for a score vector ``s``; ``violated_weight`` is ``Σ c_i m_i`` over
        the violated pairs (the offset of the cutting plane). ``order`` is accepted for the parent's signature;
        the per-grade layout sorts by itself."""
        lay = self._layout(s)
        m, G = lay.m, self._G
        v_o = np.zeros(m)
        W = 0.0
        table = np.zeros((self.query_ids.shape[0], G, G), dtype=np.int64) if counts else None
        for b, p_lo, p_hi, c_lo, c_hi, m_lo, _ in lay.ranges:
            n_lo, n_hi = lay.range_counts(b, p_lo, p_hi)
            W += float(np.dot(c_lo * m_lo, n_lo))
            v_o += c_hi * n_hi - c_lo * n_lo
            if counts:
                n_lo = np.where(lay.g_o > b, n_lo, 0)
                table[:, :, b] = np.bincount(lay.qg, weights=n_lo, minlength=table.shape[0] * G).reshape(-1, G)
        loss = W + float(np.dot(v_o, lay.shifted))
        rounding = _EPS * (W + float(np.dot(np.abs(v_o), np.abs(lay.shifted))))
        v = np.empty(m)
        v[lay.order] = v_o
        return OracleResult(max(loss, 0.0), W, None, v, table, rounding, self.grades, self.query_ids)

    # -- squared hinge -----------------------------------------------------------
    def squared_hinge(self, w, *, hessian: bool = False) -> SquaredHingeResult:
        """``R_2``, its score gradient and (``hessian=True``) Hessian products at ``s = X w``."""
        return self.squared_hinge_scores(self.scores(w), hessian=hessian)

    def squared_hinge_scores(self, s, *, hessian: bool = False) -> SquaredHingeResult:
        """:meth:`squared_hinge` for a score vector ``s``."""
        lay = self._layout(s)
        m = lay.m
        g_o = np.zeros(m)
        diag = np.zeros(m)
        loss = linear = scale = 0.0
        n_violated = 0
        for b, p_lo, p_hi, c_lo, c_hi, m_lo, m_hi in lay.ranges:
            n_lo, n_hi = lay.range_counts(b, p_lo, p_hi)
            mean, (E_lo, E_hi), (F_lo, _) = lay.range_sums(lay.shifted, b, p_lo, p_hi, squares=True)
            # better document p, partners k of grade b: t = m - s_p + s_k = d + (s_k - mean)
            d = m_lo - lay.shifted + mean
            sum_t = n_lo * d + E_lo
            loss += float(np.dot(c_lo, n_lo * d * d + 2.0 * d * E_lo + F_lo))
            scale += float(np.dot(c_lo, n_lo * d * d + 2.0 * np.abs(d * E_lo) + np.abs(F_lo)))
            linear += float(np.dot(c_lo * m_lo, sum_t))
            g_o -= 2.0 * c_lo * sum_t
            # worse document p, partners k of grade b: t = m - s_k + s_p = d - (s_k - mean)
            d = m_hi + lay.shifted - mean
            g_o += 2.0 * c_hi * (n_hi * d - E_hi)
            diag += c_lo * n_lo + c_hi * n_hi
            n_violated += int(np.sum(n_lo[m_lo > 0]))
        grad = np.empty(m)
        grad[lay.order] = g_o
        hess = None
        if hessian:
            def hess(u):
                u_o = u[lay.order]
                h_o = diag * u_o
                for b, p_lo, p_hi, c_lo, c_hi, _, _ in lay.ranges:
                    n_lo, n_hi = lay.range_counts(b, p_lo, p_hi)
                    mean, (E_lo, E_hi), _ = lay.range_sums(u_o, b, p_lo, p_hi)
                    h_o -= c_lo * (n_lo * mean + E_lo) + c_hi * (n_hi * mean + E_hi)
                out = np.empty(m)
                out[lay.order] = 2.0 * h_o
                return out
        return SquaredHingeResult(max(loss, 0.0), linear, grad, n_violated, _EPS * scale, hess)

    # -- internals -------------------------------------------------------
    def _layout(self, s) -> _Layout:
        s = np.asarray(s, dtype=np.float64).ravel()
        if s.shape != (self.n_documents,):
            raise ValidationError(f"s must have {self.n_documents} entries, got {s.shape[0]}")
        if not np.all(np.isfinite(s)):
            raise ValidationError("the scores have a NaN or infinite value")
        return _Layout(self, s)


class _Layout:
    """One score vector sorted by (query, score), and the violated range of every (document, partner grade)."""

    def __init__(self, oracle: VariantOracle, s: np.ndarray):
        o = oracle
        G = o._G
        self.o = o
        self.m = m = s.shape[0]
        self.order = o._order(s)
        s_o = s[self.order]
        self.g_o = g_o = o._gc[self.order]
        q = o._q_sorted
        self.qg = q * G + g_o
        self.shifted = s_o - s_o[o._start] if m else s_o  # losses are invariant to a shift per query
        self.ranges = []
        self._cum_counts = {}
        for b in range(G):
            if not (g_o == b).any():
                continue
            below, above = g_o > b, g_o < b  # p better than its grade-b partners / worse than them
            margin = np.ones(m)
            margin[below] = o.margins[g_o[below], b]
            margin[above] = o.margins[b, g_o[above]]
            p_lo, p_hi = o._bounds(s_o, margin)
            c_lo = np.where(below, o._flat[self.qg * G + b], 0.0)                 # c[q, g_p, b]
            c_hi = np.where(above, o._flat[(q * G + b) * G + g_o], 0.0)           # c[q, b, g_p]
            self.ranges.append((b, p_lo, p_hi, c_lo, c_hi, np.where(below, margin, 0.0),
                                np.where(above, margin, 0.0)))

    def range_counts(self, b, p_lo, p_hi):
        """Grade-``b`` documents in ``[p_lo, end)`` and in ``[start, p_hi)`` of each position's query."""
        cum = self._cum_counts.get(b)
        if cum is None:
            cum = np.zeros(self.m + 1, dtype=np.int64)
            np.cumsum(self.g_o == b, out=cum[1:])
            self._cum_counts[b] = cum
        return cum[self.o._end] - cum[p_lo], cum[p_hi] - cum[self.o._start]

    def range_sums(self, x_o, b, p_lo, p_hi, *, squares: bool = False):
        """``(mean, (E_lo, E_hi), (F_lo, F_hi))``: the mean of ``x`` over the grade-``b`` documents of each
        position's query, and the sums of ``x − mean`` (and of its square) over those documents in
        ``[p_lo, end)`` and ``[start, p_hi)``."""
        o = self.o
        q = o._q_sorted
        Q = o.query_ids.shape[0]
        is_b = self.g_o == b
        n_cell = o._cell_counts[:, b]
        totals = np.bincount(q[is_b], weights=x_o[is_b], minlength=Q)
        mean = np.divide(totals, n_cell, out=np.zeros(Q), where=n_cell > 0)[q]
        dev = np.where(is_b, x_o - mean, 0.0)
        E = self._between(dev, p_lo, p_hi)
        F = (None, None)
        if squares:
            sq = dev * dev
            nu = np.divide(np.bincount(q, weights=sq, minlength=Q), n_cell, out=np.zeros(Q), where=n_cell > 0)[q]
            n_lo, n_hi = self.range_counts(b, p_lo, p_hi)
            F_lo, F_hi = self._between(np.where(is_b, sq - nu, 0.0), p_lo, p_hi)
            F = (n_lo * nu + F_lo, n_hi * nu + F_hi)
        return mean, E, F

    def _between(self, x, p_lo, p_hi):
        cum = np.zeros(self.m + 1)
        np.cumsum(x, out=cum[1:])
        return cum[self.o._end] - cum[p_lo], cum[p_hi] - cum[self.o._start]
