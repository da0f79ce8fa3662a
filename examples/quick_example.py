"""
# Quick example: one problem, three solvers, certified

Teaches: a RankingProblem (data, one costs value, lambda) goes to any solver and comes back as a
solution with its own certificate; Theorem 1 (L = 2 lambda M) holds at any w; and two solvers agree
within the distances their certificates prove, whatever versions of the solvers are installed.
"""
import numpy as np

import cvxrank as cr
from cvxrank.metrics import ndcg_score

data = cr.make_ranking(n_queries=20, n_features=5, random_state=0)    # or cr.load_letor("train.letor")
problem = cr.RankingProblem(data, tau={(2, 1): 2.0, (2, 0): 3.0, (1, 0): 1.0}, mu="balanced", lam=0.1)
qp = cr.solve(problem, "clarabel")                   # CVXPY compiles the QP (14) (automatic formulation)
hinge = cr.solve(cr.build_hinge(problem), "ecos")    # the weighted hinge form (9), another solver
native = cr.solve(problem, "cutting_plane")          # pair-free cutting planes, certified by their own bound
print(problem, qp, hinge, native, sep="\n")

w = native.w                                         # Theorem 1 is an identity at any w: L(w) = 2 lam M(w)
print("L = 2 lam M at one w:", bool(np.isclose(problem.hinge_objective(w), 2 * problem.lam * problem.qp_objective(w),
                                                 rtol=1e-12, atol=0)))
print("same minimiser within the certified bounds:",
      all(np.linalg.norm(a.w - b.w) <= a.distance_bound + b.distance_bound for a, b in [(qp, hinge), (qp, native)]))
print("NDCG@5:", round(ndcg_score(data.y, data.X @ qp.w, data.qid, k=5), 4))
