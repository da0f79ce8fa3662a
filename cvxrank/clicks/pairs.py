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

from cvxrank._memory import check_memory, check_pairs
from cvxrank._validation import Interval, Options, check
from cvxrank.clicks.log import ClickLog
from cvxrank.clicks.propensity import propensities_of
from cvxrank.costs import DEFAULT_LAM
from cvxrank.exceptions import ValidationError
from cvxrank.pairs import PairSet, merge_pairs, preference_pairs
from cvxrank.preference_groups import PreferenceGroups

__all__ = ["RULES", "click_groups", "click_pairs", "click_problem"]

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
        better, worse, weights = merge_pairs(log.documents, better, worse, weights)
    return preference_pairs(log.documents, better, worse), np.ascontiguousarray(weights, dtype=np.float64)


#: Bytes per impression of :func:`click_groups` (its sorted copies, the sessions' rows and the members).
GROUP_BYTES_PER_IMPRESSION = 96


def click_groups(log: ClickLog, *, propensities=None, clip: float | None = None) -> PreferenceGroups:
    """The propensity-weighted clicks of a log as :class:`~cvxrank.preference_groups.PreferenceGroups`: no pair formed.

    Sessions with a click are merged into groups by the documents they showed (the query and the set of
    documents, whatever their order); every document shown in a group is a member, with the weight

    .. math:: a_{g,i} = \\sum_{\\text{sessions of } g \\text{ where } i \\text{ was clicked}}
              \\min\\big(1/p_{\\mathrm{pos}(i)}, \\text{clip}\\big)

    (0 when it was never clicked there). The pairs of the groups, ``(i, j)`` for ``a_{g,i} > 0`` and every
    other ``j`` of the group at cost ``a_{g,i}``, merged across groups, are exactly the merged pairs and
    weights of ``click_pairs(log, "propensity", ...)`` (up to the order of the additions in a merged
    weight): the same loss, in ``O(impressions)`` memory.

    Parameters
    ----------
    log : ClickLog
    propensities, clip
        As for :func:`click_pairs` with ``rule="propensity"``.

    Returns
    -------
    PreferenceGroups

    Raises
    ------
    ValidationError
        As :func:`click_pairs`: a clicked impression without a propensity (naming its line), a ``clip`` below 1,
        or a log that gives no pair.

    Examples
    --------
    >>> import numpy as np
    >>> from cvxrank.data import RankingData
    >>> docs = RankingData(np.eye(3), [0, 0, 1], qid=[1, 1, 1])
    >>> log = ClickLog([1, 1, 1, 2, 2, 2], [1] * 6, [0, 1, 2, 2, 0, 1], [1, 2, 3, 1, 2, 3], [0, 0, 1, 1, 0, 0],
    ...                [1.0, 0.5, 0.25, 1.0, 0.5, 0.25], documents=docs)
    >>> groups = click_groups(log)      # both sessions showed documents 0, 1, 2: one group
    >>> groups.n_groups, groups.weight.tolist()
    (1, [0.0, 0.0, 5.0])
    """
    if not isinstance(log, ClickLog):
        raise ValidationError(f"click_groups takes a ClickLog, got {type(log).__name__}")
    if clip is not None:
        clip = check("clip", clip, Interval(1, np.inf, closed="left", why="a weight 1/p is at least 1"))
    check_memory(GROUP_BYTES_PER_IMPRESSION * float(log.n_impressions),
                 f"grouping the {log.n_impressions:,} impressions of a click log", "use a smaller log")
    per_session = np.add.reduceat(log.click, log.session_start[:-1]) if log.n_impressions else np.zeros(0)
    sizes = np.diff(log.session_start)
    live = (per_session > 0) & (sizes > 1)  # sessions that give a pair
    if not live.any():
        raise ValidationError(f"no preference pairs: none of the {log.n_sessions} sessions ({log.n_clicks} clicks, "
                              f"{log.n_sessions_without_clicks} sessions without a click) has a click with another "
                              "result shown")
    keep = live[log.session_index]
    rows = np.flatnonzero(keep)
    # impressions of the kept sessions, by session then document: each session's row of shown documents, sorted
    rows = rows[np.lexsort((log.document[rows], log.session_index[rows]))]
    sess = log.session_index[rows]
    first = np.flatnonzero(np.r_[True, sess[1:] != sess[:-1]])
    length = np.diff(np.r_[first, rows.shape[0]])
    session_group = np.empty(first.shape[0], dtype=np.int64)
    member_doc, member_group, n_groups = [], [], 0
    for L in np.unique(length):  # sessions of one length: a matrix of rows, one group per distinct row
        which = np.flatnonzero(length == L)
        docs = log.document[rows[first[which][:, None] + np.arange(L)]]
        distinct, code = np.unique(docs, axis=0, return_inverse=True)
        session_group[which] = n_groups + code.ravel()
        member_doc.append(distinct.ravel())
        member_group.append(np.repeat(np.arange(n_groups, n_groups + distinct.shape[0]), L))
        n_groups += distinct.shape[0]
    member_doc = np.concatenate(member_doc)
    member_group = np.concatenate(member_group)
    # members of group g: its row of documents, in the order PreferenceGroups keeps (by group, then document)
    srt = np.lexsort((member_doc, member_group))
    member_doc, member_group = member_doc[srt], member_group[srt]
    offsets = np.searchsorted(member_group, np.arange(n_groups + 1))
    clicked = np.flatnonzero(log.click[rows] == 1)
    p = propensities_of(log, rows[clicked], propensities)  # checked once per click
    a = 1.0 / p
    if clip is not None:
        a = np.minimum(a, clip)
    within = clicked - np.repeat(first, length)[clicked]  # the click's place in its session's sorted row
    member = offsets[session_group[np.repeat(np.arange(first.shape[0]), length)[clicked]]] + within
    weight = np.bincount(member, weights=a, minlength=member_doc.shape[0])
    return PreferenceGroups(log.documents, member_group, member_doc, weight)


def click_problem(log: ClickLog, rule: str, *, lam: float = DEFAULT_LAM, propensities=None, clip: float | None = None,
                  merge: bool = True, variant=None):
    """The ranking problem of a click log: the weighted hinge problem (9) on the pairs of :func:`click_pairs`.

    The pairs and weights of :func:`click_pairs` (same parameters); the problem's QP costs are
    ``C_i = c_i / (2λ)`` (Theorem 1, SIGIR 2006), ``(1/p_i)/(2λ)`` for ``rule="propensity"``: the
    costs of Propensity SVM-Rank. Every solver takes it through :func:`cvxrank.solve`.

    With ``rule="propensity"`` and ``merge=True`` (the defaults) the problem is made from the log's
    :func:`click_groups`, whose cost factors per document, and **no pair is formed** until a solver that
    needs them asks (a CVXPY solver, ``subgradient``, ``gd``, or :attr:`~cvxrank.problem.RankingProblem.pairs`,
    ``weights``, ``C``): they are then the merged pairs of :func:`click_pairs`, in its order. The pair-free
    solvers ``"cutting_plane"`` (hinge) and ``"truncated_newton"`` (squared hinge) read the groups
    directly (:mod:`cvxrank.native.document_oracle`). ``merge=False`` and ``rule="skip_above"`` form the
    pairs now: ``RankingProblem(pairs, weights=weights, lam=lam)``.

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
    >>> problem.has_pairs, problem.n_pairs
    (False, 2)
    >>> problem.C.tolist()
    [20.0, 20.0]
    """
    from cvxrank.problem import RankingProblem

    check("rule", rule, Options(RULES))
    if rule == "propensity" and isinstance(merge, (bool, np.bool_)) and merge:
        groups = click_groups(log, propensities=propensities, clip=clip)
        return RankingProblem(groups, lam=lam, variant=variant)
    pairs, weights = click_pairs(log, rule, propensities=propensities, clip=clip, merge=merge)
    return RankingProblem(pairs, weights=weights, lam=lam, variant=variant)
