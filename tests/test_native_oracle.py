"""The pair-free oracle against the explicit-pair computation (loss, subgradient, counts)."""

from collections import Counter

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from cvxrank.costs import pair_weights
from cvxrank.data import RankingData
from cvxrank.exceptions import ValidationError
from cvxrank.native import (
    PairFreeOracle,
    cost_table,
    cost_table_from_pairs,
    grade_counts,
)
from cvxrank.pairs import make_pairs, preference_pairs


def random_instance(seed, *, integer=False, sparse=False):
    """Queries of 1-14 documents (some with one grade), tied grades, shuffled qids, random costs."""
    rng = np.random.default_rng(seed)
    while True:
        sizes = rng.integers(1, 15, rng.integers(2, 7))
        m = int(sizes.sum())
        qid = np.repeat(rng.permutation(1000)[:sizes.size], sizes)[rng.permutation(m)]
        y = rng.integers(0, 4, m)
        if integer:  # half-integer features and integer w: many tied scores, margins exactly 1
            X = rng.integers(-3, 4, (m, 3)) * 0.5
            w = rng.integers(-2, 3, 3).astype(float)
        else:
            X = rng.standard_normal((m, 3))
            w = rng.standard_normal(3)
        if sparse:
            X = sp.csr_matrix(X * (rng.random(X.shape) < 0.6))
        data = RankingData(X, y, qid)
        try:
            pairs = make_pairs(data)
        except ValidationError:
            continue
        tau = {t: float(rng.uniform(0.5, 2.0)) for t in pairs.types}
        mu = "balanced" if seed % 2 else {q.item(): float(rng.uniform(0.5, 2.0)) for q in data.query_ids}
        return data, pairs, tau, mu, w


def explicit(pairs, weights, w):
    margins = pairs.margins(w)
    violated = margins < 1
    loss = float(weights @ np.maximum(0.0, 1.0 - margins))
    gradient = -pairs.rmatvec(np.where(violated, weights, 0.0))
    v = -(pairs.P.T @ np.where(violated, weights, 0.0))
    return loss, gradient, violated, v


CASES = [pytest.param(seed, integer, sparse, id=f"seed{seed}-{'int' if integer else 'float'}{'-sparse' if sparse else ''}")
         for seed in range(8) for integer in (False, True) for sparse in (False, True)]


@pytest.mark.parametrize("seed, integer, sparse", CASES)
def test_oracle_equals_explicit_pairs(seed, integer, sparse):
    data, pairs, tau, mu, w = random_instance(seed, integer=integer, sparse=sparse)
    weights = pair_weights(pairs, tau, mu)
    oracle = PairFreeOracle.from_data(data, cost_table(data, tau, mu))
    r = oracle(w, score_gradient=True)
    loss, gradient, violated, v = explicit(pairs, weights, w)
    assert r.loss == pytest.approx(loss, rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(r.gradient, gradient, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(r.score_gradient, v, rtol=1e-12, atol=1e-12)
    assert r.violated_weight == pytest.approx(weights[violated].sum(), rel=1e-12, abs=1e-12)
    # counts, exactly
    assert r.n_violated == int(violated.sum())
    by_type = Counter(tuple(t) for t in pairs.pair_type[violated].tolist())
    assert {k: c for k, c in r.counts_per_grade_pair().items() if c} == dict(by_type)
    np.testing.assert_array_equal(r.counts_per_query(), np.bincount(pairs.query[violated], minlength=data.n_queries))
    assert oracle.n_pairs == pairs.n_pairs
    assert oracle.total_weight == pytest.approx(weights.sum(), rel=1e-12)
    # the cutting plane is a minorant of the loss, tight at w
    other = np.random.default_rng(seed).standard_normal(3)
    assert r.gradient @ other + r.violated_weight <= explicit(pairs, weights, other)[0] + 1e-9
    assert r.gradient @ w + r.violated_weight == pytest.approx(loss, rel=1e-10, abs=1e-10)


@pytest.mark.parametrize("seed, integer, sparse", CASES[::3])
def test_loss_alone_is_the_full_evaluations_loss(seed, integer, sparse):
    """``oracle.loss(w)``: the explicit pairs' loss, and bit for bit the full evaluation's (sorted from the last
    order, and from scratch); NaN scores are refused as there."""
    data, pairs, tau, mu, w = random_instance(seed, integer=integer, sparse=sparse)
    oracle = PairFreeOracle.from_data(data, cost_table(data, tau, mu))
    loss = explicit(pairs, pair_weights(pairs, tau, mu), w)[0]
    for point in (w, 0.5 * w):
        full = oracle(point, counts=False).loss
        assert oracle.loss(point) == full
        oracle.reset_order()
        assert oracle.loss(point) == full
    assert oracle.loss(w) == pytest.approx(loss, rel=1e-12, abs=1e-12)
    with pytest.raises(ValidationError, match="NaN"):
        oracle.loss(np.full(3, np.nan))


def test_integer_instances_have_margins_exactly_one():
    """The tie cases the test above relies on do occur."""
    hits = 0
    for seed in range(8):
        _data, pairs, _tau, _mu, w = random_instance(seed, integer=True)
        hits += int(np.sum(pairs.margins(w) == 1.0))
    assert hits > 0


def test_boundary_rounding_matches_explicit_subtraction():
    """Scores on a 0.1 grid: s_i - s_j is 1 only up to rounding, and the oracle must use the same test."""
    rng = np.random.default_rng(3)
    m = 400
    qid = rng.integers(0, 4, m)
    y = rng.integers(0, 3, m)
    data = RankingData(np.zeros((m, 1)), y, qid)
    pairs = make_pairs(data)
    oracle = PairFreeOracle.from_data(data)
    for offset in (0.0, 1e6, -3.3e7):
        s = offset + rng.integers(0, 40, m) * 0.1
        margins = pairs.P @ s
        near = np.abs(margins - 1) < 1e-6
        assert np.any(near & (margins < 1)) or np.any(near & (margins >= 1))
        r = oracle.evaluate_scores(s)
        violated = margins < 1
        assert r.n_violated == int(violated.sum())
        expected = float(np.maximum(0.0, 1.0 - margins).sum())
        assert r.loss == pytest.approx(expected, rel=1e-9)
        np.testing.assert_allclose(r.score_gradient, -(pairs.P.T @ violated.astype(float)), atol=1e-9)


def test_exact_correction_where_searchsorted_rounds(monkeypatch):
    """Thousands of queries (large offsets in the sort key) and differences within an ulp of 1:
    the approximate bounds are wrong for many documents and the exact search must fix every one."""
    import cvxrank.native.oracle as module

    searched = []
    original = module._search
    monkeypatch.setattr(module, "_search", lambda *a: searched.append(len(a[1])) or original(*a))
    rng = np.random.default_rng(0)
    Q = 3000
    data = RankingData(np.zeros((4 * Q, 1)), np.tile([2, 1, 1, 0], Q), np.repeat(np.arange(Q), 4))
    x = rng.uniform(-3, 3, Q)
    s = np.empty((Q, 4))
    s[:, 0] = x
    s[:, 1:] = x[:, None] - 1 + rng.integers(-6, 7, (Q, 3)) * np.spacing(1.0)
    s = s.ravel()
    pairs = make_pairs(data)
    margins = pairs.P @ s
    assert np.sum(margins == 1.0) > 100 and np.sum((margins < 1) & (margins > 1 - 1e-12)) > 100
    violated = margins < 1
    for kernel in ("numpy", "auto"):  # the numpy path corrects searchsorted; the compiled one has no search
        r = PairFreeOracle.from_data(data, kernel=kernel).evaluate_scores(s)
        assert kernel == "auto" or sum(searched) > 100  # the correction did run
        assert r.n_violated == int(violated.sum())
        np.testing.assert_array_equal(r.counts_per_query(), np.bincount(pairs.query[violated], minlength=Q))
        np.testing.assert_allclose(r.score_gradient, -(pairs.P.T @ violated.astype(float)), atol=0)


def _brute_bounds(s_o, start, end, margin):
    """p_lo and p_hi of PairFreeOracle._bounds by scanning every pair with the same subtraction."""
    m = s_o.shape[0]
    p_lo = np.array([next(k for k in range(start[p], end[p]) if s_o[p] - s_o[k] < margin) for p in range(m)])
    p_hi = np.array([next((k for k in range(p + 1, end[p]) if not s_o[k] - s_o[p] < margin), end[p])
                     for p in range(m)])
    return p_lo, p_hi


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("kernel", ["numpy", "auto"])
def test_bounds_and_band_floor_against_a_scan(seed, kernel):
    """p_hi read off p_lo by counting, and below_bound walking down from a bound at a smaller margin, against
    a scan of every pair: ties, scores on a half grid (differences exactly 1) and within an ulp of 1."""
    from cvxrank.native.oracle import below_bound

    rng = np.random.default_rng(seed)
    m = 120
    qid = np.sort(rng.integers(0, 6, m))
    data = RankingData(np.zeros((m, 1)), rng.integers(0, 3, m), qid)
    oracle = PairFreeOracle.from_data(data, kernel=kernel)
    for kind in range(3):
        if kind == 0:
            s = rng.integers(-4, 5, m) * 0.5
        elif kind == 1:
            s = rng.standard_normal(m) * 1.5
        else:
            s = rng.integers(0, 3, m) + rng.integers(-3, 4, m) * np.spacing(1.0)
        s_o = s[oracle._order(s)]
        p_lo, p_hi = oracle._bounds(s_o)
        lo, hi = _brute_bounds(s_o, oracle._start, oracle._end, 1.0)
        np.testing.assert_array_equal(p_lo, lo)
        np.testing.assert_array_equal(p_hi, hi)
        for delta in (0.9, 0.3, 1e-3, 1e-12):
            p_in, _ = oracle._bounds(s_o / (1.0 - delta), hi=False)
            np.testing.assert_array_equal(below_bound(s_o, oracle._start, p_in), np.minimum(lo, p_in))
            np.testing.assert_array_equal(oracle._below(s_o, p_in), np.minimum(lo, p_in))


@pytest.mark.parametrize("kernel", ["numpy", "auto"])
def test_order_from_the_previous_call_is_exact(kernel):
    """The adaptive re-sort from the last order, over a sequence of score vectors: small changes, ties,
    a reversal, tiny differences at a huge offset and a range near overflow (which fall back to a full
    sort); every order is grouped by query and sorted inside each query."""
    rng = np.random.default_rng(5)
    m = 300
    data = RankingData(np.zeros((m, 1)), rng.integers(0, 3, m), rng.integers(0, 9, m))
    oracle = PairFreeOracle.from_data(data, kernel=kernel)
    s = rng.standard_normal(m)
    sequence = [s, s + 1e-3 * rng.standard_normal(m), np.round(s, 1), -s, 1e12 + s * 1e-4,
                np.where(rng.random(m) < 0.5, 1e307, -1e307) * rng.random(m), s]
    for x in sequence:
        order = oracle._order(x)
        np.testing.assert_array_equal(np.sort(order), np.arange(m))
        np.testing.assert_array_equal(oracle._qc[order], oracle._q_sorted)
        x_o = x[order]
        assert np.all((np.diff(x_o) >= 0) | oracle._new_query)
        assert oracle._prev_order is order


def test_many_queries_take_the_lexsort_path():
    data, _pairs, tau, mu, w = random_instance(5)
    oracle = PairFreeOracle.from_data(data, cost_table(data, tau, mu))
    fast = oracle(w)
    oracle._q16 = None  # what happens with more than 65,536 queries
    slow = oracle(w)
    assert slow.loss == pytest.approx(fast.loss, rel=1e-13)
    np.testing.assert_array_equal(slow.counts, fast.counts)


def test_hand_computed_example():
    # one query, grades 2 > 1 > 0, scores 0, 0.5, 0.5 (a tie), unit weights
    data = RankingData(np.array([[0.0], [0.5], [0.5]]), y=[2, 1, 0], qid=[1, 1, 1])
    r = PairFreeOracle.from_data(data)(np.array([1.0]), score_gradient=True)
    # pairs (0>1): margin -0.5, loss 1.5; (0>2): -0.5, 1.5; (1>2): 0, 1
    assert r.loss == pytest.approx(4.0)
    assert r.violated_weight == 3.0
    assert r.score_gradient.tolist() == [-2.0, 0.0, 2.0]
    assert r.counts_per_grade_pair() == {(1, 0): 1, (2, 0): 1, (2, 1): 1}
    # w = 0: every pair has margin 0 < 1; gradient Xᵀv = 0·(-2) + 0.5·0 + 0.5·2
    r0 = PairFreeOracle.from_data(data)(np.zeros(1))
    assert (r0.loss, r0.violated_weight, r0.gradient.tolist()) == (3.0, 3.0, [1.0])


def test_satisfied_pairs_count_nothing():
    data = RankingData(np.array([[3.0], [1.0], [0.0]]), y=[2, 1, 0], qid=[1, 1, 1])
    r = PairFreeOracle.from_data(data)(np.array([1.0]))
    # margins 2, 3 and 1: the last is exactly on the margin, hinge 0 and not violated
    assert (r.loss, r.violated_weight, r.n_violated) == (0.0, 0.0, 0)
    np.testing.assert_array_equal(r.gradient, [0.0])


# -- the cost table --------------------------------------------------------------
@pytest.mark.parametrize("seed", range(4))
def test_cost_table_matches_pair_weights(seed):
    data, pairs, tau, mu, _w = random_instance(seed)
    table = cost_table(data, tau, mu)
    weights = pair_weights(pairs, tau, mu)
    grades = table.grades
    a = np.searchsorted(grades, pairs.pair_type[:, 0])
    b = np.searchsorted(grades, pairs.pair_type[:, 1])
    np.testing.assert_allclose(table.weight_of(pairs.query, a, b), weights, rtol=1e-14)
    assert table.total_pairs == pairs.n_pairs
    back = cost_table_from_pairs(pairs, weights)
    np.testing.assert_allclose(back.values, table.values, rtol=1e-14)


def test_cost_table_accepts_a_tau_frame_and_zero_tau():
    data = RankingData(np.eye(5), [2, 1, 0, 1, 0], qid=[1, 1, 1, 2, 2])
    frame = pd.DataFrame({"higher": [1, 2, 2], "lower": [0, 0, 1], "tau": [0.0, 3.0, 2.0]})
    table = cost_table(data, frame, None)
    assert table.values[0, 2, 1] == 2.0 and table.values[0, 1, 0] == 0.0 and table.values[1, 1, 0] == 0.0
    assert table.total_weight == 5.0


def test_balanced_mu_without_pairs():
    data, pairs, _tau, _mu, _w = random_instance(1)
    table = cost_table(data, None, "balanced")
    counts = pairs.pairs_per_query
    expected = np.where(counts > 0, counts.max() / np.maximum(counts, 1), 0.0)
    np.testing.assert_allclose(table.values.max(axis=(1, 2)), expected)


@pytest.mark.parametrize("tau, mu, message", [
    ({(2, 1): 1.0}, None, "no value for grade pairs"),
    ({(2, 1): 1.0, (2, 0): 1.0, (1, 0): 1.0, (9, 0): 1.0}, None, "do not occur"),
    ({(1, 2): 1.0, (2, 0): 1.0, (1, 0): 1.0}, None, "wrong way"),
    ({(2, 1): -1.0, (2, 0): 1.0, (1, 0): 1.0}, None, "non-negative"),
    ("bad", None, "mapping"),
    (None, "other", "balanced"),
    (None, {1: 1.0, 99: 1.0}, "not in the data"),
    (None, {1: 1.0}, "no value for queries"),
    (None, {1: 0.0, 2: 1.0}, "positive"),
])
def test_cost_table_rejects_bad_costs(tau, mu, message):
    data = RankingData(np.eye(5), [2, 1, 0, 1, 0], qid=[1, 1, 1, 2, 2])
    with pytest.raises(ValidationError, match=message):
        cost_table(data, tau, mu)


def test_cost_table_rejects_data_without_pairs_or_weight():
    with pytest.raises(ValidationError, match="no pairs"):
        cost_table(RankingData(np.eye(2), [1, 1], qid=[1, 2]))
    with pytest.raises(ValidationError, match="weight 0|every tau is 0"):
        cost_table(RankingData(np.eye(2), [1, 0], qid=[1, 1]), {(1, 0): 0.0})


def test_weights_not_constant_in_a_cell_point_to_explicit_solvers():
    data, pairs, tau, mu, _w = random_instance(2)
    weights = pair_weights(pairs, tau, mu)
    weights[0] *= 1.5
    with pytest.raises(ValidationError, match="explicit-pair solver"):
        cost_table_from_pairs(pairs, weights)
    prefs = preference_pairs(data, [0], [1]) if data.qid[0] == data.qid[1] else None
    explicit_pairs = prefs or preference_pairs(np.eye(3), better=[0], worse=[1])
    with pytest.raises(ValidationError, match="explicit-pair solver"):
        cost_table_from_pairs(explicit_pairs, np.ones(1))


def test_grade_counts_and_oracle_validation():
    data = RankingData(np.eye(3), [2, 0, 1], qid=[1, 1, 2])
    grades, codes, counts = grade_counts(data)
    assert grades.tolist() == [0, 1, 2] and codes.tolist() == [2, 0, 1]
    assert counts.tolist() == [[1, 0, 1], [0, 1, 0]]
    oracle = PairFreeOracle.from_data(data)
    with pytest.raises(ValidationError, match="3 entries"):
        oracle(np.zeros(2))
    with pytest.raises(ValidationError, match="NaN"):
        oracle.evaluate_scores([0.0, np.nan, 1.0])
    with pytest.raises(ValidationError, match="no violation counts"):
        oracle(np.zeros(3), counts=False).counts_per_query()
    with pytest.raises(ValidationError, match="non-negative"):
        PairFreeOracle(np.eye(2), [0, 0], [1, 0], -np.ones((1, 2, 2)))
    with pytest.raises(ValidationError, match="out of range"):
        PairFreeOracle(np.eye(2), [0, 1], [1, 0], np.ones((1, 2, 2)))
    with pytest.raises(ValidationError, match="other data"):
        PairFreeOracle.from_data(data, cost_table(RankingData(np.eye(2), [1, 0], qid=[1, 1])))



def test_a_small_and_not_very_sparse_x_is_kept_dense(monkeypatch):
    """The oracle keeps a sparse X dense when at least a quarter of its entries are stored and it has 2^16 to 2^22
    entries, with the numbers of the CSR form; a very sparse or a tiny X stays as given."""
    from cvxrank.native import oracle as oracle_module

    rng = np.random.default_rng(0)
    m, n = 1_200, 60  # 72,000 entries
    data = {d: RankingData(sp.random(m, n, density=d, format="csr", random_state=rng), y=rng.integers(0, 3, m),
                           qid=np.arange(m) // 40) for d in (0.3, 0.1)}
    w = rng.standard_normal(n)
    kept = {d: PairFreeOracle.from_data(data[d]) for d in data}
    assert isinstance(kept[0.3].X, np.ndarray) and sp.issparse(kept[0.1].X)
    monkeypatch.setattr(oracle_module, "DENSE_SHARE", 2.0)  # never dense: the CSR form
    as_given = PairFreeOracle.from_data(data[0.3])
    assert sp.issparse(as_given.X)
    a, b = kept[0.3](w), as_given(w)
    assert a.loss == pytest.approx(b.loss, rel=1e-13) and a.violated_weight == pytest.approx(b.violated_weight)
    np.testing.assert_allclose(a.gradient, b.gradient, rtol=1e-12, atol=1e-12)
    monkeypatch.undo()
    tiny = PairFreeOracle.from_data(RankingData(sp.csr_matrix(np.ones((5, 4))), y=[0, 1, 2, 0, 1], qid=[0] * 5))
    assert sp.issparse(tiny.X)
