"""The pair-free oracle in threads over shards of whole queries gives the single-threaded results."""

import numpy as np
import pytest

from cvxrank.data import RankingData
from cvxrank.exceptions import ValidationError
from cvxrank.native import PairFreeOracle, cost_table
from cvxrank.native.newton import _evaluate
from cvxrank.native.oracle import _shards
from cvxrank.problem import RankingProblem
from cvxrank.solvers import solve


def _instance(sizes, seed, ties):
    """Queries of the given sizes, 4 grades; ``ties``: features on a coarse grid (equal scores in a query)."""
    rng = np.random.default_rng(seed)
    qid = np.repeat(np.arange(len(sizes)), sizes)
    rng.shuffle(qid)  # documents of a query not contiguous in the input
    m = qid.shape[0]
    X = rng.integers(-2, 3, (m, 3)) * 0.5 if ties else rng.standard_normal((m, 3))
    y = rng.integers(0, 4, m)
    return RankingData(X, y, qid)


SIZES = {
    "several": [7, 1, 12, 5, 9, 3],
    "one_large": [30, 4, 3, 2],  # a query larger than half the documents
    "one_query": [25],
    "shards_of_one_query": [6, 8, 7],  # 3 threads: every shard one query
}


@pytest.mark.parametrize("threads", [2, 3])
@pytest.mark.parametrize("ties", [False, True], ids=["distinct", "ties"])
@pytest.mark.parametrize("case", list(SIZES))
def test_threads_match_one_thread(case, ties, threads):
    data = _instance(SIZES[case], seed=len(case), ties=ties)
    costs = cost_table(data, mu="balanced")
    one = PairFreeOracle.from_data(data, costs, threads=1)
    many = PairFreeOracle.from_data(data, costs, threads=threads)
    assert one.n_threads == 1
    # fewer shards than threads where one query spans several cuts; one query, one shard
    assert many.n_threads == (1 if case == "one_query" else 2 if case == "one_large" else threads)
    rng = np.random.default_rng(0)
    w = rng.standard_normal(3)
    for step in range(4):  # the first call sorts from scratch, the next ones from the last order
        w = w + 0.1 * step * rng.standard_normal(3)
        a = one(w, score_gradient=True)
        b = many(w, score_gradient=True)
        # exact: v, X^T v and the counts do not depend on how the shards are cut or on the order of ties
        np.testing.assert_array_equal(b.score_gradient, a.score_gradient)
        np.testing.assert_array_equal(b.gradient, a.gradient)
        np.testing.assert_array_equal(b.counts, a.counts)
        if ties:
            # tied scores may sit in another order: W and the loss are sums over the sorted positions
            assert b.violated_weight == pytest.approx(a.violated_weight, rel=1e-12, abs=1e-12)
            assert b.loss == pytest.approx(a.loss, rel=1e-12, abs=1e-12)
        else:
            assert (b.violated_weight, b.loss, b.rounding) == (a.violated_weight, a.loss, a.rounding)
        s = one.scores(w)
        order = one._order(s)
        s_o = s[order]
        for margin in (1.0, 0.5 + rng.random(s.shape[0])):
            for x, y in zip(one._bounds(s_o, margin), many._bounds(s_o, margin)):
                np.testing.assert_array_equal(x, y)
        p_lo, p_hi = one._bounds(s_o)
        W1, v1, t1 = one._sums(s_o, order, p_lo, p_hi, counts=True)
        W2, v2, t2 = many._sums(s_o, order, p_lo, p_hi, counts=True)
        assert W1 == W2  # the same order here: the same sum
        np.testing.assert_array_equal(v1, v2)
        np.testing.assert_array_equal(t1, t2)


def test_newton_evaluation_matches_one_thread():
    data = _instance([40, 25, 3, 31, 12], seed=3, ties=False)
    costs = cost_table(data, mu="balanced")
    one = PairFreeOracle.from_data(data, costs, threads=1)
    many = PairFreeOracle.from_data(data, costs, threads=2)
    w = np.random.default_rng(1).standard_normal(3) * 0.3
    for delta in (0.5, 0.1, 0.01):
        a = _evaluate(one, 0.5, w, delta, budget=200)
        b = _evaluate(many, 0.5, w, delta, budget=200)
        assert len(_flat(a)) == 10
        for x, y in zip(_flat(a), _flat(b)):
            np.testing.assert_array_equal(x, y)


def _flat(values):
    """``_evaluate``'s results (F, F_δ, gradient, Hessian, (L, u, u_B), band size, smoothed gap, δ) flattened."""
    out = []
    for x in values:
        out.extend(_flat(x) if isinstance(x, tuple) else [x])
    return out


def test_solve_same_iterates():
    data = _instance([40, 25, 3, 31, 12], seed=4, ties=False)
    a = solve(RankingProblem(data, mu="balanced", lam=0.05), "cutting_plane", oracle_threads=1)
    b = solve(RankingProblem(data, mu="balanced", lam=0.05), "cutting_plane", oracle_threads=2)
    np.testing.assert_array_equal(a.w, b.w)
    assert a.extras["oracle_calls"] == b.extras["oracle_calls"]
    assert a.relative_gap <= 1e-6


def test_automatic_threads_small_data_one_thread():
    data = _instance([5, 6], seed=0, ties=False)
    assert PairFreeOracle.from_data(data).threads == 1  # the default: one thread
    auto = PairFreeOracle.from_data(data, threads=None)
    assert auto.threads is None and auto.n_threads == 1  # automatic: one thread below AUTO_THREADS_MIN


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True])
def test_bad_threads(bad):
    data = _instance([5, 6], seed=0, ties=False)
    with pytest.raises(ValidationError, match="threads must be a positive int or None"):
        PairFreeOracle.from_data(data, threads=bad)
    with pytest.raises(ValidationError, match="oracle_threads must be a positive int or None"):
        solve(RankingProblem(data, lam=1.0), "cutting_plane", oracle_threads=bad)


def test_shards_cut_at_query_boundaries():
    assert _shards(np.array([0, 3, 10, 11, 20]), 2) == [(0, 10, 0, 2), (10, 20, 2, 4)]
    assert _shards(np.array([0, 18, 19, 20]), 3) == [(0, 18, 0, 1), (18, 20, 1, 3)]
    assert _shards(np.array([0, 0, 5, 5, 10]), 2) == [(0, 5, 0, 2), (5, 10, 2, 4)]  # empty queries
    assert _shards(np.array([0, 20]), 2) == [(0, 20, 0, 1)]
