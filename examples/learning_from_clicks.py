"""
# Learning from clicks

Teaches: why clicks need propensity weights, and how `ClickRankSVM` learns a ranker from a click
log: Propensity SVM-Rank (Joachims, Swaminathan & Schnabel, WSDM 2017).

Users examine the top of a ranking far more than the bottom, so a relevant document shown low is
rarely clicked. Taken at face value (every click weighing 1, the *naive* ranker), clicks teach the
learner to repeat the ranking that was shown. Weighing each click by 1/p, the inverse
probability that its position was examined, makes the loss an unbiased estimate of the
full-information loss. The weights are per-pair costs C_i = (1/p_i)/(2 lambda) of Theorem 1, so the
problem is the cost-sensitive Ranking SVM, solved and certified like any other.

The propensities p_k = (1/k)^eta are unknown in practice: here eta is estimated from a log of
swap interventions (the top result swapped with the result at a random rank k).

The figure is saved as PNG and PDF into the folder named by the environment variable
`CVXRANK_FIGURES` (default: a new temporary folder), and shown when matplotlib can show windows.
"""
import os

import matplotlib.pyplot as plt
import numpy as np

import cvxrank as cr
from cvxrank.clicks import estimate_propensities_swap, position_propensity
from cvxrank.estimators import ClickRankSVM, RankSVM
from cvxrank.plots import interactive_backend, save_figures

# Graded documents: 80 training queries and 40 test queries.
data = cr.make_ranking(n_queries=120, docs_per_query=(10, 20), n_features=30, n_grades=5, noise=1.0,
                       proportions=(0.3, 0.35, 0.2, 0.1, 0.05), random_state=0)
train = data.select_queries(data.query_ids[:80])
test = data.select_queries(data.query_ids[80:])

# A weak production ranker (full information on 2 training queries) shows the top 10 of each query;
# position k is examined with probability (1/k)^eta, eta = 1.
production = RankSVM(lam=1.0).fit(train.select_queries(train.query_ids[:2]))
eta = 1.0
log = cr.make_clicks(train, ranker=production.coef_, eta=eta, n_sessions=4000, top_k=10, random_state=1)
swaps = cr.make_clicks(train, ranker=production.coef_, eta=eta, n_sessions=4000, top_k=10, swap=True,
                       random_state=2)
print(log)

# %%
# Three rankers from the same clicks: every click weighing 1 (eta = 0), the true propensities, and
# propensities estimated from the swap interventions. normalize=True puts lambda on the scale of
# the mean weighted loss, so one lambda suits all three.
models = {
    "naive (1/p = 1)": ClickRankSVM(propensities=0.0, lam=0.1, normalize=True).fit(log),
    "propensity, true eta": ClickRankSVM(propensities=eta, lam=0.1, normalize=True).fit(log),
    "propensity, estimated eta": ClickRankSVM(propensities="estimate", estimator="swap", lam=0.1,
                                              normalize=True).fit(log, propensity_log=swaps,
                                                                  ranker=production.coef_),
}
print(f"{'model':27s} {'eta used':>8s} {'pairs':>6s} {'status':>8s}  test NDCG@10")
print(f"{'production ranker':27s} {'':>8s} {'':>6s} {'':>8s}  {production.score(test):.4f}")
for name, model in models.items():
    print(f"{name:27s} {model.eta_:8.3f} {model.n_pairs_:6d} {model.result_.status:>8s}  {model.score(test):.4f}")
estimate = models["propensity, estimated eta"].propensity_estimate_
print(f"estimated eta = {estimate.eta:.3f} +- {estimate.eta_se:.3f} (true {eta:g})")

# %%
# The swap estimate of each position's propensity, with the fitted power law and the truth: the
# weights 1/p that turn biased clicks into an unbiased loss.
fig, ax = plt.subplots(figsize=(6.0, 4.0), layout="constrained")
k = estimate.positions
ax.errorbar(k, estimate.theta, yerr=estimate.theta_se, fmt="o", capsize=3, label="swap estimate of p_k / p_1")
ax.plot(k, estimate.propensity(k), "--", label=f"fitted (1/k)^eta, eta = {estimate.eta:.2f}")
ax.plot(k, position_propensity(k, eta), ":", color="black", label=f"true (1/k)^eta, eta = {eta:g}")
ax.set_xlabel("position k")
ax.set_ylabel("examination propensity")
ax.set_xticks(np.arange(1, k.max() + 1))
ax.legend()

# %%
# The figure goes to PNG and PDF in its own folder; it is shown only when the backend can
# show a window.
folder = os.environ.get("CVXRANK_FIGURES")   # None: a new temporary folder
paths = save_figures({"learning_from_clicks": fig}, folder)
names = ", ".join(os.path.basename(p) for p in paths)
print(f"figure saved: {names} in {os.path.dirname(paths[0])}")
if interactive_backend():
    plt.show()
