"""The pair-free oracle over query shards on a two-worker dask cluster (loopback only)."""

import numpy as np
import pytest

from cvxrank.datasets import make_ranking
from cvxrank.exceptions import ValidationError
from cvxrank.native import PairFreeOracle, cost_table

distributed = pytest.importorskip("distributed")

import itertools

from cvxrank.native.dask import DaskOracle, query_shards
from cvxrank.problem import RankingProblem
from cvxrank.solvers import solve
from tests.conftest import cluster_client


@pytest.fixture(scope="module")
def data():
    return make_ranking(n_queries=15, docs_per_query=(4, 14), n_features=4, n_grades=4, random_state=2)


def check_same_numbers(oracle, local, w):
    a = oracle(w, score_gradient=True)
    b = local(w, score_gradient=True)
    assert a.loss == pytest.approx(b.loss, rel=1e-12)
    assert a.violated_weight == pytest.approx(b.violated_weight, rel=1e-12)
    np.testing.assert_allclose(a.gradient, b.gradient, rtol=1e-12, atol=1e-12 * np.abs(b.gradient).max())
    np.testing.assert_allclose(a.score_gradient, b.score_gradient, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(a.counts, b.counts)
    assert a.counts_per_grade_pair() == b.counts_per_grade_pair()


def test_sharded_oracle_gives_the_local_numbers(client, data):
    costs = cost_table(data, {(1, 0): 1.0, (2, 0): 2.0, (2, 1): 1.5, (3, 0): 3.0, (3, 1): 2.5, (3, 2): 1.0},
                       "balanced")
    oracle = DaskOracle(client, data, costs, n_shards=3)
    local = PairFreeOracle.from_data(data, costs)
    assert len(oracle.shards) == 3 and oracle.shards[0][0] == 0 and oracle.shards[-1][1] == data.n_queries
    assert (oracle.n_pairs, oracle.total_weight) == (local.n_pairs, pytest.approx(local.total_weight))
    rng = np.random.default_rng(0)
    for w in (np.zeros(4), rng.standard_normal(4), 10 * rng.standard_normal(4)):
        check_same_numbers(oracle, local, w)
    oracle.close()


def test_solve_on_the_cluster_equals_the_local_solve(client, data):
    # planes only: the same iterates as the local planes from the same first point (over shards the solve starts at
    # w = 0; locally start="auto" would fit the grades first)
    problem = RankingProblem(data, mu="balanced", lam=0.05)
    planes = solve(problem, "cutting_plane", tol=1e-8, client=client, newton_gap=None)
    assert planes.extras["start"] == "zero"
    with pytest.raises(ValidationError, match="for the papers' margin of 1; not with a DaskOracle"):
        solve(problem, "cutting_plane", client=client, start="regression")
    local_planes = solve(problem, "cutting_plane", tol=1e-8, newton_gap=None, start="zero")
    assert planes.status == local_planes.status == "optimal"
    np.testing.assert_allclose(planes.w, local_planes.w, rtol=1e-6, atol=1e-9)
    assert planes.objective == pytest.approx(local_planes.objective, rel=1e-9)
    # the whole method (planes and Newton phase) on the cluster: the local solve's oracle calls and iterates
    whole = solve(problem, "cutting_plane", tol=1e-8, client=client)
    local = solve(problem, "cutting_plane", tol=1e-8, start="zero")
    assert whole.status == local.status == "optimal"
    assert whole.extras["oracle_calls"] == local.extras["oracle_calls"]
    assert "delta" in whole.history  # the Newton phase ran
    assert abs(whole.objective - local.objective) <= whole.gap_L + local.gap_L
    assert np.abs(whole.w - local.w).max() <= whole.distance_bound + local.distance_bound
    np.testing.assert_allclose(whole.w, local.w, rtol=1e-6, atol=1e-9)


def test_newton_parts_over_shards_add_up_to_the_local_evaluation(client, data):
    from cvxrank.native.newton import _point, point_from_parts, smoothed_parts

    costs = cost_table(data, None, "balanced")
    oracle = DaskOracle(client, data, costs, n_shards=3)
    local = PairFreeOracle.from_data(data, costs)
    w = np.random.default_rng(4).standard_normal(4)
    for delta in (0.5, 0.05):
        a = _point(oracle, 0.1, w, delta)
        b = _point(local, 0.1, w, delta)
        parts, _ = smoothed_parts(local, w, delta)
        parts["band"] = b["band"]
        c = point_from_parts(0.1, w, parts)
        for key in ("F", "Fd", "sg", "k"):
            assert a[key] == pytest.approx(b[key], rel=1e-12) and c[key] == pytest.approx(b[key], rel=1e-12)
        np.testing.assert_allclose(a["grad"], b["grad"], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(a["band"].H, b["band"].H, rtol=1e-12, atol=1e-12)
        D, cw, alpha = a["band"].differences()
        assert D.shape == (b["k"], 4) and cw.shape == alpha.shape == (b["k"],)
    assert oracle.rounds > 0 and oracle.bytes_received > 0
    oracle.close()


def test_bad_input(client, data):
    with pytest.raises(ValidationError, match="Client"):
        DaskOracle(object(), data)
    with pytest.raises(ValidationError, match="n_shards"):
        DaskOracle(client, data, n_shards=0)
    oracle = DaskOracle(client, data)  # one shard per worker by default
    assert len(oracle.shards) == 2
    with pytest.raises(ValidationError, match="4 entries"):
        oracle(np.zeros(3))
    oracle.close()
    with pytest.raises(ValidationError, match="oracle_threads is for the local oracle"):
        solve(RankingProblem(data, lam=1.0), "cutting_plane", client=client, oracle_threads=2)


def test_query_shards_cover_every_query():
    sizes = np.random.default_rng(1).integers(1, 50, 37)
    for k in (1, 2, 5, 37, 100):
        shards = query_shards(sizes, k)
        assert shards[0][0] == 0 and shards[-1][1] == 37
        assert all(a < b for a, b in shards) and all(s[1] == t[0] for s, t in itertools.pairwise(shards))
        assert len(shards) <= min(k, 37)


@pytest.mark.slow
def test_worker_processes(data):
    """Shards pickled to two worker processes give the same numbers."""
    cluster, client = cluster_client(processes=True)
    try:
        oracle = DaskOracle(client, data)
        check_same_numbers(oracle, PairFreeOracle.from_data(data), np.random.default_rng(3).standard_normal(4))
    finally:
        client.close()
        cluster.close()


@pytest.mark.slow
def test_a_lost_worker_is_a_clear_error(data):
    """Shards sent from the client cannot be re-made: a lost worker is a one-line SolverError, not a hang."""
    from cvxrank.exceptions import SolverError

    cluster, client = cluster_client(processes=False)
    try:
        oracle = DaskOracle(client, data, timeout=30.0)
        oracle(np.ones(4))
        client.sync(next(iter(cluster.workers.values())).close)
        # distributed names the lost futures FuturesCancelledError (recent releases) or CancelledError (older ones)
        with pytest.raises(SolverError, match=r"^a dask worker holding a shard was lost during an oracle call "
                                              r"\((Futures)?CancelledError\); its shards were sent from the client"):
            oracle(np.ones(4))
    finally:
        client.close()
        cluster.close()
