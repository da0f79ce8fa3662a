"""The band of pairs near the margin, enumerated without forming the other pairs.

For scores ``s`` and a width ``ε``, the pairs ``i`` (better document over worse,
same query) with margin ``m_i = s_better - s_worse`` in ``[1 - ε, 1 + ε)`` (or
``[1 - ε, 1)``) are found from the oracle's exact boundary search
(:meth:`~cvxrank.native.oracle.PairFreeOracle._bounds`) at the scores scaled by
``1/(1 - ε)`` and ``1/(1 + ε)`` (or 1): for the document at sorted position
``p``, the positions ``[p_out, p_in)`` of its query. The test is the oracle's
own (``s_p - s_k < 1`` on the scaled scores), so the band is disjoint from the
pairs the oracle counts as violated at ``s / (1 - ε)``; the Newton phase of
:mod:`cvxrank.native.newton` sums those pair-free and handles the band pair
by pair. Its size is about ``ε`` times the pair density at the margin: a few
hundred to a few thousand pairs where all pairs number in the millions.
"""

from __future__ import annotations

import numpy as np

from cvxrank.native.kernels import sweep

__all__ = ["band_pairs", "margin_band"]


def _band_bounds(oracle, s_o, eps, lower_only):
    p_in, _ = oracle._bounds(s_o / (1.0 - eps), hi=False)   # [p_in, end): margin < 1 - eps
    # [p_out, end): margin < 1 (+ eps); p_out <= p_in, found by walking down from p_in
    return oracle._below(s_o if lower_only else s_o / (1.0 + eps), p_in), p_in


def margin_band(oracle, s_o, order, eps: float, *, lower_only: bool = False):
    """The pairs with ``1 - ε ≤ m_i < 1 + ε`` at the sorted scores ``s_o``, as (better, worse, weight).

    ``lower_only=True``: the pairs with ``1 - ε ≤ m_i < 1`` (the band of the Huber loss).

    Positions come from the oracle's exact boundary search on the scores
    scaled by ``1/(1 - ε)`` and ``1/(1 + ε)``, so the band is disjoint from the
    pairs the oracle counts as violated at ``s / (1 - ε)``. Returns document
    indices (in the data's order) and pair weights ``c_i > 0``.
    """
    return band_pairs(oracle, order, *_band_bounds(oracle, s_o, eps, lower_only))


def band_pairs(oracle, order, p_out, p_in):
    """The pairs (better at sorted position ``p``, worse at ``[p_out[p], p_in[p])``) of different grades and
    positive weight, as (better, worse, weight) with document indices in the data's order."""
    lengths = p_in - p_out
    total = int(lengths.sum())
    if oracle._compiled:  # one pass over the ranges, the pairs in the same order as below
        better, worse, weight = np.empty(total, dtype=np.int64), np.empty(total, dtype=np.int64), np.empty(total)
        k = sweep().band(order, oracle._gc, oracle._offsets, p_out, p_in, oracle._flat, oracle._G, 0,
                         oracle.query_ids.shape[0], 0, better, worse, weight)
        return better[:k], worse[:k], weight[:k]
    better = np.repeat(np.arange(p_in.shape[0], dtype=np.int64), lengths)
    first = np.repeat(np.cumsum(lengths) - lengths, lengths)
    worse = p_out[better] + (np.arange(total, dtype=np.int64) - first)
    G = oracle._G
    g_o = oracle._gc[order]
    keep = g_o[worse] < g_o[better]
    better, worse = better[keep], worse[keep]
    weight = oracle._flat[(oracle._q_sorted[better] * G + g_o[better]) * G + g_o[worse]]
    keep = weight > 0
    return order[better[keep]], order[worse[keep]], weight[keep]
