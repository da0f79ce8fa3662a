"""SolveResult.support_summary: the pairs by Theorem 1's box and by their margin, on a case solved by hand."""

import dataclasses

import numpy as np
import pytest

import cvxrank as cr
from cvxrank.exceptions import ValidationError
from cvxrank.variants import Variant

# The tutorial's toy problem: two queries, four pairs d = (1,-1), (2.5,1), (1.5,2), (1,2),
# tau mu = (1, 2, 0.5, 1.5), lambda = 2, so C = tau mu / (2 lambda) = (0.25, 0.5, 0.125, 0.375).
# By hand: w* = (0.5, 0.25), margins (0.25, 1.5, 1.25, 1), alpha* = (0.25, 0, 0, 0.25), and
# w* = sum alpha_i d_i = 0.25 (1,-1) + 0.25 (1,2) (16): pair 0 below the margin at alpha = C,
# pairs 1-2 above it at alpha = 0, pair 3 on it with 0 < alpha < C.
X = np.array([[3.0, 1.0], [2.0, 2.0], [0.5, 0.0], [1.0, 3.0], [0.0, 1.0]])
W_STAR = np.array([0.5, 0.25])
ALPHA_STAR = np.array([0.25, 0.0, 0.0, 0.25])


@pytest.fixture(scope="module")
def problem():
    data = cr.RankingData(X, y=[2, 1, 0, 1, 0], qid=[1, 1, 1, 2, 2])
    return cr.RankingProblem(data, tau={(2, 1): 1.0, (2, 0): 2.0, (1, 0): 0.5}, mu="balanced", lam=2.0)


@pytest.fixture(scope="module")
def solved(problem):
    return cr.solve(problem, "clarabel")


def at(result, w, alpha):
    """The result with ``w`` and the certificate's ``alpha`` replaced by the given (hand-made) values."""
    return dataclasses.replace(result, w=np.asarray(w, dtype=float),
                               certificate=dataclasses.replace(result.certificate, alpha=np.asarray(alpha, float)))


def test_hand_solved_optimum(problem, solved):
    np.testing.assert_allclose(problem.C, [0.25, 0.5, 0.125, 0.375])
    s = at(solved, W_STAR, ALPHA_STAR).support_summary(problem, tol=0.0, bins=[0.0, 0.5, 1.0, 1.5, 2.0])
    assert s["n_pairs"] == 4 and s["tol"] == 0.0
    assert s["alpha"] == {"zero": 2, "between": 1, "at_C": 1}
    assert s["margin"] == {"below": 1, "at": 1, "above": 2}
    assert s["table"].to_numpy().tolist() == [[0, 0, 2], [0, 1, 0], [1, 0, 0]]
    assert list(s["table"].index) == ["alpha = 0", "0 < alpha < C", "alpha = C"]
    assert list(s["table"].columns) == ["margin < 1", "margin = 1", "margin > 1"]
    assert s["violations"] == 0
    counts, edges = s["histogram"]  # margins 0.25 | - | 1.0, 1.25 | 1.5 (numpy: the last bin is closed)
    assert counts.tolist() == [1, 0, 2, 1] and edges.tolist() == [0.0, 0.5, 1.0, 1.5, 2.0]


def test_the_solvers_optimum_within_the_stated_tolerance(problem, solved):
    for result in (solved, cr.solve(cr.build_dual(problem), "clarabel")):
        s = result.support_summary(problem)  # tol 1e-6: the solver's alpha is 1e-10 off its box
        assert s["table"].to_numpy().tolist() == [[0, 0, 2], [0, 1, 0], [1, 0, 0]]
        counts, edges = s["histogram"]
        assert counts.shape == (10,) and edges.shape == (11,) and counts.sum() == 4
        assert edges[0] == pytest.approx(0.25) and edges[-1] == pytest.approx(1.5)
    # a Formulation gives its problem
    assert solved.support_summary(cr.build_dual(problem))["violations"] == 0


def test_cells_that_complementary_slackness_excludes_are_counted(problem, solved):
    # alpha_1 = C_1 above the margin (excluded), alpha_3 = 0 on the margin (allowed: m = 1, any alpha in the box)
    s = at(solved, W_STAR, [0.25, 0.5, 0.0, 0.0]).support_summary(problem, tol=0.0)
    assert s["table"].to_numpy().tolist() == [[0, 1, 1], [0, 0, 0], [1, 0, 1]]
    assert s["violations"] == 1
    # alpha = 0 below the margin and 0 < alpha < C off it are excluded too
    s = at(solved, W_STAR, [0.0, 0.2, 0.0, 0.25]).support_summary(problem, tol=0.0)
    assert s["table"].to_numpy().tolist() == [[1, 0, 1], [0, 1, 1], [0, 0, 0]]
    assert s["violations"] == 2


def test_the_tolerance_decides_near_the_edges(problem, solved):
    near = at(solved, W_STAR + [1e-7, 0.0], [0.25 * (1 - 1e-7), 1e-8, 0.0, 0.25])  # margin of pair 3: 1 + 1e-7
    assert near.support_summary(problem, tol=1e-6)["table"].to_numpy().tolist() == [[0, 0, 2], [0, 1, 0], [1, 0, 0]]
    exact = near.support_summary(problem, tol=0.0)
    assert exact["alpha"] == {"zero": 1, "between": 3, "at_C": 0} and exact["margin"]["at"] == 0


def test_refusals(problem, solved):
    with pytest.raises(ValidationError, match="no dual point"):
        cr.solve(problem, "cutting_plane").support_summary(problem)
    other = cr.RankingProblem(cr.make_ranking(n_queries=3, n_features=2, random_state=0), lam=2.0)
    with pytest.raises(ValidationError, match="pass the problem that was solved"):
        solved.support_summary(other)
    with pytest.raises(ValidationError, match="not a variant"):
        solved.support_summary(problem.with_variant(Variant(loss="squared_hinge")))
    for tol in (-1e-3, 1.0, "small", True):
        with pytest.raises(ValidationError, match="tol must be"):
            solved.support_summary(problem, tol=tol)
    with pytest.raises(ValidationError, match="RankingProblem"):
        solved.support_summary(X)
