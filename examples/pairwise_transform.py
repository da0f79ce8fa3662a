r"""
# The pairwise transform, primal and dual

Teaches: how Ranking SVM turns ranking into a classification of pairs, and how the QP (14) and its
dual (18)-(19) of SIGIR 2006 give the same w, with the support vectors read off the dual.

Ranking SVM turns a ranking problem into a classification of pairs: inside each query, every two
documents with different grades give a pair $d_i = x_{better} - x_{worse}$ that should score
$\langle w, d_i \rangle \ge 1$. The QP (14) of SIGIR 2006 and its dual (18)-(19) give the same $w$ through
$w = \sum_i \alpha_i d_i$ (16).
"""
import numpy as np

import cvxrank as cr

# Two queries, five documents, two features.
X = np.array([[3.0, 1.0], [2.0, 2.0], [0.5, 0.0],     # query 1: grades 2, 1, 0
              [1.0, 3.0], [0.0, 1.0]])                # query 2: grades 1, 0
data = cr.RankingData(X, y=[2, 1, 0, 1, 0], qid=[1, 1, 1, 2, 2])
pairs = cr.make_pairs(data)
print(pairs.summary, "\n")
print("pairs (better, worse, grade pair) and d_i = x_better - x_worse:")
D = pairs.difference_matrix()
for b, w, t, d in zip(pairs.better, pairs.worse, pairs.pair_type.tolist(), D):
    print(f"  doc {b} over doc {w}  type {tuple(t)}  d = {d}")
print("D = P X holds:", np.allclose(D, pairs.P @ X), "\n")

C = cr.theorem1_C(np.ones(pairs.n_pairs), lam=0.5)   # C_i = 1 (Ranking SVM, C = 1/(2 lambda))
primal = cr.solve(cr.build_primal(pairs, C=C), "clarabel")
dual = cr.solve(cr.build_dual(pairs, C=C), "clarabel")
print("primal w:", primal.w.round(6), "  dual w = D^T alpha:", (D.T @ dual.alpha).round(6))
print("alpha:", dual.alpha.round(4), " (0 <= alpha_i <= C_i = 1)")
margins = D @ primal.w
for m, a in zip(margins, dual.alpha):
    kind = "support vector, margin 1" if 1e-6 < a < 1 - 1e-6 else ("alpha = C, margin < 1" if a >= 1 - 1e-6
                                                                   else "alpha = 0, margin >= 1")
    print(f"  margin {m:7.4f}  alpha {a:.4f}  {kind}")
print(f"primal M(w) = {primal.qp_objective:.8f}, dual L_D(alpha) = {cr.dual_objective(pairs, dual.alpha):.8f}, "
      f"certified relative gap {primal.relative_gap:.1e}")
