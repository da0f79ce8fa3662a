"""A click simulator: the position-based model of examination on a production ranking.

The simulation of Joachims, Swaminathan & Schnabel (WSDM 2017, "Unbiased Learning-to-Rank with
Biased Feedback", their synthetic experiments on graded data): each session is a query drawn
at random; a production ranker orders its documents and the top ``top_k`` are shown; position
``k`` is examined with probability

.. math:: p_k = \\left(\\frac{1}{k}\\right)^{\\eta} ,

and an examined document is clicked with probability 1 when it is relevant and ``noise``
(their ``ε₋ = 0.1``) when it is not, so ``P(click | k, d) = p_k · (1[d relevant] + ε₋ 1[d not
relevant])``: the position-based click model. Relevance is binarised from the grades
(:func:`relevance_threshold`).

With ``swap=True`` every session is a *swap intervention* (Joachims et al. 2017; Wang et al.,
SIGIR 2016): the result at rank 1 is swapped with the result at rank ``k``, ``k`` drawn
uniformly from ``1..top_k`` (``k = 1``: no swap), the log that
:func:`~cvxrank.clicks.propensity.estimate_propensities_swap` reads.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from cvxrank._float64 import matvec
from cvxrank._validation import POSITIVE_INT, Interval, check
from cvxrank.clicks.log import IMPRESSION_BYTES, ClickLog
from cvxrank.clicks.propensity import position_propensity
from cvxrank.data import RankingData
from cvxrank.exceptions import ValidationError

__all__ = ["make_clicks", "production_ranking", "production_scores", "relevance_threshold", "relevant_documents"]


def relevance_threshold(grades) -> float:
    """The default grade from which a document counts as relevant: the top half of the distinct grades.

    With the distinct grades ``g_0 < g_1 < ... < g_{q-1}``, relevant means ``grade >= g_{⌊q/2⌋}``:
    the top two of three grades (OHSUMED's possibly and definitely relevant), the top three of
    five (the web collections' relevant grades for MAP, SIGIR 2006), the top one of two.

    Examples
    --------
    >>> relevance_threshold([0, 1, 2]), relevance_threshold([0, 1, 2, 3, 4]), relevance_threshold([0, 1])
    (1, 2, 1)
    """
    distinct = np.unique(np.asarray(grades))
    if distinct.size < 2:
        raise ValidationError(f"relevance needs at least two distinct grades, got {distinct.tolist()}")
    value = distinct[distinct.size // 2]
    return value.item() if hasattr(value, "item") else value


def relevant_documents(data: RankingData, threshold=None) -> np.ndarray:
    """Boolean per document: ``grade >= threshold`` (default :func:`relevance_threshold` of the data's grades)."""
    if not isinstance(data, RankingData):
        raise ValidationError(f"relevant_documents takes RankingData, got {type(data).__name__}")
    if threshold is None:
        threshold = relevance_threshold(data.y)
    else:
        threshold = check("threshold", threshold, Interval(-np.inf, np.inf, closed="neither"))
    return np.asarray(data.y >= threshold)


def production_scores(data: RankingData, ranker=None) -> np.ndarray:
    """Scores of the production ranker on every document of ``data``.

    Parameters
    ----------
    data : RankingData
    ranker : None, array-like of shape (n_features,) or callable
        ``None``: the default weak ranker, the first feature (``scores = X[:, 0]``), which knows
        nothing of the grades; a weight vector ``w`` (``scores = X w``, e.g. a
        :class:`~cvxrank.solution.SolveResult`'s ``w``); or a function ``X -> scores``.

    Returns
    -------
    ndarray of float64, shape (n_documents,)
    """
    X = data.X
    if ranker is None:
        col = X[:, [0]]
        scores = (col.toarray() if sp.issparse(col) else np.asarray(col)).ravel().astype(np.float64)
    elif callable(ranker):
        try:
            scores = np.asarray(ranker(X), dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValidationError(f"the ranker's scores must be numbers: {exc}") from None
        scores = scores.ravel() if scores.ndim == 2 and 1 in scores.shape else scores
        if scores.shape != (data.n_documents,):
            raise ValidationError(f"the ranker must return one score per document ({data.n_documents}), "
                                  f"got shape {scores.shape}")
    else:
        try:
            w = np.asarray(ranker, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValidationError("ranker must be None, a weight vector or a function X -> scores") from None
        if w.shape != (data.n_features,):
            raise ValidationError(f"the ranker's weight vector must have one entry per feature ({data.n_features}), "
                                  f"got shape {w.shape}")
        scores = matvec(X, w)
    if not np.all(np.isfinite(scores)):
        raise ValidationError("the production ranker gives a NaN or infinite score")
    return scores


def production_ranking(data: RankingData, ranker=None) -> tuple[np.ndarray, np.ndarray]:
    """The production ranking of every query: ``(order, start)``.

    Query ``j`` (in the order of ``data.query_ids``) ranks the rows
    ``order[start[j]:start[j + 1]]``, best first: scores descending (:func:`production_scores`),
    ties by row.
    """
    scores = production_scores(data, ranker)
    order = np.lexsort((np.arange(data.n_documents), -scores, data.query_index))
    start = np.append(0, np.cumsum(np.bincount(data.query_index, minlength=data.n_queries)))
    return order, start


def make_clicks(data: RankingData, *, ranker=None, eta: float = 1.0, noise: float = 0.1, n_sessions: int = 1000,
                top_k: int = 10, swap: bool = False, threshold=None, random_state=None) -> ClickLog:
    """Simulate a click log on ``data`` under the position-based model.

    Each session draws a query uniformly at random, shows the top ``top_k`` documents of the
    production ranking (fewer when the query has fewer), examines position ``k`` with probability
    ``p_k = (1/k)^η`` (:func:`~cvxrank.clicks.propensity.position_propensity`) and clicks an
    examined document with probability 1 when it is relevant (``grade >= threshold``) and
    ``noise`` when it is not.

    Parameters
    ----------
    data : RankingData
        The documents with their grades.
    ranker : None, array-like of shape (n_features,) or callable, optional
        The production ranker (:func:`production_scores`); default the first feature, a weak
        ranker.
    eta : float, default 1.0
        ``η >= 0`` of the examination model (0: every position examined).
    noise : float in [0, 1], default 0.1
        Click probability of an examined non-relevant document (Joachims et al.'s ``ε₋``).
    n_sessions : int, default 1000
    top_k : int, default 10
        Documents shown per session.
    swap : bool, default False
        Swap interventions: the result at rank 1 is swapped with the result at rank ``k``, ``k``
        uniform in ``1..top_k``. Only queries of at least ``top_k`` documents are drawn, so that
        every ``k`` sees the same distribution of queries (and of top results).
    threshold : number, optional
        Grade from which a document is relevant; default :func:`relevance_threshold`.
    random_state : int, numpy Generator or None

    Returns
    -------
    ClickLog
        Sessions ``0 .. n_sessions-1`` in order, each with its positions ``1, 2, ...`` in order; the
        true examination probabilities ``p_k`` recorded as propensities.

    Examples
    --------
    >>> from cvxrank.datasets import make_ranking
    >>> data = make_ranking(n_queries=5, docs_per_query=12, n_features=3, random_state=0)
    >>> log = make_clicks(data, n_sessions=50, top_k=5, random_state=0)
    >>> log.n_sessions, log.n_impressions, log.propensity[:3].tolist()
    (50, 250, [1.0, 0.5, 0.3333333333333333])
    """
    if not isinstance(data, RankingData):
        raise ValidationError(f"make_clicks takes RankingData, got {type(data).__name__}")
    eta = check("eta", eta, Interval(0, np.inf, closed="left"))
    noise = check("noise", noise, Interval(0, 1))
    n_sessions = check("n_sessions", n_sessions, POSITIVE_INT)
    top_k = check("top_k", top_k, POSITIVE_INT)
    relevant = relevant_documents(data, threshold)
    order, start = production_ranking(data, ranker)
    sizes = np.diff(start)
    eligible = np.flatnonzero(sizes >= top_k) if swap else np.arange(data.n_queries)
    if eligible.size == 0:
        raise ValidationError(f"swap interventions need queries of at least top_k={top_k} documents; the longest "
                              f"query has {int(sizes.max())}")
    from cvxrank._memory import check_memory

    check_memory(IMPRESSION_BYTES * n_sessions * float(min(top_k, int(sizes.max()))),
                 f"simulating {n_sessions:,} sessions of up to {top_k} results", "simulate fewer sessions")
    rng = np.random.default_rng(random_state)
    query = eligible[rng.integers(eligible.size, size=n_sessions)]
    shown = np.minimum(sizes[query], top_k)
    total = int(shown.sum())
    session = np.repeat(np.arange(n_sessions, dtype=np.int64), shown)
    first = np.repeat(np.cumsum(shown) - shown, shown)
    position = np.arange(total, dtype=np.int64) - first + 1
    rank = position.copy()  # the production rank of the result shown at each position
    if swap:
        k = np.repeat(rng.integers(1, top_k + 1, size=n_sessions), shown)
        rank = np.where(position == 1, k, np.where(position == k, 1, position))
    document = order[np.repeat(start[query], shown) + rank - 1]
    p = position_propensity(position, eta)
    examined = rng.random(total) < p
    noisy = rng.random(total) < noise
    click = examined & (relevant[document] | noisy)
    return ClickLog(session, data.qid[document], document, position, click.astype(np.int64), p, documents=data)
