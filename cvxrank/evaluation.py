"""The evaluation table of the papers: NDCG@k, MAP and P@k of a ranking, per query and averaged.

Defaults follow the SIGIR 2006 paper's measures: NDCG@k of (20) with gains
``2^r − 1`` and a ``log2(1 + j)`` discount, MAP of (21)-(22) and precision at
``k``, with "relevant" meaning grade ``≥ relevant`` (1 by default: OHSUMED's
"possibly" and "definitely"; use 2 for the top three of five web grades).
Queries with no relevant document score 0 and count in the mean (the LETOR
convention); ties in the scores are averaged for NDCG and broken by input
order for MAP and P@k (see :mod:`cvxrank.metrics`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from cvxrank.exceptions import ValidationError
from cvxrank.metrics import mean_average_precision, ndcg_score, precision_at_k

__all__ = ["DEFAULT_KS", "evaluate_ranking", "per_query_metrics"]

#: Cut-offs of the papers' tables.
DEFAULT_KS = (1, 3, 5, 10)


def _check_ks(ks) -> tuple[int, ...]:
    ks = tuple(ks)
    if not ks or any(isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1 for k in ks):
        raise ValidationError(f"ks must be positive integers, got {ks!r}")
    return ks


def per_query_metrics(y_true, y_score, qid, *, ks=DEFAULT_KS, relevant=1) -> pd.DataFrame:
    """One row per query: ``ndcg@k`` for each ``k``, ``map`` and ``p@k`` for each ``k``.

    Examples
    --------
    >>> table = per_query_metrics([2, 0, 1, 0], [0.9, 0.1, 0.2, 0.8], qid=[1, 1, 2, 2], ks=(1,))
    >>> table.to_dict("index")
    {1: {'ndcg@1': 1.0, 'map': 1.0, 'p@1': 1.0}, 2: {'ndcg@1': 0.0, 'map': 0.5, 'p@1': 0.0}}
    """
    ks = _check_ks(ks)
    columns = {f"ndcg@{k}": ndcg_score(y_true, y_score, qid, k=k, per_query=True) for k in ks}
    columns["map"] = mean_average_precision(y_true, y_score, qid, threshold=relevant, per_query=True)
    for k in ks:
        columns[f"p@{k}"] = precision_at_k(y_true, y_score, qid, k, threshold=relevant, per_query=True)
    return pd.DataFrame(columns)


def evaluate_ranking(y_true, y_score, qid, *, ks=DEFAULT_KS, relevant=1) -> pd.Series:
    """Mean over queries of :func:`per_query_metrics`: NDCG@k, MAP, P@k.

    Examples
    --------
    >>> evaluate_ranking([2, 0, 1, 0], [0.9, 0.1, 0.2, 0.8], qid=[1, 1, 2, 2], ks=(1,)).round(3).to_dict()
    {'ndcg@1': 0.5, 'map': 0.75, 'p@1': 0.5}
    """
    return per_query_metrics(y_true, y_score, qid, ks=ks, relevant=relevant).mean()
