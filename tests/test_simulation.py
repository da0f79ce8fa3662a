"""The ECML 2006 simulation (section 4.1): run_ecml_simulation and its result."""

import json

import numpy as np
import pandas as pd
import pytest

from cvxrank import build, make_pairs, pair_weights, solve
from cvxrank.exceptions import ValidationError
from cvxrank.experiments import (
    ECML_NS,
    ECML_TAU,
    METHODS,
    PAPER_ECML,
    SimulationResult,
    angle_degrees,
    run_ecml_simulation,
)

SMALL = (250, 50, 25)  # 20,000 pairs: about a second
TINY = (60, 12, 6)


@pytest.fixture(scope="module")
def small():
    return run_ecml_simulation(sizes=SMALL, random_state=0)


def ndcg_by_hand(y, scores, k):
    """NDCG@k of one query, (20)/SIGIR with gains 2^r - 1 and discount 1/log2(1 + j), written out."""
    def dcg(grades):
        grades = np.asarray(grades, dtype=float)[:k]
        return sum((2.0 ** g - 1.0) / np.log2(1.0 + j) for j, g in enumerate(grades, start=1))
    return dcg(y[np.argsort(-scores, kind="stable")]) / dcg(np.sort(y)[::-1])


def test_both_solutions_are_certified_optimal(small):
    assert isinstance(small, SimulationResult)
    assert small.certified
    for method in METHODS:
        res = small.results[method]
        assert res.status == "optimal"
        assert res.relative_gap <= 1e-6
        assert small.status[method]["status"] == "optimal"
    assert small.n_pairs == 250 * 50 + 250 * 25 + 50 * 25


def test_weights_match_an_independent_solve_with_another_formulation(small):
    pairs = make_pairs(small.data)
    for method, tau in (("ranksvm", None), ("cost_sensitive", ECML_TAU)):
        ref = solve(build(pairs, weights=pair_weights(pairs, tau), lam=small.lam, formulation="primal"))
        assert ref.found
        np.testing.assert_allclose(small.w[method], ref.w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cost_sensitive_direction_weighs_the_first_coordinate_more(seed):
    res = run_ecml_simulation(sizes=SMALL, random_state=seed)
    assert res.certified
    u = res.directions
    assert u["cost_sensitive"][0] > u["ranksvm"][0]
    assert res.angles["cost_sensitive"] < res.angles["ranksvm"]
    ours = res.ndcg["cost_sensitive"].to_numpy()
    theirs = res.ndcg["ranksvm"].to_numpy()
    assert (ours >= theirs - 1e-12).sum() > len(ECML_NS) / 2  # at most N


def test_directions_and_angles_are_consistent(small):
    for method in METHODS:
        w = small.w[method]
        np.testing.assert_allclose(np.linalg.norm(small.directions[method]), 1.0)
        np.testing.assert_allclose(small.directions[method] * np.linalg.norm(w), w)
        assert small.angles[method] == pytest.approx(np.degrees(np.arctan(w[1] / w[0])))


def test_ndcg_table_matches_a_hand_computation(small):
    assert list(small.ndcg.index) == list(ECML_NS)
    y = np.asarray(small.data.y)
    X = np.asarray(small.data.X)
    for method in METHODS:
        scores = X @ small.w[method]
        for n in (1, 10, 50, 100):
            assert small.ndcg.loc[n, method] == pytest.approx(ndcg_by_hand(y, scores, n), abs=1e-12)


def test_json_has_exactly_the_specified_core(small):
    doc = small.to_json()
    json.dumps(doc, allow_nan=False)
    assert {"w", "ndcg", "tau"} <= set(doc)
    assert set(doc["w"]) == {"ranksvm", "cost_sensitive"}
    assert all(len(v) == 2 and all(isinstance(x, float) for x in v) for v in doc["w"].values())
    assert set(doc["ndcg"]) == {"ranksvm", "cost_sensitive"}
    for values in doc["ndcg"].values():
        assert list(values) == [str(n) for n in ECML_NS]
    assert doc["tau"] == {"2-1": 1.0, "2-0": 1.0, "1-0": 0.1}
    assert doc["angles"]["ranksvm"] == pytest.approx(small.angles["ranksvm"])
    assert doc["status"]["cost_sensitive"]["status"] == "optimal"
    assert doc["paper"]["w"]["ranksvm"] == [0.53, 2.04]


def test_paper_constants_and_comparison(small):
    assert angle_degrees(PAPER_ECML["w"]["ranksvm"]) == pytest.approx(75.436, abs=1e-3)
    assert angle_degrees(PAPER_ECML["w"]["cost_sensitive"]) == pytest.approx(46.564, abs=1e-3)
    table = small.comparison()
    assert table.loc["angle", ("ranksvm", "paper")] == pytest.approx(75.436, abs=1e-3)
    assert table.loc["angle", ("cost_sensitive", "ours")] == pytest.approx(small.angles["cost_sensitive"])
    assert table.loc["NDCG@10", ("cost_sensitive", "paper")] == 1.0
    assert np.isnan(table.loc["NDCG@90", ("cost_sensitive", "paper")])
    assert table[("ranksvm", "paper")].loc[[f"NDCG@{n}" for n in ECML_NS]].isna().all()
    text = small.report()
    assert "75.4363" in text and "46.5640" in text
    assert text.count("optimal (clarabel") == 2


def test_given_tau_changes_the_answer_like_a_fresh_solve():
    tau = {(2, 1): 2.0, (2, 0): 3.0, (1, 0): 0.5}
    res = run_ecml_simulation(sizes=TINY, tau=tau, ns=(1, 5), lam=0.1, formulation="lifted")
    assert res.tau_source == "given" and res.tau == tau
    pairs = make_pairs(res.data)
    ref = solve(build(pairs, weights=pair_weights(pairs, tau), lam=0.1, formulation="hinge"))
    np.testing.assert_allclose(res.w["cost_sensitive"], ref.w, rtol=1e-5, atol=1e-6)
    assert list(res.ndcg.index) == [1, 5]


def test_tau_dataframe_is_accepted():
    df = pd.DataFrame({"higher": [2, 2, 1], "lower": [1, 0, 0], "tau": [1.0, 1.0, 0.1]})
    res = run_ecml_simulation(sizes=TINY, tau=df, ns=(1,))
    assert res.tau == ECML_TAU


def test_estimated_tau_is_the_fig1_heuristic_scaled():
    # One query whose top grade is r3: a swap changes NDCG@1 only when it moves
    # the top r3 document, with drop 1 - (2^b - 1)/(2^2 - 1): 2/3 for r3-r2, 1 for
    # r3-r1, 0 for r2-r1 (raised to tau_floor). Scaled by the largest: 2/3, 1, floor.
    res = run_ecml_simulation(sizes=TINY, tau="estimate", ns=(1,), tau_floor=0.02)
    assert res.tau_source == "estimate"
    assert res.tau[(2, 1)] == pytest.approx(2 / 3)
    assert res.tau[(2, 0)] == pytest.approx(1.0)
    assert res.tau[(1, 0)] == pytest.approx(0.02)
    assert res.tau_estimate["tau"].max() == pytest.approx(1 / TINY[2])
    assert "tau_estimate" in res.to_json()


@pytest.mark.parametrize("kwargs, match", [
    ({"ns": ()}, "ns must"),
    ({"ns": (0, 10)}, "ns must"),
    ({"ns": 5}, "ns must"),
    ({"tau": "guess"}, "tau must"),
    ({"tau_floor": 0.0}, "tau_floor"),
    ({"lam": -1.0}, "lam"),
    ({"sizes": (10, 5)}, "sizes"),
    ({"sizes": 7}, "sizes"),
    ({"tau": {(2, 1): 1.0}}, "no value for grade pairs"),
    ({"formulation": "nope"}, "unknown formulation"),
])
def test_bad_input_is_rejected_by_name(kwargs, match):
    with pytest.raises(ValidationError, match=match):
        run_ecml_simulation(**{"sizes": TINY, **kwargs})


def test_angle_needs_two_coordinates():
    with pytest.raises(ValidationError, match="2 coordinates"):
        angle_degrees([1.0, 2.0, 3.0])


@pytest.mark.slow
def test_the_papers_sizes_reproduce_the_reported_directions():
    # 1000/200/100 documents, 320,000 pairs; the pair-free solver certifies the same optimum in about
    # 0.6 s where the dual with Clarabel (the command line's default) takes about 25 s
    res = run_ecml_simulation(solver="cutting_plane")
    assert res.certified
    assert res.n_pairs == 320_000
    # The paper: 75.4 degrees (Ranking SVM) and 46.6 degrees (cost-sensitive).
    assert abs(res.angles["ranksvm"] - angle_degrees(PAPER_ECML["w"]["ranksvm"])) < 6
    assert abs(res.angles["cost_sensitive"] - angle_degrees(PAPER_ECML["w"]["cost_sensitive"])) < 3
    ours = res.ndcg["cost_sensitive"].to_numpy()
    assert np.all(ours >= res.ndcg["ranksvm"].to_numpy())
    assert res.ndcg.loc[1, "cost_sensitive"] == 1.0
