"""τ estimation (Fig. 1 of Xu et al., ECML 2006) and the ECML simulation data."""

import itertools

import numpy as np
import pytest

from cvxrank.costs import estimate_tau, pair_weights
from cvxrank.data import RankingData
from cvxrank.datasets import ECML_MEANS, make_ecml_simulation, make_ranking
from cvxrank.exceptions import ValidationError
from cvxrank.metrics import ndcg_score
from cvxrank.pairs import make_pairs


def brute_force_expected_tau(data):
    """Literal Fig. 1 in expectation: every (d1, d2) swap of the perfect ranking, NDCG@1 drop, averaged."""
    out = {}
    grades = data.grades
    for a, b in itertools.combinations(grades[::-1], 2):  # a > b
        drops = []
        for q in data.query_ids:
            idx = np.flatnonzero(data.qid == q)
            y = data.y[idx]
            if not ((y == a).any() and (y == b).any()):
                continue
            perfect = idx[np.argsort(-y, kind="stable")]  # ties in input order
            per_swap = []
            for d1 in perfect[data.y[perfect] == a]:
                for d2 in perfect[data.y[perfect] == b]:
                    order = perfect.copy()
                    i, j = np.flatnonzero(order == d1)[0], np.flatnonzero(order == d2)[0]
                    order[i], order[j] = order[j], order[i]
                    s = np.zeros(len(idx))  # scores in document order: rank 1 highest
                    s[np.searchsorted(idx, order)] = -np.arange(len(order), dtype=float)
                    per_swap.append(1.0 - ndcg_score(y, s, np.zeros(len(idx)), k=1, ties="stable"))
            drops.append(np.mean(per_swap))
        out[(a.item(), b.item())] = float(np.mean(drops))
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_expected_tau_matches_literal_swaps(seed):
    data = make_ranking(n_queries=5, docs_per_query=(4, 7), n_grades=4, random_state=seed)
    table = estimate_tau(data, T=None)
    expected = brute_force_expected_tau(data)
    got = {(r.higher, r.lower): r.tau for r in table.itertuples()}
    assert got.keys() == expected.keys()
    for key in expected:
        assert got[key] == pytest.approx(expected[key], abs=1e-12), key


def test_simulated_tau_converges_and_is_reproducible():
    data = make_ranking(n_queries=8, n_grades=3, random_state=4)
    exact = estimate_tau(data, T=None)
    a = estimate_tau(data, T=200_000, random_state=7)
    b = estimate_tau(data, T=200_000, random_state=7)
    np.testing.assert_array_equal(a["tau"], b["tau"])
    np.testing.assert_allclose(a["tau"], exact["tau"], atol=5e-3)
    c = estimate_tau(data, T=5, random_state=8)
    assert not np.array_equal(c["tau"], a["tau"])


def test_hand_example_and_use_as_tau():
    # One query, grades 2,1,0,0. Perfect NDCG@1 = 1. Only swapping the grade-2 document moves the top:
    # (2,1): drop 1 - (2^1-1)/(2^2-1) = 2/3; (2,0): drop 1; (1,0): the top never moves, 0.
    data = RankingData(np.eye(4), [2, 1, 0, 0], [1, 1, 1, 1])
    table = estimate_tau(data, T=None)
    got = {(r.higher, r.lower): r.tau for r in table.itertuples()}
    assert got == {(1, 0): 0.0, (2, 0): 1.0, (2, 1): pytest.approx(2 / 3)}
    pairs = make_pairs(data)
    # A zero tau drops its grade pair: pairs (2,1), (2,0), (2,0), (1,0), (1,0).
    assert pair_weights(pairs, tau=table).tolist() == pytest.approx([2 / 3, 1.0, 1.0, 0.0, 0.0])
    # With the zero replaced by a floor, the table works as tau (pairs: (2,1), (2,0), (2,0), (1,0), (1,0)).
    floored = {**got, (1, 0): 0.1}
    assert pair_weights(pairs, tau=floored).tolist() == pytest.approx([2 / 3, 1.0, 1.0, 0.1, 0.1])


def test_average_over_queries_with_both_grades_or_over_all_queries():
    # q1: grades 2,1,0,0 (drops by hand: (2,1) 2/3, (2,0) 1, (1,0) 0, the top never moves);
    # q2: grades 1,0 (its top is the one grade-1 document: (1,0) drop 1 - (2^0-1)/(2^1-1) = 1);
    # q3: grades 0,0 (no grade pair at all). Three queries in all.
    data = RankingData(np.zeros((8, 1)), [2, 1, 0, 0, 1, 0, 0, 0], [1, 1, 1, 1, 2, 2, 3, 3])
    both = estimate_tau(data, T=None)
    assert both.attrs == {"average": "queries_with_both", "n_queries_total": 3}
    assert {(r.higher, r.lower): (r.tau, r.n_queries) for r in both.itertuples()} == {
        (1, 0): (pytest.approx(0.5), 2),       # (0 + 1) / 2 queries with grades 1 and 0
        (2, 0): (pytest.approx(1.0), 1),       # 1 / 1
        (2, 1): (pytest.approx(2 / 3), 1)}     # (2/3) / 1
    every = estimate_tau(data, T=None, average="all_queries")
    assert every.attrs["average"] == "all_queries"
    assert {(r.higher, r.lower): (r.tau, r.n_queries) for r in every.itertuples()} == {
        (1, 0): (pytest.approx(1 / 3), 2),     # (0 + 1 + 0) / 3: q3 adds a drop of 0
        (2, 0): (pytest.approx(1 / 3), 1),     # (1 + 0 + 0) / 3
        (2, 1): (pytest.approx(2 / 9), 1)}     # (2/3 + 0 + 0) / 3
    # with swaps drawn, the two differ by the factor |Q_ab| / |Q| on the same draws
    a = estimate_tau(data, T=50, random_state=3)
    b = estimate_tau(data, T=50, random_state=3, average="all_queries")
    np.testing.assert_allclose(b["tau"], a["tau"] * a["n_queries"] / 3, rtol=1e-15)
    with pytest.raises(ValidationError, match="average must be one of"):
        estimate_tau(data, average="queries")


def test_bad_input():
    with pytest.raises(ValidationError, match="takes RankingData"):
        estimate_tau(np.eye(3))
    with pytest.raises(ValidationError, match="at least two grades"):
        estimate_tau(RankingData(np.eye(3), [1, 1, 1], [1, 1, 2]))
    with pytest.raises(ValidationError, match="grades >= 0"):
        estimate_tau(RankingData(np.eye(3), [-1, 0, 1], [1, 1, 1]))
    for T in (0, -3, 2.5, True):
        with pytest.raises(ValidationError, match="T must be"):
            estimate_tau(make_ranking(random_state=0), T=T)


def test_ecml_simulation_data():
    data = make_ecml_simulation(random_state=0)
    assert data.n_documents == 1300 and data.n_features == 2 and data.n_queries == 1
    assert np.bincount(data.y).tolist() == [1000, 200, 100]
    for grade, mean in enumerate(ECML_MEANS):
        assert np.allclose(data.X[data.y == grade].mean(axis=0), mean, atol=0.3)
    assert make_pairs(data).n_pairs == 1000 * 200 + 1000 * 100 + 200 * 100
    with pytest.raises(ValidationError, match="three positive integers"):
        make_ecml_simulation(sizes=(10, 0, 5))
