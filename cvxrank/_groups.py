"""Private helpers for query-grouped data (numpy only).

Documents belong to queries through an arbitrary id array ``qid`` (integers,
strings, ...; the documents of one query need not be contiguous). These
helpers turn ``qid`` into dense integer codes, give per-query counts and
offsets, and enumerate all within-query index pairs of a layout sorted by
query, without a Python loop per document or per query.

This module imports only numpy, so that :mod:`cvxrank.metrics` and the pair
builder can both use it.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

__all__ = [
    "query_codes",
    "group_counts",
    "group_offsets",
    "positions_in_group",
    "n_pairs_per_row",
    "within_query_pairs",
    "pair_row_chunks",
]


def query_codes(qid) -> tuple[np.ndarray, np.ndarray]:
    """Dense integer codes of query ids.

    Parameters
    ----------
    qid : array-like of shape (n_documents,)
        Query id of each document, of any sortable dtype (int, str, ...).

    Returns
    -------
    uniques : ndarray of shape (n_queries,)
        The distinct query ids, sorted (``np.unique`` order).
    codes : ndarray of int64, shape (n_documents,)
        ``codes[i]`` is the position of ``qid[i]`` in ``uniques``, so that
        ``uniques[codes]`` equals ``qid``.

    Examples
    --------
    >>> uniques, codes = query_codes(["b", "a", "b", "c"])
    >>> uniques.tolist(), codes.tolist()
    (['a', 'b', 'c'], [1, 0, 1, 2])
    """
    qid = np.asarray(qid)
    uniques, codes = np.unique(qid, return_inverse=True)
    return uniques, codes.reshape(-1).astype(np.int64, copy=False)


def group_counts(codes, n_groups: int | None = None) -> np.ndarray:
    """Number of documents per query.

    Parameters
    ----------
    codes : array-like of int, shape (n_documents,)
        Dense query codes in ``0 .. n_groups - 1`` (see :func:`query_codes`).
    n_groups : int, optional
        Number of queries; default ``codes.max() + 1`` (0 for empty input).

    Returns
    -------
    counts : ndarray of int64, shape (n_groups,)

    Examples
    --------
    >>> group_counts([1, 0, 1, 2]).tolist()
    [1, 2, 1]
    """
    codes = np.asarray(codes, dtype=np.int64)
    if n_groups is None:
        n_groups = int(codes.max()) + 1 if codes.size else 0
    return np.bincount(codes, minlength=n_groups).astype(np.int64, copy=False)


def group_offsets(counts) -> np.ndarray:
    """Start offsets of each query in a layout sorted by query.

    Parameters
    ----------
    counts : array-like of int, shape (n_groups,)
        Documents per query (see :func:`group_counts`).

    Returns
    -------
    offsets : ndarray of int64, shape (n_groups + 1,)
        Query ``g`` occupies rows ``offsets[g]:offsets[g + 1]``;
        ``offsets[0] = 0`` and ``offsets[-1]`` is the number of documents.

    Examples
    --------
    >>> group_offsets([1, 2, 1]).tolist()
    [0, 1, 3, 4]
    """
    counts = np.asarray(counts, dtype=np.int64)
    offsets = np.zeros(counts.size + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return offsets


def positions_in_group(sorted_codes, offsets) -> np.ndarray:
    """0-based position of each row inside its query, for a layout sorted by query.

    Parameters
    ----------
    sorted_codes : array-like of int, shape (n_documents,)
        Query codes in non-decreasing order.
    offsets : array-like of int, shape (n_groups + 1,)
        From :func:`group_offsets`.

    Returns
    -------
    positions : ndarray of int64, shape (n_documents,)
        ``positions[r] = r - offsets[sorted_codes[r]]``.

    Examples
    --------
    >>> positions_in_group([0, 1, 1, 2], [0, 1, 3, 4]).tolist()
    [0, 0, 1, 0]
    """
    sorted_codes = np.asarray(sorted_codes, dtype=np.int64)
    offsets = np.asarray(offsets, dtype=np.int64)
    return np.arange(sorted_codes.size, dtype=np.int64) - offsets[sorted_codes]


def n_pairs_per_row(counts) -> np.ndarray:
    """Number of later rows of the same query, for each row of a sorted layout.

    Row ``r`` at position ``p`` of a query with ``n`` documents is the first
    element of ``n - 1 - p`` pairs ``(r, s)`` with ``r < s``.

    Parameters
    ----------
    counts : array-like of int, shape (n_groups,)
        Documents per query.

    Returns
    -------
    n_pairs : ndarray of int64, shape (sum(counts),)
        Its sum is :math:`\\sum_g n_g (n_g - 1) / 2`.

    Examples
    --------
    >>> n_pairs_per_row([3, 1]).tolist()
    [2, 1, 0, 0]
    """
    counts = np.asarray(counts, dtype=np.int64)
    ends = np.repeat(group_offsets(counts)[1:], counts)  # one past each row's query
    return ends - 1 - np.arange(ends.size, dtype=np.int64)


def within_query_pairs(counts, row_start: int = 0, row_stop: int | None = None):
    """All within-query index pairs ``(i, j)``, ``i < j``, of a layout sorted by query.

    Rows ``offsets[g]:offsets[g + 1]`` belong to query ``g``. The pairs are
    generated in lexicographic order of ``(i, j)``, vectorised (no loop).
    ``row_start``/``row_stop`` restrict the first index ``i`` to a range, so
    that long lists can be produced in chunks (see :func:`pair_row_chunks`).

    Parameters
    ----------
    counts : array-like of int, shape (n_groups,)
        Documents per query.
    row_start : int, default 0
        First row used as ``i``.
    row_stop : int, optional
        One past the last row used as ``i``; default the number of rows.

    Returns
    -------
    i, j : ndarray of int64, shape (n_pairs,)
        Row indices, ``i < j``, both in the same query. ``n_pairs`` is
        :math:`\\sum_g n_g (n_g - 1) / 2` over the whole range.

    Examples
    --------
    >>> i, j = within_query_pairs([3, 1, 2])
    >>> i.tolist(), j.tolist()
    ([0, 0, 1, 4], [1, 2, 2, 5])
    """
    per_row = n_pairs_per_row(counts)
    if row_stop is None:
        row_stop = per_row.size
    per_row = per_row[row_start:row_stop]
    total = int(per_row.sum())
    i = np.repeat(np.arange(row_start, row_stop, dtype=np.int64), per_row)
    block_start = np.cumsum(per_row) - per_row  # where each row's block begins
    j = i + 1 + (np.arange(total, dtype=np.int64) - np.repeat(block_start, per_row))
    return i, j


def pair_row_chunks(counts, max_pairs: int = 2**22) -> Iterator[tuple[int, int]]:
    """Split the rows of a sorted layout so that each chunk has few pairs.

    Yields ``(row_start, row_stop)`` ranges covering all rows with pairs, each
    producing at most ``max_pairs`` pairs in :func:`within_query_pairs`
    (or one row's pairs, if a single row has more).

    Parameters
    ----------
    counts : array-like of int, shape (n_groups,)
        Documents per query.
    max_pairs : int, default 2**22
        Upper bound on pairs per chunk (bounds memory).

    Yields
    ------
    row_start, row_stop : int

    Examples
    --------
    >>> list(pair_row_chunks([3, 1, 2], max_pairs=2))
    [(0, 1), (1, 6)]
    """
    per_row = n_pairs_per_row(counts)
    cum = np.cumsum(per_row)
    n_rows = per_row.size
    start = 0
    done = 0
    while start < n_rows and done < (cum[-1] if n_rows else 0):
        # last row whose cumulative count stays within the budget
        stop = int(np.searchsorted(cum, done + max_pairs, side="right"))
        stop = max(stop, start + 1)
        yield start, stop
        done = int(cum[stop - 1])
        start = stop
