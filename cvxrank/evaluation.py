"""The evaluation table of the papers: NDCG@k, MAP and P@k of a ranking, per query and averaged.

Defaults follow the SIGIR 2006 paper's measures: NDCG@k of (20) with gains
``2^r − 1`` and a ``log2(1 + j)`` discount, MAP of (21)-(22) and precision at
``k``, with "relevant" meaning grade ``≥ relevant`` (1 by default: OHSUMED's
"possibly" and "definitely"; use 2 for the top three of five web grades).
Queries with no relevant document score 0 and count in the mean (the LETOR
convention); ties in the scores are averaged for NDCG and broken by input
order for MAP and P@k (see :mod:`cvxrank.metrics`).

``convention="letor"`` and ``"mslr"`` reproduce the LETOR 4.0 and MSLR
evaluation scripts (Eval-Score-4.0.pl and its MSLR edition of June 2010):
their gain tables, relevance threshold, ties in file order, the discount
``1/log2(max(j, 2))`` and NDCG@k = 0 for a query with fewer than ``k``
documents (:data:`CONVENTIONS`; docs/metrics.md).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from cvxrank._validation import POSITIVE_INT, check_each
from cvxrank.exceptions import ValidationError
from cvxrank.metrics import mean_average_precision, ndcg_score, precision_at_k

__all__ = ["CONVENTIONS", "DEFAULT_KS", "evaluate_ranking", "per_query_metrics"]

#: Cut-offs of the papers' tables.
DEFAULT_KS = (1, 3, 5, 10)

#: Evaluation conventions: keywords of :func:`cvxrank.metrics.ndcg_score` (``ndcg``), the tie rule of
#: MAP and P@k (``ties``) and the smallest relevant grade (``relevant``). "letor" and "mslr" are the
#: scripts' ``%hsNdcgRelScore`` and ``%hsPrecisionRel`` tables; both sort by score with Perl's stable
#: sort after sorting by line number (ties in file order), give positions 1 and 2 the same weight
#: (discount ``1/log2(max(j, 2))``) and leave NDCG@k undefined, summed as 0, past a query's last document.
CONVENTIONS = {
    "cvxrank": {"ndcg": {"gain": "exponential", "discount": "log2", "ties": "average", "short": "cut",
                         "empty": "zero"},
                "ties": "stable", "relevant": 1},
    "letor": {"ndcg": {"gain": {0: 0, 1: 1, 2: 3}, "discount": "letor", "ties": "stable", "short": "zero",
                       "empty": "zero"},
              "ties": "stable", "relevant": 1},
    "mslr": {"ndcg": {"gain": {0: 0, 1: 1, 2: 3, 3: 7, 4: 15}, "discount": "letor", "ties": "stable",
                      "short": "zero", "empty": "zero"},
             "ties": "stable", "relevant": 2},
}


def _convention(convention: str, relevant):
    if convention not in CONVENTIONS:
        raise ValidationError(f"unknown convention {convention!r}; valid: {', '.join(CONVENTIONS)}")
    preset = CONVENTIONS[convention]
    if relevant is None:
        relevant = preset["relevant"]
    elif convention != "cvxrank" and relevant != preset["relevant"]:
        raise ValidationError(f"convention {convention!r} counts grade >= {preset['relevant']} as relevant, "
                              f"as its script does; relevant={relevant!r} would not reproduce it")
    return preset, relevant


def _check_ks(ks) -> tuple[int, ...]:
    return check_each("ks", ks, POSITIVE_INT)


def per_query_metrics(y_true, y_score, qid, *, ks=DEFAULT_KS, relevant=None, convention="cvxrank") -> pd.DataFrame:
    """One row per query: ``ndcg@k`` for each ``k``, ``map`` and ``p@k`` for each ``k``.

    ``convention`` is a key of :data:`CONVENTIONS` ("cvxrank", "letor", "mslr"); ``relevant`` (the
    smallest relevant grade) defaults to the convention's (1, 1, 2) and cannot differ from it for the
    script presets.

    Examples
    --------
    >>> table = per_query_metrics([2, 0, 1, 0], [0.9, 0.1, 0.2, 0.8], qid=[1, 1, 2, 2], ks=(1,))
    >>> table.to_dict("index")
    {1: {'ndcg@1': 1.0, 'map': 1.0, 'p@1': 1.0}, 2: {'ndcg@1': 0.0, 'map': 0.5, 'p@1': 0.0}}
    """
    ks = _check_ks(ks)
    preset, relevant = _convention(convention, relevant)
    table = preset["ndcg"]["gain"]
    if isinstance(table, dict):
        outside = sorted(set(np.unique(np.asarray(y_true, dtype=float)).tolist()) - set(map(float, table)))
        if outside:
            hint = " (grades 0-4: use convention 'mslr')" if convention == "letor" and max(outside) <= 4 else ""
            raise ValidationError(f"convention {convention!r} knows grades {sorted(table)} only; the data has "
                                  f"grades {', '.join(f'{g:g}' for g in outside[:5])}{hint}")
    columns = {f"ndcg@{k}": ndcg_score(y_true, y_score, qid, k=k, per_query=True, **preset["ndcg"]) for k in ks}
    columns["map"] = mean_average_precision(y_true, y_score, qid, threshold=relevant, ties=preset["ties"],
                                            per_query=True)
    for k in ks:
        columns[f"p@{k}"] = precision_at_k(y_true, y_score, qid, k, threshold=relevant, ties=preset["ties"],
                                           per_query=True)
    return pd.DataFrame(columns)


def evaluate_ranking(y_true, y_score, qid, *, ks=DEFAULT_KS, relevant=None, convention="cvxrank") -> pd.Series:
    """Mean over queries of :func:`per_query_metrics`: NDCG@k, MAP, P@k.

    Examples
    --------
    >>> evaluate_ranking([2, 0, 1, 0], [0.9, 0.1, 0.2, 0.8], qid=[1, 1, 2, 2], ks=(1,)).round(3).to_dict()
    {'ndcg@1': 0.5, 'map': 0.75, 'p@1': 0.5}
    """
    return per_query_metrics(y_true, y_score, qid, ks=ks, relevant=relevant, convention=convention).mean()
