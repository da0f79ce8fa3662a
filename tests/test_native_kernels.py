"""The compiled sweeps of the pair-free oracle (cvxrank/native/_sweep.c) against its numpy path.

The two paths must agree bit for bit (the same floating-point test for every boundary, the sums added in the
same order): boundaries, violated weight, score gradient, counts, the band of the Newton phase and whole
solves, on inputs with ties, differences of exactly 1 and within an ulp of 1, empty and one-document grades,
zero weights and several shards. Where ties in score let two sorts differ in the order of tied documents, the
comparison is on what does not depend on it.
"""

import shutil

import numpy as np
import pytest

from cvxrank.data import RankingData
from cvxrank.exceptions import ValidationError
from cvxrank.native import PairFreeOracle, cost_table, cutting_plane, kernels
from cvxrank.native.band import band_pairs, margin_band
from cvxrank.native.newton import _evaluate
from cvxrank.problem import RankingProblem
from cvxrank.solvers import solve

compiled = pytest.mark.skipif(not kernels.COMPILED, reason="the compiled sweeps were not built (no C compiler)")


def _data(seed, m=160, n_queries=7, n_grades=4, grid=None):
    rng = np.random.default_rng(seed)
    qid = rng.integers(0, n_queries, m)
    X = rng.standard_normal((m, 3)) if grid is None else rng.integers(-grid, grid + 1, (m, 3)) * 0.5
    y = rng.integers(0, n_grades, m)
    return RankingData(X, y, qid)


def _pair(data, costs=None, threads=1):
    return (PairFreeOracle.from_data(data, costs, threads=threads, kernel="compiled"),
            PairFreeOracle.from_data(data, costs, threads=threads, kernel="numpy"))


def _score_cases(rng, m):
    """Distinct scores, a half grid (differences of exactly 1), values an ulp or two from integers, all equal."""
    return [rng.standard_normal(m) * 1.5, rng.integers(-4, 5, m) * 0.5,
            rng.integers(0, 3, m) + rng.integers(-3, 4, m) * np.spacing(1.0), np.zeros(m)]


@compiled
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("seed", range(4))
def test_bounds_violations_and_band_equal_the_numpy_path(seed, threads):
    data = _data(seed, n_grades=2 + seed)  # 2 to 5 grades
    costs = cost_table(data, tau=None, mu="balanced")
    c, n = _pair(data, costs, threads)
    rng = np.random.default_rng(seed)
    band_sizes = []
    for s in _score_cases(rng, data.n_documents):
        order = n._order(s)
        s_o = s[order]
        for margin in (1.0, 0.5, 2.0):
            for x, y in zip(c._bounds(s_o, margin), n._bounds(s_o, margin)):
                np.testing.assert_array_equal(x, y)
            np.testing.assert_array_equal(c._bounds(s_o, margin, hi=False)[0], n._bounds(s_o, margin)[0])
        W1, v1, t1, lo1, out1 = c._violations(s_o, order, counts=True, lo=True)
        W2, v2, t2, lo2, out2 = n._violations(s_o, order, counts=True, lo=True)
        assert W1 == W2 and out1 is None and out2 is None
        np.testing.assert_array_equal(v1, v2)
        np.testing.assert_array_equal(t1, t2)
        np.testing.assert_array_equal(lo1, lo2)
        for delta in (0.5, 0.1, 1e-3, 1e-12):
            a = c._violations(s_o / (1.0 - delta), order, s_band=s_o)
            b = n._violations(s_o / (1.0 - delta), order, s_band=s_o)
            assert a[0] == b[0] and a[2] is None and b[2] is None
            for x, y in zip(a[1::2], b[1::2]):
                np.testing.assert_array_equal(x, y)
            np.testing.assert_array_equal(a[3], b[3])
            for x, y in zip(band_pairs(c, order, a[4], a[3]), band_pairs(n, order, b[4], b[3])):
                np.testing.assert_array_equal(x, y)
            band_sizes.append(x.shape[0])
            for lower_only in (False, True):
                for x, y in zip(margin_band(c, s_o, order, delta, lower_only=lower_only),
                                margin_band(n, s_o, order, delta, lower_only=lower_only)):
                    np.testing.assert_array_equal(x, y)
    assert max(band_sizes) > 0  # the band comparisons compared pairs


@compiled
@pytest.mark.parametrize("threads", [1, 2])
def test_calls_from_the_previous_order_equal_the_numpy_path(threads):
    """Oracle calls along a sequence of points (small moves, a jump, ties): loss, W, v, Xᵀv and counts as the
    numpy path's; every order the insertion sort makes is grouped by query and sorted inside each query."""
    data = _data(7, m=300, n_queries=9, grid=2)  # features on a half grid: tied scores
    costs = cost_table(data, tau={(g, h): 1.0 + g - h for g in range(4) for h in range(g)}, mu="balanced")
    c, n = _pair(data, costs, threads)
    rng = np.random.default_rng(1)
    w = rng.standard_normal(3)
    steps = [1e-3, 1e-2, 0.3, 5.0, 0.0, 1e-6]
    for step in steps:
        w = w + step * rng.standard_normal(3)
        a, b = c(w, score_gradient=True), n(w, score_gradient=True)
        np.testing.assert_array_equal(a.score_gradient, b.score_gradient)
        np.testing.assert_array_equal(a.gradient, b.gradient)
        np.testing.assert_array_equal(a.counts, b.counts)
        # tied documents may sit in another order: W and the loss are sums over the sorted positions
        assert a.violated_weight == pytest.approx(b.violated_weight, rel=1e-13)
        assert a.loss == pytest.approx(b.loss, rel=1e-13, abs=1e-13)
        order = c._prev_order
        np.testing.assert_array_equal(np.sort(order), np.arange(data.n_documents))
        np.testing.assert_array_equal(c._qc[order], c._q_sorted)
        s = c.scores(w)
        assert np.all((np.diff(s[order]) >= 0) | c._new_query)


@compiled
def test_insertion_sort_gives_way_when_the_scores_moved_far():
    """A reversal of every query needs about L²/2 moves: the capped insertion sort returns False, the oracle
    sorts instead, and the order is exact either way."""
    from cvxrank.native.kernels import sweep

    data = _data(3, m=400, n_queries=2)
    oracle = PairFreeOracle.from_data(data, kernel="compiled")
    s = np.random.default_rng(0).standard_normal(data.n_documents)
    prev = oracle._order(s)
    out = np.empty_like(prev)
    assert sweep().resort(s, prev, oracle._offsets, 0, 2, out, 0)  # already sorted: no move at all
    np.testing.assert_array_equal(out, prev)
    assert not sweep().resort(-s, prev, oracle._offsets, 0, 2, out, 4 * data.n_documents)
    order = oracle._order(-s)
    assert np.all((np.diff(-s[order]) >= 0) | oracle._new_query)


@compiled
@pytest.mark.parametrize("lam", [0.05, 5.0])
def test_a_whole_solve_takes_the_same_steps(lam):
    """The default solve (planes, then Newton with its band) on both paths: the same iterates, so the same
    number of calls and the same objective and bound, and the result certified against the optimum."""
    data = _data(11, m=240, n_queries=6)
    costs = cost_table(data, tau=None, mu="balanced")
    c, n = _pair(data, costs)
    a = cutting_plane(c, lam, tol=1e-8)
    b = cutting_plane(n, lam, tol=1e-8)
    assert a.status == b.status == "optimal"
    assert a.oracle_calls == b.oracle_calls
    assert (a.objective, a.lower_bound) == (b.objective, b.lower_bound)
    np.testing.assert_array_equal(a.w, b.w)


@compiled
def test_newton_evaluation_equal_the_numpy_path():
    data = _data(5, m=200, n_queries=5)
    costs = cost_table(data, mu="balanced")
    c, n = _pair(data, costs)
    w = np.random.default_rng(2).standard_normal(3)
    for delta in (0.5, 0.05, 1e-3):
        a, b = _evaluate(c, 0.7, w, delta, budget=50), _evaluate(n, 0.7, w, delta, budget=50)
        for x, y in zip(a, b):
            for xi, yi in zip(x if isinstance(x, tuple) else (x,), y if isinstance(y, tuple) else (y,)):
                np.testing.assert_array_equal(np.asarray(xi), np.asarray(yi))


@compiled
def test_int64_grade_codes_and_zero_weights():
    """The sweeps read int32 or int64 grade codes; cells of weight 0 contribute nothing and no band pair."""
    data = _data(9, m=120, n_queries=4, n_grades=3)
    costs = cost_table(data, tau={(1, 0): 0.0, (2, 0): 2.0, (2, 1): 1.0})
    c, n = _pair(data, costs)
    c._gc = c._gc.astype(np.int64)
    s = np.random.default_rng(4).standard_normal(data.n_documents)
    order = n._order(s)
    s_o = s[order]
    a, b = c._violations(s_o, order, counts=True), n._violations(s_o, order, counts=True)
    assert a[0] == b[0]
    np.testing.assert_array_equal(a[1], b[1])
    np.testing.assert_array_equal(a[2], b[2])
    p_in = n._bounds(s_o / 0.9, hi=False)[0]
    p_out = n._below(s_o, p_in)
    bc, wc, cc = band_pairs(c, order, p_out, p_in)
    np.testing.assert_array_equal(cc, band_pairs(n, order, p_out, p_in)[2])
    assert np.all(cc > 0) and not np.any((data.y[bc] == 1) & (data.y[wc] == 0))


@compiled
def test_the_compiled_sweeps_reject_arrays_of_the_wrong_kind():
    """A wrong dtype or length is an internal error with a message, never a read out of bounds."""
    from cvxrank.native.kernels import sweep

    data = _data(1, m=50, n_queries=2)
    oracle = PairFreeOracle.from_data(data, kernel="compiled")
    s_o = np.sort(np.random.default_rng(0).standard_normal(50))
    p = np.empty(50, dtype=np.int64)
    with pytest.raises(ValueError, match="internal error: array p_lo"):
        sweep().bounds(s_o, oracle._offsets, 0, 2, 1.0, np.empty(50, dtype=np.int32), None)
    with pytest.raises(ValueError, match="internal error: array p_lo"):
        sweep().bounds(s_o, oracle._offsets, 0, 2, 1.0, np.empty(49, dtype=np.int64), None)
    with pytest.raises(ValueError, match="internal error: array p_lo is None"):
        sweep().bounds(s_o, oracle._offsets, 0, 2, 1.0, None, None)
    with pytest.raises(ValueError, match="query range"):
        sweep().bounds(s_o, oracle._offsets, 0, 3, 1.0, p, None)
    bad_order = np.arange(50, dtype=np.int64)
    bad_order[3] = 50
    with pytest.raises(ValueError, match="out of range"):
        sweep().violations(s_o, bad_order, oracle._gc, oracle._offsets, oracle._flat, oracle._G, 0, 2, 1.0,
                           np.empty(50), np.empty(50), None, None, None, None)


@compiled
@pytest.mark.parametrize("threads", [1, 2])
def test_band_counts_in_one_pass_equal_the_boundary_searches(threads):
    """Counts for eight margins in one pass against one numpy boundary search per margin, and the Newton phase's
    first width from them against the halving loop on the numpy path (ties, differences of exactly 1, within
    an ulp of 1)."""
    from cvxrank.native.newton import _fit_band

    data = _data(11, m=300, n_queries=6)
    c, n = _pair(data, cost_table(data, mu="balanced"), threads=threads)
    rng = np.random.default_rng(4)
    widths = [0.5 * 0.5 ** j for j in range(8)]
    for s in _score_cases(rng, data.n_documents):
        order = n._order(s)
        s_o = s[order]
        base = n._bounds(s_o, hi=False)[0]
        expected = [int((n._bounds(s_o, 1.0 - x, hi=False)[0] - base).sum()) for x in widths]
        assert c._band_counts(s_o, [1.0 - x for x in widths]).tolist() == expected
        for budget in (0, 3, 50, 10 ** 6):
            assert _fit_band(c, s_o, 0.5, budget) == _fit_band(n, s_o, 0.5, budget)


@compiled
def test_non_finite_scores_never_move_a_boundary_out_of_its_query():
    """An infinite or NaN score (the scaled scores of a width of 1, say) fails the test at ``p`` itself; the
    boundaries still stay in ``[start, p]``: garbage that callers reject, never a read or write out of bounds."""
    from cvxrank.native.kernels import sweep

    data = _data(2, m=60, n_queries=3)
    oracle = PairFreeOracle.from_data(data, kernel="compiled")
    start = oracle._start
    for bad in (np.inf, -np.inf, np.nan):
        s_o = np.full(60, bad)
        s_o[::7] = 0.5
        p_lo, p_hi = np.empty(60, dtype=np.int64), np.empty(60, dtype=np.int64)
        sweep().bounds(s_o, oracle._offsets, 0, 3, 1.0, p_lo, p_hi)
        pos = np.arange(60)
        assert np.all((start <= p_lo) & (p_lo <= pos)) and np.all((pos < p_hi) & (p_hi <= oracle._end))
        order = np.arange(60, dtype=np.int64)
        lower, upper, p_v = np.empty(60), np.empty(60), np.empty(60, dtype=np.int64)
        sweep().violations(s_o, order, oracle._gc, oracle._offsets, oracle._flat, oracle._G, 0, 3, 1.0,
                           lower, upper, p_v, None, None, None)
        assert np.all((start <= p_v) & (p_v <= pos))


def test_kernel_choice_is_checked(monkeypatch):
    data = _data(0, m=20, n_queries=2)
    with pytest.raises(ValidationError, match="kernel must be one of"):
        PairFreeOracle.from_data(data, kernel="fortran")
    monkeypatch.setattr(kernels, "COMPILED", False)
    with pytest.raises(ValidationError, match="no compiled sweeps"):
        kernels.check_kernel("compiled")
    assert kernels.check_kernel("auto") is False
    assert kernels.check_kernel("numpy") is False


@compiled
def test_more_grades_than_the_compiled_sweeps_take():
    data = _data(0, m=200, n_queries=2, n_grades=70)
    if np.unique(data.y).shape[0] <= 64:
        pytest.skip("fewer distinct grades drawn than needed")
    assert not PairFreeOracle.from_data(data)._compiled  # auto: the numpy path
    with pytest.raises(ValidationError, match="at most 64 grades"):
        PairFreeOracle.from_data(data, kernel="compiled")


@pytest.mark.skipif(shutil.which("gcc") is None and shutil.which("cc") is None, reason="no C compiler here")
def test_the_compiled_sweeps_are_built_where_a_compiler_is():
    """CI installs from a clean clone on a machine with gcc: the optional extension must have been built."""
    assert kernels.COMPILED, "cvxrank.native._sweep was not built although a C compiler is on PATH"


@compiled
def test_solve_pairfree_takes_the_oracle_kernel():

    data = _data(2, m=150, n_queries=5)
    a = solve(RankingProblem(data, mu="balanced", lam=0.3), "cutting_plane", oracle_kernel="compiled")
    b = solve(RankingProblem(data, mu="balanced", lam=0.3), "cutting_plane", oracle_kernel="numpy")
    assert a.status == b.status == "optimal"
    assert (a.objective, a.lower_bound) == (b.objective, b.lower_bound)
    with pytest.raises(ValidationError, match="kernel must be one of"):
        solve(RankingProblem(data, lam=0.3), "cutting_plane", oracle_kernel="gpu")


def test_oracle_kernel_is_refused_where_it_does_not_apply():
    """The margin variants run their own oracle: asking them for a kernel is an error, not ignored."""
    from cvxrank.problem import RankingProblem
    from cvxrank.variants import Variant

    data = _data(4, m=60, n_queries=3)
    problem = RankingProblem(data, lam=0.3, variant=Variant(margin="grade_difference"))
    with pytest.raises(ValidationError, match="oracle_kernel is for the local oracle"):
        solve(problem, "cutting_plane", oracle_kernel="numpy")
