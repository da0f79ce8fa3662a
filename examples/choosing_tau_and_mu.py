"""
# Choosing tau and mu for RSVM-IR

Teaches: where the costs of RSVM-IR (Cao et al., SIGIR 2006) come from: tau per grade pair and mu per query.

tau: the heuristic of Fig. 1 (ECML 2006) / section 5.2 (SIGIR 2006) swaps documents of two grades
in each query's perfect ranking and averages the NDCG@1 drop. mu: equation (10) gives every
query the same total weight, so long queries with many pairs do not dominate.
"""
import cvxrank as cr
from cvxrank.estimators import RankSVMIR

# Queries of very different lengths, some without a top-grade document.
data = cr.make_ranking(n_queries=30, docs_per_query=(4, 40), n_features=6, n_grades=3, noise=2.0, random_state=2)
keep = ~((data.y == 2) & (data.qid % 3 == 0))   # every third query loses its grade-2 documents
data = data.subset(keep)
pairs = cr.make_pairs(data)

print("tau estimated on the training data (T = 100 swaps, seed 0):")
print(cr.estimate_tau(data, T=100, random_state=0).round(4).to_string(index=False))
print("\nexact expectation (T=None):")
print(cr.estimate_tau(data, T=None).round(4).to_string(index=False))

mu = cr.balanced_mu(pairs)
counts = pairs.pairs_per_query
print(f"\npairs per query range from {counts[counts > 0].min()} to {counts.max()}; "
      f"mu ranges from {min(mu.values()):.2f} to {max(mu.values()):.2f}")

train = data.select_queries(data.query_ids[:20])
test = data.select_queries(data.query_ids[20:])
print("\nRSVM-IR variants (lambda = 0.1), test NDCG@1 / NDCG@5:")
for variant in ("rank", "query", "both"):
    model = RankSVMIR(variant=variant, lam=0.1, random_state=0).fit(train)
    model.set_params(score_k=1)
    at1 = model.score(test)
    model.set_params(score_k=5)
    tau = None if model.tau_ is None else {k: round(v, 3) for k, v in model.tau_.items()}
    print(f"  {variant:6s} {at1:.4f} / {model.score(test):.4f}   tau_ = {tau}")
