"""Preference pairs and their weights from clicks: the input of a cost-sensitive Ranking SVM.

Two rules (:data:`RULES`):

* ``"skip_above"`` (Joachims, KDD 2002, "Optimizing search engines using clickthrough data",
  the "click > skip above" strategy): a clicked document is preferred to every document *not
  clicked* that was shown above it in the same session; every pair weighs 1.
* ``"propensity"`` (Joachims, Swaminathan & Schnabel, WSDM 2017, Propensity SVM-Rank): a clicked
  document ``d`` is preferred to every other document shown in its session, and the pair weighs
  ``1/p(pos(d))``, the inverse propensity of the position ``d`` was clicked at; with ``clip``,
  ``min(1/p, clip)``.

Why the second is unbiased: with ``rank(d | w) = 1 + Σ_{y ≠ d} 1[<w, x_y> > <w, x_d>]`` and the
hinge bound ``1[s_y > s_d] <= [1 - (s_d - s_y)]_+``, the weighted pairwise hinge loss bounds the
propensity-weighted sum of the clicked documents' ranks (minus a constant), whose expectation
over the clicks is the sum of the relevant documents' ranks (:mod:`cvxrank.clicks.risk`).

In cvxrank's terms these are explicit preference pairs (:func:`cvxrank.pairs.preference_pairs`)
with per-pair weights ``c_i``: Theorem 1 (SIGIR 2006) gives the QP (14) the costs
``C_i = c_i / (2λ) = (1/p_i) / (2λ)``.
"""

from __future__ import annotations

import numpy as np

from cvxrank._memory import check_pairs
from cvxrank._validation import Interval, Options, check
from cvxrank.clicks.log import ClickLog
from cvxrank.clicks.propensity import propensities_of
from cvxrank.costs import DEFAULT_LAM
from cvxrank.exceptions import ValidationError
from cvxrank.pairs import PairSet, preference_pairs

__all__ = ["RULES", "click_pairs", "click_problem"]

#: The pair rules of :func:`click_pairs`.
RULES = ("skip_above", "propensity")


def _expand(t: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every ``(t_j, b)`` with ``lo_j <= b < hi_j``, in the order of ``j`` then ``b``."""
    count = hi - lo
    total = int(count.sum())
    a = np.repeat(t, count)
    b = np.repeat(lo, count) + np.arange(total) - np.repeat(np.cumsum(count) - count, count)
    return a, b


def click_pairs(log: ClickLog, rule: str, *, propensities=None, clip: float | None = None,
                merge: bool = True) -> tuple[PairSet, np.ndarray]:
    """Preference pairs and their weights from a click log.

    Parameters
    ----------
    log : ClickLog
    rule : {"skip_above", "propensity"}
        ``"skip_above"``: clicked ``>`` every unclicked document shown above it (Joachims 2002),
        weight 1. ``"propensity"``: clicked ``d`` ``>`` every other document shown in its session
        (clicked or not), weight ``1/p(pos(d))`` (Joachims et al. 2017). Required: there is no
        default rule.
    propensities : None, callable or array-like, optional
        Only with ``rule="propensity"``: the propensities (see
        :func:`~cvxrank.clicks.propensity.propensities_of`); default the log's own column, which
        must then be known for every clicked impression.
    clip : float >= 1, optional
        Only with ``rule="propensity"``: weights ``min(1/p, clip)`` (see the Notes).
    merge : bool, default True
        Merge the pairs with the same (better, worse) documents from different sessions into one
        pair whose weight is the sum of theirs. The weighted hinge loss (9)/SIGIR is then the same
        function of ``w`` (identical pairs have identical difference vectors ``d_i``), so the
        minimiser and the objective values are the same, with far fewer pairs on a large log.

    Returns
    -------
    pairs : PairSet
        Explicit preference pairs on ``log.documents`` (type ``(1, 0)``). **Order**: merged, by
        query (the order of ``log.documents.query_ids``), then better row, then worse row;
        unmerged, by session (log order), then the clicked document's position, then the other
        document's position.
    weights : ndarray of float64, shape (n_pairs,)
        Per-pair weights ``c_i`` in that order, for
        ``RankingProblem(pairs, weights=weights, lam=...)`` (:func:`click_problem`).

    Raises
    ------
    ValidationError
        For an unknown rule, ``propensities`` or ``clip`` with ``"skip_above"``, a clicked
        impression without a propensity (naming its line), or a log that gives no pair.
    cvxrank.MemoryBudgetError
        When the pairs, counted before any is formed, would exceed the memory budget.

    Notes
    -----
    Clipping (Joachims et al. 2017, following the clipped importance weights of counterfactual
    estimation): ``min(1/p, clip)`` bounds the weight of a click at a rarely examined position.
    The clipped estimator is biased (it under-weighs clicks at positions with ``p < 1/clip``,
    towards the naive estimator's preference for the top) but its variance is bounded by
    ``clip²`` instead of ``max 1/p²``: a small ``clip`` trades bias for variance, ``clip=None``
    (or ``clip >= max 1/p``) is the unbiased estimator.

    Examples
    --------
    >>> import numpy as np
    >>> from cvxrank.data import RankingData
    >>> from cvxrank.clicks.log import ClickLog
    >>> docs = RankingData(np.eye(3), [0, 0, 1], qid=[1, 1, 1])
    >>> log = ClickLog([1, 1, 1], [1, 1, 1], [0, 1, 2], [1, 2, 3], [0, 0, 1], [1.0, 0.5, 0.25], documents=docs)
    >>> pairs, weights = click_pairs(log, "skip_above")
    >>> pairs.better.tolist(), pairs.worse.tolist(), weights.tolist()
    ([2, 2], [0, 1], [1.0, 1.0])
    >>> pairs, weights = click_pairs(log, "propensity", clip=3.0)
    >>> pairs.better.tolist(), pairs.worse.tolist(), weights.tolist()
    ([2, 2], [0, 1], [3.0, 3.0])
    """
    if not isinstance(log, ClickLog):
        raise ValidationError(f"click_pairs takes a ClickLog, got {type(log).__name__}")
    check("rule", rule, Options(RULES))
    if rule == "skip_above" and (propensities is not None or clip is not None):
        raise ValidationError("rule='skip_above' weighs every pair 1; propensities= and clip= apply to "
                              "rule='propensity'")
    if clip is not None:
        clip = check("clip", clip, Interval(1, np.inf, closed="left", why="a weight 1/p is at least 1"))
    if not isinstance(merge, (bool, np.bool_)):
        raise ValidationError(f"merge must be True or False, got {merge!r}")
    # impressions sorted by session (contiguous: the blocks keep their ranges), then by position
    order = np.lexsort((log.position, log.session_index))
    sess = log.session_index[order]
    lo = log.session_start[sess]
    hi = log.session_start[sess + 1]
    clicked = np.flatnonzero(log.click[order] == 1)
    if rule == "skip_above":
        count = clicked - lo[clicked]
    else:
        count = hi[clicked] - lo[clicked] - 1
    check_pairs(int(count.sum()), log.documents.n_documents)  # counted before any pair is formed
    if rule == "skip_above":
        a, b = _expand(clicked, lo[clicked], clicked)
        keep = log.click[order[b]] == 0
    else:
        a, b = _expand(clicked, lo[clicked], hi[clicked])
        keep = a != b
    a, b = order[a[keep]], order[b[keep]]
    if a.size == 0:
        what = ("a click below an unclicked result" if rule == "skip_above"
                else "a click with another result shown")
        raise ValidationError(f"no preference pairs: none of the {log.n_sessions} sessions ({log.n_clicks} clicks, "
                              f"{log.n_sessions_without_clicks} sessions without a click) has {what}")
    if rule == "skip_above":
        weights = np.ones(a.size)
    else:
        clicked_rows = order[clicked]
        p = propensities_of(log, clicked_rows, propensities)  # checked once per click, not per pair
        per_click = np.empty(log.n_impressions)
        per_click[clicked_rows] = 1.0 / p
        weights = per_click[a]
        if clip is not None:
            weights = np.minimum(weights, clip)
    better, worse = log.document[a], log.document[b]
    if merge:
        qpos = log.documents.query_index[better]
        srt = np.lexsort((worse, better, qpos))
        better, worse, weights = better[srt], worse[srt], weights[srt]
        new = np.ones(better.size, dtype=bool)
        new[1:] = (better[1:] != better[:-1]) | (worse[1:] != worse[:-1])
        first = np.flatnonzero(new)
        weights = np.add.reduceat(weights, first)
        better, worse = better[first], worse[first]
    return preference_pairs(log.documents, better, worse), np.ascontiguousarray(weights, dtype=np.float64)


def click_problem(log: ClickLog, rule: str, *, lam: float = DEFAULT_LAM, propensities=None, clip: float | None = None,
                  merge: bool = True, variant=None):
    """The ranking problem of a click log: ``RankingProblem(pairs, weights=weights, lam=lam)``.

    The pairs and weights of :func:`click_pairs` (same parameters); the problem's QP costs are
    ``C_i = c_i / (2λ)`` (Theorem 1, SIGIR 2006), ``(1/p_i)/(2λ)`` for ``rule="propensity"``: the
    costs of Propensity SVM-Rank. Every solver takes it through :func:`cvxrank.solve`.

    Parameters
    ----------
    log, rule, propensities, clip, merge
        As for :func:`click_pairs`.
    lam : float, default 0.5
        ``λ`` of (9)/SIGIR (``C = 1/(2λ)`` per unit of weight).
    variant : cvxrank.variants.Variant, optional

    Returns
    -------
    RankingProblem

    Examples
    --------
    >>> import numpy as np
    >>> from cvxrank.data import RankingData
    >>> from cvxrank.clicks.log import ClickLog
    >>> docs = RankingData(np.eye(3), [0, 0, 1], qid=[1, 1, 1])
    >>> log = ClickLog([1, 1, 1], [1, 1, 1], [0, 1, 2], [1, 2, 3], [0, 0, 1], [1.0, 0.5, 0.25], documents=docs)
    >>> problem = click_problem(log, "propensity", lam=0.1)
    >>> problem.C.tolist()
    [20.0, 20.0]
    """
    from cvxrank.problem import RankingProblem

    pairs, weights = click_pairs(log, rule, propensities=propensities, clip=clip, merge=merge)
    return RankingProblem(pairs, weights=weights, lam=lam, variant=variant)
