"""Features without pair information (cvxrank.native.features): found exactly, mapped both ways, and a solve
through the door on data with them equals the solve without them."""

import numpy as np
import pytest
import scipy.sparse as sp

from cvxrank.data import RankingData
from cvxrank.exceptions import InaccurateSolutionWarning, ValidationError
from cvxrank.datasets import make_ranking
from cvxrank.native.features import feature_map
from cvxrank.pairs import make_pairs
from cvxrank.problem import RankingProblem
from cvxrank.solvers import solve
from tests.conftest import brute_force_pairs
from tests.test_native_shapes import redundant


def _data(seed=0, shuffle=True):
    data = redundant(make_ranking(n_queries=6, docs_per_query=(4, 9), n_features=5, random_state=seed))
    if not shuffle:
        return data
    perm = np.random.default_rng(seed).permutation(data.n_documents)  # queries interleaved
    return RankingData(np.asarray(data.X)[perm], y=data.y[perm], qid=data.qid[perm])


@pytest.mark.parametrize("shuffle", [False, True])
def test_finds_exactly_the_planted_columns(shuffle):
    data = _data(shuffle=shuffle)
    fmap = feature_map(np.asarray(data.X), data.query_index)
    # columns: x0, zeros, x1, query-level, x1, x2, x3, x3, x3, x4
    assert fmap.columns.tolist() == [0, 2, 5, 6, 9]
    assert fmap.group.tolist() == [0, -1, 1, -1, 1, 2, 3, 3, 3, 4]
    assert fmap.size.tolist() == [1, 2, 1, 3, 1]


def test_maps_keep_every_margin_and_the_norm():
    data = _data()
    X = np.asarray(data.X)
    fmap = feature_map(X, data.query_index)
    D, _, _ = brute_force_pairs(data)  # pairs written out by hand
    Dr, _, _ = brute_force_pairs(RankingData(fmap.reduce_x(X), y=data.y, qid=data.qid))
    rng = np.random.default_rng(0)
    for _ in range(5):
        u = rng.standard_normal(fmap.n_reduced)
        w = fmap.to_full(u)
        np.testing.assert_allclose(D @ w, Dr @ u, rtol=1e-12, atol=1e-12)
        assert float(w @ w) == pytest.approx(float(u @ u), rel=1e-14)
        np.testing.assert_allclose(fmap.to_reduced(w), u, rtol=1e-14, atol=1e-15)
        v = rng.standard_normal(X.shape[1])  # any w scores the pairs as E Eᵀ w does
        np.testing.assert_allclose(D @ v, D @ fmap.to_full(fmap.to_reduced(v)), rtol=1e-12, atol=1e-12)


def test_none_when_nothing_to_leave_out():
    data = make_ranking(n_queries=5, docs_per_query=(4, 8), n_features=4, random_state=0)
    X = np.asarray(data.X)
    assert feature_map(X, data.query_index) is None
    assert feature_map(sp.csr_matrix(X), data.query_index) is None  # sparse X: kept as it is
    assert feature_map(np.zeros_like(X), data.query_index) is None  # nothing to learn: the plain solve says w = 0


@pytest.mark.parametrize("lam", [0.05, 5.0])
def test_solve_equals_the_solve_without_the_redundant_columns(lam):
    """The same optimum as the data with only the informative columns, each group's weight split evenly."""
    data = _data(seed=1)
    X = np.asarray(data.X)
    fmap = feature_map(X, data.query_index)
    res = solve(RankingProblem(data, mu="balanced", lam=lam), "cutting_plane", tol=1e-9)
    ref = solve(RankingProblem(RankingData(fmap.reduce_x(X), y=data.y, qid=data.qid), mu="balanced", lam=lam),
                "clarabel", tol=1e-9)
    assert res.status == "optimal" and res.extras["features_solved"] == 5
    assert res.objective == pytest.approx(ref.objective, rel=1e-6)
    bound = res.distance_bound + ref.distance_bound
    assert np.linalg.norm(res.w - fmap.to_full(ref.w)) <= bound


def test_warm_start_and_explicit_pairs_map_back():
    """A warm start given on every feature, and a problem on explicit pairs stopped short (its pairwise
    certificate reads the planes' points, mapped back to all features)."""
    data = _data(seed=2)
    first = solve(RankingProblem(data, lam=0.5), "cutting_plane", tol=1e-8)
    warm = solve(RankingProblem(data, lam=0.4), "cutting_plane", tol=1e-8, warm_start_w=first.w)
    cold = solve(RankingProblem(data, lam=0.4), "cutting_plane", tol=1e-8)
    assert warm.status == cold.status == "optimal"
    assert np.linalg.norm(warm.w - cold.w) <= warm.distance_bound + cold.distance_bound
    with pytest.raises(ValidationError, match="warm_start_w must be 10 finite numbers"):
        solve(RankingProblem(data, lam=0.4), "cutting_plane", warm_start_w=np.ones(5))
    with pytest.warns(InaccurateSolutionWarning):
        short = solve(RankingProblem(make_pairs(data), lam=0.5), "cutting_plane", tol=1e-12, max_iter=3)
    assert short.w.shape == (10,) and short.status != "optimal"
    assert short.lower_bound <= first.objective * (1 + 1e-9)  # whichever bound it kept, below the optimum


def test_solver_x_is_the_matrix_every_oracle_call_reads(monkeypatch):
    """solver_x: the data's X itself when nothing applies; a small CSR X that is not very sparse becomes dense with
    its uninformative columns dropped, and the solve's oracle holds exactly that matrix."""
    from cvxrank.native.cutting_plane import solver_x
    from cvxrank.native.oracle import DENSE_MIN_ENTRIES, PairFreeOracle

    plain = make_ranking(n_queries=4, docs_per_query=(5, 8), n_features=4, random_state=1)
    X, fmap = solver_x(plain)
    assert X is plain.X and fmap is None

    rng = np.random.default_rng(0)
    m, n = 400, DENSE_MIN_ENTRIES // 400 + 2  # just above the size from which a sparse X may be kept dense
    dense = np.where(rng.random((m, n)) < 0.4, rng.standard_normal((m, n)), 0.0)
    dense[:, 3] = 0.0  # no pair information
    data = RankingData(sp.csr_matrix(dense), y=rng.integers(0, 3, m), qid=np.repeat(np.arange(20), m // 20))
    X, fmap = solver_x(data)
    assert isinstance(X, np.ndarray) and X.shape == (m, n - 1) and fmap is not None
    np.testing.assert_array_equal(X, np.delete(dense, 3, axis=1))
    held, original = {}, PairFreeOracle.from_data

    def spy(*args, **kwargs):
        held["X"] = kwargs["X"]
        return original(*args, **kwargs)

    monkeypatch.setattr(PairFreeOracle, "from_data", spy)
    solve(RankingProblem(data, lam=5.0), "cutting_plane", tol=1e-6)
    np.testing.assert_array_equal(held["X"], X)
