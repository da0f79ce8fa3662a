"""The ListMLE / cs-RgList loss of He et al., with its gradient and Hessian, vectorised over queries.

For query ``i`` with documents in the perfect order Ω (grades descending) and
scores ``s = Xw``, the ListMLE loss of position ``j`` is

.. math::

    \\ell_{ij}(w) = -s_{\\Omega_j} + \\log \\sum_{k \\ge j} \\exp(s_{\\Omega_k}),

and problem (3) of He et al. (cs-RgList) is

.. math::

    \\min_w \\; \\tfrac12 \\|w\\|^2 + \\frac{C}{m} \\sum_{i=1}^m \\sum_{j}
    \\frac{U(i,j)}{V(i,j)} \\, \\ell_{ij}(w),
    \\qquad U(i,j) = pCf^{\\,y_{\\Omega_j}}, \\quad
    V(i,j) = \\#\\{k : y_k = y_{\\Omega_j}\\}\\ \\text{in query } i.

Plain (L2-regularised) ListMLE is ``U/V ≡ 1`` (``pcf=None`` here).

Conventions
-----------
* **Perfect order and ties.** Ω sorts each query's documents by grade,
  descending; documents of equal grade keep their input order (a stable
  sort). The ListMLE loss depends on that tie order (two documents of one
  grade in the other order give another loss), so the convention is part of
  the model: reorder the rows of ``X`` to choose another.
* **Exponent of pCf.** ``U = pCf ** grade`` with the grade *value* as given
  (not its rank among the grades): the paper's example (section 4) gives an
  OHSUMED document of grade 2 the weight ``pCf · pCf``. Grade 0 weighs 1.
* **Which document a weight belongs to.** ``U(i, j)``/``V(i, j)`` use the grade
  of the document at position ``j`` of Ω, the document the ``j``-th factor of
  the likelihood (2) is about.
* ``m`` counts every query of the data, also those with one document (whose
  loss is identically 0, so they add nothing else).

Vectorisation
-------------
Rows are sorted once by (query, grade descending, input order). The suffix
log-sum-exps ``log Z_j`` are reverse ``np.logaddexp.accumulate`` scans on a
padded ``(queries, length)`` array, one array per bucket of queries whose
lengths share a power of two (so at most ``log2(longest) + 1`` numpy calls,
never a loop over queries; padding is ``-inf`` and at most doubles the work).
With ``a_j = U/V`` and ``p^{(j)}_k = \\exp(s_k - \\log Z_j)`` for ``k ≥ j``:

* loss ``= Σ_j a_j (log Z_j − s_j)``;
* gradient ``= Xᵀ (c − a)`` with ``c_k = Σ_{j≤k} a_j p^{(j)}_k
  = exp(s_k + log Σ_{j≤k} a_j / Z_j)`` (a forward log-sum-exp scan), which is
  equation (4) regrouped by document;
* Hessian ``= Σ_j a_j Cov_{p^{(j)}}(x)`` (equation (5) in matrix form). As
  ``p^{(j)}`` mixes the point ``x_j`` (weight ``π_j = p^{(j)}_j``) with
  ``p^{(j+1)}`` (weight ``1 − π_j = Z_{j+1}/Z_j``),
  ``Cov_j = (1 − π_j) Cov_{j+1} + π_j (1 − π_j) v_j v_jᵀ`` with
  ``v_j = x_j − μ_{j+1}`` and the suffix means ``μ_j = Σ_{k≥j} p^{(j)}_k x_k``.
  Unrolled and summed over ``j``: Hessian ``= Σ_k c_k (1 − π_k) v_k v_kᵀ
  = Vᵀ diag(c ⊙ (1 − π)) V``, a sum of positive semidefinite terms with
  non-negative weights: no cancellation (the textbook form
  ``Xᵀ diag(c) X − Mᵀ diag(a) M`` loses positive definiteness with large
  features and ``C``). The suffix means are reverse cumulative sums of
  ``exp(s_k − log Z_1) x_k`` divided by ``exp(log Z_j − log Z_1)``, after
  centring each list on its mean; where that ratio would underflow (scores
  spread by more than 600 inside a list) the bucket uses the exact recurrence
  ``μ_j = π_j x_j + (1 − π_j) μ_{j+1}``, a loop over positions (not queries).

The Hessian is dense ``n_features × n_features``; it is accumulated in chunks of
at most :data:`CHUNK_ELEMENTS` padded entries, so sparse ``X`` is densified a
chunk at a time only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from cvxrank._float64 import dense_rows
from cvxrank._groups import group_offsets, query_codes
from cvxrank._validation import Interval, check
from cvxrank.data import RankingData
from cvxrank.exceptions import ValidationError

__all__ = [
    "CHUNK_ELEMENTS",
    "ListwiseLayout",
    "check_C",
    "check_pcf",
    "cs_rglist_weights",
    "listwise_layout",
    "listwise_loss",
    "listwise_loss_derivatives",
    "listwise_objective",
    "objective_derivatives",
    "objective_from_sums",
    "perfect_order",
    "query_losses",
]

#: Largest padded ``queries × length × features`` block densified at once for the Hessian.
CHUNK_ELEMENTS = 2**21

#: Below this ``log Z_j − log Z_1`` the suffix means switch to the recurrence (exp(-600) ≈ 1e-261).
_UNDERFLOW_LOG = -600.0


# -- validation --------------------------------------------------------------
def check_pcf(pcf) -> float | None:
    """Validate the penalty coefficient ``pCf`` of (3): ``None`` (plain ListMLE) or a finite number ≥ 1."""
    return check("pCf (pcf)", pcf, Interval(1, np.inf, closed="left", none=True))


def check_C(C) -> float:
    """Validate the trade-off ``C`` of (3): a finite number > 0, at most :data:`cvxrank.costs.MAX_C`
    (beyond it ``‖∇f‖²`` overflows float64 and nothing can be certified)."""
    from cvxrank.costs import check_C as check

    return check(C)


# -- order and weights -------------------------------------------------------
def perfect_order(y, qid) -> np.ndarray:
    """The perfect order Ω of every query: the permutation sorting by (query, grade descending, input order).

    Queries come in the order of their sorted ids (``np.unique``); inside a
    query, grades descend and equal grades keep their input order (stable).

    Parameters
    ----------
    y : array-like of shape (n_documents,)
        Grades.
    qid : array-like of shape (n_documents,)
        Query ids.

    Returns
    -------
    order : ndarray of int64, shape (n_documents,)
        ``order[r]`` is the input index of the document at sorted row ``r``.

    Examples
    --------
    >>> perfect_order([0, 2, 1, 2, 0], qid=[1, 1, 1, 1, 0]).tolist()
    [4, 1, 3, 2, 0]
    """
    y = np.asarray(y, dtype=np.float64)
    _, codes = query_codes(qid)
    return np.lexsort((np.arange(y.size), -y, codes)).astype(np.int64)


def cs_rglist_weights(y, qid, pcf) -> np.ndarray:
    """The weights ``U/V`` of (3), one per document (in input order).

    ``U = pCf ** grade`` (the grade value, see the module notes) and ``V`` is
    the number of documents of the same query with the same grade; a document
    weighs the loss term of the position it takes in Ω. ``pcf=None`` gives
    plain ListMLE: every weight 1.

    Parameters
    ----------
    y : array-like of shape (n_documents,)
    qid : array-like of shape (n_documents,)
    pcf : float ≥ 1 or None

    Returns
    -------
    ndarray of float64, shape (n_documents,)

    Raises
    ------
    ValidationError
        For ``pcf < 1`` or weights that overflow.

    Examples
    --------
    >>> cs_rglist_weights([2, 1, 1, 0], qid=[5, 5, 5, 5], pcf=3).tolist()
    [9.0, 1.5, 1.5, 1.0]
    >>> cs_rglist_weights([2, 1, 1, 0], qid=[5, 5, 5, 5], pcf=None).tolist()
    [1.0, 1.0, 1.0, 1.0]
    """
    pcf = check_pcf(pcf)
    y = np.asarray(y, dtype=np.float64)
    if pcf is None:
        return np.ones(y.size)
    _, codes = query_codes(qid)
    _, grade_codes = np.unique(y, return_inverse=True)
    key = codes * (int(grade_codes.max()) + 1) + grade_codes.ravel()
    _, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
    with np.errstate(over="ignore"):
        weights = pcf ** y / counts[inverse.ravel()]
    if not np.all(np.isfinite(weights)):
        raise ValidationError(f"pCf ** grade overflows (pCf={pcf}, largest grade {y.max()}); use a smaller pCf")
    return weights


# -- layout ------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class _Bucket:
    """Queries padded to one common length ``length`` (a power of two)."""

    length: int
    rows: np.ndarray  # sorted rows of the bucket's documents, query by query
    slots: np.ndarray  # their flat positions in the (n_queries, length) padded array
    starts: np.ndarray  # index into rows where each query of the bucket begins (+ end)

    @property
    def n_queries(self) -> int:
        return self.starts.size - 1


@dataclass(frozen=True, eq=False)
class ListwiseLayout:
    """Documents of every query (with two or more documents) in the perfect order Ω.

    Build it with :func:`listwise_layout`; every function of this module takes
    a layout or a :class:`~cvxrank.data.RankingData`.

    Attributes
    ----------
    X : ndarray or scipy.sparse.csr_matrix of shape (n_rows, n_features)
        Feature rows in Ω order (queries of one document are left out).
    order : ndarray of int64, shape (n_rows,)
        Input index of each row.
    y : ndarray of shape (n_rows,)
        Grades of the rows.
    query : ndarray of int64, shape (n_rows,)
        Query code of each row (position in the data's ``query_ids``).
    offsets : ndarray of int64, shape (n_lists + 1,)
        List ``g`` occupies rows ``offsets[g]:offsets[g + 1]``.
    weights : ndarray of shape (n_rows,)
        ``U/V`` of (3) for each position (all 1 for plain ListMLE).
    n_queries : int
        ``m`` of (3): every query of the data, single-document ones included.
    pcf : float or None
        The penalty coefficient (``None``: plain ListMLE).
    """

    X: np.ndarray | sp.csr_matrix
    order: np.ndarray
    y: np.ndarray
    query: np.ndarray
    offsets: np.ndarray
    weights: np.ndarray
    n_queries: int
    pcf: float | None
    buckets: tuple = ()

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    @property
    def n_rows(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_lists(self) -> int:
        """Number of queries with two or more documents (the lists that carry a loss)."""
        return int(self.offsets.size - 1)

    @property
    def n_terms(self) -> int:
        """Number of loss terms ``ℓ_ij`` that are not identically zero (all positions but each list's last)."""
        return self.n_rows - self.n_lists

    def with_pcf(self, pcf) -> ListwiseLayout:
        """The same layout with the weights of another ``pCf`` (``None``: plain ListMLE)."""
        pcf = check_pcf(pcf)
        weights = cs_rglist_weights(self.y, self.query, pcf)
        return ListwiseLayout(self.X, self.order, self.y, self.query, self.offsets, weights, self.n_queries, pcf,
                              self.buckets)


def _buckets(counts: np.ndarray) -> tuple:
    """Group lists by padded length (next power of two); vectorised index bookkeeping."""
    offsets = group_offsets(counts)
    lengths = 1 << np.ceil(np.log2(np.maximum(counts, 1))).astype(np.int64)
    out = []
    for length in np.unique(lengths):
        lists = np.flatnonzero(lengths == length)
        n = counts[lists]
        starts = group_offsets(n)
        within = np.arange(starts[-1], dtype=np.int64) - np.repeat(starts[:-1], n)
        rows = np.repeat(offsets[lists], n) + within
        slots = np.repeat(np.arange(lists.size, dtype=np.int64) * length, n) + within
        out.append(_Bucket(int(length), rows, slots, starts))
    return tuple(out)


def listwise_layout(data: RankingData, pcf=None) -> ListwiseLayout:
    """Sort the data into the perfect order Ω and attach the weights ``U/V`` of (3).

    Parameters
    ----------
    data : RankingData
    pcf : float ≥ 1 or None, default None
        ``None``: plain ListMLE (``U/V ≡ 1``); a number: cs-RgList's ``pCf``
        (``pcf=1`` keeps the division by ``V``, so it is not plain ListMLE).

    Returns
    -------
    ListwiseLayout

    Raises
    ------
    ValidationError
        For ``pcf < 1``, data that is not a RankingData, or data without a
        query of two or more documents (no loss term at all).

    Examples
    --------
    >>> import numpy as np
    >>> data = RankingData(np.eye(4), [0, 2, 1, 1], qid=[3, 3, 3, 9])
    >>> layout = listwise_layout(data, pcf=2.0)
    >>> layout.order.tolist(), layout.weights.tolist(), layout.n_queries
    ([1, 2, 0], [4.0, 2.0, 1.0], 2)
    """
    if not isinstance(data, RankingData):
        raise ValidationError(f"listwise methods take a RankingData, got {type(data).__name__}")
    pcf = check_pcf(pcf)
    order = perfect_order(data.y, data.query_index)
    codes = data.query_index[order]
    counts = np.bincount(codes, minlength=data.n_queries)
    keep = counts[codes] >= 2
    if not np.any(keep):
        raise ValidationError(
            "no query has two or more documents, so the listwise loss has no term; "
            f"the data has {data.n_queries} queries of one document each"
        )
    order = order[keep]
    codes = codes[keep]
    counts = counts[counts >= 2]
    y = data.y[order]
    X = data.X[order].astype(np.float64, copy=False)  # a copy already: float32 features become float64 here
    weights = cs_rglist_weights(y, codes, pcf)
    return ListwiseLayout(X, order, y, codes, group_offsets(counts), weights, data.n_queries, pcf,
                          _buckets(counts))


def _as_layout(data, pcf=None) -> ListwiseLayout:
    if isinstance(data, ListwiseLayout):
        if pcf is not None and check_pcf(pcf) != data.pcf:
            raise ValidationError(f"the layout was built with pCf={data.pcf}, not {pcf}; use layout.with_pcf")
        return data
    return listwise_layout(data, pcf)


def _as_w(w, n_features: int) -> np.ndarray:
    w = np.asarray(w, dtype=np.float64).ravel()
    if w.size != n_features:
        raise ValidationError(f"w has {w.size} entries but the data has {n_features} features")
    if not np.all(np.isfinite(w)):
        raise ValidationError("w has a NaN or infinite entry")
    return w


# -- segmented scans ---------------------------------------------------------
def _scan(layout: ListwiseLayout, values: np.ndarray, *, reverse: bool) -> np.ndarray:
    """Per-list ``np.logaddexp.accumulate`` of ``values`` (forward, or from each list's end)."""
    out = np.empty_like(values)
    for b in layout.buckets:
        padded = np.full(b.n_queries * b.length, -np.inf)
        padded[b.slots] = values[b.rows]
        padded = padded.reshape(b.n_queries, b.length)
        if reverse:
            acc = np.logaddexp.accumulate(padded[:, ::-1], axis=1)[:, ::-1]
        else:
            acc = np.logaddexp.accumulate(padded, axis=1)
        out[b.rows] = acc.ravel()[b.slots]
    return out


@dataclass(frozen=True)
class _Pieces:
    s: np.ndarray  # scores of the rows
    log_z: np.ndarray  # log Z_j = log Σ_{k≥j} exp(s_k)
    c: np.ndarray  # Σ_{j≤k} a_j p^{(j)}_k


def _pieces(layout: ListwiseLayout, w: np.ndarray, *, derivatives: bool) -> _Pieces:
    s = np.asarray(layout.X @ w, dtype=np.float64).ravel()
    log_z = _scan(layout, s, reverse=True)
    c = None
    if derivatives:
        b = _scan(layout, np.log(layout.weights) - log_z, reverse=False)
        c = np.exp(s + b)
    return _Pieces(s, log_z, c)


# -- Hessian -----------------------------------------------------------------
def _suffix_means(xp: np.ndarray, log_z: np.ndarray, pi: np.ndarray, one_minus_pi: np.ndarray,
                  robust: bool) -> np.ndarray:
    """``μ_j = Σ_{k≥j} p^{(j)}_k x_k`` on a padded ``(q, L, n)`` block.

    ``log_z[q, j] = log Z_j`` (``-inf`` at padding), ``pi[q, j] = p^{(j)}_j`` and
    ``one_minus_pi = Z_{j+1}/Z_j`` (both 0 at padding). The fast path divides
    reverse cumulative sums of ``exp(s_k − log Z_1) x_k`` by
    ``exp(log Z_j − log Z_1)``; ``robust`` runs the recurrence
    ``μ_j = π_j x_j + (1 − π_j) μ_{j+1}``, a loop over positions.
    """
    if not robust:
        log_ratio = log_z - log_z[:, :1]
        weighted = xp * (pi * np.exp(log_ratio))[:, :, None]  # exp(s_k − log Z_1) x_k
        suffix = np.cumsum(weighted[:, ::-1], axis=1)[:, ::-1]
        ratio = np.exp(log_ratio)
        ratio[ratio == 0] = 1.0  # padding: its suffix sum is 0 too
        return suffix / ratio[:, :, None]
    mu = np.zeros_like(xp)
    nxt = np.zeros(xp[:, 0].shape)
    for j in range(xp.shape[1] - 1, -1, -1):
        nxt = pi[:, j, None] * xp[:, j] + one_minus_pi[:, j, None] * nxt
        mu[:, j] = nxt
    return mu


def _hessian(layout: ListwiseLayout, pieces: _Pieces, *, robust: bool | None = None) -> np.ndarray:
    """``Σ_i Σ_j a_ij Cov_{p^{(ij)}}(x) = Σ_k c_k (1 − π_k) v_k v_kᵀ``, chunk by chunk (module notes).

    ``robust=None`` picks the recurrence for the suffix means only where the
    cumulative-sum form would underflow; True/False force one (for tests).
    """
    n = layout.n_features
    H = np.zeros((n, n))
    s, log_z, c = pieces.s, pieces.log_z, pieces.c
    for b in layout.buckets:
        L = b.length
        per_chunk = max(1, CHUNK_ELEMENTS // (L * n))
        for q0 in range(0, b.n_queries, per_chunk):
            q1 = min(q0 + per_chunk, b.n_queries)
            nq = q1 - q0
            r0, r1 = b.starts[q0], b.starts[q1]
            rows = b.rows[r0:r1]
            slots = b.slots[r0:r1] - q0 * L
            sizes = np.diff(b.starts[q0:q1 + 1])
            x = dense_rows(layout.X, rows)
            # centring each list on its mean changes no covariance and keeps the sums small
            x -= np.repeat(np.add.reduceat(x, b.starts[q0:q1] - r0, axis=0) / sizes[:, None], sizes, axis=0)
            lz = np.full(nq * L, -np.inf)
            lz[slots] = log_z[rows]
            lz = lz.reshape(nq, L)
            lz_next = np.concatenate([lz[:, 1:], np.full((nq, 1), -np.inf)], axis=1).ravel()
            pi = np.zeros(nq * L)
            pi[slots] = np.exp(s[rows] - log_z[rows])
            one_minus_pi = np.zeros(nq * L)
            one_minus_pi[slots] = np.exp(lz_next[slots] - log_z[rows])  # Z_{j+1} / Z_j, no cancellation
            xp = np.zeros((nq * L, n))
            xp[slots] = x
            first = lz[:, :1]
            use_robust = robust if robust is not None else bool(np.min(lz.ravel()[slots] - np.repeat(
                first.ravel(), sizes)) < _UNDERFLOW_LOG)
            mu = _suffix_means(xp.reshape(nq, L, n), lz, pi.reshape(nq, L), one_minus_pi.reshape(nq, L),
                               use_robust)
            mu_next = np.concatenate([mu[:, 1:], np.zeros((nq, 1, n))], axis=1).reshape(nq * L, n)[slots]
            v = x - mu_next
            H += v.T @ (v * (c[rows] * one_minus_pi[slots])[:, None])
    return 0.5 * (H + H.T)


# -- public evaluation -------------------------------------------------------
def listwise_loss(data, w, *, pcf=None) -> float:
    """``Σ_i Σ_j (U(i,j)/V(i,j)) ℓ_ij(w)``: the data term of (3), without ``C/m``.

    Parameters
    ----------
    data : RankingData or ListwiseLayout
    w : array-like of shape (n_features,)
    pcf : float ≥ 1 or None, default None
        Ignored when ``data`` is a layout (which carries its own).

    Examples
    --------
    Two documents with scores 1 and 0 in the right order: ``log(1 + e^{-1})``.

    >>> import numpy as np
    >>> data = RankingData([[1.0], [0.0]], [1, 0], qid=[1, 1])
    >>> bool(np.isclose(listwise_loss(data, [1.0]), np.log1p(np.exp(-1))))
    True
    """
    layout = _as_layout(data, pcf)
    w = _as_w(w, layout.n_features)
    p = _pieces(layout, w, derivatives=False)
    return float(layout.weights @ (p.log_z - p.s))


def query_losses(data, w, *, pcf=None) -> np.ndarray:
    """``Σ_j (U/V) ℓ_ij(w)`` of each query ``i`` (in ``data.query_ids`` order; 0 for one-document queries).

    Examples
    --------
    >>> import numpy as np
    >>> data = RankingData([[1.0], [0.0], [5.0]], [1, 0, 3], qid=[1, 1, 2])
    >>> np.round(query_losses(data, [1.0]), 4).tolist()
    [0.3133, 0.0]
    """
    layout = _as_layout(data, pcf)
    w = _as_w(w, layout.n_features)
    p = _pieces(layout, w, derivatives=False)
    return np.bincount(layout.query, weights=layout.weights * (p.log_z - p.s), minlength=layout.n_queries)


def listwise_loss_derivatives(data, w, *, pcf=None, hessian: bool = True):
    """The data term of (3) with its gradient (4) and Hessian (5), all without ``C/m``.

    The raw sums over the data's queries: they add over any split of the queries into shards, and
    :func:`objective_from_sums` makes objective (3), gradient and Hessian of them (``objective_derivatives``
    locally, :func:`cvxrank.listwise.dask.solve_newton_files` over a Dask cluster).

    Parameters
    ----------
    data : RankingData or ListwiseLayout
    w : array-like of shape (n_features,)
    pcf : float ≥ 1 or None, default None
    hessian : bool, default True

    Returns
    -------
    loss : float
    gradient : ndarray of shape (n_features,)
        ``Σ_ij a_ij (Σ_{k≥j} p^{(j)}_k x_k − x_j) = Xᵀ (c − a)``.
    hessian : ndarray of shape (n_features, n_features) or None
        ``Σ_ij a_ij Cov_{p^{(j)}}(x)``, positive semidefinite.
    """
    layout = _as_layout(data, pcf)
    w = _as_w(w, layout.n_features)
    p = _pieces(layout, w, derivatives=True)
    loss = float(layout.weights @ (p.log_z - p.s))
    grad = np.asarray(layout.X.T @ (p.c - layout.weights), dtype=np.float64).ravel()
    H = _hessian(layout, p) if hessian else None
    return loss, grad, H


def listwise_objective(data, w, *, C=1.0, pcf=None) -> float:
    """The objective of (3): ``½‖w‖² + (C/m) Σ_i Σ_j (U/V) ℓ_ij(w)``.

    Examples
    --------
    >>> import numpy as np
    >>> data = RankingData([[1.0], [0.0]], [1, 0], qid=[1, 1])
    >>> bool(np.isclose(listwise_objective(data, [2.0], C=3.0), 2.0 + 3.0 * np.log1p(np.exp(-2))))
    True
    """
    C = check_C(C)
    layout = _as_layout(data, pcf)
    w = _as_w(w, layout.n_features)
    return objective_from_sums(w, listwise_loss(layout, w), C=C, n_queries=layout.n_queries)[0]


def objective_derivatives(data, w, *, C=1.0, pcf=None, hessian: bool = True):
    """Objective (3), its gradient (4) and Hessian (5) (``I + (C/m) ∇²loss``).

    Returns
    -------
    objective : float
    gradient : ndarray of shape (n_features,)
    hessian : ndarray of shape (n_features, n_features) or None
        Symmetric positive definite, ``⪰ I``.
    """
    C = check_C(C)
    layout = _as_layout(data, pcf)
    w = _as_w(w, layout.n_features)
    return objective_from_sums(w, *listwise_loss_derivatives(layout, w, hessian=hessian), C=C,
                               n_queries=layout.n_queries)


def objective_from_sums(w, loss, gradient=None, hessian=None, *, C, n_queries):
    """Objective (3), gradient (4) and Hessian (5) from the data term's raw sums (:func:`listwise_loss_derivatives`).

    .. math::

        f(w) = \\tfrac12\\|w\\|^2 + \\frac{C}{m} L(w), \\qquad
        \\nabla f(w) = w + \\frac{C}{m} \\nabla L(w), \\qquad
        \\nabla^2 f(w) = I + \\frac{C}{m} \\nabla^2 L(w),

    with ``L = Σ_i Σ_j (U/V) ℓ_ij`` and ``m = n_queries``. The sums of ``L`` add over any split of the queries
    (the shards of :func:`cvxrank.listwise.dask.solve_newton_files`), ``m`` counts every query of all of them.

    Parameters
    ----------
    w : ndarray of shape (n_features,)
    loss : float
        ``L(w)``.
    gradient : ndarray of shape (n_features,) or None
        ``∇L(w)``, or None.
    hessian : ndarray of shape (n_features, n_features) or None
        ``∇²L(w)``, or None.
    C : float
    n_queries : int
        ``m`` of (3): every query, single-document ones included.

    Returns
    -------
    objective, gradient, hessian
        The gradient and Hessian are None when their sums are not given.

    Examples
    --------
    >>> import numpy as np
    >>> objective_from_sums(np.array([1.0]), 3.0, np.array([2.0]), np.array([[4.0]]), C=2.0, n_queries=4)
    (2.0, array([2.]), array([[3.]]))
    """
    scale = C / n_queries
    f = 0.5 * float(w @ w) + scale * loss
    g = None if gradient is None else w + scale * gradient
    H = hessian
    if H is not None:
        H = scale * H
        H[np.diag_indices_from(H)] += 1.0
    return f, g, H
