"""Query-aware ranking metrics: NDCG@k, MAP, P@k, Kendall's tau, pairwise accuracy.

Every function takes flat arrays of documents with a query id ``qid`` per
document; queries may have different sizes and their documents need not be
contiguous (they are grouped by ``qid``). Scores are "higher is better" for
both ``y_true`` (relevance grades) and ``y_score`` (model scores).

Conventions that differ between papers and tools (gain, discount, queries
without relevant documents, tied scores) are keyword parameters with
documented defaults. Equation numbers refer to Cao, Xu, Liu, Li, Huang, Hon,
*Adapting Ranking SVM to Document Retrieval*, SIGIR 2006.

This module imports nothing of the package's own but :mod:`cvxrank._groups`.

References
----------
.. [1] Y. Cao, J. Xu, T.-Y. Liu, H. Li, Y. Huang, H.-W. Hon. Adapting Ranking
   SVM to Document Retrieval. SIGIR 2006, equations (20)-(22).
.. [2] F. McSherry, M. Najork. Computing Information Retrieval Performance
   Measures Efficiently in the Presence of Tied Scores. ECIR 2008.
.. [3] T. Joachims. Optimizing Search Engines using Clickthrough Data.
   KDD 2002 (Kendall's tau for rankings).
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Mapping

import numpy as np
import pandas as pd

from cvxrank._groups import (
    group_counts,
    group_offsets,
    pair_row_chunks,
    positions_in_group,
    query_codes,
    within_query_pairs,
)
from cvxrank.exceptions import ValidationError

__all__ = [
    "ndcg_score",
    "mean_average_precision",
    "precision_at_k",
    "kendall_tau",
    "pairwise_accuracy",
]

_GAINS = ("exponential", "linear")
_DISCOUNTS = ("log2", "letor")
_EMPTY = ("zero", "one", "skip")
_SHORT = ("cut", "zero")
_NDCG_TIES = ("average", "stable", "optimistic", "pessimistic")
_ORDER_TIES = ("stable", "optimistic", "pessimistic")


# --------------------------------------------------------------------------- #
# validation
# --------------------------------------------------------------------------- #
def _check_option(name: str, value, valid: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in valid:
        choices = ", ".join(repr(v) for v in valid)
        raise ValidationError(f"unknown {name}={value!r}; valid options are {choices}")
    return value


def _as_vector(name: str, values, n: int | None = None, ref: str = "") -> np.ndarray:
    """1-D finite float64 array, non-empty, optionally of length ``n``."""
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{name} must be numeric: {exc}") from None
    if arr.ndim != 1:
        raise ValidationError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        raise ValidationError(f"{name} is empty; at least one document is needed")
    if n is not None and arr.size != n:
        raise ValidationError(
            f"{name} has {arr.size} values but {ref} has {n}; their lengths must match"
        )
    bad = ~np.isfinite(arr)
    if bad.any():
        raise ValidationError(
            f"{name} contains NaN or infinite values "
            f"(first at index {int(np.flatnonzero(bad)[0])})"
        )
    return arr


def _check_k(k, allow_none: bool) -> int | None:
    if k is None and allow_none:
        return None
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral) or k < 1:
        expected = "a positive integer or None" if allow_none else "a positive integer"
        raise ValidationError(f"k must be {expected}, got {k!r} ({type(k).__name__})")
    return int(k)


def _check_threshold(threshold) -> float:
    if isinstance(threshold, (bool, np.bool_)) or not isinstance(threshold, numbers.Real):
        raise ValidationError(f"threshold must be a real number, got {threshold!r}")
    if not np.isfinite(threshold):
        raise ValidationError(f"threshold must be finite, got {threshold!r}")
    return float(threshold)


class _Queries:
    """Query structure of ``qid``: ids, codes, counts and offsets."""

    def __init__(self, qid, n: int, ref: str = "y_true", name: str = "qid"):
        if qid is None:
            raise ValidationError(f"{name} is required: one query id per document")
        original, qid = qid, np.asarray(qid)
        if qid.ndim != 1:
            raise ValidationError(f"{name} must be 1-dimensional, got shape {qid.shape}")
        # np.asarray silently turns [1, "a"] into strings; refuse mixed ids instead
        if qid.dtype.kind in "OU" and pd.api.types.infer_dtype(
            original, skipna=True
        ) in ("mixed", "mixed-integer"):
            raise ValidationError(
                f"{name} values must be mutually comparable (all numbers or all strings), "
                f"got a mix of types"
            )
        if qid.size != n:
            raise ValidationError(
                f"{name} has {qid.size} values but {ref} has {n}; their lengths must match"
            )
        if pd.isna(qid).any():
            raise ValidationError(f"{name} contains missing values (NaN/None)")
        try:
            self.ids, self.codes = query_codes(qid)
        except TypeError as exc:
            raise ValidationError(
                f"{name} values must be mutually comparable (all numbers or all strings): {exc}"
            ) from None
        self.n_queries = self.ids.size
        self.counts = group_counts(self.codes, self.n_queries)
        self.offsets = group_offsets(self.counts)

    def series(self, values: np.ndarray, name: str) -> pd.Series:
        return pd.Series(values, index=pd.Index(self.ids, name="qid"), name=name)


def _rank_order(codes, y_score, y_true, ties: str) -> np.ndarray:
    """Permutation sorting by query, then score descending, then the tie rule.

    ``np.lexsort`` is stable, so remaining ties keep input order.
    """
    if ties == "optimistic":
        keys = (-y_true, -y_score, codes)
    elif ties == "pessimistic":
        keys = (y_true, -y_score, codes)
    else:  # "stable" (and "average", which then averages within tie groups)
        keys = (-y_score, codes)
    return np.lexsort(keys)


def _aggregate(queries: _Queries, values, defined, empty: str, per_query: bool, name: str):
    """Mean over queries (or a Series) with the ``empty`` convention."""
    if empty == "zero":
        values = np.where(defined, values, 0.0)
    elif empty == "one":
        values = np.where(defined, values, 1.0)
    else:
        values = np.where(defined, values, np.nan)
    if per_query:
        return queries.series(values, name)
    if not defined.any() and empty == "skip":
        warnings.warn(
            f"{name}: every query was skipped (no relevant document in any query, "
            "empty='skip'); returning nan",
            RuntimeWarning,
            stacklevel=3,
        )
        return float("nan")
    return float(np.nanmean(values)) if empty == "skip" else float(values.mean())


# --------------------------------------------------------------------------- #
# NDCG
# --------------------------------------------------------------------------- #
def _table_gain(y_true: np.ndarray, table: Mapping) -> np.ndarray:
    """Gains looked up in ``table`` ({grade: gain}); every grade must be in it."""
    try:
        keys = np.array([float(key) for key in table], dtype=np.float64)
        gains = np.array([float(table[key]) for key in table], dtype=np.float64)
    except (TypeError, ValueError):
        raise ValidationError(f"gain table must map numbers to numbers, got {dict(table)!r}") from None
    if keys.size == 0 or not (np.isfinite(keys).all() and np.isfinite(gains).all()):
        raise ValidationError(f"gain table must be non-empty and finite, got {dict(table)!r}")
    order = np.argsort(keys)
    keys, gains = keys[order], gains[order]
    at = np.minimum(np.searchsorted(keys, y_true), keys.size - 1)
    missing = keys[at] != y_true
    if missing.any():
        grades = ", ".join(f"{v:g}" for v in np.unique(y_true[missing])[:5])
        raise ValidationError(f"grades {grades} are not in the gain table (grades {', '.join(f'{v:g}' for v in keys)})")
    return gains[at]


def ndcg_score(
    y_true,
    y_score,
    qid,
    k=None,
    *,
    gain="exponential",
    discount="log2",
    empty="zero",
    ties="average",
    short="cut",
    per_query=False,
):
    r"""Mean normalised discounted cumulative gain at ``k`` over queries.

    For a query whose documents, ranked by decreasing ``y_score``, have grades
    :math:`r_{(1)}, r_{(2)}, \dots, r_{(n_q)}` (equation (20) of Cao et al. 2006):

    .. math::

        \mathrm{DCG@}k = \sum_{j=1}^{\min(k,\, n_q)} G(r_{(j)})\, D(j),
        \qquad
        \mathrm{NDCG@}k = \frac{\mathrm{DCG@}k}{\mathrm{IDCG@}k},

    where :math:`\mathrm{IDCG@}k` is the DCG@k of the query's own documents
    sorted by decreasing grade (so a perfect ranking scores 1), and

    .. math::

        G(r) = \begin{cases} 2^r - 1 & \text{gain="exponential"} \\
                             r & \text{gain="linear"} \\
                             \text{gain}[r] & \text{gain a table (mapping)} \end{cases}
        \qquad
        D(j) = \begin{cases} 1/\log_2(1 + j) & \text{discount="log2"} \\
                             1/\log_2(\max(j, 2)) & \text{discount="letor"} \end{cases}

    The result is the mean of the per-query values.

    Parameters
    ----------
    y_true : array-like of shape (n_documents,)
        Relevance grades, non-negative (higher is more relevant).
    y_score : array-like of shape (n_documents,)
        Model scores (higher ranks first).
    qid : array-like of shape (n_documents,)
        Query id of each document (ints, strings, ...); documents of a query
        need not be contiguous.
    k : int or None, default None
        Cut-off position, a positive integer; ``None`` uses all documents.
        A query with fewer than ``k`` documents: see ``short``.
    gain : {"exponential", "linear"} or mapping, default "exponential"
        :math:`G(r) = 2^r - 1` (equation (20), LETOR) or :math:`G(r) = r`
        (scikit-learn's ``ndcg_score``), or a table ``{grade: gain}`` as the
        LETOR/MSLR scripts hold (e.g. ``{0: 0, 1: 1, 2: 3}``); a grade missing
        from the table is an error (the scripts would silently give it gain 0).
    discount : {"log2", "letor"}, default "log2"
        :math:`1/\log_2(1 + j)` for 1-based position :math:`j`, or the LETOR
        evaluation script's :math:`1/\log_2(\max(j, 2))` (positions 1 and 2
        both undiscounted).
    empty : {"zero", "one", "skip"}, default "zero"
        Value of a query whose ideal DCG is 0 (no document with positive
        grade): "zero" scores it 0 and counts it in the mean (LETOR),
        "one" scores it 1, "skip" leaves it out of the mean (NaN in the
        per-query Series). If every query is skipped, the mean is ``nan``
        and a :class:`RuntimeWarning` is emitted.
    ties : {"average", "stable", "optimistic", "pessimistic"}, default "average"
        Order of documents of one query with equal scores. "average": every
        position of a tie group receives the group's mean gain (McSherry &
        Najork 2008), which is the expectation over all orders of the ties,
        independent of input order, and equals scikit-learn's ``ndcg_score``
        with ``ignore_ties=False``. "stable": input order. "optimistic":
        higher grade first. "pessimistic": lower grade first.
    short : {"cut", "zero"}, default "cut"
        Value of NDCG@k for a query with fewer than ``k`` documents. "cut":
        NDCG@:math:`n_q` over the documents the query has (in both DCG and
        ideal DCG), so a perfect ranking scores 1. "zero": 0, counted in the
        mean, as the LETOR 4.0 and MSLR evaluation scripts (Eval-Score-4.0.pl)
        score it; published LETOR baselines were computed this way. Has no
        effect when ``k`` is None.
    per_query : bool, default False
        If True, return the per-query values instead of their mean.

    Returns
    -------
    score : float or pandas.Series
        Mean NDCG@k over queries, in [0, 1]; with ``per_query=True`` a Series
        indexed by the distinct query ids (sorted, name "qid"), named
        ``"ndcg@k"`` (e.g. ``"ndcg@10"``) or ``"ndcg"`` when ``k`` is None.

    Raises
    ------
    ValueError
        On empty input, mismatched lengths, NaN/inf values, negative grades,
        an invalid ``k`` or an unknown option.

    See Also
    --------
    sklearn.metrics.ndcg_score : one query per row, linear gain.

    Examples
    --------
    Query 1 is ranked perfectly; query 2 puts its grade-1 document last:

    >>> y_true = [2, 1, 0, 0, 1]
    >>> y_score = [3.0, 2.0, 1.0, 0.5, 0.1]
    >>> qid = [1, 1, 1, 2, 2]
    >>> float(round(ndcg_score(y_true, y_score, qid), 4))  # (1 + 1/log2(3)) / 2
    0.8155
    >>> ndcg_score(y_true, y_score, qid, k=1, per_query=True)
    qid
    1    1.0
    2    0.0
    Name: ndcg@1, dtype: float64
    """
    if not isinstance(gain, Mapping):
        _check_option("gain", gain, _GAINS)
    _check_option("discount", discount, _DISCOUNTS)
    _check_option("short", short, _SHORT)
    _check_option("empty", empty, _EMPTY)
    _check_option("ties", ties, _NDCG_TIES)
    y_true = _as_vector("y_true", y_true)
    n = y_true.size
    y_score = _as_vector("y_score", y_score, n, "y_true")
    k = _check_k(k, allow_none=True)
    if (y_true < 0).any():
        raise ValidationError(
            "y_true contains negative grades; NDCG needs non-negative relevance grades"
        )
    queries = _Queries(qid, n)
    codes = queries.codes

    if isinstance(gain, Mapping):
        g = _table_gain(y_true, gain)
    elif gain == "exponential":
        with np.errstate(over="ignore"):
            g = np.exp2(y_true) - 1.0
        if not np.isfinite(g).all():
            raise ValidationError(
                "y_true is too large for gain='exponential' (2**y_true overflows); "
                "use gain='linear' or smaller grades"
            )
    else:
        g = y_true

    order = _rank_order(codes, y_score, y_true, ties)
    sorted_codes = codes[order]
    position = positions_in_group(sorted_codes, queries.offsets) + 1  # 1-based j
    if discount == "log2":
        d = 1.0 / np.log2(1.0 + position)
    else:
        d = 1.0 / np.log2(np.maximum(position, 2))
    if k is not None:
        d[position > k] = 0.0

    g_ranked = g[order]
    if ties == "average":
        s = y_score[order]
        new_group = np.ones(n, dtype=bool)
        new_group[1:] = (sorted_codes[1:] != sorted_codes[:-1]) | (s[1:] != s[:-1])
        tie_group = np.cumsum(new_group) - 1
        mean_gain = np.bincount(tie_group, weights=g_ranked) / np.bincount(tie_group)
        g_ranked = mean_gain[tie_group]
    dcg = np.bincount(sorted_codes, weights=g_ranked * d, minlength=queries.n_queries)

    # Ideal order: by decreasing grade; the sorted query layout, hence d, is the same.
    ideal = np.lexsort((-y_true, codes))
    idcg = np.bincount(codes[ideal], weights=g[ideal] * d, minlength=queries.n_queries)

    defined = idcg > 0
    values = np.divide(dcg, idcg, out=np.zeros_like(dcg), where=defined)
    if short == "zero" and k is not None:
        too_short = queries.counts < k
        values[too_short] = 0.0
        defined = defined | too_short  # scored 0 and counted, whatever ``empty`` says
    name = "ndcg" if k is None else f"ndcg@{k}"
    return _aggregate(queries, values, defined, empty, per_query, name)


# --------------------------------------------------------------------------- #
# MAP and P@k
# --------------------------------------------------------------------------- #
def _ranked_relevance(y_true, y_score, qid, threshold, ties):
    y_true = _as_vector("y_true", y_true)
    n = y_true.size
    y_score = _as_vector("y_score", y_score, n, "y_true")
    threshold = _check_threshold(threshold)
    queries = _Queries(qid, n)
    order = _rank_order(queries.codes, y_score, y_true, ties)
    sorted_codes = queries.codes[order]
    position = positions_in_group(sorted_codes, queries.offsets) + 1
    relevant = (y_true[order] >= threshold).astype(np.float64)
    return queries, sorted_codes, position, relevant


def mean_average_precision(
    y_true, y_score, qid, *, threshold=1, empty="zero", ties="stable", per_query=False
):
    r"""Mean average precision over queries (equations (21)-(22) of Cao et al. 2006).

    A document is relevant ("positive") when its grade is at least
    ``threshold``. For a query with documents ranked by decreasing score,

    .. math::

        \mathrm{AvgP} = \frac{\sum_{j=1}^{n_q} P(j)\, \mathrm{pos}(j)}
                             {\#\{\text{relevant documents}\}},
        \qquad
        P(j) = \frac{\#\{\text{relevant documents in the top } j\}}{j},

    where :math:`\mathrm{pos}(j) = 1` if the document at rank :math:`j` is
    relevant. MAP is the mean of AvgP over queries; all documents of a query
    count as retrieved.

    Parameters
    ----------
    y_true : array-like of shape (n_documents,)
        Relevance grades.
    y_score : array-like of shape (n_documents,)
        Model scores (higher ranks first).
    qid : array-like of shape (n_documents,)
        Query id of each document; documents of a query need not be contiguous.
    threshold : float, default 1
        Grades ``>= threshold`` are relevant (OHSUMED: only "definitely
        relevant", i.e. 2; web data: the top three grades).
    empty : {"zero", "one", "skip"}, default "zero"
        Value of a query without relevant document: 0 (counted in the mean),
        1, or left out of the mean (NaN per query). If every query is
        skipped the mean is ``nan`` with a :class:`RuntimeWarning`.
    ties : {"stable", "optimistic", "pessimistic"}, default "stable"
        Order of documents with equal scores: input order, higher grade
        first, or lower grade first.
    per_query : bool, default False
        If True, return per-query AvgP as a Series indexed by query id
        (name "average_precision").

    Returns
    -------
    score : float or pandas.Series
        MAP in [0, 1], or the per-query values.

    Raises
    ------
    ValueError
        On empty input, mismatched lengths, NaN/inf values, a non-finite
        threshold or an unknown option.

    Examples
    --------
    Ranked relevance (1, 0, 1): AvgP = (1/1 + 2/3) / 2 = 5/6.

    >>> float(round(mean_average_precision([2, 0, 1], [0.9, 0.8, 0.7], [5, 5, 5]), 4))
    0.8333
    """
    _check_option("empty", empty, _EMPTY)
    _check_option("ties", ties, _ORDER_TIES)
    queries, sorted_codes, position, relevant = _ranked_relevance(
        y_true, y_score, qid, threshold, ties
    )
    cum = np.cumsum(relevant)
    before_query = np.concatenate(([0.0], cum))[queries.offsets[:-1]]
    hits = cum - np.repeat(before_query, queries.counts)  # relevant in top j of the query
    numerator = np.bincount(
        sorted_codes, weights=relevant * hits / position, minlength=queries.n_queries
    )
    n_relevant = np.bincount(sorted_codes, weights=relevant, minlength=queries.n_queries)
    defined = n_relevant > 0
    values = np.divide(numerator, n_relevant, out=np.zeros_like(numerator), where=defined)
    return _aggregate(queries, values, defined, empty, per_query, "average_precision")


def precision_at_k(y_true, y_score, qid, k, *, threshold=1, ties="stable", per_query=False):
    r"""Mean precision at ``k`` over queries.

    .. math::

        P@k = \frac{\#\{\text{relevant documents in the top } k\}}{k}

    (equation (22) of Cao et al. 2006 at :math:`j = k`). A query with fewer
    than ``k`` documents is still divided by ``k`` (the TREC convention: the
    missing positions count as non-relevant), so it cannot reach 1. A query
    without relevant documents scores 0 and counts in the mean.

    Parameters
    ----------
    y_true : array-like of shape (n_documents,)
        Relevance grades.
    y_score : array-like of shape (n_documents,)
        Model scores (higher ranks first).
    qid : array-like of shape (n_documents,)
        Query id of each document; documents of a query need not be contiguous.
    k : int
        Cut-off, a positive integer (required).
    threshold : float, default 1
        Grades ``>= threshold`` are relevant.
    ties : {"stable", "optimistic", "pessimistic"}, default "stable"
        Order of documents with equal scores: input order, higher grade
        first, or lower grade first.
    per_query : bool, default False
        If True, return a Series indexed by query id (name ``"precision@k"``).

    Returns
    -------
    score : float or pandas.Series
        Mean P@k in [0, 1], or the per-query values.

    Raises
    ------
    ValueError
        On empty input, mismatched lengths, NaN/inf values, an invalid ``k``
        or ``threshold``, or an unknown option.

    Examples
    --------
    Query "a" has 1 relevant document in its top 2; query "b" has only one
    (relevant) document, which still counts as 1/2:

    >>> precision_at_k([1, 0, 3, 1], [0.2, 0.9, 0.5, 0.1], ["a", "a", "a", "b"], k=2)
    0.5
    """
    _check_option("ties", ties, _ORDER_TIES)
    k = _check_k(k, allow_none=False)
    queries, sorted_codes, position, relevant = _ranked_relevance(
        y_true, y_score, qid, threshold, ties
    )
    hits = np.bincount(
        sorted_codes, weights=relevant * (position <= k), minlength=queries.n_queries
    )
    values = hits / k
    defined = np.ones(queries.n_queries, dtype=bool)
    return _aggregate(queries, values, defined, "zero", per_query, f"precision@{k}")


# --------------------------------------------------------------------------- #
# pairwise metrics
# --------------------------------------------------------------------------- #
def _pair_signs(a, b, queries: _Queries):
    """Yield ``(query code, sign(a_i - a_j), sign(b_i - b_j))`` over within-query pairs.

    Pairs are enumerated in chunks of bounded size (vectorised inside a chunk).
    """
    order = np.argsort(queries.codes, kind="stable")
    sorted_codes = queries.codes[order]
    a, b = a[order], b[order]
    for start, stop in pair_row_chunks(queries.counts):
        i, j = within_query_pairs(queries.counts, start, stop)
        yield sorted_codes[i], np.sign(a[i] - a[j]), np.sign(b[i] - b[j])


def kendall_tau(x, y, qid=None):
    r"""Kendall's tau between two rankings (score vectors), optionally per query.

    Over all pairs of documents (within a query if ``qid`` is given),

    .. math::

        \tau = \frac{P - Q}{P + Q} = 1 - \frac{2Q}{P + Q},

    where :math:`P` is the number of concordant pairs (ordered the same way
    by ``x`` and ``y``) and :math:`Q` the number of discordant pairs (as in
    Joachims 2002). Pairs tied in ``x`` or in ``y`` count as neither. Without
    ties this equals scipy's tau-b (``scipy.stats.kendalltau``); with ties it
    differs from tau-b, whose denominator counts the pairs tied in only one
    of the vectors.

    Both inputs must be oriented the same way (e.g. both scores with higher
    meaning better); rank positions (1 = best) against scores flip the sign.

    Parameters
    ----------
    x, y : array-like of shape (n_documents,)
        Scores or ranks of the same documents.
    qid : array-like of shape (n_documents,), optional
        Query ids. If given, only pairs within a query are compared and the
        result is the mean of the per-query taus over the queries with at
        least one pair untied in both ``x`` and ``y`` (the empirical
        :math:`\frac1n \sum_i \tau(r_{f(q_i)}, r_i^*)` of Joachims 2002).
        Default None: all documents form one query.

    Returns
    -------
    tau : float
        In [-1, 1]; ``nan`` (no warning) if no pair is untied in both vectors.

    Raises
    ------
    ValueError
        On empty input, mismatched lengths or NaN/inf values.

    Examples
    --------
    Pairs (0,1), (0,2) concordant, (1,2) discordant: (2 - 1) / 3.

    >>> float(round(kendall_tau([1, 2, 3], [1, 3, 2]), 4))
    0.3333
    """
    x = _as_vector("x", x)
    n = x.size
    y = _as_vector("y", y, n, "x")
    if qid is None:
        qid = np.zeros(n, dtype=np.int64)
    queries = _Queries(qid, n, ref="x")
    concordant = np.zeros(queries.n_queries)
    discordant = np.zeros(queries.n_queries)
    for q, sx, sy in _pair_signs(x, y, queries):
        product = sx * sy
        concordant += np.bincount(q, weights=product > 0, minlength=queries.n_queries)
        discordant += np.bincount(q, weights=product < 0, minlength=queries.n_queries)
    untied = concordant + discordant
    defined = untied > 0
    if not defined.any():
        return float("nan")
    return float(np.mean((concordant[defined] - discordant[defined]) / untied[defined]))


def pairwise_accuracy(y_true, y_score, qid):
    r"""Fraction of within-query pairs with different grades that the scores order correctly.

    Over the pairs :math:`(i, j)` of one query with :math:`y_i > y_j`, pooled
    over all queries,

    .. math::

        \mathrm{acc} = \frac{\sum_{y_i > y_j} \left( [s_i > s_j]
                        + \tfrac12 [s_i = s_j] \right)}{\#\{(i, j) : y_i > y_j\}},

    so a tie in scores counts as half a correct pair (the expectation under a
    random order of the tie). These are the pairs of the pairwise transform;
    :math:`1 - \mathrm{acc}` is the (unweighted) fraction of misordered
    pairs that Ranking SVM's hinge loss bounds.

    Parameters
    ----------
    y_true : array-like of shape (n_documents,)
        Relevance grades.
    y_score : array-like of shape (n_documents,)
        Model scores.
    qid : array-like of shape (n_documents,)
        Query id of each document; documents of a query need not be contiguous.

    Returns
    -------
    accuracy : float
        In [0, 1]; ``nan`` (no warning) if no query has two different grades.

    Raises
    ------
    ValueError
        On empty input, mismatched lengths or NaN/inf values.

    Examples
    --------
    Pairs with different grades: (a, b) correct, (a, c) correct,
    (b, c) tied in score (1/2): (1 + 1 + 0.5) / 3.

    >>> float(round(pairwise_accuracy([2, 1, 0], [0.9, 0.5, 0.5], [1, 1, 1]), 4))
    0.8333
    """
    y_true = _as_vector("y_true", y_true)
    n = y_true.size
    y_score = _as_vector("y_score", y_score, n, "y_true")
    queries = _Queries(qid, n)
    n_pairs = 0
    correct = 0.0
    for _, s_true, s_score in _pair_signs(y_true, y_score, queries):
        graded = s_true != 0
        n_pairs += int(graded.sum())
        agree = s_true[graded] * s_score[graded]
        correct += float((agree > 0).sum()) + 0.5 * float((agree == 0).sum())
    if n_pairs == 0:
        return float("nan")
    return correct / n_pairs
