"""The cutting planes' first point: the grades' least-squares fit, scaled to its best multiple (cvxrank.native.start)."""

import numpy as np
import pytest
import scipy.sparse as sp

from cvxrank.data import RankingData
from cvxrank.datasets import make_ranking
from cvxrank.exceptions import ValidationError
from cvxrank.native import PairFreeOracle, cost_table
from cvxrank.native.start import regression_start
from cvxrank.problem import RankingProblem
from cvxrank.solvers import solve
from cvxrank.variants import Variant
from tests.conftest import assert_agree


def centred_least_squares(data):
    """``argmin_w Σ_q ‖P_q (X_q w − y_q)‖²`` by numpy's least squares on the centred rows."""
    X = data.X.toarray() if sp.issparse(data.X) else np.asarray(data.X, dtype=float)
    y = np.asarray(data.y, dtype=float)
    Xc, yc = X.copy(), y.copy()
    for q in np.unique(data.qid):
        rows = data.qid == q
        Xc[rows] -= Xc[rows].mean(axis=0)
        yc[rows] -= yc[rows].mean()
    return np.linalg.lstsq(Xc, yc, rcond=None)[0]


def objective(problem, w):
    """(9) at ``w`` with the pairs written out."""
    return problem.hinge_objective(w)


@pytest.mark.parametrize("seed", range(4))
def test_enough_iterations_reach_the_centred_least_squares_fit(seed):
    data = make_ranking(n_queries=6, docs_per_query=(5, 12), n_features=4, random_state=seed)
    oracle = PairFreeOracle.from_data(data, cost_table(data))
    first = regression_start(oracle, 0.5, iterations=12)  # CGLS ends within n = 4 iterations, up to rounding
    assert first.scale > 0
    np.testing.assert_allclose(first.w / first.scale, centred_least_squares(data), rtol=1e-8, atol=1e-12)
    assert first.products <= 2 * 12 + 2  # two products an iteration, one before and one for the ray


@pytest.mark.parametrize("seed, lam", [(0, 0.05), (1, 0.5), (2, 5.0), (3, 500.0)])
def test_the_scale_is_the_best_multiple_of_the_fit(seed, lam):
    data = make_ranking(n_queries=8, docs_per_query=(6, 14), n_features=5, n_grades=3 + seed % 2, random_state=seed)
    problem = RankingProblem(data, lam=lam, mu="balanced")
    oracle = PairFreeOracle.from_data(data, cost_table(data, None, "balanced"))
    first = regression_start(oracle, lam)
    # the objective the start reports is (9) at its point, computed here from explicit pairs
    assert first.objective == pytest.approx(objective(problem, first.w), rel=1e-12)
    assert first.objective < oracle.total_weight  # below F(0)
    # no multiple of the fit is better by more than the search's proved 1 % of its decrease from F(0)
    v = first.w / first.scale
    grid = [objective(problem, g * v) for g in np.linspace(0.0, 4.0 * first.scale, 401)]
    assert min(grid) <= first.objective + 1e-12 * first.objective  # the grid holds the start's own scale
    assert first.objective - min(grid) <= 1e-2 * (grid[0] - first.objective) + 1e-12 * first.objective


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("lam", [0.05, 5.0])
def test_solves_from_the_fit_and_from_zero_certify_the_same_optimum(seed, lam):
    data = make_ranking(n_queries=7, docs_per_query=(6, 14), n_features=5, n_grades=3 + seed % 2,
                        density=1.0 if seed < 2 else 0.5, random_state=seed)
    if seed == 3:  # ties: scores that coincide, pairs on the margin
        data = RankingData(np.round(2 * np.asarray(data.X.toarray() if sp.issparse(data.X) else data.X)) / 2,
                           y=data.y, qid=data.qid)
    problem = RankingProblem(data, lam=lam, mu="balanced")
    fit = solve(problem, "cutting_plane", tol=1e-8)
    zero = solve(problem, "cutting_plane", tol=1e-8, start="zero")
    assert fit.extras["start"] == "regression" and fit.extras["start_products"] > 0
    assert zero.extras["start"] == "zero" and zero.extras["start_products"] == 0
    assert_agree(fit, zero)
    reference = solve(problem, "clarabel", tol=1e-8)
    assert_agree(fit, reference)
    assert fit.lower_bound <= reference.objective * (1 + 1e-12)  # the bound never passes the optimum (<= F(w_ref))


def test_a_sparse_float32_x_gives_the_same_optimum():
    data = make_ranking(n_queries=8, docs_per_query=(6, 14), n_features=6, density=0.4, random_state=5)
    X = sp.csr_matrix(data.X, dtype=np.float32)
    problem = RankingProblem(RankingData(X, y=data.y, qid=data.qid), lam=0.5, mu="balanced")
    fit = solve(problem, "cutting_plane", tol=1e-8)
    assert fit.extras["start"] == "regression"
    assert_agree(fit, solve(problem, "cutting_plane", tol=1e-8, start="zero"))


def test_a_margin_variant_starts_at_zero_and_refuses_the_fit():
    # the ray search measures the papers' margin of 1; margins per grade pair start at 0, and asking for the fit is
    # refused by name
    data = make_ranking(n_queries=6, docs_per_query=(6, 12), n_features=4, n_grades=4, random_state=2)
    problem = RankingProblem(data, lam=0.5).with_variant(Variant(margin="grade_difference"))
    auto = solve(problem, "cutting_plane", tol=1e-8)
    assert auto.extras["start"] == "zero" and auto.status == "optimal"
    with pytest.raises(ValidationError, match="start='regression' fits the grades on X in this process for the papers' "
                                              "margin of 1; not with a VariantOracle"):
        solve(problem, "cutting_plane", start="regression")


def test_pair_cd_from_the_first_call_skips_the_fit():
    # sparse and wide (60 features, 31 documents): pair_cd's home ground
    data = make_ranking(n_queries=4, docs_per_query=(6, 10), n_features=60, density=0.3, random_state=6)
    problem = RankingProblem(RankingData(sp.csr_matrix(data.X), y=data.y, qid=data.qid), lam=0.5)
    res = solve(problem, "cutting_plane", tol=1e-8, pair_cd=True)
    assert res.extras["start"] == "zero" and res.status == "optimal"
    assert_agree(res, solve(problem, "cutting_plane", tol=1e-8, pair_cd=False))


@pytest.mark.parametrize("factor", [1e-12, 1e-6, 1e6, 1e140])
def test_the_start_does_not_depend_on_the_labels_scale(factor):
    # grade labels scaled by any factor: the same codes, the same start
    data = make_ranking(n_queries=8, docs_per_query=(6, 14), n_features=5, random_state=7)
    scaled = RankingData(data.X, y=np.asarray(data.y, dtype=float) * factor, qid=data.qid)
    a = regression_start(PairFreeOracle.from_data(data, cost_table(data)), 0.5)
    b = regression_start(PairFreeOracle.from_data(scaled, cost_table(scaled)), 0.5)
    assert a.scale > 0 and a.sweeps < 24
    np.testing.assert_array_equal(a.w, b.w)


def test_a_warm_start_takes_precedence():
    data = make_ranking(n_queries=6, docs_per_query=(6, 12), n_features=4, random_state=3)
    problem = RankingProblem(data, lam=0.5)
    first = solve(problem, "cutting_plane", tol=1e-8)
    again = solve(problem.with_lam(0.4), "cutting_plane", tol=1e-8, warm_start_w=first.w, start="regression")
    assert again.extras["start"] == "warm" and again.extras["start_products"] == 0


def test_grades_no_feature_explains_give_the_zero_start():
    # every feature constant inside each query: the centred rows are 0, the fit is 0, the start w = 0
    X = np.repeat(np.arange(4.0)[:, None] * [1.0, -2.0], 5, axis=0)
    data = RankingData(X, y=np.tile([0, 1, 2, 1, 0], 4), qid=np.repeat(np.arange(4), 5))
    oracle = PairFreeOracle.from_data(data, cost_table(data))
    first = regression_start(oracle, 1.0)
    assert first.scale == 0.0 and not first.w.any() and first.objective == oracle.total_weight


def test_auto_fits_the_grades_on_small_problems_only(monkeypatch):
    import sys

    cp = sys.modules["cvxrank.native.cutting_plane"]
    data = make_ranking(n_queries=6, docs_per_query=(6, 12), n_features=4, random_state=4)
    problem = RankingProblem(data, lam=0.5)
    assert solve(problem, "cutting_plane").extras["start"] == "regression"
    monkeypatch.setattr(cp, "START_MAX_DOCUMENTS", data.n_documents - 1)
    assert solve(problem, "cutting_plane").extras["start"] == "zero"
    assert solve(problem, "cutting_plane", start="regression").extras["start"] == "regression"


def test_a_fit_that_ranks_every_pair_is_not_taken():
    # 50 documents, 300 features: the fit separates the pairs, and its best multiple puts the last pair on the margin
    # with no loss left; the solve starts at 0 instead (from there the Newton phase has a band)
    data = make_ranking(n_queries=4, n_features=300, random_state=0)
    oracle = PairFreeOracle.from_data(data, cost_table(data))
    first = regression_start(oracle, 0.1)
    assert first.scale == 0.0 and not first.w.any() and first.sweeps > 0
    res = solve(RankingProblem(data, lam=0.1), "cutting_plane")
    assert res.extras["start"] == "zero" and res.status == "optimal"
