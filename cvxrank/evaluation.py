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

__all__ = ["CONVENTIONS", "DEFAULT_KS", "evaluate_ranking", "per_query_metrics"]

#: Cut-offs of the papers' tables.
DEFAULT_KS = (1, 3, 5, 10)

#: Evaluation conventions. "cvxrank" is the default of :mod:`cvxrank.metrics`. The others
#: reproduce the published evaluation scripts line by line (read from their Perl source):
#: Eval-Score-3.0.pl (LETOR 3.0), Eval-Score-4.0.pl (LETOR 4.0) and the MSLR-WEB script of
#: June 2010. All three use the gain table ``2^r − 1`` for the grades they list (other grades
#: get no gain there, so they are refused here), the discount ``1/log2(max(j, 2))`` (positions 1
#: and 2 undiscounted), ties in file order (a stable sort by score), NDCG@k = 0 for a query with
#: fewer than ``k`` documents and for one without relevant documents, both counted in the mean.
#: They differ in the grades, in what is relevant for MAP and P@k, and in P@k of short queries.
CONVENTIONS = {
    "cvxrank": {"grades": None, "relevant": 1, "discount": "log2", "ties": "average", "short": "available",
                "precision_short": "holes"},
    "letor3": {"grades": (0, 1, 2), "relevant": 1, "discount": "letor", "ties": "stable", "short": "zero",
               "precision_short": "zero"},
    "letor": {"grades": (0, 1, 2), "relevant": 1, "discount": "letor", "ties": "stable", "short": "zero",
              "precision_short": "holes"},
    "mslr": {"grades": (0, 1, 2, 3, 4), "relevant": 2, "discount": "letor", "ties": "stable", "short": "zero",
             "precision_short": "holes"},
}


def _convention(name, y_true, relevant):
    if name not in CONVENTIONS:
        raise ValidationError(f"unknown convention {name!r}; choose from {', '.join(CONVENTIONS)}")
    conv = CONVENTIONS[name]
    grades = conv["grades"]
    if grades is not None:
        bad = sorted(set(np.unique(np.asarray(y_true, dtype=float)).tolist()) - set(grades))
        if bad:
            raise ValidationError(f"the {name} evaluation script scores grades {list(grades)} only; the data has "
                                  f"{bad[:5]} (use convention='mslr' for grades 0-4, or 'cvxrank')")
    return conv, (conv["relevant"] if relevant is None else relevant)


def _check_ks(ks) -> tuple[int, ...]:
    ks = tuple(ks)
    if not ks or any(isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1 for k in ks):
        raise ValidationError(f"ks must be positive integers, got {ks!r}")
    return ks


def per_query_metrics(y_true, y_score, qid, *, ks=DEFAULT_KS, relevant=None, convention="cvxrank") -> pd.DataFrame:
    """One row per query: ``ndcg@k`` for each ``k``, ``map`` and ``p@k`` for each ``k``.

    ``convention`` picks gains, discount, ties and the treatment of short queries
    (:data:`CONVENTIONS`); ``relevant`` (the smallest relevant grade for MAP and P@k)
    defaults to the convention's (1, or 2 for ``"mslr"``).

    Examples
    --------
    >>> table = per_query_metrics([2, 0, 1, 0], [0.9, 0.1, 0.2, 0.8], qid=[1, 1, 2, 2], ks=(1,))
    >>> table.to_dict("index")
    {1: {'ndcg@1': 1.0, 'map': 1.0, 'p@1': 1.0}, 2: {'ndcg@1': 0.0, 'map': 0.5, 'p@1': 0.0}}
    """
    ks = _check_ks(ks)
    conv, relevant = _convention(convention, y_true, relevant)
    order_ties = "stable" if conv["ties"] == "average" else conv["ties"]
    columns = {f"ndcg@{k}": ndcg_score(y_true, y_score, qid, k=k, discount=conv["discount"], ties=conv["ties"],
                                       short=conv["short"], per_query=True) for k in ks}
    columns["map"] = mean_average_precision(y_true, y_score, qid, threshold=relevant, ties=order_ties,
                                            per_query=True)
    for k in ks:
        columns[f"p@{k}"] = precision_at_k(y_true, y_score, qid, k, threshold=relevant, ties=order_ties,
                                           short=conv["precision_short"], per_query=True)
    return pd.DataFrame(columns)


def evaluate_ranking(y_true, y_score, qid, *, ks=DEFAULT_KS, relevant=None, convention="cvxrank") -> pd.Series:
    """Mean over queries of :func:`per_query_metrics`: NDCG@k, MAP, P@k.

    Examples
    --------
    >>> evaluate_ranking([2, 0, 1, 0], [0.9, 0.1, 0.2, 0.8], qid=[1, 1, 2, 2], ks=(1,)).round(3).to_dict()
    {'ndcg@1': 0.5, 'map': 0.75, 'p@1': 0.5}
    """
    return per_query_metrics(y_true, y_score, qid, ks=ks, relevant=relevant, convention=convention).mean()
