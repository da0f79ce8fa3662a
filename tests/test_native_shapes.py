"""The pair-free solver on the shapes of data people have, in miniature, against Clarabel and explicit pairs.

Shapes (the benchmark ``cvxrank bench native --instances shapes`` runs them at full size): a LETOR-like sample
(sparse, many features for its documents), the ``make_ranking`` shape, sparse high-dimensional data (more features
than documents), one large query, heavy ties (features rounded so that many scores and margins tie) and redundant
features (zero, query-level and repeated columns, which the solve leaves out and maps back). On each,
at several λ: the certified solution agrees with Clarabel's within the two certificates, and every lower bound the
run records lies below the optimum.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from cvxrank.costs import pair_weights, theorem1_C
from cvxrank.data import RankingData
from cvxrank.datasets import make_ranking
from cvxrank.formulations import build_primal
from cvxrank.native import PairFreeOracle, cost_table
from cvxrank.objectives import hinge_objective
from cvxrank.pairs import make_pairs
from cvxrank.problem import RankingProblem
from cvxrank.solvers import solve
from tests.conftest import assert_agree, brute_force_pairs


def _rounded(data, step):
    """``data`` with every feature rounded to a multiple of ``step``: many documents share scores."""
    X = data.X.copy()
    if sp.issparse(X):
        X.data = np.round(X.data / step) * step
        X.eliminate_zeros()
    else:
        X = np.round(X / step) * step
    return RankingData(X, y=data.y, qid=data.qid)


def shape(name, seed):
    if name == "letor_like":  # sparse, a third of the entries, features ~ documents / 10
        return make_ranking(n_queries=8, docs_per_query=(5, 15), n_features=12, n_grades=5, density=0.33,
                            random_state=seed)
    if name == "make_ranking":
        return make_ranking(n_queries=10, docs_per_query=(4, 12), n_features=6, random_state=seed)
    if name == "sparse_wide":  # more features than documents, a few non-zeros a row
        return make_ranking(n_queries=6, docs_per_query=(5, 10), n_features=120, density=0.04, random_state=seed)
    if name == "one_query":
        return make_ranking(n_queries=1, docs_per_query=(70, 70), n_features=5, n_grades=4, random_state=seed)
    if name == "ties":
        return _rounded(make_ranking(n_queries=6, docs_per_query=(8, 16), n_features=4, random_state=seed), 1.0)
    if name == "redundant":
        return redundant(make_ranking(n_queries=8, docs_per_query=(5, 12), n_features=5, random_state=seed))
    raise AssertionError(name)


def redundant(data):
    """``data`` with the columns of real LETOR sets that carry no pair information: all zeros, constant within
    each query (a query-level feature), and copies of a feature (two of one, three of another)."""
    X = np.asarray(data.X)
    _, q = np.unique(data.qid, return_inverse=True)
    query_level = np.random.default_rng(1).standard_normal(q.max() + 1)[q]
    cols = [X[:, 0], np.zeros(len(X)), X[:, 1], query_level, X[:, 1], X[:, 2], X[:, 3], X[:, 3], X[:, 3], X[:, 4]]
    return RankingData(np.column_stack(cols), y=data.y, qid=data.qid)


SHAPES = ["letor_like", "make_ranking", "sparse_wide", "one_query", "ties", "redundant"]
LAMS = [0.05, 0.5, 5.0, 500.0]


def _clarabel(data, lam, mu):
    pairs = make_pairs(data)
    weights = pair_weights(pairs, mu=mu)
    res = solve(build_primal(pairs, C=theorem1_C(weights, lam)), "clarabel", tol=1e-7)
    assert res.status == "optimal"
    return res, pairs, weights


@pytest.mark.parametrize("name", SHAPES)
@pytest.mark.parametrize("lam", LAMS)
def test_shape_agrees_with_clarabel_and_every_bound_is_below_the_optimum(name, lam):
    data = shape(name, seed=LAMS.index(lam))
    ref, pairs, weights = _clarabel(data, lam, "balanced")
    res = solve(RankingProblem(data, mu="balanced", lam=lam), "cutting_plane", tol=1e-8)
    assert res.status == "optimal" and res.relative_gap <= 1e-8
    assert_agree(res, ref)
    assert res.objective == pytest.approx(hinge_objective(pairs, res.w, weights, lam), rel=1e-12)
    lower_ref = 2 * lam * (ref.qp_objective - ref.gap_M)  # Clarabel's certified lower bound on the optimum
    upper_ref = 2 * lam * ref.qp_objective  # its point: an upper bound on the optimum
    h = res.history
    assert np.all(h["dual_objective"] <= upper_ref * (1 + 1e-10) + 1e-12)
    assert res.objective >= lower_ref * (1 - 1e-10)
    if name == "redundant":  # solved on 5 columns: w back on all 10, equal weights on equal features
        assert res.extras["features_solved"] == 5 and res.w.shape == (10,)
        assert res.w[1] == res.w[3] == 0.0
        assert res.w[2] == res.w[4] and res.w[6] == res.w[7] == res.w[8]


@pytest.mark.parametrize("name", ["ties", "one_query", "sparse_wide"])
def test_ties_count_as_explicit_pairs(name):
    """The oracle's loss and subgradient against the pairs written out by hand, at points where many margins are
    exactly 0 or exactly 1 (tied scores, integer features and weights): a tie gives a violated pair, a margin of
    exactly 1 does not."""
    data = _rounded(shape(name, 0), 1.0)
    D, c, _ = brute_force_pairs(data, mu="balanced")
    oracle = PairFreeOracle.from_data(data, cost_table(data, mu="balanced"))
    rng = np.random.default_rng(0)
    n = data.n_features
    for w in [np.zeros(n), np.eye(n)[0], np.eye(n)[0] + np.eye(n)[-1], rng.integers(-1, 2, n).astype(float)]:
        m = D @ w
        assert np.any(m == 1.0) or np.any(m == 0.0)
        r = oracle(w, counts=False)
        violated = m < 1.0
        assert r.loss == pytest.approx(float(c @ np.maximum(1.0 - m, 0.0)), rel=1e-12, abs=1e-12)
        assert r.violated_weight == pytest.approx(float(c[violated].sum()), rel=1e-12, abs=1e-12)
        np.testing.assert_allclose(r.gradient, -(D[violated].T @ c[violated]), rtol=1e-12, atol=1e-10)


@pytest.mark.parametrize("lam", [0.05, 5.0])
def test_heavy_ties_certified_like_the_rest(lam):
    """Features on a coarse grid put many pairs exactly on the margin at the optimum; the solve is certified and
    agrees with Clarabel."""
    data = _rounded(make_ranking(n_queries=4, docs_per_query=(10, 20), n_features=3, random_state=7), 1.0)
    ref, _, _ = _clarabel(data, lam, None)
    res = solve(RankingProblem(data, lam=lam), "cutting_plane", tol=1e-8)
    assert_agree(res, ref)
