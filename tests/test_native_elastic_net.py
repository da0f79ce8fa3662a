"""The pair-free projected Newton method (``prox_newton``): the squared hinge with an ℓ1 term and bounds on w.

Every solve is checked against Clarabel on the CVXPY formulation within the two certificates: the
objectives within the sum of the gaps, the weights within the sum of the distance bounds, and the
native gap an upper bound on ``L(w_native) − L(w_clarabel)``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import cvxrank as cr
from cvxrank.exceptions import SolverNotAvailableError
from cvxrank.native import cost_table
from cvxrank.native.prox_newton import composite_bound, min_norm_subgradient, prox_newton
from cvxrank.native.variant_oracle import VariantOracle
from cvxrank.solvers.cvxpy_backend import l1_zero_threshold
from cvxrank.solvers.registry import choose_solver
from cvxrank.variants import Variant

TAU = {(2, 1): 2.0, (2, 0): 3.0, (1, 0): 0.5}


def _data(seed=0, n_features=6, n_queries=8):
    return cr.make_ranking(n_queries=n_queries, docs_per_query=(4, 9), n_features=n_features, random_state=seed)


def _problem(variant, lam=0.5, seed=0, **kw):
    return cr.RankingProblem(_data(seed, **kw), tau=TAU, mu="balanced", lam=lam, variant=variant)


def _agree(problem, **options):
    a = cr.solve(problem, "prox_newton", **options)
    b = cr.solve(problem, "clarabel")
    assert a.status == "optimal" and b.status == "optimal", (a.status, b.status)
    assert abs(a.objective - b.objective) <= a.gap_L + b.gap_L
    assert np.abs(a.w - b.w).max() <= a.distance_bound + b.distance_bound
    lo, hi = problem.variant.bounds(problem.n_features)
    assert np.all(a.w >= lo) and np.all(a.w <= hi)  # within the bounds exactly
    # the certificate is a real bound: L(w_native) - L(w_clarabel) <= L(w_native) - L(w*) <= gap
    assert problem.hinge_objective(a.w) - problem.hinge_objective(b.w) <= a.gap_L
    return a, b


BOUNDS = {"none": {}, "lower0": {"lower": 0.0}, "box": {"lower": [-0.3, 0.0, -1.0, -np.inf, 0.0, -0.2],
                                                        "upper": [0.2, 0.5, np.inf, 0.4, 0.0, 1.0]}}


@pytest.mark.parametrize("lam", [1e-2, 1.0, 100.0])
@pytest.mark.parametrize("l1", [0.0, 0.3, 3.0])
@pytest.mark.parametrize("bounds", sorted(BOUNDS))
def test_agrees_with_clarabel_within_the_certificates(lam, l1, bounds):
    variant = Variant(loss="squared_hinge", l1=l1, **BOUNDS[bounds])
    _agree(_problem(variant, lam=lam, seed=int(lam * 7 + l1 * 3) % 5))


def test_margins_per_grade_pair_and_sparse_features():
    data = _data(3)
    X = data.X.copy()
    X[np.abs(X) < 0.6] = 0.0
    import scipy.sparse as sp

    sparse = cr.RankingData(sp.csr_matrix(X), data.y, data.qid)
    variant = Variant(loss="squared_hinge", margin="grade_difference", l1=0.4, lower=-0.5, upper=0.5)
    _agree(cr.RankingProblem(sparse, tau=TAU, mu="balanced", lam=0.2, variant=variant))


def test_pairs_given_are_solved_pair_free_too():
    data = _data(4)
    pairs = cr.make_pairs(data)
    variant = Variant(loss="squared_hinge", l1=0.5, lower=0.0)
    problem = cr.RankingProblem(pairs, weights=cr.pair_weights(pairs, TAU, "balanced"), lam=0.3, variant=variant)
    _agree(problem)


def test_l1_at_or_above_the_threshold_gives_zero_exactly():
    base = _problem(Variant(loss="squared_hinge", l1=1.0), lam=0.5, seed=1)
    threshold = l1_zero_threshold(base)
    for l1 in (threshold * (1 + 1e-9), 10 * threshold, 1e6):
        res = cr.solve(base.with_variant(Variant(loss="squared_hinge", l1=l1, lower=-1.0)), "prox_newton")
        assert res.status == "optimal" and np.all(res.w == 0.0)
        assert res.relative_gap <= 1e-9
    # just below the threshold some weight moves
    res, _ = _agree(base.with_variant(Variant(loss="squared_hinge", l1=0.9 * threshold)))
    assert np.count_nonzero(res.w) >= 1


def test_pinned_features_stay_at_zero():
    lower = np.array([0.0, -np.inf, 0.0, -1.0, -np.inf, -np.inf])
    upper = np.array([0.0, np.inf, 0.0, 1.0, np.inf, 0.0])
    res, _ = _agree(_problem(Variant(loss="squared_hinge", l1=0.2, lower=lower, upper=upper), lam=0.1, seed=2))
    assert res.w[0] == 0.0 and res.w[2] == 0.0 and res.w[5] <= 0.0
    every = _problem(Variant(loss="squared_hinge", lower=0.0, upper=0.0), lam=0.1, seed=2)
    res = cr.solve(every, "prox_newton")
    assert res.status == "optimal" and np.all(res.w == 0.0)


def test_tiny_lambda_and_non_negative_weights():
    res, _ = _agree(_problem(Variant(loss="squared_hinge", lower=0.0, l1=0.05), lam=1e-4, seed=3))
    assert np.all(res.w >= 0.0)


def test_warm_start_takes_fewer_steps_and_the_same_point():
    variant = Variant(loss="squared_hinge", l1=0.3, lower=-0.4)
    first = cr.solve(_problem(variant, lam=0.5, seed=5), "prox_newton")
    near = _problem(variant, lam=0.45, seed=5)
    cold = cr.solve(near, "prox_newton")
    warm = cr.solve(near, "prox_newton", warm_start=first.w)
    assert warm.status == cold.status == "optimal"
    assert warm.iterations <= cold.iterations
    assert np.abs(warm.w - cold.w).max() <= warm.distance_bound + cold.distance_bound
    outside = cr.solve(near, "prox_newton", warm_start=np.full(near.n_features, -5.0))  # clipped into the box
    assert outside.status == "optimal"


def test_the_bound_never_exceeds_the_optimum_along_the_way():
    problem = _problem(Variant(loss="squared_hinge", l1=0.5, lower=-0.3, upper=0.3), lam=0.05, seed=6)
    reference = cr.solve(problem, "clarabel")
    res = cr.solve(problem, "prox_newton", tol=1e-9)
    upper = problem.hinge_objective(reference.w)
    assert (res.history["dual_objective"] <= upper * (1 + 1e-12)).all()
    assert (np.diff(res.history["objective"]) <= 1e-9 * upper).all()  # monotone descent


def test_the_algorithm_on_an_oracle():
    data = _data(7)
    oracle = VariantOracle.from_data(data, cost_table(data, TAU, "balanced"))
    run = prox_newton(oracle, 0.5, 0.4, lower=-0.2, upper=0.3, tol=1e-8)
    assert run.status == "optimal" and run.relative_gap <= 1e-8
    assert np.all(run.w >= -0.2) and np.all(run.w <= 0.3)
    assert {"free", "zeros", "gamma"} <= set(run.history.columns)
    capped = prox_newton(oracle, 0.5, 0.4, max_iter=1, tol=1e-12)
    assert capped.status == "user_limit" and capped.iterations == 1


def test_bound_at_the_optimum_equals_the_objective():
    data = _data(8)
    oracle = VariantOracle.from_data(data, cost_table(data, TAU, "balanced"))
    lo, hi = np.full(data.n_features, -0.3), np.full(data.n_features, np.inf)
    run = prox_newton(oracle, 0.2, 0.6, lo, hi, tol=1e-10)
    r = oracle.squared_hinge(run.w)
    bound, gamma, _, _ = composite_bound(r, oracle.gradient(r.score_gradient), 0.2, 0.6, lo, hi)
    assert abs(gamma - 1.0) < 1e-4 and abs(run.objective - bound) <= 1e-8 * run.objective  # a zero gap at w*
    grad = 0.4 * run.w + oracle.gradient(r.score_gradient)
    assert np.abs(min_norm_subgradient(run.w, grad, 0.6, lo, hi)).max() <= 1e-3 * np.abs(grad).max()


def test_refusals_name_what_blocks():
    data = _data(9)
    hinge_l1 = cr.RankingProblem(data, lam=0.5, variant=Variant(l1=0.5))
    with pytest.raises(SolverNotAvailableError, match="'cutting_plane' does not solve the variant: it does not take l1"):
        cr.solve(hinge_l1, "cutting_plane")
    with pytest.raises(SolverNotAvailableError, match="it does not take bounds"):
        cr.solve(cr.RankingProblem(data, lam=0.5, variant=Variant(lower=0.0)), "cutting_plane")
    with pytest.raises(SolverNotAvailableError, match="'prox_newton' does not solve the variant: it does not take "
                                                      "loss='hinge'"):
        cr.solve(hinge_l1, "prox_newton")
    constrained = Variant(loss="squared_hinge", l1=0.1, constraints=lambda w: [w[0] >= w[1]])
    with pytest.raises(SolverNotAvailableError, match="it does not take constraints"):
        cr.solve(cr.RankingProblem(data, lam=0.5, variant=constrained), "prox_newton")
    pairs = cr.make_pairs(data)
    per_pair = Variant(loss="squared_hinge", l1=0.1, margin=np.ones(pairs.n_pairs))
    with pytest.raises(SolverNotAvailableError, match="it does not take margin_per_pair"):
        cr.solve(cr.RankingProblem(pairs, lam=0.5, variant=per_pair), "prox_newton")
    with pytest.raises(SolverNotAvailableError, match="solvers that can: .*prox_newton"):
        cr.solve(cr.RankingProblem(data, lam=0.5, variant=Variant(loss="squared_hinge", l1=0.1)), "truncated_newton")


def test_auto_picks_it_for_large_problems_of_its_variants():
    big = cr.make_ranking(n_queries=40, docs_per_query=(60, 80), n_features=3, random_state=0)
    for variant, name in [(Variant(loss="squared_hinge", l1=0.1), "prox_newton"),
                          (Variant(loss="squared_hinge", lower=0.0), "prox_newton"),
                          (Variant(loss="squared_hinge", margin="gain_difference", l1=0.1, upper=1.0), "prox_newton"),
                          (Variant(loss="squared_hinge"), "truncated_newton"),
                          (Variant(l1=0.1), "clarabel")]:
        problem = cr.RankingProblem(big, lam=0.5, variant=variant)
        assert problem.n_pairs >= 50_000
        assert choose_solver(problem) == name, variant
    small = cr.RankingProblem(_data(0), lam=0.5, variant=Variant(loss="squared_hinge", l1=0.1))
    assert choose_solver(small) == "clarabel"


def test_a_run_it_stops_is_a_user_limit_with_its_certified_gap():
    problem = _problem(Variant(loss="squared_hinge", l1=0.3, lower=0.0), lam=0.01, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = cr.solve(problem, "prox_newton", max_iter=1, tol=1e-12)
    assert res.status == "user_limit" and np.isfinite(res.gap_L) and res.extras["work_limit"] == 1
