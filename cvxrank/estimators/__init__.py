"""scikit-learn estimators: the papers' rankers with ``fit``/``predict``/``score`` and JSON model files.

=============================  ============================================  =================
estimator                      problem                                       paper
=============================  ============================================  =================
:class:`RankSVM`               hinge loss of every pair (7)                  Herbrich; ECML 2006
:class:`CostSensitiveRankSVM`  τ per grade pair (8)-(9)                      Xu et al., ECML 2006
:class:`RankSVMIR`             τ per grade pair, μ per query (9), (14)       Cao et al., SIGIR 2006
:class:`ListMLE`               listwise likelihood, L2 penalty               (3) with U/V = 1
:class:`CsRgList`              cost-sensitive ListMLE (3)                    He et al.
:class:`ClickRankSVM`          clicks weighted 1/propensity, (9) and (14)    Joachims et al., WSDM 2017
=============================  ============================================  =================

Models are saved as plain JSON (:func:`save_model`, :func:`load_model`), never pickled.
"""

from cvxrank.estimators.base import BaseRanker, as_ranking_data
from cvxrank.estimators.clicks import ClickRankSVM
from cvxrank.estimators.listwise import CsRgList, ListMLE
from cvxrank.estimators.methods import METHODS, make_ranker
from cvxrank.estimators.pairwise import CostSensitiveRankSVM, RankSVM, RankSVMIR, tau_table
from cvxrank.estimators.persistence import ESTIMATORS, load_model, save_model

__all__ = ["BaseRanker", "ClickRankSVM", "CostSensitiveRankSVM", "CsRgList", "ESTIMATORS", "ListMLE", "METHODS", "RankSVM",
           "RankSVMIR", "as_ranking_data", "load_model", "make_ranker", "save_model", "tau_table"]
