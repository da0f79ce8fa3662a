"""Quick example: cost-sensitive Ranking SVM for IR, solved two ways, certified."""
import cvxrank as cr
from cvxrank.metrics import ndcg_score

data = cr.make_ranking(n_queries=20, n_features=5, random_state=0)          # or cr.load_letor("train.letor")
pairs = cr.make_pairs(data)                                                  # within-query pairs, D = P X
weights = cr.pair_weights(pairs, tau={(2, 1): 2.0, (2, 0): 3.0, (1, 0): 1.0}, mu="balanced")
qp = cr.solve(cr.build(pairs, cr.theorem1_C(weights, lam=0.1)), "clarabel")  # QP (14), auto formulation
hinge = cr.solve(cr.build_hinge(pairs, weights, lam=0.1), "subgradient")    # hinge form (9), native solver
print(pairs, qp, hinge, sep="\n")
print("same w:", abs(qp.w - hinge.w).max() < 1e-6, " L = 2 lam M:", abs(hinge.objective - 0.2 * qp.objective) < 1e-6)
print("NDCG@5:", round(ndcg_score(data.y, data.X @ qp.w, data.qid, k=5), 4))
