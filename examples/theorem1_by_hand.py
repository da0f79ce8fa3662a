r"""
# Theorem 1 of SIGIR 2006, checked by hand

Teaches: Theorem 1 of Cao et al. (SIGIR 2006) as numbers: the per-pair C_i = tau mu / (2 lambda)
computed by hand, the same minimiser for (9) and (14), and L(w) = 2 lambda M(w) at every w.

The weighted hinge problem (9),
$\min_w \sum_i \tau_{k(i)} \mu_{q(i)} [1 - \langle w, d_i \rangle]_+ + \lambda \|w\|^2$, and the QP (14),
$\min \frac12 \|w\|^2 + \sum_i C_i \xi_i$ s.t. $\langle w, d_i \rangle \ge 1 - \xi_i$, $\xi \ge 0$, have the same
minimiser when $C_i = \tau_{k(i)} \mu_{q(i)} / (2 \lambda)$, and $L(w) = 2 \lambda M(w)$ at every $w$.

The figure is saved as PNG and PDF into the folder named by the environment variable
`CVXRANK_FIGURES` (default: a new temporary folder), and shown when matplotlib can show windows.
"""
import os

import matplotlib.pyplot as plt
import numpy as np

import cvxrank as cr
from cvxrank.plots import interactive_backend, plot_weighted_hinge, save_figures

data = cr.make_ranking(n_queries=6, docs_per_query=(4, 9), n_features=3, random_state=1)
pairs = cr.make_pairs(data)
tau = {(2, 1): 1.0, (2, 0): 3.0, (1, 0): 0.5}
lam = 0.2

# %%
# ## The per-pair costs by hand
# `mu_q` of (10) and `C_i` of Theorem 1, computed with a plain loop and compared with `theorem1_C`.
per_query = {q: int(np.sum(pairs.query == j)) for j, q in enumerate(data.query_ids)}
most = max(per_query.values())
C = np.empty(pairs.n_pairs)
for i in range(pairs.n_pairs):
    q = data.query_ids[pairs.query[i]]
    mu = most / per_query[q]
    C[i] = tau[tuple(pairs.pair_type[i])] * mu / (2 * lam)
weights = 2 * lam * C                                   # tau * mu
print("C_i by hand equals theorem1_C:", np.allclose(C, cr.theorem1_C(cr.pair_weights(pairs, tau, "balanced"), lam)))

# %%
# ## The same minimiser
# The hinge form (9) with weights `tau mu` and the QP (14) with `C_i`, each solved by Clarabel.
hinge = cr.solve(cr.build_hinge(pairs, weights=weights, lam=lam), "clarabel")   # (9)
qp = cr.solve(cr.build_primal(pairs, C=C), "clarabel")                # (14)
print("w of (9): ", hinge.w.round(6))
print("w of (14):", qp.w.round(6))
print("max |difference|:", f"{np.abs(hinge.w - qp.w).max():.1e}")

# %%
# ## L(w) = 2 lambda M(w) at any w
# With `xi_i = [1 - <w, d_i>]_+`, the two objectives are proportional everywhere, not only at the optimum.
rng = np.random.default_rng(0)
for _ in range(3):
    w = rng.standard_normal(3)
    L = cr.hinge_objective(pairs, w, weights, lam)
    M = cr.qp_objective(pairs, w, C)
    print(f"w = {w.round(3)}:  L = {L:.6f}  2 lambda M = {2 * lam * M:.6f}")

# %%
# ## The picture
# Left: the pair losses of (9) are hinges with slopes `tau mu` (Fig. 2 of SIGIR 2006), one per cost
# value of this problem. Right: both objectives along a line through the minimiser; the curve of
# `2 lambda M` lies on that of `L`, and both bottom out at `t = 0`.
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
plot_weighted_hinge([weights.min(), np.median(weights), weights.max()], ax=left,
                    title="pair losses of (9): smallest, median, largest tau mu")
direction = rng.standard_normal(3)
direction /= np.linalg.norm(direction)
t = np.linspace(-1.0, 1.0, 101)
line = [qp.w + s * direction for s in t]
L_line = [cr.hinge_objective(pairs, w, weights, lam) for w in line]
M_line = [cr.qp_objective(pairs, w, C) for w in line]
right.plot(t, L_line, lw=3, color="0.75", label="L(w*+tv), (9)")
right.plot(t, 2 * lam * np.array(M_line), "k--", label="2 lambda M(w*+tv), (14)")
right.set(xlabel="t", ylabel="objective", title="L = 2 lambda M along a line through w*")
right.legend(frameon=False)

# %%
# ## Saving and showing the figure
# `save_figures` writes it as PNG (for screens) and PDF (for papers and slides) into a new temporary
# folder, or into the folder `CVXRANK_FIGURES` names; `plt.show()` runs only when the backend can
# show a window (not in the docs build, the tests or a session without a display).
folder = os.environ.get("CVXRANK_FIGURES")   # None: a new temporary folder
paths = save_figures({"theorem1_by_hand": fig}, folder)
names = ", ".join(os.path.basename(p) for p in paths)
print(f"figure saved: {names} in {os.path.dirname(paths[0])}")
if interactive_backend():
    plt.show()
