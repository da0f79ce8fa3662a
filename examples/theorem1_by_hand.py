"""Theorem 1 of Cao et al. (SIGIR 2006), checked by hand.

The weighted hinge problem (9),  min_w  sum_i tau_k(i) mu_q(i) [1 - <w, d_i>]_+ + lambda ||w||^2,
and the QP (14),  min  1/2 ||w||^2 + sum_i C_i xi_i  s.t. <w, d_i> >= 1 - xi_i, xi >= 0,
have the same minimiser when C_i = tau_k(i) mu_q(i) / (2 lambda), and L(w) = 2 lambda M(w) at every w.
"""
import numpy as np

import cvxrank as cr

data = cr.make_ranking(n_queries=6, docs_per_query=(4, 9), n_features=3, random_state=1)
pairs = cr.make_pairs(data)
tau = {(2, 1): 1.0, (2, 0): 3.0, (1, 0): 0.5}
lam = 0.2

# mu_q of (10) and C_i of Theorem 1, computed with a plain loop.
per_query = {q: int(np.sum(pairs.query == j)) for j, q in enumerate(data.query_ids)}
most = max(per_query.values())
C = np.empty(pairs.n_pairs)
for i in range(pairs.n_pairs):
    q = data.query_ids[pairs.query[i]]
    mu = most / per_query[q]
    C[i] = tau[tuple(pairs.pair_type[i])] * mu / (2 * lam)
weights = 2 * lam * C                                   # tau * mu
print("C_i by hand equals theorem1_C:", np.allclose(C, cr.theorem1_C(cr.pair_weights(pairs, tau, "balanced"), lam)))

hinge = cr.solve(cr.build_hinge(pairs, weights, lam), "clarabel")   # (9)
qp = cr.solve(cr.build_primal(pairs, C), "clarabel")                # (14)
print("w of (9): ", hinge.w.round(6))
print("w of (14):", qp.w.round(6))
print("max |difference|:", f"{np.abs(hinge.w - qp.w).max():.1e}")

# L(w) = 2 lambda M(w) holds at any w, not only at the optimum.
rng = np.random.default_rng(0)
for _ in range(3):
    w = rng.standard_normal(3)
    L = cr.hinge_objective(pairs, w, weights, lam)
    M = cr.qp_objective(pairs, w, C)
    print(f"w = {w.round(3)}:  L = {L:.6f}  2 lambda M = {2 * lam * M:.6f}")
