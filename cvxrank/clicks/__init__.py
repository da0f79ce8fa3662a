"""Learning from clicks: click logs, click-derived pairs with propensity weights, propensity estimators.

Ranking SVM was born on click-through data (Joachims 2002: a clicked result is preferred to the
results skipped above it); Propensity SVM-Rank (Joachims, Swaminathan & Schnabel, WSDM 2017)
weighs each click by the inverse of the probability that its position was examined, a per-pair
cost ``C_i = (1/p_i)/(2λ)`` of Theorem 1 (SIGIR 2006). The pieces:

* :mod:`~cvxrank.clicks.log`: :class:`ClickLog`, its text format (:func:`read_clicks`,
  :func:`write_clicks`) and :meth:`ClickLog.from_frame`;
* :mod:`~cvxrank.clicks.pairs`: :func:`click_pairs` (rules ``"skip_above"`` and ``"propensity"``)
  and :func:`click_problem`, a :class:`~cvxrank.problem.RankingProblem` for every solver;
* :mod:`~cvxrank.clicks.propensity`: :func:`position_propensity` and the estimators
  :func:`estimate_propensities_swap` (swap interventions) and :func:`estimate_propensities_em`;
* :mod:`~cvxrank.clicks.simulate`: :func:`make_clicks`, the position-based click simulator;
* :mod:`~cvxrank.clicks.risk`: :func:`ips_risk`, :func:`naive_risk` and :func:`true_risk`.

Examples
--------
>>> import cvxrank as cr
>>> from cvxrank.clicks import make_clicks, click_problem
>>> data = cr.make_ranking(n_queries=8, docs_per_query=10, n_features=3, random_state=0)
>>> log = make_clicks(data, eta=1.0, n_sessions=200, top_k=5, random_state=0)
>>> problem = click_problem(log, "propensity", lam=0.1)
>>> cr.solve(problem, "clarabel").status
'optimal'
"""

from cvxrank.clicks.log import ClickLog, read_clicks, write_clicks
from cvxrank.clicks.pairs import RULES, click_pairs, click_problem
from cvxrank.clicks.propensity import (
    PropensityEstimate,
    estimate_propensities_em,
    estimate_propensities_swap,
    position_propensity,
    propensities_of,
)
from cvxrank.clicks.risk import ips_risk, naive_risk, session_ranks, true_risk
from cvxrank.clicks.simulate import (
    make_clicks,
    production_ranking,
    production_scores,
    relevance_threshold,
    relevant_documents,
)

__all__ = [
    "RULES",
    "ClickLog",
    "PropensityEstimate",
    "click_pairs",
    "click_problem",
    "estimate_propensities_em",
    "estimate_propensities_swap",
    "ips_risk",
    "make_clicks",
    "naive_risk",
    "position_propensity",
    "production_ranking",
    "production_scores",
    "propensities_of",
    "read_clicks",
    "relevance_threshold",
    "relevant_documents",
    "session_ranks",
    "true_risk",
    "write_clicks",
]
