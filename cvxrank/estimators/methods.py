"""The methods of the papers' experiment tables by name, for the command line and the CV runner.

=================  ==========================================  =====================================
name               estimator                                   paper's name
=================  ==========================================  =====================================
``ranksvm``        ``RankSVM()``                               RSVM (Herbrich; Joachims 2002)
``cs-ranksvm``     ``CostSensitiveRankSVM()``                  cost-sensitive Ranking SVM (ECML 2006)
``rsvm-ir-rank``   ``RankSVMIR(variant="rank")``               RSVM-IR-Rank (SIGIR 2006)
``rsvm-ir-query``  ``RankSVMIR(variant="query")``              RSVM-IR-Query
``rsvm-ir-qp``     ``RankSVMIR()``                             RSVM-IR-QP
``rsvm-ir-gd``     ``RankSVMIR(optimizer="gd")``               RSVM-IR-GD
``listmle``        ``ListMLE()``                               ListMLE (He)
``cs-rglist``      ``CsRgList()``                              cs-RgList (He)
=================  ==========================================  =====================================
"""

from __future__ import annotations

from cvxrank.estimators.listwise import CsRgList, ListMLE
from cvxrank.estimators.pairwise import CostSensitiveRankSVM, RankSVM, RankSVMIR
from cvxrank.exceptions import ValidationError

__all__ = ["METHODS", "make_ranker", "method_label"]

#: name -> (label in tables, estimator class, fixed parameters)
METHODS = {
    "ranksvm": ("RankSVM", RankSVM, {}),
    "cs-ranksvm": ("CS-RankSVM", CostSensitiveRankSVM, {}),
    "rsvm-ir-rank": ("RSVM-IR-Rank", RankSVMIR, {"variant": "rank"}),
    "rsvm-ir-query": ("RSVM-IR-Query", RankSVMIR, {"variant": "query"}),
    "rsvm-ir-qp": ("RSVM-IR-QP", RankSVMIR, {}),
    "rsvm-ir-gd": ("RSVM-IR-GD", RankSVMIR, {"optimizer": "gd"}),
    "listmle": ("ListMLE", ListMLE, {}),
    "cs-rglist": ("cs-RgList", CsRgList, {}),
}


def _key(method: str) -> str:
    key = str(method).strip().lower()
    if key == "rsvm-ir":
        key = "rsvm-ir-qp"
    if key not in METHODS:
        raise ValidationError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    return key


def method_label(method: str) -> str:
    """The paper's name of a method (``"rsvm-ir-qp"`` -> ``"RSVM-IR-QP"``)."""
    return METHODS[_key(method)][0]


def make_ranker(method: str, **params):
    """A fresh estimator for ``method`` with ``params`` (omit a parameter to keep its default).

    Examples
    --------
    >>> make_ranker("rsvm-ir-rank", lam=0.1)
    RankSVMIR(lam=0.1, variant='rank')
    """
    label, cls, fixed = METHODS[_key(method)]
    accepted = set(cls().get_params(deep=False))
    refused = sorted(k for k in params if k not in accepted or k in fixed)
    if refused:
        raise ValidationError(f"method {method} ({label}) does not take {', '.join(refused)}")
    return cls(**fixed, **params)
