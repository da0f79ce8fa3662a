"""The IPS estimate of a ranking's risk from clicks, and its full-information value.

Joachims, Swaminathan & Schnabel (WSDM 2017) take as the risk of a ranking ``s`` (scores) on a
session the sum of the ranks of its relevant documents,

.. math:: \\Delta(s) = \\sum_{d \\text{ relevant}} \\operatorname{rank}(d \\mid s),

averaged over sessions. Clicks reveal relevance only where a position was examined, with
probability ``p_k``; weighting each click by ``1/p`` gives the inverse-propensity-scored (IPS)
estimate

.. math:: \\hat\\Delta_{IPS}(s) = \\sum_{d \\text{ clicked}} \\frac{\\operatorname{rank}(d \\mid s)}{p(\\operatorname{pos}(d))},

unbiased because a relevant document at position ``k`` is clicked with probability ``p_k``:
``E[1[c_d = 1] / p_k] = 1``. The naive estimate (every click weighing 1) estimates
``Σ_d p_{pos(d)} rank(d | s)`` instead, which rewards keeping the production ranking's order.

Ranks are taken among the documents shown in the session (the candidate set of the session;
unshown documents have propensity 0 and no click can reveal them). Ties in ``s`` are broken by
the position shown (the higher shown first). Each function returns the mean over the sessions
of the log (sessions without a click count, with 0 for the click-based estimates).
"""

from __future__ import annotations

import numpy as np

from cvxrank._validation import Interval, check
from cvxrank.clicks.log import ClickLog
from cvxrank.clicks.propensity import propensities_of
from cvxrank.exceptions import ValidationError

__all__ = ["ips_risk", "naive_risk", "session_ranks", "true_risk"]


def _scores(log: ClickLog, scores) -> np.ndarray:
    if not isinstance(log, ClickLog):
        raise ValidationError(f"a risk needs a ClickLog, got {type(log).__name__}")
    try:
        s = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValidationError("scores must be numbers, one per document of log.documents") from None
    if s.shape != (log.documents.n_documents,):
        raise ValidationError(f"scores must have one value per document ({log.documents.n_documents}), got shape "
                              f"{s.shape}; for a weight vector w pass X w")
    if not np.all(np.isfinite(s)):
        raise ValidationError("scores has a NaN or infinite value")
    return s


def session_ranks(log: ClickLog, scores) -> np.ndarray:
    """``rank(d | s)`` of every impression among its session's shown documents (1 = best).

    Scores descending; ties by the position shown (the higher first).

    Examples
    --------
    >>> import numpy as np
    >>> from cvxrank.data import RankingData
    >>> docs = RankingData(np.eye(3), [1, 0, 0], qid=[1, 1, 1])
    >>> log = ClickLog([1, 1, 1], [1, 1, 1], [0, 1, 2], [1, 2, 3], [0, 0, 1], documents=docs)
    >>> session_ranks(log, [0.0, 0.0, 5.0]).tolist()
    [2, 3, 1]
    """
    s = _scores(log, scores)[log.document]
    order = np.lexsort((log.position, -s, log.session_index))
    ranks = np.empty(log.n_impressions, dtype=np.int64)
    ranks[order] = np.arange(log.n_impressions) - log.session_start[log.session_index[order]] + 1
    return ranks


def _per_session_mean(log: ClickLog, values: np.ndarray) -> float:
    return float(np.bincount(log.session_index, weights=values, minlength=log.n_sessions).sum() / log.n_sessions)


def ips_risk(log: ClickLog, scores, *, propensities=None, clip: float | None = None) -> float:
    """The IPS estimate ``mean over sessions of Σ_{clicked d} rank(d | s) / p(pos(d))``.

    Parameters
    ----------
    log : ClickLog
    scores : array-like of shape (n_documents,)
        Scores of the ranking to evaluate on ``log.documents`` (``X w`` for a linear model).
    propensities : None, callable or array-like, optional
        As for :func:`~cvxrank.clicks.pairs.click_pairs` (default the log's column).
    clip : float >= 1, optional
        Weights ``min(1/p, clip)``: biased, lower variance.

    Returns
    -------
    float
    """
    ranks = session_ranks(log, scores)
    clicked = np.flatnonzero(log.click == 1)
    weight = 1.0 / propensities_of(log, clicked, propensities)
    if clip is not None:
        weight = np.minimum(weight, check("clip", clip, Interval(1, np.inf, closed="left")))
    values = np.zeros(log.n_impressions)
    values[clicked] = ranks[clicked] * weight
    return _per_session_mean(log, values)


def naive_risk(log: ClickLog, scores) -> float:
    """The naive estimate ``mean over sessions of Σ_{clicked d} rank(d | s)``: clicks taken as relevance
    judgements, biased towards the positions users examine."""
    ranks = session_ranks(log, scores)
    return _per_session_mean(log, np.where(log.click == 1, ranks, 0).astype(np.float64))


def true_risk(log: ClickLog, scores, *, threshold=None, noise: float = 0.0) -> float:
    """The full-information risk from the grades: ``mean over sessions of Σ_{shown d} rank(d | s) r(d)``.

    ``r(d) = 1`` for a relevant document (``grade >= threshold``, default
    :func:`~cvxrank.clicks.simulate.relevance_threshold`) and ``noise`` for the others: with
    ``noise = 0`` it is ``Δ(s)``, the sum of the ranks of the relevant documents; with the
    simulator's ``noise`` it is the risk that clicks measure (an examined non-relevant document
    is clicked with probability ``noise``), which :func:`ips_risk` estimates without bias.

    Examples
    --------
    >>> import numpy as np
    >>> from cvxrank.data import RankingData
    >>> docs = RankingData(np.eye(3), [1, 0, 0], qid=[1, 1, 1])
    >>> log = ClickLog([1, 1, 1], [1, 1, 1], [0, 1, 2], [1, 2, 3], [0, 0, 1], documents=docs)
    >>> true_risk(log, [0.0, 0.0, 5.0]), true_risk(log, [0.0, 0.0, 5.0], noise=0.1)
    (2.0, 2.4)
    """
    from cvxrank.clicks.simulate import relevant_documents

    noise = check("noise", noise, Interval(0, 1))
    ranks = session_ranks(log, scores)
    r = np.where(relevant_documents(log.documents, threshold)[log.document], 1.0, noise)
    return _per_session_mean(log, ranks * r)
