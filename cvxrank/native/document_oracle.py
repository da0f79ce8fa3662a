"""Pair-free oracle for pair costs that factor per document: groups of documents, a weight per member.

For :class:`~cvxrank.preference_groups.PreferenceGroups` (click logs: a group is the documents some
sessions showed together, ``a_i`` the inverse-propensity weight of ``i``'s clicks there) and scores
``s = X w`` the loss is

.. math:: R(w) = \\sum_g \\sum_{i \\in g} a_i \\sum_{j \\in g,\\, j \\ne i} \\ell(t_{ij}), \\qquad
          t_{ij} = 1 - (s_i - s_j),

with ``ℓ`` the hinge ``[t]_+`` or the squared hinge ``[t]_+²``. Pair ``(i, j)`` is *violated* when
``s_i - s_j < 1``: the same floating-point subtraction and test as ``PairSet.margins(w) < 1`` on the
explicit pairs (:meth:`PreferenceGroups.pairs`). Sort the scores of a group; for a member ``i``

* ``J_i = {j : s_i - s_j < 1}`` is the run of sorted positions ``[lo_i, L)`` (``lo_i`` found by an
  exact binary search on the test itself), and ``i ∈ J_i`` (its self term ``t_ii = 1`` is removed);
* ``K_i = {k : s_k - s_i < 1} = [0, hi_i)`` with ``hi_i = #{k : lo_k <= i}`` (a later ``k`` fails to
  beat ``i`` exactly when ``i ∈ J_k``: one count, the same test).

With ``n_i = |J_i|``, ``A`` and ``S`` the prefix sums of ``a`` and of the scores in the sorted order
(shifted by the group's smallest score, :math:`x = s - \\min_g s`):

* hinge: ``R = W + vᵀ x`` with ``W = Σ_i a_i (n_i - 1)`` (the weight of the violated pairs) and
  ``v_i = -a_i (n_i - 1) + Σ_{k ∈ K_i, k ≠ i} a_k``; ``Xᵀ v`` is a subgradient and
  ``R(w') ≥ W + (Xᵀ v)ᵀ w'`` for every ``w'``: the cutting plane of
  :func:`~cvxrank.native.cutting_plane.cutting_plane`;
* squared hinge: with ``d_i = 1 - x_i``, ``Σ_{j ∈ J_i} t_ij = n_i d_i + Σ_{J_i} x_j`` and
  ``Σ_{j ∈ J_i} t_ij² = n_i d_i² + 2 d_i Σ_{J_i} x_j + Σ_{J_i} x_j²`` (minus 1 each for ``j = i``); the
  score gradient ``g_i = -2 a_i Σ_{J_i \\ i} t_ij + 2 Σ_{K_i \\ i} a_k t_ki`` and, for the generalised
  Hessian ``2 Pᵀ diag(c ⊙ [t > 0]) P``, the product
  ``(H u)_i = 2 a_i (n_i u_i - Σ_{J_i} u_j) + 2 (u_i Σ_{K_i} a_k - Σ_{K_i} a_k u_k)``: what
  :func:`~cvxrank.native.truncated_newton.truncated_newton` asks of
  :class:`~cvxrank.native.variant_oracle.VariantOracle`.

Layout. Groups of the same size ``L`` form one ``(groups, L)`` block: a call sorts each block along
its rows (``argsort(axis=1)``) and takes every prefix sum along the rows, so each sum runs over one
group only (its rounding is that of a group, whatever the number of groups), and the binary search
takes ``ceil(log2 L)`` vectorised steps. Time ``O(K log L + m n)`` per call for ``K`` members and the
``m`` documents they show (the rows of ``X`` the oracle keeps), memory ``O(K + m n)``; no pair is formed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from cvxrank._memory import check_memory
from cvxrank.exceptions import ValidationError
from cvxrank.native.kernels import check_kernel, sweep
from cvxrank.native.oracle import stored_x
from cvxrank.native.products import products
from cvxrank.native.variant_oracle import SquaredHingeResult
from cvxrank.preference_groups import PreferenceGroups

__all__ = ["DocumentOracle", "DocumentOracleResult", "MEMBER_BYTES", "SmoothedResult"]

_EPS = np.finfo(np.float64).eps

#: Peak bytes per member of a call (sorted scores, weights, positions, prefix sums and their temporaries).
MEMBER_BYTES = 256


@dataclass(frozen=True, eq=False)
class DocumentOracleResult:
    """The hinge loss at one ``w`` (or score vector), with its cutting plane.

    Attributes
    ----------
    loss : float
        ``R(w) = Σ_g Σ_{i ∈ g} a_i Σ_{j ≠ i} [1 - (s_i - s_j)]_+``.
    violated_weight : float
        ``W = Σ_i a_i (n_i - 1)``, the weight of the violated pairs: the plane's offset.
    gradient : ndarray of shape (n_features,) or None
        ``Xᵀ v``, a subgradient of ``R`` (None when only scores were given).
    score_gradient : ndarray of shape (n_documents,)
        ``v``, one entry per document the oracle keeps (:attr:`DocumentOracle.documents`).
    n_violated : int
        Violated pairs (group form: a pair of two groups counts twice).
    rounding : float
        ``ε (W + Σ |v_i x_i|)``: the scale of the rounding in ``loss``.
    """

    loss: float
    violated_weight: float
    gradient: np.ndarray | None
    score_gradient: np.ndarray
    n_violated: int
    rounding: float


@dataclass(frozen=True, eq=False)
class SmoothedResult:
    """The Huber-smoothed hinge of width ``δ`` at one score vector, with the exact hinge and a dual point.

    With ``m_ij = s_i - s_j``, the band ``B = {1 - δ <= m < 1}`` and ``V = {m < 1 - δ}``, the dual point
    ``α_ij = a_i min(1, max(0, (1 - m_ij)/δ))`` lies in the box ``[0, c]`` of the hinge's dual (19).

    Attributes
    ----------
    loss : float
        The exact hinge loss ``Σ a_i [1 - m_ij]_+``.
    smoothed : float
        ``Σ_V a_i (1 - m_ij - δ/2) + Σ_B a_i (1 - m_ij)² / (2δ)``.
    alpha_sum : float
        ``Σ α_ij``.
    alpha_square : float
        ``Σ α_ij² / a_i`` (the smoothed problem's dual term, ``(δ/2)`` times it).
    score_alpha : ndarray of shape (n_documents,)
        ``Pᵀ α`` (``+α`` at the better document, ``-α`` at the worse): ``Σ α_ij d_ij = Xᵀ`` of it, and
        minus the smoothed loss's score gradient.
    band : int
        Pairs in ``B`` (group form).
    """

    loss: float
    smoothed: float
    alpha_sum: float
    alpha_square: float
    score_alpha: np.ndarray
    band: int
    inner_weight: float = 0.0
    _hessian: object = None
    _band: object = None
    _inner: object = None

    def hessian_product(self, u) -> np.ndarray:
        """``H u`` for the smoothed loss's Hessian in scores ``H = Σ_B (a_i/δ) (e_i - e_j)(e_i - e_j)ᵀ``."""
        return self._hessian(np.asarray(u, dtype=np.float64))

    def band_pairs(self, above: float = 0.0):
        """The band's pairs in group form, ``(better, worse, a)``: documents on :attr:`DocumentOracle.documents`
        and the better member's weight (``a > 0``), one entry per group that holds the pair (a pair of two groups
        comes twice, each copy with its own box ``[0, a]``). For a member at sorted position ``p`` they are the
        positions ``[lo_p, lo'_p)`` of its group: no search beyond the evaluation's own.

        ``above > 0``: also the pairs just above the margin, ``1 <= m < 1 + above`` (positions ``[lo''_p, lo_p)``,
        one more boundary search on the group-shifted scores; the pairs not listed are still exactly ``V`` and
        those above them)."""
        return self._band(above)

    def inner_scores(self) -> np.ndarray:
        """``Pᵀ α_V``: :attr:`score_alpha` of the pairs below the band only (``α = a`` on ``V``, 0 elsewhere);
        :attr:`inner_weight` is their ``Σ a``."""
        return self._inner()


class _Block:
    """The groups of one size ``L``: ``doc`` (local document of each member) and ``a`` (its weight), ``(G, L)``."""

    __slots__ = ("L", "doc", "a")

    def __init__(self, L, doc, a):
        self.L, self.doc, self.a = L, doc, a


class _Sorted:
    """One block at one score vector: the rows sorted, the ranges ``J`` and ``K`` of every position (at the
    margin 1 and, with ``inner``, at the margin ``inner < 1``: ``lo_in``, ``hi_in``).

    The boundaries come from the compiled sweep :func:`cvxrank.native._sweep.bounds` (two pointers along
    each sorted row, the rows as queries of one flat array) when ``compiled``, else from :func:`_first_within`
    and :func:`_ends`: the same floating-point test, the same integers. Prefix sums along the rows are kept
    (:meth:`prefix`, :meth:`suffix`), each computed once per array."""

    __slots__ = ("doc", "a", "x", "n", "lo", "hi", "a_hi", "lo_in", "hi_in", "_rows", "_cum")

    def __init__(self, block: _Block, s: np.ndarray, inner: float | None = None, compiled: bool = False):
        G, L = block.doc.shape
        S, flat = _order(block, s)
        S = S.ravel()[flat].reshape(G, L)
        self.doc = block.doc.ravel()[flat].reshape(G, L)
        self.a = block.a.ravel()[flat].reshape(G, L)
        self._rows = np.arange(0, G * (L + 1), L + 1, dtype=np.int64)[:, None]  # row starts in a (G, L + 1) sum
        self._cum = {}
        if compiled:
            self.lo, self.hi = _bounds(S, 1.0)
            if inner is not None:
                self.lo_in, self.hi_in = _bounds(S, inner)
        else:
            self.lo = _first_within(S)
            self.hi = _ends(self.lo)  # #{k : lo_k <= p}: the end of K_p
            if inner is not None:
                self.lo_in = _first_within(S, inner, self.lo)
                self.hi_in = _ends(self.lo_in)
        self.n = L - self.lo  # |J_p|, the self term included
        self.x = S - S[:, :1]  # the losses are invariant to a shift per group: smaller terms
        self.a_hi = self.prefix("a", self.a, self.hi)  # Σ_{k ∈ K_p} a_k, the self term included

    @classmethod
    def smoothed(cls, block: _Block, s: np.ndarray, delta: float):
        """The block sorted at ``s`` with its boundaries at the margins 1 and ``1 - delta`` and the per-member terms
        of :meth:`DocumentOracle.smoothed_scores`, by the compiled sweep ``smoothed_groups`` (one pass per group):
        ``(sorted, terms, a_band, band)``, ``terms`` a dict of ``(G, L)`` arrays. :attr:`a_hi` is not kept."""
        G, L = block.doc.shape
        _, flat = _order(block, s)
        self = object.__new__(cls)
        self.doc = np.empty((G, L), dtype=np.int64)
        self.a, self.x = np.empty((G, L)), np.empty((G, L))
        self.lo, self.hi, self.lo_in, self.hi_in = (np.empty((G, L), dtype=np.int64) for _ in range(4))
        a_band = np.empty((G, L))
        names = ("loss", "smoothed", "alpha_sum", "alpha_square", "inner", "part")
        terms = {name: np.empty((G, L)) for name in names}
        band = sweep().smoothed_groups(s, flat, block.doc, block.a, G, L, float(delta), 1.0 - delta, self.doc, self.a,
                                       self.x, self.lo, self.hi, self.lo_in, self.hi_in, a_band,
                                       *(terms[name] for name in names))
        self.n = L - self.lo
        self.a_hi = None
        self._rows = np.arange(0, G * (L + 1), L + 1, dtype=np.int64)[:, None]
        self._cum = {}
        return self, terms, a_band, int(band)

    def cumsum(self, values: np.ndarray) -> np.ndarray:
        """The prefix sums of ``values`` (``(G, L)``, in sorted order) along each row: ``(G, L + 1)``, flattened."""
        G, L = values.shape
        cum = np.zeros((G, L + 1))
        np.cumsum(values, axis=1, out=cum[:, 1:])
        return cum.ravel()

    def take_prefix(self, cum: np.ndarray, end: np.ndarray) -> np.ndarray:
        """``Σ_{k < end[r, p]} values[r, k]`` from ``cum = self.cumsum(values)``."""
        return cum[end + self._rows]

    def take_suffix(self, cum: np.ndarray, start: np.ndarray) -> np.ndarray:
        """``Σ_{k >= start[r, p]} values[r, k]`` from ``cum = self.cumsum(values)``."""
        return cum[self._rows + (start.shape[1])] - cum[start + self._rows]

    def _kept(self, key: str, values: np.ndarray) -> np.ndarray:
        cum = self._cum.get(key)
        if cum is None:
            cum = self._cum[key] = self.cumsum(values)
        return cum

    def prefix(self, key: str, values: np.ndarray, end: np.ndarray) -> np.ndarray:
        """:meth:`take_prefix` of ``values`` at this score vector, their sums kept under ``key``."""
        return self.take_prefix(self._kept(key, values), end)

    def suffix(self, key: str, values: np.ndarray, start: np.ndarray) -> np.ndarray:
        """:meth:`take_suffix` of ``values`` at this score vector, their sums kept under ``key``."""
        return self.take_suffix(self._kept(key, values), start)


def _order(block: _Block, s: np.ndarray):
    """``(S, flat)``: the block's scores ``(G, L)`` and the flat positions that sort each row (stable)."""
    G, L = block.doc.shape
    S = s[block.doc]
    o = np.argsort(S, axis=1, kind="stable")
    o += np.arange(0, G * L, L, dtype=np.int64)[:, None]
    return S, o.ravel()


def _bounds(S: np.ndarray, margin: float):
    """``lo`` (:func:`_first_within`) and ``hi`` (:func:`_ends`) of the sorted rows of ``S`` by the compiled sweep."""
    G, L = S.shape
    offsets = np.arange(0, G * L + 1, L, dtype=np.int64)
    lo = np.empty(G * L, dtype=np.int64)
    hi = np.empty(G * L, dtype=np.int64)
    sweep().bounds(np.ascontiguousarray(S).ravel(), offsets, 0, G, float(margin), lo, hi)
    start = offsets[:-1, None]
    return lo.reshape(G, L) - start, hi.reshape(G, L) - start


def _ends(lo: np.ndarray) -> np.ndarray:
    """``#{k : lo[r, k] <= p}`` for every ``(r, p)``: the end of the run of ``k`` that do not beat ``p``."""
    G, L = lo.shape
    counts = np.bincount((np.arange(G)[:, None] * L + lo).ravel(), minlength=G * L).reshape(G, L)
    return np.cumsum(counts, axis=1)


def _first_within(S: np.ndarray, margin: float = 1.0, start=None) -> np.ndarray:
    """For rows sorted ascending: the first ``k <= p`` with ``S[r, p] - S[r, k] < margin``, for every ``(r, p)``
    (``start``: a lower bound on the answer, e.g. the answer at a larger margin).

    An exact binary search on the test itself (it fails, then holds, along ``k``, and holds at ``k = p``):
    the positions are those of the same floating-point test on every pair, ties and differences of
    exactly 1 included.
    """
    G, L = S.shape
    lo = np.zeros((G, L), dtype=np.int64) if start is None else start.copy()
    hi = np.broadcast_to(np.arange(L, dtype=np.int64), (G, L)).copy()
    active = lo < hi
    while active.any():
        mid = (lo + hi) // 2
        ok = (S - np.take_along_axis(S, mid, axis=1)) < margin
        hi = np.where(active & ok, mid, hi)
        lo = np.where(active & ~ok, mid + 1, lo)
        active = lo < hi
    return lo


class DocumentOracle:
    """Loss, (sub)gradient and Hessian products of the hinge and squared hinge on preference groups, pair-free.

    Build it with :meth:`from_groups`. The scores live on :attr:`documents`, the rows of ``X`` that some
    group holds (a copy of those rows when they are not all of them): :meth:`scores`, :meth:`gradient` and
    every score vector refer to them.

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix of shape (n_documents, n_features)
    groups : PreferenceGroups
        The groups (their ``data.X`` is not read: ``X`` is).
    kernel : {"auto", "compiled", "numpy"}, default "auto"
        The boundaries of the sorted groups by the compiled sweeps of :mod:`cvxrank.native.kernels`
        (``"auto"``: when built) or by numpy; the same integers either way, so the same results bit for bit.

    Examples
    --------
    >>> import numpy as np
    >>> from cvxrank.data import RankingData
    >>> docs = RankingData(np.array([[0.0], [1.0], [3.0]]), [0, 0, 0], qid=[1, 1, 1])
    >>> groups = PreferenceGroups(docs, group=[0, 0, 0], document=[0, 1, 2], weight=[2.0, 0.0, 1.0])
    >>> oracle = DocumentOracle.from_groups(groups)
    >>> r = oracle(np.array([1.0]))   # scores 0, 1, 3: 0 over 1 (t = 2) and 2 (t = 4) at 2; 2 beats both by >= 1
    >>> r.loss, r.violated_weight, r.gradient.tolist()
    (12.0, 4.0, [8.0])
    """

    #: The smoothed Newton phase of :mod:`cvxrank.native.newton` reads the graded oracle's internals: planes only.
    newton_phase = False

    def __init__(self, X, groups: PreferenceGroups, *, kernel: str = "auto"):
        self._compiled = check_kernel(kernel)
        self.kernel = kernel
        if not isinstance(groups, PreferenceGroups):
            raise ValidationError(f"DocumentOracle takes PreferenceGroups, got {type(groups).__name__}")
        m = groups.data.n_documents
        if X.shape[0] != m:
            raise ValidationError(f"X has {X.shape[0]} rows, the groups' documents {m}")
        # Only the groups that give a pair: two members or more, one of positive weight.
        live = np.add.reduceat(groups.weight > 0, groups.offsets[:-1]) > 0
        live &= groups.sizes > 1
        members = np.flatnonzero(live[groups.group])
        used, local = np.unique(groups.document[members], return_inverse=True)
        local = local.ravel()
        X = X.tocsr() if sp.issparse(X) else np.asarray(X)
        if X.dtype not in (np.float32, np.float64):
            X = X.astype(np.float64)
        row_bytes = (X[used].data.nbytes if sp.issparse(X) else used.shape[0] * X.shape[1] * X.itemsize) \
            if used.shape[0] < m else 0
        check_memory(MEMBER_BYTES * float(members.shape[0]) + 64.0 * used.shape[0] + row_bytes,
                     f"the pair-free oracle of {groups.n_groups:,} groups ({members.shape[0]:,} members)",
                     "use a smaller log or fewer groups")
        self.X = stored_x(X if used.shape[0] == m else X[used])
        self._products = products(self.X, self._compiled)
        self.documents = used
        self.n_pairs = groups.n_pairs
        sizes = groups.sizes[live]
        starts = groups.offsets[:-1][live]
        position = np.empty(groups.n_members, dtype=np.int64)
        position[members] = np.arange(members.shape[0])
        self._blocks = []
        for L in np.unique(sizes):
            idx = position[starts[sizes == L][:, None] + np.arange(L)]
            self._blocks.append(_Block(int(L), local[idx], groups.weight[members][idx]))
        self.n_members = int(members.shape[0])
        self.n_group_pairs = int(np.sum((groups.weight[members] > 0) * (groups.sizes[groups.group[members]] - 1)))

    @classmethod
    def from_groups(cls, groups: PreferenceGroups, *, kernel: str = "auto") -> DocumentOracle:
        """The oracle of ``groups`` on their documents' features ``groups.data.X``."""
        if not isinstance(groups, PreferenceGroups):
            raise ValidationError(f"DocumentOracle takes PreferenceGroups, got {type(groups).__name__}")
        return cls(groups.data.X, groups, kernel=kernel)

    # -- sizes -----------------------------------------------------------------------------
    @property
    def n_documents(self) -> int:
        """Documents the scores live on (those some group with a pair holds)."""
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    # -- products ----------------------------------------------------------------------------
    def scores(self, w) -> np.ndarray:
        """``s = X w`` on :attr:`documents` (float64 arithmetic)."""
        w = np.asarray(w, dtype=np.float64).ravel()
        if w.shape != (self.n_features,):
            raise ValidationError(f"w must have {self.n_features} entries, got {w.shape[0]}")
        return self._products.matvec(w)

    def gradient(self, v) -> np.ndarray:
        """``Xᵀ v`` for a score vector ``v`` on :attr:`documents` (float64 arithmetic)."""
        return self._products.rmatvec(v)

    def _check_scores(self, s) -> np.ndarray:
        s = np.asarray(s, dtype=np.float64).ravel()
        if s.shape != (self.n_documents,):
            raise ValidationError(f"s must have {self.n_documents} entries, got {s.shape[0]}")
        if not np.all(np.isfinite(s)):
            raise ValidationError("the scores have a NaN or infinite value")
        return s

    def _scatter(self, parts) -> np.ndarray:
        out = np.zeros(self.n_documents)
        for doc, values in parts:
            out += np.bincount(doc.ravel(), weights=values.ravel(), minlength=self.n_documents)
        return out

    # -- hinge -------------------------------------------------------------------------------
    def __call__(self, w, *, counts: bool = False) -> DocumentOracleResult:
        """Loss, violated weight and subgradient ``Xᵀ v`` at ``w`` (``counts`` is accepted for the interface
        of :func:`~cvxrank.native.cutting_plane.cutting_plane`: these losses have no grade pairs to count)."""
        r = self.evaluate_scores(self.scores(w))
        return DocumentOracleResult(r.loss, r.violated_weight, self.gradient(r.score_gradient), r.score_gradient,
                                    r.n_violated, r.rounding)

    def evaluate_scores(self, s) -> DocumentOracleResult:
        """:meth:`__call__` for a score vector ``s`` on :attr:`documents` (``gradient`` is None)."""
        s = self._check_scores(s)
        W = vx = scale = 0.0
        n_violated = 0
        parts = []
        for block in self._blocks:
            b = _Sorted(block, s, compiled=self._compiled)
            lower = b.a * (b.n - 1)  # weight of the violated pairs where the member is the better one
            v = (b.a_hi - b.a) - lower  # ... where it is the worse one, minus those
            W += float(lower.sum())
            vx += float(np.sum(v * b.x))
            scale += float(np.sum(np.abs(v * b.x)))
            n_violated += int(np.sum((b.a > 0) * (b.n - 1)))
            parts.append((b.doc, v))
        loss = W + vx
        return DocumentOracleResult(max(loss, 0.0), W, None, self._scatter(parts), n_violated, _EPS * (W + scale))

    # -- squared hinge -------------------------------------------------------------------------
    def squared_hinge(self, w, *, hessian: bool = False) -> SquaredHingeResult:
        """``R_2``, its score gradient and (``hessian=True``) Hessian products at ``s = X w``."""
        return self.squared_hinge_scores(self.scores(w), hessian=hessian)

    def squared_hinge_scores(self, s, *, hessian: bool = False) -> SquaredHingeResult:
        """The squared hinge ``R_2 = Σ a_i [t_ij]_+²`` at the score vector ``s``, its score gradient, the linear
        sum ``Σ a_i [t_ij]_+`` (the hinge loss: margins are 1) that the certificate of
        :func:`~cvxrank.native.truncated_newton.squared_hinge_bound` reads, and (``hessian=True``) products
        with the generalised Hessian in scores."""
        s = self._check_scores(s)
        loss = linear = scale = 0.0
        n_violated = 0
        parts, kept = [], []
        for block in self._blocks:
            b = _Sorted(block, s, compiled=self._compiled)
            x, a, n = b.x, b.a, b.n
            d = 1.0 - x
            S1 = b.suffix("x", x, b.lo)
            S2 = b.suffix("xx", x * x, b.lo)
            T = n * d + S1 - 1.0  # Σ_{j ∈ J_i, j ≠ i} t_ij (the self term is 1)
            Q = n * d * d + 2.0 * d * S1 + S2 - 1.0  # Σ_{j ∈ J_i, j ≠ i} t_ij²
            loss += float(np.sum(a * Q))
            linear += float(np.sum(a * T))
            scale += float(np.sum(a * (n * d * d + 2.0 * np.abs(d * S1) + S2 + 1.0)))
            ax_hi = b.prefix("ax", a * x, b.hi)  # Σ_{k ∈ K_i} a_k x_k
            worse = (1.0 + x) * (b.a_hi - a) - (ax_hi - a * x)  # Σ_{k ∈ K_i, k ≠ i} a_k t_ki
            parts.append((b.doc, 2.0 * (worse - a * T)))
            n_violated += int(np.sum((a > 0) * (n - 1)))
            if hessian:
                kept.append(b)
        grad = self._scatter(parts)
        hess = None
        if hessian:
            def hess(u):
                u = np.asarray(u, dtype=np.float64)
                out = []
                for b in kept:
                    U = u[b.doc]
                    h = b.a * (b.n * U - b.take_suffix(b.cumsum(U), b.lo)) + (U * b.a_hi - b.take_prefix(b.cumsum(b.a * U), b.hi))
                    out.append((b.doc, 2.0 * h))
                return self._scatter(out)
        return SquaredHingeResult(max(loss, 0.0), linear, grad, n_violated, _EPS * scale, hess)

    # -- Huber-smoothed hinge --------------------------------------------------------------------
    def band_sizes(self, s, deltas) -> list[int]:
        """Pairs (group form) in the band ``1 - δ <= m < 1`` at the score vector ``s``, for each ``δ`` in ``deltas``
        (each in ``(0, 1/2]``): :attr:`SmoothedResult.band` of :meth:`smoothed_scores` at that width, from the
        boundary searches alone (one sort, no sums), to choose a width before evaluating at it."""
        s = self._check_scores(s)
        counts = [0] * len(deltas)
        for block in self._blocks:
            S, flat = _order(block, s)
            G, L = S.shape
            S = S.ravel()[flat].reshape(G, L)
            live = block.a.ravel()[flat].reshape(G, L) > 0
            lo = _bounds(S, 1.0)[0] if self._compiled else _first_within(S)
            for j, delta in enumerate(deltas):
                inner = 1.0 - float(delta)
                lo_in = _bounds(S, inner)[0] if self._compiled else _first_within(S, inner, lo)
                counts[j] += int(np.sum(live * (lo_in - lo)))
        return counts

    def smoothed_scores(self, s, delta: float) -> SmoothedResult:
        """The smoothed hinge of width ``delta`` in ``(0, 1/2]`` at the score vector ``s``, the exact hinge and
        the dual point of :class:`SmoothedResult`, with products by the smoothed Hessian in scores.

        For a member ``i``: its ``V`` partners are the positions ``[lo'_i, L)`` (test ``s_i - s_j < 1 - δ``), its
        band partners ``[lo_i, lo'_i)``; as the worse one, ``k ∈ [0, hi'_i)`` have ``i`` in their ``V``, and
        ``k ∈ [hi'_i, hi_i)`` in their band. Every sum over them is a prefix sum of ``a``, ``a x`` or ``x``, ``x²``.
        """
        s = self._check_scores(s)
        if not 0.0 < delta <= 0.5:
            raise ValidationError(f"delta must be in (0, 1/2], got {delta!r}")
        loss = smoothed = alpha_sum = alpha_square = inner = 0.0
        band = 0
        parts, kept = [], []
        for block in self._blocks:
            if self._compiled:  # the same terms in one compiled pass; their sums as below
                b, t, a_band, nb = _Sorted.smoothed(block, s, delta)
                loss += float(np.sum(t["loss"]))
                smoothed += float(np.sum(t["smoothed"]))
                alpha_sum += float(np.sum(t["alpha_sum"]))
                alpha_square += float(np.sum(t["alpha_square"]))
                inner += float(np.sum(t["inner"]))
                band += nb
                parts.append((b.doc, t["part"]))
                kept.append((b, b.lo_in - b.lo, a_band))
                continue
            b = _Sorted(block, s, 1.0 - delta)
            x, a = b.x, b.a
            d = 1.0 - x
            nV = x.shape[1] - b.lo_in - 1  # V partners, the self term removed
            nB = b.lo_in - b.lo
            rV = nV * d + (b.suffix("x", x, b.lo_in) - x)  # Σ_V (1 - m), self removed
            SB1 = b.suffix("x", x, b.lo) - b.suffix("x", x, b.lo_in)
            xx = x * x
            SB2 = b.suffix("xx", xx, b.lo) - b.suffix("xx", xx, b.lo_in)
            rB = nB * d + SB1  # Σ_B (1 - m)
            rB2 = nB * d * d + 2.0 * d * SB1 + SB2  # Σ_B (1 - m)²
            loss += float(np.sum(a * (rV + rB)))
            smoothed += float(np.sum(a * (rV - 0.5 * delta * nV + rB2 / (2.0 * delta))))
            alpha_sum += float(np.sum(a * (nV + rB / delta)))
            alpha_square += float(np.sum(a * (nV + rB2 / (delta * delta))))
            inner += float(np.sum(a * nV))
            band += int(np.sum((a > 0) * nB))
            # as the worse one: k ∈ [0, hi') (self removed) at a_k, k ∈ [hi', hi) at a_k (1 - x_k + x_i)/δ
            a_in = b.prefix("a", a, b.hi_in) - a
            a_band = b.a_hi - b.prefix("a", a, b.hi_in)
            ax = a * x
            ax_band = b.prefix("ax", ax, b.hi) - b.prefix("ax", ax, b.hi_in)
            worse = a_in + ((1.0 + x) * a_band - ax_band) / delta
            parts.append((b.doc, a * (nV + rB / delta) - worse))
            kept.append((b, nB, a_band))
        score_alpha = self._scatter(parts)

        def hess(u):
            out = []
            for b, nB, a_band in kept:
                U = u[b.doc]
                cU, caU = b.cumsum(U), b.cumsum(b.a * U)
                band_sum = b.take_suffix(cU, b.lo) - b.take_suffix(cU, b.lo_in)
                aU_band = b.take_prefix(caU, b.hi) - b.take_prefix(caU, b.hi_in)
                out.append((b.doc, (b.a * (nB * U - band_sum) + (U * a_band - aU_band)) / delta))
            return self._scatter(out)

        def band_pairs(above=0.0):
            better, worse, weight = [], [], []
            for b, nB, _ in kept:
                lo = b.lo
                if above > 0:
                    lo = np.minimum(_first_within(b.x, 1.0 + above), b.lo)
                    nB = b.lo_in - lo
                count = np.where(b.a > 0, nB, 0).ravel()
                total = int(count.sum())
                if total == 0:
                    continue
                at = np.repeat(np.arange(count.shape[0], dtype=np.int64), count)  # flat position of the better one
                first = np.repeat(np.cumsum(count) - count, count)
                row = at // b.doc.shape[1]
                col = lo.ravel()[at] + (np.arange(total, dtype=np.int64) - first)
                better.append(b.doc.ravel()[at])
                worse.append(b.doc[row, col])
                weight.append(b.a.ravel()[at])
            if not better:
                return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), np.empty(0)
            return np.concatenate(better), np.concatenate(worse), np.concatenate(weight)

        def inner_scores():
            out = []
            for b, _, _ in kept:  # α = a on V: as the better one a (n'_p - 1), as the worse one Σ_{k ∈ [0, hi'), k ≠ p} a_k
                L = b.a.shape[1]
                out.append((b.doc, b.a * (L - b.lo_in - 1) - (b.prefix("a", b.a, b.hi_in) - b.a)))
            return self._scatter(out)

        return SmoothedResult(max(loss, 0.0), max(smoothed, 0.0), alpha_sum, alpha_square, score_alpha, band, inner,
                              hess, band_pairs, inner_scores)
