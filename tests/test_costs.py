"""Tests of cvxrank.costs: tau, mu, pair weights and Theorem 1's C."""

import json

import numpy as np
import pandas as pd
import pytest

from cvxrank.costs import Costs, balanced_mu, check_lam, mu_per_pair, pair_weights, tau_per_pair, theorem1_C
from cvxrank.data import RankingData
from cvxrank.exceptions import ValidationError
from cvxrank.pairs import make_pairs, preference_pairs


@pytest.fixture
def pairs():
    # qid 5: grades 2, 1, 0, 1 -> types (2,1) x2, (2,0), (1,0) x2: 5 pairs.
    # qid 1: grades 1, 0       -> (1,0): 1 pair.
    # qid 9: grades 2, 2       -> no pair.
    X = np.arange(16.0).reshape(8, 2)
    y = [2, 1, 0, 1, 1, 0, 2, 2]
    qid = [5, 5, 5, 5, 1, 1, 9, 9]
    return make_pairs(RankingData(X, y, qid))


TAU = {(2, 1): 3.0, (2, 0): 5.0, (1, 0): 0.5}


def _by_hand_tau(pairs, tau):
    y = pairs.data.y
    return np.array([tau[(y[b], y[w])] for b, w in zip(pairs.better.tolist(), pairs.worse.tolist())])


def test_fixture_is_what_the_comments_say(pairs):
    assert pairs.n_pairs == 6
    assert pairs.pairs_per_query.tolist() == [1, 5, 0]  # query ids 1, 5, 9


def test_tau_mapping_per_pair(pairs):
    got = tau_per_pair(pairs, TAU)
    np.testing.assert_array_equal(got, _by_hand_tau(pairs, TAU))
    # and counted: 2 pairs (2,1), 1 pair (2,0), 3 pairs (1,0)
    assert sorted(got.tolist()) == [0.5, 0.5, 0.5, 3.0, 3.0, 5.0]


def test_tau_none_is_ones(pairs):
    np.testing.assert_array_equal(tau_per_pair(pairs), np.ones(6))


def test_tau_dataframe(pairs):
    df = pd.DataFrame({"higher": [1, 2, 2], "lower": [0, 0, 1], "tau": [0.5, 5.0, 3.0]})
    np.testing.assert_array_equal(tau_per_pair(pairs, df), _by_hand_tau(pairs, TAU))


def test_tau_float_grades():
    data = RankingData(np.eye(4), [0.5, 2.25, 1.0, 0.5], qid=[1, 1, 1, 1])
    pairs = make_pairs(data)
    tau = {(2.25, 1.0): 2.0, (2.25, 0.5): 4.0, (1.0, 0.5): 8.0}
    np.testing.assert_array_equal(tau_per_pair(pairs, tau), _by_hand_tau(pairs, tau))


def test_tau_for_preference_pairs():
    # Documented: explicit preference pairs all have type (1, 0).
    pairs = preference_pairs(np.eye(3), better=[0, 2], worse=[1, 1])
    np.testing.assert_array_equal(tau_per_pair(pairs, {(1, 0): 2.5}), [2.5, 2.5])
    data = RankingData(np.eye(3), [7, 7, 9], qid=[1, 1, 1])
    pairs = preference_pairs(data, better=[0], worse=[2])
    np.testing.assert_array_equal(tau_per_pair(pairs, {(1, 0): 4.0}), [4.0])


@pytest.mark.parametrize(
    "tau, pattern",
    [
        ({(1, 2): 3.0, (2, 0): 5.0, (1, 0): 0.5}, r"ordered the wrong way.*\(2, 1\)"),
        ({(1, 1): 1.0}, "ordered the wrong way"),
        ({**TAU, (3, 0): 1.0}, r"do not occur in the data: \[\(3, 0\)\]"),
        ({(2, 1): 3.0, (2, 0): 5.0}, r"no value for grade pairs \[\(1, 0\)\]"),
        ({**TAU, (2, 0): -1.0}, r"tau\[\(2, 0\)\] must be non-negative"),
        ({**TAU, (2, 0): np.nan}, r"tau\[\(2, 0\)\] must be non-negative and finite"),
        ({**TAU, (2, 0): np.inf}, r"tau\[\(2, 0\)\] must be non-negative and finite"),
        ({**TAU, (2, 0): "big"}, r"tau\[\(2, 0\)\] must be a non-negative number"),
        ({(2, 1): 0.0, (2, 0): 0.0, (1, 0): 0.0}, "every tau is 0"),
        ({**TAU, 2: 1.0}, "tau key 2 is not a"),
        ({**TAU, (2, 1, 0): 1.0}, r"tau key \(2, 1, 0\) is not a"),
        ({**TAU, ("a", 1): 1.0}, "comparable"),
        ([((2, 1), 3.0)], "tau must be None, a mapping"),
        (3.0, "tau must be None, a mapping"),
    ],
)
def test_tau_errors(pairs, tau, pattern):
    with pytest.raises(ValidationError, match=pattern):
        tau_per_pair(pairs, tau)


def test_tau_zero_drops_its_grade_pair(pairs):
    tau = {**TAU, (2, 0): 0.0}
    weights = pair_weights(pairs, tau=tau)
    types = [tuple(t) for t in pairs.pair_type.tolist()]
    assert all((w == 0.0) == (t == (2, 0)) for w, t in zip(weights, types))
    assert (2, 0) in types


def test_costs_value_round_trips_and_parses_cli_text():
    costs = Costs(tau={(2, 1): 3.0, (2, 0): 0.0, (1, 0): 0.5}, mu={"q1": 2.0, 7: 1.5})
    assert Costs.from_json(json.loads(json.dumps(costs.to_json()))) == costs
    assert Costs.from_text("2-1=3,2-0=0,1-0=0.5", "balanced") == Costs(tau=costs.tau, mu="balanced")
    explicit = Costs(weights=[1.0, 2.0])
    assert Costs.from_json(explicit.to_json()) == explicit and explicit.kind == "explicit"
    for text, pattern in [("2-1", "HIGHER-LOWER=VALUE"), ("2-1=x", "with numbers"), ("2-1=1,2-1=2", "twice"),
                          ("2-1=-1", "non-negative")]:
        with pytest.raises(ValidationError, match=pattern):
            Costs.from_text(text)
    with pytest.raises(ValidationError, match="not both"):
        Costs(tau={(1, 0): 1.0}, weights=[1.0])
    with pytest.raises(ValidationError, match="mu must be"):
        Costs.from_text(None, "sideways")


# -- mu -------------------------------------------------------------------------


def test_mu_none_is_ones(pairs):
    np.testing.assert_array_equal(mu_per_pair(pairs), np.ones(6))


def test_mu_balanced_is_equation_10(pairs):
    # Count pairs per query by hand: query 5 has 5, query 1 has 1, query 9 none.
    counts = {}
    for b in pairs.better.tolist():
        q = pairs.data.qid[b].item()
        counts[q] = counts.get(q, 0) + 1
    assert counts == {5: 5, 1: 1}
    top = max(counts.values())
    expected = [top / counts[pairs.data.qid[b].item()] for b in pairs.better.tolist()]
    np.testing.assert_allclose(mu_per_pair(pairs, "balanced"), expected)
    assert balanced_mu(pairs) == {1: 5.0, 5: 1.0}
    # Each query with pairs then carries the same total weight.
    mu = mu_per_pair(pairs, "balanced")
    totals = np.bincount(pairs.query, weights=mu, minlength=3)
    np.testing.assert_allclose(totals[pairs.pairs_per_query > 0], top)


def test_balanced_mu_string_qids():
    data = RankingData(np.eye(5), [1, 0, 2, 1, 0], qid=["a", "a", "b", "b", "b"])
    pairs = make_pairs(data)  # a: 1 pair, b: 3 pairs
    assert balanced_mu(pairs) == {"a": 3.0, "b": 1.0}
    assert all(type(k) is str for k in balanced_mu(pairs))


def test_mu_mapping(pairs):
    mu = {1: 2.0, 5: 0.25}
    got = mu_per_pair(pairs, mu)
    expected = [mu[pairs.data.qid[b].item()] for b in pairs.better.tolist()]
    np.testing.assert_array_equal(got, expected)
    # A value for the pairless query 9 is accepted and changes nothing.
    np.testing.assert_array_equal(mu_per_pair(pairs, {**mu, 9: 7.0}), expected)


@pytest.mark.parametrize(
    "mu, pattern",
    [
        ({1: 1.0, 5: 1.0, 42: 1.0}, r"not in the data: \[42\]"),
        ({1: 1.0}, r"no value for queries \[5\]"),
        ({1: 1.0, 5: -1.0}, r"mu\[5\] must be positive"),
        ({1: 1.0, 5: 0.0}, r"mu\[5\] must be positive"),
        ({1: 1.0, 5: np.nan}, r"mu\[5\] must be positive and finite"),
        ({1: 1.0, 5: np.inf}, r"mu\[5\] must be positive and finite"),
        ("balance", "mu must be None, 'balanced' or a mapping"),
        ([1.0, 2.0], "mu must be None, 'balanced' or a mapping"),
    ],
)
def test_mu_errors(pairs, mu, pattern):
    with pytest.raises(ValidationError, match=pattern):
        mu_per_pair(pairs, mu)


# -- weights and C ------------------------------------------------------------------


def test_pair_weights_is_tau_times_mu(pairs):
    mu = {1: 2.0, 5: 0.25}
    got = pair_weights(pairs, tau=TAU, mu=mu)
    by_hand = [
        TAU[(pairs.data.y[b], pairs.data.y[w])] * mu[pairs.data.qid[b].item()]
        for b, w in zip(pairs.better.tolist(), pairs.worse.tolist())
    ]
    np.testing.assert_allclose(got, by_hand)
    np.testing.assert_array_equal(pair_weights(pairs), np.ones(6))
    np.testing.assert_allclose(pair_weights(pairs, mu="balanced"), mu_per_pair(pairs, "balanced"))


def test_theorem1_C_by_hand():
    w = [1.0, 0.5, 3.0, 0.0]
    lam = 0.2
    np.testing.assert_allclose(theorem1_C(w, lam), [2.5, 1.25, 7.5, 0.0])
    np.testing.assert_allclose(theorem1_C(np.array(w), np.float64(2)), [0.25, 0.125, 0.75, 0.0])
    np.testing.assert_allclose(theorem1_C(w, 1), [0.5, 0.25, 1.5, 0.0])


@pytest.mark.parametrize("lam", [0, 0.0, -1.0, np.nan, np.inf, -np.inf, True, False, "1", None, [1.0]])
def test_bad_lam(lam):
    with pytest.raises(ValidationError, match="lam must be"):
        check_lam(lam)
    with pytest.raises(ValidationError, match="lam must be"):
        theorem1_C([1.0], lam)


def test_check_lam_returns_float():
    assert check_lam(3) == 3.0 and type(check_lam(np.int64(3))) is float


@pytest.mark.parametrize("weights", [[1.0, -0.5], [1.0, np.nan], [np.inf]])
def test_theorem1_C_bad_weights(weights):
    with pytest.raises(ValidationError, match="weights must be non-negative and finite"):
        theorem1_C(weights, 1.0)


def test_theorem1_C_two_dimensional_weights():
    with pytest.raises(ValidationError, match="1-dimensional"):
        theorem1_C([[1.0, 2.0]], 1.0)


def test_costs_and_a_problem_survive_pickle_and_copy():
    """Immutable, yet pickled (multiprocessing, a saved session) and copied like any value: the copy solves the same."""
    import copy
    import pickle

    from cvxrank.datasets import make_ranking
    from cvxrank.problem import RankingProblem

    costs = Costs(tau={(1, 0): 2.0, (2, 0): 3.0, (2, 1): 1.0}, mu="balanced")
    for twin in (pickle.loads(pickle.dumps(costs)), copy.deepcopy(costs), copy.copy(costs)):
        assert (twin.tau, twin.mu, twin.weights) == (costs.tau, costs.mu, costs.weights)
        with pytest.raises(AttributeError, match="immutable"):
            twin.tau = None
    problem = RankingProblem(make_ranking(n_queries=3, random_state=0), costs=costs, lam=0.3)
    twin = pickle.loads(pickle.dumps(problem))
    np.testing.assert_array_equal(twin.C, problem.C)
