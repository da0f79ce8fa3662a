"""
# Listwise: ListMLE and cs-RgList

Teaches: the cost-sensitive listwise loss of He et al. (equation (3)), solved by Newton's method
(Steps 1-5) and, as a check, by CVXPY's exponential cone.

cs-RgList weighs position j of a query's perfect order by pCf^grade / (number of documents of
that grade): mistakes on highly relevant documents cost more. The problem is smooth and strongly
convex, so Newton's method with Cholesky steps converges in a few iterations; the same problem
declared with CVXPY's log_sum_exp (exponential cone) gives the same w.
"""
import numpy as np

import cvxrank as cr
from cvxrank.estimators import CsRgList, ListMLE
from cvxrank.listwise import solve_listwise_cvxpy, solve_newton

data = cr.make_ranking(n_queries=40, docs_per_query=(5, 15), n_features=5, noise=2.0, random_state=3)
train, test = data.select_queries(data.query_ids[:30]), data.select_queries(data.query_ids[30:])

small = train.select_queries(train.query_ids[:8])
newton = solve_newton(small, C=10.0, pcf=3.0)
cone = solve_listwise_cvxpy(small, C=10.0, pcf=3.0, solver="clarabel")
print(f"Newton: {newton.iterations} iterations, gradient norm {newton.grad_norm:.1e}; "
      f"Clarabel: {cone.iterations} iterations; max |w difference| {np.abs(newton.w - cone.w).max():.1e}")

for model in (ListMLE(C=10.0), CsRgList(C=10.0, pcf=1.5), CsRgList(C=10.0, pcf=3.0)):
    model.fit(train)
    print(f"{model!r:32s} iterations {model.n_iter_:2d}  status {model.result_.status:8s} "
          f"test NDCG@10 {model.score(test):.4f}")
